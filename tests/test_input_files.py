"""Input files that are not what they claim: refused in one line, before any allocation.

Issue 34 (items 3, 5, 7): a FIFO, a device, a ``.npy`` header that claims a
huge shape or is itself huge, a deeply nested results file and a journal
line that is not UTF-8 each gave a hang, a MemoryError, a RecursionError or
a UnicodeDecodeError traceback.  Now each is one :class:`InvalidInputError`
line naming the file (exit status 2 on the command line).
"""

from __future__ import annotations

import io as stdio
import json
import os
import struct
import tempfile
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isoapprox import io
from isoapprox.cli import main
from isoapprox.exceptions import InvalidInputError

from .conftest import examples

E = np.arange(12.0).reshape(6, 2)
Y = np.array([0, 0, 1, 1, 2, 2])

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
needs_dev_zero = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")


def _within(seconds: float, func):
    """``func()``'s result or exception, failing (not hanging) after ``seconds``."""
    out: dict = {}

    def target():
        try:
            out["value"] = func()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s (a blocking read?)"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _cli(capsys, *argv) -> tuple[int, list[str]]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err.strip().splitlines()


def _npy_of(array: np.ndarray) -> bytes:
    buf = stdio.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _npy_bytes(header: str, payload: bytes = b"", version: tuple[int, int] = (1, 0)) -> bytes:
    """A ``.npy`` file with the literal ``header`` (padded as numpy pads it)."""
    width = 2 if version[0] == 1 else 4
    pad = -(len(header) + 1 + 8 + width) % 64
    text = (header + " " * pad + "\n").encode("latin1")
    length = struct.pack("<H" if width == 2 else "<I", len(text))
    return b"\x93NUMPY" + bytes(version) + length + text + payload


# --- 5: a FIFO, 6: a device, or a folder is refused before it is read ---------------


@needs_fifo
@pytest.mark.parametrize("name", ["f.csv", "f.npz", "f.npy"])
def test_fifo_is_refused_without_blocking(tmp_path, name):
    # was: diagnose hung forever in open() (no writer ever comes)
    fifo = tmp_path / name
    os.mkfifo(fifo)
    np.save(tmp_path / "l.npy", Y)
    with pytest.raises(InvalidInputError,
                       match=rf"^`{fifo}` must be a regular file \(embedding file\); got a FIFO "
                             r"\(named pipe\)$"):
        _within(30, lambda: io.load_embeddings(fifo, labels=tmp_path / "l.npy"))


@needs_fifo
def test_fifo_labels_and_results_are_refused(tmp_path):
    np.save(tmp_path / "e.npy", E)
    os.mkfifo(tmp_path / "l.npy")
    with pytest.raises(InvalidInputError, match=r"l\.npy` must be a regular file \(labels file\)"):
        _within(30, lambda: io.load_embeddings(tmp_path / "e.npy", labels=tmp_path / "l.npy"))
    os.mkfifo(tmp_path / "r.json")
    with pytest.raises(InvalidInputError,
                       match=r"r\.json` must be a regular file \(results file\)"):
        _within(30, lambda: io.read_results(tmp_path / "r.json"))


@needs_fifo
def test_diagnose_of_a_fifo_is_one_line(tmp_path, capsys):
    os.mkfifo(tmp_path / "f.csv")
    code, err = _within(30, lambda: _cli(capsys, "diagnose", tmp_path / "f.csv", "--no-theory"))
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("isoapprox diagnose: error: ") and "got a FIFO" in err[0]


@needs_dev_zero
def test_device_behind_a_link_is_refused(tmp_path, capsys):
    # was: read /dev/zero until a MemoryError traceback
    (tmp_path / "z.csv").symlink_to("/dev/zero")
    with pytest.raises(InvalidInputError, match=r"z\.csv` must be a regular file .*got a "
                                                r"character device$"):
        _within(30, lambda: io.load_embeddings(tmp_path / "z.csv"))
    code, err = _within(30, lambda: _cli(capsys, "diagnose", tmp_path / "z.csv", "--no-theory"))
    assert code == 2 and len(err) == 1 and "got a character device" in err[0], err


def test_folder_is_refused(tmp_path):
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(InvalidInputError, match=r"d\.csv` must be a regular file .*got a folder"):
        io.load_embeddings(tmp_path / "d.csv")
    with pytest.raises(InvalidInputError, match=r"d\.csv` must be a regular file .*got a folder"):
        io.read_results(tmp_path / "d.csv")


def test_missing_files_keep_their_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="embedding file not found"):
        io.load_embeddings(tmp_path / "nope.csv")
    np.save(tmp_path / "e.npy", E)
    with pytest.raises(FileNotFoundError, match="labels file not found"):
        io.load_embeddings(tmp_path / "e.npy", labels=tmp_path / "nope.npy")
    with pytest.raises(FileNotFoundError, match="results file not found"):
        io.read_results(tmp_path / "nope.json")


# --- 7, 8: .npy headers are checked before anything is allocated ---------------------


def test_npy_claiming_a_huge_shape_is_refused_before_allocating(tmp_path, capsys):
    # was: MemoryError traceback (1.6 TB asked for by a 200-byte file)
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 2), }"
    (tmp_path / "huge.npy").write_bytes(_npy_bytes(header, b"\0" * 64))
    np.save(tmp_path / "l.npy", Y)
    with pytest.raises(InvalidInputError,
                       match=r"huge\.npy` is not a readable \.npy file: its header claims shape "
                             r"\(100000000000, 2\) of float64 \(1600000000000 bytes\) but 64 "
                             r"bytes follow the header \(a truncated file\?\)$"):
        io.load_embeddings(tmp_path / "huge.npy", labels=tmp_path / "l.npy")
    code, err = _cli(capsys, "diagnose", tmp_path / "huge.npy", "--labels", tmp_path / "l.npy",
                     "--no-theory")
    assert code == 2 and len(err) == 1 and "claims shape (100000000000, 2)" in err[0], err


def test_npy_header_of_a_megabyte_is_one_line(tmp_path, capsys):
    # was: numpy's three-line message about max_header_size
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (6, 2), }" + " " * 2**20
    (tmp_path / "big.npy").write_bytes(_npy_bytes(header, E.tobytes(), version=(2, 0)))
    np.save(tmp_path / "l.npy", Y)
    with pytest.raises(InvalidInputError, match=r"big\.npy` has a \.npy header of \d+ bytes; at "
                                                r"most 65536 are read"):
        io.load_embeddings(tmp_path / "big.npy", labels=tmp_path / "l.npy")
    code, err = _cli(capsys, "diagnose", tmp_path / "big.npy", "--labels", tmp_path / "l.npy",
                     "--no-theory")
    assert code == 2 and len(err) == 1 and "at most 65536 are read" in err[0], err


def test_npy_headers_numpy_writes_are_read(tmp_path):
    # a header just under the bound, in the three format versions numpy reads
    for version in ((1, 0), (2, 0), (3, 0)):
        header = "{'descr': '<f8', 'fortran_order': True, 'shape': (6, 2), }"
        header += " " * (60000 if version == (1, 0) else 64000)
        data = np.asfortranarray(E).tobytes(order="F")
        (tmp_path / "e.npy").write_bytes(_npy_bytes(header, data, version=version))
        np.save(tmp_path / "l.npy", Y)
        E1, y1 = io.load_embeddings(tmp_path / "e.npy", labels=tmp_path / "l.npy")
        assert np.array_equal(E1, E) and np.array_equal(y1, Y)


def test_truncated_padded_and_object_npy_are_refused(tmp_path):
    np.save(tmp_path / "l.npy", Y)
    np.save(tmp_path / "e.npy", E)
    whole = (tmp_path / "e.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(whole[:-8])
    with pytest.raises(InvalidInputError, match=r"claims shape \(6, 2\) of float64 \(96 bytes\) "
                                                r"but 88 bytes .*truncated"):
        io.load_embeddings(tmp_path / "cut.npy", labels=tmp_path / "l.npy")
    (tmp_path / "long.npy").write_bytes(whole + b"\0" * 8)
    with pytest.raises(InvalidInputError, match=r"but 104 bytes follow the header$"):
        io.load_embeddings(tmp_path / "long.npy", labels=tmp_path / "l.npy")
    (tmp_path / "head.npy").write_bytes(whole[:20])
    with pytest.raises(InvalidInputError, match=r"ends inside its header"):
        io.load_embeddings(tmp_path / "head.npy", labels=tmp_path / "l.npy")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}] * 6, dtype=object), allow_pickle=True)
    with pytest.raises(InvalidInputError, match=r"holds Python objects \(dtype object\)"):
        io.load_embeddings(tmp_path / "e.npy", labels=tmp_path / "obj.npy")
    (tmp_path / "v9.npy").write_bytes(b"\x93NUMPY\x09\x00" + whole[8:])
    with pytest.raises(InvalidInputError, match=r"has \.npy format version 9\.0"):
        io.load_embeddings(tmp_path / "v9.npy", labels=tmp_path / "l.npy")
    (tmp_path / "bad.npy").write_bytes(_npy_bytes("{'descr': 'nonsense', 'shape': (6, 2)}"))
    with pytest.raises(InvalidInputError, match=r"bad\.npy` is not a readable \.npy file: bad "
                                                r"header \(.*\)$"):
        io.load_embeddings(tmp_path / "bad.npy", labels=tmp_path / "l.npy")


def test_npz_member_claiming_a_huge_shape_is_refused(tmp_path):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 2), }"
    with zipfile.ZipFile(tmp_path / "huge.npz", "w") as zf:
        zf.writestr("embeddings.npy", _npy_bytes(header, b"\0" * 64))
        zf.writestr("labels.npy", _npy_of(Y))
    with pytest.raises(InvalidInputError, match=r"huge\.npz` array 'embeddings' is not a readable "
                                                r"\.npy file: its header claims shape "
                                                r"\(100000000000, 2\)"):
        io.load_embeddings(tmp_path / "huge.npz")
    with zipfile.ZipFile(tmp_path / "text.npz", "w") as zf:
        zf.writestr("embeddings.npy", _npy_bytes("{'descr': '<f8', 'fortran_order': False, "
                                                 "'shape': (6, 2), }", E.tobytes()))
        zf.writestr("labels", b"0,0,1,1,2,2")
    with pytest.raises(InvalidInputError, match=r"text\.npz` array 'labels' is not a \.npy array"):
        io.load_embeddings(tmp_path / "text.npz")


def test_corrupt_npz_member_is_one_line(tmp_path):
    np.savez_compressed(tmp_path / "a.npz", embeddings=np.ones((64, 8)), labels=np.arange(64))
    data = bytearray((tmp_path / "a.npz").read_bytes())
    with zipfile.ZipFile(tmp_path / "a.npz") as zf:
        info = zf.getinfo("embeddings.npy")
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:
                                                    info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    data[start + 10: start + 14] = b"\xff\xff\xff\xff"  # inside the deflated stream
    (tmp_path / "bad.npz").write_bytes(bytes(data))
    with pytest.raises(InvalidInputError, match=r"^`.*bad\.npz` array 'embeddings' is not "
                                                r"readable: Error -3 while decompressing"):
        io.load_embeddings(tmp_path / "bad.npz")


# --- CSV: bounded lines and rows, exact line numbers ---------------------------------


def test_csv_line_and_column_limits(tmp_path, monkeypatch):
    (tmp_path / "c.csv").write_text("a,b,label\n1,2,0\n" + "3," * 40 + "0\n")
    monkeypatch.setattr(io, "CSV_MAX_LINE", 64)
    with pytest.raises(InvalidInputError, match=r"c\.csv` line 3 is longer than 64 characters"):
        io.load_embeddings(tmp_path / "c.csv")
    monkeypatch.setattr(io, "CSV_MAX_LINE", 2**22)
    monkeypatch.setattr(io, "CSV_MAX_COLUMNS", 8)
    with pytest.raises(InvalidInputError, match=r"c\.csv` line 3 has 41 fields; at most 8 are "
                                                r"read"):
        io.load_embeddings(tmp_path / "c.csv")


def test_csv_limits_are_documented_values():
    assert io.CSV_MAX_LINE == 2**22 and io.CSV_MAX_COLUMNS == 65536
    assert io.NPY_MAX_HEADER == 65536 and io.JSON_MAX_DEPTH == 100


def test_csv_errors_name_the_physical_line(tmp_path):
    (tmp_path / "c.csv").write_bytes(b"a,b,label\n\n1,2,0\n3,4,\x00\xff\n")
    with pytest.raises(InvalidInputError, match=r"c\.csv` is not a CSV text file: line 4, "
                                                r"character 6 is not UTF-8"):
        io.load_embeddings(tmp_path / "c.csv")
    (tmp_path / "d.csv").write_text("a,b,label\n\n1,2,0\n3,oops,1\n")
    with pytest.raises(InvalidInputError, match=r"d\.csv` line 4, column 'b'"):
        io.load_embeddings(tmp_path / "d.csv")
    (tmp_path / "q.csv").write_text('a,b,label\n1,2,"' + "x" * 200_000 + '"\n')
    with pytest.raises(InvalidInputError, match=r"q\.csv` line 2 is not valid CSV: field larger "
                                                r"than field limit"):
        io.load_embeddings(tmp_path / "q.csv")


def test_csv_variants_are_read(tmp_path):
    rows = ["f0,f1,label"] + [f"{a},{b},{c}" for (a, b), c in zip(E, Y, strict=True)]
    for name, text in {
        "lf": "\n".join(rows) + "\n",
        "crlf": "\r\n".join(rows) + "\r\n",
        "cr": "\r".join(rows) + "\r",
        "bom": "\ufeff" + "\n".join(rows),
        "blank lines": "\n\n".join(rows) + "\n\n",
    }.items():
        (tmp_path / "c.csv").write_bytes(text.encode("utf-8"))
        E1, y1 = io.load_embeddings(tmp_path / "c.csv")
        assert np.array_equal(E1, E) and np.array_equal(y1, Y), name


def test_csv_labels_that_are_not_integers_stay_text(tmp_path):
    # was: 'inf' and 1e300 cast to int64 garbage (with a RuntimeWarning)
    (tmp_path / "c.csv").write_text("a,label\n1,inf\n2,1e300\n3,2\n")
    _, y = io.load_embeddings(tmp_path / "c.csv")
    assert y.tolist() == ["inf", "1e300", "2"]


# --- 11: results files nest boundedly ------------------------------------------------


def test_deeply_nested_results_file_is_one_line(tmp_path, capsys):
    # was: RecursionError traceback in figures
    (tmp_path / "r.json").write_text("[" * 200_000 + "\n")
    with pytest.raises(InvalidInputError, match=r"r\.json` is not a results file: its JSON nests "
                                                r"200000 levels deep; results files nest at most "
                                                r"100$"):
        io.read_results(tmp_path / "r.json")
    code, err = _cli(capsys, "figures", tmp_path / "r.json")
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("isoapprox figures: error: ") and "nests 200000 levels" in err[0]


def test_brackets_inside_strings_do_not_count(tmp_path):
    doc = {"schema_version": io.SCHEMA_VERSION, "records": [[[1]]],
           "note": "[" * 5000 + '\\"{' * 100}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert io.read_results(tmp_path / "r.json")["note"] == doc["note"]
    assert io._json_depth(json.dumps(doc)) == 4  # {"records": [[[


# --- 10: journal lines that are not UTF-8 or not JSON decode as torn lines -----------


def test_journal_line_decoder():
    # was: UnicodeDecodeError on --resume for bytes \x00\xff in line 3
    lines = b'{"unit": 1}\n{"unit": 2}\n\x00\xff\n{"unit": 4}\n{"unit": 5'.split(b"\n")
    decoded = [io.decode_jsonl_line(raw) for raw in lines]
    assert decoded == [{"unit": 1}, {"unit": 2}, None, {"unit": 4}, None]
    assert io.decode_jsonl_line(b"[1, 2]\n") is None  # JSON, but not a record
    assert io.decode_jsonl_line(b"\n") is None
    assert io.decode_jsonl_line(b'{"a": ' + b"[" * 100_000) is None
    assert io.decode_jsonl_line(b'{"a": ' + b"[" * 200 + b"]" * 200 + b"}") is None
    assert io.decode_jsonl_line('{"α": "é"}\r\n'.encode()) == {"α": "é"}


# --- fuzz: load_embeddings returns arrays or raises InvalidInputError/TypeError ------


def _valid_npz() -> bytes:
    buf = stdio.BytesIO()
    np.savez(buf, embeddings=E, labels=Y)
    return buf.getvalue()


_CSV_TOKENS = st.sampled_from(["1", "-2.5", "1e308", "1e999", "nan", "x", "", " ", '"', '""',
                               "label", "0", ",", "\n", "\r", "\r\n", "\x00", "\ufeff", "é",
                               '"a,b"', "\t"])


@st.composite
def _input_files(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["random", "npy", "npz", "csv"]))
    if kind == "random":
        return draw(st.sampled_from([".npy", ".npz", ".csv"])), draw(st.binary(max_size=300))
    if kind == "csv":
        return ".csv", "".join(draw(st.lists(_CSV_TOKENS, max_size=60))).encode(
            "utf-8", "surrogatepass")
    whole = _npy_of(E) if kind == "npy" else _valid_npz()
    data = bytearray(whole[: draw(st.integers(0, len(whole)))])
    for _ in range(draw(st.integers(0, 4))):  # flip a few bytes
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return f".{kind}", bytes(data)


@pytest.mark.property
@settings(deadline=None, max_examples=examples(50), suppress_health_check=[HealthCheck.too_slow])
@given(_input_files())
def test_loader_returns_arrays_or_refuses_in_one_line(file):
    suffix, data = file
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"e{suffix}"
        path.write_bytes(data)
        labels = Path(tmp) / "l.npy"
        np.save(labels, Y)
        try:
            E1, y1 = io.load_embeddings(path, labels=labels if suffix == ".npy" else None)
        except (InvalidInputError, TypeError) as exc:
            assert "\n" not in str(exc), exc  # one line
            return
        assert isinstance(E1, np.ndarray) and isinstance(y1, np.ndarray)


def test_read_results_still_reads_what_write_results_writes(tmp_path):
    path = io.write_results(tmp_path / "r.json", experiment="demo", config={"n": 1},
                            records=[{"a": [[1, 2], [3, 4]]}], csv_path=False)
    assert io.read_results(path)["records"] == [{"a": [[1, 2], [3, 4]]}]


def test_a_journal_line_that_is_not_utf8_is_one_line_of_error(tmp_path):
    """Defect 10: bytes that are not UTF-8 in a journal's middle line: one clear error
    naming the line (a torn last line is dropped), no UnicodeDecodeError."""
    from isoapprox.runs import read_jsonl

    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n\x00\xff\n{"c": 3}\n')
    with pytest.raises(InvalidInputError, match=r"line 3 is corrupt"):
        read_jsonl(path)
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n\x00\xff')
    assert read_jsonl(path) == [{"a": 1}, {"b": 2}]


def test_a_journal_that_is_a_fifo_is_refused(tmp_path):
    from isoapprox.runs import read_jsonl

    fifo = tmp_path / "journal.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match="regular file"):
        read_jsonl(fifo)
