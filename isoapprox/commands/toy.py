"""``isoapprox toy``: a toy of the paper's shape, its constant and its figures (docs/toy.md)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import time
from pathlib import Path

from ..exceptions import InvalidInputError
from ..runs import check_results_name, claim_output, config_key, journal_path, prepare_output
from ..toy import DEFAULT_SCENARIOS, run_toy
from .common import add_run_arguments, check_jobs, claim_outputs
from .toy_report import format_summary, write_toy_results

logger = logging.getLogger(__name__)

DEFAULT_RESULTS = Path("experiments") / "results" / "toy.json"
DEFAULT_FIGURES = Path("figures") / "toy"
EXPERIMENT = "toy"

_EPILOG_TEMPLATE = """\
what it does:
  1. draws 5 inputs x_k ~ N(0, I_2) with labels (0, 0, 0, 1, 1) and trains an MLP 2-16-2
     (tanh) by full-batch gradient descent on the mean batch-hard loss, three times:
{scenarios}
  2. at log-spaced steps and at every merge: the loss (max, mean), d_iso(f, F_TS) and
     d_haus(f, F_TS) with certified brackets, the nearest ideal embedding f*,
     d_haus(f, f*), the diameter, the thickness theta and c = d_haus / d_iso
  3. c over random 5-point embeddings (3 label layouts, margins 0 and 1), against the
     floor 1/2 and the paper's 0.53

outputs (paths relative to the current folder):
  --out         JSON with configuration, seeds, versions and every record; CSV beside it
  --figures     toy_system, toy_iso_example, toy_curves_<scenario>, toy_collapse_<scenario>,
                toy_constant (.png and .pdf); rebuild with `isoapprox figures OUT`

resuming:
  finished evaluations are journalled in OUT with suffix .journal.partial; rerunning
  the same command after an interruption skips them (the journal is removed once the
  results are written).  If OUT already holds a run of the same configuration, it is
  reused: the summary is printed and the figures are redrawn without recomputing
  anything; another configuration needs --overwrite (or another --out).

exit status: 0 on success; 2 on a bad option (one line on stderr); 4 if the system fails
  a file operation (disk full, permission denied; one line naming the path; a rerun
  resumes from the journal); 130 if interrupted, 143 if terminated.

examples:
  isoapprox toy
  isoapprox toy --n-random 1000 --jobs 4 --out toy1000.json --figures figs
  isoapprox toy --margin 0.5 --steps 5000
  isoapprox toy --perturbation 1e-12 --perturbation-seed 3 --out /tmp/p3.json
  isoapprox toy --smoke --no-figures --out /tmp/toy.json
"""

#: the epilog names the default scenarios as toy.DEFAULT_SCENARIOS sets them
EPILOG = _EPILOG_TEMPLATE.format(scenarios="\n".join(
    f"       {sc.name:<9} {sc.description}" for sc in DEFAULT_SCENARIOS))


#: the description of ``isoapprox toy --help``
DESCRIPTION = (
    "A toy system of the paper's shape (its own points are not published): five "
    "labelled points in the plane embedded by a small network trained with hard "
    "negative mining.  Measures, along training, the "
    "distances of the embedding to the triplet-separated set (certified brackets), "
    "its nearest ideal embedding f*, the diameter and the empirical constant "
    "c = d_haus / d_iso (the paper reports 0.53; the theory's floor is 1/2), and the "
    "same constant over random toys.  Writes results and figures; computes for about "
    "30 s on two cores once the numba kernels are compiled; a later run reuses the "
    "results and only redraws the figures (about 7 s).  See docs/toy.md."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of ``isoapprox toy``."""
    p.add_argument("--figures", type=Path, default=DEFAULT_FIGURES, metavar="DIR",
                   help=f"folder for the figures (default {DEFAULT_FIGURES})")
    p.add_argument("--seed", type=int,
                   help="root seed of the random toys and the solvers' starts (default 0)")
    p.add_argument("--margin", type=float,
                   help="margin alpha > 0 of the margin-1 scenarios (default 1; the other "
                        "settings were chosen for 1, so another margin may change which "
                        "scenario collapses: the summary says what happened)")
    p.add_argument("--steps", type=int,
                   help="gradient steps per scenario (default 3000)")
    p.add_argument("--n-random", type=int, metavar="N",
                   help="random toys for the distribution of c (default 300)")
    p.add_argument("--scenario", action="append", metavar="NAME",
                   help="run only this scenario (collapse, separate, margin0; repeat for "
                        "several; default all)")
    p.add_argument("--perturbation", type=float, metavar="EPS",
                   help="move the initial weights and inputs by this relative amount before "
                        "training (e.g. 1e-12, the size by which machines differ) to check "
                        "that the outcomes do not hang on the last bits (default 0)")
    p.add_argument("--perturbation-seed", type=int, metavar="N",
                   help="seed of --perturbation (default 0)")
    p.add_argument("--smoke", action="store_true",
                   help="a tiny run (60 steps, 6 random toys) to check the installation")
    p.add_argument("--no-figures", action="store_true", help="write the results only")
    add_run_arguments(
        p, out=DEFAULT_RESULTS,
        out_help=f"results JSON, a CSV is written beside it (default {DEFAULT_RESULTS})",
        jobs=None, jobs_help="worker processes for the distance computations and the figures "
                             "(default: 2, or 1 on a single core); the seeds do not depend "
                             "on it")


def build_config(args: argparse.Namespace):
    """The :class:`~isoapprox.toy.ToyConfig` of the command line."""
    from ..toy import MAX_PERTURBATION, SMOKE, ToyConfig

    config = SMOKE if args.smoke else ToyConfig()
    changes = {}
    for field, minimum in (("seed", 0), ("steps", 1), ("perturbation", None),
                           ("perturbation_seed", 0), ("n_random", 0)):
        value = getattr(args, field)
        if value is None:
            continue
        flag = "--" + field.replace("_", "-")
        if minimum is None and not 0.0 <= value < MAX_PERTURBATION:
            raise InvalidInputError(f"{flag} must be a relative size in [0, "
                                    f"{MAX_PERTURBATION:g}); got {value}")
        if minimum is not None and value < minimum:
            raise InvalidInputError(f"{flag} must be >= {minimum}; got {value}")
        changes[field] = value
    if args.scenario:
        known = {s.name: s for s in config.scenarios}
        bad = [n for n in args.scenario if n not in known]
        if bad:
            raise InvalidInputError(
                f"--scenario must be one of {', '.join(known)}; got {', '.join(map(repr, bad))}"
            )
        changes["scenarios"] = tuple(known[n] for n in dict.fromkeys(args.scenario))
    config = config.replace(**changes)
    if args.margin is not None:
        if not args.margin > 0:
            raise InvalidInputError(
                f"--margin must be > 0 (the margin-0 scenario is always run); got {args.margin}"
            )
        config = config.with_margin(args.margin)
    return config


def run(args: argparse.Namespace) -> int:
    """Execute ``isoapprox toy``."""
    results = check_results_name(args.out)
    jobs = check_jobs(args.jobs)
    config = build_config(args)
    journal = journal_path(results)
    with contextlib.ExitStack() as claims:
        # every output checked, created and locked before any work; removed if the run fails
        claims.enter_context(claim_output(results, files=(results.with_suffix(".csv"), journal),
                                          journal=journal))
        claim_outputs(claims, folders={"--figures": None if args.no_figures else args.figures})
        return _run(args, config, jobs)


def _run(args: argparse.Namespace, config, jobs: int) -> int:
    results: Path = args.out
    t0 = time.perf_counter()
    out = prepare_output(results, experiment=EXPERIMENT, config=config_key(config),
                         overwrite=args.overwrite, resume=args.resume, reuse=True)
    reused = out is not None
    journal = journal_path(results)
    if not reused:
        out = run_toy(config, jobs=jobs, scheduler=args.scheduler,
                      connect_timeout=args.connect_timeout, progress=not args.quiet,
                      journal=journal)
        write_toy_results(results, config, out, jobs=jobs)
    figures: list[Path] = []
    if not args.no_figures:
        from ..plotting.registry import build_figures

        logger.info("toy: drawing the figures into %s", args.figures)
        figures = [p for p in build_figures([results], args.figures, jobs=jobs)
                   if p.suffix in (".png", ".pdf")]
    if not reused:  # only now: if the figures fail (a full disk), a rerun resumes from it
        journal.unlink(missing_ok=True)
    seconds = time.perf_counter() - t0
    print(format_summary(out))
    print()
    if reused:
        print(f"results: {results} (already there for this configuration: reused; "
              "--overwrite recomputes)")
    else:
        print(f"results: {results} and {results.with_suffix('.csv')}")
    if figures:
        names = sorted({p.stem for p in figures})
        print(f"figures: {args.figures}{os.sep} ({', '.join(names)}; .png and .pdf)")
    where = (f"the Dask cluster at {args.scheduler}" if args.scheduler else
             f"{jobs} worker process{'es' if jobs > 1 else ''}")
    print(f"time: {seconds:.0f} s" + ("" if reused else f" with {where}"))
    return 0
