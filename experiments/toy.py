"""The toy system: five labelled points in the plane, sequential collapse, the constant c.

Runs :func:`isoapprox.toy.run_toy` (the library code behind ``isoapprox toy``)
and writes its results; the figures are drawn from the results file by
``isoapprox figures experiments/results/toy.json`` (or by ``isoapprox toy``
directly).

``--search`` reruns the deterministic search that chose the default
scenarios: every input seed, initial seed and learning rate of a grid is
trained with margin 1 and labels (0, 0, 0, 1, 1); the runs that collapse
(final diameter below 1e-3 of the initial one, mean loss at the margin) are
ranked by how cleanly the points merge one after another (the smallest,
over the stages of 4, 3 and 2 clusters, of the largest gap between
successive single-linkage heights; the stages must occur in this order).
For each of the best, the same network at half and a quarter of the
learning rate is trained too: the default pairs the cleanest collapse with
the largest smaller learning rate at which the same network separates.

Usage::

    python experiments/toy.py [--out PATH] [--overwrite] [--jobs 2]
    python experiments/toy.py --smoke --out /tmp/toy.json
    python experiments/toy.py --search [--jobs 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from isoapprox.exceptions import IsoapproxError
from isoapprox.io import write_results
from isoapprox.toy import (
    SMOKE,
    Scenario,
    ToyConfig,
    classify_run,
    cluster_phases,
    format_summary,
    is_sequential,
    run_toy,
    train_scenario,
    write_toy_results,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
EXPERIMENT = "toy"

logger = logging.getLogger(EXPERIMENT)

#: the experiment's configuration is the library's
Config = ToyConfig


@dataclass(frozen=True)
class SearchConfig:
    """The grid of the scenario search (all fields JSON-ready)."""

    input_seeds: tuple[int, ...] = tuple(range(10))
    init_seeds: tuple[int, ...] = tuple(range(10))
    lrs: tuple[float, ...] = (0.1, 0.2, 0.5)
    labels: tuple[int, ...] = (0, 0, 0, 1, 1)
    margin: float = 1.0
    steps: int = 3000
    partner_factors: tuple[float, ...] = (0.5, 0.25)
    n_best: int = 10


SEARCH_SMOKE = SearchConfig(input_seeds=(2,), init_seeds=(1,), lrs=(0.2,), steps=200, n_best=1)


def _pair_distances(E: np.ndarray) -> np.ndarray:
    iu, ju = np.triu_indices(E.shape[1], 1)
    diff = E[:, iu, :] - E[:, ju, :]
    return np.sqrt(np.einsum("tpk,tpk->tp", diff, diff))


def _one_run(args: tuple[SearchConfig, int, int, float]) -> dict[str, Any]:
    from isoapprox.losses import batch_hard_loss

    sc, xs, seed, lr = args
    base = ToyConfig(input_seed=xs, steps=sc.steps)
    tr = train_scenario(base, Scenario("search", sc.labels, sc.margin, lr, seed))
    rec: dict[str, Any] = {"input_seed": xs, "init_seed": seed, "lr": lr}
    if tr["diverged"]:
        rec.update(outcome="diverged")
        return rec
    D = _pair_distances(tr["embeddings"])
    diam = D.max(axis=1)
    loss_max = batch_hard_loss(tr["embeddings"][-1], sc.labels, margin=sc.margin,
                               reduction="max")
    outcome = classify_run(diam, loss_max, collapse_rtol=base.collapse_rtol)
    phases = cluster_phases(D, sep_rtol=base.sep_rtol, floor_rtol=base.floor_rtol)
    rec.update(
        outcome=outcome,
        initial_diameter=float(diam[0]),
        final_diameter=float(diam[-1]),
        final_loss_mean=float(tr["loss_mean"][-1]),
        sequential=bool(outcome == "collapsed" and is_sequential(phases,
                                                                 min_gap=base.min_gap)),
        score=float(min(p["gap"] for p in phases)),
        phases=phases,
    )
    return rec


def search(sc: SearchConfig, *, jobs: int = 1) -> dict[str, Any]:
    """Train the grid; rank the clean sequential collapses; find separating partners."""
    grid = [(sc, xs, seed, lr) for xs in sc.input_seeds for seed in sc.init_seeds
            for lr in sc.lrs]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            runs = list(ex.map(_one_run, grid, chunksize=4))
    else:
        runs = [_one_run(g) for g in grid]
    clean = [r for r in runs if r["outcome"] == "collapsed" and r["sequential"]
             and abs(r["final_loss_mean"] - sc.margin) <= 1e-3 * max(sc.margin, 1.0)]
    clean.sort(key=lambda r: (-r["score"], r["input_seed"], r["init_seed"], r["lr"]))
    best = []
    for r in clean[: sc.n_best]:
        partners = [_one_run((sc, r["input_seed"], r["init_seed"], r["lr"] * f))
                    for f in sc.partner_factors]
        sep = [p for p in partners if p["outcome"] == "separated"]
        best.append({**r, "partners": partners,
                     "separating_lr": max((p["lr"] for p in sep), default=None)})
    chosen = next((b for b in best if b["separating_lr"] is not None), None)
    return {"runs": runs, "best": best, "chosen": chosen,
            "counts": {o: sum(r["outcome"] == o for r in runs)
                       for o in ("collapsed", "separated", "neither", "diverged")}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny run (seconds)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"results JSON (default {RESULTS / (EXPERIMENT + '.json')})")
    parser.add_argument("--overwrite", action="store_true", help="replace existing results")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--search", action="store_true",
                        help="rerun the search for the default scenarios (minutes)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(message)s", stream=sys.stderr)
    if args.jobs < 1:
        print(f"{EXPERIMENT}: error: --jobs must be >= 1; got {args.jobs}", file=sys.stderr)
        return 2
    if args.search:
        sc = SEARCH_SMOKE if args.smoke else SearchConfig()
        out = args.out or RESULTS / ("toy_search" + ("_smoke" if args.smoke else "") + ".json")
        if out.exists() and not args.overwrite:
            print(f"{EXPERIMENT}: error: {out} exists; pass --overwrite to recompute it",
                  file=sys.stderr)
            return 2
        res = search(sc, jobs=args.jobs)
        write_results(out, experiment="toy_search", config=dataclasses.asdict(sc),
                      records=[{k: v for k, v in r.items() if k != "phases"}
                               for r in res["runs"]],
                      extra={"best": res["best"], "chosen": res["chosen"],
                             "counts": res["counts"]})
        if not args.quiet:
            print(f"runs: {res['counts']}")
            for b in res["best"]:
                print(f"input_seed {b['input_seed']}  init_seed {b['init_seed']}  lr {b['lr']:g}"
                      f"  score {b['score']:.2f}  stages at "
                      f"{[p['step'] for p in b['phases']]}  separates at lr "
                      f"{b['separating_lr']}")
            print("chosen: " + json.dumps({k: res["chosen"][k] for k in
                                           ("input_seed", "init_seed", "lr", "separating_lr")}
                                          if res["chosen"] else None))
            print(f"results: {out}")
        return 0
    config = SMOKE if args.smoke else Config()
    out = args.out or RESULTS / (EXPERIMENT + ("_smoke" if args.smoke else "") + ".json")
    if out.exists() and not args.overwrite:
        print(f"{EXPERIMENT}: error: {out} exists; pass --overwrite to recompute it",
              file=sys.stderr)
        return 2
    try:
        res = run_toy(config, jobs=args.jobs, progress=not args.quiet)
    except IsoapproxError as exc:
        print(f"{EXPERIMENT}: error: {exc}", file=sys.stderr)
        return 2
    write_toy_results(out, config, res, jobs=args.jobs)
    if not args.quiet:
        print(format_summary(res))
        print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
