"""The packing package validates once: each public function checks and hands over
to its unchecked core (``compute_*``), and ``DStar`` / ``PackingResult`` hold the
one bracket type (issue 36, items 1 and 2)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import packing as pk
from isoapprox.bracket import Bracket
from isoapprox.exceptions import InvalidInputError
from isoapprox.io import to_jsonable
from isoapprox.packing import _classes, _dstar, _radius
from isoapprox.tolerances import PACKING_RTOL

from .conftest import examples

counts = st.integers(1, 200) | st.sampled_from([257, 10**6, 10**15, 2**63 - 1])
dims = st.integers(1, 40) | st.sampled_from([10**6, 2**63 - 1])
margins = st.sampled_from([0.0, 1e-300, 0.25, 1.0, 3.5, 1e300])
lengths = st.sampled_from([0.0, 0.1, 1.0, 7.0])


def same(a, b) -> bool:
    """Equal, floats bit for bit (a NaN would be equal to itself)."""
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return type(b) is float and (a == b or (math.isnan(a) and math.isnan(b))) \
            and math.copysign(1.0, a) == math.copysign(1.0, b)
    return type(a) is type(b) and a == b


@settings(max_examples=examples(40), deadline=None)
@given(P=counts, n=dims, margin=margins, length=lengths)
def test_cores_equal_the_public_functions(P, n, margin, length):
    d = pk.d_star(P, n, margin)
    c = pk.compute_d_star(P, n, margin)
    assert repr(c) == repr(d) and same(c.lower, d.lower) and same(c.upper, d.upper)
    assert same(pk.compute_d_star(P, n, margin).lower, pk.packing_lower_bound(P, n, margin=margin))
    assert same(pk.compute_separated_distance_bound(P, n, margin, length),
                pk.separated_distance_bound(P, n, margin, length))
    assert same(pk.compute_separated_radius_bound(P, n, margin, length),
                pk.separated_radius_bound(P, n, margin, length))
    assert same(pk.compute_unit_radius_lower(P, n), pk.unit_radius_lower(P, n))
    assert same(pk.compute_radius_lower_bound(P, n, margin),
                pk.radius_lower_bound(P, n, margin=margin))
    if P <= 64 and n <= 20 and margin <= 1e10:
        assert np.array_equal(pk.compute_d_star_witness(P, n, margin),
                              pk.d_star_witness(P, n, margin))


@settings(max_examples=examples(40), deadline=None)
@given(labels=st.lists(st.integers(0, 12), min_size=1, max_size=40), n=st.integers(1, 20),
       margin=margins, length=lengths)
def test_code_cores_equal_the_public_functions(labels, n, margin, length):
    codes = np.unique(np.array(labels), return_inverse=True)[1].astype(np.int64)
    assert same(pk.compute_packing_distance_bound(codes, n, margin, length),
                pk.packing_distance_bound(codes, n, margin, length))
    assert same(pk.compute_packing_radius_bound(codes, n, margin, length),
                pk.packing_radius_bound(codes, n, margin, length))
    assert same(pk.compute_d_star_bracket(codes, n, margin), pk.d_star_bracket(codes, n, margin))
    # the brute force of the bounds: P' counted directly, then D* and r* of it
    sizes = np.bincount(codes)
    p_sep = int(np.sum(sizes >= 2)) + int(np.any(sizes == 1))
    ds = margin * pk.unit_lower_bound(p_sep, n)[0]
    want = max(0.0, ds - length - PACKING_RTOL * max(ds, length))
    assert same(pk.packing_distance_bound(codes, n, margin, length), want)


def test_cores_check_nothing_and_public_functions_check_once(monkeypatch):
    """The cores reach no check; the public code functions check ``dim`` once and never
    ``P`` (a count of checked codes); ``lower_bound_curve`` checks no element twice."""
    calls = {"counts": 0}
    real = _dstar.check_counts

    def counting(P, n):
        calls["counts"] += 1
        return real(P, n)

    for mod in (_dstar, _classes, _radius):
        monkeypatch.setattr(mod, "check_counts", counting)
    codes = np.repeat(np.arange(20), 2)
    pk.packing_distance_bound(codes, 3, 1.0, 0.5)
    pk.packing_radius_bound(codes, 3, 1.0, 0.5)
    pk.d_star_bracket(codes, 3, 1.0)
    pk.lower_bound_curve(np.arange(1, 50), 3)
    pk.lower_bound_curve(np.arange(1, 50), 3, curve="simplex")
    pk.table_entries()
    assert calls["counts"] == 0

    def refuse(*args, **kwargs):
        raise AssertionError("a core called a check")

    for mod in (_dstar, _classes, _radius):
        for name in ("check_counts", "check_int", "check_margin"):
            if hasattr(mod, name):
                monkeypatch.setattr(mod, name, refuse)
    pk.compute_d_star(30, 4, 1.0)
    pk.compute_separated_distance_bound(30, 4, 1.0, 0.5)
    pk.compute_separated_radius_bound(30, 4, 1.0, 0.5)
    pk.compute_packing_distance_bound(codes, 3, 1.0, 0.5)
    pk.compute_packing_radius_bound(codes, 3, 1.0, 0.5)
    pk.compute_d_star_bracket(codes, 3, 1.0)
    pk.compute_radius_lower_bound(30, 4, 1.0)
    pk.compute_unit_radius_lower(300, 4)
    pk.compute_d_star_witness(12, 3, 1.0)


def test_public_functions_still_refuse_bad_input():
    codes = np.repeat(np.arange(3), 2)
    for f in (pk.packing_distance_bound, pk.packing_radius_bound):
        with pytest.raises(InvalidInputError, match="dim"):
            f(codes, 0, 1.0, 0.0)
    with pytest.raises(InvalidInputError, match="margin"):
        pk.d_star_bracket(codes, 2, -1.0)
    with pytest.raises(TypeError, match="dim"):
        pk.d_star_bracket(codes, 2.0, 1.0)
    with pytest.raises(InvalidInputError, match="`P`"):
        pk.separated_distance_bound(0, 2, 1.0, 0.0)
    empty = np.zeros(0, dtype=np.int64)
    for f in (pk.packing_distance_bound, pk.packing_radius_bound):
        with pytest.raises(InvalidInputError, match="`P` must be >= 1; got 0"):
            f(empty, 2, 1.0, 0.0)
    with pytest.raises(InvalidInputError, match="`P` must be >= 1; got 0"):
        pk.d_star_bracket(empty, 2, 1.0)


@pytest.mark.parametrize(("P", "n", "margin"), [(1, 2, 1.0), (3, 2, 0.5), (16, 2, 0.2),
                                                (40, 5, 1.0), (10**9, 3, 2.0), (5, 2, 0.0),
                                                (10**15, 2, 1e300)])
def test_dstar_holds_a_bracket(P, n, margin):
    r = pk.d_star(P, n, margin)
    b = r.bracket
    assert isinstance(b, Bracket)
    assert (b.value, b.lower, b.upper, b.certified) == (r.upper, r.lower, r.upper, r.exact)
    assert (b.lower_source, b.upper_source) == (r.lower_source, r.upper_source)
    assert r.value == r.upper and r.gap == max(r.upper - r.lower, 0.0)
    assert repr(r).startswith(f"DStar(P={P}, n={n}, margin={margin!r}, lower={r.lower!r}, ")
    assert list(to_jsonable(r)) == ["P", "n", "margin", "lower", "upper", "exact",
                                    "lower_source", "upper_source", "in_table"]
    json.dumps(to_jsonable(r))
    assert r == pk.d_star(P, n, margin) and hash(r) == hash(pk.d_star(P, n, margin))
    with pytest.raises(AttributeError):
        r.lower = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(("P", "n", "margin"), [(1, 2, 1.0), (3, 2, 2.0), (10, 2, 1.0),
                                                (6, 17, 1.0), (4, 3, 0.0)])
def test_packing_result_holds_a_bracket(P, n, margin):
    r = pk.min_separated_diameter(P, n, margin=margin, n_starts=1)
    b = r.bracket
    assert isinstance(b, Bracket)
    assert (b.value, b.lower, b.upper, b.certified) == (r.value, r.lower, r.upper, r.certified)
    assert (b.lower_source, b.upper_source) == (r.lower_source, r.method)
    assert repr(r).startswith(f"PackingResult(value={r.value!r}, lower={r.lower!r}, ")
    assert list(to_jsonable(r)) == ["value", "lower", "upper", "points", "exact", "certified",
                                    "lower_source", "method", "n_starts"]
