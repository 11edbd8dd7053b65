"""Independent references for the nearest-ideal tests.

Plain loops and textbook formulations, written without the package's
solvers: the 3-point LP by ``scipy.optimize.linprog``, the epigraph rows by
loops, random feasible embeddings, and an independent local search that uses
the *all-triplet* form of the constraints (not the per-anchor form of the
package) for the bracket tests.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.optimize import linprog, minimize

from .reference import isometric_error, pairwise, triplets


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


def objective(E, G, which: str) -> float:
    if which == "iso":
        return isometric_error(E, G)
    E, G = np.asarray(E, float), np.asarray(G, float)
    return max(math.dist(a, b) for a, b in zip(E, G, strict=True))


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
    N, n = E.shape
    trip = list(triplets(y))
    scale = max(float(pairwise(E).max()), margin, 1e-300)
    best = math.inf
    cands = []
    for _ in range(n_random):
        kind = rng.integers(3)
        if kind == 0:
            G = E + rng.normal(scale=rng.choice([0.1, 0.3, 1.0]) * scale, size=E.shape)
        elif kind == 1:
            C = rng.normal(scale=scale, size=(int(y.max()) + 1, n))
            G = C[y] + rng.normal(scale=0.05 * scale, size=E.shape)
        else:
            lam = rng.uniform(0, 1)
            C = np.array([E[y == c].mean(axis=0) for c in range(int(y.max()) + 1)])
            G = C[y] * rng.uniform(1, 3) + lam * (E - C[y])
        G = make_feasible(G, y, margin)
        if G is not None:
            v = objective(E, G, which)
            cands.append((v, G))
            best = min(best, v)
    cands.sort(key=lambda t: t[0])
    eps = 1e-9 * scale
    iu = np.triu_indices(N, 1)

    def d(G, i, j):
        return np.sqrt(np.sum((G[i] - G[j]) ** 2) + eps * eps)

    for _, G0 in cands[:n_polish]:
        x0 = np.concatenate([G0.ravel(), [objective(E, G0, which)]])

        def cons(x):
            G = x[:-1].reshape(N, n)
            t = x[-1]
            out = [d(G, a, m) - d(G, a, p) - margin * (1 + 1e-7) - 2 * eps
                   for a, p, m in trip]
            if which == "iso":
                DG = np.sqrt(np.sum((G[:, None] - G[None]) ** 2, axis=-1))
                DE = pairwise(E)
                out += list(t - (DG - DE)[iu]) + list(t + (DG - DE)[iu])
            else:
                out += list(t * t - np.sum((G - E) ** 2, axis=1))
            return np.array(out)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = minimize(lambda x: x[-1], x0, method="SLSQP",
                           constraints=[{"type": "ineq", "fun": cons}],
                           options={"maxiter": 300, "ftol": 1e-12})
        G = res.x[:-1].reshape(N, n)
        if worst_slack(G, y, margin) >= 0:
            best = min(best, objective(E, G, which))
    return best
