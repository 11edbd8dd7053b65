"""Obviously-correct brute-force references (plain loops, no numba).

Each function here is the definition written as loops over all pairs and all
triplets; the kernels are compared against them on random inputs and corner
cases.  They are slow: keep N small.
"""

from __future__ import annotations

import math

import numpy as np


def dist(u, v) -> float:
    # d * d, not d ** 2: a float's ** goes through the C library's pow, which
    # may be 1 ulp off the exactly rounded product (3.5999999940395355 ** 2 is)
    return math.sqrt(sum(d * d for d in (float(a) - float(b) for a, b in zip(u, v, strict=True))))


def pairwise(E) -> np.ndarray:
    E = np.asarray(E, dtype=float)
    N = len(E)
    D = np.zeros((N, N))
    for i in range(N):
        for j in range(N):
            D[i, j] = dist(E[i], E[j])
    return D


def triplets(y):
    y = list(np.asarray(y).tolist())
    N = len(y)
    for a in range(N):
        for p in range(N):
            if p == a or y[p] != y[a]:
                continue
            for m in range(N):
                if y[m] != y[a]:
                    yield a, p, m


def triplet_terms(E, y, margin) -> list[float]:
    D = pairwise(E)
    return [max(D[a, p] - D[a, m] + margin, 0.0) for a, p, m in triplets(y)]


def reduce(values, reduction):
    if reduction == "sum":
        return math.fsum(values)
    if reduction == "mean":
        return math.fsum(values) / len(values)
    return max(values)


def triplet_loss(E, y, margin, reduction) -> float:
    return reduce(triplet_terms(E, y, margin), reduction)


def batch_hard_terms(E, y, margin) -> list[float]:
    D = pairwise(E)
    y = list(np.asarray(y).tolist())
    N = len(y)
    out = []
    for a in range(N):
        pos = [D[a, p] for p in range(N) if p != a and y[p] == y[a]]
        neg = [D[a, m] for m in range(N) if y[m] != y[a]]
        if pos and neg:
            out.append(max(max(pos) - min(neg) + margin, 0.0))
    return out


def batch_hard_loss(E, y, margin, reduction) -> float:
    return reduce(batch_hard_terms(E, y, margin), reduction)


def n_violated(E, y, margin, atol) -> int:
    D = pairwise(E)
    return sum(1 for a, p, m in triplets(y) if D[a, p] + margin - D[a, m] > atol)


def worst_slack(E, y, margin) -> float:
    D = pairwise(E)
    return min(D[a, m] - D[a, p] - margin for a, p, m in triplets(y))


def isometric_error(E1, E2) -> float:
    D1, D2 = pairwise(E1), pairwise(E2)
    N = len(D1)
    return max(abs(D1[i, j] - D2[i, j]) for i in range(N) for j in range(i + 1, N))


def diameter(E) -> float:
    D = pairwise(E)
    return float(D.max())


def hausdorff_pointwise(E1, E2) -> float:
    return max(dist(a, b) for a, b in zip(E1, E2, strict=True))


def hausdorff_classwise_directed(E1, E2, y) -> float:
    y = list(np.asarray(y).tolist())
    N = len(y)
    return max(min(dist(E1[k], E2[l]) for l in range(N) if y[l] == y[k]) for k in range(N))


def pair_terms(E, y, pos_thr, neg_thr) -> list[float]:
    D = pairwise(E)
    y = list(np.asarray(y).tolist())
    N = len(y)
    out = []
    for i in range(N):
        for j in range(i + 1, N):
            if y[i] == y[j]:
                out.append(max(D[i, j] - pos_thr, 0.0))
            else:
                out.append(max(neg_thr - D[i, j], 0.0))
    return out


def meb_radius_bruteforce_2d(E) -> float:
    """Minimum enclosing circle by trying every circle through 2 or 3 points."""
    E = np.asarray(E, dtype=float)
    N = len(E)
    best = math.inf

    def covers(c, r):
        return all(dist(p, c) <= r * (1 + 1e-12) + 1e-12 for p in E)

    if N == 1:
        return 0.0
    for i in range(N):
        for j in range(i + 1, N):
            c = (E[i] + E[j]) / 2
            r = dist(E[i], E[j]) / 2
            if r < best and covers(c, r):
                best = r
            for k in range(j + 1, N):
                ax, ay = E[i]
                bx, by = E[j]
                cx, cy = E[k]
                d = 2 * (ax * (by - cy) + bx * (cy - ay) + cx * (ay - by))
                if abs(d) < 1e-14:
                    continue
                ux = (
                    (ax**2 + ay**2) * (by - cy)
                    + (bx**2 + by**2) * (cy - ay)
                    + (cx**2 + cy**2) * (ay - by)
                ) / d
                uy = (
                    (ax**2 + ay**2) * (cx - bx)
                    + (bx**2 + by**2) * (ax - cx)
                    + (cx**2 + cy**2) * (bx - ax)
                ) / d
                c = np.array([ux, uy])
                r = dist(c, E[i])
                if r < best and covers(c, r):
                    best = r
    return best
