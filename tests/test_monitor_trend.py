"""The monitor's hysteresis, loss conventions, trend warning, bounded summary and figure names.

Planted batches only (no training): every expectation follows from how the
batches are built.  No timings (the cost is in benchmarks/bench_monitor.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings

import numpy as np
import pytest

import isoapprox as ia
from isoapprox import CollapseMonitor, CollapseWarning, InvalidInputError, read_history
from isoapprox.cli import main as cli_main
from isoapprox.commands.history import WIDTH, format_history
from isoapprox.diagnostics import quick_statistics
from isoapprox.diagnostics.signatures import STUCK_MARGIN_RTOL, convention_loss
from isoapprox.losses import TRIPLET_REDUCTIONS

MARGIN = 0.2


def _apart(rng, P=4, K=4, n=3, spread=0.1):
    """P classes of K points around centres ~3 apart."""
    y = np.repeat(np.arange(P), K)
    return 3.0 * rng.normal(size=(P, n))[y] + spread * rng.normal(size=(P * K, n)), y


def _collapsed(rng, y, n=3):
    """Every point within 1e-6 of one point, the classes mixed."""
    return 5.0 + 1e-6 * rng.normal(size=(len(y), n))


def _quiet(**kw):
    return CollapseMonitor(margin=MARGIN, theory_every=0, **kw)


# --- hysteresis ---------------------------------------------------------------------------


def test_alternating_batches_do_not_flap(rng):
    E, y = _apart(rng)
    C = _collapsed(rng, y)
    mon = _quiet()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CollapseWarning)  # no onset, so no warning
        for step in range(40):
            u = mon.update(step, C if step % 2 else E, y, loss=MARGIN if step % 2 else 0.0)
            assert not u.onsets and not u.ends
            if step % 2:  # the raw signatures do hold at the collapsed batches
                assert "all_distances_small" in u.record["raw"]
    assert mon.history().signature_intervals() == []
    # without hysteresis the same sequence flaps at every call
    raw = _quiet(k_on=1, k_off=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollapseWarning)
        n = sum("all_distances_small" in raw.update(s, C if s % 2 else E, y).onsets
                for s in range(40))
    assert n == 20


def test_onset_after_k_on_and_end_after_k_off(rng):
    E, y = _apart(rng)
    C = _collapsed(rng, y)
    mon = _quiet(k_on=3, k_off=2)
    seq = [E, C, C, E, C, C, C, C, E, C, E, E, C]
    states = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CollapseWarning)
        for step, X in enumerate(seq):
            states.append("all_distances_small" in mon.update(step, X, y).holding)
    # on at the 3rd consecutive collapsed batch (step 6), kept through the one
    # healthy batch at step 8, off after two healthy ones (step 11)
    assert states == [False] * 6 + [True] * 5 + [False] * 2
    ivs = [iv for iv in mon.history().signature_intervals()
           if iv["signature"] == "all_distances_small"]
    assert [(iv["start"], iv["end"]) for iv in ivs] == [(6, 11)]
    msg = next(str(w.message) for w in caught if "all_distances_small" in str(w.message))
    assert "step 6: collapse signature 'all_distances_small' started (held at 3 " \
           "consecutive updates since step 4)" in msg


def test_hysteresis_arguments_are_validated():
    with pytest.raises(InvalidInputError, match="`k_on` must be >= 1"):
        _quiet(k_on=0)
    with pytest.raises(TypeError, match="`k_off`"):
        _quiet(k_off=1.5)
    with pytest.raises(InvalidInputError, match="`shrink_factor` must be > 1"):
        _quiet(shrink_factor=0.5)
    with pytest.raises(InvalidInputError, match="mean_nonzero"):
        _quiet(loss_reduction="avg")
    with pytest.raises(InvalidInputError, match="'batch_hard', 'all'"):
        _quiet(loss_kind="hard")


# --- loss conventions ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["batch_hard", "all"])
@pytest.mark.parametrize("reduction", TRIPLET_REDUCTIONS)
def test_convention_loss_is_the_loss_function(rng, kind, reduction):
    E, y = _apart(rng, P=5, K=4, spread=2.0)  # overlapping: some terms positive, some 0
    st = quick_statistics(E, y, margin=MARGIN)
    f = ia.batch_hard_loss if kind == "batch_hard" else ia.triplet_loss
    want = f(E, y, margin=MARGIN, reduction=reduction)
    assert convention_loss(st, kind, reduction) == pytest.approx(want, rel=1e-12, abs=1e-15)


def _healthy_sequence(rng, steps=30):
    """Overlapping batches: a few anchors active, so mean_nonzero >> mean."""
    out = []
    for _ in range(steps):
        E, y = _apart(rng, P=8, K=4, spread=0.6)
        out.append((E, y))
    return out


def test_loss_mismatch_with_the_mean_nonzero_convention(rng):
    seq = _healthy_sequence(rng)
    nz = [ia.batch_hard_loss(E, y, margin=MARGIN, reduction="mean_nonzero") for E, y in seq]
    mean = [ia.batch_hard_loss(E, y, margin=MARGIN) for E, y in seq]
    assert sum(a > 1.5 * b for a, b in zip(nz, mean, strict=True)) >= 20  # the planted gap
    # told the convention, the monitor never sees a mismatch
    good = _quiet(loss_reduction="mean_nonzero")
    for step, ((E, y), loss) in enumerate(zip(seq, nz, strict=True)):
        u = good.update(step, E, y, loss=loss)
        assert "loss_mismatch" not in u.record["raw"]
    # told the wrong one, it holds at most updates but starts once, after
    # k_on_mismatch consecutive ones, and warns not (it is not in `warn`)
    bad = _quiet(loss_reduction="mean", k_on_mismatch=10)
    raw, onsets = 0, []
    for step, ((E, y), loss) in enumerate(zip(seq, nz, strict=True)):
        u = bad.update(step, E, y, loss=loss)
        raw += "loss_mismatch" in u.record["raw"]
        onsets += [step] * ("loss_mismatch" in u.onsets)
    assert raw >= 20 and len(onsets) <= 1
    assert not onsets or onsets[0] >= 9


def test_loss_mismatch_needs_persistence(rng):
    # the reported loss off at every other update (another batch's value): no onset
    seq = _healthy_sequence(rng, 40)
    mon = _quiet(loss_reduction="mean_nonzero")
    for step, (E, y) in enumerate(seq):
        loss = ia.batch_hard_loss(E, y, margin=MARGIN, reduction="mean_nonzero")
        u = mon.update(step, E, y, loss=3.0 * loss + 1.0 if step % 2 else loss)
        assert ("loss_mismatch" in u.record["raw"]) == bool(step % 2)
        assert "loss_mismatch" not in u.onsets


def test_loss_kind_all_is_compared_with_the_triplet_loss(rng):
    mon = _quiet(loss_kind="all", loss_reduction="mean_nonzero", k_on_mismatch=1)
    for step, (E, y) in enumerate(_healthy_sequence(rng, 5)):
        loss = ia.triplet_loss(E, y, margin=MARGIN, reduction="mean_nonzero")
        u = mon.update(step, E, y, loss=loss)
        assert "loss_mismatch" not in u.record["raw"]
    assert mon.config()["loss_kind"] == "all"


# --- the trend warning ----------------------------------------------------------------------


def _shrinking_run(rng, steps=60, P=6, K=4, n=3):
    """Class centres shrinking by 0.7 a step, the noise (0.1 at first) by 0.9: the
    classes merge as the batch shrinks (their nearest neighbours stop being of their
    class from about step 10), a blob that keeps shrinking; the loss settles at the
    margin about step 30."""
    y = np.repeat(np.arange(P), K)
    centres = 3.0 * rng.normal(size=(P, n))
    noise = rng.normal(size=(P * K, n))
    for t in range(steps):
        yield t, 0.7**t * centres[y] + 0.1 * 0.9**t * noise, y


def _settles_at_margin(losses: dict[int, float]) -> int:
    """The first step from which the loss stays within the stuck band of the margin."""
    steps = sorted(losses)
    return next(t for t in steps
                if all(abs(losses[u] - MARGIN) <= STUCK_MARGIN_RTOL * MARGIN
                       for u in steps if u >= t))


def test_trend_warning_comes_well_before_the_loss_at_the_margin(rng):
    mon = _quiet()
    losses = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CollapseWarning)
        for t, E, y in _shrinking_run(rng):
            loss = ia.batch_hard_loss(E, y, margin=MARGIN)
            losses[t] = loss
            mon.update(t, E, y, loss=loss)
    first = {}
    for w in caught:
        m = re.search(r"step (\d+): collapse signature '(\w+)' started", str(w.message))
        first.setdefault(m[2], int(m[1]))
    assert "shrinking" in first and "stuck_at_margin" in first
    at_margin = _settles_at_margin(losses)
    # the first warning is the trend's, many steps before the loss settles at the margin
    # (measured over seeds 0-4 of this run: 14 to 18 steps)
    assert min(first.values()) == first["shrinking"]
    assert at_margin - first["shrinking"] >= 10
    assert first["stuck_at_margin"] - first["shrinking"] >= 10
    # the loss was still well above the margin's band when it warned
    assert abs(losses[first["shrinking"]] - MARGIN) > STUCK_MARGIN_RTOL * MARGIN


def test_theory_runs_at_onsets_and_every_k(rng):
    mon = CollapseMonitor(margin=MARGIN, theory_every=25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollapseWarning)
        ups = [mon.update(t, E, y) for t, E, y in _shrinking_run(rng, steps=40)]
    with_theory = [u.call for u in ups if "theory" in u.record]
    onset_calls = [u.call for u in ups if set(u.onsets) - {"class_collapse", "loss_mismatch",
                                                          "missing_classes", "large_margin",
                                                          "compressed",
                                                          "no_class_structure"}]
    assert set(with_theory) == {0, 25} | set(onset_calls)
    assert onset_calls  # shrinking at least


def test_healthy_planted_sequence_does_not_warn(rng):
    mon = _quiet()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CollapseWarning)
        for t in range(30):
            E, y = _apart(rng, spread=0.3)
            mon.update(t, E * (1.0 + 0.3 * np.sin(t)), y)  # wobbling scale, no trend


# --- the summary and the figures --------------------------------------------------------------


def _flapping_log(path, rng, n=120):
    E, y = _apart(rng)
    C = _collapsed(rng, y)
    mon = CollapseMonitor(margin=MARGIN, theory_every=0, log=path, k_on=1, k_off=1,
                          overwrite=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollapseWarning)
        for step in range(n):
            mon.update(step, C if step % 2 else E, y)
    return mon


def test_history_summary_is_bounded(tmp_path, rng):
    _flapping_log(tmp_path / "run.jsonl", rng)
    h = read_history(tmp_path / "run.jsonl")
    assert len(h.signature_intervals()) >= 60
    summary = h.summary()
    d = summary["signatures"]["all_distances_small"]
    assert d["onsets"] == 60 and d["held_updates"] == 60 and d["holding"] is True
    assert d["first"]["start"] == 1 and d["last"] == {"signature": "all_distances_small",
                                                      "start": 119, "end": None}
    text = format_history(summary)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    lines = [ln for ln in text.splitlines() if "all_distances_small" in ln]
    assert len(lines) == 1 and "60 onsets, first at step 1" in lines[0]
    assert len(text) < 4000


def test_history_figures_never_overwrite_another_run(tmp_path, rng, capsys):
    a, b = tmp_path / "a" / "run.jsonl", tmp_path / "b" / "run.jsonl"
    c = tmp_path / "x" / "a" / "run.jsonl"  # the same folder name and stem as `a`
    for log in (a, b, c):
        log.parent.mkdir(parents=True)
        _flapping_log(log, rng, n=6)
    figs = tmp_path / "figs"

    def plot(log):
        assert cli_main(["diagnose", "--history", str(log), "--plot", str(figs)]) == 0
        return re.search(r"written: (\S+)\.png", capsys.readouterr().out)[1]

    fa, fb, fc = plot(a), plot(b), plot(c)
    assert fa.endswith("a_run_history") and fb.endswith("b_run_history")
    assert fc != fa and re.search(r"a_run_[0-9a-f]{8}_history$", fc)
    assert plot(a) == fa and plot(c) == fc  # the same log replaces its own figures
    for name, log in ((fa, a), (fc, c)):
        side = json.loads(open(name + ".json").read())
        assert side["sources"][0]["path"] == str(log.resolve())
    # both names taken by other logs: refused in one line, nothing written
    d = tmp_path / "y" / "a" / "run.jsonl"
    d.parent.mkdir(parents=True)
    _flapping_log(d, rng, n=6)
    tag = hashlib.sha256(str(d.resolve()).encode()).hexdigest()[:8]
    (figs / f"a_run_{tag}_history.png").write_bytes(b"someone else's")
    before = sorted(p.name for p in figs.iterdir())
    assert cli_main(["diagnose", "--history", str(d), "--plot", str(figs)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not overwritten" in err
    assert sorted(p.name for p in figs.iterdir()) == before


# --- diagnose --loss-reduction -------------------------------------------------------------------


def test_diagnose_compares_the_named_reduction(tmp_path, rng, capsys):
    from isoapprox.diagnostics import DiagnoseOptions, diagnose

    E, y = _apart(rng, P=8, K=4, spread=0.6)
    nz = ia.batch_hard_loss(E, y, margin=MARGIN, reduction="mean_nonzero")
    assert nz > 1.5 * ia.batch_hard_loss(E, y, margin=MARGIN)

    def mismatch(**kw):
        rep = diagnose(E, y, options=DiagnoseOptions(margin=MARGIN, loss=nz, **kw))
        return rep["signatures"]["loss_mismatch"]

    assert mismatch()["holds"]
    sig = mismatch(loss_reduction="mean_nonzero")
    assert not sig["holds"] and sig["evidence"]["convention_loss"] == pytest.approx(nz)
    assert "mean over the positive terms of 32 anchors" in sig["summary"]
    tri = ia.triplet_loss(E, y, margin=MARGIN, reduction="mean_nonzero")
    rep = diagnose(E, y, options=DiagnoseOptions(margin=MARGIN, loss=tri, loss_kind="all",
                                                 loss_reduction="mean_nonzero"))
    assert not rep["signatures"]["loss_mismatch"]["holds"]
    # the command line
    path = tmp_path / "emb.npz"
    np.savez(path, embeddings=E, labels=y)
    for extra, holds in (([], True), (["--loss-reduction", "mean_nonzero"], False)):
        out = tmp_path / f"r{len(extra)}.json"
        assert cli_main(["diagnose", str(path), "--margin", str(MARGIN), "--loss", repr(nz),
                         "--no-theory", "--json", str(out), *extra]) == 0
        capsys.readouterr()
        assert json.loads(out.read_text())["signatures"]["loss_mismatch"]["holds"] is holds


def test_threads_do_not_change_the_record(rng):
    E, y = _apart(rng, P=80, K=4, n=200, spread=2.0)  # above SERIAL_WORK: parallel kernels
    recs = []
    for threads in (1, 2, None):
        u = _quiet(threads=threads).update(0, E, y, loss=0.3)
        recs.append({k: u.record[k] for k in ("stats", "signatures", "raw")})
    assert recs[0] == recs[1] == recs[2]
    with pytest.raises(InvalidInputError, match="`threads` must be >= 1"):
        _quiet(threads=0)


def test_lead_time_example_runs(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "monitor_lead_time.py"
    spec = importlib.util.spec_from_file_location("monitor_lead_time", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = mod.main(["--seeds", "0", "--steps", "40", "--setups", "healthy_mlp",
                     "--json", str(tmp_path / "lead.json")])
    assert len(rows) == 1 and rows[0]["warnings"] == 0
    assert "false alarms (healthy runs with a warning): 0 of 1" in capsys.readouterr().out
    assert json.loads((tmp_path / "lead.json").read_text())[0]["setup"] == "healthy_mlp"


def test_a_compressing_batch_whose_classes_stay_ranked_is_no_warning(rng):
    """Healthy runs with large batches or learning rates shrink early and spread out
    again, their classes ranked all along: ``shrinking`` needs lost class structure."""
    E, y = _apart(rng, P=6, K=4)
    mon = _quiet()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CollapseWarning)
        for t in range(40):
            scale = 0.02 if 5 <= t < 30 else 1.0  # 50x smaller for 25 updates, then back
            u = mon.update(t, scale * E, y)
            if 5 <= t < 30:
                sig = u.record["raw"]
                assert "shrinking" not in sig
    assert not [w for w in caught if "shrinking" in str(w.message)]
    text = mon.update(40, 0.02 * E, y).signatures
    shrink = next(s for s in text if s.name == "shrinking")
    assert not shrink.holds and "stay ranked" in shrink.summary
