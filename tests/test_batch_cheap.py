"""Vectorised cheap quantities vs the single-configuration functions and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial import ConvexHull

import isoapprox as ia
from isoapprox.batch import CHEAP_FIELDS, cheap_quantities
from isoapprox.batch.cheap import BOUND_RTOL
from isoapprox.exceptions import InvalidInputError, NoTripletError

from . import reference as ref
from .conftest import (
    KERNEL_ATOL,
    KERNEL_RTOL,
    MOTION_ATOL,
    MOTION_RTOL,
    random_orthogonal,
    scale_of,
)

#: the Frank-Wolfe enclosing ball in n >= 3 stops at a relative gap of ~1e-10
MEB_FW_RTOL = 1e-9


def _batch(rng, B, N, n, P, scale=1.0):
    X = scale * rng.normal(size=(B, N, n))
    y = rng.integers(0, P, size=(B, N))
    y[:, 0] = 0
    y[:, 1] = 0
    y[:, 2] = 1
    return X, y


def _close(a, b, scale=1.0):
    return math.isclose(a, b, rel_tol=KERNEL_RTOL, abs_tol=KERNEL_ATOL * scale)


def thickness_bruteforce_2d(E) -> float:
    """min over hull edges of the largest distance of a point to the edge's line, / diam."""
    E = np.asarray(E, dtype=float)
    diam = ref.diameter(E)
    if diam == 0.0:
        return 0.0
    try:
        hull = ConvexHull(E)
    except Exception:  # collinear (QhullError): the set lies in a line
        return 0.0
    best = math.inf
    for i, j in hull.simplices:
        (x1, y1), (x2, y2) = E[i], E[j]
        L = ref.dist(E[i], E[j])
        far = max(abs((x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)) / L for x, y in E)
        best = min(best, far)
    return best / diam


def test_columns_and_dtypes(rng):
    X, y = _batch(rng, 4, 6, 2, 3)
    q = cheap_quantities(X, y, margin=0.2)
    assert list(q) == [name for name, _, _ in CHEAP_FIELDS]
    kinds = {"int": "i", "bool": "b", "float": "f"}
    for name, dtype, _ in CHEAP_FIELDS:
        assert q[name].shape == (4,) and q[name].dtype.kind == kinds[dtype], name


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("margin", [0.0, 0.7])
def test_matches_single_configuration_functions(rng, n, margin):
    X, y = _batch(rng, 25, 8, n, 3)
    q = cheap_quantities(X, y, margin=margin)
    for b in range(len(X)):
        E, lab = X[b], y[b]
        s = scale_of(E)
        assert _close(
            q["batch_hard_max"][b], ia.batch_hard_loss(E, lab, margin=margin, reduction="max"), s
        )
        assert _close(
            q["batch_hard_mean"][b], ia.batch_hard_loss(E, lab, margin=margin, reduction="mean"), s
        )
        assert _close(
            q["triplet_mean"][b], ia.triplet_loss(E, lab, margin=margin, reduction="mean"), s
        )
        assert q["separated"][b] == ia.is_triplet_separated(E, lab, margin=margin)
        assert _close(q["diameter"][b], ia.diameter(E), s)
        assert q["d_iso_collapsed"][b] == q["diameter"][b]
        assert _close(q["d_iso_collapsed"][b], ia.isometric_error(E, np.zeros_like(E)), s)
        assert q["d_iso_ts_lower"][b] == 0.5 * q["batch_hard_max"][b]
        assert q["n_classes_present"][b] == len(np.unique(lab))
        assert q["many_classes"][b] == (len(np.unique(lab)) > n + 1)
        ball = ia.min_enclosing_ball(E)
        lo, up = q["meb_radius_lower"][b], q["meb_radius"][b]
        assert lo <= up
        if n <= 2:
            assert _close(up, ball.radius, s) and _close(lo, ball.radius, s)
        else:
            assert lo <= ball.radius * (1 + KERNEL_RTOL) and ball.lower <= up * (1 + KERNEL_RTOL)
            assert up - lo <= MEB_FW_RTOL * up


@pytest.mark.parametrize("n", [1, 2, 3])
def test_matches_brute_force(rng, n):
    X, y = _batch(rng, 12, 6, n, 2)
    q = cheap_quantities(X, y, margin=0.3)
    for b in range(len(X)):
        E, lab = X[b], y[b]
        s = scale_of(E)
        assert _close(q["batch_hard_max"][b], ref.batch_hard_loss(E, lab, 0.3, "max"), s)
        assert _close(q["batch_hard_max"][b], ref.triplet_loss(E, lab, 0.3, "max"), s)
        assert _close(q["batch_hard_mean"][b], ref.batch_hard_loss(E, lab, 0.3, "mean"), s)
        assert _close(q["triplet_mean"][b], ref.triplet_loss(E, lab, 0.3, "mean"), s)
        assert q["n_triplets"][b] == sum(1 for _ in ref.triplets(lab))
        assert _close(q["diameter"][b], ref.diameter(E), s)
        if n == 2:
            assert _close(q["meb_radius"][b], ref.meb_radius_bruteforce_2d(E), s)
            assert _close(q["thickness"][b], thickness_bruteforce_2d(E))
        if n == 1:
            assert _close(q["meb_radius"][b], 0.5 * (E.max() - E.min()), s)
            assert q["thickness"][b] == 1.0


def test_thickness_known_answers():
    def polygon(k):
        t = 2 * np.pi * np.arange(k) / k
        return np.c_[np.cos(t), np.sin(t)]

    X = np.stack([polygon(5)])
    q = cheap_quantities(X, [0, 0, 1, 1, 1])
    assert math.isclose(
        q["thickness"][0],
        (1 + math.cos(math.pi / 5)) / (2 * math.sin(2 * math.pi / 5)),
        rel_tol=1e-14,
    )
    sq = np.array([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    assert math.isclose(
        cheap_quantities(sq, [0, 0, 1, 1])["thickness"][0], 1 / math.sqrt(2), rel_tol=1e-15
    )
    tri = np.array([[[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]]])
    qt = cheap_quantities(tri, [0, 0, 1])
    assert math.isclose(qt["thickness"][0], math.sqrt(3) / 2, rel_tol=1e-15)
    # equilateral triangle: Jung's bound holds with equality, R = diam / sqrt(3)
    assert math.isclose(qt["collapse_ratio"][0], 1 / math.sqrt(3), rel_tol=1e-14)
    assert qt["holds_jung"][0] and abs(qt["slack_jung"][0]) < 1e-14
    line = np.array([[[0.0, 0.0], [1.0, 2.0], [3.0, 6.0], [-2.0, -4.0]]])
    assert cheap_quantities(line, [0, 0, 1, 1])["thickness"][0] == 0.0
    flat3 = np.array([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]])  # N <= n
    assert cheap_quantities(flat3, [0, 0, 1])["thickness"][0] == 0.0
    cube = np.array([np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).reshape(3, -1).T], dtype=float)
    assert np.isnan(cheap_quantities(cube, [0, 0, 0, 0, 1, 1, 1, 1])["thickness"][0])


def test_corner_cases(rng):
    same = np.ones((1, 5, 2))
    q = cheap_quantities(same, [0, 0, 1, 1, 1], margin=0.5)
    assert q["diameter"][0] == 0.0 and q["meb_radius"][0] == 0.0 and q["thickness"][0] == 0.0
    assert q["batch_hard_max"][0] == 0.5 and q["batch_hard_mean"][0] == 0.5  # L(collapsed) = alpha
    assert q["triplet_mean"][0] == 0.5 and np.isnan(q["collapse_ratio"][0])
    assert q["holds_s1_collapsed"][0] and q["holds_jung"][0]
    dup = np.array([[[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]]])
    qd = cheap_quantities(dup, [0, 1, 0, 1])
    assert qd["meb_radius"][0] == 0.5 and qd["thickness"][0] == 0.0
    assert qd["batch_hard_max"][0] == 1.0
    one_dim = rng.normal(size=(3, 4, 1))
    q1 = cheap_quantities(one_dim, [0, 0, 1, 1])
    assert np.all(q1["thickness"] == 1.0) and not q1["many_classes"].any()
    three = np.array([[[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]])
    q3 = cheap_quantities(three, [0, 0, 1])
    assert q3["n_triplets"][0] == 2


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_extreme_scales_keep_relative_precision(rng, scale):
    X, y = _batch(rng, 6, 6, 2, 2)
    q1 = cheap_quantities(X, y, margin=0.25)
    qs = cheap_quantities(X * scale, y, margin=0.25 * scale)
    for name in ("batch_hard_max", "batch_hard_mean", "triplet_mean", "diameter", "meb_radius"):
        np.testing.assert_allclose(qs[name], q1[name] * scale, rtol=1e-13, atol=0)
    np.testing.assert_allclose(qs["thickness"], q1["thickness"], rtol=1e-13)
    for b in range(6):
        assert math.isclose(qs["diameter"][b], ia.diameter(X[b] * scale), rel_tol=KERNEL_RTOL)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4), N=st.integers(3, 9))
def test_invariance_and_homogeneity(seed, n, N):
    rng = np.random.default_rng(seed)
    X, y = _batch(rng, 3, N, n, 3)
    q = cheap_quantities(X, y, margin=0.4)
    Q = random_orthogonal(rng, n)
    t = rng.normal(size=n)
    perm = rng.permutation(N)
    Xm = (X @ Q.T + t)[:, perm]
    qm = cheap_quantities(Xm, y[:, perm], margin=0.4)
    s = 2.5
    qs = cheap_quantities(s * X, y, margin=0.4 * s)
    tol = dict(rtol=MOTION_RTOL, atol=MOTION_ATOL * scale_of(X, Xm))
    for name, dtype, _ in CHEAP_FIELDS:
        if dtype != "float" or name.startswith("slack"):
            continue
        np.testing.assert_allclose(qm[name], q[name], **tol, err_msg=name)
        homogeneous = name not in ("collapse_ratio", "thickness")
        np.testing.assert_allclose(
            qs[name],
            q[name] * (s if homogeneous else 1.0),
            rtol=MOTION_RTOL,
            atol=MOTION_ATOL * s * scale_of(X),
            err_msg=name,
        )
    for name in ("n_triplets", "n_classes_present", "many_classes"):
        np.testing.assert_array_equal(qm[name], q[name])


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
def test_bound_orderings_always_hold(seed, n):
    rng = np.random.default_rng(seed)
    X, y = _batch(rng, 8, 7, n, 3)
    X[0] = X[0, :1]  # an all-equal configuration
    X[1, 3:] = X[1, :1]  # duplicates
    q = cheap_quantities(X, y, margin=0.3)
    d = q["diameter"]
    assert np.all(q["meb_radius_lower"] <= q["meb_radius"])
    assert np.all(q["holds_s1_collapsed"]) and np.all(q["holds_jung"])
    assert np.all(0.5 * d <= q["meb_radius"] * (1 + BOUND_RTOL))
    assert np.all(q["d_iso_ts_lower"] <= q["batch_hard_max"])
    assert np.all(q["batch_hard_mean"] <= q["batch_hard_max"])
    assert np.all(
        (q["thickness"][~np.isnan(q["thickness"])] >= 0)
        & (q["thickness"][~np.isnan(q["thickness"])] <= 1)
    )


def test_errors():
    with pytest.raises(
        InvalidInputError, match=r"`X` must be a 3-D array of shape \(B, N, n\); got shape \(5, 2\)"
    ):
        cheap_quantities(np.zeros((5, 2)), [0, 0, 1, 1, 1])
    with pytest.raises(InvalidInputError, match="configuration 1 has NaN or inf"):
        X = np.zeros((2, 3, 2))
        X[1, 0, 0] = np.nan
        cheap_quantities(X, [0, 0, 1])
    with pytest.raises(
        InvalidInputError, match=r"`codes` must have shape \(2, 3\) or \(3,\); got shape \(4,\)"
    ):
        cheap_quantities(np.zeros((2, 3, 2)), [0, 0, 1, 1])
    with pytest.raises(NoTripletError, match="configuration 1 has none"):
        cheap_quantities(np.zeros((2, 3, 2)), [[0, 0, 1], [0, 1, 2]])
    with pytest.raises(NoTripletError):
        cheap_quantities(np.zeros((1, 2, 2)), [0, 1])
    with pytest.raises(InvalidInputError, match="`margin` must be >= 0"):
        cheap_quantities(np.zeros((1, 3, 2)), [0, 0, 1], margin=-1)
    with pytest.raises(TypeError, match="`X` must be a numeric array"):
        cheap_quantities("abc", [0, 0, 1])
    with pytest.raises(TypeError, match="`codes` must be an integer array"):
        cheap_quantities(np.zeros((1, 3, 2)), [0.0, 0.0, 1.0])
    with pytest.raises(InvalidInputError, match="at least 2 points"):
        cheap_quantities(np.zeros((1, 1, 2)), [0])
