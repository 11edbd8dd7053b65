"""Brute-force references for the collapse statistics (plain loops, no numba).

Each function writes the definition of :mod:`isoapprox.diagnostics` as loops
over all pairs, triplets or rows; keep N small.
"""

from __future__ import annotations

import math

import numpy as np

from .reference import dist, triplets


def pair_distances(E) -> list[float]:
    """The N (N - 1) / 2 distances d(i, j), i < j, in pdist order."""
    E = np.asarray(E, dtype=float)
    N = len(E)
    return [dist(E[i], E[j]) for i in range(N) for j in range(i + 1, N)]


def quantiles(E, q):
    """numpy's 'linear' quantiles of the pair distances (the documented convention)."""
    return np.quantile(np.array(pair_distances(E)), q)


def _entropy_exp(values, eps=0.0) -> float:
    total = math.fsum(values)
    if total == 0.0:
        return 0.0
    h = 0.0
    for v in values:
        p = v / total + eps
        if p > 0.0:
            h -= p * math.log(p)
    return math.exp(h)


def effective_rank(E, squared=False) -> float:
    """Roy-Vetterli on the centred rows, singular values from the covariance eigenvalues."""
    E = np.asarray(E, dtype=float)
    C = E - E.mean(axis=0)
    lam = np.linalg.eigvalsh(C.T @ C) if C.shape[0] >= C.shape[1] else np.linalg.eigvalsh(C @ C.T)
    s = [math.sqrt(max(v, 0.0)) for v in lam]
    s = [v for v in s if v > 1e-12 * max(s + [0.0])] if max(s + [0.0]) > 0 else []
    return _entropy_exp([v * v for v in s] if squared else s)


def rankme(E, eps=1e-7) -> float:
    E = np.asarray(E, dtype=float)
    s = np.linalg.svd(E, compute_uv=False).tolist()
    return _entropy_exp(s, eps)


def unit_rows(E) -> list[list[float]]:
    out = []
    for row in np.asarray(E, dtype=float).tolist():
        norm = math.sqrt(math.fsum(v * v for v in row))
        out.append([v / norm for v in row])
    return out


def std_of_l2_normalized(E) -> float:
    Z = unit_rows(E)
    N, n = len(Z), len(Z[0])
    stds = []
    for k in range(n):
        col = [Z[i][k] for i in range(N)]
        mu = math.fsum(col) / N
        stds.append(math.sqrt(math.fsum((v - mu) ** 2 for v in col) / (N - 1)))
    return math.fsum(stds) / n


def uniformity(E, t=2.0) -> float:
    """log mean exp(-t d^2) over pairs, by a log-sum-exp shifted by the largest exponent."""
    Z = unit_rows(E)
    N = len(Z)
    s = [-t * dist(Z[i], Z[j]) ** 2 for i in range(N) for j in range(i + 1, N)]
    M = max(s)
    return M + math.log(math.fsum(math.exp(v - M) for v in s)) - math.log(len(s))


def alignment(E, y, alpha=2.0) -> float:
    Z = unit_rows(E)
    y = list(np.asarray(y).tolist())
    vals = [dist(Z[i], Z[j]) ** alpha for i in range(len(y)) for j in range(i + 1, len(y))
            if y[i] == y[j]]
    return math.fsum(vals) / len(vals)


def active_fraction(E, y, margin) -> float:
    E = np.asarray(E, dtype=float)
    trip = list(triplets(y))
    act = sum(1 for a, p, m in trip if dist(E[a], E[m]) < dist(E[a], E[p]) + margin)
    return act / len(trip)


def soft_margin(E, y) -> float:
    E = np.asarray(E, dtype=float)
    y = list(np.asarray(y).tolist())
    N = len(y)
    vals = []
    for a in range(N):
        pos = [dist(E[a], E[p]) for p in range(N) if p != a and y[p] == y[a]]
        neg = [dist(E[a], E[m]) for m in range(N) if y[m] != y[a]]
        if pos and neg:
            vals.append(math.log1p(math.exp(max(pos) - min(neg))))
    return math.fsum(vals) / len(vals)


def class_spread(E, y):
    """(classes, diameter, min_inter, nearest_centroid) by loops over all pairs."""
    E = np.asarray(E, dtype=float)
    y = list(np.asarray(y).tolist())
    classes = sorted(set(y))
    N = len(y)
    diam, inter, cent = [], [], []
    for c in classes:
        idx = [i for i in range(N) if y[i] == c]
        other = [j for j in range(N) if y[j] != c]
        diam.append(max([dist(E[i], E[j]) for i in idx for j in idx] + [0.0]))
        inter.append(min(dist(E[i], E[j]) for i in idx for j in other))
        cent.append([math.fsum(E[i][k] for i in idx) / len(idx) for k in range(E.shape[1])])
    near = [min(dist(cent[a], cent[b]) for b in range(len(classes)) if b != a)
            for a in range(len(classes))]
    return classes, diam, inter, near
