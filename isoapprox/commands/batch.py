"""``isoapprox batch``: evaluate the bounds over a grid of random configurations."""

from __future__ import annotations

import argparse
import os

from ..batch import (
    BatchConfig,
    GeneratorOptions,
    Grid,
    check_best_column,
    claim_batch_output,
    format_table,
    run_batch,
    save_best,
)
from ..batch.best import OBJECTIVE_COLUMNS
from ..batch.generators import DISTRIBUTIONS, LAYOUTS
from ..batch.grid import FORMATS
from ..batch.stages import STAGES, resolve_stages
from ..exceptions import IsoapproxError
from .common import add_run_arguments, bounded_int, check_jobs

#: default chunk sizes: vector stages only / with a per-configuration stage
VECTOR_CHUNK = 4096
CONFIG_STAGE_CHUNK = 32

#: the stages of a default run: the bounds (c, the distances to F_TS with their
#: certified brackets, statements 1-4) and the points
DEFAULT_STAGES = ("cheap", "ideal", "points")
#: configurations per cell by default: with a per-configuration stage (the
#: default, about 0.25 s a configuration at N = 5: under a minute on 2 cores)
#: and with vector stages only (--stages cheap: milliseconds in all)
CONFIG_STAGE_REPETITIONS = 200
VECTOR_REPETITIONS = 1000

EPILOG = """\
The default run evaluates the bounds: stages cheap, ideal and points, 200
configurations of N = 5 points in the plane, 2 classes (under a minute on 2
cores; then `isoapprox figures OUT` draws them).  --stages cheap is the
fast path: the losses, diameter, enclosing ball and thickness only, without
c or the distances to F_TS (1000 configurations per cell by default,
vectorised: about a million configurations a minute on 2 cores).

examples:
  isoapprox batch --out runs/default && isoapprox figures runs/default
  isoapprox batch --out runs/toy --n-points 5 --dims 2 --classes 2 3 --margins 0 1 \\
      --distributions gaussian clustered collapsed --repetitions 100000 --stages cheap
  isoapprox batch --out runs/big ... --scheduler tcp://scheduler:8786
  isoapprox batch --out runs/bounds --n-points 5 8 --dims 1 2 3 --classes 2 3 \\
      --margins 0 1 --stages cheap ideal --repetitions 20
  isoapprox batch --out runs/worst-c --n-points 5 --classes 2 --distributions adversarial \\
      --objective c --search-budget 256 --stages cheap ideal points --repetitions 4

Stage 'ideal' adds, per configuration, d_iso(E, F_TS) and d_haus(E, F_TS)
with certified brackets, the empirical constant c with its bracket, theta,
and the slack / holds / proven flags of statements 1-4 (about 0.2 s per
configuration at N = 5, seconds at N = 12).  Stage 'points' stores the
configuration itself.  With the adversarial distribution the best
configurations by the objective's column (c -> c_lower) are written to
best_<column>.json; --save-best COLUMN does it for any numeric column.

The output folder gets results.csv (one row per configuration), summary.json
and summary.csv (per grid cell), run.json and journal.jsonl.  Rerunning the
same command resumes an interrupted run; finished chunks are never
recomputed, and the final table is identical to an uninterrupted run's.

On a Dask cluster: install isoapprox on the client, scheduler and workers;
start the workers with one thread each (OMP_NUM_THREADS=1
NUMBA_NUM_THREADS=1 dask worker tcp://scheduler:8786 --nthreads 1
--nworkers auto); only this process writes files.

exit status: 0 on success; 2 on a bad option or output folder (one line on
stderr); 4 if the system fails a file operation (disk full, permission
denied, a file removed during the run: one line naming the path; the
finished chunks stay, and rerunning the command resumes); 130 if
interrupted, 143 if terminated.
"""


_nonneg_int = bounded_int(0)


def _pos_int(text: str) -> int:
    """An integer >= 1; a negative one is refused as :func:`_nonneg_int` refuses it."""
    value = _nonneg_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1; got {value}")
    return value


#: the description of ``isoapprox batch --help`` (printed as written, not filled)
DESCRIPTION = (
    "Evaluate every quantity and bound of every registered stage over a grid "
    "(N, n, classes, layout, margin, distribution) x repetitions of seeded random "
    "configurations, in parallel on all local cores or on a Dask cluster, "
    "writing a tidy, resumable result table and a per-cell summary."
)
FILL_DESCRIPTION = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of ``isoapprox batch``."""
    g = p.add_argument_group("grid")
    g.add_argument("--n-points", type=_pos_int, nargs="+", default=[5], metavar="N",
                   help="numbers of points N (default 5)")
    g.add_argument("--dims", type=_pos_int, nargs="+", default=[2], metavar="n",
                   help="embedding dimensions n (default 2)")
    g.add_argument("--classes", type=_pos_int, nargs="+", default=[2], metavar="P",
                   help="numbers of classes P, 2 <= P <= N - 1 (default 2)")
    g.add_argument("--layouts", nargs="+", default=["balanced"], choices=LAYOUTS,
                   metavar="LAYOUT",
                   help=f"label layouts {{{', '.join(LAYOUTS)}}} (default balanced)")
    g.add_argument("--margins", type=float, nargs="+", default=[0.0], metavar="ALPHA",
                   help="margins alpha >= 0 (default 0)")
    g.add_argument("--distributions", nargs="+", default=["gaussian"], choices=DISTRIBUTIONS,
                   metavar="DIST",
                   help=f"point distributions {{{', '.join(DISTRIBUTIONS)}}} (default gaussian)")
    g.add_argument("--repetitions", type=_pos_int, metavar="R",
                   help=f"configurations per grid cell (default {CONFIG_STAGE_REPETITIONS} "
                        f"with a per-configuration stage such as ideal, as by default; "
                        f"{VECTOR_REPETITIONS} with vector stages only, e.g. --stages cheap)")
    g.add_argument("--skip-invalid", action="store_true",
                   help="drop grid cells without triplets (P > N - 1) instead of failing")
    d = p.add_argument_group("distributions")
    d.add_argument("--spread", type=float, default=0.25,
                   help="within-class standard deviation of 'clustered' (default 0.25)")
    d.add_argument("--collapse-scale", type=float, default=1e-3,
                   help="standard deviation of 'collapsed' (default 1e-3)")
    d.add_argument("--unbalanced-ratio", type=float, default=0.5,
                   help="ratio of the geometric class sizes of 'unbalanced' (default 0.5)")
    d.add_argument("--objective", default="meb_ratio",
                   help="objective maximised by 'adversarial' (default meb_ratio)")
    d.add_argument("--search-budget", type=_pos_int, default=512,
                   help="objective evaluations per adversarial configuration (default 512)")
    d.add_argument("--search-population", type=_pos_int, default=16,
                   help="candidates per generation of the adversarial search (default 16)")
    d.add_argument("--search-restarts", type=_pos_int, default=2,
                   help="restarts of the adversarial search (default 2)")
    r = add_run_arguments(
        p, out=None, out_help="output folder (required; a run of the same configuration in "
                              "it is resumed, or reused when finished)",
        jobs=None, jobs_help="local worker processes (default: one per core; 1: in this "
                             "process)")
    r.add_argument("--workers", type=_nonneg_int, metavar="W",
                   help="the old spelling of --jobs (W processes; 0: in this process)")
    r.add_argument("--stages", nargs="+", default=list(DEFAULT_STAGES), metavar="STAGE",
                   help="evaluation stages in order: registered names or module:attribute "
                        f"(default {' '.join(DEFAULT_STAGES)}: the bounds; 'cheap' alone is "
                        "the fast path without c and the distances to F_TS; see "
                        "--list-stages)")
    r.add_argument("--list-stages", action="store_true", help="list the registered stages and exit")
    r.add_argument("--seed", type=_nonneg_int, default=0, help="root seed (default 0)")
    r.add_argument("--chunk-size", type=_pos_int,
                   help="configurations per task (default 4096 with vector stages only, "
                        "32 when a per-configuration stage such as ideal is listed: a chunk "
                        "is the unit of resumption)")
    r.add_argument("--format", choices=FORMATS, default="csv",
                   help="result table format (default csv)")
    r.add_argument("--save-best", metavar="COLUMN",
                   help="write the rows with the largest COLUMN (with their points) to "
                        "OUT/best_COLUMN.json (default with the adversarial distribution: the "
                        "objective's column, e.g. c_lower for --objective c)")
    r.add_argument("--save-best-count", type=_pos_int, default=5, metavar="K",
                   help="how many rows --save-best keeps (default 5)")
    r.add_argument("--keep-parts", action="store_true",
                   help="keep the per-chunk files after the final table is written")


def _list_stages() -> str:
    lines = []
    for st in STAGES.values():
        lines.append(f"{st.name} ({st.kind}): {st.description}")
        lines.append("    columns: " + ", ".join(c.name for c in st.output_columns()))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Execute ``isoapprox batch``."""
    if args.list_stages:
        print(_list_stages())
        return 0
    if args.out is None:
        raise IsoapproxError("`--out DIR` is required: the folder for the results")
    jobs = args.jobs if args.workers is None else max(1, args.workers)
    if jobs is not None:
        check_jobs(jobs)
    per_config = any(st.kind == "config" for st in resolve_stages(args.stages))
    # --repetitions and --chunk-size are >= 1 when given (_pos_int)
    repetitions = args.repetitions or (
        CONFIG_STAGE_REPETITIONS if per_config else VECTOR_REPETITIONS)
    grid = Grid(
        n_points=tuple(args.n_points), dims=tuple(args.dims), classes=tuple(args.classes),
        layouts=tuple(args.layouts), margins=tuple(args.margins),
        distributions=tuple(args.distributions), repetitions=repetitions,
        skip_invalid=args.skip_invalid,
    )
    options = GeneratorOptions(
        spread=args.spread, collapse_scale=args.collapse_scale,
        unbalanced_ratio=args.unbalanced_ratio, objective=args.objective,
        search_budget=args.search_budget, search_population=args.search_population,
        search_restarts=args.search_restarts,
    )
    chunk_size = args.chunk_size or (CONFIG_STAGE_CHUNK if per_config else VECTOR_CHUNK)
    config = BatchConfig(grid=grid, seed=args.seed, stages=tuple(args.stages),
                         chunk_size=chunk_size, options=options, format=args.format)
    column = _best_column(args, config)
    if column is not None:
        check_best_column(config, column, name="--save-best")
    jobs = jobs or os.cpu_count() or 1
    with claim_batch_output(args.out):
        return _run(args, config, jobs, column)


def _run(args: argparse.Namespace, config: BatchConfig, jobs: int, column: str | None) -> int:
    grid = config.grid
    where = (f"Dask scheduler {args.scheduler}" if args.scheduler else
             "this process" if jobs == 1 else f"{jobs} local worker(s)")
    if not args.quiet:
        print(f"{grid.n_configurations} configurations in {len(grid.cells)} cell(s), "
              f"{config.n_chunks} chunk(s), on {where}")
        for label in grid.skipped:
            print(f"skipped cell without triplets: {label}")
    res = run_batch(config, args.out, jobs=jobs, scheduler=args.scheduler,
                    progress=not args.quiet, overwrite=args.overwrite,
                    keep_parts=args.keep_parts, connect_timeout=args.connect_timeout)
    if not args.quiet:
        print(format_table(res.summary, config))
        print()
    print(f"{res.n_rows} rows (chunks computed {res.computed}, reused {res.reused}; "
          f"{res.seconds:.1f} s)")
    print(f"  table   -> {res.results}")
    print(f"  summary -> {res.summary_path}")
    if not args.quiet and any(c.name == "c" for c in config.columns()):
        print(f"  figures: isoapprox figures {args.out}")
    if column is not None:
        path = save_best(args.out, config, column, k=args.save_best_count)
        print(f"best {args.save_best_count} by {column} -> {path}")
    return 0


def _best_column(args: argparse.Namespace, config) -> str | None:
    if args.save_best is not None:
        return args.save_best
    if "adversarial" not in config.grid.distributions:
        return None
    column = OBJECTIVE_COLUMNS.get(config.options.objective)
    names = {c.name for c in config.columns()}
    return column if column in names else None
