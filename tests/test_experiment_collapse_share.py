"""experiments/collapse_share.py on one configuration per cell: the table against the rows."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

from isoapprox.io import read_results

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location(
        "collapse_share", ROOT / "experiments" / "collapse_share.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_collapse_share_table_matches_its_rows(tmp_path, capsys):
    mod = _load()
    out = tmp_path / "share.json"
    assert mod.main(["--jobs", "1", "--repetitions", "1", "--work", str(tmp_path / "run"),
                     "--out", str(out)]) == 0
    doc = read_results(out)
    assert doc["experiment"] == "collapse_share" and doc["seed"] == mod.SEED
    rows = list(csv.DictReader(open(tmp_path / "run" / "results.csv", newline="")))
    assert len(rows) == 18  # 3 N x 3 n x 2 classes x 1
    table = doc["records"]
    assert sum(r["configurations"] for r in table) == 18
    assert [r["N_over_n"] for r in table] == sorted(r["N_over_n"] for r in table)
    for r in table:
        ratio = r["N_over_n"]
        mine = [x for x in rows if abs(int(x["n_points"]) / int(x["dim"]) - ratio) < 1e-3]
        assert len(mine) == r["configurations"]
        rel = [float(x["d_iso"]) / float(x["d_iso_collapsed"]) for x in mine]
        # d_iso(E, F_TS) <= d_iso(E, collapsed) = diam(E): the collapsed embedding is ideal
        assert max(rel) <= 1 + 1e-9
        assert r["d_iso_over_diameter_max"] == max(rel)
        collapsed = sum(x["collapsed_iso"] in ("True", "1") for x in mine)
        assert r["collapsed_share"] == collapsed / len(mine)
    assert "N/n" in capsys.readouterr().out


def test_collapse_share_figure_from_the_committed_result(tmp_path):
    from isoapprox.plotting.registry import build_figures

    src = ROOT / "experiments" / "results" / "collapse_share.json"
    paths = build_figures([src], tmp_path)
    names = sorted(p.name for p in paths)
    assert names == ["survey_collapse_share." + ext for ext in ("json", "pdf", "png")]
    again = build_figures([src], tmp_path / "again")
    for a, b in zip(sorted(paths), sorted(again), strict=True):
        assert a.read_bytes() == b.read_bytes()
    assert (tmp_path / "survey_collapse_share.png").stat().st_size > 10_000


def test_bad_option_is_one_line_on_stderr(tmp_path, capsys):
    mod = _load()
    code = mod.main(["--repetitions", "0", "--jobs", "1", "--work", str(tmp_path / "run"),
                     "--out", str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("collapse_share: error:") and "repetitions" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.json").exists()
