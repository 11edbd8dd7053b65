"""The certified LP bound and the node LP of the branch-and-bound ("haus"):
sound against dense sampling, the relaxation holds every feasible point."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from isoapprox import nearest_ideal
from isoapprox.ideal._bnb import triplet_table
from isoapprox.ideal._bnblp import haus_node_lp, lp_search, pair_table
from isoapprox.ideal._lpdual import dual_multipliers, safe_dual_bound
from isoapprox.ideal._problem import Problem

# ----------------------------------------------------------------------
# safe_dual_bound
# ----------------------------------------------------------------------


def test_safe_dual_bound_below_optimum_for_any_multipliers():
    rng = np.random.default_rng(0)
    for _ in range(30):
        m, nv = 8, 4
        A = rng.normal(size=(m, nv))
        b = rng.random(m) + 0.1  # x = 0 is feasible
        c = rng.normal(size=nv)
        lo, hi = -np.ones(nv), np.ones(nv)
        res = linprog(c, A_ub=A, b_ub=b, bounds=np.column_stack([lo, hi]), method="highs")
        assert res.status == 0
        y = dual_multipliers(res)
        exact = safe_dual_bound(c, A, b, lo, hi, y)
        assert exact <= res.fun + 1e-12
        assert exact >= res.fun - 1e-9  # the solver's duals are (nearly) optimal
        for _ in range(5):  # any y >= 0 gives a bound, however poor
            y2 = rng.random(m) * rng.choice([0.0, 1.0, 10.0])
            assert safe_dual_bound(c, A, b, lo, hi, y2) <= res.fun + 1e-12


# ----------------------------------------------------------------------
# the node LP
# ----------------------------------------------------------------------


def _instance(seed, N=4, n=2, margin=0.5):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(N, n))
    codes = np.array([0, 0, 1, 1, 2][:N])
    D = np.sqrt(((E[:, None] - E[None]) ** 2).sum(-1))
    return Problem.build(E, codes, margin, "haus", float(D.max()))


def _separated(F, trip, alpha):
    da = np.sqrt(((F[:, trip[:, 0]] - F[:, trip[:, 2]]) ** 2).sum(-1))
    dp = np.sqrt(((F[:, trip[:, 0]] - F[:, trip[:, 1]]) ** 2).sum(-1))
    return np.all(da - dp >= alpha, axis=1)


def _sample_min(prob, trip, lo, hi, rng, count=200_000):
    """Least objective over random separated points of the boxes (an upper
    estimate of the true minimum over the node), ``inf`` if none is found."""
    U = rng.random((count,) + lo.shape)
    F = lo + U * (hi - lo)
    ok = _separated(F, trip, prob.alpha)
    if not ok.any():
        return np.inf
    v = np.sqrt(((F[ok] - prob.E) ** 2).sum(-1)).max(-1)
    return float(v.min())


@pytest.mark.parametrize("seed", range(6))
def test_node_lp_bound_below_sampled_minimum(seed):
    prob = _instance(seed, N=4, n=2)
    trip = triplet_table(prob)
    tables = pair_table(trip)
    rng = np.random.default_rng(100 + seed)
    for _ in range(8):
        w = rng.choice([0.05, 0.2, 0.6])
        c = prob.E + rng.normal(size=prob.E.shape) * 0.3
        lo, hi = c - w * rng.random(c.shape), c + w * rng.random(c.shape)
        res = haus_node_lp(prob.E, trip, tables, prob.alpha, lo, hi)
        sampled = _sample_min(prob, trip, lo, hi, rng)
        assert res.bound <= sampled
        if res.bound == np.inf:
            assert sampled == np.inf


def _vertices(lo, hi):
    return np.array(list(itertools.product(*zip(lo.ravel(), hi.ravel(), strict=True))))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.sampled_from([1, 2]),
       w=st.sampled_from([1e-6, 0.01, 0.3, 1.0]))
def test_relaxation_holds_every_feasible_point(seed, n, w):
    """A separated F in the boxes with objective v: the LP bound is at most v
    (the LP's point (F, v, |F_i - F_j|) is feasible for the relaxation)."""
    prob = _instance(seed % 50, N=4, n=n, margin=0.3)
    trip = triplet_table(prob)
    rng = np.random.default_rng(seed)
    for _ in range(50):
        F = prob.E + rng.normal(size=prob.E.shape) * 0.5
        if _separated(F[None], trip, prob.alpha)[0]:
            break
    else:
        return
    lo = F - w * rng.random(F.shape)
    hi = F + w * rng.random(F.shape)
    v = float(np.sqrt(((F - prob.E) ** 2).sum(-1)).max())
    res = haus_node_lp(prob.E, trip, pair_table(trip), prob.alpha, lo, hi)
    assert res.bound <= v
    # tangents towards arbitrary points (the ancestors' LP solutions) stay valid
    hint = F[None] + rng.normal(size=(3,) + F.shape)
    res = haus_node_lp(prob.E, trip, pair_table(trip), prob.alpha, lo, hi, hint)
    assert res.bound <= v


def test_lp_search_bound_below_known_value_and_deterministic():
    prob = _instance(3, N=4, n=2)
    trip = triplet_table(prob)
    # a feasible value by sampling around E
    rng = np.random.default_rng(7)
    best = np.inf
    for s in (0.3, 0.6, 1.0):
        F = prob.E + rng.normal(size=(20000,) + prob.E.shape) * s
        ok = _separated(F, trip, prob.alpha)
        if ok.any():
            best = min(best, float(np.sqrt(((F[ok] - prob.E) ** 2).sum(-1)).max(-1).min()))
    assert np.isfinite(best)
    T = best * 1.01
    lo, hi = prob.E - T, prob.E + T
    b1, n1 = lp_search(prob.E, trip, prob.alpha, T, lo, hi, 60)
    b2, n2 = lp_search(prob.E, trip, prob.alpha, T, lo, hi, 60)
    assert (b1, n1) == (b2, n2)
    assert b1 <= best


def test_plane_toy_certified_only_with_the_lp():
    """A toy of bench_certificates.py (N5R2, index 8): open after the interval
    search (relative gap ~3e-3), certified by the LP search (about 400 LPs)."""
    rng = np.random.default_rng([20240501, 0])
    for _ in range(9):
        E = rng.normal(size=(5, 2))
    y = [0, 0, 0, 1, 1]
    r0 = nearest_ideal(E, y, margin=0.0, objective="haus", rng=8, warn_uncertified=False)
    r1 = nearest_ideal(E, y, margin=0.0, objective="haus", rng=8, warn_uncertified=False,
                       max_lps=1000)
    assert not r0.certified and r0.rel_gap > 1e-4
    assert r1.certified and r1.lower_source == "branch_and_bound"
    assert r1.lower >= r0.lower
    assert r1.value <= r0.value
