"""``isoapprox diagnose``: planted cases, file formats, malformed files, help."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from isoapprox.cli import main
from isoapprox.exceptions import InvalidInputError
from isoapprox.io import load_embeddings

from . import planted

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(capsys, *argv):
    # the theory section (seconds per file) is tested in test_cli_diagnose_theory.py
    code = main(["diagnose", *map(str, argv), "--no-theory"])
    out, err = capsys.readouterr()
    return code, out, err


def _save(tmp_path, name, E, y):
    path = tmp_path / f"{name}.npz"
    np.savez(path, embeddings=E, labels=y)
    return path


@pytest.mark.parametrize("case,headline", [
    ("healthy", "HEALTHY"),
    ("collapsed", "COLLAPSED: the embedding has collapsed"),
    ("class_collapsed", "CLASS-COLLAPSED"),
    ("dimensional", "DIMENSIONAL COLLAPSE"),
])
def test_planted_cases(tmp_path, capsys, case, headline):
    E, y = planted.CASES[case](np.random.default_rng(5))
    path = _save(tmp_path, case, E, y)
    out_json = tmp_path / "r.json"
    code, out, err = _run(capsys, path, "--margin", "0.2", "--json", out_json)
    assert code == 0 and err == ""
    assert headline in out
    assert "median pair distance" in out and "effective rank" in out
    doc = json.loads(out_json.read_text())
    assert doc["verdict"]["headline"].startswith(headline)
    assert doc["file"] == str(path)


def test_examples_shipped_with_the_readme(capsys):
    code, out, _ = _run(capsys, EXAMPLES / "healthy.npz")
    assert code == 0 and "HEALTHY" in out
    code, out, _ = _run(capsys, EXAMPLES / "collapsed.npz", "--margin", "0.2")
    assert code == 0 and "COLLAPSED" in out and "[x] stuck_at_margin" in out


def test_reported_loss_and_thresholds(tmp_path, capsys):
    E, y = planted.healthy(np.random.default_rng(1))
    path = _save(tmp_path, "h", E, y)
    code, out, _ = _run(capsys, path, "--loss", "0.6931")
    assert code == 0 and "REPORTED LOSS DOES NOT MATCH THE FILE" in out
    assert "reported loss 0.6931" in out and "[x] loss_mismatch" in out
    # a regular simplex with a ninth coordinate per class: hp ~ hn for every anchor (the
    # losses at their collapse values) while the classes stay ranked
    simplex = np.hstack([3.0 * np.eye(8), 0.1 * np.repeat(np.arange(4.0), 2)[:, None]])
    simplex = _save(tmp_path, "s", simplex, [0, 0, 1, 1, 2, 2, 3, 3])
    code, out, _ = _run(capsys, simplex, "--loss", "0.6931")
    assert code == 0 and "LOSS AT A COLLAPSE VALUE" in out and "[ ] loss_mismatch" in out
    code, out, _ = _run(capsys, path, "--threshold", "full_collapse_ratio=100",
                        "--quantiles", "0.5,0.95")
    # "tiny" against a 100-fold norm, but the classes stay ranked: compressed, not collapsed
    assert code == 0 and "[ ] all_distances_small" in out and "[x] compressed" in out
    assert out.startswith("VERDICT: COMPRESSED")
    assert "pair distance quantile 0.95" in out


def test_npy_pair_and_csv(tmp_path, capsys):
    E, y = planted.collapsed(np.random.default_rng(2))
    np.save(tmp_path / "e.npy", E)
    np.save(tmp_path / "y.npy", y)
    code, out, _ = _run(capsys, tmp_path / "e.npy", "--labels", tmp_path / "y.npy")
    assert code == 0 and "COLLAPSED" in out
    header = ",".join([f"x{k}" for k in range(E.shape[1])] + ["label"])
    rows = [",".join([repr(float(v)) for v in e] + [f"c{c}"]) for e, c in zip(E, y, strict=True)]
    (tmp_path / "e.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    code, out2, _ = _run(capsys, tmp_path / "e.csv")
    assert code == 0 and "COLLAPSED" in out2
    E2, y2 = load_embeddings(tmp_path / "e.csv")
    np.testing.assert_array_equal(E2, E)
    assert y2.tolist() == [f"c{c}" for c in y]
    # no header row (numpy.savetxt): read as data, label in the last column
    np.savetxt(tmp_path / "raw.csv", np.c_[E, y], delimiter=",")
    E3, y3 = load_embeddings(tmp_path / "raw.csv")
    np.testing.assert_array_equal(E3, E)
    assert y3.tolist() == y.tolist()


def test_batch_mode(tmp_path, capsys):
    E, y = planted.collapsed(np.random.default_rng(3), P=10, K=6)
    path = _save(tmp_path, "c", E, y)
    out_json = tmp_path / "b.json"
    code, out, _ = _run(capsys, path, "--batch-size", "12", "--samples-per-class", "3",
                        "--n-batches", "4", "--seed", "9", "--margin", "0.1", "--json", out_json)
    assert code == 0
    assert "4 random batches of 4 classes x 3 = 12 points" in out
    assert re.search(r"stuck_at_margin +4 of 4", out)
    doc = json.loads(out_json.read_text())
    assert doc["verdict"]["status"] == "collapsed" and len(doc["per_batch"]) == 4


def _malformed(tmp_path):
    rng = np.random.default_rng(0)
    E = rng.normal(size=(6, 3))
    y = np.array([0, 0, 0, 1, 1, 1])
    files = {}
    np.savez(tmp_path / "keys.npz", X_train=E, target=y)
    files["wrong keys"] = ([tmp_path / "keys.npz"], r"must contain an array 'embeddings'")
    E_nan = E.copy()
    E_nan[2, 1] = np.nan
    np.savez(tmp_path / "nan.npz", embeddings=E_nan, labels=y)
    files["nan"] = ([tmp_path / "nan.npz"],
                    r"nan.npz: `embeddings` must contain only finite values; got 1 non-finite "
                    r"value\(s\), the first at \[2, 1\]")
    np.savez(tmp_path / "len.npz", embeddings=E, labels=y[:4])
    files["lengths"] = ([tmp_path / "len.npz"],
                        r"same length; got 6 embeddings and 4 labels")
    np.savez(tmp_path / "one.npz", embeddings=E, labels=np.zeros(6, int))
    files["one class"] = ([tmp_path / "one.npz"],
                          r"one.npz: `labels` must contain at least two classes")
    np.savez(tmp_path / "single.npz", embeddings=E, labels=np.arange(6))
    files["singletons"] = ([tmp_path / "single.npz"], r"all singletons")
    (tmp_path / "empty.npz").write_bytes(b"")
    files["empty npz"] = ([tmp_path / "empty.npz"], r"is empty \(0 bytes\)")
    (tmp_path / "empty.csv").write_text("")
    files["empty csv"] = ([tmp_path / "empty.csv"], r"is empty \(0 bytes\)")
    (tmp_path / "blank.csv").write_text("\n\n")
    files["blank csv"] = ([tmp_path / "blank.csv"], r"has no rows")
    (tmp_path / "head.csv").write_text("a,b,label\n")
    files["header only"] = ([tmp_path / "head.csv"], r"at least one data row after the header")
    (tmp_path / "text.csv").write_text("a,b,label\n1,2,x\n3,oops,y\n")
    files["non-numeric csv"] = ([tmp_path / "text.csv"],
                                r"line 3, column 'b': embedding value 'oops' is not a number")
    (tmp_path / "ragged.csv").write_text("a,b,label\n1,2,x\n3,y\n")
    files["ragged csv"] = ([tmp_path / "ragged.csv"], r"line 3 has 2 fields; expected 3")
    (tmp_path / "junk.npz").write_text("not a zip")
    files["junk npz"] = ([tmp_path / "junk.npz"], r"not a readable .npz file")
    np.save(tmp_path / "e.npy", E)
    files["npy without labels"] = ([tmp_path / "e.npy"], r"pass the labels with --labels")
    np.save(tmp_path / "e1.npy", E[:, 0])
    np.save(tmp_path / "y.npy", y)
    files["1-D embeddings"] = ([tmp_path / "e1.npy", "--labels", tmp_path / "y.npy"],
                               r"`embeddings` must be a 2-D array")
    (tmp_path / "e.txt2").write_text("x")
    files["suffix"] = ([tmp_path / "e.txt2"],
                       r"must end in .npz, .npy, .csv, .tsv, .txt or .parquet")
    np.savez(tmp_path / "str.npz", embeddings=np.array([["a", "b"]] * 3), labels=[0, 0, 1])
    files["string embeddings"] = ([tmp_path / "str.npz"], r"real numeric array")
    files["missing"] = ([tmp_path / "nope.npz"], r"embedding file not found")
    np.savez(tmp_path / "ok.npz", embeddings=E, labels=y)
    files["bad threshold"] = ([tmp_path / "ok.npz", "--threshold", "nope=1"],
                              r"`--threshold` must be NAME=VALUE with NAME one of")
    files["bad quantiles"] = ([tmp_path / "ok.npz", "--quantiles", "0.5,abc"],
                              r"`--quantiles` must be comma-separated numbers")
    files["negative margin"] = ([tmp_path / "ok.npz", "--margin", "-1"], r"`margin` must be >= 0")
    files["batch too big"] = ([tmp_path / "ok.npz", "--batch-size", "16"],
                              r"needs 4 classes with at least 4 points")
    return files


def test_malformed_files_exit_2_with_one_line(tmp_path, capsys):
    for name, (argv, pattern) in _malformed(tmp_path).items():
        code, out, err = _run(capsys, *argv)
        assert code == 2, name
        assert out == "", name
        lines = err.strip().splitlines()
        assert len(lines) == 1, (name, err)
        assert lines[0].startswith("isoapprox diagnose: error: "), (name, err)
        assert re.search(pattern, lines[0]), (name, lines[0])


def test_loader_errors_in_the_library(tmp_path):
    files = _malformed(tmp_path)
    for name in ("wrong keys", "lengths", "empty npz", "empty csv", "blank csv", "header only",
                 "non-numeric csv", "ragged csv", "junk npz", "npy without labels", "suffix"):
        argv, pattern = files[name]
        with pytest.raises(InvalidInputError, match=pattern):
            load_embeddings(argv[0])
    with pytest.raises(FileNotFoundError, match="embedding file not found"):
        load_embeddings(tmp_path / "nope.npz")
    with pytest.raises(InvalidInputError, match="has no header row"):
        np.savetxt(tmp_path / "raw.csv", np.ones((3, 3)), delimiter=",")
        load_embeddings(tmp_path / "raw.csv", label_column="label")


def test_bad_option_value_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", "x.npz", "--margin", "abc"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["isoapprox diagnose: error: argument --margin: invalid float value: 'abc'"]


def test_help_is_complete(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for word in ("--labels", "--embeddings-key", "--labels-key", "--label-column", "--margin",
                 "--loss", "--quantiles", "--threshold", "--batch-size", "--samples-per-class",
                 "--n-batches", "--seed", "--json", "exit status", ".csv",
                 "all_distances_small", "stuck_at_margin", "stuck_at_ln2", "class_collapse",
                 "dimensional_collapse", "full_collapse_ratio", "soft_margin_diameter"):
        assert word in out, word
