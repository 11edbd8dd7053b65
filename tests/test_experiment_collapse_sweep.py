"""experiments/collapse_sweep.py in --smoke mode, into a temporary folder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from isoapprox.io import read_results

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location(
        "collapse_sweep", ROOT / "experiments" / "collapse_sweep.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.smoke
def test_smoke_run_writes_results(tmp_path, capsys):
    mod = _load()
    out = tmp_path / "smoke.json"
    assert mod.main(["--smoke", "--out", str(out)]) == 0
    doc = read_results(out)
    assert doc["experiment"] == "collapse_sweep"
    assert len(doc["records"]) == len(mod.SMOKE.cells()) == 8
    assert {r["loss"] for r in doc["records"]} == {
        "batch_hard",
        "selectively_contrastive",
    }
    rows = doc["summary"]
    assert {(r["batch_size"], r["embedding_dim"]) for r in rows} == {
        (4, 2),
        (4, 8),
        (16, 2),
        (16, 8),
    }
    assert all(r["diameter"] > 0 for r in rows)
    assert out.with_suffix(".csv").exists()
    assert "final diameter" in capsys.readouterr().out
    # results exist: refuse without --overwrite, then recompute from scratch with it
    assert mod.main(["--smoke", "--out", str(out), "--quiet"]) == 2
    assert mod.main(["--smoke", "--out", str(out), "--quiet", "--overwrite"]) == 0
    again = read_results(out)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in again["records"]]
    assert strip == [
        {k: v for k, v in r.items() if k != "seconds"} for r in doc["records"]
    ]


def test_dry_run_writes_nothing(tmp_path):
    mod = _load()
    out = tmp_path / "dry.json"
    assert mod.main(["--smoke", "--out", str(out), "--dry-run", "--quiet"]) == 0
    assert not out.exists()


def test_default_config_is_the_documented_grid():
    mod = _load()
    cfg = mod.Config()
    cells = cfg.cells()
    assert len(cells) == 2 * 8 * 4 * 3 * 3
    assert {c.config.batch_size for c in cells} == {4, 8, 16, 32, 64, 128, 256, 512}
    # every cell's P x K layout is feasible on its data set
    from isoapprox.train import Trainer

    for ds in cfg.datasets:
        c = next(
            c for c in cells if c.config.dataset == ds and c.config.batch_size == 512
        )
        tr = Trainer(c.config, seed=0)
        assert tr.P * tr.K == 512


def test_bounded_grid_is_the_documented_one():
    mod = _load()
    cells = mod.GRIDS["bounded"].cells()
    assert len(cells) == 2 * 4 * 3 * 3 * 2
    assert {c.config.steps for c in cells} == {1000}
    assert {c.config.crosscheck_batches for c in cells} == {1}
    # every batch size's P x K layout is feasible on digits (10 classes)
    from isoapprox.train import Trainer

    c = next(c for c in cells if c.config.dataset == "digits" and c.config.batch_size == 256)
    tr = Trainer(c.config, seed=0)
    assert tr.P * tr.K == 256
