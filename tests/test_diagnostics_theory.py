"""The theory section of the diagnosis: planted cases, bounds, suggestion, subsample, view."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import (
    diagnose,
    diagnose_batches,
    diameter,
    hausdorff_like,
    isometric_error,
    min_separated_diameter,
    nearest_ideal,
    separation_report,
)
from isoapprox.diagnostics import (
    DiagnoseOptions,
    TheoryOptions,
    add_theory,
    diagnose_theory,
    embedding_view,
    separated_class_count,
    suggest_layout,
    theory_batch_summary,
    theory_subsample,
)
from isoapprox.exceptions import InvalidInputError, NoTripletError
from isoapprox.io import to_jsonable
from isoapprox.packing import (
    DSTAR_P_MAX,
    d_star,
    packing_distance_bound,
    packing_lower_bound,
)

from . import planted
from .conftest import BRACKET_RTOL, MOTION_ATOL, MOTION_RTOL, examples, random_orthogonal, scale_of

#: a short work budget: the planted cases below are decided by closed forms and
#: proven bounds, not by a long search (counts, so the same on any machine)
FAST = TheoryOptions(effort="quick")
#: a test that asserts a certificate gives the solver the default budget, far above
#: what the 6-point collapsed case below needs (a clock of 0.5 s certified it under
#: the default OpenBLAS kernel but not under OPENBLAS_CORETYPE=Sandybridge; a count
#: of work does not depend on the kernel's speed)
CERTIFY = TheoryOptions(effort="default")


def _holds_bracket(b, scale):
    tol = BRACKET_RTOL * scale
    assert b.lower <= b.value + tol and b.value <= b.upper + tol
    assert b.lower >= 0.0


def _check_consistent(t, E, y):
    """Every bracket holds and every returned embedding is feasible and re-scores."""
    E = np.asarray(E, dtype=float)[t.indices]
    y = np.asarray(y)[t.indices]
    scale = max(t.diameter, t.margin, 1e-300)
    for b in (t.iso, t.haus):
        _holds_bracket(b, scale)
        assert separation_report(b.embedding, y, margin=t.margin, atol=0.0).worst_slack >= 0.0
    assert isometric_error(E, t.iso.embedding) == t.iso.value
    assert hausdorff_like(E, t.haus.embedding) == t.haus.value
    # statement 1: d_haus >= d_iso / 2 for every candidate
    assert t.haus.upper >= t.iso.lower / 2 - BRACKET_RTOL * scale
    # the moved copy is an isometric image of f*: same isometric error
    assert isometric_error(E, t.aligned) == pytest.approx(t.iso.value, rel=1e-9,
                                                          abs=1e-9 * scale)
    assert t.loss_lower_check.holds is True  # L/2 <= d_iso is proven


# --- planted cases --------------------------------------------------------------


def test_healthy_is_its_own_ideal_embedding():
    E, y = planted.healthy(np.random.default_rng(5), P=5, K=4, n=6)
    t = diagnose_theory(E, y, margin=0.2, options=FAST)
    assert t.iso.value == t.iso.upper == 0.0 and t.haus.value == 0.0
    assert t.iso.solver == "identity" and t.loss_max == 0.0
    assert t.loss_faithful is True and not t.beyond_simplex
    assert math.isnan(t.constant.c)
    assert np.array_equal(t.iso.embedding, E)
    assert any("d_iso(E, F_TS) = 0: the embedding is triplet-separated" in f for f in t.findings)
    assert any("at most n + 1 = 7" in f for f in t.findings)
    _check_consistent(t, E, y)


def test_collapsed_beyond_the_simplex_is_an_unfaithful_proxy():
    E, y = planted.collapsed(np.random.default_rng(5), P=6, K=3, n=2)
    t = diagnose_theory(E, y, margin=0.2, options=FAST)
    d_star = 0.2 * 2 * math.sin(math.radians(72))  # planar D*(6) (Bateman-Erdos)
    assert t.beyond_simplex and t.n_separated_classes == 6
    assert t.d_star_exact and t.d_star == pytest.approx(d_star, rel=1e-12)
    assert t.collapse_ratio == pytest.approx(d_star / 0.2, rel=1e-12)
    # the packing bound certifies d_iso > L even though L = margin
    # (or the representatives bound of isoapprox.ideal._subbatch, never smaller)
    assert t.iso.lower_source in ("packing", "sub_batch_packing")
    assert t.iso.lower >= (d_star - t.diameter) * (1 - 1e-9)
    assert t.loss_max == pytest.approx(0.2, abs=1e-5)
    assert t.iso.lower > t.loss_max and t.loss_faithful is False
    assert t.loss_upper_check.holds is False and t.proxy_ratio_lower > 1.8
    text = " ".join(t.findings)
    assert "more than n + 1 = 3" in text
    assert "no longer a faithful proxy" in text
    assert ("certified by the packing bound" in text
            or "certified by the sub_batch_packing bound" in text)
    # D*(7, 2) = 2 alpha (a layout exists), D*(8, 2) > 2 alpha (proven impossible)
    assert "up to 7 classes per batch in R^2" in text
    assert "from 8 classes on it is proven impossible" in text
    _check_consistent(t, E, y)


@pytest.mark.reproducibility
def test_collapsed_within_the_simplex_stays_faithful():
    E, y = planted.collapsed(np.random.default_rng(5), P=3, K=2, n=2)
    t = diagnose_theory(E, y, margin=0.2, options=CERTIFY)
    assert not t.beyond_simplex and t.d_star == 0.2 and t.d_star_exact
    assert t.iso.certified and t.iso.value == pytest.approx(0.2, abs=1e-5)
    assert t.loss_faithful is True
    assert any("faithful proxy of the distance to the ideal set here" in f for f in t.findings)
    assert not any("suggests" in f for f in t.findings)
    _check_consistent(t, E, y)


def test_class_collapsed_and_separated():
    E, y = planted.class_collapsed(np.random.default_rng(5), P=4, K=3, n=3, spread=0.0)
    t = diagnose_theory(E, y, margin=0.2, options=FAST)
    assert t.iso.value == 0.0 and t.iso.kind == "class-collapsed" and t.loss_faithful
    _check_consistent(t, E, y)


def test_class_collapsed_too_close_has_a_class_collapsed_ideal():
    # three classes, each at one point, 0.1 apart: the margin 0.2 pushes them
    # onto an equilateral triangle of side 0.2
    pts = np.array([[0.0, 0.0], [0.1, 0.0], [0.05, 0.1 * math.sqrt(3) / 2]])
    y = np.repeat(np.arange(3), 3)
    E = pts[y]
    t = diagnose_theory(E, y, margin=0.2, options=FAST)
    assert t.iso.kind == "class-collapsed" and t.iso.certified
    assert t.iso.value == pytest.approx(0.1, rel=1e-6)
    assert t.ideal_diameter == pytest.approx(0.2, rel=1e-6)
    assert t.loss_max == pytest.approx(0.1, rel=1e-9) and t.loss_faithful is True
    assert any("class-collapsed (each class at one point)" in f for f in t.findings)
    _check_consistent(t, E, y)


def test_margin_zero_says_the_loss_cannot_see_collapse():
    E, y = planted.collapsed(np.random.default_rng(3), P=3, K=2, n=2)
    t = diagnose_theory(E, y, margin=0.0, options=FAST)
    assert t.d_star == 0.0 and math.isnan(t.collapse_ratio)
    assert not t.suggestion.applicable
    assert any(f.startswith("At margin 0 every collapsed") for f in t.findings)
    _check_consistent(t, E, y)


def test_report_is_json_ready_and_flat_numbers_first():
    E, y = planted.collapsed(np.random.default_rng(5), P=4, K=2, n=2)
    d = diagnose_theory(E, y, margin=0.2, options=FAST).to_dict()
    json.dumps(to_jsonable(d), allow_nan=False)
    for k in ("d_iso", "d_iso_lower", "d_iso_upper", "d_haus", "d_star", "c", "theta",
              "loss_max", "max_classes", "min_dim"):
        assert isinstance(d[k], (int, float)), k
    assert d["evaluated"]["mode"] == "all" and d["evaluated"]["indices"] is None
    assert set(d["suggestion"]) >= {"max_classes", "min_dim", "batch_size", "curve"}


def test_report_flat_numbers_order_and_values():
    """The flat entries of ``to_dict``, in the order the report and ``theory.*`` rows list
    them, each the attribute of its name (the theory's read through the diagnosis)."""
    E, y = planted.healthy(np.random.default_rng(3), P=3, K=3, n=2)
    t = diagnose_theory(E, y, margin=0.2, options=FAST)
    d = t.to_dict()
    trio = [f"{k}{e}" for k in ("d_iso", "d_haus") for e in ("", "_lower", "_upper")]
    head = ["n_points", "dim", "n_classes", "n_separated_classes", "samples_per_class",
            "margin", "loss_max", "loss_mean", "diameter"]
    ratios = ["packing_lower", "proxy_ratio", "proxy_ratio_lower", "proxy_ratio_upper",
              "d_star", "d_star_lower", "d_star_upper", "collapse_ratio",
              "collapse_ratio_lower", "collapse_ratio_upper", "ideal_diameter", "c", "c_lower",
              "c_upper", "theta", "theta_lower", "theta_upper"]
    tail = ["max_classes", "min_dim", "seconds", "beyond_simplex", "loss_faithful", "kind",
            "kind_haus", "d_star_exact", "d_star_source", "certify"]
    assert list(d)[: 1 + len(head + trio + ratios + tail)] == ["findings", *head, *trio,
                                                                *ratios, *tail]
    for k in head + ratios:
        assert d[k] == getattr(t, k) or (math.isnan(d[k]) and math.isnan(getattr(t, k))), k
    for k, r in (("d_iso", t.iso), ("d_haus", t.haus)):
        assert (d[k], d[f"{k}_lower"], d[f"{k}_upper"]) == (r.value, r.lower, r.upper)
    assert (d["kind"], d["kind_haus"]) == (t.iso.kind, t.haus.kind)
    assert (d["max_classes"], d["min_dim"]) == (t.suggestion.max_classes, t.suggestion.min_dim)


def test_options_and_input_errors():
    with pytest.raises(InvalidInputError, match="`time_limit` must be > 0"):
        TheoryOptions(time_limit=0)
    with pytest.raises(InvalidInputError, match="`faithful_ratio` must be >= 1; got 0.5"):
        TheoryOptions(faithful_ratio=0.5)
    with pytest.raises(InvalidInputError, match="`curve` must be one of"):
        TheoryOptions(curve="nope")
    with pytest.raises(InvalidInputError, match="`max_points` must be >= 3"):
        TheoryOptions(max_points=2)
    with pytest.raises(TypeError, match="`options` must be a TheoryOptions; got dict"):
        diagnose_theory([[0.0], [1.0], [2.0]], [0, 0, 1], options={})
    with pytest.raises(NoTripletError):
        diagnose_theory([[0.0], [1.0], [2.0]], [0, 1, 2])
    with pytest.raises(InvalidInputError, match="`margin` must be >= 0"):
        diagnose_theory([[0.0], [1.0], [2.0]], [0, 0, 1], margin=-1.0)


# --- the packing bound ---------------------------------------------------------------


def packing_bound(E, y, *, margin):
    """The packing bound of ``d_iso(E, F_TS)`` through its one home."""
    E = np.asarray(E, dtype=float)
    codes = np.unique(np.asarray(y), return_inverse=True)[1]
    return packing_distance_bound(codes, E.shape[1], margin, diameter(E))


def test_packing_bound_never_exceeds_a_feasible_value(rng):
    for P, n, K in [(5, 2, 2), (6, 2, 1), (5, 3, 2), (3, 1, 3)]:
        for spread in (0.0, 0.05):
            y = np.repeat(np.arange(P), K)
            if K == 1:
                y = np.r_[y, 0]
            E = spread * rng.normal(size=(y.size, n))
            b = packing_bound(E, y, margin=0.3)
            # feasible points: the solver's f*, and classes collapsed onto a D* layout
            res = nearest_ideal(E, y, margin=0.3, rng=0, effort="quick", warn_uncertified=False)
            assert b <= res.upper * (1 + BRACKET_RTOL)
            Pp = separated_class_count(y)
            centres = min_separated_diameter(Pp, n, margin=0.3).points
            codes = np.minimum(y, Pp - 1)  # singletons beyond the first share a point
            G = centres[codes]
            assert separation_report(G, y, margin=0.3, atol=0.0).worst_slack >= 0.0
            assert b <= isometric_error(E, G) * (1 + BRACKET_RTOL)


def test_packing_bound_at_exact_collapse_is_d_star():
    y = np.repeat(np.arange(5), 2)
    E = np.zeros((10, 2))
    golden = (1 + math.sqrt(5)) / 2
    # the bound is lowered by 1e-12 (relative) against rounding
    assert packing_bound(E, y, margin=1.0) == pytest.approx(golden, rel=2e-12)
    res = nearest_ideal(E, y, margin=1.0, rng=0, effort="quick", warn_uncertified=False)
    assert packing_bound(E, y, margin=1.0) <= res.upper * (1 + BRACKET_RTOL)
    assert packing_bound(E, y, margin=0.0) == 0.0
    assert packing_bound(np.ones((10, 2)) * 7.0, y, margin=2.0) == pytest.approx(2 * golden,
                                                                                rel=2e-12)


@settings(max_examples=examples(25))
@given(st.integers(0, 2**31 - 1), st.floats(1e-3, 1e3))
def test_packing_bound_invariance_and_homogeneity(seed, s):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(6), 2)
    E = 0.2 * rng.normal(size=(12, 3))
    b = packing_bound(E, y, margin=1.0)
    Q = random_orthogonal(rng, 3)
    perm = rng.permutation(12)
    moved = E[perm] @ Q.T + rng.normal(size=3)
    tol = MOTION_RTOL * b + MOTION_ATOL * scale_of(E)
    assert abs(packing_bound(moved, y[perm], margin=1.0) - b) <= tol
    assert packing_bound(s * E, y, margin=s) == pytest.approx(s * b, rel=1e-9, abs=1e-12 * s)


def test_separated_class_count():
    assert separated_class_count([0, 0, 1, 1, 2, 2]) == 3
    assert separated_class_count([0, 0, 1, 2, 3]) == 2  # one singleton counts
    assert separated_class_count(["a", "a", "b"]) == 2
    with pytest.raises(InvalidInputError, match="`y` must be"):
        separated_class_count(np.zeros((2, 2)))


# --- the layout suggestion -------------------------------------------------------


def test_suggestion_planar_values():
    s = suggest_layout(16, 2, margin=0.2, samples_per_class=4)
    # D*(7, 2) = 2 alpha exactly (a layout exists); D*(9, 2) >= D*(8, 2) = 2.247 alpha
    assert (s.max_classes, s.batch_size, s.max_classes_exact, s.batch_size_exact) == (7, 28, 3, 12)
    assert s.classes_impossible_from == 8 and not s.max_classes_capped
    assert (s.dims_impossible_below, s.min_dim_exact) == (3, 15)
    assert s.dims_impossible_below <= s.min_dim <= s.min_dim_exact
    assert not s.within_ratio and s.beyond_ratio and not s.exact
    assert s.curve_value == pytest.approx(packing_lower_bound(16, 2, margin=0.2))
    assert s.curve_upper == d_star(16, 2, 0.2).upper
    s = suggest_layout(16, 2, margin=0.2, ratio=1.0)
    assert (s.max_classes, s.min_dim) == (3, 15)  # ratio 1: exactly P <= n + 1
    assert s.classes_impossible_from == 4
    s = suggest_layout(3, 2, margin=0.2)
    assert s.exact and s.within_ratio and s.collapse_ratio_lower == 1.0


def test_suggestion_matches_a_linear_scan_of_the_table():
    for n, rho in itertools.product((1, 2, 3, 4, 8), (1.0, 1.5, 2.0, 3.0)):
        s = suggest_layout(20, n, margin=0.5, ratio=rho)
        Ps = range(1, DSTAR_P_MAX + 1)
        ok = [P for P in Ps if d_star(P, n, 0.5).upper <= rho * 0.5]
        assert s.max_classes == max(ok) and s.max_classes_capped == (max(ok) == DSTAR_P_MAX)
        bad = [P for P in range(1, 2000) if d_star(P, n, 0.5).lower > rho * 0.5]
        first = s.classes_impossible_from
        if bad:
            assert first == min(bad), (n, rho)
        else:  # beyond the scan: the boundary of the (monotone) lower end
            assert first is None or (d_star(first, n, 0.5).lower > rho * 0.5
                                     >= d_star(first - 1, n, 0.5).lower), (n, rho)
        dims = [d for d in range(1, 20) if d_star(20, d, 0.5).upper <= rho * 0.5]
        assert s.min_dim == min(dims), (n, rho)
        dims = [d for d in range(1, 20) if d_star(20, d, 0.5).lower <= rho * 0.5]
        assert s.dims_impossible_below == min(dims), (n, rho)


def test_suggestion_cap_custom_curve_and_errors():
    s = suggest_layout(100, 16, margin=1.0)  # sqrt 2 layouts up to the table's end and beyond
    assert s.max_classes_capped and s.max_classes == DSTAR_P_MAX and s.max_classes_beyond
    assert s.batch_size is None and s.classes_impossible_from is None
    s = suggest_layout(100, 64, margin=1.0)
    assert s.max_classes_capped and s.max_classes == 65 and s.batch_size is None

    def linear(P, n, m):
        return m * max(1.0, (P - 1) / n)

    s = suggest_layout(10, 3, margin=1.0, curve=linear)
    assert (s.max_classes, s.min_dim, s.curve) == (7, 5, "linear")
    s = suggest_layout(100, 64, margin=1.0, curve=linear)
    assert s.max_classes == 129 and not s.max_classes_capped
    s = suggest_layout(10, 3, margin=0.0, samples_per_class=4)
    assert not s.applicable and s.batch_size is None and s.batch_size_exact == 16
    with pytest.raises(InvalidInputError, match="`ratio` must be >= 1"):
        suggest_layout(5, 2, margin=1.0, ratio=0.9)
    with pytest.raises(InvalidInputError, match="`n_classes` must be >= 1"):
        suggest_layout(0, 2, margin=1.0)
    with pytest.raises(InvalidInputError, match="`curve` must be one of"):
        suggest_layout(5, 2, margin=1.0, curve="bogus")


# --- subsample ------------------------------------------------------------------


def test_subsample_is_seeded_stratified_and_bounded():
    y = np.repeat(np.arange(100), 6)
    a = theory_subsample(y, 60, rng=3)
    assert np.array_equal(a, theory_subsample(y, 60, rng=3))
    assert a.size == 60 and np.all(np.diff(a) > 0)
    counts = np.bincount(y[a])
    assert np.count_nonzero(counts) == 15 and set(counts[counts > 0]) == {4}
    # few classes: more points per class, all of a small class
    y2 = np.r_[np.zeros(300, int), np.ones(3, int)]
    b = theory_subsample(y2, 50, rng=0)
    assert np.bincount(y2[b]).tolist() == [25, 3]
    # singletons come after classes with two points
    y3 = np.r_[np.arange(40), [0, 1]]
    c = theory_subsample(y3, 12, rng=0)
    assert {0, 1} <= set(y3[c].tolist())
    assert theory_subsample([0, 0, 1], 3).tolist() == [0, 1, 2]


def test_large_batch_is_evaluated_on_a_subsample(rng):
    E, y = planted.collapsed(rng, P=10, K=4, n=2)
    opts = TheoryOptions(effort="quick", n_starts=2, max_points=12)
    t = diagnose_theory(E, y, margin=0.2, options=opts)
    assert t.evaluated == "subsample" and t.n_points == 12 and t.n_input_points == 40
    assert t.n_classes == 3 and np.array_equal(t.labels, y[t.indices])
    assert "random batch of 3 classes x 4 = 12 of the 40 points" in t.findings[0]
    assert t.to_dict()["evaluated"]["indices"] == t.indices.tolist()
    _check_consistent(t, E, y)


# --- the section in diagnose / diagnose_batches --------------------------------------


def test_section_in_diagnose_feeds_the_verdict():
    E, y = planted.collapsed(np.random.default_rng(5), P=6, K=3, n=2)
    res = diagnose_theory(E, y, margin=0.2, options=FAST)
    plain = diagnose(E, y, options=DiagnoseOptions(margin=0.2))
    rep = add_theory(plain, res)
    assert list(rep) == [*list(plain)[:-1], "theory", "verdict"]
    assert rep["verdict"]["details"] == plain["verdict"]["details"] + list(res.findings)
    assert rep["verdict"]["status"] == "collapsed"
    assert "stuck_at_margin" in rep["verdict"]["signatures"]
    assert any("no longer a faithful proxy" in d for d in rep["verdict"]["details"])
    assert rep["theory"]["loss_faithful"] is False
    assert res.labels.tolist() == y.tolist()


def test_section_over_batches_with_a_budget():
    E, y = planted.collapsed(np.random.default_rng(3), P=10, K=6, n=2)
    rep = diagnose_batches(E, y, batch_size=12, samples_per_class=3, n_batches=3, rng=9,
                           options=DiagnoseOptions(margin=0.1), theory=FAST, theory_batches=2)
    rows = rep["per_batch"]
    assert [r.get("theory.d_iso") is not None for r in rows] == [True, True, False]
    summary = theory_batch_summary(rep)
    budget = rep["theory"].pop("budget")
    assert rep["theory"] == summary and list(rep)[-2:] == ["verdict", "theory"]
    # the work it ran under: the first evaluated batch's, and the sampling
    assert budget["effort"] == "quick" and budget["certify"] == "verdict"
    assert budget["points"] == 12 and budget["iso_stages"][0]["budget"]["n_starts"] == 1
    assert rep["data"]["budget"] == {"n_batches": 3, "batch_size": 12, "points_sampled": 36,
                                     "theory_batches": 2,
                                     "statistics": "exact within each batch"}
    assert rep["verdict"]["details"][-len(summary["findings"]):] == summary["findings"]
    assert summary["n_evaluated"] == 2 and summary["beyond_simplex"] == 2
    assert summary["unfaithful"] == 2 and summary["faithful"] == 0
    assert summary["max_classes"] == 7 and summary["classes_per_batch"] == 4
    assert summary["findings"][0].startswith("Theory on 2 of 3 batches")
    assert theory_batch_summary({"per_batch": []})["n_evaluated"] == 0
    with pytest.raises(InvalidInputError, match="`theory_batches` must be >= 0"):
        diagnose_batches(E, y, batch_size=12, theory=FAST, theory_batches=-1)
    with pytest.raises(TypeError, match="`theory` must be a TheoryOptions"):
        diagnose_batches(E, y, batch_size=12, theory=DiagnoseOptions())
    with pytest.raises(TypeError, match="`options` must be a TheoryOptions"):
        diagnose_theory(E, y, options=DiagnoseOptions())


# --- what is certified, and the work budget -------------------------------------------


@pytest.mark.parametrize("case", ["collapsed", "partial", "subsample"])
def test_verdict_mode_decides_as_certify_all(case):
    """``certify="verdict"`` leaves out only what no verdict reads: the checks of
    statements 3 and 4 and the layout agree with ``"all"``; theta is not computed."""
    rng = np.random.default_rng(5)
    opts = FAST
    if case == "collapsed":
        E, y = planted.collapsed(rng, P=6, K=3, n=2)
    elif case == "partial":
        E, y = planted.partial(rng, P=12, K=4, n=4, merged=5)
    else:
        E, y = planted.partial(rng, P=16, K=4, n=8, merged=6)
        opts = TheoryOptions(effort="quick", max_points=32)
    lean = diagnose_theory(E, y, margin=0.2, options=opts)
    full = diagnose_theory(E, y, margin=0.2, options=opts, certify="all")
    assert (lean.certify, full.certify) == ("verdict", "all")
    assert np.array_equal(lean.indices, full.indices)
    for key in ("3_lower", "3_upper", "4_diameter"):
        assert lean.theory.checks[key].holds == full.theory.checks[key].holds, key
    assert lean.loss_faithful == full.loss_faithful and lean.beyond_simplex == full.beyond_simplex
    assert (lean.d_star, lean.d_star_lower, lean.d_star_upper) == (
        full.d_star, full.d_star_lower, full.d_star_upper)
    assert lean.suggestion == full.suggestion
    assert math.isnan(lean.theta) and math.isfinite(full.theta) and full.theta_lower > 0.0
    assert "1_isometry" not in lean.theory.checks and "1_isometry" in full.theory.checks
    # both brackets are proven, so each lower end is below the other's upper end
    scale = max(lean.diameter, 0.2)
    for a, b in ((lean.iso, full.iso), (full.iso, lean.iso), (lean.haus, full.haus),
                 (full.haus, lean.haus)):
        assert a.lower <= b.upper + BRACKET_RTOL * scale
    assert lean.budget["skipped"] and full.budget["skipped"] == []
    assert full.budget["iso_stages"] is None and full.budget["thickness_starts"] == 0
    assert any("--certify-all computes both" in f for f in lean.findings)
    assert any("thickness theta(E) = " in f for f in full.findings)
    _check_consistent(lean, E, y)
    _check_consistent(full, E, y)


def test_budget_states_the_work_and_the_stages_stop_at_a_decided_verdict():
    E, y = planted.collapsed(np.random.default_rng(5), P=6, K=3, n=2)
    t = diagnose_theory(E, y, margin=0.2)
    b = t.budget
    assert b["effort"] == "default" and b["per_solve"] == TheoryOptions().budget().to_dict()
    assert b["safety_net_seconds"] == 600.0 and b["reproducible"] is True
    assert (b["points"], b["input_points"], b["classes"], b["max_points"]) == (18, 18, 6, 200)
    first = b["iso_stages"][0]
    assert first["budget"]["n_starts"] == 1 and first["budget"]["max_iter"] < 200
    # the packing bound proves d_iso > L at once: no second stage
    assert first["verdict_decided"] and len(b["iso_stages"]) == 1
    assert b["solves"]["iso"]["n_starts"] == first["n_starts"]
    assert t.to_dict()["budget"] == b and t.to_dict()["certify"] == "verdict"
    json.dumps(to_jsonable(t.to_dict()), allow_nan=False)
    # a budget no larger than the first stage's is one stage
    small = TheoryOptions(n_starts=1, max_iter=10)
    stages = diagnose_theory(E, y, margin=0.2, options=small).budget["iso_stages"]
    assert len(stages) == 1 and stages[0]["budget"] == small.budget().to_dict()
    with pytest.raises(InvalidInputError, match="`certify` must be one of"):
        diagnose_theory(E, y, margin=0.2, certify="most")
    with pytest.raises(InvalidInputError, match="`certify` must be one of"):
        diagnose_batches(E, y, batch_size=12, samples_per_class=3, theory=FAST,
                         certify="most")


def test_an_open_verdict_gets_the_whole_budget():
    """When the first stage leaves statement 3 open, the effort's whole budget runs (and
    the haus solver on a small batch): the d_iso bracket is certify="all"'s."""
    rng = np.random.default_rng(22)  # 6 classes x 2 points in R^2, d_iso close to L
    P, K, n = (int(rng.integers(3, 7)), int(rng.integers(2, 4)), int(rng.integers(1, 3)))
    y = np.repeat(np.arange(P), K)
    E = rng.normal(size=(P * K, n)) * rng.choice([0.1, 0.3, 1.0])
    lean = diagnose_theory(E, y, margin=0.5, options=FAST)
    full = diagnose_theory(E, y, margin=0.5, options=FAST, certify="all")
    stages = lean.budget["iso_stages"]
    assert [st["verdict_decided"] for st in stages] == [False, False]
    assert stages[1]["budget"] == FAST.budget().to_dict()
    assert set(lean.budget["solves"]) == {"iso", "haus"}
    assert lean.loss_faithful is None and full.loss_faithful is None
    assert (lean.iso.lower, lean.iso.upper) == (full.iso.lower, full.iso.upper)
    _check_consistent(lean, E, y)


# --- the view --------------------------------------------------------------------


def test_view_projects_both_sets_with_one_map(rng):
    E = rng.normal(size=(20, 5))
    G = 3.0 * rng.normal(size=(20, 5))
    y = np.repeat(np.arange(4), 5)
    v = embedding_view(E, y, ideal=G)
    P, Q = np.array(v["embedding"]), np.array(v["ideal"])
    # an orthogonal projection contracts distances, and is the same map for both
    from scipy.spatial.distance import cdist, pdist

    assert np.all(pdist(P) <= pdist(E) * (1 + 1e-12) + 1e-12)
    assert np.all(cdist(P, Q) <= cdist(E, G) * (1 + 1e-12) + 1e-12)
    assert sum(v["axes_variance"]) <= 1 + 1e-12 and v["axes_variance"][0] >= v["axes_variance"][1]
    assert v["labels"] == y.tolist() and v["n_shown"] == 20 and v["rows"] is None
    # a 1-D embedding is padded; a large one is subsampled (seeded)
    v1 = embedding_view([[0.0], [1.0], [3.0]], [0, 0, 1])
    assert np.array(v1["embedding"])[:, 1].tolist() == [0.0, 0.0, 0.0]
    v2 = embedding_view(E, y, ideal=G, max_points=7, rng=1)
    assert v2["n_shown"] == 7 and v2["rows"] == embedding_view(E, y, max_points=7, rng=1)["rows"]
    vz = embedding_view(np.zeros((4, 3)), [0, 0, 1, 1])
    assert vz["axes_variance"] == [0.0, 0.0]
    with pytest.raises(InvalidInputError, match=r"`ideal` must have the shape of `E` \(20, 5\)"):
        embedding_view(E, y, ideal=G[:3])


def test_batch_index_is_validated():
    with pytest.raises(InvalidInputError, match="`batch` must be >= 0"):
        diagnose_theory([[0.0], [1.0], [3.0], [4.0]], [0, 0, 1, 1], batch=-1)


def test_suggest_layout_answers_or_refuses_huge_class_counts_at_once():
    import time

    from isoapprox.diagnostics.ideal_distance import SUGGEST_MAX_P, suggest_layout

    t0 = time.process_time()
    s = suggest_layout(SUGGEST_MAX_P, 2, margin=1.0)
    assert s.min_dim > s.dims_impossible_below >= 1  # a proven answer
    with pytest.raises(InvalidInputError, match=r"`n_classes` must be <= 1000000000"):
        suggest_layout(10**18, 2, margin=1.0)
    assert time.process_time() - t0 < 30.0  # a safety net only: 0.3 s measured
