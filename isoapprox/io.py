"""Result files, provenance and embedding files.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.io``.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import errno
import hashlib
import io as _io
import json
import math
import os
import platform
import re
import secrets
import stat
import struct
import subprocess
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from importlib import metadata
from pathlib import Path
from tokenize import TokenError
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from . import _lazy
from ._blas import blas_info
from ._version import __version__
from .exceptions import InvalidInputError

try:
    from lzma import LZMAError
except ImportError:  # pragma: no cover - a Python built without lzma reads no LZMA members
    LZMAError = zlib.error  # type: ignore[assignment,misc]

__all__ = [
    "CSV_MAX_COLUMNS",
    "CSV_MAX_LINE",
    "EmbeddingFile",
    "JSON_MAX_DEPTH",
    "NPY_MAX_HEADER",
    "SCHEMA_VERSION",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_writer",
    "decode_jsonl_line",
    "file_sha256",
    "load_embeddings",
    "open_regular",
    "provenance",
    "read_embeddings",
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

    A class with ``SERIAL_FIELDS`` (the results that hold a
    :class:`isoapprox.Bracket`, the views of a :class:`isoapprox.TheoryResult`)
    is written as those attributes in that order; another dataclass as its
    fields (:func:`dataclasses.asdict`'s layout).

    Non-finite floats become ``None`` (JSON has no NaN); use the
    ``allow_nan`` variants only where a reader expects them.
    """
    names = getattr(type(obj), "SERIAL_FIELDS", None)
    if names:  # a result holding a Bracket, a view of a TheoryResult: their own order
        return {k: to_jsonable(getattr(obj, k)) for k in names}
    if is_dataclass(obj) and not isinstance(obj, type):  # asdict, but nested results too
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in fields(obj)}
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


#: ``os.open`` flags: a descriptor not inherited by child processes; no symlink followed
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _naming(exc: OSError, path: str | os.PathLike, *, always: bool = True) -> OSError:
    """``exc`` naming ``path`` (not a temporary's name, nor a name relative to a folder).

    With ``always=False`` only an error that names no file is renamed (a
    ``write`` on a full disk), so that a caller's own error keeps its file.
    """
    if exc.errno is None or (exc.filename is not None and not always):
        return exc
    named = OSError(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path))
    named.__cause__ = exc
    return named


def _temporary(folder: int, name: str) -> tuple[str, int]:
    """A new file ``.NAME.<random>.tmp`` in the folder open as ``folder``: (name, descriptor).

    Created with ``O_CREAT | O_EXCL | O_NOFOLLOW``: never an existing file,
    never through a symbolic link; mode 0666 less the umask, as ``open()``.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    for _ in range(100):
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return tmp, os.open(tmp, flags, 0o666, dir_fd=folder)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file whose contents replace ``path`` atomically when the block ends.

    The file is a new temporary in ``path``'s folder (created with
    ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name, so a symbolic
    link planted there is never followed); when the block ends it is
    flushed, fsynced and renamed over ``path`` (a symbolic link at ``path``
    is replaced, not written through), and the folder is fsynced.  If the
    block or a step fails, the temporary is removed and ``path`` is as it
    was.  The folder and its missing parents are created.

    Raises
    ------
    OSError
        If the system fails a step (disk full, permission denied, ...); an
        error of a write names ``path``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_writer(p) as fh:
    ...     _ = fh.write(b"one ")
    ...     _ = fh.write(b"two")
    >>> p.read_bytes()
    b'one two'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        try:
            tmp, fd = _temporary(folder, path.name)
        except OSError as exc:
            raise _naming(exc, path) from None
        in_block = True  # an error of the caller's block keeps the file it names
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh
                in_block = False
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            if isinstance(exc, OSError):
                raise _naming(exc, path, always=not in_block) from None
            raise
        with contextlib.suppress(OSError):  # the rename survives a crash (not all systems can)
            os.fsync(folder)
    finally:
        os.close(folder)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_writer`: temporary, fsync, rename)."""
    path = Path(path)
    with atomic_writer(path) as fh:
        fh.write(data)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_csv(path: str | os.PathLike, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write flat records as CSV (columns: the union of keys, in first-seen order)."""
    columns = list(dict.fromkeys(key for rec in records for key in rec))
    buf = _io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for rec in records:
        row = {k: to_jsonable(rec.get(k)) for k in columns}
        writer.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v
                         for k, v in row.items()})
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

    Raises
    ------
    OSError
        If the system fails a write (:func:`atomic_writer`); each file is
        either complete or as it was, and the JSON is written last.
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
    doc.update({k: to_jsonable(v) for k, v in (extra or {}).items()})
    path = Path(path)
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    # the CSV first: the JSON, the document a reader checks for, comes last
    if csv_path is True:
        write_csv(path.with_suffix(".csv"), records)
    elif csv_path:
        write_csv(csv_path, records)
    atomic_write_text(path, text)
    return path


# ---------------------------------------------------------------------------
# Reading input files
#
# Every reader opens its file through `open_regular` (a regular file, or one
# line of refusal) and checks what the file claims before it allocates for it:
# a `.npy` header's shape times its item size must equal the bytes that
# follow the header, CSV lines and rows are bounded, a results file's nesting
# is bounded.  Every refusal is one InvalidInputError line naming the file.
# ---------------------------------------------------------------------------

#: largest ``.npy`` header read, in bytes (numpy's own bound of a version-1
#: header is 65,535 bytes; ``numpy.save`` writes about 128)
NPY_MAX_HEADER = 65536
#: longest CSV line read, in characters (line end included): room for 65,536
#: float64 columns written with full precision
CSV_MAX_LINE = 2**22
#: most fields in one CSV row (embedding columns and the label column)
CSV_MAX_COLUMNS = 65536
#: deepest nesting of arrays and objects in a results file or a journal line
#: (:func:`write_results` writes about 6 levels)
JSON_MAX_DEPTH = 100

_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _require_regular(st: os.stat_result, path: Path, what: str) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a regular file")
    raise InvalidInputError(f"`{path}` must be a regular file ({what} file); got {kind}")


def open_regular(path: str | os.PathLike, what: str, *, own: bool = False) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file; refuse anything else.

    The one way isoapprox opens a file it reads (embeddings, labels,
    results, journals, monitor logs).

    A FIFO would block the open and the read, a device such as ``/dev/zero``
    never ends, a folder has no bytes: each is refused before a byte is read.
    The open does not block (``O_NONBLOCK``), and the open descriptor is
    checked again, in case the path changed in between.

    Parameters
    ----------
    path : str or path-like
    what : str
        What the file is, for the messages (``"embeddings"``, ``"batch part"``).
    own : bool, default False
        The file is one this run wrote (a batch part, a results table it
        assembles): a missing one is then the operating system's own
        :class:`FileNotFoundError` (``errno`` set: something removed it, an
        environment error), not the message for a path the user named.

    Raises
    ------
    FileNotFoundError
        ``"{what} file not found: {path}"`` (with ``own``: the operating
        system's error).
    InvalidInputError
        If ``path`` is not a regular file (after following links).
    """
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        _require_regular(os.stat(path), path, what)
        fd = os.open(path, flags)
    except FileNotFoundError:
        if own:
            raise
        raise FileNotFoundError(f"{what} file not found: {path}") from None
    try:
        _require_regular(os.fstat(fd), path, what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_sha256(path: str | os.PathLike, what: str, *, own: bool = False) -> str:
    """The SHA-256 of a regular file's bytes, in hex, read by :func:`open_regular`."""
    h = hashlib.sha256()
    with open_regular(path, what, own=own) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _one_line(exc: BaseException, limit: int = 160) -> str:
    """An exception's message on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _json_depth(text: str) -> int:
    """Deepest nesting of arrays and objects in JSON ``text`` (0 for a scalar).

    Brackets inside strings do not count.  Linear time, no recursion: the
    check that runs before :func:`json.loads` (whose recursion a deep
    document exhausts).

    Examples
    --------
    >>> _json_depth('{"a": [1, [2, "]]]"]]}'), _json_depth("3")
    (3, 0)
    """
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.max(np.cumsum(steps)))


def read_results(path: str | os.PathLike) -> dict[str, Any]:
    """Read a results document written by :func:`write_results`.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    InvalidInputError
        If the file is not a regular file, not UTF-8 JSON, nested deeper
        than :data:`JSON_MAX_DEPTH`, or not a results document of a known
        schema version (one line naming the file).
    """
    path = Path(path)
    with open_regular(path, "results") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"`{path}` is not a results file: not UTF-8 text (a binary "
                                "file?); expected the JSON that isoapprox writes") from None
    depth = _json_depth(text)
    if depth > JSON_MAX_DEPTH:
        raise InvalidInputError(
            f"`{path}` is not a results file: its JSON nests {depth} levels deep; results "
            f"files nest at most {JSON_MAX_DEPTH}"
        )
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"`{path}` is not valid JSON: {exc}") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise InvalidInputError(f"`{path}` is not a results file: {_one_line(exc)}") from None
    except RecursionError:  # not reached after the depth check; kept as a guard
        raise InvalidInputError(f"`{path}` is not a results file: its JSON nests too "
                                "deep to read") from None
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


def decode_jsonl_line(raw: bytes) -> dict[str, Any] | None:
    """One line of a JSON-lines journal as a dict, or ``None`` when it is not one.

    ``None`` stands for a line that is not UTF-8, not JSON, nested deeper
    than :data:`JSON_MAX_DEPTH` or JSON but not an object: a line torn by a
    crash, or overwritten.  The caller treats it as a torn line (dropped
    when it is the last line, an error naming the line elsewhere).  A blank
    line is ``None`` too; callers skip blank lines first.

    Examples
    --------
    >>> decode_jsonl_line(b'{"unit": [3, "a"]}\\n')
    {'unit': [3, 'a']}
    >>> decode_jsonl_line(b'{"unit": [3, "a') is None  # torn
    True
    >>> decode_jsonl_line(b'\\x00\\xff\\n') is None  # not UTF-8
    True
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _json_depth(text) > JSON_MAX_DEPTH:
        return None
    try:
        rec = json.loads(text)
    except (ValueError, RecursionError):  # not JSON (JSONDecodeError), a 5000-digit integer
        return None
    return rec if isinstance(rec, dict) else None


_EMB_KEYS = ("embeddings", "embedding", "E", "X")
_LAB_KEYS = ("labels", "label", "y")
#: table files: one row per point, embedding columns, a label column, maybe a row index
_TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet")
_SUFFIXES = ".npz, .npy, .csv, .tsv, .txt or .parquet"
#: header names of a row-index column (case ignored): pandas writes '' for an
#: unnamed index, 'Unnamed: 0' once a file went through read_csv and to_csv
#: again, '__index_level_0__' into Parquet
_INDEX_NAMES = re.compile(r"|index|id|unnamed: \d+(?:\.\d+)?|__index_level_\d+__", re.IGNORECASE)
#: a cell written as an integer (as pandas writes an index), at most 18 digits
_INTEGER_TEXT = re.compile(r"\s*[+-]?\d{1,18}\s*")
#: least number of rows for a column of integers to look like a row index
_INDEX_MIN_ROWS = 3


@dataclass(frozen=True, eq=False)
class EmbeddingFile:
    """Embeddings and labels read by :func:`read_embeddings`, and what was read.

    Attributes
    ----------
    embeddings : ndarray of shape (N, n)
        As stored (float16 and float32 are kept; diagnose computes in float64).
    labels : ndarray of shape (N,)
        As stored, or parsed: integers, else text.
    path : str
        The embedding file.
    format : str
        Its format: ``'npz'``, ``'npy'``, ``'csv'``, ``'tsv'``, ``'txt'`` or
        ``'parquet'``.
    labels_from : str
        Where the labels came from: ``"array 'labels'"``, ``"column 'label'"``,
        ``"file 'labels.txt'"``.
    header : bool or None
        Whether a table file began with a header row (``None``: not a table).
    index_columns : tuple of str or int
        The row-index columns dropped from a table file: their names
        (``''``, ``'Unnamed: 0'``), or their 0-based positions in a file
        without a header row.
    index_rule : str or None
        Why: ``'named as an index'`` (the header says so), ``'index_col'``
        (asked for), or ``'index_col=False'`` (none, as asked); ``None`` when
        none was asked for or found.
    """

    embeddings: np.ndarray
    labels: np.ndarray
    path: str
    format: str
    labels_from: str
    header: bool | None = None
    index_columns: tuple[str | int, ...] = ()
    index_rule: str | None = None

    @property
    def description(self) -> str:
        """One line: the file, its rows and columns, the labels, what was dropped."""
        E = self.embeddings
        shape = (f"{E.shape[0]} rows x {E.shape[1]} embedding columns" if E.ndim == 2
                 else f"an array of shape {E.shape}")
        dtype = str(E.dtype) + ("" if E.dtype == np.float64 else ", computed in float64")
        n_classes = self.n_classes
        parts = [f"{self.path}: {shape} ({dtype})",
                 f"labels from {self.labels_from}"
                 + ("" if n_classes is None else f" ({n_classes} classes)")]
        if self.header is False:
            parts.append("no header row")
        if self.index_columns:
            why = "named as an index" if self.index_rule == "named as an index" else "as asked"
            parts.append(f"index column{'s' if len(self.index_columns) > 1 else ''} "
                         f"{', '.join(map(repr, self.index_columns))} dropped ({why})")
        return ", ".join(parts)

    @property
    def n_classes(self) -> int | None:
        """Number of distinct labels (``None`` when they cannot be compared)."""
        try:
            return int(np.unique(np.asarray(self.labels)).size)
        except TypeError:  # an object array of mixed kinds: validation names it
            return None

    def to_dict(self) -> dict[str, Any]:
        """The description and its fields, for a report (JSON types)."""
        E = self.embeddings
        return {
            "description": self.description,
            "path": self.path,
            "format": self.format,
            "n_rows": int(E.shape[0]) if E.ndim >= 1 else None,
            "n_dims": int(E.shape[1]) if E.ndim == 2 else None,
            "dtype": str(E.dtype),
            "labels_from": self.labels_from,
            "n_classes": self.n_classes,
            "header": self.header,
            "index_columns": list(self.index_columns),
            "index_rule": self.index_rule,
        }


def load_embeddings(path: str | os.PathLike, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """Read embeddings and labels: :func:`read_embeddings`'s two arrays.

    Parameters
    ----------
    path : path-like
        The embedding file.
    **options
        The keyword arguments of :func:`read_embeddings` (``labels``,
        ``embeddings_key``, ``labels_key``, ``label_column``, ``index_col``).

    Returns
    -------
    E : ndarray of shape (N, n)
    y : ndarray of shape (N,)
        Raw arrays; the caller validates them.
    """
    got = read_embeddings(path, **options)
    return got.embeddings, got.labels


def read_embeddings(
    path: str | os.PathLike,
    *,
    labels: str | os.PathLike | None = None,
    embeddings_key: str | None = None,
    labels_key: str | None = None,
    label_column: str | int | None = None,
    index_col: str | int | bool | None = None,
) -> EmbeddingFile:
    """Read embeddings and labels from ``.npz``, ``.npy``, CSV, TSV or Parquet.

    Parameters
    ----------
    path : path-like
        ``.npz`` with arrays ``embeddings`` and ``labels`` (or the keys
        given); ``.npy`` with the embeddings (then ``labels`` names the
        labels file); or a table, one row per point: ``.csv`` (``.txt``:
        the same), ``.tsv`` (tab-separated) or ``.parquet`` (needs
        ``pyarrow``: ``pip install isoapprox[parquet]``), with numeric
        embedding columns, a label column and maybe a row-index column.
    labels : path-like, optional
        Labels file, one label per embedding: ``.npy``; ``.csv`` or ``.tsv``
        with one column (after an optional row-index column); ``.txt`` with
        one label per line.  A first row is a header when the file has one
        row more than there are embeddings and its value occurs in no other
        row.  Required with an ``.npy`` embedding file; replaces the labels
        of an ``.npz`` and the label column of a table (a column named
        ``label``, ``labels`` or ``y`` is then left out).
    embeddings_key, labels_key : str, optional
        Array names inside an ``.npz``.
    label_column : str or int, optional
        Label column of a table, by name or 0-based position (negative from
        the end); default ``"label"``, ``"labels"`` or ``"y"`` if present,
        else the last column.
    index_col : str, int or False, optional
        Row-index column of a table, by name or 0-based position: dropped.
        ``False``: no column is an index.  Default: detected (see Notes).

    Returns
    -------
    EmbeddingFile
        The raw arrays (the caller validates them) and a one-line
        description of what was read (:attr:`EmbeddingFile.description`).

    Raises
    ------
    FileNotFoundError
        If a file does not exist.
    InvalidInputError
        One line naming the file: not a regular file (a folder, a FIFO, a
        device), empty, the wrong format, missing keys, ragged rows (with
        the line), a non-numeric embedding cell (with line and column), no
        label column, an ambiguous row index (see Notes), labels whose
        length differs from the embeddings' (both files, both lengths), a
        Parquet file without pyarrow installed.

    Notes
    -----
    Tables.  The first row is a header when it names columns: one of its
    cells is not a number where the row below holds one (``x0`` above
    ``0.13``; an empty first cell, as pandas writes, counts), or its numeric
    cells are the integers ``0, 1, 2, ...`` (or ``1, 2, ...``) that pandas
    gives unnamed columns; otherwise every row is data, columns by position.

    Row index (``index_col=None``).  Looked for in the first column that is
    not the label column (and in Parquet, where pandas' metadata says):

    * dropped when the header names it an index: ``''`` (pandas' unnamed
      index), ``'index'``, ``'id'``, ``'Unnamed: K'``, ``'__index_level_K__'``
      (case ignored); a run of such columns is dropped together; in a
      Parquet file, also the columns its pandas metadata names the index,
      wherever they are (pandas writes them last);
    * refused as ambiguous when it is not named so but every cell is an
      integer (written without a decimal point or exponent) and the cells
      are distinct and fill a contiguous range (``0..N-1``, ``1..N`` or a
      shuffle or slice of one), with at least 3 rows and another
      embedding column: such a column may be an index or data,
      so the error asks for ``index_col`` (``--index-col``) or
      ``index_col=False`` (``--no-index``) instead of guessing;
    * kept as data otherwise.

    Every file is checked before memory is allocated for it: only regular
    files are opened; a ``.npy`` array (alone or inside an ``.npz``) is read
    only when its header is at most :data:`NPY_MAX_HEADER` bytes, holds no
    Python objects, and its shape times its item size equals the bytes that
    follow the header; a text line may hold at most :data:`CSV_MAX_LINE`
    characters and :data:`CSV_MAX_COLUMNS` fields.  Memory then grows with
    the file's size.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    index_col = _index_option(index_col)
    if labels is not None and label_column is not None:
        raise InvalidInputError(
            "`labels` (--labels) and `label_column` (--label-col) exclude each other: the "
            f"labels come from a file or from a column; got labels={str(labels)!r} and "
            f"label_column={label_column!r}")
    if index_col is not None and index_col is not False and suffix not in _TABLE_SUFFIXES:
        raise InvalidInputError(
            f"`index_col` (--index-col) applies to tables ({', '.join(_TABLE_SUFFIXES)}); "
            f"`{path}` is a {suffix or 'suffix-less'} file")
    table: _CsvTable | _ParquetTable | None = None
    labels_from = "array 'labels'"
    with open_regular(path, "embedding") as fh:
        size = _nonempty(fh, f"`{path}`", "embeddings and labels")
        if suffix == ".npz":
            E, y, lk = _load_npz(fh, path, labels is None, embeddings_key, labels_key)
            labels_from = f"array {lk!r}"
        elif suffix == ".npy":
            if labels is None:
                raise InvalidInputError(
                    f"`{path}` holds only embeddings; pass the labels with --labels LABELS.npy"
                )
            E, y = _read_npy(fh, size, f"`{path}`"), None
        elif suffix == ".parquet":
            table = _parquet_table(fh, path)
        elif suffix in _TABLE_SUFFIXES:
            table = _csv_table(fh, path, "\t" if suffix == ".tsv" else ",")
        else:
            raise InvalidInputError(f"`{path}` must end in {_SUFFIXES}; got suffix {suffix!r}")
    index_names: tuple[str | int, ...] = ()
    rule = None if index_col is None else "index_col=False" if index_col is False else "index_col"
    if table is not None:
        pick = _choose_columns(table, path, label_column, index_col, labels is not None)
        E = table.floats(pick.embedding)
        y = None
        if pick.label is not None:
            y = table.labels(pick.label)
            labels_from = f"column {table.show(pick.label)}"
            if pick.label_by_default:
                _check_default_label(table, path, pick.label, y)
        index_names = tuple(i if table.names is None else table.names[i] for i in pick.index)
        rule = pick.rule
    E = np.asarray(E)
    if labels is not None:
        y, labels_from = _load_labels(Path(labels), E.shape[0] if E.ndim else None, path)
    y = np.asarray(y).reshape(-1) if np.ndim(y) == 2 and 1 in np.shape(y) else np.asarray(y)
    if E.ndim == 2 and y.ndim == 1 and E.shape[0] != y.shape[0]:
        raise InvalidInputError(
            f"`{path}`: embeddings and labels must have the same length; got {E.shape[0]} "
            f"embeddings and {y.shape[0]} labels"
        )
    return EmbeddingFile(embeddings=E, labels=y, path=str(path), format=suffix.lstrip("."),
                         labels_from=labels_from,
                         header=None if table is None else table.names is not None,
                         index_columns=index_names, index_rule=rule)


def _nonempty(fh: BinaryIO, name: str, expected: str) -> int:
    """The size in bytes of the open file ``fh`` (``name`` in messages); empty is refused."""
    size = os.fstat(fh.fileno()).st_size
    if size == 0:
        raise InvalidInputError(f"{name} is empty (0 bytes); expected {expected}")
    return size


_NPY_MAGIC = b"\x93NUMPY"
#: what reading a damaged zip archive raises (a bad CRC, a bad deflate or LZMA
#: stream, an unknown compression method, an encrypted member, a cut archive)
_ZIP_ERRORS: tuple[type[BaseException], ...] = (
    OSError, EOFError, ValueError, RuntimeError, NotImplementedError, struct.error,
    zipfile.BadZipFile, zlib.error, LZMAError)


def _npy_header(fp: BinaryIO, size: int, where: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the ``.npy`` stream ``fp`` (``size`` bytes), checked.

    Reads at most :data:`NPY_MAX_HEADER` bytes and allocates nothing for the
    array: the shape times the item size must equal the bytes after the
    header.
    """
    prefix = fp.read(len(_NPY_MAGIC) + 2)
    if len(prefix) < len(_NPY_MAGIC) + 2 or not prefix.startswith(_NPY_MAGIC):
        raise InvalidInputError(
            f"{where} is not a readable .npy file (it does not start with the magic "
            "string of numpy.save)")
    major, minor = prefix[-2], prefix[-1]
    if (major, minor) not in ((1, 0), (2, 0), (3, 0)):
        raise InvalidInputError(
            f"{where} has .npy format version {major}.{minor}; this isoapprox reads 1.0, 2.0 "
            "and 3.0")
    width = 2 if major == 1 else 4
    length = fp.read(width)
    if len(length) < width:
        raise InvalidInputError(f"{where} is not a readable .npy file: it ends inside its header")
    n_header = int.from_bytes(length, "little")
    if n_header > NPY_MAX_HEADER:
        raise InvalidInputError(
            f"{where} has a .npy header of {n_header} bytes; at most {NPY_MAX_HEADER} are read "
            "(numpy.save writes about 128)")
    header = fp.read(n_header)
    if len(header) < n_header:
        raise InvalidInputError(f"{where} is not a readable .npy file: it ends inside its header")
    reader = np.lib.format.read_array_header_1_0 if major == 1 else (
        np.lib.format.read_array_header_2_0)
    try:
        shape, _, dtype = reader(_io.BytesIO(length + header), max_header_size=NPY_MAX_HEADER)
    except (ValueError, TypeError, SyntaxError, TokenError, RecursionError,
            UnicodeDecodeError) as exc:  # what numpy's parser of a damaged header raises
        raise InvalidInputError(
            f"{where} is not a readable .npy file: bad header ({_one_line(exc)})") from None
    if dtype.hasobject:
        raise InvalidInputError(
            f"{where} holds Python objects (dtype {dtype}), which only pickle can read; "
            "expected a numeric or string array")
    if dtype.itemsize == 0 or any(d < 0 for d in shape):
        raise InvalidInputError(
            f"{where} is not a readable .npy file: shape {shape} of dtype {dtype!r}")
    need = math.prod(shape) * dtype.itemsize
    have = size - len(prefix) - width - n_header
    if need != have:
        raise InvalidInputError(
            f"{where} is not a readable .npy file: its header claims shape {shape} of "
            f"{dtype} ({need} bytes) but {have} bytes follow the header"
            + (" (a truncated file?)" if have < need else ""))
    return shape, dtype


def _read_npy(fp: BinaryIO, size: int, where: str) -> np.ndarray:
    """The array of the ``.npy`` stream ``fp`` of ``size`` bytes, header checked first."""
    shape, dtype = _npy_header(fp, size, where)
    fp.seek(0)
    try:
        return np.lib.format.read_array(fp, allow_pickle=False, max_header_size=NPY_MAX_HEADER)
    except MemoryError:
        raise InvalidInputError(
            f"{where}: its array of shape {shape} and dtype {dtype} "
            f"({math.prod(shape) * dtype.itemsize} bytes) does not fit in memory") from None
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidInputError(f"{where} is not a readable .npy file: {_one_line(exc)}") from None


def _load_npz(fh: BinaryIO, path: Path, with_labels: bool, embeddings_key: str | None,
              labels_key: str | None) -> tuple[np.ndarray, np.ndarray | None, str | None]:
    """Embeddings (and labels when ``with_labels``) of the open ``.npz`` file ``fh``, and
    the labels' key."""
    not_npz = (f"`{path}` is not a readable .npz file (not a zip archive of .npy arrays, as "
               "numpy.savez writes)")
    try:
        archive = zipfile.ZipFile(fh)
    except _ZIP_ERRORS:
        raise InvalidInputError(not_npz) from None
    with archive:
        infos = archive.infolist()
        members = {i.filename[:-4] if i.filename.endswith(".npy") else i.filename: i
                   for i in infos}
        keys = list(members)
        ek = embeddings_key or next((k for k in _EMB_KEYS if k in keys), None)
        lk = labels_key or next((k for k in _LAB_KEYS if k in keys), None)
        if ek is None or ek not in keys:
            raise InvalidInputError(
                f"`{path}` must contain an array 'embeddings' (or pass "
                f"--embeddings-key); got arrays {keys}"
            )
        if with_labels and (lk is None or lk not in keys):
            raise InvalidInputError(
                f"`{path}` must contain an array 'labels' (or pass --labels-key "
                f"or --labels FILE); got arrays {keys}"
            )
        E = _read_member(archive, members[ek], f"`{path}` array {ek!r}")
        y = _read_member(archive, members[lk], f"`{path}` array {lk!r}") if with_labels else None
    return E, y, lk


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> np.ndarray:
    """The array of the archive's member ``info``, its ``.npy`` header checked first."""
    if not info.filename.endswith(".npy"):
        raise InvalidInputError(f"{where} is not a .npy array (member {info.filename!r})")
    try:
        with archive.open(info) as member:
            return _read_npy(member, info.file_size, where)
    except InvalidInputError:
        raise
    except _ZIP_ERRORS as exc:
        raise InvalidInputError(f"{where} is not readable: {_one_line(exc)}") from None


def _text_lines(fh: BinaryIO, path: Path) -> Iterator[str]:
    """The lines of the UTF-8 text file ``fh``, each at most :data:`CSV_MAX_LINE` characters.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (kept, as :mod:`csv` wants);
    a leading byte-order mark is dropped.
    """
    text = _io.TextIOWrapper(fh, encoding="utf-8-sig", errors="surrogateescape", newline="")
    k = 0
    while line := text.readline(CSV_MAX_LINE + 1):
        k += 1
        if len(line) > CSV_MAX_LINE:
            raise InvalidInputError(
                f"`{path}` line {k} is longer than {CSV_MAX_LINE} characters (the most a CSV "
                "line may hold); is it a CSV text file?")
        try:
            line.encode("utf-8")
        except UnicodeEncodeError as exc:  # an undecodable byte, kept as a surrogate
            raise InvalidInputError(
                f"`{path}` is not a CSV text file: line {k}, character {exc.start + 1} is not "
                "UTF-8 (a binary file?)") from None
        yield line


def _csv_rows(fh: BinaryIO, path: Path, delimiter: str = ","
              ) -> Iterator[tuple[int, list[str]]]:
    """Non-blank CSV rows of ``fh`` (fields split at ``delimiter``) with the line each one
    ends on."""
    reader = csv.reader(_text_lines(fh, path), delimiter=delimiter)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InvalidInputError(
                f"`{path}` line {reader.line_num} is not valid CSV: {_one_line(exc)}") from None
        if len(row) > CSV_MAX_COLUMNS:
            raise InvalidInputError(
                f"`{path}` line {reader.line_num} has {len(row)} fields; at most "
                f"{CSV_MAX_COLUMNS} are read")
        if row and any(c.strip() for c in row):
            yield reader.line_num, row


def _index_option(index_col: Any) -> str | int | bool | None:
    """``index_col`` checked: ``None``, ``False``, a column name or a 0-based position."""
    if index_col is None or index_col is False or isinstance(index_col, str):
        return index_col
    if isinstance(index_col, (bool, np.bool_)) or not isinstance(index_col, (int, np.integer)):
        raise TypeError(
            "`index_col` must be None (detect), False (no index column), a column name or "
            f"a 0-based position; got {index_col!r} ({type(index_col).__name__})")
    return int(index_col)


def _names_list(names: Sequence[str], most: int = 12) -> str:
    """Column names for a message: the first ``most`` of them."""
    shown = ", ".join(repr(n) for n in names[:most])
    return f"[{shown}{', ...' if len(names) > most else ''}] ({len(names)} columns)"


def _integer_span(values: Any) -> tuple[int, int] | None:
    """``(lo, hi)`` when the integers ``values`` are ``lo..hi``, each once; else ``None``.

    A list holds text cells: each must be written as an integer (:data:`_INTEGER_TEXT`).
    """
    if isinstance(values, list):
        if not all(_INTEGER_TEXT.fullmatch(c) for c in values):
            return None
        values = [int(c) for c in values]
    arr = np.asarray(values, dtype=np.int64)
    if arr.size == 0:
        return None
    lo, hi = int(arr.min()), int(arr.max())
    if hi - lo + 1 != arr.size or np.unique(arr).size != arr.size:
        return None
    return lo, hi


def _label_array(texts: list[str]) -> np.ndarray:
    """Labels read as text: integral numbers become int64, anything else stays text."""
    y_raw = np.array(texts, dtype=str)
    try:
        y_num = y_raw.astype(np.float64)
    except ValueError:  # text labels
        return y_raw
    # integral numbers become int64 labels; others (0.5, inf, 1e300) stay text
    integral = np.all(np.abs(y_num) <= 2.0**53) and np.all(y_num == np.round(y_num))
    return y_num.astype(np.int64) if integral else y_raw


class _CsvTable:
    """The cells of a CSV or TSV file: data rows as text, the line each ends on, the header."""

    def __init__(self, path: Path, names: list[str] | None, rows: list[list[str]],
                 lines: list[int]) -> None:
        self.path, self.names, self.rows, self.lines = path, names, rows, lines
        self.n_rows, self.n_cols = len(rows), len(rows[0])
        self.index_hint: frozenset[int] = frozenset()

    def show(self, i: int) -> str:
        """Column ``i`` as messages name it: its quoted name, or its position."""
        return repr(self.names[i]) if self.names is not None else str(i)

    def integer_span(self, i: int) -> tuple[int, int] | None:
        return _integer_span([row[i] for row in self.rows])

    def labels(self, i: int) -> np.ndarray:
        return _label_array([row[i].strip() for row in self.rows])

    def floats(self, cols: list[int]) -> np.ndarray:
        cells = [[row[i] for i in cols] for row in self.rows]
        with contextlib.suppress(ValueError):
            return np.array(cells, dtype=np.float64).reshape(self.n_rows, len(cols))
        out = np.empty((self.n_rows, len(cols)))  # numpy refused a cell: find it
        for r, row in enumerate(cells):
            for j, v in enumerate(row):
                try:
                    out[r, j] = float(v)
                except ValueError:
                    raise InvalidInputError(
                        f"`{self.path}` line {self.lines[r]}, column {self.show(cols[j])}: "
                        f"embedding value {v.strip()!r} is not a number") from None
        return out


def _is_header(first: list[str], second: list[str] | None) -> bool:
    """Whether the CSV row ``first`` names the columns (the rule of :func:`read_embeddings`)."""
    if second is None:
        return not all(_is_number(c) for c in first)
    for k, (a, b) in enumerate(zip(first, second, strict=False)):  # rows may differ
        if not _is_number(a) and _is_number(b) and (a.strip() or k == 0):
            return True
    numbers = [c for c in first if _is_number(c)]
    if len(numbers) >= 2 and all(_INTEGER_TEXT.fullmatch(c) for c in numbers):
        ints = [int(c) for c in numbers]
        return ints[0] in (0, 1) and ints == list(range(ints[0], ints[0] + len(ints)))
    return False


def _csv_table(fh: BinaryIO, path: Path, delimiter: str) -> _CsvTable:
    """The rows of the CSV (or TSV) file ``fh``, header detected, ragged rows refused."""
    found = list(_csv_rows(fh, path, delimiter))
    if not found:
        raise InvalidInputError(
            f"`{path}` has no rows; expected a header row and one row per embedded point"
        )
    first = found[0][1]
    if _is_header(first, found[1][1] if len(found) > 1 else None):
        if len(found) == 1:
            raise InvalidInputError(
                f"`{path}` must have at least one data row after the header; got none"
            )
        names: list[str] | None = [c.strip() for c in first]
        found = found[1:]
    else:
        names = None
    width = len(first)
    for k, row in found:
        if len(row) != width:
            raise InvalidInputError(
                f"`{path}` line {k} has {len(row)} fields; expected {width}"
                + (" (as the header)" if names is not None else " (as line "
                   f"{found[0][0]})"))
    return _CsvTable(path, names, [row for _, row in found], [k for k, _ in found])


class _ParquetTable:
    """The columns of a Parquet file (a ``pyarrow.Table``)."""

    def __init__(self, path: Path, table: Any, pa: Any) -> None:
        self.path, self.table, self.pa = path, table, pa
        self.names: list[str] | None = [str(n) for n in table.column_names]
        self.n_rows, self.n_cols = table.num_rows, table.num_columns
        meta = table.schema.pandas_metadata or {}
        pandas_index = {c for c in meta.get("index_columns", []) if isinstance(c, str)}
        self.index_hint = frozenset(  # wherever they are: pandas writes them last
            i for i, n in enumerate(self.names)
            if n in pandas_index or re.fullmatch(r"__index_level_\d+__", n))

    def show(self, i: int) -> str:
        return repr(self.names[i])

    def integer_span(self, i: int) -> tuple[int, int] | None:
        col = self.table.column(i)
        if not self.pa.types.is_integer(col.type) or col.null_count:
            return None
        return _integer_span(col.to_numpy())

    def labels(self, i: int) -> np.ndarray:
        values = self.table.column(i).to_pylist()
        for kind, dtype in ((str, np.str_), (int, np.int64), (float, np.float64)):
            if all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
                return np.array(values, dtype=dtype)
        return np.array(values, dtype=object)  # mixed or missing: as_labels names them

    def floats(self, cols: list[int]) -> np.ndarray:
        pa = self.pa
        blocks = []
        for i in cols:
            col = self.table.column(i)
            t = col.type
            if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
                blocks.append(np.asarray(col.to_numpy(zero_copy_only=False)).reshape(-1, 1))
                continue
            if (pa.types.is_list(t) or pa.types.is_large_list(t) or
                    pa.types.is_fixed_size_list(t)) and (
                    pa.types.is_integer(t.value_type) or pa.types.is_floating(t.value_type)):
                dtype = (np.dtype(t.value_type.to_pandas_dtype())
                         if pa.types.is_floating(t.value_type) else np.float64)
                try:  # one column of vectors
                    blocks.append(np.array(col.to_pylist(), dtype=dtype).reshape(
                        self.n_rows, -1))
                except (ValueError, TypeError):
                    raise InvalidInputError(
                        f"`{self.path}` column {self.show(i)} holds vectors of different "
                        "lengths (or missing ones); expected one embedding of n numbers per "
                        "row") from None
                continue
            raise InvalidInputError(
                f"`{self.path}` column {self.show(i)} holds {t} values; expected numbers (an "
                "embedding dimension); name the labels with --label-col, an index with "
                "--index-col")
        if not blocks:
            return np.empty((self.n_rows, 0))
        dtype = np.result_type(*(b.dtype for b in blocks))
        return np.concatenate([b.astype(dtype, copy=False) for b in blocks], axis=1)


def _parquet_table(fh: BinaryIO, path: Path) -> _ParquetTable:
    """The open Parquet file ``fh`` as a table (needs pyarrow)."""
    try:
        pa = _lazy.pyarrow()
    except ImportError:
        raise InvalidInputError(
            f"`{path}` is a Parquet file, which needs pyarrow: pip install "
            "isoapprox[parquet]") from None
    try:
        table = pa.parquet.read_table(fh)
    except (pa.ArrowException, OSError, ValueError, TypeError, EOFError) as exc:
        raise InvalidInputError(
            f"`{path}` is not a readable Parquet file: {_one_line(exc)}") from None
    if table.num_rows == 0 or table.num_columns == 0:
        raise InvalidInputError(
            f"`{path}` has {table.num_rows} rows and {table.num_columns} columns; expected "
            "one row per embedded point")
    return _ParquetTable(path, table, pa)


class _Columns(NamedTuple):
    """The roles of a table's columns (0-based positions)."""

    embedding: list[int]
    label: int | None
    label_by_default: bool
    index: list[int]
    rule: str | None


def _column_position(table: _CsvTable | _ParquetTable, path: Path, option: str,
                     value: str | int) -> int:
    """The position of the column that option ``option`` names (a name or position)."""
    n = table.n_cols
    if isinstance(value, int):
        k = value if value >= 0 else n + value
        if not 0 <= k < n:
            raise InvalidInputError(
                f"`{option}` must be a column index in [0, {n - 1}] of `{path}`; got {value}")
        return k
    if table.names is None:
        raise InvalidInputError(
            f"`{option}` {value!r} names a column, but `{path}` has no header row (its first "
            "row is numeric); give the column's index instead")
    if value not in table.names:
        raise InvalidInputError(
            f"`{option}` must name a column of `{path}` ({_names_list(table.names)}); got "
            f"{value!r}")
    return table.names.index(value)


def _choose_columns(table: _CsvTable | _ParquetTable, path: Path,
                    label_column: str | int | None, index_col: str | int | bool | None,
                    labels_file: bool) -> _Columns:
    """Which columns are embeddings, which the labels, which a row index (see Notes of
    :func:`read_embeddings`)."""
    n, names = table.n_cols, table.names
    named = next((names.index(k) for k in _LAB_KEYS if k in names), None) if names else None
    by_default = False
    if labels_file:
        label = named  # labels from the file; a column named so is left out
    elif label_column is not None:
        label = _column_position(table, path, "label_column", label_column)
    elif named is not None:
        label = named
    else:
        label, by_default = n - 1, True
    if not labels_file and n < 2:
        raise InvalidInputError(
            f"`{path}` must have at least one embedding column besides the label column; "
            f"got {n} column(s) (labels in a separate file: --labels)")
    others = [i for i in range(n) if i != label]
    index: list[int] = []
    rule = None
    if index_col is False:
        rule = "index_col=False"
    elif index_col is not None:
        k = _column_position(table, path, "index_col", index_col)
        if k == label:
            raise InvalidInputError(
                f"`index_col` {index_col!r} names the label column {table.show(k)} of "
                f"`{path}`; name the labels with --label-col")
        index, rule = [k], "index_col"
    elif others:
        for i in others:  # a run of columns named as an index, from the first
            if (names is not None and _INDEX_NAMES.fullmatch(names[i])) or i in table.index_hint:
                index.append(i)
            else:
                break
        index += [i for i in others if i in table.index_hint and i not in index]
        if index:
            rule = "named as an index"
        elif len(others) >= 2 and table.n_rows >= _INDEX_MIN_ROWS:
            span = table.integer_span(others[0])
            if span is not None:
                k = others[0]
                why = ("there is no header row to say so" if names is None
                       else "its name does not say so")
                raise InvalidInputError(
                    f"`{path}` column {table.show(k)} holds the integers {span[0]}..{span[1]} "
                    f"once each, as a row index does, but {why}; pass --index-col {k} "
                    "(index_col=" f"{k}) to drop it, or --no-index (index_col=False) to keep "
                    "it as an embedding dimension")
    embedding = [i for i in others if i not in index]
    if not embedding:
        roles = ([f"the label column {table.show(label)}"] if label is not None else []) + [
            f"the index column {table.show(i)}" for i in index]
        raise InvalidInputError(
            f"`{path}` has no embedding column: its {n} column(s) are "
            + (" and ".join(roles) or "none") + "; expected numeric embedding columns too")
    return _Columns(embedding, label, by_default, index, rule)


def _check_default_label(table: _CsvTable | _ParquetTable, path: Path, k: int,
                         y: np.ndarray) -> None:
    """Refuse a last column taken for the labels that holds fractional numbers."""
    if y.dtype.kind == "f":
        fractional = bool(np.any(y != np.round(y)))
    elif y.dtype.kind == "U":
        fractional = all(_is_number(v) for v in y.tolist())
    else:
        fractional = False
    if fractional:
        raise InvalidInputError(
            f"`{path}` has no label column: no column is named 'label', 'labels' or 'y', and "
            f"the last column {table.show(k)} holds numbers that are not integers (an "
            "embedding dimension?); name the labels with --label-col, or give them in a file "
            "with --labels")


def _load_labels(path: Path, n: int | None, emb_path: Path) -> tuple[np.ndarray, str]:
    """The labels of the file ``path`` (``n`` embeddings read from ``emb_path``) and
    where they came from."""
    suffix = path.suffix.lower()
    source = f"file {str(path)!r}"
    if suffix == ".npy":
        with open_regular(path, "labels") as fh:
            y = _read_npy(fh, _nonempty(fh, f"`{path}`", "a .npy array of labels"), f"`{path}`")
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
        if y.ndim == 1 and n is not None and y.shape[0] != n:
            raise InvalidInputError(
                f"labels file `{path}` has {y.shape[0]} labels but `{emb_path}` has {n} "
                "embeddings (rows); expected one label per embedding")
        return y, source
    if suffix not in (".csv", ".tsv", ".txt"):
        raise InvalidInputError(
            f"labels file `{path}` must end in .npy, .csv, .tsv or .txt (one label per line); "
            f"got suffix {suffix!r}")
    with open_regular(path, "labels") as fh:
        _nonempty(fh, f"labels file `{path}`", "labels")
        if suffix == ".txt":
            rows = [(k, [line.strip()]) for k, line in enumerate(_text_lines(fh, path), 1)
                    if line.strip()]
        else:
            rows = list(_csv_rows(fh, path, "\t" if suffix == ".tsv" else ","))
    if not rows:
        raise InvalidInputError(f"labels file `{path}` has no labels (only blank lines)")
    width = len(rows[0][1])
    for k, row in rows:
        if len(row) != width or width > 2:
            raise InvalidInputError(
                f"labels file `{path}` line {k} has {len(row)} fields; expected one label per "
                "row (after an optional row-index column)")
    header = None
    if n is not None and len(rows) == n + 1:
        first = rows[0][1][-1].strip()
        if all(row[-1].strip() != first for _, row in rows[1:]):
            header = [c.strip() for c in rows[0][1]]
            rows = rows[1:]
    if n is not None and len(rows) != n:
        raise InvalidInputError(
            f"labels file `{path}` has {len(rows)} labels but `{emb_path}` has {n} embeddings "
            "(rows); expected one label per embedding"
            + (" (with a header row: one more row, whose value occurs in no other)"
               if len(rows) == n + 1 else ""))
    if width == 2:
        named = header is not None and _INDEX_NAMES.fullmatch(header[0])
        if not named and _integer_span([row[0] for _, row in rows]) is None:
            raise InvalidInputError(
                f"labels file `{path}` has 2 columns, and the first is not a row index (named "
                "'', 'index' or 'id', or the integers 0..N-1); expected one column of labels")
    if header is not None:
        source += f" column {header[-1]!r}"
    return _label_array([row[-1].strip() for _, row in rows]), source


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
