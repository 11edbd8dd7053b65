"""The angular branch-and-bound of "haus" in the plane (isoapprox.ideal._sector):
the certified LP bound, the chord over-estimate, the node LP against every
feasible point, the partition of cones, and the search against sampling."""

from __future__ import annotations

import subprocess
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import isoapprox.ideal._lpdual as lpdual
import isoapprox.ideal._sector as sector_module
from isoapprox import nearest_ideal
from isoapprox.ideal._bnb import gauge_points, root_boxes, to_gauge
from isoapprox.ideal._highs import _csc, solve_lp
from isoapprox.ideal._lpdual import (
    certified_lp,
    dual_multipliers,
    farkas_infeasible,
    proven_infeasible,
    safe_dual_bound,
)
from isoapprox.ideal._problem import Problem, triplet_table
from isoapprox.ideal._sector import (
    _children,
    _Geometry,
    _Node,
    _rotate,
    chord_gradient,
    lp_budget,
    pair_table,
    sector_search,
)

from .conftest import examples

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
# the chord over-estimate
# ----------------------------------------------------------------------


def _dot_at_least_norm(g, r) -> bool:
    """``g.r >= |r|`` in exact rational arithmetic."""
    d = Fraction(float(g[0])) * Fraction(float(r[0])) + Fraction(float(g[1])) * Fraction(
        float(r[1]))
    n2 = Fraction(float(r[0])) ** 2 + Fraction(float(r[1])) ** 2
    return d >= 0 and d * d >= n2


@settings(max_examples=examples(300), deadline=None)
@given(angle=st.floats(-10.0, 10.0),
       width=st.sampled_from([1e-10, 1e-7, 1e-3, 0.1, 1.0, np.pi / 2, 3.0]),
       scale=st.sampled_from([1e-300, 1e-8, 1.0, 3.7, 1e8]))
def test_chord_gradient_over_estimates_on_the_cone(angle, width, scale):
    lo = np.array([np.cos(angle), np.sin(angle)]) * scale
    hi = _rotate(lo, width)
    g = chord_gradient(lo, hi)
    # exactly on both rays, hence on every non-negative combination of them
    assert _dot_at_least_norm(g, lo)
    assert _dot_at_least_norm(g, hi)
    # and not much more than the exact envelope 1 / cos(width / 2)
    assert np.hypot(*g) <= 1.0 / np.cos(width / 2) * (1 + 1e-9)


def test_children_partition_the_cone():
    """Both children of a split use one float64 ray with opposite signs, so every
    direction of the parent lies in a child (four quarter-turns cover the plane)."""
    rng = np.random.default_rng(4)
    node = _Node(np.zeros((2, 2, 2)), np.zeros(2, dtype=bool), [])
    quarters = _children(node, 0, [rng.normal(size=2)], [])
    assert len(quarters) == 4
    V = rng.normal(size=(20000, 2))
    V = np.concatenate([V, [[1e-300, 0.0], [0.0, -1.0]]])

    def inside(v, lo, hi):
        return (lo[0] * v[:, 1] - lo[1] * v[:, 0] >= 0) & (v[:, 0] * hi[1] - v[:, 1] * hi[0] >= 0)

    cover = np.zeros(V.shape[0], dtype=bool)
    for ch in quarters:
        cover |= inside(V, *ch.rays[0])
    assert cover.all()
    for parent in quarters:
        toward = [rng.normal(size=2), parent.rays[0, 0] + parent.rays[0, 1]]
        kids = _children(parent, 0, toward, [])
        assert len(kids) == 2
        assert np.array_equal(kids[0].rays[0, 1], kids[1].rays[0, 0])
        par = inside(V, *parent.rays[0])
        both = inside(V, *kids[0].rays[0]) | inside(V, *kids[1].rays[0])
        assert np.all(both[par])


# ----------------------------------------------------------------------
# the node LP
# ----------------------------------------------------------------------


def _instance(seed, N=4, margin=0.5, layout=(0, 0, 1, 1, 2)):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(N, 2))
    codes = np.array(layout[:N])
    D = np.sqrt(((E[:, None] - E[None]) ** 2).sum(-1))
    return Problem.build(E, codes, margin, "haus", float(D.max()))


def _separated(F, trip, alpha):
    da = np.sqrt(((F[..., trip[:, 0], :] - F[..., trip[:, 2], :]) ** 2).sum(-1))
    dp = np.sqrt(((F[..., trip[:, 0], :] - F[..., trip[:, 1], :]) ** 2).sum(-1))
    return np.all(da - dp >= alpha, axis=-1)


def _objective(F, E):
    return np.sqrt(((F - E) ** 2).sum(-1)).max(-1)


# the node LPs of these 4-point instances go to the kernel; with KERNEL_POINTS = 0
# they take the path of the larger searches (HiGHS, no lowered pair distances)
_NODE_LP_PATHS = {"kernel": sector_module.KERNEL_POINTS, "highs": 0}


@pytest.fixture(params=list(_NODE_LP_PATHS.values()), ids=list(_NODE_LP_PATHS))
def node_lp_path(request):
    """Runs a test on both node-LP paths (a module attribute, read on every LP)."""
    old = sector_module.KERNEL_POINTS
    sector_module.KERNEL_POINTS = request.param
    yield request.param
    sector_module.KERNEL_POINTS = old


@pytest.mark.parametrize("kernel_points", list(_NODE_LP_PATHS.values()), ids=list(_NODE_LP_PATHS))
@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 10_000), width=st.sampled_from([1e-9, 1e-4, 0.05, 0.5, 1.5]),
       n_hints=st.integers(0, 3))
def test_node_lp_holds_every_feasible_point(kernel_points, seed, width, n_hints):
    """A separated F with objective v in a node whose cones hold its directions:
    the node's certified bound is at most v, whatever the tangents' points, on
    both node-LP paths."""
    old = sector_module.KERNEL_POINTS
    sector_module.KERNEL_POINTS = kernel_points
    try:
        _node_lp_holds(seed, width, n_hints)
    finally:
        sector_module.KERNEL_POINTS = old


def _node_lp_holds(seed, width, n_hints):
    prob = _instance(seed % 40, N=4, margin=0.3)
    trip = triplet_table(prob)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        F = prob.E + rng.normal(size=prob.E.shape) * 0.6
        if _separated(F, trip, prob.alpha):
            break
    else:
        return
    v = float(_objective(F, prob.E))
    best = F + rng.normal(size=F.shape) * 0.1
    geo = _Geometry(prob.E, trip, prob.alpha, v * (1.0 + rng.random()), best)
    Q = geo.qneg.size
    rays = np.zeros((Q, 2, 2))
    has = rng.random(Q) < 0.7
    for s, q in enumerate(geo.qneg):
        d = F[geo.I[q]] - F[geo.J[q]]
        a = np.arctan2(d[1], d[0]) - width * rng.random()
        rays[s, 0] = np.array([np.cos(a), np.sin(a)]) * rng.choice([1.0, 3.0])
        rays[s, 1] = _rotate(rays[s, 0], width)
    hints = [F + rng.normal(size=F.shape) for _ in range(n_hints)]
    bound, x = geo.lp(_Node(rays, has, hints), [])
    assert bound <= v
    # the LP point, when there is one, is inside the boxes
    if x is not None:
        assert np.all(x >= geo.xl - 1e-7) and np.all(x <= geo.xh + 1e-7)


def test_root_cones_hold_every_point_within_the_level():
    prob = _instance(11, N=5, margin=0.2)
    trip = triplet_table(prob)
    T = 0.15
    geo = _Geometry(prob.E, trip, prob.alpha, T, None)
    rays, has = geo.root_cones()
    assert has.any()
    rng = np.random.default_rng(0)
    # points with |F_k - E_k| <= T, on the boundary most of the time
    ang = rng.random((20000,) + prob.E.shape[:1]) * 2 * np.pi
    rad = T * np.where(rng.random(ang.shape) < 0.5, 1.0, rng.random(ang.shape))
    F = prob.E + np.stack([np.cos(ang), np.sin(ang)], axis=-1) * rad[..., None]
    for s, q in enumerate(geo.qneg):
        if not has[s]:
            continue
        v = F[:, geo.I[q]] - F[:, geo.J[q]]
        lo, hi = rays[s]
        assert np.all(lo[0] * v[:, 1] - lo[1] * v[:, 0] >= 0)
        assert np.all(v[:, 0] * hi[1] - v[:, 1] * hi[0] >= 0)


def test_pair_table_names_each_pair_once():
    prob = _instance(2, N=5)
    trip = triplet_table(prob)
    pairs, positive, tid = pair_table(trip)
    assert len({tuple(p) for p in pairs.tolist()}) == pairs.shape[0]
    assert np.all(pairs[:, 0] < pairs[:, 1])
    for t, (a, p, m) in enumerate(trip.tolist()):
        assert sorted((a, p)) == pairs[tid[t, 0]].tolist() and positive[tid[t, 0]]
        assert sorted((a, m)) == pairs[tid[t, 1]].tolist() and not positive[tid[t, 1]]


# ----------------------------------------------------------------------
# the search
# ----------------------------------------------------------------------


def _sampled_best(prob, trip, rng):
    best = np.inf
    for s in (0.2, 0.4, 0.8):
        F = prob.E + rng.normal(size=(40000,) + prob.E.shape) * s
        ok = _separated(F, trip, prob.alpha)
        if ok.any():
            best = min(best, float(_objective(F[ok], prob.E).min()))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_search_bound_below_sampled_value_and_deterministic(seed, node_lp_path):
    prob = _instance(seed, N=4, margin=0.4)
    trip = triplet_table(prob)
    best = _sampled_best(prob, trip, np.random.default_rng(seed))
    assert np.isfinite(best)
    out1 = sector_search(prob.E, trip, prob.alpha, best, None, 150)
    out2 = sector_search(prob.E, trip, prob.alpha, best, None, 150)
    assert out1 == out2
    assert out1[0] <= best
    assert out1[1] <= 150 + 2


def _bench_toy(index):
    """Points of toy ``index`` of bench_certificates.py's N5R2 cell."""
    rng = np.random.default_rng([20240501, 0])
    for _ in range(index + 1):
        E = rng.normal(size=(5, 2))
    return E


def test_plane_toy_certified_by_the_sectors_only():
    """A toy of bench_certificates.py (N5R2, index 8): the relaxations leave a
    relative gap of about 2e-2; the angular search certifies it; without it
    (max_lps=0) the bracket stays open.  The sub-problem on the incumbent's
    support is switched off (max_subbatches=0): whether the support is a
    proper subset depends on which optimal point the local solvers reach."""
    E = _bench_toy(8)
    y = [0, 0, 0, 1, 1]
    kw = dict(margin=0.0, objective="haus", rng=8, warn_uncertified=False, max_subbatches=0)
    r0 = nearest_ideal(E, y, max_lps=0, **kw)
    r1 = nearest_ideal(E, y, **kw)
    assert not r0.certified and r0.rel_gap > 1e-3
    assert r1.certified and r1.lower_source == "branch_and_bound"
    assert r1.lower >= r0.lower
    assert r1.value <= r0.value


# ----------------------------------------------------------------------
# the LP interface
# ----------------------------------------------------------------------


def test_solve_lp_gives_valid_multipliers():
    """Multipliers whose certified bound is at most the optimum (and close to it);
    an infeasible system is reported as such."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        m, nv = 30, 6
        A = rng.normal(size=(m, nv))
        b = rng.random(m) + 0.1
        c = rng.normal(size=nv)
        lo, hi = -np.ones(nv), np.ones(nv)
        ref = linprog(c, A_ub=A, b_ub=b, bounds=np.column_stack([lo, hi]), method="highs")
        res = solve_lp(c, A, b, lo, hi)
        assert res.status == "optimal"
        bound = safe_dual_bound(c, A, b, lo, hi, res.y)
        assert bound <= ref.fun + 1e-12
        assert bound >= ref.fun - 1e-8
        assert np.all(A @ res.x <= b + 1e-8)
    # an infeasible system: x0 >= 1 and x0 <= -1
    A = np.array([[-1.0, 0.0], [1.0, 0.0]])
    res = solve_lp(np.zeros(2), A, np.array([-1.0, -1.0]), -5 * np.ones(2), 5 * np.ones(2))
    assert res.status == "infeasible" and res.x is None


def _infeasible_lp(rng, m=30, nv=6):
    """Random rows with two that contradict each other: ``a.x <= -0.5`` and
    ``a.x >= 0.5``."""
    A = rng.normal(size=(m, nv))
    b = rng.random(m) + 0.1
    a = rng.normal(size=nv)
    A[0], b[0] = a, -0.5
    A[1], b[1] = -a, -0.5  # a.x <= -0.5 and a.x >= 0.5
    return A, b, -np.ones(nv), np.ones(nv)


def test_infeasible_lp_is_proven_by_the_solvers_ray_without_a_second_lp(monkeypatch):
    """HiGHS's dual ray proves an infeasible node LP (its certified bound is
    +inf) without the phase-one LP of proven_infeasible, which proves the
    same systems."""
    rng = np.random.default_rng(5)
    calls = []
    original = lpdual.proven_infeasible
    monkeypatch.setattr(lpdual, "proven_infeasible",
                        lambda *a: calls.append(1) or original(*a))
    for _ in range(10):
        A, b, lo, hi = _infeasible_lp(rng)
        res = solve_lp(rng.normal(size=A.shape[1]), A, b, lo, hi)
        assert res.status == "infeasible" and res.ray is not None
        assert farkas_infeasible(A, b, lo, hi, res.ray)
        assert original(A, b, lo, hi)
        assert certified_lp(np.zeros(A.shape[1]), A, b, lo, hi) == (np.inf, None)
    assert calls == []
    # without a ray (or with a useless one) nothing is claimed by it
    A, b, lo, hi = _infeasible_lp(rng)
    assert not farkas_infeasible(A, b, lo, hi, None)
    assert not farkas_infeasible(A, b, lo, hi, np.zeros(A.shape[0]))


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_no_ray_proves_a_feasible_system_infeasible(seed, scale):
    """Rows with a point of the box (so feasible): no multipliers whatever, of
    either sign, prove them infeasible, nor does the phase-one LP."""
    rng = np.random.default_rng(seed)
    m, nv = int(rng.integers(1, 30)), int(rng.integers(1, 8))
    A = rng.normal(size=(m, nv)) * scale
    lo, hi = -np.ones(nv), np.ones(nv)
    x0 = rng.uniform(lo, hi)
    # x0 satisfies every row exactly: the allowance exceeds the rounding of A @ x0
    # (at most nv units of it), rows nearly tight or not
    b = A @ x0 + 1e-13 * (np.abs(A) @ np.abs(x0)) + rng.random(m) * rng.choice([0.0, 1.0])
    for _ in range(5):
        ray = rng.normal(size=m) * rng.choice([1.0, 1e6])
        assert not farkas_infeasible(A, b, lo, hi, ray)
    assert not proven_infeasible(A, b, lo, hi)


@settings(max_examples=examples(40), deadline=None)
@given(m=st.integers(1, 40), nv=st.integers(1, 12), density=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
       seed=st.integers(0, 10_000))
def test_csc_matches_scipy(m, nv, density, seed):
    """The column-wise non-zeros handed to HiGHS are scipy's ``csc_matrix`` of
    the dense rows (empty columns, signed zeros and all-zero matrices included)."""
    from scipy.sparse import csc_matrix

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, nv)) * (rng.random((m, nv)) < density)
    A[rng.random((m, nv)) < 0.1] = -0.0
    if nv > 1:
        A[:, rng.integers(nv)] = 0.0
    start, rows, values = _csc(A)
    ref = csc_matrix(A)
    assert start.dtype == np.int32 and rows.dtype == np.int32
    assert np.array_equal(start, ref.indptr[:-1])
    assert np.array_equal(rows, ref.indices)
    assert np.array_equal(values, ref.data)


def test_solve_lp_does_not_depend_on_what_was_solved_before():
    """One solver per thread, its state cleared: an LP's answer is the same
    after any other LP, in any thread."""
    rng = np.random.default_rng(2)
    lps = []
    for _ in range(6):
        m, nv = 25, 5
        A = rng.normal(size=(m, nv))
        lps.append((rng.normal(size=nv), A, rng.random(m) + 0.1, -np.ones(nv), np.ones(nv)))
    alone = [solve_lp(*lp) for lp in lps]
    for order in (lps[::-1], lps[2:] + lps[:2]):
        for lp in order:
            solve_lp(*lp)
        res = solve_lp(*lps[0])
        assert np.array_equal(res.x, alone[0].x) and np.array_equal(res.y, alone[0].y)
    out = []
    worker = threading.Thread(target=lambda: out.extend(solve_lp(*lp) for lp in lps))
    worker.start()
    worker.join()
    for a, b in zip(alone, out, strict=True):
        assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)


def test_solve_lp_writes_nothing_to_standard_output():
    """HiGHS's banner (written below Python, once per process) never appears."""
    code = ("import numpy as np; from isoapprox.ideal._highs import solve_lp; "
            "r = solve_lp(np.ones(2), -np.eye(2), -np.ones(2), np.zeros(2), 3 * np.ones(2)); "
            "assert r.status == 'optimal'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout == "" and out.stderr == ""


def test_chord_gradient_refuses_a_half_turn_naming_the_rays():
    with pytest.raises(FloatingPointError, match=r"lo=\[1\.0, 0\.0\] and hi=\[-1\.0, 0\.0\]"):
        chord_gradient(np.array([1.0, 0.0]), np.array([-1.0, 0.0]))


def test_lp_budget_scales_beyond_five_points():
    assert lp_budget(2000, 4) == lp_budget(2000, 5) == 2000
    assert lp_budget(2000, 10) == 500
    assert lp_budget(0, 10) == 0 and lp_budget(1, 10) == 1
    assert all(lp_budget(2000, n + 1) <= lp_budget(2000, n) for n in range(2, 12))


# ----------------------------------------------------------------------
# "iso": every pair has tangents and may get a cone, in the gauge
# ----------------------------------------------------------------------


def _iso_instance(seed, N=5, margin=0.3):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(N, 2))
    codes = np.array((0, 0, 1, 1, 2)[:N])
    D = np.sqrt(((E[:, None] - E[None]) ** 2).sum(-1))
    return Problem.build(E, codes, margin, "iso", float(D.max()))


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10_000), width=st.sampled_from([1e-9, 1e-4, 0.05, 0.5, 1.5]),
       n_hints=st.integers(0, 3))
def test_iso_node_lp_holds_every_feasible_point(seed, width, n_hints):
    """A separated F, moved into the gauge, with d_iso(E, F) = v: a node whose
    cones hold its pair directions (the gauge pair's fixed) has bound <= v."""
    prob = _iso_instance(seed % 40)
    trip = triplet_table(prob)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        F = prob.E + rng.normal(size=prob.E.shape) * 0.6
        if _separated(F, trip, prob.alpha):
            break
    else:
        return
    i0, i1, i2 = gauge_points(prob.E)
    G = to_gauge(F, i0, i1, i2)
    D = np.sqrt(((prob.E[:, None] - prob.E[None]) ** 2).sum(-1))
    DG = np.sqrt(((G[:, None] - G[None]) ** 2).sum(-1))
    v = float(np.max(np.abs(D - DG)))
    T = v * (1.0 + rng.random())
    gauge = (lambda level: root_boxes(prob, level), (i0, i1))
    geo = _Geometry(prob.E, trip, prob.alpha, T, G + rng.normal(size=G.shape) * 0.1, gauge)
    rays, has = geo.root_cones()
    for s, q in enumerate(geo.qneg):
        if has[s] or rng.random() < 0.3:
            continue
        d = G[geo.I[q]] - G[geo.J[q]]
        a = np.arctan2(d[1], d[0]) - width * rng.random()
        rays[s, 0] = np.array([np.cos(a), np.sin(a)])
        rays[s, 1] = _rotate(rays[s, 0], width)
        has[s] = True
    hints = [G + rng.normal(size=G.shape) for _ in range(n_hints)]
    bound, _ = geo.lp(_Node(rays, has, hints), [])
    assert bound <= v


def test_plane_iso_toy_certified_by_the_sectors_only():
    """The points of toy 280 of bench_certificates.py's N5R2 cell, labelled
    ``[0, 1, 0, 1, 2]`` ("iso"): the interval search leaves a relative gap of
    about 8e-5; the angular search after it certifies it (to 5e-7, under the
    OpenBLAS kernels SkylakeX, Haswell, Sandybridge and Nehalem and with
    numpy's SIMD paths off).  The sub-problem on the incumbent's support is
    switched off (max_subbatches=0; on some BLAS kernels a support's
    sub-problem certifies a toy without the LPs).  (Toy 51 labelled ``[0, 0,
    0, 1, 1]`` was the example until the interval search cut its boxes by
    the distance intervals, kernels.bnb.pair_cut: it certifies that toy
    alone now; toy 229 labelled ``[0, 0, 1, 1, 2]`` ends at a gap of 1.2e-6
    under Sandybridge, on the edge of the tolerance.)"""
    E = _bench_toy(280)
    y = [0, 1, 0, 1, 2]
    kw = dict(margin=1.0, objective="iso", rng=280, warn_uncertified=False, max_subbatches=0)
    r0 = nearest_ideal(E, y, max_lps=0, **kw)
    r1 = nearest_ideal(E, y, **kw)
    assert not r0.certified and r0.rel_gap > 1e-5
    assert r1.certified and r1.lower_source == "branch_and_bound"
    assert r1.lower >= r0.lower


# ----------------------------------------------------------------------
# the node LPs: the row builder against the arrays it replaced
# ----------------------------------------------------------------------


def _sector_rows_reference(geo, node, extra):
    """The node LP's rows built array by array (the twin of ``sector_rows``)."""
    pts = node.hints + extra + ([] if geo.best is None else [geo.best])
    blocks = [(geo.A0, geo.b0)]
    if pts:
        Fs = np.stack(pts)
        if not geo.iso:
            W = (Fs - geo.E[None]).reshape(-1, 2)
            k = np.tile(np.arange(geo.N), len(pts))
            nw = np.sqrt(np.sum(W * W, axis=1))
            ok = (nw > 0.0) & np.isfinite(nw)
            if ok.any():
                blocks.append(geo._point_rows(k[ok], W[ok] / nw[ok, None] * (1.0 - 1e-15)))
        if geo.qpos.size:
            q = np.tile(geo.qpos, len(pts))
            W = (Fs[:, geo.I[geo.qpos]] - Fs[:, geo.J[geo.qpos]]).reshape(-1, 2)
            nw = np.sqrt(np.sum(W * W, axis=1))
            ok = (nw > 0.0) & np.isfinite(nw)
            if ok.any():
                blocks.append(geo._pair_rows(q[ok], W[ok] / nw[ok, None] * (1.0 - 1e-15)))
    coned = np.flatnonzero(node.has)
    for s in coned:
        q = geo.qneg[s]
        i, j = geo.I[q], geo.J[q]
        lo, hi, g = node.rays[s, 0], node.rays[s, 1], node.grads[s]
        A = np.zeros((3, geo.nv))
        for t, a in enumerate(([lo[1], -lo[0]], [-hi[1], hi[0]], [-g[0], -g[1]])):
            A[t, 2 * i:2 * i + 2] = a
            A[t, 2 * j:2 * j + 2] = -np.array(a)
        A[2, geo.nF + 1 + q] = 1.0
        blocks.append((A, np.zeros(3)))
    return np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10_000), n_hints=st.integers(0, 4), iso=st.booleans(),
       coincide=st.booleans())
def test_sector_rows_match_the_reference(seed, n_hints, iso, coincide):
    """The kernel's rows are the reference's bit for bit (hints on the data and
    coinciding points, whose tangents are skipped, included)."""
    from isoapprox.ideal._sector import _SHRINK
    from isoapprox.kernels.bnb import sector_rows
    from isoapprox.tolerances import BNB_RTOL

    prob = _instance(seed % 40, N=5, margin=0.3)
    trip = triplet_table(prob)
    rng = np.random.default_rng(seed)
    best = prob.E + rng.normal(size=prob.E.shape) * 0.1
    gauge = None
    E = prob.E
    if iso:
        i0, i1, i2 = gauge_points(prob.E)
        gauge = (lambda level: root_boxes(prob, level), (i0, i1))
        E, best = to_gauge(prob.E, i0, i1, i2), to_gauge(best, i0, i1, i2)
    geo = _Geometry(E, trip, prob.alpha, 0.3, best, gauge)
    Q = geo.qneg.size
    rays = np.zeros((Q, 2, 2))
    for s in range(Q):
        a = rng.uniform(-np.pi, np.pi)
        rays[s, 0] = [np.cos(a), np.sin(a)]
        rays[s, 1] = _rotate(rays[s, 0], rng.uniform(1e-6, 2.0))
    node = _Node(rays, rng.random(Q) < 0.6,
                 [E + rng.normal(size=E.shape) * 0.3 for _ in range(n_hints)])
    if coincide and n_hints:
        node.hints[0][1] = node.hints[0][0] if iso else E[1]
    extra = [E + rng.normal(size=E.shape) * 0.2]
    pts = node.hints + extra + [geo.best]
    coned = np.flatnonzero(node.has)
    A, b = sector_rows(geo.A0, geo.b0, geo.E, np.stack(pts), not geo.iso, geo.qpos, geo.I,
                       geo.J, geo.qneg[coned], node.rays[coned, 0], node.rays[coned, 1],
                       node.grads[coned], _SHRINK, BNB_RTOL)
    A_ref, b_ref = _sector_rows_reference(geo, node, extra)
    assert np.array_equal(A, A_ref) and np.array_equal(b, b_ref)

