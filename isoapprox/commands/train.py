"""``isoapprox train``: train one configuration or a grid, resumably.

Every option that takes several values spans a grid axis (the product of
all of them, times ``--seeds``).  Finished cells go to a journal beside the
results file; rerunning the same command after an interruption resumes
where it stopped.  The results are a JSON document (records, histories,
triplet-diagram data, configuration, seeds, versions) and a CSV of the
records.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from ..exceptions import InvalidInputError
from ..losses import LOSSES
from ..runs import (
    check_results_name,
    claim_output,
    config_key,
    finished_units,
    journal_path,
    prepare_output,
)
from .common import add_run_arguments, bounded_int, check_jobs

logger = logging.getLogger(__name__)

EXPERIMENT = "isoapprox train"

_AXES = (
    # (flag, dest, TrainConfig field, type, help)
    ("--dataset", "dataset", "dataset", str, "data set: digits, gaussian or mnist1d"),
    ("--model", "model", "model", str, "mlp (shared weights) or table (free embeddings)"),
    ("--batch-size", "batch_size", "batch_size", bounded_int(4, 512),
     "batch size N = P K (4 ... 512)"),
    ("--dim", "dim", "embedding_dim", bounded_int(2, 128), "embedding dimension n (2 ... 128)"),
    ("--loss", "loss", "loss", str, ", ".join(LOSSES)),
    ("--margin", "margin", "margin", float, "margin alpha >= 0"),
    ("--lr", "lr", "lr", float, "learning rate"),
    ("--normalize", "normalize", "normalize", str, "L2-normalised embeddings: yes or no"),
    ("--optimizer", "optimizer", "optimizer", str, "sgd (momentum) or adam"),
)

#: options in the order of ``--help``: (flag, the TrainConfig field it sets and its
#: argparse dest, keywords of add_argument); --hidden and --samples-per-class (field
#: None) are parsed by :func:`build_cells`
_SETTINGS = (
    ("--steps", "steps", {"type": int, "help": "updates per cell (default 2000)"}),
    ("--log-every", "log_every",
     {"type": int, "help": "log interval in updates (default 100)"}),
    ("--hidden", None,
     {"metavar": "W[,W...]",
      "help": "hidden widths of the MLP, comma-separated; 'none' for linear (default 64)"}),
    ("--samples-per-class", None,
     {"metavar": "K", "help": "K of the P x K batches, or 'auto' (default)"}),
    ("--theory-every", "theory_every",
     {"type": int, "metavar": "T",
      "help": "log d_iso and d_haus to the triplet-separated set (with brackets), c and "
              "theta of the training batch every T updates (a multiple of --log-every; "
              "batches above 16 points on a seeded sub-batch; default 0: off)"}),
    ("--crosscheck", "crosscheck_batches",
     {"type": int, "metavar": "B",
      "help": "after training, evaluate every bound of the theory on B held-out P x K "
              "batches (default 0: off)"}),
)


#: the description of ``isoapprox train --help``
DESCRIPTION = (
    "Train small numpy networks with triplet losses (hard negative mining and "
    "others) on P x K batches, logging the loss, the share of active triplets, "
    "the embedding diameter and median distance on held-out classes and "
    "Recall@K.  Options given several values span a grid; finished cells are "
    "journalled so an interrupted sweep resumes where it stopped."
)
#: the epilog of ``isoapprox train --help``
EPILOG = (
    "examples:\n"
    "  isoapprox train --out cell.json\n"
    "  isoapprox train --batch-size 8 32 128 512 --dim 2 8 32 "
    "--loss batch_hard selectively_contrastive --normalize yes --seeds 0 1 2 "
    "--jobs 2 --out sweep.json\n"
    "  isoapprox train --dataset gaussian --set n_classes=300 --set "
    "n_train_classes=256 --batch-size 512 --dry-run\n\n"
    "exit status: 0 on success; 2 on a bad option or output (one line on stderr);\n"
    "  4 if the system fails a file operation (disk full, permission denied: one\n"
    "  line naming the path; rerunning resumes from the journal); 130 if\n"
    "  interrupted, 143 if terminated."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of ``isoapprox train``."""
    for flag, dest, _field, typ, help_ in _AXES:
        p.add_argument(
            flag,
            dest=dest,
            nargs="+",
            type=typ,
            metavar="V",
            help=f"{help_} (several values: a grid axis)",
        )
    p.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=[0],
        metavar="R",
        help="replicate indices (default 0); each a grid axis entry",
    )
    p.add_argument(
        "--root-seed", type=int, default=0, help="root of every cell's seed (default 0)"
    )
    for flag, field, kw in _SETTINGS:
        p.add_argument(flag, **(kw if field is None else dict(kw, dest=field)))
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="set any TrainConfig field (VALUE parsed as JSON, else a string); "
        "repeatable",
    )
    add_run_arguments(
        p, out=Path("train_results.json"),
        out_help="results JSON (a CSV is written beside it, the journal of finished cells "
                 "as OUT with suffix .journal.partial; default train_results.json)",
        jobs=1, jobs_help="worker processes (default 1: in this process)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the grid size and the runtime estimate, train nothing",
    )
    p.add_argument(
        "--no-estimate", action="store_true", help="skip the up-front runtime estimate"
    )


def _parse_override(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise InvalidInputError(f"--set expects FIELD=VALUE; got {text!r}")
    key, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    if isinstance(value, list):
        value = tuple(value)
    return key.strip(), value


#: the spellings of --normalize
_YES_NO = {**dict.fromkeys(("yes", "true", "1", "on"), True),
           **dict.fromkeys(("no", "false", "0", "off"), False)}


def _yes_no(values: list[str]) -> list[bool]:
    for v in values:
        if v.lower() not in _YES_NO:
            raise InvalidInputError(f"--normalize takes yes or no; got {v!r}")
    return [_YES_NO[v.lower()] for v in values]


def build_cells(args: argparse.Namespace):
    """The base configuration and the cells of the command line's grid."""
    from ..train import TrainConfig, expand_grid

    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    base_kw: dict[str, Any] = {}
    for text in args.overrides:
        key, value = _parse_override(text)
        if key not in fields:
            raise InvalidInputError(
                f"--set: {key!r} is not a TrainConfig field; valid fields: "
                f"{sorted(fields)}"
            )
        # a field with a flag takes the flag's range (--set embedding_dim=1 as --dim 1)
        for flag, _dest, field, typ, _help in _AXES:
            if field == key and typ is not str and typ is not float:
                try:
                    typ(str(value))
                except argparse.ArgumentTypeError as exc:
                    raise InvalidInputError(f"--set {key} (as {flag}): {exc}") from None
        base_kw[key] = value
    for _flag, field, _kw in _SETTINGS:
        if field is not None and getattr(args, field) is not None:
            base_kw[field] = getattr(args, field)
    if args.hidden is not None:
        h = args.hidden.strip().lower()
        try:
            base_kw["hidden"] = (
                () if h in ("", "none") else tuple(int(w) for w in h.split(","))
            )
        except ValueError:
            raise InvalidInputError(
                f"--hidden takes comma-separated widths or 'none'; got {args.hidden!r}"
            ) from None
    if args.samples_per_class is not None:
        k = args.samples_per_class
        base_kw["samples_per_class"] = (
            k if k == "auto" else _int(k, "--samples-per-class")
        )
    grid: dict[str, list[Any]] = {}
    for _flag, dest, field, _typ, _help in _AXES:
        values = getattr(args, dest)
        if values is None:
            continue
        if dest == "normalize":
            values = _yes_no(values)
        grid[field] = list(dict.fromkeys(values))
    try:
        base = TrainConfig(**base_kw)
        cells = expand_grid(base, grid, replicates=args.seeds)
    except TypeError as exc:
        raise InvalidInputError(str(exc)) from None
    return base, grid, cells


def _int(text: str, flag: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidInputError(
            f"{flag} takes an integer or 'auto'; got {text!r}"
        ) from None


def _fmt_seconds(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _table(records: list[dict]) -> str:
    cols = [
        ("loss", "loss", "{}"),
        ("N", "batch_size", "{}"),
        ("n", "embedding_dim", "{}"),
        ("norm", "normalize", "{}"),
        ("lr", "lr", "{:g}"),
        ("seed", "replicate", "{}"),
        ("PxK", None, "{}"),
        ("diam0", "initial_eval_diameter", "{:.3g}"),
        ("diam", "final_eval_diameter", "{:.3g}"),
        ("median", "final_eval_median_distance", "{:.3g}"),
        ("R@1", "final_eval_recall_at_1", "{:.3f}"),
        ("collapsed", "collapsed", "{}"),
        ("s", "seconds", "{:.1f}"),
    ]
    rows = [[c[0] for c in cols]]
    for r in records:
        row = []
        for _, key, fmt in cols:
            if key is None:
                row.append(f"{r['P']}x{r['K']}")
                continue
            v = r.get(key)
            row.append("-" if v is None else fmt.format(v))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(cols))]
    return "\n".join(
        "  ".join(x.rjust(w) for x, w in zip(row, widths, strict=True)) for row in rows
    )


def run(args: argparse.Namespace) -> int:
    """Execute ``isoapprox train``."""
    from ..train import estimate_runtime, run_sweep, write_sweep_results

    jobs = check_jobs(args.jobs)
    if args.root_seed < 0:
        raise InvalidInputError(f"--root-seed must be >= 0; got {args.root_seed}")
    base, grid, cells = build_cells(args)
    out = check_results_name(args.out)
    config = {
        "base": base.to_dict(),
        "grid": grid,
        "seeds": list(args.seeds),
        "root_seed": args.root_seed,
        "n_cells": len(cells),
    }
    journal = journal_path(out)
    claim = (contextlib.nullcontext() if args.dry_run else
             claim_output(out, files=(out.with_suffix(".csv"), journal), journal=journal))
    with claim:
        if not args.dry_run:
            prepare_output(out, experiment=EXPERIMENT, config=config_key(config),
                           overwrite=args.overwrite, resume=args.resume)
        done = set() if args.overwrite else finished_units(journal)
        n_done = sum(c.cell_id in done for c in cells)
        logger.info("grid: %d cell(s) (%d already in the journal %s)", len(cells), n_done,
                    journal)
        if not args.no_estimate and n_done < len(cells):
            est = estimate_runtime(cells, jobs=jobs, skip=done)
            logger.info("estimated runtime: %s of compute, about %s with --jobs %d",
                        _fmt_seconds(est.seconds), _fmt_seconds(est.wall_seconds), jobs)
        if args.dry_run:
            return 0
        result = run_sweep(cells, root_seed=args.root_seed, journal=journal, jobs=jobs,
                           scheduler=args.scheduler, connect_timeout=args.connect_timeout,
                           progress=not args.quiet)
        write_sweep_results(out, result, experiment=EXPERIMENT, config=config,
                            root_seed=args.root_seed)
    print(_table(result.records))
    print(f"\n{len(cells)} cell(s): {result.n_computed} trained, {result.n_resumed} resumed; "
          f"results in {out} and {out.with_suffix('.csv')}")
    return 0
