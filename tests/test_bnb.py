"""The spatial branch-and-bound: box kernels against brute force, sound pruning,
and its brackets against an exact enumeration on the line."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

from isoapprox import InvalidInputError, nearest_ideal
from isoapprox.ideal._bnb import gauge_points, root_boxes
from isoapprox.ideal._problem import Problem, triplet_table
from isoapprox.kernels import bnb as KB
from isoapprox.tolerances import BNB_RTOL

from .conftest import BRACKET_RTOL

#: a kernel's distance against the same distance computed by numpy: a few ulps
#: of coordinates of size <= 10
ULP_ATOL = 1e-13


def _dist(u, v):
    return float(np.sqrt(np.sum((np.asarray(u) - np.asarray(v)) ** 2)))


def _random_box(rng, n, scale=1.0):
    c = rng.normal(size=n) * scale
    w = rng.choice([0.0, 1e-9, 0.1, 1.0], size=n) * rng.random(n) * scale
    return c - w, c + w


def _grid(lo, hi, k):
    axes = [np.linspace(lo[d], hi[d], k) for d in range(lo.size)]
    return np.array(list(itertools.product(*axes)))


def _vertices(lo, hi):
    return np.array(list(itertools.product(*zip(lo, hi, strict=True))))


# ----------------------------------------------------------------------
# box distances
# ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3])
def test_box_distances_against_dense_sampling(n):
    rng = np.random.default_rng(n)
    k = {1: 201, 2: 25, 3: 9}[n]
    for _ in range(20):
        lo1, hi1 = _random_box(rng, n)
        lo2, hi2 = _random_box(rng, n)
        P, Q = _grid(lo1, hi1, k), _grid(lo2, hi2, k)
        D = np.sqrt(((P[:, None] - Q[None]) ** 2).sum(-1))
        spacing = np.sqrt(np.sum(((hi1 - lo1) / (k - 1)) ** 2)) + np.sqrt(
            np.sum(((hi2 - lo2) / (k - 1)) ** 2))
        mn = KB.box_mindist(lo1, hi1, lo2, hi2)
        mx = KB.box_maxdist(lo1, hi1, lo2, hi2)
        assert mn <= D.min() + ULP_ATOL
        assert mn >= D.min() - spacing - ULP_ATOL
        # the maximum of a convex function over a box is at a pair of vertices
        V = np.sqrt(((_vertices(lo1, hi1)[:, None] - _vertices(lo2, hi2)[None]) ** 2).sum(-1))
        assert mx == pytest.approx(V.max(), rel=1e-14, abs=ULP_ATOL)
        assert mx >= D.max() - ULP_ATOL
        x = rng.normal(size=n)
        d = np.sqrt(((Q - x) ** 2).sum(-1))
        half = np.sqrt(np.sum(((hi2 - lo2) / (k - 1)) ** 2))
        pmn = KB.point_box_mindist(x, lo2, hi2)
        assert d.min() - half - ULP_ATOL <= pmn <= d.min() + ULP_ATOL
        pv = np.sqrt(((_vertices(lo2, hi2) - x) ** 2).sum(-1)).max()
        assert KB.point_box_maxdist(x, lo2, hi2) == pytest.approx(pv, rel=1e-14, abs=ULP_ATOL)


def test_box_distances_corner_cases():
    z = np.zeros(2)
    assert KB.box_mindist(z, z, z, z) == 0.0
    assert KB.box_maxdist(z, z, z, z) == 0.0
    a, b = np.array([0.0, 0.0]), np.array([1.0, 1.0])
    # overlapping boxes: least distance 0, largest the diagonal
    assert KB.box_mindist(a, b, a + 0.5, b + 0.5) == 0.0
    assert KB.box_maxdist(a, b, a + 0.5, b + 0.5) == pytest.approx(np.sqrt(2) * 1.5)
    assert KB.point_box_mindist(np.array([3.0, 1.0]), a, b) == 2.0
    assert KB.point_box_maxdist(np.array([0.5, 0.5]), a, b) == pytest.approx(np.sqrt(0.5))


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3),
       scale=st.sampled_from([1e-3, 1.0, 8.0]))
def test_box_distances_bracket_every_pair_of_points(seed, n, scale):
    rng = np.random.default_rng(seed)
    lo1, hi1 = _random_box(rng, n, scale)
    lo2, hi2 = _random_box(rng, n, scale)
    mn = KB.box_mindist(lo1, hi1, lo2, hi2)
    mx = KB.box_maxdist(lo1, hi1, lo2, hi2)
    assert mn <= mx
    for _ in range(50):
        u = lo1 + rng.random(n) * (hi1 - lo1)
        v = lo2 + rng.random(n) * (hi2 - lo2)
        d = _dist(u, v)
        tol = ULP_ATOL * max(1.0, scale)
        assert mn - tol <= d <= mx + tol
        assert KB.point_box_mindist(u, lo2, hi2) - tol <= d <= \
            KB.point_box_maxdist(u, lo2, hi2) + tol


# ----------------------------------------------------------------------
# the triplet bound and the node bound never cut a feasible point
# ----------------------------------------------------------------------


def _objective(E, F, objective):
    if objective == "haus":
        return float(np.sqrt(((E - F) ** 2).sum(-1)).max())
    DE = np.sqrt(((E[:, None] - E[None]) ** 2).sum(-1))
    DF = np.sqrt(((F[:, None] - F[None]) ** 2).sum(-1))
    return float(np.abs(DE - DF).max())


def _separated_layout(rng, y, n, alpha, spread):
    """Class centres far apart, classes of radius ``spread`` (0: collapsed)."""
    P = int(y.max()) + 1
    C = rng.normal(size=(P, n))
    C *= (4.0 * (alpha + 1.0)) / max(np.min([_dist(C[i], C[j]) for i in range(P)
                                              for j in range(i + 1, P)] or [1.0]), 1e-3)
    F = C[y] + spread * rng.uniform(-1, 1, size=(y.size, n))
    return F


def _slack(F, y, alpha):
    s = np.inf
    for a in range(y.size):
        same = (y == y[a]) & (np.arange(y.size) != a)
        diff = y != y[a]
        if same.any() and diff.any():
            d = np.sqrt(((F - F[a]) ** 2).sum(-1))
            s = min(s, d[diff].min() - d[same].max() - alpha)
    return s


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2), N=st.integers(3, 7),
       objective=st.sampled_from(["iso", "haus"]), alpha=st.sampled_from([0.0, 0.3]),
       spread=st.sampled_from([0.0, 0.2]), slack_T=st.sampled_from([0.0, 0.1]),
       width=st.sampled_from([0.0, 1e-10, 0.05, 0.5, 3.0]))
def test_pruning_keeps_boxes_with_a_feasible_point(seed, n, N, objective, alpha, spread,
                                                   slack_T, width):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=N)
    y[:3] = [0, 0, 1]
    F = _separated_layout(rng, y, n, alpha, spread)
    assert _slack(F, y, alpha) >= -1e-12  # separated (collapsed classes: on the edge)
    E = rng.normal(size=(N, n)) * rng.choice([0.3, 1.0, 3.0])
    v = _objective(E, F, objective)
    T = v * (1.0 + slack_T)  # slack_T = 0: the level is the point's own value
    lo = F - width * rng.random((N, n))
    hi = F + width * rng.random((N, n))
    prob = Problem.build(E, y, alpha, objective, 1.0)
    trip = triplet_table(prob)
    D = np.sqrt(((E[:, None] - E[None]) ** 2).sum(-1))
    code = KB.ISO if objective == "iso" else KB.HAUS
    for a, p, m in trip:
        ub = KB.triplet_upper(E, D, code, T, lo, hi, a, p, m, BNB_RTOL)
        assert ub >= _dist(F[a], F[m]) - _dist(F[a], F[p])
        ub0 = KB.triplet_upper(E, D, -1, T, lo, hi, a, p, m, BNB_RTOL)
        assert ub0 >= _dist(F[a], F[m]) - _dist(F[a], F[p])
    lb = KB.node_bound(E, D, code, trip, alpha, T, BNB_RTOL, lo, hi)
    assert lb <= v
    # the contraction keeps F
    assert np.all(lo <= F) and np.all(F <= hi)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2), N=st.integers(3, 8))
def test_propagation_keeps_the_distances_of_a_separated_point(seed, n, N):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=N)
    y[:3] = [0, 0, 1]
    alpha = float(rng.choice([0.0, 0.2]))
    F = _separated_layout(rng, y, n, alpha, 0.1)
    d = np.sqrt(((F[:, None] - F[None]) ** 2).sum(-1))
    L = np.maximum(d - rng.random((N, N)) * rng.choice([0.0, 0.5]), 0.0)
    U = d + rng.random((N, N)) * rng.choice([0.0, 0.5])
    L, U = np.minimum(L, L.T), np.maximum(U, U.T)
    np.fill_diagonal(L, 0.0)
    np.fill_diagonal(U, 0.0)
    prob = Problem.build(F, y, alpha, "iso", 1.0)
    assert KB.propagate(L, U, triplet_table(prob), alpha, BNB_RTOL, 4)
    assert np.all(L <= d) and np.all(d <= U)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2), N=st.integers(3, 8))
def test_root_boxes_hold_every_point_of_objective_below_the_level(seed, n, N):
    """The gauge (iso) and the discs (haus) never exclude a point at level ``T``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=N)
    y[:3] = [0, 0, 1]
    E = rng.normal(size=(N, n))
    F = E + 0.3 * rng.normal(size=(N, n))
    for objective in ("iso", "haus"):
        prob = Problem.build(E, y, 0.0, objective, 1.0)
        Fn = prob.from_caller(F)
        T = _objective(prob.E, Fn, objective)
        lo, hi = root_boxes(prob, T)
        if objective == "iso":
            i0, i1, i2 = gauge_points(prob.E)
            G = Fn - Fn[i0]
            if n == 2:
                u = G[i1] / max(np.linalg.norm(G[i1]), 1e-300)
                R = np.array([[u[0], u[1]], [-u[1], u[0]]])
                G = G @ R.T
                if i2 >= 0 and G[i2, 1] < 0:
                    G[:, 1] *= -1.0
            elif G[i1, 0] < 0:
                G = -G
        else:
            G = Fn
        # the rotation above rounds; the gauge itself is exact
        assert np.all(lo <= G + 1e-12) and np.all(G <= hi + 1e-12)


# ----------------------------------------------------------------------
# the line: an exact optimum by enumerating orders (one LP each)
# ----------------------------------------------------------------------


def _appender(A, b):
    def row(coef, rhs):
        A.append(coef)
        b.append(rhs)
    return row


def exact_on_line(E, y, margin, objective, pairs=None):
    """``d(E, F_TS)`` for ``n = 1``: the minimum over the orders of the points of an LP.

    ``pairs = (u, l)``: the zero-loss set of a pair loss instead (same-class
    distances at most ``u``, the others at least ``l``; ``margin`` unused).
    """
    x = np.asarray(E, dtype=float)[:, 0]
    N = x.size
    DE = np.abs(x[:, None] - x[None])
    trip = [(a, p, m) for a in range(N) for p in range(N) for m in range(N)
            if p != a and y[p] == y[a] and y[m] != y[a]] if pairs is None else []
    best = np.inf
    for perm in itertools.permutations(range(N)):
        if objective == "iso" and perm.index(0) > perm.index(1):
            continue  # the mirror order gives the same value
        rank = np.empty(N, dtype=int)
        rank[list(perm)] = np.arange(N)
        sg = np.sign(rank[:, None] - rank[None])  # |x_i - x_j| = sg_ij (x_i - x_j)
        A, b = [], []
        row = _appender(A, b)
        for i in range(N - 1):
            c = np.zeros(N + 1)
            c[perm[i]], c[perm[i + 1]] = 1.0, -1.0
            row(c, 0.0)
        for a, p, m in trip:  # sg_ap (x_a - x_p) - sg_am (x_a - x_m) <= -margin
            c = np.zeros(N + 1)
            c[a] += sg[a, p] - sg[a, m]
            c[p] -= sg[a, p]
            c[m] += sg[a, m]
            row(c, -margin)
        if pairs is not None:  # sg_ij (x_i - x_j) <= u (same class), >= l (others)
            for i in range(N):
                for j in range(i + 1, N):
                    c = np.zeros(N + 1)
                    c[i], c[j] = sg[i, j], -sg[i, j]
                    if y[i] == y[j]:
                        row(c, pairs[0])
                    else:
                        row(-c, -pairs[1])
        if objective == "iso":
            for i in range(N):
                for j in range(i + 1, N):
                    c = np.zeros(N + 1)
                    c[i], c[j], c[N] = sg[i, j], -sg[i, j], -1.0
                    row(c, DE[i, j])
                    c = -c
                    c[N] = -1.0
                    row(c, -DE[i, j])
        else:
            for k in range(N):
                c = np.zeros(N + 1)
                c[k], c[N] = 1.0, -1.0
                row(c, x[k])
                c = np.zeros(N + 1)
                c[k], c[N] = -1.0, -1.0
                row(c, -x[k])
        bounds = [(None, None)] * N + [(0, None)]
        if objective == "iso":
            bounds[perm[0]] = (0.0, 0.0)
        cost = np.zeros(N + 1)
        cost[N] = 1.0
        res = linprog(cost, A_ub=np.array(A), b_ub=np.array(b), bounds=bounds, method="highs")
        if res.status == 0:
            best = min(best, float(res.fun))
    return best


LINE_CASES = [(N, seed, margin) for N, seeds in ((4, range(3)), (5, range(2)))
              for seed in seeds for margin in (0.0, 1.0)]
# six points: 720 orders, a few seconds each
LINE_CASES += [(6, 0, 1.0), pytest.param(6, 0, 0.0, marks=pytest.mark.slow),
               pytest.param(5, 2, 0.0, marks=pytest.mark.slow),
               pytest.param(5, 2, 1.0, marks=pytest.mark.slow)]


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("N,seed,margin", LINE_CASES)
def test_line_brackets_contain_the_exact_optimum_and_are_certified(N, seed, margin, objective):
    rng = np.random.default_rng([N, seed])
    y = rng.integers(0, 3, size=N)
    y[:3] = [0, 0, 1]
    E = rng.normal(size=(N, 1))
    opt = exact_on_line(E, y, margin, objective)
    res = nearest_ideal(E, y, margin=margin, objective=objective, rng=0, warn_uncertified=False)
    scale = max(float(np.ptp(E)), margin)
    assert res.lower <= opt + BRACKET_RTOL * scale
    assert res.upper >= opt - BRACKET_RTOL * scale
    assert res.certified, (res.bounds, res.value, opt)


def test_line_toys_certified_only_with_the_search():
    """On the line the other bounds rarely close the gap; the search does.

    The order search runs after the first local solve and ends the call once
    it certifies, so its lower end need not exceed the one the full
    multistart reaches without it (both are proven): the two brackets must
    overlap."""
    rng = np.random.default_rng(11)
    y = np.array([0, 0, 1, 1, 2])
    before = after = 0
    for k in range(4):
        E = rng.normal(size=(5, 1))
        r0 = nearest_ideal(E, y, margin=1.0, objective="haus", rng=k, max_nodes=0,
                           warn_uncertified=False)
        r1 = nearest_ideal(E, y, margin=1.0, objective="haus", rng=k, warn_uncertified=False)
        assert "branch_and_bound" not in r0.bounds
        assert r1.lower_source == "branch_and_bound"
        assert r1.lower <= r0.upper and r0.lower <= r1.upper
        before += r0.certified
        after += r1.certified
    assert after == 4
    assert before < after


# ----------------------------------------------------------------------
# the plane: certified brackets contain every value a long multi-start finds
# ----------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_plane_brackets_contain_long_multistart_values(objective):
    rng = np.random.default_rng(5)
    layouts = [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1)]
    for k in range(3):
        E = rng.normal(size=(5, 2))
        y = np.array(layouts[k % 2])
        margin = (0.0, 1.0)[k // 2]
        res = nearest_ideal(E, y, margin=margin, objective=objective, rng=k,
                            max_nodes=20_000, warn_uncertified=False)
        long = nearest_ideal(E, y, margin=margin, objective=objective, rng=100 + k,
                             n_starts=48, max_nodes=0, solver="scipy", warn_uncertified=False)
        scale = max(float(np.ptp(E)), margin)
        assert res.bounds.get("branch_and_bound", 0.0) <= long.value + BRACKET_RTOL * scale
        assert res.lower <= long.value + BRACKET_RTOL * scale


def test_same_bound_on_every_run():
    E = np.random.default_rng(2).normal(size=(6, 1))
    y = [0, 0, 1, 1, 2, 2]
    a = nearest_ideal(E, y, margin=0.5, objective="iso", rng=1, warn_uncertified=False)
    b = nearest_ideal(E, y, margin=0.5, objective="iso", rng=1, warn_uncertified=False)
    assert a.bounds == b.bounds and a.value == b.value


@pytest.mark.parametrize("name", ["max_nodes", "max_lps", "max_subbatches"])
def test_budget_validation(name):
    E = [[0.0], [1.0], [3.0]]
    with pytest.raises(InvalidInputError, match=f"`{name}` must be >= 0; got -1"):
        nearest_ideal(E, [0, 0, 1], warn_uncertified=False, **{name: -1})
    with pytest.raises(TypeError, match=f"`{name}` must be an integer"):
        nearest_ideal(E, [0, 0, 1], warn_uncertified=False, **{name: 1.5})


# --- pair_cut: the contraction by a distance interval (shared with the D* proofs) ---


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3),
       lo_frac=st.sampled_from([0.0, 0.5, 1.0]), hi_frac=st.sampled_from([1.0, 1.5, 3.0]),
       width=st.sampled_from([0.0, 1e-9, 0.1, 1.0]))
def test_pair_cut_keeps_every_point_that_meets_the_interval(seed, n, lo_frac, hi_frac, width):
    """Brute force: two points at distance d, boxes around them, the interval
    [lo_frac d, hi_frac d] (tight ends included): the cut never removes the point."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2, n)) * rng.choice([0.3, 1.0, 3.0])
    d = _dist(X[0], X[1])
    lo = X - width * rng.random((2, n))
    hi = X + width * rng.random((2, n))
    gl, gh = np.empty(n), np.empty(n)
    for i, j in ((0, 1), (1, 0)):
        code = KB.pair_cut(lo, hi, i, j, lo_frac * d, hi_frac * d, BNB_RTOL, gl, gh)
        assert code >= 0
        assert np.all(lo <= X) and np.all(X <= hi)


def test_pair_cut_known_cuts_and_refusals():
    gl, gh = np.empty(2), np.empty(2)
    # box 0 = [0, 2] x [0, 0.1], box 1 = the origin; 1 <= d <= 10: x >= sqrt(1 - 0.01)
    lo = np.array([[0.0, 0.0], [0.0, 0.0]])
    hi = np.array([[2.0, 0.1], [0.0, 0.0]])
    assert KB.pair_cut(lo, hi, 0, 1, 1.0, 10.0, BNB_RTOL, gl, gh) == 1
    assert lo[0, 0] == pytest.approx(np.sqrt(0.99), abs=1e-9) and lo[0, 0] <= np.sqrt(0.99)
    assert hi[0, 0] == 2.0 and lo[0, 1] == 0.0 and hi[0, 1] == 0.1  # nothing else moved
    # the origin's fixed box is tested, never moved
    assert KB.pair_cut(lo, hi, 1, 0, 1.0, 10.0, BNB_RTOL, gl, gh) == 0
    # d <= 1 from the origin: box [-5, 5] x [0, 0.1] shrinks to about [-1, 1]
    lo = np.array([[-5.0, 0.0], [0.0, 0.0]])
    hi = np.array([[5.0, 0.1], [0.0, 0.0]])
    assert KB.pair_cut(lo, hi, 0, 1, 0.0, 1.0, BNB_RTOL, gl, gh) == 1
    assert -1.0 - 1e-9 < lo[0, 0] <= -1.0 and 1.0 <= hi[0, 0] < 1.0 + 1e-9
    # refusals: every point too far (least distance 3 > U = 2), or too close (all < L)
    lo = np.array([[3.0, 0.0], [0.0, 0.0]])
    hi = np.array([[4.0, 0.0], [0.0, 0.0]])
    assert KB.pair_cut(lo, hi, 0, 1, 0.0, 2.0, BNB_RTOL, gl, gh) == -1
    assert KB.pair_cut(lo, hi, 0, 1, 5.0, 9.0, BNB_RTOL, gl, gh) == -1
