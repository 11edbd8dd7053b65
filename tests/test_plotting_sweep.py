"""Figures of the collapse sweep: built from the results file alone, deterministically."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.io import read_results
from isoapprox.plotting.registry import FIGURE_BUILDERS, build_figures

ROOT = Path(__file__).resolve().parents[1]

FIGURES = {
    "sweep_diameter",
    "sweep_median",
    "sweep_collapse_trend",
    "sweep_lower_bound",
    "sweep_triplet_diagram",
    "sweep_crosscheck",
}


def _experiment():
    spec = importlib.util.spec_from_file_location(
        "collapse_sweep_for_figures", ROOT / "experiments" / "collapse_sweep.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "smoke.json"
    mod = _experiment()
    assert mod.main(["--smoke", "--out", str(out), "--quiet"]) == 0
    return out, mod.compact_path(out)


def test_builder_is_known():
    assert "collapse_sweep" in FIGURE_BUILDERS


@pytest.mark.smoke
def test_figures_rebuild_deterministically_from_the_result_file(smoke_results, tmp_path):
    """The same bytes twice, drawn here and by two worker processes."""
    full, compact = smoke_results
    a = build_figures([compact], tmp_path / "a")
    b = build_figures([compact], tmp_path / "b", jobs=2)
    names = {p.stem for p in a}
    assert names == FIGURES
    assert [p.name for p in a] == [p.name for p in b]
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes(), pa.name
    # the sidecar names the compact file with its hash
    side = json.loads((tmp_path / "a" / "sweep_diameter.json").read_text())
    assert side["sources"][0]["sha256"]
    # the full results file gives the same pictures (same tables, same diagrams)
    c = build_figures([full], tmp_path / "c")
    pngs = sorted(p for p in a if p.suffix == ".png")
    for p in pngs:
        assert (tmp_path / "c" / p.name).read_bytes() == p.read_bytes(), p.name
    assert {p.name for p in c} == {p.name for p in a}


@pytest.mark.smoke
def test_compact_file_holds_what_the_figures_need(smoke_results):
    _, compact = smoke_results
    doc = read_results(compact)
    assert doc["compact"] is True
    assert "histories" not in doc
    for key in ("summary", "trend", "curve_summary", "lower_bound_curves",
                "crosscheck_summary", "crosscheck_slacks", "diagram_cells",
                "triplet_diagrams", "statements"):
        assert doc[key], key
    assert set(doc["triplet_diagrams"]) == set(doc["diagram_cells"].values())
    # the trend pools every run once
    assert sum(r["runs"] for r in doc["trend"]) == len(doc["records"])
    for r in doc["trend"]:
        assert 0.0 <= r["collapsed_fraction"] <= 1.0
        assert r["collapsed"] == round(r["collapsed_fraction"] * r["runs"])


@pytest.mark.smoke
def test_figures_only_mode_of_the_experiment(smoke_results, tmp_path, capsys):
    full, _ = smoke_results
    mod = _experiment()
    stamp = full.stat().st_mtime_ns
    assert mod.main(["--smoke", "--out", str(full), "--figures", str(tmp_path / "f")]) == 0
    assert full.stat().st_mtime_ns == stamp  # nothing recomputed or rewritten
    assert {p.stem for p in (tmp_path / "f").glob("*.png")} == FIGURES
    assert "figures:" in capsys.readouterr().out


def test_unknown_experiment_is_refused(tmp_path):
    from isoapprox.io import write_results

    p = tmp_path / "other.json"
    write_results(p, experiment="no_such_experiment", config={}, records=[], csv_path=False)
    with pytest.raises(InvalidInputError, match="no figures are defined for experiment"):
        build_figures([p], tmp_path / "out")
