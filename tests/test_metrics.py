"""Isometric error and Hausdorff-like distances against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import isoapprox as ia
from isoapprox.exceptions import InvalidInputError

from . import reference as ref
from .conftest import (
    KERNEL_ATOL,
    KERNEL_RTOL,
    MOTION_ATOL,
    MOTION_RTOL,
    random_orthogonal,
    scale_of,
)


@pytest.mark.parametrize("n_points,dim", [(2, 1), (5, 2), (13, 3), (30, 7)])
def test_isometric_error_matches_bruteforce(rng, n_points, dim):
    E1 = rng.normal(size=(n_points, dim))
    E2 = rng.normal(size=(n_points, dim)) * 3
    rep = ia.isometric_error_report(E1, E2)
    expected = ref.isometric_error(E1, E2)
    np.testing.assert_allclose(
        rep.value, expected, rtol=KERNEL_RTOL, atol=KERNEL_ATOL * scale_of(E1, E2)
    )
    i, j = rep.pair
    assert i < j
    D1, D2 = ref.pairwise(E1), ref.pairwise(E2)
    np.testing.assert_allclose(abs(D1[i, j] - D2[i, j]), expected, rtol=KERNEL_RTOL)
    np.testing.assert_allclose([rep.d1, rep.d2], [D1[i, j], D2[i, j]], rtol=KERNEL_RTOL)


@pytest.mark.parametrize("dim", [1, 3, 8, 33, 128])
def test_isometric_error_report_distances_attain_the_value_exactly(rng, dim):
    E1 = rng.normal(size=(40, dim)) * 1e3
    E2 = rng.normal(size=(40, dim))
    rep = ia.isometric_error_report(E1, E2)
    assert rep.value == abs(rep.d1 - rep.d2)


def test_isometric_error_of_identical_arrays_is_exactly_zero(rng):
    E = rng.normal(size=(40, 16)) * 1e3 + 1e6
    assert ia.isometric_error(E, E) == 0.0
    assert ia.isometric_error(E, E.copy()) == 0.0


def test_isometric_error_to_collapsed_is_the_diameter(rng):
    E = rng.normal(size=(25, 4))
    C = np.broadcast_to(rng.normal(size=4), E.shape)
    assert ia.isometric_error(E, C) == ia.diameter(E)


def test_isometric_copy_gives_zero_to_rounding(rng):
    E = rng.normal(size=(20, 3))
    Q = random_orthogonal(rng, 3, reflect=True)
    F = E @ Q.T + rng.normal(size=3) * 5
    assert ia.isometric_error(E, F) <= 1e-13 * scale_of(F)


@pytest.mark.parametrize("n_points,dim", [(1, 1), (4, 2), (12, 5)])
def test_hausdorff_pointwise_and_classwise_match_bruteforce(rng, n_points, dim):
    E1 = rng.normal(size=(n_points, dim))
    E2 = rng.normal(size=(n_points, dim))
    y = rng.integers(0, 3, size=n_points)
    tol = dict(rtol=KERNEL_RTOL, atol=KERNEL_ATOL * scale_of(E1, E2))
    np.testing.assert_allclose(ia.hausdorff_like(E1, E2), ref.hausdorff_pointwise(E1, E2), **tol)
    fwd = ref.hausdorff_classwise_directed(E1, E2, y)
    bwd = ref.hausdorff_classwise_directed(E2, E1, y)
    np.testing.assert_allclose(
        ia.hausdorff_like(E1, E2, mode="classwise", labels=y, directed=True), fwd, **tol
    )
    np.testing.assert_allclose(
        ia.hausdorff_like(E1, E2, mode="classwise", labels=y), max(fwd, bwd), **tol
    )


def test_classwise_equals_pointwise_for_class_collapsed_target(rng):
    y = np.repeat(np.arange(4), 3)
    E1 = rng.normal(size=(12, 2))
    centres = rng.normal(size=(4, 2)) * 4
    E2 = centres[y]
    directed = ia.hausdorff_like(E1, E2, mode="classwise", labels=y, directed=True)
    assert directed == ia.hausdorff_like(E1, E2, mode="pointwise")


def test_classwise_ignores_permutations_within_a_class(rng):
    y = np.array([0, 0, 0, 1, 1])
    E = rng.normal(size=(5, 2))
    F = E[[2, 0, 1, 4, 3]]
    assert ia.hausdorff_like(E, F, mode="classwise", labels=y) == 0.0
    assert ia.hausdorff_like(E, F) > 0.0


@st.composite
def pairs(draw):
    n_points = draw(st.integers(2, 10))
    dim = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    s = draw(st.floats(0.01, 100.0))
    return s * rng.normal(size=(n_points, dim)), s * rng.normal(size=(n_points, dim)), seed


@pytest.mark.property
@given(pairs())
def test_isometric_error_properties(data):
    E1, E2, seed = data
    rng = np.random.default_rng(seed)
    base = ia.isometric_error(E1, E2)
    tol = MOTION_ATOL * scale_of(E1, E2)
    # symmetric, non-negative, invariant under independent rigid motions of each side
    assert base >= 0.0
    assert ia.isometric_error(E2, E1) == base
    Q1 = random_orthogonal(rng, E1.shape[1])
    Q2 = random_orthogonal(rng, E1.shape[1], reflect=True)
    moved = ia.isometric_error(E1 @ Q1.T + 3.0, E2 @ Q2.T - 7.0)
    assert moved == pytest.approx(base, rel=MOTION_RTOL, abs=tol)
    perm = rng.permutation(len(E1))
    assert ia.isometric_error(E1[perm], E2[perm]) == base
    # homogeneous under scaling
    assert ia.isometric_error(2.5 * E1, 2.5 * E2) == pytest.approx(
        2.5 * base, rel=1e-12, abs=1e-12 * tol
    )
    # lemma: d_iso <= 2 d_haus (pointwise)
    assert base <= 2.0 * ia.hausdorff_like(E1, E2) * (1 + 1e-12) + 1e-12 * scale_of(E1, E2)
    # triangle inequality through a third embedding
    E3 = rng.normal(size=E1.shape)
    assert base <= ia.isometric_error(E1, E3) + ia.isometric_error(E3, E2) + 1e-12 * scale_of(
        E1, E2, E3
    )


@pytest.mark.property
@given(pairs())
def test_classwise_bounded_by_pointwise(data):
    E1, E2, seed = data
    y = np.random.default_rng(seed).integers(0, 3, size=len(E1))
    cw = ia.hausdorff_like(E1, E2, mode="classwise", labels=y)
    assert cw <= ia.hausdorff_like(E1, E2) + 1e-12 * scale_of(E1, E2)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_metrics_at_extreme_scales(rng, scale):
    E1 = rng.normal(size=(6, 3))
    E2 = rng.normal(size=(6, 3))
    assert ia.isometric_error(scale * E1, scale * E2) / scale == pytest.approx(
        ia.isometric_error(E1, E2), rel=1e-12
    )
    assert ia.hausdorff_like(scale * E1, scale * E2) / scale == pytest.approx(
        ia.hausdorff_like(E1, E2), rel=1e-12
    )


def test_metric_errors():
    A = np.zeros((3, 2))
    with pytest.raises(
        InvalidInputError,
        match=r"`E1` and `E2` must have the same shape .* got \(3, 2\) and \(4, 2\)",
    ):
        ia.isometric_error(A, np.zeros((4, 2)))
    with pytest.raises(InvalidInputError, match=r"`E1` must hold at least 2 point"):
        ia.isometric_error(np.zeros((1, 2)), np.zeros((1, 2)))
    with pytest.raises(
        InvalidInputError,
        match=r"`mode` must be one of 'pointwise', 'isometry', 'classwise'; got 'chamfer'",
    ):
        ia.hausdorff_like(A, A, mode="chamfer")
    with pytest.raises(InvalidInputError, match=r"`labels` must be given for mode='classwise'"):
        ia.hausdorff_like(A, A, mode="classwise")
    with pytest.raises(
        InvalidInputError, match=r"`labels` must have one label per point, length 3; got length 2"
    ):
        ia.hausdorff_like(A, A, mode="classwise", labels=[0, 1])
    with pytest.raises(TypeError, match=r"`directed` must be a bool"):
        ia.hausdorff_like(A, A, mode="classwise", labels=[0, 1, 1], directed="yes")
    with pytest.raises(InvalidInputError, match=r"`E2` must contain only finite values"):
        ia.hausdorff_like(A, np.array([[0.0, 1.0], [np.nan, 0.0], [1.0, 1.0]]))
    with pytest.raises(TypeError, match=r"`E1` must be a real numeric array"):
        ia.isometric_error(np.array([["a", "b"]]), A)


def test_retrieval_to_dict_lists_the_scalars_then_the_structure_score(rng):
    from isoapprox.metrics import retrieval_metrics

    E = rng.normal(size=(30, 3))
    m = retrieval_metrics(E, np.repeat(np.arange(6), 5))
    d = m.to_dict()
    scalars = ["recall_at_1", "r_precision", "map_at_r", "n_queries", "n_eligible", "sampled"]
    assert list(d) == [*scalars, "structure_score", "chance_r_precision"]
    assert all(d[k] == getattr(m, k) for k in scalars)
    assert d["structure_score"] == m.structure_score()
    assert d["chance_r_precision"] == m.chance()


def test_retrieval_chance_of_all_classes_and_of_a_subset():
    from isoapprox.metrics import retrieval_metrics

    y = np.repeat([0, 1, 2], [2, 3, 5])
    m = retrieval_metrics(np.arange(10.0)[:, None], y)
    # mean over the queries of (|c| - 1) / (N_g - 1), N_g the points of the classes asked
    assert m.chance() == pytest.approx((2 * 1 / 9 + 3 * 2 / 9 + 5 * 4 / 9) / 10, rel=1e-15)
    assert m.chance([0, 2]) == pytest.approx((2 * 1 / 6 + 5 * 4 / 6) / 7, rel=1e-15)
    assert m.chance(np.array([1])) == pytest.approx(1.0, rel=1e-15)
