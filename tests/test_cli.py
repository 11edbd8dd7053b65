"""The command line: help, diagnose, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isoapprox.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parent.parent


def test_help_on_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    for name in COMMANDS:
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        assert "usage: isoapprox " + name in capsys.readouterr().out


def test_parser_lists_commands():
    text = build_parser().format_help()
    for name in COMMANDS:
        assert name in text


def test_diagnose_example_files(tmp_path, capsys):
    out = tmp_path / "rep.json"
    assert main(["diagnose", str(ROOT / "examples" / "collapsed.npz"), "--margin", "0.2",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verdict" in text and "COLLAPSED" in text and "diameter" in text
    rep = json.loads(out.read_text())
    assert rep["separation"]["separated"] is False
    assert rep["losses"]["batch_hard_mean"] == pytest.approx(0.2, abs=1e-3)
    assert rep["collapse"]["d_iso_to_collapsed"] == rep["collapse"]["diameter"]


def test_diagnose_npy_pair(tmp_path, capsys):
    np.save(tmp_path / "e.npy", np.array([[0.0, 0.0], [0.1, 0.0], [3.0, 0.0], [3.1, 0.0]]))
    np.save(tmp_path / "l.npy", np.array([0, 0, 1, 1]))
    out = tmp_path / "rep.json"
    assert main(["diagnose", str(tmp_path / "e.npy"), "--labels", str(tmp_path / "l.npy"),
                 "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert rep["separation"]["separated"] is True
    assert rep["data"]["n_points"] == 4


def test_user_errors_are_one_line_with_status_2(tmp_path):
    np.savez(tmp_path / "one.npz", embeddings=np.zeros((4, 2)), labels=np.zeros(4))
    cases = [
        ([str(tmp_path / "missing.npz")], "embedding file not found"),
        ([str(tmp_path / "one.npz")], "one class only"),
        ([str(ROOT / "examples" / "healthy.npz"), "--margin", "-1"], "`margin` must be >= 0"),
    ]
    for args, message in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "isoapprox", "diagnose", *args],
            capture_output=True, text=True, cwd=ROOT,
        )
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], proc.stderr
        assert lines[0].startswith("isoapprox diagnose: error:")


def test_bad_option_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", "x.npz", "--margin", "abc"])
    assert exc.value.code == 2
    assert "invalid float value" in capsys.readouterr().err


def test_unknown_command_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["nosuch"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("isoapprox: error:"), err
