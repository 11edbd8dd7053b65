"""`isoapprox diagnose` at default settings against one `diameter` sweep, and its memory.

The goal (stated in diameter sweeps, so that it holds on any machine): the
default ``isoapprox diagnose FILE --margin 0.2`` of a 20,000 x 64 embedding
with 500 classes costs at most 10 ``isoapprox.diameter`` calls on the same
data, and less peak memory than a label-free audit of the same matrix.

Method:

- ``time``: one fresh process loads the data, warms up (compiles or loads the
  numba kernels on a small file), then alternates ``--repeats`` times one
  ``isoapprox.diameter(E)`` and one in-process ``isoapprox diagnose`` (the
  command's ``main``, its report printed to a discarded stream), and reports
  the medians and their ratio; also ``--no-theory`` for the statistics alone.
- ``memory``: a fresh process per command, its peak resident set size
  (``ru_maxrss``) after one call, imports included; with ``--vecscope PATH``
  the same for ``PATH audit FILE.npy`` (vecscope, a pip-installable
  embedding audit, in its own environment; not a dependency).

Example (the numbers in benchmarks/README.md came from this)::

    PYTHONPATH=$PWD python benchmarks/bench_diagnose.py --repeats 3 \
        --vecscope /tmp/vsenv/bin/vecscope

``--theory-cost``: the cost of the theory section.  The goal: on each of four
files the default ``isoapprox diagnose FILE --margin 0.2`` takes at most 3 x the
CPU time and 1.5 x the peak memory of ``--no-theory`` on the same file.  Files
(:func:`make_clusters`, L2-normalised class clusters, float32): 2000 x 128 with
100 classes of 20, healthy; the same with 30 classes squeezed into one small
cap (partial collapse); 20,000 x 64 with 500 classes; 100,000 x 32 with 1000
classes.  Each command runs in its own process, started by a small Python
wrapper that reports the child's CPU time (user + system, all threads) and
peak resident set size (``getrusage(RUSAGE_CHILDREN)``); the variants of one
file alternate, after one warm-up run that fills numba's cache.  With
``--certify-all`` also ``diagnose --certify-all`` (every quantity certified:
the former default); a run with the theory is cut at ``--timeout`` seconds::

    PYTHONPATH=$PWD python benchmarks/bench_diagnose.py --theory-cost \
        [--certify-all] [--sizes 2000x128 2000x128p 20000x64 100000x32] \
        [--json benchmarks/results/bench_diagnose_theory_2cpu.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_data(folder: Path, N: int, n: int, P: int, seed: int = 0) -> Path:
    """Class centres ``3 N(0, I)`` plus unit noise; float32 as a framework writes it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    y = rng.integers(0, P, size=N)
    centres = 3.0 * rng.normal(size=(P, n))
    E = (centres[y] + rng.normal(size=(N, n))).astype(np.float32)
    path = folder / f"emb_{N}x{n}_{P}.npz"
    np.savez(path, embeddings=E, labels=y)
    np.save(folder / f"emb_{N}x{n}_{P}.npy", E)
    small = folder / "small.npz"
    np.savez(small, embeddings=E[:300], labels=y[:300])
    return path


#: the files of --theory-cost: name -> (N, n, classes, classes merged into one cap,
#: noise norm); the noise is chosen so that the theory's 200-point batch has a few
#: triplets violating the margin 0.2 (a trained embedding, not a separated one)
THEORY_FILES = {
    "2000x128": (2000, 128, 100, 0, 0.8),
    "2000x128p": (2000, 128, 100, 30, 0.5),
    "20000x64": (20000, 64, 500, 0, 0.6),
    "100000x32": (100000, 32, 1000, 0, 0.5),
}
#: --theory-cost's variants: name -> extra arguments of ``diagnose``
VARIANTS = {"no_theory": ["--no-theory"], "default": [], "certify_all": ["--certify-all"]}


def make_clusters(path: Path, N: int, n: int, P: int, merged: int = 0, noise: float = 0.5,
                  cap: float = 0.05, seed: int = 0) -> Path:
    """L2-normalised class clusters: ``P`` classes of ``N / P`` points around random unit
    centres, Gaussian noise of norm about ``noise``; classes ``0 .. merged - 1`` squeezed
    into one cap of radius about ``cap`` around the first centre (a partial collapse)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(P), N // P)
    centres = rng.normal(size=(P, n))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    E = centres[y] + noise / np.sqrt(n) * rng.normal(size=(N, n))
    if merged:
        blob = y < merged
        E[blob] = centres[0] + cap / np.sqrt(n) * rng.normal(size=(int(blob.sum()), n))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    np.savez(path, embeddings=E.astype(np.float32), labels=y)
    return path


def _child_usage(cmd: list[str], timeout: float | None) -> dict:
    """CPU seconds (user + system), wall seconds, peak RSS (MiB) and exit status of
    ``cmd`` run in its own process (``"timeout"`` when cut at ``timeout`` seconds)."""
    code = ("import json, resource, subprocess, sys, time; t0 = time.perf_counter(); "
            "limit = None if sys.argv[1] == 'none' else float(sys.argv[1])\n"
            "try:\n"
            "    rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, "
            "timeout=limit).returncode\n"
            "except subprocess.TimeoutExpired:\n"
            "    rc = 'timeout'\n"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(json.dumps({'cpu': u.ru_utime + u.ru_stime, 'wall': time.perf_counter() - t0, "
            "'peak_mib': u.ru_maxrss / 1024, 'rc': rc}))")
    out = subprocess.run([sys.executable, "-c", code, "none" if timeout is None else
                          str(timeout), *cmd], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def theory_cost(names: list[str], variants: list[str], repeats: int, timeout: float | None,
                json_out: Path | None, data_dir: Path | None) -> None:
    """The --theory-cost mode: CPU and peak memory of each variant, ratios to --no-theory."""
    import numpy as np

    records = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(data_dir) if data_dir is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        warm = make_clusters(folder / "warm.npz", 200, 16, 20, 5)
        for extra in VARIANTS.values():  # numba's cache, the solvers' first imports
            _child_usage([sys.executable, "-m", "isoapprox", "diagnose", str(warm), "--margin",
                          "0.2", *extra], None)
        for name in names:
            N, n, P, merged, noise = THEORY_FILES[name]
            path = folder / f"clusters_{name}.npz"
            if not path.exists():
                make_clusters(path, N, n, P, merged, noise)
            runs: dict[str, list[dict]] = {v: [] for v in variants}
            for _ in range(repeats):
                for v in variants:
                    cmd = [sys.executable, "-m", "isoapprox", "diagnose", str(path), "--margin",
                           "0.2", *VARIANTS[v]]
                    runs[v].append(_child_usage(cmd, None if v == "no_theory" else timeout))
                    r = runs[v][-1]
                    print(f"  {name:<10s} {v:<12s} cpu {r['cpu']:8.2f} s  wall {r['wall']:8.2f} s"
                          f"  peak {r['peak_mib']:6.0f} MiB  rc {r['rc']}", flush=True)
            med = {v: {k: float(np.median([r[k] for r in rs])) for k in ("cpu", "wall",
                                                                          "peak_mib")}
                   for v, rs in runs.items()}
            base = med.get("no_theory")
            rec = {"file": name, "N": N, "n": n, "classes": P, "merged": merged, "noise": noise,
                   "runs": runs, "median": med}
            if base is not None:
                rec["ratio"] = {v: {"cpu": m["cpu"] / base["cpu"],
                                    "peak": m["peak_mib"] / base["peak_mib"]}
                                for v, m in med.items() if v != "no_theory"}
            records.append(rec)
    print(f"\nload average {os.getloadavg()[0]:.1f}; CPU = user + system of the process, all "
          "threads; ratios to --no-theory on the same file (medians)")
    print(f"  {'file':<10s} {'variant':<12s} {'CPU s':>9s} {'x':>6s} {'peak MiB':>9s} {'x':>6s}"
          f"  {'rc':>7s}")
    for rec in records:
        for v, m in rec["median"].items():
            ratio = rec.get("ratio", {}).get(v, {"cpu": 1.0, "peak": 1.0})
            rcs = ",".join(str(r["rc"]) for r in rec["runs"][v])
            print(f"  {rec['file']:<10s} {v:<12s} {m['cpu']:9.2f} {ratio['cpu']:6.2f} "
                  f"{m['peak_mib']:9.0f} {ratio['peak']:6.2f}  {rcs:>7s}")
    if json_out is not None:
        from isoapprox.io import atomic_write_text, provenance, to_jsonable

        config = {"files": {k: THEORY_FILES[k] for k in names}, "variants": variants,
                  "repeats": repeats, "timeout": timeout, "margin": 0.2,
                  "load_average": list(os.getloadavg()[:2]), "cpu_count": os.cpu_count()}
        atomic_write_text(json_out, json.dumps(to_jsonable(
            {"config": config, "records": records, "provenance": provenance()}), indent=1) + "\n")
        print(f"written: {json_out}")


def _diagnose(path: Path, extra: list[str]) -> float:
    from isoapprox.cli import main

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(["diagnose", str(path), "--margin", "0.2", *extra])
    dt = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"diagnose exited {rc}")
    return dt


def worker_time(path: Path, repeats: int) -> None:
    """Interleaved medians of diameter, diagnose and diagnose --no-theory (JSON on stdout)."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from isoapprox import diameter

    E = np.load(path)["embeddings"].astype(np.float64)
    _diagnose(path.parent / "small.npz", [])  # compile / load the kernels
    diameter(E[:300])
    t_diam, t_full, t_stats = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        diameter(E)
        t_diam.append(time.perf_counter() - t0)
        t_full.append(_diagnose(path, []))
        t_stats.append(_diagnose(path, ["--no-theory"]))
    print(json.dumps({"diameter": t_diam, "diagnose": t_full, "no_theory": t_stats}))


def worker_memory(path: Path, what: str) -> None:
    """One call in this fresh process; prints its peak RSS in MiB."""
    sys.path.insert(0, str(ROOT))
    if what == "diagnose":
        _diagnose(path, [])
    elif what == "no_theory":
        _diagnose(path, ["--no-theory"])
    print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _run(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child_peak(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a command run in its own process."""
    code = ("import resource, subprocess, sys, time, json; t0 = time.perf_counter(); "
            "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
            "assert rc in (0, 1), rc; "  # vecscope exits 1 when its verdict fails
            "dt = time.perf_counter() - t0; "
            "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024; "
            "print(json.dumps([dt, peak]))")
    out = subprocess.run([sys.executable, "-c", code, *cmd], check=True, capture_output=True,
                         text=True)
    dt, peak = json.loads(out.stdout.strip().splitlines()[-1])
    return dt, peak


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-points", type=int, default=20000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--classes", type=int, default=500)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--vecscope", default=None, metavar="PATH",
                   help="a vecscope executable to compare memory with (optional)")
    p.add_argument("--theory-cost", action="store_true",
                   help="CPU time and peak memory of diagnose with and without the theory "
                        "section on the four files of THEORY_FILES")
    p.add_argument("--sizes", nargs="+", default=list(THEORY_FILES), choices=list(THEORY_FILES),
                   help="--theory-cost: the files (default: all four)")
    p.add_argument("--certify-all", action="store_true",
                   help="--theory-cost: also diagnose --certify-all (the former default)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="--theory-cost: cut a run with the theory after this many seconds")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="--theory-cost: keep the generated files here (default: a temporary "
                        "folder)")
    p.add_argument("--json", type=Path, default=None, help="--theory-cost: write the records")
    p.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.theory_cost:
        variants = ["no_theory", "default"] + (["certify_all"] if args.certify_all else [])
        theory_cost(args.sizes, variants, args.repeats, args.timeout, args.json,
                    args.data_dir)
        return
    if args.worker is not None:
        what, path = args.worker
        if what == "time":
            worker_time(Path(path), args.repeats)
        else:
            worker_memory(Path(path), what)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = make_data(Path(tmp), args.n_points, args.dim, args.classes)
        t = _run(["--worker", "time", str(path), "--repeats", str(args.repeats)])
        med = {k: statistics.median(v) for k, v in t.items()}
        print(f"N = {args.n_points}, n = {args.dim}, {args.classes} classes; "
              f"{args.repeats} interleaved repeats; load average {os.getloadavg()[0]:.1f}")
        print(f"  diameter            {med['diameter']:8.3f} s   1.00 sweeps")
        for k, label in (("diagnose", "diagnose (default)"), ("no_theory", "  --no-theory")):
            print(f"  {label:<19s} {med[k]:8.3f} s  {med[k] / med['diameter']:5.2f} sweeps")
        for what in ("diagnose", "no_theory"):
            peak = _run(["--worker", what, str(path)])["peak_mib"]
            print(f"  peak RSS {what:<11s} {peak:8.0f} MiB (imports included)")
        if args.vecscope:
            npy = path.with_suffix(".npy")
            dt, peak = _child_peak([args.vecscope, "audit", str(npy)])
            print(f"  vecscope audit      {dt:8.3f} s  {dt / med['diameter']:5.2f} sweeps, "
                  f"peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
