"""Which figures each experiment's result files produce.

:data:`FIGURE_BUILDERS` maps an experiment name (the ``experiment`` field of
a results document written by :func:`isoapprox.io.write_results`) to the
function that draws its figures, ``builder(doc, out_dir, source, *, jobs=1) ->
[paths]`` (``jobs`` worker processes draw whole figures:
:func:`isoapprox.plotting._style.save_figures`).
:func:`build_figures` reads result files and dispatches on that field.
Builders never recompute an experiment.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._validation import check_int
from ..exceptions import InvalidInputError
from ..io import read_results
from .survey import batch_figures, collapse_share_figures, survey_figures
from .sweep import sweep_figures
from .toy import toy_figures

__all__ = ["BATCH_FILES", "FIGURE_BUILDERS", "build_figures", "results_path"]

#: experiment name -> figure builder
FIGURE_BUILDERS = {
    "batch": batch_figures,
    "bounds_survey": survey_figures,
    "collapse_share": collapse_share_figures,
    "collapse_sweep": sweep_figures,
    "toy": toy_figures,
}


#: the files of an ``isoapprox batch`` folder that stand for its ``summary.json``
BATCH_FILES = ("results.csv", "results.jsonl", "run.json", "journal.jsonl")


def results_path(path: str | Path) -> Path:
    """The results document ``path`` stands for.

    An ``isoapprox batch`` output folder, or its table (``results.csv``) or
    run file, stands for the run's ``summary.json``; any other path for
    itself.
    """
    p = Path(path)
    if p.is_dir() and (p / "summary.json").is_file():
        return p / "summary.json"
    if p.name in BATCH_FILES and (p.parent / "summary.json").is_file():
        return p.parent / "summary.json"
    return p


def build_figures(paths: Sequence[str | Path], out_dir: str | Path, *,
                  jobs: int = 1) -> list[Path]:
    """Build every figure the given result files support.

    Parameters
    ----------
    paths : sequence of path-like
        Results files (JSON written by :func:`isoapprox.io.write_results`),
        or ``isoapprox batch`` output folders (:func:`results_path`).
    out_dir : path-like
        Folder for the figures (created).
    jobs : int, default 1
        Worker processes that draw a file's figures (the files are the same,
        byte for byte, as with 1).

    Returns
    -------
    list of Path
        Files written.

    Raises
    ------
    InvalidInputError
        If a file is not a results file or no figure is known for its
        experiment, or ``jobs`` is below 1.
    TypeError
        If ``jobs`` is not an integer.
    FileNotFoundError
        If a file does not exist.
    """
    jobs = check_int(jobs, "jobs", minimum=1)
    out: list[Path] = []
    for p in paths:
        p = results_path(p)
        if not p.exists():
            raise FileNotFoundError(f"results file not found: {p}")
        doc = read_results(p)
        exp = doc.get("experiment")
        if exp not in FIGURE_BUILDERS:
            known = ", ".join(sorted(FIGURE_BUILDERS))
            raise InvalidInputError(
                f"no figures are defined for experiment {exp!r} (file {p}); known: {known}"
            )
        out.extend(FIGURE_BUILDERS[exp](doc, Path(out_dir), p, jobs=jobs))
    return out
