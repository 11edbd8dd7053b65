"""Collapse signatures (both sides of every threshold), verdict, report and batches."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

import isoapprox as ia
from isoapprox import diagnostics as D
from isoapprox.diagnostics import report as R
from isoapprox.diagnostics.report import sample_batches
from isoapprox.exceptions import InvalidInputError, NoTripletError
from isoapprox.io import to_jsonable

from . import planted

#: nudge around a threshold: far above rounding of the compared ratios
#: (a few ulps), far below any planted margin
SIDE = 1e-9


def _held(stats, **kw):
    return {s.name for s in D.detect_signatures(stats, **kw) if s.holds}


@pytest.fixture(scope="module")
def planted_stats():
    rng = np.random.default_rng(7)
    out = {}
    for name, make in planted.CASES.items():
        E, y = make(rng)
        out[name] = D.collapse_statistics(E, y, margin=0.2)
    return out


def test_planted_cases_give_their_signature(planted_stats):
    assert _held(planted_stats["healthy"]) == set()
    assert _held(planted_stats["collapsed"]) == {"all_distances_small", "stuck_at_margin",
                                                 "stuck_at_ln2"}
    assert _held(planted_stats["class_collapsed"]) == {"class_collapse"}
    assert _held(planted_stats["dimensional"]) == {"dimensional_collapse"}
    status = {k: D.verdict(D.detect_signatures(v))["status"] for k, v in planted_stats.items()}
    assert status == {"healthy": "healthy", "collapsed": "collapsed",
                      "class_collapsed": "class-collapsed",
                      "dimensional": "dimensional-collapse"}


def test_signatures_are_ordered_and_carry_numbers(planted_stats):
    sigs = D.detect_signatures(planted_stats["collapsed"])
    assert tuple(s.name for s in sigs) == D.SIGNATURE_NAMES
    full = sigs[0]
    assert full.evidence["diameter"] == planted_stats["collapsed"].diameter
    assert f"{full.evidence['diameter']:.3g}" in full.summary
    json.dumps(to_jsonable([s.to_dict() for s in sigs]), allow_nan=False)


# --- both sides of every threshold ----------------------------------------


def test_full_collapse_threshold_both_sides(planted_stats):
    st = planted_stats["collapsed"]
    r = st.diameter / st.rms_norm
    assert "all_distances_small" in _held(
        st, thresholds=D.SignatureThresholds(full_collapse_ratio=r * (1 + SIDE)))
    assert "all_distances_small" not in _held(
        st, thresholds=D.SignatureThresholds(full_collapse_ratio=r * (1 - SIDE)))


@pytest.mark.parametrize("factor,holds", [(0.5, True), (2.0, False)])
def test_full_collapse_default_constant(factor, holds):
    rng = np.random.default_rng(3)
    E, y = planted.collapsed(rng, spread=1.0)
    st = D.collapse_statistics(E, y)
    # rescale the spread about the common point so that diam / rms = factor * constant
    c = E.mean(axis=0)
    target = factor * D.FULL_COLLAPSE_RATIO
    for _ in range(6):
        st = D.collapse_statistics(E, y)
        E = c + (E - c) * (target / (st.diameter / st.rms_norm))
    st = D.collapse_statistics(E, y)
    assert math.isclose(st.diameter / st.rms_norm, target, rel_tol=1e-6)
    assert ("all_distances_small" in _held(st)) is holds


def test_full_collapse_uses_the_margin_as_scale_when_larger():
    E = np.array([[0.0], [0.01], [0.02], [0.03]])  # rms 0.019, diameter 0.03
    # classes interleaved: no class structure left, so tiny against the margin is collapse
    st = D.collapse_statistics(E, [0, 1, 0, 1], margin=10.0)
    sig = D.detect_signatures(st)[0]
    assert sig.holds and sig.evidence["reference"] == "the margin"
    st0 = D.collapse_statistics(E, [0, 1, 0, 1], margin=0.0)
    assert not D.detect_signatures(st0)[0].holds
    # the same scale with the classes still ranked is compressed, not collapsed
    st = D.collapse_statistics(E, [0, 0, 1, 1], margin=10.0)
    held = {s.name for s in D.detect_signatures(st) if s.holds}
    assert "all_distances_small" not in held and "compressed" in held


def test_stuck_at_margin_both_sides(planted_stats):
    st = planted_stats["collapsed"]
    a = st.margin
    rtol = D.STUCK_MARGIN_RTOL
    assert "stuck_at_margin" in _held(st, loss=a * (1 + 0.5 * rtol))
    assert "stuck_at_margin" in _held(st, loss=a * (1 - 0.5 * rtol))
    assert "stuck_at_margin" not in _held(st, loss=a * (1 + 2 * rtol))
    assert "stuck_at_margin" not in _held(st, loss=a * (1 - 2 * rtol))
    r = st.diameter / a
    th = D.SignatureThresholds
    assert "stuck_at_margin" in _held(st, thresholds=th(stuck_diameter_ratio=r * (1 + SIDE)))
    assert "stuck_at_margin" not in _held(st, thresholds=th(stuck_diameter_ratio=r * (1 - SIDE)))
    rel = abs(st.batch_hard_mean - a) / a
    assert "stuck_at_margin" in _held(st, thresholds=th(stuck_margin_rtol=rel * (1 + SIDE)))
    assert "stuck_at_margin" not in _held(st, thresholds=th(stuck_margin_rtol=rel * (1 - SIDE)))
    zero = replace(st, margin=0.0)
    sig = D.detect_signatures(zero)[1]
    assert not sig.holds and "Not applicable" in sig.summary


def test_stuck_at_ln2_both_sides(planted_stats):
    st = planted_stats["collapsed"]
    atol = D.SOFT_MARGIN_ATOL
    assert "stuck_at_ln2" in _held(st, loss=D.LN2 + 0.5 * atol)
    assert "stuck_at_ln2" not in _held(st, loss=D.LN2 + 2 * atol)
    assert "stuck_at_ln2" not in _held(st, loss=D.LN2 - 2 * atol)
    th = D.SignatureThresholds
    d = st.diameter
    assert "stuck_at_ln2" in _held(st, thresholds=th(soft_margin_diameter=d * (1 + SIDE)))
    assert "stuck_at_ln2" not in _held(st, thresholds=th(soft_margin_diameter=d * (1 - SIDE)))
    off = abs(st.soft_margin_mean - D.LN2)
    assert "stuck_at_ln2" in _held(st, thresholds=th(soft_margin_atol=off * (1 + SIDE)))
    assert "stuck_at_ln2" not in _held(st, thresholds=th(soft_margin_atol=off * (1 - SIDE)))


def test_class_collapse_threshold_both_sides(planted_stats):
    st = planted_stats["class_collapsed"]
    r = st.classes.max_class_diameter / st.classes.min_class_gap
    th = D.SignatureThresholds
    assert "class_collapse" in _held(st, thresholds=th(class_collapse_ratio=r * (1 + SIDE)))
    assert "class_collapse" not in _held(st, thresholds=th(class_collapse_ratio=r * (1 - SIDE)))


@pytest.mark.parametrize("spread,holds", [(1e-3, True), (0.6, False)])
def test_class_collapse_default_constant(spread, holds):
    E, y = planted.class_collapsed(np.random.default_rng(11), spread=spread)
    st = D.collapse_statistics(E, y)
    r = st.classes.max_class_diameter / st.classes.min_class_gap
    assert (r <= D.CLASS_COLLAPSE_RATIO) is holds
    assert ("class_collapse" in _held(st)) is holds


def test_dimensional_collapse_threshold_both_sides(planted_stats):
    st = planted_stats["dimensional"]
    r_ref = min(st.dim, st.n_points - 1, st.n_classes - 1)
    ratio = st.effective_rank / r_ref
    th = D.SignatureThresholds
    assert "dimensional_collapse" in _held(
        st, thresholds=th(dimensional_collapse_ratio=ratio * (1 + SIDE)))
    assert "dimensional_collapse" not in _held(
        st, thresholds=th(dimensional_collapse_ratio=ratio * (1 - SIDE)))
    healthy = planted_stats["healthy"]
    assert healthy.effective_rank >= D.DIMENSIONAL_COLLAPSE_RATIO * min(
        healthy.dim, healthy.n_points - 1, healthy.n_classes - 1)


def test_full_collapse_suppresses_class_and_dimensional(planted_stats):
    sigs = {s.name: s for s in D.detect_signatures(planted_stats["collapsed"])}
    assert not sigs["class_collapse"].holds and "whole embedding" in sigs["class_collapse"].summary
    assert not sigs["dimensional_collapse"].holds
    assert "Not evaluated" in sigs["dimensional_collapse"].summary


def test_threshold_and_signature_errors(planted_stats):
    with pytest.raises(InvalidInputError, match="`full_collapse_ratio` must be > 0; got -1.0"):
        D.SignatureThresholds(full_collapse_ratio=-1.0)
    with pytest.raises(TypeError, match="`stats` must be a CollapseStatistics"):
        D.detect_signatures({"diameter": 0.0})
    with pytest.raises(TypeError, match="`thresholds` must be a SignatureThresholds"):
        D.detect_signatures(planted_stats["healthy"], thresholds={"a": 1})
    with pytest.raises(InvalidInputError, match="`loss` must be >= 0"):
        D.detect_signatures(planted_stats["healthy"], loss=-0.1)


# --- verdict and report -----------------------------------------------------


def test_verdict_loss_at_collapse_value_without_collapse(planted_stats):
    # a regular simplex: every distance equal, so hp = hn for every anchor and the
    # file's own losses are the margin and ln 2 without any collapse
    E, y = 3.0 * np.eye(8), [0, 0, 1, 1, 2, 2, 3, 3]
    st = D.collapse_statistics(E, y, margin=0.2)
    assert math.isclose(st.batch_hard_mean, 0.2) and math.isclose(st.soft_margin_mean, D.LN2)
    # every distance equal: no neighbour is nearer than another, so the classes are not
    # ranked (ties never count as retrievals); the loss finding is still quoted
    v = D.verdict(D.detect_signatures(st, loss=0.6931))
    assert v["status"] == "no-class-structure"
    assert any("equals ln 2, but" in d for d in v["details"])
    # a ninth coordinate per class ranks the classes (same-class pairs stay at sqrt 18,
    # others move ~1e-3 farther): the losses stay at the collapse values within tolerance
    E9 = np.hstack([E, 0.1 * np.repeat(np.arange(4.0), 2)[:, None]])
    st = D.collapse_statistics(E9, y, margin=0.2)
    assert st.retrieval.r_precision == 1.0
    v = D.verdict(D.detect_signatures(st, loss=0.6931))
    assert v["status"] == "loss-at-collapse-value"
    assert "ln 2" in v["details"][0]
    v = D.verdict(D.detect_signatures(st, loss=0.2))
    assert v["status"] == "loss-at-collapse-value" and "margin" in v["details"][0]
    # the healthy file's own losses are ~0: a reported ln 2 is not this file's loss
    st = planted_stats["healthy"]
    v = D.verdict(D.detect_signatures(st, loss=0.6931))
    assert v["status"] == "loss-mismatch" and v["signatures"] == ["loss_mismatch"]
    assert "does not match this file" in v["details"][0]
    v = D.verdict(D.detect_signatures(st, loss=st.batch_hard_mean))
    assert v["status"] == "healthy"


def test_diagnose_report_sections_and_json(rng):
    E, y = planted.collapsed(rng)
    rep = D.diagnose(E, y, options=D.DiagnoseOptions(margin=0.2))
    assert list(rep) == ["data", "losses", "separation", "retrieval", "collapse", "statistics",
                         "classes", "signatures", "verdict"]
    assert rep["verdict"]["status"] == "collapsed"
    assert rep["collapse"]["d_iso_to_collapsed"] == rep["collapse"]["diameter"]
    assert math.isclose(rep["losses"]["triplet_mean"], 0.2, rel_tol=1e-4)
    assert rep["separation"]["fraction_active"] == 1.0
    json.dumps(to_jsonable(rep), allow_nan=False)


def test_diagnose_reports_the_full_triplet_loss_from_the_sweep(rng):
    # the statistics' anchor sweep gives the triplet loss: no separate pass, no budget
    E, y = planted.partial(rng, P=12, K=6, merged=5)
    rep = D.diagnose(E, y, options=D.DiagnoseOptions(margin=0.2))
    want = ia.triplet_loss(E, y, margin=0.2, reduction="sum")
    assert math.isclose(rep["losses"]["triplet_sum"], want, rel_tol=1e-12)
    assert "triplet_note" not in rep["losses"]


def test_diagnose_errors(rng):
    E, y = planted.healthy(rng)
    with pytest.raises(TypeError, match="`options` must be a DiagnoseOptions"):
        D.diagnose(E, y, options={"margin": 0.1})
    with pytest.raises(NoTripletError, match="at least two classes"):
        D.diagnose(E, np.zeros(len(y)))
    with pytest.raises(InvalidInputError, match="`margin` must be >= 0"):
        D.DiagnoseOptions(margin=-1.0)
    with pytest.raises(InvalidInputError, match="`quantiles` must lie in"):
        D.DiagnoseOptions(quantiles=(0.5, 2.0))


def test_statistics_are_computed_once_per_batch(rng, monkeypatch):
    E, y = planted.healthy(rng)
    calls = []
    real = R.compute_collapse_statistics
    monkeypatch.setattr(R, "compute_collapse_statistics",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    D.diagnose(E, y)
    assert len(calls) == 1


# --- batches ----------------------------------------------------------------


def test_batches_planted_cases(rng):
    E, y = planted.collapsed(rng, P=10, K=6)
    rep = D.diagnose_batches(E, y, batch_size=16, n_batches=6, rng=1,
                             options=D.DiagnoseOptions(margin=0.2))
    assert rep["verdict"]["status"] == "collapsed"
    assert rep["signatures"]["stuck_at_margin"]["batches"] == 6
    assert rep["data"]["classes_per_batch"] == 4
    E, y = planted.healthy(rng, P=10, K=6)
    rep = D.diagnose_batches(E, y, batch_size=12, samples_per_class=3, n_batches=5, rng=2)
    assert rep["verdict"]["status"] == "healthy"
    assert rep["statistics"]["batch_hard_mean"]["max"] == 0.0
    assert len(rep["per_batch"]) == 5
    json.dumps(to_jsonable(rep), allow_nan=False)


def test_batches_are_seeded_and_drawn_pk(rng):
    E, y = planted.healthy(rng, P=8, K=5)
    a = D.diagnose_batches(E, y, batch_size=8, samples_per_class=2, n_batches=3, rng=5)
    b = D.diagnose_batches(E, y, batch_size=8, samples_per_class=2, n_batches=3, rng=5)
    assert a == b
    batches = list(sample_batches(y, 8, 2, 4, np.random.default_rng(0)))
    for idx in batches:
        assert len(idx) == 8 and len(set(idx.tolist())) == 8
        _, counts = np.unique(y[idx], return_counts=True)
        assert counts.tolist() == [2, 2, 2, 2]


def test_batch_errors(rng):
    E, y = planted.healthy(rng, P=4, K=3)
    with pytest.raises(InvalidInputError, match="multiple of samples_per_class = 4; got 10"):
        D.diagnose_batches(E, y, batch_size=10)
    with pytest.raises(InvalidInputError, match="needs 8 classes with at least 4 points; got 0"):
        D.diagnose_batches(E, y, batch_size=32)
    with pytest.raises(InvalidInputError, match="`samples_per_class` must be >= 2"):
        D.diagnose_batches(E, y, batch_size=8, samples_per_class=1)
    with pytest.raises(InvalidInputError, match="`batch_size` must be >= 6"):
        D.diagnose_batches(E, y, batch_size=3, samples_per_class=3)
    with pytest.raises(InvalidInputError, match="`n_batches` must be >= 1"):
        D.diagnose_batches(E, y, batch_size=6, samples_per_class=3, n_batches=0)
