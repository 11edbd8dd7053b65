"""The tidy result table: encoding chunks of rows and reading them back.

See docs/dev/batch_design.md ("isoapprox.batch.table: notes").
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import InvalidInputError
from ..io import open_regular
from ..kernels import batch as BK
from .stages import Column

__all__ = ["encode_rows", "header", "iter_cells", "row_value", "to_internal"]


def to_internal(values, column: Column, B: int) -> np.ndarray:
    """Coerce a stage's output for ``column`` to the internal representation."""
    arr = np.asarray(values, dtype=object if column.dtype == "str" else None)
    if arr.shape != (B,):
        raise InvalidInputError(
            f"column {column.name!r} must have one value per configuration, shape ({B},); "
            f"got shape {arr.shape}"
        )
    if column.dtype == "str":
        return np.array(["" if v is None else str(v) for v in arr], dtype=object)
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(
            f"column {column.name!r} ({column.dtype}) must be numeric; got dtype {arr.dtype}"
        )
    return arr.astype(np.float64)


def row_value(v: Any, dtype: str) -> Any:
    """One cell of the internal table as a JSON-ready Python value (NaN: ``None``)."""
    if dtype == "str":
        return str(v)
    f = float(v)
    if math.isnan(f):
        return None
    if dtype == "int":
        return int(f)
    if dtype == "bool":
        return bool(f)
    return f


def _quote(s: str) -> str:
    if any(ch in s for ch in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def _values(arr: np.ndarray, dtype: str, missing: np.ndarray) -> list:
    """A numeric column's Python values (ints as int, flags as bool), ``None`` where ``missing``."""
    if dtype == "float":
        out = arr.tolist()
    elif dtype == "int":
        out = np.where(missing, 0, arr).astype(np.int64).tolist()
    else:
        out = (arr == 1.0).tolist()
    for i in np.flatnonzero(missing).tolist():
        out[i] = None
    return out


def _csv_strings(arr: np.ndarray, dtype: str) -> list[str]:
    if dtype == "str":
        cache: dict[str, str] = {}
        return [cache[s] if s in cache else cache.setdefault(s, _quote(s)) for s in arr.tolist()]
    # repr of a float, an int and a bool: the shortest round trip, str(int), True/False
    return ["" if v is None else repr(v) for v in _values(arr, dtype, np.isnan(arr))]


def _json_values(arr: np.ndarray, dtype: str) -> list:
    return arr.tolist() if dtype == "str" else _values(arr, dtype, ~np.isfinite(arr))


def header(columns: Sequence[Column], fmt: str) -> bytes:
    """The bytes that precede the rows (the CSV header; nothing for JSON lines)."""
    if fmt == "csv":
        return (",".join(c.name for c in columns) + "\n").encode()
    return b""


#: column dtype -> kind of :func:`isoapprox.kernels.batch.encode_csv_kernel`
_CSV_KINDS = {"float": BK.CSV_FLOAT, "int": BK.CSV_INT, "bool": BK.CSV_BOOL, "str": BK.CSV_TEXT}
#: an int column is written by the kernel when every value is NaN or below this in magnitude
_INT_LIMIT = 2.0**63


def _encode_csv_python(cols: dict[str, np.ndarray], columns: Sequence[Column]) -> bytes:
    """CSV rows in Python (``repr`` of every float): the reference of :func:`_encode_csv`."""
    strs = [_csv_strings(cols[c.name], c.dtype) for c in columns]
    if not strs or not strs[0]:
        return b""
    return ("\n".join(map(",".join, zip(*strs, strict=True))) + "\n").encode()


def _encode_csv(cols: dict[str, np.ndarray], columns: Sequence[Column]) -> bytes:
    """CSV rows of one chunk through the numba encoder; the same bytes as
    :func:`_encode_csv_python` (floats as ``repr``, ints as ``str``, flags as
    ``True``/``False``, missing values empty, text quoted as the csv module
    reads it back)."""
    if not columns:
        return b""
    B = len(cols[columns[0].name])
    if B == 0:
        return b""
    k = len(columns)
    V = np.empty((B, k))
    kinds = np.empty(k, dtype=np.int64)
    pool: list[bytes] = []
    width = k  # separators and the newline
    for j, c in enumerate(columns):
        arr = cols[c.name]
        kinds[j] = _CSV_KINDS[c.dtype]
        if c.dtype != "str":
            V[:, j] = arr
            if c.dtype == "int" and not np.all(np.isnan(arr) | (np.abs(arr) < _INT_LIMIT)):
                return _encode_csv_python(cols, columns)  # str(int64) of an out-of-range value
            width += BK.CSV_NUMBER_WIDTH
            continue
        vals = arr.tolist()
        base = len(pool)
        if vals.count(vals[0]) == B:  # one value (a parameter of the cell)
            V[:, j] = base
            texts = [vals[0]]
        else:
            index: dict[str, int] = {}
            V[:, j] = [index.setdefault(s, len(index)) for s in vals]
            V[:, j] += base
            texts = list(index)
        enc = [_quote(s).encode() for s in texts]
        pool.extend(enc)
        width += max(map(len, enc))
    starts = np.zeros(len(pool) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(t) for t in pool], dtype=np.int64)
    text = np.frombuffer(b"".join(pool), dtype=np.uint8) if starts[-1] else np.zeros(1, np.uint8)
    out = np.empty(B * width, dtype=np.uint8)
    n = BK.encode_csv_kernel(V, V.view(np.uint64), kinds, text, starts, out)
    return out[:n].tobytes()


def encode_rows(cols: dict[str, np.ndarray], columns: Sequence[Column], fmt: str) -> bytes:
    """Rows of one chunk as bytes (no header).

    CSV rows are written by a numba kernel (:func:`_encode_csv`): every float
    as Python's ``repr`` writes it (the shortest string that reads back to the
    same double), so the table is the one the Python encoder writes, byte for
    byte, and every value reads back exactly.
    """
    if fmt == "csv":
        return _encode_csv(cols, columns)
    names = [c.name for c in columns]
    vals = [_json_values(cols[c.name], c.dtype) for c in columns]
    lines = [json.dumps(dict(zip(names, row, strict=True)), allow_nan=False)
             for row in zip(*vals, strict=True)]
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _csv_column(col: np.ndarray, dtype: str, name: str) -> np.ndarray:
    """Convert one CSV column (array of str) to the internal representation."""
    if dtype == "str":
        return col.astype(object)
    empty = col == ""
    if dtype == "bool":
        true = col == "True"
        if not np.all(true | empty | (col == "False")):
            raise InvalidInputError(f"column {name!r} holds a value that is not True/False")
        out = true.astype(np.float64)
    else:
        out = np.where(empty, "nan", col).astype(np.float64)
    out[empty] = np.nan
    return out


def iter_cells(path: str | Path, columns: Sequence[Column], fmt: str
               ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Read a result table back, one grid cell at a time (rows of a cell are contiguous).

    Yields ``(cell, columns)`` with the internal representation.  The CSV
    fields are split by the C ``csv`` reader and converted column by column
    in numpy.
    """
    path = Path(path)
    names = [c.name for c in columns]
    dtypes = [c.dtype for c in columns]
    k_cell = names.index("cell")

    def flush(buf):
        if fmt == "csv":
            arr = np.array(buf, dtype=str).reshape(len(buf), len(names))
            data = {n: _csv_column(arr[:, j], d, n)
                    for j, (n, d) in enumerate(zip(names, dtypes, strict=True))}
        else:
            data = {}
            for n, d in zip(names, dtypes, strict=True):
                vals = [r.get(n) for r in buf]
                data[n] = (np.array(["" if v is None else v for v in vals], dtype=object)
                           if d == "str" else np.array(vals, dtype=np.float64))
        return int(data["cell"][0]), data

    with io.TextIOWrapper(open_regular(path, "batch results table"), encoding="utf-8",
                          newline="") as fh:
        if fmt == "csv":
            reader = csv.reader(fh)
            head = next(reader, None)
            if head != names:
                raise InvalidInputError(
                    f"`{path}` does not have the expected columns; got header {head}"
                )
            rows = reader
            key = lambda r: r[k_cell]  # noqa: E731
        else:
            rows = (json.loads(line) for line in fh if line.strip())
            key = lambda r: r.get("cell")  # noqa: E731
        for _, group in itertools.groupby(rows, key):
            yield flush(list(group))
