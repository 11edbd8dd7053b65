"""Kernels of the collapse statistics of :mod:`isoapprox.diagnostics`.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.stats``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._progress import run_kernel
from . import JIT
from .distances import TA, TJ, rows_dist, sq_dist, tile_dist, tile_sq
from .losses import hinge_against_sorted, hinge_sorted_negatives, prefix_gaps, suffix_gaps

__all__ = [
    "CB",
    "RB",
    "alignment_rows",
    "anchor_pass",
    "nearest_other",
    "pair_collect",
    "pair_histogram",
    "pair_sweep",
    "threshold_components",
    "uniformity_blocks",
]

#: rows per distance tile
RB = TA
#: columns per distance tile
CB = TJ


def _watched(kernel, args, n_slots, desc, half=True):
    """``kernel(*args, ctl)`` over the row blocks of ``args[0]`` (pairs of them in a
    half sweep), watched when long (progress on request, Ctrl-C stops it)."""
    N, n = args[0].shape
    nb = (N + RB - 1) // RB
    if half:
        return run_kernel(kernel, args, n_slots=n_slots, units=(nb + 1) // 2,
                          work=0.5 * N**2 * n, desc=desc)
    return run_kernel(kernel, args, n_slots=n_slots, units=nb, work=float(N) ** 2 * n, desc=desc)


@njit(**JIT)
def _unit_rows(q, side, N):
    """Row block handled by side ``side`` (0 or 1) of half-sweep unit ``q`` over ``N``
    points, its first row and its number of rows: ``(blk, i0, nr)``, ``blk = -1`` if none."""
    blk = q
    if side == 1:
        blk = (N + RB - 1) // RB - 1 - q
        if blk == q:
            return -1, 0, 0
    i0 = blk * RB
    return blk, i0, min(RB, N - i0)


@njit(inline="always", **JIT)
def _bin(d, lo, hi, scale, n_bins):
    """Histogram bin of the distance ``d`` (as in :func:`_pair_sweep`); -1 outside ``[lo, hi]``."""
    if d < lo or d > hi:
        return -1
    return min(int((d - lo) * scale), n_bins - 1)


@njit(parallel=True, **JIT)
def _pair_sweep(X, XT, lo, hi, scale, n_bins, h, n_chunks, ctl):
    """Histogram of the pair distances in ``[lo, hi]`` and single linkage at ``h``, one half sweep.

    Over the pairs ``i < j`` (each unordered pair once):

    - the histogram of the distances ``d(i, j)`` that lie in ``[lo, hi]``;
      bin of ``d``: ``min(int((d - lo) * scale), n_bins - 1)`` (monotone in
      ``d``, so bins are ordered, disjoint intervals of values);
    - the connected components of the graph ``d(i, j) <= h`` (single linkage
      cut at height ``h``; none joined for ``h < 0``): each chunk joins the
      pairs it sees in its own union-find forest (``n_chunks x N``
      integers), then the forests are joined on the calling thread.  Unions
      put the larger root under the smaller, so the root of a set is its
      least index: ``labels[i]`` is the least index of ``i``'s component,
      whatever the chunking.

    Returns
    -------
    counts : int64 (n_chunks, n_bins)
        Per-chunk counts (their column sums are the histogram).
    mins, maxs : float64 (n_bins,)
        Least and largest value in each bin (``inf`` / ``-inf`` if empty).
    block_sums : float64 (nb,)
        Per row block, the sum of its in-range distances (fixed order).
    labels : int64 (N,)
        Component labels at ``h``.
    """
    N = X.shape[0]
    nb = (N + RB - 1) // RB
    n_units = (nb + 1) // 2
    counts = np.zeros((n_chunks, n_bins), dtype=np.int64)
    cmins = np.full((n_chunks, n_bins), np.inf)
    cmaxs = np.full((n_chunks, n_bins), -np.inf)
    block_sums = np.zeros(nb)
    parents = np.empty((n_chunks, N), dtype=np.int64)
    for ch in prange(n_chunks):
        parent = parents[ch]
        for i in range(N):
            parent[i] = i
        acc = np.empty((RB, CB))
        for q in range(ch, n_units, n_chunks):
            if ctl[0] != 0:
                break
            for side in range(2):
                blk, i0, nr = _unit_rows(q, side, N)
                if blk < 0:
                    continue
                s = 0.0
                for j0 in range(i0, N, CB):
                    nc = min(CB, N - j0)
                    tile_dist(X, XT, i0, nr, j0, nc, acc)
                    for r in range(nr):
                        # pairs i < j only: on the diagonal tile, start past i
                        for c in range(max(0, i0 + r + 1 - j0), nc):
                            d = acc[r, c]
                            if d <= h:
                                _union(parent, i0 + r, j0 + c)
                            k = _bin(d, lo, hi, scale, n_bins)
                            if k < 0:
                                continue
                            s += d
                            counts[ch, k] += 1
                            if d < cmins[ch, k]:
                                cmins[ch, k] = d
                            if d > cmaxs[ch, k]:
                                cmaxs[ch, k] = d
                block_sums[blk] = s
            ctl[1 + ch] += 1
    mins = np.full(n_bins, np.inf)
    maxs = np.full(n_bins, -np.inf)
    for ch in range(n_chunks):
        for k in range(n_bins):
            mins[k] = min(mins[k], cmins[ch, k])
            maxs[k] = max(maxs[k], cmaxs[ch, k])
    root = parents[0].copy()
    for ch in range(1, n_chunks):
        p = parents[ch]
        for i in range(N):
            if p[i] != i:
                _union(root, i, p[i])
    labels = np.empty(N, dtype=np.int64)
    for i in range(N):
        labels[i] = _find(root, i)
    return counts, mins, maxs, block_sums, labels


def pair_sweep(X, XT, lo, hi, scale, n_bins, h, n_chunks):
    """:func:`_pair_sweep`, watched when long (progress on request, Ctrl-C stops it)."""
    return _watched(_pair_sweep, (X, XT, lo, hi, scale, n_bins, h, n_chunks), n_chunks,
                    "pair distances")


def pair_histogram(X, XT, lo, hi, scale, n_bins, n_chunks):
    """The histogram of :func:`pair_sweep` alone: ``(counts, mins, maxs, block_sums)``."""
    return pair_sweep(X, XT, lo, hi, scale, n_bins, -1.0, n_chunks)[:4]


def threshold_components(X, XT, h, n_chunks):
    """Connected components of the graph ``d(i, j) <= h`` (single linkage cut at ``h``):
    the ``labels`` of :func:`pair_sweep` with an empty histogram range."""
    return pair_sweep(X, XT, 0.0, -1.0, 1.0, 1, h, n_chunks)[4]


@njit(parallel=True, **JIT)
def _pair_collect(X, XT, lo, hi, scale, n_bins, mask, offsets, total, ctl):
    """Every pair distance in ``[lo, hi]`` whose bin (as in :func:`pair_histogram`) is masked.

    ``offsets[ch]`` is where chunk ``ch`` starts writing: the per-chunk
    counts of :func:`pair_histogram` (same arguments, same chunking) give
    them exactly.  ``len(offsets) == n_chunks + 1`` and ``offsets[-1] ==
    total``.  The output order depends on the chunking; callers sort it.
    """
    N = X.shape[0]
    nb = (N + RB - 1) // RB
    n_units = (nb + 1) // 2
    n_chunks = offsets.shape[0] - 1
    out = np.empty(total)
    for ch in prange(n_chunks):
        acc = np.empty((RB, CB))
        pos = offsets[ch]
        for q in range(ch, n_units, n_chunks):
            if ctl[0] != 0:
                break
            for side in range(2):
                blk, i0, nr = _unit_rows(q, side, N)
                if blk < 0:
                    continue
                for j0 in range(i0, N, CB):
                    nc = min(CB, N - j0)
                    tile_dist(X, XT, i0, nr, j0, nc, acc)
                    for r in range(nr):
                        for c in range(max(0, i0 + r + 1 - j0), nc):
                            d = acc[r, c]
                            k = _bin(d, lo, hi, scale, n_bins)
                            if k >= 0 and mask[k]:
                                out[pos] = d
                                pos += 1
            ctl[1 + ch] += 1
    return out


def pair_collect(X, XT, lo, hi, scale, n_bins, mask, offsets, total):
    """:func:`_pair_collect`, watched when long (progress on request, Ctrl-C stops it)."""
    return _watched(_pair_collect, (X, XT, lo, hi, scale, n_bins, mask, offsets, total),
                    offsets.shape[0] - 1, "collecting pair distances")


@njit(parallel=True, **JIT)
def _uniformity_blocks(Z, ZT, t, n_chunks, ctl):
    """Per row block, a log-sum-exp partial of ``-t ||z_i - z_j||^2`` over ``i < j``.

    Returns ``(M, S)`` arrays of length ``nb``: block ``b`` holds
    ``sum exp(s - M[b]) = S[b]`` over its pairs, with ``M[b]`` the largest
    exponent ``s`` (``-inf`` and ``0`` for a block without pairs).  Every
    term is ``<= 1`` and the largest is exactly 1, so nothing overflows and
    the sum never underflows to 0.
    """
    N = Z.shape[0]
    nb = (N + RB - 1) // RB
    n_units = (nb + 1) // 2
    Ms = np.full(nb, -np.inf)
    Ss = np.zeros(nb)
    for ch in prange(n_chunks):
        acc = np.empty((RB, CB))
        for q in range(ch, n_units, n_chunks):
            if ctl[0] != 0:
                break
            for side in range(2):
                blk, i0, nr = _unit_rows(q, side, N)
                if blk < 0:
                    continue
                M = -np.inf
                S = 0.0
                for j0 in range(i0, N, CB):
                    nc = min(CB, N - j0)
                    tile_sq(Z, ZT, i0, nr, j0, nc, acc)
                    for r in range(nr):
                        for c in range(max(0, i0 + r + 1 - j0), nc):
                            s = -t * acc[r, c]
                            if s > M:
                                S = S * np.exp(M - s) + 1.0
                                M = s
                            else:
                                S += np.exp(s - M)
                Ms[blk] = M
                Ss[blk] = S
            ctl[1 + ch] += 1
    return Ms, Ss


def uniformity_blocks(Z, ZT, t, n_chunks):
    """:func:`_uniformity_blocks`, watched when long (progress on request, Ctrl-C stops it)."""
    return _watched(_uniformity_blocks, (Z, ZT, t, n_chunks), n_chunks, "uniformity")


@njit(parallel=True, **JIT)
def _anchor_pass(X, XT, codes, members, starts, margin, atol, n_chunks, ctl):
    """One sweep over every anchor's full row of distances.

    ``members`` lists the row indices class by class (increasing within a
    class) and ``starts[c] .. starts[c + 1]`` delimits class ``c`` in it.
    For anchor ``a`` (positives: same code, ``b != a``; negatives: other
    codes) it returns, in per-anchor slots:

    - ``hp, hn``: hardest positive ``max_p d(a, p)`` (``-inf`` if none) and
      hardest negative ``min_m d(a, m)`` (``+inf`` if none), with indices
      ``hp_idx, hn_idx`` (``-1`` if none, smallest index on ties);
    - ``far, far_idx``: ``max_{b != a} d(a, b)`` and the smallest ``b``
      attaining it (``-1`` when ``N == 1``);
    - ``near``: ``min_{b != a} d(a, b)`` (``inf`` when ``N == 1``);
    - ``active``: the number of triplets ``(a, p, m)`` with
      ``d(a, m) < d(a, p) + margin`` (a strictly positive hinge term);
    - ``violated``: the number with ``(d(a, p) + margin) - d(a, m) > atol``;
    - ``hinge``: the triplet loss's sum ``sum_{p, m} [d(a, p) + margin - d(a, m)]_+``
      (``0`` without a positive or a negative).

    The counts sort the positives shifted by the margin and test every
    negative against them (a linear scan for a few positives, else a binary
    search; a negative beyond the largest shifted positive is skipped at
    once); when the anchor's class outnumbers the rest, the negatives are
    sorted instead.  ``O(N log min(n_pos, n_neg))`` per anchor after the
    distances, however many triplets are active (the hinge sums by
    :func:`isoapprox.kernels.losses.hinge_against_sorted`).
    """
    N = X.shape[0]
    nb = (N + RB - 1) // RB
    hp = np.full(N, -np.inf)
    hn = np.full(N, np.inf)
    hp_idx = np.full(N, -1, dtype=np.int64)
    hn_idx = np.full(N, -1, dtype=np.int64)
    far = np.full(N, -np.inf)
    far_idx = np.full(N, -1, dtype=np.int64)
    near = np.full(N, np.inf)
    active = np.zeros(N, dtype=np.int64)
    violated = np.zeros(N, dtype=np.int64)
    hinge = np.zeros(N)
    for ch in prange(n_chunks):
        acc = np.empty((RB, CB))
        D = np.empty((RB, N))
        pos = np.empty(N)
        neg = np.empty(N)
        gaps = np.empty(N)
        for blk in range(ch, nb, n_chunks):
            if ctl[0] != 0:
                break
            i0 = blk * RB
            nr = min(RB, N - i0)
            rows_dist(X, XT, i0, i0 + nr, acc, D)
            for r in range(nr):
                a = i0 + r
                ca = codes[a]
                Drow = D[r]
                # positives, from the class's member list (increasing indices)
                bp = -np.inf
                bpi = -1
                npos = 0
                for t in range(starts[ca], starts[ca + 1]):
                    b = members[t]
                    if b == a:
                        continue
                    d = Drow[b]
                    pos[npos] = d + margin
                    npos += 1
                    if d > bp:
                        bp = d
                        bpi = b
                nneg = N - (starts[ca + 1] - starts[ca])
                by_pos = npos <= nneg
                if by_pos and npos > 0:
                    pos[:npos].sort()
                    suffix_gaps(pos, npos, gaps)
                tmax = pos[npos - 1] if (by_pos and npos > 0) else np.inf
                bn = np.inf
                bni = -1
                bf = -np.inf
                bfi = -1
                bnear = np.inf
                act = 0
                vio = 0
                hs = 0.0
                k = 0
                for b in range(N):
                    if b == a:
                        continue
                    d = Drow[b]
                    if d > bf:
                        bf = d
                        bfi = b
                    if d < bnear:
                        bnear = d
                    if codes[b] == ca:
                        continue
                    if d < bn:
                        bn = d
                        bni = b
                    if npos == 0:
                        continue
                    if by_pos:
                        # with atol >= 0, a negative at or beyond every shifted
                        # positive is neither active nor violated
                        if d >= tmax:
                            continue
                        x, z, h = hinge_against_sorted(pos, gaps, npos, d, atol)
                        act += x
                        vio += z
                        hs += h
                    else:
                        neg[k] = d
                        k += 1
                if npos > 0 and not by_pos:
                    vs = np.sort(neg[:k])
                    prefix_gaps(vs, k, gaps)
                    act, vio, hs = hinge_sorted_negatives(pos, npos, vs, gaps, k, atol)
                hp[a] = bp
                hn[a] = bn
                hp_idx[a] = bpi
                hn_idx[a] = bni
                far[a] = bf
                far_idx[a] = bfi
                near[a] = bnear
                if npos > 0 and nneg > 0:
                    active[a] = act
                    violated[a] = vio
                    hinge[a] = hs
            ctl[1 + ch] += 1
    return hp, hn, hp_idx, hn_idx, far, far_idx, near, active, violated, hinge


def anchor_pass(X, XT, codes, members, starts, margin, atol, n_chunks):
    """:func:`_anchor_pass`, watched when long (progress on request, Ctrl-C stops it)."""
    return _watched(_anchor_pass, (X, XT, codes, members, starts, margin, atol, n_chunks),
                    n_chunks, "anchor sweep", half=False)


@njit(parallel=True, **JIT)
def _nearest_other(X, XT, n_chunks, ctl):
    """For every row, the distance to the nearest *other* row and its index (smallest on ties)."""
    N = X.shape[0]
    nb = (N + RB - 1) // RB
    best = np.full(N, np.inf)
    arg = np.full(N, -1, dtype=np.int64)
    for ch in prange(n_chunks):
        acc = np.empty((RB, CB))
        for blk in range(ch, nb, n_chunks):
            if ctl[0] != 0:
                break
            i0 = blk * RB
            nr = min(RB, N - i0)
            for j0 in range(0, N, CB):
                nc = min(CB, N - j0)
                tile_dist(X, XT, i0, nr, j0, nc, acc)
                for r in range(nr):
                    i = i0 + r
                    for c in range(nc):
                        j = j0 + c
                        if j == i:
                            continue
                        d = acc[r, c]
                        if d < best[i]:
                            best[i] = d
                            arg[i] = j
            ctl[1 + ch] += 1
    return best, arg


def nearest_other(X, XT, n_chunks):
    """:func:`_nearest_other`, watched when long (progress on request, Ctrl-C stops it)."""
    return _watched(_nearest_other, (X, XT, n_chunks), n_chunks, "nearest neighbours",
                    half=False)


@njit(parallel=True, **JIT)
def alignment_rows(Z, ends, alpha):
    """Per row ``i``, ``sum_{i < j < ends[i]} ||z_i - z_j||^alpha``.

    Rows of one group are contiguous and ``ends[i]`` is one past the last
    row of ``i``'s group.  ``alpha == 2`` uses the squared distance as summed
    (no square root and re-squaring), ``alpha == 1`` its square root, other
    values ``s ** (alpha / 2)``.
    """
    N = Z.shape[0]
    out = np.zeros(N)
    half = alpha / 2.0
    for i in prange(N):
        s_row = 0.0
        for j in range(i + 1, ends[i]):
            s = sq_dist(Z, i, Z, j)
            if alpha == 2.0:
                s_row += s
            elif alpha == 1.0:
                s_row += np.sqrt(s)
            else:
                s_row += s**half
        out[i] = s_row
    return out


@njit(**JIT)
def _find(parent, i):
    """Root of ``i`` in the forest ``parent`` (path halving; roots are set minima)."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(**JIT)
def _union(parent, i, j):
    """Join the sets of ``i`` and ``j``: the larger root goes under the smaller."""
    ri = _find(parent, i)
    rj = _find(parent, j)
    if ri < rj:
        parent[rj] = ri
    elif rj < ri:
        parent[ri] = rj


