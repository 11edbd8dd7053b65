"""Kernels of the batch engine: many configurations per call.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.batch``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import JIT
from .distances import dist
from .meb import meb_2d, meb_bracket, support_radius
from .planar import thickness_2d

__all__ = [
    "CHEAP_FLOAT_FIELDS",
    "CHEAP_INT_FIELDS",
    "CSV_BOOL",
    "CSV_FLOAT",
    "CSV_INT",
    "CSV_NUMBER_WIDTH",
    "CSV_TEXT",
    "DISTRIBUTION_CODES",
    "cheap_kernel",
    "encode_csv_kernel",
    "generate_kernel",
    "philox_uniforms",
    "seed_sequence_key",
    "uniform_count",
]

#: column order of the float output of :func:`cheap_kernel`
CHEAP_FLOAT_FIELDS = (
    "batch_hard_max",
    "batch_hard_mean",
    "triplet_mean",
    "diameter",
    "d_iso_collapsed",
    "meb_radius",
    "meb_radius_lower",
    "thickness",
)
#: column order of the integer output of :func:`cheap_kernel`
CHEAP_INT_FIELDS = ("n_triplets", "n_classes_present")

#: distribution name -> code understood by :func:`generate_kernel`
DISTRIBUTION_CODES = {"gaussian": 0, "ball": 1, "sphere": 2, "clustered": 3, "collapsed": 4}

_LOW = 2.0**-100
_HIGH = 2.0**100
_TWO_PI = 2.0 * np.pi
#: the diametral ball of the farthest pair is taken as the minimum one when
#: no point is farther than ``(1 + _DIAMETRAL_RTOL) diam / 2`` from its
#: midpoint.  Not the enclosing-circle test of :mod:`isoapprox.kernels.meb`:
#: here the bound comes from the exact ``diam`` while the distances are
#: measured from the *rounded* midpoint, whose error is relative to the
#: coordinates, not to the radius (a collapsed cloud far from the origin);
#: a looser slack would take this shortcut with an upper bound a few ulps of
#: the coordinates above the exact circle of the other paths.
_DIAMETRAL_RTOL = 1e-14


# ---------------------------------------------------------------------------
# The cheap quantities of many configurations
# ---------------------------------------------------------------------------


@njit(**JIT)
def cheap_kernel(X, codes, margin):
    """Losses, diameter, enclosing ball and thickness of every configuration.

    Parameters
    ----------
    X : float64 array (B, N, n)
    codes : int64 array (B, N)
        Class labels (any integers; only equality matters).
    margin : float
        ``alpha >= 0``.

    Returns
    -------
    F : float64 array (B, 8)
        Columns :data:`CHEAP_FLOAT_FIELDS`; the losses are NaN for a
        configuration without a triplet; ``thickness`` is NaN when
        ``n >= 3`` and ``N > n`` (not computed here).
    I : int64 array (B, 2)
        Columns :data:`CHEAP_INT_FIELDS`.
    """
    B, N, n = X.shape
    F = np.empty((B, 8))
    I = np.empty((B, 2), dtype=np.int64)
    D = np.empty((N, N))
    W = np.empty((N, n))
    pos = np.empty(N, dtype=np.int64)
    neg = np.empty(N, dtype=np.int64)
    order = np.empty(N, dtype=np.int64)
    sup = np.empty(3, dtype=np.int64)
    w = np.empty(3)
    for b in range(B):
        # exact power-of-two rescaling out of the over/underflow range
        m = margin
        for i in range(N):
            for k in range(n):
                m = max(m, abs(X[b, i, k]))
        s = 1.0
        if m > 0.0 and (m < _LOW or m > _HIGH):
            s = math.ldexp(1.0, -math.frexp(m)[1])
        for i in range(N):
            for k in range(n):
                W[i, k] = X[b, i, k] * s
        alpha = margin * s
        # distances, diameter, isometric error to the collapsed embedding
        diam = 0.0
        diso = 0.0
        di = 0
        dj = 0
        for i in range(N):
            D[i, i] = 0.0
            for j in range(i + 1, N):
                d = dist(W, i, W, j)
                D[i, j] = d
                D[j, i] = d
                if d > diam:
                    diam = d
                    di = i
                    dj = j
                diso = max(diso, abs(d - 0.0))  # |D_ij - D^collapsed_ij|
        # number of distinct classes
        P = 0
        for i in range(N):
            new = True
            for j in range(i):
                if codes[b, j] == codes[b, i]:
                    new = False
                    break
            if new:
                P += 1
        # batch-hard (hardest positive / negative per anchor) and all triplets
        bh_max = -np.inf
        bh_sum = 0.0
        n_anchor = 0
        t_sum = 0.0
        n_trip = 0
        for a in range(N):
            ca = codes[b, a]
            hp = -np.inf
            hn = np.inf
            npos = 0
            nneg = 0
            for q in range(N):
                if q == a:
                    continue
                d = D[a, q]
                if codes[b, q] == ca:
                    pos[npos] = q
                    npos += 1
                    hp = max(hp, d)
                else:
                    neg[nneg] = q
                    nneg += 1
                    hn = min(hn, d)
            if npos == 0 or nneg == 0:
                continue
            t = max(hp - hn + alpha, 0.0)
            bh_sum += t
            n_anchor += 1
            bh_max = max(bh_max, t)
            n_trip += npos * nneg
            # all triplets of this anchor: [d_ap + alpha - d_am]_+
            for q in range(npos):
                tp = D[a, pos[q]] + alpha
                for r in range(nneg):
                    t_sum += max(tp - D[a, neg[r]], 0.0)
        if n_anchor == 0:
            F[b, :3] = np.nan
        else:
            F[b, 0] = bh_max / s
            F[b, 1] = (bh_sum / n_anchor) / s
            F[b, 2] = (t_sum / n_trip) / s
        F[b, 3] = diam / s
        F[b, 4] = diso / s
        # minimum enclosing ball: exact for n <= 2, bracketed above.  Fast
        # path: when the ball on the farthest pair holds every point it is
        # the minimum one (any enclosing ball has radius >= diam / 2).
        fast = True
        r2 = 0.0
        lim = 0.5 * diam * (1.0 + _DIAMETRAL_RTOL)
        lim *= lim
        for i in range(N):
            acc = 0.0
            for k in range(n):
                t = W[i, k] - 0.5 * (W[di, k] + W[dj, k])
                acc += t * t
            if acc > lim:
                fast = False
                break
            r2 = max(r2, acc)
        if fast:
            r_up = np.sqrt(r2)
            r_lo = min(0.5 * diam, r_up)
        elif n == 1:
            lo = W[0, 0]
            hi = W[0, 0]
            for i in range(1, N):
                lo = min(lo, W[i, 0])
                hi = max(hi, W[i, 0])
            r_up = 0.5 * (hi - lo)
            r_lo = r_up
        elif n == 2:
            for i in range(N):
                order[i] = i
            _, _, r_up = meb_2d(W, order, sup, w)
            r_lo = min(support_radius(W, sup[0], sup[1], sup[2]), r_up)
        else:
            r_up, r_lo = meb_bracket(W)
        F[b, 5] = r_up / s
        F[b, 6] = r_lo / s
        # thickness: exact for n <= 2; 0 when N <= n (a hyperplane holds the set)
        if diam == 0.0:
            th = 0.0
        elif n == 1:
            th = 1.0
        elif n == 2:
            th = thickness_2d(W, diam)
        elif N <= n:
            th = 0.0
        else:
            th = np.nan
        F[b, 7] = th
        I[b, 0] = n_trip
        I[b, 1] = P
    return F, I


# ---------------------------------------------------------------------------
# numpy's streams, many at once
# ---------------------------------------------------------------------------

# Stream ``b`` of :func:`philox_uniforms` is numpy's
# ``Generator(Philox(SeedSequence(entropy, spawn_key=spawn[b]))).random(m)``,
# recomputed word for word: the SeedSequence pool and state (O'Neill's
# seed_seq_fe hashing, as numpy implements it), the Philox-4x64-10 key taken
# from it, the counter incremented *before* each block of four words, and
# numpy's ``next_double`` ``(w >> 11) * 2**-53``.  Constructing those numpy
# objects costs about 10 us per configuration; this costs well under one.
# ``tests/test_batch_seeding.py`` compares the two bit for bit.

_M32 = np.uint64(0xFFFFFFFF)
_S11 = np.uint64(11)
_S16 = np.uint64(16)
_S32 = np.uint64(32)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
#: SeedSequence hashing constants (numpy.random.bit_generator)
_INIT_A = np.uint64(0x43B0D7E5)
_MULT_A = np.uint64(0x931E8875)
_INIT_B = np.uint64(0x8B51F9DD)
_MULT_B = np.uint64(0x58F38DED)
_MIX_L = np.uint64(0xCA01F9DD)
_MIX_R = np.uint64(0x4973F715)
#: words of numpy's SeedSequence pool
_POOL = 4
#: Philox-4x64 multipliers and key increments (Salmon et al. 2011, Random123)
_PH_M0 = np.uint64(0xD2E7470EE14C6C93)
_PH_M1 = np.uint64(0xCA5A826395121157)
_PH_W0 = np.uint64(0x9E3779B97F4A7C15)
_PH_W1 = np.uint64(0xBB67AE8584CAA73B)
_INV_2_53 = 1.0 / 9007199254740992.0


@njit(inline="always", **JIT)
def _hashmix(value, hc):
    """numpy's ``hashmix`` on 32-bit words; returns the value and the next hash constant."""
    value = (value ^ hc) & _M32
    hc = (hc * _MULT_A) & _M32
    value = (value * hc) & _M32
    value ^= value >> _S16
    return value, hc


@njit(inline="always", **JIT)
def _mix(x, y):
    r = ((_MIX_L * x) - (_MIX_R * y)) & _M32
    r ^= r >> _S16
    return r


@njit(inline="always", **JIT)
def _entropy_word(entropy, n_run, spawn, i):
    """Word ``i`` of the assembled entropy: run words zero-padded to ``n_run``, then spawn words."""
    if i < n_run:
        return entropy[i] if i < entropy.shape[0] else _U0
    return spawn[i - n_run]


@njit(**JIT)
def _seed_absorb(entropy, spawn, n_spawn, pool):
    """The SeedSequence pool after the run entropy and ``spawn[:n_spawn]``; the hash constant.

    Absorbing the last spawn word afterwards (:func:`_seed_absorb_word`)
    gives the pool of the whole key: with a spawn key the run entropy fills
    at least the four pool words, so every spawn word is mixed in after them.
    """
    n_run = entropy.shape[0]
    if spawn.shape[0] > 0 and n_run < _POOL:
        n_run = _POOL
    total = n_run + n_spawn
    hc = _INIT_A
    for i in range(_POOL):
        w = _entropy_word(entropy, n_run, spawn, i) if i < total else _U0
        pool[i], hc = _hashmix(w, hc)
    for i_src in range(_POOL):
        for i_dst in range(_POOL):
            if i_src != i_dst:
                h, hc = _hashmix(pool[i_src], hc)
                pool[i_dst] = _mix(pool[i_dst], h)
    for i_src in range(_POOL, total):
        hc = _seed_absorb_word(pool, hc, _entropy_word(entropy, n_run, spawn, i_src))
    return hc


@njit(inline="always", **JIT)
def _seed_absorb_word(pool, hc, w):
    """Mix one more entropy word into every pool word; returns the hash constant."""
    for i_dst in range(_POOL):
        h, hc = _hashmix(w, hc)
        pool[i_dst] = _mix(pool[i_dst], h)
    return hc


@njit(inline="always", **JIT)
def _seed_state(pool):
    """``generate_state(2, np.uint64)`` of a pool: four 32-bit words read as two 64-bit ones."""
    hb = _INIT_B
    for i in range(_POOL):
        v = (pool[i] ^ hb) & _M32
        hb = (hb * _MULT_B) & _M32
        v = (v * hb) & _M32
        pool[i] = v ^ (v >> _S16)
    return pool[0] | (pool[1] << _S32), pool[2] | (pool[3] << _S32)


@njit(**JIT)
def seed_sequence_key(entropy, spawn):
    """``SeedSequence(entropy, spawn_key=spawn).generate_state(2, np.uint64)``.

    ``entropy`` holds the 32-bit words of the root seed (little-endian,
    ``[0]`` for 0) and ``spawn`` one 32-bit word per spawn-key entry, both
    as uint64 arrays.  With a spawn key numpy pads the run entropy with
    zeros to the pool size.
    """
    pool = np.empty(_POOL, dtype=np.uint64)
    _seed_absorb(entropy, spawn, spawn.shape[0], pool)
    return _seed_state(pool)


@njit(**JIT)
def _same_prefix(spawn, b, k):
    """Whether rows ``b`` and ``b - 1`` of ``spawn`` agree in their first ``k`` words."""
    for j in range(k):
        if spawn[b, j] != spawn[b - 1, j]:
            return False
    return True


@njit(inline="always", **JIT)
def _mulhilo(a, b):
    """High and low 64-bit words of the 128-bit product ``a * b``."""
    a_lo = a & _M32
    a_hi = a >> _S32
    b_lo = b & _M32
    b_hi = b >> _S32
    ll = a_lo * b_lo
    hl = a_hi * b_lo
    lh = a_lo * b_hi
    cross = (ll >> _S32) + (hl & _M32) + lh  # < 2**64: no carry lost
    hi = a_hi * b_hi + (hl >> _S32) + (cross >> _S32)
    return hi, (cross << _S32) | (ll & _M32)


@njit(inline="always", **JIT)
def _philox_block(c0, c1, c2, c3, k0, k1):
    """Philox-4x64 with 10 rounds: the four words of counter ``(c0, c1, c2, c3)``."""
    for r in range(10):
        if r > 0:
            k0 = k0 + _PH_W0
            k1 = k1 + _PH_W1
        hi0, lo0 = _mulhilo(_PH_M0, c0)
        hi1, lo1 = _mulhilo(_PH_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


@njit(**JIT)
def philox_uniforms(entropy, spawn, U):
    """Fill row ``b`` of ``U`` (B, m) from stream ``spawn[b]`` of the root ``entropy``.

    ``U[b] = Generator(Philox(SeedSequence(seed, spawn_key=spawn[b]))).random(m)``
    bit for bit, with ``entropy`` the seed's 32-bit words and ``spawn`` a
    uint64 array (B, k) of spawn-key entries, each below ``2**32`` (numpy
    reads a larger entry as several words; callers never pass one).
    """
    B, m = U.shape
    k = spawn.shape[1]
    base = np.empty(_POOL, dtype=np.uint64)
    pool = np.empty(_POOL, dtype=np.uint64)
    hc_base = _U0
    for b in range(B):
        if k == 0:
            k0, k1 = seed_sequence_key(entropy, spawn[b])
        else:
            # the pool before the last spawn word is shared by consecutive
            # rows with the same first k - 1 words (a cell's repetitions)
            if b == 0 or not _same_prefix(spawn, b, k - 1):
                hc_base = _seed_absorb(entropy, spawn[b], k - 1, base)
            pool[:] = base
            _seed_absorb_word(pool, hc_base, spawn[b, k - 1])
            k0, k1 = _seed_state(pool)
        c0 = _U0
        c1 = _U0
        c2 = _U0
        c3 = _U0
        for i0 in range(0, m, 4):
            c0 += _U1
            if c0 == _U0:
                c1 += _U1
                if c1 == _U0:
                    c2 += _U1
                    if c2 == _U0:
                        c3 += _U1
            w = _philox_block(c0, c1, c2, c3, k0, k1)
            for t in range(min(4, m - i0)):  # the last block's extra words unused
                U[b, i0 + t] = np.float64(w[t] >> _S11) * _INV_2_53


# ---------------------------------------------------------------------------
# Configurations from drawn uniforms
# ---------------------------------------------------------------------------


def uniform_count(dist: int, N: int, n: int, P: int, random_layout: bool) -> int:
    """Number of uniforms :func:`generate_kernel` reads per configuration."""

    def normals(m: int) -> int:  # Box-Muller reads them in pairs
        return 2 * ((m + 1) // 2)

    k = (N - P) + (N - 1) if random_layout else 0
    if dist == 3:
        k += normals(P * n)
    elif dist == 4:
        k += normals(n)
    k += normals(N * n)
    if dist == 1:
        k += N
    return k


@njit(**JIT)
def _normals(U, p, out):
    """Fill ``out`` with standard normals from the uniforms ``U[p:]``; returns the next ``p``.

    Box-Muller pairs ``r = sqrt(-2 log(1 - u1))``, ``(r cos(2 pi u2),
    r sin(2 pi u2))``; an odd count discards the last sine.
    """
    m = out.shape[0]
    i = 0
    while i < m:
        u1 = 1.0 - U[p]
        u2 = U[p + 1]
        p += 2
        r = np.sqrt(-2.0 * np.log(u1))
        t = _TWO_PI * u2
        out[i] = r * np.cos(t)
        if i + 1 < m:
            out[i + 1] = r * np.sin(t)
        i += 2
    return p


@njit(**JIT)
def _index(u, m):
    """Uniform integer in ``0 .. m-1`` from ``u`` in ``[0, 1)`` (clipped for rounding)."""
    k = np.int64(u * m)
    return k if k < m else m - 1


@njit(**JIT)
def _normalise_rows(z, N, n):
    for i in range(N):
        s = 0.0
        for k in range(n):
            s += z[i * n + k] * z[i * n + k]
        s = np.sqrt(s)
        if s == 0.0:  # probability zero; keep the point on the sphere
            z[i * n] = 1.0
            s = 1.0
        for k in range(n):
            z[i * n + k] /= s


@njit(**JIT)
def generate_kernel(U, law, P, random_layout, base_codes, spread, scale, X, codes):
    """Turn the uniforms ``U`` (B, :func:`uniform_count`) into configurations.

    ``law`` is the distribution's code in :data:`DISTRIBUTION_CODES`.

    Read order per configuration: labels first (random layout only: the
    first ``P`` points get classes ``0 .. P-1``, the others a uniform class,
    then a Fisher-Yates shuffle), then the points:

    - gaussian: ``N n`` standard normals, row by row;
    - sphere: the same, each row divided by its norm;
    - ball: the sphere's rows, then ``N`` uniforms ``u``, radius ``u**(1/n)``;
    - clustered: ``P n`` normals (class centres), then ``N n`` normals times
      ``spread`` added to the centre of each point's class;
    - collapsed: ``n`` normals (one centre), then ``N n`` normals times
      ``scale``.
    """
    B, N, n = X.shape
    z = np.empty(N * n)
    cz = np.empty(max(P, 1) * n)
    for b in range(B):
        u = U[b]
        p = 0
        if random_layout:
            for i in range(N):
                if i < P:
                    codes[b, i] = i
                else:
                    codes[b, i] = _index(u[p], P)
                    p += 1
            for i in range(N - 1, 0, -1):
                j = _index(u[p], i + 1)
                p += 1
                codes[b, i], codes[b, j] = codes[b, j], codes[b, i]
        else:
            codes[b] = base_codes
        if law == 3:
            p = _normals(u, p, cz)
            p = _normals(u, p, z)
            for i in range(N):
                c = codes[b, i]
                for k in range(n):
                    X[b, i, k] = cz[c * n + k] + spread * z[i * n + k]
        elif law == 4:
            p = _normals(u, p, cz[:n])
            p = _normals(u, p, z)
            for i in range(N):
                for k in range(n):
                    X[b, i, k] = cz[k] + scale * z[i * n + k]
        else:
            p = _normals(u, p, z)
            if law == 1 or law == 2:
                _normalise_rows(z, N, n)
            for i in range(N):
                rad = 1.0
                if law == 1:
                    rad = u[p] ** (1.0 / n)
                    p += 1
                for k in range(n):
                    X[b, i, k] = rad * z[i * n + k]


# ---------------------------------------------------------------------------
# CSV text of a chunk's rows: Python's float repr, in numba
# ---------------------------------------------------------------------------
#
# A float is written as ``repr(float(x))`` writes it: the shortest decimal
# string that reads back to the same double (ties: the one nearest the
# double), found by Ryu (Adams 2018, "Ryu: fast float-to-string conversion",
# PLDI; the algorithm of the reference implementation's ``d2d`` with its
# 64-bit multiplications), then laid out by CPython's rules for ``repr``
# (``format_float_short``, mode ``'r'``): fixed notation for decimal-point
# positions -3 to 16, exponent notation (``1e-05``, ``1.5e+16``) outside;
# ``.0`` after an integral value in fixed notation; ``inf``, ``-inf``,
# ``0.0``, ``-0.0``.  tests/test_batch_table.py compares it with ``repr`` on
# every exponent, subnormals and random bit patterns.

#: column kinds of :func:`encode_csv_kernel`
CSV_FLOAT, CSV_INT, CSV_BOOL, CSV_TEXT = 0, 1, 2, 3
#: the most bytes a float (``-2.2250738585072014e-308``) or an int64 takes
CSV_NUMBER_WIDTH = 24

_RYU_POW5_INV_BITCOUNT = 122
_RYU_POW5_BITCOUNT = 121


def _ryu_tables() -> tuple[np.ndarray, np.ndarray]:
    """Ryu's 128-bit powers of five, split into (low, high) 64-bit words.

    ``inv[q] = floor(2**(pow5bits(q) - 1 + 122) / 5**q) + 1`` for ``q < 292``;
    ``pos[i] = 5**i`` scaled to 121 bits (truncated) for ``i < 326``.
    """
    mask = (1 << 64) - 1
    inv = np.empty((292, 2), dtype=np.uint64)
    for q in range(292):
        p = 5**q
        v = (1 << (p.bit_length() - 1 + _RYU_POW5_INV_BITCOUNT)) // p + 1
        inv[q, 0], inv[q, 1] = v & mask, v >> 64
    pos = np.empty((326, 2), dtype=np.uint64)
    for i in range(326):
        p = 5**i
        s = p.bit_length() - _RYU_POW5_BITCOUNT
        v = p >> s if s >= 0 else p << -s
        pos[i, 0], pos[i, 1] = v & mask, v >> 64
    return inv, pos


_RYU_INV, _RYU_POS = _ryu_tables()
_U2 = np.uint64(2)
_U4 = np.uint64(4)
_U5 = np.uint64(5)
_U10 = np.uint64(10)
_U100 = np.uint64(100)
_U50 = np.uint64(50)
_U63 = np.uint64(63)
_S52 = np.uint64(52)
_MANT = np.uint64((1 << 52) - 1)
_HIDDEN = np.uint64(1 << 52)
_EXP_MASK = np.uint64(0x7FF)
_CH_0 = 48
_TRUE = np.frombuffer(b"True", dtype=np.uint8)
_FALSE = np.frombuffer(b"False", dtype=np.uint8)
#: "00" "01" ... "99"
_DIGIT_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), dtype=np.uint8)
#: 10**k as uint64, k = 0 .. 17
_POW10 = np.array([10**k for k in range(18)], dtype=np.uint64)


@njit(inline="always", **JIT)
def _shr128(lo, hi, d):
    """``(hi 2**64 + lo) >> d`` truncated to 64 bits (``0 < d < 64``)."""
    return (hi << np.uint64(64 - d)) | (lo >> np.uint64(d))


@njit(inline="always", **JIT)
def _ryu_mul_shift_all(m2, lo, hi, j, mm_shift):
    """``(vr, vp, vm)``: ``4 m2``, ``4 m2 + 2`` and ``4 m2 - 1 - mm_shift``
    times ``M = hi 2**64 + lo``, shifted right by ``j`` (``65 < j < 128``).

    One 192-bit product ``2 m2 M`` (two 64x64-bit multiplications); ``vp``
    and ``vm`` are ``(2 m2 M + M) >> (j - 1)`` and ``(2 m2 M - M) >> (j - 1)``
    (``mm_shift = 1``) or ``(4 m2 M - M) >> j`` (``mm_shift = 0``).
    """
    m = m2 << _U1
    t, p0 = _mulhilo(m, lo)
    h, p1 = _mulhilo(m, hi)
    mid = t + p1
    if mid < t:
        h += _U1
    lo2 = p0 + lo
    mid2 = mid + hi + (_U1 if lo2 < p0 else _U0)
    hi2 = h + (_U1 if mid2 < mid else _U0)
    vp = _shr128(mid2, hi2, j - 65)
    if mm_shift == _U1:
        lo3 = p0 - lo
        mid3 = mid - hi - (_U1 if lo3 > p0 else _U0)
        hi3 = h - (_U1 if mid3 > mid else _U0)
        vm = _shr128(mid3, hi3, j - 65)
    else:
        lo3 = p0 + p0
        mid3 = mid + mid + (_U1 if lo3 < p0 else _U0)
        hi3 = h + h + (_U1 if mid3 < mid else _U0)
        lo4 = lo3 - lo
        mid4 = mid3 - hi - (_U1 if lo4 > lo3 else _U0)
        hi4 = hi3 - (_U1 if mid4 > mid3 else _U0)
        vm = _shr128(mid4, hi4, j - 64)
    return _shr128(mid, h, j - 65), vp, vm


@njit(inline="always", **JIT)
def _pow5_factor(v):
    c = 0
    while v % _U5 == _U0:
        v //= _U5
        c += 1
    return c


@njit(**JIT)
def _ryu_d2d(mant, ex):
    """Shortest digits ``(output, e10)`` of the positive finite double with
    IEEE fields ``mant`` (52 bits) and ``ex`` (11 bits, not all ones): the
    value is ``output * 10**e10``."""
    if ex == _U0:
        e2 = 1 - 1023 - 52 - 2
        m2 = mant
    else:
        e2 = np.int64(ex) - 1023 - 52 - 2
        m2 = _HIDDEN | mant
    accept = (m2 & _U1) == _U0
    mv = _U4 * m2
    mm_shift = _U1 if (mant != _U0 or ex <= _U1) else _U0
    vm_tz = False
    vr_tz = False
    if e2 >= 0:
        q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)
        e10 = q
        k = _RYU_POW5_INV_BITCOUNT + _ryu_pow5bits_nb(q) - 1
        i = -e2 + q + k
        vr, vp, vm = _ryu_mul_shift_all(m2, _RYU_INV[q, 0], _RYU_INV[q, 1], i, mm_shift)
        if q <= 21:
            if mv % _U5 == _U0:
                vr_tz = _pow5_factor(mv) >= q
            elif accept:
                vm_tz = _pow5_factor(mv - _U1 - mm_shift) >= q
            elif _pow5_factor(mv + _U2) >= q:
                vp -= _U1
    else:
        q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)
        e10 = q + e2
        i = -e2 - q
        k = _ryu_pow5bits_nb(i) - _RYU_POW5_BITCOUNT
        j = q - k
        vr, vp, vm = _ryu_mul_shift_all(m2, _RYU_POS[i, 0], _RYU_POS[i, 1], j, mm_shift)
        if q <= 1:
            vr_tz = True
            if accept:
                vm_tz = mm_shift == _U1
            else:
                vp -= _U1
        elif q < 63:
            vr_tz = (mv & ((_U1 << np.uint64(q)) - _U1)) == _U0
    removed = 0
    if vm_tz or vr_tz:
        last = _U0
        while vp // _U10 > vm // _U10:
            vm_tz = vm_tz and vm % _U10 == _U0
            vr_tz = vr_tz and last == _U0
            last, vr, vp, vm = _ryu_drop(vr, vp, vm, _U10)
            removed += 1
        if vm_tz:
            while vm % _U10 == _U0:
                vr_tz = vr_tz and last == _U0
                last, vr, vp, vm = _ryu_drop(vr, vp, vm, _U10)
                removed += 1
        if vr_tz and last == _U5 and vr % _U2 == _U0:
            last = _U4  # round half to even
        up = (vr == vm and (not accept or not vm_tz)) or last >= _U5
    else:
        up = False
        if vp // _U100 > vm // _U100:
            rest, vr, vp, vm = _ryu_drop(vr, vp, vm, _U100)
            up = rest >= _U50
            removed += 2
        while vp // _U10 > vm // _U10:
            rest, vr, vp, vm = _ryu_drop(vr, vp, vm, _U10)
            up = rest >= _U5
            removed += 1
        up = up or vr == vm
    return vr + (_U1 if up else _U0), e10 + removed


@njit(inline="always", **JIT)
def _ryu_drop(vr, vp, vm, base):
    """Ryu's digit removal: the removed digits ``vr % base`` and ``vr, vp, vm // base``."""
    return vr % base, vr // base, vp // base, vm // base


@njit(inline="always", **JIT)
def _ryu_pow5bits_nb(e):
    return ((e * 1217359) >> 19) + 1


@njit(inline="always", **JIT)
def _put_bytes(src, out, pos):
    for t in range(src.shape[0]):
        out[pos + t] = src[t]
    return pos + src.shape[0]


@njit(inline="always", **JIT)
def _put_float(bits, out, pos):
    """Write ``repr`` of the finite or infinite double with IEEE bits ``bits``."""
    if bits >> _U63:
        out[pos] = 45  # '-'
        pos += 1
    ex = (bits >> _S52) & _EXP_MASK
    mant = bits & _MANT
    if ex == _EXP_MASK:
        out[pos] = 105  # 'inf'
        out[pos + 1] = 110
        out[pos + 2] = 102
        return pos + 3
    if ex == _U0 and mant == _U0:
        out[pos] = _CH_0
        out[pos + 1] = 46  # '.'
        out[pos + 2] = _CH_0
        return pos + 3
    v, e10 = _ryu_d2d(mant, ex)
    while v % _U10 == _U0:  # repr's digits carry no trailing zero
        v //= _U10
        e10 += 1
    nd = 17  # at most 17 digits; most have 16 or 17
    while nd > 1 and v < _POW10[nd - 1]:
        nd -= 1
    decpt = e10 + nd  # value = 0.DIGITS * 10**decpt
    if decpt <= -4 or decpt > 16:
        pos = _put_digits(v, nd, 1, out, pos)
        out[pos] = 101  # 'e'
        e = decpt - 1
        if e < 0:
            out[pos + 1] = 45
            e = -e
        else:
            out[pos + 1] = 43  # '+'
        pos += 2
        if e >= 100:
            out[pos] = np.uint8(_CH_0 + e // 100)
            pos += 1
        out[pos] = np.uint8(_CH_0 + (e // 10) % 10)
        out[pos + 1] = np.uint8(_CH_0 + e % 10)
        return pos + 2
    if decpt <= 0:
        out[pos] = _CH_0
        out[pos + 1] = 46
        pos += 2
        for _ in range(-decpt):
            out[pos] = _CH_0
            pos += 1
        return _put_digits(v, nd, nd, out, pos)
    if decpt < nd:
        return _put_digits(v, nd, decpt, out, pos)
    pos = _put_digits(v, nd, nd, out, pos)
    for _ in range(decpt - nd):
        out[pos] = _CH_0
        pos += 1
    out[pos] = 46
    out[pos + 1] = _CH_0
    return pos + 2


@njit(inline="always", **JIT)
def _put_low_digits(v, n, out, end):
    """Write the ``n`` lowest decimal digits of ``v`` to ``out[end - n:end]``;
    returns ``v // 10**n``."""
    while n >= 2:  # two digits a division
        r = np.int64(v % _U100) * 2
        v //= _U100
        out[end - 1] = _DIGIT_PAIRS[r + 1]
        out[end - 2] = _DIGIT_PAIRS[r]
        end -= 2
        n -= 2
    if n == 1:
        out[end - 1] = np.uint8(_CH_0 + np.int64(v % _U10))
        v //= _U10
    return v


@njit(inline="always", **JIT)
def _put_digits(v, nd, point, out, pos):
    """Write the ``nd`` digits of ``v``, with a ``.`` after the first ``point``
    of them if ``point < nd``; returns the next position."""
    if point < nd:
        v = _put_low_digits(v, nd - point, out, pos + nd + 1)
        out[pos + point] = 46
        _put_low_digits(v, point, out, pos + point)
        return pos + nd + 1
    _put_low_digits(v, nd, out, pos + nd)
    return pos + nd


@njit(**JIT)
def _put_int(x, out, pos):
    """Write ``str(int(x))`` of a float ``x`` in ``[-2**63, 2**63)`` (truncated)."""
    v = np.int64(x)
    if v < 0:
        out[pos] = 45
        pos += 1
        u = np.uint64(-(v + 1)) + _U1
    else:
        u = np.uint64(v)
    nd = 1
    t = u // _U10
    while t > _U0:
        nd += 1
        t //= _U10
    for s in range(nd - 1, -1, -1):
        out[pos + s] = np.uint8(_CH_0 + np.int64(u % _U10))
        u //= _U10
    return pos + nd


@njit(**JIT)
def encode_csv_kernel(V, bits, kinds, pool, pool_start, out):
    """CSV rows of ``V`` (B, k) into ``out``; returns the number of bytes written.

    Column ``j`` of kind :data:`CSV_FLOAT` is written as Python's ``repr``,
    :data:`CSV_INT` as ``str(int(v))`` (``v`` in ``[-2**63, 2**63)``),
    :data:`CSV_BOOL` as ``True`` (``v == 1``) or ``False``, NaN as an empty
    field; :data:`CSV_TEXT` holds indices into the byte strings
    ``pool[pool_start[i]:pool_start[i + 1]]`` (written as they are).
    ``bits`` is ``V`` viewed as uint64; ``out`` must hold every row
    (:data:`CSV_NUMBER_WIDTH` bytes a number, the longest text, a separator).
    """
    B, k = V.shape
    pos = 0
    for b in range(B):
        for j in range(k):
            if j > 0:
                out[pos] = 44  # ','
                pos += 1
            x = V[b, j]
            kind = kinds[j]
            if kind == CSV_TEXT:
                i = np.int64(x)
                for t in range(pool_start[i], pool_start[i + 1]):
                    out[pos] = pool[t]
                    pos += 1
            elif x != x:
                continue
            elif kind == CSV_FLOAT:
                pos = _put_float(bits[b, j], out, pos)
            elif kind == CSV_INT:
                pos = _put_int(x, out, pos)
            elif x == 1.0:
                pos = _put_bytes(_TRUE, out, pos)
            else:
                pos = _put_bytes(_FALSE, out, pos)
        out[pos] = 10  # '\n'
        pos += 1
    return pos

