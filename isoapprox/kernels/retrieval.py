"""Kernel of the leave-one-out retrieval metrics (:func:`isoapprox.metrics.retrieval_metrics`).

For a query ``q`` of class ``c`` with ``R = |c| - 1 >= 1`` other points of
its class, the ``R`` nearest other points are ranked by squared Euclidean
distance (direct differences, float64: the same order as the distance),
ties broken *pessimistically*: among points at the same distance, those of
another class come first, then by index.  A tie carries no information, so
it never counts as a retrieval (all points equal gives Recall@1 = 0).

Memory is ``O(N)`` per query (a distance row, a work copy for the
selection, the ``R`` chosen indices), never ``N x N``; time ``O(N n)`` per
query for the distances plus ``O(N + R log R)`` for the selection of the
``R`` smallest (``np.partition``) and their sort.  The queries are
independent, so ``parallel=True`` gives the same numbers for any thread
count.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import JIT
from .distances import sq_dist

__all__ = ["loo_retrieval"]


@njit(**JIT)
def _one_query(X, codes, sizes, q, d, work):
    """(hit at 1, R-precision, MAP@R) of query ``q``; ``d`` and ``work`` are length-N buffers."""
    N = X.shape[0]
    c = codes[q]
    R = sizes[c] - 1
    for j in range(N):
        d[j] = sq_dist(X, q, X, j)
    d[q] = np.inf
    # the R-th smallest distance among the other points
    m = 0
    for j in range(N):
        if j != q:
            work[m] = d[j]
            m += 1
    part = np.partition(work[:m], R - 1)
    t = part[R - 1]
    # chosen: every point strictly closer than t, then points at t, other class first
    chosen = np.empty(R, dtype=np.int64)
    k = 0
    for j in range(N):
        if j != q and d[j] < t:
            chosen[k] = j
            k += 1
    for same in range(2):
        for j in range(N):
            if k == R:
                break
            if j != q and d[j] == t and (codes[j] == c) == (same == 1):
                chosen[k] = j
                k += 1
    # order: distance, then other class before same class, then index: arrange
    # (other class by index, same class by index), then a stable sort by distance
    arranged = np.empty(R, dtype=np.int64)
    a = 0
    for same in range(2):
        for i in range(R):
            if (codes[chosen[i]] == c) == (same == 1):
                arranged[a] = chosen[i]
                a += 1
    dist = np.empty(R)
    for i in range(R):
        dist[i] = d[arranged[i]]
    order = np.argsort(dist, kind="mergesort")
    hits = 0
    ap = 0.0
    first = 0.0
    for i in range(R):
        if codes[arranged[order[i]]] == c:
            hits += 1
            ap += hits / (i + 1.0)
            if i == 0:
                first = 1.0
    return first, hits / R, ap / R


@njit(parallel=True, **JIT)
def loo_retrieval(X, codes, sizes, queries):
    """Per query of ``queries``: hit at 1 (0 or 1), R-precision and MAP@R (float64 each).

    ``X`` float64 ``(N, n)`` (finite, rescaled so that squared differences
    stay in range), ``codes`` dense class codes, ``sizes`` the class sizes,
    ``queries`` indices of points whose class has at least two points.
    """
    N = X.shape[0]
    Q = queries.shape[0]
    hit = np.empty(Q)
    rp = np.empty(Q)
    mapr = np.empty(Q)
    for i in prange(Q):
        d = np.empty(N)
        work = np.empty(N)
        h, r, m = _one_query(X, codes, sizes, queries[i], d, work)
        hit[i] = h
        rp[i] = r
        mapr[i] = m
    return hit, rp, mapr
