"""Result files, provenance and embedding files.

Design notes: docs/performance.md, section ``isoapprox.io``.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import errno
import io as _io
import itertools
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
from dataclasses import asdict, is_dataclass
from importlib import metadata
from pathlib import Path
from tokenize import TokenError
from typing import Any, BinaryIO

import numpy as np

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
    "JSON_MAX_DEPTH",
    "NPY_MAX_HEADER",
    "SCHEMA_VERSION",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_writer",
    "decode_jsonl_line",
    "load_embeddings",
    "open_regular",
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
    if extra:
        for k, v in extra.items():
            doc[k] = to_jsonable(v)
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


def open_regular(path: str | os.PathLike, what: str) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file; refuse anything else.

    The one way isoapprox opens a file it reads (embeddings, labels,
    results, journals, monitor logs).

    A FIFO would block the open and the read, a device such as ``/dev/zero``
    never ends, a folder has no bytes: each is refused before a byte is read.
    The open does not block (``O_NONBLOCK``), and the open descriptor is
    checked again, in case the path changed in between.

    Raises
    ------
    FileNotFoundError
        ``"{what} file not found: {path}"``.
    InvalidInputError
        If ``path`` is not a regular file (after following links).
    """
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} file not found: {path}") from None
    _require_regular(st, path, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} file not found: {path}") from None
    try:
        _require_regular(os.fstat(fd), path, what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


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
        If a file is not a regular file (a folder, a FIFO, a device), is
        empty or has the wrong format, missing keys, ragged or non-numeric
        CSV rows, or mismatched lengths; the message names the file (and the
        CSV line and column).

    Notes
    -----
    Every file is checked before memory is allocated for it: only regular
    files are opened; a ``.npy`` array (alone or inside an ``.npz``) is read
    only when its header is at most :data:`NPY_MAX_HEADER` bytes, holds no
    Python objects, and its shape times its item size equals the bytes that
    follow the header; a CSV line may hold at most :data:`CSV_MAX_LINE`
    characters and :data:`CSV_MAX_COLUMNS` fields.  Memory then grows with
    the file's size.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    with open_regular(path, "embedding") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise InvalidInputError(
                f"`{path}` is empty (0 bytes); expected embeddings and labels")
        if suffix == ".npz":
            E, y = _load_npz(fh, path, labels is None, embeddings_key, labels_key)
        elif suffix == ".npy":
            if labels is None:
                raise InvalidInputError(
                    f"`{path}` holds only embeddings; pass the labels with --labels LABELS.npy"
                )
            E, y = _read_npy(fh, size, f"`{path}`"), None
        elif suffix in (".csv", ".txt"):
            E, y = _load_csv(fh, path, label_column)
        else:
            raise InvalidInputError(
                f"`{path}` must end in .npz, .npy or .csv; got suffix {suffix!r}"
            )
    if labels is not None and suffix in (".npz", ".npy"):
        y = _load_npy(Path(labels), "labels")
    E = np.asarray(E)
    y = np.asarray(y).reshape(-1) if np.ndim(y) == 2 and 1 in np.shape(y) else np.asarray(y)
    if E.ndim == 2 and y.ndim == 1 and E.shape[0] != y.shape[0]:
        raise InvalidInputError(
            f"embeddings and labels must have the same length; got {E.shape[0]} embeddings "
            f"and {y.shape[0]} labels"
        )
    return E, y


def _load_npy(path: Path, what: str) -> np.ndarray:
    """The array of the ``.npy`` file ``path`` (``what`` names it in messages)."""
    with open_regular(path, what) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise InvalidInputError(
                f"`{path}` is empty (0 bytes); expected a .npy array of {what}")
        return _read_npy(fh, size, f"`{path}`")


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
              labels_key: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Embeddings (and labels when ``with_labels``) of the open ``.npz`` file ``fh``."""
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
    return E, y


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


def _csv_rows(fh: BinaryIO, path: Path) -> Iterator[tuple[int, list[str]]]:
    """Non-blank CSV rows of ``fh`` with the line each one ends on."""
    reader = csv.reader(_text_lines(fh, path))
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


def _load_csv(fh: BinaryIO, path: Path, label_column: str | int | None
              ) -> tuple[np.ndarray, np.ndarray]:
    rows = _csv_rows(fh, path)
    first = next(rows, None)
    if first is None:
        raise InvalidInputError(
            f"`{path}` has no rows; expected a header row and one row per embedded point"
        )
    header = [h.strip() for h in first[1]]
    if all(_is_number(h) for h in header):
        # no header row (e.g. numpy.savetxt): every row is data, columns by position
        if isinstance(label_column, str):
            raise InvalidInputError(
                f"`label_column` {label_column!r} names a column, but `{path}` has no header "
                "row (its first row is numeric); give the column's index instead"
            )
        data_rows = itertools.chain([first], rows)
        header = [f"column {i}" for i in range(len(header))]
    else:
        second = next(rows, None)
        if second is None:
            raise InvalidInputError(
                f"`{path}` must have at least one data row after the header; got none"
            )
        data_rows = itertools.chain([second], rows)
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
    except ValueError:  # text labels
        return np.array(feats, dtype=np.float64), y_raw
    # integral numbers become int64 labels; others (0.5, inf, 1e300) stay text
    integral = np.all(np.abs(y_num) <= 2.0**53) and np.all(y_num == np.round(y_num))
    y = y_num.astype(np.int64) if integral else y_raw
    return np.array(feats, dtype=np.float64), y


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
