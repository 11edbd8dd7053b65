"""Blocked, vectorised direct-difference kernels for large batches.

This module holds :func:`batch_hard_terms`, :func:`separation_counts`,
:func:`diameter_kernel` and :func:`isometric_error_kernel` (re-exported by
:mod:`isoapprox._kernels`, which callers use).  Arrays in, arrays out; no
validation (the public wrappers do it).

Exactness
---------
Every squared distance is ``s = 0.0; s += t * t`` with ``t = x_k - y_k`` for
``k = 0, 1, ..., n - 1`` in that order, followed by one correctly rounded
``sqrt``: the same operations, in the same order, as the scalar kernel
``_dist`` and as the brute-force references.  ``fastmath`` is off, so LLVM
neither reassociates the sum nor contracts ``acc + t * t`` into an FMA, and
the values are *bitwise* equal to those of the scalar kernels.  Arg-max and
arg-min are taken on those exact values with ties broken towards the
smallest index, so the winners are exactly the brute force's winners.

Why this is fast without fastmath
---------------------------------
A plain loop ``for k: s += t * t`` is one serial chain of dependent adds
(one add latency per feature) and cannot be vectorised without
reassociation.  Here the loop over the *other* point ``j`` is innermost and
runs over a feature-major copy ``XT`` (shape ``(n, N)``) of the points, with
one accumulator per ``j``::

    for k in range(n):                 # features, in order
        for j in range(nc):            # 64 other points: independent lanes
            t = x_a[k] - XT[k, c0 + j]
            acc_a[j] += t * t          # one accumulator per (a, j)

Each lane still sums its own ``k`` in order, so vectorising over ``j`` is
exact; LLVM emits 512-bit ``vsubpd / vmulpd / vaddpd``.  A micro-tile of
``TA = 8`` anchors shares each load of ``XT[k, c0:c0 + 64]`` (register
reuse), the ``8 x 64`` accumulators stay in L1, and a block of ``BS``
anchors reuses each ``64``-column slice of ``XT`` from L2.

Measured on the 2-core AVX-512 machine this project targets (one thread,
CPU time, N = 4096, n = 128; ``benchmarks/bench_losses.py`` has the
multi-threaded wall-clock comparison): the micro-kernel costs about 0.1 ns
per pair and feature, 2-2.5x a float64 GEMM (``sub + mul + add`` on the two
FP-add pipes against one FMA; with ``fastmath`` off that ratio is the
hardware bound), so :func:`batch_hard_terms`, which evaluates each unordered
pair once, takes 122-132 ms against 87-100 ms for one ``E @ Et`` GEMM
(1.2-1.5x), and :func:`diameter_kernel` about 104 ms.

The alternative -- a GEMM ``|x|^2 + |y|^2 - 2 x.y`` to find candidates,
then direct-difference recomputation of the candidates admitted by a
rigorous rounding-error bound ``~ 8 (n + 8) u (|x - mu|^2 + |y - mu|^2)``
on centred rows -- was prototyped for batch-hard mining and measured as
well: 132 ms on the same spread data (all rows, about 10 exact
recomputations per anchor; it would drop towards 0.6-0.7 GEMM with symmetry
and a vectorised scan), but 265 ms against 27 ms for this kernel on a fully
collapsed batch of N = 1024, because the bound then admits *every* pair.
Collapsed and class-collapsed embeddings, duplicates, near-duplicates far
from the origin and nearly isometric pairs (the isometric error of ``E`` and
a rotated ``E`` is at the rounding level) are exactly the inputs this
project exists for, the candidate method needs the direct kernel as its
fallback anyway, and it would put OpenBLAS's thread pool next to numba's.
So the direct kernel is kept.

Parallelism and determinism
---------------------------
No kernel here calls BLAS, so only numba's thread pool runs (no
oversubscription with OpenBLAS threads, whatever their number).  Each kernel
opens one parallel region (a region costs a few microseconds on a quiet
machine but up to a scheduler time slice when the cores are oversubscribed),
and inputs below ``SERIAL_WORK`` run on the calling thread.  Results never
depend on the number of threads:

- *Batch-hard mining* uses each pair once (``d(a, b) = d(b, a)``).  The
  points form ``M <= 16`` blocks; each block pair ``I <= J`` is one task.
  Every anchor has ``M`` state slots, slot ``K`` holding its best against
  block ``K``; task ``(I, J)`` owns slot ``J`` of the anchors in ``I`` and
  slot ``I`` of the anchors in ``J``, so tasks never write the same memory.
  The slots are merged afterwards.  A state is a ``(value, index)`` pair
  improved under the total order "better value, then smaller index", which
  is commutative and associative, so the result does not depend on the order
  in which pairs are visited.
- *Triangular kernels* (diameter, isometric error) give each row its own
  output slot; row block ``t`` is paired with block ``M - 1 - t`` so every
  task has the same amount of work, and the rows are reduced sequentially
  at the end (lexicographically first arg-max pair).
- *Separation counts* give each anchor its own count.

Memory
------
Besides ``XT`` (``8 N n`` bytes, the size of the input; two for the
isometric error) and ``O(N)`` outputs: one ``8 x 64`` accumulator tile per
task, ``16`` state slots per anchor for batch-hard mining (``512 N``
bytes), and for separation counts one ``32 x N`` distance buffer per task
in flight.  Never an ``N x N`` matrix.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = [
    "N_BLOCKS",
    "SERIAL_WORK",
    "TA",
    "TJ",
    "batch_hard_terms",
    "diameter_kernel",
    "isometric_error_kernel",
    "partition",
    "separation_counts",
]

_JIT = dict(cache=True, fastmath=False, nogil=True)

#: anchors per micro-tile (they share each load of ``XT[k, c0:c0 + TJ]``)
TA = 8
#: other points per micro-tile (the vectorised lanes; ``TA x TJ`` doubles = 4 KiB)
TJ = 64
#: below this much work (``N * N * (n + 8)``, about 2 ms on one core; e.g.
#: N = 256 at n = 128, N = 1024 at n = 2) a kernel runs on the calling
#: thread: a parallel region costs microseconds on a quiet machine but up to
#: a scheduler time slice (10-20 ms measured) when the cores are
#: oversubscribed, because every thread must reach the closing barrier.
SERIAL_WORK = 1 << 24
#: blocks in the parallel schedules: batch-hard mining then has
#: 16 * 17 / 2 = 136 equal tasks and 16 state slots per anchor, the
#: triangular kernels 8 equal tasks.  Fixed, not read from the thread pool,
#: so the kernels stay cacheable; it only changes the order in which pairs
#: are visited, never the result.
N_BLOCKS = 16
#: rows swept together over all columns: their ``X`` rows (256 KiB at
#: n = 128) stay in L2 next to the ``TJ``-column slice of ``XT``
_SUB = 256
#: smallest block (a multiple of ``TA``)
_MIN_BLOCK = 64
#: anchors per task in :func:`separation_counts`
_SEP_GROUP = 32


@njit(**_JIT)
def partition(N):
    """Block size and number of blocks (at most ``N_BLOCKS``) for ``N`` points.

    Blocks are multiples of ``TA`` and hold at least 64 points.
    """
    bs = (N + N_BLOCKS - 1) // N_BLOCKS
    bs = ((bs + TA - 1) // TA) * TA
    if bs < _MIN_BLOCK:
        bs = _MIN_BLOCK
    return bs, (N + bs - 1) // bs


@njit(**_JIT)
def _serial(N, n):
    """Whether ``N`` points in ``R^n`` are cheap enough for the calling thread alone."""
    return float(N) * float(N) * float(n + 8) <= SERIAL_WORK


@njit(**_JIT)
def _transpose(X):
    """Feature-major copy ``XT[k, i] = X[i, k]`` (C-contiguous, shape (n, N))."""
    N, n = X.shape
    XT = np.empty((n, N))
    for i0 in range(0, N, 64):
        i1 = min(N, i0 + 64)
        for k in range(n):
            for i in range(i0, i1):
                XT[k, i] = X[i, k]
    return XT


@njit(**_JIT)
def _tile_sq(X, r0, XT, c0, nc, acc):
    """``acc[r, j] = sum_k (X[r0 + r, k] - XT[k, c0 + j])**2``, ``r < 8``, ``j < nc``.

    Rows past the end of ``X`` repeat the last row (their results are
    ignored by the callers).
    """
    N, n = X.shape
    last = N - 1
    i0 = r0
    i1 = min(r0 + 1, last)
    i2 = min(r0 + 2, last)
    i3 = min(r0 + 3, last)
    i4 = min(r0 + 4, last)
    i5 = min(r0 + 5, last)
    i6 = min(r0 + 6, last)
    i7 = min(r0 + 7, last)
    a0 = acc[0]
    a1 = acc[1]
    a2 = acc[2]
    a3 = acc[3]
    a4 = acc[4]
    a5 = acc[5]
    a6 = acc[6]
    a7 = acc[7]
    for j in range(nc):
        a0[j] = 0.0
        a1[j] = 0.0
        a2[j] = 0.0
        a3[j] = 0.0
        a4[j] = 0.0
        a5[j] = 0.0
        a6[j] = 0.0
        a7[j] = 0.0
    for k in range(n):
        x0 = X[i0, k]
        x1 = X[i1, k]
        x2 = X[i2, k]
        x3 = X[i3, k]
        x4 = X[i4, k]
        x5 = X[i5, k]
        x6 = X[i6, k]
        x7 = X[i7, k]
        row = XT[k, c0 : c0 + nc]
        for j in range(nc):
            v = row[j]
            t = x0 - v
            a0[j] += t * t
            t = x1 - v
            a1[j] += t * t
            t = x2 - v
            a2[j] += t * t
            t = x3 - v
            a3[j] += t * t
            t = x4 - v
            a4[j] += t * t
            t = x5 - v
            a5[j] += t * t
            t = x6 - v
            a6[j] += t * t
            t = x7 - v
            a7[j] += t * t


@njit(**_JIT)
def _sqrt_tile(acc, nr, nc):
    """In-place ``sqrt`` of ``acc[:nr, :nc]`` (a vectorisable loop)."""
    for r in range(nr):
        a = acc[r]
        for j in range(nc):
            a[j] = np.sqrt(a[j])


# ---------------------------------------------------------------------------
# Batch-hard mining: each unordered pair once
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _bh_pair(X, XT, codes, i0, i1, j0, j1, diag, rows, cols):
    """Batch-hard states of anchors ``[i0, i1)`` against ``[j0, j1)`` and back.

    ``rows`` and ``cols`` are ``(hp, hn, hpi, hni)`` state arrays indexed by
    the global anchor index: ``rows`` for the anchors ``a`` in ``[i0, i1)``,
    ``cols`` for the anchors ``b`` in ``[j0, j1)`` (updated from the same
    distances, ``d(b, a) = d(a, b)``).  With ``diag`` the two ranges coincide
    and only ``rows`` is updated (the square tile holds both directions).  A
    state is a ``(value, index)`` pair improved under "better value, then
    smaller index": an order-independent reduction.
    """
    acc = np.empty((TA, TJ))
    for s0 in range(i0, i1, _SUB):
        _bh_pair_sub(
            X, XT, codes, s0, min(i1, s0 + _SUB), j0, j1, diag, rows, cols, acc
        )


@njit(**_JIT)
def _bh_pair_sub(X, XT, codes, i0, i1, j0, j1, diag, rows, cols, acc):
    """:func:`_bh_pair` for at most ``_SUB`` rows (their ``X`` rows stay in L2)."""
    hp, hn, hpi, hni = rows
    cp, cn, cpi, cni = cols
    for c0 in range(j0, j1, TJ):
        nc = min(TJ, j1 - c0)
        for r0 in range(i0, i1, TA):
            nr = min(TA, i1 - r0)
            _tile_sq(X, r0, XT, c0, nc, acc)
            _sqrt_tile(acc, nr, nc)
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
                    d = row[j]
                    if cod[j] == ca:
                        if d >= bp:
                            b = c0 + j
                            if b != a and (d > bp or b < bpi):
                                bp = d
                                bpi = b
                    elif d <= bn:
                        b = c0 + j
                        if d < bn or b < bni:
                            bn = d
                            bni = b
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
                    d = acc[r, j]
                    if cod[r] == cb:
                        if d >= bp:
                            a = r0 + r
                            if d > bp or a < bpi:
                                bp = d
                                bpi = a
                    elif d <= bn:
                        a = r0 + r
                        if d < bn or a < bni:
                            bn = d
                            bni = a
                cp[b] = bp
                cpi[b] = bpi
                cn[b] = bn
                cni[b] = bni


@njit(**_JIT)
def _bh_init(shape):
    hp = np.full(shape, -np.inf)
    hn = np.full(shape, np.inf)
    hpi = np.full(shape, -1, dtype=np.int64)
    hni = np.full(shape, -1, dtype=np.int64)
    return hp, hn, hpi, hni


@njit(**_JIT)
def _bh_serial(X, codes, bs):
    """All block pairs ``I <= J`` in order, on the calling thread."""
    N = X.shape[0]
    XT = _transpose(X)
    state = _bh_init(N)
    M = (N + bs - 1) // bs
    for I in range(M):
        i0 = I * bs
        i1 = min(N, i0 + bs)
        _bh_pair(X, XT, codes, i0, i1, i0, i1, True, state, state)
        for J in range(I + 1, M):
            _bh_pair(
                X, XT, codes, i0, i1, J * bs, min(N, (J + 1) * bs), False, state, state
            )
    return state


@njit(parallel=True, **_JIT)
def _bh_parallel(X, codes, bs):
    """All block pairs ``I <= J`` as parallel tasks in one parallel region.

    Slot ``K`` of an anchor holds its best against block ``K``; task
    ``(I, J)`` owns slots ``J`` of the anchors of ``I`` and slots ``I`` of
    the anchors of ``J``, so no two tasks write the same slot.  The ``M``
    slots are merged afterwards (``M`` state arrays of length ``N``).
    """
    N = X.shape[0]
    XT = _transpose(X)
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
        I = task_i[t]
        J = task_j[t]
        rows = (sp[J], sn[J], spi[J], sni[J])
        cols = (sp[I], sn[I], spi[I], sni[I])
        _bh_pair(
            X,
            XT,
            codes,
            I * bs,
            min(N, (I + 1) * bs),
            J * bs,
            min(N, (J + 1) * bs),
            I == J,
            rows,
            cols,
        )
    hp, hn, hpi, hni = _bh_init(N)
    for a in range(N):
        bp = hp[a]
        bpi = hpi[a]
        bn = hn[a]
        bni = hni[a]
        for K in range(M):
            d = sp[K, a]
            i = spi[K, a]
            if i >= 0 and (d > bp or (d == bp and i < bpi)):
                bp = d
                bpi = i
            d = sn[K, a]
            i = sni[K, a]
            if i >= 0 and (d < bn or (d == bn and i < bni)):
                bn = d
                bni = i
        hp[a] = bp
        hpi[a] = bpi
        hn[a] = bn
        hni[a] = bni
    return hp, hn, hpi, hni


@njit(**_JIT)
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
    """
    N, n = X.shape
    if _serial(N, n):
        return _bh_serial(X, codes, 256)
    bs, _ = partition(N)
    return _bh_parallel(X, codes, bs)


# ---------------------------------------------------------------------------
# Triangular kernels: diameter and isometric error
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _diam_rows(X, XT, i0, i1, best, arg):
    """Per row ``i`` of ``[i0, i1)``: ``max_{j > i} d(i, j)``, first arg-max."""
    acc = np.empty((TA, TJ))
    for s0 in range(i0, i1, _SUB):
        s1 = min(i1, s0 + _SUB)
        _diam_rows_sub(X, XT, s0, s1, best, arg, acc)


@njit(**_JIT)
def _diam_rows_sub(X, XT, i0, i1, best, arg, acc):
    """:func:`_diam_rows` for at most ``_SUB`` rows (their ``X`` rows stay in L2)."""
    N = X.shape[0]
    for c0 in range((i0 // TJ) * TJ, N, TJ):
        nc = min(TJ, N - c0)
        for r0 in range(i0, i1, TA):
            if c0 + nc - 1 <= r0:
                break
            nr = min(TA, i1 - r0)
            _tile_sq(X, r0, XT, c0, nc, acc)
            _sqrt_tile(acc, nr, nc)
            for r in range(nr):
                a = r0 + r
                b0 = best[a]
                bj = arg[a]
                row = acc[r]
                j_start = max(0, a + 1 - c0)
                hits = 0
                for j in range(j_start, nc):
                    hits += row[j] > b0
                if hits == 0:
                    continue
                for j in range(j_start, nc):
                    d = row[j]
                    if d > b0:
                        b0 = d
                        bj = c0 + j
                best[a] = b0
                arg[a] = bj


@njit(**_JIT)
def _argmax_rows(best, arg, value, bi, bj):
    """Lexicographically first ``(i, arg[i])`` with the largest ``best[i] > value``."""
    for i in range(best.shape[0]):
        if arg[i] >= 0 and best[i] > value:
            value = best[i]
            bi = i
            bj = arg[i]
    return value, bi, bj


@njit(**_JIT)
def _diam_serial(X):
    N = X.shape[0]
    XT = _transpose(X)
    best = np.full(N, -1.0)
    arg = np.full(N, -1, dtype=np.int64)
    _diam_rows(X, XT, 0, N, best, arg)
    return best, arg


@njit(parallel=True, **_JIT)
def _diam_parallel(X, bs):
    N = X.shape[0]
    XT = _transpose(X)
    best = np.full(N, -1.0)
    arg = np.full(N, -1, dtype=np.int64)
    M = (N + bs - 1) // bs
    for t in prange((M + 1) // 2):
        _diam_rows(X, XT, t * bs, min(N, (t + 1) * bs), best, arg)
        u = M - 1 - t
        if u != t:
            _diam_rows(X, XT, u * bs, min(N, (u + 1) * bs), best, arg)
    return best, arg


@njit(**_JIT)
def diameter_kernel(X):
    """Largest pairwise distance and the lexicographically first pair (``i < j``).

    Row block ``t`` is paired with block ``M - 1 - t`` so parallel tasks of
    the triangle have equal work.  ``(0.0, 0, 1)`` when all points coincide.
    """
    N, n = X.shape
    if _serial(N, n):
        best, arg = _diam_serial(X)
    else:
        bs, _ = partition(N)
        best, arg = _diam_parallel(X, bs)
    return _argmax_rows(best, arg, 0.0, 0, 1 if N > 1 else 0)


@njit(**_JIT)
def _iso_rows(X1, X2, XT1, XT2, i0, i1, best, arg):
    """Per row ``i`` of ``[i0, i1)``: ``max_{j > i} |d1 - d2|`` and its first arg-max."""
    acc1 = np.empty((TA, TJ))
    acc2 = np.empty((TA, TJ))
    for s0 in range(i0, i1, _SUB):
        s1 = min(i1, s0 + _SUB)
        _iso_rows_sub(X1, X2, XT1, XT2, s0, s1, best, arg, acc1, acc2)


@njit(**_JIT)
def _iso_rows_sub(X1, X2, XT1, XT2, i0, i1, best, arg, acc1, acc2):
    """:func:`_iso_rows` for at most ``_SUB`` rows."""
    N = X1.shape[0]
    for c0 in range((i0 // TJ) * TJ, N, TJ):
        nc = min(TJ, N - c0)
        for r0 in range(i0, i1, TA):
            if c0 + nc - 1 <= r0:
                break
            nr = min(TA, i1 - r0)
            _tile_sq(X1, r0, XT1, c0, nc, acc1)
            _tile_sq(X2, r0, XT2, c0, nc, acc2)
            _sqrt_tile(acc1, nr, nc)
            _sqrt_tile(acc2, nr, nc)
            for r in range(nr):
                a = r0 + r
                b0 = best[a]
                bj = arg[a]
                row1 = acc1[r]
                row2 = acc2[r]
                j_start = max(0, a + 1 - c0)
                hits = 0
                for j in range(j_start, nc):
                    hits += abs(row1[j] - row2[j]) > b0
                if hits == 0:
                    continue
                for j in range(j_start, nc):
                    e = abs(row1[j] - row2[j])
                    if e > b0:
                        b0 = e
                        bj = c0 + j
                best[a] = b0
                arg[a] = bj


@njit(**_JIT)
def _iso_serial(X1, X2):
    N = X1.shape[0]
    XT1 = _transpose(X1)
    XT2 = _transpose(X2)
    best = np.full(N, -1.0)
    arg = np.full(N, -1, dtype=np.int64)
    _iso_rows(X1, X2, XT1, XT2, 0, N, best, arg)
    return best, arg


@njit(parallel=True, **_JIT)
def _iso_parallel(X1, X2, bs):
    N = X1.shape[0]
    XT1 = _transpose(X1)
    XT2 = _transpose(X2)
    best = np.full(N, -1.0)
    arg = np.full(N, -1, dtype=np.int64)
    M = (N + bs - 1) // bs
    for t in prange((M + 1) // 2):
        _iso_rows(X1, X2, XT1, XT2, t * bs, min(N, (t + 1) * bs), best, arg)
        u = M - 1 - t
        if u != t:
            _iso_rows(X1, X2, XT1, XT2, u * bs, min(N, (u + 1) * bs), best, arg)
    return best, arg


@njit(**_JIT)
def isometric_error_kernel(X1, X2):
    """``max_{i<j} |d1(i,j) - d2(i,j)|`` and the lexicographically first pair.

    ``(-1.0, 0, 1)`` for a single point (no pair).
    """
    N, n = X1.shape
    if _serial(N, 2 * n):
        best, arg = _iso_serial(X1, X2)
    else:
        bs, _ = partition(N)
        best, arg = _iso_parallel(X1, X2, bs)
    return _argmax_rows(best, arg, -1.0, 0, 1)


# ---------------------------------------------------------------------------
# Separation counts
# ---------------------------------------------------------------------------


#: up to this many positives per anchor, violations are counted by a
#: vectorised pass over all points per positive; above it, by sorting
_SEP_LINEAR = 32


@njit(**_JIT)
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


@njit(**_JIT)
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
    npos = 0
    nneg = 0
    for b in range(N):
        if b == a:
            continue
        if codes[b] == ca:
            pos[npos] = drow[b] + margin
            npos += 1
        else:
            neg[nneg] = drow[b]
            nneg += 1
    if npos <= nneg:
        ts = np.sort(pos[:npos])
        for q in range(nneg):
            x = neg[q]
            # first position with ts[lo] - x > atol; every later one too
            lo = 0
            hi = npos
            while lo < hi:
                mid = (lo + hi) // 2
                if ts[mid] - x > atol:
                    hi = mid
                else:
                    lo = mid + 1
            c += npos - lo
    else:
        negs = np.sort(neg[:nneg])
        for q in range(npos):
            t = pos[q]
            # first position with t - negs[lo] <= atol; every later one too
            lo = 0
            hi = nneg
            while lo < hi:
                mid = (lo + hi) // 2
                if t - negs[mid] > atol:
                    lo = mid + 1
                else:
                    hi = mid
            c += lo
    return c


@njit(**_JIT)
def _sep_group(X, XT, codes, margin, atol, members, start, g0, g1, viol):
    """Counts of anchors ``[g0, g1)`` (at most ``_SEP_GROUP``) from whole rows."""
    N = X.shape[0]
    buf = np.empty((_SEP_GROUP, N))
    acc = np.empty((TA, TJ))
    pos = np.empty(N)
    neg = np.empty(N)
    for c0 in range(0, N, TJ):
        nc = min(TJ, N - c0)
        for r0 in range(g0, g1, TA):
            nr = min(TA, g1 - r0)
            _tile_sq(X, r0, XT, c0, nc, acc)
            _sqrt_tile(acc, nr, nc)
            for r in range(nr):
                src = acc[r]
                dst = buf[r0 - g0 + r]
                for j in range(nc):
                    dst[c0 + j] = src[j]
    for a in range(g0, g1):
        viol[a] = _count_violations(
            buf[a - g0], a, codes, margin, atol, members, start, pos, neg
        )


@njit(**_JIT)
def _sep_serial(X, codes, margin, atol):
    N = X.shape[0]
    XT = _transpose(X)
    viol = np.zeros(N, dtype=np.int64)
    members, start = _class_members(codes)
    for g0 in range(0, N, _SEP_GROUP):
        _sep_group(
            X,
            XT,
            codes,
            margin,
            atol,
            members,
            start,
            g0,
            min(N, g0 + _SEP_GROUP),
            viol,
        )
    return viol


@njit(parallel=True, **_JIT)
def _sep_parallel(X, codes, margin, atol):
    N = X.shape[0]
    XT = _transpose(X)
    viol = np.zeros(N, dtype=np.int64)
    members, start = _class_members(codes)
    ngroups = (N + _SEP_GROUP - 1) // _SEP_GROUP
    for g in prange(ngroups):
        g0 = g * _SEP_GROUP
        _sep_group(
            X,
            XT,
            codes,
            margin,
            atol,
            members,
            start,
            g0,
            min(N, g0 + _SEP_GROUP),
            viol,
        )
    return viol


@njit(**_JIT)
def separation_counts(X, codes, margin, atol):
    """Per-anchor number of triplets with ``(d_ap + margin) - d_am > atol``.

    Each task computes the full distance rows of 32 anchors into a
    ``32 x N`` buffer, then counts per anchor (no symmetry: every anchor
    needs its whole row).
    """
    N, n = X.shape
    if _serial(N, 2 * n):
        return _sep_serial(X, codes, margin, atol)
    return _sep_parallel(X, codes, margin, atol)
