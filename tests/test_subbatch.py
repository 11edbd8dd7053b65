"""Sub-batch lower bounds (isoapprox.ideal._subbatch).

A proven lower bound may never exceed the objective at a separated
embedding: both bounds are checked against feasible values found by the
package's search and by an independent search; the representatives bound
against a loop twin; the choice of sub-batches for triplets and determinism;
and the collapse and spread-out examples of the benchmark for a larger
lower end than the whole-batch bounds give.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import InvalidInputError, nearest_ideal
from isoapprox.geometry import min_enclosing_ball
from isoapprox.ideal import SolverOptions, solve_nearest
from isoapprox.ideal._problem import Problem, triplet_table
from isoapprox.ideal._relax import hardest_triplets, shor_sdp_bound
from isoapprox.ideal._subbatch import (
    choose_sub_batches,
    dense_codes,
    representative_bound,
    sub_batch_bound,
    support_indices,
)
from isoapprox.packing import packing_distance_bound, radius_lower_bound, unit_lower_bound
from isoapprox.tolerances import PACKING_RTOL

from . import ideal_reference as iref
from . import reference as ref
from .conftest import BRACKET_RTOL, examples


def _labels(draw_sizes) -> np.ndarray:
    return np.repeat(np.arange(len(draw_sizes)), draw_sizes)


def _sub_lower(objective, margin):
    """The package's machinery on a sub-problem: its proven lower end."""
    def lower(X, c):
        return solve_nearest(X, c, margin, 0, SolverOptions.from_effort(
            objective=objective, time_limit=1e6, warn_uncertified=False, n_starts=2,
            max_subbatches=0)).lower
    return lower


def _admits_triplet(codes) -> bool:
    counts = np.bincount(codes)
    return counts.size >= 2 and counts.max() >= 2 and np.count_nonzero(counts) >= 2


# ----------------------------------------------------------------------
# choice of sub-batches
# ----------------------------------------------------------------------


@given(
    sizes=st.lists(st.integers(1, 4), min_size=2, max_size=5).filter(lambda s: max(s) >= 2),
    n=st.integers(1, 3),
    margin=st.sampled_from([0.0, 0.4, 2.0]),
    size=st.integers(3, 8),
    count=st.integers(0, 6),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=examples(60))
def test_sub_batches_admit_triplets_and_are_deterministic(sizes, n, margin, size, count, seed):
    y = _labels(sizes)
    E = np.random.default_rng(seed).normal(size=(y.size, n))
    subs = choose_sub_batches(E, y, margin, count=count, size=size)
    assert len(subs) <= count
    assert len({tuple(s) for s in subs}) == len(subs)
    for s in subs:
        assert 3 <= s.size <= size
        assert np.all(np.diff(s) > 0) and s[0] >= 0 and s[-1] < y.size
        assert _admits_triplet(dense_codes(y[s]))
    again = choose_sub_batches(E.copy(), y.copy(), margin, count=count, size=size)
    assert [s.tolist() for s in again] == [s.tolist() for s in subs]


def test_first_sub_batch_is_the_hardest_triplet():
    E = np.array([[0.0, 0.0], [4.0, 0.0], [0.5, 0.0], [4.5, 0.0], [9.0, 0.0], [9.5, 0.0]])
    y = np.array([0, 0, 1, 1, 2, 2])
    D = ref.pairwise(E)
    viol = [max(D[a, (y == y[a]) & (np.arange(6) != a)]) + 1.0 - min(D[a, y != y[a]])
            for a in range(6)]
    a = int(np.argmax(viol))
    pos = [i for i in range(6) if y[i] == y[a] and i != a]
    neg = [i for i in range(6) if y[i] != y[a]]
    p = max(pos, key=lambda i: D[a, i])
    m = min(neg, key=lambda i: D[a, i])
    first = choose_sub_batches(E, y, 1.0, count=1, size=3)[0]
    assert first.tolist() == sorted([a, p, m])


# ----------------------------------------------------------------------
# representatives bound: loop twin, radius lemma
# ----------------------------------------------------------------------


def _witness_value(E, y, idx, margin, objective):
    """The bound of the module notes at the returned representatives (recomputed)."""
    k, n = idx.size, E.shape[1]
    diam = ref.diameter(E[idx])
    ds = margin * unit_lower_bound(k, n)[0]
    v = ds - diam - PACKING_RTOL * max(ds, diam)
    if objective == "iso":
        return v, v
    c = min_enclosing_ball(E[idx]).center
    rho = max(ref.dist(E[i], c) for i in idx)
    rs = radius_lower_bound(k, n, margin=margin)
    return v / 2.0, max(v / 2.0, rs - rho - PACKING_RTOL * max(rs, rho))


@given(
    sizes=st.lists(st.integers(1, 3), min_size=2, max_size=7).filter(lambda s: max(s) >= 2),
    n=st.integers(1, 3),
    margin=st.sampled_from([0.0, 0.2, 1.0]),
    scale=st.sampled_from([1e-6, 1e-2, 1.0]),
    objective=st.sampled_from(["iso", "haus"]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=examples(60))
def test_representative_bound_is_the_bound_of_its_witness(sizes, n, margin, scale, objective,
                                                          seed):
    y = _labels(sizes)
    E = scale * np.random.default_rng(seed).normal(size=(y.size, n))
    b = representative_bound(E, y, margin, objective)
    again = representative_bound(E.copy(), y.copy(), margin, objective)
    assert again.value == b.value and np.array_equal(again.indices, b.indices)
    if b.value == 0.0:
        assert b.indices.size == 0
        return
    # one point per class and one singleton at most: pairwise >= margin in every G
    counts = np.bincount(y)
    cls = y[b.indices]
    assert len(set(cls.tolist())) == cls.size and b.indices.size >= 2
    assert np.count_nonzero(counts[cls] == 1) <= 1
    lo, hi = _witness_value(E, y, b.indices, margin, objective)
    allowance = 1e-12 * max(scale, margin)
    assert lo - allowance <= b.value <= hi + allowance
    if objective == "iso":
        assert b.value == pytest.approx(hi, rel=1e-12, abs=allowance)
    # never below the whole-batch packing bound by more than rounding
    whole = packing_distance_bound(y, n, margin, ref.diameter(E))
    if objective == "haus":
        whole /= 2.0
    assert b.value >= whole - allowance or whole <= 0.0


# ----------------------------------------------------------------------
# soundness: never above a feasible value
# ----------------------------------------------------------------------


@given(
    N=st.integers(6, 9),
    n=st.integers(1, 3),
    P=st.integers(2, 3),
    margin=st.sampled_from([0.0, 0.5, 1.5]),
    scale=st.sampled_from([1e-3, 1.0]),
    objective=st.sampled_from(["iso", "haus"]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=examples(10))
def test_sub_batch_bounds_never_exceed_a_feasible_value(N, n, P, margin, scale, objective,
                                                        seed):
    y = np.arange(N) % P
    E = scale * np.random.default_rng(seed).normal(size=(N, n))
    sub = sub_batch_bound(E, y, margin, _sub_lower(objective, margin), count=3, size=5)
    rep = representative_bound(E, y, margin, objective)
    full = nearest_ideal(E, y, margin=margin, objective=objective, rng=0, n_starts=6,
                         time_limit=30.0, warn_uncertified=False)
    allowance = BRACKET_RTOL * max(ref.diameter(E), margin)
    for b in (sub, rep):
        assert b.value <= full.value + allowance
    assert full.lower <= full.value


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("seed", range(6))
def test_sub_batch_bounds_stay_below_an_independent_search(seed, objective):
    """Against random feasible points polished by a plain SLSQP on the
    all-triplet form (tests/ideal_reference.py), without the package's search."""
    rng = np.random.default_rng(seed)
    N, n, margin = 6 + seed % 4, 1 + seed % 3, (0.0, 0.5, 1.5)[seed % 3]
    y = np.arange(N) % (2 + seed % 2)
    E = rng.normal(size=(N, n))
    other = iref.independent_search(E, y, margin, objective, rng, n_random=100, n_polish=3)
    allowance = BRACKET_RTOL * max(ref.diameter(E), margin)
    sub = sub_batch_bound(E, y, margin, _sub_lower(objective, margin), count=4, size=5)
    rep = representative_bound(E, y, margin, objective)
    assert sub.value <= other + allowance
    assert rep.value <= other + allowance


# ----------------------------------------------------------------------
# through nearest_ideal
# ----------------------------------------------------------------------


def test_collapsed_iso_batch_gets_a_larger_lower_end():
    """16 points within ~1e-3 of the origin in R^2, 4 classes, margin 0.2: the
    representatives span less than the whole batch (whose diameter the
    packing bound subtracts), so the bracket [0.279, 0.2824] narrows."""
    E = 1e-3 * np.random.default_rng(0).normal(size=(16, 2))
    y = np.arange(16) % 4
    res = nearest_ideal(E, y, margin=0.2, rng=0, solver="scipy", n_starts=2, time_limit=30.0,
                        warn_uncertified=False)
    packing = packing_distance_bound(y, 2, 0.2, ref.diameter(E))
    assert res.bounds["packing"] == pytest.approx(packing, rel=1e-12)
    assert res.bounds["sub_batch_packing"] >= packing + 1e-3
    assert res.lower == res.bounds["sub_batch_packing"] <= res.value
    assert "sub_batch" not in res.bounds  # "iso": no sub-problems


@pytest.mark.parametrize("n, factor", [(8, 1.1), (2, 1.0)])
def test_collapsed_haus_batch_radius_form(n, factor):
    """64 points within ~1e-3 of the origin, 16 classes, margin 0.2: half the
    packing bound is 0.122 (R^8, where the rank of the Gram matrix gives
    D*(16, 8) >= 1.26 margin) and 0.329 (R^2, where a linear-programming
    certificate gives D*(16, 2) >= 3.31 margin); the radius form gives 0.140
    and 0.330 (best values found 0.141 and 0.362): a gain of 14 % in R^8, none
    to speak of in the plane, and never below half the packing bound."""
    E = 1e-3 * np.random.default_rng(0).normal(size=(64, n))
    y = np.arange(64) % 16
    half = packing_distance_bound(y, n, 0.2, ref.diameter(E)) / 2.0
    b = representative_bound(E, y, 0.2, "haus")
    assert b.value >= factor * half


def test_spread_haus_batch_sub_problems_raise_the_lower_end():
    """16 points of 4 classes, standard normal in R^8, margin 0.2: the largest
    single-triplet bound is 1.022, sub-problems of 8 points prove 1.193, the
    Shor relaxation on the 8 hardest triplets of each anchor 1.2860 (value
    1.2875, a gap of 0.12 %); the sub-problems' bound does not depend on the
    caller's rng."""
    E = np.random.default_rng(2).normal(size=(16, 8))
    y = np.arange(16) % 4
    a = nearest_ideal(E, y, margin=0.2, objective="haus", rng=0, n_starts=2, time_limit=60.0,
                      warn_uncertified=False)
    b = nearest_ideal(E, y, margin=0.2, objective="haus", rng=7, n_starts=2, time_limit=60.0,
                      warn_uncertified=False)
    assert a.bounds["sub_batch"] >= 1.1 * a.bounds["haus_triplet"]
    assert a.bounds["shor_sdp_triplets"] >= 1.05 * a.bounds["sub_batch"]
    assert a.lower_source == "shor_sdp_triplets" and a.lower <= a.value
    assert a.rel_gap <= 0.01
    assert a.bounds["sub_batch"] == b.bounds["sub_batch"]
    off = nearest_ideal(E, y, margin=0.2, objective="haus", rng=0, n_starts=2,
                        time_limit=60.0, max_subbatches=0, warn_uncertified=False)
    assert "sub_batch" not in off.bounds and "shor_sdp_triplets" not in off.bounds
    assert off.value == a.value  # the sub-batch bounds change no incumbent


# ----------------------------------------------------------------------
# the Shor relaxation on the hardest triplets
# ----------------------------------------------------------------------


@given(
    sizes=st.lists(st.integers(1, 4), min_size=2, max_size=5).filter(lambda s: max(s) >= 2),
    n=st.integers(1, 3),
    per_anchor=st.integers(0, 7),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=examples(40), deadline=None)
def test_hardest_triplets_match_a_loop(sizes, n, per_anchor, seed):
    """Per anchor, the ``per_anchor`` triplets of least slack d(a, m) - d(a, p)
    (ties in table order), kept in table order: against a loop."""
    y = _labels(sizes)
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(y.size, n))
    G = E + 0.3 * rng.normal(size=E.shape)
    G[rng.integers(y.size)] = G[0]  # a tie of distances now and then
    prob = Problem.build(E, y, 0.5, "haus", ref.diameter(E))
    got = hardest_triplets(prob, G, per_anchor)
    table = triplet_table(prob)
    want = []
    for a in sorted(set(table[:, 0].tolist())):
        rows = [t for t in range(table.shape[0]) if table[t, 0] == a]
        slack = [ref.dist(G[a], G[table[t, 2]]) - ref.dist(G[a], G[table[t, 1]]) for t in rows]
        ranked = sorted(range(len(rows)), key=lambda i: (slack[i], rows[i]))
        want += [rows[i] for i in ranked[:per_anchor]]
    assert got.tolist() == table[sorted(want)].tolist()


@pytest.mark.solver
@pytest.mark.parametrize("seed", range(4))
def test_shor_bound_on_hardest_triplets_stays_below_a_feasible_value(seed):
    """Dropping triplets relaxes the problem: the bound on the hardest ones is
    below an independent search's value and at most the bound on all of them
    (up to the proofs' allowances); with every triplet it is that bound."""
    rng = np.random.default_rng(seed)
    N, n, margin = 8, 2 + seed % 2, (0.0, 0.5)[seed % 2]
    y = np.arange(N) % 3
    E = rng.normal(size=(N, n))
    prob = Problem.build(E, y, margin, "haus", max(ref.diameter(E), margin))
    other = iref.independent_search(E, y, margin, "haus", rng, n_random=100, n_polish=3)
    upper = other / prob.scale
    G = prob.from_caller(E)
    allowance = BRACKET_RTOL * max(ref.diameter(E), margin)
    full = shor_sdp_bound(prob, upper)
    assert full is not None and full * prob.scale <= other + allowance
    for k in (1, 3):
        v = shor_sdp_bound(prob, upper, G_hint=G, trip=hardest_triplets(prob, G, k))
        assert v is not None
        assert v * prob.scale <= other + allowance
        assert v <= full + 1e-6 * max(full, 1.0)
    # the same relaxation, built afresh (the cached one may start from an
    # earlier solve): equal up to the accuracy of the solver's multipliers
    every = shor_sdp_bound(prob, upper, trip=triplet_table(prob))
    assert every == pytest.approx(full, rel=1e-6)
    assert shor_sdp_bound(prob, upper, trip=triplet_table(prob)[:0]) == 0.0


def test_shor_bound_on_hardest_triplets_refuses_a_pair_loss():
    from isoapprox.ideal._problem import PairBounds

    E = np.random.default_rng(0).normal(size=(6, 2))
    y = np.arange(6) % 2
    prob = Problem.build(E, y, 0.0, "haus", ref.diameter(E), PairBounds(0.5, 1.0))
    trip = hardest_triplets(Problem.build(E, y, 0.5, "haus", ref.diameter(E)), E, 2)
    assert trip.shape == (12, 3)  # 6 anchors, 2 of the 2 x 3 triplets of each
    with pytest.raises(ValueError, match="triplet family"):
        shor_sdp_bound(prob, 1.0, trip=trip)


def test_collapsed_haus_batch_skips_the_hardest_triplets():
    """16 points within ~1e-3 of the origin in R^2, 4 classes: the incumbent has
    its classes collapsed, where the relaxation (of any dimension) proves no
    more than the packing bounds, so it does not run."""
    E = 1e-3 * np.random.default_rng(0).normal(size=(16, 2))
    y = np.arange(16) % 4
    res = nearest_ideal(E, y, margin=0.2, objective="haus", rng=0, n_starts=2,
                        time_limit=30.0, warn_uncertified=False)
    assert res.kind == "class-collapsed"
    assert "sub_batch" in res.bounds and "shor_sdp_triplets" not in res.bounds


def test_sub_batch_bound_is_the_best_sub_problem():
    E = np.random.default_rng(2).normal(size=(16, 8))
    y = np.arange(16) % 4
    calls = []

    def lower(X, c):
        calls.append(X.shape[0])
        assert _admits_triplet(c)
        return float(X.shape[0] + len(calls))

    b = sub_batch_bound(E, y, 0.2, lower, count=3, size=6)
    assert calls == [6, 6, 6] and b.value == 9.0
    assert b.indices.tolist() == choose_sub_batches(E, y, 0.2, count=3, size=6)[2].tolist()


def test_max_subbatches_is_checked():
    E = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(InvalidInputError, match="max_subbatches"):
        nearest_ideal(E, [0, 0, 1, 1, 2, 2], max_subbatches=-1, warn_uncertified=False)
    with pytest.raises(TypeError, match="max_subbatches"):
        nearest_ideal(E, [0, 0, 1, 1, 2, 2], max_subbatches=1.5, warn_uncertified=False)


# ----------------------------------------------------------------------
# the incumbent's support
# ----------------------------------------------------------------------


def _support_loop(E, y, margin, objective, G, scale):
    """Loop twin of support_indices."""
    N = len(E)
    eps = 1e-6 * scale
    D = lambda X, i, j: float(np.sqrt(np.sum((X[i] - X[j]) ** 2)))  # noqa: E731
    out = set()
    if objective == "haus":
        moved = [float(np.sqrt(np.sum((G[k] - E[k]) ** 2))) for k in range(N)]
        out |= {k for k in range(N) if moved[k] >= max(moved) - eps}
    else:
        dev = {(i, j): abs(D(G, i, j) - D(E, i, j)) for i in range(N) for j in range(i + 1, N)}
        top = max(dev.values())
        out |= {k for (i, j), v in dev.items() if v >= top - eps for k in (i, j)}
    for a in range(N):
        for p in range(N):
            for m in range(N):
                if p != a and y[p] == y[a] and y[m] != y[a]:
                    if D(G, a, m) - D(G, a, p) - margin <= eps:
                        out |= {a, p, m}
    return sorted(out)


@given(
    N=st.integers(4, 9), n=st.integers(1, 3), P=st.integers(2, 3),
    margin=st.sampled_from([0.0, 0.5]), objective=st.sampled_from(["iso", "haus"]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=examples(25), deadline=None)
def test_support_indices_match_a_loop(N, n, P, margin, objective, seed):
    """The support of a solver's incumbent (tight relations and the points that
    attain the objective) against a triple loop."""
    rng = np.random.default_rng(seed)
    y = np.arange(N) % P
    E = rng.normal(size=(N, n))
    res = nearest_ideal(E, y, margin=margin, objective=objective, rng=0, n_starts=3,
                        max_nodes=0, warn_uncertified=False)
    scale = max(ref.diameter(E), margin)
    got = support_indices(E, y, margin, objective, res.embedding, scale)
    assert got.tolist() == _support_loop(E, y, margin, objective, res.embedding, scale)


def test_support_sub_problem_certifies_a_batch_of_seven():
    """A five-point toy in the plane (bench_certificates.py's N5R2 toy 8, whose
    "haus" bracket the relaxations leave open by about 2 %) and a far-away
    pair of a third class: the far pair is in no active relation, so the
    sub-problem on the incumbent's support (four of the toy's points) is
    solved with its angular search and certifies the batch; with the
    sub-problems and the LPs switched off the bracket stays open.  (The far
    pair keeps the support a proper subset whichever optimal point the local
    solvers land on, on every BLAS kernel.)"""
    rng = np.random.default_rng([20240501, 0])
    for _ in range(9):
        toy = rng.normal(size=(5, 2))
    E = np.vstack([toy, [[40.0, 0.0], [40.0, 1.0]]])
    y = np.array([0, 0, 0, 1, 1, 2, 2])
    res = nearest_ideal(E, y, margin=0.0, objective="haus", rng=0, warn_uncertified=False,
                        time_limit=60.0)
    off = nearest_ideal(E, y, margin=0.0, objective="haus", rng=0, warn_uncertified=False,
                        time_limit=60.0, max_subbatches=0, max_lps=0)
    assert res.certified and res.lower_source == "sub_batch_support"
    assert res.bounds["sub_batch_support"] <= res.value
    assert not off.certified and off.rel_gap > 1e-2
    assert "sub_batch_support" not in off.bounds
    idx = support_indices(E, y, 0.0, "haus", res.embedding, max(ref.diameter(E), 0.0))
    assert 3 <= idx.size <= 5 and idx.max() < 5
