#!/usr/bin/env python
"""Benchmark: the Hausdorff distance between point sets against scipy.

``isoapprox.hausdorff_distance(A, B, directed=True)`` against
``scipy.spatial.distance.directed_hausdorff`` (the same early-break
algorithm in Cython), in one process, interleaved, single-threaded CPU
time (``time.process_time``), as ratios of medians.  Each row also checks
that both give the same value, and names the engine that ran (``grid``
for ``n <= 3``, ``tiles``: the early break on distance tiles).  Sets: two
independent standard normal clouds of N points in R^n (``independent``),
and a cloud with a copy moved by 0.5 (``shifted``: more full scans for the
early break).

Run from the repository root::

    PYTHONPATH=$PWD python benchmarks/bench_hausdorff.py --json FILE.json
    PYTHONPATH=$PWD python benchmarks/bench_hausdorff.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from scipy.spatial.distance import directed_hausdorff

import isoapprox as ia
from isoapprox.kernels import hausdorff as KH

SIZES = [(1_000, 2), (10_000, 2), (100_000, 2), (10_000, 3), (1_000, 32), (10_000, 32),
         (1_000, 128), (10_000, 128)]
QUICK = [(1_000, 2), (10_000, 2), (1_000, 32)]


def sets(N: int, n: int, kind: str):
    rng = np.random.default_rng(N * 1000 + n)
    A = rng.normal(size=(N, n))
    if kind == "independent":
        return A, rng.normal(size=(N, n))
    return A, A[rng.permutation(N)] + 0.5 / np.sqrt(n)


def engine(N: int, n: int) -> str:
    """The engine :func:`isoapprox.kernels.hausdorff.directed` runs for ``|B| = N``."""
    return "grid" if n <= KH.GRID_MAX_DIM and N >= KH.GRID_MIN_POINTS else "tiles"


def timed(f, rounds: int):
    out = []
    for _ in range(rounds):
        t0 = time.process_time()
        f()
        out.append(time.process_time() - t0)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three sizes, three rounds")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    rows = []
    load0 = os.getloadavg()
    print(f"load average at start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    print(f"{'N':>7s} {'n':>4s} {'sets':12s} {'engine':6s} {'isoapprox ms':>12s} "
          f"{'scipy ms':>9s} {'speed-up':>8s} same")
    for N, n in QUICK if args.quick else SIZES:
        for kind in ("independent", "shifted"):
            A, B = sets(N, n, kind)
            ours = ia.hausdorff_distance(A, B, directed=True)  # also compiles
            theirs = directed_hausdorff(A, B, seed=0)[0]
            t_ours, t_scipy = [], []
            for _ in range(rounds):  # interleaved
                t_ours += timed(lambda A=A, B=B: ia.hausdorff_distance(A, B, directed=True), 1)
                t_scipy += timed(lambda A=A, B=B: directed_hausdorff(A, B, seed=0), 1)
            m_ours, m_scipy = float(np.median(t_ours)), float(np.median(t_scipy))
            row = {"N": N, "n": n, "sets": kind, "engine": engine(N, n),
                   "isoapprox_ms": 1e3 * m_ours,
                   "scipy_ms": 1e3 * m_scipy, "speedup": m_scipy / m_ours,
                   "same_value": bool(ours == theirs)}
            rows.append(row)
            print(f"{N:7d} {n:4d} {kind:12s} {row['engine']:6s} {row['isoapprox_ms']:12.3f} "
                  f"{row['scipy_ms']:9.3f} {row['speedup']:8.2f} {row['same_value']}",
                  flush=True)
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        from isoapprox.io import atomic_write_text, provenance

        atomic_write_text(args.json, json.dumps(
            {"config": vars(args), "rows": rows, "load_average_start": load0,
             "load_average": load,
             "provenance": provenance()}, indent=1))


if __name__ == "__main__":
    main()
