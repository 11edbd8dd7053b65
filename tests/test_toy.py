"""The toy system (:mod:`isoapprox.toy`): helpers against brute force, the
certified constant, determinism, resuming, and what the default scenarios do."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import TheoryOptions, toy
from isoapprox.commands import toy_report
from isoapprox.exceptions import InvalidInputError
from isoapprox.geometry import pairwise_distances
from isoapprox.losses import is_triplet_separated
from isoapprox.metrics import isometric_error

from .conftest import BRACKET_RTOL

# .ci/kernels reruns the tests marked `reproducibility` (trajectories, outcomes,
# solver results) under other BLAS kernels and SIMD paths; pure helpers, user
# errors, formatting and the schedulers (workers, Dask: the serial rerun is) are not.

#: a configuration small enough for the default test run (one scenario,
#: a few evaluated steps, three random toys)
TINY = toy.SMOKE.replace(scenarios=toy.SMOKE.scenarios[:1], steps=30, n_logged=4,
                         n_history=10, n_random=3, n_starts=3)

#: the fields a run stores per record that change from run to run (timings)
TIMING = ("seconds",)


#: two runs of the same configuration agree to rounding: the solvers inside
#: :func:`isoapprox.nearest_ideal` may take another summation order on a
#: process's first call (seen: 1e-13 relative on d_haus); anything larger is a bug
RERUN_RTOL = 1e-9


def _strip(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


#: two certified values of one distance lie within the requested relative gap
#: ``tol`` above the same minimum, so they differ by at most that gap (a ratio of
#: two such values by at most twice it)
CERT_RTOL = 1.01 * TINY.tol

#: what must agree exactly (to rounding) between two runs of one configuration
EXACT = ("step", "embedding", "labels", "margin", "loss_max", "loss_mean", "diameter",
         "radius", "separated")


def _assert_runs_agree(rows_a, rows_b):
    """Two runs of one configuration measure the same thing.

    A certified distance agrees to rounding.  An uncertified one may not: which
    local optimum and which lower-bound methods a solve reaches depends on the
    path it took (a process's first call may sum in another order, and f* is only
    *a* minimiser), but both brackets enclose the same true value, so they overlap.
    f* itself, d_haus(E, f*) and ratio_fstar may differ when the minimiser is not
    unique (seen between serial and worker runs).
    """
    assert len(rows_a) == len(rows_b)
    for a, b in zip(rows_a, rows_b, strict=True):
        _assert_same({k: a[k] for k in EXACT if k in a}, {k: b[k] for k in EXACT if k in b})
        for name, cert in (("d_iso", "iso_certified"), ("d_haus", "haus_certified")):
            tol = BRACKET_RTOL * max(1.0, a["diameter"])
            assert max(a[f"{name}_lower"], b[f"{name}_lower"]) \
                <= min(a[f"{name}_upper"], b[f"{name}_upper"]) + tol, name
            if a[cert] and b[cert]:
                assert b[name] == pytest.approx(a[name], rel=CERT_RTOL, abs=tol), name
        assert (a["c"] is None) == (b["c"] is None)
        if a["c"] is not None:
            assert max(a["c_lower"], b["c_lower"]) <= min(a["c_upper"], b["c_upper"]) \
                * (1 + BRACKET_RTOL)
            if a["iso_certified"] and b["iso_certified"] and a["haus_certified"] \
                    and b["haus_certified"]:
                assert b["c"] == pytest.approx(a["c"], rel=2 * CERT_RTOL)


def _assert_same(a, b, path="records"):
    """Equal structure, equal ints/strings/bools/None, floats to RERUN_RTOL."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert b == pytest.approx(a, rel=RERUN_RTOL, abs=RERUN_RTOL), path
    else:
        assert type(a) is type(b) and a == b, path


@pytest.fixture(scope="module")
def tiny_run():
    return toy.run_toy(TINY)


# ---------------------------------------------------------------------------
# helpers against brute force
# ---------------------------------------------------------------------------


def _brute_heights(D_row: np.ndarray, N: int) -> list[float]:
    """Single-linkage heights by repeated search for the closest pair of clusters."""
    iu, ju = np.triu_indices(N, 1)
    full = np.zeros((N, N))
    full[iu, ju] = D_row
    full = full + full.T
    clusters = [{i} for i in range(N)]
    out = []
    while len(clusters) > 1:
        best = (math.inf, 0, 0)
        for a in range(len(clusters)):
            for b in range(a + 1, len(clusters)):
                d = min(full[i, j] for i in clusters[a] for j in clusters[b])
                best = min(best, (d, a, b))
        d, a, b = best
        out.append(d)
        clusters[a] |= clusters[b]
        del clusters[b]
    return out


def test_linkage_heights_match_brute_force_and_scipy(rng):
    from scipy.cluster.hierarchy import linkage

    for N in (2, 3, 5, 7):
        D = np.array([pairwise_distances(rng.normal(size=(N, 2)))[np.triu_indices(N, 1)]
                      for _ in range(6)])
        H = toy.linkage_heights(D)
        assert H.shape == (6, N - 1)
        for t in range(6):
            np.testing.assert_allclose(H[t], _brute_heights(D[t], N), rtol=0, atol=0)
            np.testing.assert_allclose(H[t], np.sort(linkage(D[t], "single")[:, 2]),
                                       rtol=0, atol=0)


def _brute_merges(D: np.ndarray, steps: np.ndarray, thr: float, release: float = 1.0):
    """Per pair: walk back from the end while the distance stays <= release * thr, then
    forward to the first step at most thr; None when the pair is apart at the end."""
    T, M = D.shape
    pair_steps = []
    for k in range(M):
        if D[T - 1, k] > thr:
            pair_steps.append(None)
            continue
        t = T - 1
        while t > 0 and D[t - 1, k] <= release * thr:
            t -= 1
        while D[t, k] > thr:
            t += 1
        pair_steps.append(int(steps[t]))
    return pair_steps


def _components(N, edges):
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    A = coo_matrix((np.ones(len(edges)), ([a for a, _ in edges], [b for _, b in edges])),
                   shape=(N, N))
    n, lab = connected_components(A, directed=False)
    return n, lab


@pytest.mark.parametrize("release", [1.0, 3.0])
def test_merge_events_match_brute_force(rng, release):
    N = 5
    M = N * (N - 1) // 2
    for _ in range(20):
        # distances that fall below the threshold at random times, with relapses
        # and with values between the threshold and its release level
        D = rng.uniform(0.0, 2.0, size=(12, M))
        D[rng.uniform(size=D.shape) < 0.3] = 0.0
        D[rng.uniform(size=D.shape) < 0.2] = 0.2
        steps = np.cumsum(rng.integers(1, 5, size=12))
        pair_steps, events = toy.merge_events(D, steps, 0.1, release=release)
        assert pair_steps == _brute_merges(D, steps, 0.1, release)
        # cluster counts: connected components of the pairs merged by each event step
        iu, ju = np.triu_indices(N, 1)
        order = toy.merge_order(pair_steps, events, N)
        assert len(order) == len(events)
        for (s, k), part in zip(events, order, strict=True):
            merged = [(iu[p], ju[p]) for p, ps in enumerate(pair_steps) if ps is not None
                      and ps <= s]
            n, lab = _components(N, merged)
            assert n == k
            groups = sorted(sorted(int(i) for i in np.flatnonzero(lab == c))
                            for c in range(n))
            assert part == [g for g in groups if len(g) > 1]
        assert all(a[0] < b[0] and a[1] > b[1] for a, b in zip(events[:-1], events[1:],
                                                                 strict=True))


@settings(deadline=None)
@given(N=st.integers(1, 9), data=st.data())
def test_linked_groups_match_transitive_closure(N, data):
    """Single-linkage groups against the transitive closure of the links (Warshall)."""
    M = N * (N - 1) // 2
    D = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.2, 1.0, math.nan]),
                                    min_size=M, max_size=M)), dtype=float)
    reach = np.eye(N, dtype=bool)
    iu, ju = np.triu_indices(N, 1)
    reach[iu, ju] = reach[ju, iu] = D <= 0.1
    for k in range(N):
        reach |= reach[:, [k]] & reach[[k], :]
    expected = sorted({tuple(int(j) for j in np.flatnonzero(row)) for row in reach})
    groups = toy.linked_groups(D, 0.1, N)
    assert groups == [list(g) for g in expected]
    assert all(type(i) is int for g in groups for i in g)


def test_hysteresis_keeps_the_merge_step_of_a_hovering_distance():
    # the distance dips below the threshold at step 2 and hovers around it after
    d = np.array([1.0, 0.5, 0.09, 0.11, 0.095, 0.12, 0.08, 0.05])
    steps = np.arange(len(d))
    assert toy.merge_events(d[:, None], steps, 0.1)[0] == [6]
    assert toy.merge_events(d[:, None], steps, 0.1, release=3.0)[0] == [2]
    with pytest.raises(InvalidInputError, match="release"):
        toy.merge_events(d[:, None], steps, 0.1, release=0.5)


def test_logged_steps_and_classify():
    s = toy.logged_steps(3000, 28)
    assert s[0] == 0 and s[-1] == 3000 and np.all(np.diff(s) > 0)
    assert toy.logged_steps(1, 5).tolist() == [0, 1]
    assert toy.classify_run(np.array([1.0, np.nan]), 0.0, collapse_rtol=1e-3) == "diverged"
    assert toy.classify_run(np.array([1.0, 0.5]), 0.2, collapse_rtol=1e-3) == "neither"
    # a collapse is a collapse even with zero loss (margin 0)
    assert toy.classify_run(np.array([1.0, 1e-4]), 0.0, collapse_rtol=1e-3) == "collapsed"


def _line_collapse(joins):
    """Five points on a line; point j+1 joins point j at step ``joins[j]`` (50 steps)."""
    N, T = 5, 50
    X = np.zeros((T, N))
    for t in range(T):
        x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
        for j, s in enumerate(joins):
            if t >= s:
                x[j + 1:] -= x[j + 1] - x[j]
        X[t] = x
    return np.array([np.abs(X[t][:, None] - X[t][None, :])[np.triu_indices(N, 1)]
                     for t in range(T)])


def test_step_distances_match_pairwise_distances(rng):
    E = rng.normal(size=(7, 5, 2)) * np.array([1.0, 1e-9, 1e3, 1, 1, 1, 1])[:, None, None]
    D = toy.step_distances(E)
    iu, ju = np.triu_indices(5, 1)
    for t in range(7):
        np.testing.assert_allclose(D[t], pairwise_distances(E[t])[iu, ju], rtol=1e-15, atol=0)


def test_merges_on_a_planted_sequential_collapse():
    # pairs merge one after another at steps 10, 20, 30, 40
    D = _line_collapse((10, 20, 30, 40))
    pair_steps, events = toy.merge_events(D, np.arange(50), 0.01, release=3.0)
    assert events == [(10, 4), (20, 3), (30, 2), (40, 1)]
    assert toy.is_sequential(events, 5)
    assert toy.merge_order(pair_steps, events, 5) == [
        [[0, 1]], [[0, 1, 2]], [[0, 1, 2, 3]], [[0, 1, 2, 3, 4]]]
    # two merges at once: not one at a time
    D2 = _line_collapse((10, 20, 20, 40))
    _, events2 = toy.merge_events(D2, np.arange(50), 0.01)
    assert events2 == [(10, 4), (20, 2), (40, 1)]
    assert not toy.is_sequential(events2, 5)
    # all at once
    D3 = D.copy()
    D3[10:] = 0.0
    assert not toy.is_sequential(toy.merge_events(D3, np.arange(50), 0.01)[1], 5)
    # not down to one cluster
    assert not toy.is_sequential([(10, 4), (20, 3), (30, 2)], 5)


def test_learning_rate_schedule():
    f = toy.learning_rate_schedule(100, decay_start=0.6, end=1e-4).tolist()
    assert len(f) == 100 and f[:61] == [1.0] * 61
    # the last update is one decay step above `end` (reached at step 100)
    assert f[99] == pytest.approx(1e-4 ** (39 / 40), rel=1e-12)
    assert all(a > b for a, b in zip(f[60:-1], f[61:], strict=True))
    # log-linear decay
    np.testing.assert_allclose(np.diff(np.log(f[60:])), math.log(1e-4) / 40, rtol=1e-12)
    assert toy.learning_rate_schedule(100, decay_start=1.0, end=1e-4).tolist() == [1.0] * 100
    for kw, needle in (({"decay_start": 1.5, "end": 0.1}, "decay_start"),
                       ({"decay_start": 0.5, "end": 0.0}, "end"),
                       ({"decay_start": 0.5, "end": 2.0}, "end")):
        with pytest.raises(InvalidInputError, match=needle):
            toy.learning_rate_schedule(10, **kw)
    for bad in ({"lr_decay_start": 1.5}, {"lr_end": 0.0}, {"lr_end": 2.0},
                {"merge_release": 0.5}, {"perturbation": -1e-12}, {"perturbation": 0.5}):
        with pytest.raises(InvalidInputError, match=next(iter(bad))):
            toy.ToyConfig(**bad)


# ---------------------------------------------------------------------------
# one embedding: certified brackets and independent feasible points
# ---------------------------------------------------------------------------


def _class_collapsed_ideal(y: np.ndarray, margin: float) -> np.ndarray:
    """A triplet-separated embedding: each class at one point of a line, spaced margin + 1."""
    return np.stack([(1.0 + margin) * y.astype(float), np.zeros(y.size)], axis=1)


@pytest.mark.reproducibility
@pytest.mark.parametrize("margin", [0.0, 1.0])
def test_evaluate_embedding_brackets_hold(rng, margin):
    y = np.array([0, 0, 0, 1, 1])
    for _ in range(2):
        E = rng.normal(size=(5, 2))
        rec = toy.evaluate_embedding(E, y, margin=margin, rng=rng,
                                     options=TheoryOptions(haus_max_points=None, n_starts=3))
        tol = BRACKET_RTOL * max(1.0, rec["diameter"])
        for name in ("d_iso", "d_haus", "d_haus_fstar", "theta"):
            assert rec[f"{name}_lower"] - tol <= rec[name] <= rec[f"{name}_upper"] + tol, name
        # c is a certified bracket that contains its value, never below the floor 1/2
        assert rec["c_lower"] <= rec["c"] <= rec["c_upper"]
        assert rec["c_upper"] >= 0.5 - BRACKET_RTOL
        assert rec["c"] == pytest.approx(rec["d_haus"] / rec["d_iso"], rel=1e-12)
        # f* is re-scored: it is triplet-separated and attains d_iso
        fstar = np.array(rec["fstar"])
        assert is_triplet_separated(fstar, y, margin=margin, atol=1e-7)
        assert isometric_error(E, fstar) == pytest.approx(rec["d_iso"], rel=1e-9, abs=tol)
        i, j = rec["iso_pair"]
        assert abs(np.linalg.norm(E[i] - E[j]) - np.linalg.norm(fstar[i] - fstar[j])) \
            == pytest.approx(rec["d_iso"], rel=1e-9, abs=tol)
        # lower ends hold against an independent ideal embedding g
        g = _class_collapsed_ideal(y, margin)
        assert is_triplet_separated(g, y, margin=margin)
        assert rec["d_iso_lower"] <= isometric_error(E, g) + tol
        shift = (g - E).mean(axis=0)   # the translation-only isometry E -> g
        assert rec["d_haus_lower"] <= np.linalg.norm(E + shift - g, axis=1).max() + tol
        if margin == 0.0:   # the collapsed embedding is ideal: d_iso <= diam, d_haus <= R
            assert rec["d_iso_lower"] <= rec["diameter"] + tol
            assert rec["d_haus_lower"] <= rec["radius"] + tol
        # statement 2's floor, checked on certified ends
        assert 0.5 * rec["d_iso_lower"] <= rec["d_haus_upper"] + tol
        assert rec["half_holds"] is not False


@pytest.mark.reproducibility
def test_evaluate_embedding_separated_has_no_constant():
    y = np.array([0, 0, 0, 1, 1])
    E = _class_collapsed_ideal(y, 1.0) + np.array([[0.0, 0.01], [0.0, -0.01], [0.0, 0.0],
                                                   [0.0, 0.01], [0.0, -0.01]])
    rec = toy.evaluate_embedding(E, y, margin=1.0, rng=0,
                                 options=TheoryOptions(haus_max_points=None, n_starts=2))
    assert rec["separated"] and rec["d_iso"] == 0.0
    assert rec["c"] is None and rec["c_lower"] is None and rec["ratio_fstar"] is None


def test_evaluate_embedding_errors():
    with pytest.raises(InvalidInputError, match="margin"):
        toy.evaluate_embedding(np.zeros((5, 2)), [0, 0, 0, 1, 1], margin=-1.0)
    with pytest.raises(InvalidInputError, match="triplet"):
        toy.evaluate_embedding(np.zeros((5, 2)), [0, 1, 2, 3, 4], margin=0.0)
    with pytest.raises(TypeError, match="`options` must be a TheoryOptions; got dict"):
        toy.evaluate_embedding(np.zeros((5, 2)), [0, 0, 0, 1, 1], margin=0.0,
                               options={"n_starts": 2})


def test_the_run_options_are_the_configuration_s():
    cfg = toy.ToyConfig(tol=1e-5, effort="quick", n_starts=3, time_limit=50.0)
    assert cfg.theory_options() == TheoryOptions(tol=1e-5, effort="quick", n_starts=3,
                                                 time_limit=50.0, haus_max_points=None)
    assert cfg.theory_options(n_starts=1).n_starts == 1
    assert toy.TOY_THEORY == TheoryOptions(haus_max_points=None)


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------


@pytest.mark.reproducibility
def test_run_structure_and_constant(tiny_run):
    out = tiny_run
    assert set(out) == {"figures", "inputs", "random", "random_summary", "scenarios",
                        "seconds", "trajectory"}
    assert np.asarray(out["inputs"]).shape == (5, 2)
    (summary,) = out["scenarios"]
    assert summary["name"] == "collapse" and summary["steps_run"] == TINY.steps
    steps = [r["step"] for r in out["trajectory"]]
    assert steps == sorted(steps) and steps[0] == 0 and steps[-1] == TINY.steps
    assert len(out["random"]) == TINY.n_random
    for r in out["trajectory"] + out["random"]:
        if r["c"] is not None:
            assert r["c_lower"] <= r["c"] <= r["c_upper"]
            assert r["c_upper"] >= 0.5 - BRACKET_RTOL
    # the summaries are the statistics of the records (measured, never set)
    cs = [r["c"] for r in out["trajectory"] if r["c"] is not None]
    assert summary["c_max"] == max(cs) and summary["c_min"] == min(cs)
    rc = [r["c"] for r in out["random"] if r["c"] is not None]
    rs = out["random_summary"]["all"]
    assert rs["c"]["min"] == min(rc) and rs["c"]["max"] == max(rc)
    assert rs["c"]["median"] == pytest.approx(float(np.median(rc)), rel=1e-15)
    assert rs["share_c_at_most_paper"] == sum(c <= toy.PAPER_C for c in rc) / len(rc)
    # the embeddings stored are the trained ones
    tr = toy.train_scenario(TINY, TINY.scenarios[0])
    for r in out["trajectory"]:
        np.testing.assert_array_equal(np.array(r["embedding"]), tr["embeddings"][r["step"]])


@pytest.mark.reproducibility
def test_run_is_deterministic(tiny_run):
    again = toy.run_toy(TINY)
    _assert_runs_agree(again["trajectory"], tiny_run["trajectory"])
    _assert_runs_agree(again["random"], tiny_run["random"])
    # training and everything derived from it alone is exactly reproducible
    derived = ("outcome", "sequential", "merge_events", "pair_merge_steps", "snapshot_steps",
               "snapshot_clusters", "history", "initial_diameter", "final_diameter",
               "final_loss_mean", "final_loss_max", "n_evaluated")
    for s1, s2 in zip(again["scenarios"], tiny_run["scenarios"], strict=True):
        assert {k: s1[k] for k in derived} == {k: s2[k] for k in derived}


# not rerun under other kernels: that a resumed run equals a fresh one follows from the
# journal (kernel-independent) and determinism (test_run_is_deterministic, rerun)
def test_journal_resumes_to_the_same_result(tiny_run, tmp_path):
    path = tmp_path / "toy.journal.partial"
    full = toy.run_toy(TINY, journal=path)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "header"
    n_eval = len(lines) - 1
    assert n_eval == len(full["trajectory"]) + len(full["random"])
    # interrupted after half of the evaluations, with a torn last line
    path.write_text("\n".join(lines[: 1 + n_eval // 2]) + "\n" + lines[-1][:20])
    resumed = toy.run_toy(TINY, journal=path)
    _assert_runs_agree(resumed["trajectory"], tiny_run["trajectory"])
    _assert_runs_agree(resumed["random"], tiny_run["random"])
    # the records read back from the journal are exactly the ones it was given
    assert _strip(resumed["random"]) == _strip(full["random"])
    assert len(path.read_text().splitlines()) == 1 + n_eval


def test_journal_of_another_configuration_is_refused(tmp_path):
    path = tmp_path / "j.partial"
    cfg = TINY.replace(n_random=0, steps=3, n_logged=2)
    toy.run_toy(cfg, journal=path)
    with pytest.raises(InvalidInputError, match="another configuration"):
        toy.run_toy(cfg.replace(steps=4), journal=path)
    path.write_text('{"kind": "eval", "key": [0, 0, 0], "record": {}}\n')
    with pytest.raises(InvalidInputError, match="not a journal of a toy run"):
        toy.run_toy(cfg, journal=path)


def test_write_results_contents(tiny_run, tmp_path):
    from isoapprox.io import read_results

    path = toy_report.write_toy_results(tmp_path / "toy.json", TINY, tiny_run, jobs=1)
    doc = read_results(path)
    assert doc["experiment"] == "toy" and doc["seed"] == TINY.seed
    assert doc["config"]["steps"] == TINY.steps
    assert doc["config"]["scenarios"][0]["name"] == "collapse"
    assert doc["provenance"]["numpy"] == np.__version__
    assert {"isoapprox", "python"} <= set(doc["provenance"])
    assert len(doc["records"]) == len(tiny_run["trajectory"]) + len(tiny_run["random"])
    assert doc["random_summary"]["paper_c"] == toy.PAPER_C
    assert (tmp_path / "toy.csv").stat().st_size > 0
    text = toy_report.format_summary(doc)
    assert f"{tiny_run['scenarios'][0]['c_max']:.3f}" in text


def test_config_errors():
    with pytest.raises(InvalidInputError, match="steps"):
        toy.ToyConfig(steps=0)
    with pytest.raises(InvalidInputError, match="distinct names"):
        toy.ToyConfig(scenarios=toy.DEFAULT_SCENARIOS[:1] * 2)
    with pytest.raises(InvalidInputError, match="n_points = 5"):
        toy.ToyConfig(scenarios=(toy.Scenario("a", (0, 0, 1, 1), 1.0, 0.1, 0),))
    with pytest.raises(InvalidInputError, match="activation"):
        toy.ToyConfig(activation="gelu")
    with pytest.raises(InvalidInputError, match="random_layouts"):
        toy.ToyConfig(random_layouts=((0, 0, 1),))
    with pytest.raises(InvalidInputError, match="at least one Scenario"):
        toy.ToyConfig(scenarios=())
    with pytest.raises(TypeError, match="ToyConfig"):
        toy.run_toy({"steps": 3})
    cfg = toy.ToyConfig().with_margin(0.5)
    assert [s.margin for s in cfg.scenarios] == [0.5, 0.5, 0.0]


@pytest.mark.reproducibility
def test_default_scenarios_do_what_they_say():
    """Training only (cheap): the run called 'collapse' collapses one point after
    another, 'separate' reaches zero loss with a positive diameter, 'margin0'
    collapses (robustness to perturbations: tests/test_toy_robust.py)."""
    cfg = toy.ToyConfig()
    runs = {sc.name: toy.analyse_training(cfg, sc, toy.train_scenario(cfg, sc))
            for sc in cfg.scenarios}
    assert {n: r["outcome"] for n, r in runs.items()} == {
        "collapse": "collapsed", "separate": "separated", "margin0": "collapsed"}
    assert runs["collapse"]["sequential"]
    assert runs["separate"]["zero_loss_step"] is not None
    assert runs["margin0"]["zero_loss_step"] is None  # margin 0: undefined


@pytest.mark.slow
def test_worker_processes_give_the_same_result(tiny_run):
    """Two spawned workers (seconds of start-up, hence slow) against the serial run."""
    par = toy.run_toy(TINY, jobs=2)
    _assert_runs_agree(par["trajectory"], tiny_run["trajectory"])
    _assert_runs_agree(par["random"], tiny_run["random"])


def test_a_dask_cluster_gives_the_same_result(tiny_run):
    """``--scheduler``: the evaluations on a Dask cluster (in-process here) agree too."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        res = toy.run_toy(TINY, scheduler=cluster.scheduler_address)
    _assert_runs_agree(res["trajectory"], tiny_run["trajectory"])
    _assert_runs_agree(res["random"], tiny_run["random"])


def test_numba_cache_saves_are_locked(tmp_path):
    """issue 35: processes compile at once (the toy's warm-up, workers, pytest-xdist): every
    numba cache save of a process that imports isoapprox.kernels holds its folder's lock
    (numba's own index update is not atomic), and saves and loads still round-trip."""
    from numba.core.caching import IndexDataCacheFile

    from isoapprox.kernels import cache

    assert cache.LOCKED and cache.lock_cache_saves()  # installed at import, idempotent
    assert IndexDataCacheFile.save.__name__ == "locked_save"
    store = IndexDataCacheFile(str(tmp_path), "kernel", ("stamp", 1))
    store.save("a", ("machine code", 1))
    store.save("b", ("machine code", 2))
    assert store.load("a") == ("machine code", 1) and store.load("b") == ("machine code", 2)
    assert (tmp_path / ".isoapprox-save.lock").is_file()


def test_the_cache_lock_is_not_followed_through_a_symlink(tmp_path):
    """A symlink planted as the lock file is refused (ELOOP), never followed to write elsewhere."""
    from numba.core.caching import IndexDataCacheFile

    elsewhere = tmp_path / "elsewhere"
    (tmp_path / ".isoapprox-save.lock").symlink_to(elsewhere)
    store = IndexDataCacheFile(str(tmp_path), "kernel", ("stamp", 1))
    with pytest.raises(OSError):
        store.save("a", ("machine code", 1))
    assert not elsewhere.exists()


def test_linked_groups_names_a_wrong_number_of_distances():
    with pytest.raises(InvalidInputError, match=r"`distances` must hold the n \(n - 1\) / 2 = 3 "
                                                r".*`n_points` = 3 points; got shape \(2,\)"):
        toy.linked_groups(np.array([0.05, 1.0]), 0.1, 3)
