"""``isoapprox batch`` on the command line: runs, resumes, errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from isoapprox.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_help_lists_the_grid_and_run_options(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["batch", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for opt in ("--n-points", "--dims", "--classes", "--layouts", "--margins", "--distributions",
                "--repetitions", "--scheduler", "--workers", "--stages", "--seed", "--format",
                "--jobs", "--overwrite", "--resume"):
        assert opt in text
    assert "dask worker" in text  # how to point it at a real cluster


def test_list_stages(capsys):
    assert main(["batch", "--list-stages"]) == 0
    out = capsys.readouterr().out
    assert "cheap (vector)" in out and "reference (config)" in out and "reference_error" in out


def test_help_names_the_default_stages_and_the_fast_path(capsys):
    with pytest.raises(SystemExit):
        main(["batch", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("per- ", "per-")
    assert "default cheap ideal points: the bounds" in text
    assert "--stages cheap is the fast path" in text
    assert "default 200 with a per-configuration stage" in text


def test_default_run_computes_the_bounds_in_a_narrow_summary(tmp_path, capsys):
    # the default stages (cheap ideal points), here on a smaller grid than the default's
    # 200 repetitions; two cells and every flag of statements 1-4
    out_dir = tmp_path / "d"
    assert main(["batch", "--out", str(out_dir), "--repetitions", "3", "--classes", "2", "3",
                 "--margins", "0.5", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if str(tmp_path) not in line]
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    for name in ("c", "c_lower", "c_upper", "d_iso", "d_iso_lower", "d_iso_upper", "theta"):
        assert re.search(rf"^ +{name} +[-0-9.]+ ", out, re.M), name
    for flag in ("proven_s2_half", "holds_s3_upper", "holds_s4_equal", "certified"):
        assert re.search(rf"\b{flag} [0-9.]+", out), flag
    assert "cell 2 of 2:" in out and "ideal_error 0" in out
    header = (out_dir / "results.csv").read_text().splitlines()[0].split(",")
    assert {"c", "c_lower", "c_upper", "d_iso_lower", "d_haus_upper", "points"} <= set(header)


def test_run_then_resume(tmp_path, capsys):
    args = ["batch", "--out", str(tmp_path / "r"), "--n-points", "5", "6", "--classes", "2", "3",
            "--margins", "0", "1", "--repetitions", "40", "--chunk-size", "16", "--jobs", "1",
            "--stages", "cheap"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "320 configurations in 8 cell(s), 24 chunk(s), on this process" in out
    assert "holds_jung 1" in out and "cell 8 of 8: gaussian N=6" in out
    assert re.search(r"^  batch_hard_max +[0-9.]+", out, re.M)
    assert "computed 24, reused 0" in out
    text = (tmp_path / "r" / "results.csv").read_text()
    assert main(args + ["-q"]) == 0
    out = capsys.readouterr().out
    assert "computed 0, reused 24" in out and "share true" not in out
    assert (tmp_path / "r" / "results.csv").read_text() == text
    assert (tmp_path / "r" / "summary.json").exists() and (tmp_path / "r" / "summary.csv").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "`--out DIR` is required"),
        (["--n-points", "5", "--classes", "5"], "`n_classes` must be at most n_points - 1 = 4"),
        (["--stages", "nope"], "unknown stage 'nope'"),
        (["--margins", "-1"], "`margins` must be >= 0"),
        (["--objective", "nope"], "`objective` must be one of"),
        (["--spread", "0"], "`spread` must be > 0"),
        (["--dims", "2", "2"], "`dims` must not repeat values"),
    ],
)
def test_user_errors(tmp_path, capsys, args, message):
    full = ["batch", *args] + ([] if not args else ["--out", str(tmp_path / "o")])
    assert main(full) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("isoapprox batch: error: ") and message in err[0]


def test_other_run_in_folder(tmp_path, capsys):
    base = ["batch", "--out", str(tmp_path / "o"), "--repetitions", "5", "--workers", "0", "-q"]
    assert main(base) == 0
    assert main(base + ["--seed", "3"]) == 2
    assert "holds a run of another configuration" in capsys.readouterr().err
    assert main(base + ["--seed", "3", "--overwrite"]) == 0


def test_missing_dask(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert main(["batch", "--out", str(tmp_path / "o"), "--repetitions", "2",
                 "--scheduler", "tcp://127.0.0.1:1", "-q"]) == 2
    assert "pip install 'isoapprox[dask]'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layouts", "sorted"], "invalid choice: 'sorted'"),
        (["--workers", "-1"], "must be >= 0"),
        (["--repetitions", "0"], "must be >= 1"),
        (["--format", "parquet"], "invalid choice: 'parquet'"),
    ],
)
def test_bad_option_values_exit_2(capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(["batch", "--out", "unused", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_error_is_one_line_from_a_subprocess(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "isoapprox", "batch", "--out", str(tmp_path / "o"),
         "--n-points", "4", "--classes", "4"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("isoapprox batch: error: grid cell")


def _long_stage_func(X, codes, margin, prev):
    import numpy as np

    B = X.shape[0]
    return {"a_very_long_quantity_name_of_some_custom_stage": np.ones(B),
            "holds_a_very_long_statement_name_of_a_custom_stage": np.ones(B, dtype=bool)}


def test_summary_stays_within_100_characters_with_long_names(tmp_path):
    from isoapprox.batch import BatchConfig, Column, Grid, Stage, run_batch
    from isoapprox.batch.summary import TABLE_WIDTH, format_table

    stage = Stage("long_names", "vector", _long_stage_func, (
        Column("a_very_long_quantity_name_of_some_custom_stage", "float"),
        Column("holds_a_very_long_statement_name_of_a_custom_stage", "bool")),
        headline=("a_very_long_quantity_name_of_some_custom_stage",))
    config = BatchConfig(Grid(n_points=(5, 6), classes=(2, 3), layouts=("balanced", "random"),
                              margins=(0.0, 12.5), distributions=("gaussian", "clustered"),
                              repetitions=2), stages=("cheap", stage))
    res = run_batch(config, tmp_path / "o", jobs=1, progress=False)
    text = format_table(res.summary, config)
    assert TABLE_WIDTH == 100
    assert max(map(len, text.splitlines())) <= 100
    assert "cell 32 of 32: clustered N=6 n=2 P=3 random alpha=12.5, 2 configurations" in text
    assert "a_very_long_quantity_name~" in text
