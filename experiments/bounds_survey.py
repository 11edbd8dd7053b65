"""Bounds survey: the empirical constant ``c`` and statements 1-4 over random toy configurations.

For every configuration ``E`` (labels ``y``, margin ``alpha``) the batch
engine's ``ideal`` stage computes ``d_iso(E, F_TS)`` and ``d_haus(E, F_TS)``
with certified brackets, ``c(E) = d_haus / d_iso`` with the bracket
``[d_haus_lower / d_iso_upper, d_haus_upper / d_iso_lower]``, the thickness
``theta(E)`` and the slack and verdict of each statement.  The survey runs
five grids (each an ordinary :func:`isoapprox.batch.run_batch` run, so each
is resumable and identical on a Dask cluster):

``toy``
    ``N = 5`` in ``R^2``, 2 and 3 classes (balanced layout), Gaussian,
    class-clustered and near-collapsed points, ``alpha = 0.5``.
``sizes``
    ``N = 4, 6`` in ``R^1 .. R^3`` and ``N = 5`` in ``R^1, R^3``
    (2 classes, Gaussian, ``alpha = 0.5``).
``sizes_large``
    ``N = 8, 10`` in ``R^1 .. R^3`` (2 classes, Gaussian, ``alpha = 0.5``;
    12 repetitions a cell).
``adversarial``
    ``N = 5`` in ``R^2``, 2 classes: an evolution-strategy search that
    maximises the certified lower end ``c_lower`` (objective ``c`` of
    :mod:`isoapprox.batch.expensive`), then the ``ideal`` stage re-evaluates
    what it found with the full solver settings.

Usage::

    python experiments/bounds_survey.py [--jobs 2 | --scheduler ADDRESS] [--out PATH]
        [--work DIR] [--figures DIR] [--parts NAME ...]
    python experiments/bounds_survey.py --figures-only --figures DIR
    python experiments/bounds_survey.py --smoke --out /tmp/smoke.json --work /tmp/smoke

Results: ``experiments/results/bounds_survey.json`` (one record per
configuration with its parameters, the brackets and the verdicts; per-part
throughput; per-group quantiles of ``c``; the configuration with the largest
certified ``c_lower``, with its points).  ``--figures DIR`` builds the
figures from the results document (:mod:`isoapprox.plotting.survey`, through
:func:`isoapprox.plotting.registry.build_figures`); ``--figures-only`` does
so without running anything.  The run folders (full tables, journals)
go to ``--work``; rerunning resumes them.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from isoapprox.batch import BatchConfig, GeneratorOptions, Grid, run_batch
from isoapprox.batch.table import iter_cells
from isoapprox.commands.common import CommandParser, check_jobs, guarded
from isoapprox.exceptions import InvalidInputError
from isoapprox.io import write_results
from isoapprox.plotting.registry import build_figures
from isoapprox.runs import read_jsonl

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
EXPERIMENT = "bounds_survey"
SEED = 20240507
MARGIN = 0.5

logger = logging.getLogger(EXPERIMENT)

#: the columns kept per configuration in the results document
FIELDS = (
    "config", "cell", "rep", "distribution", "n_points", "dim", "n_classes", "layout", "margin",
    "loss", "diameter", "d_iso", "d_iso_lower", "d_iso_upper", "d_haus", "d_haus_lower",
    "d_haus_upper", "c", "c_lower", "c_upper", "theta", "theta_lower", "theta_upper",
    "implied_cn", "slack_s3_lower",
    "certified", "d_iso_kind", "d_haus_kind", "collapsed_iso", "class_collapsed_iso",
    "holds_s2_half", "proven_s2_half", "holds_s3_lower", "proven_s3_lower", "holds_s3_upper",
    "proven_s3_upper", "violated_s3_upper", "holds_s1_pointwise", "holds_s1_isometry",
    "d_iso_collapsed_ts", "holds_s4_equal", "ideal_error",
)


#: names of the grids (:func:`parts`), in their order
PARTS = ("toy", "sizes_a", "sizes_b", "sizes_large", "adversarial")


def parts(smoke: bool = False) -> list[tuple[str, BatchConfig]]:
    """The survey's runs: ``(name, BatchConfig)``."""
    reps = {"toy": 2, "sizes": 1, "sizes_large": 1, "adversarial": 1} if smoke else \
        {"toy": 50, "sizes": 12, "sizes_large": 12, "adversarial": 6}
    stages = ("cheap", "ideal", "points")
    common = dict(layouts=("balanced",), margins=(MARGIN,))
    out = [
        ("toy", Grid(n_points=(5,), dims=(2,), classes=(2, 3),
                     distributions=("gaussian", "clustered", "collapsed"),
                     repetitions=reps["toy"], **common), GeneratorOptions()),
        ("sizes_a", Grid(n_points=(4, 6), dims=(1, 2, 3), classes=(2,),
                         distributions=("gaussian",), repetitions=reps["sizes"], **common),
         GeneratorOptions()),
        ("sizes_b", Grid(n_points=(5,), dims=(1, 3), classes=(2,),
                         distributions=("gaussian",), repetitions=reps["sizes"], **common),
         GeneratorOptions()),
        ("sizes_large", Grid(n_points=(8, 10), dims=(1, 2, 3), classes=(2,),
                             distributions=("gaussian",), repetitions=reps["sizes_large"],
                             **common),
         GeneratorOptions()),
        ("adversarial", Grid(n_points=(5,), dims=(2,), classes=(2,),
                             distributions=("adversarial",), repetitions=reps["adversarial"],
                             **common),
         GeneratorOptions(objective="c", search_budget=8 if smoke else 96,
                          search_population=4 if smoke else 12, search_restarts=1)),
    ]
    if smoke:
        out = [(n, Grid(n_points=(4,) if n != "toy" else g.n_points, dims=(2,), classes=(2,),
                        distributions=g.distributions[:1] if n == "toy" else g.distributions,
                        repetitions=g.repetitions, **common), o)
               for n, g, o in out if n in ("toy", "adversarial")]
    return [(name, BatchConfig(grid=g, seed=SEED, stages=stages, chunk_size=4, options=o))
            for name, g, o in out]


def _py(v: Any, dtype: str) -> Any:
    if dtype == "str":
        return str(v)
    f = float(v)
    if math.isnan(f):
        return None
    if dtype in ("int", "bool"):
        return int(f) if dtype == "int" else bool(f)
    return f


def collect(name: str, config: BatchConfig, results: Path) -> list[dict[str, Any]]:
    """The survey records of one finished run (the kept columns, plus points)."""
    columns = {c.name: c for c in config.columns()}
    rows = []
    for _, data in iter_cells(results, tuple(columns.values()), config.format):
        for i in range(len(data["config"])):
            r = {"part": name}
            r.update({f: _py(data[f][i], columns[f].dtype) for f in FIELDS})
            r["points"] = json.loads(data["points"][i])  # exact float64 (repr)
            r["labels"] = json.loads(data["labels"][i])
            rows.append(r)
    return rows


def _quantiles(values: Sequence[float]) -> dict[str, float | None]:
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return {"count": 0, "min": None, "p05": None, "median": None, "p95": None, "max": None}
    q = np.quantile(v, [0.0, 0.05, 0.5, 0.95, 1.0])
    return {"count": int(v.size), "min": float(q[0]), "p05": float(q[1]),
            "median": float(q[2]), "p95": float(q[3]), "max": float(q[4])}


#: relative allowance of "attained" (the solvers' requested gap is 1e-4)
S3_TIGHT_RTOL = 1e-6


def _s3_tight(r: dict[str, Any]) -> bool:
    return (r["d_iso_upper"] is not None and r["loss"] is not None and r["loss"] > 0
            and r["d_iso_upper"] <= 0.5 * r["loss"] * (1 + S3_TIGHT_RTOL))


def summarize(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group ``(part, N, n, P, distribution)``: quantiles of c and shares of verdicts."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        key = (r["part"], r["n_points"], r["dim"], r["n_classes"], r["distribution"])
        groups.setdefault(key, []).append(r)
    out = []
    for (part, N, n, P, dist), rs in sorted(groups.items()):
        def share(f, rs=rs):
            vals = [r[f] for r in rs if r[f] is not None]
            return float(np.mean(vals)) if vals else None

        width = [r["c_upper"] - r["c_lower"] for r in rs
                 if r["c_upper"] is not None and r["c_lower"] is not None
                 and math.isfinite(r["c_upper"])]
        row = {"part": part, "n_points": N, "dim": n, "n_classes": P, "distribution": dist,
               "configurations": len(rs),
               "errors": sum(1 for r in rs if r["ideal_error"]),
               "share_certified": share("certified"),
               "share_collapsed_iso": share("collapsed_iso"),
               "share_class_collapsed_iso": share("class_collapsed_iso"),
               "share_proven_s2_half": share("proven_s2_half"),
               "share_holds_s3_upper": share("holds_s3_upper"),
               "share_violated_s3_upper": share("violated_s3_upper"),
               "share_s3_lower_tight": float(np.mean([_s3_tight(r) for r in rs])),
               "median_c_bracket_width": float(np.median(width)) if width else None}
        for f in ("c", "c_lower", "c_upper", "theta", "implied_cn"):
            for k, v in _quantiles([r[f] for r in rs]).items():
                row[f"{f}_{k}"] = v
        out.append(row)
    return out


def headline(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall numbers: distribution of c, certified share, the largest proven c."""
    ok = [r for r in records if r["c"] is not None]
    best = max((r for r in ok if r["c_lower"] is not None), key=lambda r: r["c_lower"],
               default=None)
    best_inc = max(ok, key=lambda r: r["c"], default=None)
    return {
        "configurations": len(records),
        "with_c": len(ok),
        "certified": sum(1 for r in records if r["certified"]),
        "c": _quantiles([r["c"] for r in ok]),
        "c_lower": _quantiles([r["c_lower"] for r in ok]),
        "min_c_lower": min((r["c_lower"] for r in ok if r["c_lower"] is not None), default=None),
        "proven_c_at_least_half": sum(1 for r in ok if r["proven_s2_half"]),
        "violated_s3_upper": sum(1 for r in records if r["violated_s3_upper"]),
        # statement 3's lower bound attained: d_iso_upper <= (L / 2)(1 + S3_TIGHT_RTOL)
        "s3_lower_tight": sum(1 for r in ok if _s3_tight(r)),
        "c_half_tight": sum(1 for r in ok if r["c_upper"] is not None
                            and r["c_upper"] <= 0.5 * (1 + S3_TIGHT_RTOL)),
        "implied_cn": _quantiles([r["implied_cn"] for r in ok]),
        "holds_s3_upper": sum(1 for r in records if r["holds_s3_upper"]),
        "largest_c_lower": None if best is None else {
            k: best[k] for k in ("part", "config", "distribution", "n_points", "dim",
                                 "n_classes", "margin", "c", "c_lower", "c_upper", "theta",
                                 "d_iso", "d_haus", "points", "labels")},
        "largest_c_incumbent": None if best_inc is None else {
            k: best_inc[k] for k in ("part", "config", "distribution", "n_points", "dim",
                                     "n_classes", "c", "c_lower", "c_upper", "certified")},
    }


def _chunk_seconds(journal: Path) -> float:
    """Worker seconds of the journaled chunks (the first computation of each;
    kept across resumptions, unlike the wall-clock time of the last call)."""
    seen: dict[int, float] = {}
    for rec in read_jsonl(journal):
        if isinstance(rec.get("unit"), int):
            seen.setdefault(rec["unit"], float(rec["result"]["seconds"]))
    return float(sum(seen.values()))


def main(argv: Sequence[str] | None = None) -> int:
    p = CommandParser(prog=EXPERIMENT, description=__doc__.split("\n\n")[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=RESULTS / f"{EXPERIMENT}.json")
    p.add_argument("--work", type=Path, default=RESULTS / f"{EXPERIMENT}_runs",
                   help="folder of the run folders (resumed when rerun)")
    p.add_argument("--jobs", type=int, default=1,
                   help="local worker processes (default 1: in this process)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on the Dask cluster at ADDRESS")
    p.add_argument("--smoke", action="store_true", help="a few configurations only")
    p.add_argument("--figures", type=Path, default=None, metavar="DIR",
                   help="build the figures into DIR")
    p.add_argument("--figures-only", action="store_true",
                   help="only build the figures of an existing --out (needs --figures)")
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), metavar="NAME",
                   help=f"the grids to run (default: all of {', '.join(PARTS)})")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    return guarded(EXPERIMENT, _main, args)


def _main(args: argparse.Namespace) -> int:
    if args.figures_only:
        if args.figures is None:
            raise InvalidInputError("--figures-only needs --figures DIR")
        return _figures(args)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(name)s: %(message)s")
    jobs = check_jobs(args.jobs)
    records: list[dict[str, Any]] = []
    runs = []
    for name, config in parts(args.smoke):
        if name not in args.parts:
            continue
        res = run_batch(config, args.work / name, jobs=jobs,
                        scheduler=args.scheduler, progress=not args.quiet)
        rows = collect(name, config, res.results)
        records.extend(rows)
        rate = res.n_rows / res.seconds if res.computed == res.n_chunks else None
        busy = _chunk_seconds(res.out / "journal.jsonl")
        runs.append({"part": name, "config": config.to_dict(),
                     "fingerprint": config.fingerprint(), "configurations": res.n_rows,
                     "chunks_computed": res.computed, "chunks_reused": res.reused,
                     "seconds": res.seconds, "configs_per_second": rate,
                     "chunk_seconds": busy,
                     "configs_per_worker_second": res.n_rows / busy if busy else None,
                     "jobs": jobs, "scheduler": args.scheduler})
        logger.info("%s: %d configurations in %.1f s", name, res.n_rows, res.seconds)
    summary = summarize(records)
    head = headline(records)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_results(args.out, experiment=EXPERIMENT,
                  config={"parts": [r["config"] for r in runs], "margin": MARGIN,
                          "smoke": args.smoke, "part_names": [r["part"] for r in runs]},
                  records=records, seed=SEED, csv_path=False,
                  extra={"runs": runs, "summary": summary, "headline": head,
                         "cpu_count": os.cpu_count()})
    if not args.quiet:
        c = head["c"]
        print(f"{head['configurations']} configurations, {head['certified']} certified; "
              f"c: min {c['min']}, median {c['median']}, max {c['max']}; "
              f"proven c >= 1/2: {head['proven_c_at_least_half']} of {head['with_c']}")
        print(f"results -> {args.out}")
    return _figures(args) if args.figures is not None else 0


def _figures(args: argparse.Namespace) -> int:
    paths = build_figures([args.out], args.figures)
    if not args.quiet:
        print(f"{len(paths)} figure files -> {args.figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
