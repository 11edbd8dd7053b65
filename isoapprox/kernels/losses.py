"""Loss kernels: triplet and pair hinge sums, batch-hard mining, separation counts.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.losses``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._progress import run_kernel
from . import JIT
from .distances import (
    SUB,
    TA,
    TJ,
    dist,
    partition,
    rows_dist,
    serial_twin,
    serial_work,
    tile_dist,
    transpose,
)

__all__ = [
    "batch_hard_terms",
    "hinge_against_sorted",
    "hinge_sorted_negatives",
    "pair_loss_kernel",
    "separation_counts",
    "suffix_gaps",
    "prefix_gaps",
    "triplet_loss_kernel",
]

#: anchors per task in :func:`separation_counts`
_SEP_GROUP = 32
#: anchors per task in :func:`triplet_loss_kernel` (their distance rows are
#: buffered, ``_TRI_GROUP x N`` doubles per task)
_TRI_GROUP = 32
#: up to this many positives per anchor, violations are counted by a
#: vectorised pass over all points per positive; above it, by sorting
_SEP_LINEAR = 32


# ---------------------------------------------------------------------------
# All-triplet and all-pair hinge sums
# ---------------------------------------------------------------------------


#: below this many shifted positives an anchor scans them linearly instead of
#: by binary search
_LINEAR = 16


@njit(**JIT)
def suffix_gaps(ts, nt, U):
    """``U[k] = sum_{q >= k} (ts[q] - ts[k])`` for ascending ``ts[:nt]``.

    By the recurrence ``U[k] = U[k + 1] + (nt - 1 - k) (ts[k + 1] - ts[k])``,
    a sum of non-negative terms: no cancellation.
    """
    if nt == 0:
        return
    U[nt - 1] = 0.0
    for k in range(nt - 2, -1, -1):
        U[k] = U[k + 1] + (nt - 1 - k) * (ts[k + 1] - ts[k])


@njit(**JIT)
def prefix_gaps(vs, nv, W):
    """``W[j] = sum_{r <= j} (vs[j] - vs[r])`` for ascending ``vs[:nv]`` (non-negative terms)."""
    if nv == 0:
        return
    W[0] = 0.0
    for j in range(1, nv):
        W[j] = W[j - 1] + j * (vs[j] - vs[j - 1])


@njit(inline="always", **JIT)
def _first_over(ts, n, v, atol):
    """First index ``i`` of the ascending ``ts[:n]`` with ``ts[i] - v > atol``
    (``n`` if none): every later one has it too."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if ts[mid] - v > atol:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(inline="always", **JIT)
def _n_under(vs, n, t, atol):
    """Number of the ascending ``vs[:n]`` with ``t - v > atol`` (a prefix of them)."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if t - vs[mid] > atol:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**JIT)
def hinge_against_sorted(ts, U, nt, v, atol):
    """One negative distance ``v`` against ascending ``ts[:nt]`` (positives + margin).

    Returns ``#{t > v}`` (active), ``#{t - v > atol}`` (violated) and the hinge
    sum ``sum_{t > v} (t - v)``.  Up to ``_LINEAR`` positives each term is added
    as the brute force adds it; beyond, the sum is ``U[k] + (nt - k)(ts[k] - v)``
    with ``k`` the first ``t > v`` and ``U`` from :func:`suffix_gaps`: both
    parts are sums of non-negative terms, so nothing cancels.
    """
    if nt <= _LINEAR:
        act = 0
        vio = 0
        s = 0.0
        for q in range(nt):
            t = ts[q]
            if t > v:
                act += 1
                s += t - v
            if t - v > atol:
                vio += 1
        return act, vio, s
    # first t with t > v (t - v > 0 exactly when t > v)
    lo = _first_over(ts, nt, v, 0.0)
    act = nt - lo
    s = 0.0
    if lo < nt:
        s = U[lo] + act * (ts[lo] - v)
    return act, nt - _first_over(ts, nt, v, atol), s


@njit(**JIT)
def hinge_sorted_negatives(ts, nt, vs, W, nv, atol):
    """:func:`hinge_against_sorted` summed over ascending negatives ``vs[:nv]``.

    For each shifted positive ``t`` with ``k = #{v < t}`` the hinge sum is
    ``k (t - vs[k - 1]) + W[k - 1]`` (``W`` from :func:`prefix_gaps`).
    """
    active = 0
    viol = 0
    s = 0.0
    for q in range(nt):
        t = ts[q]
        # number of v with v < t (t - v > 0 exactly when v < t)
        lo = _n_under(vs, nv, t, 0.0)
        active += lo
        if lo > 0:
            s += lo * (t - vs[lo - 1]) + W[lo - 1]
        viol += _n_under(vs, nv, t, atol)
    return active, viol, s


@njit(**JIT)
def _sort_small(ts, nt):
    """Insertion sort of ``ts[:nt]`` in place (for ``nt <= _LINEAR``)."""
    for i in range(1, nt):
        x = ts[i]
        j = i - 1
        while j >= 0 and ts[j] > x:
            ts[j + 1] = ts[j]
            j -= 1
        ts[j + 1] = x


@njit(**JIT)
def _hinge_row_linear(drow, codes, ca, ts, nt, h):
    """Hinge sum and active count of one anchor's row against ascending ``ts[:nt]``.

    The sum :func:`hinge_against_sorted` gives with few positives, bit for
    bit: per negative ``b``, ``h[b] = sum_q (t_q - d_b)`` over ``t_q > d_b`` in
    ascending ``q``, then ``s = sum_b h[b]`` in increasing index order.  The
    ``h[b]`` are computed for every point at once, vectorised over ``b``,
    without branches: a term with ``t_q <= d_b``, and ``h[b]`` of a point
    that is not a negative, add ``+0.0``, which leaves a non-negative sum
    unchanged.  ``h`` is workspace of length ``N``.
    """
    N = drow.shape[0]
    for b in range(N):
        h[b] = 0.0
    act = 0
    for q in range(nt):
        t = ts[q]
        for b in range(N):
            v = drow[b]
            above = t > v
            h[b] += (t - v) if above else 0.0
            act += above & (codes[b] != ca)
    s = 0.0
    for b in range(N):
        s += h[b] if codes[b] != ca else 0.0
    return s, act


@njit(inline="always", **JIT)
def _split_row(drow, a, codes, margin, pos, neg):
    """Anchor ``a``'s shifted positives ``d + margin`` into ``pos`` and its negatives
    into ``neg``, from its distance row ``drow`` in index order; their numbers."""
    ca = codes[a]
    npos = 0
    nneg = 0
    for b in range(drow.shape[0]):
        if b == a:
            continue
        if codes[b] == ca:
            pos[npos] = drow[b] + margin
            npos += 1
        else:
            neg[nneg] = drow[b]
            nneg += 1
    return npos, nneg


@njit(**JIT)
def _triplet_group(X, XT, codes, margin, members, start, g0, sums, counts, active):
    """Hinge sums of the ``_TRI_GROUP`` anchors from ``g0`` (fewer at the end) from whole rows.

    The rows come from the tile engine (bitwise :func:`dist`).  Each anchor's
    shifted positives ``d_ap + margin`` are sorted.  With at most
    ``_LINEAR`` of them (and no more than the negatives) the row is swept
    once per positive, vectorised (:func:`_hinge_row_linear`); otherwise
    every negative is located among them (:func:`hinge_against_sorted`), or,
    when the anchor's class outnumbers the rest, the negatives are sorted
    instead (:func:`hinge_sorted_negatives`).  Every route adds a negative's
    terms in ascending order of the shifted positives and the negatives in
    increasing index order.
    """
    N = X.shape[0]
    g1 = min(N, g0 + _TRI_GROUP)
    buf = np.empty((_TRI_GROUP, N))
    acc = np.empty((TA, TJ))
    pos = np.empty(N)
    neg = np.empty(N)
    gaps = np.empty(N)
    rows_dist(X, XT, g0, g1, acc, buf)
    for a in range(g0, g1):
        drow = buf[a - g0]
        ca = codes[a]
        s0 = start[ca]
        s1 = start[ca + 1]
        npos = s1 - s0 - 1
        nneg = N - (s1 - s0)
        counts[a] = npos * nneg
        if npos <= 0 or nneg <= 0:
            continue
        if npos <= _LINEAR and npos <= nneg:
            k = 0
            for q in range(s0, s1):
                b = members[q]
                if b != a:
                    pos[k] = drow[b] + margin
                    k += 1
            _sort_small(pos, npos)
            sums[a], active[a] = _hinge_row_linear(drow, codes, ca, pos, npos, gaps)
            continue
        npos, nneg = _split_row(drow, a, codes, margin, pos, neg)
        pos[:npos].sort()
        s = 0.0
        act = 0
        if npos <= nneg:
            suffix_gaps(pos, npos, gaps)
            tmax = pos[npos - 1]
            for r in range(nneg):
                v = neg[r]
                if v >= tmax:
                    continue
                x, _, h = hinge_against_sorted(pos, gaps, npos, v, 0.0)
                act += x
                s += h
        else:
            neg[:nneg].sort()
            prefix_gaps(neg, nneg, gaps)
            act, _, s = hinge_sorted_negatives(pos, npos, neg, gaps, nneg, 0.0)
        sums[a] = s
        active[a] = act


@njit(parallel=True, **JIT)
def _triplet_loss_kernel_par(X, codes, margin):
    """Per-anchor sum of hinge terms ``[d_ap - d_am + margin]_+`` over all triplets.

    Tasks of ``_TRI_GROUP`` anchors (:func:`_triplet_group`), each with its
    own ``_TRI_GROUP x N`` row buffer and ``O(N)`` workspace:
    ``O(N log N)`` per anchor after the distances, whatever the number of
    active triplets, and no cancellation.  Every anchor's sum is computed
    by one task in a fixed order, so nothing depends on the thread count.

    Returns
    -------
    sums : float64 array (N,)
        Sum over the anchor's (p, m) pairs.
    counts : int64 array (N,)
        Number of triplets with that anchor (``n_pos * n_neg``).
    active : int64 array (N,)
        Number of triplets with a strictly positive term.
    """
    N = X.shape[0]
    XT = transpose(X)
    sums = np.zeros(N)
    counts = np.zeros(N, dtype=np.int64)
    active = np.zeros(N, dtype=np.int64)
    members, start = _class_members(codes)
    ngroups = (N + _TRI_GROUP - 1) // _TRI_GROUP
    for g in prange(ngroups):
        _triplet_group(X, XT, codes, margin, members, start, g * _TRI_GROUP, sums, counts, active)
    return sums, counts, active


@njit(parallel=True, **JIT)
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
            d = dist(X, i, X, j)
            if codes[i] == codes[j]:
                t = max(d - pos_threshold, 0.0)
            else:
                t = max(neg_threshold - d, 0.0)
            act += t > 0.0
            s += t
            if t > b:
                b = t
                bj = j
        sums[i] = s
        best[i] = b
        arg[i] = bj
        active[i] = act
    return sums, best, arg, active


_triplet_loss_kernel_ser = serial_twin(_triplet_loss_kernel_par)


def triplet_loss_kernel(X, codes, margin):
    """Per-anchor sums of triplet hinge terms (see ``_triplet_loss_kernel_par``).

    ``X`` is float64 ``(N, n)``, C-contiguous; ``codes`` int64 class codes
    ``0 .. P-1`` (as :func:`isoapprox._validation.as_labels` returns them).
    Below ``SERIAL_WORK`` the same body runs on the calling thread, so a
    small batch starts no threads.
    """
    if serial_work(X.shape[0], X.shape[0], X.shape[1] + 8):
        return _triplet_loss_kernel_ser(X, codes, margin)
    return _triplet_loss_kernel_par(X, codes, margin)


_pair_loss_kernel_ser = serial_twin(_pair_loss_kernel_par)


def pair_loss_kernel(X, codes, pos_threshold, neg_threshold):
    """Pairwise hinge terms over all pairs (see ``_pair_loss_kernel_par``)."""
    if serial_work(X.shape[0], X.shape[0], X.shape[1]):
        return _pair_loss_kernel_ser(X, codes, pos_threshold, neg_threshold)
    return _pair_loss_kernel_par(X, codes, pos_threshold, neg_threshold)


# ---------------------------------------------------------------------------
# Batch-hard mining: each unordered pair once
# ---------------------------------------------------------------------------


@njit(inline="always", **JIT)
def _offer(d, same, k, skip, bp, bpi, bn, bni):
    """Offer point ``k`` at distance ``d`` to an anchor's batch-hard state
    ``(bp, bpi, bn, bni)``: a positive (``same``) other than ``skip`` (the
    anchor) replaces a nearer one, a negative a farther one, and on a tie the
    smaller index wins.
    """
    if same:
        if d >= bp and k != skip and (d > bp or k < bpi):
            return d, k, bn, bni
    elif d <= bn and (d < bn or k < bni):
        return bp, bpi, d, k
    return bp, bpi, bn, bni


@njit(**JIT)
def _bh_pair(X, XT, codes, I, J, bs, rows, cols):
    """Batch-hard states of the anchors of block ``I`` against block ``J`` and back.

    Block ``K`` holds the points ``[K bs, min(N, (K + 1) bs))``.  ``rows``
    and ``cols`` are ``(hp, hn, hpi, hni)`` state arrays indexed by the
    global anchor index: ``rows`` for the anchors ``a`` of block ``I``,
    ``cols`` for the anchors ``b`` of block ``J`` (updated from the same
    distances, ``d(b, a) = d(a, b)``).  With ``I == J`` only ``rows`` is
    updated (the square tile holds both directions).  A state is a
    ``(value, index)`` pair improved under "better value, then smaller
    index": an order-independent reduction.
    """
    N = X.shape[0]
    i0 = I * bs
    i1 = min(N, i0 + bs)
    j0 = J * bs
    j1 = min(N, j0 + bs)
    # a run-time bool: literal True / False would compile two specialisations
    # of _bh_pair_sub
    diag = I == J
    acc = np.empty((TA, TJ))
    for s0 in range(i0, i1, SUB):
        _bh_pair_sub(
            X, XT, codes, s0, min(i1, s0 + SUB), j0, j1, diag, rows, cols, acc
        )


@njit(**JIT)
def _bh_pair_sub(X, XT, codes, i0, i1, j0, j1, diag, rows, cols, acc):
    """:func:`_bh_pair` for at most ``SUB`` rows (their ``X`` rows stay in L2)."""
    hp, hn, hpi, hni = rows
    cp, cn, cpi, cni = cols
    for c0 in range(j0, j1, TJ):
        nc = min(TJ, j1 - c0)
        for r0 in range(i0, i1, TA):
            nr = min(TA, i1 - r0)
            tile_dist(X, XT, r0, nr, c0, nc, acc)
            # rows: anchor a = r0 + r against b = c0 + j
            cod = codes[c0 : c0 + nc]
            for r in range(nr):
                a = r0 + r
                ca = codes[a]
                bp = hp[a]
                bpi = hpi[a]
                bn = hn[a]
                bni = hni[a]
                row = acc[r]
                # vectorised pre-check: anything to do in this row?
                hits = 0
                for j in range(nc):
                    hits += (row[j] <= bn) + (cod[j] == ca)
                if hits == 0:
                    continue
                for j in range(nc):
                    bp, bpi, bn, bni = _offer(row[j], cod[j] == ca, c0 + j, a, bp, bpi, bn, bni)
                hp[a] = bp
                hpi[a] = bpi
                hn[a] = bn
                hni[a] = bni
            if diag:
                continue
            # columns: anchor b = c0 + j against a = r0 + r (a != b here)
            cod = codes[r0 : r0 + nr]
            cn_c = cn[c0 : c0 + nc]
            cod_c = codes[c0 : c0 + nc]
            hits = 0
            for r in range(nr):
                row = acc[r]
                cr = cod[r]
                for j in range(nc):
                    hits += (row[j] <= cn_c[j]) + (cod_c[j] == cr)
            if hits == 0:
                continue
            for j in range(nc):
                b = c0 + j
                cb = codes[b]
                bp = cp[b]
                bpi = cpi[b]
                bn = cn[b]
                bni = cni[b]
                for r in range(nr):
                    bp, bpi, bn, bni = _offer(acc[r, j], cod[r] == cb, r0 + r, -1, bp, bpi, bn, bni)
                cp[b] = bp
                cpi[b] = bpi
                cn[b] = bn
                cni[b] = bni


@njit(**JIT)
def _bh_init(shape):
    hp = np.full(shape, -np.inf)
    hn = np.full(shape, np.inf)
    hpi = np.full(shape, -1, dtype=np.int64)
    hni = np.full(shape, -1, dtype=np.int64)
    return hp, hn, hpi, hni


@njit(**JIT)
def _bh_serial(X, codes, bs):
    """All block pairs ``I <= J`` in order, on the calling thread."""
    N = X.shape[0]
    XT = transpose(X)
    state = _bh_init(N)
    M = (N + bs - 1) // bs
    for I in range(M):
        for J in range(I, M):
            _bh_pair(X, XT, codes, I, J, bs, state, state)
    return state


@njit(parallel=True, **JIT)
def _bh_parallel(X, codes, bs, ctl):
    """All block pairs ``I <= J`` as parallel tasks in one parallel region.

    Slot ``K`` of an anchor holds its best against block ``K``; task
    ``(I, J)`` owns slots ``J`` of the anchors of ``I`` and slots ``I`` of
    the anchors of ``J``, so no two tasks write the same slot.  The ``M``
    slots are merged afterwards (``M`` state arrays of length ``N``).
    ``ctl``: stop flag ``ctl[0]``; task ``t`` adds 1 to ``ctl[1 + t]`` when
    done (:func:`isoapprox._progress.run_kernel`).
    """
    N = X.shape[0]
    XT = transpose(X)
    M = (N + bs - 1) // bs
    T = M * (M + 1) // 2
    task_i = np.empty(T, dtype=np.int64)
    task_j = np.empty(T, dtype=np.int64)
    t = 0
    for I in range(M):
        for J in range(I, M):
            task_i[t] = I
            task_j[t] = J
            t += 1
    sp, sn, spi, sni = _bh_init((M, N))
    for t in prange(T):
        if ctl[0] != 0:
            continue
        I = task_i[t]
        J = task_j[t]
        rows = (sp[J], sn[J], spi[J], sni[J])
        cols = (sp[I], sn[I], spi[I], sni[I])
        _bh_pair(X, XT, codes, I, J, bs, rows, cols)
        ctl[1 + t] += 1
    hp, hn, hpi, hni = _bh_init(N)
    for a in range(N):
        bp = hp[a]
        bpi = hpi[a]
        bn = hn[a]
        bni = hni[a]
        for K in range(M):  # the blocks' states, in block order (unset ones: index -1)
            if spi[K, a] >= 0:
                bp, bpi, bn, bni = _offer(sp[K, a], True, spi[K, a], -1, bp, bpi, bn, bni)
            if sni[K, a] >= 0:
                bp, bpi, bn, bni = _offer(sn[K, a], False, sni[K, a], -1, bp, bpi, bn, bni)
        hp[a] = bp
        hpi[a] = bpi
        hn[a] = bn
        hni[a] = bni
    return hp, hn, hpi, hni


def batch_hard_terms(X, codes, margin):
    """Hardest positive and hardest negative of every anchor.

    ``margin`` does not change the mining; it is accepted so that every
    triplet kernel has the same signature.  Each unordered pair is evaluated
    once: blocks ``I <= J`` are tasks of one parallel region (see
    :func:`_bh_parallel`), or run in order on the calling thread for small
    inputs.

    Returns
    -------
    hp, hn : float64 arrays (N,)
        ``max_p d(a, p)`` over positives (``-inf`` if none) and
        ``min_m d(a, m)`` over negatives (``+inf`` if none).
    hp_idx, hn_idx : int64 arrays (N,)
        The attaining indices (``-1`` if none; smallest index on ties).

    A Python function choosing the serial or the parallel kernel, so that a
    first call compiles only the one it runs.
    """
    N, n = X.shape
    if serial_work(N, N, n):
        return _bh_serial(X, codes, 256)
    bs, M = partition(N)
    T = M * (M + 1) // 2
    return run_kernel(_bh_parallel, (X, codes, bs), n_slots=T, units=T, work=0.5 * N * N * n,
                      desc="batch-hard sweep")


# ---------------------------------------------------------------------------
# Separation counts
# ---------------------------------------------------------------------------


@njit(**JIT)
def _class_members(codes):
    """Indices grouped by class (stable) and the start of each class's group."""
    P = 0
    for c in codes:
        P = max(P, c + 1)
    start = np.zeros(P + 1, dtype=np.int64)
    for c in codes:
        start[c + 1] += 1
    for c in range(P):
        start[c + 1] += start[c]
    fill = start[:P].copy()
    members = np.empty(codes.shape[0], dtype=np.int64)
    for i in range(codes.shape[0]):
        c = codes[i]
        members[fill[c]] = i
        fill[c] += 1
    return members, start


@njit(**JIT)
def _count_violations(drow, a, codes, margin, atol, members, start, pos, neg):
    """Triplets ``(a, p, m)`` with ``(d_ap + margin) - d_am > atol`` (as written).

    Few positives: for each, one vectorised pass over all points.  Many:
    sort the smaller of the two sides and binary-search the other,
    ``O(N log min(n_pos, n_neg))``.  ``fl(t - x)`` is monotone in ``t`` and
    in ``x``, so every route evaluates the same predicate.
    """
    N = drow.shape[0]
    ca = codes[a]
    s0 = start[ca]
    s1 = start[ca + 1]
    npos = s1 - s0 - 1
    nneg = N - (s1 - s0)
    if npos <= 0 or nneg <= 0:
        return 0
    c = 0
    if npos <= _SEP_LINEAR:
        for q in range(s0, s1):
            p = members[q]
            if p == a:
                continue
            t = drow[p] + margin
            cnt = 0
            for m in range(N):
                cnt += (codes[m] != ca) & (t - drow[m] > atol)
            c += cnt
        return c
    npos, nneg = _split_row(drow, a, codes, margin, pos, neg)
    if npos <= nneg:
        ts = np.sort(pos[:npos])
        for q in range(nneg):
            x = neg[q]
            c += npos - _first_over(ts, npos, x, atol)
    else:
        negs = np.sort(neg[:nneg])
        for q in range(npos):
            t = pos[q]
            c += _n_under(negs, nneg, t, atol)
    return c


@njit(**JIT)
def _sep_group(X, XT, codes, margin, atol, members, start, g0, viol):
    """Counts of the ``_SEP_GROUP`` anchors from ``g0`` (fewer at the end) from whole rows."""
    N = X.shape[0]
    g1 = min(N, g0 + _SEP_GROUP)
    buf = np.empty((_SEP_GROUP, N))
    acc = np.empty((TA, TJ))
    pos = np.empty(N)
    neg = np.empty(N)
    rows_dist(X, XT, g0, g1, acc, buf)
    for a in range(g0, g1):
        viol[a] = _count_violations(
            buf[a - g0], a, codes, margin, atol, members, start, pos, neg
        )


@njit(parallel=True, **JIT)
def _sep_parallel(X, codes, margin, atol):
    N = X.shape[0]
    XT = transpose(X)
    viol = np.zeros(N, dtype=np.int64)
    members, start = _class_members(codes)
    ngroups = (N + _SEP_GROUP - 1) // _SEP_GROUP
    for g in prange(ngroups):
        _sep_group(X, XT, codes, margin, atol, members, start, g * _SEP_GROUP, viol)
    return viol


_sep_serial = serial_twin(_sep_parallel)


def separation_counts(X, codes, margin, atol):
    """Per-anchor number of triplets with ``(d_ap + margin) - d_am > atol``.

    Each task computes the full distance rows of 32 anchors into a
    ``32 x N`` buffer, then counts per anchor (no symmetry: every anchor
    needs its whole row).
    """
    N, n = X.shape
    if serial_work(N, N, 2 * n):
        return _sep_serial(X, codes, margin, atol)
    return _sep_parallel(X, codes, margin, atol)
