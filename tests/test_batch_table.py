"""The CSV encoder of the result table (numba, Python's float repr) and the
engine's file steps around it: the same bytes as the Python encoder, every
value read back exactly."""

from __future__ import annotations

import hashlib
import io
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from isoapprox.batch import BatchConfig, Grid, plan, run_batch
from isoapprox.batch.engine import _assemble, _npy_pieces, _part_path, _TableHash, evaluate_chunk
from isoapprox.batch.stages import Column
from isoapprox.batch.table import _encode_csv, _encode_csv_python, encode_rows, header, iter_cells
from isoapprox.kernels import JIT
from isoapprox.kernels.batch import _put_float


# not cached: numba's cache would not see a change of _put_float (another file)
@njit(**dict(JIT, cache=False))
def float_repr_kernel(x, out, start):
    """``repr`` of every float of ``x`` (NaN: ``nan``) into ``out`` by the CSV
    encoder's float writer; ``start[i]`` is where value ``i`` begins
    (``start[len(x)]`` the end)."""
    pos = 0
    bits = x.view(np.uint64)
    for i in range(x.shape[0]):
        start[i] = pos
        if x[i] != x[i]:
            out[pos] = 110
            out[pos + 1] = 97
            out[pos + 2] = 110
            pos += 3
        else:
            pos = _put_float(bits[i], out, pos)
    start[x.shape[0]] = pos
    return pos


def _reprs(x: np.ndarray) -> list[str]:
    """``repr`` of every value of ``x`` through the numba encoder."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(25 * x.size + 1, dtype=np.uint8)
    start = np.empty(x.size + 1, dtype=np.int64)
    float_repr_kernel(x, out, start)
    b = out.tobytes()
    s = start.tolist()
    return [b[s[i]:s[i + 1]].decode() for i in range(x.size)]


def _assert_repr(x: np.ndarray) -> None:
    got = _reprs(x)
    want = list(map(repr, x.tolist()))
    bad = [(w, g) for w, g in zip(want, got, strict=True) if w != g]
    assert not bad, bad[:5]


SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
           2.225073858507201e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1e16, 1e15,
           9999999999999998.0, 1e-4, 1e-5, 0.0001234, 0.00001234, 123456789012345680.0, 1.0, 0.1,
           0.3, 1 / 3, 2.0**53, 2.0**53 + 2, 2.0**63, 1e22, 1e23, 5e-310, 1.5, 100.0, 1e100, 1e-100,
           0.5, 0.001, 12345.678, 299792458.0, 6.02214076e23, 1.602176634e-19]


def test_special_values_as_repr():
    _assert_repr(np.array(SPECIAL))


def test_every_exponent_and_subnormals_as_repr():
    rng = np.random.default_rng(35)
    ex = np.repeat(np.arange(2047, dtype=np.uint64), 40)
    mant = rng.integers(0, 2**52, size=ex.size, dtype=np.uint64)
    mant[::5] = 0  # powers of two (the asymmetric interval of Ryu)
    mant[1::5] = 1
    mant[2::5] = 2**52 - 1
    sign = rng.integers(0, 2, size=ex.size, dtype=np.uint64)
    _assert_repr(((sign << np.uint64(63)) | (ex << np.uint64(52)) | mant).view(np.float64))
    _assert_repr(rng.integers(1, 2**52, size=20_000, dtype=np.uint64).view(np.float64))


def test_random_bit_patterns_and_typical_values_as_repr():
    rng = np.random.default_rng(2026)
    x = rng.integers(0, 2**64, size=100_000, dtype=np.uint64).view(np.float64)
    _assert_repr(x[~np.isnan(x)])
    _assert_repr(np.concatenate([
        rng.standard_normal(50_000), rng.random(50_000),
        np.round(rng.standard_normal(20_000) * 1000, 3),
        rng.integers(-10**6, 10**6, 20_000).astype(float),
        rng.integers(0, 10**17, 20_000).astype(float),
        np.arange(1, 5001) / 10.0, 10.0 ** np.arange(-325, 309).astype(float),
        2.0 ** np.arange(-1074, 1024).astype(float),
    ]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=50))
def test_repr_property(values):
    x = np.array(values, dtype=np.float64)
    got = _reprs(x)
    assert got == list(map(repr, values))
    back = np.array([float(s) for s in got])
    assert np.array_equal(back.view(np.uint64), x.view(np.uint64))  # -0.0 included


# ---------------------------------------------------------------------------
# whole chunks: the bytes of the Python encoder
# ---------------------------------------------------------------------------


def test_chunks_of_every_sampler_as_the_python_encoder():
    cfg = BatchConfig(Grid(n_points=(4, 6), dims=(1, 3), classes=(2, 3), margins=(0.0, 0.5),
                           distributions=("gaussian", "collapsed", "clustered", "sphere", "ball"),
                           layouts=("balanced", "random"), repetitions=60),
                      stages=("cheap",), chunk_size=40)
    for task in plan(cfg):
        cols = evaluate_chunk(task)
        assert encode_rows(cols, task.columns, "csv") == _encode_csv_python(cols, task.columns)


COLUMNS = (Column("cell", "int", ""), Column("f", "float", ""), Column("i", "int", ""),
           Column("b", "bool", ""), Column("t", "str", ""), Column("u", "str", ""))


def _table(B: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(B) * 10.0 ** rng.integers(-30, 30, B)
    f[::7] = np.nan
    f[1::11] = np.inf
    f[2::13] = -0.0
    i = rng.integers(-(2**62), 2**62, B).astype(np.float64)
    i[::5] = np.nan
    i[1::9] = -5.0
    b = rng.integers(0, 2, B).astype(np.float64)
    b[::4] = np.nan
    texts = ["", "plain", 'with "quotes"', "a,b", "two\nlines", "ünïcödé", "cr\rhere"]
    t = np.array([texts[k] for k in rng.integers(0, len(texts), B)], dtype=object)
    u = np.full(B, "same, for all", dtype=object)
    return {"cell": np.zeros(B), "f": f, "i": i, "b": b, "t": t, "u": u}


@pytest.mark.parametrize("B", [1, 2, 57, 1000])
def test_missing_values_text_and_quotes_as_the_python_encoder(B):
    cols = _table(B, seed=B)
    assert _encode_csv(cols, COLUMNS) == _encode_csv_python(cols, COLUMNS)


def test_integers_out_of_int64_range_go_through_python():
    cols = _table(20)
    cols["i"][3] = 1e300
    cols["i"][4] = -np.inf
    with np.errstate(invalid="ignore"):  # str(int64) of such a value: numpy's cast
        assert _encode_csv(cols, COLUMNS) == _encode_csv_python(cols, COLUMNS)


def test_empty_chunk_and_no_columns():
    cols = {c.name: v[:0] for c, v in zip(COLUMNS, _table(3).values(), strict=True)}
    assert _encode_csv(cols, COLUMNS) == b"" == _encode_csv_python(cols, COLUMNS)
    assert _encode_csv({}, ()) == b""


def test_table_reads_back_exactly(tmp_path):
    cols = _table(500, seed=7)
    cols["cell"][250:] = 1.0
    path = tmp_path / "t.csv"
    path.write_bytes(header(COLUMNS, "csv") + _encode_csv(cols, COLUMNS))
    back = list(iter_cells(path, COLUMNS, "csv"))
    assert [k for k, _ in back] == [0, 1]
    for c in COLUMNS:
        got = np.concatenate([d[c.name] for _, d in back])
        if c.dtype == "str":
            assert got.tolist() == cols[c.name].tolist()
        elif c.dtype == "int":
            want = np.where(np.isnan(cols[c.name]), np.nan, np.trunc(cols[c.name]))
            np.testing.assert_array_equal(got, want)
        elif c.dtype == "bool":
            want = np.where(np.isnan(cols[c.name]), np.nan, cols[c.name] == 1.0)
            np.testing.assert_array_equal(got, want)
        else:  # bit for bit, -0.0 and inf included
            want = cols[c.name]
            same = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
            assert same.all()


# ---------------------------------------------------------------------------
# the engine's files
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4096, 25), (3, 1), (0, 25)])
def test_npy_pieces_are_what_np_save_writes(shape):
    a = np.random.default_rng(1).random(shape)
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    head, data = _npy_pieces(a)
    assert head + bytes(data) == buf.getvalue()


def test_table_hash_in_any_finishing_order():
    rng = np.random.default_rng(3)
    parts = [rng.bytes(int(n)) for n in rng.integers(0, 100, 12)]
    want = hashlib.sha256(b"head" + b"".join(parts)).hexdigest()
    order = rng.permutation(12).tolist()
    h = _TableHash(b"head")
    for k in order:
        h.add(k, parts[k])
    assert h.hexdigest(12) == want
    h = _TableHash(b"head")
    for k in range(11):
        h.add(k, parts[k])
    assert h.hexdigest(12) is None  # a chunk missing
    h = _TableHash(b"head", limit=50)
    for k in reversed(range(12)):
        h.add(k, parts[k])
    assert h.hexdigest(12) is None  # too much waiting: given up


def test_assemble_rehashes_when_a_part_changed(tmp_path):
    cfg = BatchConfig(Grid(repetitions=30), stages=("cheap",), chunk_size=10)
    res = run_batch(cfg, tmp_path / "run", jobs=1, keep_parts=True)
    out = tmp_path / "run"
    data = res.results.read_bytes()
    sizes = {k: _part_path(out, k, "csv").stat().st_size for k in range(cfg.n_chunks)}
    assert _assemble(out, res.results, cfg, sha="f" * 64, sizes=sizes) == "f" * 64
    assert res.results.read_bytes() == data  # copied by the kernel, the same bytes
    p = _part_path(out, 1, "csv")
    p.write_bytes(p.read_bytes() + b"9\n")
    sha = _assemble(out, res.results, cfg, sha="f" * 64, sizes=sizes)
    assert sha == hashlib.sha256(res.results.read_bytes()).hexdigest()
    assert not list(out.glob(".results.csv.*"))  # the abandoned temporary is gone
    assert len(res.results.read_bytes()) == len(data) + 2


@pytest.mark.parametrize("jobs", [1, 2])
def test_summary_names_the_sha256_of_the_table(tmp_path, jobs):
    import json

    cfg = BatchConfig(Grid(n_points=(4, 5), repetitions=50), stages=("cheap",), chunk_size=7)
    res = run_batch(cfg, tmp_path / "run", jobs=jobs)
    doc = json.loads(res.summary_path.read_text())
    assert doc["results_sha256"] == hashlib.sha256(res.results.read_bytes()).hexdigest()
    assert os.listdir(tmp_path / "run").count("parts") == 0


def test_a_part_that_is_not_a_regular_file_is_refused(tmp_path):
    """Parts are read as every input is (io.open_regular): a FIFO planted in place of a
    part is refused at once, never opened for a read that would block; a part that is
    gone stays the operating system's error (errno set: an environment error, exit 4
    on the command line), not the message for a path the user named."""
    import errno
    import os

    from isoapprox.batch import engine
    from isoapprox.exceptions import InvalidInputError
    from isoapprox.io import file_sha256

    fifo = tmp_path / "chunk-00000000.csv"
    os.mkfifo(fifo)
    with open(tmp_path / "table.csv", "wb") as fh, pytest.raises(InvalidInputError,
                                                                 match="regular file"):
        engine._copy_part(fifo, fh)
    with pytest.raises(InvalidInputError, match="regular file"):
        file_sha256(fifo, "batch part", own=True)  # as the engine calls it
    gone = tmp_path / "chunk-00000001.csv"
    with pytest.raises(FileNotFoundError) as info:
        file_sha256(gone, "batch part", own=True)
    assert info.value.errno == errno.ENOENT and info.value.filename == str(gone)
