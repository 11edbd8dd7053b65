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
    (run,) = doc["records"]
    assert (run["input_seed"], run["init_seed"], run["lr"]) == (2, 1, 0.2)
    assert run["outcome"] in ("collapsed", "separated", "neither", "diverged")
    assert sum(doc["counts"].values()) == 1
    assert "results:" in capsys.readouterr().out
    # a second run refuses to overwrite
    assert mod.main(["--search", "--smoke", "--out", str(out), "--quiet"]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err


def test_search_run_matches_the_library_training():
    """The search's classification of a run is the one run_toy makes of the same run."""
    import numpy as np

    from isoapprox import toy

    mod = _load()
    sc = mod.SearchConfig(steps=50)
    rec = mod._one_run((sc, 2, 1, 0.2))
    cfg = toy.ToyConfig(input_seed=2, steps=50)
    tr = toy.train_scenario(cfg, toy.Scenario("x", sc.labels, sc.margin, 0.2, 1))
    D = mod._pair_distances(tr["embeddings"])
    iu, ju = np.triu_indices(5, 1)
    ref = np.array([np.linalg.norm(e[iu] - e[ju], axis=1) for e in tr["embeddings"]])
    np.testing.assert_allclose(D, ref, rtol=1e-14, atol=0)
    assert rec["initial_diameter"] == pytest.approx(ref[0].max(), rel=1e-14)
    assert rec["final_diameter"] == pytest.approx(ref[-1].max(), rel=1e-14)


def test_jobs_error(capsys):
    mod = _load()
    assert mod.main(["--jobs", "0"]) == 2
    assert "--jobs must be >= 1; got 0" in capsys.readouterr().err
