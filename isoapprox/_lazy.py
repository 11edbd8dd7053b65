"""The one home of the package's lazy imports.

``import isoapprox`` must stay cheap, so the two heavy dependencies are
imported on first use, here and nowhere else:

- :func:`cvxpy` -- the convex solvers of :mod:`isoapprox.ideal` (about a
  second to import);
- :func:`matplotlib` -- matplotlib with the non-interactive Agg backend and
  the submodules the figures use (``pyplot``, ``lines``, ``patches``,
  ``collections``, ``colors``), for :mod:`isoapprox.plotting`;
- :func:`distributed` -- ``dask.distributed``, optional, for runs on a Dask
  cluster (:mod:`isoapprox.runs`).

Every other import in the package sits at the top of its module.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

from .exceptions import IsoapproxError

__all__ = ["cvxpy", "distributed", "matplotlib"]

_MPL_SUBMODULES = ("pyplot", "lines", "patches", "collections", "colors", "ticker")


@functools.cache
def cvxpy() -> ModuleType:
    """``cvxpy``, imported on first call."""
    return importlib.import_module("cvxpy")


@functools.cache
def matplotlib() -> ModuleType:
    """``matplotlib`` on the Agg backend with its figure submodules loaded.

    Use ``mpl = matplotlib(); mpl.pyplot.subplots(...)``,
    ``mpl.lines.Line2D``, ``mpl.patches.Patch`` and so on.

    Raises
    ------
    ImportError
        With an installation hint when matplotlib is missing.
    """
    try:
        mpl = importlib.import_module("matplotlib")
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency
        raise ImportError("isoapprox.plotting needs matplotlib: pip install matplotlib") from exc
    mpl.use("Agg", force=False)
    for name in _MPL_SUBMODULES:
        importlib.import_module(f"matplotlib.{name}")
    return mpl


def distributed() -> ModuleType:
    """``dask.distributed`` (the optional extra ``isoapprox[dask]``), imported on first call.

    Raises
    ------
    IsoapproxError
        With an installation hint when it is missing.
    """
    try:
        return importlib.import_module("distributed")
    except ImportError:
        raise IsoapproxError(
            "running on a Dask cluster needs dask.distributed, which is not installed; "
            "install it with: pip install 'isoapprox[dask]'") from None
