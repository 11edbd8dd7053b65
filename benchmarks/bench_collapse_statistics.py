"""Time and peak memory of the full collapse statistics, against baselines in the same run.

For each size ``N`` (``n = 128``, labels in classes of ``K = 4``, points
around class centres), every measurement runs in a fresh subprocess so that
its peak resident set size (``ru_maxrss``) is its own, after a warm-up call
that compiles the numba kernels (compile time is not counted):

- ``stats``: :func:`isoapprox.diagnostics.collapse_statistics` (everything:
  anchor sweep, exact quantiles, uniformity, alignment, spectra, class balls);
- ``diameter``: one :func:`isoapprox.diameter` call, the package's existing
  single sweep over the pairs, as the unit of ``O(N^2 n)`` work;
- ``numpy``: the obvious numpy/scipy pipeline for the pair-distance part
  only (``pdist`` + ``np.quantile`` + mean + max), which needs the
  ``N (N - 1) / 2`` distances in memory; skipped above ``--numpy-max``.

Prints medians, the ratios ``stats / diameter`` and ``numpy / stats``, and the
peak RSS of each.  Example (the numbers in the project notes came from this)::

    python benchmarks/bench_collapse_statistics.py --sizes 4096 16384 65536 --repeats 3 1 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _data(N: int, n: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    K = 4
    y = np.repeat(np.arange(N // K), K)[:N]
    centres = 3.0 * rng.normal(size=(N // K + 1, n))
    E = centres[y] + rng.normal(size=(N, n))
    return E, y


def worker(method: str, N: int, n: int) -> None:
    """Run one measurement and print JSON: seconds and peak RSS in MiB."""
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from scipy.spatial.distance import pdist

    from isoapprox import diameter
    from isoapprox.diagnostics import DEFAULT_QUANTILES, collapse_statistics

    small_E, small_y = _data(64, n, seed=1)
    E, y = _data(N, n)
    q = np.array(DEFAULT_QUANTILES)
    if method == "stats":
        collapse_statistics(small_E, small_y, margin=0.2)  # compile
        t0 = time.perf_counter()
        st = collapse_statistics(E, y, margin=0.2)
        dt = time.perf_counter() - t0
        extra = {"median": st.distances.median, "diameter": st.diameter,
                 "effective_rank": st.effective_rank, "uniformity": st.uniformity}
    elif method == "diameter":
        diameter(small_E)
        t0 = time.perf_counter()
        d = diameter(E)
        dt = time.perf_counter() - t0
        extra = {"diameter": d}
    elif method == "numpy":
        t0 = time.perf_counter()
        d = pdist(E)
        qs = np.quantile(d, q)
        extra = {"median": float(qs[list(q).index(0.5)]), "diameter": float(d.max()),
                 "mean": float(d.mean())}
        dt = time.perf_counter() - t0
    else:
        raise SystemExit(f"unknown method {method!r}")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"method": method, "N": N, "n": n, "seconds": dt, "peak_mib": peak_mib,
                      **extra}))


def _measure(method: str, N: int, n: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", method, str(N), str(n)],
        capture_output=True, text=True, check=True, env={**os.environ},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 16384, 65536])
    p.add_argument("--repeats", type=int, nargs="+", default=[3, 3, 1],
                   help="repeats per size (last value reused)")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--numpy-max", type=int, default=16384,
                   help="largest N for the pdist baseline (it holds N^2/2 floats)")
    p.add_argument("--worker", nargs=3, metavar=("METHOD", "N", "n"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return
    import numba

    print(f"n = {args.dim}, numba threads = {numba.get_num_threads()}, cpus = {os.cpu_count()}")
    header = (f"{'N':>7} {'method':>9} {'median s':>10} {'peak MiB':>9} {'runs':>5}  "
              "ratio / note")
    print(header)
    print("-" * len(header))
    for k, N in enumerate(args.sizes):
        reps = args.repeats[min(k, len(args.repeats) - 1)]
        methods = ["stats", "diameter"] + (["numpy"] if N <= args.numpy_max else [])
        res = {m: [_measure(m, N, args.dim) for _ in range(reps)] for m in methods}
        med = {m: statistics.median(r["seconds"] for r in res[m]) for m in methods}
        peak = {m: max(r["peak_mib"] for r in res[m]) for m in methods}
        for m in methods:
            if m == "stats":
                note = f"stats / diameter = {med['stats'] / med['diameter']:.2f}"
            elif m == "numpy":
                note = (f"numpy / stats = {med['numpy'] / med['stats']:.2f} (pair distances "
                        f"only); median agrees: "
                        f"{res['numpy'][0]['median'] == res['stats'][0]['median']}")
            else:
                note = "one sweep over the pairs"
            print(f"{N:>7} {m:>9} {med[m]:>10.3f} {peak[m]:>9.0f} {reps:>5}  {note}")
        if "numpy" not in methods:
            print(f"{N:>7} {'numpy':>9} {'n/a':>10} {'':>9} {'':>5}  "
                  f"pdist would hold {N * (N - 1) // 2 * 8 / 2**30:.1f} GiB")


if __name__ == "__main__":
    main()
