"""The order search on the line (isoapprox.ideal._line): closure and propagation
against brute force, node bounds below every point of the node, and the search
against an exact enumeration of the orders."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import nearest_ideal, nearest_zero_loss
from isoapprox.ideal import _line
from isoapprox.ideal._line import _Line, closure, line_search

from .conftest import examples
from .test_bnb import exact_on_line


def _triplets(y):
    N = len(y)
    return np.array([(a, p, m) for a in range(N) for p in range(N) for m in range(N)
                     if p != a and y[p] == y[a] and y[m] != y[a]], dtype=np.int64).reshape(-1, 3)


def _objective(E, F, objective):
    if objective == "haus":
        return float(np.max(np.abs(F - E)))
    return float(np.max(np.abs(np.abs(F[:, None] - F[None]) - np.abs(E[:, None] - E[None]))))


def _slack(F, trip):
    if trip.shape[0] == 0:
        return np.inf
    a, p, m = trip.T
    return float(np.min(np.abs(F[a] - F[m]) - np.abs(F[a] - F[p])))


def _farthest(E):
    D = np.abs(E[:, None] - E[None])
    i0, i1 = divmod(int(np.argmax(D)), E.size)
    return min(i0, i1), max(i0, i1)


def _to_gauge(F, i0, i1):
    G = F - F[i0]
    return -G if G[i1] < 0 else G


# ----------------------------------------------------------------------
# closure and propagation
# ----------------------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), N=st.integers(1, 8), p=st.floats(0.0, 0.6))
def test_closure_is_reachability(seed, N, p):
    rng = np.random.default_rng(seed)
    R = rng.random((N, N)) < p
    C = closure(R)
    for i in range(N):  # reachability by a search from i
        seen, todo = set(), [i]
        while todo:
            k = todo.pop()
            for j in np.flatnonzero(R[k]):
                if j not in seen:
                    seen.add(int(j))
                    todo.append(int(j))
        assert set(np.flatnonzero(C[i]).tolist()) == seen | ({i} if C[i, i] else set())
        assert all(C[i, j] for j in seen)


def _node_case(seed, N, objective, keep):
    """Random data, a random point ``F`` and a level with ``F`` inside ``2 T``,
    a random subset of ``F``'s order relations (in the gauge for ``"iso"``)."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=N)
    y = rng.integers(0, 3, size=N)
    y[:3] = [0, 0, 1]
    F = E + rng.normal(size=N) * rng.choice([1e-3, 0.1, 1.0])
    gauge = None
    if objective == "iso":
        gauge = _farthest(E)
        F = _to_gauge(F, *gauge)
    T = _objective(E, F, objective) * rng.uniform(0.5, 2.0) + 1e-9
    R = (F[:, None] <= F[None]) & (rng.random((N, N)) < keep)
    np.fill_diagonal(R, True)
    if gauge is not None:
        R[gauge] = True
    return E, y, F, T, R, gauge


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), N=st.integers(3, 8),
       objective=st.sampled_from(["iso", "haus"]), keep=st.floats(0.0, 1.0))
def test_propagation_keeps_every_point_of_the_node(seed, N, objective, keep):
    E, y, F, T, R, gauge = _node_case(seed, N, objective, keep)
    line = _Line(E, _triplets(y), 0.0, T, objective == "iso", gauge)
    out = line.propagate(R)
    assert out is not None
    R2, lo, hi = out
    assert np.all(lo <= F) and np.all(F <= hi)
    # every relation found holds for F, and the known ones are kept
    I, J = np.nonzero(R2)
    assert np.all(F[I] <= F[J])
    assert np.all(R2[R])


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), N=st.integers(3, 8),
       objective=st.sampled_from(["iso", "haus"]), keep=st.floats(0.0, 1.0),
       frac=st.floats(0.0, 1.0))
def test_node_bound_is_below_every_separated_point_of_the_node(seed, N, objective, keep, frac):
    E, y, F, T, R, gauge = _node_case(seed, N, objective, keep)
    trip = _triplets(y)
    # F is separated at this margin (a negative one when F is not separated:
    # the node's relaxation is the same linear programme)
    slack = _slack(F, trip)
    alpha = (slack * frac if slack >= 0.0 else slack) - 1e-12
    line = _Line(E, trip, alpha, T, objective == "iso", gauge)
    R2, lo, hi = line.propagate(R)
    bound, x = line.lp(R2, lo, hi)
    assert bound <= _objective(E, F, objective) + 1e-12


def test_an_empty_box_prunes():
    # "haus": F_0 <= F_1 is impossible within 2 T of E = (1, 0) when 4 T < 1
    line = _Line(np.array([1.0, 0.0, 5.0]), _triplets([0, 0, 1]), 0.0, 0.2, False, None)
    R = np.eye(3, dtype=bool)
    R[0, 1] = True
    assert line.propagate(R) is None
    R = np.eye(3, dtype=bool)
    R[1, 0] = True
    assert line.propagate(R) is not None


# ----------------------------------------------------------------------
# the search
# ----------------------------------------------------------------------

CASES = [(N, seed, margin) for N, seeds in ((4, range(3)), (5, range(3)))
         for seed in seeds for margin in (0.0, 1.0)]


def _instance(N, seed):
    rng = np.random.default_rng([N, seed, 7])
    y = rng.integers(0, 3, size=N)
    y[:3] = [0, 0, 1]
    return rng.normal(size=N), y


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("N,seed,margin", CASES)
def test_search_ends_at_the_exact_optimum(N, seed, margin, objective):
    """Without an incumbent the search proves ``min(T, optimum)``: a level below
    the optimum is proven, and above it the exact leaf is what stays open."""
    E, y = _instance(N, seed)
    opt = exact_on_line(E[:, None], y, margin, objective)
    trip = _triplets(y)
    gauge = _farthest(E) if objective == "iso" else None
    below, n_lp, level = line_search(E, trip, margin, 0.99 * opt, 4000, objective=objective,
                                     gauge=gauge)
    assert below == 0.99 * opt and level == 0.99 * opt and n_lp < 4000
    above, n_lp, _ = line_search(E, trip, margin, 1.5 * opt + 0.1, 4000, objective=objective,
                                 gauge=gauge)
    assert n_lp < 4000
    # opt is an LP solver's value, itself within its tolerances of the optimum
    assert abs(above - opt) <= 1e-7 * (1 + opt)


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_the_offered_points_are_separated_and_reach_the_optimum(objective):
    E, y = _instance(6, 1)
    trip = _triplets(y)
    opt = exact_on_line(E[:, None], y, 0.5, objective)
    gauge = _farthest(E) if objective == "iso" else None
    best = [np.inf]

    def offer(F):
        F = F[:, 0]
        if _slack(F, trip) >= 0.5:
            best[0] = min(best[0], _objective(E, F, objective))
        return 0.999 * best[0] if np.isfinite(best[0]) else 10.0

    bound, _, level = line_search(E, trip, 0.5, 10.0, 4000, objective=objective,
                                  gauge=gauge, offer=offer)
    assert best[0] == pytest.approx(opt, rel=1e-6)
    assert bound == level and level == pytest.approx(0.999 * opt, rel=1e-6)


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("N,seed", [(4, 0), (5, 0), (5, 1), (6, 2)])
def test_margin_loss_zero_set_on_the_line_is_exact(N, seed, objective):
    """The pair family (margin loss: same-class distances at most ``beta - margin``,
    the others at least ``beta + margin``): certified, and the bracket holds the
    minimum over all orders."""
    E, y = _instance(N, seed)
    margin, beta = 0.3, 1.0
    opt = exact_on_line(E[:, None], y, 0.0, objective, pairs=(beta - margin, beta + margin))
    res = nearest_zero_loss(E[:, None], y, loss="margin", margin=margin, beta=beta,
                            objective=objective, rng=0, warn_uncertified=False)
    assert res.certified
    assert res.lower <= opt + 1e-7 * (1 + opt) and res.upper >= opt - 1e-7 * (1 + opt)


def test_margin_loss_on_the_line_is_certified_by_the_search(monkeypatch):
    """Ten points of three classes on the line: every instance is certified;
    without the search (measured: 3 of these 6) at least two are not."""
    import isoapprox.ideal.nearest as nearest_module

    rng = np.random.default_rng(1)
    cases = [(rng.normal(size=(10, 1)), rng.integers(0, 3, size=10)) for _ in range(3)]

    def certified():
        out = []
        for k, (E, y) in enumerate(cases):
            for objective in ("iso", "haus"):
                res = nearest_zero_loss(E, y, loss="margin", margin=0.3, beta=1.0,
                                        objective=objective, rng=k, warn_uncertified=False)
                out.append(res.certified)
        return out

    assert all(certified())
    monkeypatch.setattr(nearest_module, "branch_and_bound", lambda *a, **k: None)
    assert sum(certified()) <= 4


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), N=st.integers(3, 8),
       objective=st.sampled_from(["iso", "haus"]), keep=st.floats(0.0, 1.0),
       frac=st.floats(0.0, 1.0))
def test_node_bound_with_pair_bounds_is_below_every_point_of_the_node(seed, N, objective, keep,
                                                                      frac):
    E, y, F, T, R, gauge = _node_case(seed, N, objective, keep)
    D = np.abs(F[:, None] - F[None])
    same = (y[:, None] == y[None]) & ~np.eye(N, dtype=bool)
    other = y[:, None] != y[None]
    u = float(D[same].max()) + 1e-12 if same.any() else 0.0
    l = float(D[other].min()) * frac - 1e-12 if other.any() else 0.0
    line = _Line(E, np.zeros((0, 3), dtype=np.int64), 0.0, T, objective == "iso", gauge,
                 (u, max(l, 0.0)), y)
    R2, lo, hi = line.propagate(R)
    bound, _ = line.lp(R2, lo, hi)
    assert bound <= _objective(E, F, objective) + 1e-12


def test_iso_needs_the_gauge_and_pair_bounds_need_the_classes():
    with pytest.raises(ValueError, match="needs the gauge"):
        line_search(np.zeros(3), _triplets([0, 0, 1]), 0.0, 1.0, 10, objective="iso")
    with pytest.raises(ValueError, match="pair bounds need the class codes"):
        line_search(np.zeros(3), np.zeros((0, 3), dtype=np.int64), 0.0, 1.0, 10,
                    objective="haus", pairs=(0.5, 1.0))


def test_budget_and_stop_end_the_search_with_a_bound_below_the_level():
    """An unfinished search proves only its least open key, strictly below the
    level it would prove with the budget to finish."""
    E, y = _instance(5, 0)
    trip = _triplets(y)
    opt = exact_on_line(E[:, None], y, 1.0, "haus")
    done, n_full, _ = line_search(E, trip, 1.0, 0.99 * opt, 4000, objective="haus")
    assert done == 0.99 * opt and n_full > 1
    bound, n_lp, _ = line_search(E, trip, 1.0, 0.99 * opt, 1, objective="haus")
    assert n_lp == 1 and bound < 0.99 * opt
    asked = []

    def stop():
        asked.append(True)
        return True

    # a budget of 16 LPs: stop() is asked after every one of them
    bound, n_lp, _ = line_search(E, trip, 1.0, 0.99 * opt, 16, objective="haus", stop=stop)
    assert asked == [True] and n_lp == 1 and bound < 0.99 * opt


# ----------------------------------------------------------------------
# through nearest_ideal
# ----------------------------------------------------------------------


@pytest.mark.parametrize("objective,seed", [("iso", 2), ("haus", 0)])
def test_margin_zero_optimum_with_a_tight_triplet_is_reached(objective, seed, monkeypatch):
    """A margin-0 optimum holds some triplet with equality (else the points could
    move towards ``E``), which the solver's point meets only to its tolerance
    (1e-10), so an offer that checks separation in float64 may refuse it; the
    point offered again with every triplet's slack pushed to ``PUSH = 1e-9``
    is taken, and the level reaches the optimum.  The offer here asks a slack
    of 5e-10, so that it refuses every unpushed exact point, whatever the
    last bits of the solver's answer."""
    E, y = _instance(6, seed)
    trip = _triplets(y)
    opt = exact_on_line(E[:, None], y, 0.0, objective)
    gauge = _farthest(E) if objective == "iso" else None
    pushes = []
    lp = _Line.lp

    def counting(self, R, lo, hi, push=0.0):
        pushes.append(push)
        return lp(self, R, lo, hi, push)

    monkeypatch.setattr(_Line, "lp", counting)
    best = [np.inf]

    def offer(F):
        F = F[:, 0]
        if _slack(F, trip) >= 5e-10:
            best[0] = min(best[0], _objective(E, F, objective))
        return (1 - 1e-7) * best[0] if np.isfinite(best[0]) else 10.0

    bound, _, level = line_search(E, trip, 0.0, 10.0, 4000, objective=objective, gauge=gauge,
                                  offer=offer)
    assert _line.PUSH in pushes
    assert best[0] == pytest.approx(opt, rel=1e-7)
    assert bound == level


@pytest.mark.parametrize("objective", ["iso", "haus"])
def test_ten_and_sixteen_points_on_the_line_are_certified(objective):
    rng = np.random.default_rng(31)
    for N, margin in ((10, 0.0), (10, 1.0), (16, 1.0)):
        E = rng.normal(size=(N, 1))
        y = rng.integers(0, 3, size=N)
        res = nearest_ideal(E, y, margin=margin, objective=objective, rng=0,
                            warn_uncertified=False)
        assert res.certified, (N, margin, res.bounds, res.value)
        assert res.lower_source == "branch_and_bound" or res.rel_gap < 1e-9
