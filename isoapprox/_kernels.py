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

The four kernels that must scale to large batches -- :func:`batch_hard_terms`,
:func:`separation_counts`, :func:`diameter_kernel` and
:func:`isometric_error_kernel` -- delegate to the blocked, vectorised
engines of :mod:`isoapprox._kernels_blocked` and are re-exported here; they
return bitwise the same values as the scalar ``_dist`` loop (see that module
for the design and the measurements behind it).

Labels reach the kernels as dense integer codes ``0 .. P-1``.  Index outputs
use ``-1`` for "none".  Ties are broken towards the smallest index so results
are deterministic.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# The four large-batch kernels live with their blocked engines (numba's
# cache is invalidated per file, so a cached caller in this file would go
# stale when the engines change).
from ._kernels_blocked import (
    SERIAL_WORK,
    batch_hard_terms,
    diameter_kernel,
    isometric_error_kernel,
    separation_counts,
)

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


def _serial_work(n_rows: int, n_cols: int, n_feat: int) -> bool:
    """Whether ``n_rows x n_cols`` pairs over ``n_feat`` features are too little for threads."""
    return float(n_rows) * float(n_cols) * float(n_feat + 8) <= SERIAL_WORK


@njit(inline="always", **_JIT)
def _dist(X, i, Y, j):
    """Euclidean distance between ``X[i]`` and ``Y[j]`` by direct differences."""
    s = 0.0
    for k in range(X.shape[1]):
        t = X[i, k] - Y[j, k]
        s += t * t
    return np.sqrt(s)


@njit(parallel=True, **_JIT)
def _pairwise_distances_kernel_par(X):
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
def _triplet_loss_kernel_par(X, codes, margin):
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
def _classwise_directed_kernel_par(X1, X2, codes):
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
def _pair_loss_kernel_par(X, codes, pos_threshold, neg_threshold):
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
def _farthest_from_par(Y, c):
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

# ---------------------------------------------------------------------------
# Size dispatch: small inputs run the same code on the calling thread.  Waking
# numba's thread pool costs more than the work for small N, and much more on a
# loaded machine (measured here: 4-9 ms per call for 8 points with 2 threads,
# against microseconds serially).  The serial twins compile the identical
# function body (``prange`` runs as ``range``), so results are the same.
# ---------------------------------------------------------------------------

_pairwise_distances_kernel_ser = njit(**_JIT)(_pairwise_distances_kernel_par.py_func)


def pairwise_distances_kernel(X):
    """Full ``(N, N)`` distance matrix; exactly symmetric with a zero diagonal."""
    if _serial_work(X.shape[0], X.shape[0], X.shape[1]):
        return _pairwise_distances_kernel_ser(X)
    return _pairwise_distances_kernel_par(X)


_triplet_loss_kernel_ser = njit(**_JIT)(_triplet_loss_kernel_par.py_func)


def triplet_loss_kernel(X, codes, margin):
    """Per-anchor sums of triplet hinge terms (see ``_triplet_loss_kernel_par``)."""
    if _serial_work(X.shape[0], X.shape[0], X.shape[1] + 8):
        return _triplet_loss_kernel_ser(X, codes, margin)
    return _triplet_loss_kernel_par(X, codes, margin)


_classwise_directed_kernel_ser = njit(**_JIT)(_classwise_directed_kernel_par.py_func)


def classwise_directed_kernel(X1, X2, codes):
    """Directed classwise Hausdorff-like distance with witnesses."""
    if _serial_work(X1.shape[0], X1.shape[0], X1.shape[1]):
        return _classwise_directed_kernel_ser(X1, X2, codes)
    return _classwise_directed_kernel_par(X1, X2, codes)


_pair_loss_kernel_ser = njit(**_JIT)(_pair_loss_kernel_par.py_func)


def pair_loss_kernel(X, codes, pos_threshold, neg_threshold):
    """Pairwise hinge terms over all pairs (see ``_pair_loss_kernel_par``)."""
    if _serial_work(X.shape[0], X.shape[0], X.shape[1]):
        return _pair_loss_kernel_ser(X, codes, pos_threshold, neg_threshold)
    return _pair_loss_kernel_par(X, codes, pos_threshold, neg_threshold)


_farthest_from_ser = njit(**_JIT)(_farthest_from_par.py_func)


def farthest_from(Y, c):
    """Distance of the farthest row of ``Y`` from ``c``, and its index."""
    if _serial_work(Y.shape[0], 1, Y.shape[1]):
        return _farthest_from_ser(Y, c)
    return _farthest_from_par(Y, c)
