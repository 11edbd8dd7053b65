"""experiments/collapse_phase.py: the --smoke run end to end, the statistics, bad arguments."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.io import read_results
from tests.figure_check import all_problems, meaning_problems, saved_problems

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mod():
    spec = importlib.util.spec_from_file_location(
        "collapse_phase", ROOT / "experiments" / "collapse_phase.py")
    m = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = m  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(m)
    return m


@pytest.fixture(scope="module")
def smoke(mod, tmp_path_factory):
    """One --smoke run with figures (the slow part, shared by the tests below)."""
    tmp = tmp_path_factory.mktemp("phase")
    out, figs = tmp / "smoke.json", tmp / "figs"
    assert mod.main(["--smoke", "--out", str(out), "--quiet", "--figures", str(figs)]) == 0
    return out, figs


@pytest.mark.smoke
def test_smoke_results_file(mod, smoke):
    out, _ = smoke
    doc = read_results(out)
    assert doc["experiment"] == "collapse_phase"
    cells = mod.SMOKE.cells()
    assert len(doc["records"]) == len(cells) == 2 * 2 * 2 * 2 * 2  # data x P x n x set-up x seed
    assert doc["config"]["seeds"] == [0, 1] and doc["seed"]["root_seed"] == mod.SMOKE.root_seed
    assert {"numpy", "isoapprox", "blas"} <= set(doc["provenance"])
    assert out.with_suffix(".csv").exists()
    compact = read_results(mod.compact_path(out))
    recs = compact["records"]
    assert {r["dataset"] for r in recs} == {"gaussian", "digits"}
    assert {r["setup"] for r in recs} == {"batch_hard", "selectively_contrastive"}
    for r in recs:
        assert r["K"] == 4 and r["P"] in (2, 8)
        # the certified bracket of the trained sub-batch, and D* of its classes
        assert 0.0 <= r["final_ideal_d_iso_lower"] <= r["final_ideal_d_iso_upper"]
        assert r["final_ideal_d_star_sub_lower"] <= r["final_ideal_d_star_sub_upper"]
        assert r["final_ideal_d_star_sub_upper"] <= r["final_ideal_d_star_upper"] + 1e-12
        # statement 3's lower bound holds on the sub-batch: L / 2 <= d_iso
        assert r["final_ideal_sub_loss_max"] / 2 <= r["final_ideal_d_iso_upper"] * (1 + 1e-9)
    # the analysis: one row per cell, one verdict per data set x set-up x optimiser
    assert len(compact["cells"]) == 2 * 2 * 2 * 2
    assert all(c["runs"] == 2 and c["wilson_lower"] <= c["rate"] <= c["wilson_upper"]
               for c in compact["cells"])
    assert len(compact["verdicts"]) == 4
    assert {v["verdict"] for v in compact["verdicts"]} <= {
        "reproduced", "refuted", "qualified", "not tested"}
    assert compact["dstar_curve"]["first_P"]["2"] == 7  # D*(7, 2) = 2 alpha: the hexagon


@pytest.mark.smoke
def test_smoke_figures_read_well(mod, smoke):
    out, _ = smoke
    doc = read_results(mod.compact_path(out))
    assert all_problems(mod.figures(doc)) == []
    assert meaning_problems(mod.figures(doc)) == []


@pytest.mark.smoke
def test_smoke_resume_and_figures_only(mod, smoke, tmp_path, capsys):
    out, figs = smoke
    before = read_results(out)["records"]
    # results exist: refused without a flag, in one line
    assert mod.main(["--smoke", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--overwrite" in err
    # --resume trains nothing: every run comes from the journal, timings included
    assert mod.main(["--smoke", "--out", str(out), "--quiet", "--resume"]) == 0
    assert read_results(out)["records"] == before
    # figures only (the results exist): nothing is trained
    more = tmp_path / "again"
    assert mod.main(["--smoke", "--out", str(out), "--quiet", "--figures", str(more)]) == 0
    names = sorted(p.name for p in more.glob("*.png"))
    assert names == ["phase_fit_sgd.png", "phase_ideal.png", "phase_map_digits.png",
                     "phase_map_gaussian.png"]
    assert sorted(p.name for p in figs.glob("*.png")) == names
    assert saved_problems(sorted(more.glob("*.png"))) == []
    # a sub-grid of the first seed, from the journal; and the analysis recomputed
    sub = mod.main(["--smoke", "--out", str(out), "--quiet", "--resume", "--seeds", "1"])
    assert sub == 0
    assert {r["replicate"] for r in read_results(out)["records"]} == {0}
    assert mod.main(["--smoke", "--out", str(out), "--reanalyse", "--quiet"]) == 0
    assert len(read_results(mod.compact_path(out))["records"]) == 16


def test_grids_are_the_documented_ones(mod):
    cells = mod.BOUNDED.cells()
    # gaussian and gaussian_overlap: 6 P x 5 n; digits and mnist1d: P <= 8 (3 values) x 5 n
    assert len(cells) == (6 * 5 + 6 * 5 + 3 * 5 + 3 * 5) * 3 * 2 * 5 == 2700
    assert {mod.dataset_of(c.config.to_dict()) for c in cells} == set(mod.DATASETS)
    assert {c.config.steps for c in cells} == {800}
    assert {c.config.batch_size // 4 for c in cells} == {2, 4, 8, 16, 32, 64}
    # seeds vary slowest: an interrupted run has whole seeds done
    reps = [c.replicate for c in cells]
    assert reps == sorted(reps)


def test_every_layout_is_feasible(mod):
    from isoapprox.train import Trainer

    for ds in mod.DATASETS:
        P = mod.MAX_P[ds]
        t = Trainer(dataclasses.replace(mod.BOUNDED.base(ds, "adam"), batch_size=4 * P), seed=0)
        assert (t.P, t.K) == (P, 4)


# --- statistics --------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n", "expected"), [
    (5, 10, (0.2366, 0.7634)),  # textbook values (Wilson 1927; Newcombe 1998, method 3)
    (0, 10, (0.0, 0.2775)),
    (10, 10, (0.7225, 1.0)),
    (81, 263, (0.2553, 0.3662)),  # Newcombe 1998, table I, example (81/263)
    (0, 0, (0.0, 1.0)),
])
def test_wilson_known_values(mod, k, n, expected):
    lo, hi = mod.wilson_interval(k, n)
    assert lo == pytest.approx(expected[0], abs=6e-5)
    assert hi == pytest.approx(expected[1], abs=6e-5)


def test_wilson_ends_solve_the_score_equation(mod):
    # the ends p solve (k/n - p)^2 = z^2 p (1 - p) / n: the definition, checked directly
    z = mod.Z95
    for k, n in [(1, 3), (7, 20), (13, 13), (0, 50), (250, 1000)]:
        for p in mod.wilson_interval(k, n):
            assert (k / n - p) ** 2 == pytest.approx(z * z * p * (1 - p) / n, abs=1e-12)


def test_wilson_bad_input(mod):
    with pytest.raises(InvalidInputError, match=r"`k` must lie in \[0, n\].*k=4, n=3"):
        mod.wilson_interval(4, 3)
    with pytest.raises(TypeError, match="integers"):
        mod.wilson_interval(0.5, 3)


def test_logistic_fit_two_groups_closed_form(mod):
    # one binary covariate: the MLE is the two groups' log-odds, and the covariance
    # is Woolf's: var(b1) = 1/a + 1/b + 1/c + 1/d
    a, b, c, d = 3, 9, 8, 4  # group 0: 3 events of 12; group 1: 8 events of 12
    x = [0] * (a + b) + [1] * (c + d)
    y = [1] * a + [0] * b + [1] * c + [0] * d
    f = mod.fit_logistic(x, y)
    assert f.status == "ok"
    assert f.b0 == pytest.approx(math.log(a / b), rel=1e-10)
    assert f.b1 == pytest.approx(math.log(c / d) - math.log(a / b), rel=1e-10)
    assert f.cov[1][1] == pytest.approx(1 / a + 1 / b + 1 / c + 1 / d, rel=1e-8)
    assert f.cov[0][0] == pytest.approx(1 / a + 1 / b, rel=1e-8)
    lo, hi = f.slope_interval()
    assert hi - lo == pytest.approx(2 * mod.Z95 * math.sqrt(1 / a + 1 / b + 1 / c + 1 / d))
    band = f.band([0.0, 1.0])
    assert band["p"] == pytest.approx([a / (a + b), c / (c + d)], rel=1e-10)
    assert all(lo <= p <= hi for lo, p, hi in zip(band["lower"], band["p"], band["upper"],
                                                   strict=True))


def test_logistic_fit_recovers_a_known_curve(mod):
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, size=4000)
    y = (rng.uniform(size=x.size) < 1 / (1 + np.exp(-(0.5 + 1.5 * x)))).astype(int)
    f = mod.fit_logistic(x, y)
    se = np.sqrt(np.diag(f.cov))
    assert abs(f.b0 - 0.5) < 4 * se[0] and abs(f.b1 - 1.5) < 4 * se[1]


def test_logistic_fit_degenerate_cases(mod):
    assert mod.fit_logistic([0, 1, 2], [0, 0, 0]).status == "no events"
    assert mod.fit_logistic([0, 1, 2], [1, 1, 1]).status == "all events"
    sep = mod.fit_logistic([0, 1, 2, 3], [0, 0, 1, 1])
    assert sep.status == "separated" and sep.band([0.0]) is None
    with pytest.raises(InvalidInputError, match="1-D of one length"):
        mod.fit_logistic([0, 1], [0, 1, 1])
    with pytest.raises(InvalidInputError, match="hold 0 or 1"):
        mod.fit_logistic([0, 1], [0, 2])


def test_verdict_rules(mod):
    def group(k, n):
        lo, hi = mod.wilson_interval(k, n)
        return {"runs": n, "collapsed": k, "rate": k / n if n else None,
                "wilson_lower": lo, "wilson_upper": hi}

    rising = mod.fit_logistic([0] * 20 + [1] * 20, [0] * 19 + [1] + [1] * 15 + [0] * 5)
    flat = mod.fit_logistic([0] * 20 + [1] * 20, [0] * 18 + [1] * 2 + [1] * 2 + [0] * 18)
    assert mod.verdict(group(1, 20), group(15, 20), rising)[0] == "reproduced"
    assert mod.verdict(group(0, 20), group(0, 20), flat)[0] == "refuted"
    assert mod.verdict(group(15, 20), group(3, 20), flat)[0] == "refuted"
    assert mod.verdict(group(2, 20), group(2, 20), flat)[0] == "qualified"
    assert mod.verdict(group(1, 20), group(6, 20), rising)[0] == "qualified"
    # collapse common below the boundary too: not "and not otherwise"
    assert mod.verdict(group(9, 20), group(20, 20), rising)[0] == "qualified"
    assert mod.verdict(group(1, 20), group(0, 0), rising)[0] == "not tested"
    assert mod.verdict(group(0, 20), group(0, 9), flat)[0] == "not tested"
    # a rise that the dimension does not offset (P alone) is qualified, not reproduced
    by_p = {"status": "ok", "b_logP": 2.0, "b_logn1": 0.1, "ratio_z": 3.0}
    by_ratio = {"status": "ok", "b_logP": 2.0, "b_logn1": -1.8, "ratio_z": 0.4}
    assert mod.verdict(group(1, 20), group(15, 20), rising, by_p)[0] == "qualified"
    assert mod.verdict(group(1, 20), group(15, 20), rising, by_ratio)[0] == "reproduced"
    word, why = mod.verdict(group(1, 20), group(15, 20), rising)
    assert "15/20 collapsed" in why and "slope" in why


# --- bad arguments: one clear line -------------------------------------------------------------


@pytest.mark.parametrize(("argv", "needle"), [
    (["--grid", "huge"], "invalid choice: 'huge'"),
    (["--smoke", "--jobs", "0"], "--jobs must be >= 1; got 0"),
    (["--smoke", "--seeds", "3"], "--seeds must lie in [1, 2] for --grid smoke; got 3"),
    (["--smoke", "--out", "results.txt"], "--out must name a .json file"),
    (["--smoke", "--reanalyse", "--out", "nowhere/x.json"], "--reanalyse needs the results"),
])
def test_bad_arguments_one_line(mod, argv, needle, capsys):
    try:
        status = mod.main(argv)
    except SystemExit as exc:  # argparse's own errors exit from the parser
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert needle in err


def test_bad_config_names_the_field(mod):
    with pytest.raises(InvalidInputError, match=r"`datasets` must list some of .*'mnist'"):
        dataclasses.replace(mod.SMOKE, datasets=("mnist",)).cells()
    with pytest.raises(InvalidInputError, match=r"`classes_per_batch` must list integers >= 2"):
        dataclasses.replace(mod.SMOKE, classes_per_batch=(1,)).cells()


def test_dry_run_writes_nothing(mod, tmp_path, capsys):
    out = tmp_path / "dry.json"
    assert mod.main(["--out", str(out), "--dry-run"]) == 0
    assert "2700 runs" in capsys.readouterr().out
    assert not out.exists()


def test_ratio_test_recovers_separate_factors(mod):
    rng = np.random.default_rng(3)
    P = rng.choice([2, 4, 8, 16, 32, 64], size=6000)
    n = rng.choice([2, 4, 8, 16, 32], size=P.size)
    for bP, bn in ((1.0, -1.0), (1.2, 0.0)):  # the ratio alone; P alone
        eta = -0.5 + bP * np.log(P) + bn * np.log(n + 1)
        y = rng.uniform(size=P.size) < 1 / (1 + np.exp(-eta))
        recs = [{"P": int(p), "embedding_dim": int(k), "collapsed": bool(c)}
                for p, k, c in zip(P, n, y, strict=True)]
        t = mod.ratio_test(recs)
        assert t["status"] == "ok"
        assert t["b_logP_ci"][0] < bP < t["b_logP_ci"][1]
        assert t["b_logn1_ci"][0] < bn < t["b_logn1_ci"][1]
        assert (abs(t["ratio_z"]) < 3.5) == (bn == -bP)
    assert mod.ratio_test([{"P": 2, "embedding_dim": 2, "collapsed": False}])["status"] == (
        "no events")
