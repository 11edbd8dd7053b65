"""The dual simplex kernel of small dense LPs (isoapprox.kernels.simplex) against
HiGHS (through scipy's linprog, a second interface to the reference solver):
the same optimum, a feasible point, multipliers that prove the optimum, and
rays that prove infeasibility; the certified LP that uses it; and the
lowering of free variables that the angular search applies to its points."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import isoapprox.ideal._lpdual as lpdual
from isoapprox.ideal._highs import solve_lp
from isoapprox.ideal._lpdual import certified_lp, farkas_infeasible, safe_dual_bound
from isoapprox.kernels.simplex import FAILED, INFEASIBLE, OPTIMAL, dual_simplex, least_values

from .conftest import examples


def _box(lo, hi):
    return list(zip(lo, hi, strict=True))


def _lp(seed, m, nv, feasible=True, degenerate=False):
    """A random LP ``min c.x``, ``A x <= b``, ``lo <= x <= hi``: feasible ones
    hold a point of the box; degenerate ones have repeated rows and zero costs."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, nv))
    lo = -rng.uniform(0.5, 2.0, nv)
    hi = rng.uniform(0.5, 2.0, nv)
    c = rng.normal(size=nv)
    if degenerate:
        A[m // 2:] = A[: m - m // 2]
        c[rng.random(nv) < 0.5] = 0.0
    if feasible:
        x0 = rng.uniform(lo, hi) * 0.5
        b = A @ x0 + rng.random(m) * rng.choice([0.0, 0.3], size=m)
    else:
        # two opposite copies of a row that no point of the box meets both
        b = rng.random(m)
        A[-1] = -A[0]
        b[-1] = -b[0] - (np.abs(A[0]) @ np.maximum(-lo, hi)) - 1.0
    return c, A, b, lo, hi


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 100_000), m=st.integers(1, 60), nv=st.integers(1, 12),
       degenerate=st.booleans())
def test_optimum_matches_highs_and_is_proven(seed, m, nv, degenerate):
    """Feasible LPs: an optimal status, a point of the box that meets the rows to
    1e-9, an objective equal to HiGHS's to 1e-8, and multipliers whose certified
    bound (Neumaier-Shcherbina) is within 1e-6 of the optimum and below it."""
    c, A, b, lo, hi = _lp(seed, m, nv, degenerate=degenerate)
    status, x, y, _, iters = dual_simplex(c, A, b, lo, hi, 1e-10, 10 * (m + 2 * nv))
    ref = linprog(c, A_ub=A, b_ub=b, bounds=_box(lo, hi), method="highs")
    assert ref.status == 0
    assert status == OPTIMAL and iters >= 0
    assert np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
    assert np.all(A @ x - b <= 1e-9 * (1.0 + np.abs(b) + np.abs(A) @ np.abs(x)))
    scale = 1.0 + abs(ref.fun)
    assert abs(c @ x - ref.fun) <= 1e-8 * scale
    assert np.all(y >= 0.0) and y.shape == (m,)
    bound = safe_dual_bound(c, A, b, lo, hi, y)
    assert bound <= ref.fun + 1e-9 * scale
    assert bound >= ref.fun - 1e-6 * scale


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 100_000), m=st.integers(2, 40), nv=st.integers(1, 10))
def test_infeasible_rows_come_with_a_ray_that_proves_it(seed, m, nv):
    c, A, b, lo, hi = _lp(seed, m, nv, feasible=False)
    assert linprog(c, A_ub=A, b_ub=b, bounds=_box(lo, hi), method="highs").status == 2
    status, _, _, ray, _ = dual_simplex(c, A, b, lo, hi, 1e-10, 10 * (m + 2 * nv))
    assert status == INFEASIBLE
    assert np.all(ray >= 0.0)
    assert farkas_infeasible(A, b, lo, hi, ray)
    assert certified_lp(c, A, b, lo, hi, kernel=True) == (np.inf, None)


def test_bounds_only_and_fixed_variables():
    """No row binds: each variable at the end of the box its cost points to (a
    fixed variable at its value); no multipliers."""
    c = np.array([1.0, -2.0, 0.0, 3.0])
    lo = np.array([-1.0, -1.0, -1.0, 0.5])
    hi = np.array([1.0, 2.0, 1.0, 0.5])
    A = np.array([[1.0, 1.0, 1.0, 1.0]])
    status, x, y, _, _ = dual_simplex(c, A, np.array([10.0]), lo, hi, 1e-10, 100)
    assert status == OPTIMAL
    assert x.tolist() == [-1.0, 2.0, -1.0, 0.5] and y.tolist() == [0.0]


def test_iteration_limit_fails_and_certified_lp_falls_back_to_highs(monkeypatch):
    c, A, b, lo, hi = _lp(7, 40, 8)
    first = dual_simplex(c, A, b, lo, hi, 1e-10, 400)
    assert first[0] == OPTIMAL and first[4] > 0  # a limit of 0 cuts a real search
    assert dual_simplex(c, A, b, lo, hi, 1e-10, 0)[0] == FAILED
    monkeypatch.setattr(lpdual, "_MAX_ITER_PER_ROW", 0)
    res = solve_lp(c, A, b, lo, hi)
    bound, x = certified_lp(c, A, b, lo, hi, kernel=True)
    assert np.array_equal(x, res.x) and bound == safe_dual_bound(c, A, b, lo, hi, res.y)


@pytest.mark.parametrize("seed", range(4))
def test_long_searches_through_the_refactorised_basis(seed):
    """LPs of the searches' size (about 150 x 21) take more iterations than the
    basis keeps rank-one updates (24): the refresh in mid-search and the updates
    after it give HiGHS's optimum and a proven bound within 1e-9 of it (the
    threshold below which certified_lp would hand the LP to HiGHS)."""
    c, A, b, lo, hi = _lp(1000 + seed, 150, 21)
    status, x, y, _, iters = dual_simplex(c, A, b, lo, hi, 1e-10, 10 * (150 + 42))
    ref = linprog(c, A_ub=A, b_ub=b, bounds=_box(lo, hi), method="highs")
    assert status == OPTIMAL and iters > 24
    scale = 1.0 + abs(ref.fun)
    assert abs(c @ x - ref.fun) <= 1e-8 * scale
    bound = safe_dual_bound(c, A, b, lo, hi, y)
    assert ref.fun - 1e-9 * scale <= bound <= ref.fun + 1e-9 * scale


def test_weak_kernel_bound_keeps_the_better_proven_bound_with_its_point(monkeypatch):
    """A kernel bound below its LP value by more than _WEAK_BOUND: HiGHS solves the
    LP too, and the larger proven bound is returned with the point of its solver."""
    c, A, b, lo, hi = _lp(5, 40, 8)
    _, xk, yk, _, _ = dual_simplex(c, A, b, lo, hi, lpdual.TIGHT_TOLERANCE,
                                   lpdual._MAX_ITER_PER_ROW * (40 + 16))
    res = solve_lp(c, A, b, lo, hi, tight=True)
    kb, hb = safe_dual_bound(c, A, b, lo, hi, yk), safe_dual_bound(c, A, b, lo, hi, res.y)
    monkeypatch.setattr(lpdual, "_WEAK_BOUND", -1.0)  # every kernel bound counts as weak
    bound, x = certified_lp(c, A, b, lo, hi, kernel=True)
    assert bound == max(kb, hb)
    assert np.array_equal(x, res.x if hb > kb else xk)


def test_kernel_ray_that_proves_nothing_hands_the_lp_to_highs(monkeypatch):
    c, A, b, lo, hi = _lp(3, 20, 5, feasible=False)
    monkeypatch.setattr(lpdual, "farkas_infeasible", lambda *args: False)
    assert certified_lp(c, A, b, lo, hi, kernel=True) == \
        lpdual._certified_highs(c, A, b, lo, hi, True)


def test_safe_dual_bound_refuses_arrays_that_do_not_match_the_rows():
    c, A, b, lo, hi = _lp(2, 3, 2)
    y = np.ones(3)
    with pytest.raises(ValueError, match=r"b and y need shape \(3,\).*y \(2,\)"):
        safe_dual_bound(c, A, b, lo, hi, y[:2])
    with pytest.raises(ValueError, match=r"c, lo, hi.*hi \(1,\)"):
        safe_dual_bound(c, A, b, lo, hi[:1], y)


def test_safe_dual_bound_with_an_unbounded_box_is_minus_inf_never_nan():
    """A free variable whose column the multipliers do not touch adds nothing; one
    they touch makes the bound -inf (nothing proven), never NaN."""
    A = np.array([[0.0, 1.0]])
    lo, hi = np.array([-np.inf, 0.0]), np.array([np.inf, 1.0])
    bound = safe_dual_bound(np.array([0.0, 1.0]), A, np.array([1.0]), lo, hi, np.array([0.5]))
    assert bound == pytest.approx(-0.5, rel=1e-9) and bound <= -0.5
    assert safe_dual_bound(np.array([1.0, 1.0]), A, np.array([1.0]), lo, hi,
                           np.array([0.5])) == -np.inf


def test_same_bits_whatever_was_solved_before():
    """No state survives a call: an LP's answer is bit-identical after others."""
    lps = [_lp(s, 30, 6, degenerate=s % 2 == 0) for s in range(6)]
    alone = [dual_simplex(*lp, 1e-10, 500) for lp in lps]
    again = [dual_simplex(*lp, 1e-10, 500) for lp in lps[::-1]][::-1]
    for a, b in zip(alone, again, strict=True):
        assert a[0] == b[0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_scaled_rows_keep_the_optimum(scale):
    """Rows scaled by a constant: the same optimum (the tolerances are relative)."""
    c, A, b, lo, hi = _lp(11, 50, 9, degenerate=True)
    ref = linprog(c, A_ub=A, b_ub=b, bounds=_box(lo, hi), method="highs").fun
    status, x, y, _, _ = dual_simplex(c, A * scale, b * scale, lo, hi, 1e-10, 1000)
    assert status == OPTIMAL
    assert abs(c @ x - ref) <= 1e-8 * (1.0 + abs(ref))
    assert safe_dual_bound(c, A * scale, b * scale, lo, hi, y) <= ref + 1e-9


def test_certified_lp_is_highs_unless_the_kernel_is_asked_for():
    """Without ``kernel`` the answer is HiGHS's, bit for bit; with it the kernel's."""
    lp = _lp(3, 60, 12)
    res = solve_lp(*lp)
    bound, x = certified_lp(*lp)
    assert np.array_equal(x, res.x) and bound == safe_dual_bound(*lp, res.y)
    status, xk, yk, _, _ = dual_simplex(*lp, 1e-10, 10 * (60 + 2 * 12))
    bound, x = certified_lp(*lp, kernel=True)
    assert status == OPTIMAL and np.array_equal(x, xk)
    assert bound == safe_dual_bound(*lp, yk)


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 100_000), m=st.integers(1, 30), nv=st.integers(2, 8),
       first=st.integers(0, 7))
def test_least_values_lowers_free_variables_to_their_least_feasible_values(seed, m, nv, first):
    """A feasible point stays feasible; the variables before ``first`` keep their
    values, the others only go down; with one sweep the last variable ends at
    its least value with the others held (linprog over that variable alone)."""
    first = min(first, nv - 1)
    c, A, b, lo, hi = _lp(seed, m, nv)
    status, x, _, _, _ = dual_simplex(c, A, b, lo, hi, 1e-10, 10 * (m + 2 * nv))
    assert status == OPTIMAL
    x = np.clip(x, lo, hi)
    b = np.maximum(b, A @ x)  # x exactly feasible
    y = least_values(A, b, x, lo, first, 1)
    assert np.array_equal(y[:first], x[:first])
    assert np.all(y <= x) and np.all(y >= lo)
    assert np.all(A @ y - b <= 1e-12 * (1.0 + np.abs(b) + np.abs(A) @ np.abs(y)))
    j = nv - 1
    if j >= first:
        held = A[:, :j] @ y[:j]
        ref = linprog([1.0], A_ub=A[:, j:], b_ub=b - held, bounds=[(lo[j], x[j])],
                      method="highs")
        assert ref.status == 0
        assert abs(y[j] - ref.x[0]) <= 1e-9 * (1.0 + abs(ref.x[0]))


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 100_000), m=st.integers(1, 25), nv=st.integers(1, 8),
       scale=st.sampled_from([1e-6, 1.0, 1e6]))
def test_safe_dual_bound_is_below_its_exact_value_dense_and_sparse(seed, m, nv, scale):
    """The float64 bound (fixed-order sums, dense or sparse rows) lies below the
    exact rational value of ``-y.b + sum_j min(r_j lo_j, r_j hi_j)`` of the
    same floats, and within twice its allowance of it."""
    from fractions import Fraction

    from scipy.sparse import csr_matrix

    from isoapprox.tolerances import LP_DUAL_RTOL

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, nv)) * scale * (rng.random((m, nv)) < 0.7)
    b, c = rng.normal(size=m) * scale, rng.normal(size=nv)
    lo, hi = -rng.uniform(0.1, 3.0, nv), rng.uniform(0.1, 3.0, nv)
    y = rng.random(m) * rng.choice([1e-3, 1.0, 1e3]) * (rng.random(m) < 0.8)
    F = [[Fraction(float(v)) for v in row] for row in A]
    r = [Fraction(float(c[j])) + sum(F[i][j] * Fraction(float(y[i])) for i in range(m))
         for j in range(nv)]
    exact = (-sum(Fraction(float(b[i])) * Fraction(float(y[i])) for i in range(m))
             + sum(min(rj * Fraction(float(lo[j])), rj * Fraction(float(hi[j])))
                   for j, rj in enumerate(r)))
    mag = (float(np.abs(b) @ y)
           + float((np.abs(c) + np.abs(A).T @ y) @ np.maximum(np.abs(lo), np.abs(hi))))
    for rows in (A, csr_matrix(A)):
        bound = safe_dual_bound(c, rows, b, lo, hi, y)
        assert Fraction(bound) <= exact
        assert float(exact) - bound <= 2.0 * LP_DUAL_RTOL * (1.0 + mag)
