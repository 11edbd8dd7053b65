"""Benchmark: minimax Procrustes in high dimension, the Riemannian solver against the former one.

:func:`isoapprox.minimax_procrustes` for ``n >= 3`` (``method =
"kabsch-riemannian"``: reduction to the span of the data, prox-Newton steps
on the orthogonal group, work budgets) against the solver it replaced (SLSQP
over the ``n x n`` Cayley chart, loaded from commit ``f6eebfa`` with ``git
show``), on the same inputs in the same run.  Sizes ``N x n``: 200 x 16,
2000 x 128 and 500 x 512.  Inputs are seeded: ``E1`` has L2-normalised
Gaussian rows; ``near``: ``E2 = E1 U^T + 0.01 Z`` (a perturbed rotation,
``Z`` standard normal); ``random``: ``E2`` independent, also normalised (no
isometry near: the budgets end the search, the worst case).

Each (size, kind, solver) runs in a fresh process: a warm-up call on a small
instance (numba's cached kernels load there), then ``--rounds`` timed calls
(CPU time of the process and wall time; medians), then one call under
``tracemalloc`` (peak of the traced allocations, numpy's included) and the
growth of the peak resident set over the whole worker.  The report lists
both ends of the bracket, ``certified``, the CPU ratio old / new where the
former solver runs (by default for ``n <= 16``: at 2000 x 128 it ran for
more than 30 minutes and 2.7 GB), and the bits of ``upper`` and ``lower``
(``float.hex``), which ``--compare FILE.json`` checks against another run
(``--busy K`` runs beside ``K`` processes that keep the cores busy: the
budgets count work, not time, so the bits do not move)::

    PYTHONPATH=$PWD python benchmarks/bench_procrustes.py --json out.json
    PYTHONPATH=$PWD python benchmarks/bench_procrustes.py --quick --busy 2 --compare out.json

``--quick``: 200 x 16 and 2000 x 128, one round.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

import numpy as np

OLD_COMMIT = "f6eebfa"
SIZES = ((200, 16), (2000, 128), (500, 512))
QUICK_SIZES = ((200, 16), (2000, 128))
KINDS = ("near", "random")
NOISE = 0.01
SEED = 20240611
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def instance(N: int, n: int, kind: str, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng([seed, N, n, KINDS.index(kind)])
    E1 = r.normal(size=(N, n))
    E1 /= np.linalg.norm(E1, axis=1, keepdims=True)
    if kind == "near":
        Q, R = np.linalg.qr(r.normal(size=(n, n)))
        return E1, E1 @ (Q * np.sign(np.diag(R))).T + NOISE * r.normal(size=(N, n))
    E2 = r.normal(size=(N, n))
    return E1, E2 / np.linalg.norm(E2, axis=1, keepdims=True)


def load_former():
    """``minimax_procrustes`` as of ``OLD_COMMIT`` (a module built from ``git show``)."""
    import importlib.util

    import isoapprox

    src = subprocess.run(["git", "show", f"{OLD_COMMIT}:isoapprox/procrustes.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    name = f"isoapprox._procrustes_{OLD_COMMIT}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = isoapprox.__name__
    sys.modules[name] = mod  # dataclasses look their module up there
    exec(compile(src, f"{OLD_COMMIT}:isoapprox/procrustes.py", "exec"), mod.__dict__)
    return mod.minimax_procrustes


def measure(solver: str, N: int, n: int, kind: str, rounds: int) -> dict:
    """One (size, kind, solver) in this (fresh) process."""
    import resource
    import tracemalloc

    if solver == "former":
        fn = load_former()
    else:
        from isoapprox import minimax_procrustes as fn
    fn(*instance(12, n, kind, seed=1))  # warm-up: cached kernels load, caches fill
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    E1, E2 = instance(N, n, kind)
    cpu, wall, res = [], [], None
    for _ in range(rounds):
        t0, w0 = time.process_time(), time.perf_counter()
        res = fn(E1, E2)
        cpu.append(time.process_time() - t0)
        wall.append(time.perf_counter() - w0)
    tracemalloc.start()
    fn(E1, E2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss  # KiB on Linux
    return {
        "solver": solver, "N": N, "n": n, "kind": kind, "rounds": rounds,
        "cpu_s": statistics.median(cpu), "wall_s": statistics.median(wall),
        "traced_peak_mib": peak / 2**20, "rss_growth_mib": rss / 1024,
        "upper": res.upper, "lower": res.lower, "gap": res.gap,
        "certified": res.certified, "n_iter": res.n_iter, "method": res.method,
        "upper_hex": float(res.upper).hex(), "lower_hex": float(res.lower).hex(),
    }


def run_fresh(*job) -> dict:
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(measure, *job).result()


def report(records: list[dict]) -> list[dict]:
    print(f"{'N x n':>11} {'kind':>6} {'solver':>7} {'cpu s':>8} {'wall s':>8} {'peak MiB':>9} "
          f"{'rss MiB':>8} {'upper':>12} {'lower':>12} {'cert':>5} {'iter':>6}")
    for r in records:
        print(f"{r['N']:>5} x {r['n']:<3} {r['kind']:>6} {r['solver']:>7} {r['cpu_s']:8.3f} "
              f"{r['wall_s']:8.3f} {r['traced_peak_mib']:9.1f} {r['rss_growth_mib']:8.1f} "
              f"{r['upper']:12.9g} {r['lower']:12.9g} {r['certified']!s:>5} {r['n_iter']:>6}")
    summary = []
    for r in records:
        if r["solver"] != "new":
            continue
        old = [o for o in records if o["solver"] == "former" and
               (o["N"], o["n"], o["kind"]) == (r["N"], r["n"], r["kind"])]
        row = {"N": r["N"], "n": r["n"], "kind": r["kind"], "cpu_new_s": r["cpu_s"]}
        if old:
            o = old[0]
            row.update(cpu_former_s=o["cpu_s"], cpu_ratio_former_over_new=o["cpu_s"] / r["cpu_s"],
                       upper_rel_diff=(r["upper"] - o["upper"]) / o["upper"],
                       lower_rel_diff=(r["lower"] - o["lower"]) / o["upper"])
            print(f"{r['N']:>5} x {r['n']:<3} {r['kind']:>6}: former / new CPU "
                  f"{row['cpu_ratio_former_over_new']:.3g}, upper (new - former) / former "
                  f"{row['upper_rel_diff']:+.2e}, lower {row['lower_rel_diff']:+.2e}")
        summary.append(row)
    return summary


def compare(records: list[dict], other_path: str) -> int:
    """Records of the new solver whose bracket bits differ from another run's."""
    with open(other_path, encoding="utf-8") as fh:
        other = {(o["N"], o["n"], o["kind"], o["solver"]): o for o in json.load(fh)["records"]}
    differ = same = 0
    for r in records:
        o = other.get((r["N"], r["n"], r["kind"], r["solver"]))
        if o is None or r["solver"] != "new":
            continue
        if (r["upper_hex"], r["lower_hex"], r["n_iter"]) == (o["upper_hex"], o["lower_hex"],
                                                              o["n_iter"]):
            same += 1
        else:
            differ += 1
            print(f"differs: {r['N']} x {r['n']} {r['kind']}: {r['upper_hex']} {r['lower_hex']} "
                  f"vs {o['upper_hex']} {o['lower_hex']}")
    print(f"compare: {same} of {same + differ} brackets bit-identical to {other_path}")
    return differ


def _busy(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="two sizes, one round")
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--former-max-n", type=int, default=16,
                    help="run the former solver only up to this n (default 16)")
    ap.add_argument("--json", help="write the records and the summary to this file")
    ap.add_argument("--busy", type=int, default=0, metavar="K",
                    help="run beside K processes that keep the cores busy (default 0)")
    ap.add_argument("--compare", metavar="FILE",
                    help="check the new solver's brackets against another run's --json file")
    args = ap.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    rounds = 1 if args.quick else args.rounds
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    busy = _busy(args.busy)
    records = []
    try:
        for N, n in sizes:
            for kind in args.kinds:
                for solver in ("new", "former") if n <= args.former_max_n else ("new",):
                    records.append(run_fresh(solver, N, n, kind, rounds))
                    r = records[-1]
                    print(f"  {N} x {n} {kind} {solver}: {r['cpu_s']:.3f} s CPU", flush=True)
        load = os.getloadavg()
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in load)} "
          f"({args.busy} busy processes)")
    summary = report(records)
    differ = compare(records, args.compare) if args.compare else 0
    if args.json:
        from isoapprox.io import atomic_write_text, provenance, to_jsonable

        atomic_write_text(args.json, json.dumps(to_jsonable(
            {"config": vars(args), "old_commit": OLD_COMMIT, "summary": summary,
             "records": records, "load_average": load, "provenance": provenance()}), indent=1))
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
