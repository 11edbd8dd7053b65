"""The run protocol of long work: output, configuration, overwrite and resume, journal, executor.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.runs``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import errno
import fnmatch
import io
import json
import logging
import multiprocessing
import os
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: outputs are not locked
    fcntl = None  # type: ignore[assignment]
try:
    from multiprocessing import popen_spawn_posix, resource_tracker, spawn, util
    from multiprocessing.context import reduction, set_spawning_popen
except ImportError:  # pragma: no cover - not POSIX: workers only watch their parent
    popen_spawn_posix = None  # type: ignore[assignment]

import numba

from . import _lazy
from ._blas import quiet_threads
from ._progress import progress_bar
from .exceptions import InvalidInputError, IsoapproxError
from .io import atomic_write_text, decode_jsonl_line, open_regular, read_results, to_jsonable

__all__ = [
    "LOCK_FILE",
    "PARENT_POLL_S",
    "WORKER_ENV",
    "SYSTEM_REFUSALS",
    "RunJournal",
    "append_jsonl",
    "check_results_name",
    "claim_output",
    "config_key",
    "executor",
    "finished_units",
    "journal_path",
    "lock_path",
    "output_lock",
    "prepare_output",
    "progress_bar",
    "read_jsonl",
    "repair_jsonl",
    "run_units",
]

logger = logging.getLogger(__name__)

#: environment of local worker processes: one thread each, so ``N`` workers use ``N`` cores
WORKER_ENV = {
    "NUMBA_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


#: the lock file inside a locked output folder (a file ``OUT`` is locked by ``.OUT.lock`` beside it)
LOCK_FILE = ".isoapprox.lock"

#: seconds between a local worker's checks that its parent process is alive
PARENT_POLL_S = 1.0

#: ``errno`` values with which the system refuses a file operation that the path itself
#: allows (disk full, quota, read-only file system, permission denied, I/O error, too
#: many open files): raised as the ``OSError`` (the command line's exit status 4), where
#: another failure to create an output names a wrong path (``InvalidInputError``, 2)
SYSTEM_REFUSALS = frozenset(getattr(errno, name) for name in (
    "ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EACCES", "EPERM", "EIO", "EMFILE", "ENFILE",
    "ENOMEM", "ESTALE") if hasattr(errno, name))

#: ``os.open`` flags: not inherited by child processes; no symbolic link followed
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def config_key(obj: Any) -> Any:
    """``obj`` (a dataclass, mapping, ...) as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(to_jsonable(obj), allow_nan=False))


def journal_path(out: str | os.PathLike) -> Path:
    """The journal of an unfinished run writing ``out``."""
    return Path(out).with_suffix(".journal.partial")


def check_results_name(out: str | os.PathLike, *, flag: str = "--out") -> Path:
    """``out`` as a path if it can name a results file: a ``.json`` name, not a folder.

    Raises
    ------
    InvalidInputError
        If it cannot.

    Examples
    --------
    >>> check_results_name("runs/r.json").name
    'r.json'
    """
    out = Path(out)
    if out.suffix.lower() != ".json":
        raise InvalidInputError(f"{flag} must name a .json file; got {str(out)!r}")
    if out.is_dir():
        raise InvalidInputError(f"{flag} names a folder: {str(out)!r}")
    return out


def prepare_output(out: str | os.PathLike, *, experiment: str, config: Any,
                   overwrite: bool = False, resume: bool = False, reuse: bool = False,
                   flag: str = "--out") -> dict[str, Any] | None:
    """Apply the overwrite/resume policy to a results file ``out`` (``.json``).

    Parameters
    ----------
    out : path-like
        The results file.
    experiment : str
        Name stored in the results document.
    config : JSON key
        The run's configuration, as :func:`config_key` returns it.
    overwrite : bool
        Delete the results (JSON and CSV) and the journal.
    resume : bool
        Run even though results exist (the journal supplies finished units).
    reuse : bool
        Return existing results of the same experiment and configuration.
    flag : str
        The option that named ``out``, for messages.

    Returns
    -------
    dict or None
        The stored results document when it is reused, else ``None`` (run).

    Raises
    ------
    InvalidInputError
        If ``out`` is not a ``.json`` file name or names a folder, or if
        results exist and neither ``overwrite``, ``resume`` nor a reuse applies.
    """
    out = check_results_name(out, flag=flag)
    if overwrite:
        for p in (out, out.with_suffix(".csv"), journal_path(out)):
            p.unlink(missing_ok=True)
        return None
    if not out.exists() or resume:
        return None
    try:
        doc = read_results(out)
    except (InvalidInputError, ValueError) as exc:
        raise InvalidInputError(f"{flag} {str(out)!r} exists but cannot be read ({exc}); "
                                "pass --overwrite to replace it") from None
    same = doc.get("experiment") == experiment and doc.get("config") == config
    if same and reuse:
        return doc
    what = "" if same else " and holds another run (another configuration or experiment)"
    raise InvalidInputError(f"{flag} {str(out)!r} exists{what}; pass --overwrite to recompute "
                            f"it, --resume to continue from its journal, or another {flag}")


# ---------------------------------------------------------------------------
# outputs: up-front checks, one writer at a time, cleanup after a failure
# ---------------------------------------------------------------------------

#: locks this process holds: lock file -> [descriptor, depth] (a nested claim shares it)
_HELD: dict[str, list[int]] = {}


def lock_path(out: str | os.PathLike, *, folder: bool = False) -> Path:
    """The lock file of an output: ``OUT/.isoapprox.lock`` in a folder, ``.NAME.lock`` beside it.

    Examples
    --------
    >>> lock_path("runs/r.json").as_posix()
    'runs/.r.json.lock'
    """
    out = Path(out)
    return out / LOCK_FILE if folder else out.parent / f".{out.name}.lock"


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "pid unknown"


def _system_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` as an ``OSError`` naming ``path`` (the command line's one line, status 4)."""
    code = exc.errno if exc.errno is not None else errno.EIO
    named = OSError(code, exc.strerror or os.strerror(code), os.fspath(path))
    named.__cause__ = exc
    return named


def _claim_failure(exc: OSError, path: Path, out: Path, flag: str, verb: str) -> Exception:
    """What to raise when the system fails to create ``path`` for the output ``out``.

    A refusal of the system (:data:`SYSTEM_REFUSALS`: disk full, read-only,
    permission denied, ...) stays an ``OSError`` naming ``path``; any other
    failure says that ``out`` is a wrong path (``InvalidInputError``).
    """
    if exc.errno in SYSTEM_REFUSALS:
        return _system_error(exc, path)
    return InvalidInputError(f"{flag} {str(out)!r} cannot be {verb}: {exc.strerror or exc} "
                             f"({str(path)!r})")


def _refuse_link(path: str | os.PathLike, flag: str) -> None:
    """Refuse, in one line, an output path (or an entry of an output folder) that is a link."""
    if os.path.islink(path):
        try:
            target = f" (to {os.readlink(path)!r})"
        except OSError:
            target = ""
        raise InvalidInputError(
            f"{flag}: {str(path)!r} is a symbolic link{target}; isoapprox writes through no "
            f"link: remove it or choose another {flag}")


def _acquire(lock: Path, out: Path, flag: str) -> int:
    """A descriptor holding ``flock(LOCK_EX)`` on ``lock``, or a one-line refusal.

    The lock file is opened without following a symbolic link and must be a
    plain file with one name (not a hard link to another file): the holder
    writes its pid into it.
    """
    for _ in range(100):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
                _refuse_link(lock, flag)
            raise _claim_failure(exc, lock, out, flag, "written") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            what = "not a plain file" if not stat.S_ISREG(info.st_mode) else (
                f"a file with {info.st_nlink} names (a hard link)")
            raise InvalidInputError(
                f"{flag} {str(out)!r}: its lock file {str(lock)!r} is {what}; remove it or "
                f"choose another {flag}")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise IsoapproxError(
                f"{flag} {str(out)!r} is in use by another isoapprox run ({holder}); wait for "
                f"it to finish or choose another {flag}") from None
        except OSError as exc:  # no locks on this file system (ENOLCK)
            os.close(fd)
            raise _claim_failure(exc, lock, out, flag, "locked") from None
        # the previous holder unlinks the file before it lets go: a lock on an
        # unlinked file locks nothing, so check that the name is still ours
        try:
            ours = os.path.samestat(os.fstat(fd), os.lstat(lock))
        except FileNotFoundError:
            ours = False
        if ours:
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            except OSError as exc:  # a full disk: nothing claimed, nothing left behind
                with contextlib.suppress(OSError):
                    os.unlink(lock)
                os.close(fd)
                raise _system_error(exc, lock) from None
            return fd
        os.close(fd)
    raise IsoapproxError(f"{flag} {str(out)!r}: could not take its lock {str(lock)!r}")


@contextlib.contextmanager
def output_lock(out: str | os.PathLike, *, folder: bool = False,
                flag: str = "--out") -> Iterator[Path]:
    """Hold the exclusive lock of the output ``out`` (a results file or a folder).

    The lock is ``flock`` on :func:`lock_path` (which holds the holder's pid):
    not waited for, so a second writer is refused at once; released when the
    block ends or the process dies, so the file left by a killed run does not
    block the next one.  Nested calls in one process share the lock.  Without
    ``fcntl`` (not POSIX) nothing is locked.

    Raises
    ------
    IsoapproxError
        If another process holds the lock (the message names its pid).
    InvalidInputError
        If the lock file cannot be created (the output cannot be written).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, output_lock(d, folder=True) as lock:
    ...     lock.name
    '.isoapprox.lock'
    """
    lock = lock_path(out, folder=folder)
    key = os.path.abspath(lock)
    if fcntl is None:  # pragma: no cover
        yield lock
        return
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield lock
        finally:
            _HELD[key][1] -= 1
        return
    fd = _acquire(lock, Path(out), flag)
    _HELD[key] = [fd, 1]
    try:
        yield lock
    finally:
        del _HELD[key]
        with contextlib.suppress(OSError):
            lock.unlink()  # still held: no other run can have taken this file
        os.close(fd)


def _make_folders(folder: Path, out: Path, flag: str) -> list[Path]:
    """Create ``folder`` and its missing parents; the ones created, outermost first."""
    missing = []
    p = folder
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    if p.exists() and not p.is_dir():
        raise InvalidInputError(f"{flag} {str(out)!r} cannot be created: {str(p)!r} is a file")
    made: list[Path] = []
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            _remove_empty(made)
            raise _claim_failure(exc, d, out, flag, "created") from None
        made.append(d)
    return made


def _remove_empty(folders: Sequence[Path]) -> None:
    for d in reversed(folders):
        with contextlib.suppress(OSError):
            d.rmdir()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):  # a cleanup that fails leaves the first error shown
            path.unlink()


def _listdir(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:  # the folder vanished (or became unreadable) during the run
        return []


def _own_entries(out: Path, folder: bool, files: Sequence[str | os.PathLike],
                 journal: str | os.PathLike | None,
                 keep: Sequence[str | os.PathLike]) -> list[Path]:
    """The paths of an output that this run would write, as they exist now."""
    paths = [lock_path(out, folder=folder), *(Path(p) for p in keep)]
    if journal is not None:
        paths.append(Path(journal))
    if folder:
        paths += [out / n for n in _listdir(out)
                  if any(fnmatch.fnmatch(n, str(f)) for f in files)]
    else:
        paths += [Path(f) for f in files]
    return paths


@contextlib.contextmanager
def claim_output(out: str | os.PathLike, *, folder: bool = False, flag: str = "--out",
                 files: Iterable[str | os.PathLike] = (), journal: str | os.PathLike | None = None,
                 keep: Iterable[str | os.PathLike] = ()) -> Iterator[Path]:
    """Check, create and lock an output before any work; after a failure remove what was made.

    On entry: ``out`` must not be of the other kind (a folder where a file
    is expected, or the reverse); its folder and missing parents are
    created; :func:`output_lock` is taken.  Any of these failing is a
    one-line error before anything is computed.

    If the block raises (an error or an interrupt), what this run created
    is removed: for a file, those of ``out`` and ``files`` that did not
    exist; for a folder this run created, everything new in it; for a
    folder that existed, the new entries whose names match ``files`` (other
    programs may be writing there too); then the folders it created, if
    empty.  Files that existed on entry are never deleted.  When
    ``journal`` holds a finished unit, the journal and ``keep`` stay: the
    next run resumes from them.

    Parameters
    ----------
    out : path-like
        The results file, or the output folder.
    folder : bool, default False
        Whether ``out`` is a folder.
    flag : str
        The option that named ``out``, for messages.
    files : iterable of path-like or str
        Further files a file output writes (its CSV, its journal); for a
        folder, the names (``fnmatch`` patterns) of the entries the run
        writes in it.
    journal : path-like, optional
        The run's journal.
    keep : iterable of path-like
        What a resume needs besides the journal.

    Raises
    ------
    InvalidInputError
        If ``out`` has the wrong kind or cannot be created, or if ``out`` or
        an entry of it that the run would write (its lock, ``files``, the
        journal, ``keep``; in a folder, the entries matching ``files``) is a
        symbolic link: a run writes through no link.
    OSError
        If the system refuses to create it (:data:`SYSTEM_REFUSALS`: disk
        full, read-only, permission denied, ...); the error names the path.
    IsoapproxError
        If another run holds the output (:func:`output_lock`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> try:
    ...     with claim_output(d / "new" / "r.json") as out:
    ...         _ = out.write_text("{}")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> list(d.iterdir())
    []
    """
    out = Path(out)
    files, keep = list(files), list(keep)
    _refuse_link(out, flag)
    if folder and out.exists() and not out.is_dir():
        raise InvalidInputError(f"{flag} is a file, not a folder: {str(out)!r}")
    if not folder and out.is_dir():
        raise InvalidInputError(f"{flag} names a folder: {str(out)!r}")
    for p in _own_entries(out, folder, files, journal, keep):
        _refuse_link(p, flag)
    made = _make_folders(out if folder else out.parent, out, flag)
    ok = False
    try:
        with output_lock(out, folder=folder, flag=flag) as lock:
            if folder:
                candidates = None
                patterns = None if out in made else [str(f) for f in files]
                before = set(os.listdir(out))
            else:
                candidates = [out, *(Path(f) for f in files)]
                before = {str(p) for p in candidates if os.path.lexists(p)}
            try:
                yield out
                ok = True
            finally:
                if not ok:
                    kept = set()
                    if journal is not None and _resumable(journal):
                        kept = {os.path.abspath(p) for p in (journal, *keep)}
                    if candidates is None:
                        new = [out / n for n in _listdir(out) if n not in before and (
                            patterns is None or any(fnmatch.fnmatch(n, f) for f in patterns))]
                    else:
                        new = [p for p in candidates if str(p) not in before]
                    for p in new:
                        if os.path.abspath(p) not in kept and p != lock:
                            _remove(p)
    finally:
        if not ok:
            _remove_empty(made)


def _resumable(journal: str | os.PathLike) -> bool:
    """Whether a journal holds finished work (one it cannot read is kept, not deleted)."""
    try:
        return bool(finished_units(journal))
    except (IsoapproxError, OSError, ValueError):
        return True


def _unit(key: Any) -> Any:
    return tuple(_unit(k) for k in key) if isinstance(key, list) else key


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The lines of a JSON-lines journal; a last line cut short by a crash is dropped.

    Raises
    ------
    InvalidInputError
        If a line other than the last is not JSON.
    """
    path = Path(path)
    if not path.exists():
        return []
    with open_regular(path, "journal") as fh:  # not a FIFO or a device
        lines = fh.read().split(b"\n")
    out = []
    for k, raw in enumerate(lines):
        if not raw.strip():
            continue
        rec = decode_jsonl_line(raw)  # None: not UTF-8, not JSON, too deep, not an object
        if rec is None:
            if k >= len(lines) - 2:  # the last (unterminated) line: a crash mid-write
                break
            raise InvalidInputError(
                f"`{path}` line {k + 1} is corrupt (not the last line): {raw[:60]!r}")
        out.append(rec)
    return out


def repair_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a JSON-lines file, rewritten without a torn last line if it has one.

    A process killed in the middle of :func:`append_jsonl` leaves a last line
    without its newline; this drops it (atomically), so that the next append
    starts on a clean line.  A missing file reads as no records.

    Raises
    ------
    InvalidInputError
        If a line other than the last is not JSON.
    """
    path = Path(path)
    records = read_jsonl(path)
    if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        atomic_write_text(path, "".join(json.dumps(r, allow_nan=False) + "\n" for r in records))
    return records


def append_jsonl(path: str | os.PathLike, record: Any, *, fsync: bool = True,
                 follow_symlinks: bool = True, create: bool = True) -> dict[str, Any]:
    """Append ``record`` to a JSON-lines file as one line, written with one ``write``.

    The record is converted by :func:`config_key` (numpy scalars and arrays,
    dataclasses; non-finite floats become ``null``).  A process killed during
    the call leaves at most a torn last line, which :func:`read_jsonl` drops;
    ``fsync`` also survives a crash of the machine.  A write the system
    fails (a full disk) is undone: the file is cut back to its previous
    length and the ``OSError`` names ``path``.  With
    ``follow_symlinks=False`` a symbolic link at ``path`` is refused
    (``OSError`` ``ELOOP``), never written through; with ``create=False`` a
    missing file is (``FileNotFoundError``: it vanished during the run).

    Returns
    -------
    dict
        The record as it reads back.
    """
    rec = config_key(record)
    data = (json.dumps(rec, allow_nan=False) + "\n").encode("utf-8")
    flags = (os.O_WRONLY | os.O_APPEND | _CLOEXEC | (os.O_CREAT if create else 0)
             | (0 if follow_symlinks else _NOFOLLOW))
    fd = os.open(path, flags, 0o666)
    try:
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:  # one write, unless the system takes only part of it
                n = os.write(fd, view)
                if n == 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[n:]
            if fsync:
                os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise _system_error(exc, path) from None
    finally:
        os.close(fd)
    return rec


def finished_units(path: str | os.PathLike) -> set:
    """The keys of the units a journal holds, read without touching it (none if absent)."""
    return {_unit(r["unit"]) for r in read_jsonl(path) if "unit" in r}


class RunJournal:
    """Append-only journal of a run: a header, then one line per finished unit.

    Parameters
    ----------
    path : path-like
        The JSON-lines file (created if missing).
    experiment : str
    config : JSON key
        What every unit depends on besides its own key; a journal with
        another header is refused rather than mixed in.

    Attributes
    ----------
    done : dict
        Finished units: key (lists read back as tuples) -> result, in the
        JSON form it was written in.
    """

    def __init__(self, path: str | os.PathLike, *, experiment: str, config: Any) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        records = repair_jsonl(self.path)
        if not records:
            append_jsonl(self.path, {"kind": "header", "experiment": experiment,
                                     "config": config}, follow_symlinks=False)
        else:
            head = records[0]
            if head.get("kind") != "header" or head.get("experiment") != experiment:
                found = head.get("experiment") if head.get("kind") == "header" else "no header"
                raise InvalidInputError(
                    f"`journal` {str(self.path)!r} is not a journal of a {experiment} run "
                    f"(found: {found}); delete it (or pass --overwrite) to start afresh")
            if head.get("config") != config:
                raise InvalidInputError(
                    f"`journal` {str(self.path)!r} was written for another configuration "
                    f"({_config_difference(head.get('config'), config)}); delete it (or pass "
                    "--overwrite) to start afresh")
        self.done: dict[Any, Any] = {_unit(r["unit"]): r["result"] for r in records[1:]
                                     if "unit" in r}

    def add(self, unit: Any, result: Any) -> None:
        """Record a finished unit (one fsynced line).

        Raises
        ------
        OSError
            If the system fails the write (the journal is left as it was) or
            the journal vanished during the run.
        """
        rec = append_jsonl(self.path, {"unit": unit, "result": result},
                           follow_symlinks=False, create=False)
        self.done[_unit(rec["unit"])] = rec["result"]

    def remove(self) -> None:
        """Delete the journal (the run's results are written)."""
        self.path.unlink(missing_ok=True)


def _config_difference(journal: Any, run: Any) -> str:
    """Which settings differ between a journal's configuration and this run's."""
    if isinstance(journal, dict) and isinstance(run, dict):
        keys = sorted(k for k in journal.keys() | run.keys() if journal.get(k) != run.get(k))
        return "; ".join(f"{k}: journal {journal.get(k)!r}, this run {run.get(k)!r}"
                         for k in keys)
    return f"journal {journal!r}, this run {run!r}"


# ---------------------------------------------------------------------------
# executors
# ---------------------------------------------------------------------------

#: end of the task stream (a task may itself be ``None``)
_END = object()


#: prctl option: the signal a process gets when its parent dies (linux/prctl.h)
_PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int) -> None:  # pragma: no cover - runs in child processes
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(1)


def _die_with_parent(parent: int, pdeathsig: bool) -> None:  # pragma: no cover - in workers
    """End this worker when the process ``parent`` dies (even by SIGKILL).

    On Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` has the kernel kill it at
    once; as it fires when the *thread* that started the worker ends, it is
    used only for pools started by the main thread.  The worker's first
    statements (:data:`_WORKER_PREAMBLE`, run by :class:`_DyingPopen`)
    already set it, before the worker imports anything; this sets it again
    where no preamble ran (a frozen executable).  Everywhere a daemon
    thread also checks ``os.getppid()`` every :data:`PARENT_POLL_S` seconds
    (an orphan is re-parented), and a parent that died before this ran is
    caught at once.
    """
    if pdeathsig and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL),
                                                    0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="isoapprox-parent-watch",
                     daemon=True).start()


#: the first statements of a local worker, run before Python imports anything for it:
#: the kernel's SIGKILL when the starting thread's process dies (Linux, pools started by
#: the main thread), and an exit if that process is already gone
_WORKER_PREAMBLE = """\
import os
if {pdeathsig}:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl({option}, {signum}, 0, 0, 0)
if os.getppid() != {parent}:
    os._exit(1)
"""


def _preamble(pdeathsig: bool) -> str:
    return _WORKER_PREAMBLE.format(pdeathsig=pdeathsig and sys.platform.startswith("linux"),
                                   option=_PR_SET_PDEATHSIG, signum=int(signal.SIGKILL),
                                   parent=os.getpid())


if popen_spawn_posix is not None:

    class _DyingPopen(popen_spawn_posix.Popen):
        """``spawn``'s launcher, with :data:`_WORKER_PREAMBLE` before the worker's first import.

        A spawned worker imports the parent's main module and this package
        before its initializer runs (a second or more on a busy machine); a
        parent killed in that time would leave it running until then.  The
        preamble makes the kernel kill it from its first statement on.  This
        is the standard library's ``popen_spawn_posix.Popen._launch`` (as in
        CPython 3.11) with the ``-c`` program prefixed; tests/test_orphans.py
        checks the outcome.
        """

        def _launch(self, process_obj: Any) -> None:
            tracker_fd = resource_tracker.getfd()
            self._fds.append(tracker_fd)
            prep_data = spawn.get_preparation_data(process_obj._name)
            fp = io.BytesIO()
            set_spawning_popen(self)
            try:
                reduction.dump(prep_data, fp)
                reduction.dump(process_obj, fp)
            finally:
                set_spawning_popen(None)
            parent_r = child_w = child_r = parent_w = None
            try:
                parent_r, child_w = os.pipe()
                child_r, parent_w = os.pipe()
                cmd = spawn.get_command_line(tracker_fd=tracker_fd, pipe_handle=child_r)
                if "-c" in cmd:  # not a frozen executable
                    k = cmd.index("-c") + 1
                    main = threading.current_thread() is threading.main_thread()
                    cmd[k] = _preamble(main) + cmd[k]
                self._fds.extend([child_r, child_w])
                self.pid = util.spawnv_passfds(spawn.get_executable(), cmd, self._fds)
                self.sentinel = parent_r
                with open(parent_w, "wb", closefd=False) as f:
                    f.write(fp.getbuffer())
            finally:
                fds_to_close = [fd for fd in (parent_r, parent_w) if fd is not None]
                self.finalizer = util.Finalize(self, util.close_fds, fds_to_close)
                for fd in (child_r, child_w):
                    if fd is not None:
                        os.close(fd)

    class _DyingProcess(multiprocessing.context.SpawnProcess):
        @staticmethod
        def _Popen(process_obj: Any) -> _DyingPopen:
            return _DyingPopen(process_obj)

    class _DyingContext(multiprocessing.context.SpawnContext):
        """The ``spawn`` context whose workers die with this process from their start."""

        Process = _DyingProcess


def _worker_context() -> Any:
    """The multiprocessing context of local workers (``spawn``: no threads forked)."""
    if popen_spawn_posix is None:  # pragma: no cover
        return multiprocessing.get_context("spawn")
    return _DyingContext()


def _worker_init(parent: int | None = None,
                 pdeathsig: bool = False) -> None:  # pragma: no cover - runs in child processes
    numba.set_num_threads(1)
    # Ctrl-C reaches the whole process group: only the parent handles it (and
    # cancels the queued work), so workers print no tracebacks of their own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        _die_with_parent(parent, pdeathsig)


class _InProcess:
    """Runs each unit at submission, in this process, on one numba and one BLAS thread."""

    slots = 1

    def __init__(self) -> None:
        self._threads = contextlib.ExitStack()
        self._threads.enter_context(quiet_threads())

    def submit(self, fn: Callable, *args: Any) -> cf.Future:
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args))
        except Exception as exc:  # delivered through the future, like the pools
            fut.set_exception(exc)
        return fut

    def close(self, *, cancel: bool = False) -> None:
        self._threads.close()


@contextlib.contextmanager
def _pinned_environment() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _LocalPool:
    """``jobs`` spawned processes, one thread each, all started at once, that die with this one."""

    def __init__(self, jobs: int, warmup: Callable[[], Any] | None) -> None:
        self.slots = 2 * jobs
        with _pinned_environment():  # the workers inherit it at start
            self._ex = cf.ProcessPoolExecutor(
                max_workers=jobs, mp_context=_worker_context(),
                initializer=_worker_init,
                initargs=(os.getpid(), threading.current_thread() is threading.main_thread()))
            try:
                for f in [self._ex.submit(warmup or os.getpid) for _ in range(jobs)]:
                    f.result()
            except BaseException:
                self._ex.shutdown(wait=False, cancel_futures=True)
                raise

    def submit(self, fn: Callable, *args: Any) -> cf.Future:
        return self._ex.submit(fn, *args)

    def close(self, *, cancel: bool = False) -> None:
        # every result is in hand (or the run failed): let the workers exit in the background
        self._ex.shutdown(wait=False, cancel_futures=cancel)


class _Dask:
    """Units on a dask.distributed cluster, through its concurrent.futures executor."""

    def __init__(self, client: Any, address: str | None, timeout: float) -> None:
        distributed = _lazy.distributed()
        self._own = client is None
        if client is None:
            try:
                client = distributed.Client(address, timeout=timeout, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as exc:
                msg = " ".join(str(exc).split())
                raise IsoapproxError(f"could not connect to the Dask scheduler at {address!r} "
                                     f"within {timeout:g} s: {msg}") from None
        self.client = client
        self._ex = client.get_executor(pure=False)
        self.slots = 2 * (sum(client.nthreads().values()) or 1)

    def submit(self, fn: Callable, *args: Any) -> cf.Future:
        return self._ex.submit(fn, *args)

    def close(self, *, cancel: bool = False) -> None:
        try:
            self._ex.shutdown(wait=not cancel)
        finally:
            if self._own:
                self.client.close()


def executor(jobs: int = 1, *, scheduler: str | None = None, client: Any = None,
             timeout: float = 10.0, warmup: Callable[[], Any] | None = None):
    """Where units run: this process, ``jobs`` local processes, or a Dask cluster.

    Parameters
    ----------
    jobs : int, default 1
        Local worker processes; ``1`` runs every unit in this process.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``); overrides ``jobs``.
    client : distributed.Client, optional
        An existing Dask client (for instance on a ``LocalCluster``).
    timeout : float, default 10
        Seconds to wait for the scheduler.
    warmup : callable, optional
        Run once in every local worker at start (load compiled kernels).

    Returns
    -------
    executor
        An object with ``slots`` (units worth keeping in flight),
        ``submit(fn, *args) -> Future`` and ``close(cancel=...)``.
    """
    if client is not None or scheduler is not None:
        return _Dask(client, scheduler, timeout)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidInputError(f"`jobs` must be an integer >= 1; got {jobs!r}")
    return _InProcess() if jobs == 1 else _LocalPool(jobs, warmup)


def run_units(fn: Callable[[Any], Any], tasks: Iterable[Any], ex: Any,
              done: Callable[[Any], None]) -> int:
    """Run ``fn(task)`` for every task on ``ex``; ``done(result)`` as each finishes.

    At most ``ex.slots`` units are in flight; ``done`` runs in this process
    (it writes the journal), in completion order.  On an error or an
    interrupt the queued units are cancelled and the executor is closed;
    what ``done`` recorded is kept.

    Returns
    -------
    int
        The number of units run.
    """
    it = iter(tasks)
    pending: set = set()
    n = 0
    ok = False
    try:
        while True:
            while len(pending) < ex.slots:
                task = next(it, _END)
                if task is _END:
                    break
                pending.add(ex.submit(fn, task))
            if not pending:
                break
            finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                done(fut.result())
                n += 1
        ok = True
    finally:
        ex.close(cancel=not ok)
    return n


