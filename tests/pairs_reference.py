"""Independent references for the pair-loss zero sets (plain loops, textbook forms).

``F(u, l) = {G : d_G(i, j) <= u for same-class pairs, d_G(i, j) >= l for
different-class pairs}``.  Nothing here uses the package's solvers.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
from scipy.optimize import linprog, minimize

from .reference import isometric_error, pairwise


def bounds(loss: str, margin: float, pos_margin: float = 0.0, beta: float = 1.0):
    """``(u, l)`` straight from the loss definitions."""
    if loss == "contrastive":
        return pos_margin, margin
    return beta - margin, beta + margin


def pair_pairs(y):
    y = list(y)
    for i, j in itertools.combinations(range(len(y)), 2):
        yield i, j, y[i] == y[j]


def loss_max(E, y, u: float, l: float) -> float:
    """Max over pairs of ``[d - u]_+`` (positive) and ``[l - d]_+`` (negative)."""
    D = pairwise(E)
    terms = [max(D[i, j] - u, 0.0) if same else max(l - D[i, j], 0.0)
             for i, j, same in pair_pairs(y)]
    return max(terms)


def worst_slack(G, y, u: float, l: float) -> float:
    D = pairwise(G)
    out = math.inf
    for i, j, same in pair_pairs(y):
        if same:
            out = min(out, u - D[i, j])
        elif l > 0:
            out = min(out, D[i, j] - l)
    return out


def objective(E, G, which: str) -> float:
    if which == "iso":
        return isometric_error(E, G)
    return max(math.dist(a, b) for a, b in zip(np.asarray(E, float), np.asarray(G, float),
                                                strict=True))


def make_feasible(G, y, u: float, l: float):
    """Shrink every class to diameter <= u about its mean, then scale the class
    centres apart until all negatives are >= l (None if that fails)."""
    G = np.array(G, dtype=float)
    y = np.asarray(y)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        if len(idx) < 2:
            continue
        m = G[idx].mean(axis=0)
        d = max(math.dist(G[a], G[b]) for a, b in itertools.combinations(idx, 2))
        if d > u:
            G[idx] = m + (G[idx] - m) * (u / d * (1 - 1e-9) if d > 0 else 0.0)
    M = {c: G[y == c].mean(axis=0) for c in np.unique(y)}
    c0 = G.mean(axis=0)
    for f in (1.0, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0):
        H = np.array([c0 + f * (M[yi] - c0) + (g - M[yi]) for g, yi in zip(G, y, strict=True)])
        if worst_slack(H, y, u, l) >= 0:
            return H
    return None


def metric_lp(E, y, u: float, l: float) -> float:
    """The least level s at which some *metric* t (all triangle inequalities)
    has |t - D| <= s, t_pos <= u and t_neg >= l (linprog, dense)."""
    D = pairwise(E)
    N = len(D)
    pairs = list(itertools.combinations(range(N), 2))
    idx = {p: k for k, p in enumerate(pairs)}

    def pid(i, j):
        return idx[(min(i, j), max(i, j))]

    nv = len(pairs) + 1
    A, b = [], []
    bnds = []
    for k, (i, j) in enumerate(pairs):
        for sgn in (1, -1):
            row = np.zeros(nv)
            row[k] = sgn
            row[-1] = -1
            A.append(row)
            b.append(sgn * D[i, j])
        bnds.append((0, u) if y[i] == y[j] else (l, None))
    for i, j, k in itertools.combinations(range(N), 3):
        for long, s1, s2 in (((i, j), (i, k), (j, k)), ((i, k), (i, j), (j, k)),
                             ((j, k), (i, j), (i, k))):
            row = np.zeros(nv)
            row[pid(*long)] = 1
            row[pid(*s1)] -= 1
            row[pid(*s2)] -= 1
            A.append(row)
            b.append(0.0)
    c = np.zeros(nv)
    c[-1] = 1
    res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=bnds + [(0, None)],
                  method="highs")
    assert res.status == 0
    return float(res.fun)


def independent_search(E, y, u: float, l: float, which: str, rng, n_random: int = 300,
                       n_polish: int = 6) -> float:
    """Best value over random feasible points plus a plain SLSQP polish of the
    textbook form (``u - d_pos >= 0``, ``d_neg - l >= 0``, one row per pair);
    only points feasible in float64 count."""
    E = np.asarray(E, dtype=float)
    y = np.unique(np.asarray(y), return_inverse=True)[1].ravel()
    N, n = E.shape
    scale = max(float(pairwise(E).max()), l, 1e-300)
    P = int(y.max()) + 1
    best = math.inf
    cands = []
    for _ in range(n_random):
        kind = rng.integers(3)
        if kind == 0:
            G = E + rng.normal(scale=rng.choice([0.1, 0.3, 1.0]) * scale, size=E.shape)
        elif kind == 1:
            C = rng.normal(scale=scale, size=(P, n))
            G = C[y] + rng.normal(scale=0.05 * scale, size=E.shape)
        else:
            lam = rng.uniform(0, 1)
            C = np.array([E[y == c].mean(axis=0) for c in range(P)])
            G = C[y] * rng.uniform(1, 3) + lam * (E - C[y])
        G = make_feasible(G, y, u, l)
        if G is not None:
            v = objective(E, G, which)
            cands.append((v, G))
            best = min(best, v)
    cands.sort(key=lambda t: t[0])
    eps = 1e-9 * scale
    iu = np.triu_indices(N, 1)
    prs = list(pair_pairs(y))
    DE = pairwise(E)

    def d(G, i, j):
        return np.sqrt(np.sum((G[i] - G[j]) ** 2) + eps * eps)

    for _, G0 in cands[:n_polish]:
        x0 = np.concatenate([G0.ravel(), [objective(E, G0, which)]])

        def cons(x):
            G = x[:-1].reshape(N, n)
            t = x[-1]
            out = []
            for i, j, same in prs:
                if same:
                    out.append(u * (1 - 1e-7) - d(G, i, j))
                elif l > 0:
                    out.append(d(G, i, j) - l * (1 + 1e-7) - eps)
            if which == "iso":
                DG = np.sqrt(np.sum((G[:, None] - G[None]) ** 2, axis=-1))
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
        if worst_slack(G, y, u, l) >= 0:
            best = min(best, objective(E, G, which))
    return best


def dense_search_1d(E, y, u: float, l: float, which: str, grid: np.ndarray) -> float:
    """Exhaustive search over every ``G`` with coordinates on a 1-D grid (tiny N
    only, vectorised): the best feasible value, an upper bound on the true
    distance that the bracket's lower end must not exceed."""
    E = np.asarray(E, dtype=float)[:, 0]
    N = len(E)
    G = np.stack(np.meshgrid(*([np.asarray(grid, float)] * N), indexing="ij"), -1).reshape(-1, N)
    ok = np.ones(len(G), dtype=bool)
    err = np.zeros(len(G))
    for i, j, same in pair_pairs(y):
        d = np.abs(G[:, i] - G[:, j])
        ok &= (d <= u) if same else (d >= l)
        err = np.maximum(err, np.abs(d - abs(E[i] - E[j])))
    if which == "haus":
        err = np.max(np.abs(G - E[None, :]), axis=1)
    return float(np.min(err[ok])) if ok.any() else math.inf
