"""The shared kernel helpers against brute force, and what a small call compiles."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from isoapprox._progress import new_control
from isoapprox.kernels import distances as KD
from isoapprox.kernels import ideal as KI
from isoapprox.kernels import losses as KL
from isoapprox.kernels import stats as KS


def _points(seed: int, N: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N, n)) * 10.0 ** rng.integers(-3, 4)


@given(seed=st.integers(0, 2**32 - 2), N=st.integers(1, 150), n=st.integers(1, 9),
       data=st.data())
def test_rows_dist_is_every_distance_of_the_rows(seed, N, n, data):
    X = _points(seed, N, n)
    g0 = data.draw(st.integers(0, N - 1))
    g1 = data.draw(st.integers(g0 + 1, min(N, g0 + 24)))
    out = np.full((g1 - g0, N), np.nan)
    KD.rows_dist(X, np.ascontiguousarray(X.T), g0, g1, np.empty((KD.TA, KD.TJ)), out)
    want = np.sqrt(((X[g0:g1, None] - X[None]) ** 2).sum(-1))
    assert np.allclose(out, want, rtol=1e-13, atol=0.0)
    # each entry is bitwise the distance the rest of the package computes (dist),
    # in either order of the pair, and 0 on the diagonal
    for r in range(g1 - g0):
        assert out[r, g0 + r] == 0.0
        for j in range(N):
            assert out[r, j] == KD.dist(X, g0 + r, X, j) == KD.dist(X, j, X, g0 + r), (r, j)


@given(d=st.floats(-10.0, 10.0), lo=st.floats(-5.0, 0.0),
       width=st.one_of(st.just(0.0), st.floats(1e-3, 5.0)), n_bins=st.integers(1, 50),
       step=st.floats(0.0, 1.0))
def test_bin_of_a_distance(d, lo, width, n_bins, step):
    hi = lo + width
    scale = n_bins / width if width > 0.0 else 1.0
    k = KS._bin(d, lo, hi, scale, n_bins)
    if d < lo or d > hi:
        assert k == -1
        return
    assert 0 <= k < n_bins
    if width > 0.0:
        # d lies in its bin [lo + k w, lo + (k + 1) w], w = width / n_bins, up to the
        # rounding of the edges; the last bin also holds hi
        w, tol = width / n_bins, 1e-12 * (abs(lo) + abs(hi) + 1.0)
        assert lo + k * w - tol <= d
        assert d <= lo + (k + 1) * w + tol
    else:
        assert k == 0  # one point range: everything in it is bin 0
    # monotone: a larger distance in the range never falls in a lower bin
    assert KS._bin(d + step * (hi - d), lo, hi, scale, n_bins) >= k


@given(N=st.integers(1, 300))
def test_unit_rows_cover_every_row_block_once(N):
    nb = (N + KS.RB - 1) // KS.RB
    seen = []
    for q in range((nb + 1) // 2):
        for side in (0, 1):
            blk, i0, nr = KS._unit_rows(q, side, N)
            if blk >= 0:
                assert i0 == blk * KS.RB and nr == min(KS.RB, N - i0)
                seen.append(blk)
    assert sorted(seen) == list(range(nb))


def test_iso_value_small_compiles_no_parallel_sweep(monkeypatch):
    def parallel_called(*args):
        raise AssertionError("a small isometric error took the parallel sweep")

    real = KD._iso_parallel
    before = len(real.overloads)  # a small call must not compile it ...
    # ... nor call it, whatever compiled before in this process
    monkeypatch.setattr(KD, "_iso_parallel", parallel_called)
    rng = np.random.default_rng(0)
    E = rng.normal(size=(5, 2))
    G = E + 0.1 * rng.normal(size=E.shape)
    D1 = np.sqrt(((E[:, None] - E[None]) ** 2).sum(-1))
    D2 = np.sqrt(((G[:, None] - G[None]) ** 2).sum(-1))
    iu = np.triu_indices(5, 1)
    assert KI.iso_value(E, G) == KD.isometric_error_kernel(E, G)[0]
    assert np.isclose(KI.iso_value(E, G), np.abs(D1 - D2)[iu].max(), rtol=1e-13, atol=0.0)
    assert KI.iso_value(E[:1], G[:1]) == 0.0
    assert len(real.overloads) == before


def test_iso_small_and_parallel_sweeps_agree():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(900, 8))
    Y = X + 0.05 * rng.normal(size=X.shape)
    assert not KD.serial_work(900, 900, 16)
    bs, M = KD.partition(900)
    best, arg = KD._iso_parallel(X, Y, bs, new_control((M + 1) // 2))
    par = KD.argmax_rows(best, arg, -1.0, 0, 1)
    assert KD.isometric_error_kernel(X, Y) == par
    assert KD._iso_small(X, Y) == par


def test_batch_hard_pair_has_one_specialisation():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    codes = rng.integers(0, 20, size=300)
    hp, hn, _, _ = KL.batch_hard_terms(X, codes, 0.0)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    same = codes[:, None] == codes[None]
    off = ~np.eye(300, dtype=bool)
    assert np.allclose(hp, np.where(same & off, D, -np.inf).max(1), rtol=1e-13, atol=0.0)
    assert np.allclose(hn, np.where(~same, D, np.inf).min(1), rtol=1e-13, atol=0.0)
    # diag passed as a run-time bool: at most one compiled signature, not one per
    # literal (none here when the caller was loaded from numba's cache)
    assert len(KL._bh_pair.overloads) <= 1
    assert len(KL._bh_pair_sub.overloads) <= 1
