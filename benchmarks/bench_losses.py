#!/usr/bin/env python
"""Benchmark: batch-hard loss, isometric error and large-batch memory.

Compares, in one run and as ratios of medians:

1. ``isoapprox.batch_hard_loss`` (mean reduction, margin 0.2) against

   - numpy/scipy: ``scipy.spatial.distance.cdist`` (float64) plus masked
     ``max`` / ``min`` with ``np.where``, the way the loss is usually written
     without a library;
   - pytorch-metric-learning (PML): ``BatchHardMiner`` + ``TripletMarginLoss``
     with un-normalised Euclidean distance
     (``LpDistance(normalize_embeddings=False, p=2, power=1)``) and
     ``MeanReducer`` (so it computes the same number), on CPU torch in
     float32 (its usual dtype; ``--pml-dtype float64`` for the same
     precision as the others).  Skipped, with a note, when torch or PML
     cannot be imported.

   for N in {256, 1024, 4096, 16384} and n in {2, 32, 128};
2. ``isoapprox.isometric_error`` against numpy (``cdist`` of both
   embeddings, then ``max |D1 - D2|``) wherever the two N x N matrices fit;
3. the BLAS floor at N = 4096, n = 128: one float64 ``E @ E.T`` (numpy sends
   it to SYRK) and ``E @ Et`` with ``Et`` a contiguous copy of ``E.T``
   (GEMM); the ratio is quoted against the faster of the two;
4. the all-triplet loss ``isoapprox.triplet_loss`` (margin 0.2; reductions
   ``sum``, ``mean`` and ``max``) against numpy/scipy -- ``cdist``, the label
   masks, each anchor's positive and negative distances gathered into
   ``(N, K - 1)`` and ``(N, N - K)`` arrays (every class has ``K`` points
   here) and the hinge of all ``N (K - 1) (N - K)`` triplets in one
   broadcast -- and PML's ``TripletMarginLoss`` without a miner (all
   triplets; ``MeanReducer`` / ``SumReducer``, no ``max``), for N in {128,
   256, 512, 1024, 2048, 4096} and n in {16, 32, 128};
5. peak memory: the growth of peak RSS (``VmHWM``, reset through
   ``/proc/self/clear_refs`` before the call) during one call, each in a
   fresh process, with its time -- for the three batch-hard implementations
   and for ``batch_hard_loss``, ``triplet_loss``, ``is_triplet_separated``,
   ``separation_report``, ``isometric_error`` and ``diameter`` at
   N = 65,536, n = 128.  (``tracemalloc`` would not see numba's or torch's
   allocations.)

Data: seeded unit-norm rows, labels in groups of K = 4 (``y = arange(N) //
4``); the second embedding of the isometric error is the first plus
``0.01`` Gaussian noise.  Every timing is the median of at least 3 calls
after one warm-up call (which also excludes JIT compilation); each method
runs in its own worker process (so numba's, OpenBLAS's and torch's thread
pools never share a process) and the workers take turns size by size, so
load changes on a shared machine hit all columns alike.  Threads are each
library's default.

Usage::

    python benchmarks/bench_losses.py            # full run (minutes)
    python benchmarks/bench_losses.py --quick    # small sizes, smoke run
    python benchmarks/bench_losses.py --out results.json
    python benchmarks/bench_losses.py --threads 1   # one thread everywhere
    python benchmarks/bench_losses.py --sections triplet --threads 1   # one section
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

MARGIN = 0.2
K_PER_CLASS = 4
SEED = 20240501

FULL = dict(
    Ns=(256, 1024, 4096, 16384),
    ns=(2, 32, 128),
    floor=(4096, 128),
    memory_compare=((4096, 128), (16384, 128)),
    big=(65536, 128),
    triplet_Ns=(128, 256, 512, 1024, 2048, 4096),
    triplet_ns=(16, 32, 128),
)
QUICK = dict(
    Ns=(256, 1024),
    ns=(2, 32),
    floor=(1024, 32),
    memory_compare=((1024, 32),),
    big=(8192, 32),
    triplet_Ns=(128, 256, 512),
    triplet_ns=(16, 32),
)
SECTIONS = ("batch_hard", "isometric", "floor", "triplet", "memory")
TRIPLET_REDUCTIONS = ("sum", "mean", "max")

BIG_FUNCTIONS = (
    "isoapprox/batch_hard_loss",
    "isoapprox/triplet_loss:mean",
    "isoapprox/is_triplet_separated",
    "isoapprox/separation_report",
    "isoapprox/isometric_error",
    "isoapprox/diameter",
)


# ---------------------------------------------------------------------------
# data and methods (run inside the workers)
# ---------------------------------------------------------------------------


def make_data(N: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm rows and labels in groups of ``K_PER_CLASS``, seeded by ``(N, n)``."""
    rng = np.random.default_rng([SEED, N, n])
    E = rng.standard_normal((N, n))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    return E, np.arange(N, dtype=np.int64) // K_PER_CLASS


def make_pair(N: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    E1, _ = make_data(N, n)
    rng = np.random.default_rng([SEED, N, n, 1])
    return E1, E1 + 0.01 * rng.standard_normal(E1.shape)


def numpy_batch_hard(E: np.ndarray, y: np.ndarray, margin: float) -> float:
    from scipy.spatial.distance import cdist

    D = cdist(E, E)
    same = y[:, None] == y[None, :]
    np.fill_diagonal(same, False)
    hp = np.where(same, D, -np.inf).max(axis=1)
    diff = y[:, None] != y[None, :]
    hn = np.where(diff, D, np.inf).min(axis=1)
    valid = np.isfinite(hp) & np.isfinite(hn)
    return float(np.mean(np.maximum(hp[valid] - hn[valid] + margin, 0.0)))


def numpy_triplet(E: np.ndarray, y: np.ndarray, margin: float, reduction: str) -> float:
    """All-triplet loss from ``cdist`` and label masks (every class has the same size)."""
    from scipy.spatial.distance import cdist

    N = len(y)
    D = cdist(E, E)
    same = y[:, None] == y[None, :]
    pos = same.copy()
    np.fill_diagonal(pos, False)
    P = D[pos].reshape(N, -1)  # each anchor's positives, in index order
    M = D[~same].reshape(N, -1)  # and its negatives
    T = P[:, :, None] - M[:, None, :]
    T += margin
    np.maximum(T, 0.0, out=T)
    if reduction == "sum":
        return float(T.sum())
    if reduction == "mean":
        return float(T.mean())
    return float(T.max())


def numpy_isometric(E1: np.ndarray, E2: np.ndarray) -> float:
    from scipy.spatial.distance import cdist

    D = cdist(E1, E1)
    D -= cdist(E2, E2)
    np.abs(D, out=D)
    return float(D.max())


def build(method: str, N: int, n: int, pml_dtype: str = "float32"):
    """A zero-argument callable for ``method`` on the seeded data of size ``(N, n)``."""
    family, name = method.split("/")
    reduction = None
    if name.startswith("triplet_loss:"):
        name, reduction = name.split(":")
    if name == "isometric_error":
        E1, E2 = make_pair(N, n)
    else:
        E, y = make_data(N, n)
    if family == "isoapprox":
        import isoapprox.geometry as G
        import isoapprox.losses as L
        import isoapprox.metrics as M

        table = {
            "batch_hard_loss": lambda: L.batch_hard_loss(E, y, margin=MARGIN),
            "is_triplet_separated": lambda: L.is_triplet_separated(E, y, margin=MARGIN),
            "separation_report": lambda: L.separation_report(E, y, margin=MARGIN),
            "diameter": lambda: G.diameter(E),
            "isometric_error": lambda: M.isometric_error(E1, E2),
            "triplet_loss": lambda: L.triplet_loss(E, y, margin=MARGIN, reduction=reduction),
        }
        return table[name]
    if family == "numpy":
        if name == "batch_hard_loss":
            return lambda: numpy_batch_hard(E, y, MARGIN)
        if name == "isometric_error":
            return lambda: numpy_isometric(E1, E2)
        if name == "triplet_loss":
            return lambda: numpy_triplet(E, y, MARGIN, reduction)
        if name == "syrk":
            return lambda: E @ E.T
        if name == "gemm":
            Et = np.ascontiguousarray(E.T)
            return lambda: E @ Et
    if family == "pml":
        import torch
        from pytorch_metric_learning import distances, losses, miners, reducers

        dist = distances.LpDistance(normalize_embeddings=False, p=2, power=1)
        Et = torch.from_numpy(E).to(getattr(torch, pml_dtype))
        yt = torch.from_numpy(y)
        if name == "triplet_loss":  # all triplets: no miner
            if reduction == "max":
                raise ValueError("PML has no max reducer")
            red = reducers.SumReducer() if reduction == "sum" else reducers.MeanReducer()
            loss = losses.TripletMarginLoss(margin=MARGIN, distance=dist, reducer=red)

            def run_all():
                with torch.no_grad():
                    return float(loss(Et, yt))

            return run_all
        miner = miners.BatchHardMiner(distance=dist)
        loss = losses.TripletMarginLoss(
            margin=MARGIN, distance=dist, reducer=reducers.MeanReducer()
        )

        def run():
            with torch.no_grad():
                return float(loss(Et, yt, miner(Et, yt)))

        return run
    raise ValueError(f"unknown method {method!r}")


def time_call(f, *, min_reps: int = 3, max_reps: int = 200, budget_s: float = 1.5):
    """Median wall and CPU time of ``f()`` after one warm-up call, and its value."""
    value = f()
    times, cpu = [], []
    start = time.perf_counter()
    while len(times) < max_reps and (
        len(times) < min_reps or time.perf_counter() - start < budget_s
    ):
        c = time.process_time()
        t = time.perf_counter()
        value = f()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(times), statistics.median(cpu), len(times), value


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1])
    raise KeyError(key)


def _scalar(value):
    """A float summary of a result (``None`` for matrices)."""
    if hasattr(value, "worst_slack"):
        return float(value.n_violated)
    if isinstance(value, np.ndarray):
        return None
    return float(value)


def _library_info(kind: str) -> dict:
    info = {"python": platform.python_version(), "numpy": np.__version__}
    try:
        import threadpoolctl

        info["blas"] = [
            {k: d.get(k) for k in ("internal_api", "num_threads", "architecture")}
            for d in threadpoolctl.threadpool_info()
        ]
    except ImportError:
        pass
    if kind == "isoapprox":
        import numba

        info.update(
            numba=numba.__version__,
            numba_threads=numba.get_num_threads(),
            numba_threading_layer=numba.config.THREADING_LAYER,
        )
    if kind == "numpy":
        import scipy

        info["scipy"] = scipy.__version__
    if kind == "pml":
        import pytorch_metric_learning
        import torch

        info.update(
            torch=torch.__version__,
            torch_threads=torch.get_num_threads(),
            pml=pytorch_metric_learning.__version__,
        )
    return info


def worker(conn, kind: str, pml_dtype: str) -> None:
    """Timing worker for one family of methods; answers requests until ``None``."""
    try:
        if kind == "pml":
            import pytorch_metric_learning  # noqa: F401
            import torch  # noqa: F401
        if kind == "isoapprox":
            import isoapprox  # noqa: F401
        conn.send({"ok": True, "info": _library_info(kind)})
    except Exception as exc:  # pragma: no cover - depends on the environment
        conn.send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    while True:
        msg = conn.recv()
        if msg is None:
            return
        method, N, n = msg
        try:
            med, cpu, reps, value = time_call(build(method, N, n, pml_dtype))
            conn.send(
                {
                    "seconds": med,
                    "cpu_seconds": cpu,
                    "reps": reps,
                    "value": _scalar(value),
                }
            )
        except Exception as exc:
            conn.send({"skipped": f"{type(exc).__name__}: {exc}"})


def memory_child(conn, method: str, N: int, n: int, pml_dtype: str) -> None:
    """Fresh process: warm up on a small input, then one timed call with peak RSS."""
    try:
        build(method, 256, min(n, 8), pml_dtype)()  # JIT compile / library warm-up
        f = build(method, N, n, pml_dtype)
        open("/proc/self/clear_refs", "w").write("5")  # reset VmHWM to VmRSS
        rss0 = _status_kib("VmRSS:")
        t = time.perf_counter()
        value = f()
        seconds = time.perf_counter() - t
        growth = _status_kib("VmHWM:") - rss0
        conn.send(
            {
                "seconds": seconds,
                "peak_growth_mib": growth / 1024,
                "value": _scalar(value),
            }
        )
    except Exception as exc:
        conn.send({"skipped": f"{type(exc).__name__}: {exc}"})


# ---------------------------------------------------------------------------
# orchestration (parent process)
# ---------------------------------------------------------------------------


def mem_available_bytes() -> float:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024.0
    except OSError:
        pass
    return math.inf


def bytes_needed(method: str, N: int, pml_dtype: str) -> float:
    """Rough peak of the N x N temporaries (the isoapprox kernels need none)."""
    d = 4 if pml_dtype == "float32" else 8
    if method.startswith("numpy/triplet_loss"):  # D, masks, then N (K-1) (N-K) hinges
        return 10.0 * N * N + 8.0 * N * (K_PER_CLASS - 1) * N
    if method.startswith("pml/triplet_loss"):  # three int64 index lists and the terms
        return 3 * d * N * N + (24.0 + 2 * d) * N * (K_PER_CLASS - 1) * N
    per_pair = {
        "numpy/batch_hard_loss": 18.0,  # D, a where() copy, two bool masks
        "numpy/isometric_error": 24.0,  # D1, D2 and the difference in place
        "numpy/syrk": 8.0,
        "numpy/gemm": 8.0,
        "pml/batch_hard_loss": 3 * d + 19.0,  # mat, mask, clone, int64 pair indices
    }.get(method, 0.0)
    return per_pair * N * N


class Workers:
    def __init__(self, pml_dtype: str, use_pml: bool):
        self.ctx = mp.get_context("spawn")
        self.pml_dtype = pml_dtype
        self.procs, self.conns, self.info, self.errors = {}, {}, {}, {}
        kinds = ["isoapprox", "numpy"] + (["pml"] if use_pml else [])
        for kind in kinds:
            parent, child = self.ctx.Pipe()
            p = self.ctx.Process(
                target=worker, args=(child, kind, pml_dtype), daemon=True
            )
            p.start()
            hello = parent.recv()
            if hello["ok"]:
                self.procs[kind], self.conns[kind], self.info[kind] = (
                    p,
                    parent,
                    hello["info"],
                )
            else:
                self.errors[kind] = hello["error"]
                p.join()

    def time(self, method: str, N: int, n: int) -> dict:
        kind = method.split("/")[0]
        if kind not in self.conns:
            return {"skipped": self.errors.get(kind, f"{kind} not run")}
        need = bytes_needed(method, N, self.pml_dtype)
        avail = mem_available_bytes()
        if need > 0.6 * avail:
            return {
                "skipped": f"needs ~{need / 2**30:.1f} GiB, "
                f"{avail / 2**30:.1f} GiB available"
            }
        self.conns[kind].send((method, N, n))
        return self.conns[kind].recv()

    def close(self):
        for conn in self.conns.values():
            conn.send(None)
        for p in self.procs.values():
            p.join(timeout=30)

    def memory(self, method: str, N: int, n: int) -> dict:
        kind = method.split("/")[0]
        if kind not in self.info:
            return {"skipped": self.errors.get(kind, f"{kind} not run")}
        need = bytes_needed(method, N, self.pml_dtype)
        avail = mem_available_bytes()
        if need > 0.6 * avail:
            return {
                "skipped": f"needs ~{need / 2**30:.1f} GiB, "
                f"{avail / 2**30:.1f} GiB available"
            }
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(
            target=memory_child, args=(child, method, N, n, self.pml_dtype)
        )
        p.start()
        out = parent.recv() if parent.poll(7200) else {"skipped": "no answer"}
        p.join()
        return out


def fmt_ms(r: dict, key: str = "seconds") -> str:
    return f"{1e3 * r[key]:.3g}" if key in r else "—"


def ratio(num: dict, den: dict, key: str = "seconds") -> str:
    if key in num and key in den:
        return f"{num[key] / den[key]:.2f}"
    return "—"


def rel_diff(a: dict, b: dict) -> float | None:
    if a.get("value") is not None and b.get("value") is not None:
        return abs(a["value"] - b["value"]) / max(abs(b["value"]), 1e-300)
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    ap.add_argument("--out", type=Path, help="write all results to this JSON file")
    ap.add_argument("--pml-dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument(
        "--no-pml", action="store_true", help="skip pytorch-metric-learning"
    )
    ap.add_argument(
        "--no-big", action="store_true", help="skip the N = 65,536 memory runs"
    )
    ap.add_argument(
        "--sections",
        nargs="+",
        choices=SECTIONS,
        default=list(SECTIONS),
        help="the sections to run (default: all)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for every library (numba, BLAS, torch); default: their own",
    )
    args = ap.parse_args(argv)
    if args.threads is not None:
        # inherited by the worker processes before they import anything
        for var in (
            "NUMBA_NUM_THREADS",
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS",
        ):
            os.environ[var] = str(args.threads)
    cfg = QUICK if args.quick else FULL
    load0 = os.getloadavg()
    t_start = time.perf_counter()
    print(
        f"# isoapprox benchmark ({'quick' if args.quick else 'full'}, threads: "
        f"{args.threads or 'library defaults'}), "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average at start {load0[0]:.2f}",
        flush=True,
    )
    W = Workers(args.pml_dtype, use_pml=not args.no_pml)
    results: dict = {
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
        "margin": MARGIN,
        "seed": SEED,
        "pml_dtype": args.pml_dtype,
        "threads": args.threads,
        "workers": W.info,
        "worker_errors": W.errors,
        "load_average_start": load0,
    }
    for kind, err in W.errors.items():
        print(f"note: the {kind} column is skipped: {err}", flush=True)

    run = set(args.sections)
    results["sections"] = [k for k in SECTIONS if k in run]

    # 1. batch-hard loss ---------------------------------------------------
    rows = []
    for N in cfg["Ns"] if "batch_hard" in run else ():
        for n in cfg["ns"]:
            r = {
                m: W.time(f"{m}/batch_hard_loss", N, n)
                for m in ("isoapprox", "numpy", "pml")
            }
            rows.append({"N": N, "n": n, **r})
            print(
                f"  batch-hard N={N} n={n}: "
                + ", ".join(f"{m} {fmt_ms(v)} ms" for m, v in r.items()),
                flush=True,
            )
    results["batch_hard"] = rows

    # 2. isometric error -----------------------------------------------------
    iso_rows = []
    for N in cfg["Ns"] if "isometric" in run else ():
        for n in cfg["ns"]:
            r = {
                "isoapprox": W.time("isoapprox/isometric_error", N, n),
                "numpy": W.time("numpy/isometric_error", N, n),
            }
            iso_rows.append({"N": N, "n": n, **r})
            print(
                f"  isometric N={N} n={n}: "
                + ", ".join(f"{m} {fmt_ms(v)} ms" for m, v in r.items()),
                flush=True,
            )
    results["isometric_error"] = iso_rows

    # 3. BLAS floor ----------------------------------------------------------
    Nf, nf = cfg["floor"]
    floor = None
    if "floor" in run:
        floor = {
            "N": Nf,
            "n": nf,
            "syrk": W.time("numpy/syrk", Nf, nf),
            "gemm": W.time("numpy/gemm", Nf, nf),
            "isoapprox": W.time("isoapprox/batch_hard_loss", Nf, nf),
        }
        results["blas_floor"] = floor

    # 4. all-triplet loss ----------------------------------------------------
    trip_rows = []
    for N in cfg["triplet_Ns"] if "triplet" in run else ():
        for n in cfg["triplet_ns"]:
            for red in TRIPLET_REDUCTIONS:
                r = {
                    m: W.time(f"{m}/triplet_loss:{red}", N, n)
                    for m in ("isoapprox", "numpy", "pml")
                }
                trip_rows.append({"N": N, "n": n, "reduction": red, **r})
                print(
                    f"  triplet N={N} n={n} {red}: "
                    + ", ".join(f"{m} {fmt_ms(v)} ms" for m, v in r.items()),
                    flush=True,
                )
    results["triplet"] = trip_rows
    W.close()

    # 4. peak memory, fresh process per measurement ------------------------
    mem_rows = []
    for N, n in cfg["memory_compare"] if "memory" in run else ():
        for m in ("isoapprox", "numpy", "pml"):
            mem_rows.append(
                {
                    "function": f"{m}/batch_hard_loss",
                    "N": N,
                    "n": n,
                    **W.memory(f"{m}/batch_hard_loss", N, n),
                }
            )
            print(f"  memory {mem_rows[-1]}", flush=True)
    if not args.no_big and "memory" in run:
        N, n = cfg["big"]
        for fn in BIG_FUNCTIONS:
            mem_rows.append({"function": fn, "N": N, "n": n, **W.memory(fn, N, n)})
            print(f"  memory {mem_rows[-1]}", flush=True)
    results["memory"] = mem_rows
    load1 = os.getloadavg()
    results["load_average_end"] = load1
    results["wall_seconds"] = time.perf_counter() - t_start

    # ---------------------------------------------------------------- report
    out = []
    if rows:
        out.append(
            f"\n## Batch-hard loss (mean, margin {MARGIN}): median ms; ratio = other / isoapprox "
            f"(> 1: isoapprox faster)\n"
        )
        out.append(
            f"| N | n | isoapprox | numpy/scipy | PML ({args.pml_dtype}) | numpy / isoapprox "
            f"| PML / isoapprox |"
        )
        out.append("|---:|---:|---:|---:|---:|---:|---:|")
        worst_np = worst_pml = 0.0
        for r in rows:
            out.append(
                f"| {r['N']} | {r['n']} | {fmt_ms(r['isoapprox'])} | {fmt_ms(r['numpy'])} | "
                f"{fmt_ms(r['pml'])} | {ratio(r['numpy'], r['isoapprox'])} | "
                f"{ratio(r['pml'], r['isoapprox'])} |"
            )
            d = rel_diff(r["numpy"], r["isoapprox"])
            worst_np = max(worst_np, d or 0.0)
            d = rel_diff(r["pml"], r["isoapprox"])
            worst_pml = max(worst_pml, d or 0.0)
        out.append(
            f"\nLargest relative difference of the loss value from isoapprox: numpy/scipy "
            f"{worst_np:.1e}, PML {worst_pml:.1e}."
        )
        for r in rows:
            for m in ("numpy", "pml"):
                if "skipped" in r[m]:
                    out.append(
                        f"- {m} at N={r['N']}, n={r['n']} skipped: {r[m]['skipped']}"
                    )

    if iso_rows:
        out.append("\n## Isometric error max|D1 - D2|: median ms\n")
        out.append("| N | n | isoapprox | numpy (cdist x2) | numpy / isoapprox |")
        out.append("|---:|---:|---:|---:|---:|")
        for r in iso_rows:
            out.append(
                f"| {r['N']} | {r['n']} | {fmt_ms(r['isoapprox'])} | {fmt_ms(r['numpy'])} | "
                f"{ratio(r['numpy'], r['isoapprox'])} |"
            )
        for r in iso_rows:
            if "skipped" in r["numpy"]:
                out.append(
                    f"- numpy at N={r['N']}, n={r['n']} skipped: {r['numpy']['skipped']}"
                )

    if floor:
        out.append(
            f"\n## BLAS floor at N = {Nf}, n = {nf} (float64, default BLAS threads)\n"
        )
        out.append("| operation | median ms | isoapprox batch_hard_loss / operation |")
        out.append("|---|---:|---:|")
        for key, label in (
            ("syrk", "`E @ E.T` (numpy -> SYRK)"),
            ("gemm", "`E @ Et`, Et = copy of E.T (GEMM)"),
        ):
            out.append(
                f"| {label} | {fmt_ms(floor[key])} | {ratio(floor['isoapprox'], floor[key])} |"
            )
        out.append(f"| isoapprox batch_hard_loss | {fmt_ms(floor['isoapprox'])} | 1.00 |")
        if all("seconds" in floor[k] for k in ("syrk", "gemm", "isoapprox")):
            fast = min(floor["syrk"]["seconds"], floor["gemm"]["seconds"])
            out.append(
                f"\nQuoted floor (the faster of the two): isoapprox / floor = "
                f"{floor['isoapprox']['seconds'] / fast:.2f}"
            )

    if trip_rows:
        out.append(
            f"\n## All-triplet loss (margin {MARGIN}): median CPU ms of one call; ratio = "
            f"other / isoapprox (> 1: isoapprox faster), of CPU and of wall time\n"
        )
        out.append(
            f"| N | n | reduction | isoapprox | numpy/scipy | PML ({args.pml_dtype}) "
            f"| numpy / isoapprox | same, wall | PML / isoapprox |"
        )
        out.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        worst_np = 0.0
        slowest = None
        for r in trip_rows:
            out.append(
                f"| {r['N']} | {r['n']} | {r['reduction']} | "
                f"{fmt_ms(r['isoapprox'], 'cpu_seconds')} | "
                f"{fmt_ms(r['numpy'], 'cpu_seconds')} | {fmt_ms(r['pml'], 'cpu_seconds')} | "
                f"{ratio(r['numpy'], r['isoapprox'], 'cpu_seconds')} | "
                f"{ratio(r['numpy'], r['isoapprox'])} | "
                f"{ratio(r['pml'], r['isoapprox'], 'cpu_seconds')} |"
            )
            worst_np = max(worst_np, rel_diff(r["numpy"], r["isoapprox"]) or 0.0)
            if "cpu_seconds" in r["numpy"] and "cpu_seconds" in r["isoapprox"]:
                q = r["numpy"]["cpu_seconds"] / r["isoapprox"]["cpu_seconds"]
                if slowest is None or q < slowest[0]:
                    slowest = (q, r["N"], r["n"], r["reduction"])
        out.append(
            f"\nLargest relative difference of the loss value from isoapprox: numpy/scipy "
            f"{worst_np:.1e}."
        )
        if slowest is not None:
            out.append(
                f"Smallest ratio numpy / isoapprox (CPU): {slowest[0]:.2f} at N = {slowest[1]}, "
                f"n = {slowest[2]}, {slowest[3]}."
            )
        for r in trip_rows:
            for m in ("numpy", "pml"):
                if "skipped" in r[m] and m in W.info:
                    out.append(
                        f"- {m} at N={r['N']}, n={r['n']}, {r['reduction']} skipped: "
                        f"{r[m]['skipped']}"
                    )

    if mem_rows:
        out.append(
            "\n## Peak memory: growth of peak RSS during one call (fresh process), and its time\n"
        )
        out.append(
            "| function | N | n | time (s) | peak RSS growth (MiB) | one N x N float64 (MiB) |"
        )
        out.append("|---|---:|---:|---:|---:|---:|")
        for r in mem_rows:
            nn = 8 * r["N"] ** 2 / 2**20
            if "seconds" in r:
                out.append(
                    f"| {r['function']} | {r['N']} | {r['n']} | {r['seconds']:.3g} | "
                    f"{r['peak_growth_mib']:.0f} | {nn:.0f} |"
                )
            else:
                out.append(
                    f"| {r['function']} | {r['N']} | {r['n']} | — | skipped: {r['skipped']} | "
                    f"{nn:.0f} |"
                )
    out.append(
        f"\nLoad average: {load0[0]:.2f} at start, {load1[0]:.2f} at end "
        f"(> number of CPUs means the timings are noisy); total {results['wall_seconds']:.0f} s."
    )
    out.append(
        "Threads: "
        + "; ".join(
            f"{k}: "
            + ", ".join(
                f"{kk}={vv}" for kk, vv in v.items() if "thread" in kk or kk == "blas"
            )
            for k, v in W.info.items()
        )
    )
    text = "\n".join(out)
    print(text)
    results["markdown"] = text
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp.write_text(json.dumps(results, indent=1, default=float))
        os.replace(tmp, args.out)
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
