"""Theorem checks (SPEC section 3): numbers, brackets and verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

import isoapprox as ia
from isoapprox import theory as T
from isoapprox.exceptions import InvalidInputError, NoTripletError

from .conftest import random_orthogonal

LAYOUTS = [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1), (0, 0, 1, 1, 1)]


@pytest.mark.parametrize("mode", ["pointwise", "isometry"])
def test_statement1_holds_on_random_pairs(rng, mode):
    for _ in range(5):
        E1 = rng.normal(size=(6, 2))
        E2 = E1 + 0.3 * rng.normal(size=(6, 2))
        chk = T.check_iso_haus(E1, E2, mode=mode)
        assert chk.holds is True
        assert chk.lhs == ia.isometric_error(E1, E2)
        assert chk.slack == pytest.approx(chk.rhs - chk.lhs)
        assert chk.rhs_lower <= chk.rhs <= chk.rhs_upper


def test_statement1_isometric_copy_is_tight_at_zero(rng):
    E = rng.normal(size=(5, 2))
    Q = random_orthogonal(rng, 2, reflect=True)
    chk = T.check_iso_haus(E, E @ Q.T + 1.0, mode="isometry")
    assert chk.lhs <= 1e-12 and chk.rhs <= 1e-7
    assert chk.holds is True


def test_statement1_known_answer():
    chk = T.check_iso_haus([[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [3.0, 0.0]])
    assert (chk.lhs, chk.rhs, chk.holds) == (2.0, 4.0, True)
    assert chk.to_dict()["statement"].startswith("d_iso")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("margin", [0.0, 1.0])
def test_statement3_lower_bound_always_holds(rng, layout, margin):
    y = np.array(layout)
    for _ in range(3):
        E = rng.normal(size=(5, 2))
        lower, upper = T.check_loss_iso(E, y, margin=margin, rng=0)
        L = ia.batch_hard_loss(E, y, margin=margin, reduction="max")
        assert lower.lhs == pytest.approx(L / 2)
        assert lower.holds is True
        assert upper.rhs == pytest.approx(L)
        assert upper.holds in (True, None, False)


def test_statement3_upper_bound_fails_near_collapse_with_many_classes():
    # 4 classes collapsed in the plane: L = alpha = 1 but d_iso(E, F_TS) = sqrt 2
    y = np.repeat(np.arange(4), 2)
    E = 1e-9 * np.random.default_rng(0).normal(size=(8, 2))
    lower, upper = T.check_loss_iso(E, y, margin=1.0, rng=0)
    assert lower.holds is True
    assert upper.lhs == pytest.approx(math.sqrt(2), rel=1e-6)
    assert upper.slack < -0.4  # the incumbent violates d_iso <= L by sqrt 2 - 1
    # the dimension-free lower bounds cannot certify the violation
    assert upper.holds in (None, False)


def test_empirical_constant_brackets_and_floor(rng):
    for layout in LAYOUTS:
        E = rng.normal(size=(5, 2))
        rep = T.empirical_constant(E, layout, margin=1.0, rng=0)
        if math.isnan(rep.c):
            continue
        assert rep.c_lower <= rep.c * (1 + 1e-9) and rep.c <= rep.c_upper * (1 + 1e-9)
        assert rep.half_check.holds is True  # c >= 1/2 (statement 1)
        assert rep.c >= 0.5 - 1e-9
        # d_haus(E, f*) >= d_haus(E, F_TS) up to the haus bracket
        assert rep.d_haus_fstar >= rep.d_haus_lower * (1 - 1e-9)
        assert rep.theta == pytest.approx(ia.thickness(E), rel=1e-12)
        assert rep.implied_cn == pytest.approx(rep.c * rep.theta)
        d = rep.to_dict()
        assert d["half_check"]["holds"] is True


def test_empirical_constant_cn_check(rng):
    E = rng.normal(size=(6, 2))
    y = [0, 0, 1, 1, 2, 2]
    rep = T.empirical_constant(E, y, margin=0.5, c_n=10.0, rng=0)
    assert rep.cn_check is not None and rep.cn_check.holds is True
    tiny = T.empirical_constant(E, y, margin=0.5, c_n=1e-3, rng=0,)
    assert tiny.cn_check.slack < 0 and tiny.cn_check.holds is False


def test_empirical_constant_of_a_separated_embedding_is_undefined():
    E = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.1, 0.0], [0.0, 5.0]])
    rep = T.empirical_constant(E, [0, 0, 1, 1, 2], margin=1.0, rng=0)
    assert rep.d_iso == 0.0 and rep.d_haus == 0.0
    assert math.isnan(rep.c) and rep.half_check is None


def test_empirical_constant_flat_set_has_zero_thickness(rng):
    E = np.c_[rng.normal(size=5), np.zeros(5)]
    rep = T.empirical_constant(E, [0, 0, 1, 1, 2], margin=1.0, c_n=1.0, rng=0)
    assert rep.theta == 0.0 and rep.cn_check is None


@pytest.mark.parametrize(
    "P,dim,d_star", [(2, 2, 1.0), (3, 2, 1.0), (4, 2, math.sqrt(2)), (4, 3, 1.0)]
)
def test_statement4_collapse(P, dim, d_star):
    y = np.repeat(np.arange(P), 2)
    chk = T.check_collapse(y, dim, margin=1.0, rng=0)
    assert chk.loss_collapsed == 1.0 and chk.loss_collapsed_mean == 1.0
    assert chk.d_star == pytest.approx(d_star, rel=1e-9)
    assert chk.d_iso == pytest.approx(d_star, rel=1e-6)
    assert chk.d_iso_lower <= chk.d_iso
    assert chk.beyond_simplex == (P > dim + 1)
    assert chk.faithful_ratio == pytest.approx(d_star, rel=1e-6)
    assert chk.agreement.holds is not False


def test_statement4_margin_scales(rng):
    y = np.repeat(np.arange(3), 2)
    a = T.check_collapse(y, 2, margin=0.5, rng=0)
    assert a.loss_collapsed == 0.5
    assert a.d_iso == pytest.approx(0.5, rel=1e-6)


def test_theory_errors():
    E = np.zeros((4, 2))
    match = r"`mode` must be one of 'pointwise', 'isometry'; got 'classwise'"
    with pytest.raises(InvalidInputError, match=match):
        T.check_iso_haus(E, E, mode="classwise")
    with pytest.raises(InvalidInputError, match=r"`c_n` must be > 0; got -1.0"):
        T.empirical_constant(np.eye(4, 2), [0, 0, 1, 1], c_n=-1.0)
    with pytest.raises(InvalidInputError, match=r"`dim` must be >= 1; got 0"):
        T.check_collapse([0, 0, 1, 1], 0)
    with pytest.raises(NoTripletError, match="one class only"):
        T.check_collapse([0, 0, 0], 2)
    with pytest.raises(InvalidInputError, match=r"`margin` must be >= 0"):
        T.check_loss_iso(E, [0, 0, 1, 1], margin=-1.0)


def test_constant_takes_the_better_feasible_haus_point():
    # a haus incumbent worse than f* moved by its best isometry is replaced by
    # that (re-checked, re-scored) point; the bracket and c follow it
    import dataclasses

    from isoapprox import hausdorff_like, is_triplet_separated, minimax_procrustes, nearest_ideal

    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.2], [0.6, 1.0], [2.0, 0.5]])
    y = np.array([0, 0, 1, 1, 2])
    iso = nearest_ideal(X, y, margin=0.0, objective="iso", rng=0, warn_uncertified=False)
    haus = nearest_ideal(X, y, margin=0.0, objective="haus", rng=0, warn_uncertified=False)
    worse = dataclasses.replace(haus, bracket=dataclasses.replace(
        haus.bracket, value=3 * haus.value, upper=3 * haus.value))
    rep = T.empirical_constant(X, y, margin=0.0, iso=iso, haus=worse)
    assert rep.extra["d_haus_source"] == "procrustes_fstar"
    proc = minimax_procrustes(X, iso.embedding)
    moved = (iso.embedding - proc.b) @ proc.Q
    assert is_triplet_separated(moved, y, margin=0.0)
    assert rep.d_haus == rep.d_haus_upper == hausdorff_like(X, moved)
    assert rep.d_haus_lower == haus.lower <= rep.d_haus < worse.value
    assert rep.c == rep.d_haus / iso.value
    assert rep.c_upper == rep.d_haus_upper / iso.lower
    # the solver's own incumbent is kept when it is the better one
    same = T.empirical_constant(X, y, margin=0.0, iso=iso, haus=haus)
    assert same.d_haus <= haus.value
    if same.extra["d_haus_source"] == "nearest_ideal":
        assert same.d_haus == haus.value


def test_evaluate_theory_record_is_consistent_and_flat():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.2], [0.6, 1.0], [2.0, 0.5]])
    y = [0, 0, 1, 1, 2]
    r = T.evaluate_theory(X, y, options=T.TheoryOptions(time_limit=10.0), rng=0)
    assert r.iso.lower <= r.iso.value == r.iso.upper and r.haus.lower <= r.haus.value
    assert r.c == r.haus.value / r.iso.value
    assert r.c_lower == r.haus.lower / r.iso.upper and r.c_upper == r.haus.upper / r.iso.lower
    assert r.haus.lower >= r.iso.lower / 2  # statement 1
    assert r.checks["2_half"].holds and r.checks["3_lower"].holds
    row = r.to_row()
    assert row["d_iso"] == r.iso.value and row["c_lower"] == r.c_lower
    assert all(isinstance(v, (bool, int, float, str, type(None))) for v in row.values())
    assert row["3_upper_holds"] == r.checks["3_upper"].holds
    d = r.to_dict()
    assert d["iso"]["lower_source"] == r.iso.lower_source and "embedding" not in d["iso"]
    # the same numbers as empirical_constant, which formats this record
    k = T.empirical_constant(X, y, rng=0)
    assert (k.c, k.c_lower, k.c_upper) == (r.c, r.c_lower, r.c_upper)
    with pytest.raises(TypeError, match="TheoryOptions"):
        T.evaluate_theory(X, y, options={})


def _collapsed_sixteen_classes(n):
    """``(E, y, evaluate_theory(...))`` for 16 classes of 4 points within 5e-4 of
    the origin in ``R^n``, margin 0.2, a cheap solver setting."""
    y = np.repeat(np.arange(16), 4)
    E = np.random.default_rng(3).uniform(-5e-4, 5e-4, size=(64, n))
    opts = T.TheoryOptions(time_limit=1.0, solver="scipy", n_starts=2,
                           procrustes_max_dim=0)
    return E, y, T.evaluate_theory(E, y, margin=0.2, options=opts, rng=0)


def test_evaluate_theory_certifies_the_packing_bound_on_a_collapsed_batch():
    """16 classes collapsed in R^2: d_iso >= D*(16, 2, 0.2) - diam > L, certified."""
    _, _, r = _collapsed_sixteen_classes(2)
    # the representatives bound of isoapprox.ideal._subbatch is at least the packing bound
    assert r.iso.lower_source in ("packing", "sub_batch_packing")
    assert r.iso.lower >= r.packing_lower >= 0.5
    assert r.haus.lower >= r.iso.lower / 2
    assert r.checks["3_upper"].holds is False and r.beyond_simplex
    assert r.d_star_lower <= r.d_star <= r.d_star_upper


def test_evaluate_theory_haus_lower_end_uses_the_radius_form_above_haus_max_points():
    """16 classes collapsed in R^3, the haus solver off (64 > 12 points): the
    lower end of d_haus is r*_lower(16, 3, 0.2) - R(E), above half of d_iso's."""
    E, y, r = _collapsed_sixteen_classes(3)
    expect = ia.packing.packing_radius_bound(y, 3, 0.2, ia.min_enclosing_ball(E).radius)
    assert r.haus.lower_source == "packing_radius"
    assert r.haus.lower == expect > r.iso.lower / 2
    assert r.haus.lower <= r.haus.value
    assert expect > 0.2 * 1.05 - 1e-3  # r*(16, 3) >= 1.053


@pytest.mark.parametrize(
    "kwargs,match",
    [({"tol": 0.0}, "`tol` must be > 0"), ({"solver": "gurobi"}, "`solver` must be one of"),
     ({"time_limit": 0.0}, "`time_limit` must be > 0"), ({"n_starts": 0}, "`n_starts`"),
     ({"max_iter": -1}, "`max_iter`")],
)
def test_theory_options_check_their_solver_options(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        T.TheoryOptions(**kwargs)


def test_theory_options_build_one_solver_options_object():
    th = T.TheoryOptions(effort="quick", tol=1e-4, solver="scipy", n_starts=3, max_iter=40,
                         max_subbatches=1, time_limit=30.0)
    for objective in ("iso", "haus"):
        so = th.solver_options(objective)
        assert isinstance(so, ia.SolverOptions)
        assert so == ia.SolverOptions(objective, "scipy", 1e-4, th.budget(), 30.0,
                                      warn_uncertified=False)
    assert th.solver_options().objective == "iso"
    assert T.TheoryOptions().solver_options().time_limit == ia.ideal.SAFETY_TIME_LIMIT


def test_theory_options_pass_the_sub_batch_budget_to_the_solver():
    from isoapprox.exceptions import InvalidInputError

    with pytest.raises(InvalidInputError, match="max_subbatches"):
        T.TheoryOptions(max_subbatches=-1)
    with pytest.raises(InvalidInputError, match="thickness_starts"):
        T.TheoryOptions(thickness_starts=-1)
    opts = T.TheoryOptions(max_subbatches=0)
    assert opts.budget().max_subbatches == 0
    assert T.TheoryOptions().budget().max_subbatches == 8
    assert T.TheoryOptions(effort="quick").budget() == ia.ideal.resolve_budget("quick")
    with pytest.raises(InvalidInputError, match="`effort` must be one of"):
        T.TheoryOptions(effort="slow")
    # the solves run under that budget
    r = T.evaluate_theory([[0.0, 0.0], [2.0, 0.0], [1.0, 0.0], [0.3, 0.1]], [0, 0, 1, 1],
                          options=opts)
    assert r.solver_results["iso"].budget["max_subbatches"] == 0
    assert r.iso.certified
