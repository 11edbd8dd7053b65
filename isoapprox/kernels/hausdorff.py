"""The Hausdorff distance between point sets: early break and a grid.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.hausdorff``.

The directed distance ``h(A, B) = max_a min_b ||a - b||`` is found by one of
two exact engines, both returning the squared distance of a pair that
attains it (squares of direct differences, as :func:`.distances.dist`):

* **early break** (Taha and Hanbury, 2015): the points of ``A`` and ``B``
  in a fixed random order; the scan of ``B`` for a point ``a`` stops at the
  first ``b`` closer than the largest nearest distance found so far (``a``
  cannot raise the maximum), so most points of ``A`` cost a few distances;
* **grid** (``n <= 3``): ``B`` sorted into cells of a uniform grid of about
  :data:`GRID_POINTS_PER_CELL` points each; for ``a`` the cells are visited
  in rings of growing Chebyshev radius about its own, stopping at the first
  ``b`` closer than the running maximum, or when the next ring is farther
  than the nearest ``b`` found (then that distance is exact).

Which engine runs is :func:`directed`'s choice (:data:`GRID_MAX_DIM`,
:data:`GRID_MIN_POINTS`); both give the same value.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from . import JIT
from .distances import sq_dist

__all__ = [
    "GRID_MAX_DIM",
    "GRID_MIN_POINTS",
    "GRID_POINTS_PER_CELL",
    "classwise_directed",
    "directed",
]

#: the grid runs up to this dimension
GRID_MAX_DIM = 3
#: ... and for sets ``B`` of at least this many points (below, the early break wins)
GRID_MIN_POINTS = 256
#: points of ``B`` per cell of the grid on average
GRID_POINTS_PER_CELL = 2.0
#: the visiting order's seed (any fixed seed: the order changes the time, not the value)
ORDER_SEED = 0x5EED
#: rows of ``B`` whose distances to one point the early break sums side by side
_LANES = 4
#: the grid's ring bound is lowered by this relative amount, so that the rounding
#: of the cell assignment never stops a search before its nearest point
_RING_RTOL = 1e-9


@njit(**JIT)
def _early_break(A, B):
    """``max_a min_b ||a - b||^2`` by the early break, the rows in the order given
    (the caller shuffles them); returns (value, i, j).

    The scan of ``B`` for a point ``a`` takes :data:`_LANES` rows at a time:
    their squared distances are summed side by side (independent chains the
    processor overlaps, each in :func:`.distances.sq_dist`'s order, so each
    is bit-identical to it), then read in row order as the one-by-one scan
    reads them; at most ``_LANES - 1`` distances past a break are computed
    and ignored.
    """
    NB = B.shape[0]
    n = A.shape[1]
    full = NB - NB % _LANES
    cmax = -1.0
    ia = 0
    jb = 0
    ds = np.empty(_LANES)
    for i in range(A.shape[0]):
        cmin = np.inf
        bj = 0
        broke = False
        for j0 in range(0, full, _LANES):
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for k in range(n):
                a = A[i, k]
                t0 = a - B[j0, k]
                t1 = a - B[j0 + 1, k]
                t2 = a - B[j0 + 2, k]
                t3 = a - B[j0 + 3, k]
                s0 += t0 * t0
                s1 += t1 * t1
                s2 += t2 * t2
                s3 += t3 * t3
            ds[0] = s0
            ds[1] = s1
            ds[2] = s2
            ds[3] = s3
            for q in range(_LANES):
                d = ds[q]
                if d < cmax:
                    broke = True
                    break
                if d < cmin:
                    cmin = d
                    bj = j0 + q
            if broke:
                break
        if not broke:
            for j in range(full, NB):
                d = sq_dist(A, i, B, j)
                if d < cmax:
                    broke = True
                    break
                if d < cmin:
                    cmin = d
                    bj = j
        if not broke and cmin > cmax:
            cmax = cmin
            ia = i
            jb = bj
    return cmax, ia, jb


@njit(**JIT)
def _grid_build(B, lo, inv_h, m):
    """Counting sort of ``B`` by cell: ``start`` (cells + 1) and the sorted order."""
    NB = B.shape[0]
    ncell = m[0] * m[1] * m[2]
    cell = np.empty(NB, dtype=np.int64)
    start = np.zeros(ncell + 1, dtype=np.int64)
    n = B.shape[1]
    for j in range(NB):
        c = 0
        for d in range(3):
            k = 0
            if d < n:
                v = math.floor((B[j, d] - lo[d]) * inv_h)
                k = 0 if v < 0 else (m[d] - 1 if v > m[d] - 1 else int(v))
            c = c * m[d] + k
        cell[j] = c
        start[c + 1] += 1
    for c in range(ncell):
        start[c + 1] += start[c]
    pos = start[:-1].copy()
    order = np.empty(NB, dtype=np.int64)
    for j in range(NB):
        order[pos[cell[j]]] = j
        pos[cell[j]] += 1
    return start, order


@njit(**JIT)
def _grid_directed(A, pa, Bs, order, start, lo, inv_h, h, m):
    """``max_a min_b ||a - b||^2`` over the grid of ``Bs`` (``B`` sorted by cell)."""
    n = A.shape[1]
    cmax = -1.0
    ia = 0
    jb = 0
    rmax = max(m[0], max(m[1], m[2]))
    for t in range(pa.shape[0]):
        i = pa[t]
        k0 = k1 = k2 = 0
        for d in range(n):
            v = math.floor((A[i, d] - lo[d]) * inv_h)
            k = 0 if v < 0 else (m[d] - 1 if v > m[d] - 1 else int(v))
            if d == 0:
                k0 = k
            elif d == 1:
                k1 = k
            else:
                k2 = k
        best = np.inf
        bq = 0
        hit = False
        r = 0
        while True:
            for c0 in range(max(k0 - r, 0), min(k0 + r, m[0] - 1) + 1):
                e0 = abs(c0 - k0) == r
                for c1 in range(max(k1 - r, 0), min(k1 + r, m[1] - 1) + 1):
                    e1 = e0 or abs(c1 - k1) == r
                    lo2 = max(k2 - r, 0)
                    hi2 = min(k2 + r, m[2] - 1)
                    step = 1 if (e1 or r == 0) else 2 * r
                    c2 = lo2 if (e1 or r == 0) else k2 - r
                    while c2 <= hi2:
                        if c2 >= lo2:
                            cid = (c0 * m[1] + c1) * m[2] + c2
                            for q in range(start[cid], start[cid + 1]):
                                d = sq_dist(A, i, Bs, q)
                                if d < best:
                                    best = d
                                    bq = q
                            if best < cmax:
                                hit = True
                                break
                        c2 += step
                    if hit:
                        break
                if hit:
                    break
            if hit or r >= rmax:
                break
            # every cell of a later ring is at least r h from a
            lb = r * h * (1.0 - _RING_RTOL)
            if r > 0 and best <= lb * lb:
                break
            r += 1
        if not hit and best > cmax:
            cmax = best
            ia = i
            jb = order[bq]
    return cmax, ia, jb


@functools.lru_cache(maxsize=8)
def _cached_order(N: int) -> np.ndarray:
    out = np.random.default_rng(ORDER_SEED).permutation(N).astype(np.int64)
    out.flags.writeable = False
    return out


def _order(N: int) -> np.ndarray:
    """The fixed random visiting order of ``N`` points (cached: the classwise mode
    and the two directions of one call ask for the same sizes)."""
    return _cached_order(N)


@njit(**JIT)
def _grid_shape(A, B):
    """Origin (3), cell side and cells per dimension (3) of the grid of ``B`` over the
    bounding box of ``A`` and ``B``; side 0 where ``B`` has no extent."""
    NB, n = B.shape
    lo = np.zeros(3)
    hi = np.zeros(3)
    blo = np.full(n, np.inf)
    bhi = np.full(n, -np.inf)
    for d in range(n):
        lo[d] = np.inf
        hi[d] = -np.inf
    for j in range(NB):
        for d in range(n):
            v = B[j, d]
            blo[d] = min(blo[d], v)
            bhi[d] = max(bhi[d], v)
    for i in range(A.shape[0]):
        for d in range(n):
            v = A[i, d]
            lo[d] = min(lo[d], v)
            hi[d] = max(hi[d], v)
    logsum = 0.0
    k = 0
    for d in range(n):
        lo[d] = min(lo[d], blo[d])
        hi[d] = max(hi[d], bhi[d])
        e = bhi[d] - blo[d]
        if e > 0.0:
            logsum += math.log(e)
            k += 1
    m = np.ones(3, dtype=np.int64)
    if k == 0:
        return lo, 0.0, m
    cells = max(NB / GRID_POINTS_PER_CELL, 1.0)
    # cubic cells over the extent of B, about `cells` of them
    h = math.exp((logsum - math.log(cells)) / k)
    while True:
        total = 1
        for d in range(n):
            m[d] = max(int(math.ceil((hi[d] - lo[d]) / h)), 1)
            total *= m[d]
        if total <= 8 * NB + 8:  # far-away points of A: coarser cells
            return lo, h, m
        h *= 2.0


def directed(A: np.ndarray, B: np.ndarray) -> tuple[float, int, int]:
    """``max_a min_b ||a - b||^2`` over float64 ``(NA, n)`` and ``(NB, n)`` sets, with a
    pair ``(i, j)`` attaining it; checked, finite input (the caller rescales)."""
    NA, n = A.shape
    pa = _order(NA)
    if n <= GRID_MAX_DIM and B.shape[0] >= GRID_MIN_POINTS:
        lo, h, m = _grid_shape(A, B)
        if h > 0.0:
            inv_h = 1.0 / h
            start, order = _grid_build(B, lo, inv_h, m)
            Bs = np.ascontiguousarray(B[order])
            v, i, j = _grid_directed(A, pa, Bs, order, start, lo, inv_h, h, m)
            return float(v), int(i), int(j)
    pb = _order(B.shape[0])
    # shuffled contiguous copies: the scans read memory in order
    v, i, j = _early_break(np.ascontiguousarray(A[pa]), np.ascontiguousarray(B[pb]))
    return float(v), int(pa[i]), int(pb[j])


def classwise_directed(X1: np.ndarray, X2: np.ndarray, codes: np.ndarray,
                       n_classes: int) -> tuple[float, int, int]:
    """``max_k min_{l: codes[l] == codes[k]} ||X1_k - X2_l||^2`` with a pair attaining
    it: :func:`directed` on each class's two clouds."""
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_classes + 1))
    best, bi, bj = -1.0, 0, 0
    for c in range(n_classes):
        idx = order[bounds[c]:bounds[c + 1]]
        if idx.size == 0:
            continue
        v, i, j = directed(np.ascontiguousarray(X1[idx]), np.ascontiguousarray(X2[idx]))
        if v > best:
            best, bi, bj = v, int(idx[i]), int(idx[j])
    return best, bi, bj
