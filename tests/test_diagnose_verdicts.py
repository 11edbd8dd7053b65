"""Planted verdicts: collapse (lost class structure) told apart from compression and
from an untrained batch; the verdict block first, --summary, --fail-on, no margin."""

from __future__ import annotations

import numpy as np
import pytest

import isoapprox.diagnostics as D
from isoapprox import diameter
from isoapprox.cli import main
from isoapprox.commands.diagnose import _EPILOG
from isoapprox.theory import TheoryOptions

from . import planted

COLLAPSE_STATUSES = {"collapsed", "partial-collapse"}


def _verdict(E, y, margin=0.2):
    rep = D.diagnose(E, y, options=D.DiagnoseOptions(margin=margin))
    return rep, rep["verdict"]


def _held(rep):
    return {n for n, s in rep["signatures"].items() if s["holds"]}


def _compressed(rng, P=6, K=8, n=16, diam=0.3):
    E, y = planted.healthy(rng, P=P, K=K, n=n)
    return E * (diam / diameter(E)), y


@pytest.mark.parametrize("margin", [0.2, None])
def test_true_collapse_all_classes_mixed_in_a_tiny_ball(margin):
    """(i) Every point in a ball of diameter ~1e-5 around one point, classes mixed."""
    rep, v = _verdict(*planted.collapsed(np.random.default_rng(0)), margin=margin)
    assert v["status"] == "collapsed" and v["word"] == "COLLAPSED"
    assert "all_distances_small" in _held(rep)
    assert rep["retrieval"]["structure_score"] < 0.15  # at chance, far below 0.25
    assert "compressed" not in _held(rep)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_partial_collapse_names_exactly_the_merged_classes(seed):
    """(ii) 3 of 10 classes squeezed into one mixed blob, the other 7 apart and ranked."""
    E, y = planted.partial(np.random.default_rng(seed), P=10, K=8, merged=3)
    rep, v = _verdict(E, y)
    assert v["status"] == "partial-collapse" and v["signatures"][0] == "partial_collapse"
    ev = rep["signatures"]["partial_collapse"]["evidence"]
    assert [g["classes"] for g in ev["collapsed_groups"]] == [[0, 1, 2]]
    assert ev["structure_score"] < 0.15 and ev["rest_structure_score"] > 0.9
    assert "merged: classes 0, 1, 2." in v["headline"]
    assert "while the other 7 classes stay ranked" in v["headline"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_compression_is_not_collapse(seed):
    """(iii) A healthy, well-separated embedding scaled to diameter 0.3 at margin 0.2:
    every triplet may be active, but the classes are ranked perfectly."""
    E, y = _compressed(np.random.default_rng(seed))
    rep, v = _verdict(E, y)
    assert v["status"] == "compressed" and v["word"] == "COMPRESSED"
    assert not _held(rep) & set(D.COLLAPSE_SIGNATURES)
    assert rep["retrieval"]["recall_at_1"] == 1.0
    assert "not a collapse" in v["advice"].lower() or "not a collapse" in v["headline"]
    assert "learning-rate warmup" in v["advice"]


def test_compression_all_classes_in_one_cluster_is_worded_right():
    """The issue's case: every class in one cluster at h = margin / 2 and still ranked;
    no 'while the other classes stay apart' when there are none."""
    rng = np.random.default_rng(3)
    E, y = planted.healthy(rng, P=10, K=8, n=16)
    E = E / np.linalg.norm(E, axis=1, keepdims=True)
    E = 0.28 * E / diameter(E)
    rep, v = _verdict(E, y)
    assert v["status"] == "compressed"
    text = " ".join([v["headline"], *v["details"]])
    assert "the other classes stay apart" not in text


@pytest.mark.parametrize("seed", range(8))
def test_untrained_dense_batch_is_not_partial_collapse(seed):
    """(iv) An untrained n = 2 batch: Gaussian points, P = 8 classes x K = 4, labels
    random.  Nothing merged by training and nothing shrank, but the classes are not
    ranked either (structure score ~0 +- 0.12 over 200 seeds, threshold 0.25): the verdict
    is NO CLASS STRUCTURE (untrained-like), never PARTIAL COLLAPSE or COLLAPSED."""
    r = np.random.default_rng(seed)
    E = r.normal(size=(32, 2))
    y = r.permutation(np.repeat(np.arange(8), 4))
    rep, v = _verdict(E, y)
    assert v["status"] == "no-class-structure" and v["word"] == "NO CLASS STRUCTURE"
    assert "partial_collapse" not in _held(rep)
    assert "untrained" in v["headline"] and "initialisation" in v["advice"]


def test_healthy_is_healthy():
    """(v)"""
    rep, v = _verdict(*planted.healthy(np.random.default_rng(0)))
    assert v["status"] == "healthy" and v["word"] == "HEALTHY"
    assert rep["retrieval"]["r_precision"] == 1.0 and v["advice"] == ""


def test_negative_controls_imbalance_and_hard_pair():
    """(vi) One class of 60 points and seven of 3; two classes whose clouds overlap."""
    r = np.random.default_rng(5)
    y = np.concatenate([np.zeros(60, int), np.repeat(np.arange(1, 8), 3)])
    E = 6 * r.normal(size=(8, 16))[y] + r.normal(size=(len(y), 16))
    _, v = _verdict(E, y)
    assert v["status"] not in COLLAPSE_STATUSES | {"compressed", "no-class-structure"}
    y = np.repeat(np.arange(6), 8)
    C = 6 * r.normal(size=(6, 16))
    C[1] = C[0] + 0.125 * r.normal(size=16)
    rep, v = _verdict(C[y] + r.normal(size=(48, 16)), y)
    assert v["status"] not in COLLAPSE_STATUSES | {"no-class-structure"}
    assert 0.5 < rep["retrieval"]["structure_score"] < 0.95  # the pair is hard, not mixed


def test_structure_threshold_both_sides():
    """A blob of 3 classes, each shifted by 0.005 x a random direction: partly ranked
    (group score ~0.24); the threshold decides, on both sides of the score."""
    E, y = planted.partial(np.random.default_rng(0), P=10, K=8, merged=3, spread=0.01)
    d = np.random.default_rng(1).normal(size=(3, 16))
    for c in range(3):
        E[y == c] += 0.005 * d[c]
    st = D.collapse_statistics(E, y, margin=0.2)
    th = D.SignatureThresholds

    def held(**kw):
        return {s.name for s in D.detect_signatures(st, thresholds=th(**kw)) if s.holds}

    score = D.detect_signatures(st)[3].evidence["group_scores"][0]
    assert 0.1 < score < 0.25
    assert "partial_collapse" in held()
    assert "partial_collapse" in held(lost_structure_score=score)
    assert "partial_collapse" not in held(lost_structure_score=score * (1 - 1e-9))


@pytest.mark.parametrize("offset, status", [(0.3, "collapsed"), (0.9, "collapsed"),
                                            (1.5, "compressed")])
def test_tiny_ball_is_compressed_only_when_clearly_ranked(offset, status):
    """A ball of diameter ~1e-5 whose 4 classes are shifted apart by ``offset`` x their
    spread: mixed (score 0.15), in the band between the thresholds (0.39: not clearly
    ranked, still a collapse), clearly ranked (0.73 >= 0.5: compressed)."""
    r = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 8)
    E = 1e-6 * (offset * r.normal(size=(4, 8))[y] + r.normal(size=(32, 8)))
    rep, v = _verdict(E, y)
    assert v["status"] == status
    score = rep["retrieval"]["structure_score"]
    assert (score >= 0.5) == (status == "compressed")


# --- the options: no margin ----------------------------------------------------------


def test_no_margin_turns_margin_checks_off():
    E, y = _compressed(np.random.default_rng(1))
    rep = D.diagnose(E, y)  # DiagnoseOptions() has margin=None
    assert rep["data"]["margin"] is None
    assert rep["verdict"]["notes"] == [D.report.NO_MARGIN_NOTE]
    assert not rep["signatures"]["stuck_at_margin"]["holds"]
    assert not rep["signatures"]["large_margin"]["holds"]
    assert rep["verdict"]["status"] == "healthy"  # compression is relative to a margin
    rep = D.diagnose_batches(E, y, batch_size=16, samples_per_class=4, n_batches=3, rng=0,
                             theory=TheoryOptions())
    assert rep["verdict"]["notes"] == [D.report.NO_MARGIN_NOTE, D.report.THEORY_NEEDS_MARGIN]
    assert "theory" not in rep


# --- the command line ---------------------------------------------------------------


def _save(tmp_path, name, E, y):
    path = tmp_path / f"{name}.npz"
    np.savez(path, embeddings=E, labels=y)
    return str(path)


def _run(capsys, *argv):
    code = main(["diagnose", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_report_starts_with_the_verdict_block(tmp_path, capsys):
    path = _save(tmp_path, "p", *planted.partial(np.random.default_rng(0), P=10, merged=3))
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--no-theory")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "VERDICT: PARTIAL COLLAPSE"
    head = "\n".join(lines[:16])
    assert "what to do:" in head and "leave-one-out retrieval" in head
    assert "  input: " in out.split("statistics (exact")[0]
    assert out.index("VERDICT") < out.index("statistics (exact") < out.index("verdict details")


def test_summary_prints_only_the_verdict_block(tmp_path, capsys):
    path = _save(tmp_path, "c", *planted.collapsed(np.random.default_rng(0)))
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--summary", "--no-theory")
    assert code == 0 and out.startswith("VERDICT: COLLAPSED")
    assert "statistics" not in out and "signatures" not in out
    assert len(out.splitlines()) <= 16


def test_no_margin_note_and_theory_skipped(tmp_path, capsys):
    path = _save(tmp_path, "h", *planted.healthy(np.random.default_rng(0)))
    code, out, _ = _run(capsys, path, "--summary")
    assert code == 0 and "no margin given (--margin): margin-relative checks" in out
    assert "theory skipped" in out and "pass --margin" in out
    code, out, err = _run(capsys, path, "--out", str(tmp_path / "i.npz"))
    assert code == 2 and "needs the training margin" in err


@pytest.mark.parametrize("fail_on, want", [
    ("partial_collapse", 3), ("partial-collapse", 3), ("any", 3), ("compressed", 0),
    ("all_distances_small,partial_collapse", 3), ("healthy", 0),
])
def test_fail_on_exit_status(tmp_path, capsys, fail_on, want):
    path = _save(tmp_path, "p", *planted.partial(np.random.default_rng(0), P=10, merged=3))
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--no-theory", "--summary",
                        "--fail-on", fail_on)
    assert code == want and out.startswith("VERDICT: PARTIAL COLLAPSE")


def test_fail_on_healthy_and_batches(tmp_path, capsys):
    path = _save(tmp_path, "h", *planted.healthy(np.random.default_rng(0)))
    code, _, _ = _run(capsys, path, "--margin", "0.2", "--no-theory", "--fail-on", "any")
    assert code == 0
    path = _save(tmp_path, "c", *planted.collapsed(np.random.default_rng(0)))
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--no-theory", "--batch-size", "16",
                        "--fail-on", "all_distances_small")
    assert code == 3 and out.startswith("VERDICT: COLLAPSED")


def test_fail_on_unknown_name_is_one_line_exit_2(tmp_path, capsys):
    path = _save(tmp_path, "h", *planted.healthy(np.random.default_rng(0)))
    code, out, err = _run(capsys, path, "--fail-on", "collapse,bogus")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "`--fail-on` must be comma-separated names among" in lines[0]
    assert "partial_collapse" in lines[0] and "any" in lines[0]


def test_epilog_lists_each_signature_once_and_the_exit_statuses():
    for name in D.SIGNATURE_NAMES:
        listed = [ln for ln in _EPILOG.splitlines() if ln.strip().startswith(name + " ")]
        assert len(listed) == 1, name
    assert "3 when a\n  --fail-on signature holds" in _EPILOG


@pytest.mark.parametrize("extra", [["--summary"], ["--fail-on", "any"]])
def test_report_options_are_refused_with_history(tmp_path, capsys, extra):
    """--summary and --fail-on shape an embedding file's report; with --history they
    used to be ignored silently."""
    from isoapprox.cli import main

    status = main(["diagnose", "--history", str(tmp_path / "run.jsonl"), *extra, "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert "cannot be combined with --history" in err[0] and extra[0] in err[0]
