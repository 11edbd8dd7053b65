"""nearest_zero_loss: zero-loss sets of the contrastive and margin losses.

Feasibility and re-scoring, brackets against independent searches, known
answers, the proven bounds (loss, packing, the metric relaxation equal to
L_max), invariances, scaling, statement 5 and errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import (
    IdealResult,
    InvalidInputError,
    check_pair_loss,
    contrastive_report,
    hausdorff_like,
    isometric_error,
    margin_loss_report,
    nearest_zero_loss,
)
from isoapprox.ideal._pairs import pair_packing_bound
from isoapprox.ideal._problem import PairBounds, Problem
from isoapprox.kernels import ideal as K
from isoapprox.tolerances import FLOOR_RTOL

from . import pairs_reference as pref
from . import reference as ref
from .conftest import (
    BRACKET_RTOL,
    KERNEL_ATOL,
    KERNEL_RTOL,
    examples,
    labelled_cloud,
    random_orthogonal,
)

#: the certified gap is relative to max(value, FLOOR_RTOL * scale); values of
#: two certified runs of the same instance agree to twice the tolerance.
CERT_TOL = 1e-6
#: the near-collapsed inputs carry noise of 1e-6; values are reached to that
#: plus the certification tolerance.
NOISE_ATOL = 1e-5
#: the metric LP reference (HiGHS, default tolerances) agrees with L_max to this.
LP_ATOL = 1e-7

LAYOUTS = [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1), (0, 1, 2, 3, 3)]
# (loss, margin, pos_margin, beta)
SETTINGS = [("contrastive", 1.0, 0.0, 1.0), ("contrastive", 0.8, 0.5, 1.0),
            ("contrastive", 0.0, 0.3, 1.0), ("margin", 0.2, 0.0, 1.0),
            ("margin", 0.5, 0.0, 0.5)]


def _kw(setting):
    loss, margin, pos_margin, beta = setting
    return {"loss": loss, "margin": margin, "pos_margin": pos_margin, "beta": beta}


def _ul(setting):
    loss, margin, pos_margin, beta = setting
    return pref.bounds(loss, margin, pos_margin, beta)


def _scale(E, l):
    return max(ref.diameter(E), l)


def _report(G, y, kw):
    if kw["loss"] == "contrastive":
        return contrastive_report(G, y, margin=kw["margin"], pos_margin=kw["pos_margin"],
                                  reduction="max", atol=0.0)
    return margin_loss_report(G, y, margin=kw["margin"], beta=kw["beta"], reduction="max",
                              atol=0.0)


def check_result(res: IdealResult, E, y, kw, objective):
    """Everything a result promises, recomputed independently."""
    E = np.asarray(E, dtype=float)
    y = np.asarray(y)
    u, l = pref.bounds(kw["loss"], kw["margin"], kw["pos_margin"], kw["beta"])
    G = res.embedding
    assert isinstance(res, IdealResult)
    assert G.shape == E.shape and G.dtype == np.float64
    # in the zero-loss set in float64: by the loops and by the public loss
    assert res.slack >= 0.0
    assert pref.worst_slack(G, y, u, l) >= 0.0
    assert _report(G, y, kw).zero_loss
    assert res.slack == pytest.approx(pref.worst_slack(G, y, u, l), rel=1e-9,
                                      abs=1e-12 * _scale(E, l))
    if objective == "iso":
        assert res.value == isometric_error(E, G)
    else:
        assert res.value == hausdorff_like(E, G, mode="pointwise")
    assert res.upper == res.value
    assert res.lower <= res.value
    assert res.gap == pytest.approx(max(res.value - res.lower, 0.0), abs=1e-300)
    floor = FLOOR_RTOL * _scale(E, l)
    want = res.gap / max(res.value, floor) if res.gap > 0 else 0.0
    assert res.rel_gap == pytest.approx(want, rel=1e-12, abs=1e-300)
    assert res.certified == (res.rel_gap <= res.tol)
    assert (res.status == "certified") == res.certified
    assert res.lower == max(res.bounds.values())
    assert res.bounds[res.lower_source] == res.lower
    assert res.objective == objective and res.margin == kw["margin"]
    assert res.loss == kw["loss"]
    assert res.thresholds["upper"] == u and res.thresholds["lower"] == l
    assert res.kind in ("collapsed", "class-collapsed", "general")
    assert res.solver in ("identity", "construction", "scipy", "cvxpy", "branch_and_bound")
    L = pref.loss_max(E, y, u, l)
    scale = _scale(E, l)
    if res.value > 0:
        key, factor = ("loss", 1.0) if objective == "iso" else ("half_loss", 0.5)
        assert res.bounds[key] == pytest.approx(factor * L, rel=1e-12, abs=1e-12 * scale)
        assert res.lower >= factor * L - 1e-12 * scale


# ---------------------------------------------------------------------------
# feasibility, re-scoring, brackets


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("setting", SETTINGS)
def test_toy_results_are_feasible_and_rescored(rng, objective, setting):
    kw = _kw(setting)
    for layout in LAYOUTS:
        y = np.array(layout)
        E = rng.normal(size=(5, 2))
        res = nearest_zero_loss(E, y, objective=objective, rng=1, solver="scipy", n_starts=4,
                                **kw, warn_uncertified=False)
        check_result(res, E, y, kw, objective)


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("setting", [SETTINGS[1], SETTINGS[3]])
def test_bracket_holds_against_independent_search(rng, objective, setting):
    """lower <= any feasible value found independently; value near the best found."""
    kw = _kw(setting)
    u, l = _ul(setting)
    for layout in [(0, 0, 1, 2), (0, 0, 1, 1)]:
        y = np.array(layout)
        E = rng.normal(size=(4, 2))
        res = nearest_zero_loss(E, y, objective=objective, rng=2, solver="scipy", **kw,
                                warn_uncertified=False)
        check_result(res, E, y, kw, objective)
        best = pref.independent_search(E, y, u, l, objective, rng, n_random=200, n_polish=6)
        scale = _scale(E, l)
        assert res.lower <= best + BRACKET_RTOL * scale
        assert res.value <= best + CERT_TOL * scale


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_bracket_against_dense_grid_search_in_1d(rng, objective):
    """n = 1, three classes: the packing bound is active (k = 3 >= n + 2); every
    grid point in the zero-loss set bounds the true value from above."""
    grid = np.linspace(-2.0, 2.0, 33)  # step 0.125
    for _ in range(2):
        E = rng.uniform(-1.0, 1.0, size=(4, 1))
        y = np.array([0, 0, 1, 2])
        for setting in [("contrastive", 1.0, 0.25, 1.0), ("margin", 0.25, 0.0, 0.75)]:
            kw = _kw(setting)
            u, l = _ul(setting)
            res = nearest_zero_loss(E, y, objective=objective, rng=0, solver="scipy", **kw,
                                    warn_uncertified=False)
            check_result(res, E, y, kw, objective)
            best = pref.dense_search_1d(E, y, u, l, objective, grid)
            assert res.lower <= best + BRACKET_RTOL * _scale(E, l)
            # the grid is coarse: the solver must not be worse than a grid point
            assert res.value <= best + CERT_TOL * _scale(E, l)


def test_iso_is_mostly_certified_on_toys(rng):
    """L_max is the value whenever the clipped table is realisable (most toys)."""
    certified = 0
    for k in range(10):
        y = np.array(LAYOUTS[k % 3])
        E = rng.normal(size=(5, 2))
        kw = _kw(SETTINGS[k % len(SETTINGS)])
        res = nearest_zero_loss(E, y, rng=k, solver="scipy", **kw, warn_uncertified=False)
        certified += res.certified
    assert certified >= 9


# ---------------------------------------------------------------------------
# the bounds themselves


@pytest.mark.parametrize("setting", SETTINGS)
def test_metric_relaxation_equals_loss_max(rng, setting):
    """The theorem of ._pairs: over all metrics the value is exactly L_max, so
    3-point sub-problems and the metric LP add nothing for pair constraints."""
    u, l = _ul(setting)
    for layout in [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1)]:
        y = np.array(layout)
        E = rng.normal(size=(5, 2)) * rng.choice([0.3, 1.0, 3.0])
        assert pref.metric_lp(E, y, u, l) == pytest.approx(pref.loss_max(E, y, u, l),
                                                           abs=LP_ATOL)


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_packing_bound_is_below_feasible_values(rng, objective):
    """Near collapse with more classes than n + 1, against the independent search."""
    for n, P in [(1, 3), (2, 4)]:
        y = np.repeat(np.arange(P), 2)
        E = 0.05 * rng.normal(size=(2 * P, n))
        prob = Problem.build(E, y, 0.0, objective, ref.diameter(E), PairBounds(0.1, 1.0))
        v = pair_packing_bound(prob) * prob.scale
        assert v > 0.0
        best = pref.independent_search(E, y, 0.1, 1.0, objective, rng, n_random=200,
                                       n_polish=4)
        assert v <= best + BRACKET_RTOL


# ---------------------------------------------------------------------------
# known answers


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_input_in_the_set_is_its_own_nearest(objective):
    E = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.0, 0.2], [0.0, 7.0]])
    y = np.array([0, 0, 1, 1, 2])
    for kw in ({"loss": "contrastive", "margin": 1.0, "pos_margin": 0.3, "beta": 1.0},
               {"loss": "margin", "margin": 0.5, "pos_margin": 0.0, "beta": 1.0}):
        res = nearest_zero_loss(E, y, objective=objective, **{k: v for k, v in kw.items()},
                                warn_uncertified=False)
        assert res.value == 0.0 and res.lower == 0.0 and res.certified
        assert res.solver == "identity" and res.bounds == {"zero_loss": 0.0}
        np.testing.assert_array_equal(res.embedding, E)
        check_result(res, E, y, kw, objective)


@pytest.mark.parametrize("delta", [0.05, 0.3])
def test_two_collapsed_classes_too_close(delta):
    """Class-collapsed, centres alpha - delta apart: d_iso = delta, d_haus = delta/2."""
    alpha = 1.0
    C = np.array([[0.0, 0.0], [alpha - delta, 0.0]])
    y = np.array([0, 0, 0, 1, 1])
    E = C[y]
    kw = {"loss": "contrastive", "margin": alpha, "pos_margin": 0.0, "beta": 1.0}
    res = nearest_zero_loss(E, y, **kw, warn_uncertified=False)
    check_result(res, E, y, kw, "iso")
    assert res.certified and res.value == pytest.approx(delta, rel=CERT_TOL)
    assert res.kind == "class-collapsed"
    res = nearest_zero_loss(E, y, objective="haus", **kw, warn_uncertified=False)
    check_result(res, E, y, kw, "haus")
    assert res.certified and res.value == pytest.approx(delta / 2, rel=CERT_TOL)
    # the margin loss with beta = alpha forces collapse (u = 0) and d_neg >= 2 alpha
    kw = {"loss": "margin", "margin": 0.5, "pos_margin": 0.0, "beta": 0.5}
    res = nearest_zero_loss(E, y, **kw, warn_uncertified=False)
    check_result(res, E, y, kw, "iso")
    assert res.certified and res.value == pytest.approx(1.0 - (alpha - delta), rel=CERT_TOL)


def test_single_pairs():
    # one positive pair: d_iso = D - u, d_haus = (D - u)/2; one negative: l - D
    kw = {"loss": "contrastive", "margin": 2.0, "pos_margin": 1.0, "beta": 1.0}
    for y, D, want in [([0, 0], 3.0, 2.0), ([0, 1], 0.5, 1.5), ([0, 1], 0.0, 2.0)]:
        E = np.array([[0.0, 0.0], [D, 0.0]])
        ri = nearest_zero_loss(E, y, **kw, warn_uncertified=False)
        rh = nearest_zero_loss(E, y, objective="haus", **kw, warn_uncertified=False)
        check_result(ri, E, y, kw, "iso")
        check_result(rh, E, y, kw, "haus")
        assert ri.certified and ri.value == pytest.approx(want, rel=CERT_TOL)
        assert rh.certified and rh.value == pytest.approx(want / 2, rel=CERT_TOL)


def test_no_constraint_and_only_one_family():
    E = np.array([[0.0], [0.1], [0.3]])
    # singletons and l = 0: nothing constrains
    res = nearest_zero_loss(E, [0, 1, 2], margin=0.0, warn_uncertified=False)
    assert res.value == 0.0 and res.slack == math.inf
    # one class, u = 0: the nearest is collapsed, d_iso = diam
    res = nearest_zero_loss(E, [0, 0, 0], margin=1.0, warn_uncertified=False)
    assert res.certified and res.value == pytest.approx(0.3) and res.kind == "collapsed"


@pytest.mark.parametrize("objective,want", [("iso", math.sqrt(2)), ("haus", 1 / math.sqrt(2))])
def test_collapse_four_classes_in_the_plane_is_certified(rng, objective, want):
    """P = 4 > n + 1 collapsed classes: L_max = alpha = 1 but d_iso = D*(4, 2, 1) =
    sqrt 2 and d_haus = 1/sqrt 2 (square); the packing bound certifies both.
    (The bracket's width is of the order of the input's noise, 1e-8 here.)"""
    y = np.repeat(np.arange(4), 2)
    E = 1e-8 * rng.normal(size=(8, 2))
    kw = {"loss": "contrastive", "margin": 1.0, "pos_margin": 0.0, "beta": 1.0}
    res = nearest_zero_loss(E, y, objective=objective, rng=0, **kw, warn_uncertified=False)
    check_result(res, E, y, kw, objective)
    assert res.certified and res.lower_source == "packing"
    assert res.value == pytest.approx(want, abs=NOISE_ATOL)
    assert res.kind == "class-collapsed"


def test_result_serialises():
    import json

    from isoapprox.io import to_jsonable

    res = nearest_zero_loss([[0.0, 0.0], [3.0, 0.0], [1.0, 0.0]], [0, 0, 1], margin=2.0,
                            pos_margin=1.0, warn_uncertified=False)
    d = res.to_dict()
    assert d["loss"] == "contrastive" and d["thresholds"]["upper"] == 1.0
    assert json.loads(json.dumps(to_jsonable(res)))["certified"] is True
    assert "loss='contrastive'" in repr(res)


# ---------------------------------------------------------------------------
# invariances and scaling


def _agree(r1, r2, scale):
    assert r1.lower <= r2.value + BRACKET_RTOL * scale
    assert r2.lower <= r1.value + BRACKET_RTOL * scale
    if r1.certified and r2.certified:
        assert r1.value == pytest.approx(r2.value, rel=2 * CERT_TOL, abs=2 * CERT_TOL * scale)


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_invariance_rigid_motion_and_permutation(rng, objective):
    y = np.array([0, 0, 1, 1, 2])
    E = rng.normal(size=(5, 3))
    kw = _kw(SETTINGS[1])
    base = nearest_zero_loss(E, y, objective=objective, rng=0, solver="scipy", **kw,
                             warn_uncertified=False)
    Q = random_orthogonal(rng, 3, reflect=True)
    E2 = E @ Q.T + rng.normal(size=3) * 10
    moved = nearest_zero_loss(E2, y, objective=objective, rng=0, solver="scipy", **kw,
                              warn_uncertified=False)
    check_result(moved, E2, y, kw, objective)
    _agree(base, moved, _scale(E, 0.8))
    perm = rng.permutation(5)
    permuted = nearest_zero_loss(E[perm], y[perm], objective=objective, rng=0, solver="scipy",
                                 **kw, warn_uncertified=False)
    _agree(base, permuted, _scale(E, 0.8))
    # relabelling the classes changes nothing
    relabelled = nearest_zero_loss(E, 7 - 3 * y, objective=objective, rng=0, solver="scipy",
                                   **kw, warn_uncertified=False)
    _agree(base, relabelled, _scale(E, 0.8))


@pytest.mark.parametrize("c", [1e-3, 7.0, 1e-150, 1e150])
@pytest.mark.parametrize("loss", ["contrastive", "margin"])
def test_homogeneity_under_scaling(rng, c, loss):
    y = np.array([0, 0, 0, 1, 1])
    E = rng.normal(size=(5, 2))
    kw = {"loss": loss, "margin": 0.7, "pos_margin": 0.4, "beta": 1.1}
    kwc = {"loss": loss, "margin": 0.7 * c, "pos_margin": 0.4 * c, "beta": 1.1 * c}
    base = nearest_zero_loss(E, y, rng=0, solver="scipy", n_starts=4, **kw, warn_uncertified=False)
    scaled = nearest_zero_loss(c * E, y, rng=0, solver="scipy", n_starts=4, **kwc,
                               warn_uncertified=False)
    check_result(scaled, c * E, y, kwc, "iso")
    assert scaled.lower == pytest.approx(c * base.lower, rel=1e-9)
    if base.certified and scaled.certified:
        assert scaled.value == pytest.approx(c * base.value, rel=2 * CERT_TOL)


# ---------------------------------------------------------------------------
# hypothesis


@st.composite
def instances(draw):
    N = draw(st.integers(2, 6))
    n = draw(st.integers(1, 3))
    y = np.array(draw(st.lists(st.integers(0, 2), min_size=N, max_size=N)))
    seed = draw(st.integers(0, 2**32 - 1))
    E = np.random.default_rng(seed).normal(size=(N, n)) * draw(st.sampled_from([1e-3, 1.0, 30.0]))
    setting = draw(st.sampled_from(SETTINGS))
    return E, y, _kw(setting)


@pytest.mark.property
@given(inst=instances())
@settings(max_examples=examples(20))
def test_property_feasible_rescored_and_consistent(inst):
    E, y, kw = inst
    ri = nearest_zero_loss(E, y, objective="iso", rng=0, solver="scipy", n_starts=3,
                           time_limit=2.0, **kw, warn_uncertified=False)
    rh = nearest_zero_loss(E, y, objective="haus", rng=0, solver="scipy", n_starts=3,
                           time_limit=2.0, **kw, warn_uncertified=False)
    check_result(ri, E, y, kw, "iso")
    check_result(rh, E, y, kw, "haus")
    scale = _scale(E, ri.thresholds["lower"])
    # d_iso(E, F) <= 2 d_haus(E, F)
    assert ri.lower <= 2 * rh.value + BRACKET_RTOL * scale


# ---------------------------------------------------------------------------
# kernels and programs of the pair family


def test_pair_slack_kernel_matches_loops(rng):
    for N, n, P in [(2, 1, 2), (5, 2, 3), (8, 3, 4), (4, 2, 1), (3, 2, 3)]:
        E = rng.normal(size=(N, n))
        y = rng.integers(0, P, size=N)
        for u, l in [(0.5, 1.0), (0.0, 0.0), (2.0, 0.3)]:
            sp, sn = K.pair_slack(E, y, u, l)
            want_p = min([u - d for d, s in _pd(E, y) if s], default=math.inf)
            want_n = min([d - l for d, s in _pd(E, y) if not s], default=math.inf)
            assert sp == pytest.approx(want_p, rel=KERNEL_RTOL, abs=KERNEL_ATOL)
            assert sn == pytest.approx(want_n, rel=KERNEL_RTOL, abs=KERNEL_ATOL)


def _pd(E, y):
    D = ref.pairwise(E)
    return [(D[i, j], same) for i, j, same in pref.pair_pairs(y)]


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("collapsed", [(), (0,)])
def test_pair_rows_and_jacobian(rng, objective, collapsed):
    from .test_ideal_kernels import FD_ATOL, FD_STEP

    E, y = labelled_cloud(rng, 6, 2, 3)
    prob = Problem.build(E, y, 0.0, objective, ref.diameter(E), PairBounds(0.3, 0.9))
    prog = prob.program(collapsed)
    assert set(np.unique(prog.kind)) <= {0, 1, 2, 5, 6} and prog.n_r == 0
    assert {5, 6} <= set(np.unique(prog.kind))
    M, n = prog.M, prob.n
    nv = M * n + 1
    x = rng.normal(size=nv)
    x[-1] = abs(x[-1]) + 0.1
    m = prog.kind.size
    args = (M, n, prob.E, prog.kind, prog.ri, prog.rj, prog.rk, prog.rv, 0.0, 0.0)

    def rows(z):
        G = z[: M * n].reshape(M, n)
        t = z[M * n]
        out = []
        for kd, i, j, v in zip(prog.kind, prog.ri, prog.rj, prog.rv, strict=True):
            if kd == 2:
                out.append(t - np.sum((G[i] - prob.E[j]) ** 2))
                continue
            q = np.sum((G[i] - G[j]) ** 2)
            out.append({0: (v + t) ** 2 - q, 1: q - (v - t) * abs(v - t), 5: v * v - q,
                        6: q - v * v}[kd])
        return np.array(out)

    c = np.empty(m)
    J = np.zeros((m, nv))
    K.epigraph_rows(x, *args, True, c, J)
    np.testing.assert_allclose(c, rows(x), rtol=KERNEL_RTOL, atol=KERNEL_ATOL)
    fd = np.array([(rows(x + FD_STEP * e) - rows(x - FD_STEP * e)) / (2 * FD_STEP)
                   for e in np.eye(nv)]).T
    np.testing.assert_allclose(J, fd, atol=FD_ATOL)
    # the augmented Lagrangian gradient on the same rows
    lam = np.abs(rng.normal(size=m))
    g = np.zeros(nv)

    def f(z):
        return K.al_value_grad(z, *args, lam, 3.0, np.zeros(nv), np.zeros(m))

    K.al_value_grad(x, *args, lam, 3.0, g, np.zeros(m))
    fdg = np.array([(f(x + FD_STEP * e) - f(x - FD_STEP * e)) / (2 * FD_STEP) for e in np.eye(nv)])
    np.testing.assert_allclose(g, fdg, atol=1e-5)


def test_zero_upper_bound_merges_every_class(rng):
    E, y = labelled_cloud(rng, 7, 2, 3)
    prob = Problem.build(E, y, 0.0, "iso", ref.diameter(E), PairBounds(0.0, 1.0))
    prog = prob.program(())
    counts = np.bincount(y)
    assert prog.collapsed == tuple(int(c) for c in np.flatnonzero(counts >= 2))
    assert not np.any(prog.kind == 5)


@pytest.mark.solver
@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_ccp_never_increases_the_objective_on_pair_programs(rng, objective):
    from isoapprox.ideal._ccp import ccp_solve

    y = np.array([0, 0, 1, 1, 2])
    E = rng.normal(size=(5, 2))
    prob = Problem.build(E, y, 0.0, objective, ref.diameter(E), PairBounds(0.4, 0.8))
    C = 3.0 * np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    G0 = prob.from_caller(C[y])
    v0 = prob.value(G0)
    G, it = ccp_solve(prob.program(()), G0, max_iter=20)
    assert it >= 1
    assert prob.value(G) <= v0 + 1e-6
    assert prob.slack(G) >= -1e-6


@pytest.mark.solver
@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_cvxpy_family_and_sdp_bounds(rng, objective):
    y = np.array([0, 0, 1, 1, 2])
    E = rng.normal(size=(5, 2))
    kw = _kw(SETTINGS[3])
    res = nearest_zero_loss(E, y, objective=objective, solver="cvxpy", rng=0, n_starts=3,
                            max_iter=30, **kw, warn_uncertified=False)
    check_result(res, E, y, kw, objective)
    ref_res = nearest_zero_loss(E, y, objective=objective, solver="scipy", rng=0, **kw,
                                warn_uncertified=False)
    _agree(res, ref_res, _scale(E, 1.2))


# ---------------------------------------------------------------------------
# statement 5


def test_statement5_lower_always_holds_and_upper_with_equality_when_realisable(rng):
    """On random toys in the plane the clipped table is realisable almost always
    (120 of 120 with ``benchmarks/bench_nearest_zero_loss.py --statement5 120``),
    so the upper check is certified: d_iso(E, F) = L_max."""
    decided = 0
    for k, setting in enumerate(SETTINGS):
        y = np.array(LAYOUTS[k % 3])
        E = rng.normal(size=(5, 2))
        kw = _kw(setting)
        lower, upper = check_pair_loss(E, y, rng=0, **kw)
        u, l = _ul(setting)
        L = pref.loss_max(E, y, u, l)
        assert lower.lhs == pytest.approx(L, rel=1e-12, abs=1e-12)
        assert lower.holds is True
        assert upper.rhs == lower.lhs
        assert upper.holds in (True, None)
        if upper.holds:
            # realisable: d_iso = L_max to the certification tolerance
            assert upper.lhs == pytest.approx(L, rel=2 * CERT_TOL)
            decided += 1
        # the lower end of d_iso's bracket is never below L (the proven bound is used)
        assert lower.rhs_lower >= L - 1e-12 * _scale(E, _ul(setting)[1])
    assert decided >= len(SETTINGS) - 1


def test_statement5_upper_fails_at_collapse_with_many_classes(rng):
    y = np.repeat(np.arange(4), 2)
    E = 1e-6 * rng.normal(size=(8, 2))
    lower, upper = check_pair_loss(E, y, margin=1.0, rng=0)
    assert lower.holds is True
    assert upper.holds is False  # d_iso = sqrt 2 > L = 1, certified by packing
    assert upper.lhs == pytest.approx(math.sqrt(2), abs=NOISE_ATOL)
    assert upper.slack < 0


def test_statement5_reuses_a_result_and_rejects_a_mismatched_one():
    E = [[0.0], [3.0], [1.0]]
    iso = nearest_zero_loss(E, [0, 0, 1], margin=2.0, pos_margin=1.0, warn_uncertified=False)
    lo, up = check_pair_loss(E, [0, 0, 1], margin=2.0, pos_margin=1.0, iso=iso)
    assert (lo.lhs, lo.rhs, lo.holds, up.holds) == (2.0, iso.value, True, True)
    with pytest.raises(InvalidInputError, match="`iso` must be"):
        check_pair_loss(E, [0, 0, 1], margin=1.5, pos_margin=1.0, iso=iso)
    with pytest.raises(InvalidInputError, match="`iso` must be"):
        check_pair_loss(E, [0, 0, 1], loss="margin", margin=0.5, beta=1.5, iso=iso)


# ---------------------------------------------------------------------------
# errors


GOOD_E = np.zeros((4, 2))
GOOD_Y = [0, 0, 1, 1]


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"loss": "margin", "margin": 1.0, "beta": 0.5}, InvalidInputError,
         r"zero-loss set is empty.*beta >= margin"),
        ({"loss": "triplet"}, InvalidInputError, "'contrastive', 'margin'"),
        ({"margin": -1.0}, InvalidInputError, "`margin` must be >= 0"),
        ({"pos_margin": -0.1}, InvalidInputError, "`pos_margin` must be >= 0"),
        ({"loss": "margin", "beta": -1.0}, InvalidInputError, "`beta` must be >= 0"),
        ({"E": [[0.0, np.nan], [1, 1]], "y": [0, 1]}, InvalidInputError, "finite"),
        ({"E": [[0.0, 1.0]], "y": [0]}, InvalidInputError, "at least 2"),
        ({"y": [0, 0, 1]}, InvalidInputError, "length 4"),
        ({"objective": "hausdorff"}, InvalidInputError, "'iso', 'haus'"),
        ({"solver": "gurobi"}, InvalidInputError, "'auto', 'scipy', 'cvxpy'"),
        ({"tol": 0.0}, InvalidInputError, "tol"),
        ({"n_starts": 0}, InvalidInputError, "n_starts"),
        ({"time_limit": -1.0}, InvalidInputError, "time_limit"),
        ({"warn_uncertified": "yes"}, TypeError, "warn_uncertified"),
    ],
)
def test_errors(kwargs, exc, match):
    args = {"E": GOOD_E, "y": GOOD_Y}
    args.update(kwargs)
    E, y = args.pop("E"), args.pop("y")
    with pytest.raises(exc, match=match):
        nearest_zero_loss(E, y, **args)
    if "E" not in kwargs and "y" not in kwargs and set(kwargs) <= {"loss", "margin",
                                                                    "pos_margin", "beta"}:
        with pytest.raises(exc, match=match):
            check_pair_loss(E, y, **args)


def test_margin_loss_empty_set_only_matters_with_a_positive_pair():
    # beta < margin but all singletons: F_M = {d_neg >= beta + margin} is not empty
    E = np.array([[0.0, 0.0], [0.5, 0.0], [0.0, 0.5]])
    res = nearest_zero_loss(E, [0, 1, 2], loss="margin", margin=1.0, beta=0.5,
                            warn_uncertified=False)
    assert res.certified and res.value >= 1.0 - 1e-12
    check_result(res, E, [0, 1, 2], {"loss": "margin", "margin": 1.0, "pos_margin": 0.0,
                                     "beta": 0.5}, "iso")
