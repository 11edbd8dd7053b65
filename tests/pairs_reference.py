"""Independent references for the pair-loss zero sets (plain loops, textbook forms).

``F(u, l) = {G : d_G(i, j) <= u for same-class pairs, d_G(i, j) >= l for
different-class pairs}``.  Nothing here uses the package's solvers.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import linprog

from .reference import pairwise
from .search_reference import random_then_polish


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
    scale = max(float(pairwise(E).max()), l, 1e-300)
    eps = 1e-9 * scale
    prs = list(pair_pairs(y))

    def rows(G, d):
        out = []
        for i, j, same in prs:
            if same:
                out.append(u * (1 - 1e-7) - d(G, i, j))
            elif l > 0:
                out.append(d(G, i, j) - l * (1 + 1e-7) - eps)
        return out

    return random_then_polish(
        E, y, which, rng, scale=scale, repair=lambda G: make_feasible(G, y, u, l),
        set_rows=rows, feasible=lambda G: worst_slack(G, y, u, l) >= 0,
        n_random=n_random, n_polish=n_polish,
    )


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
