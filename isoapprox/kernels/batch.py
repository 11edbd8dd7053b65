"""Kernels of the batch engine: many configurations per call.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.batch``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import JIT
from .meb import meb_2d, meb_bracket, support_radius
from .planar import thickness_2d

__all__ = [
    "CHEAP_FLOAT_FIELDS",
    "CHEAP_INT_FIELDS",
    "DISTRIBUTION_CODES",
    "cheap_kernel",
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
                a = abs(X[b, i, k])
                if a > m:
                    m = a
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
                acc = 0.0
                for k in range(n):
                    t = W[i, k] - W[j, k]
                    acc += t * t
                d = np.sqrt(acc)
                D[i, j] = d
                D[j, i] = d
                if d > diam:
                    diam = d
                    di = i
                    dj = j
                e = abs(d - 0.0)  # |D_ij - D^collapsed_ij|
                if e > diso:
                    diso = e
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
                    if d > hp:
                        hp = d
                else:
                    neg[nneg] = q
                    nneg += 1
                    if d < hn:
                        hn = d
            if npos == 0 or nneg == 0:
                continue
            t = hp - hn + alpha
            if t < 0.0:
                t = 0.0
            bh_sum += t
            n_anchor += 1
            if t > bh_max:
                bh_max = t
            n_trip += npos * nneg
            # all triplets of this anchor: [d_ap + alpha - d_am]_+
            for q in range(npos):
                tp = D[a, pos[q]] + alpha
                for r in range(nneg):
                    t_sum += max(tp - D[a, neg[r]], 0.0)
        if n_anchor == 0:
            F[b, 0] = np.nan
            F[b, 1] = np.nan
            F[b, 2] = np.nan
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
            if acc > r2:
                r2 = acc
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
            w0, w1, w2, w3 = _philox_block(c0, c1, c2, c3, k0, k1)
            U[b, i0] = np.float64(w0 >> _S11) * _INV_2_53
            if i0 + 1 < m:
                U[b, i0 + 1] = np.float64(w1 >> _S11) * _INV_2_53
            if i0 + 2 < m:
                U[b, i0 + 2] = np.float64(w2 >> _S11) * _INV_2_53
            if i0 + 3 < m:
                U[b, i0 + 3] = np.float64(w3 >> _S11) * _INV_2_53


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
def generate_kernel(U, dist, P, random_layout, base_codes, spread, scale, X, codes):
    """Turn the uniforms ``U`` (B, :func:`uniform_count`) into configurations.

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
                t = codes[b, i]
                codes[b, i] = codes[b, j]
                codes[b, j] = t
        else:
            for i in range(N):
                codes[b, i] = base_codes[i]
        if dist == 3:
            p = _normals(u, p, cz)
            p = _normals(u, p, z)
            for i in range(N):
                c = codes[b, i]
                for k in range(n):
                    X[b, i, k] = cz[c * n + k] + spread * z[i * n + k]
        elif dist == 4:
            p = _normals(u, p, cz[:n])
            p = _normals(u, p, z)
            for i in range(N):
                for k in range(n):
                    X[b, i, k] = cz[k] + scale * z[i * n + k]
        else:
            p = _normals(u, p, z)
            if dist == 1 or dist == 2:
                _normalise_rows(z, N, n)
            for i in range(N):
                rad = 1.0
                if dist == 1:
                    rad = u[p] ** (1.0 / n)
                    p += 1
                for k in range(n):
                    X[b, i, k] = rad * z[i * n + k]
