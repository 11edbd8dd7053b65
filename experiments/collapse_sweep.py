"""Collapse sweep: final embedding diameter against batch size and embedding dimension.

The paper reports that networks trained with triplet loss and hard negative
mining end with a smaller embedding diameter when the batch is larger or
the embedding dimension smaller (LFW: 2.10 at batch size 4, 0.68 at 512),
i.e. collapse when ``N >> n``.  This script trains small numpy MLPs on two
offline data sets with class-disjoint splits and measures, on the held-out
classes, the final diameter, the median pairwise distance (the diameter is
insensitive on the unit sphere) and Recall@1, for

- batch-hard triplet loss on raw embeddings,
- batch-hard triplet loss on L2-normalised embeddings,
- Xuan et al.'s selectively contrastive loss (normalised, as in their paper),

over batch sizes 4 ... 512, dimensions 2 ... 128 and several seeds.  After
training, every bound of the theory (SPEC section 3) is evaluated on a few
held-out P x K batches of each cell (certified true / false / undetermined,
with slacks; :mod:`isoapprox.train.bounds`), and each cell's final diameter is
set against the lower-bound curve ``D*(N/K, n, margin)``.

Usage::

    python experiments/collapse_sweep.py [--jobs 2 | --scheduler ADDRESS] [--out PATH]
        [--overwrite | --resume]
    python experiments/collapse_sweep.py --grid bounded --figures figures/sweep
    python experiments/collapse_sweep.py --smoke --out /tmp/smoke.json

Grids (``--grid``): ``full`` (the default: 2 data sets x 8 batch sizes x 4
dimensions x 3 set-ups x 3 seeds, 2,000 steps; hours), ``bounded`` (4 batch
sizes x 3 dimensions x 2 seeds, 1,000 steps; about 3 minutes of compute; its
compact results are committed) and ``smoke`` (seconds, run by the tests).

Results: ``experiments/results/collapse_sweep[_GRID].json`` (records,
histories, triplet diagrams, cross-check, tables, configuration, seeds,
versions) and a CSV of the records beside it, plus ``..._compact.json``: the
same tables, slim per-cell records, the cross-check slacks and the triplet
diagrams of the figure's cells, small enough to commit.  Figures build from
either (:func:`isoapprox.plotting.registry.build_figures`; ``--figures DIR``
builds them after the run, or alone when the results exist).  The run flags
and their semantics are those of every long run (:mod:`isoapprox.runs`,
docs/cli.md): finished cells are journalled next to the results, so an
interrupted run resumes where it stopped; ``--overwrite`` starts afresh.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from isoapprox.commands.common import CommandParser, add_run_arguments, check_jobs, guarded
from isoapprox.exceptions import IsoapproxError
from isoapprox.io import write_results
from isoapprox.packing import packing_lower_bound
from isoapprox.plotting.registry import build_figures
from isoapprox.runs import config_key, finished_units, journal_path, prepare_output
from isoapprox.train import (
    Cell,
    TrainConfig,
    estimate_runtime,
    expand_grid,
    run_sweep,
    write_sweep_results,
)
from isoapprox.train.bounds import (
    STATEMENTS,
    crosscheck_rows,
    crosscheck_summary,
    curve_rows,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
EXPERIMENT = "collapse_sweep"

logger = logging.getLogger(EXPERIMENT)

#: the compared training set-ups: name -> TrainConfig fields
VARIANTS: dict[str, dict[str, Any]] = {
    "batch_hard": {"loss": "batch_hard", "normalize": False},
    "batch_hard_normalized": {"loss": "batch_hard", "normalize": True},
    "selectively_contrastive": {"loss": "selectively_contrastive", "normalize": True},
}


@dataclass(frozen=True)
class Config:
    """The sweep (all fields JSON-ready)."""

    datasets: tuple[str, ...] = ("digits", "gaussian")
    batch_sizes: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512)
    dims: tuple[int, ...] = (2, 8, 32, 128)
    variants: tuple[str, ...] = tuple(VARIANTS)
    seeds: tuple[int, ...] = (0, 1, 2)
    root_seed: int = 20240507
    steps: int = 2000
    log_every: int = 200
    margin: float = 0.2
    optimizer: str = "sgd"
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 5e-4
    hidden: tuple[int, ...] = (64,)
    activation: str = "tanh"
    #: synthetic set: 256 training classes (P up to 128 at K = 4), 32 held out
    gaussian_classes: int = 288
    gaussian_train_classes: int = 256
    gaussian_per_class: int = 20
    gaussian_input_dim: int = 32
    #: held-out P x K batches per cell on which every bound is evaluated
    crosscheck_batches: int = 3
    #: the cross-check's cost cap (see isoapprox.train.bounds)
    theory_max_points: int = 16
    theory_per_class: int = 4
    theory_n_starts: int = 4
    #: the triplet-diagram figure's cells: data set, batch size, dimension
    diagram_cell: tuple[str, int, int] = ("digits", 512, 8)
    diagram_variants: tuple[str, ...] = ("batch_hard_normalized", "selectively_contrastive")

    def base(self, dataset: str) -> TrainConfig:
        return TrainConfig(
            dataset=dataset,
            n_classes=self.gaussian_classes,
            n_train_classes=self.gaussian_train_classes,
            per_class=self.gaussian_per_class,
            input_dim=self.gaussian_input_dim,
            hidden=self.hidden,
            activation=self.activation,
            margin=self.margin,
            optimizer=self.optimizer,
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            steps=self.steps,
            log_every=self.log_every,
            crosscheck_batches=self.crosscheck_batches,
            theory_max_points=self.theory_max_points,
            theory_per_class=self.theory_per_class,
            theory_n_starts=self.theory_n_starts,
        )

    def cells(self) -> list[Cell]:
        unknown = sorted(set(self.variants) - set(VARIANTS))
        if unknown:
            raise IsoapproxError(
                f"unknown variant(s) {unknown}; valid: {sorted(VARIANTS)}"
            )
        out: list[Cell] = []
        for ds in self.datasets:
            out += expand_grid(
                self.base(ds),
                {
                    "batch_size": list(self.batch_sizes),
                    "embedding_dim": list(self.dims),
                },
                variants=[VARIANTS[v] for v in self.variants],
                replicates=self.seeds,
            )
        return out


SMOKE = Config(
    datasets=("gaussian",),
    batch_sizes=(4, 16),
    dims=(2, 8),
    variants=("batch_hard", "selectively_contrastive"),
    seeds=(0,),
    steps=20,
    log_every=10,
    hidden=(8,),
    gaussian_classes=12,
    gaussian_train_classes=8,
    gaussian_per_class=8,
    gaussian_input_dim=5,
    crosscheck_batches=1,
    theory_max_points=8,
    theory_n_starts=2,
    diagram_cell=("gaussian", 16, 2),
    diagram_variants=("batch_hard", "selectively_contrastive"),
)


#: the bounded real sweep whose results are committed (about 3 minutes of compute on
#: one core): fewer batch sizes, dimensions, seeds and steps than the full grid
BOUNDED = Config(
    batch_sizes=(4, 16, 64, 256),
    dims=(2, 8, 32),
    seeds=(0, 1),
    steps=1000,
    log_every=200,
    crosscheck_batches=1,
    theory_max_points=12,
    theory_per_class=2,
    theory_n_starts=3,
    diagram_cell=("digits", 256, 8),
)

#: grid name -> configuration (``--grid``)
GRIDS: dict[str, Config] = {"full": Config(), "bounded": BOUNDED, "smoke": SMOKE}


def variant_of(record: dict[str, Any]) -> str:
    for name, fields in VARIANTS.items():
        if all(record.get(k) == v for k, v in fields.items()):
            return name
    return "other"


def summarize(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean (and spread) over seeds per data set, variant, batch size and dimension."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        key = (r["dataset"], variant_of(r), r["batch_size"], r["embedding_dim"])
        groups.setdefault(key, []).append(r)
    rows = []
    for (ds, var, N, n), rs in sorted(groups.items()):

        def stat(field, rs=rs):
            v = np.array(
                [x[field] for x in rs if x.get(field) is not None], dtype=float
            )
            return (float(v.mean()), float(v.std())) if v.size else (None, None)

        d, d_sd = stat("final_eval_diameter")
        m, m_sd = stat("final_eval_median_distance")
        rows.append(
            {
                "dataset": ds,
                "variant": var,
                "batch_size": N,
                "embedding_dim": n,
                "P": rs[0]["P"],
                "K": rs[0]["K"],
                "n_seeds": len(rs),
                "diameter": d,
                "diameter_sd": d_sd,
                "median_distance": m,
                "median_sd": m_sd,
                "initial_diameter": stat("initial_eval_diameter")[0],
                "recall_at_1": stat("final_eval_recall_at_1")[0],
                "batch_hard_active": stat("final_batch_hard_active_fraction")[0],
                "hard_fraction": stat("heldout_final_hard_fraction")[0],
                "diameter_ratio": stat("diameter_ratio")[0],
                "median_ratio": stat("median_ratio")[0],
                "collapsed": int(sum(bool(x.get("collapsed")) for x in rs)),
                "collapsed_fraction": sum(bool(x.get("collapsed")) for x in rs) / len(rs),
                "diverged": int(sum(bool(x.get("diverged")) for x in rs)),
            }
        )
    return rows


def collapse_trend(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The collapse trend: per data set, variant and ratio ``N / n`` (batch size over
    embedding dimension), over every cell and seed with that ratio: the number of
    runs, the fraction collapsed (final held-out diameter below ``collapse_rtol``
    of the initial one), and the mean / least final-to-initial diameter and
    median-distance ratios."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        key = (r["dataset"], variant_of(r), r["batch_size"] / r["embedding_dim"])
        groups.setdefault(key, []).append(r)
    out = []
    for (ds, var, ratio), rs in sorted(groups.items()):
        d = [x["diameter_ratio"] for x in rs if x.get("diameter_ratio") is not None]
        m = [x["median_ratio"] for x in rs if x.get("median_ratio") is not None]
        out.append({
            "dataset": ds, "variant": var, "batch_over_dim": ratio, "runs": len(rs),
            "collapsed": int(sum(bool(x.get("collapsed")) for x in rs)),
            "collapsed_fraction": sum(bool(x.get("collapsed")) for x in rs) / len(rs),
            "diameter_ratio_mean": float(np.mean(d)) if d else None,
            "diameter_ratio_min": float(np.min(d)) if d else None,
            "median_ratio_mean": float(np.mean(m)) if m else None,
            "cells": sorted({(x["batch_size"], x["embedding_dim"]) for x in rs}),
        })
    return out


def format_trend(rows: Sequence[dict[str, Any]]) -> str:
    """The collapse trend as a text table."""
    lines = ["collapse trend against N/n (runs pooled over cells with that ratio and seeds)",
             f"{'data set':<10s}{'variant':<25s}{'N/n':>8s}{'runs':>6s}{'collapsed':>11s}"
             f"{'diam ratio':>12s}{'(min)':>10s}{'median ratio':>14s}"]
    for r in rows:
        def f(v, w):
            return f"{v:>{w}.3g}" if v is not None else f"{'-':>{w}s}"
        lines.append(
            f"{r['dataset']:<10s}{r['variant']:<25s}{r['batch_over_dim']:>8.3g}{r['runs']:>6d}"
            f"{r['collapsed']:>6d}/{r['runs']:<4d}{f(r['diameter_ratio_mean'], 12)}"
            f"{f(r['diameter_ratio_min'], 10)}{f(r['median_ratio_mean'], 14)}"
        )
    return "\n".join(lines)


def format_table(rows: Sequence[dict[str, Any]], field: str = "diameter") -> str:
    """One block per data set and variant: batch sizes down, dimensions across."""
    lines = []
    blocks: dict[tuple, dict[tuple, dict]] = {}
    for r in rows:
        blocks.setdefault((r["dataset"], r["variant"]), {})[
            (r["batch_size"], r["embedding_dim"])
        ] = r
    for (ds, var), cells in blocks.items():
        Ns = sorted({k[0] for k in cells})
        ns = sorted({k[1] for k in cells})
        lines.append(
            f"{ds} / {var}: final {field} on held-out classes (mean over seeds)"
        )
        lines.append("   N (PxK) " + "".join(f"{'n=' + str(n):>10s}" for n in ns))
        for N in Ns:
            any_row = next(cells[(N, n)] for n in ns if (N, n) in cells)
            row = f"{N:>4d} ({any_row['P']}x{any_row['K']})".ljust(11)
            for n in ns:
                v = cells.get((N, n), {}).get(field)
                row += f"{v:>10.3g}" if v is not None else f"{'-':>10s}"
            lines.append(row)
        lines.append("")
    return "\n".join(lines)


#: fields of the slim per-cell records of the compact results file
SLIM_FIELDS = (
    "cell_id", "replicate", "dataset", "loss", "normalize", "batch_size", "embedding_dim",
    "margin", "steps", "P", "K", "diverged", "collapsed", "initial_eval_diameter",
    "initial_eval_median_distance", "final_eval_diameter", "final_eval_median_distance",
    "final_eval_recall_at_1", "final_loss", "final_batch_hard_max",
    "final_batch_hard_active_fraction", "heldout_initial_hard_fraction",
    "heldout_final_hard_fraction", "diameter_ratio", "median_ratio",
    "final_crosscheck_true", "final_crosscheck_false", "final_crosscheck_undetermined",
    "seconds",
)
#: significant digits of the slacks stored for the figure
SLACK_DIGITS = 4


def _round(v: float | None, digits: int = SLACK_DIGITS) -> float | None:
    return None if v is None else float(f"{v:.{digits}g}")


def slack_groups(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cross-check's relative slacks and verdicts, one group per statement,
    data set and set-up (columns as lists: compact in JSON)."""
    groups: dict[tuple, dict[str, Any]] = {}
    order = {k: i for i, k in enumerate(STATEMENTS)}
    for r in rows:
        key = (r["statement"], r["dataset"], r["setup"])
        g = groups.setdefault(
            key,
            {"statement": key[0], "dataset": key[1], "setup": key[2],
             "rel_slack": [], "holds": [], "embedding_dim": [], "batch_size": []},
        )
        g["rel_slack"].append(_round(r["rel_slack"]))
        g["holds"].append(r["holds"])
        g["embedding_dim"].append(r["embedding_dim"])
        g["batch_size"].append(r["batch_size"])
    return [groups[k] for k in sorted(groups, key=lambda t: (order.get(t[0], 99), t[1:]))]


def curve_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean final diameter against the lower-bound curve per data set, set-up, N, n."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        key = (r["dataset"], r["setup"], r["batch_size"], r["embedding_dim"])
        groups.setdefault(key, []).append(r)
    out = []
    for (ds, setup, N, n), rs in sorted(groups.items()):
        d = [x["final_eval_diameter"] for x in rs if x["final_eval_diameter"] is not None]
        out.append({
            "dataset": ds, "variant": setup, "batch_size": N, "embedding_dim": n,
            "P": rs[0]["P"], "K": rs[0]["K"], "margin": rs[0]["margin"],
            "curve": rs[0]["curve"], "d_star_estimate": rs[0]["d_star_estimate"],
            "d_star_method": rs[0]["d_star_method"],
            "diameter": float(np.mean(d)) if d else None,
            "n_cells": len(rs),
            "below_curve": int(sum(bool(x["below_curve"]) for x in rs)),
        })
    return out


def diagram_cells(config: Config, records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Cell ids of the triplet-diagram figure: ``config.diagram_cell``, first
    replicate, one per variant present (the closest grid point if absent)."""
    ds, N, n = config.diagram_cell
    out: dict[str, str] = {}
    for var in config.diagram_variants:
        cands = [r for r in records if variant_of(r) == var and r["dataset"] == ds]
        if not cands:
            continue
        best = min(
            cands,
            key=lambda r: (abs(np.log2(r["batch_size"] / N)) + abs(np.log2(r["embedding_dim"] / n)),
                           r["replicate"]),
        )
        out[var] = best["cell_id"]
    return out


def lower_bound_curves(config: Config, curve: Sequence[dict[str, Any]]) -> list[dict]:
    """``D*(P, n, margin)`` for ``P = 1 .. max P`` of the sweep, per dimension: the
    proven lower bound everywhere, the best packing found where the sweep has
    that ``P`` (omitted for lattice pieces, which are loose upper bounds)."""
    P_max = max([r["P"] for r in curve], default=2)
    out = []
    for n in config.dims:
        Ps = list(range(1, P_max + 1))
        est = {r["P"]: r["d_star_estimate"] for r in curve
               if r["embedding_dim"] == n and r["d_star_method"] != "lattice"}
        out.append({
            "embedding_dim": n, "margin": config.margin, "P": Ps,
            "lower": [packing_lower_bound(P, n, margin=config.margin) for P in Ps],
            "upper": [est.get(P) for P in Ps],
        })
    return out


def tables(config: Config, result) -> dict[str, Any]:
    """Everything the figures and the printed tables need, from the sweep's entries."""
    records = result.records
    rows = crosscheck_rows(result.entries, label=variant_of)
    curve = curve_rows(records, label=variant_of)
    return {
        "lower_bound_curves": lower_bound_curves(config, curve),
        "summary": summarize(records),
        "trend": collapse_trend(records),
        "crosscheck_summary": crosscheck_summary(rows),
        "crosscheck_by_setup": crosscheck_summary(rows, by=("dataset", "setup")),
        "crosscheck_slacks": slack_groups(rows),
        "curve": curve,
        "curve_summary": curve_summary(curve),
        "diagram_cells": diagram_cells(config, records),
        "statements": {k: {"spec_item": v[0], "inequality": v[1], "kind": v[2]}
                       for k, v in STATEMENTS.items()},
    }


def format_crosscheck(rows: Sequence[dict[str, Any]]) -> str:
    """The cross-check summary as a text table."""
    head = (f"{'statement':<17s}{'kind':<12s}{'n':>6s}{'true':>6s}{'false':>6s}{'undet':>6s}"
            f"{'rel slack: min':>16s}{'median':>9s}{'max':>9s}")
    lines = ["bound cross-check on held-out batches (certified verdicts; "
             "rel slack = (rhs - lhs) / max(|lhs|, |rhs|))", head]
    for r in rows:
        def f(v):
            return f"{v:>9.3g}" if v is not None else f"{'-':>9s}"
        lines.append(
            f"{r['statement']:<17s}{r['kind']:<12s}{r['n']:>6d}{r['true']:>6d}{r['false']:>6d}"
            f"{r['undetermined']:>6d}{f(r['rel_slack_min']):>16s}{f(r['rel_slack_median'])}"
            f"{f(r['rel_slack_max'])}"
        )
    lines += ["", "statements:"]
    lines += [f"  {k}: {v[1]} ({v[2]})" for k, v in STATEMENTS.items()]
    return "\n".join(lines)


def format_curve(rows: Sequence[dict[str, Any]]) -> str:
    """Per data set and variant: cells whose final diameter is below the curve."""
    lines = ["final held-out diameter against the lower-bound curve D*(N/K, n, margin) "
             "(cells below / cells)"]
    blocks: dict[tuple, dict[tuple, dict]] = {}
    for r in rows:
        blocks.setdefault((r["dataset"], r["variant"]), {})[
            (r["batch_size"], r["embedding_dim"])] = r
    for (ds, var), cells in blocks.items():
        Ns = sorted({k[0] for k in cells})
        ns = sorted({k[1] for k in cells})
        lines.append(f"{ds} / {var}: curve value (below / cells)")
        lines.append("   N      " + "".join(f"{'n=' + str(n):>16s}" for n in ns))
        for N in Ns:
            row = f"{N:>4d}".ljust(10)
            for n in ns:
                c = cells.get((N, n))
                row += (f"{c['curve']:>9.3g} ({c['below_curve']}/{c['n_cells']})"
                        if c else f"{'-':>16s}")
            lines.append(row)
        lines.append("")
    return "\n".join(lines)


def compact_document(result, tabs: dict[str, Any]) -> tuple[list, dict[str, Any]]:
    """The small results file: slim records, and the tables, slacks and the
    triplet diagrams of the figure's cells."""
    keep = set(tabs["diagram_cells"].values())
    by_id = {e["cell_id"]: e for e in result.entries}
    slim = [{k: r.get(k) for k in SLIM_FIELDS} for r in result.records]
    return slim, {**tabs, "triplet_diagrams": {c: by_id[c]["diagrams"] for c in sorted(keep)}}


def run(
    config: Config,
    *,
    journal: str | Path | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    connect_timeout: float = 10.0,
    progress: bool = False,
) -> dict[str, Any]:
    """Train every cell (resuming from ``journal``); a pure function of ``config``.

    Returns ``{"result": SweepResult, "tables": ...}`` (see :func:`tables`).
    """
    result = run_sweep(
        config.cells(),
        root_seed=config.root_seed,
        journal=journal,
        jobs=jobs,
        scheduler=scheduler,
        connect_timeout=connect_timeout,
        progress=progress,
    )
    return {"result": result, "tables": tables(config, result)}


def compact_path(out: Path) -> Path:
    """Where the compact results file goes, beside ``out``."""
    return out.with_name(out.stem + "_compact.json")


def main(argv: Sequence[str] | None = None) -> int:
    parser = CommandParser(prog=EXPERIMENT,
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny grid (seconds); the same as --grid smoke")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="full",
                        help="full (default: hours), bounded (the committed results: about "
                             "3 min of CPU) or smoke")
    add_run_arguments(parser, out=None,
                      out_help=f"results JSON (default {RESULTS / (EXPERIMENT + '.json')})",
                      jobs=1, jobs_help="worker processes (default 1: in this process)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--dry-run", action="store_true", help="print the runtime estimate only")
    parser.add_argument("--figures", type=Path, default=None, metavar="DIR",
                        help="build the figures from the compact results into DIR (when the "
                             "results exist and neither --overwrite nor --resume is given, "
                             "only the figures are built)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(message)s", stream=sys.stderr)
    return guarded(EXPERIMENT, _main, args)


def _main(args: argparse.Namespace) -> int:
    jobs = check_jobs(args.jobs)
    grid = "smoke" if args.smoke else args.grid
    config = GRIDS[grid]
    out = args.out or RESULTS / (EXPERIMENT + ("" if grid == "full" else "_" + grid) + ".json")
    fresh = args.overwrite or args.resume or args.dry_run
    if args.figures is not None and out.exists() and not fresh:
        return _figures(compact_path(out), args.figures, quiet=args.quiet)
    cfg = dataclasses.asdict(config)
    if not args.dry_run:
        prepare_output(out, experiment=EXPERIMENT, config=config_key(cfg),
                       overwrite=args.overwrite, resume=args.resume)
    journal = journal_path(out)
    cells = config.cells()
    done = set() if args.overwrite else finished_units(journal)
    est = estimate_runtime(cells, jobs=jobs, skip=done)
    logger.info(
        "%s: %d cells (%d done); estimated %.1f min of training, about %.1f min with --jobs "
        "%d (plus the cross-check: %d held-out batch(es) per cell)", EXPERIMENT, len(cells),
        len(done & {c.cell_id for c in cells}), est.seconds / 60, est.wall_seconds / 60, jobs,
        config.crosscheck_batches)
    if args.dry_run:
        return 0
    outcome = run(config, journal=journal, jobs=jobs, scheduler=args.scheduler,
                  connect_timeout=args.connect_timeout, progress=not args.quiet)
    tabs = outcome["tables"]
    write_sweep_results(out, outcome["result"], experiment=EXPERIMENT, config=cfg,
                        root_seed=config.root_seed, extra=tabs)
    slim, extra = compact_document(outcome["result"], tabs)
    write_results(compact_path(out), experiment=EXPERIMENT, config=cfg, records=slim,
                  seed={"root_seed": config.root_seed}, extra={**extra, "compact": True},
                  csv_path=False)
    if not args.quiet:
        rows = tabs["summary"]
        print(format_table(rows, "diameter"))
        print(format_table(rows, "median_distance"))
        print(format_trend(tabs["trend"]))
        print()
        print(format_crosscheck(tabs["crosscheck_summary"]))
        print()
        print(format_curve(tabs["curve_summary"]))
        print(f"results: {out} (compact: {compact_path(out)})")
    if args.figures is not None:
        return _figures(compact_path(out), args.figures, quiet=args.quiet)
    return 0


def _figures(source: Path, out_dir: Path, *, quiet: bool) -> int:
    """Build the sweep's figures from a results file (nothing is recomputed)."""
    files = build_figures([source], out_dir)
    if not quiet:
        print(f"figures: {len(files)} files in {out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
