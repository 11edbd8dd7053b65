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
    p.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
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
