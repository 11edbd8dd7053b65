"""``isoapprox batch`` on the command line: runs, resumes, errors."""

from __future__ import annotations

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


def test_run_then_resume(tmp_path, capsys):
    args = ["batch", "--out", str(tmp_path / "r"), "--n-points", "5", "6", "--classes", "2", "3",
            "--margins", "0", "1", "--repetitions", "40", "--chunk-size", "16", "--jobs", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "320 configurations in 8 cell(s), 24 chunk(s), on this process" in out
    assert "share holds_jung" in out and "batch_hard_max median [p05, p95]" in out
    assert "computed 24, reused 0" in out
    text = (tmp_path / "r" / "results.csv").read_text()
    assert main(args + ["-q"]) == 0
    out = capsys.readouterr().out
    assert "computed 0, reused 24" in out and "share" not in out
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
