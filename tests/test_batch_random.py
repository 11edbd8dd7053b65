"""The numba SeedSequence/Philox twins agree with numpy bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isoapprox.batch import _random as R


def _key(seed, spawn):
    k0, k1 = R.seedseq_key(R.int_to_words(seed), np.array(spawn, dtype=np.uint64))
    return np.uint64(k0), np.uint64(k1)


def _stream(k0, k1):
    s = np.empty(R.STREAM_LEN, dtype=np.uint64)
    R.stream_init(s, k0, k1)
    return s


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32, 2**40 + 7, 2**130 + 99])
@pytest.mark.parametrize(
    "spawn", [(), (0,), (7, 3), (123456789, 4000000000, 5, 9), (1, 2, 3, 4, 5, 6)]
)
def test_seedseq_key_matches_numpy(seed, spawn):
    want = np.random.SeedSequence(seed, spawn_key=spawn).generate_state(2, np.uint64)
    got = _key(seed, spawn)
    assert (int(want[0]), int(want[1])) == (int(got[0]), int(got[1]))


@given(seed=st.integers(0, 2**96), spawn=st.lists(st.integers(0, 2**32 - 1), max_size=6))
def test_seedseq_key_matches_numpy_property(seed, spawn):
    want = np.random.SeedSequence(seed, spawn_key=tuple(spawn)).generate_state(2, np.uint64)
    got = _key(seed, spawn)
    assert (int(want[0]), int(want[1])) == (int(got[0]), int(got[1]))


@pytest.mark.parametrize("spawn", [(), (3, 9, 0), (3, 9, 41)])
def test_philox_stream_matches_numpy(spawn):
    ss = np.random.SeedSequence(2024, spawn_key=spawn)
    raw = np.random.Philox(ss).random_raw(37)  # crosses several 4-word blocks
    s = _stream(*_key(2024, spawn))
    mine = np.array([R.next_u64(s) for _ in range(37)], dtype=np.uint64)
    np.testing.assert_array_equal(mine, raw)


def test_next_double_matches_numpy_random():
    ss = np.random.SeedSequence(5, spawn_key=(1, 2, 3))
    g = np.random.Generator(np.random.Philox(ss))
    s = _stream(*_key(5, (1, 2, 3)))
    want = g.random(25)
    got = np.array([R.next_double(s) for _ in range(25)])
    np.testing.assert_array_equal(got, want)


def test_counter_carry_matches_numpy():
    key = np.array([5, 6], dtype=np.uint64)
    ctr = np.array([2**64 - 2, 2**64 - 1, 2**64 - 1, 0], dtype=np.uint64)
    raw = np.random.Philox(key=key, counter=ctr).random_raw(12)
    s = _stream(key[0], key[1])
    s[2:6] = ctr
    mine = np.array([R.next_u64(s) for _ in range(12)], dtype=np.uint64)
    np.testing.assert_array_equal(mine, raw)
    assert s[2:6].tolist() == [1, 0, 0, 1]  # carried through three words


def test_normals_are_box_muller_of_numpy_uniforms():
    # the obviously-correct twin: numpy's uniforms through Box-Muller in numpy
    ss = np.random.SeedSequence(11, spawn_key=(4,))
    u = np.random.Generator(np.random.Philox(ss)).random(8)
    r = np.sqrt(-2.0 * np.log(1.0 - u[0::2]))
    want = np.empty(7)
    want[0::2] = (r * np.cos(2 * np.pi * u[1::2]))[:4]
    want[1::2] = (r * np.sin(2 * np.pi * u[1::2]))[:3]
    out = np.empty(7)
    R.normals(_stream(*_key(11, (4,))), out)
    np.testing.assert_allclose(out, want, rtol=4e-16, atol=0)  # libm vs numpy ulps


def test_normals_have_standard_moments():
    out = np.empty(200_000)
    R.normals(_stream(*_key(3, (1,))), out)
    assert abs(out.mean()) < 0.01 and abs(out.std() - 1.0) < 0.01
    assert abs(np.mean(out**4) - 3.0) < 0.05


def test_uniform_index_in_range_and_uniform():
    s = _stream(*_key(9, (2,)))
    draws = np.array([R.uniform_index(s, 3) for _ in range(30_000)])
    assert draws.min() == 0 and draws.max() == 2
    assert np.all(np.abs(np.bincount(draws) / 30_000 - 1 / 3) < 0.015)


def test_int_to_words_rejects_negative():
    with pytest.raises(ValueError, match="non-negative"):
        R.int_to_words(-1)
    assert R.int_to_words(0).tolist() == [0]
    assert R.int_to_words(2**32 + 5).tolist() == [5, 1]
