"""numba kernels of the training harness: arrays in, arrays out.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.train``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import JIT
from .distances import dist

__all__ = [
    "nearest_positive_kernel",
    "pair_grad_kernel",
    "semihard_kernel",
    "triplet_pair_counts",
]

@njit(parallel=True, **JIT)
def pair_grad_kernel(X, S):
    """Gradient of a function of the pairwise distances.

    Parameters
    ----------
    X : float64 array (N, n)
        Points.
    S : float64 array (N, N)
        Symmetric coefficients ``S[i, j] = S[j, i] = dL/dd(i, j)`` (the total
        derivative with respect to the distance of the unordered pair).

    Returns
    -------
    G : float64 array (N, n)
        ``G[i] = sum_j S[i, j] (x_i - x_j) / d(i, j)``, pairs with ``d = 0``
        contributing zero (the minimum-norm subgradient).
    """
    N, n = X.shape
    G = np.zeros((N, n))
    for i in prange(N):
        for j in range(N):
            s = S[i, j]
            if j == i or s == 0.0:
                continue
            d = dist(X, i, X, j)
            if d == 0.0:
                continue
            w = s / d
            for k in range(n):
                G[i, k] += w * (X[i, k] - X[j, k])
    return G


@njit(parallel=True, **JIT)
def triplet_pair_counts(X, codes, margin):
    """Derivative of the all-triplet hinge sum with respect to each distance.

    Returns ``C`` (N, N), with ``C[a, b]`` the derivative of
    ``sum_{(a,p,m)} [d(a,p) - d(a,m) + margin]_+`` with respect to ``d(a, b)``
    taken as the *ordered* pair seen from anchor ``a``: ``+#{m: term > 0}``
    for a positive ``b`` and ``-#{p: term > 0}`` for a negative ``b``.  A term
    is active when ``d(a,p) + margin > d(a,m)``, compared exactly as
    :func:`isoapprox.kernels.losses.triplet_loss_kernel` compares it (a term equal
    to zero is inactive: the subgradient 0 of the hinge at its kink).
    """
    N = X.shape[0]
    C = np.zeros((N, N))
    for a in prange(N):
        ca = codes[a]
        pos_t = np.empty(N)
        neg_d = np.empty(N)
        pos_i = np.empty(N, dtype=np.int64)
        neg_i = np.empty(N, dtype=np.int64)
        npos = 0
        nneg = 0
        for b in range(N):
            if b == a:
                continue
            d = dist(X, a, X, b)
            if codes[b] == ca:
                pos_t[npos] = d + margin
                pos_i[npos] = b
                npos += 1
            else:
                neg_d[nneg] = d
                neg_i[nneg] = b
                nneg += 1
        if npos == 0 or nneg == 0:
            continue
        negs = np.sort(neg_d[:nneg])
        ts = np.sort(pos_t[:npos])
        for q in range(npos):
            # negatives with d(a,m) < t are active for this positive
            C[a, pos_i[q]] = np.searchsorted(negs, pos_t[q])
        for r in range(nneg):
            # positives with t > d(a,m) are active for this negative
            C[a, neg_i[r]] = -(npos - np.searchsorted(ts, neg_d[r], side="right"))
    return C


@njit(parallel=True, **JIT)
def semihard_kernel(X, codes, offsets):
    """Semi-hard negative of every anchor-positive pair (FaceNet / TF rule).

    For each ordered positive pair ``(a, p)`` the negative is the closest
    negative strictly farther than the positive (``d(a,m) > d(a,p)``); if no
    negative is farther, the farthest negative (the fallback of
    TensorFlow's ``triplet_semihard_loss``).  Ties go to the smallest index.

    Parameters
    ----------
    X : float64 array (N, n)
    codes : int64 array (N,)
    offsets : int64 array (N + 1,)
        ``offsets[a]`` is the first output slot of anchor ``a``
        (cumulative number of positives).

    Returns
    -------
    a_idx, p_idx, m_idx : int64 arrays (T,)
        One row per ordered positive pair; ``m_idx = -1`` if the anchor has
        no negative.
    d_ap, d_am : float64 arrays (T,)
        The distances of the selected triplet.
    fallback : bool array (T,)
        True where no negative was farther than the positive.
    """
    N = X.shape[0]
    T = offsets[N]
    a_idx = np.empty(T, dtype=np.int64)
    p_idx = np.empty(T, dtype=np.int64)
    m_idx = np.full(T, -1, dtype=np.int64)
    d_ap = np.zeros(T)
    d_am = np.zeros(T)
    fallback = np.zeros(T, dtype=np.bool_)
    for a in prange(N):
        ca = codes[a]
        row = np.empty(N)
        for b in range(N):
            row[b] = dist(X, a, X, b)
        slot = offsets[a]
        for p in range(N):
            if p == a or codes[p] != ca:
                continue
            dp = row[p]
            best = np.inf
            bi = -1
            far = -1.0
            fi = -1
            for m in range(N):
                if codes[m] == ca:
                    continue
                dm = row[m]
                if dm > dp and dm < best:
                    best = dm
                    bi = m
                if dm > far:
                    far = dm
                    fi = m
            a_idx[slot] = a
            p_idx[slot] = p
            d_ap[slot] = dp
            if bi >= 0:
                m_idx[slot] = bi
                d_am[slot] = best
            elif fi >= 0:
                m_idx[slot] = fi
                d_am[slot] = far
                fallback[slot] = True
            slot += 1
    return a_idx, p_idx, m_idx, d_ap, d_am, fallback


@njit(**JIT)
def nearest_positive_kernel(X, codes):
    """Nearest same-class point of every anchor (the "easy" positive).

    Distances by ``dist`` (bitwise those of every other kernel); ties
    go to the smallest index.  Serial: with ``K`` samples per class only
    ``K - 1`` distances per anchor are computed, the rest is a label scan.

    Returns
    -------
    idx : int64 array (N,)
        The nearest positive, ``-1`` for an anchor without one.
    """
    N = X.shape[0]
    idx = np.full(N, -1, dtype=np.int64)
    for a in range(N):
        ca = codes[a]
        best = np.inf
        for b in range(N):
            if b == a or codes[b] != ca:
                continue
            d = dist(X, a, X, b)
            if idx[a] < 0 or d < best:
                best = d
                idx[a] = b
    return idx
