"""Huge and bad counts in isoapprox.packing: every bound answers any ``P`` and
``n`` up to ``2**63 - 1`` at once (no loop over ``P``), layouts are refused
before anything is built, and a bad ``P`` or ``n`` gets one clear error.

The answers are checked against bounds written out here independently: the
volume bound (disjoint balls of radius 1/2 in a ball, then Jung) and the
diameters of explicit layouts (a grid, a hexagonal patch) in integers.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.packing import (
    BOUND_N_MAX,
    BOUND_P_MAX,
    DSTAR_P_MAX,
    WITNESS_P_MAX,
    d_star,
    d_star_bracket,
    d_star_witness,
    lower_bound_curve,
    min_separated_diameter,
    packing_distance_bound,
    packing_lower_bound,
    packing_radius_bound,
    radius_lower_bound,
    separated_distance_bound,
    separated_radius_bound,
    table_entries,
    unit_lower_bound,
    unit_radius_lower,
)
from isoapprox.packing.bounds import shell_radius_lower
from isoapprox.packing.constructions import _hexagon_side, family_ratio

HUGE = 10**18
#: a generous safety net per call (each answers in well under a second; the
#: checks below are structural, this only catches a loop over P)
CPU_NET_S = 5.0
#: the formulas are lowered by DSTAR_RTOL (1e-12) and evaluated in float64;
#: comparisons with the independent closed forms below allow this much
CLOSED_FORM_RTOL = 1e-9

#: every public function of isoapprox.packing that takes ``P`` and ``n``, as
#: (name, call returning the unit-margin lower bound of D* or r*)
BOUNDS = {
    "d_star": lambda P, n: d_star(P, n).lower,
    "packing_lower_bound": lambda P, n: packing_lower_bound(P, n),
    "unit_lower_bound": lambda P, n: unit_lower_bound(P, n)[0],
    "lower_bound_curve": lambda P, n: lower_bound_curve(P, n),
    "separated_distance_bound": lambda P, n: separated_distance_bound(P, n, 1.0, 0.0),
}
RADII = {
    "unit_radius_lower": lambda P, n: unit_radius_lower(P, n)[0],
    "radius_lower_bound": lambda P, n: radius_lower_bound(P, n),
    "separated_radius_bound": lambda P, n: separated_radius_bound(P, n, 1.0, 0.0),
}


def timed(f, *args):
    t0 = time.process_time()
    out = f(*args)
    assert time.process_time() - t0 < CPU_NET_S
    return out


def root(P: int, n: int) -> float:
    """``P^(1/n)`` in logs (no overflow for any Python int)."""
    return math.exp(math.log(P) / n)


def volume_diameter(P: int, n: int) -> float:
    """``D*(P, n, 1) >= sqrt((n + 1) / (2 n)) (P^(1/n) - 1)``: the volume bound, then Jung."""
    return math.sqrt((n + 1) / (2 * n)) * (root(P, n) - 1.0)


def grid_diameter(P: int, n: int) -> float:
    """Diameter of the grid ``{0..k-1}^n`` of ``k^n >= P`` unit-separated points."""
    k = max(2, round(root(P, n)))
    while k**n < P:
        k += 1
    while k > 2 and (k - 1) ** n >= P:
        k -= 1
    return (k - 1) * math.sqrt(n)


def hexagon_diameter(P: int) -> float:
    """Diameter ``2 k`` of the least hexagonal patch of ``3 k (k + 1) + 1 >= P`` points."""
    k = max(1, math.isqrt(P // 3))
    while 3 * k * (k + 1) + 1 < P:
        k += 1
    while k > 1 and 3 * (k - 1) * k + 1 >= P:
        k -= 1
    return 2.0 * k


# --- huge P: answers, valid, monotone ---------------------------------------


@pytest.mark.parametrize("name", sorted(BOUNDS))
@pytest.mark.parametrize("n", [2, 3, 16, 10**6])
def test_diameter_bounds_answer_huge_P(name, n):
    v = timed(BOUNDS[name], HUGE, n)
    assert isinstance(v, float) and math.isfinite(v)
    upper = hexagon_diameter(HUGE) if n == 2 else grid_diameter(HUGE, n)
    if n <= 16:
        assert v >= volume_diameter(HUGE, n) * (1 - CLOSED_FORM_RTOL)
    else:  # P^(1/n) ~ 1: the margin (two points) is the better bound
        assert v >= 1.0 - CLOSED_FORM_RTOL
    assert v <= upper * (1 + CLOSED_FORM_RTOL)


@pytest.mark.parametrize("name", sorted(RADII))
@pytest.mark.parametrize("n", [2, 3, 16, 10**6])
def test_radius_bounds_answer_huge_P(name, n):
    v = timed(RADII[name], HUGE, n)
    assert isinstance(v, float) and math.isfinite(v)
    if n <= 16:
        assert v >= 0.5 * (root(HUGE, n) - 1.0) * (1 - CLOSED_FORM_RTOL)
    # a set of diameter D lies in a ball of radius D sqrt(n / (2 (n + 1))) (Jung)
    assert v <= d_star(HUGE, n).upper * math.sqrt(n / (2 * (n + 1)))


def test_the_largest_counts_answer_and_one_more_is_refused():
    for n in (1, 2, 3, BOUND_N_MAX):
        r = timed(d_star, BOUND_P_MAX, n)
        assert 1.0 <= r.lower <= r.upper < math.inf
        assert timed(unit_radius_lower, BOUND_P_MAX, n)[0] > 0.0
    assert d_star(BOUND_P_MAX, 1).exact and d_star(HUGE, 1).lower == float(HUGE - 1)
    assert d_star(3, BOUND_N_MAX).exact
    assert d_star(np.int64(HUGE), np.int32(3)) == d_star(HUGE, 3)  # numpy integers too
    with pytest.raises(InvalidInputError, match=rf"`P` must be <= {BOUND_P_MAX}; got "
                                                rf"{BOUND_P_MAX + 1}"):
        d_star(BOUND_P_MAX + 1, 2)
    with pytest.raises(InvalidInputError, match=rf"`n` must be <= {BOUND_N_MAX}; got "
                                                rf"{BOUND_N_MAX + 1}"):
        d_star(3, BOUND_N_MAX + 1)


def test_bracket_at_huge_P_is_bracketed_by_independent_layouts():
    r = d_star(HUGE, 2)
    assert r.upper == pytest.approx(hexagon_diameter(HUGE), rel=CLOSED_FORM_RTOL)
    assert r.upper_source == f"hexagonal patch of side {_hexagon_side(HUGE)}"
    for n in (3, 5, 16):
        r = d_star(HUGE, n)
        assert volume_diameter(HUGE, n) * (1 - CLOSED_FORM_RTOL) <= r.lower <= r.upper
        assert r.upper <= grid_diameter(HUGE, n) * (1 + CLOSED_FORM_RTOL)


@pytest.mark.parametrize("n", [2, 3, 16, 17, 10**6])
def test_bounds_are_monotone_in_P_up_to_huge(n):
    Ps = [2, DSTAR_P_MAX, DSTAR_P_MAX + 1, 256, 257, 10**3, 10**6, 10**9, 10**12, HUGE,
          BOUND_P_MAX]
    lo = [d_star(P, n).lower for P in Ps]
    up = [d_star(P, n).upper for P in Ps]
    rad = [unit_radius_lower(P, n)[0] for P in Ps]
    for seq in (lo, up, rad):
        assert all(a <= b for a, b in itertools.pairwise(seq)), seq
    assert lower_bound_curve(np.array(Ps), n).tolist() == lo


def test_bounds_are_monotone_in_n_at_huge_P():
    ns = [1, 2, 3, 4, 8, 16, 17, 64, 10**3, 10**6, 10**12, BOUND_N_MAX]
    rs = [d_star(HUGE, n) for n in ns]
    for a, b in itertools.pairwise(rs):
        assert a.lower >= b.lower and a.upper >= b.upper, (a, b)


def test_huge_P_bound_meets_the_table():
    # the lower ends stay below the table's known layouts (P <= 64) and, by
    # monotonicity, the huge-P ones above the table's last row
    t = table_entries()
    for n in (2, 3, 16):
        for P in (2, 10, DSTAR_P_MAX):
            assert unit_lower_bound(P, n)[0] <= t[P, n].upper
        assert unit_lower_bound(HUGE, n)[0] >= t[DSTAR_P_MAX, n].lower


def test_curve_answers_huge_P_in_arrays():
    P = np.array([1, 2, HUGE, BOUND_P_MAX], dtype=np.int64)
    v = timed(lower_bound_curve, P, 3)
    assert v[0] == 0.0 and v[1] == 1.0 and v[2] == packing_lower_bound(HUGE, 3)
    s = timed(lambda: lower_bound_curve(HUGE, 3, curve="simplex"))
    assert s == d_star(HUGE, 3).upper
    assert lower_bound_curve(float(HUGE), 3) == v[2]  # an integral float


def test_packing_bounds_of_codes_take_huge_dimensions():
    codes = np.repeat(np.arange(4), 2)
    assert packing_distance_bound(codes, 10**6, 1.0, 0.0) == pytest.approx(1.0, rel=1e-11)
    assert packing_radius_bound(codes, 10**6, 1.0, 0.0) == pytest.approx(
        math.sqrt(3 / 8), rel=1e-11)
    assert d_star_bracket(codes, BOUND_N_MAX, 1.0)[3]


# --- layouts: refused before anything is built -------------------------------


@pytest.mark.parametrize("P", [HUGE, BOUND_P_MAX, 10**400])
def test_layouts_of_huge_P_are_refused_at_once(P):
    for f in (d_star_witness, min_separated_diameter):
        with pytest.raises(InvalidInputError, match=rf"`P` must be <= {WITNESS_P_MAX} for a "
                                                    rf"layout .*got P = {P} \(n = 2\).*d_star"):
            timed(f, P, 2)


def test_layouts_of_huge_n_are_refused_at_once():
    for f in (d_star_witness, min_separated_diameter):
        with pytest.raises(InvalidInputError, match=r"`P` \* `n` must be <= 16777216 .*got "
                                                    r"P = 3, n = 10{400}"):
            timed(f, 3, 10**400)


# --- the loops that ran over P ------------------------------------------------


def test_hexagon_side_is_the_least_patch():
    def naive(P):
        k = 1
        while 3 * k * (k + 1) + 1 < P:
            k += 1
        return k

    assert [_hexagon_side(P) for P in range(1, 5000)] == [naive(P) for P in range(1, 5000)]
    for P in (HUGE, BOUND_P_MAX, 3 * 10**17 * (10**17 + 1) + 1):
        k = _hexagon_side(P)
        assert 3 * k * (k + 1) + 1 >= P and (k == 1 or 3 * (k - 1) * k + 1 < P)
    assert family_ratio(HUGE, 2)[1] == f"hexagon:{_hexagon_side(HUGE)}"


def test_shell_bound_looks_only_at_the_given_counts():
    n = 3
    inner = np.array([0.0] + [unit_radius_lower(j, n)[0] for j in range(1, 40)])
    for P in (45, 80):  # a short inner stands for its last value repeated
        padded = np.concatenate([inner, np.full(P - len(inner), inner[-1])])
        assert shell_radius_lower(P, n, inner) == shell_radius_lower(P, n, padded)
    v = timed(shell_radius_lower, HUGE, n, inner)  # was: np.zeros(P), a loop over P
    assert math.isfinite(v) and v > 0.0


# --- bad P and n --------------------------------------------------------------

#: every public function taking a count ``P`` (with ``n = 3``) or a dimension
COUNT_FUNCS = {
    "d_star": lambda P, n: d_star(P, n),
    "packing_lower_bound": lambda P, n: packing_lower_bound(P, n),
    "unit_lower_bound": lambda P, n: unit_lower_bound(P, n),
    "unit_radius_lower": lambda P, n: unit_radius_lower(P, n),
    "radius_lower_bound": lambda P, n: radius_lower_bound(P, n),
    "separated_distance_bound": lambda P, n: separated_distance_bound(P, n, 1.0, 0.0),
    "separated_radius_bound": lambda P, n: separated_radius_bound(P, n, 1.0, 0.0),
    "d_star_witness": lambda P, n: d_star_witness(P, n),
    "min_separated_diameter": lambda P, n: min_separated_diameter(P, n),
}
#: (bad value, error, message after "`P` " / "`n` ")
BAD = [
    (0, InvalidInputError, r"must be >= 1; got 0"),
    (-1, InvalidInputError, r"must be >= 1; got -1"),
    (np.int64(-2), InvalidInputError, r"must be >= 1; got -2"),
    (2.5, TypeError, r"must be an integer; got 2\.5 \(float\)"),
    ("3", TypeError, r"must be an integer; got '3' \(str\)"),
    (True, TypeError, r"must be an integer; got True \(bool\)"),
    (np.float64(3.0), TypeError, r"must be an integer; got np\.float64\(3\.0\)"),
    (math.nan, TypeError, r"must be an integer; got nan"),
]


@pytest.mark.parametrize("name", sorted(COUNT_FUNCS))
@pytest.mark.parametrize(("bad", "error", "match"), BAD, ids=[repr(b[0]) for b in BAD])
def test_bad_counts_name_the_argument(name, bad, error, match):
    f = COUNT_FUNCS[name]
    with pytest.raises(error, match=rf"^`P` {match}"):
        f(bad, 3)
    with pytest.raises(error, match=rf"^`n` {match}"):
        f(3, bad)


@pytest.mark.parametrize("name", sorted(set(COUNT_FUNCS) - {"d_star_witness",
                                                              "min_separated_diameter"}))
def test_counts_beyond_float64_are_refused(name):
    f = COUNT_FUNCS[name]
    with pytest.raises(InvalidInputError, match=rf"^`P` must be <= {BOUND_P_MAX}; got 10{{400}}$"):
        timed(f, 10**400, 3)
    with pytest.raises(InvalidInputError, match=rf"^`n` must be <= {BOUND_N_MAX}; got 10{{400}}$"):
        timed(f, 3, 10**400)


@pytest.mark.parametrize("f", [packing_distance_bound, packing_radius_bound])
@pytest.mark.parametrize(("bad", "error", "match"), BAD, ids=[repr(b[0]) for b in BAD])
def test_bad_dimension_of_codes_bounds_names_dim(f, bad, error, match):
    codes = np.repeat(np.arange(3), 2)
    with pytest.raises(error, match=rf"^`dim` {match}"):
        f(codes, bad, 1.0, 0.0)
    with pytest.raises(error, match=rf"^`dim` {match}"):
        d_star_bracket(codes, bad, 1.0)


def test_bad_dimension_beyond_float64_of_codes_bounds():
    codes = np.repeat(np.arange(3), 2)
    with pytest.raises(InvalidInputError, match=rf"^`dim` must be <= {BOUND_N_MAX}; got 10{{400}}"):
        packing_distance_bound(codes, 10**400, 1.0, 0.0)


@pytest.mark.parametrize(("P", "error", "match"), [
    (10**400, InvalidInputError, rf"`P` must be <= {BOUND_P_MAX}; got maximum 10{{400}}"),
    ([3, 10**400], InvalidInputError, rf"`P` must be <= {BOUND_P_MAX}; got maximum 10{{400}}"),
    (np.uint64(2**63), InvalidInputError, rf"`P` must be <= {BOUND_P_MAX}; got maximum "
                                          rf"{2**63}"),
    (np.array([3.0, 2.0**63]), InvalidInputError, rf"`P` must be <= {BOUND_P_MAX}; got "
                                                  rf"maximum 9\.22"),
    ([3, -(10**400)], InvalidInputError, r"`P` must be >= 1; got minimum -10{400}"),
    (0, InvalidInputError, r"`P` must be >= 1; got minimum 0"),
    (2.5, InvalidInputError, r"`P` must hold integers; got 2\.5"),
    (math.nan, InvalidInputError, r"`P` must hold integers; got nan"),
    ("3", TypeError, r"`P` must be an integer or an array of integers; got dtype <U1"),
    (True, TypeError, r"`P` must be an integer or an array of integers; got dtype bool"),
    ([3, "a"], TypeError, r"`P` must be an integer or an array of integers"),
])
def test_curve_refuses_bad_P(P, error, match):
    with pytest.raises(error, match=match):
        timed(lower_bound_curve, P, 2)


@pytest.mark.parametrize(("n", "error", "match"), [b[:2] + (rf"`n` {b[2]}",) for b in BAD] + [
    (10**400, InvalidInputError, rf"`n` must be <= {BOUND_N_MAX}; got 10{{400}}")])
def test_curve_refuses_bad_n(n, error, match):
    with pytest.raises(error, match=match):
        lower_bound_curve(3, n)
