"""Thickness: exact fixtures, brute-force twins, brackets and invariances."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial import ConvexHull

from isoapprox import InvalidInputError, ThicknessResult, diameter, thickness, thickness_report
from isoapprox.kernels import planar as KG
from isoapprox.thickness import (
    _difference_body,
    _lp_descent,
    _maximal_simplex,
    _simplex_width,
    _variance_bound,
)

from .conftest import MOTION_RTOL, random_orthogonal

#: exact methods agree with brute force up to rounding of the widths
EXACT_RTOL = 1e-12
#: bracket validity: rounding slack when comparing with sampled widths
BRACKET_SLACK = 1e-12


def width(X, e) -> float:
    p = np.asarray(X, dtype=float) @ (np.asarray(e, dtype=float) / np.linalg.norm(e))
    return float(p.max() - p.min())


def bruteforce_min_width_2d(X) -> float:
    """The least width is flush with a hull edge, i.e. normal to some pair of points."""
    X = np.asarray(X, dtype=float)
    best = math.inf
    for i, j in itertools.combinations(range(len(X)), 2):
        d = X[j] - X[i]
        if np.any(d != 0):
            best = min(best, width(X, [-d[1], d[0]]))
    return best


def bruteforce_min_width_3d(X) -> float:
    """The least width of a polytope in R^3 is attained face-vertex or edge-edge:
    normal to a plane through three points or to two point-pair directions."""
    X = np.asarray(X, dtype=float)
    N = len(X)
    cands = []
    pairs = [X[j] - X[i] for i, j in itertools.combinations(range(N), 2)]
    for u, v in itertools.combinations(pairs, 2):
        c = np.cross(u, v)
        if np.linalg.norm(c) > 1e-12:
            cands.append(c)
    best = math.inf
    for c in cands:
        best = min(best, width(X, c))
    return best


def sampled_min_width(X, rng, m=20000) -> float:
    n = X.shape[1]
    E = rng.normal(size=(m, n))
    E /= np.linalg.norm(E, axis=1)[:, None]
    P = X @ E.T
    return float((P.max(axis=0) - P.min(axis=0)).min())


def polygon(m: int) -> np.ndarray:
    a = 2 * np.pi * np.arange(m) / m
    return np.c_[np.cos(a), np.sin(a)]


CUBE = np.array(list(itertools.product([0.0, 1.0], repeat=3)))
TETRA = np.array([[1.0, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]])

FIXTURES = [
    ("equilateral triangle", polygon(3), math.sqrt(3) / 2),
    ("square", np.array([[0.0, 0], [1, 0], [1, 1], [0, 1]]), 1 / math.sqrt(2)),
    # circumradius 1: width 1 + cos 36 deg, diameter (a diagonal) 2 sin 72 deg
    (
        "regular pentagon",
        polygon(5),
        (1 + math.cos(math.radians(36))) / (2 * math.sin(math.radians(72))),
    ),
    # side 1: width sqrt 3 (between opposite sides), diameter 2
    ("regular hexagon", polygon(6), math.sqrt(3) / 2),
    # unit cube: width 1, diameter sqrt 3
    ("unit cube", CUBE, 1 / math.sqrt(3)),
    # regular tetrahedron of edge 1: least width = distance of opposite edges 1/sqrt 2
    ("regular tetrahedron", TETRA, 1 / math.sqrt(2)),
    # regular octahedron +-e_i: width between opposite faces 2/sqrt 3, diameter 2
    ("regular octahedron", np.vstack([np.eye(3), -np.eye(3)]), 1 / math.sqrt(3)),
    # 4-cube: width 1, diameter 2
    ("4-cube", np.array(list(itertools.product([0.0, 1.0], repeat=4))), 0.5),
]


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "X", "want"), FIXTURES, ids=[f[0] for f in FIXTURES])
def test_fixtures(name, X, want, rng):
    r = thickness_report(X)
    assert r.value == pytest.approx(want, rel=EXACT_RTOL)
    assert r.exact
    assert r.lower <= want * (1 + EXACT_RTOL) and r.upper >= want * (1 - EXACT_RTOL)
    assert isinstance(thickness(X), float) and thickness(X) == r.value
    assert r.width == pytest.approx(width(X, r.direction), rel=1e-12)
    assert np.linalg.norm(r.direction) == pytest.approx(1.0)
    # rotated, moved and scaled copies give the same number
    U = random_orthogonal(rng, X.shape[1])
    assert thickness(3.7 * X @ U.T + 2.0) == pytest.approx(want, rel=EXACT_RTOL)


def test_fixture_numbers_by_hand():
    """The constants above, from their geometric derivations."""
    assert math.sqrt(3) / 2 == pytest.approx(0.8660254037844386)
    assert (1 + math.cos(math.pi / 5)) / (2 * math.sin(2 * math.pi / 5)) == pytest.approx(
        0.9510565162951535
    )
    # tetrahedron above has edge 2 sqrt 2; its opposite edges are 2 apart
    assert diameter(TETRA) == pytest.approx(2 * math.sqrt(2))
    assert width(TETRA, [1, 0, 0]) == pytest.approx(2.0)


# ---------------------------------------------------------------------------
# flat sets and errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("N", "n"), [(2, 2), (3, 3), (2, 5), (5, 5), (4, 7)])
def test_few_points_are_flat(rng, N, n):
    r = thickness_report(rng.normal(size=(N, n)))
    assert r.value == 0.0 and r.lower == 0.0 and r.exact and r.method == "flat"


@pytest.mark.parametrize("n", [2, 3, 4])
def test_points_in_a_hyperplane_are_flat(rng, n):
    X = np.c_[rng.normal(size=(20, n - 1)), np.zeros(20)]
    X = X @ random_orthogonal(rng, n).T + 5.0
    r = thickness_report(X)
    assert r.value == 0.0 and r.method == "flat"
    assert r.upper <= 1e-12 and width(X, r.direction) <= 1e-12 * diameter(X)


def test_rank_tol_decides_flatness(rng):
    X = np.c_[rng.normal(size=(10, 2)), 1e-9 * rng.normal(size=10)]
    assert thickness(X) > 0.0
    assert thickness_report(X, rank_tol=1e-6).value == 0.0


def test_one_dimension_is_one():
    r = thickness_report([[0.0], [3.0], [1.0]])
    assert r.value == 1.0 and r.method == "line"


@pytest.mark.parametrize("X", [[[1.0, 2.0]], [[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]])
def test_coinciding_points_raise(X):
    with pytest.raises(InvalidInputError, match=r"`A` must contain at least two distinct points"):
        thickness(X)


def test_input_errors():
    with pytest.raises(InvalidInputError, match=r"`A` must be a 2-D array"):
        thickness([1.0, 2.0, 3.0])
    with pytest.raises(InvalidInputError, match=r"`A` must contain only finite values"):
        thickness([[0.0, np.inf], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match=r"`A` must be a numeric array"):
        thickness(None)
    X = np.eye(3)
    with pytest.raises(InvalidInputError, match=r"`rtol` must be > 0"):
        thickness_report(X, rtol=0.0)
    with pytest.raises(InvalidInputError, match=r"`rank_tol` must be > 0"):
        thickness_report(X, rank_tol=-1.0)
    with pytest.raises(InvalidInputError, match=r"`n_starts` must be >= 0"):
        thickness_report(X, n_starts=-2)
    with pytest.raises(TypeError, match=r"`rng` must be None, an int seed"):
        thickness_report(X, rng=1.5)


def test_result_is_frozen():
    r = thickness_report(polygon(3))
    assert isinstance(r, ThicknessResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.value = 1.0  # type: ignore[misc]


# ---------------------------------------------------------------------------
# kernel twins and brute force
# ---------------------------------------------------------------------------


def test_hull_2d_matches_qhull(rng):
    for trial in range(50):
        X = rng.normal(size=(int(rng.integers(3, 40)), 2))
        if trial % 3 == 0:
            X = np.round(X * 2)  # collinear runs, duplicates
        order = np.lexsort((X[:, 1], X[:, 0]))
        mine = KG.hull_2d(X, order)
        try:
            ref = ConvexHull(X).vertices
        except Exception:  # all collinear: qhull refuses
            continue
        # compare coordinates: duplicated points may be represented by either index
        assert {tuple(p) for p in X[mine]} == {tuple(p) for p in X[ref]}
        assert len(mine) == len(ref)
        # counter-clockwise
        P = X[mine]
        area2 = np.sum(P[:, 0] * np.roll(P[:, 1], -1) - np.roll(P[:, 0], -1) * P[:, 1])
        assert area2 > 0


def test_calipers_match_bruteforce_2d(rng):
    for trial in range(80):
        N = int(rng.integers(3, 25))
        X = rng.normal(size=(N, 2)) * rng.uniform(0.1, 10, size=2)
        if trial % 4 == 0:
            X = np.round(X)
        if np.linalg.matrix_rank(X - X.mean(0)) < 2:
            continue
        r = thickness_report(X)
        want = bruteforce_min_width_2d(X) / diameter(X)
        assert r.value == pytest.approx(want, rel=EXACT_RTOL, abs=1e-15)
        assert r.method == "calipers" and r.exact


def test_difference_body_matches_bruteforce_3d(rng):
    for trial in range(25):
        N = int(rng.integers(4, 9))
        X = rng.normal(size=(N, 3))
        if trial % 5 == 0:
            X = np.round(2 * X)
            if np.linalg.matrix_rank(X - X.mean(0)) < 3:
                continue
        r = thickness_report(X)
        want = bruteforce_min_width_3d(X) / diameter(X)
        assert r.value == pytest.approx(want, rel=1e-10)
        assert r.exact and r.method == "difference-body"
        assert r.lower <= want * (1 + 1e-10)


def test_simplex_width_matches_difference_body(rng):
    for n in (2, 3, 4):
        for _ in range(5):
            V = rng.normal(size=(n + 1, n))
            ws, e = _simplex_width(V)
            normals, _ = _difference_body(V)
            P = V @ normals.T
            exact = float((P.max(0) - P.min(0)).min())
            assert ws == pytest.approx(exact, rel=1e-10)
            assert width(V, e) == pytest.approx(ws, rel=1e-10)


def test_lower_bounds_never_exceed_the_exact_width(rng):
    """The variance bound and the inscribed-simplex bound (used in high
    dimension) against the exact width of 3-D sets."""
    for _ in range(10):
        X = rng.normal(size=(int(rng.integers(4, 12)), 3))
        X = X - X.mean(0)
        exact = bruteforce_min_width_3d(X)
        assert _variance_bound(X) <= exact * (1 + 1e-12)
        ws, _ = _simplex_width(X[_maximal_simplex(X)])
        assert ws <= exact * (1 + 1e-12)
    # the cube: uniform weights already give the exact width 1
    assert _variance_bound(CUBE - 0.5) == pytest.approx(1.0, rel=1e-9)


def test_lp_descent_goes_down_and_stays_above_the_minimum(rng):
    for _ in range(10):
        X = rng.normal(size=(10, 3))
        e0 = rng.normal(size=3)
        w, e = _lp_descent(X, e0)
        assert np.linalg.norm(e) == pytest.approx(1.0)
        assert w == pytest.approx(width(X, e), rel=1e-12)
        assert w <= width(X, e0) * (1 + 1e-12)
        assert w >= bruteforce_min_width_3d(X) * (1 - 1e-12)


@pytest.mark.parametrize(("N", "n"), [(30, 3), (60, 4), (12, 5)])
def test_large_sets_low_dimension_are_exact(rng, N, n):
    X = rng.normal(size=(N, n))
    r = thickness_report(X)
    assert r.exact and r.method == "difference-body"
    assert r.upper - r.lower <= 1e-9
    assert r.value * diameter(X) <= sampled_min_width(X, rng) * (1 + 1e-12)


@pytest.mark.parametrize(("N", "n"), [(12, 7), (30, 8)])
def test_high_dimension_bracket_is_valid(rng, N, n):
    X = rng.normal(size=(N, n)) * rng.uniform(0.5, 2.0, size=n)
    r = thickness_report(X, rng=1, n_starts=2)
    d = diameter(X)
    assert 0.0 < r.lower <= r.value == r.upper <= 1.0
    # the upper end is attained by the direction; the lower end is below every width
    assert r.width == pytest.approx(width(X, r.direction), rel=1e-12)
    assert r.value == pytest.approx(r.width / d, rel=1e-12)
    assert r.lower * d <= sampled_min_width(X, rng) * (1 + BRACKET_SLACK)


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------

planar = st.integers(3, 12).flatmap(
    lambda N: arrays(np.float64, (N, 2), elements=st.floats(-10, 10, allow_subnormal=False))
)
spatial = st.integers(4, 9).flatmap(
    lambda N: arrays(np.float64, (N, 3), elements=st.floats(-10, 10, allow_subnormal=False))
)


def _usable(X) -> bool:
    return diameter(X) > 1e-6


@pytest.mark.property
@given(
    st.one_of(planar, spatial),
    st.integers(0, 2**32 - 1),
    st.sampled_from([1e-150, 1e-6, 1.0, 42.0, 1e150]),
)
def test_similarity_and_permutation_invariance(X, seed, c):
    if not _usable(X):
        return
    r = np.random.default_rng(seed)
    base = thickness_report(X)
    assert 0.0 <= base.lower <= base.value <= base.upper <= 1.0
    U = random_orthogonal(r, X.shape[1])
    Y = c * (X[r.permutation(len(X))] @ U.T + r.normal(size=X.shape[1]))
    other = thickness_report(Y)
    if base.method == "flat" or other.method == "flat":
        # near-flat sets may sit on either side of the rank tolerance
        assert max(base.value, other.value) <= 1e-9
        return
    assert other.value == pytest.approx(base.value, rel=MOTION_RTOL, abs=1e-9)


@pytest.mark.property
@given(planar)
def test_planar_value_below_every_sampled_width(X):
    if not _usable(X):
        return
    r = thickness_report(X)
    angles = np.linspace(0, np.pi, 721)
    dirs = np.c_[np.cos(angles), np.sin(angles)]
    P = X @ dirs.T
    sampled = float((P.max(0) - P.min(0)).min()) / diameter(X)
    assert r.value <= sampled * (1 + 1e-12) + 1e-15
