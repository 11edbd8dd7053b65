#!/usr/bin/env python
"""Benchmark: the diameter of a point set against the convex hull and the full sweep.

``isoapprox.diameter`` (two farthest-point sweeps prune the points that cannot
be in a diametral pair, then the exact sweep over the rest) against, in the
same process, single-threaded CPU time, ratios of medians:

* ``hull``: ``scipy.spatial.ConvexHull`` and ``pdist(...).max()`` on its
  vertices (``n <= 3``);
* ``full``: the exact sweep over every pair (``isoapprox.kernels.distances.
  diameter_kernel`` on all points: the diameter before the pruning), up to
  20,000 points.

Standard normal clouds.  Each row checks that the values agree.

Run from the repository root::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=$PWD \\
        python benchmarks/bench_diameter.py --json FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from scipy.spatial import ConvexHull
from scipy.spatial.distance import pdist

import isoapprox as ia
from isoapprox.kernels import distances as KD

SIZES = [(10_000, 2), (100_000, 2), (1_000_000, 2), (10_000, 3), (100_000, 3),
         (10_000, 16), (5_000, 128)]
QUICK = [(10_000, 2), (10_000, 3)]


def median_cpu(f, rounds):
    f()
    out = []
    for _ in range(rounds):
        t0 = time.process_time()
        f()
        out.append(time.process_time() - t0)
    return float(np.median(out))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'N':>9s} {'n':>4s} {'isoapprox ms':>12s} {'hull ms':>9s} {'full ms':>9s} "
          f"{'vs hull':>7s} {'vs full':>7s} same")
    for N, n in QUICK if args.quick else SIZES:
        X = np.random.default_rng(N + n).normal(size=(N, n))
        ours = ia.diameter(X)
        row = {"N": N, "n": n,
               "isoapprox_ms": 1e3 * median_cpu(lambda X=X: ia.diameter(X), args.rounds)}
        same = True
        if n <= 3:
            def hull(X=X):
                return pdist(X[ConvexHull(X).vertices]).max()
            same &= bool(hull() == ours)
            row["hull_ms"] = 1e3 * median_cpu(hull, args.rounds)
        if N <= 20_000:
            same &= bool(KD.diameter_kernel(X)[0] == ours)
            row["full_ms"] = 1e3 * median_cpu(lambda X=X: KD.diameter_kernel(X), 1)
        row["same_value"] = same
        rows.append(row)
        h, f = row.get("hull_ms", np.nan), row.get("full_ms", np.nan)
        print(f"{N:9d} {n:4d} {row['isoapprox_ms']:12.2f} {h:9.2f} {f:9.2f} "
              f"{h / row['isoapprox_ms']:7.2f} {f / row['isoapprox_ms']:7.2f} {same}",
              flush=True)
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        from isoapprox.io import atomic_write_text, provenance

        atomic_write_text(args.json, json.dumps(
            {"config": vars(args), "rows": rows, "load_average": load,
             "provenance": provenance()}, indent=1))


if __name__ == "__main__":
    main()
