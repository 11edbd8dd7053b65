"""Distances: the one distance helper, the one tile engine and the all-pairs sweeps.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.distances``.
"""

from __future__ import annotations

import types

import numpy as np
from numba import njit, prange

from .._progress import new_control, run_kernel
from . import JIT

__all__ = [
    "N_BLOCKS",
    "SERIAL_WORK",
    "SUB",
    "TA",
    "TJ",
    "argmax_rows",
    "diameter_kernel",
    "dist",
    "farthest_from",
    "isometric_error_kernel",
    "pairwise_distances_kernel",
    "partition",
    "pointwise_kernel",
    "rows_dist",
    "serial_twin",
    "serial_work",
    "sq_dist",
    "tile_dist",
    "tile_sq",
    "transpose",
]

#: anchors per tile (they share each load of ``XT[k, c0:c0 + TJ]``)
TA = 8
#: other points per tile (the vectorised lanes; ``TA x TJ`` doubles = 4 KiB)
TJ = 64
#: below this much work (``N * N * (n + 8)``; e.g. N = 256 at n = 128,
#: N = 1024 at n = 2) a kernel runs on the calling thread
SERIAL_WORK = 1 << 24
#: blocks of the parallel schedules (fixed, not read from the thread pool,
#: so the kernels stay cacheable; it only changes the visiting order)
N_BLOCKS = 16
#: rows swept together over all columns (their rows stay in L2)
SUB = 256
#: smallest block (a multiple of ``TA``)
_MIN_BLOCK = 64


def serial_twin(kernel):
    """The same function body compiled without ``parallel`` (``prange`` runs as ``range``).

    The twin gets its own qualified name: numba names a cache file after the
    function, so a twin sharing the parallel kernel's name would share its
    cache entry and one of the two would load the other's machine code.
    """
    f = kernel.py_func
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + "_serial", f.__defaults__,
                           f.__closure__)
    g.__qualname__ = f.__qualname__ + "_serial"
    return njit(**JIT)(g)


def serial_work(n_rows: int, n_cols: int, n_feat: int) -> bool:
    """Whether ``n_rows x n_cols`` pairs over ``n_feat`` features are too little for threads."""
    return float(n_rows) * float(n_cols) * float(n_feat + 8) <= SERIAL_WORK


@njit(inline="always", **JIT)
def sq_dist(X, i, Y, j):
    """Squared Euclidean distance between ``X[i]`` and ``Y[j]`` by direct differences."""
    s = 0.0
    for k in range(X.shape[1]):
        t = X[i, k] - Y[j, k]
        s += t * t
    return s


@njit(inline="always", **JIT)
def dist(X, i, Y, j):
    """Euclidean distance between ``X[i]`` and ``Y[j]`` by direct differences."""
    return np.sqrt(sq_dist(X, i, Y, j))


@njit(**JIT)
def partition(N):
    """Block size and number of blocks (at most ``N_BLOCKS``) for ``N`` points.

    Blocks are multiples of ``TA`` and hold at least 64 points.
    """
    bs = (N + N_BLOCKS - 1) // N_BLOCKS
    bs = max(((bs + TA - 1) // TA) * TA, _MIN_BLOCK)
    return bs, (N + bs - 1) // bs


@njit(**JIT)
def transpose(X):
    """Feature-major copy ``XT[k, i] = X[i, k]`` (C-contiguous, shape (n, N))."""
    N, n = X.shape
    XT = np.empty((n, N))
    for i0 in range(0, N, 64):
        i1 = min(N, i0 + 64)
        for k in range(n):
            for i in range(i0, i1):
                XT[k, i] = X[i, k]
    return XT


@njit(**JIT)
def tile_sq(X, XT, i0, nr, j0, nc, acc):
    """``acc[r, c] = ||X[i0 + r] - X[j0 + c]||^2`` for ``r < nr <= TA``, ``c < nc <= TJ``.

    Rows past ``nr`` repeat the last row (their results are ignored).  The
    sum over coordinates runs in order ``k = 0 .. n-1`` for every entry.
    """
    n = X.shape[1]
    last = i0 + nr - 1
    r1 = min(i0 + 1, last)
    r2 = min(i0 + 2, last)
    r3 = min(i0 + 3, last)
    r4 = min(i0 + 4, last)
    r5 = min(i0 + 5, last)
    r6 = min(i0 + 6, last)
    r7 = min(i0 + 7, last)
    # 1-D views of the accumulator rows and of each coordinate's column
    # slice let LLVM vectorise across columns (several times faster than
    # 2-D indexing); the order of the sum over k is unchanged
    a0 = acc[0, :nc]
    a1 = acc[1, :nc]
    a2 = acc[2, :nc]
    a3 = acc[3, :nc]
    a4 = acc[4, :nc]
    a5 = acc[5, :nc]
    a6 = acc[6, :nc]
    a7 = acc[7, :nc]
    acc[:, :nc] = 0.0
    for k in range(n):
        row = XT[k, j0:j0 + nc]
        x0 = X[i0, k]
        x1 = X[r1, k]
        x2 = X[r2, k]
        x3 = X[r3, k]
        x4 = X[r4, k]
        x5 = X[r5, k]
        x6 = X[r6, k]
        x7 = X[r7, k]
        for c in range(nc):
            v = row[c]
            t = x0 - v
            a0[c] += t * t
            t = x1 - v
            a1[c] += t * t
            t = x2 - v
            a2[c] += t * t
            t = x3 - v
            a3[c] += t * t
            t = x4 - v
            a4[c] += t * t
            t = x5 - v
            a5[c] += t * t
            t = x6 - v
            a6[c] += t * t
            t = x7 - v
            a7[c] += t * t


@njit(**JIT)
def tile_dist(X, XT, i0, nr, j0, nc, acc):
    """:func:`tile_sq` followed by the square roots (a separate, vectorised loop)."""
    tile_sq(X, XT, i0, nr, j0, nc, acc)
    for r in range(nr):
        a = acc[r, :nc]
        for c in range(nc):
            a[c] = np.sqrt(a[c])


@njit(inline="always", **JIT)
def rows_dist(X, XT, g0, g1, acc, out):
    """``out[a - g0, b] = d(a, b)`` for the rows ``a`` of ``[g0, g1)`` and every ``b``
    (tiles of :func:`tile_dist` through ``acc``)."""
    N = X.shape[0]
    for c0 in range(0, N, TJ):
        nc = min(TJ, N - c0)
        for r0 in range(g0, g1, TA):
            nr = min(TA, g1 - r0)
            tile_dist(X, XT, r0, nr, c0, nc, acc)
            for r in range(nr):
                src = acc[r, :nc]
                dst = out[r0 - g0 + r, c0 : c0 + nc]
                for j in range(nc):
                    dst[j] = src[j]


@njit(**JIT)
def argmax_rows(best, arg, value, bi, bj):
    """Lexicographically first ``(i, arg[i])`` with the largest ``best[i] > value``."""
    for i in range(best.shape[0]):
        if arg[i] >= 0 and best[i] > value:
            value = best[i]
            bi = i
            bj = arg[i]
    return value, bi, bj


# ---------------------------------------------------------------------------
# Small all-pairs kernels (serial twins compile the same body)
# ---------------------------------------------------------------------------


@njit(parallel=True, **JIT)
def _pairwise_distances_kernel_par(X):
    """Full ``(N, N)`` distance matrix; exactly symmetric with a zero diagonal."""
    n = X.shape[0]
    D = np.zeros((n, n))
    for i in prange(n):
        for j in range(i + 1, n):
            d = dist(X, i, X, j)
            D[i, j] = d
            D[j, i] = d
    return D


@njit(**JIT)
def pointwise_kernel(X1, X2):
    """``max_k ||X1_k - X2_k||`` and an index attaining it."""
    value = -1.0
    arg = 0
    for k in range(X1.shape[0]):
        d = dist(X1, k, X2, k)
        if d > value:
            value = d
            arg = k
    return value, arg


@njit(parallel=True, **JIT)
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


_pairwise_distances_kernel_ser = serial_twin(_pairwise_distances_kernel_par)


def pairwise_distances_kernel(X):
    """Full ``(N, N)`` distance matrix; exactly symmetric with a zero diagonal."""
    if serial_work(X.shape[0], X.shape[0], X.shape[1]):
        return _pairwise_distances_kernel_ser(X)
    return _pairwise_distances_kernel_par(X)


_farthest_from_ser = serial_twin(_farthest_from_par)


def farthest_from(Y, c):
    """Distance of the farthest row of ``Y`` from ``c``, and its index."""
    if serial_work(Y.shape[0], 1, Y.shape[1]):
        return _farthest_from_ser(Y, c)
    return _farthest_from_par(Y, c)


# ---------------------------------------------------------------------------
# Triangular kernels: diameter and isometric error
# ---------------------------------------------------------------------------


@njit(**JIT)
def _diam_rows(X, XT, i0, i1, best, arg, ctl, slot):
    """Per row ``i`` of ``[i0, i1)``: ``max_{j > i} d(i, j)``, first arg-max.

    ``ctl``: stop flag ``ctl[0]``, rows done added to ``ctl[1 + slot]``
    (:func:`isoapprox._progress.run_kernel`).
    """
    acc = np.empty((TA, TJ))
    for s0 in range(i0, i1, SUB):
        if ctl[0] != 0:
            return
        s1 = min(i1, s0 + SUB)
        _diam_rows_sub(X, XT, s0, s1, best, arg, acc)
        ctl[1 + slot] += s1 - s0


@njit(**JIT)
def _diam_rows_sub(X, XT, i0, i1, best, arg, acc):
    """:func:`_diam_rows` for at most ``SUB`` rows (their ``X`` rows stay in L2)."""
    N = X.shape[0]
    for c0 in range((i0 // TJ) * TJ, N, TJ):
        nc = min(TJ, N - c0)
        for r0 in range(i0, i1, TA):
            if c0 + nc - 1 <= r0:
                break
            nr = min(TA, i1 - r0)
            tile_dist(X, XT, r0, nr, c0, nc, acc)
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


@njit(parallel=True, **JIT)
def _diam_parallel(X, bs, ctl):
    N = X.shape[0]
    XT = transpose(X)
    best = np.full(N, -1.0)
    arg = np.full(N, -1, dtype=np.int64)
    M = (N + bs - 1) // bs
    for p in prange((M + 1) // 2):
        t = np.int64(p)  # prange counts in uint64: int64 rows and slots, one specialisation
        _diam_rows(X, XT, t * bs, min(N, (t + 1) * bs), best, arg, ctl, t)
        u = M - 1 - t
        if u != t:
            _diam_rows(X, XT, u * bs, min(N, (u + 1) * bs), best, arg, ctl, t)
    return best, arg


#: the serial schedule: the same body on the calling thread, with one block
#: (``bs = max(N, 1)``: one call of :func:`_diam_rows` over every row)
_diam_serial = serial_twin(_diam_parallel)


def diameter_kernel(X):
    """Largest pairwise distance and the lexicographically first pair (``i < j``).

    A Python function choosing the serial or the parallel kernel, so that a
    first call compiles only the one it runs.

    Row block ``t`` is paired with block ``M - 1 - t`` so parallel tasks of
    the triangle have equal work.  ``(0.0, 0, 1)`` when all points coincide.
    """
    N, n = X.shape
    if serial_work(N, N, n):
        best, arg = _diam_serial(X, max(N, 1), new_control(1))
    else:
        bs, M = partition(N)
        best, arg = run_kernel(_diam_parallel, (X, bs), n_slots=(M + 1) // 2, units=N,
                               work=0.5 * N * N * n, desc="diameter", unit="row")
    return argmax_rows(best, arg, 0.0, 0, 1 if N > 1 else 0)


@njit(**JIT)
def _iso_rows(X1, X2, XT1, XT2, i0, i1, best, arg, ctl, slot):
    """Per row ``i`` of ``[i0, i1)``: ``max_{j > i} |d1 - d2|`` and its first arg-max.

    ``ctl`` as in :func:`_diam_rows`.
    """
    acc1 = np.empty((TA, TJ))
    acc2 = np.empty((TA, TJ))
    for s0 in range(i0, i1, SUB):
        if ctl[0] != 0:
            return
        s1 = min(i1, s0 + SUB)
        _iso_rows_sub(X1, X2, XT1, XT2, s0, s1, best, arg, acc1, acc2)
        ctl[1 + slot] += s1 - s0


@njit(**JIT)
def _iso_rows_sub(X1, X2, XT1, XT2, i0, i1, best, arg, acc1, acc2):
    """:func:`_iso_rows` for at most ``SUB`` rows."""
    N = X1.shape[0]
    for c0 in range((i0 // TJ) * TJ, N, TJ):
        nc = min(TJ, N - c0)
        for r0 in range(i0, i1, TA):
            if c0 + nc - 1 <= r0:
                break
            nr = min(TA, i1 - r0)
            tile_dist(X1, XT1, r0, nr, c0, nc, acc1)
            tile_dist(X2, XT2, r0, nr, c0, nc, acc2)
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


@njit(parallel=True, **JIT)
def _iso_parallel(X1, X2, bs, ctl):
    N = X1.shape[0]
    XT1 = transpose(X1)
    XT2 = transpose(X2)
    best = np.full(N, -1.0)
    arg = np.full(N, -1, dtype=np.int64)
    M = (N + bs - 1) // bs
    for p in prange((M + 1) // 2):
        t = np.int64(p)  # as in _diam_parallel
        _iso_rows(X1, X2, XT1, XT2, t * bs, min(N, (t + 1) * bs), best, arg, ctl, t)
        u = M - 1 - t
        if u != t:
            _iso_rows(X1, X2, XT1, XT2, u * bs, min(N, (u + 1) * bs), best, arg, ctl, t)
    return best, arg


#: the serial schedule (as :data:`_diam_serial`)
_iso_serial = serial_twin(_iso_parallel)


def isometric_error_kernel(X1, X2):
    """``max_{i<j} |d1(i,j) - d2(i,j)|`` and the lexicographically first pair.

    ``(-1.0, 0, 1)`` for a single point (no pair).  A Python function choosing
    the serial or the parallel kernel (as :func:`diameter_kernel`), so that a
    first call compiles only the one it runs; the parallel sweep is watched
    when long (progress on request, Ctrl-C stops it;
    :func:`isoapprox._progress.run_kernel`).
    """
    N, n = X1.shape
    if serial_work(N, N, 2 * n):
        return _iso_small(X1, X2)
    bs, M = partition(N)
    best, arg = run_kernel(_iso_parallel, (X1, X2, bs), n_slots=(M + 1) // 2, units=N,
                           work=N * N * n, desc="isometric error", unit="row")
    return argmax_rows(best, arg, -1.0, 0, 1)


@njit(**JIT)
def _iso_small(X1, X2):
    """The serial :func:`isometric_error_kernel`: one call from Python (small inputs)."""
    best, arg = _iso_serial(X1, X2, max(X1.shape[0], 1), np.zeros(2, dtype=np.int64))
    # int64 as from Python (constants would be typed as literals: a second specialisation)
    return argmax_rows(best, arg, -1.0, np.int64(0), np.int64(1))

