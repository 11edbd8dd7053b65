"""D*(P, n, margin): closed forms, planar theorems, bounds, the lower-bound curve."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import (
    InvalidInputError,
    PackingResult,
    d_star,
    lower_bound_curve,
    min_separated_diameter,
    packing_lower_bound,
    pairwise_distances,
)
from isoapprox.packing._dstar import feasible
from isoapprox.packing._search import slsqp
from isoapprox.packing.bounds import PLANAR_EXACT, obtuse_lower
from isoapprox.packing.constructions import min_max_distance

from .conftest import examples
from .reference import pairwise

#: the planar theorems must be reached by the optimiser to this relative error
PLANAR_RTOL = 1e-6

#: the table of SPEC section 3 (margin 1), written out independently
PLANAR_TABLE = {
    2: 1.0,
    3: 1.0,
    4: math.sqrt(2),
    5: (1 + math.sqrt(5)) / 2,
    6: 2 * math.sin(math.radians(72)),
    7: 2.0,
    8: 1 / (2 * math.sin(math.pi / 14)),
}


def check_witness(res: PackingResult, P: int, n: int, margin: float) -> None:
    """Every pairwise distance >= margin in float64; diameter = upper."""
    X = res.points
    assert X.shape == (P, n) and X.dtype == np.float64
    if P >= 2 and margin > 0:
        D = pairwise_distances(X)
        iu = np.triu_indices(P, 1)
        assert D[iu].min() >= margin
        if abs(margin) < 1e100 and abs(margin) > 1e-100:
            Dref = pairwise(X)  # plain-loop reference
            assert Dref[iu].min() >= margin
        assert D.max() == pytest.approx(res.upper, rel=1e-13)
    assert res.value == res.upper
    assert 0.0 <= res.lower <= res.upper


# ---------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_single_point_and_zero_margin(n):
    r = min_separated_diameter(1, n, margin=3.0)
    assert r.value == 0.0 and r.exact and r.points.shape == (1, n)
    r = min_separated_diameter(6, n, margin=0.0)
    assert r.value == 0.0 and r.exact and r.certified
    check_witness(r, 6, n, 0.0)


@pytest.mark.parametrize(("P", "n"), [(2, 1), (2, 2), (3, 2), (3, 3), (4, 3), (5, 4), (11, 10)])
@pytest.mark.parametrize("margin", [1.0, 0.37, 25.0])
def test_regular_simplex_is_exact(P, n, margin):
    r = min_separated_diameter(P, n, margin=margin)
    assert r.value == margin and r.lower == margin and r.exact and r.certified
    assert r.method == "closed-form"
    assert r.lower_source == (
        "exact: equally spaced points on a line" if n == 1 else "exact: regular simplex"
    )
    X = r.points
    D = pairwise_distances(X)[np.triu_indices(P, 1)]
    assert D.min() >= margin and D.max() == pytest.approx(margin, rel=1e-14)


@pytest.mark.parametrize("P", [2, 3, 7])
def test_line_is_exact(P):
    r = min_separated_diameter(P, 1, margin=0.5)
    assert r.value == 0.5 * (P - 1) and r.exact
    check_witness(r, P, 1, 0.5)


# ---------------------------------------------------------------------------
# the planar theorems (SPEC section 3)
# ---------------------------------------------------------------------------


def test_planar_table_constants():
    for P, v in PLANAR_TABLE.items():
        assert PLANAR_EXACT[P] == pytest.approx(v, rel=1e-15)
    # 2 sin 72 deg and the heptagon-with-centre value, from their configurations
    pent = np.array([[math.cos(t), math.sin(t)] for t in 2 * np.pi * np.arange(5) / 5])
    assert min_max_distance(np.vstack([pent, [[0, 0]]]))[1] == pytest.approx(PLANAR_TABLE[6])
    R = 1 / (2 * math.sin(math.pi / 7))  # heptagon of unit side
    hept = R * np.array([[math.cos(t), math.sin(t)] for t in 2 * np.pi * np.arange(7) / 7])
    lo, hi = min_max_distance(np.vstack([hept, [[0, 0]]]))
    assert lo == pytest.approx(1.0) and hi == pytest.approx(PLANAR_TABLE[8])


@pytest.mark.parametrize("P", sorted(PLANAR_TABLE))
def test_planar_values_reached(P):
    r = min_separated_diameter(P, 2)
    assert r.value == pytest.approx(PLANAR_TABLE[P], rel=PLANAR_RTOL)
    assert r.value >= PLANAR_TABLE[P] * (1 - 1e-12)  # a witness cannot beat a theorem
    assert r.certified
    if P >= 4:
        assert "theorem" in r.lower_source
        assert r.lower == pytest.approx(PLANAR_TABLE[P], rel=1e-15)
    check_witness(r, P, 2, 1.0)


def test_planar_seven_from_random_starts_only():
    """The value 2 for P = 7 is a trap for one local run (2.246 is a local optimum);
    random starts alone must still find 2 among a few dozen."""
    rng = np.random.default_rng(7)
    best = math.inf
    for _ in range(40):
        X0 = rng.normal(size=(7, 2))
        best = min(best, min_max_distance(feasible(slsqp(X0)))[1])
    assert best == pytest.approx(2.0, rel=PLANAR_RTOL)


def test_planar_lower_bound_is_monotone_in_P():
    vals = [packing_lower_bound(P, 2) for P in range(1, 30)]
    assert all(b >= a for a, b in zip(vals[:-1], vals[1:], strict=True))
    # the branch-and-bound proof of P = 9 proves more than D*(8) (monotonicity alone)
    # and than the planar LP certificate (2.3283)
    assert packing_lower_bound(9, 2) > 2.56 > 2.32 > PLANAR_TABLE[8]
    assert "branch-and-bound" in min_separated_diameter(9, 2).lower_source


# ---------------------------------------------------------------------------
# bounds beyond the simplex
# ---------------------------------------------------------------------------


def test_volume_bound_formula():
    # D >= alpha sqrt((n+1)/(2n)) (P^(1/n) - 1): disjoint balls of radius alpha/2
    # inside a ball of radius R + alpha/2, and Jung's R <= D sqrt(n/(2(n+1)))
    for P, n in [(1000, 2), (200, 3), (10_000, 4)]:
        alpha = 2.0
        want = alpha * math.sqrt((n + 1) / (2 * n)) * (P ** (1 / n) - 1)
        # within the documented rounding allowance DSTAR_RTOL (bounds are lowered by it)
        assert packing_lower_bound(P, n, margin=alpha) >= want * (1 - 2e-12)
    r = min_separated_diameter(200, 3)
    assert r.lower_source == "volume packing + Jung"
    assert r.lower == pytest.approx(math.sqrt(4 / 6) * (200 ** (1 / 3) - 1))


def test_obtuse_and_gram_rank_bound_formulas():
    # P >= n + 2: R >= alpha / sqrt 2, so D >= alpha sqrt((n+1)/n) ...
    assert obtuse_lower(5, 3) == pytest.approx(math.sqrt(4 / 3))
    # ... below the rank of the Gram matrix: D^2 >= 1 + 2 (1 + sqrt(16)) / 15 = 5 / 3
    r = min_separated_diameter(5, 3)
    assert r.lower == pytest.approx(math.sqrt(5 / 3))
    assert r.lower_source == "rank of the Gram matrix on the squared distances"
    assert r.upper >= r.lower


@pytest.mark.parametrize(("P", "n"), [(5, 3), (6, 3), (7, 3), (6, 4), (12, 2), (40, 2), (60, 3)])
def test_bracket_and_witness(P, n):
    r = min_separated_diameter(P, n)
    assert r.lower <= r.upper
    assert not r.exact
    check_witness(r, P, n, 1.0)
    assert r.method == "table"  # P <= 64, n <= 16: d_star's shipped table


def test_known_small_spatial_values():
    """Values the reconstruction's prototype reported: (4, 3) -> 1, (7, 3) -> ~1.513;
    and the cross-polytope bound: 2n points in R^n fit in diameter sqrt 2."""
    assert min_separated_diameter(4, 3).value == 1.0
    assert min_separated_diameter(7, 3).value == pytest.approx(1.5144, abs=2e-3)
    assert min_separated_diameter(6, 3).value <= math.sqrt(2) * (1 + 1e-12)


@pytest.mark.parametrize("margin", [1e-150, 1e-7, 3.5, 1e150])
def test_homogeneity_in_margin(margin):
    base = min_separated_diameter(6, 2)
    r = min_separated_diameter(6, 2, margin=margin)
    assert r.value == pytest.approx(margin * base.value, rel=1e-13)
    assert r.lower == pytest.approx(margin * base.lower, rel=1e-13)
    check_witness(r, 6, 2, margin)


def test_cache_makes_repeated_calls_identical():
    a = min_separated_diameter(10, 2)
    b = min_separated_diameter(10, 2)
    assert a.value == b.value
    np.testing.assert_array_equal(a.points, b.points)
    # the caller's copy is writable and independent of the cache
    a.points[0, 0] = 1e9
    assert min_separated_diameter(10, 2).points[0, 0] != 1e9


def test_seeds_and_generators():
    r1 = min_separated_diameter(9, 2, rng=5, n_starts=3)
    r2 = min_separated_diameter(9, 2, rng=np.random.default_rng(1), n_starts=3)
    for r in (r1, r2):
        check_witness(r, 9, 2, 1.0)
        assert r.value >= r.lower


@pytest.mark.property
@settings(max_examples=examples(15))
@given(st.integers(1, 9), st.integers(1, 4), st.floats(0.01, 100.0))
def test_bracket_properties(P, n, margin):
    r = min_separated_diameter(P, n, margin=margin, n_starts=2)
    check_witness(r, P, n, margin)
    if P >= 2:
        assert r.lower >= margin * (1 - 1e-15)
    assert r.lower >= packing_lower_bound(P, n, margin=margin) * (1 - 1e-15)
    # D* is nonincreasing in n: a configuration in R^n embeds in R^(n+1)
    assert packing_lower_bound(P, n + 1, margin=margin) <= r.upper * (1 + 1e-12)


# ---------------------------------------------------------------------------
# the lower-bound curve
# ---------------------------------------------------------------------------


def test_curve_packing_vectorised_and_scalar():
    Ps = np.arange(1, 25)
    arr = lower_bound_curve(Ps, 2, margin=0.5)
    assert isinstance(arr, np.ndarray) and arr.shape == Ps.shape
    for P, v in zip(Ps, arr, strict=True):
        assert v == packing_lower_bound(int(P), 2, margin=0.5)
        assert isinstance(lower_bound_curve(int(P), 2, margin=0.5), float)
    assert lower_bound_curve(np.array([[1, 3], [4, 9]]), 3).shape == (2, 2)
    assert lower_bound_curve(1, 3) == 0.0 and lower_bound_curve(4, 3) == 1.0


def test_curve_simplex_matches_optimiser():
    Ps = [1, 2, 3, 4, 5]
    v = lower_bound_curve(Ps, 2, curve="simplex")
    assert v.tolist()[:3] == [0.0, 1.0, 1.0]
    assert v[3] == min_separated_diameter(4, 2).upper
    assert v[4] == pytest.approx(PLANAR_TABLE[5], rel=PLANAR_RTOL)
    # the estimate is never below the proven curve
    assert np.all(v >= lower_bound_curve(Ps, 2) * (1 - 1e-12))


@given(n=st.integers(1, 2**62), P=st.integers(1, 300), margin=st.floats(0.0, 1e6))
def test_curve_simplex_is_the_margin_up_to_n_plus_1(n, P, margin):
    """The "simplex" curve: 0 for one point, exactly ``margin`` for ``2 <= P <= n + 1``
    (also far beyond the table), else d_star's upper end."""
    v = lower_bound_curve(P, n, margin=margin, curve="simplex")
    if P == 1:
        assert v == 0.0
    elif P <= n + 1:
        assert v == margin
    else:
        assert v == d_star(P, n, margin).upper


def test_curve_callable():
    seen = []

    def f(P, n, margin):
        seen.append((type(P), type(n), type(margin)))
        return margin * P / n

    v = lower_bound_curve(np.array([2, 4]), 2, margin=3.0, curve=f)
    assert v.tolist() == [3.0, 6.0]
    assert seen == [(int, int, float)] * 2


def test_curve_errors():
    with pytest.raises(
        InvalidInputError, match=r"`curve` must be one of 'packing', 'simplex'; got 'jung'"
    ):
        lower_bound_curve(3, 2, curve="jung")
    with pytest.raises(TypeError, match=r"`curve` must be one of"):
        lower_bound_curve(3, 2, curve=3)
    with pytest.raises(InvalidInputError, match=r"`P` must be >= 1; got minimum 0"):
        lower_bound_curve([0, 1], 2)
    with pytest.raises(InvalidInputError, match=r"`P` must hold integers"):
        lower_bound_curve([1.5], 2)
    with pytest.raises(TypeError, match=r"`P` must be an integer or an array of integers"):
        lower_bound_curve(["a"], 2)
    with pytest.raises(
        InvalidInputError, match=r"`curve` must return a finite value >= 0; got -1.0 for P=3"
    ):
        lower_bound_curve(3, 2, curve=lambda P, n, m: -1.0)
    with pytest.raises(
        InvalidInputError, match=r"`curve` must return a finite value >= 0; got nan"
    ):
        lower_bound_curve(3, 2, curve=lambda P, n, m: float("nan"))
    with pytest.raises(InvalidInputError, match=r"`curve` must return a real number; got 'x'"):
        lower_bound_curve(3, 2, curve=lambda P, n, m: "x")
    with pytest.raises(InvalidInputError, match=r"`n` must be >= 1; got 0"):
        lower_bound_curve(3, 0)
    with pytest.raises(InvalidInputError, match=r"`margin` must be >= 0"):
        lower_bound_curve(3, 2, margin=-1.0)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        ((0, 2), {}, InvalidInputError, r"`P` must be >= 1; got 0"),
        ((3, 0), {}, InvalidInputError, r"`n` must be >= 1; got 0"),
        ((3.0, 2), {}, TypeError, r"`P` must be an integer; got 3.0"),
        ((3, 2), {"margin": -0.1}, InvalidInputError, r"`margin` must be >= 0; got -0.1"),
        ((3, 2), {"margin": float("nan")}, InvalidInputError, r"`margin` must be finite"),
        ((3, 2), {"rtol": 0}, InvalidInputError, r"`rtol` must be > 0"),
        ((3, 2), {"n_starts": -1}, InvalidInputError, r"`n_starts` must be >= 0; got -1"),
        ((3, 2), {"max_opt_points": 1}, InvalidInputError, r"`max_opt_points` must be >= 2"),
        ((3, 2), {"rng": -4}, InvalidInputError, r"`rng` must be >= 0; got -4"),
        ((3, 2), {"rng": "x"}, TypeError, r"`rng` must be None, an int seed"),
    ],
)
def test_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        min_separated_diameter(*args, **kwargs)
    if (
        "rng" not in kwargs
        and "n_starts" not in kwargs
        and "rtol" not in kwargs
        and "max_opt_points" not in kwargs
    ):
        with pytest.raises(exc, match=match):
            packing_lower_bound(*args, **kwargs)


def test_result_is_frozen():
    r = min_separated_diameter(2, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.value = 0.0  # type: ignore[misc]
