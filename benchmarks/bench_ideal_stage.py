"""Benchmark of the batch ``ideal`` stage: certified answers per second, and the price of
order-independent rows.

Run from the repository root::

    python benchmarks/bench_ideal_stage.py [--configs 40] [--repeats 3]

One chunk of ``N = 5`` points in ``R^2`` (2 classes, 3 + 2, margin 0.5,
Gaussian) through the stages ``cheap`` and ``ideal`` in this process, numba on
one thread (as in a worker), timed as the median of ``--repeats`` runs, in two
variants timed alternately in the same run:

- the stage as shipped: every ``nearest_ideal`` call empties the solver
  state of the convex programs that ``isoapprox.ideal`` caches
  (``isoapprox.ideal._session.forget_solver_state``), so a row does not
  depend on the configurations solved before it in the process;
- the baseline: that solver state kept between solves (the function patched
  out for the run; faster, but the
  Shor bound of a configuration then moves in its last digits with the
  history of the process).

Prints configurations per second of each, the share certified, and the ratio
of the medians.  Wall-clock timings depend on the load (printed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from isoapprox.batch import BatchConfig, Grid, evaluate_chunk, plan  # noqa: E402
from isoapprox.ideal import _session  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", type=int, default=40)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    import numba

    numba.set_num_threads(1)
    grid = Grid(n_points=(5,), dims=(2,), classes=(2,), margins=(0.5,), repetitions=args.configs)
    task = plan(BatchConfig(grid, stages=("cheap", "ideal"), chunk_size=args.configs))[0]
    warm = Grid(n_points=(5,), dims=(2,), classes=(2,), margins=(0.5,), repetitions=2)
    evaluate_chunk(plan(BatchConfig(warm, stages=("cheap", "ideal"), chunk_size=2))[0])
    print(f"load average {os.getloadavg()}")
    fresh = _session.forget_solver_state
    times: dict[str, list[float]] = {"fresh": [], "kept": []}
    certified = None
    for _ in range(args.repeats):
        for variant in ("fresh", "kept"):
            if variant == "kept":
                _session.forget_solver_state = lambda: None
            try:
                t = time.perf_counter()
                cols = evaluate_chunk(task)
                times[variant].append(time.perf_counter() - t)
            finally:
                _session.forget_solver_state = fresh
            if variant == "fresh":
                certified = float(cols["certified"].mean())
    med = {k: statistics.median(v) for k, v in times.items()}
    n = args.configs
    print(f"ideal stage, fresh caches (shipped)   {n / med['fresh']:8.2f} configurations/s "
          f"(certified {certified:.0%})")
    print(f"baseline, caches kept                 {n / med['kept']:8.2f} configurations/s")
    print(f"cost ratio fresh / kept               {med['fresh'] / med['kept']:8.2f}")
    print(f"load average at the end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
