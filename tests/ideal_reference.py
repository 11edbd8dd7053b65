"""Independent references for the nearest-ideal tests.

Plain loops and textbook formulations, written without the package's
solvers: the 3-point LP by ``scipy.optimize.linprog``, the epigraph rows by
loops, random feasible embeddings, and an independent local search that uses
the *all-triplet* form of the constraints (not the per-anchor form of the
package) for the bracket tests.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from .reference import pairwise, triplets
from .search_reference import random_then_polish


def three_point_lp(Dx: float, Du: float, Dv: float, alpha: float) -> float:
    """Least ``s`` such that some table (x, u, v) is within ``s`` of (Dx, Du, Dv),
    satisfies the triangle inequalities and ``u, v >= x + alpha`` (linprog)."""
    # variables x, u, v, s
    c = [0, 0, 0, 1]
    A, b = [], []
    for k, D in enumerate((Dx, Du, Dv)):
        row = [0, 0, 0, -1]
        row[k] = 1
        A.append(row)
        b.append(D)
        row = [0, 0, 0, -1]
        row[k] = -1
        A.append(row)
        b.append(-D)
    A += [[1, -1, 0, 0], [1, 0, -1, 0]]  # x - u <= -alpha, x - v <= -alpha
    b += [-alpha, -alpha]
    A += [[-1, 1, -1, 0], [-1, -1, 1, 0], [1, -1, -1, 0]]  # triangle inequalities
    b += [0, 0, 0]
    res = linprog(c, A_ub=A, b_ub=b, bounds=[(0, None)] * 4, method="highs")
    assert res.status == 0
    return float(res.fun)


def metric_lp_all_triplets(E, y, alpha: float) -> float:
    """The metric LP written with one row per triplet (dense, tiny N only)."""
    D = pairwise(E)
    N = len(D)
    pairs = [(i, j) for i in range(N) for j in range(i + 1, N)]
    idx = {p: k for k, p in enumerate(pairs)}

    def pid(i, j):
        return idx[(min(i, j), max(i, j))]

    nv = len(pairs) + 1
    A, b = [], []
    for k, (i, j) in enumerate(pairs):
        for sgn in (1, -1):
            row = np.zeros(nv)
            row[k] = sgn
            row[-1] = -1
            A.append(row)
            b.append(sgn * D[i, j])
    for i in range(N):
        for j in range(i + 1, N):
            for k in range(j + 1, N):
                for long, s1, s2 in (((i, j), (i, k), (j, k)), ((i, k), (i, j), (j, k)),
                                     ((j, k), (i, j), (i, k))):
                    row = np.zeros(nv)
                    row[pid(*long)] = 1
                    row[pid(*s1)] -= 1
                    row[pid(*s2)] -= 1
                    A.append(row)
                    b.append(0.0)
    for a, p, m in triplets(y):
        row = np.zeros(nv)
        row[pid(a, p)] = 1
        row[pid(a, m)] = -1
        A.append(row)
        b.append(-alpha)
    c = np.zeros(nv)
    c[-1] = 1
    res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=[(0, None)] * nv,
                  method="highs")
    assert res.status == 0
    return float(res.fun)


def worst_slack(G, y, margin) -> float:
    D = pairwise(G)
    return min(D[a, m] - D[a, p] - margin for a, p, m in triplets(y))


def make_feasible(G, y, margin):
    """Scale ``G`` about its centroid until it is separated (``None`` if impossible)."""
    G = np.asarray(G, dtype=float)
    D = pairwise(G)
    diffs = [D[a, m] - D[a, p] for a, p, m in triplets(y)]
    if min(diffs) < 0 or (margin > 0 and min(diffs) <= 0):
        return None
    if margin > 0 and min(diffs) < margin:
        c = G.mean(axis=0)
        G = c + (G - c) * (margin / min(diffs)) * (1 + 1e-9)
    if worst_slack(G, y, margin) < 0:
        return None
    return G


def independent_search(E, y, margin, which: str, rng, n_random: int = 300,
                       n_polish: int = 6):
    """Best feasible value found by random feasible points and a plain SLSQP
    polish on the all-triplet form ``d_am - d_ap - alpha >= 0`` (smoothed with
    ``eps``; only points that are separated in float64 count)."""
    E = np.asarray(E, dtype=float)
    y = np.asarray(y)
    trip = list(triplets(y))
    scale = max(float(pairwise(E).max()), margin, 1e-300)
    eps = 1e-9 * scale

    def rows(G, d):
        return [d(G, a, m) - d(G, a, p) - margin * (1 + 1e-7) - 2 * eps for a, p, m in trip]

    return random_then_polish(
        E, y, which, rng, scale=scale, repair=lambda G: make_feasible(G, y, margin),
        set_rows=rows, feasible=lambda G: worst_slack(G, y, margin) >= 0,
        n_random=n_random, n_polish=n_polish,
    )
