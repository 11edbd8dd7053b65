"""Cost of one CollapseMonitor update (statistics only), in ``diameter`` sweeps.

At ``N = 512``, ``n = 128`` (labels in classes of ``K = 4``, points around
class centres, seeded), in one process after a warm-up call of each (numba
compilation is not counted), the calls are interleaved round by round and
the script prints the median of each and the ratios of medians to one
:func:`isoapprox.diameter` call on the same data (a "sweep"):

- ``update``: ``CollapseMonitor(theory_every=0).update`` without a log (the
  statistics of one anchor sweep, one SVD, the signatures, the record);
- ``update+log``: the same with a JSON-lines log, every line fsynced;
- ``collapse_statistics``: the full statistics of ``isoapprox diagnose``, for
  comparison.

The goal is ``update / diameter <= 5``.  Peak memory: the largest block of
Python-heap allocations (``tracemalloc``) during one update, against the
``N x n`` input and against one ``N x N`` float64 matrix.

    python benchmarks/bench_monitor.py [--N 512] [--dim 128] [--rounds 30] [--threads K]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402

from isoapprox import CollapseMonitor, diameter  # noqa: E402
from isoapprox.diagnostics import collapse_statistics  # noqa: E402


def _data(N: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    K = 4
    y = np.repeat(np.arange(N // K + 1), K)[:N]
    centres = 3.0 * rng.normal(size=(N // K + 1, n))
    return centres[y] + rng.normal(size=(N, n)), y


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--N", type=int, default=512)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
    args = p.parse_args()
    if args.threads:
        numba.set_num_threads(args.threads)
    E, y = _data(args.N, args.dim)
    tmp = Path(tempfile.mkdtemp())
    mon = CollapseMonitor(margin=0.2, theory_every=0)
    mon_log = CollapseMonitor(margin=0.2, theory_every=0, log=tmp / "bench.jsonl")
    step = iter(range(10**9))
    calls = {
        "diameter": lambda: diameter(E),
        "update": lambda: mon.update(next(step), E, y, loss=0.5),
        "update+log": lambda: mon_log.update(next(step), E, y, loss=0.5),
        "collapse_statistics": lambda: collapse_statistics(E, y, margin=0.2),
    }
    for f in calls.values():  # warm-up: compile
        f()
    times: dict[str, list[float]] = {k: [] for k in calls}
    load0 = os.getloadavg()[0]
    for _ in range(args.rounds):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    load1 = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in times.items()}

    tracemalloc.start()
    mon.update(0, E, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(f"N = {args.N}, n = {args.dim}, numba threads = {numba.get_num_threads()}, "
          f"cpus = {os.cpu_count()}, rounds = {args.rounds}, load average {load0:.2f} -> "
          f"{load1:.2f}")
    print(f"{'call':<22}{'median ms':>11}{'/ diameter':>12}")
    for k in calls:
        print(f"{k:<22}{1e3 * med[k]:>11.3f}{med[k] / med['diameter']:>12.2f}")
    goal = med["update"] / med["diameter"]
    print(f"update / diameter = {goal:.2f} sweeps (goal <= 5: {'met' if goal <= 5 else 'MISSED'})")
    nn = args.N * args.N * 8
    print(f"peak traced memory of one update: {peak / 2**20:.2f} MiB = "
          f"{peak / E.nbytes:.2f} x the (N, n) input ({E.nbytes / 2**20:.2f} MiB); "
          f"one N x N float64 matrix would be {nn / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
