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

over batch sizes 4 ... 512, dimensions 2 ... 128 and three seeds.

Usage::

    python experiments/collapse_sweep.py [--jobs 2] [--out PATH] [--overwrite]
    python experiments/collapse_sweep.py --smoke --out /tmp/smoke.json

Results: ``experiments/results/collapse_sweep.json`` (records, histories,
triplet diagrams, configuration, seeds, versions) and a CSV of the records
beside it.  Finished cells are journalled next to the results, so an
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

from isoapprox.exceptions import IsoapproxError
from isoapprox.io import Journal
from isoapprox.train import (
    Cell,
    TrainConfig,
    estimate_runtime,
    expand_grid,
    run_sweep,
    write_sweep_results,
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
)


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
                "collapsed": int(sum(bool(x.get("collapsed")) for x in rs)),
                "diverged": int(sum(bool(x.get("diverged")) for x in rs)),
            }
        )
    return rows


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


def run(
    config: Config,
    *,
    journal: str | Path | None = None,
    jobs: int = 1,
    progress: bool = False,
) -> dict[str, Any]:
    """Train every cell (resuming from ``journal``); a pure function of ``config``.

    Returns ``{"result": SweepResult, "summary": rows}``.
    """
    result = run_sweep(
        config.cells(),
        root_seed=config.root_seed,
        journal=journal,
        jobs=jobs,
        progress=progress,
    )
    return {"result": result, "summary": summarize(result.records)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny grid (seconds)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"results JSON (default {RESULTS / (EXPERIMENT + '.json')})",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing results and start a fresh journal",
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the runtime estimate only"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(message)s",
        stream=sys.stderr,
    )
    config = SMOKE if args.smoke else Config()
    out = args.out or RESULTS / (
        EXPERIMENT + ("_smoke" if args.smoke else "") + ".json"
    )
    journal = out.with_suffix(".journal.partial")
    if out.exists() and not (args.overwrite or args.dry_run):
        print(
            f"{EXPERIMENT}: error: {out} exists; pass --overwrite to recompute it",
            file=sys.stderr,
        )
        return 2
    if args.overwrite and journal.exists() and not args.dry_run:
        journal.unlink()
    try:
        cells = config.cells()
        resume = journal.exists() and not args.overwrite
        done = {r.get("cell_id") for r in Journal(journal)} if resume else set()
        est = estimate_runtime(cells, jobs=max(1, args.jobs), skip=done)
        logger.info(
            "%s: %d cells (%d done); estimated %.1f min of compute, about %.1f min "
            "with --jobs %d",
            EXPERIMENT,
            len(cells),
            len(done & {c.cell_id for c in cells}),
            est.seconds / 60,
            est.wall_seconds / 60,
            args.jobs,
        )
        if args.dry_run:
            return 0
        outcome = run(config, journal=journal, jobs=args.jobs, progress=not args.quiet)
    except IsoapproxError as exc:
        print(f"{EXPERIMENT}: error: {exc}", file=sys.stderr)
        return 2
    rows = outcome["summary"]
    write_sweep_results(
        out,
        outcome["result"],
        experiment=EXPERIMENT,
        config=dataclasses.asdict(config),
        root_seed=config.root_seed,
        extra={"summary": rows},
    )
    if not args.quiet:
        print(format_table(rows, "diameter"))
        print(format_table(rows, "median_distance"))
        print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
