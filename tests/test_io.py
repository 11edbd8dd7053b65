"""Result files and embedding loaders."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoapprox import io
from isoapprox.exceptions import InvalidInputError


def test_write_and_read_results(tmp_path):
    recs = [
        {"a": np.int64(1), "b": np.float64(0.5), "c": [1, 2]},
        {"a": 2, "b": float("nan"), "d": "x"},
    ]
    path = io.write_results(
        tmp_path / "r.json", experiment="demo", config={"n": 3}, records=recs, seed=7
    )
    doc = io.read_results(path)
    assert doc["experiment"] == "demo" and doc["seed"] == 7 and doc["config"] == {"n": 3}
    assert doc["records"][0] == {"a": 1, "b": 0.5, "c": [1, 2]}
    assert doc["records"][1]["b"] is None  # NaN is not JSON
    prov = doc["provenance"]
    for key in ("isoapprox", "numpy", "scipy", "numba", "python"):
        assert key in prov
    csv_text = (tmp_path / "r.csv").read_text().splitlines()
    assert csv_text[0] == "a,b,c,d"
    assert len(csv_text) == 3
    # no temporary files left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json"]


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    io.atomic_write_text(target, "old")

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(io.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        io.atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_read_results_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInputError, match="is not valid JSON"):
        io.read_results(bad)
    bad.write_text(json.dumps({"x": 1}))
    with pytest.raises(InvalidInputError, match="is not an isoapprox results file"):
        io.read_results(bad)
    bad.write_text(json.dumps({"schema_version": 99, "records": []}))
    with pytest.raises(InvalidInputError, match="schema_version 99"):
        io.read_results(bad)


def test_load_embeddings_formats(tmp_path):
    E = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 0, 1, 1, 2, 2])
    np.savez(tmp_path / "a.npz", embeddings=E, labels=y)
    E1, y1 = io.load_embeddings(tmp_path / "a.npz")
    assert np.array_equal(E1, E) and np.array_equal(y1, y)
    np.save(tmp_path / "e.npy", E)
    np.save(tmp_path / "l.npy", y)
    E2, y2 = io.load_embeddings(tmp_path / "e.npy", labels=tmp_path / "l.npy")
    assert np.array_equal(E2, E) and np.array_equal(y2, y)
    rows = ["f0,f1,label"] + [f"{a},{b},{c}" for (a, b), c in zip(E, y, strict=True)]
    (tmp_path / "c.csv").write_text("\n".join(rows) + "\n")
    E3, y3 = io.load_embeddings(tmp_path / "c.csv")
    assert np.array_equal(E3, E) and np.array_equal(y3, y)


def test_load_embeddings_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="embedding file not found"):
        io.load_embeddings(tmp_path / "nope.npz")
    np.savez(tmp_path / "k.npz", vectors=np.zeros((3, 2)), labels=np.zeros(3))
    with pytest.raises(
        InvalidInputError,
        match=r"must contain an array 'embeddings'.*got arrays \['vectors', 'labels'\]",
    ):
        io.load_embeddings(tmp_path / "k.npz")
    np.savez(tmp_path / "m.npz", embeddings=np.zeros((3, 2)), labels=np.zeros(4))
    with pytest.raises(InvalidInputError, match="same length; got 3 embeddings and 4 labels"):
        io.load_embeddings(tmp_path / "m.npz")
    np.save(tmp_path / "e.npy", np.zeros((3, 2)))
    with pytest.raises(InvalidInputError, match="pass the labels with --labels"):
        io.load_embeddings(tmp_path / "e.npy")
    (tmp_path / "x.txt2").write_text("1,2,0\n")
    with pytest.raises(
        InvalidInputError,
        match=r"must end in .npz, .npy, .csv, .tsv, .txt or .parquet; got suffix '.txt2'",
    ):
        io.load_embeddings(tmp_path / "x.txt2")
    (tmp_path / "bad.npz").write_text("not a zip")
    with pytest.raises(InvalidInputError, match="is not a readable .npz file"):
        io.load_embeddings(tmp_path / "bad.npz")
    (tmp_path / "c.csv").write_text("a,b,label\n1,x,0\n")
    with pytest.raises(
        InvalidInputError, match=r"line 2, column 'b': embedding value 'x' is not a number"
    ):
        io.load_embeddings(tmp_path / "c.csv")
    (tmp_path / "d.csv").write_text("a,b,label\n")
    with pytest.raises(InvalidInputError, match="at least one data row"):
        io.load_embeddings(tmp_path / "d.csv")
