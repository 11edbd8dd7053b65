"""Pairwise distances, diameter and the minimum enclosing ball."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import isoapprox as ia
from isoapprox.exceptions import InvalidInputError

from . import reference as ref
from .conftest import KERNEL_ATOL, KERNEL_RTOL, MOTION_RTOL, random_orthogonal, scale_of


@pytest.mark.parametrize("n_points,dim", [(1, 1), (2, 3), (9, 2), (31, 6)])
def test_pairwise_and_diameter_match_bruteforce(rng, n_points, dim):
    E = rng.normal(size=(n_points, dim))
    D = ia.pairwise_distances(E)
    np.testing.assert_allclose(D, ref.pairwise(E), rtol=KERNEL_RTOL, atol=KERNEL_ATOL * scale_of(E))
    assert np.array_equal(D, D.T)
    assert np.all(np.diag(D) == 0.0)
    if n_points >= 2:
        value, i, j = ia.farthest_pair(E)
        assert value == pytest.approx(ref.diameter(E), rel=KERNEL_RTOL)
        assert i < j and D[i, j] == value
        assert ia.diameter(E) == value


def test_diameter_of_coincident_points_is_zero():
    assert ia.diameter(np.ones((5, 3))) == 0.0
    assert ia.farthest_pair(np.ones((5, 3)))[1:] == (0, 1)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_distances_at_extreme_scales(rng, scale):
    E = rng.normal(size=(5, 3))
    np.testing.assert_allclose(
        ia.pairwise_distances(scale * E) / scale, ia.pairwise_distances(E), rtol=1e-13
    )
    assert ia.diameter(scale * E) / scale == pytest.approx(ia.diameter(E), rel=1e-13)


def test_known_meb_answers():
    ball = ia.min_enclosing_ball([[0.0, 0.0], [2.0, 0.0], [1.0, 0.5]])
    assert ball.radius == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(ball.center, [1.0, 0.0], atol=1e-14)
    # equilateral triangle of side 1: circumradius 1/sqrt(3)
    tri = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])
    assert ia.min_enclosing_ball(tri).radius == pytest.approx(1 / math.sqrt(3), rel=1e-13)
    # vertices of the cube [-1, 1]^3: radius sqrt(3)
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    b = ia.min_enclosing_ball(cube)
    assert b.radius == pytest.approx(math.sqrt(3), rel=1e-13)
    assert b.lower == pytest.approx(math.sqrt(3), rel=1e-12)
    # one point and coincident points
    assert ia.min_enclosing_ball([[3.0, 4.0]]).radius == 0.0
    assert ia.min_enclosing_ball(np.full((4, 2), 7.0)).radius == 0.0


@pytest.mark.parametrize("n_points", [2, 3, 5, 12, 40])
def test_meb_matches_bruteforce_in_2d(rng, n_points):
    for _ in range(3):
        E = rng.normal(size=(n_points, 2)) * rng.uniform(0.1, 10)
        ball = ia.min_enclosing_ball(E)
        brute = ref.meb_radius_bruteforce_2d(E)
        assert ball.lower <= brute * (1 + 1e-12) + 1e-15
        assert ball.radius == pytest.approx(brute, rel=1e-10)
        # the ball contains every point
        assert np.max(np.linalg.norm(E - ball.center, axis=1)) <= ball.radius * (1 + 1e-14)


@pytest.mark.parametrize("n_points,dim", [(50, 3), (300, 10), (2000, 32)])
def test_meb_bracket_is_tight_in_higher_dimension(rng, n_points, dim):
    E = rng.normal(size=(n_points, dim))
    ball = ia.min_enclosing_ball(E)
    assert ball.gap <= 1e-10 * ball.radius
    assert ball.lower <= ball.radius
    # Jung's theorem: diam/2 <= R <= diam sqrt(n / (2 (n + 1)))
    d = ia.diameter(E)
    assert d / 2 <= ball.radius * (1 + 1e-12)
    assert ball.radius <= d * math.sqrt(dim / (2 * (dim + 1))) * (1 + 1e-12)


@pytest.mark.property
@given(st.integers(1, 25), st.integers(1, 5), st.integers(0, 2**32 - 1), st.floats(0.01, 100))
def test_meb_properties(n_points, dim, seed, scale):
    rng = np.random.default_rng(seed)
    E = scale * rng.normal(size=(n_points, dim))
    ball = ia.min_enclosing_ball(E)
    assert ball.lower <= ball.radius
    assert ball.gap <= 1e-9 * max(ball.radius, 1e-300)
    Q = random_orthogonal(rng, dim)
    b = rng.normal(size=dim) * scale
    moved = ia.min_enclosing_ball(E @ Q.T + b)
    assert moved.radius == pytest.approx(ball.radius, rel=MOTION_RTOL, abs=1e-12 * scale)
    np.testing.assert_allclose(moved.center, Q @ ball.center + b, rtol=1e-6, atol=1e-7 * scale)


def test_geometry_errors():
    with pytest.raises(InvalidInputError, match=r"`E` must hold at least 2 point\(s\)"):
        ia.diameter([[1.0, 2.0]])
    with pytest.raises(InvalidInputError, match=r"`E` must hold at least 1 point\(s\)"):
        ia.pairwise_distances(np.zeros((0, 2)))
    with pytest.raises(InvalidInputError, match=r"`E` must have at least one column"):
        ia.min_enclosing_ball(np.zeros((3, 0)))
    with pytest.raises(InvalidInputError, match=r"`rtol` must be > 0"):
        ia.min_enclosing_ball([[0.0]], rtol=0.0)
    with pytest.raises(
        TypeError, match=r"`E` must be a numeric array of shape \(N, n\); got 'abc'"
    ):
        ia.diameter("abc")
    with pytest.raises(TypeError, match=r"`E` must be a real numeric array"):
        ia.diameter(np.array([[1 + 1j, 0]]))


def test_meb_kernel_survives_a_weighted_point_at_the_centre():
    # uniform start weights on a set whose centroid coincides with a point used
    # to divide by zero in the away step (1 - dminus == 0)
    from isoapprox.kernels.meb import meb_dual_fw

    Y = np.array([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]])
    idx = np.arange(4, dtype=np.int64)
    u = np.full(4, 0.25)
    c, _ = meb_dual_fw(Y, idx, u, 1000, 1e-12)
    assert np.max(np.linalg.norm(Y - c, axis=1)) == pytest.approx(1.0, rel=1e-9)


@pytest.mark.property
@given(seed=st.integers(0, 2**31), n=st.sampled_from([1, 2, 3, 5]),
       kind=st.sampled_from(["normal", "uniform", "ties", "circle", "blobs"]),
       N=st.integers(ia.geometry.PRUNE_MIN_POINTS, 1500))
def test_pruned_diameter_equals_the_full_sweep(seed, n, kind, N):
    """The pruned diameter: the value and the lexicographically first pair of the
    sweep over every pair (the kernel called on all points)."""
    from isoapprox.kernels import distances as KD

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, n)) if kind != "uniform" else rng.uniform(size=(N, n))
    if kind == "ties":  # extreme points repeated: several pairs attain the diameter
        X = np.round(X)
        X[rng.integers(N, size=10)] = X.max(axis=0)
    elif kind == "circle" and n >= 2:  # every point extreme: no pruning
        t = rng.uniform(0, 2 * np.pi, N)
        X[:, 0], X[:, 1] = np.cos(t), np.sin(t)
        X[:, 2:] = 0.0
    elif kind == "blobs":
        X = X * 0.01 + rng.integers(0, 3, size=(N, 1)) * 5.0
    want = KD.diameter_kernel(np.ascontiguousarray(X))
    got = ia.farthest_pair(X)
    assert got == (float(want[0]), int(want[1]), int(want[2]))
    assert ia.diameter(X) == got[0]


def test_pruning_keeps_few_points_of_a_gaussian_cloud():
    X = np.random.default_rng(0).normal(size=(20_000, 2))
    cand = ia.geometry._diameter_candidates(X)
    assert cand is not None and cand.size < 200
