"""experiments/toy.py: the scenario search in --smoke mode, and its errors."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from isoapprox.io import read_results

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("toy_experiment",
                                                  ROOT / "experiments" / "toy.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.smoke
def test_search_smoke_writes_results(tmp_path, capsys):
    mod = _load()
    out = tmp_path / "search.json"
    assert mod.main(["--search", "--smoke", "--out", str(out)]) == 0
    doc = read_results(out)
    assert doc["experiment"] == "toy_search"
    (cand,) = doc["records"]
    sc = mod.SEARCH_SMOKE
    assert (cand["input_seed"], cand["init_seed"], cand["lr"]) == (
        sc.input_seeds[0], sc.init_seeds[0], sc.lrs[0])
    assert set(cand["outcomes"]) <= {"collapsed", "separated", "neither", "diverged"}
    assert doc["counts"]["candidates"] == 1
    assert "results:" in capsys.readouterr().out
    # a second run refuses to overwrite
    assert mod.main(["--search", "--smoke", "--out", str(out), "--quiet"]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err


def test_search_runs_are_the_library_training_perturbed():
    """The search classifies each run as run_toy would, and its perturbed runs are
    the library's perturbed trainings."""
    from isoapprox import toy

    mod = _load()
    sc = mod.SearchConfig(steps=120, n_perturbed=2)
    runs = mod._runs(sc, 2, 1, 0.2, 1.0)
    assert len(runs) == 3
    for k, run in enumerate(runs):
        cfg = toy.ToyConfig(input_seed=2, steps=120, perturbation=1e-12 if k else 0.0,
                            perturbation_seed=k)
        scen = toy.Scenario("x", sc.labels, sc.margin, 0.2, 1)
        ref = toy.analyse_training(cfg, scen, toy.train_scenario(cfg, scen))
        assert run["outcome"] == ref["outcome"]
        assert run["merge_order"] == ref["merge_order"]
        assert run["final_diameter_ratio"] == ref["final_diameter_ratio"]
    # the perturbation does reach the training
    assert runs[0]["final_diameter_ratio"] != runs[1]["final_diameter_ratio"]


def test_jobs_error(capsys):
    mod = _load()
    assert mod.main(["--jobs", "0"]) == 2
    assert "--jobs must be >= 1; got 0" in capsys.readouterr().err


def test_a_margin0_candidate_that_separates_is_classified():
    """Margin 0 has no zero-loss step: a run that ends separated at margin 0 is still
    summarised (a search once crashed on it)."""
    mod = _load()
    sc = mod.SearchConfig(steps=60, n_perturbed=1)
    cand = mod._candidate((sc, 5, 2, 0.25, 0.0, False))
    assert cand["outcomes"] == ["separated"] and cand["max_zero_loss_step"] is None
    assert len(cand["runs"]) == 2
