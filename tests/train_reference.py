"""Brute-force references and finite-difference helpers for the training harness.

Plain loops over pairs and triplets, written from the definitions in
``isoapprox/train/losses.py`` and ``isoapprox/train/evaluate.py``; slow, so
keep ``N`` small.
"""

from __future__ import annotations

import math

import numpy as np

from .reference import dist, pairwise


def softplus(z: float) -> float:
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def reduce(values, reduction):
    if reduction == "sum":
        return math.fsum(values)
    if reduction == "mean":
        return math.fsum(values) / len(values)
    return max(values)


def semi_hard(E, y, margin, reduction):
    """FaceNet/TensorFlow semi-hard: closest negative farther than the positive,
    else the farthest negative; one term per ordered positive pair."""
    D = pairwise(E)
    y = list(np.asarray(y).tolist())
    N = len(y)
    terms, chosen = [], []
    for a in range(N):
        negs = [m for m in range(N) if y[m] != y[a]]
        if not negs:
            continue
        for p in range(N):
            if p == a or y[p] != y[a]:
                continue
            farther = [m for m in negs if D[a, m] > D[a, p]]
            if farther:
                m = min(farther, key=lambda k: (D[a, k], k))
            else:
                m = max(negs, key=lambda k: (D[a, k], -k))
            terms.append(max(D[a, p] - D[a, m] + margin, 0.0))
            chosen.append((a, p, m))
    return reduce(terms, reduction), chosen


def normalise_rows(E):
    E = np.asarray(E, dtype=float)
    out = []
    for row in E:
        r = max(math.sqrt(sum(v * v for v in row)), 1e-12)
        out.append([v / r for v in row])
    return np.array(out)


def selectively_contrastive(
    E, y, lam, temperature, positive, hard_threshold, reduction
):
    """Xuan et al.'s loss by loops over anchors (cosine similarities)."""
    U = normalise_rows(E)
    y = list(np.asarray(y).tolist())
    N = len(y)
    S = [[float(np.dot(U[i], U[j])) for j in range(N)] for i in range(N)]
    terms = []
    for a in range(N):
        pos = [p for p in range(N) if p != a and y[p] == y[a]]
        neg = [m for m in range(N) if y[m] != y[a]]
        if not pos or not neg:
            continue
        if positive == "easy":
            p = max(pos, key=lambda k: (S[a][k], -k))
        else:
            p = min(pos, key=lambda k: (S[a][k], k))
        m = max(neg, key=lambda k: (S[a][k], -k))
        s_ap, s_an = S[a][p], S[a][m]
        hard = s_an > s_ap or (hard_threshold is not None and s_an > hard_threshold)
        if hard:
            terms.append(lam * s_an)
        else:
            terms.append(softplus((s_an - s_ap) / temperature))
    return reduce(terms, reduction)


def recall_at_k(E, y, k):
    """Leave-one-out Recall@k, ties broken by index (stable sort)."""
    D = pairwise(E)
    y = list(np.asarray(y).tolist())
    N = len(y)
    hits = 0
    for i in range(N):
        order = sorted((j for j in range(N) if j != i), key=lambda j: (D[i, j], j))
        if any(y[j] == y[i] for j in order[:k]):
            hits += 1
    return hits / N


def central_gradient(f, X, h):
    """Central differences of the scalar ``f(X)[0]``, and every signature seen.

    ``f`` returns ``(value, signature)``; the signature (mining indices,
    active masks, ReLU patterns) must not change over the stencil, or the
    difference straddles a kink.
    """
    X = np.array(X, dtype=float)
    G = np.zeros_like(X)
    base_sig = f(X)[1]
    crossed = []
    for idx in np.ndindex(X.shape):
        Xp = X.copy()
        Xp[idx] += h
        Xm = X.copy()
        Xm[idx] -= h
        fp, sp = f(Xp)
        fm, sm = f(Xm)
        if sp != base_sig or sm != base_sig:
            crossed.append(idx)
        G[idx] = (fp - fm) / (2 * h)
    return G, crossed


def grad_errors(G, G_ref):
    """Max and mean absolute error, relative to ``max(1, max |G_ref|)``."""
    scale = max(1.0, float(np.max(np.abs(G_ref))))
    err = np.abs(G - G_ref) / scale
    return float(err.max()), float(err.mean())


__all__ = [
    "central_gradient",
    "dist",
    "grad_errors",
    "normalise_rows",
    "recall_at_k",
    "selectively_contrastive",
    "semi_hard",
    "softplus",
]
