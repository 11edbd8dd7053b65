"""The tidy result table: encoding chunks of rows and reading them back.

Inside the engine a chunk's columns are numpy arrays of length ``B``:
``float``, ``int`` and ``bool`` columns as float64 (``NaN`` = missing,
bools as 1.0/0.0), ``str`` columns as object arrays.  On disk:

``csv``
    A header row of column names, then one row per configuration.  Floats
    are written with Python's shortest round-trip ``repr`` (so reading
    them back is exact), ints as integers, bools as ``True``/``False``, a
    missing value as an empty field; text fields are quoted when needed.
``jsonl``
    One JSON object per line, keys in column order, ``null`` for missing.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..exceptions import InvalidInputError
from .stages import Column

__all__ = ["encode_rows", "header", "iter_cells", "to_internal"]


def to_internal(values, column: Column, B: int) -> np.ndarray:
    """Coerce a stage's output for ``column`` to the internal representation."""
    if column.dtype == "str":
        arr = np.asarray(values, dtype=object)
        if arr.shape != (B,):
            raise InvalidInputError(
                f"column {column.name!r} must have one value per configuration, shape ({B},); "
                f"got shape {arr.shape}"
            )
        return np.array(["" if v is None else str(v) for v in arr], dtype=object)
    arr = np.asarray(values)
    if arr.shape != (B,):
        raise InvalidInputError(
            f"column {column.name!r} must have one value per configuration, shape ({B},); "
            f"got shape {arr.shape}"
        )
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(
            f"column {column.name!r} ({column.dtype}) must be numeric; got dtype {arr.dtype}"
        )
    return arr.astype(np.float64)


def _quote(s: str) -> str:
    if any(ch in s for ch in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def _csv_strings(arr: np.ndarray, dtype: str) -> list[str]:
    if dtype == "str":
        return [_quote(s) for s in arr.tolist()]
    missing = np.isnan(arr)
    if dtype == "float":
        out = list(map(repr, arr.tolist()))
    elif dtype == "int":
        out = list(map(str, np.where(missing, 0, arr).astype(np.int64).tolist()))
    else:
        out = np.where(arr == 1.0, "True", "False").tolist()
    if missing.any():
        for i in np.flatnonzero(missing).tolist():
            out[i] = ""
    return out


def _json_values(arr: np.ndarray, dtype: str) -> list:
    if dtype == "str":
        return arr.tolist()
    missing = ~np.isfinite(arr)
    if dtype == "float":
        out = arr.tolist()
    elif dtype == "int":
        out = np.where(missing, 0, arr).astype(np.int64).tolist()
    else:
        out = (arr == 1.0).tolist()
    if missing.any():
        for i in np.flatnonzero(missing).tolist():
            out[i] = None
    return out


def header(columns: Sequence[Column], fmt: str) -> bytes:
    """The bytes that precede the rows (the CSV header; nothing for JSON lines)."""
    if fmt == "csv":
        return (",".join(c.name for c in columns) + "\n").encode()
    return b""


def encode_rows(cols: dict[str, np.ndarray], columns: Sequence[Column], fmt: str) -> bytes:
    """Rows of one chunk as bytes (no header)."""
    if fmt == "csv":
        strs = [_csv_strings(cols[c.name], c.dtype) for c in columns]
        if not strs or not strs[0]:
            return b""
        return ("\n".join(map(",".join, zip(*strs))) + "\n").encode()
    names = [c.name for c in columns]
    vals = [_json_values(cols[c.name], c.dtype) for c in columns]
    lines = [json.dumps(dict(zip(names, row)), allow_nan=False) for row in zip(*vals)]
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _parse_csv_field(s: str, dtype: str):
    if dtype == "str":
        return s
    if s == "":
        return math.nan
    if dtype == "bool":
        if s not in ("True", "False"):
            raise ValueError(f"not a bool: {s!r}")
        return 1.0 if s == "True" else 0.0
    return float(s)


def _parse_json_value(v, dtype: str):
    if dtype == "str":
        return "" if v is None else v
    if v is None:
        return math.nan
    return float(v)


def iter_cells(path: str | Path, columns: Sequence[Column], fmt: str
               ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Read a result table back, one grid cell at a time (rows of a cell are contiguous).

    Yields ``(cell, columns)`` with the internal representation.
    """
    path = Path(path)
    names = [c.name for c in columns]
    dtypes = [c.dtype for c in columns]
    k_cell = names.index("cell")
    buf: list[list] = []
    current = None

    def flush():
        data = {}
        for j, (name, dt) in enumerate(zip(names, dtypes)):
            vals = [row[j] for row in buf]
            data[name] = np.array(vals, dtype=object if dt == "str" else np.float64)
        return int(current), data

    with path.open("r", encoding="utf-8", newline="") as fh:
        if fmt == "csv":
            reader = csv.reader(fh)
            head = next(reader, None)
            if head != names:
                raise InvalidInputError(
                    f"`{path}` does not have the expected columns; got header {head}"
                )
            rows = (r for r in reader)
            parse = lambda r: [_parse_csv_field(s, d) for s, d in zip(r, dtypes)]  # noqa: E731
        else:
            rows = (json.loads(line) for line in fh if line.strip())
            parse = lambda r: [_parse_json_value(r.get(n), d) for n, d in zip(names, dtypes)]  # noqa: E731
        for raw in rows:
            row = parse(raw)
            if current is not None and row[k_cell] != current:
                yield flush()
                buf = []
            current = row[k_cell]
            buf.append(row)
    if buf:
        yield flush()
