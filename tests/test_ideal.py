"""nearest_ideal: feasibility, re-scoring, brackets, known answers, properties, errors."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import (
    ConvergenceWarning,
    IdealResult,
    InvalidInputError,
    NoTripletError,
    SolverOptions,
    batch_hard_loss,
    hausdorff_like,
    is_triplet_separated,
    isometric_error,
    nearest_ideal,
)
from isoapprox.ideal import (
    EFFORTS,
    SAFETY_TIME_LIMIT,
    resolve_budget,
    safety_limit,
    solve_nearest,
)
from isoapprox.tolerances import FLOOR_RTOL

from . import ideal_reference as iref
from . import reference as ref
from .conftest import BRACKET_RTOL, examples, random_orthogonal

#: the certified gap is relative to max(value, FLOOR_RTOL * scale); values of
#: two certified runs of the same instance agree to twice the tolerance.
CERT_TOL = 1e-6
#: the planar D* values are reached to the noise of the near-collapsed input
#: (1e-6) plus the certification tolerance.
DSTAR_ATOL = 1e-5

LAYOUTS = [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1), (0, 0, 1, 1, 1)]


def _scale(E, margin):
    return max(ref.diameter(E), margin)


def check_result(res: IdealResult, E, y, margin, objective):
    """Everything a result promises, recomputed independently."""
    E = np.asarray(E, dtype=float)
    G = res.embedding
    assert isinstance(res, IdealResult)
    assert G.shape == E.shape and G.dtype == np.float64
    # feasible in float64, by the package's own kernels
    assert res.slack >= 0.0
    assert is_triplet_separated(G, y, margin=margin, atol=0.0)
    if len(y) <= 12:  # the loop reference is O(N^3)
        assert res.slack == pytest.approx(ref.worst_slack(G, y, margin), rel=1e-9,
                                          abs=1e-12 * _scale(E, margin))
    # the value is the re-scored objective, never a solver's number
    if objective == "iso":
        assert res.value == isometric_error(E, G)
    else:
        assert res.value == hausdorff_like(E, G, mode="pointwise")
    assert res.upper == res.value
    assert res.lower <= res.value
    assert res.gap == pytest.approx(max(res.value - res.lower, 0.0), abs=1e-300)
    floor = FLOOR_RTOL * _scale(E, margin)
    want = res.gap / max(res.value, floor) if res.gap > 0 else 0.0
    assert res.rel_gap == pytest.approx(want, rel=1e-12, abs=1e-300)
    assert res.certified == (res.rel_gap <= res.tol)
    assert res.status in ("certified", "time_limit", "exhausted")
    assert (res.status == "certified") == res.certified
    assert res.lower == max(res.bounds.values())
    assert res.bounds[res.lower_source] == res.lower
    assert res.objective == objective and res.margin == margin
    assert res.kind in ("collapsed", "class-collapsed", "general")
    assert res.solver in ("identity", "construction", "scipy", "cvxpy", "branch_and_bound")
    if objective == "iso" and res.value > 0:
        assert res.lower >= batch_hard_loss(E, y, margin=margin, reduction="max") / 2
    assert res.seconds >= 0.0 and res.n_iter >= 0 and res.n_starts >= 0


# ---------------------------------------------------------------------------
# feasibility, re-scoring and brackets


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("margin", [0.0, 1.0])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_toy_results_are_feasible_and_rescored(rng, objective, margin, layout):
    y = np.array(layout)
    E = rng.normal(size=(5, 2))
    res = nearest_ideal(E, y, margin=margin, objective=objective, rng=1, solver="scipy",
                        n_starts=6, warn_uncertified=False)
    check_result(res, E, y, margin, objective)


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("margin", [0.0, 0.8])
def test_bracket_holds_against_independent_search(rng, objective, margin):
    """lower <= any feasible value found independently; value near the best found."""
    for layout in [(0, 0, 1, 2), (0, 0, 1, 1)]:
        y = np.array(layout)
        E = rng.normal(size=(4, 2))
        res = nearest_ideal(E, y, margin=margin, objective=objective, rng=2, solver="scipy",
                            warn_uncertified=False)
        check_result(res, E, y, margin, objective)
        best = iref.independent_search(E, y, margin, objective, rng, n_random=300,
                                       n_polish=8)
        scale = _scale(E, margin)
        assert res.lower <= best + BRACKET_RTOL * scale
        assert res.value <= best + CERT_TOL * scale


def test_iso_lower_dominates_half_batch_hard_loss(rng):
    for margin in (0.0, 0.5, 2.0):
        for layout in LAYOUTS:
            y = np.array(layout)
            E = rng.normal(size=(5, 2))
            res = nearest_ideal(E, y, margin=margin, rng=0, solver="scipy", n_starts=3,
                                warn_uncertified=False)
            assert res.lower >= batch_hard_loss(E, y, margin=margin, reduction="max") / 2
            assert "half_loss" in res.bounds and "three_point" in res.bounds


def test_toy_iso_is_mostly_certified(rng):
    """The half-loss / 3-point bound closes most toys (the benchmark measures it)."""
    certified = 0
    for k in range(12):
        y = np.array(LAYOUTS[k % 3])
        E = rng.normal(size=(5, 2))
        res = nearest_ideal(E, y, margin=float(k % 2), rng=k, solver="scipy",
                            warn_uncertified=False)
        certified += res.certified
        if res.certified:
            assert res.rel_gap <= CERT_TOL
    assert certified >= 8


# ---------------------------------------------------------------------------
# known answers


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_separated_input_is_its_own_nearest(objective):
    E = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.0, 0.2], [0.0, 7.0]])
    y = np.array([0, 0, 1, 1, 2])
    res = nearest_ideal(E, y, margin=1.0, objective=objective, warn_uncertified=False)
    assert res.value == 0.0 and res.lower == 0.0 and res.certified
    assert res.solver == "identity"
    np.testing.assert_array_equal(res.embedding, E)
    check_result(res, E, y, 1.0, objective)


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_collapsed_input_margin_zero(objective):
    E = np.full((5, 3), 2.5)
    y = np.array([0, 0, 1, 1, 2])
    res = nearest_ideal(E, y, objective=objective, warn_uncertified=False)
    assert res.value == 0.0 and res.certified
    assert res.kind == "collapsed"
    check_result(res, E, y, 0.0, objective)


def test_class_collapsed_input_margin_zero():
    C = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.5]])
    y = np.array([0, 1, 2, 0, 1, 2, 0])
    E = C[y]
    res = nearest_ideal(E, y, warn_uncertified=False)
    assert res.value == 0.0 and res.kind == "class-collapsed"


@pytest.mark.parametrize("P,dstar", [(2, 1.0), (3, 1.0)])
def test_near_collapse_small_class_counts_certified(rng, P, dstar):
    """d_iso(near-collapsed, F_TS) = D*(P, 2, 1) = 1 for P <= 3, certified by the
    3-point bound (alpha - D_pm); the classes stay collapsed to the input's noise."""
    y = np.repeat(np.arange(P), 2)
    E = 1e-6 * rng.normal(size=(2 * P, 2))
    res = nearest_ideal(E, y, margin=1.0, rng=0, warn_uncertified=False)
    check_result(res, E, y, 1.0, "iso")
    assert res.certified
    assert res.value == pytest.approx(dstar, abs=DSTAR_ATOL)
    G = res.embedding
    for c in range(P):
        assert ref.diameter(G[y == c]) <= 1e-4


def test_near_collapse_four_classes_in_the_plane(rng):
    """P = 4 > n + 1: the value is the packing diameter sqrt 2.  The convex
    bounds cannot see the dimension (they stay at the margin, 1); the packing
    bound D*(4, 2, 1) - diam(E) = sqrt 2 - diam(E) closes the bracket to diam(E)
    (the representatives bound, sqrt 2 minus the diameter of four nearby
    representatives, to less).  The packing bound is applied before the
    branch-and-bound, which therefore does not run here."""
    y = np.repeat(np.arange(4), 2)
    E = 1e-6 * rng.normal(size=(8, 2))
    with_bnb = nearest_ideal(E, y, margin=1.0, rng=0, n_starts=8, time_limit=5.0,
                             max_nodes=20_000, warn_uncertified=False)
    assert with_bnb.certified and with_bnb.lower_source in ("packing", "sub_batch_packing")
    assert "branch_and_bound" not in with_bnb.bounds
    res = nearest_ideal(E, y, margin=1.0, rng=0, n_starts=8, time_limit=5.0, max_nodes=0,
                        warn_uncertified=False)
    check_result(res, E, y, 1.0, "iso")
    assert res.value == pytest.approx(math.sqrt(2), abs=DSTAR_ATOL)
    packing = ("packing", "sub_batch_packing")
    assert max(v for k, v in res.bounds.items() if k not in packing) == pytest.approx(
        1.0, abs=DSTAR_ATOL)
    diam = ref.diameter(E)
    assert res.bounds["packing"] == pytest.approx(math.sqrt(2) - diam, rel=1e-11)
    assert res.lower_source in packing and res.lower >= res.bounds["packing"]
    assert res.gap <= diam * (1 + 1e-6) + DSTAR_ATOL
    assert res.kind == "class-collapsed"


def test_result_serialises():
    import json

    from isoapprox.io import to_jsonable

    res = nearest_ideal([[0.0, 0.0], [2.0, 0.0], [1.0, 0.0]], [0, 0, 1], warn_uncertified=False)
    d = res.to_dict()
    assert d["value"] == res.value and d["bounds"] == res.bounds
    assert json.loads(json.dumps(to_jsonable(res)))["certified"] is True
    assert "IdealResult(" in repr(res)


def test_collinear_three_points():
    E = [[0.0, 0.0], [2.0, 0.0], [1.0, 0.0]]
    res = nearest_ideal(E, [0, 0, 1], warn_uncertified=False)
    assert res.certified and res.value == pytest.approx(0.5, abs=1e-8)


# ---------------------------------------------------------------------------
# invariances (brackets of transformed instances must intersect; certified
# values agree)


def _agree(r1, r2, scale):
    assert r1.lower <= r2.value + BRACKET_RTOL * scale
    assert r2.lower <= r1.value + BRACKET_RTOL * scale
    if r1.certified and r2.certified:
        assert r1.value == pytest.approx(r2.value, rel=2 * CERT_TOL, abs=2 * CERT_TOL * scale)


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_invariance_rigid_motion_and_permutation(rng, objective):
    y = np.array([0, 0, 1, 1, 2])
    E = rng.normal(size=(5, 2))
    base = nearest_ideal(E, y, margin=0.5, objective=objective, rng=0, solver="scipy",
                         warn_uncertified=False)
    Q = random_orthogonal(rng, 2)
    E2 = E @ Q.T + rng.normal(size=2) * 10
    moved = nearest_ideal(E2, y, margin=0.5, objective=objective, rng=0, solver="scipy",
                          warn_uncertified=False)
    _agree(base, moved, _scale(E, 0.5))
    perm = rng.permutation(5)
    permuted = nearest_ideal(E[perm], y[perm], margin=0.5, objective=objective, rng=0,
                             solver="scipy", warn_uncertified=False)
    _agree(base, permuted, _scale(E, 0.5))


@pytest.mark.parametrize("c", [1e-3, 7.0, 1e-150, 1e150])
def test_homogeneity_under_scaling(rng, c):
    y = np.array([0, 0, 0, 1, 1])
    E = rng.normal(size=(5, 2))
    base = nearest_ideal(E, y, margin=0.7, rng=0, solver="scipy", n_starts=4,
                         warn_uncertified=False)
    scaled = nearest_ideal(c * E, y, margin=0.7 * c, rng=0, solver="scipy", n_starts=4,
                           warn_uncertified=False)
    check_result(scaled, c * E, y, 0.7 * c, "iso")
    assert scaled.lower == pytest.approx(c * base.lower, rel=1e-9)
    if base.certified and scaled.certified:
        assert scaled.value == pytest.approx(c * base.value, rel=2 * CERT_TOL)


# ---------------------------------------------------------------------------
# hypothesis


@st.composite
def instances(draw):
    N = draw(st.integers(3, 6))
    n = draw(st.integers(1, 3))
    y = draw(st.lists(st.integers(0, 2), min_size=N, max_size=N))
    y[0], y[1] = 0, 0
    if all(v == 0 for v in y):
        y[2] = 1
    seed = draw(st.integers(0, 2**32 - 1))
    E = np.random.default_rng(seed).normal(size=(N, n)) * draw(st.sampled_from([1e-3, 1.0, 30.0]))
    margin = draw(st.sampled_from([0.0, 0.2, 1.0]))
    return E, np.array(y), margin


@pytest.mark.property
@given(inst=instances())
@settings(max_examples=examples(25))
def test_property_feasible_rescored_and_consistent(inst):
    E, y, margin = inst
    ri = nearest_ideal(E, y, margin=margin, objective="iso", rng=0, solver="scipy",
                       n_starts=3, time_limit=2.0, warn_uncertified=False)
    rh = nearest_ideal(E, y, margin=margin, objective="haus", rng=0, solver="scipy",
                       n_starts=3, time_limit=2.0, warn_uncertified=False)
    check_result(ri, E, y, margin, "iso")
    check_result(rh, E, y, margin, "haus")
    scale = _scale(E, margin)
    # d_iso(E, F) <= 2 d_haus(E, F) and d_haus >= d_iso / 2
    assert ri.lower <= 2 * rh.value + BRACKET_RTOL * scale
    assert rh.lower <= rh.value


# ---------------------------------------------------------------------------
# options, solvers, warnings, imports


def test_warns_by_default_when_uncertified_and_can_be_silenced(rng):
    # four classes within ~1e-3 in the plane: without the branch-and-bound
    # (which certifies it) the packing bounds leave a gap of about the diameter
    # of the representatives (at 1e-6 it closes to tol)
    y = np.repeat(np.arange(4), 2)
    E = 1e-3 * rng.normal(size=(8, 2))
    with pytest.warns(ConvergenceWarning, match="not certified") as record:
        res = nearest_ideal(E, y, margin=1.0, n_starts=2, solver="scipy", max_nodes=0)
    assert not res.certified
    msg = str(record[0].message)
    # the message names the bracket, the bound that limits it and the status
    assert f"{res.lower:.6g}" in msg and f"{res.upper:.6g}" in msg
    assert f"the {res.lower_source} bound" in msg and repr(res.status) in msg
    # the warning points at the caller's line, not into the package
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = nearest_ideal(E, y, margin=1.0, n_starts=2, solver="scipy", max_nodes=0,
                              warn_uncertified=False)
        assert not quiet.certified and quiet.value == res.value
        ok = nearest_ideal([[0.0, 0.0], [2.0, 0.0], [1.0, 0.0]], [0, 0, 1])
    assert ok.certified


@pytest.mark.solver
@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("margin", [0.0, 1.0])
def test_cvxpy_family(rng, objective, margin):
    y = np.array([0, 0, 1, 1, 2])
    E = rng.normal(size=(5, 2))
    res = nearest_ideal(E, y, margin=margin, objective=objective, solver="cvxpy", rng=0,
                        n_starts=3, max_iter=30, warn_uncertified=False)
    check_result(res, E, y, margin, objective)
    assert res.solver in ("cvxpy", "construction", "identity")
    ref_res = nearest_ideal(E, y, margin=margin, objective=objective, solver="scipy", rng=0,
                            warn_uncertified=False)
    _agree(res, ref_res, _scale(E, margin))


@pytest.mark.solver
def test_ccp_never_increases_the_objective(rng):
    from isoapprox.ideal._ccp import ccp_solve
    from isoapprox.ideal._problem import Problem

    for margin in (0.0, 1.0):
        for objective in ("iso", "haus"):
            y = np.array([0, 0, 1, 1, 2])
            E = rng.normal(size=(5, 2))
            prob = Problem.build(E, y, margin, objective, ref.diameter(E))
            # a feasible start: class-collapsed centres far apart
            C = 3.0 * np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
            G0 = C[y]
            v0 = prob.value(G0)
            G, it = ccp_solve(prob.program(()), G0, max_iter=20)
            assert it >= 1
            assert prob.value(G) <= v0 + 1e-6
            assert prob.slack(G) >= -1e-6


@pytest.mark.solver
def test_auto_escalates_to_sdp_for_haus(rng):
    y = np.array([0, 0, 1, 1, 2])
    E = rng.normal(size=(5, 2))
    res = nearest_ideal(E, y, objective="haus", rng=0, warn_uncertified=False)
    check_result(res, E, y, 0.0, "haus")
    assert "shor_sdp" in res.bounds or res.certified


def test_scipy_solver_does_not_import_cvxpy():
    code = (
        "import sys, numpy as np, isoapprox;"
        "assert 'cvxpy' not in sys.modules;"
        "r = isoapprox.nearest_ideal(np.random.default_rng(0).normal(size=(6, 2)),"
        " [0, 0, 1, 1, 2, 2], margin=1.0, objective='haus', solver='scipy', n_starts=2);"
        "assert 'cvxpy' not in sys.modules, 'cvxpy imported'"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert out.returncode == 0, out.stderr


def test_medium_size_returns_a_bracket_in_time(rng):
    N = 40
    y = rng.integers(0, 5, size=N)
    y[:2] = 0
    E = rng.normal(size=(N, 3))
    res = nearest_ideal(E, y, margin=0.5, rng=0, time_limit=3.0, warn_uncertified=False)
    check_result(res, E, y, 0.5, "iso")
    assert res.seconds < 3.0 + 6.0  # one local solve may overrun the budget


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_large_size_returns_a_bracket(rng, objective):
    N = 200
    y = rng.integers(0, 10, size=N)
    y[:2] = 0
    E = rng.normal(size=(N, 4))
    res = nearest_ideal(E, y, margin=1.0, objective=objective, rng=0, time_limit=20.0,
                        warn_uncertified=False)
    check_result(res, E, y, 1.0, objective)
    assert res.rel_gap < 1.0


# ---------------------------------------------------------------------------
# errors


GOOD_E = np.zeros((4, 2))
GOOD_Y = [0, 0, 1, 1]


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"E": [[0.0, np.nan], [1, 1], [2, 2]], "y": [0, 0, 1]}, InvalidInputError, "finite"),
        ({"E": [0.0, 1.0, 2.0], "y": [0, 0, 1]}, InvalidInputError, "2-D"),
        ({"E": [[0.0], [1.0]], "y": [0, 1]}, InvalidInputError, "at least 3"),
        ({"y": [0, 0, 1]}, InvalidInputError, "length 4"),
        ({"y": [0, 0, 0, 0]}, NoTripletError, "two classes"),
        ({"y": [0, 1, 2, 3]}, NoTripletError, "singletons"),
        ({"margin": -1.0}, InvalidInputError, "margin"),
        ({"objective": "hausdorff"}, InvalidInputError, "'iso', 'haus'"),
        ({"solver": "gurobi"}, InvalidInputError, "'auto', 'scipy', 'cvxpy'"),
        ({"tol": 0.0}, InvalidInputError, "tol"),
        ({"n_starts": 0}, InvalidInputError, "n_starts"),
        ({"max_iter": 0}, InvalidInputError, "max_iter"),
        ({"time_limit": -1.0}, InvalidInputError, "time_limit"),
        ({"warn_uncertified": "yes"}, TypeError, "warn_uncertified"),
        ({"n_starts": 2.5}, TypeError, "n_starts"),
        ({"rng": "seed"}, TypeError, "rng"),
    ],
)
def test_errors(kwargs, exc, match):
    args = {"E": GOOD_E, "y": GOOD_Y}
    args.update(kwargs)
    E, y = args.pop("E"), args.pop("y")
    with pytest.raises(exc, match=match):
        nearest_ideal(E, y, **args)


def test_answers_do_not_depend_on_earlier_solves_or_on_threads():
    # the cached SDP relaxations keep cvxpy solver state between solves, and
    # two threads would share their parameters: every call must start fresh
    # and hold the solver lock (without it: history-dependent last digits,
    # and a crash or another configuration's bound under threads)
    from concurrent.futures import ThreadPoolExecutor

    gen = np.random.default_rng(3)
    cases = [(gen.normal(size=(5, 2)), np.array([0, 0, 1, 1, 2])) for _ in range(4)]

    def solve(i):
        E, y = cases[i]
        r = nearest_ideal(E, y, margin=0.5, objective="haus", rng=i, time_limit=1e9,
                          warn_uncertified=False)
        return r.value, r.lower, r.upper, r.lower_source, sorted(r.bounds.items())

    first = [solve(i) for i in range(4)]
    assert any(f[3] == "shor_sdp" for f in first)  # the cached programs are exercised
    assert [solve(i) for i in reversed(range(4))][::-1] == first
    with ThreadPoolExecutor(2) as ex:
        assert list(ex.map(solve, range(4))) == first


# ----------------------------------------------------------------------
# the search's structure: stages as data, validation once (issue 36)
# ----------------------------------------------------------------------


def test_stages_are_named_once_and_a_new_stage_is_one_entry(monkeypatch):
    from isoapprox.ideal import nearest as nm

    names = [s.name for s in nm.STAGES + nm.START_HOOKS]
    assert len(names) == len(set(names))
    seen = []

    def probe(S):
        # a new method: a function of the state, its condition, one entry
        seen.append((sorted(S.done), S.best is not None))

    i = names.index("closed_forms") + 1
    monkeypatch.setattr(nm, "STAGES", nm.STAGES[:i] + (nm.Stage("probe", probe),)
                        + nm.STAGES[i:])
    E = np.array([[0.0, 0.0], [1.0, 0.2], [0.1, 1.0], [1.2, 1.1], [0.6, 0.5]])
    res = nearest_ideal(E, [0, 0, 1, 1, 2], margin=0.5, rng=0, effort="quick",
                        warn_uncertified=False)
    assert seen == [(["closed_forms", "identity", "lower_cheap", "probe"], True)]
    monkeypatch.undo()
    again = nearest_ideal(E, [0, 0, 1, 1, 2], margin=0.5, rng=0, effort="quick",
                          warn_uncertified=False)
    assert again.value == res.value and again.bounds == res.bounds


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_points_labels_and_margin_are_validated_once(objective):
    import isoapprox._validation as V

    watched = {V.as_points.__code__: "as_points", V.as_labels.__code__: "as_labels",
               V.check_margin.__code__: "check_margin",
               V.require_triplets.__code__: "require_triplets"}
    counts = dict.fromkeys(watched.values(), 0)

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in watched:
            counts[watched[frame.f_code]] += 1

    rng = np.random.default_rng(3)
    E, y = rng.normal(size=(12, 3)), np.repeat(np.arange(4), 3)
    nearest_ideal(E, y, margin=0.2, objective=objective, rng=0, effort="quick",
                  warn_uncertified=False)  # compiled before counting
    sys.setprofile(profile)
    try:
        nearest_ideal(E, y, margin=0.2, objective=objective, rng=0, effort="quick",
                      warn_uncertified=False)
    finally:
        sys.setprofile(None)
    assert counts == dict.fromkeys(watched.values(), 1)


@pytest.mark.parametrize("a", [0.0, 1e-310, 1e-300, 3.0, 1e300, float(np.finfo(float).max)])
@pytest.mark.parametrize("b", [0.0, 2.0**-1074, 1e-200, 0.5, 1e200])
@pytest.mark.parametrize("length", [(), (1e-9,), (1e250,)])
def test_pow2_factor_of_stored_magnitudes_is_pow2_scale(a, b, length):
    from isoapprox._scaling import max_magnitude, pow2_factor, pow2_scale

    E, G = np.array([[a, -a / 3]]), np.array([[-b], [b / 7]])
    m = max(max_magnitude(E), max_magnitude(G))
    assert pow2_factor(m, length) == pow2_scale(E, G, lengths=length)


# --- SolverOptions: one options object, checked where it is built ---------------------


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"objective": "hausdorff"}, InvalidInputError, "`objective` must be one of 'iso', 'haus'"),
        ({"solver": "gurobi"}, InvalidInputError, "`solver` must be one of"),
        ({"tol": 0.0}, InvalidInputError, "`tol` must be > 0"),
        ({"time_limit": -1.0}, InvalidInputError, "`time_limit` must be > 0"),
        ({"budget": {"n_starts": 2}}, TypeError, "`budget` must be a Budget"),
        ({"warn_uncertified": "yes"}, TypeError, "`warn_uncertified` must be a bool"),
    ],
)
def test_solver_options_errors_name_the_argument(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        SolverOptions(**kwargs)


def test_solver_options_defaults_are_nearest_ideals():
    opts = SolverOptions()
    assert opts == SolverOptions.from_effort("default")
    assert (opts.objective, opts.solver, opts.tol, opts.warn_uncertified) == (
        "iso", "auto", 1e-6, True)
    assert opts.budget == resolve_budget("default")
    assert opts.time_limit == SAFETY_TIME_LIMIT  # None is stored resolved
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.tol = 1.0  # type: ignore[misc]


@pytest.mark.property
@given(effort=st.sampled_from(EFFORTS),
       n_starts=st.one_of(st.none(), st.integers(1, 50)),
       max_iter=st.one_of(st.none(), st.integers(1, 500)),
       max_subbatches=st.one_of(st.none(), st.integers(0, 40)),
       time_limit=st.one_of(st.none(), st.floats(1e-3, 1e6)))
@settings(max_examples=examples(25))
def test_property_from_effort_is_the_resolved_budget(effort, n_starts, max_iter,
                                                      max_subbatches, time_limit):
    opts = SolverOptions.from_effort(effort, objective="haus", time_limit=time_limit,
                                     n_starts=n_starts, max_iter=max_iter,
                                     max_subbatches=max_subbatches)
    assert opts.objective == "haus"
    assert opts.budget == resolve_budget(effort, n_starts=n_starts, max_iter=max_iter,
                                         max_subbatches=max_subbatches)
    assert opts.time_limit == safety_limit(time_limit)
    # a copy with one field changed is checked again and equal to one built so
    assert dataclasses.replace(opts, objective="iso") == SolverOptions.from_effort(
        effort, time_limit=time_limit, n_starts=n_starts, max_iter=max_iter,
        max_subbatches=max_subbatches)


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_solve_nearest_with_options_is_nearest_ideal(objective):
    rng = np.random.default_rng(11)
    E, y = rng.normal(size=(7, 2)), [0, 0, 1, 1, 2, 2, 2]
    kw = {"tol": 1e-5, "solver": "scipy", "effort": "quick", "n_starts": 3, "max_iter": 60}
    public = nearest_ideal(E, y, margin=0.4, objective=objective, rng=5,
                           warn_uncertified=False, **kw)
    opts = SolverOptions.from_effort(kw.pop("effort"), objective=objective,
                                     warn_uncertified=False, **kw)
    core = solve_nearest(np.asarray(E, dtype=np.float64), np.array(y, dtype=np.int64), 0.4, 5,
                         opts)
    assert core.embedding.tobytes() == public.embedding.tobytes()
    assert core.bracket == public.bracket
    assert (core.status, core.n_starts, core.n_iter, core.solver) == (
        public.status, public.n_starts, public.n_iter, public.solver)
