"""Losses, batch-hard mining and triplet separation against brute force."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import isoapprox as ia
from isoapprox.diagnostics import collapse_statistics, quick_statistics
from isoapprox.exceptions import InvalidInputError, NoTripletError
from isoapprox.kernels import losses as KL

from . import reference as ref
from .conftest import KERNEL_ATOL, KERNEL_RTOL, labelled_cloud, random_orthogonal, scale_of

REDUCTIONS = ("sum", "mean", "max")


def assert_close(actual, expected, *inputs):
    np.testing.assert_allclose(
        actual, expected, rtol=KERNEL_RTOL, atol=KERNEL_ATOL * scale_of(*inputs)
    )


# --- brute-force equivalence ------------------------------------------------------


@pytest.mark.parametrize("n_points,dim,n_classes", [(3, 1, 2), (7, 2, 3), (12, 3, 4), (20, 5, 2)])
@pytest.mark.parametrize("margin", [0.0, 0.3, 2.0])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_losses_match_bruteforce(rng, n_points, dim, n_classes, margin, reduction):
    E, y = labelled_cloud(rng, n_points, dim, n_classes)
    assert_close(
        ia.batch_hard_loss(E, y, margin=margin, reduction=reduction),
        ref.batch_hard_loss(E, y, margin, reduction),
        E,
    )
    assert_close(
        ia.triplet_loss(E, y, margin=margin, reduction=reduction),
        ref.triplet_loss(E, y, margin, reduction),
        E,
    )


@pytest.mark.parametrize("sizes", [(40, 25, 25), (60, 3), (20, 20, 2)])
@pytest.mark.parametrize("spread", [0.0, 0.3, 5.0])
@pytest.mark.parametrize("margin", [0.0, 0.7])
def test_triplet_sum_matches_bruteforce_with_many_positives(rng, sizes, spread, margin):
    # anchors with more than 16 positives search their sorted positives; an
    # anchor whose class outnumbers the rest sorts the negatives instead.  Integer
    # grid points tie many distances; spread 0 collapses every class to a point.
    y = np.repeat(np.arange(len(sizes)), sizes)
    centres = rng.integers(-2, 3, size=(len(sizes), 2)).astype(float)
    E = centres[y] + np.round(spread * rng.normal(size=(len(y), 2)))
    want = ref.triplet_loss(E, y, margin, "sum")
    assert_close(ia.triplet_loss(E, y, margin=margin, reduction="sum"), want, E)
    st = collapse_statistics(E, y, margin=margin)
    assert_close(st.triplet_sum, want, E)
    assert_close(quick_statistics(E, y, margin=margin).triplet_sum, want, E)
    assert st.n_active == sum(t > 0 for t in ref.triplet_terms(E, y, margin))


def _layout(rng, N, layout):
    if layout == "k4":  # P x K batches, K = 4: the linear sweep of few positives
        return rng.permutation(np.arange(N) // 4)
    # one class outnumbering the rest (negatives sorted), one with more than 16
    # positives (binary search), small classes and singletons
    big = int(0.55 * N)
    sizes = [big, 20, 5, 3, 2] + [1] * (N - big - 30)
    return rng.permutation(np.repeat(np.arange(len(sizes)), sizes))


@pytest.mark.parametrize(
    ("N", "n", "layout", "grid"),
    [(70, 2, "k4", False), (70, 3, "mixed", True), (203, 2, "k4", True), (203, 3, "mixed", False),
     (1100, 2, "k4", False), (1100, 2, "mixed", True)],
)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_triplet_kernel_per_anchor_matches_bruteforce(rng, N, n, layout, grid, margin):
    # rows and tiles cut at 32 anchors and 64 columns (N = 70, 203); N = 1100 runs
    # the parallel kernel.  Integer grids tie many distances.  In n <= 3 numpy's
    # distances are those of the kernel bit for bit, so the counts are exact.
    y = _layout(rng, N, layout)
    E = rng.integers(-2, 3, size=(N, n)).astype(float) if grid else rng.normal(size=(N, n))
    sums, counts, active = KL.triplet_loss_kernel(E, y.astype(np.int64), margin)
    # every anchor, or 100 of them (the last one included) for N = 1100
    anchors = range(N) if N < 1000 else np.union1d(rng.choice(N, 99, replace=False), [N - 1])
    for a in anchors:
        d = np.sqrt(((E[a] - E) ** 2).sum(axis=1))
        same = y == y[a]
        same[a] = False
        t = d[same] + margin
        v = d[y != y[a]]
        diff = t[:, None] - v[None, :]
        assert counts[a] == diff.size
        assert active[a] == int(np.count_nonzero(diff > 0.0))
        want = math.fsum(np.maximum(diff, 0.0).ravel().tolist())
        assert sums[a] == pytest.approx(want, rel=KERNEL_RTOL, abs=KERNEL_ATOL)
        if t.size <= 16 and t.size <= v.size and N < 1000:
            # few positives: the documented order, bit for bit (per negative in
            # index order, its terms over the ascending shifted positives)
            ts = sorted(t.tolist())
            exact = 0.0
            for x in v.tolist():
                h = 0.0
                for tq in ts:
                    if tq > x:
                        h += tq - x
                exact += h
            assert sums[a] == exact
    if N > 1000:  # the parallel kernel and its serial twin agree bit for bit
        ser = KL._triplet_loss_kernel_ser(E, y.astype(np.int64), margin)
        for u, w in zip((sums, counts, active), ser, strict=True):
            assert np.array_equal(u, w)


@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_batch_hard_max_equals_worst_single_triplet(rng, margin):
    for _ in range(5):
        E, y = labelled_cloud(rng, 15, 3, 4)
        worst = max(ref.triplet_terms(E, y, margin))
        assert ia.batch_hard_loss(E, y, margin=margin, reduction="max") == pytest.approx(
            worst, rel=KERNEL_RTOL, abs=KERNEL_ATOL
        )
        assert ia.batch_hard_loss(E, y, margin=margin, reduction="max") == ia.triplet_loss(
            E, y, margin=margin, reduction="max"
        )


def test_hardest_pairs_match_bruteforce(rng):
    E, y = labelled_cloud(rng, 25, 4, 5)
    hp = ia.hardest_pairs(E, y)
    D = ref.pairwise(E)
    for a in range(len(y)):
        pos = [p for p in range(len(y)) if p != a and y[p] == y[a]]
        neg = [m for m in range(len(y)) if y[m] != y[a]]
        assert hp.valid[a] == bool(pos and neg)
        if pos:
            assert hp.positive_index[a] == max(pos, key=lambda p: (D[a, p], -p))
            assert_close(hp.hardest_positive[a], max(D[a, p] for p in pos), E)
        else:
            assert hp.positive_index[a] == -1 and hp.hardest_positive[a] == -np.inf
        if neg:
            assert hp.negative_index[a] == min(neg, key=lambda m: (D[a, m], m))
            assert_close(hp.hardest_negative[a], min(D[a, m] for m in neg), E)


def test_ties_go_to_smallest_index():
    # anchor 0 is equidistant to positives 1, 2 and to negatives 3, 4
    E = np.array([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    y = [0, 0, 0, 1, 1]
    hp = ia.hardest_pairs(E, y)
    assert hp.positive_index[0] == 1
    assert hp.negative_index[0] == 3


@pytest.mark.parametrize("margin", [0.0, 0.25])
@pytest.mark.parametrize("atol", [0.0, 1e-3])
def test_separation_report_matches_bruteforce(rng, margin, atol):
    for _ in range(4):
        E, y = labelled_cloud(rng, 14, 2, 3)
        rep = ia.separation_report(E, y, margin=margin, atol=atol)
        assert rep.n_violated == ref.n_violated(E, y, margin, atol)
        assert rep.n_triplets == sum(1 for _ in ref.triplets(y))
        assert_close(rep.worst_slack, ref.worst_slack(E, y, margin), E)
        a, p, m = rep.worst_triplet
        D = ref.pairwise(E)
        assert_close(D[a, m] - D[a, p] - margin, rep.worst_slack, E)
        assert rep.separated == (rep.n_violated == 0)
        assert ia.is_triplet_separated(E, y, margin=margin, atol=atol) == rep.separated


def test_separated_iff_losses_vanish(rng):
    for margin in (0.0, 0.5):
        # well separated clusters
        y = np.repeat(np.arange(3), 4)
        E = 10.0 * np.eye(3)[y] + 0.01 * rng.normal(size=(12, 3))
        assert ia.is_triplet_separated(E, y, margin=margin)
        for r in REDUCTIONS:
            assert ia.batch_hard_loss(E, y, margin=margin, reduction=r) == 0.0
            assert ia.triplet_loss(E, y, margin=margin, reduction=r) == 0.0
        # shuffled labels: violated
        y2 = np.array([0, 1, 2] * 4)
        assert not ia.is_triplet_separated(E, y2, margin=margin)
        assert ia.batch_hard_loss(E, y2, margin=margin, reduction="max") > 0.0


# --- known answers -----------------------------------------------------------------


@pytest.mark.parametrize("margin", [0.0, 0.2, 1.0])
def test_collapsed_embedding_losses_equal_margin(margin):
    y = np.array([0, 0, 1, 1, 1, 2])
    E = np.full((6, 3), 4.2)
    assert ia.batch_hard_loss(E, y, margin=margin, reduction="mean") == margin
    assert ia.batch_hard_loss(E, y, margin=margin, reduction="max") == margin
    assert ia.batch_hard_loss(E, y, margin=margin, reduction="sum") == pytest.approx(5 * margin)
    assert ia.triplet_loss(E, y, margin=margin, reduction="mean") == pytest.approx(margin)
    # with margin 0 the collapsed embedding is triplet-separated
    assert ia.is_triplet_separated(E, y, margin=margin) == (margin == 0.0)


def test_singleton_anchors_are_skipped():
    # class 2 is a singleton: anchor 4 has no positive and is not counted in the mean
    E = np.array([[0.0], [1.0], [5.0], [6.0], [2.0]])
    y = [0, 0, 1, 1, 2]
    terms = ref.batch_hard_terms(E, y, 0.5)
    assert len(terms) == 4
    assert ia.batch_hard_loss(E, y, margin=0.5) == pytest.approx(sum(terms) / 4)


def test_duplicate_points_give_exact_zero_distances():
    E = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [3.0, 2.0]])
    y = [0, 0, 1, 1]
    hp = ia.hardest_pairs(E, y)
    assert hp.hardest_positive[0] == 0.0
    assert hp.hardest_negative[0] == 0.0
    assert ia.batch_hard_loss(E, y, margin=0.0, reduction="max") == 2.0


def test_near_duplicates_far_from_origin_keep_precision():
    # a dot-product formula loses every digit here; direct differences keep them
    base = np.array([1e6, -2e6, 3e6])
    E = np.vstack([base, base + [1e-5, 0, 0], base + [0, 3e-5, 0], base + [0, 0, 2e-5]])
    y = [0, 0, 1, 1]
    hp = ia.hardest_pairs(E, y)
    # the stored offsets differ from 1e-5 by rounding of base + 1e-5; their exact
    # values are the (Sterbenz-exact) coordinate differences
    exact_pos = E[1, 0] - E[0, 0]
    exact_neg = min(E[2, 1] - E[0, 1], E[3, 2] - E[0, 2])
    assert hp.hardest_positive[0] == pytest.approx(exact_pos, rel=1e-15)
    assert hp.hardest_negative[0] == pytest.approx(exact_neg, rel=1e-15)
    # the dot-product expansion gets this wrong by orders of magnitude
    sq = (E**2).sum(1)
    gemm = np.sqrt(np.maximum(sq[0] + sq[1] - 2 * E[0] @ E[1], 0.0))
    assert abs(gemm - exact_pos) > 1e3 * abs(hp.hardest_positive[0] - exact_pos)


@pytest.mark.parametrize("scale", [1e-150, 1e-30, 1e30, 1e150])
def test_extreme_scales(rng, scale):
    E, y = labelled_cloud(rng, 9, 3, 3)
    base = ia.batch_hard_loss(E, y, margin=0.3, reduction="sum")
    scaled = ia.batch_hard_loss(E * scale, y, margin=0.3 * scale, reduction="sum")
    np.testing.assert_allclose(scaled / scale, base, rtol=1e-12)
    assert ia.triplet_loss(E * scale, y, margin=0.3 * scale) / scale == pytest.approx(
        ia.triplet_loss(E, y, margin=0.3), rel=1e-12
    )


# --- invariances (hypothesis) ----------------------------------------------------


@st.composite
def labelled_embeddings(draw):
    n_points = draw(st.integers(3, 12))
    dim = draw(st.integers(1, 4))
    n_classes = draw(st.integers(2, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    E, y = labelled_cloud(rng, n_points, dim, n_classes, scale=draw(st.floats(0.01, 100.0)))
    return E, y, seed


@pytest.mark.property
@given(labelled_embeddings(), st.floats(0.0, 2.0), st.sampled_from(REDUCTIONS))
def test_loss_invariant_under_rigid_motions_and_permutations(data, margin, reduction):
    E, y, seed = data
    rng = np.random.default_rng(seed + 1)
    Q = random_orthogonal(rng, E.shape[1])
    b = rng.normal(size=E.shape[1]) * 10
    perm = rng.permutation(len(y))
    base = ia.batch_hard_loss(E, y, margin=margin, reduction=reduction)
    moved = ia.batch_hard_loss(E @ Q.T + b, y, margin=margin, reduction=reduction)
    permuted = ia.batch_hard_loss(E[perm], y[perm], margin=margin, reduction=reduction)
    tol = 1e-9 * scale_of(E, b)
    assert moved == pytest.approx(base, rel=1e-9, abs=tol)
    assert permuted == pytest.approx(base, rel=1e-12, abs=1e-12 * scale_of(E))
    t_base = ia.triplet_loss(E, y, margin=margin, reduction=reduction)
    assert ia.triplet_loss(E @ Q.T + b, y, margin=margin, reduction=reduction) == pytest.approx(
        t_base, rel=1e-9, abs=tol
    )


@pytest.mark.property
@given(labelled_embeddings(), st.floats(0.0, 2.0), st.floats(0.1, 10.0))
def test_loss_homogeneous_under_scaling(data, margin, c):
    E, y, _ = data
    for r in REDUCTIONS:
        a = ia.batch_hard_loss(c * E, y, margin=c * margin, reduction=r)
        b = c * ia.batch_hard_loss(E, y, margin=margin, reduction=r)
        assert a == pytest.approx(b, rel=1e-12, abs=1e-12 * c * scale_of(E, [margin]))


@pytest.mark.property
@given(labelled_embeddings(), st.floats(0.0, 2.0))
def test_loss_orderings(data, margin):
    E, y, _ = data
    bh_max = ia.batch_hard_loss(E, y, margin=margin, reduction="max")
    bh_mean = ia.batch_hard_loss(E, y, margin=margin, reduction="mean")
    tr_mean = ia.triplet_loss(E, y, margin=margin, reduction="mean")
    assert 0.0 <= tr_mean <= bh_mean + 1e-12 * scale_of(E) <= bh_max + 2e-12 * scale_of(E)
    # margin monotonicity (the authors' remark: L_0 <= L_alpha)
    assert ia.batch_hard_loss(E, y, margin=0.0, reduction="max") <= bh_max


# --- pair losses --------------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_contrastive_and_margin_losses_match_bruteforce(rng, reduction):
    E, y = labelled_cloud(rng, 11, 3, 3)
    for margin, pos_margin in [(0.0, 0.0), (1.5, 0.0), (2.0, 0.5)]:
        terms = ref.pair_terms(E, y, pos_margin, margin)
        assert_close(
            ia.contrastive_loss(E, y, margin=margin, pos_margin=pos_margin, reduction=reduction),
            ref.reduce(terms, reduction),
            E,
        )
    for margin, beta in [(0.0, 1.0), (0.2, 1.2), (0.5, 3.0)]:
        terms = ref.pair_terms(E, y, beta - margin, beta + margin)
        assert_close(
            ia.margin_loss(E, y, margin=margin, beta=beta, reduction=reduction),
            ref.reduce(terms, reduction),
            E,
        )


def test_pair_loss_zero_sets():
    y = np.array([0, 0, 1, 1])
    # class-collapsed, classes 2 apart: in both zero sets
    E = np.array([[0.0], [0.0], [2.0], [2.0]])
    rep = ia.contrastive_report(E, y, margin=1.5)
    assert rep.zero_loss and rep.value == 0.0 and rep.n_active == 0
    assert ia.margin_loss_report(E, y, margin=0.5, beta=1.0).zero_loss
    # classes 1 apart: contrastive with margin 1.5 is violated by 0.5 on 4 pairs
    E2 = np.array([[0.0], [0.0], [1.0], [1.0]])
    rep2 = ia.contrastive_report(E2, y, margin=1.5, reduction="sum")
    assert not rep2.zero_loss
    assert rep2.worst == pytest.approx(0.5) and rep2.n_active == 4
    assert rep2.value == pytest.approx(2.0)
    assert rep2.worst_pair == (0, 2)
    assert rep2.n_pairs == 6


# --- errors --------------------------------------------------------------------------


def test_errors_name_the_argument():
    E = np.zeros((4, 2))
    y = [0, 0, 1, 1]
    with pytest.raises(InvalidInputError, match=r"`margin` must be >= 0; got -0.1"):
        ia.batch_hard_loss(E, y, margin=-0.1)
    with pytest.raises(InvalidInputError, match=r"`margin` must be finite; got nan"):
        ia.triplet_loss(E, y, margin=float("nan"))
    with pytest.raises(TypeError, match=r"`margin` must be a real number; got 'a'"):
        ia.triplet_loss(E, y, margin="a")
    with pytest.raises(
        InvalidInputError,
        match=r"`reduction` must be one of 'sum', 'mean', 'max', 'mean_nonzero'; got 'median'",
    ):
        ia.batch_hard_loss(E, y, reduction="median")
    with pytest.raises(TypeError, match=r"`reduction` must be one of"):
        ia.triplet_loss(E, y, reduction=None)
    with pytest.raises(
        InvalidInputError, match=r"`E` must be a 2-D array of shape \(N, n\); got shape \(4,\)"
    ):
        ia.batch_hard_loss(np.zeros(4), y)
    with pytest.raises(
        InvalidInputError, match=r"`y` must have one label per point, length 4; got length 3"
    ):
        ia.batch_hard_loss(E, [0, 0, 1])
    with pytest.raises(
        InvalidInputError,
        match=(
            r"`E` must contain only finite values; "
            r"got 1 non-finite value\(s\), the first at \[2, 1\] = inf"
        ),
    ):
        E2 = E.copy()
        E2[2, 1] = np.inf
        ia.batch_hard_loss(E2, y)
    with pytest.raises(InvalidInputError, match=r"`E` must hold at least 2 point\(s\)"):
        ia.batch_hard_loss(np.zeros((1, 2)), [0])
    with pytest.raises(
        NoTripletError, match=r"at least two classes .* got one class only \(4 point\(s\)\)"
    ):
        ia.batch_hard_loss(E, [3, 3, 3, 3])
    with pytest.raises(NoTripletError, match=r"a class with at least two points .* all singletons"):
        ia.triplet_loss(E, [0, 1, 2, 3])
    with pytest.raises(NoTripletError):
        ia.is_triplet_separated(E, [0, 1, 2, 3])
    with pytest.raises(NoTripletError):
        ia.separation_report(E, [5, 5, 5, 5])
    with pytest.raises(InvalidInputError, match=r"`atol` must be >= 0"):
        ia.is_triplet_separated(E, y, atol=-1.0)
    with pytest.raises(InvalidInputError, match=r"`beta` must be >= 0"):
        ia.margin_loss(E, y, beta=-1.0)
    with pytest.raises(InvalidInputError, match=r"`pos_margin` must be >= 0"):
        ia.contrastive_loss(E, y, pos_margin=-1.0)


def test_inputs_are_not_modified(rng):
    E, y = labelled_cloud(rng, 10, 3, 3)
    E0, y0 = E.copy(), y.copy()
    ia.batch_hard_loss(E, y, margin=0.2)
    ia.triplet_loss(E * 1e200 / 1e200, y)
    ia.separation_report(E, y)
    np.testing.assert_array_equal(E, E0)
    np.testing.assert_array_equal(y, y0)


def test_string_and_float_labels(rng):
    E, y = labelled_cloud(rng, 10, 2, 3)
    names = np.array(["cat", "dog", "eel"])[y]
    assert ia.batch_hard_loss(E, names) == ia.batch_hard_loss(E, y)
    assert ia.batch_hard_loss(E, y.astype(float)) == ia.batch_hard_loss(E, y)
    with pytest.raises(InvalidInputError, match=r"float labels that are not integral"):
        ia.batch_hard_loss(E, y + 0.5)


def test_float32_input_is_computed_in_float64(rng):
    E, y = labelled_cloud(rng, 10, 3, 3)
    E32 = E.astype(np.float32)
    assert ia.batch_hard_loss(E32, y) == ia.batch_hard_loss(E32.astype(np.float64), y)


# --- results beyond float64: inf, never silently -------------------------------------

#: points at +-1.7e308: distances of 3.4e308, beyond the largest float64
BEYOND = np.array([[-1.7e308], [1.7e308], [-1.7e308], [1.7e308]])
Y4 = [0, 0, 1, 1]


@pytest.mark.parametrize(("name", "call"), [
    ("batch_hard_loss", lambda: ia.batch_hard_loss(BEYOND, Y4, margin=0.5)),
    ("triplet_loss", lambda: ia.triplet_loss(BEYOND, Y4, margin=0.5, reduction="sum")),
    ("triplet_loss", lambda: ia.triplet_loss(BEYOND, Y4, margin=0.5, reduction="max")),
    ("contrastive_loss", lambda: ia.contrastive_loss(BEYOND, Y4, reduction="max")),
    ("contrastive_report", lambda: ia.contrastive_report(BEYOND, Y4).worst),
    ("margin_loss", lambda: ia.margin_loss(BEYOND, Y4, reduction="sum")),
    ("margin_loss_report", lambda: ia.margin_loss_report(BEYOND, Y4).worst),
    ("separation_report", lambda: -ia.separation_report(BEYOND, Y4).worst_slack),
    ("diameter", lambda: ia.diameter(BEYOND)),
    ("farthest_pair", lambda: ia.farthest_pair(BEYOND)[0]),
])
def test_results_beyond_float64_are_inf_with_a_warning(name, call):
    # was: inf (or -inf) with no error and no warning
    with pytest.warns(RuntimeWarning, match=rf"^overflow encountered in {name}: .* exceeds the "
                                            r"largest float64 \(~1\.8e308\) and is returned as"):
        assert call() == np.inf


def test_results_that_fit_in_float64_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the mean over 8 triplets, 4 of them 3.4e308 + 0.5, is 1.7e308
        assert ia.triplet_loss(BEYOND, Y4, margin=0.5) == 1.7e308
        assert ia.diameter(BEYOND[:2] / 2) == 1.7e308
        assert ia.batch_hard_loss(BEYOND / 4, Y4, margin=0.5) == 0.85e308
