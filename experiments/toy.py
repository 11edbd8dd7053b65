"""The toy system: five labelled points in the plane, sequential collapse, the constant c.

Runs :func:`isoapprox.toy.run_toy` (the library code behind ``isoapprox toy``)
and writes its results; the figures are drawn from the results file by
``isoapprox figures experiments/results/toy.json`` (or by ``isoapprox toy``
directly).

``--search`` reruns the deterministic search that chose the default
scenarios.  Every input seed, initial seed and learning rate of a grid is
trained with margin 1 and labels (0, 0, 0, 1, 1), as it is and under
``n_perturbed`` relative perturbations of ``1e-12`` of its initial weights and
inputs (the size by which machines differ; a candidate whose unperturbed run
is not a sequential collapse is not perturbed).  A candidate is *robust* when
every one of these runs collapses sequentially (the clusters merge one at a
time) in the same order, and *confirmed* when ``n_confirm`` (40) more
perturbed runs are too: eight runs alone let fragile candidates through
(one of them then failed in 6 of 48 runs).  Confirmed candidates are ranked
by the fewest steps between two merges over all their runs (the larger, the
farther from two merges becoming one), then by the largest final/initial
diameter ratio (the smaller, the farther below the collapse threshold).  For each of the best,
the same network at smaller learning rates and at margin 0 is trained the
same way: the default pairs the best robust collapse with the largest
smaller learning rate at which every run separates, and with a margin-0 run
that collapses every time.

Usage::

    python experiments/toy.py [--out PATH] [--overwrite | --resume] [--jobs 2]
    python experiments/toy.py --smoke --out /tmp/toy.json
    python experiments/toy.py --search [--jobs 2 | --scheduler ADDRESS]

The run flags and their semantics are those of every long run
(:mod:`isoapprox.runs`, docs/cli.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from isoapprox.commands.common import CommandParser, add_run_arguments, check_jobs, guarded
from isoapprox.commands.toy_report import format_merge_order, format_summary, write_toy_results
from isoapprox.io import write_results
from isoapprox.runs import config_key, executor, journal_path, prepare_output, run_units
from isoapprox.toy import SMOKE, Scenario, ToyConfig, analyse_training, run_toy, train_scenario

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
EXPERIMENT = "toy"

logger = logging.getLogger(EXPERIMENT)

#: the experiment's configuration is the library's
Config = ToyConfig


@dataclass(frozen=True)
class SearchConfig:
    """The grid of the scenario search (all fields JSON-ready)."""

    input_seeds: tuple[int, ...] = (2, 5)
    init_seeds: tuple[int, ...] = tuple(range(100))
    lrs: tuple[float, ...] = (0.2, 0.25)
    labels: tuple[int, ...] = (0, 0, 0, 1, 1)
    margin: float = 1.0
    steps: int = 3000
    perturbation: float = 1e-12
    n_perturbed: int = 7
    n_confirm: int = 40
    partner_factors: tuple[float, ...] = (0.5, 0.25)
    n_best: int = 10


SEARCH_SMOKE = SearchConfig(input_seeds=(5,), init_seeds=(59,), lrs=(0.25,), steps=400,
                            n_perturbed=1, n_confirm=1, n_best=1)


def _one(sc: SearchConfig, xs: int, seed: int, lr: float, margin: float, k: int
         ) -> dict[str, Any]:
    """Run ``k`` of a candidate (0: as it is; k > 0: perturbed with seed k), classified."""
    base = ToyConfig(input_seed=xs, steps=sc.steps,
                     perturbation=sc.perturbation if k else 0.0, perturbation_seed=k)
    scen = Scenario("search", sc.labels, margin, lr, seed)
    tr = train_scenario(base, scen)
    if tr["diverged"]:
        return {"outcome": "diverged"}
    a = analyse_training(base, scen, tr)
    steps = [st for st, _ in a["events"]]
    return {
        "outcome": a["outcome"],
        "sequential": a["sequential"],
        "merge_order": a["merge_order"],
        "merge_steps": steps,
        "min_spacing": int(min(np.diff([0, *steps]))) if steps else None,
        "final_diameter_ratio": a["final_diameter_ratio"],
        "zero_loss_step": a["zero_loss_step"],
    }


def _confirm(args: tuple[SearchConfig, int, int, float, Any]) -> dict[str, Any]:
    """``n_confirm`` more perturbed runs of a robust candidate; stops at the first that
    is not a sequential collapse in the candidate's merge order."""
    sc, xs, seed, lr, order = args
    spacing, ratio = math.inf, 0.0
    first = sc.n_perturbed + 1
    for k in range(first, first + sc.n_confirm):
        r = _one(sc, xs, seed, lr, sc.margin, k)
        if not (r["outcome"] == "collapsed" and r["sequential"] and r["merge_order"] == order):
            return {"confirmed": False, "failed_run": k}
        spacing = min(spacing, r["min_spacing"])
        ratio = max(ratio, r["final_diameter_ratio"])
    return {"confirmed": True, "min_spacing": spacing, "max_final_ratio": ratio}


def _runs(sc: SearchConfig, xs: int, seed: int, lr: float, margin: float, *,
          screen: bool = False) -> list[dict[str, Any]]:
    """One candidate trained as it is and under each perturbation, classified.

    With ``screen``, the perturbed runs are skipped when the run as it is
    is not a sequential collapse (it cannot be a robust one).
    """
    out = []
    for k in range(sc.n_perturbed + 1):
        if screen and k == 1 and not out[0].get("sequential"):
            break
        out.append(_one(sc, xs, seed, lr, margin, k))
    return out


def _candidate(args: tuple[SearchConfig, int, int, float, float]) -> dict[str, Any]:
    sc, xs, seed, lr, margin, screen = args
    runs = _runs(sc, xs, seed, lr, margin, screen=screen)
    outcomes = sorted({r["outcome"] for r in runs})
    orders = {json.dumps(r.get("merge_order")) for r in runs}
    complete = len(runs) == sc.n_perturbed + 1
    collapse = (complete and outcomes == ["collapsed"] and all(r["sequential"] for r in runs)
                and len(orders) == 1)
    separate = complete and outcomes == ["separated"]
    return {
        "input_seed": xs, "init_seed": seed, "lr": lr, "margin": margin,
        "outcomes": outcomes,
        "robust_sequential_collapse": bool(collapse),
        "robust_collapse": complete and outcomes == ["collapsed"],
        "robust_separation": bool(separate),
        "merge_order": runs[0].get("merge_order"),
        "min_spacing": min((r["min_spacing"] for r in runs if r.get("min_spacing")),
                           default=None),
        "max_final_ratio": max((r["final_diameter_ratio"] for r in runs
                                if "final_diameter_ratio" in r), default=None),
        # margin 0 has no zero-loss step (a collapse has zero loss too)
        "max_zero_loss_step": max((r["zero_loss_step"] for r in runs
                                   if r.get("zero_loss_step") is not None), default=None),
        "runs": runs,
    }


def _indexed(task: tuple[Callable, int, Any]) -> tuple[int, Any]:
    fn, i, item = task
    return i, fn(item)


def search(sc: SearchConfig, *, jobs: int = 1, scheduler: str | None = None,
           connect_timeout: float = 10.0) -> dict[str, Any]:
    """Train the grid with perturbations; rank the robust sequential collapses; find partners."""
    grid = [(sc, xs, seed, lr, sc.margin, True) for xs in sc.input_seeds
            for seed in sc.init_seeds for lr in sc.lrs]

    def run_all(items: list[tuple], fn=_candidate) -> list[dict[str, Any]]:
        out: list[Any] = [None] * len(items)

        def done(r: tuple[int, Any]) -> None:
            out[r[0]] = r[1]

        ex = executor(jobs if len(items) > 1 else 1, scheduler=scheduler,
                      timeout=connect_timeout)
        run_units(_indexed, [(fn, i, g) for i, g in enumerate(items)], ex, done)
        return out

    cands = run_all(grid)
    robust = [c for c in cands if c["robust_sequential_collapse"]]
    checks = run_all([(sc, c["input_seed"], c["init_seed"], c["lr"], c["merge_order"])
                      for c in robust], _confirm)
    for c, chk in zip(robust, checks, strict=True):
        c["confirmation"] = chk
        if chk["confirmed"]:
            c["min_spacing"] = min(c["min_spacing"], chk["min_spacing"])
            c["max_final_ratio"] = max(c["max_final_ratio"], chk["max_final_ratio"])
    robust = [c for c in robust if c["confirmation"]["confirmed"]]
    robust.sort(key=lambda c: (-c["min_spacing"], c["max_final_ratio"], c["input_seed"],
                               c["init_seed"], c["lr"]))
    best = []
    for c in robust[: sc.n_best]:
        partners = run_all([(sc, c["input_seed"], c["init_seed"], c["lr"] * f, sc.margin, False)
                            for f in sc.partner_factors])
        (zero,) = run_all([(sc, c["input_seed"], c["init_seed"], c["lr"], 0.0, False)])
        sep = [p for p in partners if p["robust_separation"]]
        best.append({**c, "partners": partners, "margin0": zero,
                     "separating_lr": max((p["lr"] for p in sep), default=None),
                     "margin0_collapses": zero["robust_collapse"]})
    chosen = next((b for b in best if b["separating_lr"] is not None and b["margin0_collapses"]),
                  None)
    n_robust = sum(c["robust_sequential_collapse"] for c in cands)
    return {"candidates": cands, "best": best, "chosen": chosen,
            "counts": {"candidates": len(cands), "robust_sequential_collapse": n_robust,
                       "confirmed": len(robust)}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = CommandParser(prog=EXPERIMENT,
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny run (seconds)")
    add_run_arguments(parser, out=None,
                      out_help=f"results JSON (default {RESULTS / (EXPERIMENT + '.json')})",
                      jobs=1, jobs_help="worker processes (default 1: in this process)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--search", action="store_true",
                        help="rerun the search for the default scenarios (minutes)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(message)s", stream=sys.stderr)
    return guarded(EXPERIMENT, _main, args)


def _main(args: argparse.Namespace) -> int:
    jobs = check_jobs(args.jobs)
    if args.search:
        sc = SEARCH_SMOKE if args.smoke else SearchConfig()
        out = args.out or RESULTS / ("toy_search" + ("_smoke" if args.smoke else "") + ".json")
        prepare_output(out, experiment="toy_search", config=config_key(sc),
                       overwrite=args.overwrite, resume=args.resume)
        res = search(sc, jobs=jobs, scheduler=args.scheduler,
                     connect_timeout=args.connect_timeout)
        write_results(out, experiment="toy_search", config=dataclasses.asdict(sc),
                      records=[{k: v for k, v in r.items() if k != "runs"}
                               for r in res["candidates"]],
                      extra={"best": res["best"], "chosen": res["chosen"],
                             "counts": res["counts"]})
        if not args.quiet:
            print(f"candidates: {res['counts']}")
            for b in res["best"]:
                print(f"input_seed {b['input_seed']}  init_seed {b['init_seed']}  lr {b['lr']:g}"
                      f"  fewest steps between merges {b['min_spacing']}  final/initial "
                      f"diameter <= {b['max_final_ratio']:.2g}  merge order "
                      f"{format_merge_order(b['merge_order'])}  separates at lr "
                      f"{b['separating_lr']}  margin 0 collapses {b['margin0_collapses']}")
            print("chosen: " + json.dumps({k: res["chosen"][k] for k in
                                           ("input_seed", "init_seed", "lr", "separating_lr")}
                                          if res["chosen"] else None))
            print(f"results: {out}")
        return 0
    config = SMOKE if args.smoke else Config()
    out = args.out or RESULTS / (EXPERIMENT + ("_smoke" if args.smoke else "") + ".json")
    prepare_output(out, experiment=EXPERIMENT, config=config_key(config),
                   overwrite=args.overwrite, resume=args.resume)
    journal = journal_path(out)
    res = run_toy(config, jobs=jobs, scheduler=args.scheduler,
                  connect_timeout=args.connect_timeout, progress=not args.quiet, journal=journal)
    write_toy_results(out, config, res, jobs=jobs)
    journal.unlink(missing_ok=True)
    if not args.quiet:
        print(format_summary(res))
        print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
