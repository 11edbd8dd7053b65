"""Which figures each experiment's result files produce.

A figure builder is registered for an experiment name (the ``experiment``
field of a results document written by :func:`isoapprox.io.write_results`)::

    @register("toy")
    def toy_figures(doc, out_dir, source):
        ...  # build figures from doc["records"] etc., save with save_figure
        return [paths]

:func:`build_figures` reads result files, dispatches on ``experiment`` and
returns the files written.  Builders never recompute an experiment.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..exceptions import InvalidInputError

__all__ = ["BUILDER_MODULES", "build_figures", "register", "registered"]

Builder = Callable[[dict, Path, Path], list[Path]]
_BUILDERS: dict[str, Builder] = {}

#: modules imported on first use; each registers its builders
BUILDER_MODULES: tuple[str, ...] = (".toy", ".sweep", ".survey")


def register(experiment: str) -> Callable[[Builder], Builder]:
    """Decorator registering a figure builder for ``experiment``."""

    def deco(func: Builder) -> Builder:
        _BUILDERS[experiment] = func
        return func

    return deco


def registered() -> dict[str, Builder]:
    """Experiment name -> builder, after importing every builder module."""
    for mod in BUILDER_MODULES:
        importlib.import_module(mod, __package__)
    return dict(_BUILDERS)


def build_figures(paths: Sequence[str | Path], out_dir: str | Path) -> list[Path]:
    """Build every figure the given result files support.

    Parameters
    ----------
    paths : sequence of path-like
        Results files (JSON written by :func:`isoapprox.io.write_results`).
    out_dir : path-like
        Folder for the figures (created).

    Returns
    -------
    list of Path
        Files written.

    Raises
    ------
    InvalidInputError
        If a file is not a results file or no figure is known for its
        experiment.
    FileNotFoundError
        If a file does not exist.
    """
    from ..io import read_results

    builders = registered()
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise FileNotFoundError(f"results file not found: {p}")
        doc: dict[str, Any] = read_results(p)
        exp = doc.get("experiment")
        if exp not in builders:
            known = ", ".join(sorted(builders)) or "none"
            raise InvalidInputError(
                f"no figures are defined for experiment {exp!r} (file {p}); known: {known}"
            )
        out.extend(builders[exp](doc, Path(out_dir), p))
    return out
