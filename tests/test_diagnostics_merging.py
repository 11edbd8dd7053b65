"""Partial and class-level collapse: the clustering kernel, merged groups, planted cases,
and the consistency signatures."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist, squareform

from isoapprox import diagnostics as D
from isoapprox.cli import main
from isoapprox.diagnostics.distances import scaled
from isoapprox.exceptions import InvalidInputError
from isoapprox.io import to_jsonable
from isoapprox.kernels import stats as KS

from . import planted

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ROOT = Path(__file__).resolve().parent.parent
#: a cut height this far (relative) from every pair distance decides each link the
#: same way in any summation order (pdist, scipy's linkage, the tile kernel)
CUT_GAP = 1e-9


# --- the kernel against brute force and scipy ---------------------------------


def _components_bruteforce(E, h):
    """Labels (least index of the component) by a breadth-first search on the matrix."""
    D_ = squareform(pdist(E)) if len(E) > 1 else np.zeros((1, 1))
    N = len(E)
    labels = np.full(N, -1)
    for i in range(N):
        if labels[i] >= 0:
            continue
        labels[i] = i
        todo = [i]
        while todo:
            a = todo.pop()
            for b in np.flatnonzero((D_[a] <= h) & (labels < 0)):
                labels[b] = i
                todo.append(b)
    return labels


def _kernel(E, h, chunks=1):
    Xs, XT, s = scaled(np.asarray(E, dtype=np.float64), h)
    return KS.threshold_components(Xs, XT, h * s, chunks)


def _same_partition(a, b):
    pairs = set(zip(np.asarray(a).tolist(), np.asarray(b).tolist(), strict=True))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def _safe_height(E, q):
    """A height between two consecutive distinct pair distances (no link on a knife edge)."""
    d = np.unique(pdist(E))
    k = min(int(q * len(d)), len(d) - 1)
    lo = d[k]
    hi = d[k + 1] if k + 1 < len(d) else 2 * lo + 1
    h = 0.5 * (lo + hi)
    return h if (hi - lo) > CUT_GAP * max(hi, 1.0) else None


@pytest.mark.parametrize("N,n,chunks", [(1, 2, 1), (2, 1, 1), (7, 3, 2), (70, 2, 3),
                                        (203, 5, 4), (300, 1, 7)])
def test_components_against_bruteforce_and_scipy(rng, N, n, chunks):
    E = rng.normal(size=(N, n))
    E[N // 2:N // 2 + 3] = E[0]  # duplicates
    for q in (0.0, 0.02, 0.3):
        h = _safe_height(E, q) if N > 1 else 0.5
        if h is None:
            continue
        got = _kernel(E, h, chunks)
        np.testing.assert_array_equal(got, _components_bruteforce(E, h))
        if N > 1:
            ref = fcluster(linkage(pdist(E), "single"), h, criterion="distance")
            assert _same_partition(got, ref)


@pytest.mark.parametrize("N,n,chunks", [(7, 3, 2), (203, 5, 4)])
def test_fused_sweep_gives_the_histogram_and_the_components_of_separate_sweeps(rng, N, n,
                                                                               chunks):
    # collapse_statistics joins the single linkage to the histogram's sweep
    E = rng.normal(size=(N, n))
    h = _safe_height(E, 0.05)
    Xs, XT, s = scaled(E, h)
    d = pdist(Xs)
    lo, hi = float(d.min()), float(d.max())
    scale = 64 / (hi - lo)
    counts, mins, maxs, sums, labels = KS.pair_sweep(Xs, XT, lo, hi, scale, 64, h * s, chunks)
    ref = KS.pair_histogram(Xs, XT, lo, hi, scale, 64, chunks)
    for got, want in zip((counts, mins, maxs, sums), ref, strict=True):
        np.testing.assert_array_equal(got, want)
    assert counts.sum() == len(d)
    np.testing.assert_array_equal(labels, _components_bruteforce(E, h))
    # and through the statistics: the same groups as class_merging at that height
    y = np.arange(N) % 5
    st_ = D.collapse_statistics(E, y, margin=3.0)  # merge height 1.5: some links
    mg = D.class_merging(E, y, height=st_.merging.height)
    a, b = st_.merging.to_dict(), mg.to_dict()
    for key in ("margin_ratio", "diameter_ratio"):  # how the height was chosen
        del a[key], b[key]
    assert a == b and a["n_components"] < N


@given(
    pts=st.lists(st.tuples(st.integers(-6, 6), st.integers(-6, 6)), min_size=2, max_size=40),
    q=st.floats(0.0, 1.0),
    chunks=st.integers(1, 5),
)
def test_components_property_against_scipy(pts, q, chunks):
    E = np.array(pts, dtype=np.float64) / 3.0
    h = _safe_height(E, q)
    if h is None:
        return
    got = _kernel(E, h, chunks)
    assert _same_partition(got, fcluster(linkage(pdist(E), "single"), h, criterion="distance"))
    # labels are the least index of each component, whatever the chunking
    assert np.all(got <= np.arange(len(E))) and np.all(got[got] == got)
    np.testing.assert_array_equal(got, _kernel(E, h, 1))


# --- merged groups, collapsed classes, overlaps --------------------------------


def test_class_merging_groups_majority_and_collapsed_classes():
    E = np.array([[0.0], [0.01], [0.02], [0.03], [0.04], [5.0], [9.0], [9.0], [20.0], [21.0]])
    y = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    m = D.class_merging(E, y, height=0.1)
    # class 2 has one of its two points in the blob: not a majority, but counted there
    assert [(g.classes, g.n_points) for g in m.groups] == [((0, 1), 5)]
    assert math.isclose(m.groups[0].share, 0.5) and math.isclose(m.groups[0].diameter, 0.04)
    assert [g.classes for g in m.collapsed_classes] == [(3,)]
    assert m.class_group.tolist() == [0, 0, -1, -1, -1]
    assert m.n_merged_classes == 2 and m.merged_points == 5
    json.dumps(to_jsonable(m.to_dict()), allow_nan=False)
    with pytest.raises(InvalidInputError, match="`height` must be >= 0"):
        D.class_merging(E, y, height=-1.0)


def test_overlaps_against_bruteforce(rng):
    E = rng.normal(size=(60, 3))
    y = rng.integers(0, 5, size=60)
    m = D.class_merging(E, y, height=0.0)
    Dm = squareform(pdist(E))
    want: dict[tuple[int, int], int] = {}
    for a in range(60):
        pos = (y == y[a]) & (np.arange(60) != a)
        neg = y != y[a]
        if not pos.any():
            continue
        m_idx = np.flatnonzero(neg)[np.argmin(Dm[a, neg])]
        if Dm[a, m_idx] < Dm[a, pos].max():
            key = (int(y[a]), int(y[m_idx]))
            want[key] = want.get(key, 0) + 1
    got = {}
    for a, b, na, nb in m.overlaps:
        if na:
            got[(a, b)] = na
        if nb:
            got[(b, a)] = nb
    assert got == want
    assert m.invaded.sum() == sum(want.values())
    assert m.n_overlapping_pairs == len({tuple(sorted(k)) for k in want})


def test_merge_height_default_rule():
    assert D.merge_height(0.2, 1.0) == 0.1
    assert D.merge_height(0.2, 100.0) == 1.0
    assert D.merge_height(0.0, 7.0) == 0.07
    st_ = D.collapse_statistics(*planted.partial(np.random.default_rng(0)), margin=0.2)
    assert st_.merging.height == max(0.1, 0.01 * st_.diameter)


# --- planted partial collapse ----------------------------------------------------


@pytest.mark.parametrize("P,merged,margin", [
    (40, 4, 0.2),     # 10%
    (40, 10, 0.2),    # 25%
    (64, 24, 0.2),    # 37.5%, the issue's file
    (64, 24, 0.0),    # the same without the margin
    (40, 20, 0.2),    # 50%
    (40, 36, 0.2),    # 90%
    (40, 36, 0.0),
])
def test_planted_partial_collapse(P, merged, margin):
    E, y = planted.partial(np.random.default_rng(P + merged), P=P, merged=merged)
    rep = D.diagnose(E, y, options=D.DiagnoseOptions(margin=margin))
    v = rep["verdict"]
    assert v["status"] == "partial-collapse" and v["signatures"][0] == "partial_collapse"
    mg = rep["classes"]["merging"]
    assert [set(g["classes"]) for g in mg["groups"]] == [set(range(merged))]
    share = merged / P
    assert mg["merged_share"] == share
    assert v["headline"].startswith(
        f"PARTIAL COLLAPSE: {merged} of {P} classes, {share:.1%} of the points, merged into "
        "one cluster")
    table = rep["classes"]["table"]
    assert {r["class"] for r in table[:merged]} == set(range(merged))
    assert all(r["group"] == 0 for r in table[:merged])
    assert all(r["group"] is None for r in table[merged:])
    json.dumps(to_jsonable(rep), allow_nan=False)


def test_issue_file_numbers():
    """The issue's file: 512 points in R^16, 64 classes, 24 in one blob, float32."""
    E, y = planted.partial(np.random.default_rng(0))
    assert E.dtype == np.float32 and E.shape == (512, 16)
    st_ = D.collapse_statistics(E, y, margin=0.2)
    assert 0.08 < st_.batch_hard_mean < 0.095
    assert 0.13 < st_.active_fraction < 0.145
    rep = D.diagnose(E, y, options=D.DiagnoseOptions(margin=0.2, loss=0.2))
    v = rep["verdict"]
    assert v["status"] == "partial-collapse"
    assert v["headline"].startswith(
        "PARTIAL COLLAPSE: 24 of 64 classes, 37.5% of the points, merged into one cluster")
    assert "loss_mismatch" in v["signatures"]
    sig = rep["signatures"]["loss_mismatch"]
    assert sig["holds"] and "0.08825" in sig["summary"]
    # the reported 0.2 is the mean over the active triplets: said, still a mismatch
    assert sig["evidence"]["matches_other"] == ["triplet loss, mean over the active triplets"]
    assert "about as far as its hardest negative" not in json.dumps(v)


def test_partial_share_threshold_both_sides():
    E, y = planted.partial(np.random.default_rng(3), P=40, merged=4)
    st_ = D.collapse_statistics(E, y, margin=0.2)
    share = st_.merging.merged_share
    th = D.SignatureThresholds

    def held(t):
        return {s.name for s in D.detect_signatures(st_, thresholds=t) if s.holds}

    assert share == 0.1
    assert "partial_collapse" in held(th(partial_collapse_share=share))
    assert "partial_collapse" not in held(th(partial_collapse_share=share * (1 + 1e-9)))


def test_planted_healthy_and_examples_keep_their_verdicts(capsys):
    rng = np.random.default_rng(7)
    for name, make in planted.CASES.items():
        E, y = make(rng)
        st_ = D.collapse_statistics(E, y, margin=0.2)
        assert st_.merging.groups == () or name == "collapsed", name
        sig = {s.name: s for s in D.detect_signatures(st_)}
        assert not sig["partial_collapse"].holds, name
    E, y = planted.class_collapsed(rng)
    assert len(D.collapse_statistics(E, y).merging.collapsed_classes) == 6
    for file, margin, status in (("healthy.npz", 0.2, "healthy"),
                                 ("collapsed.npz", 0.2, "collapsed"),
                                 ("stuck_at_margin.npz", 0.2, "collapsed")):
        data = np.load(EXAMPLES / file)
        rep = D.diagnose(data["embeddings"], data["labels"],
                         options=D.DiagnoseOptions(margin=margin))
        assert rep["verdict"]["status"] == status, file
        assert not rep["signatures"]["partial_collapse"]["holds"], file


def test_merge_ratios_must_match_the_statistics():
    E, y = planted.healthy(np.random.default_rng(1))
    st_ = D.collapse_statistics(E, y, margin=0.2, merge_margin_ratio=0.3)
    assert st_.merging.height == max(0.06, 0.01 * st_.diameter)
    with pytest.raises(InvalidInputError, match=r"`thresholds.merge_margin_ratio` must be the "
                                                r"one the statistics were computed with \(0.3\)"):
        D.detect_signatures(st_)
    D.detect_signatures(st_, thresholds=D.SignatureThresholds(merge_margin_ratio=0.3))
    rep = D.diagnose(E, y, options=D.DiagnoseOptions(
        margin=0.2, thresholds=D.SignatureThresholds(merge_diameter_ratio=0.5)))
    assert rep["classes"]["merging"]["height"] == 0.5 * rep["collapse"]["diameter"]


# --- consistency signatures ------------------------------------------------------


def _sig(stats, name, **kw):
    return {s.name: s for s in D.detect_signatures(stats, **kw)}[name]


def test_loss_mismatch_both_sides():
    E, y = planted.partial(np.random.default_rng(0))
    st_ = D.collapse_statistics(E, y, margin=0.2)
    bh, rtol = st_.batch_hard_mean, D.LOSS_MISMATCH_RTOL
    assert not _sig(st_, "loss_mismatch").holds  # no reported loss
    assert not _sig(st_, "loss_mismatch", loss=bh * 1.01).holds
    assert _sig(st_, "loss_mismatch", loss=0.2).holds
    # the tolerance: rtol x max(reported, computed, margin) around the batch-hard loss
    tol = rtol * max(bh, 0.2)
    assert not _sig(st_, "loss_mismatch", loss=bh + 0.5 * tol).holds
    assert _sig(st_, "loss_mismatch", loss=bh + 2 * tol).holds
    # the soft-margin loss counts as the file's loss too
    assert not _sig(st_, "loss_mismatch", loss=st_.soft_margin_mean).holds
    th = D.SignatureThresholds(loss_mismatch_rtol=0.5)
    assert not _sig(st_, "loss_mismatch", loss=0.2, thresholds=th).holds


def test_missing_classes_and_large_margin():
    rng = np.random.default_rng(2)
    E, y = planted.healthy(rng)
    y = y.copy()
    y[-1] = 99  # a class of one point
    st_ = D.collapse_statistics(E, y, margin=0.2)
    sig = _sig(st_, "missing_classes")
    assert sig.holds and sig.evidence["singleton_classes"] == [99]
    assert f"over {len(y) - 1} anchors" in sig.summary
    assert not _sig(D.collapse_statistics(*planted.healthy(rng)), "missing_classes").holds
    E, y = planted.healthy(rng)
    d = D.collapse_statistics(E, y).diameter
    r = D.LARGE_MARGIN_RATIO
    assert _sig(D.collapse_statistics(E, y, margin=r * d * (1 + 1e-6)), "large_margin").holds
    assert not _sig(D.collapse_statistics(E, y, margin=r * d * (1 - 1e-6)), "large_margin").holds
    assert not _sig(D.collapse_statistics(E, y, margin=0.0), "large_margin").holds
    # under full collapse the margin is large against nothing meaningful: not evaluated
    E, y = planted.collapsed(rng)
    assert not _sig(D.collapse_statistics(E, y, margin=0.2), "large_margin").holds


def test_batches_count_partial_collapse_and_coverage():
    E, y = planted.partial(np.random.default_rng(4), P=20, merged=14)
    y = y.copy()
    y[-3:] = [97, 98, 99]  # three singleton classes: never drawn with K = 4
    rep = D.diagnose_batches(E, y, batch_size=32, n_batches=6, rng=0,
                             options=D.DiagnoseOptions(margin=0.2))
    assert rep["signatures"]["partial_collapse"]["batches"] >= 4
    assert rep["verdict"]["status"] == "partial-collapse"
    cov = rep["data"]["coverage"]
    assert cov["classes_too_small"] == 3 and {97, 98, 99} <= set(cov["classes_never_drawn"])
    assert any("are in none of the 6 batches" in d for d in rep["verdict"]["details"])


# --- the command line ------------------------------------------------------------


def test_cli_issue_file(tmp_path, capsys):
    E, y = planted.partial(np.random.default_rng(0))
    path = tmp_path / "issue.npz"
    np.savez(path, embeddings=E, labels=y)
    out_json = tmp_path / "r.json"
    code = main(["diagnose", str(path), "--margin", "0.2", "--loss", "0.2", "--no-theory",
                 "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 0
    assert "PARTIAL COLLAPSE: 24 of 64 classes, 37.5% of the points, merged into one" in out
    assert "[x] partial_collapse" in out and "[x] loss_mismatch" in out
    assert "classes: merged groups at height h = 0.228" in out
    assert "... 56 more classes in the JSON report" in out
    doc = json.loads(out_json.read_text())
    assert len(doc["classes"]["table"]) == 64
    code = main(["diagnose", str(path), "--margin", "0.2", "--no-theory",
                 "--threshold", "partial_collapse_share=0.5"])
    out = capsys.readouterr().out
    assert code == 0 and "[ ] partial_collapse" in out and "PARTIAL COLLAPSE" not in out


@pytest.mark.slow
def test_memory_is_linear_in_the_points():
    """N = 20,000 points: an N x N matrix of booleans alone would take 400 MB."""
    code = (
        "import resource, numpy as np\n"
        "from isoapprox.diagnostics import class_merging\n"
        "rng = np.random.default_rng(0)\n"
        "E = rng.normal(size=(20000, 2)); y = rng.integers(0, 500, 20000)\n"
        "class_merging(E[:200], y[:200], height=0.01)\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "m = class_merging(E, y, height=0.002)\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert int(out.stdout.strip()) < 200  # MiB


def test_report_names_classes_by_label():
    E, y = planted.partial(np.random.default_rng(1), P=10, merged=4)
    labels = np.array([f"class-{v}" for v in y])
    rep = D.diagnose(E, labels, options=D.DiagnoseOptions(margin=0.2))
    assert rep["classes"]["merging"]["groups"][0]["classes"] == [f"class-{k}" for k in range(4)]
    assert {r["nearest_class"] for r in rep["classes"]["table"]} <= set(labels.tolist())
    assert "classes class-0, class-1, class-2, class-3" in rep["verdict"]["details"][0]
