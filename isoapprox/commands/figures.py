"""``isoapprox figures RESULTS... [--out DIR]``: rebuild figures from result files.

Reads each results file (written by :func:`isoapprox.io.write_results`),
looks up the figure builders registered for its ``experiment`` field in
:mod:`isoapprox.plotting.registry` and writes PNG and PDF files.  Nothing is
recomputed: a figure depends only on the file it is drawn from.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from ..exceptions import InvalidInputError
from ..io import read_results
from ..runs import claim_output
from .common import check_jobs, file_name

DEFAULT_ROOT = Path("figures")

#: the epilog of ``isoapprox figures --help``
EPILOG = (
    "output folder:\n"
    "  with --out DIR every figure goes into DIR; without it, the figures of each file\n"
    f"  go into {DEFAULT_ROOT}/<experiment>/ (relative to the current folder)\n\n"
    "exit status: 0 on success; 2 on a missing or unreadable file, or an experiment\n"
    "without registered figures (one line on stderr); 4 if the system fails a file\n"
    "operation (disk full, permission denied: one line naming the path).\n\n"
    "examples:\n"
    "  isoapprox figures experiments/results/toy.json\n"
    "  isoapprox figures runs/default   (an `isoapprox batch` output folder: the\n"
    "      survey's figures of its configurations; also its summary.json)\n"
    "  isoapprox figures experiments/results/*.json --out /tmp/figs\n"
    "  isoapprox figures --list"
)


#: the description of ``isoapprox figures --help``
DESCRIPTION = (
    "Draw the figures of one or more results files (PNG and PDF, with a provenance "
    "sidecar naming the source file and its SHA-256).  Only the files are read; no "
    "experiment is rerun."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of ``isoapprox figures``."""
    p.add_argument("results", nargs="*", type=Path, metavar="RESULTS",
                   help="results files (.json), or output folders of `isoapprox batch`")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help=f"folder for every figure (default {DEFAULT_ROOT}/<experiment>/)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes that draw a file's figures (default: 2, or 1 on a "
                        "one-core machine); the files are the same for every N")
    p.add_argument("--list", action="store_true",
                   help="list the experiments that have figures, and exit")


def run(args: argparse.Namespace) -> int:
    """Execute ``isoapprox figures``."""
    from ..plotting.registry import FIGURE_BUILDERS, build_figures, results_path

    if args.list:
        for exp in sorted(FIGURE_BUILDERS):
            print(exp)
        return 0
    if not args.results:
        raise InvalidInputError("give at least one results file (or --list)")
    jobs = check_jobs(args.jobs)
    args.results = [results_path(p) for p in args.results]
    for path in args.results:
        if not path.exists():
            raise FileNotFoundError(f"results file not found: {path}")
        if path.is_dir():
            raise InvalidInputError(f"{str(path)!r} is a folder, neither a results file nor "
                                    "the output folder of `isoapprox batch`")
    # every file read and every folder claimed before the first figure is drawn
    targets: list[tuple[Path, Path]] = []
    for path in args.results:
        exp = read_results(path).get("experiment")
        if exp not in FIGURE_BUILDERS:
            raise InvalidInputError(
                f"no figures are defined for experiment {exp!r} (file {path}); known: "
                f"{', '.join(sorted(FIGURE_BUILDERS))}")
        targets.append((path, args.out if args.out is not None else DEFAULT_ROOT / file_name(exp)))
    written: list[Path] = []
    with contextlib.ExitStack() as claims:
        for out_dir in dict.fromkeys(d for _, d in targets):
            claims.enter_context(claim_output(out_dir, folder=True, flag="--out"))
        for path, out_dir in targets:
            files = build_figures([path], out_dir, jobs=jobs)
            figs = [f for f in files if f.suffix in (".png", ".pdf", ".svg")]
            written.extend(figs)
            print(f"{path}: {len(figs)} file(s) in {out_dir}")
    for f in written:
        print(f"  {f}")
    return 0
