"""Benchmark: certified share of nearest_ideal with and without the branch-and-bound.

Every instance is solved twice in the same process with the same seed:
``max_nodes=0`` (column ``before``: the search without any spatial
branch-and-bound) and ``nearest_ideal``'s defaults (column ``after``: the
order search of ``isoapprox.ideal._line`` on the line, the interval search
of ``isoapprox.ideal._bnb`` for ``"iso"`` in the plane, the angular search
of ``isoapprox.ideal._sector`` for ``"haus"`` in the plane).  Reported per
cell and objective: the certified share (``tol = 1e-6``), the median and
90th percentile wall time, the median and 90th percentile relative gap,
how often the branch-and-bound ran
(``"branch_and_bound"`` in ``bounds``) and how often it gave the lower end of
the bracket.

Cells:

- ``N5R2``: the toys of ``bench_nearest_ideal.py`` (``N = 5`` in ``R^2``,
  layouts ``00112``, ``00011``, ``00111``, margins 0 and 1, standard normal
  points; 300 instances, ``--quick`` 48);
- ``N6R1`` ... ``N10R2``, ``N5R3``, ``N8R3``, ``N16R1``, ``N20R1``: ``N``
  points in ``R^n`` (the name says both), standard normal, labels uniform
  over three classes
  (redrawn until they admit a triplet), margins 0 and 1 alternating
  (``--per-cell`` instances each, ``--quick`` 6);
- ``N5R2c``, ``N8R2c``, ``N10R2c``, ``N10R1c``: near-collapsed, the points
  ``0.05`` times standard normal and margin 1 (the collapse regime of a
  network's batch).

Run from the repository root::

    PYTHONPATH=$PWD python benchmarks/bench_certificates.py --quick
    PYTHONPATH=$PWD python benchmarks/bench_certificates.py --cells N5R2
    PYTHONPATH=$PWD python benchmarks/bench_certificates.py --per-cell 10 --cells N6R1 N6R2 \
        N7R1 N7R2 N8R1 N8R2 N10R1 N10R2 N5R3 N8R3 N5R2c N8R2c N10R2c
    PYTHONPATH=$PWD python benchmarks/bench_certificates.py --per-cell 20 --cells N6R1 N7R1 \
        N8R1 N10R1 N10R1c N16R1 N20R1

Timings are wall-clock medians of single calls (kernels compiled in a
warm-up first); compare the two columns of one run, not runs on different
machines.  Certified shares do not depend on the machine's load: work
budgets (local solves, nodes, linear programmes), not time, decide every
search (``nearest_ideal``'s ``effort``); only the last-bit differences of
the local solvers' BLAS kernels could move them.  ``--busy K`` runs the
benchmark beside ``K`` processes that keep the cores busy, and ``--compare
FILE.json`` checks that every record's bracket, ``certified`` flag, status
and lower source equal those of another run, bit for bit::

    PYTHONPATH=$PWD python benchmarks/bench_certificates.py --cells N5R2 --json quiet.json
    PYTHONPATH=$PWD python benchmarks/bench_certificates.py --cells N5R2 --busy 2 \
        --json busy.json --compare quiet.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np

from isoapprox import nearest_ideal

# an open bracket is part of what these scripts measure, not a warning
from isoapprox.exceptions import ConvergenceWarning

warnings.filterwarnings("ignore", category=ConvergenceWarning)

LAYOUTS = [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1), (0, 0, 1, 1, 1)]
MARGINS = [0.0, 1.0]
TOL = 1e-6
CELLS = ("N5R2", "N6R1", "N6R2", "N7R1", "N7R2", "N8R1", "N8R2", "N10R1", "N10R2",
         "N5R3", "N8R3", "N5R2c", "N8R2c", "N10R2c", "N16R1", "N20R1", "N10R1c")
#: scale of the points of a near-collapsed cell (suffix ``c``; margin 1)
COLLAPSED_SCALE = 0.05


def instances(cell: str, count: int, seed: int):
    """Deterministic instances ``(E, y, margin)`` of one cell."""
    rng = np.random.default_rng([seed, CELLS.index(cell)])
    if cell == "N5R2":
        for _ in range(count):
            for layout in LAYOUTS:
                for margin in MARGINS:
                    yield rng.normal(size=(5, 2)), np.array(layout), margin
        return
    m = re.fullmatch(r"N(\d+)R(\d)(c?)", cell)
    N, n, collapsed = int(m.group(1)), int(m.group(2)), bool(m.group(3))
    for k in range(count):
        while True:
            y = rng.integers(0, 3, size=N)
            counts = np.bincount(y, minlength=3)
            if (counts >= 2).any() and (counts > 0).sum() >= 2:
                break
        if collapsed:
            yield rng.normal(size=(N, n)) * COLLAPSED_SCALE, y, 1.0
        else:
            yield rng.normal(size=(N, n)), y, MARGINS[k % 2]


def solve(E, y, margin, objective, k, max_nodes):
    kw = {} if max_nodes is None else {"max_nodes": max_nodes}
    t0, c0 = time.perf_counter(), time.process_time()
    res = nearest_ideal(E, y, margin=margin, objective=objective, rng=k, tol=TOL,
                        warn_uncertified=False, **kw)
    return res, time.perf_counter() - t0, time.process_time() - c0


def run(cells, count_n5, count, seed):
    # warm-up: numba compilation and cvxpy import
    for n in (1, 2):
        for obj in ("iso", "haus"):
            E = np.random.default_rng(0).normal(size=(5, n))
            nearest_ideal(E, [0, 0, 1, 1, 2], margin=1.0, objective=obj, rng=0)
    records = []
    for cell in cells:
        cnt = count_n5 if cell == "N5R2" else count
        for k, (E, y, margin) in enumerate(instances(cell, cnt, seed)):
            for obj in ("iso", "haus"):
                for label, nodes in (("before", 0), ("after", None)):
                    res, dt, cpu = solve(E, y, margin, obj, k, nodes)
                    records.append({
                        "cell": cell, "objective": obj, "run": label, "margin": margin,
                        "seconds": dt, "cpu_seconds": cpu, "certified": bool(res.certified),
                        "rel_gap": float(res.rel_gap), "value": float(res.value),
                        "lower": float(res.lower), "lower_source": res.lower_source,
                        "status": res.status, "reproducible": bool(res.reproducible),
                        "bnb_ran": "branch_and_bound" in res.bounds,
                    })
    return records


def report(records, cells):
    head = (f"{'cell':5s} {'obj':4s} {'n':>4s} | {'cert before':>11s} {'cert after':>10s} | "
            f"{'med ms bef':>10s} {'p90 bef':>8s} {'med ms aft':>10s} {'p90 aft':>8s} | "
            f"{'gap50 bef':>9s} {'gap90 bef':>9s} {'gap50 aft':>9s} {'gap90 aft':>9s} | "
            f"{'bnb ran':>7s} {'bnb lower':>9s}")
    print(head)
    out = {}
    for cell in cells:
        for obj in ("iso", "haus"):
            bef = [r for r in records if r["cell"] == cell and r["objective"] == obj
                   and r["run"] == "before"]
            aft = [r for r in records if r["cell"] == cell and r["objective"] == obj
                   and r["run"] == "after"]
            if not bef:
                continue

            def share(rs, key):
                return float(np.mean([r[key] for r in rs]))

            tb = np.array([r["seconds"] for r in bef]) * 1e3
            ta = np.array([r["seconds"] for r in aft]) * 1e3
            gb = [r["rel_gap"] for r in bef]
            ga = [r["rel_gap"] for r in aft]
            row = {
                "n": len(bef),
                "certified_before": share(bef, "certified"),
                "certified_after": share(aft, "certified"),
                "median_ms_before": float(np.median(tb)),
                "p90_ms_before": float(np.percentile(tb, 90)),
                "median_ms_after": float(np.median(ta)),
                "p90_ms_after": float(np.percentile(ta, 90)),
                "rel_gap_median_before": float(np.median(gb)),
                "rel_gap_p90_before": float(np.percentile(gb, 90)),
                "rel_gap_median_after": float(np.median(ga)),
                "rel_gap_p90_after": float(np.percentile(ga, 90)),
                "rel_gap_max_after": float(np.max(ga)),
                "bnb_ran": share(aft, "bnb_ran"),
                "bnb_lower": float(np.mean([r["lower_source"] == "branch_and_bound"
                                            for r in aft])),
            }
            out[f"{cell}/{obj}"] = row
            print(f"{cell:5s} {obj:4s} {row['n']:4d} | {row['certified_before']:11.1%} "
                  f"{row['certified_after']:10.1%} | "
                  f"{row['median_ms_before']:10.1f} {row['p90_ms_before']:8.1f} "
                  f"{row['median_ms_after']:10.1f} {row['p90_ms_after']:8.1f} | "
                  f"{row['rel_gap_median_before']:9.1e} {row['rel_gap_p90_before']:9.1e} "
                  f"{row['rel_gap_median_after']:9.1e} {row['rel_gap_p90_after']:9.1e} | "
                  f"{row['bnb_ran']:7.1%} {row['bnb_lower']:9.1%}", flush=True)
    return out


#: the fields of a record that must not depend on the machine's load
SAME_FIELDS = ("certified", "rel_gap", "value", "lower", "lower_source", "status",
               "reproducible", "bnb_ran")


def compare(records, other_path) -> int:
    """Records that differ from those of another run in a field of ``SAME_FIELDS``."""
    with open(other_path, encoding="utf-8") as fh:
        other = json.load(fh)["records"]
    if len(other) != len(records):
        print(f"compare: {other_path} has {len(other)} records, this run {len(records)}")
        return max(len(other), len(records))
    differ = 0
    for a, b in zip(records, other, strict=True):
        # fields an older run did not record are not compared
        diff = [f for f in SAME_FIELDS if f in b and a.get(f) != b[f]]
        if diff or (a["cell"], a["objective"], a["run"]) != (b["cell"], b["objective"],
                                                            b["run"]):
            differ += 1
            print(f"differs: {a['cell']} {a['objective']} {a['run']}: "
                  + ", ".join(f"{f} {a.get(f)!r} vs {b.get(f)!r}" for f in diff))
    print(f"compare: {len(records) - differ} of {len(records)} records identical to "
          f"{other_path} in {', '.join(SAME_FIELDS)}")
    return differ


def _busy(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(count)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="48 toys in N5R2 and 6 instances per other cell")
    ap.add_argument("--per-cell", type=int, default=20,
                    help="instances per N6R1 ... N8R2 cell (default 20)")
    ap.add_argument("--cells", nargs="+", default=list(CELLS), choices=CELLS)
    ap.add_argument("--seed", type=int, default=20240501)
    ap.add_argument("--json", help="write the records and the summary to this file")
    ap.add_argument("--busy", type=int, default=0, metavar="K",
                    help="run beside K processes that keep the cores busy (default 0)")
    ap.add_argument("--compare", metavar="FILE",
                    help="check every record against those of another run's --json file")
    args = ap.parse_args(argv)
    count_n5 = 8 if args.quick else 50  # per (layout, margin): 6 cells
    count = 6 if args.quick else args.per_cell
    busy = _busy(args.busy)
    try:
        records = run(args.cells, count_n5, count, args.seed)
        load = os.getloadavg()
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"({args.busy} busy processes)")
    summary = report(records, args.cells)
    differ = compare(records, args.compare) if args.compare else 0
    if args.json:
        from isoapprox.io import atomic_write_text, provenance, to_jsonable

        atomic_write_text(args.json, json.dumps(to_jsonable(
            {"config": vars(args), "summary": summary, "records": records,
             "load_average": load, "provenance": provenance()}), indent=1))
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
