"""Benchmark: the sub-batch lower bounds of nearest_ideal, before and after.

Batches (margin 0.2, classes balanced, labels ``k mod P``):

- collapse: ``E = 1e-3 * standard normal``, ``(N, P, n)`` in ``(16, 4, 2)``,
  ``(32, 8, 2)``, ``(64, 16, 2)``, ``(64, 16, 3)``, ``(64, 16, 4)``, ``(64, 16, 8)``;
- spread out: ``E`` standard normal, 8 classes, ``(N, n)`` in ``(32, 8)``,
  ``(64, 8)``.

For each batch and objective, ``nearest_ideal`` runs twice with the same
seed: with the default ``max_subbatches`` and with ``max_subbatches=0`` (no
sub-problems; the cheap representatives bound still runs).  Reported:

- ``value``: the upper end of the default run;
- ``lower before``: the largest bound of the default run other than
  ``"sub_batch"``, ``"sub_batch_packing"`` and ``"shor_sdp_triplets"`` (the
  Shor relaxation on the hardest triplets), i.e. the lower end without
  them (they come after the search and change no incumbent, so the rest of
  the run is the same);
- ``lower after``: the default run's lower end, with its source;
- the relative gaps ``(value - lower) / value`` of both;
- the wall times of both runs (their difference is the sub-batch work).

``--iso-subproblems`` also solves the sub-problems for ``"iso"`` (which
``nearest_ideal`` does not do) and prints their best bound, the evidence
for leaving them out.

Run from the repository root::

    PYTHONPATH=$PWD python benchmarks/bench_subbatch.py [--time-limit 10] [--json FILE]
    PYTHONPATH=$PWD python benchmarks/bench_subbatch.py --quick   # two batches, 2 s searches
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from isoapprox import nearest_ideal

# an open bracket is part of what these scripts measure, not a warning
from isoapprox.exceptions import ConvergenceWarning
from isoapprox.ideal import SolverOptions, solve_nearest
from isoapprox.ideal._subbatch import sub_batch_bound

warnings.filterwarnings("ignore", category=ConvergenceWarning)

MARGIN = 0.2
NEW = ("sub_batch", "sub_batch_packing", "shor_sdp_triplets")
COLLAPSE = [(16, 4, 2), (32, 8, 2), (64, 16, 2), (64, 16, 3), (64, 16, 4), (64, 16, 8)]
SPREAD = [(32, 8, 8), (64, 8, 8)]


def batches(quick: bool) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for N, P, n in COLLAPSE[:1] if quick else COLLAPSE:
        E = 1e-3 * np.random.default_rng(0).normal(size=(N, n))
        out.append((f"collapse N={N} P={P} R^{n}", E, np.arange(N) % P))
    for N, P, n in SPREAD[:1] if quick else SPREAD:
        E = np.random.default_rng(0).normal(size=(N, n))
        out.append((f"spread N={N} P={P} R^{n}", E, np.arange(N) % P))
    return out


def iso_subproblems(E: np.ndarray, y: np.ndarray) -> float:
    def lower(X, c):
        return solve_nearest(X, c, MARGIN, 0, SolverOptions.from_effort(
            time_limit=1e6, warn_uncertified=False, n_starts=2,
            max_subbatches=0)).lower
    return sub_batch_bound(E, y.astype(np.int64), MARGIN, lower).value


def run(time_limit: float, quick: bool, with_iso: bool) -> list[dict]:
    # warm-up: numba compilation, cvxpy import and problem caches
    for obj in ("iso", "haus"):
        g = np.random.default_rng(1)
        nearest_ideal(g.normal(size=(14, 2)), np.arange(14) % 3, margin=MARGIN,
                      objective=obj, rng=0, time_limit=1.0)
    records = []
    for name, E, y in batches(quick):
        for obj in ("iso", "haus"):
            t0 = time.perf_counter()
            off = nearest_ideal(E, y, margin=MARGIN, objective=obj, rng=0,
                                time_limit=time_limit, max_subbatches=0)
            t1 = time.perf_counter()
            on = nearest_ideal(E, y, margin=MARGIN, objective=obj, rng=0,
                               time_limit=time_limit)
            t2 = time.perf_counter()
            before = max(v for k, v in on.bounds.items() if k not in NEW)
            rec = {
                "batch": name, "objective": obj, "value": on.value,
                "lower_before": before, "lower_after": on.lower,
                "source_after": on.lower_source,
                "gap_before": (on.value - before) / on.value,
                "gap_after": on.rel_gap,
                "seconds_without": t1 - t0, "seconds_with": t2 - t1,
                "bounds": on.bounds, "status": on.status,
                "value_without": off.value, "lower_without": off.lower,
            }
            if with_iso and obj == "iso":
                t3 = time.perf_counter()
                rec["iso_subproblems"] = iso_subproblems(E, y)
                rec["iso_subproblem_seconds"] = time.perf_counter() - t3
            records.append(rec)
            print(f"{name:26s} {obj:4s} value {on.value:.4f}  lower {before:.4f} -> "
                  f"{on.lower:.4f} ({on.lower_source})  gap {rec['gap_before']:6.1%} -> "
                  f"{on.rel_gap:6.1%}  time {t1 - t0:5.1f} s -> {t2 - t1:5.1f} s"
                  + (f"  iso sub-problems {rec['iso_subproblems']:.4f}"
                     if "iso_subproblems" in rec else ""), flush=True)
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iso-subproblems", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    records = run(args.time_limit, args.quick, args.iso_subproblems)
    if args.json:
        from isoapprox.io import atomic_write_text, provenance, to_jsonable

        atomic_write_text(args.json, json.dumps(to_jsonable(
            {"time_limit": args.time_limit, "margin": MARGIN, "records": records,
             "provenance": provenance()}), indent=1))


if __name__ == "__main__":
    main()
