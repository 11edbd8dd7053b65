"""``isoapprox diagnose`` with the theory section: the trained stuck-at-margin case, --out,
--plot, --no-theory, batches, subsample, and the error paths."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from isoapprox import diameter, hausdorff_like, isometric_error, separation_report
from isoapprox.cli import main
from isoapprox.diagnostics import STUCK_DIAMETER_RATIO, STUCK_MARGIN_RTOL

from . import planted

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STUCK = EXAMPLES / "stuck_at_margin.npz"
#: a short work budget: the findings tested below are decided by closed forms and
#: proven bounds (counts of work, so the same on a busy machine)
FAST = ("--effort", "quick")


def _run(capsys, *argv):
    code = main(["diagnose", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def _save(tmp_path, name, E, y):
    path = tmp_path / f"{name}.npz"
    np.savez(path, embeddings=E, labels=y)
    return path


def _load_script():
    spec = importlib.util.spec_from_file_location("make_stuck_at_margin",
                                                  EXAMPLES / "make_stuck_at_margin.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _assert_stuck_detected(out: str, doc: dict) -> None:
    assert "COLLAPSED" in out and "[x] stuck_at_margin" in out
    assert "P > n + 1 = 3" in out
    assert re.search(r"d_iso\(E, F_TS\) <= L +fails +d_iso > L \(certified\)", out)
    assert "no longer a faithful proxy" in out
    v, t = doc["verdict"], doc["theory"]
    assert v["status"] == "collapsed" and "stuck_at_margin" in v["signatures"]
    assert t["beyond_simplex"] and t["n_separated_classes"] == 16 and t["dim"] == 2
    assert t["loss_faithful"] is False
    assert t["d_iso_lower"] > t["loss_max"] and t["d_iso"] > t["loss_max"]
    assert t["iso"]["lower_source"] in ("packing", "sub_batch_packing")


def test_trained_stuck_at_margin_is_detected(tmp_path, capsys):
    out_json = tmp_path / "r.json"
    code, out, err = _run(capsys, STUCK, "--margin", "0.2", "--loss", "0.2002", "--json",
                          out_json, *FAST)
    assert code == 0 and err == ""
    doc = json.loads(out_json.read_text())
    _assert_stuck_detected(out, doc)
    # D*(7, 2) = 2 alpha: a layout exists; D*(8, 2) > 2 alpha: impossible from 8 on
    assert re.search(r"most classes per batch, D\* <= 2 x margin +7 +a layout exists; batch "
                     r"size 28 at K = 4; impossible from 8", out)
    assert doc["theory"]["suggestion"]["batch_size"] == 28


@pytest.mark.reproducibility
def test_training_reproduces_the_stuck_case(tmp_path, capsys):
    """The script that made the example still trains into the same collapse.

    Not into the same digits: the run is chaotic, and the last bits of the BLAS
    kernel and of numpy's SIMD tanh move the collapse onset between steps ~100
    and ~200 (the shipped file, made on another machine, differs from a rerun
    on an AVX2 machine by up to 0.4 in a coordinate).  Once collapsed, SGD at
    this learning rate keeps the batch on a noisy plateau: over 200 ulp-level
    perturbations of the initial weights (and under OPENBLAS_CORETYPE=
    Sandybridge or Nehalem and NPY_DISABLE_CPU_FEATURES=X86_V3) the step-300
    diameter was 2.0e-4 to 1.8e-3 and the loss exceeded the margin by at most
    4.2e-4.  So the test asserts the stuck-at-margin signature itself (the
    thresholds ``isoapprox diagnose`` uses, 10x above those spreads), not a
    bound that the plateau's own noise reaches (the former ``diameter < 0.01 x
    margin`` held by only 11 % in the worst perturbation).
    """
    mod = _load_script()
    path = mod.main(["--out", str(tmp_path / "stuck.npz")])
    capsys.readouterr()
    new, shipped = np.load(path), np.load(STUCK)
    assert np.array_equal(new["labels"], shipped["labels"])  # the sampler's stream only
    margin = float(new["margin"])
    assert margin == 0.2
    for z in (new, shipped):
        assert abs(float(z["loss"]) - margin) <= STUCK_MARGIN_RTOL * margin
        assert diameter(z["embeddings"]) <= STUCK_DIAMETER_RATIO * margin
    out_json = tmp_path / "r.json"
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--json", out_json, *FAST)
    assert code == 0
    _assert_stuck_detected(out, json.loads(out_json.read_text()))


def test_out_saves_the_nearest_ideal_embedding(tmp_path, capsys):
    E, y = planted.collapsed(np.random.default_rng(5), P=6, K=3, n=2)
    y = np.array([f"c{k}" for k in y])
    path = _save(tmp_path, "c", E, y)
    out_npz = tmp_path / "ideal.npz"
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--out", out_npz, *FAST)
    assert code == 0 and f"written: {out_npz}" in out
    z = np.load(out_npz)
    assert set(z.files) >= {"embedding", "embedding_aligned", "embedding_haus", "labels",
                            "indices", "d_iso", "d_iso_lower", "d_iso_upper", "d_haus",
                            "d_haus_lower", "d_haus_upper", "kind", "c", "theta", "d_star"}
    assert z["labels"].tolist() == y.tolist() and z["indices"].tolist() == list(range(18))
    G = z["embedding"]
    assert separation_report(G, y, margin=0.2, atol=0.0).worst_slack >= 0.0
    assert isometric_error(E, G) == float(z["d_iso"]) == float(z["d_iso_upper"])
    assert float(z["d_iso_lower"]) <= float(z["d_iso"])
    assert hausdorff_like(E, z["embedding_haus"]) == float(z["d_haus"])
    assert str(z["kind"]) in ("collapsed", "class-collapsed", "general")


def test_plot_writes_png_and_pdf_from_the_report(tmp_path, capsys):
    out_json, figs = tmp_path / "r.json", tmp_path / "figs"
    code, out, _ = _run(capsys, STUCK, "--margin", "0.2", "--plot", figs, "--json", out_json,
                        *FAST)
    assert code == 0
    for stem in ("diagnose_view", "diagnose_distances"):
        for ext in ("png", "pdf", "json"):
            assert (figs / f"{stem}.{ext}").stat().st_size > 0
        side = json.loads((figs / f"{stem}.json").read_text())
        assert side["sources"][0]["path"] == str(out_json)
    assert (figs / "diagnose_view.png").read_bytes()[:4] == b"\x89PNG"
    view = json.loads(out_json.read_text())["view"]
    assert view["n_shown"] == 64 and len(view["ideal"]) == 64


@pytest.mark.parametrize("skip", [["--no-theory"], ["--theory-batches", "0"]])
def test_no_theory(tmp_path, capsys, skip):
    out_json, figs = tmp_path / "r.json", tmp_path / "figs"
    code, out, _ = _run(capsys, EXAMPLES / "collapsed.npz", "--margin", "0.2", *skip,
                        "--json", out_json, "--plot", figs)
    assert code == 0 and "theory:" not in out and "d_iso(E, F_TS)" not in out
    doc = json.loads(out_json.read_text())
    assert "theory" not in doc and doc["view"]["ideal"] is None
    assert (figs / "diagnose_view.png").exists() and (figs / "diagnose_distances.png").exists()


def test_healthy_and_collapsed_examples(capsys):
    code, out, _ = _run(capsys, EXAMPLES / "healthy.npz", "--margin", "0.2", *FAST)
    assert code == 0 and "HEALTHY" in out
    assert re.search(r"d_iso\(E, F_TS\) +0 ", out)
    assert "the embedding is triplet-separated at margin 0.2" in out
    code, out, _ = _run(capsys, EXAMPLES / "collapsed.npz", "--margin", "0.2", *FAST)
    assert code == 0 and "COLLAPSED" in out and "P <= n + 1 = 9" in out
    assert "D*(P, n, margin)  " in out


def test_batch_mode_runs_theory_on_the_first_batches(tmp_path, capsys):
    E, y = planted.collapsed(np.random.default_rng(3), P=10, K=6, n=2)
    path = _save(tmp_path, "c", E, y)
    out_json = tmp_path / "b.json"
    code, out, _ = _run(capsys, path, "--batch-size", "12", "--samples-per-class", "3",
                        "--n-batches", "3", "--theory-batches", "2", "--margin", "0.1",
                        "--json", out_json, *FAST)
    assert code == 0
    assert "Theory on 2 of 3 batches: 2 of 2 hold more than n + 1 classes" in out
    assert "theory.d_iso" in out and "theory.n_points" not in out
    doc = json.loads(out_json.read_text())
    assert doc["theory"]["unfaithful"] == 2
    assert doc["statistics"]["theory.n_points"]["max"] == 12


def test_large_file_uses_a_subsample(tmp_path, capsys):
    E, y = planted.collapsed(np.random.default_rng(4), P=10, K=4, n=2)
    path = _save(tmp_path, "c", E, y)
    out_npz = tmp_path / "i.npz"
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--theory-max-points", "12",
                        "--out", out_npz, *FAST)
    # the section's title says which points it describes: a P x K batch of the file
    assert code == 0 and "on a random batch of 3 classes x 4 = 12 of the 40 points" in out
    assert "P x K sampling" in out
    z = np.load(out_npz)
    assert z["indices"].size == 12 and z["embedding"].shape == (12, 2)
    assert z["labels"].tolist() == y[z["indices"]].tolist()


def test_large_file_theory_over_several_random_batches(tmp_path, capsys):
    E, y = planted.collapsed(np.random.default_rng(4), P=10, K=4, n=2)
    path = _save(tmp_path, "c", E, y)
    js = tmp_path / "r.json"
    code, out, _ = _run(capsys, path, "--margin", "0.2", "--theory-max-points", "12",
                        "--theory-batches", "3", "--json", js, *FAST)
    assert code == 0 and "on 3 random batches of 3 classes x 4 = 12 of the 40 points" in out
    assert "over 3 random batches" in out
    rep = json.loads(js.read_text())
    batches = rep["theory"]["batches"]
    assert batches["n_batches"] == 3 and batches["summary"]["n_evaluated"] == 3
    assert rep["theory"]["evaluated"]["batch"] == 0
    assert any("Theory on 3 of 3 batches" in d for d in rep["verdict"]["details"])


def _partial_file(tmp_path):
    """A small planted partial collapse: 6 of 16 classes merged, 64 points in R^8."""
    E, y = planted.partial(np.random.default_rng(0), P=16, K=4, n=8, merged=6)
    return _save(tmp_path, "partial", E, y)


def test_sections_state_their_budget(tmp_path, capsys):
    js = tmp_path / "r.json"
    code, out, _ = _run(capsys, _partial_file(tmp_path), "--margin", "0.2", "--json", js)
    assert code == 0
    assert "statistics (exact, no sampling: all 64 points, 2016 pairs; enclosing balls " \
           "certified to 1e-12)" in out
    assert re.search(r"work budget \(effort default\) +64 points, 16 classes +per solve <= 24 "
                     r"local solves \(fewer beyond 16 points\) at max_iter 200, 20000 nodes, "
                     r"4000 LPs, 8 sub-problems; used d_iso: \d+ local solves at max_iter 50 "
                     r"\(\d+ iterations; statement 3 decided\); safety net 600 s "
                     r"\(not reached\)", out)
    assert re.search(r"certified +what the verdict reads +d_iso bracket, D\*, layout; not: "
                     r"minimax Procrustes", out)
    assert re.search(r"thickness theta\(E\) +not computed +not read by the verdict", out)
    doc = json.loads(js.read_text())
    b = doc["theory"]["budget"]
    assert (b["certify"], b["effort"], b["points"], b["classes"]) == ("verdict", "default", 64, 16)
    assert b["per_solve"]["n_starts"] == 24 and b["iso_stages"][0]["verdict_decided"]
    assert doc["theory"]["theta"] is None  # not computed (NaN in memory)
    st = doc["statistics"]["budget"]
    assert st["sampled"] is False and st["pairs"] == 2016 and st["points"] == 64


def test_planted_partial_collapse_verdicts_do_not_depend_on_certify_all(tmp_path, capsys):
    """The default (certify only what the verdict reads) and --certify-all (every
    quantity, the former default) reach the same verdicts on a planted partial collapse."""
    path = _partial_file(tmp_path)
    docs, outs = {}, {}
    for name, extra in (("verdict", []), ("all", ["--certify-all"])):
        js = tmp_path / f"{name}.json"
        code, outs[name], _ = _run(capsys, path, "--margin", "0.2", "--json", js, *extra)
        assert code == 0
        docs[name] = json.loads(js.read_text())
    lean, full = docs["verdict"], docs["all"]
    for key in ("status", "headline", "signatures", "advice"):
        assert lean["verdict"][key] == full["verdict"][key], key
    assert lean["verdict"]["status"] == "partial-collapse"
    assert lean["signatures"] == full["signatures"]
    for key in ("loss_faithful", "beyond_simplex", "n_separated_classes", "d_star",
                "d_star_lower", "d_star_upper", "max_classes", "min_dim", "loss_max"):
        assert lean["theory"][key] == full["theory"][key], key
    for check in ("loss_lower_check", "loss_upper_check"):
        assert lean["theory"][check]["holds"] == full["theory"][check]["holds"]
    assert lean["theory"]["loss_faithful"] is True and lean["theory"]["beyond_simplex"]
    assert full["theory"]["budget"]["certify"] == "all" and full["theory"]["theta"] > 0
    assert re.search(r"thickness theta\(E\) +0\.0", outs["all"])
    assert re.search(r"certified +all +thickness starts 0", outs["all"])


def _errors(tmp_path):
    E, y = planted.healthy(np.random.default_rng(0), P=3, K=3, n=2)
    ok = _save(tmp_path, "ok", E, y)
    (tmp_path / "afile").write_text("x")
    return {
        "out suffix": ([ok, "--out", tmp_path / "x.txt"], r"`--out` must name a .npz file"),
        "out without theory": ([ok, "--out", tmp_path / "x.npz", "--no-theory"],
                               r"`--out` saves the nearest ideal embedding.*drop --no-theory"),
        "plot with batches": ([ok, "--plot", tmp_path / "f", "--batch-size", "4",
                               "--samples-per-class", "2"],
                              r"cannot be combined with --batch-size"),
        "out with batches": ([ok, "--out", tmp_path / "x.npz", "--batch-size", "4",
                              "--samples-per-class", "2"],
                             r"cannot be combined with --batch-size"),
        "plot is a file": ([ok, "--plot", tmp_path / "afile"], r"`--plot` must name a folder"),
        "time limit": ([ok, "--theory-time-limit", "0"],
                       r"`--theory-time-limit`: `time_limit` must be > 0; got 0.0"),
        "max points": ([ok, "--theory-max-points", "2"],
                       r"`--theory-max-points`: `max_points` must be >= 3; got 2"),
        "theory batches": ([ok, "--theory-batches", "-1"], r"`--theory-batches` must be >= 0"),
    }


def test_errors_are_one_line_exit_2(tmp_path, capsys):
    for name, (argv, pattern) in _errors(tmp_path).items():
        code, out, err = _run(capsys, *argv)
        assert code == 2, name
        assert out == "", name
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("isoapprox diagnose: error: "), (name, err)
        assert re.search(pattern, lines[0]), (name, lines[0])
    assert not (tmp_path / "x.npz").exists() and not (tmp_path / "f").exists()


def test_help_lists_the_theory_options(capsys):
    with pytest.raises(SystemExit):
        main(["diagnose", "--help"])
    out = capsys.readouterr().out
    for word in ("--no-theory", "--effort", "--certify-all", "--theory-time-limit",
                 "--theory-max-points", "--theory-batches", "--out", "--plot",
                 "D*(P, n, margin)"):
        assert word in out, word
