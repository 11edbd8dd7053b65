"""numba twins of numpy's ``SeedSequence`` and ``Philox`` (bit-exact).

The batch engine draws every configuration from its own random stream:
configuration ``(cell, r)`` of a run with root seed ``s`` uses

    numpy.random.Philox(numpy.random.SeedSequence(s, spawn_key=(k0, k1, r)))

where ``(k0, k1)`` are two 32-bit words naming the cell.  Creating that
object in Python costs tens of microseconds per configuration; the kernels
here compute the same SeedSequence pool and the same Philox-4x64-10 blocks
inside numba, so a whole chunk of configurations is drawn in one call at
well under a microsecond each.  The tests check both against numpy, bit for
bit, so a single configuration can be regenerated with numpy alone.

State of one stream (``uint64`` array of length :data:`STREAM_LEN`)::

    [key0, key1, ctr0, ctr1, ctr2, ctr3, buf0, buf1, buf2, buf3, pos]

exactly numpy's ``Philox`` state: the counter is incremented *before* each
block is computed and ``pos`` counts the used words of the buffer.

Uniform doubles are numpy's ``next_double``: ``(u >> 11) * 2**-53`` in
``[0, 1)``.  Normal variates are *not* numpy's ziggurat: they come in pairs
from the Box-Muller transform of two uniforms, ``r = sqrt(-2 log(1 - u1))``,
``(r cos(2 pi u2), r sin(2 pi u2))``; an odd count discards the last sine.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "STREAM_LEN",
    "int_to_words",
    "next_double",
    "next_u64",
    "normals",
    "philox_block",
    "seedseq_key",
    "stream_init",
    "uniform_index",
]

_JIT = dict(cache=True, fastmath=False, nogil=True)

STREAM_LEN = 11

_M32 = np.uint64(0xFFFFFFFF)
_S16 = np.uint64(16)
_S32 = np.uint64(32)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)

# SeedSequence hashing constants (O'Neill's seed_seq_fe, as used by numpy)
_INIT_A = np.uint64(0x43B0D7E5)
_MULT_A = np.uint64(0x931E8875)
_INIT_B = np.uint64(0x8B51F9DD)
_MULT_B = np.uint64(0x58F38DED)
_MIX_L = np.uint64(0xCA01F9DD)
_MIX_R = np.uint64(0x4973F715)
_POOL = 4

# Philox-4x64 constants (Salmon et al. 2011, Random123)
_PH_M0 = np.uint64(0xD2E7470EE14C6C93)
_PH_M1 = np.uint64(0xCA5A826395121157)
_PH_W0 = np.uint64(0x9E3779B97F4A7C15)
_PH_W1 = np.uint64(0xBB67AE8584CAA73B)

_TWO_PI = 2.0 * np.pi
_INV_2_53 = 1.0 / 9007199254740992.0


def int_to_words(value: int) -> np.ndarray:
    """Little-endian 32-bit words of a non-negative integer (``0 -> [0]``).

    This is how ``SeedSequence`` reads an integer entropy or spawn-key entry.
    """
    value = int(value)
    if value < 0:
        raise ValueError(f"seed words need a non-negative integer; got {value}")
    words = [value & 0xFFFFFFFF]
    value >>= 32
    while value:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
    return np.array(words, dtype=np.uint64)


@njit(inline="always", **_JIT)
def _hashmix(value, hc):
    """One ``hashmix`` step; returns the mixed value and the next hash constant."""
    value = (value ^ hc) & _M32
    hc = (hc * _MULT_A) & _M32
    value = (value * hc) & _M32
    value ^= value >> _S16
    return value, hc


@njit(inline="always", **_JIT)
def _mix(x, y):
    r = ((_MIX_L * x) - (_MIX_R * y)) & _M32
    r ^= r >> _S16
    return r


@njit(inline="always", **_JIT)
def _entropy_word(entropy, spawn, n_run, i):
    """Word ``i`` of the assembled entropy: run words (padded to ``n_run``) then spawn words."""
    if i < n_run:
        return entropy[i] if i < entropy.shape[0] else _ZERO
    return spawn[i - n_run]


@njit(**_JIT)
def seedseq_key(entropy, spawn):
    """The Philox key numpy derives from ``SeedSequence(entropy, spawn_key)``.

    Parameters
    ----------
    entropy : uint64 array
        The run entropy as 32-bit words (:func:`int_to_words` of the seed).
    spawn : uint64 array
        The spawn key, one 32-bit word per entry (entries below ``2**32``).

    Returns
    -------
    key0, key1 : uint64
        ``SeedSequence(...).generate_state(2, np.uint64)``.

    Notes
    -----
    numpy pads the run entropy with zeros to the pool size (4 words) when a
    spawn key is present.  No allocation: the pool lives in four scalars.
    """
    n_run = entropy.shape[0]
    if spawn.shape[0] > 0 and n_run < _POOL:
        n_run = _POOL
    total = n_run + spawn.shape[0]
    hc = _INIT_A
    p0, hc = _hashmix(_entropy_word(entropy, spawn, n_run, 0) if total > 0 else _ZERO, hc)
    p1, hc = _hashmix(_entropy_word(entropy, spawn, n_run, 1) if total > 1 else _ZERO, hc)
    p2, hc = _hashmix(_entropy_word(entropy, spawn, n_run, 2) if total > 2 else _ZERO, hc)
    p3, hc = _hashmix(_entropy_word(entropy, spawn, n_run, 3) if total > 3 else _ZERO, hc)
    # mix every pool word into every other one (source-major order)
    for i_src in range(_POOL):
        # pool word i_src is not updated while it is the source
        src = p0 if i_src == 0 else (p1 if i_src == 1 else (p2 if i_src == 2 else p3))
        if i_src != 0:
            h, hc = _hashmix(src, hc)
            p0 = _mix(p0, h)
        if i_src != 1:
            h, hc = _hashmix(src, hc)
            p1 = _mix(p1, h)
        if i_src != 2:
            h, hc = _hashmix(src, hc)
            p2 = _mix(p2, h)
        if i_src != 3:
            h, hc = _hashmix(src, hc)
            p3 = _mix(p3, h)
    # the remaining entropy words, each mixed into every pool word
    for i_src in range(_POOL, total):
        w = _entropy_word(entropy, spawn, n_run, i_src)
        h, hc = _hashmix(w, hc)
        p0 = _mix(p0, h)
        h, hc = _hashmix(w, hc)
        p1 = _mix(p1, h)
        h, hc = _hashmix(w, hc)
        p2 = _mix(p2, h)
        h, hc = _hashmix(w, hc)
        p3 = _mix(p3, h)
    # generate_state(4 x uint32) viewed as 2 x uint64 (little-endian)
    h = _INIT_B
    w0, h = _state_word(p0, h)
    w1, h = _state_word(p1, h)
    w2, h = _state_word(p2, h)
    w3, h = _state_word(p3, h)
    return w0 | (w1 << _S32), w2 | (w3 << _S32)


@njit(inline="always", **_JIT)
def _state_word(v, h):
    v = (v ^ h) & _M32
    h = (h * _MULT_B) & _M32
    v = (v * h) & _M32
    v ^= v >> _S16
    return v, h


@njit(inline="always", **_JIT)
def _mulhilo(a, b):
    a_lo = a & _M32
    a_hi = a >> _S32
    b_lo = b & _M32
    b_hi = b >> _S32
    ll = a_lo * b_lo
    hl = a_hi * b_lo
    lh = a_lo * b_hi
    hh = a_hi * b_hi
    cross = (ll >> _S32) + (hl & _M32) + lh
    hi = hh + (hl >> _S32) + (cross >> _S32)
    lo = (cross << _S32) | (ll & _M32)
    return hi, lo


@njit(**_JIT)
def philox_block(c0, c1, c2, c3, k0, k1):
    """Philox-4x64 with 10 rounds: four 64-bit words for one counter value."""
    for r in range(10):
        if r > 0:
            k0 = k0 + _PH_W0
            k1 = k1 + _PH_W1
        hi0, lo0 = _mulhilo(_PH_M0, c0)
        hi1, lo1 = _mulhilo(_PH_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


@njit(**_JIT)
def stream_init(st, k0, k1):
    """Start a stream in ``st`` (length :data:`STREAM_LEN`): numpy's fresh ``Philox``."""
    st[0] = k0
    st[1] = k1
    for i in range(2, 10):
        st[i] = _ZERO
    st[10] = np.uint64(4)


@njit(**_JIT)
def next_u64(st):
    """Next 64-bit word of the stream (numpy's ``Philox.random_raw``)."""
    pos = st[10]
    if pos < np.uint64(4):
        st[10] = pos + _ONE
        return st[6 + np.int64(pos)]
    st[2] += _ONE
    if st[2] == _ZERO:
        st[3] += _ONE
        if st[3] == _ZERO:
            st[4] += _ONE
            if st[4] == _ZERO:
                st[5] += _ONE
    b0, b1, b2, b3 = philox_block(st[2], st[3], st[4], st[5], st[0], st[1])
    st[6] = b0
    st[7] = b1
    st[8] = b2
    st[9] = b3
    st[10] = _ONE
    return b0


@njit(**_JIT)
def next_double(st):
    """Uniform double in ``[0, 1)`` (numpy's ``Generator.random``)."""
    return np.float64(next_u64(st) >> _S11) * _INV_2_53


@njit(**_JIT)
def uniform_index(st, m):
    """Uniform integer in ``0 .. m-1`` (``floor(u * m)``, clipped for rounding)."""
    k = np.int64(next_double(st) * m)
    return k if k < m else m - 1


@njit(**_JIT)
def normals(st, out):
    """Fill the 1-D array ``out`` with standard normal variates (Box-Muller pairs)."""
    m = out.shape[0]
    i = 0
    while i < m:
        u1 = 1.0 - next_double(st)
        u2 = next_double(st)
        r = np.sqrt(-2.0 * np.log(u1))
        t = _TWO_PI * u2
        out[i] = r * np.cos(t)
        if i + 1 < m:
            out[i + 1] = r * np.sin(t)
        i += 2
