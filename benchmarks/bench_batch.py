"""Benchmark of the batch engine: throughput and scaling, as ratios of medians.

Run from the repository root::

    python benchmarks/bench_batch.py            # full (a few minutes)
    python benchmarks/bench_batch.py --quick    # smaller sizes, fewer repeats
    python benchmarks/bench_batch.py --stage reference   # also time a per-configuration stage
    git archive 17cc8d3 isoapprox | tar -x -C /tmp/before
    python benchmarks/bench_batch.py --sections cheap chunk e2e --baseline /tmp/before

What it measures (every timing is the median of ``--repeats`` runs, and each
section prints its ratio against a baseline timed in the same run):

1. Cheap quantities of ``N = 5`` points in ``R^2`` (labels 3 + 2, margin 0):
   configurations per second of the vectorised kernel (one thread) against
   a loop over the package's single-configuration functions
   (``batch_hard_loss`` max and mean, ``triplet_loss``, ``diameter``,
   ``isometric_error``, ``min_enclosing_ball``; the kernel also computes
   thickness, which the loop does not).  Then the kernel on two cores (two
   processes, one thread each, timed together after a barrier), the goal
   being >= 1e6 configurations per second; the generator (numba Philox
   streams, one call per chunk) against the numpy streams it replaced (one
   ``Generator(Philox(SeedSequence(...)))`` per configuration, then the same
   kernel), interleaved, CPU time, with a bit-for-bit check of the two; the
   CSV encoding of the result rows (the numba encoder against the Python
   ``repr`` encoder it replaced, the same bytes); and where one chunk's time
   goes (``run_chunk``, stage ``cheap``: generation, stages, encoding,
   summary values; CPU time per configuration).
1c. End to end, the command line: CPU time (user + system, one thread) of
   whole ``isoapprox batch --stages cheap --jobs 1`` processes, a large
   ``--repetitions`` against 1,000 (the start-up), interleaved: microseconds
   and configurations a second per core.  With ``--baseline DIR`` (the
   ``isoapprox`` package of an earlier version, e.g. ``git archive COMMIT
   isoapprox | tar -x -C DIR``) the same for that version in the same run,
   and the ratio; the result tables of the two are compared byte for byte.
2. Scaling of ``run_batch`` (stage ``cheap``) from ``jobs=1`` (in this process) to 2 on
   the same grid: wall time, including the start of the worker processes
   (measured separately) and the final assembly of the table.
3. The Dask path against the local path on the same grid: a
   ``LocalCluster`` of 2 worker processes with one thread each, started
   before the timing, against ``jobs=2``.
4. With ``--stage NAME``: configurations per second of that registered
   per-configuration stage (for instance the certified nearest-ideal stage).

Timings are wall-clock and depend on the load of the machine: the load
average is printed before and after; compare ratios, not absolute numbers,
and rerun on a quiet machine for the record.
"""

from __future__ import annotations

import argparse
import filecmp
import multiprocessing
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from isoapprox.batch import (  # noqa: E402
    BatchConfig,
    Grid,
    cheap_quantities,
    config_generator,
    generate,
    get_stage,
    plan,
    run_batch,
)
from isoapprox.batch.engine import evaluate_chunk, run_chunk  # noqa: E402
from isoapprox.batch.generators import cell_words, layout_codes  # noqa: E402
from isoapprox.batch.summary import summary_values  # noqa: E402
from isoapprox.batch.table import _encode_csv_python, encode_rows  # noqa: E402
from isoapprox.kernels import batch as BK  # noqa: E402
from isoapprox.runs import executor  # noqa: E402

CODES = np.array([0, 0, 0, 1, 1])


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _median_cpu_interleaved(fns, repeats: int) -> list[float]:
    """Median CPU seconds of each of ``fns``, called in turn ``repeats`` times (after a warm-up)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            c = time.process_time()
            fn()
            times[k].append(time.process_time() - c)
    return [statistics.median(t) for t in times]


def _numpy_streams_generate(reps: np.ndarray, seed: int = 0):
    """The generator before issue 35: one numpy ``Generator`` per configuration, same kernel.

    Gaussian N = 5 in R^2, two balanced classes: the cell of :func:`_configs`.
    """
    words = cell_words("gaussian", 5, 2, 2, "balanced")
    n_u = BK.uniform_count(0, 5, 2, 2, False)
    U = np.empty((reps.shape[0], n_u))
    for b in range(reps.shape[0]):
        U[b] = config_generator(seed, words, int(reps[b])).random(n_u)
    X = np.empty((reps.shape[0], 5, 2))
    codes = np.empty((reps.shape[0], 5), dtype=np.int64)
    BK.generate_kernel(U, 0, 2, False, layout_codes(5, 2, "balanced"), 0.25, 1e-3, X, codes)
    return X, codes


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover
        return "n/a"


def _configs(B: int, seed: int = 0) -> np.ndarray:
    X, _ = generate("gaussian", 5, 2, 2, "balanced", np.arange(B), seed=seed)
    return X


def _loop_single(X: np.ndarray) -> None:
    import isoapprox as ia

    zeros = np.zeros((5, 2))
    for E in X:
        ia.batch_hard_loss(E, CODES, reduction="max")
        ia.batch_hard_loss(E, CODES, reduction="mean")
        ia.triplet_loss(E, CODES, reduction="mean")
        ia.diameter(E)
        ia.isometric_error(E, zeros)
        ia.min_enclosing_ball(E)


def _two_core_worker(args):
    B, repeats, barrier = args
    import numba

    numba.set_num_threads(1)
    X = _configs(B, seed=os.getpid() % 1000)
    codes = np.broadcast_to(CODES, (B, 5)).copy()
    BK.cheap_kernel(X[:10], codes[:10], 0.0)
    out = []
    for _ in range(repeats):
        barrier.wait()
        t0 = time.perf_counter()
        BK.cheap_kernel(X, codes, 0.0)
        out.append(time.perf_counter() - t0)
    return out


def section_cheap(B: int, B_loop: int, repeats: int) -> None:
    import numba

    print("\n1. cheap quantities, N = 5 in R^2")
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        X = _configs(B)
        cheap_quantities(X[:10], CODES)
        t_vec = _median_time(lambda: cheap_quantities(X, CODES), repeats)
        Xl = X[:B_loop]
        _loop_single(Xl[:5])
        t_loop = _median_time(lambda: _loop_single(Xl), max(1, repeats // 2))
    finally:
        numba.set_num_threads(threads)
    r_vec, r_loop = B / t_vec, B_loop / t_loop
    print(f"   vectorised kernel, 1 thread     {r_vec:12,.0f} configurations/s")
    print(f"   loop of single-config functions {r_loop:12,.0f} configurations/s "
          f"(numba limited to 1 thread)")
    print(f"   ratio vectorised / loop         {r_vec / r_loop:12,.1f}")

    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as mgr:
        barrier = mgr.Barrier(2)
        env = {k: os.environ.get(k) for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")}
        os.environ.update(NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
        try:
            with ctx.Pool(2) as pool:
                res = pool.map(_two_core_worker, [(B, repeats, barrier)] * 2)
        finally:
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    per_round = [max(a, b) for a, b in zip(*res, strict=True)]
    r_two = 2 * B / statistics.median(per_round)
    print(f"   kernel on 2 cores (2 processes) {r_two:12,.0f} configurations/s "
          f"({'meets' if r_two >= 1e6 else 'below'} the 1e6 goal; x{r_two / r_vec:.2f} of 1 core)")

    # generator: numba streams against the numpy streams they replaced, on the
    # same repetitions (interleaved, CPU time, one thread)
    B_gen = min(B, 20_000)
    reps = np.arange(B_gen)
    Xa, ya = generate("gaussian", 5, 2, 2, "balanced", reps)
    Xb, yb = _numpy_streams_generate(reps)
    same = np.array_equal(Xa.view(np.uint64), Xb.view(np.uint64)) and np.array_equal(ya, yb)
    t_gen, t_np = _median_cpu_interleaved(
        [lambda: generate("gaussian", 5, 2, 2, "balanced", reps),
         lambda: _numpy_streams_generate(reps)], repeats)
    print(f"   generator, numba streams        {B_gen / t_gen:12,.0f} configurations/s "
          f"(CPU; {1e6 * t_gen / B_gen:.2f} us each; ratio to the kernel "
          f"{t_vec / B / (t_gen / B_gen):.2f})")
    print(f"   generator, numpy streams        {B_gen / t_np:12,.0f} configurations/s "
          f"(CPU; {1e6 * t_np / B_gen:.2f} us each; the implementation before issue 35)")
    print(f"   ratio numpy / numba streams     {t_np / t_gen:12,.1f} "
          f"(configurations bit-identical: {same})")
    cfg = BatchConfig(Grid(repetitions=min(B, 50_000)), chunk_size=min(B, 50_000))
    task = plan(cfg)[0]
    cols = evaluate_chunk(task)
    n = task.stop - task.start
    same = encode_rows(cols, task.columns, "csv") == _encode_csv_python(cols, task.columns)
    t_enc, t_py = _median_cpu_interleaved(
        [lambda: encode_rows(cols, task.columns, "csv"),
         lambda: _encode_csv_python(cols, task.columns)], max(1, repeats // 2))
    print(f"   CSV encoding of the rows        {n / t_enc:12,.0f} rows/s "
          f"(CPU; {len(task.columns)} columns; ratio to the kernel {t_vec / B / (t_enc / n):.3f})")
    print(f"   CSV encoding, Python repr       {n / t_py:12,.0f} rows/s "
          f"(CPU; the encoder before; x{t_py / t_enc:.1f} the time; same bytes: {same})")


def section_chunk(reps: int, repeats: int) -> None:
    """Where one chunk's CPU time goes (stage cheap, one thread, in this process)."""
    import numba

    print(f"\n1b. one chunk of {reps:,} configurations end to end (run_chunk, stage cheap, "
          "N = 5 in R^2, 1 thread, CPU time)")
    cfg = BatchConfig(Grid(repetitions=reps), stages=("cheap",), chunk_size=reps)
    task = plan(cfg)[0]
    cell = task.cell
    rr = np.arange(task.start, task.stop)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        cols = evaluate_chunk(task)
        X, codes = generate(cell.distribution, cell.n_points, cell.dim, cell.n_classes,
                            cell.layout, rr, seed=task.seed)
        parts = {
            "generate (numba streams + kernel)": lambda: generate(
                cell.distribution, cell.n_points, cell.dim, cell.n_classes, cell.layout, rr,
                seed=task.seed),
            "stage cheap (validation + kernel)": lambda: cheap_quantities(X, codes),
            "evaluate_chunk (all of the above)": lambda: evaluate_chunk(task),
            f"encode_rows ({task.format})": lambda: encode_rows(cols, task.columns,
                                                                task.format),
            "encode_rows, Python repr (before)": lambda: _encode_csv_python(cols, task.columns),
            "summary_values": lambda: summary_values(cols, task.columns),
            "run_chunk (the whole task)": lambda: run_chunk(task),
        }
        times = _median_cpu_interleaved(list(parts.values()), repeats)
    finally:
        numba.set_num_threads(threads)
    for (name, _), t in zip(parts.items(), times, strict=True):
        print(f"   {name:36s} {1e6 * t / reps:7.2f} us/configuration "
              f"({reps / t:10,.0f} /s)")


#: configurations a second per core of the command line end to end before the
#: numba CSV encoder (benchmarks/README.md, "Issue 35: generation at kernel speed")
RECORDED_E2E_RATE = 122_700
#: the goal of issue 35, item 4
E2E_GOAL = 250_000


def _cli_cpu(reps: int, package_root: str, tmp: str, keep: str | None = None) -> float:
    """CPU seconds (user + system) of one ``isoapprox batch --stages cheap --jobs 1`` process.

    ``package_root`` is the folder holding the ``isoapprox`` package to run;
    ``keep`` copies the results table there.
    """
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONPATH=package_root)
    out = Path(tempfile.mkdtemp(dir=tmp)) / "run"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "isoapprox", "batch", "--stages", "cheap",
                    "--repetitions", str(reps), "--jobs", "1", "--out", str(out), "-q"],
                   env=env, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if keep:
        shutil.copyfile(out / "results.csv", keep)
    shutil.rmtree(out.parent)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def section_e2e(reps: int, rounds: int, baseline: str | None) -> dict:
    """The command line end to end, CPU time per configuration (``--baseline``: both versions)."""
    small = 1000
    print(f"\n1c. isoapprox batch --stages cheap --jobs 1 end to end, {reps:,} against {small:,} "
          f"configurations (N = 5 in R^2), CPU time (user + system) of the whole process, "
          f"1 thread, {rounds} interleaved rounds")
    versions = {"this version": str(ROOT)}
    if baseline:
        versions["baseline"] = str(Path(baseline).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        tables = {}
        for name, root in versions.items():  # compiles the kernels (dropped); keeps the table
            tables[name] = str(Path(tmp) / f"{name.replace(' ', '_')}.csv")
            _cli_cpu(reps, root, tmp, keep=tables[name])
        cpu = {name: {reps: [], small: []} for name in versions}
        for _ in range(rounds):
            for size in (reps, small):
                for name, root in versions.items():
                    cpu[name][size].append(_cli_cpu(size, root, tmp))
        same = (filecmp.cmp(tables["this version"], tables["baseline"], shallow=False)
                if baseline else None)
    us = {}
    for name in versions:
        big, start = statistics.median(cpu[name][reps]), statistics.median(cpu[name][small])
        us[name] = 1e6 * (big - start) / (reps - small)
        print(f"   {name:13s} {big:6.2f} s ({reps:,}), {start:5.2f} s ({small:,}): "
              f"{us[name]:5.2f} us/configuration, {1e6 / us[name]:9,.0f} configurations/s "
              f"per core")
    if baseline:
        print(f"   ratio baseline / this version {us['baseline'] / us['this version']:.2f} "
              f"(the same results table byte for byte: {same})")
    rate = 1e6 / us["this version"]
    print(f"   recorded before (README, another run): {RECORDED_E2E_RATE:,}/s; goal "
          f"{E2E_GOAL:,}/s per core: {'met' if rate >= E2E_GOAL else 'not met'} in this run")
    return {"repetitions": [reps, small], "rounds": rounds,
            "cpu_seconds": {name: {str(k): v for k, v in d.items()} for name, d in cpu.items()},
            "us_per_configuration": us,
            "configurations_per_second_per_core": {k: 1e6 / v for k, v in us.items()},
            "same_results_table": same, "goal_per_core": E2E_GOAL,
            "recorded_before_per_core": RECORDED_E2E_RATE}


def _grid(reps: int) -> BatchConfig:
    return BatchConfig(Grid(n_points=(5,), dims=(2,), classes=(2,), repetitions=reps),
                       stages=("cheap",), chunk_size=max(1, reps // 16))


def _compute_phase(ex, tasks) -> float:
    """Seconds to push every task through the executor ``ex`` and collect the results."""
    import concurrent.futures as cf

    t0 = time.perf_counter()
    futs = [ex.submit(run_chunk, t) for t in tasks]
    for f in cf.as_completed(futs):
        f.result()
    return time.perf_counter() - t0


def section_scaling(reps: int, repeats: int) -> dict:
    print(f"\n2. scaling from 1 to 2 local workers, stage cheap, {reps:,} configurations "
          "(N = 5, R^2), 16 chunks")
    cfg = _grid(reps)
    tasks = plan(cfg)
    compute, start, end_to_end = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for w in (1, 2):
            t0 = time.perf_counter()
            pool = executor(w)  # 1: in this process; 2: two worker processes
            start[w] = time.perf_counter() - t0
            try:
                compute[w] = _median_time(lambda pool=pool: _compute_phase(pool, tasks), repeats)
            finally:
                pool.close()
            k = [0]

            def once(w=w, k=k):
                k[0] += 1
                run_batch(cfg, Path(tmp) / f"w{w}-{k[0]}", jobs=w)

            end_to_end[w] = _median_time(once, max(1, repeats - 1))
    for w in (1, 2):
        print(f"   {w} worker(s): tasks {compute[w]:7.2f} s ({reps / compute[w]:10,.0f} cfg/s), "
              f"pool start {start[w]:5.2f} s, run_batch end to end {end_to_end[w]:7.2f} s "
              f"({reps / end_to_end[w]:9,.0f} cfg/s)")
    print(f"   speed-up 1 -> 2 workers: tasks {compute[1] / compute[2]:.2f}, "
          f"end to end {end_to_end[1] / end_to_end[2]:.2f}")
    return {"compute": compute[2], "end_to_end": end_to_end[2]}


def section_dask(reps: int, repeats: int, local: dict) -> None:
    try:
        import distributed
    except ImportError:
        print("\n3. Dask: dask.distributed not installed, skipped")
        return
    print(f"\n3. Dask LocalCluster (2 processes x 1 thread, loopback) vs the local pool "
          f"(2 workers), {reps:,} configurations")
    cfg = _grid(reps)
    tasks = plan(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("NUMBA_NUM_THREADS", "1")
        t0 = time.perf_counter()
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      protocol="tcp://", host="127.0.0.1",
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster, set_as_default=False) as client:
            run_batch(_grid(64), Path(tmp) / "warm", client=client)  # load kernels on workers
            t_start = time.perf_counter() - t0
            adapter = executor(client=client)
            t_compute = _median_time(lambda: _compute_phase(adapter, tasks), repeats)
            k = [0]

            def once():
                k[0] += 1
                run_batch(cfg, Path(tmp) / f"d{k[0]}", client=client)

            t_e2e = _median_time(once, max(1, repeats - 1))
    print(f"   Dask: tasks {t_compute:7.2f} s, run_batch {t_e2e:7.2f} s "
          f"(cluster start {t_start:.2f} s, not included)")
    print(f"   local: tasks {local['compute']:7.2f} s, run_batch {local['end_to_end']:7.2f} s "
          "(pool start included)")
    print(f"   ratio Dask / local: tasks {t_compute / local['compute']:.2f}, "
          f"end to end {t_e2e / local['end_to_end']:.2f}")


def section_stage(name: str, n: int, repeats: int) -> None:
    stage = get_stage(name)
    print(f"\n4. stage {name!r} ({stage.kind}), N = 5 in R^2, {n} configurations")
    stages = ("cheap", name) if name != "cheap" else ("cheap",)
    cfg = BatchConfig(Grid(repetitions=n), stages=stages, chunk_size=n)
    base = BatchConfig(Grid(repetitions=n), stages=("cheap",), chunk_size=n)
    task, task0 = plan(cfg)[0], plan(base)[0]
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # as in a worker process
    try:
        evaluate_chunk(task)
        t = _median_time(lambda: evaluate_chunk(task), repeats)
        t0 = _median_time(lambda: evaluate_chunk(task0), repeats)
    finally:
        numba.set_num_threads(threads)
    print(f"   with the stage                  {n / t:12,.1f} configurations/s")
    print(f"   cheap stage alone               {n / t0:12,.1f} configurations/s")
    print(f"   cost ratio                      {t / t0:12,.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--stage", default=None, help="also time this per-configuration stage")
    p.add_argument("--baseline", default=None, metavar="DIR",
                   help="folder holding the isoapprox package of an earlier version: section "
                        "1c times its command line too, in the same run")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="write section 1c's CPU times and rates to FILE")
    p.add_argument("--sections", nargs="+", default=None,
                   choices=("cheap", "chunk", "e2e", "scaling", "dask"),
                   help="run only these sections (default: all)")
    args = p.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    B = 100_000 if args.quick else 1_000_000
    B_loop = 300 if args.quick else 2_000
    reps = 100_000 if args.quick else 400_000
    print(f"isoapprox batch benchmark: python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} cpu(s), load average {_load()}")
    want = set(args.sections or ("cheap", "chunk", "e2e", "scaling", "dask"))
    if "cheap" in want:
        section_cheap(B, B_loop, repeats)
    if "chunk" in want:
        section_chunk(4096, 3 * repeats)  # the default chunk size of `isoapprox batch`
    record = {"python": platform.python_version(), "numpy": np.__version__,
              "cpus": os.cpu_count(), "load_average_at_e2e_start": _load()}
    if "e2e" in want:
        record["e2e"] = section_e2e(50_000 if args.quick else 200_000, repeats, args.baseline)
    if "scaling" in want or "dask" in want:
        local = section_scaling(reps, repeats)
        if "dask" in want:
            section_dask(reps, repeats, local)
    if args.stage:
        section_stage(args.stage, 200 if args.quick else 1000, repeats)
    print(f"\nload average at the end {_load()} (timings are noisy on a shared machine)")
    if args.json:
        import json

        record["load_average_end"] = _load()
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
