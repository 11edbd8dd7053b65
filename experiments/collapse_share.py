"""Is the nearest ideal embedding collapsed more often when N is large against n?

The paper explains network collapse by the batch size ``N`` being large
against the embedding dimension ``n``.  At margin ``alpha = 0`` the fully
collapsed embedding is triplet-separated, so it competes with every other
ideal embedding for the title of nearest one: it is at isometric distance
``diam(E)`` from ``E``, while ``d_iso(E, F_TS) <= diam(E)`` is the distance
of the nearest.  This script measures, over random Gaussian configurations
(``N = 4, 5, 6`` points in ``R^1 .. R^3``, 2 and 3 balanced classes,
``alpha = 0``, 20 configurations per cell), against ``N / n``:

- the share whose nearest ideal embedding (``objective="iso"``) is
  collapsed, and the share that is class-collapsed;
- the ratio ``d_iso(E, F_TS) / diam(E)`` (``1``: the collapsed embedding is
  a nearest one; near ``0``: the nearest ideal embedding is close to ``E``).

Each configuration goes through ``isoapprox batch`` (stages ``cheap`` and
``ideal``; resumable, identical on a Dask cluster).  Usage::

    python experiments/collapse_share.py [--jobs 2 | --scheduler ADDRESS] [--work DIR]
        [--out FILE.json]

Writes the per-``N/n`` table as JSON (with the configuration, seed and
versions) and prints it; ``isoapprox figures RESULTS.json --out DIR`` draws
it (:func:`isoapprox.plotting.survey.collapse_share_plot`).  About a minute
on 2 cores.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from isoapprox.batch import BatchConfig, Grid, run_batch
from isoapprox.commands.common import CommandParser, check_jobs, guarded
from isoapprox.io import write_results

ROOT = Path(__file__).resolve().parent.parent
SEED = 20241202


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _flag(value: str) -> bool:
    return value in ("True", "true", "1")


def table(results_csv: Path) -> list[dict]:
    """Rows of ``results.csv`` grouped by ``N / n``."""
    groups: dict[float, list[dict]] = defaultdict(list)
    with open(results_csv, newline="") as fh:
        for r in csv.DictReader(fh):
            groups[int(r["n_points"]) / int(r["dim"])].append(r)
    out = []
    for ratio in sorted(groups):
        rs = groups[ratio]
        rel = [float(r["d_iso"]) / float(r["d_iso_collapsed"]) for r in rs
               if float(r["d_iso_collapsed"]) > 0]
        out.append({
            "N_over_n": round(ratio, 4),
            "configurations": len(rs),
            "collapsed_share": sum(_flag(r["collapsed_iso"]) for r in rs) / len(rs),
            "class_collapsed_share": sum(_flag(r["class_collapsed_iso"]) for r in rs) / len(rs),
            "certified_share": sum(_flag(r["d_iso_certified"]) for r in rs) / len(rs),
            "d_iso_over_diameter_median": statistics.median(rel),
            "d_iso_over_diameter_max": max(rel),
        })
    return out


def main(argv: list[str] | None = None) -> int:
    p = CommandParser(prog="collapse_share",
                      description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=None,
                   help="local worker processes (default: one per core; 1: in this process)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on the Dask cluster at ADDRESS")
    p.add_argument("--repetitions", type=int, default=20, help="configurations per cell")
    p.add_argument("--work", type=Path, default=ROOT / "experiments" / "results" / "collapse_share",
                   help="batch run folder (resumed when it holds this run)")
    p.add_argument("--out", type=Path,
                   default=ROOT / "experiments" / "results" / "collapse_share.json")
    return guarded("collapse_share", _main, p.parse_args(argv))


def _main(args: argparse.Namespace) -> int:
    if args.jobs is not None:
        check_jobs(args.jobs)
    grid = Grid(n_points=(4, 5, 6), dims=(1, 2, 3), classes=(2, 3), margins=(0.0,),
                distributions=("gaussian",), repetitions=args.repetitions)
    config = BatchConfig(grid, seed=SEED, stages=("cheap", "ideal"), chunk_size=32)
    res = run_batch(config, args.work, jobs=args.jobs, scheduler=args.scheduler, progress=True)
    rows = table(Path(res.results))
    print(f"{'N/n':>5} {'configs':>7} {'collapsed':>9} {'class-coll.':>11} "
          f"{'d_iso/diam median':>17} {'max':>6}")
    for r in rows:
        print(f"{r['N_over_n']:5.2f} {r['configurations']:7d} {r['collapsed_share']:9.1%} "
              f"{r['class_collapsed_share']:11.1%} {r['d_iso_over_diameter_median']:17.3f} "
              f"{r['d_iso_over_diameter_max']:6.3f}")
    write_results(args.out, experiment="collapse_share", records=rows, seed=SEED,
                  config={"grid": grid, "stages": ["cheap", "ideal"], "chunk_size": 32},
                  extra={"batch_run": _relative(args.work)})
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
