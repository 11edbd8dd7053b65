"""Cost of one CollapseMonitor update, in ``diameter`` sweeps; its theory call's CPU time.

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

``--ratio``: the goal of issue 33, a statistics-only update at most 20
``isoapprox.batch_hard_loss`` calls on the same batch: CPU time
(``time.process_time``: every thread of the process, so threads spinning on
a busy machine count) of ``update`` (no log; with a log fsynced at events and
every 50 lines; with a log fsynced at every line; with the statistics on
every numba thread) and of ``batch_hard_loss`` at ``(B, n)`` = (80, 16) and
(512, 128), classes of 4, medians of interleaved warm calls, and their
ratios.  Rows the monitor under test lacks (``fsync_every``, ``threads``)
are left out, so the same script measures an older tree.

    python benchmarks/bench_monitor.py --ratio [--rounds 30]

``--theory``: the CPU time (``time.process_time``: every thread of the
process, so BLAS threads spinning on a busy machine count) of the theory
call of the monitor (``CollapseMonitor._theory``: the seeded 16-point
subsample and :func:`isoapprox.evaluate_theory` on it) at ``(B, n)`` =
(80, 16), (256, 64) and (512, 128), batches of ``B / 4`` classes of 4 with
L2-normalised rows, in four regimes of a training run: ``separated`` (class
centres far apart), ``overlapping`` (classes overlap: the loss is high),
``partial`` (half of the classes merged into one blob, the rest apart) and
``collapsed`` (every point near one point).  "before" is the committed
monitor's call (its options ``TheoryOptions(solver="scipy", n_starts=4,
haus_max_points=0, procrustes_max_dim=8, time_limit=120, max_points=16)``,
default threads, the search in ``R^n``); "after" the monitor of this tree
with each ``--effort``.  Calls interleaved round by round after a warm-up
of each (numba compilation not counted), the same step every round (the
work is a function of the inputs: the rounds measure noise); it prints the
medians, their ratio and whether the two brackets of ``d_iso`` overlap.  The
goal is after <= 100 ms at n = 128 with the monitor's default effort.

    python benchmarks/bench_monitor.py --theory [--rounds 5] [--effort quick,default]
        [--json benchmarks/results/bench_monitor_theory_2cpu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402

from isoapprox import CollapseMonitor, ConvergenceWarning, diameter  # noqa: E402
from isoapprox._validation import as_labels, require_triplets  # noqa: E402
from isoapprox.diagnostics import collapse_statistics, theory_subsample  # noqa: E402
from isoapprox.theory import TheoryOptions, evaluate_theory  # noqa: E402

#: the committed monitor's theory options (MONITOR_THEORY before work budgets)
BEFORE = TheoryOptions(solver="scipy", n_starts=4, haus_max_points=0, procrustes_max_dim=8,
                       time_limit=120.0, max_points=16)
#: (B, n) of the theory benchmark
THEORY_SIZES = ((80, 16), (256, 64), (512, 128))
#: the regimes of the theory benchmark
REGIMES = ("separated", "overlapping", "partial", "collapsed")
MARGIN = 0.2


def _data(N: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    K = 4
    y = np.repeat(np.arange(N // K + 1), K)[:N]
    centres = 3.0 * rng.normal(size=(N // K + 1, n))
    return centres[y] + rng.normal(size=(N, n)), y


def _regime(B: int, n: int, regime: str, seed: int = 0):
    """``B`` L2-normalised rows in ``R^n``, ``B / 4`` classes of 4, in one regime."""
    rng = np.random.default_rng(seed)
    P = B // 4
    y = np.repeat(np.arange(P), 4)
    if regime == "separated":
        E = 3.0 * rng.normal(size=(P, n))[y] + rng.normal(size=(B, n))
    elif regime == "overlapping":
        E = 0.3 * rng.normal(size=(P, n))[y] + rng.normal(size=(B, n))
    elif regime == "partial":
        C = 3.0 * rng.normal(size=(P, n))
        C[: P // 2] = C[0]
        E = C[y] + 0.3 * rng.normal(size=(B, n))
    else:  # collapsed
        E = rng.normal(size=(1, n)) + 1e-3 * rng.normal(size=(B, n))
    return E / np.linalg.norm(E, axis=1, keepdims=True), y


def _before(X: np.ndarray, codes: np.ndarray, step: int):
    """The committed monitor's theory call (``git show HEAD:isoapprox/monitor.py``)."""
    seq = np.random.SeedSequence([BEFORE.seed, step])
    sub_seed, solver_seed = (int(s) for s in seq.generate_state(2))
    idx = theory_subsample(codes, BEFORE.max_points, rng=sub_seed)
    sub, _ = as_labels(codes[idx], idx.size, "labels")
    require_triplets(sub, "labels")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = evaluate_theory(X[idx], sub, margin=MARGIN, options=BEFORE, rng=solver_seed)
    return res


def theory_main(args: argparse.Namespace) -> None:
    efforts = tuple(args.effort.split(","))
    monitors = {e: CollapseMonitor(margin=MARGIN, theory_every=1, effort=e) for e in efforts}
    step = 3
    records = []
    load0 = os.getloadavg()[0]
    for regime in REGIMES:
        for B, n in THEORY_SIZES:
            E, y = _regime(B, n, regime)
            codes, _ = as_labels(y, None, "labels")
            calls = {"before": lambda E=E, codes=codes: _before(E, codes, step)}
            for e, mon in monitors.items():
                calls[f"after_{e}"] = (lambda mon=mon, E=E, codes=codes:
                                       mon._theory(E, codes, step)[0])
            out = {k: f() for k, f in calls.items()}  # warm-up: compile
            cpu: dict[str, list[float]] = {k: [] for k in calls}
            for _ in range(args.rounds):
                for k, f in calls.items():
                    t0 = time.process_time()
                    f()
                    cpu[k].append(time.process_time() - t0)
            med = {k: statistics.median(v) for k, v in cpu.items()}
            rec = {"regime": regime, "B": B, "n": n}
            for k, r in out.items():
                rec[f"{k}_ms"] = 1e3 * med[k]
                rec[f"{k}_d_iso"] = [r.iso.lower, r.iso.upper]
                rec[f"{k}_certified"] = r.iso.certified
            for e in efforts:
                rec[f"ratio_{e}"] = med["before"] / med[f"after_{e}"]
                lo = max(rec["before_d_iso"][0], rec[f"after_{e}_d_iso"][0])
                up = min(rec["before_d_iso"][1], rec[f"after_{e}_d_iso"][1])
                rec[f"brackets_overlap_{e}"] = bool(lo <= up * (1 + 1e-9) + 1e-15)
            records.append(rec)
            print(f"{regime:<12}{B:>5}{n:>5}  before {rec['before_ms']:8.1f} ms  " + "  ".join(
                f"{e} {rec[f'after_{e}_ms']:7.1f} ms (x{rec[f'ratio_{e}']:.1f}, "
                f"certified {rec[f'after_{e}_certified']}, overlap "
                f"{rec[f'brackets_overlap_{e}']})" for e in efforts), flush=True)
    load1 = os.getloadavg()[0]
    print(f"cpus = {os.cpu_count()}, rounds = {args.rounds}, load average {load0:.2f} -> "
          f"{load1:.2f}")
    first = efforts[0]
    worst = max(r[f"after_{first}_ms"] for r in records if r["n"] == 128)
    print(f"after ({first}) at n = 128: at most {worst:.1f} ms CPU over the regimes "
          f"(goal <= 100 ms: {'met' if worst <= 100 else 'MISSED'})")
    if args.json:
        from isoapprox.io import atomic_write_text, provenance, to_jsonable

        atomic_write_text(args.json, json.dumps(to_jsonable(
            {"config": {"rounds": args.rounds, "efforts": list(efforts), "margin": MARGIN,
                        "sizes": THEORY_SIZES, "regimes": REGIMES, "step": step,
                        "load_average": [load0, load1]},
             "records": records, "provenance": provenance()}), indent=1))


#: (B, n) of the ratio benchmark: the issue's two training set-ups
RATIO_SIZES = ((80, 16), (512, 128))
#: the goal: a statistics-only update costs at most this many batch_hard_loss calls
RATIO_GOAL = 20.0


def ratio_main(args: argparse.Namespace) -> list[dict]:
    """CPU time of a statistics-only update over one ``batch_hard_loss`` call.

    At each ``(B, n)`` of :data:`RATIO_SIZES` (classes of 4, the data of
    ``_data``), in one process after a warm-up of each call, the calls are
    interleaved round by round and timed with ``time.process_time`` (every
    thread of the process); the ratio is of the medians.
    """
    from isoapprox import batch_hard_loss

    tmp = Path(tempfile.mkdtemp())
    rows = []
    load0 = os.getloadavg()[0]
    for B, n in RATIO_SIZES:
        E, y = _data(B, n)
        mon = CollapseMonitor(margin=0.2, theory_every=0)
        mon_log = CollapseMonitor(margin=0.2, theory_every=0, log=tmp / f"ratio_{B}.jsonl")
        step = iter(range(10**9))
        calls = {
            "batch_hard_loss": lambda E=E, y=y: batch_hard_loss(E, y, margin=0.2),
            "update": lambda mon=mon, E=E, y=y, step=step: mon.update(next(step), E, y, loss=0.5),
            "update+log": (lambda mon=mon_log, E=E, y=y, step=step:
                           mon.update(next(step), E, y, loss=0.5)),
        }
        try:  # the log fsynced at every line (the monitor's default before fsync_every)
            mon_sync = CollapseMonitor(margin=0.2, theory_every=0, fsync_every=1,
                                       log=tmp / f"ratio_{B}_sync.jsonl")
            calls["update+log, fsync each"] = (
                lambda mon=mon_sync, E=E, y=y, step=step: mon.update(next(step), E, y, loss=0.5))
        except TypeError:  # a monitor without fsync_every: it fsyncs every line
            pass
        try:  # the statistics on every numba thread (the monitor's default before `threads`)
            mon_all = CollapseMonitor(margin=0.2, theory_every=0, threads=None)
            calls["update, all threads"] = (
                lambda mon=mon_all, E=E, y=y, step=step: mon.update(next(step), E, y, loss=0.5))
        except TypeError:
            pass
        for f in calls.values():  # warm-up: compile
            f()
        cpu: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(args.rounds):
            for k, f in calls.items():
                t0 = time.process_time()
                f()
                cpu[k].append(time.process_time() - t0)
        med = {k: statistics.median(v) for k, v in cpu.items()}
        for k in calls:
            rows.append({"B": B, "n": n, "call": k, "ms": 1e3 * med[k],
                         "ratio": med[k] / med["batch_hard_loss"]})
    load1 = os.getloadavg()[0]
    print(f"CPU time (process_time), medians of {args.rounds} interleaved rounds, numba "
          f"threads = {numba.get_num_threads()}, cpus = {os.cpu_count()}, load average "
          f"{load0:.2f} -> {load1:.2f}")
    print(f"{'B':>5}{'n':>5}  {'call':<24}{'median ms':>11}{'/ batch_hard_loss':>19}")
    for r in rows:
        print(f"{r['B']:>5}{r['n']:>5}  {r['call']:<24}{r['ms']:>11.3f}{r['ratio']:>19.2f}")
    worst = max(r["ratio"] for r in rows if r["call"] == "update")
    print(f"update / batch_hard_loss: at most {worst:.2f} (goal <= {RATIO_GOAL:g}: "
          f"{'met' if worst <= RATIO_GOAL else 'MISSED'})")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--N", type=int, default=512)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--rounds", type=int, default=None,
                   help="rounds of interleaved calls (default 30; 5 with --theory)")
    p.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
    p.add_argument("--theory", action="store_true", help="the theory call's CPU time instead")
    p.add_argument("--effort", default="quick",
                   help="--theory: the monitor's efforts, comma-separated (default quick)")
    p.add_argument("--json", default=None, help="--theory: write the records here")
    p.add_argument("--ratio", action="store_true",
                   help="the CPU time of an update over one batch_hard_loss call at (B, n) = "
                        "(80, 16) and (512, 128) instead")
    args = p.parse_args()
    if args.threads:
        numba.set_num_threads(args.threads)
    if args.ratio:
        args.rounds = 30 if args.rounds is None else args.rounds
        ratio_main(args)
        return
    if args.theory:
        args.rounds = 5 if args.rounds is None else args.rounds
        theory_main(args)
        return
    args.rounds = 30 if args.rounds is None else args.rounds
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
