"""The one bracket type: its numbers against exact arithmetic, and the results that hold it."""

from __future__ import annotations

import dataclasses
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import isoapprox as ia
from isoapprox import Bracket, DistanceResult, IdealResult, ProcrustesResult
from isoapprox.bracket import bracket_words
from isoapprox.tolerances import BOUND_RTOL, FLOOR_RTOL

finite = st.floats(min_value=0.0, max_value=1e300, allow_nan=False, allow_infinity=False)
anyfloat = st.floats(allow_nan=True, allow_infinity=True)
tols = st.floats(min_value=0.0, max_value=1.0)


def _round(q: Fraction) -> float:
    """``q`` correctly rounded to float64 (Python's ``float(Fraction)``)."""
    return float(q)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                  math.copysign(1, b))


def _old_distance(value, lower, scale, tol):
    """``DistanceResult.from_bracket``'s arithmetic before the bracket type (a copy)."""
    lower = min(lower, value)
    gap = value - lower
    rel = gap / max(value, FLOOR_RTOL * scale) if gap > 0.0 else 0.0
    return float(value), float(lower), float(gap), float(rel), bool(rel <= tol)


# --- the type's invariants, against exact rational arithmetic ------------------------


@given(finite, finite, finite, st.floats(min_value=0.0, max_value=1e300), tols)
def test_relative_bracket_against_exact_arithmetic(a, b, c, floor, tol):
    value, lower = max(a, b), min(a, b)
    br = Bracket.relative(value, lower, tol=tol, floor=floor)
    assert br.upper == br.value == value and br.lower == lower
    gap = _round(Fraction(value) - Fraction(lower))
    assert br.gap == gap >= 0.0
    den = max(value, floor)
    rel = 0.0 if gap == 0.0 else (math.inf if den == 0.0 else _round(Fraction(gap) / Fraction(den)))
    assert br.rel_gap == rel
    assert br.certified is (rel <= tol)
    # the ends bracket the value; a wider bracket is never more certified
    assert br.lower <= br.value <= br.upper
    wider = Bracket.relative(value, lower / 2.0, tol=tol, floor=floor)
    assert wider.gap >= br.gap and (br.certified or not wider.certified)


@given(anyfloat, anyfloat, anyfloat, tols)
def test_relative_bracket_never_certifies_from_inf_or_nan(value, lower, floor, tol):
    br = Bracket.relative(value, lower, tol=tol, floor=abs(floor))
    if not (math.isfinite(value) and math.isfinite(lower) and math.isfinite(floor)):
        assert br.certified is False
    gap = br.gap
    assert math.isnan(gap) or gap >= 0.0
    assert math.isnan(br.rel_gap) or br.rel_gap >= 0.0


def test_bracket_is_frozen_floats_and_picklable():
    br = Bracket(np.float64(2.0), 1, 3.0, np.bool_(True), "a", "b")
    assert type(br.value) is float and type(br.lower) is float and br.certified is True
    assert (br.gap, br.rel_gap) == (2.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        br.value = 1.0
    assert pickle.loads(pickle.dumps(br)) == br
    assert Bracket(0.0, -1.0, 0.0, False).rel_gap == math.inf  # no division by zero


# --- the results that hold it --------------------------------------------------------


@given(finite, finite, st.floats(min_value=0.0, max_value=1e300), tols)
def test_distance_result_numbers_are_the_old_ones(a, b, scale, tol):
    value, lower = max(a, b), min(a, b)
    old = _old_distance(value, lower, scale, tol)
    G = np.zeros((3, 1))
    r = DistanceResult.from_bracket("iso", value, lower, "src", "scipy", "exhausted", "general",
                                    0.0, G, scale, tol)
    new = (r.value, r.lower, r.gap, r.rel_gap, r.certified)
    assert all(_same(x, y) for x, y in zip(old[:4], new[:4], strict=True)), (old, new)
    assert new[4] is (old[4] and math.isfinite(FLOOR_RTOL * scale))
    assert r.upper == r.value and r.lower_source == "src" and r.bracket.upper_source == "scipy"
    assert r.status == ("certified" if r.certified else "exhausted")


def test_distance_result_rejects_a_lower_end_above_the_value():
    with pytest.raises(ia.SolverError, match="exceeds the value"):
        DistanceResult.from_bracket("iso", 1.0, 1.0 + 10 * BOUND_RTOL, "s", "scipy", "x", "general",
                                    0.0, np.zeros((3, 1)), 1.0, 1e-6)


@given(finite, finite, st.floats(min_value=1e-300, max_value=1e300), tols)
def test_relative_is_the_arithmetic_nearest_ideal_had(a, b, floor, tol):
    """The bracket of nearest_ideal and of the monitor's span search (Bracket.relative)
    gives the numbers their own arithmetic gave before the type, bit for bit."""
    value, lower = max(a, b), min(a, b)
    gap = max(value - lower, 0.0)
    rel = gap / max(value, floor) if gap > 0.0 else 0.0
    cert = bool(rel <= tol and math.isfinite(value) and math.isfinite(lower))
    r = _ideal(bracket=Bracket.relative(value, lower, tol=tol, floor=floor,
                                        lower_source="three_point", upper_source="scipy"))
    assert (r.value, r.lower, r.upper, r.gap, r.rel_gap, r.certified) == (
        value, lower, value, gap, rel, cert)
    assert r.lower_source == "three_point" and r.bracket.upper_source == "scipy"


def _ideal(**kw):
    base = dict(embedding=np.zeros((3, 1)), tol=1e-6, objective="iso", margin=0.0,
                solver="scipy", status="exhausted", n_iter=0, n_starts=1, seconds=0.0,
                slack=0.0, kind="general", bounds={})
    return IdealResult(**{**base, **kw})


def test_attributes_are_read_only_views_of_the_bracket():
    br = Bracket.relative(2.0, 1.0, tol=0.1, floor=4.0, lower_source="sdp", upper_source="scipy")
    r = _ideal(bracket=br)
    assert (r.value, r.lower, r.upper, r.gap, r.rel_gap, r.certified, r.lower_source) == (
        2.0, 1.0, 2.0, 1.0, 0.25, False, "sdp")
    with pytest.raises(AttributeError):
        r.value = 3.0
    d = r.to_dict()
    assert list(d) == ["embedding", "value", "lower", "upper", "gap", "rel_gap", "certified",
                       "tol", "objective", "margin", "solver", "status", "n_iter", "n_starts",
                       "seconds", "slack", "kind", "bounds", "lower_source", "loss",
                       "thresholds", "budget", "reproducible"]
    assert pickle.loads(pickle.dumps(r)).bracket == br


def test_results_hold_one_bracket(rng):
    E = rng.normal(size=(6, 2))
    y = [0, 0, 1, 1, 2, 2]
    res = ia.nearest_ideal(E, y, margin=0.2, rng=0, effort="quick")
    assert isinstance(res.bracket, Bracket) and res.bracket.upper_source == res.solver
    assert res.gap == res.upper - res.lower or res.gap == 0.0
    t = ia.evaluate_theory(E, y, margin=0.2, rng=0)
    for d in (t.iso, t.haus):
        assert isinstance(d.bracket, Bracket)
        assert list(d.to_dict()) == ["objective", "value", "lower", "upper", "gap", "rel_gap",
                                     "certified", "lower_source", "solver", "status", "kind",
                                     "seconds"]
    p = ia.minimax_procrustes(E, E[::-1], rng=0)
    assert isinstance(p, ProcrustesResult) and p.bracket.upper_source == p.method
    assert p.gap == p.upper - p.lower and p.upper == p.value


def test_theory_views_read_the_row(rng):
    E = rng.normal(size=(5, 2))
    y = [0, 0, 1, 1, 2]
    k = ia.empirical_constant(E, y, rng=0)
    row = k.theory.to_row()
    assert (k.c, k.d_iso, k.kind_haus) == (row["c"], row["d_iso"], row["d_haus_kind"])
    assert k.half_check is k.theory.checks["2_half"] and k.cn_check is None
    with pytest.raises(AttributeError, match="no_such"):
        k.no_such  # noqa: B018
    assert pickle.loads(pickle.dumps(k)).to_dict() == k.to_dict()


def test_serialised_results_keep_their_flat_layout(rng):
    """io.to_jsonable writes a result holding a Bracket, and a view of a TheoryResult,
    as the flat fields they had before the type (files written by earlier versions and
    by this one read alike)."""
    from isoapprox.io import to_jsonable

    E = rng.normal(size=(5, 2))
    y = [0, 0, 1, 1, 2]
    k = ia.empirical_constant(E, y, rng=0)
    assert to_jsonable(k) == to_jsonable(k.to_dict())
    t = to_jsonable(k.theory)
    assert list(t["iso"]) == ["objective", "value", "lower", "upper", "gap", "rel_gap",
                              "certified", "lower_source", "solver", "status", "kind",
                              "seconds", "embedding"]
    p = to_jsonable(ia.minimax_procrustes(E, E[::-1], rng=0))
    assert list(p) == ["Q", "b", "value", "lower", "upper", "gap", "certified", "reflection",
                       "n_iter", "method"]


def test_bracket_words_one_number_only_for_a_tight_finite_bracket():
    num = "{:.3g}".format
    assert bracket_words(0.5, 0.5, 0.5 + 1e-8, num) == "0.5"
    assert bracket_words(0.5, None, 0.6, num) == "0.5"  # an unknown end counts as tight
    assert bracket_words(0.5, 0.4, 0.6, num) == "0.5 in [0.4, 0.6]"
    # an infinite or NaN end is an open bracket, never one number
    assert bracket_words(1.0, 0.0, math.inf, num) == "1 in [0, inf]"
    assert bracket_words(1.0, -math.inf, 1.0, num) == "1 in [-inf, 1]"
    assert bracket_words(1.0, math.nan, 1.0, num) == "1 in [nan, 1]"
    assert bracket_words(0.5, 0.4, 0.6, num, tight="= {v}", wide="~ {v} ({lo}..{up})") == \
        "~ 0.5 (0.4..0.6)"
