"""Files as practitioners have them (issue 33, item 1).

A CSV written by pandas' ``df.to_csv("emb.csv")`` starts with an unnamed row
index ``0..N-1``; it was read as one more embedding dimension, which gave a
silently wrong verdict (the index's scale swamps the embedding: on shuffled
rows the classes no longer rank, 40% of the triplets are violated).  Now the
index is detected from the header, an index-like column that no header names
is refused (``--index-col`` / ``--no-index`` decide), and the report says what
was read.  Also TSV, header-less CSV, Parquet, labels
files in ``.csv``/``.txt`` with class names, object label arrays and
float16/float32 embeddings.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import isoapprox
from isoapprox import io
from isoapprox._validation import as_labels
from isoapprox.cli import main
from isoapprox.exceptions import InvalidInputError

from . import planted

NAMES = np.array(["cat", "dog", "emu", "fox", "gnu", "hen"])


def _healthy(P=6, K=30, n=16):
    """A healthy 16-d embedding of 180 points in shuffled order (an index 0..179 swamps its
    scale of ~12)."""
    rng = np.random.default_rng(7)
    E, y = planted.healthy(rng, P=P, K=K, n=n)
    order = rng.permutation(len(y))
    return E[order], y[order]


def _f(v) -> str:
    """A float cell as pandas (and Python) write it: the shortest round-trip repr."""
    return repr(float(v))


def _pandas_csv(E, y, *, sep=",", header=True, index=True, order=None) -> str:
    """What ``DataFrame(E).assign(label=y).to_csv(sep=sep, header=header, index=index)``
    writes (float cells as ``repr``, ``\\n`` line ends)."""
    rows = range(len(E)) if order is None else order
    lines = []
    if header:
        lines.append(sep.join(([""] if index else []) + [str(k) for k in range(E.shape[1])]
                              + ["label"]))
    for i in rows:
        cells = [_f(v) for v in E[i]] + [str(y[i])]
        lines.append(sep.join(([str(i)] if index else []) + cells))
    return "\n".join(lines) + "\n"


def _cli(capsys, *argv):
    try:
        code = main(["diagnose", *map(str, argv), "--no-theory"])
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _report(capsys, tmp_path, *argv):
    out_json = tmp_path / "report.json"
    code, out, err = _cli(capsys, *argv, "--json", out_json)
    assert code == 0 and err == "", err
    return json.loads(out_json.read_text()), out


def _held(doc) -> list[str]:
    """The collapse signatures that hold."""
    return [name for name, s in doc["signatures"].items() if s["holds"]]


# --- the pandas CSV of the issue -------------------------------------------------


def test_hand_written_csv_is_what_pandas_writes(tmp_path):
    pd = pytest.importorskip("pandas")
    E, y = _healthy()
    df = pd.DataFrame(E)
    df["label"] = y
    assert df.to_csv(lineterminator="\n") == _pandas_csv(E, y)
    assert df.to_csv(sep="\t", lineterminator="\n") == _pandas_csv(E, y, sep="\t")
    assert df.to_csv(header=False, lineterminator="\n") == _pandas_csv(E, y, header=False)


def test_pandas_csv_index_is_dropped_and_said(tmp_path, capsys):
    E, y = _healthy()
    path = tmp_path / "emb.csv"
    path.write_text(_pandas_csv(E, y))
    doc, out = _report(capsys, tmp_path, path)
    assert doc["data"]["dim"] == 16 and doc["input"]["n_dims"] == 16
    assert _held(doc) == [] and doc["separation"]["fraction_violated"] == 0.0
    assert doc["input"]["index_columns"] == [""]
    assert doc["input"]["index_rule"] == "named as an index"
    assert doc["input"]["description"] == (
        f"{path}: 180 rows x 16 embedding columns (float64), labels from column 'label' "
        "(6 classes), index column '' dropped (named as an index)")
    got = io.read_embeddings(path)
    np.testing.assert_array_equal(got.embeddings, E)
    np.testing.assert_array_equal(got.labels, y)


def test_no_index_keeps_the_column_and_shows_the_old_wrong_verdict(tmp_path, capsys):
    E, y = _healthy()
    path = tmp_path / "emb.csv"
    path.write_text(_pandas_csv(E, y))
    doc, _ = _report(capsys, tmp_path, path, "--no-index")
    assert doc["data"]["dim"] == 17 and doc["input"]["index_columns"] == []
    assert doc["input"]["index_rule"] == "index_col=False"
    # what reading the index as data gave before: a wrong verdict
    assert _held(doc) != [] and doc["separation"]["fraction_violated"] > 0.1


def test_pandas_written_file_when_pandas_is_installed(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    E, y = _healthy()
    df = pd.DataFrame(E)
    df["label"] = NAMES[y]
    df.sample(frac=1.0, random_state=3).to_csv(tmp_path / "emb.csv")  # shuffled index
    pd.read_csv(tmp_path / "emb.csv").to_csv(tmp_path / "twice.csv")  # '' and 'Unnamed: 0'
    doc, _ = _report(capsys, tmp_path, tmp_path / "emb.csv")
    assert doc["data"]["dim"] == 16 and _held(doc) == []
    twice = io.read_embeddings(tmp_path / "twice.csv")
    assert twice.embeddings.shape == (180, 16)
    assert twice.index_columns == ("", "Unnamed: 0")


# --- ambiguous: an index-like column no header names -------------------------------


def test_headerless_index_is_ambiguous_and_refused_in_one_line(tmp_path, capsys):
    E, y = _healthy()
    path = tmp_path / "emb.csv"
    path.write_text(_pandas_csv(E, y, header=False))  # df.to_csv(header=False)
    code, out, err = _cli(capsys, path)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0] == (
        f"isoapprox diagnose: error: `{path}` column 0 holds the integers 0..179 once each, "
        "as a row index does, but there is no header row to say so; pass --index-col 0 "
        "(index_col=0) to drop it, or --no-index (index_col=False) to keep it as an "
        "embedding dimension")
    doc, _ = _report(capsys, tmp_path, path, "--index-col", "0")
    assert doc["data"]["dim"] == 16 and doc["input"]["index_columns"] == [0]
    assert doc["input"]["header"] is False and _held(doc) == []
    doc, _ = _report(capsys, tmp_path, path, "--no-index")
    assert doc["data"]["dim"] == 17


def test_a_named_column_that_counts_is_ambiguous_too(tmp_path, capsys):
    E, y = _healthy(P=3, K=4, n=3)
    order = np.random.default_rng(0).permutation(12)  # a shuffled index is still one
    rows = ["sample,x0,x1,x2,label"] + [
        f"{i + 100},{_f(E[i, 0])},{_f(E[i, 1])},{_f(E[i, 2])},{y[i]}" for i in order]
    path = tmp_path / "s.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(InvalidInputError, match=r"column 'sample' holds the integers 100\.\.111 "
                                                r"once each, as a row index does, but its name "
                                                r"does not say so; pass --index-col 0"):
        io.read_embeddings(path)
    got = io.read_embeddings(path, index_col="sample")
    np.testing.assert_array_equal(got.embeddings, E[order])
    assert io.read_embeddings(path, index_col=False).embeddings.shape == (12, 4)
    code, _, err = _cli(capsys, path, "--index-col", "sample", "--no-index")
    assert code == 2 and "not allowed with argument" in err


def test_integer_data_that_does_not_count_is_data(tmp_path):
    # a column of integers that repeat (or skip) is no index: read as data, no question
    path = tmp_path / "q.csv"
    path.write_text("q,x,label\n" + "".join(f"{k % 3},{k * 0.5},{k % 2}\n" for k in range(9)))
    got = io.read_embeddings(path)
    assert got.embeddings.shape == (9, 2) and got.index_columns == ()


def test_index_col_options_are_checked(tmp_path):
    E, y = _healthy(P=3, K=4, n=3)
    path = tmp_path / "emb.csv"
    path.write_text(_pandas_csv(E, y))
    with pytest.raises(InvalidInputError, match=r"`index_col` must name a column of `.*emb\.csv` "
                                                r"\(\['', '0', '1', '2', 'label'\] \(5 "
                                                r"columns\)\); got 'nope'"):
        io.read_embeddings(path, index_col="nope")
    with pytest.raises(InvalidInputError, match=r"`index_col` must be a column index in \[0, 4\]"):
        io.read_embeddings(path, index_col=9)
    with pytest.raises(InvalidInputError, match=r"`index_col` 'label' names the label column"):
        io.read_embeddings(path, index_col="label")
    with pytest.raises(TypeError, match=r"`index_col` must be None \(detect\), False"):
        io.read_embeddings(path, index_col=1.5)
    np.savez(tmp_path / "e.npz", embeddings=E, labels=y)
    with pytest.raises(InvalidInputError, match=r"`index_col` \(--index-col\) applies to tables"):
        io.read_embeddings(tmp_path / "e.npz", index_col=0)


# --- other layouts ----------------------------------------------------------------


def test_tsv_and_headerless_csv(tmp_path, capsys):
    E, y = _healthy()
    (tmp_path / "emb.tsv").write_text(_pandas_csv(E, y, sep="\t"))
    doc, _ = _report(capsys, tmp_path, tmp_path / "emb.tsv")
    assert doc["data"]["dim"] == 16 and doc["input"]["format"] == "tsv"
    # numpy.savetxt: no header, no index, labels last
    np.savetxt(tmp_path / "raw.csv", np.c_[E, y], delimiter=",")
    got = io.read_embeddings(tmp_path / "raw.csv")
    np.testing.assert_array_equal(got.embeddings, E)
    assert got.header is False and got.labels_from == "column 16"
    # header-less with class names last: the first row is data, not a header
    (tmp_path / "names.csv").write_text(
        _pandas_csv(E, NAMES[y], header=False, index=False))
    got = io.read_embeddings(tmp_path / "names.csv")
    assert got.embeddings.shape == (180, 16) and got.labels.tolist() == NAMES[y].tolist()
    # pandas' default column names 0,1,... with the labels in the last, unnamed column
    (tmp_path / "ints.csv").write_text(
        ",".join(map(str, range(17))) + "\n"
        + "".join(",".join([*map(_f, e), str(c)]) + "\n" for e, c in zip(E, y, strict=True)))
    got = io.read_embeddings(tmp_path / "ints.csv")
    assert got.header is True and got.embeddings.shape == (180, 16)


def test_last_column_of_fractions_is_no_label_column(tmp_path, capsys):
    E, _ = _healthy(P=3, K=4, n=3)
    np.savetxt(tmp_path / "e.csv", E, delimiter=",")
    code, _, err = _cli(capsys, tmp_path / "e.csv")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert "has no label column: no column is named 'label', 'labels' or 'y', and the last " \
           "column 2 holds numbers that are not integers" in lines[0]


def test_shape_problems_are_one_line_naming_the_file(tmp_path):
    (tmp_path / "r.csv").write_text(",a,b,label\n0,1.5,2.5,x\n1,3.5,y\n")
    with pytest.raises(InvalidInputError, match=r"r\.csv` line 3 has 3 fields; expected 4 "
                                                r"\(as the header\)"):
        io.read_embeddings(tmp_path / "r.csv")
    (tmp_path / "n.csv").write_text(",a,b,label\n0,1.5,2.5,x\n1,3.5,oops,y\n")
    with pytest.raises(InvalidInputError, match=r"n\.csv` line 3, column 'b': embedding value "
                                                r"'oops' is not a number"):
        io.read_embeddings(tmp_path / "n.csv")
    (tmp_path / "only.csv").write_text(",label\n0,x\n1,y\n")
    with pytest.raises(InvalidInputError, match=r"only\.csv` has no embedding column: its 2 "
                                                r"column\(s\) are the label column 'label' and "
                                                r"the index column ''"):
        io.read_embeddings(tmp_path / "only.csv")


# --- labels files -----------------------------------------------------------------


@pytest.mark.parametrize("name,text", [
    ("l.txt", lambda labs: "\n".join(labs) + "\n"),
    ("lh.txt", lambda labs: "label\n" + "\n".join(labs) + "\n"),
    ("l.csv", lambda labs: "label\n" + "\n".join(labs) + "\n"),
    # pandas' Series.to_csv: index column '' and a header
    ("p.csv", lambda labs: ",label\n" + "".join(f"{i},{c}\n" for i, c in enumerate(labs))),
    # the same without header: the first column counts, so it is the index
    ("q.csv", lambda labs: "".join(f"{i},{c}\n" for i, c in enumerate(labs))),
    ("l.tsv", lambda labs: "label\n" + "\n".join(labs) + "\n"),
])
def test_labels_from_text_files_with_class_names(tmp_path, capsys, name, text):
    E, y = _healthy()
    np.save(tmp_path / "e.npy", E.astype(np.float32))
    (tmp_path / name).write_text(text(NAMES[y].tolist()))
    got = io.read_embeddings(tmp_path / "e.npy", labels=tmp_path / name)
    assert got.labels.tolist() == NAMES[y].tolist()
    doc, out = _report(capsys, tmp_path, tmp_path / "e.npy", "--labels", tmp_path / name)
    assert doc["data"]["n_classes"] == 6 and doc["input"]["dtype"] == "float32"
    assert doc["input"]["labels_from"].startswith(f"file '{tmp_path / name}'")
    assert "(float32, computed in float64)" in doc["input"]["description"]


def test_labels_file_for_a_csv_without_label_column(tmp_path, capsys):
    E, y = _healthy()
    (tmp_path / "emb.csv").write_text(
        "," + ",".join(map(str, range(16))) + "\n"
        + "".join(f"{i}," + ",".join(map(_f, e)) + "\n" for i, e in enumerate(E)))
    (tmp_path / "l.txt").write_text("\n".join(NAMES[y]) + "\n")
    doc, _ = _report(capsys, tmp_path, tmp_path / "emb.csv", "--labels", tmp_path / "l.txt")
    assert doc["data"]["dim"] == 16 and doc["data"]["n_classes"] == 6
    code, _, err = _cli(capsys, tmp_path / "emb.csv", "--labels", tmp_path / "l.txt",
                        "--label-col", "0")
    assert code == 2 and "exclude each other" in err


def test_labels_length_mismatch_names_both_files(tmp_path, capsys):
    E, y = _healthy()
    np.save(tmp_path / "e.npy", E)
    (tmp_path / "l.txt").write_text("\n".join(NAMES[y][:170]) + "\n")
    code, _, err = _cli(capsys, tmp_path / "e.npy", "--labels", tmp_path / "l.txt")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert lines[0].endswith(f"labels file `{tmp_path / 'l.txt'}` has 170 labels but "
                             f"`{tmp_path / 'e.npy'}` has 180 embeddings (rows); expected one "
                             "label per embedding")
    np.save(tmp_path / "l.npy", y[:5])
    with pytest.raises(InvalidInputError, match=r"l\.npy` has 5 labels but `.*e\.npy` has 180"):
        io.read_embeddings(tmp_path / "e.npy", labels=tmp_path / "l.npy")
    # one row too many whose first value is a class: no header, a mismatch
    (tmp_path / "x.txt").write_text("\n".join(["cat", *NAMES[y]]) + "\n")
    with pytest.raises(InvalidInputError, match=r"has 181 labels .* \(with a header row"):
        io.read_embeddings(tmp_path / "e.npy", labels=tmp_path / "x.txt")
    (tmp_path / "l.json").write_text("[]")
    with pytest.raises(InvalidInputError, match=r"labels file `.*l\.json` must end in \.npy, "
                                                r"\.csv, \.tsv or \.txt"):
        io.read_embeddings(tmp_path / "e.npy", labels=tmp_path / "l.json")
    (tmp_path / "w.csv").write_text("".join(f"a{i},{c},1\n" for i, c in enumerate(y)))
    with pytest.raises(InvalidInputError, match=r"w\.csv` line 1 has 3 fields; expected one "
                                                r"label per row"):
        io.read_embeddings(tmp_path / "e.npy", labels=tmp_path / "w.csv")


def test_label_col_is_the_flag_and_label_column_its_alias(tmp_path, capsys):
    E, y = _healthy(P=3, K=4, n=3)
    rows = ["cls,a,b,c"] + [f"{NAMES[c]}," + ",".join(map(_f, e)) for e, c in zip(E, y,
                                                                                strict=True)]
    (tmp_path / "c.csv").write_text("\n".join(rows) + "\n")
    for flag in ("--label-col", "--label-column"):
        doc, _ = _report(capsys, tmp_path, tmp_path / "c.csv", flag, "cls")
        assert doc["data"]["dim"] == 3 and doc["input"]["labels_from"] == "column 'cls'"
    doc, _ = _report(capsys, tmp_path, tmp_path / "c.csv", "--label-col", "0")
    assert doc["data"]["dim"] == 3


# --- the API: object labels, float16/float32 --------------------------------------


def test_object_label_arrays_are_accepted():
    E, y = _healthy(P=3, K=8, n=4)
    names = NAMES[y].astype(object)
    report = isoapprox.diagnose(E, names)
    assert report["data"]["n_classes"] == 3
    assert report["data"]["class_sizes"] == {"cat": 8, "dog": 8, "emu": 8}
    codes, classes = as_labels(np.array([3, 1, 3], dtype=object), 3)
    assert codes.tolist() == [1, 0, 1] and classes.tolist() == [1, 3]


def test_mixed_object_labels_are_a_clear_error():
    with pytest.raises(TypeError, match=r"`y` must hold labels of one kind \(all strings or all "
                                        r"integers\); got str at y\[0\] = 'cat' and int at "
                                        r"y\[2\] = 3"):
        as_labels(np.array(["cat", "dog", 3], dtype=object), 3)
    with pytest.raises(TypeError, match=r"`y` must hold integer or string class labels; got "
                                        r"y\[1\] = None"):
        as_labels(np.array(["cat", None], dtype=object), 2)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_low_precision_embeddings_are_computed_in_float64(tmp_path, dtype):
    E, y = _healthy(P=3, K=8, n=4)
    low = E.astype(dtype)
    report = isoapprox.diagnose(low, y)
    want = isoapprox.diagnose(low.astype(np.float64), y)
    assert report["statistics"] == want["statistics"]
    np.savez(tmp_path / "e.npz", embeddings=low, labels=NAMES[y])
    got = io.read_embeddings(tmp_path / "e.npz")
    assert got.embeddings.dtype == dtype
    assert f"({np.dtype(dtype).name}, computed in float64)" in got.description


# --- Parquet ----------------------------------------------------------------------


def test_parquet_round_trip(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    E, y = _healthy()
    df = pd.DataFrame(E.astype(np.float32), columns=[f"x{k}" for k in range(16)])
    df["label"] = NAMES[y]
    df.sample(frac=1.0, random_state=2).to_parquet(tmp_path / "emb.parquet")  # index stored
    doc, _ = _report(capsys, tmp_path, tmp_path / "emb.parquet")
    assert doc["data"]["dim"] == 16 and doc["input"]["format"] == "parquet"
    assert doc["input"]["index_columns"] == ["__index_level_0__"]
    assert _held(doc) == []
    got = io.read_embeddings(tmp_path / "emb.parquet")
    assert got.embeddings.dtype == np.float32
    assert sorted(map(tuple, got.embeddings.tolist())) == sorted(
        map(tuple, E.astype(np.float32).tolist()))
    # one column of vectors
    pd.DataFrame({"embedding": list(E), "label": NAMES[y]}).to_parquet(tmp_path / "v.parquet")
    got = io.read_embeddings(tmp_path / "v.parquet")
    np.testing.assert_array_equal(got.embeddings, E)


def test_parquet_without_pyarrow_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "e.parquet").write_bytes(b"PAR1 not really")
    for name in ("pyarrow", "pyarrow.parquet"):  # None in sys.modules: an ImportError
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(InvalidInputError, match=r"e\.parquet` is a Parquet file, which needs "
                                                r"pyarrow: pip install isoapprox\[parquet\]$"):
        io.read_embeddings(tmp_path / "e.parquet")


def test_damaged_parquet_is_one_line(tmp_path):
    pytest.importorskip("pyarrow")
    (tmp_path / "e.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InvalidInputError, match=r"e\.parquet` is not a readable Parquet file"):
        io.read_embeddings(tmp_path / "e.parquet")
