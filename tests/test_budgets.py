"""Work budgets: the rule, the presets, the safety net, and the same answer on a busy machine."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

import isoapprox as ia
from isoapprox.exceptions import InvalidInputError
from isoapprox.ideal import EFFORTS, Budget, resolve_budget
from isoapprox.ideal._budget import MIN_STARTS, PRESETS, START_POINTS, local_starts


def test_presets_are_ordered_by_work():
    q, d, t = (PRESETS[e] for e in EFFORTS)
    for field in ("n_starts", "max_iter", "max_subbatches", "max_nodes", "max_lps"):
        assert getattr(q, field) < getattr(d, field) < getattr(t, field), field
    # the default preset is the budget of earlier releases
    assert d == Budget(n_starts=24, max_iter=200, max_subbatches=8, max_nodes=20_000,
                       max_lps=4_000)


def test_resolve_budget_overrides_and_errors():
    b = resolve_budget("quick", n_starts=9, max_lps=None)
    assert b.n_starts == 9 and b.max_lps == PRESETS["quick"].max_lps
    with pytest.raises(InvalidInputError, match="`effort` must be one of"):
        resolve_budget("fast")
    with pytest.raises(InvalidInputError, match="`max_nodes` must be >= 0"):
        resolve_budget(max_nodes=-1)
    with pytest.raises(TypeError, match="`n_starts` must be an integer"):
        resolve_budget(n_starts=2.5)
    with pytest.raises(InvalidInputError, match="`effort` must be one of"):
        ia.nearest_ideal([[0.0], [1.0], [3.0]], [0, 0, 1], effort="fastest")


@pytest.mark.parametrize("n_starts", [1, 3, 4, 24, 96])
def test_local_starts_rule(n_starts):
    counts = [local_starts(n_starts, N) for N in range(3, 2000, 7)]
    # never more starts for more points
    assert all(c1 >= c2 for c1, c2 in zip(counts, counts[1:], strict=False))
    for N in (3, 5, START_POINTS):
        assert local_starts(n_starts, N) == n_starts
    for N in (START_POINTS + 1, 64, 10**6):
        got = local_starts(n_starts, N)
        assert got == max(-(-n_starts * START_POINTS // N), min(n_starts, MIN_STARTS))
        assert min(n_starts, MIN_STARTS) <= got <= n_starts


def test_result_reports_its_budget():
    E = [[0.0, 0.0], [2.0, 0.0], [1.0, 0.0]]
    r = ia.nearest_ideal(E, [0, 0, 1], effort="thorough", max_lps=7)
    assert r.budget == {**PRESETS["thorough"].to_dict(), "max_lps": 7}
    assert r.reproducible and r.to_dict()["budget"] == r.budget


def _open_planar_haus():
    """An eight-point planar "haus" instance the quick budget leaves open."""
    rng = np.random.default_rng(20240501)
    E = rng.normal(size=(8, 2))
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    return E, y


def test_safety_net_marks_the_result_not_reproducible():
    E, y = _open_planar_haus()
    r = ia.nearest_ideal(E, y, margin=1.0, objective="haus", rng=0, time_limit=1e-9,
                         warn_uncertified=False)
    assert not r.reproducible
    assert r.status in ("time_limit", "certified")
    # the bracket still holds: the embedding is feasible and re-scored
    assert r.slack >= 0.0 and r.lower <= r.upper
    quiet = ia.nearest_ideal(E, y, margin=1.0, objective="haus", rng=0, effort="quick",
                             warn_uncertified=False)
    assert quiet.reproducible and quiet.status in ("certified", "exhausted")


def _solves():
    """A few solves whose work the budgets decide: open and certified, both objectives,
    the plane's angular search, sub-batches of a 16-point batch."""
    out = []
    E, y = _open_planar_haus()
    for objective in ("iso", "haus"):
        out.append(ia.nearest_ideal(E, y, margin=1.0, objective=objective, rng=0,
                                    effort="quick", warn_uncertified=False))
    rng = np.random.default_rng(7)
    T = rng.normal(size=(5, 2))
    out.append(ia.nearest_ideal(T, [0, 0, 1, 1, 2], margin=1.0, objective="haus", rng=1,
                                warn_uncertified=False))
    B = rng.normal(size=(16, 3))
    B /= np.linalg.norm(B, axis=1, keepdims=True)
    out.append(ia.nearest_ideal(B, np.arange(16) % 4, margin=0.3, objective="haus", rng=2,
                                effort="quick", warn_uncertified=False))
    return out


def _key(r):
    return (r.value, r.lower, r.upper, r.certified, r.status, r.lower_source, r.solver,
            r.kind, r.n_starts, r.n_iter, r.reproducible, sorted(r.bounds.items()),
            np.asarray(r.embedding).tobytes())


def test_same_answer_on_a_busy_machine():
    """The same solves alone and beside two processes that keep every core busy:
    bit for bit the same values, brackets, flags, statuses and embeddings."""
    quiet = [_key(r) for r in _solves()]
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(2)]
    try:
        time.sleep(0.2)
        loaded = [_key(r) for r in _solves()]
    finally:
        for p in busy:
            p.kill()
        for p in busy:
            p.wait()
    assert loaded == quiet
    assert all(k[10] for k in quiet)  # reproducible: no safety net fired


def test_same_answer_with_one_or_two_threads():
    import numba

    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = [_key(r) for r in _solves()[:2]]
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = [_key(r) for r in _solves()[:2]]
    finally:
        numba.set_num_threads(before)
    assert one == two
