"""The Hausdorff distance between point sets: early break on distance tiles, and a grid.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.hausdorff``.

The directed distance ``h(A, B) = max_a min_b ||a - b||`` is found by one of
two exact engines, both returning the squared distance of a pair that
attains it (squares of direct differences, as :func:`.distances.dist`):

* **early break** (Taha and Hanbury, 2015), :func:`_tile_break`: the scan
  of ``B`` for a point ``a`` stops at the first ``b`` closer than the
  largest nearest distance found so far (``a`` cannot raise the maximum),
  so most points of ``A`` cost a few distances.  ``B`` in a fixed random
  order, ``A`` in one too after the :data:`~.distances.TA` points farthest
  from the mean of ``B`` (their nearest distances set a high maximum
  early); :data:`~.distances.TA` points scan ``B`` together in tiles of
  :data:`TILE_WIDTH` columns (:func:`.distances.tile_sq`, vectorised).
* **grid** (``n <= 3``), :func:`_grid_engine`: ``B`` sorted into cells of a
  uniform grid of about :data:`GRID_POINTS_PER_CELL` points each; for ``a``
  the cells are visited in rings of growing Chebyshev radius about its own,
  stopping at the first ``b`` closer than the running maximum, or when the
  next ring is farther than the nearest ``b`` found (then that distance is
  exact).  :data:`GRID_SEEDS` points in the fixed random order first, then
  every point of ``A`` in cell order, each starting from the nearest point
  of the one before (mostly closer than the maximum already: one distance).

Which engine runs is :func:`directed`'s choice, by ``n`` and ``|B|`` only
(:data:`GRID_MAX_DIM`, :data:`GRID_MIN_POINTS`).  The value does not depend
on the engine, the visiting orders or the tile width (a point attaining the
maximum never stops early, and every nearest distance that can decide it is
exact): only the work does, and, among ties, which pair is returned.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from . import JIT
from .distances import TA, TJ, sq_dist, tile_sq

__all__ = [
    "GRID_MAX_DIM",
    "GRID_MIN_POINTS",
    "GRID_POINTS_PER_CELL",
    "GRID_SEEDS",
    "PROBES",
    "TILE_WIDTH",
    "classwise_directed",
    "directed",
]

#: the grid runs up to this dimension
GRID_MAX_DIM = 3
#: ... and for sets ``B`` of at least this many points (below, the early break wins)
GRID_MIN_POINTS = 256
#: points of ``B`` per cell of the grid on average
GRID_POINTS_PER_CELL = 4.0
#: the visiting order's seed (any fixed seed: the order changes the time, not the value)
ORDER_SEED = 0x5EED
#: points of ``A`` searched first in the fixed random order (a typical maximum
#: early), before the rest in the grid's cell order
GRID_SEEDS = 64
#: columns of ``B`` per distance tile of the early break (at most ``TJ``; from
#: about 17 columns on the tile loop is vectorised, and wider tiles compute more
#: distances past a break: 24 was the fastest of 16-64 at 10,000 x 32)
TILE_WIDTH = 24
#: distances to single points of ``B`` that a point of ``A`` tries before it takes
#: a slot of the tiles: when the maximum is high most points stop at the first
#: (1,000 x 128: 0.8x the time without; 1 did better than 2, 4 or 8)
PROBES = 1
#: the grid's ring bound is lowered by this relative amount, so that the rounding
#: of the cell assignment never stops a search before its nearest point
_RING_RTOL = 1e-9


@njit(**JIT)
def _far_first(A, B, pa, k):
    """The order ``pa`` with the ``k`` points of ``A`` farthest from the mean of ``B``
    moved to the front (largest first, ties by index): their nearest
    distances are typically among the largest, so the running maximum of the early
    break starts near its final value."""
    NA, n = A.shape
    NB = B.shape[0]
    mu = np.zeros(n)
    for j in range(NB):
        for d in range(n):
            mu[d] += B[j, d]
    for d in range(n):
        mu[d] /= NB
    k = min(k, NA)
    top = np.full(k, -1, dtype=np.int64)
    topd = np.full(k, -1.0)
    for i in range(NA):
        s = 0.0
        for d in range(n):
            u = A[i, d] - mu[d]
            s += u * u
        if s > topd[k - 1]:
            q = k - 1
            while q > 0 and s > topd[q - 1]:
                topd[q] = topd[q - 1]
                top[q] = top[q - 1]
                q -= 1
            topd[q] = s
            top[q] = i
    out = np.empty(NA, dtype=np.int64)
    taken = np.zeros(NA, dtype=np.bool_)
    for q in range(k):
        out[q] = top[q]
        taken[top[q]] = True
    q = k
    for t in range(NA):
        if not taken[pa[t]]:
            out[q] = pa[t]
            q += 1
    return out


@njit(**JIT)
def _tile_break(A, pa, B, pb, width):
    """``max_a min_b ||a - b||^2`` by the early break on distance tiles; returns
    (value, i, j) with ``A[i]``, ``B[j]`` a pair attaining it.

    :data:`~.distances.TA` points of ``A`` (taken in the order ``pa``) sit in
    slots and scan ``B`` (in the order ``pb``, transposed) together, ``width``
    columns at a time, by :func:`.distances.tile_sq` (each entry summed as
    :func:`.distances.sq_dist` sums it, so bit-identical to it).  Each slot
    reads its row of the tile in column order: it stops at the first distance
    below the running maximum ``cmax`` (its point cannot raise it), or after
    one whole cycle over ``B`` (its minimum is then exact and may raise
    ``cmax``); either way the next point of ``A`` takes the slot and starts
    at the next columns, cycling through ``B`` (unless its distances to the
    first :data:`PROBES` of those columns, one by one, already stop it).
    The value does not depend on
    this order (a point attaining the maximum never stops early); only the
    work and, among ties, the pair returned do.
    """
    NA, n = A.shape
    NB = B.shape[0]
    nblk = (NB + width - 1) // width
    # B in the order pb, transposed by blocks of `width` columns: a tile reads
    # one contiguous (n, width) block
    BT = np.zeros((nblk, n, width))
    for b in range(nblk):
        blk = BT[b]
        j0 = b * width
        for k in range(n):
            for c in range(min(width, NB - j0)):
                blk[k, c] = B[pb[j0 + c], k]
    S = np.empty((TA, n))
    acc = np.empty((TA, TJ))
    who = np.full(TA, -1, dtype=np.int64)
    seen = np.zeros(TA, dtype=np.int64)
    cmin = np.full(TA, np.inf)
    arg = np.zeros(TA, dtype=np.int64)
    cmax = -1.0
    ia = 0
    jb = 0
    nxt = 0
    active = 0
    for r in range(TA):
        if nxt < NA:
            who[r] = pa[nxt]
            for k in range(n):
                S[r, k] = A[pa[nxt], k]
            nxt += 1
            active += 1
        else:
            for k in range(n):
                S[r, k] = S[0, k]
    b = 0
    while active > 0:
        c0 = b * width
        nc = min(width, NB - c0)
        tile_sq(S, BT[b], 0, TA, 0, nc, acc)
        for r in range(TA):
            if who[r] < 0:
                continue
            row = acc[r, :nc]
            m = cmin[r]
            # nothing to do in this row unless some entry is below cmax or cmin
            thr = max(m, cmax)
            hits = 0
            for c in range(nc):
                hits += row[c] < thr
            done = False
            if hits > 0:
                mj = arg[r]
                for c in range(nc):
                    d = row[c]
                    if d < cmax:
                        done = True
                        break
                    if d < m:
                        m = d
                        mj = c0 + c
                cmin[r] = m
                arg[r] = mj
            if not done:
                seen[r] += nc
                if seen[r] >= NB:
                    done = True
                    if m > cmax:
                        cmax = m
                        ia = who[r]
                        jb = pb[arg[r]]
            if done:
                # the next point that a few single distances do not settle
                j0 = ((b + 1) % nblk) * width
                nprobe = min(PROBES, NB - j0)
                who[r] = -1
                while nxt < NA:
                    i = pa[nxt]
                    nxt += 1
                    settled = False
                    for c in range(nprobe):
                        if sq_dist(A, i, B, pb[j0 + c]) < cmax:
                            settled = True
                            break
                    if not settled:
                        who[r] = i
                        for k in range(n):
                            S[r, k] = A[i, k]
                        seen[r] = 0
                        cmin[r] = np.inf
                        break
                if who[r] < 0:
                    active -= 1
        b += 1
        if b == nblk:
            b = 0
    return cmax, ia, jb


@njit(**JIT)
def _cells(X, lo, inv_h, m):
    """The cell of each row of ``X`` (row-major over the ``m[0] x m[1] x m[2]`` grid)."""
    N, n = X.shape
    cell = np.empty(N, dtype=np.int64)
    for j in range(N):
        c = 0
        for d in range(3):
            k = 0
            if d < n:
                v = math.floor((X[j, d] - lo[d]) * inv_h)
                k = 0 if v < 0 else (m[d] - 1 if v > m[d] - 1 else int(v))
            c = c * m[d] + k
        cell[j] = c
    return cell


@njit(**JIT)
def _counting_sort(cell, ncell):
    """``start`` (``ncell + 1``) and the order of the rows sorted by cell (stable)."""
    N = cell.shape[0]
    start = np.zeros(ncell + 1, dtype=np.int64)
    for j in range(N):
        start[cell[j] + 1] += 1
    for c in range(ncell):
        start[c + 1] += start[c]
    pos = start[:-1].copy()
    order = np.empty(N, dtype=np.int64)
    for j in range(N):
        order[pos[cell[j]]] = j
        pos[cell[j]] += 1
    return start, order


@njit(**JIT)
def _grid_nearest(A, i, Bs, start, lo, inv_h, h, m, cmax, best, bq):
    """Nearest point of ``Bs`` to ``A[i]`` by rings of cells, from a first guess
    ``(best, bq)`` (a distance of ``A[i]`` to ``Bs[bq]``); returns (best, bq, hit)
    with ``hit`` when a point closer than ``cmax`` was found (then ``best`` is
    not the minimum)."""
    n = A.shape[1]
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
    if best < cmax:
        return best, bq, True
    rmax = max(m[0], max(m[1], m[2]))
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
                                if d < cmax:
                                    return best, bq, True
                    c2 += step
        if r >= rmax:
            return best, bq, False
        # every cell of a later ring is at least r h from a
        lb = r * h * (1.0 - _RING_RTOL)
        if r > 0 and best <= lb * lb:
            return best, bq, False
        r += 1


@njit(**JIT)
def _grid_engine(A, pa, B):
    """``max_a min_b ||a - b||^2`` over a grid of ``B``; returns (value, i, j), or
    value ``-2`` where ``B`` has no extent (no grid: the caller falls back)."""
    lo, h, m = _grid_shape(A, B)
    if h <= 0.0:
        return -2.0, 0, 0
    inv_h = 1.0 / h
    NA = A.shape[0]
    ncell = m[0] * m[1] * m[2]
    start, order = _counting_sort(_cells(B, lo, inv_h, m), ncell)
    Bs = B[order]
    # a few points in the random order ``pa`` set a typical maximum early ...
    cmax = -1.0
    ia = 0
    jb = 0
    bq = 0
    for t in range(min(NA, GRID_SEEDS)):
        i = pa[t]
        best, bq, hit = _grid_nearest(A, i, Bs, start, lo, inv_h, h, m, cmax,
                                      sq_dist(A, i, Bs, bq), bq)
        if not hit and best > cmax:
            cmax = best
            ia = i
            jb = order[bq]
    # ... then every point in cell order (a copy of A sorted by cell): the last
    # nearest point is a good first guess, mostly closer than the maximum
    _, aorder = _counting_sort(_cells(A, lo, inv_h, m), ncell)
    As = A[aorder]
    for t in range(NA):
        d0 = sq_dist(As, t, Bs, bq)
        if d0 < cmax:
            continue
        best, bq, hit = _grid_nearest(As, t, Bs, start, lo, inv_h, h, m, cmax, d0, bq)
        if not hit and best > cmax:
            cmax = best
            ia = aorder[t]
            jb = order[bq]
    return cmax, ia, jb


@functools.lru_cache(maxsize=8)
def _order(N: int) -> np.ndarray:
    """The fixed random visiting order of ``N`` points (cached, read-only: the
    classwise mode and the two directions of one call ask for the same sizes)."""
    out = np.random.default_rng(ORDER_SEED).permutation(N).astype(np.int64)
    out.flags.writeable = False
    return out


@njit(**JIT)
def _extent(X, d):
    """Least and largest ``X[:, d]`` (finite input; four rows at a time, so the
    comparisons do not wait on each other)."""
    N = X.shape[0]
    l0 = l1 = l2 = l3 = X[0, d]
    u0 = u1 = u2 = u3 = X[0, d]
    full = N - N % 4
    for j in range(0, full, 4):
        v0 = X[j, d]
        v1 = X[j + 1, d]
        v2 = X[j + 2, d]
        v3 = X[j + 3, d]
        l0 = v0 if v0 < l0 else l0
        l1 = v1 if v1 < l1 else l1
        l2 = v2 if v2 < l2 else l2
        l3 = v3 if v3 < l3 else l3
        u0 = v0 if v0 > u0 else u0
        u1 = v1 if v1 > u1 else u1
        u2 = v2 if v2 > u2 else u2
        u3 = v3 if v3 > u3 else u3
    for j in range(full, N):
        v0 = X[j, d]
        l0 = v0 if v0 < l0 else l0
        u0 = v0 if v0 > u0 else u0
    return min(min(l0, l1), min(l2, l3)), max(max(u0, u1), max(u2, u3))


@njit(**JIT)
def _grid_shape(A, B):
    """Origin (3), cell side and cells per dimension (3) of the grid of ``B`` over the
    bounding box of ``A`` and ``B``; side 0 where ``B`` has no extent."""
    NB, n = B.shape
    lo = np.zeros(3)
    hi = np.zeros(3)
    blo = np.empty(n)
    bhi = np.empty(n)
    for d in range(n):
        blo[d], bhi[d] = _extent(B, d)
        alo, ahi = _extent(A, d)
        lo[d] = min(alo, blo[d])
        hi[d] = max(ahi, bhi[d])
    logsum = 0.0
    k = 0
    for d in range(n):
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
        v, i, j = _grid_engine(A, pa, B)
        if v >= 0.0:
            return float(v), int(i), int(j)
    v, i, j = _tile_break(A, _far_first(A, B, pa, TA), B, _order(B.shape[0]), TILE_WIDTH)
    return float(v), int(i), int(j)


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
