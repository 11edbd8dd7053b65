"""Collapse statistics against their brute-force twins, corner cases and properties."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import pdist

from isoapprox import diagnostics as D
from isoapprox.exceptions import InvalidInputError, NoTripletError
from isoapprox.geometry import farthest_pair, min_enclosing_ball
from isoapprox.losses import batch_hard_loss, separation_report

from . import reference as ref
from . import reference_diagnostics as refd
from .conftest import KERNEL_ATOL, KERNEL_RTOL, MOTION_ATOL, MOTION_RTOL, random_orthogonal

LEVELS = np.array([0.0, 0.01, 0.1, 0.25, 0.3, 0.5, 0.75, 0.9, 0.99, 1.0])
#: singular values from LAPACK's SVD against the square roots of the
#: covariance eigenvalues: the eigenvalue route loses about sqrt(eps) of the
#: smallest singular values, which moves the entropy by far less than this
SPECTRAL_RTOL = 1e-7


def _labels(rng, N, P):
    y = rng.integers(0, P, size=N)
    y[:2] = 0
    y[2] = 1
    return y


# --- pair-distance quantiles ------------------------------------------------


@pytest.mark.parametrize("N,n", [(2, 1), (3, 2), (17, 3), (64, 5), (131, 1)])
def test_quantiles_equal_numpy_on_the_same_distances(rng, N, n):
    E = rng.normal(size=(N, n))
    got = D.distance_quantiles(E, LEVELS)
    want = refd.quantiles(E, LEVELS)
    # bit-identical: same distances (same summation order), numpy's interpolation
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.quantile(pdist(E), LEVELS))


def test_quantiles_with_ties_and_duplicates(rng):
    base = rng.normal(size=(4, 3))
    E = np.repeat(base, [5, 1, 7, 3], axis=0)  # duplicate points: many distance-0 pairs
    E = E[rng.permutation(len(E))]
    np.testing.assert_array_equal(D.distance_quantiles(E, LEVELS), refd.quantiles(E, LEVELS))
    lattice = rng.integers(0, 3, size=(40, 2)).astype(float)  # many equal distances
    np.testing.assert_array_equal(D.distance_quantiles(lattice, LEVELS),
                                  refd.quantiles(lattice, LEVELS))


def test_quantiles_all_points_equal():
    E = np.full((9, 4), 3.25)
    np.testing.assert_array_equal(D.distance_quantiles(E, LEVELS), np.zeros(len(LEVELS)))
    s = D.distance_summary(E)
    assert (s.min, s.max, s.mean) == (0.0, 0.0, 0.0)
    assert sum(s.histogram_counts) == 36


def test_quantile_selection_refines_when_candidates_exceed_the_cap(rng):
    E = rng.normal(size=(90, 3))
    want = refd.quantiles(E, LEVELS)
    for cap in (1, 3, 50):
        got = D.distance_summary(E, quantiles=LEVELS, max_candidates=cap, n_bins=64).quantiles
        np.testing.assert_array_equal(got, want)


def test_quantile_scalar_and_shape(rng):
    E = rng.normal(size=(12, 2))
    assert isinstance(D.distance_quantiles(E, 0.5), float)
    out = D.distance_quantiles(E, np.array([0.2, 0.4]))
    assert out.shape == (2,)


@pytest.mark.parametrize("scale", [1e-160, 1e-150, 1e150, 1e160])
def test_quantiles_extreme_scales(rng, scale):
    E = rng.normal(size=(20, 3))
    got = D.distance_quantiles(E * scale, LEVELS)
    want = D.distance_quantiles(E, LEVELS) * scale
    np.testing.assert_allclose(got, want, rtol=KERNEL_RTOL, atol=0)


def test_summary_mean_min_max_and_histogram(rng):
    E = rng.normal(size=(50, 4))
    d = np.array(refd.pair_distances(E))
    s = D.distance_summary(E)
    assert s.min == d.min() and s.max == d.max()
    assert math.isclose(s.mean, math.fsum(d) / len(d), rel_tol=KERNEL_RTOL)
    assert sum(s.histogram_counts) == len(d) == s.n_pairs
    counts, _ = np.histogram(d, bins=np.array(s.histogram_edges))
    # bin boundaries are nominal: allow a value on an edge to fall on either side
    assert np.abs(counts - np.array(s.histogram_counts)).sum() <= 2
    assert s.median == s.quantiles[s.levels.index(0.5)]


def test_results_do_not_depend_on_thread_count(rng):
    E = rng.normal(size=(70, 6))
    y = _labels(rng, 70, 4)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = D.collapse_statistics(E, y, margin=0.3).to_dict()
        numba.set_num_threads(old)
        b = D.collapse_statistics(E, y, margin=0.3).to_dict()
    finally:
        numba.set_num_threads(old)
    assert a == b


@given(
    E=arrays(np.float64, st.tuples(st.integers(2, 14), st.integers(1, 3)),
             elements=st.floats(-10, 10, allow_nan=False, width=32)),
    seed=st.integers(0, 2**16),
)
# found by hypothesis: the reference squared with ``**``, 1 ulp off ``d * d``
@example(E=np.array([[0.0, 4.0], [0.4000000059604645, 0.4000000059604645]]), seed=0)
def test_quantiles_property_invariance(E, seed):
    rng = np.random.default_rng(seed)
    Q = random_orthogonal(rng, E.shape[1])
    t = rng.normal(size=E.shape[1])
    perm = rng.permutation(E.shape[0])
    base = D.distance_quantiles(E, LEVELS)
    np.testing.assert_array_equal(base, refd.quantiles(E, LEVELS))
    moved = D.distance_quantiles(E[perm] @ Q.T + t, LEVELS)
    tol = MOTION_ATOL * max(1.0, float(np.abs(E).max()) + float(np.abs(t).max()))
    np.testing.assert_allclose(moved, base, rtol=MOTION_RTOL, atol=tol)
    # a power-of-two scale is exact
    np.testing.assert_array_equal(D.distance_quantiles(E * 0.125, LEVELS), base * 0.125)


# --- spectrum ---------------------------------------------------------------


@pytest.mark.parametrize("N,n", [(30, 4), (8, 12), (50, 1)])
def test_effective_rank_and_rankme_against_reference(rng, N, n):
    E = rng.normal(size=(N, n)) * rng.uniform(0.1, 3, size=n) + 5.0
    assert math.isclose(D.effective_rank(E), refd.effective_rank(E), rel_tol=SPECTRAL_RTOL)
    assert math.isclose(D.effective_rank(E, squared=True), refd.effective_rank(E, squared=True),
                        rel_tol=SPECTRAL_RTOL)
    assert D.effective_rank(E, squared=True) <= D.effective_rank(E) + 1e-12
    assert math.isclose(D.rankme(E), refd.rankme(E), rel_tol=KERNEL_RTOL)
    assert 1.0 - 1e-12 <= D.effective_rank(E) <= min(N - 1, n) + 1e-9


def test_effective_rank_known_values(rng):
    Q = random_orthogonal(rng, 5)
    cross = np.vstack([np.eye(5)[:3], -np.eye(5)[:3]]) @ Q.T  # 3 equal singular values
    assert math.isclose(D.effective_rank(cross), 3.0, rel_tol=1e-12)
    line = np.outer(rng.normal(size=10), rng.normal(size=4))
    assert math.isclose(D.effective_rank(line, center=False), 1.0, rel_tol=1e-9)
    assert D.effective_rank(np.ones((6, 3))) == 0.0  # all points equal: zero spread
    assert D.effective_rank(np.ones((1, 3))) == 0.0  # N = 1
    assert D.rankme(np.zeros((4, 3))) == 0.0


def test_spectrum_is_invariant_under_motions_and_scaling(rng):
    E = rng.normal(size=(25, 6))
    Q = random_orthogonal(rng, 6)
    er = D.effective_rank(E)
    assert math.isclose(D.effective_rank(E @ Q.T + 4.0), er, rel_tol=1e-9)
    assert math.isclose(D.effective_rank(E * 1e150), er, rel_tol=1e-12)
    assert math.isclose(D.rankme(E @ Q.T), D.rankme(E), rel_tol=1e-9)


# --- normalised statistics --------------------------------------------------


def test_std_uniformity_alignment_against_reference(rng):
    E = rng.normal(size=(40, 5))
    y = _labels(rng, 40, 3)
    assert math.isclose(D.std_of_l2_normalized(E), refd.std_of_l2_normalized(E),
                        rel_tol=KERNEL_RTOL)
    for t in (0.5, 2.0, 7.0):
        assert math.isclose(D.uniformity(E, t=t), refd.uniformity(E, t), rel_tol=KERNEL_RTOL,
                            abs_tol=KERNEL_ATOL)
    for a in (1.0, 2.0, 0.5):
        assert math.isclose(D.alignment(E, y, alpha=a), refd.alignment(E, y, a),
                            rel_tol=KERNEL_RTOL)


def test_uniformity_cannot_underflow():
    # exp(-t * 4) underflows to 0 for t = 1e3; the exact value is -4t
    E = np.array([[1.0, 0.0], [-1.0, 0.0]])
    assert D.uniformity(E, t=1e3) == -4e3
    E = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    want = -2e3 + math.log((2 * math.exp(0.0) + math.exp(-2e3)) / 3)  # d^2 = 2, 2, 4
    assert math.isclose(D.uniformity(E, t=1e3), want, rel_tol=1e-15)


def test_normalised_statistics_known_values(rng):
    E = np.tile([[2.0, -1.0, 0.5]], (6, 1)) * rng.uniform(0.5, 3, size=(6, 1))
    assert D.std_of_l2_normalized(E) == 0.0  # one direction
    assert D.uniformity(E) == 0.0
    assert D.alignment(E, [0, 0, 0, 1, 1, 1]) == 0.0
    Z = rng.normal(size=(4000, 16))
    # isotropic directions: std close to 1 / sqrt(n)
    assert abs(D.std_of_l2_normalized(Z) - 0.25) < 0.01


def test_normalised_statistics_in_one_dimension():
    E = np.array([[1.0], [2.0], [-3.0], [4.0]])  # directions +1, +1, -1, +1
    want = math.log((3.0 + 3.0 * math.exp(-8.0)) / 6.0)  # 3 pairs at d^2 = 0, 3 at d^2 = 4
    assert math.isclose(D.uniformity(E), want, rel_tol=1e-15)
    assert math.isclose(D.uniformity(E), refd.uniformity(E), rel_tol=KERNEL_RTOL)
    assert D.alignment(E, [0, 0, 1, 1]) == 2.0  # (+1, +1): 0 and (-1, +1): 4
    assert D.std_of_l2_normalized(E) == refd.std_of_l2_normalized(E) == 1.0


def test_normalised_statistics_are_safe_at_extreme_scales(rng):
    E = rng.normal(size=(10, 3))
    y = _labels(rng, 10, 2)
    for s in (1e-200, 1e200):
        assert math.isclose(D.uniformity(E * s), D.uniformity(E), rel_tol=1e-12)
        assert math.isclose(D.std_of_l2_normalized(E * s), D.std_of_l2_normalized(E),
                            rel_tol=1e-12)
        assert math.isclose(D.alignment(E * s, y), D.alignment(E, y), rel_tol=1e-12)


def test_zero_rows_raise_in_single_statistics_and_are_left_out_of_the_summary(rng):
    E = rng.normal(size=(8, 3))
    E[5] = 0.0
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    for fn in (D.std_of_l2_normalized, D.uniformity):
        with pytest.raises(InvalidInputError, match=r"no zero rows.*1 zero row\(s\).*index 5"):
            fn(E)
    with pytest.raises(InvalidInputError, match="no zero rows"):
        D.alignment(E, y)
    st_ = D.collapse_statistics(E, y)
    keep = np.arange(8) != 5
    assert st_.n_zero_rows == 1
    assert st_.uniformity == D.uniformity(E[keep])
    assert st_.alignment == D.alignment(E[keep], y[keep])
    assert st_.std_l2_normalized == D.std_of_l2_normalized(E[keep])
    Z = np.zeros((4, 2))
    st0 = D.collapse_statistics(Z, [0, 0, 1, 1], margin=0.5)
    assert st0.n_zero_rows == 4
    assert st0.uniformity is None and st0.alignment is None and st0.std_l2_normalized is None
    assert st0.effective_rank == 0.0 and st0.rankme == 0.0 and st0.diameter == 0.0


# --- anchors: losses, active triplets, class spread -------------------------


@pytest.mark.parametrize("margin", [0.0, 0.3, 2.0])
def test_anchor_statistics_against_reference(rng, margin):
    E = rng.normal(size=(23, 3))
    y = _labels(rng, 23, 4)
    s = D.collapse_statistics(E, y, margin=margin)
    for red, attr in (("mean", "batch_hard_mean"), ("max", "batch_hard_max"),
                      ("sum", "batch_hard_sum")):
        assert math.isclose(getattr(s, attr), ref.batch_hard_loss(E, y, margin, red),
                            rel_tol=KERNEL_RTOL, abs_tol=KERNEL_ATOL)
        assert getattr(s, attr) == batch_hard_loss(E, y, margin=margin, reduction=red)
    assert math.isclose(s.soft_margin_mean, refd.soft_margin(E, y), rel_tol=KERNEL_RTOL)
    assert s.active_fraction == refd.active_fraction(E, y, margin)
    assert s.active_fraction == D.active_triplet_fraction(E, y, margin=margin)
    rep = separation_report(E, y, margin=margin)
    assert (s.n_violated, s.n_triplets, s.worst_slack, s.worst_triplet) == (
        rep.n_violated, rep.n_triplets, rep.worst_slack, rep.worst_triplet)
    diam, i, j = farthest_pair(E)
    assert (s.diameter, s.diameter_pair) == (diam, (i, j))
    ball = min_enclosing_ball(E)
    assert (s.meb_radius, s.meb_lower) == (ball.radius, ball.lower)


@pytest.mark.parametrize("sizes", [
    (20, 8, 2),   # class 0 outnumbers the rest: negatives sorted, positives searched
    (19, 40),     # 18 positives < 40 negatives: binary search in the positives
    (3, 3, 3),    # a few positives: linear scan
])
def test_active_and_violated_counts_in_every_branch(rng, sizes):
    y = np.repeat(np.arange(len(sizes)), sizes)
    E = rng.normal(size=(len(y), 2))
    E[5] = E[0]  # a duplicate: ties between positives and negatives
    for margin in (0.0, 0.5):
        assert D.active_triplet_fraction(E, y, margin=margin) == refd.active_fraction(E, y, margin)
        s = D.collapse_statistics(E, y, margin=margin)
        assert s.n_violated == ref.n_violated(E, y, margin, 1e-9)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_collapse_statistics_at_extreme_scales(rng, scale):
    E = rng.normal(size=(12, 3))
    y = _labels(rng, 12, 3)
    a = D.collapse_statistics(E, y, margin=0.5)
    b = D.collapse_statistics(E * scale, y, margin=0.5 * scale, atol=1e-9 * scale)
    for name in ("batch_hard_mean", "batch_hard_max", "meb_radius", "rms_norm", "worst_slack"):
        assert math.isclose(getattr(b, name), getattr(a, name) * scale, rel_tol=KERNEL_RTOL)
    np.testing.assert_allclose(b.distances.quantiles, np.array(a.distances.quantiles) * scale,
                               rtol=KERNEL_RTOL)
    for name in ("effective_rank", "rankme", "uniformity", "alignment", "std_l2_normalized"):
        assert math.isclose(getattr(b, name), getattr(a, name), rel_tol=1e-12)
    assert (b.n_active, b.n_violated) == (a.n_active, a.n_violated)


def test_smallest_batch(rng):
    E = np.array([[0.0], [1.0], [3.0]])
    s = D.collapse_statistics(E, [0, 0, 1], margin=0.5)
    assert s.distances.n_pairs == 3 and s.diameter == 3.0 and s.distances.min == 1.0
    assert s.n_triplets == 2 and s.batch_hard_max == ref.batch_hard_loss(E, [0, 0, 1], 0.5, "max")


@given(
    E=arrays(np.float64, st.tuples(st.integers(3, 12), st.integers(1, 3)),
             elements=st.floats(-5, 5, allow_nan=False, width=16)),
    data=st.data(),
)
def test_collapse_statistics_property_against_brute_force(E, data):
    N = E.shape[0]
    y = np.array(data.draw(st.lists(st.integers(0, 2), min_size=N, max_size=N)))
    y[:2] = 0
    y[2] = 1
    margin = data.draw(st.sampled_from([0.0, 0.25, 1.0]))
    s = D.collapse_statistics(E, y, margin=margin)
    np.testing.assert_array_equal(s.distances.quantiles, refd.quantiles(E, s.distances.levels))
    assert s.active_fraction == refd.active_fraction(E, y, margin)
    assert s.n_violated == ref.n_violated(E, y, margin, 1e-9)
    assert math.isclose(s.batch_hard_mean, ref.batch_hard_loss(E, y, margin, "mean"),
                        rel_tol=KERNEL_RTOL, abs_tol=KERNEL_ATOL)
    perm = np.random.default_rng(N).permutation(N)
    t = D.collapse_statistics(E[perm], y[perm], margin=margin)
    assert t.distances.quantiles == s.distances.quantiles
    assert (t.n_active, t.n_violated) == (s.n_active, s.n_violated)
    assert math.isclose(t.batch_hard_mean, s.batch_hard_mean, rel_tol=KERNEL_RTOL,
                        abs_tol=KERNEL_ATOL)


def test_collapsed_embedding_corner_cases():
    E = np.zeros((6, 3))
    y = [0, 0, 1, 1, 2, 2]
    s = D.collapse_statistics(E, y, margin=0.2)
    # 0.2 summed six times and divided by six: exact up to the rounding of the sum
    assert math.isclose(s.batch_hard_mean, 0.2, rel_tol=KERNEL_RTOL)
    assert s.batch_hard_max == 0.2 and s.active_fraction == 1.0
    assert s.soft_margin_mean == math.log(2.0)
    assert D.collapse_statistics(E, y, margin=0.0).active_fraction == 0.0
    assert s.distances.quantiles == (0.0,) * len(s.distances.levels)


def test_class_spread_against_reference(rng):
    E = rng.normal(size=(26, 3))
    y = _labels(rng, 26, 5)
    y[25] = 7  # a singleton class
    cs = D.class_spread(E, y)
    classes, diam, inter, near = refd.class_spread(E, y)
    assert cs.classes.tolist() == classes
    np.testing.assert_array_equal(cs.diameter, diam)
    np.testing.assert_array_equal(cs.min_inter, inter)
    np.testing.assert_allclose(cs.nearest_centroid, near, rtol=KERNEL_RTOL, atol=KERNEL_ATOL)
    assert cs.diameter[classes.index(7)] == 0.0 and cs.meb_radius[classes.index(7)] == 0.0
    E2 = rng.normal(size=(12, 2))
    y2 = np.repeat([0, 1, 2], 4)
    cs2 = D.class_spread(E2, y2)
    for c in range(3):
        assert math.isclose(cs2.meb_radius[c], ref.meb_radius_bruteforce_2d(E2[y2 == c]),
                            rel_tol=1e-9)


def test_class_spread_string_labels_and_nearest_class():
    E = [[0.0], [1.0], [10.0], [11.0], [3.0], [4.0]]
    cs = D.class_spread(E, ["a", "a", "c", "c", "b", "b"])
    assert cs.classes.tolist() == ["a", "b", "c"]
    assert cs.nearest_centroid_class.tolist() == ["b", "a", "b"]
    assert cs.nearest_centroid.tolist() == [3.0, 3.0, 7.0]


def test_large_path_matches_small_path(rng):
    # several row blocks and column tiles, remainder rows, plus duplicates
    E = rng.normal(size=(203, 7))
    E[100:110] = E[0]
    y = _labels(rng, 203, 6)
    s = D.collapse_statistics(E, y, margin=0.1)
    np.testing.assert_array_equal(s.distances.quantiles, np.quantile(pdist(E), s.distances.levels))
    assert s.diameter == pdist(E).max() and s.distances.min == 0.0
    assert s.n_violated == separation_report(E, y, margin=0.1).n_violated


# --- errors -----------------------------------------------------------------


def test_errors():
    with pytest.raises(InvalidInputError, match=r"at least 2 point"):
        D.distance_quantiles([[1.0, 2.0]], 0.5)
    with pytest.raises(InvalidInputError, match=r"`quantiles` must lie in \[0, 1\]; got \[1.5\]"):
        D.distance_quantiles([[0.0], [1.0]], [1.5])
    with pytest.raises(InvalidInputError, match="must be a number or a 1-D sequence"):
        D.distance_summary([[0.0], [1.0]], quantiles=[[0.5]])
    with pytest.raises(TypeError, match="`quantiles` must be real numbers"):
        D.distance_quantiles([[0.0], [1.0]], ["median"])
    with pytest.raises(InvalidInputError, match="`n_bins` must be a multiple of 64; got 100"):
        D.distance_summary([[0.0], [1.0]], n_bins=100)
    with pytest.raises(InvalidInputError, match="`t` must be > 0; got 0.0"):
        D.uniformity([[1.0], [2.0]], t=0.0)
    with pytest.raises(InvalidInputError, match="`alpha` must be > 0"):
        D.alignment([[1.0], [2.0]], [0, 0], alpha=-1.0)
    with pytest.raises(InvalidInputError, match="a positive pair.*all singletons"):
        D.alignment([[1.0], [2.0]], [0, 1])
    with pytest.raises(InvalidInputError, match="`eps` must be >= 0"):
        D.rankme([[1.0]], eps=-1.0)
    with pytest.raises(InvalidInputError, match="at least two classes to compare classes"):
        D.class_spread([[0.0], [1.0]], [3, 3])
    with pytest.raises(NoTripletError, match="at least two classes"):
        D.collapse_statistics([[0.0], [1.0]], [3, 3])
    with pytest.raises(NoTripletError, match="all singletons"):
        D.active_triplet_fraction([[0.0], [1.0]], [0, 1])
    with pytest.raises(InvalidInputError, match="non-finite"):
        D.collapse_statistics([[0.0], [np.nan], [1.0]], [0, 0, 1])
    with pytest.raises(InvalidInputError, match="`y` must have one label per point, length 3"):
        D.collapse_statistics([[0.0], [2.0], [1.0]], [0, 0])
    with pytest.raises(InvalidInputError, match="`uniformity_t` must be > 0"):
        D.collapse_statistics([[0.0], [2.0], [1.0]], [0, 0, 1], uniformity_t=-2)
    with pytest.raises(InvalidInputError, match="the median was not computed"):
        _ = D.distance_summary([[0.0], [1.0]], quantiles=(0.1,)).median


def test_class_spread_nearest_class_and_violated(rng):
    E = rng.normal(size=(40, 2))
    y = _labels(rng, 40, 4)
    cs = D.class_spread(E, y, margin=0.3)
    Dm = np.sqrt(((E[:, None] - E[None]) ** 2).sum(-1))
    for k, c in enumerate(cs.classes.tolist()):
        inside, outside = np.flatnonzero(y == c), np.flatnonzero(y != c)
        sub = Dm[np.ix_(inside, outside)]
        a, m = np.unravel_index(np.argmin(sub), sub.shape)  # first in row-major order
        assert cs.nearest_class[k] == y[outside[m]]
        want = sum(1 for a in inside for p in inside for m in outside
                   if p != a and Dm[a, p] + 0.3 - Dm[a, m] > 0.0)
        assert cs.violated[k] == want


# --- one type, one entry point: the quick level ---------------------------------------------


def test_quick_level_is_the_same_type_and_entry_point(rng):
    import json

    y = np.repeat(np.arange(5), 4)
    E = 3.0 * rng.normal(size=(5, 3))[y] + rng.normal(size=(20, 3))
    q = D.collapse_statistics(E, y, margin=0.2, quick=True)
    full = D.collapse_statistics(E, y, margin=0.2)
    assert D.QuickStatistics is D.CollapseStatistics
    assert type(q) is type(full) is D.CollapseStatistics
    assert q.quick and not full.quick
    # the former entry point is the quick level, number for number
    old = D.quick_statistics(E, y, margin=0.2)
    assert old.quick and old.scalars() == q.scalars()
    # what the quick level does not compute is None, never a made-up number
    for name in ("distances", "diameter_pair", "meb_radius", "meb_lower", "rankme",
                 "std_l2_normalized", "uniformity", "alignment", "n_zero_rows"):
        assert getattr(q, name) is None, name
        assert getattr(full, name) is not None, name
    assert q.classes.meb_radius is None and q.classes.nearest_centroid is None
    # the per-class section both levels hold is equal
    for name in ("classes", "sizes", "diameter", "min_inter", "nearest_class", "violated"):
        assert getattr(q.classes, name).tolist() == getattr(full.classes, name).tolist(), name
    assert (q.diameter, q.min_distance) == (full.distances.max, full.distances.min)
    assert q.class_gap.tolist() == full.classes.min_inter.tolist()
    json.dumps(q.to_dict())
    assert "quick" not in full.to_dict() and "diameter" not in full.to_dict()


def test_quick_must_be_a_flag():
    with pytest.raises(TypeError, match="`quick` must be True or False; got"):
        D.collapse_statistics([[0.0], [1.0], [3.0]], [0, 0, 1], quick="yes")
