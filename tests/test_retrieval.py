"""Leave-one-out retrieval metrics against an obviously-correct brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from isoapprox import InvalidInputError, retrieval_metrics

from .conftest import KERNEL_ATOL, KERNEL_RTOL, examples


def brute_retrieval(E, y):
    """Per query: the full squared-distance matrix, a lexsort (distance, other class
    first, index), the R first; the three metrics as pytorch-metric-learning defines them."""
    E = np.asarray(E, dtype=np.float64)
    y = np.asarray(y)
    N = len(y)
    D = ((E[:, None, :] - E[None, :, :]) ** 2).sum(-1)
    hits, rps, maps = [], [], []
    for q in range(N):
        R = int(np.sum(y == y[q])) - 1
        if R == 0:
            continue
        others = np.array([j for j in range(N) if j != q])
        same = (y[others] == y[q]).astype(int)
        order = others[np.lexsort((others, same, D[q, others]))][:R]
        rel = y[order] == y[q]
        hits.append(float(rel[0]))
        rps.append(rel.mean())
        prec = np.cumsum(rel) / np.arange(1, R + 1)
        maps.append(float(np.sum(prec * rel)) / R)
    if not hits:
        return math.nan, math.nan, math.nan, 0
    return np.mean(hits), np.mean(rps), np.mean(maps), len(hits)


def _close(a, b):
    return math.isclose(a, b, rel_tol=KERNEL_RTOL, abs_tol=KERNEL_ATOL) or (
        math.isnan(a) and math.isnan(b))


def _check(E, y):
    m = retrieval_metrics(E, y, max_queries=None)
    r1, rp, mapr, q = brute_retrieval(E, y)
    assert m.n_queries == q and not m.sampled
    assert _close(m.recall_at_1, r1) and _close(m.r_precision, rp) and _close(m.map_at_r, mapr)
    return m


@pytest.mark.parametrize("N, n, P", [(2, 1, 1), (5, 1, 2), (40, 3, 4), (60, 8, 10), (33, 2, 3)])
def test_against_bruteforce_random(N, n, P):
    rng = np.random.default_rng(N * 100 + n)
    E = rng.normal(size=(N, n))
    y = rng.integers(0, P, N)
    _check(E, y)


def test_corner_cases():
    # duplicates, all points equal, one class, singletons, extreme scales
    rng = np.random.default_rng(1)
    E = rng.integers(0, 3, size=(30, 2)).astype(float)  # many exact ties
    y = rng.integers(0, 3, 30)
    _check(E, y)
    same = np.zeros((12, 4))
    m = _check(same, np.repeat(np.arange(3), 4))
    assert m.recall_at_1 == 0.0 and m.r_precision == 0.0  # a tie is never a retrieval
    m = _check(rng.normal(size=(7, 3)), np.zeros(7, dtype=int))
    assert m.recall_at_1 == 1.0 and m.map_at_r == 1.0  # one class: every neighbour its own
    m = _check(rng.normal(size=(4, 2)), [0, 1, 2, 3])  # all singletons: no query
    assert m.n_queries == 0 and math.isnan(m.r_precision)
    X = rng.normal(size=(20, 3))
    yy = rng.integers(0, 4, 20)
    base = retrieval_metrics(X, yy)
    for scale in (1e-200, 1e200):
        m = retrieval_metrics(X * scale, yy)
        assert (m.recall_at_1, m.r_precision, m.map_at_r) == (
            base.recall_at_1, base.r_precision, base.map_at_r)


def test_singletons_are_gallery_not_queries():
    E = [[0.0], [0.1], [0.05], [5.0]]
    y = [0, 0, 1, 2]  # classes 1 and 2 are singletons
    m = _check(E, y)
    assert m.n_queries == 2 and m.n_eligible == 2
    # each query of class 0 has R = 1; its nearest point is 0.05 (class 1): a miss
    assert m.recall_at_1 == 0.0


def test_separated_classes_are_perfect():
    rng = np.random.default_rng(2)
    y = np.repeat(np.arange(5), 6)
    E = 20.0 * rng.normal(size=(5, 4))[y] + rng.normal(size=(30, 4))
    m = _check(E, y)
    assert m.recall_at_1 == m.r_precision == m.map_at_r == 1.0
    assert m.structure_score() == 1.0


def test_sampling_is_seeded_and_reported():
    rng = np.random.default_rng(3)
    E = rng.normal(size=(200, 4))
    y = rng.integers(0, 5, 200)
    a = retrieval_metrics(E, y, max_queries=50, rng=7)
    b = retrieval_metrics(E, y, max_queries=50, rng=7)
    assert a.sampled and a.n_queries == 50 and a.n_eligible == 200
    assert (a.recall_at_1, a.r_precision, a.map_at_r) == (b.recall_at_1, b.r_precision,
                                                          b.map_at_r)
    full = retrieval_metrics(E, y, max_queries=200)
    assert not full.sampled and full.n_queries == 200


def test_structure_score_chance_and_perfect():
    rng = np.random.default_rng(4)
    y = np.repeat(np.arange(8), 50)
    mixed = retrieval_metrics(rng.normal(size=(400, 8)), y)
    assert abs(mixed.structure_score()) < 0.1
    assert 0.0 < mixed.r_precision < 0.25


def test_errors():
    with pytest.raises(InvalidInputError, match="max_queries"):
        retrieval_metrics([[0.0], [1.0]], [0, 0], max_queries=0)
    with pytest.raises(TypeError, match="max_queries"):
        retrieval_metrics([[0.0], [1.0]], [0, 0], max_queries=1.5)
    with pytest.raises(InvalidInputError, match="y"):
        retrieval_metrics([[0.0], [1.0]], [0, 0, 1])


_points = hnp.arrays(np.float64, st.tuples(st.integers(2, 24), st.integers(1, 3)),
                     elements=st.integers(-3, 3).map(float))


@settings(deadline=None, max_examples=examples(60))
@given(E=_points, seed=st.integers(0, 2**16), P=st.integers(1, 4))
def test_property_bruteforce_with_ties(E, seed, P):
    y = np.random.default_rng(seed).integers(0, P, E.shape[0])
    _check(E, y)


@settings(deadline=None, max_examples=examples(30))
@given(seed=st.integers(0, 2**16), N=st.integers(4, 30), n=st.integers(1, 4))
def test_property_invariances(seed, N, n):
    """Permuting the points and moving them rigidly (no ties: continuous points) keep
    the metrics; bounds: 0 <= MAP@R <= R-Precision... and Recall@1 in [0, 1]."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(N, n))
    y = rng.integers(0, 3, N)
    m = retrieval_metrics(E, y)
    perm = rng.permutation(N)
    mp = retrieval_metrics(E[perm], y[perm])
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    mq = retrieval_metrics(E @ Q + 3.0, y)
    for other in (mp, mq):
        assert _close(other.recall_at_1, m.recall_at_1)
        assert math.isclose(other.r_precision, m.r_precision, rel_tol=1e-9, abs_tol=1e-12) or (
            math.isnan(m.r_precision))
        assert math.isclose(other.map_at_r, m.map_at_r, rel_tol=1e-9, abs_tol=1e-12) or (
            math.isnan(m.map_at_r))
    if m.n_queries:
        assert 0.0 <= m.map_at_r <= m.r_precision + 1e-12 <= 1.0 + 1e-12
        assert 0.0 <= m.recall_at_1 <= 1.0
