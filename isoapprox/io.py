"""Result files, provenance and embedding files.

Design notes: docs/performance.md, section ``isoapprox.io``.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io as _io
import json
import math
import os
import platform
import subprocess
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, is_dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ._blas import blas_info
from ._version import __version__
from .exceptions import InvalidInputError

__all__ = [
    "SCHEMA_VERSION",
    "atomic_write_bytes",
    "atomic_write_text",
    "load_embeddings",
    "provenance",
    "read_results",
    "to_jsonable",
    "write_csv",
    "write_results",
]

#: version of the results-file layout written by :func:`write_results`
SCHEMA_VERSION = 1
_VERSIONED = ("isoapprox", "numpy", "scipy", "numba", "cvxpy", "clarabel", "highspy",
              "matplotlib")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def provenance() -> dict[str, Any]:
    """Versions, platform, git commit and the machine's BLAS to store with every result.

    ``blas`` (see :func:`isoapprox._blas.blas_info`) names the BLAS library,
    the kernel it picked (``OPENBLAS_CORETYPE`` included), numpy's SIMD
    paths and the CPU's features: what decides the last bits of a
    trajectory.
    """
    info: dict[str, Any] = {name: _version(name) for name in _VERSIONED}
    if info.get("isoapprox") is None:  # run from a source tree, not installed
        info["isoapprox"] = __version__
    info["python"] = platform.python_version()
    info["platform"] = platform.platform()
    info["git_commit"] = _git_commit()
    info["blas"] = blas_info()
    return info


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, dataclasses, paths and tuples to JSON types.

    Non-finite floats become ``None`` (JSON has no NaN); use the
    ``allow_nan`` variants only where a reader expects them.
    """
    if is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file with mode 0600; give the result the mode an
        # ordinary open() would (0666 less the umask)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_csv(path: str | os.PathLike, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write flat records as CSV (columns: the union of keys, in first-seen order)."""
    columns: list[str] = []
    for rec in records:
        for key in rec:
            if key not in columns:
                columns.append(key)
    buf = _io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for rec in records:
        row = {}
        for k in columns:
            v = to_jsonable(rec.get(k))
            row[k] = json.dumps(v) if isinstance(v, (list, dict)) else v
        writer.writerow(row)
    return atomic_write_text(path, buf.getvalue())


def write_results(
    path: str | os.PathLike,
    *,
    experiment: str,
    config: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    seed: Any = None,
    extra: Mapping[str, Any] | None = None,
    csv_path: str | os.PathLike | None | bool = True,
) -> Path:
    """Write a results document (JSON) and, by default, a CSV of its records.

    Parameters
    ----------
    path : path-like
        Target ``.json`` file.
    experiment : str
        Name of the experiment.
    config : mapping
        The full configuration that produced the records.
    records : sequence of mappings
        One flat record per unit of work.
    seed : optional
        Root seed (or seed description).
    extra : mapping, optional
        More top-level fields (arrays, summaries).
    csv_path : path-like or bool, default True
        ``True`` writes ``<path>.csv`` beside the JSON; ``False``/``None``
        writes no CSV.

    Returns
    -------
    Path
        The JSON path.
    """
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "experiment": experiment,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "provenance": provenance(),
        "config": to_jsonable(dict(config)),
        "seed": to_jsonable(seed),
        "records": to_jsonable(list(records)),
    }
    if extra:
        for k, v in extra.items():
            doc[k] = to_jsonable(v)
    path = Path(path)
    atomic_write_text(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    if csv_path is True:
        write_csv(path.with_suffix(".csv"), records)
    elif csv_path:
        write_csv(csv_path, records)
    return path


def read_results(path: str | os.PathLike) -> dict[str, Any]:
    """Read a results document written by :func:`write_results`.

    Raises
    ------
    InvalidInputError
        If the file is not a results document of a known schema version.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InvalidInputError(f"`{path}` is not a results file: not UTF-8 text (a binary "
                                "file?); expected the JSON that isoapprox writes") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"`{path}` is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or "schema_version" not in doc or "records" not in doc:
        raise InvalidInputError(
            f"`{path}` is not an isoapprox results file (expected keys 'schema_version' "
            f"and 'records'); got {sorted(doc) if isinstance(doc, dict) else type(doc).__name__}"
        )
    if doc["schema_version"] != SCHEMA_VERSION:
        raise InvalidInputError(
            f"`{path}` has schema_version {doc['schema_version']!r}; this isoapprox reads "
            f"{SCHEMA_VERSION}"
        )
    return doc


_EMB_KEYS = ("embeddings", "embedding", "E", "X")
_LAB_KEYS = ("labels", "label", "y")


def load_embeddings(
    path: str | os.PathLike,
    *,
    labels: str | os.PathLike | None = None,
    embeddings_key: str | None = None,
    labels_key: str | None = None,
    label_column: str | int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Read embeddings and labels from ``.npz``, a pair of ``.npy``, or CSV.

    Parameters
    ----------
    path : path-like
        ``.npz`` with arrays ``embeddings`` and ``labels`` (or the keys
        given); ``.npy`` with the embeddings (then ``labels`` names the
        ``.npy`` of labels); or ``.csv`` with numeric embedding columns and
        one label column, after a header row (a first row of numbers is
        read as data: a file without header, as ``numpy.savetxt`` writes).
    labels : path-like, optional
        ``.npy`` file of labels (required with an ``.npy`` embedding file).
    embeddings_key, labels_key : str, optional
        Array names inside an ``.npz``.
    label_column : str or int, optional
        CSV label column, by name or 0-based position; default ``"label"``,
        ``"labels"`` or ``"y"`` if present, else the last column.

    Returns
    -------
    E : ndarray of shape (N, n)
    y : ndarray of shape (N,)
        Raw arrays; the caller validates them.

    Raises
    ------
    FileNotFoundError
        If a file does not exist.
    InvalidInputError
        If the file is empty or has the wrong format, missing keys, ragged or
        non-numeric CSV rows, or mismatched lengths; the message names the
        file (and the CSV line and column).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"embedding file not found: {path}")
    suffix = path.suffix.lower()
    if path.is_file() and path.stat().st_size == 0:
        raise InvalidInputError(f"`{path}` is empty (0 bytes); expected embeddings and labels")
    if suffix == ".npz":
        if not zipfile.is_zipfile(path):
            raise InvalidInputError(
                f"`{path}` is not a readable .npz file (not a zip archive of .npy arrays, as "
                "numpy.savez writes)"
            )
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = list(data.keys())
                ek = embeddings_key or next((k for k in _EMB_KEYS if k in keys), None)
                lk = labels_key or next((k for k in _LAB_KEYS if k in keys), None)
                if ek is None or ek not in keys:
                    raise InvalidInputError(
                        f"`{path}` must contain an array 'embeddings' (or pass "
                        f"--embeddings-key); got arrays {keys}"
                    )
                if labels is None and (lk is None or lk not in keys):
                    raise InvalidInputError(
                        f"`{path}` must contain an array 'labels' (or pass --labels-key "
                        f"or --labels FILE); got arrays {keys}"
                    )
                E = np.array(data[ek])
                y = np.array(data[lk]) if labels is None else None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            if isinstance(exc, InvalidInputError):
                raise
            raise InvalidInputError(f"`{path}` is not a readable .npz file: {exc}") from None
        if labels is not None:
            y = _load_npy(Path(labels), "labels")
    elif suffix == ".npy":
        E = _load_npy(path, "embeddings")
        if labels is None:
            raise InvalidInputError(
                f"`{path}` holds only embeddings; pass the labels with --labels LABELS.npy"
            )
        y = _load_npy(Path(labels), "labels")
    elif suffix in (".csv", ".txt"):
        E, y = _load_csv(path, label_column)
    else:
        raise InvalidInputError(
            f"`{path}` must end in .npz, .npy or .csv; got suffix {suffix!r}"
        )
    E = np.asarray(E)
    y = np.asarray(y).reshape(-1) if np.ndim(y) == 2 and 1 in np.shape(y) else np.asarray(y)
    if E.ndim == 2 and y.ndim == 1 and E.shape[0] != y.shape[0]:
        raise InvalidInputError(
            f"embeddings and labels must have the same length; got {E.shape[0]} embeddings "
            f"and {y.shape[0]} labels"
        )
    return E, y


def _load_npy(path: Path, what: str) -> np.ndarray:
    if not path.exists():
        raise FileNotFoundError(f"{what} file not found: {path}")
    if path.is_file() and path.stat().st_size == 0:
        raise InvalidInputError(f"`{path}` is empty (0 bytes); expected a .npy array of {what}")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidInputError(f"`{path}` is not a readable .npy file: {exc}") from None


def _load_csv(path: Path, label_column: str | int | None) -> tuple[np.ndarray, np.ndarray]:
    try:
        with path.open("r", encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"`{path}` is not a CSV text file: byte {exc.start} is not UTF-8 (a binary file?)"
        ) from None
    rows = [r for r in rows if r and any(c.strip() for c in r)]
    if not rows:
        raise InvalidInputError(
            f"`{path}` has no rows; expected a header row and one row per embedded point"
        )
    header = [h.strip() for h in rows[0]]
    if all(_is_number(h) for h in header):
        # no header row (e.g. numpy.savetxt): every row is data, columns by position
        if isinstance(label_column, str):
            raise InvalidInputError(
                f"`label_column` {label_column!r} names a column, but `{path}` has no header "
                "row (its first row is numeric); give the column's index instead"
            )
        data_rows = list(enumerate(rows, start=1))
        header = [f"column {i}" for i in range(len(rows[0]))]
    else:
        data_rows = list(enumerate(rows[1:], start=2))
        if not data_rows:
            raise InvalidInputError(
                f"`{path}` must have at least one data row after the header; got none"
            )
    if label_column is None:
        col = next((header.index(k) for k in _LAB_KEYS if k in header), len(header) - 1)
    elif isinstance(label_column, int):
        col = label_column if label_column >= 0 else len(header) + label_column
        if not 0 <= col < len(header):
            raise InvalidInputError(
                f"`label_column` must be a column index in [0, {len(header) - 1}]; got "
                f"{label_column}"
            )
    else:
        if label_column not in header:
            raise InvalidInputError(
                f"`label_column` must name a column of `{path}` ({header}); got "
                f"{label_column!r}"
            )
        col = header.index(label_column)
    if len(header) < 2:
        raise InvalidInputError(
            f"`{path}` must have at least one embedding column besides the label column; "
            f"got {len(header)} column(s)"
        )
    feats, labs = [], []
    for k, row in data_rows:
        if len(row) != len(header):
            raise InvalidInputError(
                f"`{path}` line {k} has {len(row)} fields; expected {len(header)}"
            )
        labs.append(row[col].strip())
        values = []
        for i, v in enumerate(row):
            if i == col:
                continue
            try:
                values.append(float(v))
            except ValueError:
                raise InvalidInputError(
                    f"`{path}` line {k}, column {header[i]!r}: embedding value {v.strip()!r} "
                    "is not a number"
                ) from None
        feats.append(values)
    y_raw = np.array(labs)
    try:
        y_num = y_raw.astype(np.float64)
        y = y_num.astype(np.int64) if np.all(y_num == np.round(y_num)) else y_raw
    except ValueError:
        y = y_raw
    return np.array(feats, dtype=np.float64), y


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
