"""Benchmark: isoapprox's certified brackets against SCIP's spatial branch-and-bound.

SCIP (through pyscipopt, not a dependency of isoapprox; ``pip install
pyscipopt``) solves the nearest-ideal problem as a nonconvex quadratically
constrained program:

* ``"haus"``: coordinates ``F``, ``t >= 0``, ``|F_k - E_k|^2 <= t^2``; for each
  positive pair an upper distance ``u_ij`` with ``|F_i - F_j|^2 <= u_ij^2``
  (a second-order cone), for each negative pair a lower distance ``w_ij`` with
  ``|F_i - F_j|^2 >= w_ij^2`` (reverse convex), and ``w_am >= u_ap + margin``
  for every triplet; minimise ``t``.
* ``"iso"``: ``F_1 = 0`` (translations), a distance ``r_ij`` per pair with
  ``|F_i - F_j|^2 = r_ij^2``, ``|r_ij - D^E_ij| <= t``, ``r_am >= r_ap + margin``.

Both get ``t <= t_max``, isoapprox's re-scored feasible value (so SCIP starts
with the same cutoff as the bracket it is compared with), the boxes this
implies (``|F_k - E_k| <= t_max`` for ``"haus"``, ``|F_k| <= D^E_1k + t_max``
for ``"iso"``), distance variables bounded by ``D^E_ij +- 2 t_max``, and SCIP's
defaults otherwise (feasibility tolerance 1e-6, gap limit 1e-6; a run that
stops at the gap limit counts as certified).

Every SCIP answer is re-checked here as isoapprox checks its own: its
coordinates are re-scored in float64 by direct differences and tested for
triplet separation with no tolerance; its dual bound is compared with the
proven lower end of isoapprox's bracket.  The script reports, per objective:
the share of instances each tool certifies to ``1e-6`` (SCIP: status
``optimal``), median seconds, how many SCIP solutions are not separated in
float64, and how often SCIP's optimal value lies below isoapprox's proven
lower end (its tolerances let the triplet constraints be slightly violated).

Run from the repository root::

    PYTHONPATH=$PWD python benchmarks/bench_scip.py --quick     # 8 toys per objective
    PYTHONPATH=$PWD python benchmarks/bench_scip.py             # 40 toys + 12 at N = 8
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from isoapprox import hausdorff_like, is_triplet_separated, isometric_error, nearest_ideal

LAYOUTS = [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1), (0, 0, 1, 1, 1)]
TOL = 1e-6
#: SCIP statuses that close the gap to TOL
CLOSED = ("optimal", "gaplimit")


def scip_model(E, y, margin, objective, time_limit, t_max):
    """Build the SCIP model; return (model, F vars, t var)."""
    import pyscipopt as ps

    E = np.asarray(E, float)
    y = np.asarray(y)
    N, n = E.shape
    iu, ju = np.triu_indices(N, 1)
    DE = np.sqrt(np.sum((E[iu] - E[ju]) ** 2, axis=1))
    m = ps.Model()
    m.hideOutput()
    m.setParam("limits/time", float(time_limit))
    m.setParam("limits/gap", TOL)
    m.setParam("parallel/maxnthreads", 1)
    if objective == "haus":
        F = [[m.addVar(lb=E[k, d] - t_max, ub=E[k, d] + t_max, name=f"F{k}_{d}")
              for d in range(n)] for k in range(N)]
    else:
        reach = np.sqrt(np.sum((E - E[0]) ** 2, axis=1)) + t_max
        F = [[m.addVar(lb=-reach[k], ub=reach[k], name=f"F{k}_{d}") for d in range(n)]
             for k in range(N)]
    t = m.addVar(lb=0.0, ub=t_max, name="t")
    dist = {}

    def sq(i, j):
        return ps.quicksum((F[i][d] - F[j][d]) * (F[i][d] - F[j][d]) for d in range(n))

    if objective == "haus":
        for k in range(N):
            m.addCons(ps.quicksum((F[k][d] - E[k, d]) * (F[k][d] - E[k, d])
                                  for d in range(n)) <= t * t)
        for i, j in zip(iu, ju, strict=True):
            dij = float(np.sqrt(np.sum((E[i] - E[j]) ** 2)))
            r = m.addVar(lb=max(dij - 2 * t_max, 0.0), ub=dij + 2 * t_max, name=f"r{i}_{j}")
            if y[i] == y[j]:
                m.addCons(sq(i, j) <= r * r)
            else:
                m.addCons(sq(i, j) >= r * r)
            dist[i, j] = dist[j, i] = r
    else:
        for d in range(n):
            m.chgVarLb(F[0][d], 0.0)
            m.chgVarUb(F[0][d], 0.0)
        for i, j, dij in zip(iu, ju, DE, strict=True):
            r = m.addVar(lb=max(dij - t_max, 0.0), ub=dij + t_max, name=f"r{i}_{j}")
            m.addCons(sq(i, j) == r * r)
            m.addCons(r - dij <= t)
            m.addCons(dij - r <= t)
            dist[i, j] = dist[j, i] = r
    for a in range(N):
        for p in range(N):
            if p == a or y[p] != y[a]:
                continue
            for q in range(N):
                if y[q] != y[a]:
                    m.addCons(dist[a, q] - dist[a, p] >= margin)
    m.setObjective(t, "minimize")
    return m, F, t


def solve_scip(E, y, margin, objective, time_limit, t_max):
    t0 = time.perf_counter()
    m, F, t = scip_model(E, y, margin, objective, time_limit, t_max)
    m.optimize()
    secs = time.perf_counter() - t0
    status = m.getStatus()
    out = {"scip_status": status, "scip_seconds": secs, "scip_dual": float(m.getDualbound())}
    if m.getNSols() > 0:
        sol = m.getBestSol()
        G = np.array([[m.getSolVal(sol, v) for v in row] for row in F])
        out["scip_primal"] = float(m.getSolObjVal(sol))
        out["scip_separated"] = bool(is_triplet_separated(G, y, margin=margin, atol=0.0))
        out["scip_rescored"] = float(isometric_error(E, G) if objective == "iso"
                                     else hausdorff_like(E, G))
    else:
        out.update(scip_primal=None, scip_separated=None, scip_rescored=None)
    return out


def instances(quick: bool, seed: int):
    rng = np.random.default_rng(seed)
    n5 = 8 if quick else 40
    for k in range(n5):
        yield "N5_R2", rng.normal(size=(5, 2)), np.array(LAYOUTS[k % 3]), float(k % 2), k
    if not quick:
        for k in range(12):
            y = np.array([0, 0, 0, 1, 1, 1, 2, 2])
            yield "N8_R2", rng.normal(size=(8, 2)), y, 0.5, k


def run(args) -> list[dict]:
    # warm-up (numba compilation)
    nearest_ideal(np.eye(5, 2), [0, 0, 1, 1, 2], margin=1.0, objective="haus",
                  warn_uncertified=False)
    records = []
    for name, E, y, margin, k in instances(args.quick, args.seed):
        for obj in args.objectives:
            if name == "N8_R2" and obj == "iso":
                continue
            t0 = time.perf_counter()
            res = nearest_ideal(E, y, margin=margin, objective=obj, rng=k, tol=TOL,
                                warn_uncertified=False)
            rec = {"set": name, "objective": obj, "margin": margin, "k": k,
                   "iso_seconds": time.perf_counter() - t0, "iso_certified": res.certified,
                   "iso_value": res.value, "iso_lower": res.lower,
                   "iso_lower_source": res.lower_source}
            rec.update(solve_scip(E, y, margin, obj, args.time_limit,
                                  res.upper * (1 + 1e-9) + 1e-12))
            # a proven lower end above SCIP's "optimal" value shows its tolerance at work
            rec["scip_below_proven_lower"] = bool(
                rec["scip_primal"] is not None
                and rec["scip_primal"] < res.lower * (1 - 1e-9))
            records.append(rec)
            print(f"{name} {obj:4s} m={margin:g} k={k:2d}: isoapprox "
                  f"{'cert' if res.certified else 'open'} {res.value:.6g} "
                  f"[{res.lower:.6g}] {rec['iso_seconds']:.3f}s | SCIP {rec['scip_status']} "
                  f"{rec['scip_primal']} dual {rec['scip_dual']:.6g} {rec['scip_seconds']:.2f}s",
                  flush=True)
    return records


def summarise(records):
    out = {}
    for key in sorted({(r["set"], r["objective"]) for r in records}):
        sel = [r for r in records if (r["set"], r["objective"]) == key]
        ours = np.array([r["iso_seconds"] for r in sel])
        scip = np.array([r["scip_seconds"] for r in sel])
        out["/".join(key)] = {
            "n": len(sel),
            "isoapprox_certified": int(sum(r["iso_certified"] for r in sel)),
            "scip_certified": int(sum(r["scip_status"] in CLOSED for r in sel)),
            "isoapprox_median_s": float(np.median(ours)),
            "scip_median_s": float(np.median(scip)),
            "ratio_of_medians_scip_over_isoapprox": float(np.median(scip) / np.median(ours)),
            "scip_solution_not_separated_float64": int(
                sum(r["scip_separated"] is False for r in sel)),
            "scip_optimal_below_isoapprox_proven_lower": int(
                sum(r["scip_below_proven_lower"] and r["scip_status"] in CLOSED
                    for r in sel)),
            "largest_relative_shortfall_below_proven_lower": max(
                [0.0] + [(r["iso_lower"] - r["scip_primal"]) / max(r["iso_lower"], 1e-300)
                         for r in sel if r["scip_below_proven_lower"]]),
            "isoapprox_lower_sources": sorted({r["iso_lower_source"] for r in sel
                                               if r["iso_certified"]}),
        }
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="8 toys per objective, no N = 8 set")
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--time-limit", type=float, default=20.0, help="SCIP seconds per problem")
    ap.add_argument("--objectives", nargs="+", default=["iso", "haus"], choices=["iso", "haus"])
    ap.add_argument("--json", help="write the records and the summary to this file")
    args = ap.parse_args(argv)
    try:
        import pyscipopt
    except ImportError:
        raise SystemExit("bench_scip: pyscipopt is not installed (pip install pyscipopt)") from None
    records = run(args)
    summary = summarise(records)
    print(json.dumps(summary, indent=1))
    if args.json:
        from isoapprox.io import atomic_write_text, provenance, to_jsonable

        meta = {"config": vars(args), "pyscipopt": pyscipopt.__version__,
                "scip": str(pyscipopt.Model().version()), "python": platform.python_version(),
                "provenance": provenance()}
        atomic_write_text(args.json, json.dumps(to_jsonable(
            {"meta": meta, "summary": summary, "records": records}), indent=1))


if __name__ == "__main__":
    main()
