"""The Hausdorff distance between point sets: both engines against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import directed_hausdorff

import isoapprox as ia
from isoapprox.exceptions import InvalidInputError
from isoapprox.kernels import hausdorff as KH

from .conftest import examples


def _sq(a, b) -> float:
    """``||a - b||^2`` summed coordinate by coordinate in order (as the kernels sum)."""
    s = 0.0
    for t in a - b:
        s += float(t) * float(t)
    return s


def brute_directed(A, B):
    """``max_a min_b ||a - b||`` by every pair (direct differences)."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    return max(min(float(np.sqrt(_sq(a, b))) for b in B) for a in A)


def brute_classwise(X1, X2, y):
    y = np.asarray(y)
    return max(min(float(np.sqrt(np.sum((X1[k] - X2[l]) ** 2)))
                   for l in range(len(y)) if y[l] == y[k]) for k in range(len(y)))


@st.composite
def point_sets(draw, min_b=1, max_b=40):
    # 17 and 40: beyond the early break's abandoning step (8 coordinates)
    n = draw(st.sampled_from([1, 2, 3, 5, 17, 40]))
    na = draw(st.integers(1, 40))
    nb = draw(st.integers(min_b, max_b))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["normal", "grid", "far", "flat"]))
    A = rng.normal(size=(na, n))
    B = rng.normal(size=(nb, n))
    if kind == "grid":  # many ties and duplicates
        A, B = np.round(A * 2) / 2, np.round(B * 2) / 2
    elif kind == "far":  # a point of A far from B: coarse cells and long ring searches
        A[0] += 1e3
    elif kind == "flat":  # B without extent along every axis but one
        B[:, 1:] = 0.0
    return A, B


@pytest.mark.property
@given(point_sets())
@settings(max_examples=examples(60), deadline=None)
def test_early_break_equals_brute_force(sets):
    A, B = sets
    assert ia.hausdorff_distance(A, B, directed=True) == brute_directed(A, B)
    want = max(brute_directed(A, B), brute_directed(B, A))
    assert ia.hausdorff_distance(A, B) == want


@pytest.mark.property
@given(point_sets(min_b=KH.GRID_MIN_POINTS, max_b=KH.GRID_MIN_POINTS + 300))
@settings(max_examples=examples(30), deadline=None)
def test_grid_equals_brute_force(sets):
    """``B`` large enough for the grid (``n <= 3``): the same values as every pair."""
    A, B = sets
    v, i, j = KH.directed(A, B)
    want = brute_directed(A, B)
    assert ia.hausdorff_distance(A, B, directed=True) == want
    # the returned pair attains it
    assert np.sqrt(_sq(A[i], B[j])) == want and np.sqrt(v) == want


def test_grid_and_early_break_agree_on_large_sets():
    rng = np.random.default_rng(3)
    for n in (1, 2, 3):
        A = rng.normal(size=(3000, n))
        B = rng.normal(size=(2000, n)) + 0.5
        g = KH.directed(A, B)
        pa, pb = KH._order(3000), KH._order(2000)
        e = KH._tile_break(A, pa, B, pb, KH.TILE_WIDTH)
        assert g[0] == e[0]
        assert np.sqrt(g[0]) == directed_hausdorff(A, B, seed=0)[0]


def _attains(A, B, result):
    """The pair returned attains the value, by direct differences."""
    v, i, j = result
    return _sq(A[i], B[j]) == v


@pytest.mark.property
@given(point_sets(), st.sampled_from([8, 16, 24, 64]), st.integers(0, 2**31))
@settings(max_examples=examples(60), deadline=None)
def test_tile_break_equals_brute_force_in_any_order(sets, width, seed):
    """Any visiting orders and tile widths: the same value, a pair attaining it."""
    A, B = sets
    rng = np.random.default_rng(seed)
    pa, pb = rng.permutation(len(A)), rng.permutation(len(B))
    got = KH._tile_break(A, pa, B, pb, width)
    assert np.sqrt(got[0]) == brute_directed(A, B)
    assert _attains(A, B, got)


def test_far_first_is_a_permutation_with_the_farthest_first():
    rng = np.random.default_rng(4)
    A, B = rng.normal(size=(50, 3)), rng.normal(size=(30, 3)) + 1.0
    pa = KH._order(50)
    out = KH._far_first(A, B, pa, 8)
    assert sorted(out) == list(range(50))
    mu = sum(B) / len(B)  # the kernel's order of summation
    d = np.array([_sq(a, mu) for a in A])
    top = np.argsort(-d, kind="stable")
    assert d[top[7]] - d[top[8]] > 1e-6  # no near tie decides the test
    assert list(out[:8]) == list(top[:8])
    assert list(out[8:]) == [i for i in pa if i not in set(out[:8])]
    assert list(KH._far_first(A[:3], B, pa[pa < 3], 8)) == list(np.argsort(-d[:3]))
    assert list(KH._far_first(A, B, pa, 1)) == [top[0]] + [i for i in pa if i != top[0]]


def test_degenerate_sets():
    same = np.ones((300, 2))
    assert ia.hausdorff_distance(same, same) == 0.0
    assert ia.hausdorff_distance([[0.0, 0.0]], same) == np.sqrt(2.0)
    line = np.c_[np.linspace(0, 1, 400), np.zeros(400)]
    assert ia.hausdorff_distance([[0.5, 3.0]], line) == pytest.approx(
        brute_directed(line, [[0.5, 3.0]]), rel=0, abs=0)


def test_extreme_magnitudes_are_rescaled():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(50, 2)), rng.normal(size=(400, 2))
    base = ia.hausdorff_distance(A, B)
    for s in (2.0**-600, 2.0**600):
        assert ia.hausdorff_distance(A * s, B * s) == base * s


def test_classwise_mode_uses_the_same_engine():
    rng = np.random.default_rng(1)
    X1 = rng.normal(size=(600, 2))
    X2 = X1 + 0.1 * rng.normal(size=(600, 2))
    y = rng.integers(0, 3, size=600)
    want = max(brute_classwise(X1, X2, y), brute_classwise(X2, X1, y))
    assert ia.hausdorff_like(X1, X2, mode="classwise", labels=y) == want
    assert ia.hausdorff_like(X1, X2, mode="classwise", labels=y, directed=True) == \
        brute_classwise(X1, X2, y)
    # one label: the set distance
    assert ia.hausdorff_like(X1, X2, mode="classwise", labels=np.zeros(600)) == \
        ia.hausdorff_distance(X1, X2)


def test_bad_input_names_the_argument():
    with pytest.raises(InvalidInputError, match="same dimension"):
        ia.hausdorff_distance(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(InvalidInputError, match="`A`"):
        ia.hausdorff_distance([[np.nan, 0.0]], [[0.0, 0.0]])
    with pytest.raises(TypeError, match="`directed` must be a bool"):
        ia.hausdorff_distance([[0.0]], [[1.0]], directed=1)
    with pytest.raises(InvalidInputError, match=r"`A` must hold at least 1 point"):
        ia.hausdorff_distance(np.zeros((0, 2)), np.zeros((3, 2)))
    with pytest.raises(InvalidInputError, match=r"`B` must contain only finite values"):
        ia.hausdorff_distance([[1.0]], [[np.inf]])
