"""Benchmark: the node LPs of the angular branch-and-bound: the simplex kernel,
HiGHS directly and linprog.

The LPs are those the sector search (:mod:`isoapprox.ideal._sector`) solves
on five-point toys in the plane that the relaxations leave open (the first
three by seed for each objective, 150 LPs each), recorded once.  Each round
solves all of them with the dual simplex kernel
(:func:`isoapprox.kernels.simplex.dual_simplex`, what
:func:`isoapprox.ideal._lpdual.certified_lp` calls first), with
:func:`isoapprox.ideal._highs.solve_lp` (``highspy``, no presolve, its
fallback) and with the baseline, ``scipy.optimize.linprog``
(``method="highs"``, the same tolerances), one after the other; the report
is the ratio of the medians of the round times, and the largest difference
of the bounds that :func:`isoapprox.ideal._lpdual.safe_dual_bound` proves
from the sets of multipliers.

    PYTHONPATH=$PWD python benchmarks/bench_lp.py [--rounds 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from scipy.optimize import linprog

import isoapprox.ideal._sector as sector
from isoapprox import nearest_ideal
from isoapprox.ideal._highs import TIGHT_TOLERANCE, solve_lp
from isoapprox.ideal._lpdual import _MAX_ITER_PER_ROW, safe_dual_bound
from isoapprox.io import atomic_write_text, provenance, to_jsonable
from isoapprox.kernels.simplex import OPTIMAL, dual_simplex

#: searches per objective that supply the LPs (the first toys, by seed, that
#: the relaxations leave open), and the LP budget of each
SEARCHES = 3
LPS_PER_SEARCH = 150


def record_lps() -> list[tuple]:
    """The node LPs ``(c, A, b, xl, xh)`` of a few searches."""
    lps: list[tuple] = []
    original = sector.certified_lp

    def spy(c, A, b, xl, xh, *, tight=True, **options):
        if tight:
            lps.append((c.copy(), A.copy(), b.copy(), xl.copy(), xh.copy()))
        return original(c, A, b, xl, xh, tight=tight, **options)

    sector.certified_lp = spy
    try:
        for objective in ("haus", "iso"):
            searches = 0
            for seed in range(1000):
                if searches == SEARCHES:
                    break
                before = len(lps)
                E = np.random.default_rng(seed).normal(size=(5, 2))
                nearest_ideal(E, [0, 0, 1, 1, 2], margin=0.5, objective=objective, rng=0,
                              warn_uncertified=False, max_lps=LPS_PER_SEARCH)
                searches += len(lps) > before
    finally:
        sector.certified_lp = original
    return lps


def baseline(c, A, b, xl, xh):
    """The same LP through ``scipy.optimize.linprog``: multipliers or None."""
    res = linprog(c, A_ub=A, b_ub=b, bounds=np.column_stack([xl, xh]), method="highs",
                  options={"primal_feasibility_tolerance": TIGHT_TOLERANCE,
                           "dual_feasibility_tolerance": TIGHT_TOLERANCE})
    if res.status != 0:
        return None
    return np.maximum(-np.asarray(res.ineqlin.marginals, dtype=float), 0.0)


def kernel(c, A, b, xl, xh):
    """The same LP through the simplex kernel, as ``certified_lp`` calls it."""
    m, nv = A.shape
    return dual_simplex(c, A, b, xl, xh, TIGHT_TOLERANCE, _MAX_ITER_PER_ROW * (m + 2 * nv))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="write the summary to this file")
    args = ap.parse_args(argv)
    lps = record_lps()
    diff = diff_kernel = 0.0
    kernel_optimal = highspy_optimal = 0
    for lp in lps:
        r = solve_lp(*lp)
        y = baseline(*lp)
        status, _, yk, _, _ = kernel(*lp)
        if r.status == "optimal" and y is not None:
            diff = max(diff, abs(safe_dual_bound(*lp, r.y) - safe_dual_bound(*lp, y)))
        highspy_optimal += r.status == "optimal"
        if r.status == "optimal" and status == OPTIMAL:
            kernel_optimal += 1
            diff_kernel = max(diff_kernel, abs(safe_dual_bound(*lp, r.y)
                                               - safe_dual_bound(*lp, yk)))
    times: dict[str, list[float]] = {"kernel": [], "highspy": [], "linprog": []}
    for _ in range(args.rounds):
        for name, solve in (("kernel", kernel), ("highspy", solve_lp), ("linprog", baseline)):
            t0 = time.perf_counter()
            for lp in lps:
                solve(*lp)
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    summary = {
        "lps": len(lps), "rounds": args.rounds,
        "rows_median": int(np.median([lp[1].shape[0] for lp in lps])),
        "cols_median": int(np.median([lp[1].shape[1] for lp in lps])),
        "ms_per_lp_kernel": 1e3 * med["kernel"] / len(lps),
        "ms_per_lp_highspy": 1e3 * med["highspy"] / len(lps),
        "ms_per_lp_linprog": 1e3 * med["linprog"] / len(lps),
        "speedup": med["linprog"] / med["highspy"],
        "speedup_kernel_vs_highspy": med["highspy"] / med["kernel"],
        "max_bound_difference": diff,
        "highspy_optimal": highspy_optimal,
        "kernel_optimal_where_highspy_is": kernel_optimal,
        "max_bound_difference_kernel_highspy": diff_kernel,
    }
    for k, v in summary.items():
        print(f"{k:>22}: {v:.4g}" if isinstance(v, float) else f"{k:>22}: {v}")
    if args.json:
        atomic_write_text(args.json, json.dumps(to_jsonable(
            {"config": vars(args), "summary": summary, "provenance": provenance()}), indent=1))


if __name__ == "__main__":
    main()
