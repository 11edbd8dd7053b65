"""numba kernels: arrays in, arrays out.

No validation, no I/O, no randomness: the public wrappers in
:mod:`isoapprox.losses`, :mod:`isoapprox.metrics` and
:mod:`isoapprox.geometry` check their inputs and call these.  Every kernel

- works in float64 and computes distances by direct differences
  ``sqrt(sum_k (x_k - y_k)**2)``, never by the dot-product expansion, so
  ``isometric_error(E, E) == 0.0`` exactly and small distances keep full
  relative precision;
- is compiled once at import time of first use with ``cache=True`` and
  ``fastmath=False`` (max/min and NaN semantics matter everywhere here);
- when ``parallel=True``, writes one output slot per anchor/row inside the
  ``prange`` loop and reduces afterwards in a fixed order, so the result does
  not depend on the number of threads;
- never builds an ``N x N`` matrix unless its name says so
  (:func:`pairwise_distances_kernel`): memory is ``O(N)`` per thread.

Labels reach the kernels as dense integer codes ``0 .. P-1``.  Index outputs
use ``-1`` for "none".  Ties are broken towards the smallest index so results
are deterministic.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = [
    "batch_hard_terms",
    "classwise_directed_kernel",
    "diameter_kernel",
    "isometric_error_kernel",
    "pair_loss_kernel",
    "pairwise_distances_kernel",
    "pointwise_kernel",
    "separation_counts",
    "triplet_loss_kernel",
]

_JIT = dict(cache=True, fastmath=False, nogil=True)


@njit(inline="always", **_JIT)
def _dist(X, i, Y, j):
    """Euclidean distance between ``X[i]`` and ``Y[j]`` by direct differences."""
    s = 0.0
    for k in range(X.shape[1]):
        t = X[i, k] - Y[j, k]
        s += t * t
    return np.sqrt(s)


@njit(parallel=True, **_JIT)
def pairwise_distances_kernel(X):
    """Full ``(N, N)`` distance matrix; exactly symmetric with a zero diagonal."""
    n = X.shape[0]
    D = np.zeros((n, n))
    for i in prange(n):
        for j in range(i + 1, n):
            d = _dist(X, i, X, j)
            D[i, j] = d
            D[j, i] = d
    return D


@njit(parallel=True, **_JIT)
def diameter_kernel(X):
    """Largest pairwise distance and a pair attaining it (``i < j``)."""
    n = X.shape[0]
    best = np.zeros(n)
    arg = np.full(n, -1, dtype=np.int64)
    for i in prange(n):
        b = -1.0
        bj = -1
        for j in range(i + 1, n):
            d = _dist(X, i, X, j)
            if d > b:
                b = d
                bj = j
        best[i] = b
        arg[i] = bj
    value = 0.0
    bi = 0
    bj = 1 if n > 1 else 0
    for i in range(n):
        if arg[i] >= 0 and best[i] > value:
            value = best[i]
            bi = i
            bj = arg[i]
    return value, bi, bj


@njit(parallel=True, **_JIT)
def batch_hard_terms(X, codes, margin):
    """Hardest positive and hardest negative of every anchor.

    Returns
    -------
    hp, hn : float64 arrays (N,)
        ``max_p d(a, p)`` over positives (``-inf`` if none) and
        ``min_m d(a, m)`` over negatives (``+inf`` if none).
    hp_idx, hn_idx : int64 arrays (N,)
        The attaining indices (``-1`` if none; smallest index on ties).
    """
    n = X.shape[0]
    hp = np.full(n, -np.inf)
    hn = np.full(n, np.inf)
    hp_idx = np.full(n, -1, dtype=np.int64)
    hn_idx = np.full(n, -1, dtype=np.int64)
    for a in prange(n):
        ca = codes[a]
        bp = -np.inf
        bpi = -1
        bn = np.inf
        bni = -1
        for b in range(n):
            if b == a:
                continue
            d = _dist(X, a, X, b)
            if codes[b] == ca:
                if d > bp:
                    bp = d
                    bpi = b
            else:
                if d < bn:
                    bn = d
                    bni = b
        hp[a] = bp
        hn[a] = bn
        hp_idx[a] = bpi
        hn_idx[a] = bni
    return hp, hn, hp_idx, hn_idx


@njit(parallel=True, **_JIT)
def triplet_loss_kernel(X, codes, margin):
    """Per-anchor sum of hinge terms ``[d_ap - d_am + margin]_+`` over all triplets.

    Each active term is added individually (no prefix-sum cancellation), so
    the sum is as accurate as the brute-force loop.

    Returns
    -------
    sums : float64 array (N,)
        Sum over the anchor's (p, m) pairs.
    counts : int64 array (N,)
        Number of triplets with that anchor (``n_pos * n_neg``).
    active : int64 array (N,)
        Number of triplets with a strictly positive term.
    """
    n = X.shape[0]
    sums = np.zeros(n)
    counts = np.zeros(n, dtype=np.int64)
    active = np.zeros(n, dtype=np.int64)
    for a in prange(n):
        ca = codes[a]
        pos = np.empty(n)
        neg = np.empty(n)
        npos = 0
        nneg = 0
        for b in range(n):
            if b == a:
                continue
            d = _dist(X, a, X, b)
            if codes[b] == ca:
                pos[npos] = d
                npos += 1
            else:
                neg[nneg] = d
                nneg += 1
        counts[a] = npos * nneg
        if npos == 0 or nneg == 0:
            continue
        negs = np.sort(neg[:nneg])
        s = 0.0
        act = 0
        for q in range(npos):
            t = pos[q] + margin
            # negatives with d_am < t give a positive term t - d_am
            k = np.searchsorted(negs, t)
            for r in range(k):
                s += t - negs[r]
            act += k
        sums[a] = s
        active[a] = act
    return sums, counts, active


@njit(parallel=True, **_JIT)
def separation_counts(X, codes, margin, atol):
    """Per-anchor number of violated triplets: ``d_ap + margin > d_am + atol``."""
    n = X.shape[0]
    viol = np.zeros(n, dtype=np.int64)
    for a in prange(n):
        ca = codes[a]
        pos = np.empty(n)
        neg = np.empty(n)
        npos = 0
        nneg = 0
        for b in range(n):
            if b == a:
                continue
            d = _dist(X, a, X, b)
            if codes[b] == ca:
                pos[npos] = d
                npos += 1
            else:
                neg[nneg] = d
                nneg += 1
        if npos == 0 or nneg == 0:
            continue
        negs = np.sort(neg[:nneg])
        c = 0
        for q in range(npos):
            # violated iff d_am < d_ap + margin - atol, evaluated as written
            t = pos[q] + margin
            lo = 0
            hi = nneg
            while lo < hi:
                mid = (lo + hi) // 2
                if t - negs[mid] > atol:
                    lo = mid + 1
                else:
                    hi = mid
            c += lo
        viol[a] = c
    return viol


@njit(parallel=True, **_JIT)
def isometric_error_kernel(X1, X2):
    """``max_{i<j} |d1(i,j) - d2(i,j)|`` and a pair attaining it."""
    n = X1.shape[0]
    best = np.full(n, -1.0)
    arg = np.full(n, -1, dtype=np.int64)
    for i in prange(n):
        b = -1.0
        bj = -1
        for j in range(i + 1, n):
            e = abs(_dist(X1, i, X1, j) - _dist(X2, i, X2, j))
            if e > b:
                b = e
                bj = j
        best[i] = b
        arg[i] = bj
    value = -1.0
    bi = 0
    bj = 1
    for i in range(n):
        if arg[i] >= 0 and best[i] > value:
            value = best[i]
            bi = i
            bj = arg[i]
    return value, bi, bj


@njit(**_JIT)
def pointwise_kernel(X1, X2):
    """``max_k ||X1_k - X2_k||`` and an index attaining it."""
    value = -1.0
    arg = 0
    for k in range(X1.shape[0]):
        d = _dist(X1, k, X2, k)
        if d > value:
            value = d
            arg = k
    return value, arg


@njit(parallel=True, **_JIT)
def classwise_directed_kernel(X1, X2, codes):
    """``max_k min_{l: codes[l] == codes[k]} ||X1_k - X2_l||`` with its witnesses."""
    n = X1.shape[0]
    best = np.zeros(n)
    arg = np.full(n, -1, dtype=np.int64)
    for k in prange(n):
        ck = codes[k]
        b = np.inf
        bl = -1
        for l in range(n):
            if codes[l] != ck:
                continue
            d = _dist(X1, k, X2, l)
            if d < b:
                b = d
                bl = l
        best[k] = b
        arg[k] = bl
    value = -1.0
    bk = 0
    for k in range(n):
        if best[k] > value:
            value = best[k]
            bk = k
    return value, bk, arg[bk]


@njit(parallel=True, **_JIT)
def pair_loss_kernel(X, codes, pos_threshold, neg_threshold):
    """Pairwise hinge terms over all pairs ``i < j``.

    Positive pairs (same class) contribute ``[d - pos_threshold]_+``, negative
    pairs ``[neg_threshold - d]_+``.

    Returns
    -------
    sums : float64 array (N,)
        Per-row sum over ``j > i``.
    best : float64 array (N,)
        Per-row largest term.
    arg : int64 array (N,)
        Per-row ``j`` attaining it (``-1`` if the row has no pair).
    active : int64 array (N,)
        Per-row number of strictly positive terms.
    """
    n = X.shape[0]
    sums = np.zeros(n)
    best = np.full(n, -1.0)
    arg = np.full(n, -1, dtype=np.int64)
    active = np.zeros(n, dtype=np.int64)
    for i in prange(n):
        s = 0.0
        b = -1.0
        bj = -1
        act = 0
        for j in range(i + 1, n):
            d = _dist(X, i, X, j)
            if codes[i] == codes[j]:
                t = d - pos_threshold
            else:
                t = neg_threshold - d
            if t < 0.0:
                t = 0.0
            if t > 0.0:
                act += 1
            s += t
            if t > b:
                b = t
                bj = j
        sums[i] = s
        best[i] = b
        arg[i] = bj
        active[i] = act
    return sums, best, arg, active


# ---------------------------------------------------------------------------
# Minimum enclosing ball (Badoiu-Clarkson / Yildirim Frank-Wolfe with away
# steps on the dual, over a working set grown by farthest-point violators).
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _meb_dual_fw(Y, idx, u, max_iter, eps):
    """Frank-Wolfe with away steps on the MEB dual restricted to rows ``idx``.

    Maximises ``Phi(u) = sum_i u_i |y_i|^2 - |sum_i u_i y_i|^2`` over the
    simplex (Yildirim 2008, Algorithm 2).  ``u`` (length ``len(idx)``) is
    updated in place.  Returns the centre and the number of iterations.
    """
    m = idx.shape[0]
    n = Y.shape[1]
    sq = np.empty(m)
    for i in range(m):
        s = 0.0
        for k in range(n):
            s += Y[idx[i], k] * Y[idx[i], k]
        sq[i] = s
    c = np.zeros(n)
    s_w = 0.0
    for i in range(m):
        if u[i] > 0.0:
            s_w += u[i] * sq[i]
            for k in range(n):
                c[k] += u[i] * Y[idx[i], k]
    dist2 = np.empty(m)
    it = 0
    target = (1.0 + eps) ** 2 - 1.0
    while it < max_iter:
        cc = 0.0
        for k in range(n):
            cc += c[k] * c[k]
        gamma = s_w - cc
        for i in range(m):
            s = 0.0
            for k in range(n):
                t = Y[idx[i], k] - c[k]
                s += t * t
            dist2[i] = s
        kap = 0
        for i in range(1, m):
            if dist2[i] > dist2[kap]:
                kap = i
        zeta = -1
        for i in range(m):
            if u[i] > 0.0 and (zeta < 0 or dist2[i] < dist2[zeta]):
                zeta = i
        if gamma <= 0.0:
            # all weight on coincident points: move towards the farthest one
            if dist2[kap] == 0.0:
                break
            gamma = 1e-300
        dplus = dist2[kap] / gamma - 1.0
        dminus = 1.0 - dist2[zeta] / gamma
        if max(dplus, dminus) <= target:
            break
        if dplus > dminus:
            lam = dplus / (2.0 * (1.0 + dplus))
            for i in range(m):
                u[i] *= 1.0 - lam
            u[kap] += lam
            for k in range(n):
                c[k] = (1.0 - lam) * c[k] + lam * Y[idx[kap], k]
            s_w = (1.0 - lam) * s_w + lam * sq[kap]
        else:
            uz = u[zeta]
            if uz >= 1.0:
                break
            # dminus == 1 when a weighted point sits exactly at the centre:
            # then the line search is unbounded and the step is clipped
            if dminus >= 1.0:
                lam = uz / (1.0 - uz)
            else:
                lam = min(dminus / (2.0 * (1.0 - dminus)), uz / (1.0 - uz))
            for i in range(m):
                u[i] *= 1.0 + lam
            u[zeta] -= lam
            if u[zeta] < 1e-300:
                u[zeta] = 0.0
            for k in range(n):
                c[k] = (1.0 + lam) * c[k] - lam * Y[idx[zeta], k]
            s_w = (1.0 + lam) * s_w - lam * sq[zeta]
        it += 1
    return c, it


@njit(parallel=True, **_JIT)
def farthest_from(Y, c):
    """Distances of every row of ``Y`` from the point ``c``; returns (max, argmax)."""
    n = Y.shape[0]
    d = np.empty(n)
    for i in prange(n):
        s = 0.0
        for k in range(Y.shape[1]):
            t = Y[i, k] - c[k]
            s += t * t
        d[i] = np.sqrt(s)
    best = 0
    for i in range(1, n):
        if d[i] > d[best]:
            best = i
    return d[best], best
