"""``isoapprox train``: help, one-line user errors, a tiny grid, resuming."""

from __future__ import annotations

import pytest

from isoapprox.cli import main
from isoapprox.io import read_results

TINY = [
    "--dataset",
    "gaussian",
    "--set",
    "batch_size=8",
    "--set",
    "n_classes=12",
    "--set",
    "n_train_classes=8",
    "--set",
    "per_class=8",
    "--set",
    "input_dim=5",
    "--hidden",
    "8",
    "--steps",
    "10",
    "--log-every",
    "5",
    "--set",
    "recall_ks=[1]",
    "-q",
]


def _exit_code(argv):
    """``main``'s return value, or the status of the SystemExit argparse raises."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_help_lists_the_grid_options(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in (
        "--batch-size",
        "--dim",
        "--loss",
        "--margin",
        "--lr",
        "--normalize",
        "--seeds",
        "--jobs",
        "--overwrite",
        "--dry-run",
    ):
        assert flag in out


def test_tiny_grid_then_resume(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["train", *TINY, "--batch-size", "8", "16", "--dim", "2", "--out", str(out)]
    assert main(args) == 0
    doc = read_results(out)
    assert [(r["batch_size"], r["embedding_dim"]) for r in doc["records"]] == [
        (8, 2),
        (16, 2),
    ]
    assert doc["config"]["grid"] == {
        "dataset": ["gaussian"],
        "batch_size": [8, 16],
        "embedding_dim": [2],
    }
    assert doc["config"]["base"]["steps"] == 10
    assert (tmp_path / "r.csv").exists() and (tmp_path / "r.journal.partial").exists()
    assert "2 trained, 0 resumed" in capsys.readouterr().out
    # extend the grid: the two finished cells are reused
    assert main(args[:-2] + ["--dim", "2", "4", "--out", str(out), "--resume"]) == 0
    assert "2 trained, 2 resumed" in capsys.readouterr().out


def test_dry_run_trains_nothing(tmp_path):
    out = tmp_path / "r.json"
    assert main(["train", *TINY, "--out", str(out), "--dry-run", "--no-estimate"]) == 0
    assert not out.exists()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--batch-size", "x"], "argument --batch-size: invalid int value: 'x'"),
        (["--normalize", "maybe"], "--normalize takes yes or no; got 'maybe'"),
        (["--set", "nope=1"], "'nope' is not a TrainConfig field"),
        (["--set", "steps"], "--set expects FIELD=VALUE"),
        (["--hidden", "a,b"], "--hidden takes comma-separated widths"),
        (["--jobs", "0"], "--jobs must be >= 1"),
        (["--loss", "hinge"], "`loss` must be one of"),
        (["--batch-size", "512"], "cannot be split into P >= 2 classes"),
        (
            ["--samples-per-class", "three"],
            "--samples-per-class takes an integer or 'auto'",
        ),
        (["--set", 'margin="wide"'], "`margin` must be a real number"),
    ],
)
def test_user_errors_are_one_line_exit_2(tmp_path, capsys, argv, message):
    out = tmp_path / "r.json"
    code = _exit_code(["train", *TINY, "--no-estimate", *argv, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert (
        message in err
        and len(err.splitlines()) == 1
        and err.startswith("isoapprox train")
    )
    assert not out.exists()


def test_existing_results_need_overwrite(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["train", *TINY, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["train", *TINY, "--out", str(out)]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert main(["train", *TINY, "--out", str(out), "--overwrite"]) == 0


def test_theory_and_crosscheck_flags(tmp_path):
    out = tmp_path / "r.json"
    args = ["train", *TINY, "--batch-size", "8", "--dim", "2", "--no-estimate",
            "--theory-every", "5", "--crosscheck", "1", "--out", str(out)]
    assert main(args) == 0
    doc = read_results(out)
    assert doc["config"]["base"]["theory_every"] == 5
    assert doc["config"]["base"]["crosscheck_batches"] == 1
    (rec,) = doc["records"]
    hist = doc["histories"][rec["cell_id"]]
    assert [h["step"] for h in hist if "theory_d_iso" in h] == [0, 5, 10]
    for h in hist:
        if "theory_d_iso" in h:
            assert h["theory_d_iso_lower"] <= h["theory_d_iso"] <= h["theory_d_iso_upper"]
            assert h["theory_loss_max"] / 2 <= h["theory_d_iso_upper"] + 1e-9
    assert len(hist[-1]["crosscheck"]) == 1
    assert rec["final_crosscheck_batches"] == 1


def test_theory_every_not_a_multiple_of_log_every_is_a_user_error(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = _exit_code(["train", *TINY, "--no-estimate", "--theory-every", "3",
                       "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "multiple of `log_every`" in err and len(err.splitlines()) == 1


def test_unreachable_scheduler_is_one_line(tmp_path, capsys):
    """``--scheduler`` as in ``isoapprox batch``: a cluster that is not there is one line."""
    pytest.importorskip("distributed")
    out = tmp_path / "r.json"
    code = main(["train", *TINY, "--no-estimate", "--batch-size", "8", "16", "--out", str(out),
                 "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1", "-q"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("isoapprox train: error: could not connect to the Dask scheduler")
    assert not out.exists()
