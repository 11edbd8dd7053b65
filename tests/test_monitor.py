"""CollapseMonitor: statistics, signatures and theory in a training loop; its log; --history."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isoapprox
from isoapprox import (
    CollapseMonitor,
    CollapseWarning,
    InvalidInputError,
    MonitorHistory,
    MonitorWarning,
    SolverError,
    read_history,
)
from isoapprox import monitor as monitor_module
from isoapprox.cli import main as cli_main
from isoapprox.diagnostics import collapse_statistics, detect_signatures, quick_statistics
from isoapprox.ideal import resolve_budget
from isoapprox.losses import separation_report
from isoapprox.runs import append_jsonl, read_jsonl, repair_jsonl
from isoapprox.theory import TheoryOptions
from isoapprox.train import train

from .conftest import BRACKET_RTOL, examples

ROOT = Path(__file__).resolve().parents[1]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _batch(rng, P=4, K=4, n=3, spread=0.1):
    y = np.repeat(np.arange(P), K)
    E = 3.0 * rng.normal(size=(P, n))[y] + spread * rng.normal(size=(P * K, n))
    return E, y


# --- the statistics of one sweep -------------------------------------------------------------


@pytest.mark.parametrize("seed,N,n,P", [(0, 40, 3, 6), (1, 64, 8, 16), (2, 7, 2, 3)])
def test_quick_statistics_equal_the_full_ones(seed, N, n, P):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, P, N)
    y[:2] = 0
    y[2] = 1
    E = rng.normal(size=(N, n)) * 10.0 ** rng.uniform(-3, 3)
    q = quick_statistics(E, y, margin=0.2)
    c = collapse_statistics(E, y, margin=0.2)
    for k in ("diameter", "rms_norm", "centroid_norm", "effective_rank", "batch_hard_mean",
              "batch_hard_max", "soft_margin_mean", "n_anchors", "n_triplets", "n_active",
              "n_violated", "worst_slack", "max_class_diameter", "min_class_gap", "n_pairs",
              "active_fraction", "violated_fraction"):
        assert getattr(q, k) == getattr(c, k), k
    assert q.min_distance == c.distances.min
    assert q.class_diameter.tolist() == c.classes.diameter.tolist()
    assert q.class_gap.tolist() == c.classes.min_inter.tolist()
    for loss in (None, 0.2):
        assert ([s.to_dict() for s in detect_signatures(q, loss=loss)]
                == [s.to_dict() for s in detect_signatures(c, loss=loss)])


def test_quick_statistics_brute_force(rng):
    E, y = _batch(rng, P=3, K=3, n=2, spread=1.0)
    q = quick_statistics(E, y, margin=0.5)
    D = np.sqrt(((E[:, None, :] - E[None, :, :]) ** 2).sum(-1))
    same = y[:, None] == y[None, :]
    assert math.isclose(q.diameter, D.max(), rel_tol=1e-12)
    for c in range(3):
        m = y == c
        assert math.isclose(q.class_diameter[c], D[np.ix_(m, m)].max(), rel_tol=1e-12)
        assert math.isclose(q.class_gap[c], D[np.ix_(m, ~m)].min(), rel_tol=1e-12)
    hp = np.where(same & ~np.eye(9, dtype=bool), D, -np.inf).max(1)
    hn = np.where(~same, D, np.inf).min(1)
    assert math.isclose(q.batch_hard_mean, np.maximum(hp - hn + 0.5, 0).mean(), rel_tol=1e-12,
                        abs_tol=1e-12)


@pytest.mark.property
@settings(max_examples=examples(25))
@given(seed=st.integers(0, 2**32 - 1), N=st.integers(3, 30), n=st.integers(1, 5),
       P=st.integers(2, 5), margin=st.sampled_from([0.0, 0.2, 1.0]))
def test_quick_statistics_invariant_under_permutation_and_translation(seed, N, n, P, margin):
    rng = np.random.default_rng(seed)
    y = np.concatenate([[0, 0, 1], rng.integers(0, P, N - 3)])
    E = rng.normal(size=(N, n))
    a = quick_statistics(E, y, margin=margin)
    perm = rng.permutation(N)
    b = quick_statistics(E[perm] + rng.normal(size=n), y[perm], margin=margin)
    tol = dict(rel_tol=1e-9, abs_tol=1e-9)
    for k in ("diameter", "batch_hard_mean", "batch_hard_max", "soft_margin_mean",
              "effective_rank", "max_class_diameter", "min_class_gap", "min_distance"):
        assert math.isclose(getattr(a, k), getattr(b, k), **tol), k
    assert np.allclose(a.class_gap, b.class_gap, rtol=1e-9, atol=1e-9)
    assert a.n_triplets == b.n_triplets and a.n_anchors == b.n_anchors


# --- inside the numpy trainer ------------------------------------------------------------------


@pytest.fixture(scope="module")
def collapsing_run(tmp_path_factory):
    """The numpy example's collapsing run (tanh MLP, margin 0.2, 16 classes in R^2)."""
    log = tmp_path_factory.mktemp("collapse") / "run.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mon = _example("monitor_numpy").run(log, steps=300, theory_every=10)
    return mon, log, caught


def test_collapsing_run_warns_with_the_step_and_logs(collapsing_run):
    mon, log, caught = collapsing_run
    onsets = [str(w.message) for w in caught if issubclass(w.category, CollapseWarning)]
    steps = {m.group(2): int(m.group(1)) for w in onsets
             if (m := re.search(r"step (\d+): collapse signature '(\w+)' started", w))}
    # the onset moves with the BLAS kernel (steps ~100-200, examples/make_stuck_at_margin.py)
    assert set(steps) >= {"all_distances_small", "stuck_at_margin"}
    assert all(50 <= s <= 300 for s in steps.values())
    h = read_history(log)
    assert len(h.headers) == 1 and h.headers[0]["format"] == "isoapprox-monitor"
    assert {"numpy", "blas"} <= set(h.headers[0]["provenance"])
    assert h.headers[0]["config"]["margin"] == 0.2
    assert len(h.updates) == 31 and not h.bad_batches  # logged every 10 steps, 0..300
    assert h.steps().tolist() == list(range(0, 301, 10))
    ivs = {iv["signature"]: iv for iv in h.signature_intervals()}
    assert ivs["all_distances_small"]["start"] == steps["all_distances_small"]
    assert ivs["all_distances_small"]["end"] is None
    last = h.updates[-1]
    assert last["stats"]["diameter"] < 0.01 * 0.2 * 5
    assert last["stats"]["collapsed_share"] == 1.0
    assert abs(last["loss"] - 0.2) < 0.01
    # the theory every 10th call and where a collapse signature starts
    th = h.theory_updates()
    calls = [u["call"] for u in th]
    assert {0, 10, 20, 30} <= set(calls)
    assert all(u["onsets"] for u in th if u["call"] % 10)
    for u in th:
        t = u["theory"]
        assert t["d_iso_lower"] <= t["d_iso"] == t["d_iso_upper"]
        assert t["d_haus_lower"] <= t["d_haus"] == t["d_haus_upper"]
        assert isinstance(t["d_iso_certified"], bool) and t["evaluated"] == 16
        assert t["batch_points"] == 64 and t["subsampled"] is True
    # collapsed: 4 classes of the subsample in R^2 sit D*(4, 2, 0.2) = 0.2 sqrt 2 from F_TS
    assert th[-1]["theory"]["d_iso_lower"] > 0.27
    # the in-memory records are the log's
    assert mon.history().updates == h.updates


def test_healthy_run_does_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CollapseWarning)
        warnings.simplefilter("error", MonitorWarning)
        mon = _example("monitor_numpy").run(tmp_path / "h.jsonl", healthy=True, steps=300,
                                            theory_every=0)
    h = read_history(tmp_path / "h.jsonl")
    assert not {iv["signature"] for iv in h.signature_intervals()} & set(
        monitor_module.WARN_SIGNATURES)
    assert h.updates[-1]["stats"]["diameter"] > 0.5
    assert h.updates[-1]["stats"]["collapsed_share"] == 0.0
    assert not h.theory_updates() and mon.calls == 31


def test_trainer_callback_in_a_test_loop(tmp_path):
    """The monitor as a trainer callback, updates at every logged step."""
    cfg = dataclasses.replace(_example("monitor_numpy").HEALTHY, steps=20, log_every=5)
    mon = CollapseMonitor(margin=cfg.margin, theory_every=2, log=tmp_path / "t.jsonl")
    res = train(cfg, seed=1, callbacks=[lambda s: mon.update(s.step, s.batch_E, s.batch_y,
                                                             loss=s.loss.value) and None])
    assert [r["step"] for r in res.history] == [u["step"] for u in mon.history().updates]
    assert len(mon.history().theory_updates()) == 3


# --- bad batches ---------------------------------------------------------------------------------


def test_bad_batches_are_logged_and_warned_once(tmp_path, rng):
    E, y = _batch(rng)
    mon = CollapseMonitor(margin=0.2, log=tmp_path / "b.jsonl", theory_every=0)
    nan = E.copy()
    nan[2, 1] = np.nan
    bad = [
        (1, nan, y, "non_finite"),
        (2, np.where(np.isfinite(nan), nan, np.inf), y, "non_finite"),
        (3, E, np.zeros(len(y)), "labels"),                 # a single class
        (4, E[:, 0], y, "shape"),                             # 1-D embeddings
        (5, E, y[:-1], "shape"),                              # labels of the wrong length
        (6, np.array([["a", "b"]] * 16), y, "type"),
        (7, E, np.arange(16), "labels"),                      # all singletons: no triplet
    ]
    with pytest.warns(MonitorWarning) as caught:
        for step, e, lab, _ in bad:
            u = mon.update(step, e, lab)
            assert not u.ok and u.statistics is None
    reasons = [re.search(r"bad batch \((\w+)\)", str(w.message)).group(1) for w in caught]
    assert sorted(reasons) == ["labels", "non_finite", "shape", "type"]  # once per reason
    assert "step 1: bad batch (non_finite)" in str(caught[0].message)
    # the loop goes on: float32 is fine (evaluated in float64)
    u = mon.update(8, E.astype(np.float32), y, loss=0.25)
    assert u.ok and u.record["dtype"] == "float32"
    want = quick_statistics(E.astype(np.float32).astype(np.float64), y, margin=0.2)
    assert u.statistics.diameter == want.diameter
    h = read_history(tmp_path / "b.jsonl")
    assert [(b["step"], b["reason"]) for b in h.bad_batches] == [(s, r) for s, _, _, r in bad]
    assert "NaN or infinite" in h.bad_batches[0]["message"]
    assert h.updates[0]["step"] == 8 and h.updates[0]["loss"] == 0.25
    assert h.summary()["bad_batch_reasons"]["shape"] == {"count": 2, "first_step": 4}


def test_bad_loss_and_step_are_problems_not_failures(rng):
    E, y = _batch(rng)
    mon = CollapseMonitor(margin=0.2, theory_every=0)
    with pytest.warns(MonitorWarning, match="`loss` must be finite"):
        u = mon.update(0, E, y, loss=float("nan"))
    assert u.ok and u.record["loss"] is None
    assert u.record["problems"][0]["reason"] == "loss"
    with pytest.warns(MonitorWarning, match="`step` must be an integer >= 0"):
        u = mon.update(-3, E, y)
    assert u.ok and u.step is None and u.record["step"] is None
    u = mon.update(np.int64(4), E, y, loss=np.float32(0.5))
    assert u.step == 4 and u.record["loss"] == 0.5 and "problems" not in u.record


def test_strict_mode_raises(rng):
    E, y = _batch(rng)
    mon = CollapseMonitor(margin=0.2, theory_every=0, strict=True)
    nan = E.copy()
    nan[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="`embeddings` must be finite"):
        mon.update(0, nan, y)
    with pytest.raises(InvalidInputError, match="at least two classes"):
        mon.update(1, E, np.zeros(len(y)))
    with pytest.raises(InvalidInputError, match="2-D array of shape"):
        mon.update(2, E[:, 0], y)
    with pytest.raises(TypeError, match="array of real numbers"):
        mon.update(3, np.array([["a"]] * 16), y)
    with pytest.raises(InvalidInputError, match="`loss` must be finite"):
        mon.update(4, E, y, loss=math.inf)
    with pytest.raises(TypeError, match="`step` must be an integer"):
        mon.update(1.5, E, y)
    assert mon.update(5, E, y).ok


# --- signatures and theory ------------------------------------------------------------------------


def test_onsets_ends_and_collapsed_share(rng):
    E, y = _batch(rng, P=4, K=4, n=3, spread=0.5)
    mon = CollapseMonitor(margin=0.2, theory_every=0, k_on=1, k_off=1)  # no hysteresis
    assert mon.update(0, E, y).holding == ()
    # the whole batch at one point, far from the origin, the classes mixed
    tiny = 5.0 + 1e-6 * rng.normal(size=E.shape)
    with pytest.warns(CollapseWarning) as caught:
        u = mon.update(1, tiny, y, loss=0.2)
    assert sorted(re.search(r"step 1: collapse signature '(\w+)' started", str(w.message))[1]
                  for w in caught) == ["all_distances_small", "shrinking", "stuck_at_margin"]
    assert {"all_distances_small", "stuck_at_margin"} <= set(u.onsets)
    assert u.record["stats"]["collapsed_share"] == 1.0  # implied by all_distances_small
    u = mon.update(2, E, y)
    assert set(u.ends) >= {"all_distances_small"} and not u.onsets
    with warnings.catch_warnings():
        warnings.simplefilter("error", CollapseWarning)  # a second onset is only logged
        u = mon.update(3, tiny, y, loss=0.2)
    assert "all_distances_small" in u.onsets
    ivs = mon.history().signature_intervals()
    assert [(iv["start"], iv["end"]) for iv in ivs
            if iv["signature"] == "all_distances_small"] == [(1, 2), (3, None)]
    # two of four classes merged
    half = E.copy()
    half[y == 1] = half[y == 0][0] + 1e-7 * rng.normal(size=(4, 3))
    half[y == 0] = half[y == 0][0]
    u = mon.update(4, half, y)
    assert u.record["stats"]["collapsed_classes"] == 2
    assert u.record["stats"]["collapsed_share"] == 0.5


def test_class_collapse_onset_is_logged_not_warned(rng):
    E, y = _batch(rng, spread=1e-4)
    mon = CollapseMonitor(margin=0.2, theory_every=0, k_on=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CollapseWarning)
        u = mon.update(0, E, y)
    assert u.onsets == ("class_collapse",)
    with pytest.warns(CollapseWarning, match="class_collapse"):
        CollapseMonitor(theory_every=0, warn=("class_collapse",), k_on=1).update(0, E, y)


def test_theory_is_deterministic_and_certified(rng):
    E, y = _batch(rng, P=3, K=4, n=2, spread=0.3)
    E = 0.01 * E
    a = CollapseMonitor(margin=0.2, theory_every=1).update(7, E, y)
    b = CollapseMonitor(margin=0.2, theory_every=1).update(7, E, y)
    ta, tb = a.record["theory"], b.record["theory"]
    ta.pop("seconds"), tb.pop("seconds")
    assert ta == tb
    assert ta["d_iso_lower"] <= ta["d_iso"] and ta["d_iso_lower"] >= ta["loss_max"] / 2 * (1 - 1e-9)
    assert a.theory is not None and a.theory.iso.value == ta["d_iso"]
    assert ta["evaluated"] == 12 and ta["subsampled"] is False


def test_theory_failure_is_logged_once(rng, monkeypatch):
    E, y = _batch(rng)

    def boom(*args, **kwargs):
        raise SolverError("no solve", solver="scipy", status="failed")

    monkeypatch.setattr(monitor_module, "evaluate_core", boom)
    mon = CollapseMonitor(margin=0.2, theory_every=1)
    with pytest.warns(MonitorWarning, match="the theory could not be evaluated"):
        u = mon.update(0, E, y)
    assert u.ok and u.theory is None and "SolverError" in u.record["theory"]["error"]
    assert mon.update(1, E, y).ok  # no second warning (filterwarnings would not catch it)
    assert not mon.history().theory_updates()
    with pytest.raises(SolverError):
        CollapseMonitor(margin=0.2, theory_every=1, strict=True).update(0, E, y)


# --- work budgets: effort, and the search in the span -----------------------------------------


def _spread(rng, P=4, K=4, n=64, regime="overlapping"):
    """``P x K`` L2-normalised points in ``R^n`` (the monitor's subsample size)."""
    y = np.repeat(np.arange(P), K)
    if regime == "overlapping":
        E = 0.3 * rng.normal(size=(P, n))[y] + rng.normal(size=(P * K, n))
    else:  # collapsed onto one point
        E = rng.normal(size=(1, n)) + 1e-3 * rng.normal(size=(P * K, n))
    return E / np.linalg.norm(E, axis=1, keepdims=True), y


def test_effort_is_validated_and_recorded(rng, tmp_path):
    E, y = _batch(rng, n=3)
    mon = CollapseMonitor(margin=0.2, theory_every=1, log=tmp_path / "e.jsonl")
    assert mon.effort == "quick" == monitor_module.MONITOR_THEORY.effort
    assert mon.theory.time_limit is None and mon.theory.n_starts is None  # no clock budget
    header = read_history(tmp_path / "e.jsonl").headers[0]
    assert header["config"]["effort"] == "quick"
    assert header["config"]["theory"]["effort"] == "quick"
    assert header["config"]["theory_budget"] == resolve_budget("quick").to_dict()
    th = mon.update(0, E, y).record["theory"]
    assert th["effort"] == "quick" and th["reproducible"] is True
    assert th["budget"] == resolve_budget("quick").to_dict()  # the budget the solve ran under
    assert "effort='quick'" in repr(mon)

    thorough = CollapseMonitor(margin=0.2, theory_every=1, effort="thorough")
    assert thorough.config()["effort"] == "thorough"
    assert thorough.update(0, E, y).record["theory"]["budget"] == \
        resolve_budget("thorough").to_dict()
    # the effort goes into `theory`; its explicit counts still win over the preset's
    mine = CollapseMonitor(theory=TheoryOptions(n_starts=2, max_points=12), effort="default",
                           theory_every=1)
    assert mine.theory.effort == "default" and mine.theory.max_points == 12
    assert mine.config()["theory_budget"] == resolve_budget("default", n_starts=2).to_dict()
    assert mine.update(0, E, y).record["theory"]["budget"]["n_starts"] == 2
    # None keeps the effort of `theory`
    assert CollapseMonitor(theory=TheoryOptions(effort="thorough")).effort == "thorough"

    with pytest.raises(InvalidInputError, match="`effort` must be one of 'quick', 'default', "
                                                "'thorough'; got 'fast'"):
        CollapseMonitor(effort="fast")
    with pytest.raises(TypeError, match="`effort` must be one of"):
        CollapseMonitor(effort=2)


@pytest.mark.parametrize("regime", ["overlapping", "collapsed"])
def test_search_in_the_span_keeps_the_bracket_proven(rng, regime):
    """The iso search in R^(N-1) and in R^n bracket the same distance."""
    X, y = _spread(rng, P=3, K=4, n=40, regime=regime)
    opts = monitor_module.MONITOR_THEORY
    res, dim = monitor_module._iso_in_span(X, y, 0.2, opts, 5)
    assert dim == 11 and res.embedding.shape == X.shape
    full = isoapprox.nearest_ideal(X, y, margin=0.2, effort="quick", solver="scipy", rng=5,
                                   warn_uncertified=False)
    tol = BRACKET_RTOL * max(isoapprox.diameter(X), 0.2)
    assert res.lower <= full.upper + tol and full.lower <= res.upper + tol
    # f* is moved back into R^n, triplet-separated in float64 and re-scored against X
    assert separation_report(res.embedding, y, margin=0.2, atol=0.0).worst_slack >= 0.0
    assert res.value == res.upper == isoapprox.isometric_error(X, res.embedding)
    assert 0.0 <= res.lower <= res.value and res.lower == max(res.bounds.values())
    assert res.lower >= isoapprox.batch_hard_loss(X, y, margin=0.2, reduction="max") / 2 - tol
    assert res.certified and res.budget == resolve_budget("quick").to_dict()


def test_monitor_signatures_come_from_the_registry():
    from isoapprox.diagnostics.signatures import SIGNATURES
    from isoapprox.plotting import monitor as plot_monitor

    names = tuple(s.name for s in SIGNATURES)
    assert monitor_module.MONITOR_SIGNATURES == (*names, "shrinking")
    # no registry signature shadows the monitor's own: every name tracked once
    assert len(set(monitor_module.MONITOR_SIGNATURES)) == len(monitor_module.MONITOR_SIGNATURES)
    assert set(monitor_module.WARN_SIGNATURES) <= set(monitor_module.MONITOR_SIGNATURES)
    # every coloured signature of the timeline is one the monitor tracks
    assert set(plot_monitor._SIGNATURE_COLORS) <= set(monitor_module.MONITOR_SIGNATURES)


def test_search_in_the_span_falls_back_to_the_full_space(rng, monkeypatch):
    X, y = _spread(rng, P=3, K=4, n=40)
    opts = monitor_module.MONITOR_THEORY
    # nothing to gain: fewer dimensions than points, or X already separated
    assert monitor_module._iso_in_span(X[:, :5], y, 0.2, opts, 0) == (None, 5)
    sep = 10.0 * np.eye(40)[y] + 0.01 * X
    assert monitor_module._iso_in_span(sep, y, 0.2, opts, 0) == (None, 40)
    # a moved-back f* broken by rounding is repaired by scaling about its centroid ...
    real = monitor_module.compute_worst_slack
    calls = []

    def broken_once(E, codes, margin):
        slack = real(E, codes, margin)
        calls.append(margin)
        if len(calls) == 2:  # the first check of the moved-back f*
            return -1e-17
        return slack

    monkeypatch.setattr(monitor_module, "compute_worst_slack", broken_once)
    res, dim = monitor_module._iso_in_span(X, y, 0.2, opts, 0)
    assert dim == 11 and calls == [0.2, 0.2, 0.0, 0.2]
    assert isoapprox.separation_report(res.embedding, y, margin=0.2, atol=0.0).worst_slack >= 0.0
    assert res.value == isoapprox.isometric_error(X, res.embedding)
    # ... and when it stays broken the monitor searches in R^n
    monkeypatch.setattr(monitor_module, "compute_worst_slack", lambda E, codes, margin: -1.0)
    assert monitor_module._iso_in_span(X, y, 0.2, opts, 0) == (None, 40)
    u = CollapseMonitor(margin=0.2, theory_every=1).update(0, X, y)
    assert u.record["theory"]["iso_dim"] == 40 and u.record["theory"]["d_iso_certified"]


def test_theory_in_high_dimension_is_certified_in_the_span(rng):
    """The collapsed 16-point subsample in R^128: the D* layouts of the span certify it."""
    E, y = _spread(rng, P=16, K=4, n=128, regime="collapsed")
    u = CollapseMonitor(margin=0.2, theory_every=1, warn=()).update(0, E, y)
    t = u.record["theory"]
    assert t["iso_dim"] == 15 and t["evaluated"] == 16 and t["subsampled"] is True
    assert t["d_iso_certified"] and t["d_iso_lower"] <= t["d_iso"] == t["d_iso_upper"]
    assert t["d_iso_lower"] >= t["loss_max"] / 2 * (1 - BRACKET_RTOL)
    assert t["d_haus_lower"] <= t["d_haus"] and t["reproducible"] is True
    assert u.theory.aligned.shape == (16, 128)
    assert u.theory.theta == 0.0  # 16 points are flat in R^128 (computed in R^128)


# --- the log --------------------------------------------------------------------------------------


def test_killed_run_leaves_a_readable_log(tmp_path, rng):
    E, y = _batch(rng)
    log = tmp_path / "k.jsonl"
    mon = CollapseMonitor(margin=0.2, log=log, theory_every=0)
    for step in range(3):
        mon.update(step, E, y)
    with log.open("a", encoding="utf-8") as fh:  # killed in the middle of a write
        fh.write('{"kind": "update", "call": 3, "step": 3, "st')
    h = read_history(log)
    assert [u["step"] for u in h.updates] == [0, 1, 2]
    # a continued run drops the torn line and starts a second segment
    mon2 = CollapseMonitor(margin=0.2, log=log, theory_every=0)
    mon2.update(3, E, y)
    h = read_history(log)
    assert [u["step"] for u in h.updates] == [0, 1, 2, 3]
    assert [hd["segment"] for hd in h.headers] == [0, 1]
    assert log.read_text(encoding="utf-8").endswith("}\n")
    assert all(json.loads(line) for line in log.read_text(encoding="utf-8").splitlines())
    # overwrite starts afresh
    CollapseMonitor(margin=0.2, log=log, overwrite=True)
    assert len(read_jsonl(log)) == 1


def test_log_helpers(tmp_path):
    p = tmp_path / "x.jsonl"
    assert repair_jsonl(p) == []
    rec = append_jsonl(p, {"a": np.float64(math.nan), "b": (1, np.int64(2))}, fsync=False)
    assert rec == {"a": None, "b": [1, 2]}
    p.write_text(p.read_text() + '{"a": 1')
    assert repair_jsonl(p) == [rec] and p.read_text() == json.dumps(rec) + "\n"


def test_log_write_failure_warns_and_goes_on(tmp_path, rng):
    E, y = _batch(rng)
    sub = tmp_path / "gone"
    mon = CollapseMonitor(margin=0.2, log=sub / "m.jsonl", theory_every=0)
    (sub / "m.jsonl").unlink()
    sub.rmdir()
    with pytest.warns(MonitorWarning, match="could not append to the log"):
        assert mon.update(0, E, y).ok
    assert len(mon.history().updates) == 1


def test_constructor_validation(tmp_path):
    with pytest.raises(InvalidInputError, match="`margin`"):
        CollapseMonitor(margin=-1.0)
    with pytest.raises(InvalidInputError, match="`theory_every` must be >= 0; got -1"):
        CollapseMonitor(theory_every=-1)
    with pytest.raises(InvalidInputError, match="`log` must name a file"):
        CollapseMonitor(log=tmp_path)
    with pytest.raises(InvalidInputError, match="`warn` must be one of"):
        CollapseMonitor(warn=("no_such_signature",))
    with pytest.raises(TypeError, match="`warn` must be a sequence"):
        CollapseMonitor(warn="stuck_at_margin")
    with pytest.raises(TypeError, match="`theory` must be a TheoryOptions"):
        CollapseMonitor(theory={"max_points": 8})
    with pytest.raises(TypeError, match="`strict` must be True or False"):
        CollapseMonitor(strict="yes")
    other = tmp_path / "other.jsonl"
    other.write_text('{"kind": "header", "experiment": "sweep"}\n')
    with pytest.raises(InvalidInputError, match="is not a CollapseMonitor log"):
        CollapseMonitor(log=other)
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text('not json\n{"a": 1}\n')
    with pytest.raises(InvalidInputError, match="line 1 is corrupt"):
        CollapseMonitor(log=corrupt)


def test_history_reader_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_history(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InvalidInputError, match="holds no records"):
        read_history(empty)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(InvalidInputError, match="not a text file"):
        read_history(binary)
    h = MonitorHistory.from_records([{"kind": "header", "format": "isoapprox-monitor",
                                      "format_version": 1, "config": {"margin": 0.1}}])
    assert h.summary()["updates"] == 0 and h.margin == 0.1
    from isoapprox.plotting.monitor import plot_history

    with pytest.raises(InvalidInputError, match="holds no evaluated update"):
        plot_history(h)


# --- isoapprox diagnose --history -----------------------------------------------------------------


def test_diagnose_history_writes_figure_and_summary(collapsing_run, tmp_path, capsys):
    _, log, _ = collapsing_run
    out = tmp_path / "figs"
    rc = cli_main(["diagnose", "--history", str(log), "--plot", str(out),
                   "--json", str(tmp_path / "s.json")])
    text = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"all_distances_small\s+started at step \d+, held to the end", text)
    assert "stuck_at_ln2          never" in text
    assert "last theory (step 300, 16 of 64 points" in text
    stem = f"{log.parent.name}_run_history"  # the log's folder and name
    assert (out / f"{stem}.png").stat().st_size > 10_000
    assert (out / f"{stem}.pdf").exists()
    side = json.loads((out / f"{stem}.json").read_text())
    assert side["sources"][0]["path"] == str(log.resolve())
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["updates"] == 31 and summary["theory_evaluations"] >= 4
    assert summary["signatures"]["all_distances_small"]["onsets"] == 1


@pytest.mark.parametrize("content,match", [
    (None, "monitor log not found"),
    ("not json at all\nnor this\n", "line 1 is corrupt"),
    ('{"kind": "header", "experiment": "toy"}\n', "is not a CollapseMonitor log"),
])
def test_diagnose_history_errors_in_one_line(tmp_path, capsys, content, match):
    log = tmp_path / "log.jsonl"
    if content is not None:
        log.write_text(content)
    assert cli_main(["diagnose", "--history", str(log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("isoapprox diagnose: error: ")
    assert match in err[0]


def test_diagnose_needs_file_or_history(tmp_path, capsys):
    assert cli_main(["diagnose"]) == 2
    assert "needs an embedding FILE (or --history LOG)" in capsys.readouterr().err
    assert cli_main(["diagnose", str(tmp_path / "e.npz"), "--history", "x.jsonl"]) == 2
    assert "drop FILE" in capsys.readouterr().err


# --- the PyTorch example --------------------------------------------------------------------------


def test_pytorch_example(tmp_path):
    pytest.importorskip("torch")
    log = tmp_path / "torch.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollapseWarning)
        mon = _example("monitor_pytorch").main(["--log", str(log), "--steps", "100",
                                                "--every", "10"])
    h = read_history(log)
    assert len(h.updates) == 11 and mon.calls == 11
    assert isoapprox.__version__ == h.headers[0]["provenance"]["isoapprox"]
