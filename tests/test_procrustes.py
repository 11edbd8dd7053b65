"""Minimax Procrustes: exactness in 1-D/2-D, brackets in higher dimension."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from isoapprox import (
    ConvergenceWarning,
    InvalidInputError,
    ProcrustesResult,
    hausdorff_like,
    isometric_error,
    minimax_procrustes,
)
from isoapprox.kernels import meb as KM
from isoapprox.kernels import planar as KG
from isoapprox.procrustes import _meb_nd, _subset_lower_bound

from .conftest import BRACKET_RTOL, MOTION_ATOL, MOTION_RTOL, random_orthogonal, scale_of
from .reference import dist, meb_radius_bruteforce_2d

#: the default certification target of minimax_procrustes (relative to the
#: MEB radii of the inputs); two independent solves may differ by twice it.
SOLVER_RTOL = 1e-9


def _scale(E1, E2) -> float:
    """``max(R(E1), R(E2))``: the scale the solver's tolerance refers to."""
    return max(meb_radius(E1), meb_radius(E2), 1e-300)


def meb_radius(X) -> float:
    X = np.ascontiguousarray(X, dtype=float)
    if X.shape[1] == 2:
        return float(KM.meb_2d(X, np.arange(len(X)), np.empty(3, dtype=np.int64), np.empty(3))[2])
    return _meb_nd(X)[1]


def value_at(E1, E2, Q) -> float:
    """Objective of ``Q`` with the best ``b``: MEB radius of ``E2 - E1 Q^T``."""
    return meb_radius(np.asarray(E2) - np.asarray(E1) @ np.asarray(Q).T)


def rot(phi: float, reflect: bool = False) -> np.ndarray:
    Q = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    return Q @ np.diag([1.0, -1.0]) if reflect else Q


def grid_minimum_2d(E1, E2, m: int = 4000) -> float:
    """Brute force over a dense angle grid of both families (an upper bound of the optimum)."""
    best = math.inf
    for refl in (False, True):
        for phi in np.linspace(0.0, 2 * math.pi, m, endpoint=False):
            best = min(best, value_at(E1, E2, rot(phi, refl)))
    return best


def check_result(res: ProcrustesResult, E1, E2) -> None:
    """Re-score the returned isometry and check the bracket's internal consistency."""
    E1 = np.asarray(E1, dtype=float)
    E2 = np.asarray(E2, dtype=float)
    n = E1.shape[1]
    assert isinstance(res.value, float) and isinstance(res.lower, float)
    np.testing.assert_allclose(res.Q.T @ res.Q, np.eye(n), atol=1e-12)
    direct = max(dist(res.Q @ a + res.b, e) for a, e in zip(E1, E2, strict=True))
    sc = scale_of(E1, E2)
    assert res.value == pytest.approx(direct, rel=1e-12, abs=1e-13 * sc)
    assert res.upper == res.value
    assert 0.0 <= res.lower <= res.upper
    assert res.gap == pytest.approx(res.upper - res.lower, abs=1e-15 * sc)
    assert res.reflection == bool(np.linalg.det(res.Q) < 0)


# ---------------------------------------------------------------------------
# kernel twins: the planar minimum enclosing circle and the interval bound
# ---------------------------------------------------------------------------


def test_meb_2d_matches_bruteforce(rng):
    for trial in range(300):
        N = int(rng.integers(1, 9))
        P = rng.normal(size=(N, 2))
        if trial % 4 == 1:
            P = np.round(P)  # duplicates and cocircular ties
        if trial % 4 == 2:
            P[:, 1] = 2.0 * P[:, 0] - 1.0  # collinear
        if trial % 4 == 3:
            P[:] = P[0]  # all equal
        sup = np.empty(3, dtype=np.int64)
        w = np.empty(3)
        cx, cy, r = KM.meb_2d(np.ascontiguousarray(P), rng.permutation(N), sup, w)
        assert r == pytest.approx(meb_radius_bruteforce_2d(P), rel=1e-12, abs=1e-12)
        # the radius is attained by the centre, and the dual weights certify it
        assert r == pytest.approx(max(dist(p, (cx, cy)) for p in P), rel=1e-15, abs=1e-300)
        idx = sup[sup >= 0]
        ww = w[: len(idx)]
        assert np.all(ww >= 0) and ww.sum() == pytest.approx(1.0)
        cw = ww @ P[idx]
        dual = math.sqrt(sum(wk * dist(P[k], cw) ** 2 for wk, k in zip(ww, idx, strict=True)))
        assert dual <= r * (1 + 1e-12) + 1e-15
        assert dual == pytest.approx(r, rel=1e-9, abs=1e-12)


def test_interval_bound_never_exceeds_dense_minimum(rng):
    """Each interval's bound (Lipschitz cones + dual sinusoids) is a true lower bound."""
    for _ in range(120):
        N = int(rng.integers(2, 8))
        A = rng.normal(size=(N, 2))
        E = rng.normal(size=(N, 2))
        P = np.empty((N, 2))
        order = np.arange(N)
        sup = np.empty(3, dtype=np.int64)
        w = np.empty(3)
        lo = rng.uniform(0.0, 6.0)
        hi = lo + rng.uniform(1e-3, 0.8)
        ea = KG._eval_angle(A, E, lo, P, order, sup, w)
        eb = KG._eval_angle(A, E, hi, P, order, sup, w)
        L = float(np.max(np.linalg.norm(A, axis=1)))
        lb = KG._interval_bound(
            lo,
            hi,
            math.sqrt(ea[1]),
            math.sqrt(eb[1]),
            ea[2],
            ea[3],
            ea[4],
            eb[2],
            eb[3],
            eb[4],
            L,
            0.0,
            np.inf,
        )
        dense = min(KG._eval_angle(A, E, t, P, order, sup, w)[0] for t in np.linspace(lo, hi, 1500))
        assert lb <= dense + 1e-12


# ---------------------------------------------------------------------------
# known answers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("reflect", [False, True])
def test_isometric_copies_give_zero_and_the_isometry(rng, n, reflect):
    N = 7
    E1 = rng.normal(size=(N, n))
    U = random_orthogonal(rng, n, reflect=reflect)
    t = rng.normal(size=n) * 3
    E2 = E1 @ U.T + t
    res = minimax_procrustes(E1, E2)
    check_result(res, E1, E2)
    assert res.certified
    assert res.value <= 1e-12 * scale_of(E1, E2)
    np.testing.assert_allclose(res.Q, U, atol=1e-9)
    np.testing.assert_allclose(res.b, t, atol=1e-9 * scale_of(E1, E2))
    assert res.reflection == reflect


@pytest.mark.parametrize("n", [1, 2, 3])
def test_two_points_closed_form(rng, n):
    """With N = 2 the optimum is half the change of the distance."""
    E1 = rng.normal(size=(2, n))
    E2 = rng.normal(size=(2, n))
    res = minimax_procrustes(E1, E2)
    want = abs(dist(*E1) - dist(*E2)) / 2
    assert res.value == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert res.certified


def test_one_dimensional_hand_computed():
    # Q = +1: differences (0, 0, 1), radius 0.5; Q = -1: sums (0, 2, 5), radius 2.5
    res = minimax_procrustes([[0.0], [1.0], [2.0]], [[0.0], [1.0], [3.0]])
    assert res.value == 0.5 and res.lower == pytest.approx(0.5) and res.certified
    assert res.Q.tolist() == [[1.0]] and res.b.tolist() == [0.5]
    res = minimax_procrustes([[0.0], [1.0], [2.0]], [[3.0], [1.0], [0.0]])
    assert res.value == 0.5 and res.reflection and res.method == "exact-1d"


@pytest.mark.parametrize("m", [3, 4, 5, 7])
@pytest.mark.parametrize("s", [0.25, 1.5, 3.0])
def test_scaled_regular_polygon(m, s):
    """E2 = s E1 for a unit regular polygon: the answer is |1 - s| (the MEB radii
    differ by that much, and Q = I, b = 0 attains it)."""
    a = 2 * np.pi * np.arange(m) / m
    E1 = np.c_[np.cos(a), np.sin(a)]
    res = minimax_procrustes(E1, s * E1)
    assert res.value == pytest.approx(abs(1 - s), rel=1e-9)
    assert res.certified


def test_collapsed_first_argument_gives_meb_radius(rng):
    E2 = rng.normal(size=(6, 2))
    E1 = np.tile(rng.normal(size=(1, 2)), (6, 1))
    res = minimax_procrustes(E1, E2)
    assert res.value == pytest.approx(meb_radius_bruteforce_2d(E2), rel=1e-9)
    assert res.certified


def test_single_point_is_zero():
    res = minimax_procrustes([[1.0, 2.0]], [[-3.0, 7.0]])
    assert res.value == 0.0 and res.certified and res.method == "trivial"
    np.testing.assert_array_equal(res.Q @ np.array([1.0, 2.0]) + res.b, [-3.0, 7.0])


def test_result_is_frozen():
    res = minimax_procrustes([[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 2.0]])
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.value = 0.0  # type: ignore[misc]


# ---------------------------------------------------------------------------
# brute force in the plane: the certified bracket contains the optimum
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["random", "near", "regular", "collinear", "integer"])
def test_bracket_contains_bruteforce_optimum_2d(rng, kind):
    for _ in range(4):
        N = int(rng.integers(3, 8))
        E1 = rng.normal(size=(N, 2))
        E2 = rng.normal(size=(N, 2))
        if kind == "near":
            E2 = E1 @ rot(1.0, True).T + 0.1 * rng.normal(size=(N, 2))
        if kind == "regular":
            a = 2 * np.pi * np.arange(N) / N
            E1 = np.c_[np.cos(a), np.sin(a)]
            E2 = 1.3 * E1[rng.permutation(N)]
        if kind == "collinear":
            E1[:, 1] = 0.0
        if kind == "integer":
            E1, E2 = np.round(2 * E1), np.round(2 * E2)
        res = minimax_procrustes(E1, E2)
        check_result(res, E1, E2)
        assert res.certified
        brute = grid_minimum_2d(E1, E2)  # >= the true optimum
        tol = SOLVER_RTOL * _scale(E1, E2)
        assert res.lower <= brute * (1 + BRACKET_RTOL)
        assert res.value <= brute + tol
        # the MEB of the grid's best angles is the brute-force reference itself
        assert res.value == pytest.approx(min(brute, res.value), abs=2e-6 * _scale(E1, E2))


def test_refined_bruteforce_optimum_lies_in_the_bracket(rng):
    """A grid plus a bounded refinement of its best angles approximates the
    optimum to ~1e-10; it must fall inside [lower, upper] up to that."""
    from scipy.optimize import minimize_scalar

    for _ in range(6):
        N = int(rng.integers(3, 8))
        E1 = rng.normal(size=(N, 2))
        E2 = rng.normal(size=(N, 2))
        res = minimax_procrustes(E1, E2)
        h = 2 * math.pi / 720
        vals = []
        for refl in (False, True):
            grid = [(value_at(E1, E2, rot(p, refl)), p) for p in np.arange(720) * h]
            for _, p in sorted(grid)[:3]:
                r = minimize_scalar(lambda t, A=E1, B=E2, f=refl: value_at(A, B, rot(t, f)),
                                    bounds=(p - h, p + h), method="bounded",
                                    options={"xatol": 1e-13})
                vals.append(float(r.fun))
        brute = min(vals)
        slack = 1e-9 * _scale(E1, E2)
        assert res.lower - slack <= brute <= res.upper + slack


def test_grid_uses_exact_meb(rng):
    """The grid minimum above uses the numba circle; spot-check it against the
    all-circles brute force at a few angles."""
    E1 = rng.normal(size=(5, 2))
    E2 = rng.normal(size=(5, 2))
    for phi in rng.uniform(0, 2 * np.pi, size=5):
        P = E2 - E1 @ rot(phi).T
        assert value_at(E1, E2, rot(phi)) == pytest.approx(meb_radius_bruteforce_2d(P), rel=1e-12)


def test_lower_bound_never_exceeds_feasible_values(rng):
    """Independent feasible points: random isometries with their best translation."""
    for n in (2, 3):
        for _ in range(3):
            N = int(rng.integers(3, 9))
            E1 = rng.normal(size=(N, n))
            E2 = rng.normal(size=(N, n))
            res = minimax_procrustes(E1, E2, rng=1)
            check_result(res, E1, E2)
            for _ in range(30):
                Q = random_orthogonal(rng, n)
                assert res.lower <= value_at(E1, E2, Q) * (1 + BRACKET_RTOL)


# ---------------------------------------------------------------------------
# dimension >= 3: brackets
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 4])
def test_bracket_in_higher_dimension(rng, n):
    N = 8
    E1 = rng.normal(size=(N, n))
    E2 = E1 @ random_orthogonal(rng, n).T + 0.05 * rng.normal(size=(N, n))
    res = minimax_procrustes(E1, E2, rng=0)
    check_result(res, E1, E2)
    assert res.method == "kabsch-slsqp"
    assert res.lower >= isometric_error(E1, E2) / 2 * (1 - 1e-12)
    # no worse than the least-squares Procrustes start
    U, _, Vt = np.linalg.svd((E1 - E1.mean(0)).T @ (E2 - E2.mean(0)))
    assert res.value <= value_at(E1, E2, Vt.T @ U.T) * (1 + 1e-12)
    # small perturbations of an isometry: the Lagrangian dual closes the bracket
    assert res.certified


def test_subset_bound_is_valid(rng):
    """max over pairs and triples of |R(E1_S) - R(E2_S)| never exceeds a feasible value."""
    for _ in range(20):
        E1 = rng.normal(size=(6, 3))
        E2 = rng.normal(size=(6, 3))
        lb = _subset_lower_bound(E1, E2)
        assert lb >= isometric_error(E1, E2) / 2 * (1 - 1e-12)
        best = min(value_at(E1, E2, random_orthogonal(rng, 3)) for _ in range(50))
        assert lb <= best


def test_seeded_runs_are_reproducible(rng):
    E1 = rng.normal(size=(7, 3))
    E2 = rng.normal(size=(7, 3))
    a = minimax_procrustes(E1, E2, rng=3)
    b = minimax_procrustes(E1, E2, rng=3)
    assert a.value == b.value and a.lower == b.lower
    np.testing.assert_array_equal(a.Q, b.Q)


# ---------------------------------------------------------------------------
# invariances, homogeneity, the lemma
# ---------------------------------------------------------------------------

points_2d = st.integers(2, 7).flatmap(
    lambda N: st.tuples(
        arrays(np.float64, (N, 2), elements=st.floats(-10, 10, allow_subnormal=False)),
        arrays(np.float64, (N, 2), elements=st.floats(-10, 10, allow_subnormal=False)),
    )
)


@pytest.mark.property
@given(points_2d, st.integers(0, 2**32 - 1))
def test_invariance_under_motions_and_permutations_2d(pair, seed):
    E1, E2 = pair
    r = np.random.default_rng(seed)
    base = minimax_procrustes(E1, E2)
    sc = _scale(E1, E2)
    tol = 2 * SOLVER_RTOL * sc + MOTION_ATOL * scale_of(E1, E2)
    U = random_orthogonal(r, 2)
    V = random_orthogonal(r, 2)
    perm = r.permutation(len(E1))
    moved = [
        (E1 @ U.T + r.normal(size=2), E2),
        (E1, E2 @ V.T + r.normal(size=2)),
        (E1[perm], E2[perm]),
        (E2, E1),  # symmetric: the inverse isometry
    ]
    for A, B in moved:
        other = minimax_procrustes(A, B)
        assert other.value == pytest.approx(base.value, rel=MOTION_RTOL, abs=tol)


@pytest.mark.property
@given(points_2d, st.sampled_from([1e-150, 1e-8, 0.3, 7.0, 1e150]))
def test_homogeneity_2d(pair, c):
    E1, E2 = pair
    # the scaled inputs must not under/overflow (tiny entries times 1e-150 do)
    assume(np.array_equal((c * E1) / c, E1) and np.array_equal((c * E2) / c, E2))
    base = minimax_procrustes(E1, E2)
    scaled = minimax_procrustes(c * E1, c * E2)
    # the re-scored value is exact to the certification target plus the
    # rounding of the raw (uncentred) coordinates: a few ulps of max |E|,
    # the floor that minimax_procrustes documents and subtracts from `lower`.
    # Two identical one-point clouds at 1 and 0.25 score 0 at c = 1 and
    # ~5e-17 (relative) at c = 1e-150: rounding, not a homogeneity defect.
    rounding = 2 * 8 * np.finfo(float).eps * (np.abs(E1).max() + np.abs(E2).max())
    tol = 2 * SOLVER_RTOL * _scale(E1, E2) + rounding
    assert scaled.value / c == pytest.approx(base.value, rel=1e-9, abs=tol)
    assert scaled.lower <= scaled.value


@pytest.mark.property
@given(points_2d)
def test_lemma_diso_at_most_twice_dhaus(pair):
    E1, E2 = pair
    res = minimax_procrustes(E1, E2)
    assert isometric_error(E1, E2) <= 2 * res.value * (1 + 1e-12) + 1e-12
    # and the value never exceeds the pointwise (identity isometry) distance
    assert res.value <= hausdorff_like(E1, E2) * (1 + 1e-12) + 1e-13


@pytest.mark.property
@settings(max_examples=20)  # each example runs two n = 3 solves (~0.1 s each)
@given(
    st.integers(2, 6).flatmap(
        lambda N: arrays(np.float64, (N, 3), elements=st.floats(-5, 5, allow_subnormal=False))
    ),
    st.integers(0, 2**32 - 1),
)
def test_brackets_overlap_under_motions_3d(E1, seed):
    r = np.random.default_rng(seed)
    E2 = E1 + r.normal(size=E1.shape)
    a = minimax_procrustes(E1, E2, n_starts=1)
    U = random_orthogonal(r, 3)
    b = minimax_procrustes(E1 @ U.T + 1.0, E2[::-1][::-1], n_starts=1)
    slack = 1e-9 * scale_of(E1, E2)
    assert a.lower <= b.upper + slack and b.lower <= a.upper + slack
    assert isometric_error(E1, E2) <= 2 * a.value * (1 + 1e-12) + 1e-12


def test_hausdorff_like_isometry_mode_uses_it(rng):
    E1 = rng.normal(size=(6, 2))
    E2 = rng.normal(size=(6, 2))
    assert hausdorff_like(E1, E2, mode="isometry") == minimax_procrustes(E1, E2).value


# ---------------------------------------------------------------------------
# options, warnings and errors
# ---------------------------------------------------------------------------


def test_max_iter_exhausted_warns_but_stays_valid(rng):
    E1 = rng.normal(size=(6, 2))
    E2 = rng.normal(size=(6, 2))
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        res = minimax_procrustes(E1, E2, max_iter=1, rtol=1e-14)
    exact = minimax_procrustes(E1, E2)
    assert res.lower <= exact.value * (1 + BRACKET_RTOL) and res.value >= exact.lower


def test_atol_loosens_the_target(rng):
    E1 = rng.normal(size=(5, 2))
    E2 = rng.normal(size=(5, 2))
    res = minimax_procrustes(E1, E2, atol=0.5)
    assert res.certified and res.gap <= 0.5


def test_shape_mismatch():
    with pytest.raises(InvalidInputError, match=r"`E1` and `E2` must have the same shape"):
        minimax_procrustes(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(InvalidInputError, match=r"same shape.*\(3, 2\) and \(3, 3\)"):
        minimax_procrustes(np.zeros((3, 2)), np.zeros((3, 3)))


def test_non_finite_and_bad_shapes():
    bad = np.zeros((3, 2))
    bad[1, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"`E2` must contain only finite values"):
        minimax_procrustes(np.zeros((3, 2)), bad)
    with pytest.raises(InvalidInputError, match=r"`E1` must be a 2-D array"):
        minimax_procrustes(np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match=r"`E1` must be a numeric array"):
        minimax_procrustes("abc", np.zeros((3, 2)))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"rtol": 0.0}, InvalidInputError, r"`rtol` must be > 0; got 0.0"),
        ({"atol": -1.0}, InvalidInputError, r"`atol` must be >= 0; got -1.0"),
        ({"max_iter": 0}, InvalidInputError, r"`max_iter` must be >= 1; got 0"),
        ({"n_starts": -1}, InvalidInputError, r"`n_starts` must be >= 0; got -1"),
        ({"max_iter": 2.5}, TypeError, r"`max_iter` must be an integer"),
        ({"rng": "seed"}, TypeError, r"`rng` must be None, an int seed"),
    ],
)
def test_option_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        minimax_procrustes(np.zeros((3, 2)), np.ones((3, 2)), **kwargs)
