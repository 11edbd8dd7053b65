"""experiments/bounds_survey.py in --smoke mode, and its figures (isoapprox.plotting.survey)."""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from isoapprox.batch import generate
from isoapprox.io import read_results
from isoapprox.plotting.registry import FIGURE_BUILDERS, build_figures

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location(
        "bounds_survey", ROOT / "experiments" / "bounds_survey.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    mod = _load()
    tmp = tmp_path_factory.mktemp("survey")
    out = tmp / "survey.json"
    rc = mod.main(["--smoke", "--out", str(out), "--work", str(tmp / "runs"), "--quiet",
                   "--figures", str(tmp / "fig")])
    assert rc == 0
    return mod, tmp, out


@pytest.mark.smoke
def test_smoke_results_are_consistent(smoke):
    mod, tmp, out = smoke
    doc = read_results(out)
    assert doc["experiment"] == "bounds_survey"
    recs = doc["records"]
    assert len(recs) == sum(r["configurations"] for r in doc["runs"]) == 3
    for r in recs:
        assert r["ideal_error"] == ""
        assert r["c_lower"] <= r["c"] <= r["c_upper"] * (1 + 1e-12)
        assert r["proven_s2_half"] is True  # statement 1 implies c >= 1/2
        # the stored configuration is the generated one, exactly
        if r["distribution"] != "adversarial":
            X, y = generate(r["distribution"], r["n_points"], r["dim"], r["n_classes"],
                            r["layout"], [r["rep"]], seed=mod.SEED, margin=r["margin"])
            assert np.array_equal(np.array(r["points"]), X[0])
            assert r["labels"] == y[0].tolist()
    head = doc["headline"]
    assert head["c"]["max"] == max(r["c"] for r in recs)
    assert head["largest_c_lower"]["c_lower"] == max(r["c_lower"] for r in recs)
    assert head["certified"] == sum(1 for r in recs if r["certified"])
    assert {s["part"] for s in doc["summary"]} == {"toy", "adversarial"}
    for run in doc["runs"]:
        assert run["fingerprint"] and run["config"]["seed"] == mod.SEED


@pytest.mark.smoke
def test_rerun_resumes_and_gives_the_same_records(smoke, tmp_path):
    mod, tmp, out = smoke
    again = tmp_path / "again.json"
    assert mod.main(["--smoke", "--out", str(again), "--work", str(tmp / "runs"), "--quiet"]) == 0
    a, b = read_results(out), read_results(again)
    assert a["records"] == b["records"]
    assert all(r["chunks_computed"] == 0 for r in b["runs"])


@pytest.mark.smoke
def test_figures_are_built_and_deterministic(smoke, tmp_path):
    _, tmp, out = smoke
    assert "bounds_survey" in FIGURE_BUILDERS
    names = sorted(p.name for p in (tmp / "fig").iterdir())
    for stem in ("survey_c_hist", "survey_loss_iso", "survey_c_theta"):
        assert {f"{stem}.png", f"{stem}.pdf", f"{stem}.json"} <= set(names)
    again = build_figures([out], tmp_path / "fig2")
    for p in again:
        assert p.read_bytes() == (tmp / "fig" / p.name).read_bytes(), p.name
    side = json.loads((tmp / "fig" / "survey_c_hist.json").read_text())
    assert side["sources"][0]["path"].endswith("survey.json")


def test_plots_accept_separated_and_empty_records():
    from isoapprox.plotting.survey import c_bracket_histogram, c_theta_scatter, loss_iso_scatter

    rec = {"part": "toy", "distribution": "gaussian", "n_points": 5, "dim": 2, "c": None,
           "c_lower": None, "c_upper": None, "theta": 0.3, "loss": 0.0, "d_iso": 0.0,
           "d_iso_lower": 0.0, "d_iso_upper": 0.0}
    for f in (c_bracket_histogram, c_theta_scatter, loss_iso_scatter):
        for records in ([], [rec]):
            fig = f(records)
            assert fig.axes
            __import__("matplotlib.pyplot").pyplot.close(fig)
    ok = dict(rec, c=0.8, c_lower=0.7, c_upper=math.inf)
    fig = c_bracket_histogram([ok])
    assert "1 configurations" in fig.axes[0].get_title()


def test_figures_only_errors(tmp_path, capsys):
    mod = _load()
    assert mod.main(["--figures-only", "--quiet"]) == 2
    assert "--figures-only needs --figures" in capsys.readouterr().err
    assert mod.main(["--figures-only", "--figures", str(tmp_path), "--out",
                     str(tmp_path / "missing.json"), "--quiet"]) == 2
    assert "results file not found" in capsys.readouterr().err


@pytest.mark.smoke
def test_parts_selects_the_grids(smoke, tmp_path):
    """--parts runs only the named grids (the smoke run's toy part, resumed)."""
    mod, tmp, _ = smoke
    out = tmp_path / "toy_only.json"
    assert mod.main(["--smoke", "--parts", "toy", "--out", str(out), "--work",
                     str(tmp / "runs"), "--quiet"]) == 0
    doc = read_results(out)
    assert [r["part"] for r in doc["runs"]] == ["toy"]
    assert {r["part"] for r in doc["records"]} == {"toy"}
    assert mod.PARTS == tuple(name for name, _ in mod.parts())


def test_figures_log_no_font_subsetting(smoke, caplog):
    # the script logs at INFO; the PDF backend's fontTools would add hundreds of lines
    mod, tmp, out = smoke
    caplog.set_level(logging.DEBUG)
    assert mod.main(["--figures-only", "--out", str(out), "--figures", str(tmp / "fig2")]) == 0
    assert (tmp / "fig2" / "survey_c_theta.pdf").exists()
    noisy = [r.name for r in caplog.records
             if r.name.startswith(("fontTools", "matplotlib.font_manager"))]
    assert not noisy, noisy[:5]
