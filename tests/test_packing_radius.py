"""Lower bounds of the least enclosing radius of unit-separated points, and of the
largest inner product of unit vectors (isoapprox.packing, .bounds)."""

from __future__ import annotations

import decimal
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isoapprox import InvalidInputError, min_enclosing_ball, nearest_ideal
from isoapprox.packing import (
    DSTAR_N_MAX,
    DSTAR_P_MAX,
    d_star_witness,
    packing_distance_bound,
    packing_lower_bound,
    packing_radius_bound,
    radius_lower_bound,
    separated_count,
    separated_distance_bound,
    separated_radius_bound,
    unit_radius_lower,
)
from isoapprox.packing.bounds import (
    KISSING_NUMBERS,
    code_radius_lower,
    degree3_certificate,
    degree3_inner_lower,
    inner_product_candidates,
    inner_product_lower,
    shell_radius,
    shell_radius_lower,
)
from isoapprox.tolerances import PACKING_RTOL

from .reference import pairwise

GOLDEN = (1 + math.sqrt(5)) / 2


def _radius_up(X: np.ndarray) -> float:
    """An enclosing radius of ``X`` scaled to unit separation (an upper bound of r*)."""
    D = pairwise(X)
    dmin = D[np.triu_indices(len(X), 1)].min()
    Y = X / dmin
    best = math.inf
    # the centroid, and the midpoint of the bounding box: any centre gives an upper bound
    for c in (Y.mean(axis=0), 0.5 * (Y.min(axis=0) + Y.max(axis=0))):
        best = min(best, float(np.max(np.sqrt(np.sum((Y - c) ** 2, axis=1)))))
    return best


def _radius_up_raw(X: np.ndarray) -> float:
    """An enclosing radius of ``X`` as it is (about its centroid)."""
    return float(np.max(np.linalg.norm(X - X.mean(axis=0), axis=1)))


def _unit_rows(X: np.ndarray) -> np.ndarray:
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _max_inner(U: np.ndarray) -> float:
    G = U @ U.T
    return float(G[np.triu_indices(len(U), 1)].max())


def _icosahedron() -> np.ndarray:
    v = [(0, s1, s2 * GOLDEN) for s1 in (-1, 1) for s2 in (-1, 1)]
    rows = [np.roll(np.array(p, dtype=float), k) for p in v for k in range(3)]
    return np.array(rows)


def _d_roots(n: int) -> np.ndarray:
    """The roots of D_n: every +-e_i +- e_j (the 24-cell for n = 4)."""
    rows = []
    for i, j in itertools.combinations(range(n), 2):
        for si in (-1, 1):
            for sj in (-1, 1):
                v = np.zeros(n)
                v[i], v[j] = si, sj
                rows.append(v)
    return np.array(rows)


def _e8_roots() -> np.ndarray:
    half = [np.array(signs) for signs in itertools.product((-0.5, 0.5), repeat=8)
            if sum(x < 0 for x in signs) % 2 == 0]
    return np.vstack([_d_roots(8), np.array(half)])


def _simplex(n: int) -> np.ndarray:
    X = np.eye(n + 1)
    return X - X.mean(axis=0)


# ---------------------------------------------------------------------------
# the largest inner product of m unit vectors
# ---------------------------------------------------------------------------

#: codes whose largest inner product is known: (name, vectors, dimension)
CODES = [
    ("simplex R^3", _simplex(3), 4),
    ("cross-polytope R^5", np.vstack([np.eye(5), -np.eye(5)]), 5),
    ("cube R^4", np.array(list(itertools.product((-1.0, 1.0), repeat=4))), 4),
    ("icosahedron", _icosahedron(), 3),
    ("24-cell", _d_roots(4), 4),
    ("E8 roots", _e8_roots(), 8),
    ("pentagon", np.array([[math.cos(2 * math.pi * k / 5), math.sin(2 * math.pi * k / 5)]
                           for k in range(5)]), 2),
]


@pytest.mark.parametrize("name, X, n", CODES, ids=[c[0] for c in CODES])
def test_inner_product_lower_never_exceeds_known_codes(name, X, n):
    U = _unit_rows(X.astype(float))
    m = len(U)
    assert U.shape[1] <= n
    t = _max_inner(U)
    for v, src in inner_product_candidates(m, n):
        assert v <= t + 1e-15, (name, src, v, t)
    # and every code's own size is then no smaller than the bound says
    assert inner_product_lower(m, n) <= t + 1e-15


def test_inner_product_lower_is_tight_where_theorems_say():
    # the icosahedron (Fejes Toth), the pentagon, the simplex, the 24-cell (kissing)
    assert inner_product_lower(12, 3) == pytest.approx(1 / math.sqrt(5), abs=1e-11)
    assert inner_product_lower(5, 2) == pytest.approx(math.cos(2 * math.pi / 5), abs=1e-11)
    assert inner_product_lower(4, 3) == pytest.approx(-1 / 3, abs=1e-11)
    assert inner_product_lower(25, 4) == 0.5 and inner_product_lower(241, 8) == 0.5
    assert KISSING_NUMBERS[3] == 12
    assert inner_product_lower(1, 3) == -math.inf
    # the degree-3 bound beats degree 2 in R^4 (16 vectors: 0.3113 against 1/7)
    assert 0.311 < degree3_inner_lower(16, 4) < 0.3114
    assert degree3_inner_lower(2, 4) == -1.0 and degree3_inner_lower(9, 1) == -1.0


@given(m=st.integers(3, 40), n=st.integers(2, 8), seed=st.integers(0, 2**16))
def test_inner_product_lower_never_exceeds_random_vectors(m, n, seed):
    rng = np.random.default_rng(seed)
    U = _unit_rows(rng.normal(size=(m, n)))
    assert inner_product_lower(m, n) <= _max_inner(U) + 1e-15


@given(m=st.integers(3, 30), n=st.integers(2, 6), seed=st.integers(0, 2**16),
       b=st.floats(-1.0, 4.0), ds=st.floats(0.0, 0.5))
def test_degree3_certificate_never_proves_a_false_claim(m, n, seed, b, ds):
    # any s at or above the largest inner product of actual vectors must fail
    rng = np.random.default_rng(seed)
    U = _unit_rows(rng.normal(size=(m, n)))
    s = min(_max_inner(U) + ds, 1.0)
    assert not degree3_certificate(m, n, s, b)


def test_degree3_certificate_rejects_bad_arguments():
    assert not degree3_certificate(20, 1, 0.0, 1.0)          # n < 2
    assert not degree3_certificate(20, 3, math.nan, 1.0)
    assert not degree3_certificate(20, 3, 0.3, -1.0)         # 2 b - s < 0
    assert degree3_certificate(13, 3, 0.40, 1.4 / 2.2)


# ---------------------------------------------------------------------------
# the least enclosing radius
# ---------------------------------------------------------------------------


def test_unit_radius_lower_known_values():
    # two points 1/2, the triangle 1/sqrt 3 and the square 1/sqrt 2 (tight), the line
    assert radius_lower_bound(2, 2) == pytest.approx(0.5)
    assert radius_lower_bound(3, 2) == pytest.approx(1 / math.sqrt(3))
    assert radius_lower_bound(4, 2) == pytest.approx(1 / math.sqrt(2))
    assert radius_lower_bound(4, 1, margin=2.0) == pytest.approx(3.0)
    assert radius_lower_bound(1, 3) == 0.0 and radius_lower_bound(5, 3, margin=0.0) == 0.0
    assert radius_lower_bound(7, 3, margin=0.2) == pytest.approx(0.2 * unit_radius_lower(7, 3)[0])


@pytest.mark.parametrize("args, kwargs, error, name", [
    ((0, 2), {}, InvalidInputError, "P"), ((2.5, 2), {}, TypeError, "P"),
    ((4, 0), {}, InvalidInputError, "n"), ((4, "2"), {}, TypeError, "n"),
    ((4, 2), {"margin": -1.0}, InvalidInputError, "margin"),
    ((4, 2), {"margin": math.nan}, InvalidInputError, "margin"),
])
def test_radius_lower_bound_rejects_bad_arguments(args, kwargs, error, name):
    with pytest.raises(error, match=name):
        radius_lower_bound(*args, **kwargs)
    if not kwargs:  # the unit bound checks its counts the same way
        with pytest.raises(error, match=name):
            unit_radius_lower(*args)


#: layouts that attain r*: (P, n, points); the bound must meet them to 1e-9
TIGHT = [
    (5, 2, np.array([[math.cos(2 * math.pi * k / 5), math.sin(2 * math.pi * k / 5)]
                     for k in range(5)])),                        # the pentagon
    (6, 3, np.vstack([np.eye(3), -np.eye(3)])),                   # the octahedron
    (12, 3, _icosahedron()),                                      # the icosahedron
    (13, 3, np.vstack([_icosahedron() / math.hypot(1, GOLDEN), np.zeros((1, 3))])),
    (4, 3, np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=float)),
]


@pytest.mark.parametrize("P, n, X", TIGHT, ids=[f"P{t[0]}_n{t[1]}" for t in TIGHT])
def test_unit_radius_lower_meets_optimal_layouts(P, n, X):
    assert len(X) == P and X.shape[1] == n
    up = _radius_up(X)
    v = unit_radius_lower(P, n)[0]
    assert v <= up
    assert v >= up * (1 - 1e-9)


def test_unit_radius_lower_sixteen_points_in_space():
    # the shells about the centre: at most one point within 1/2 of it, and
    # Fejes Toth's bound on the other fifteen directions
    v, src = unit_radius_lower(16, 3)
    assert 1.0534 < v < 1.0535 and src == "shells about the centre"
    # 16 points in R^4: the degree-3 bound on the directions
    v, src = unit_radius_lower(16, 4)
    assert 0.852 < v < 0.8522 and src == "directions from the centre"
    # never below half of D* (one of its candidates) nor the simple bounds
    assert v >= code_radius_lower(16, 4) * (1 - 1e-12)


def test_unit_radius_lower_never_exceeds_random_configurations(rng):
    for n in (1, 2, 3, 4, 5):
        for k in range(2, 13):
            for _ in range(20):
                X = rng.normal(size=(k, n))
                assert unit_radius_lower(k, n)[0] <= _radius_up(X) * (1 + 1e-12)


def test_unit_radius_lower_never_exceeds_the_table_layouts():
    # the shipped D* layouts are near-optimal packings: a strict test of validity
    for n in range(2, DSTAR_N_MAX + 1):
        for P in range(2, DSTAR_P_MAX + 1, 3):
            X = d_star_witness(P, n)
            assert unit_radius_lower(P, n)[0] <= _radius_up(X) * (1 + 1e-12), (P, n)


def test_unit_radius_lower_is_monotone_in_p():
    for n in (2, 3, 4, 8):
        vals = [unit_radius_lower(P, n)[0] for P in range(1, 300)]
        assert np.all(np.diff(vals) >= 0.0)
        # beyond the shell table's reach it keeps the last value at least
        assert unit_radius_lower(300, n)[0] >= unit_radius_lower(256, n)[0]


def test_unit_radius_lower_beats_the_old_candidates_in_the_collapse_regime():
    # 16 classes: the bounds before the code and shell arguments (half of D*,
    # obtuse vectors, volume) gave 0.909 in R^3 and 0.7485 in R^4
    assert unit_radius_lower(16, 3)[0] > 1.15 * 0.909
    assert unit_radius_lower(16, 4)[0] > 1.13 * 0.7485


@given(sigma=st.floats(0.05, 3.0), mu=st.floats(-1.0, 1.0))
def test_shell_radius_is_the_least_root(sigma, mu):
    def F(s, R):
        g = lambda a, b: (a * a + b * b - 1.0) / (2.0 * a * b)  # noqa: E731
        return max(g(s, s), g(s, R), g(R, R))

    R = shell_radius(sigma, mu)
    assert R >= sigma
    assert F(sigma, R) >= mu - 1e-9
    if R > sigma * (1 + 1e-6):
        assert F(sigma, R * (1 - 1e-6)) < mu


@given(sigma=st.floats(0.05, 3.0), mu=st.floats(-1.0, 0.999999))
def test_shell_radius_never_exceeds_the_exact_root(sigma, mu):
    # the least R >= sigma with F(sigma, R) >= mu, in 60-digit decimal arithmetic
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        s, m = decimal.Decimal(sigma), decimal.Decimal(mu)
        if 1 - 1 / (2 * s * s) >= m:
            exact = s
        else:
            ra = 1 / (2 * (1 - m)).sqrt()
            rb = s * m + (1 - s * s * (1 - m * m)).sqrt()
            exact = max(s, min(ra, rb))
        assert decimal.Decimal(shell_radius(sigma, mu)) <= exact * (1 + decimal.Decimal(1e-14))


def test_shell_radius_lower_needs_a_smaller_count():
    # with the bounds of smaller counts missing, only sigma up to r(2) = 1/2 is tried
    assert shell_radius_lower(16, 3, np.array([0.0, 0.0, 0.5])) == pytest.approx(
        1.0534354668388, rel=1e-12)
    # three points: two lie beyond sigma <= 1/2, which proves only R >= sigma
    assert shell_radius_lower(3, 3, np.array([0.0, 0.0, 0.5])) == pytest.approx(0.5)
    assert shell_radius_lower(2, 3, np.array([0.0, 0.0])) == 0.0


# ---------------------------------------------------------------------------
# the whole-batch bound of d_haus in radius form
# ---------------------------------------------------------------------------


@given(P=st.integers(2, 24), n=st.integers(2, 5), scale=st.sampled_from([1e-3, 0.1, 1.0]),
       seed=st.integers(0, 2**16))
def test_packing_radius_bound_is_below_a_class_collapsed_point(P, n, scale, seed):
    # G: every class at one point of a separated layout (triplet-separated), so
    # d_haus(E, F_TS) <= max_k |E_k - G_k| for the best shift of the layout
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(P), 2)
    E = scale * rng.normal(size=(2 * P, n))
    margin = 0.2
    W = d_star_witness(P, n, margin)
    G = W[y] - W.mean(axis=0) + E.mean(axis=0)
    value = float(np.max(np.linalg.norm(E - G, axis=1)))
    radius = _radius_up_raw(E)
    b = packing_radius_bound(y, n, margin, radius)
    assert 0.0 <= b <= value


def test_packing_bounds_are_the_separated_bounds_of_the_separated_count():
    # 5 classes of two and two singletons (one class for both): P' = 6
    y = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6])
    assert separated_count(y) == 6
    for n, margin, size in [(2, 0.2, 0.0), (3, 1.0, 0.05), (4, 0.5, 0.01)]:
        assert packing_radius_bound(y, n, margin, size) == \
            separated_radius_bound(6, n, margin, size)
        assert packing_distance_bound(y, n, margin, size) == \
            separated_distance_bound(6, n, margin, size)
    # the allowance: r*_lower - R lowered by PACKING_RTOL * max, then clipped at 0
    rs = 0.2 * unit_radius_lower(16, 3)[0]
    assert separated_radius_bound(16, 3, 0.2, 0.1) == \
        rs - 0.1 - PACKING_RTOL * max(rs, 0.1) < rs - 0.1
    assert separated_radius_bound(16, 3, 0.2, rs) == 0.0
    ds = 0.2 * packing_lower_bound(16, 3)
    assert separated_distance_bound(16, 3, 0.2, 0.1) == \
        ds - 0.1 - PACKING_RTOL * max(ds, 0.1) < ds - 0.1
    assert separated_distance_bound(16, 3, 0.2, 10.0) == 0.0


def test_nearest_ideal_reports_the_radius_form():
    E = 1e-3 * np.random.default_rng(0).normal(size=(32, 3))
    y = np.arange(32) % 16
    r = nearest_ideal(E, y, margin=0.2, objective="haus", rng=0, effort="quick",
                      warn_uncertified=False)
    b = r.bounds["packing_radius"]
    expect = 0.2 * unit_radius_lower(16, 3)[0] - min_enclosing_ball(E).radius
    assert b == pytest.approx(expect, rel=1e-9)
    # above half the diameter form here (collapse), and below the value
    assert b > r.bounds["packing_half"] and r.lower >= b and b <= r.value
