"""The batch engine: chunks of configurations as tasks, local or on Dask.

See docs/dev/batch_design.md ("isoapprox.batch.engine: notes").
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import math
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_instance
from ..exceptions import InvalidInputError, IsoapproxError
from ..io import (
    atomic_write_bytes,
    atomic_write_text,
    atomic_writer,
    file_sha256,
    open_regular,
    provenance,
    write_results,
)
from ..runs import RunJournal, claim_output, executor, progress_bar, run_units
from .cheap import cheap_quantities
from .generators import GeneratorOptions, config_generator, generate
from .grid import BatchConfig, Cell
from .stages import PARAM_COLUMNS, Column, Stage
from .summary import summarise, summarise_values, summary_values
from .table import encode_rows, header, to_internal

__all__ = [
    "BatchResult",
    "ChunkOutput",
    "ChunkTask",
    "claim_batch_output",
    "evaluate_chunk",
    "plan",
    "run_batch",
    "run_chunk",
]

log = logging.getLogger("isoapprox.batch")

RUN_FILE = "run.json"
JOURNAL_FILE = "journal.jsonl"
PARTS_DIR = "parts"
SUMMARY_FILE = "summary.json"


# ---------------------------------------------------------------------------
# tasks
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkTask:
    """Everything a worker needs to compute one chunk (picklable)."""

    chunk: int
    cell_index: int
    cell: Cell
    start: int
    stop: int
    repetitions: int
    seed: int
    options: GeneratorOptions
    stages: tuple[Stage, ...]
    columns: tuple[Column, ...]
    format: str


@dataclass(frozen=True)
class ChunkOutput:
    """A finished chunk: its encoded rows (no header) and its summary values.

    ``values`` is a float64 array ``(rows, k)`` of the columns
    :func:`~isoapprox.batch.summary.summary_columns` names (numbers, flags,
    and 1.0/0.0 for "this text column is non-empty"), so the driver
    summarises a run without parsing the text table.
    """

    chunk: int
    rows: int
    payload: bytes
    values: np.ndarray
    seconds: float


def plan(config: BatchConfig) -> list[ChunkTask]:
    """All chunk tasks of a run, in chunk order."""
    stages = config.resolved_stages()
    columns = config.columns()
    return [
        ChunkTask(k, c, cell, start, stop, config.grid.repetitions, config.seed,
                  config.options, stages, columns, config.format)
        for k, c, cell, start, stop in config.chunks()
    ]


def _missing(dtype: str):
    return "" if dtype == "str" else np.nan


def evaluate_chunk(task: ChunkTask) -> dict[str, np.ndarray]:
    """Generate a chunk's configurations and evaluate every stage.

    Returns the columns in the internal representation (float64 with NaN
    for missing numeric/bool values, object arrays for text).
    """
    cell = task.cell
    reps = np.arange(task.start, task.stop, dtype=np.int64)
    B = reps.shape[0]
    X, codes = generate(cell.distribution, cell.n_points, cell.dim, cell.n_classes, cell.layout,
                        reps, seed=task.seed, margin=cell.margin, options=task.options)
    cols: dict[str, np.ndarray] = {
        "config": (task.cell_index * task.repetitions + reps).astype(np.float64),
        "cell": np.full(B, float(task.cell_index)),
        "rep": reps.astype(np.float64),
    }
    for c in PARAM_COLUMNS[3:]:  # the cell's parameters, its attributes of the same names
        v = getattr(cell, c.name)
        cols[c.name] = np.full(B, v, dtype=object) if c.dtype == "str" else np.full(B, float(v))
    words = cell.words()
    for st in task.stages:
        if st.kind == "vector":
            out = st.func(X, codes, cell.margin, dict(cols))
            _check_keys(st, out)
            for c in st.columns:
                cols[c.name] = to_internal(out[c.name], c, B)
            continue
        store = {c.name: np.full(B, _missing(c.dtype), dtype=object if c.dtype == "str" else float)
                 for c in st.output_columns()}
        names = list(cols)
        for b in range(B):
            prev = {k: cols[k][b] for k in names}
            rng = config_generator(task.seed, words, int(reps[b]), st.word)
            try:
                out = st.func(X[b], codes[b], cell.margin, prev, rng)
            except IsoapproxError as exc:
                msg = " ".join(str(exc).split()) or type(exc).__name__
                store[st.error_column.name][b] = f"{type(exc).__name__}: {msg}"
                continue
            _check_keys(st, out)
            for c in st.columns:
                v = out[c.name]
                store[c.name][b] = ("" if v is None else str(v)) if c.dtype == "str" else (
                    np.nan if v is None else float(v))
        for c in st.output_columns():
            cols[c.name] = store[c.name]
    return cols


def _check_keys(stage: Stage, out: Any) -> None:
    if not hasattr(out, "keys"):
        raise IsoapproxError(
            f"stage {stage.name!r} must return a mapping of its columns; got {type(out).__name__}"
        )
    want = {c.name for c in stage.columns}
    got = set(out.keys())
    if got != want:
        raise IsoapproxError(
            f"stage {stage.name!r} must return exactly its columns {sorted(want)}; "
            f"missing {sorted(want - got)}, unexpected {sorted(got - want)}"
        )


def run_chunk(task: ChunkTask) -> ChunkOutput:
    """Compute one chunk and encode its rows (the task every executor runs)."""
    t0 = time.perf_counter()
    cols = evaluate_chunk(task)
    payload = encode_rows(cols, task.columns, task.format)
    values = summary_values(cols, task.columns)
    return ChunkOutput(task.chunk, task.stop - task.start, payload, values,
                       time.perf_counter() - t0)


def _worker_ready() -> int:
    """Warm-up of a local worker: load the compiled kernels."""
    X, codes = generate("gaussian", 3, 2, 2, "balanced", [0])
    cheap_quantities(X, codes)
    return os.getpid()


# ---------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchResult:
    """What :func:`run_batch` did.

    Attributes
    ----------
    out : Path
        The output folder.
    results : Path
        The tidy table (``results.csv`` or ``results.jsonl``).
    summary_path : Path
        ``summary.json`` (per-cell summary with configuration and versions).
    n_rows, n_chunks : int
        Configurations and chunks of the run.
    computed, reused : int
        Chunks computed by this call and taken from the journal.
    seconds : float
        Wall time of this call.
    summary : list of dict
        The per-cell summary records.
    """

    out: Path
    results: Path
    summary_path: Path
    n_rows: int
    n_chunks: int
    computed: int
    reused: int
    seconds: float
    summary: list = field(repr=False)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _part_path(out: Path, chunk: int, fmt: str) -> Path:
    return out / PARTS_DIR / f"chunk-{chunk:08d}.{fmt}"


def _values_path(out: Path, chunk: int) -> Path:
    return out / PARTS_DIR / f"chunk-{chunk:08d}.npy"


def _npy_pieces(values: np.ndarray) -> tuple[bytes, memoryview]:
    """The ``.npy`` file of ``values`` as its header and its data (not copied):
    ``head + bytes(data)`` is what ``np.save`` writes."""
    arr = np.ascontiguousarray(values)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, np.lib.format.header_data_from_array_1_0(arr))
    return buf.getvalue(), memoryview(arr.reshape(-1).view(np.uint8))


def _clear(out: Path, results: Path) -> None:
    for name in (RUN_FILE, JOURNAL_FILE, SUMMARY_FILE, "summary.csv"):
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()
    with contextlib.suppress(FileNotFoundError):
        results.unlink()
    parts = out / PARTS_DIR
    if parts.is_dir() and not parts.is_symlink():
        for p in parts.glob("chunk-*"):
            p.unlink()


def _make_parts(out: Path) -> Path:
    """``out/parts``, created if missing; a link or a file there is refused, never followed."""
    parts = out / PARTS_DIR
    try:
        parts.mkdir()
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(parts).st_mode):
            raise InvalidInputError(
                f"{str(parts)!r} is not a folder (a symbolic link or a file); the chunks of "
                "a batch run are written only into a real folder: remove it") from None
    return parts


def _is_plain_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


class _TableHash:
    """SHA-256 of the final table, fed with the chunks' rows as they finish.

    Chunks that finish ahead of their turn wait in memory (at most
    ``limit`` bytes; beyond that the hash is given up and
    :func:`_assemble` hashes the table as it writes it).
    """

    def __init__(self, head: bytes, limit: int = 1 << 26) -> None:
        self._h = hashlib.sha256(head)
        self._next = 0
        self._waiting: dict[int, bytes] = {}
        self._size = 0
        self._limit = limit
        self.ok = True

    def add(self, chunk: int, payload: bytes) -> None:
        if not self.ok:
            return
        if chunk != self._next:
            self._waiting[chunk] = payload
            self._size += len(payload)
            if self._size > self._limit:
                self.ok = False
                self._waiting.clear()
            return
        self._h.update(payload)
        self._next += 1
        while self._next in self._waiting:
            data = self._waiting.pop(self._next)
            self._size -= len(data)
            self._h.update(data)
            self._next += 1

    def hexdigest(self, n_chunks: int) -> str | None:
        """The table's SHA-256 if every chunk was fed, else None."""
        return self._h.hexdigest() if self.ok and self._next == n_chunks else None


class _PartChanged(Exception):
    """A part's size is not the journaled one (:func:`_assemble` starts again)."""


#: errors of ``os.copy_file_range`` after which a part is copied through Python
_NO_COPY_RANGE = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP,
                  getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


def _copy_part(src: Path, fh) -> int:
    """Append the file ``src`` to the open binary file ``fh``; the bytes copied.

    The kernel copies it (``os.copy_file_range``) where it can, else Python.
    """
    fh.flush()
    copied = 0
    with open_regular(src, "batch part", own=True) as fs:
        left = os.fstat(fs.fileno()).st_size
        copy_range = getattr(os, "copy_file_range", None)
        while left > 0 and copy_range is not None:
            try:
                k = copy_range(fs.fileno(), fh.fileno(), left)
            except OSError as exc:
                if exc.errno not in _NO_COPY_RANGE:
                    raise
                break
            if k == 0:
                break
            copied += k
            left -= k
        if left > 0:  # what is left, through Python
            data = fs.read()
            fh.write(data)
            fh.flush()
            copied += len(data)
    return copied


def _assemble(out: Path, results: Path, config: BatchConfig, sha: str | None = None,
              sizes: dict[int, int] | None = None) -> str:
    """Concatenate the parts in chunk order into ``results`` atomically; its SHA-256.

    With ``sha`` (the hash of the rows as the chunks finished, see
    :class:`_TableHash`) and the parts' ``sizes``, the parts are copied by
    the kernel without being read here; a part whose size is not the one
    recorded makes it start again, reading and hashing every part.
    """
    head = header(config.columns(), config.format)
    if sha is not None and sizes is not None:
        try:
            with atomic_writer(results) as fh:  # an exception discards the temporary
                fh.write(head)
                for k in range(config.n_chunks):
                    if _copy_part(_part_path(out, k, config.format), fh) != sizes.get(k):
                        raise _PartChanged(k)
            return sha
        except _PartChanged as exc:
            log.warning("part %d of %s changed during the run; hashing the parts", exc.args[0],
                        out)
    h = hashlib.sha256()
    with atomic_writer(results) as fh:
        fh.write(head)
        h.update(head)
        for k in range(config.n_chunks):
            with open_regular(_part_path(out, k, config.format), "batch part", own=True) as fp:
                data = fp.read()
            fh.write(data)
            h.update(data)
    return h.hexdigest()


def run_batch(
    config: BatchConfig,
    out: str | os.PathLike,
    *,
    jobs: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    progress: bool = False,
    overwrite: bool = False,
    keep_parts: bool = False,
    connect_timeout: float = 10.0,
) -> BatchResult:
    """Evaluate every configuration of ``config`` and write the results to ``out``.

    Parameters
    ----------
    config : BatchConfig
        Grid, seed, stages, chunk size, generator options and format.
    out : path-like
        Output folder (created).  If it holds an unfinished run of the same
        configuration, that run is resumed; a finished one is not recomputed.
    jobs : int, optional
        Local worker processes (default: one per core); ``1`` runs every
        chunk in this process.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``); overrides
        ``jobs``.
    client : distributed.Client, optional
        An existing Dask client (for instance on a ``LocalCluster``).
    progress : bool, default False
        Show a progress bar (tqdm, on stderr).
    overwrite : bool, default False
        Discard a previous run in ``out`` instead of resuming or refusing.
    keep_parts : bool, default False
        Keep ``out/parts/`` after the final table is written.
    connect_timeout : float, default 10
        Seconds to wait for the Dask scheduler.

    Returns
    -------
    BatchResult

    Raises
    ------
    IsoapproxError
        If ``out`` holds a run of another configuration (without
        ``overwrite``), another process is writing it, or the Dask
        scheduler is unreachable or dask.distributed is missing.

    Notes
    -----
    ``out`` is locked for the call (:func:`isoapprox.runs.claim_output`);
    if the call fails before a chunk is finished, what it created in
    ``out`` is removed, else the journal, ``run.json`` and ``parts/`` stay
    for the next call to resume from.
    """
    check_instance(config, BatchConfig, "config")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise IsoapproxError(f"`jobs` must be an integer >= 1; got {jobs!r}")
    if Path(out).exists() and not Path(out).is_dir():
        raise IsoapproxError(f"`out` must be a folder; {out} is a file")
    with claim_batch_output(out, flag="`out`"):
        return _run_batch(config, Path(out), jobs=jobs, scheduler=scheduler, client=client,
                          progress=progress, overwrite=overwrite, keep_parts=keep_parts,
                          connect_timeout=connect_timeout)


#: what a run writes in its folder (a failed run removes the new ones)
_RUN_FILES = (RUN_FILE, JOURNAL_FILE, PARTS_DIR, "summary.*", "results.*", ".results.*",
              "best_*.json", ".*.tmp")


def claim_batch_output(out: str | os.PathLike, *, flag: str = "--out"):
    """:func:`isoapprox.runs.claim_output` of a batch run folder (a context manager).

    Checks, creates and locks ``out``; after a failure removes what the run
    created, except the journal, ``run.json`` and ``parts/`` when a chunk
    was finished (a rerun resumes from them).
    """
    out = Path(out)
    return claim_output(out, folder=True, flag=flag, journal=out / JOURNAL_FILE,
                        keep=(out / RUN_FILE, out / PARTS_DIR), files=_RUN_FILES)


def _run_batch(config: BatchConfig, out: Path, *, jobs, scheduler, client, progress, overwrite,
               keep_parts, connect_timeout) -> BatchResult:
    t0 = time.perf_counter()
    results = out / f"results.{config.format}"
    fp = config.fingerprint()
    if overwrite:
        _clear(out, results)
    run_file = out / RUN_FILE
    if run_file.exists():
        try:
            previous = json.loads(run_file.read_text(encoding="utf-8")).get("fingerprint")
        except (json.JSONDecodeError, AttributeError):
            previous = None
        if previous != fp:
            raise IsoapproxError(
                f"{out} holds a run of another configuration (fingerprint "
                f"{str(previous)[:12]}, this one {fp[:12]}); pass --overwrite "
                f"(overwrite=True) or choose another output folder"
            )
    else:
        if (out / JOURNAL_FILE).exists():
            raise IsoapproxError(
                f"{out} holds a journal without {RUN_FILE}; pass --overwrite "
                f"(overwrite=True) or choose another output folder"
            )
        atomic_write_text(run_file, json.dumps({
            "fingerprint": fp,
            "config": config.to_dict(),
            "columns": [[c.name, c.dtype, c.description] for c in config.columns()],
            "skipped_cells": list(config.grid.skipped),
            "provenance": provenance(),
        }, indent=1) + "\n")
    journal = RunJournal(out / JOURNAL_FILE, experiment="batch", config=fp)
    n_chunks = config.n_chunks
    complete = journal.done.get("complete")
    finished = (complete is not None and _is_plain_file(results)
                and file_sha256(results, "batch part", own=True) == complete.get("sha256"))
    computed = 0
    reused = n_chunks
    sha = complete.get("sha256") if finished else None
    if not finished:
        done: set[int] = set()
        for chunk, rec in journal.done.items():
            if chunk == "complete":
                continue
            p = _part_path(out, chunk, config.format)
            v = _values_path(out, chunk)
            if (_is_plain_file(p) and _is_plain_file(v) and p.stat().st_size == rec["bytes"]
                    and file_sha256(p, "batch part", own=True) == rec["sha256"]
                    and file_sha256(v, "batch part", own=True) == rec.get("values_sha256")):
                done.add(chunk)
        reused = len(done)
        todo = [t for t in plan(config) if t.chunk not in done]
        if done:
            log.info("resuming %s: %d of %d chunks already done", out, len(done), n_chunks)
        _make_parts(out)
        table_hash = None if done else _TableHash(header(config.columns(), config.format))
        computed = _drive(todo, config, out, journal, jobs, scheduler, client,
                          connect_timeout, progress, done_rows=_rows_of(config, done),
                          table_hash=table_hash)
        sizes = {k: rec["bytes"] for k, rec in journal.done.items() if k != "complete"}
        sha = _assemble(out, results, config,
                        sha=table_hash.hexdigest(n_chunks) if table_hash else None, sizes=sizes)
        summary = summarise_values(
            (np.load(_values_path(out, k), allow_pickle=False) for k in range(n_chunks)), config)
        journal.add("complete", {"rows": config.grid.n_configurations, "sha256": sha})
        if not keep_parts:
            shutil.rmtree(out / PARTS_DIR, ignore_errors=True)
    else:
        summary = _previous_summary(out, fp, complete.get("sha256"))
        if summary is None:  # parse the table (slow path)
            summary = summarise(results, config)
    elapsed = time.perf_counter() - t0
    summary_path = write_results(
        out / SUMMARY_FILE, experiment="batch", config=config.to_dict(), records=summary,
        seed=config.seed,
        extra={
            "fingerprint": fp,
            "results_file": results.name,
            "results_sha256": sha,
            "n_configurations": config.grid.n_configurations,
            "columns": [[c.name, c.dtype, c.description] for c in config.columns()],
            "skipped_cells": list(config.grid.skipped),
            "chunks_computed": computed,
            "chunks_reused": reused,
            "elapsed_s": elapsed,
        },
    )
    return BatchResult(out, results, summary_path, config.grid.n_configurations, n_chunks,
                       computed, reused, elapsed, summary)


def _previous_summary(out: Path, fp: str, results_sha: str | None) -> list | None:
    """The records of ``summary.json`` if it belongs to this finished run."""
    try:
        doc = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if doc.get("fingerprint") != fp or doc.get("results_sha256") != results_sha:
        return None
    records = doc.get("records")
    if not isinstance(records, list):
        return None
    # JSON stores NaN as null
    return [{k: (math.nan if v is None else v) for k, v in r.items()} for r in records]


def _rows_of(config: BatchConfig, chunks: set[int]) -> int:
    return sum(stop - start for k, _, _, start, stop in config.chunks() if k in chunks)


def _drive(todo, config, out, journal, jobs, scheduler, client, timeout, progress,
           done_rows: int, table_hash: _TableHash | None = None) -> int:
    """Run the tasks through an executor, recording each finished chunk (and
    feeding its rows to ``table_hash``)."""
    if not todo:
        return 0
    bar = progress_bar(progress, config.grid.n_configurations, "isoapprox batch",
                       initial=done_rows, unit="cfg", log=log)

    def finish(res: ChunkOutput) -> None:
        head, data = _npy_pieces(res.values)
        npy_hash = hashlib.sha256(head)
        npy_hash.update(data)
        files = (_values_path(out, res.chunk), _part_path(out, res.chunk, config.format))
        try:
            with atomic_writer(files[0]) as fh:
                fh.write(head)
                fh.write(data)
            atomic_write_bytes(files[1], res.payload)
            journal.add(res.chunk, {"rows": res.rows, "bytes": len(res.payload),
                                    "sha256": _sha256(res.payload),
                                    "values_sha256": npy_hash.hexdigest(),
                                    "seconds": round(res.seconds, 6)})
        except BaseException:  # a chunk is its files and its journal line, or nothing
            for p in files:
                with contextlib.suppress(OSError):
                    p.unlink()
            raise
        if table_hash is not None:
            table_hash.add(res.chunk, res.payload)
        bar.update(res.rows)

    try:
        ex = executor(jobs or os.cpu_count() or 1, scheduler=scheduler, client=client,
                      timeout=timeout, warmup=_worker_ready)
        return run_units(run_chunk, todo, ex, finish)
    finally:
        bar.close()
