"""Parameter sweeps over training configurations: seeded, resumable, parallel.

See docs/dev/train_design.md ("isoapprox.train.sweep: notes").
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int
from ..exceptions import InvalidInputError
from ..io import to_jsonable, write_results
from ..runs import RunJournal, config_key, executor, progress_bar, run_units
from .trainer import Callback, TrainConfig, Trainer, limit_threads

__all__ = [
    "Cell",
    "RuntimeEstimate",
    "SweepResult",
    "cell_seed",
    "estimate_runtime",
    "expand_grid",
    "run_cell",
    "run_sweep",
    "write_sweep_results",
]

logger = logging.getLogger(__name__)

#: significant digits of the triplet-diagram values stored in results
DIAGRAM_DIGITS = 6


@dataclass(frozen=True)
class Cell:
    """One configuration and replicate of a sweep."""

    config: TrainConfig
    replicate: int = 0

    @property
    def cell_id(self) -> str:
        """Stable 16-hex-digit id: a hash of the configuration and replicate."""
        text = json.dumps(
            {"config": to_jsonable(self.config.to_dict()), "replicate": self.replicate},
            sort_keys=True,
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cell_seed(root_seed: int, replicate: int) -> np.random.SeedSequence:
    """The seed of every cell with this replicate (see docs/dev/train_design.md)."""
    return np.random.SeedSequence(int(root_seed), spawn_key=(int(replicate),))


def expand_grid(
    base: TrainConfig,
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    variants: Sequence[Mapping[str, Any]] = ({},),
    replicates: Sequence[int] = (0,),
) -> list[Cell]:
    """The cells of a grid, in a fixed order.

    Parameters
    ----------
    base : TrainConfig
        Values of every field not swept.
    grid : mapping of field name to sequence of values
        Swept fields; the product is taken in the mapping's order (the last
        field varies fastest).
    variants : sequence of mappings
        Coupled settings applied on top of each grid point (for example
        ``{"loss": "selectively_contrastive", "normalize": True}``); the
        grid is crossed with every variant.
    replicates : sequence of int
        Replicate indices (seeds).

    Returns
    -------
    list of Cell
        Duplicates (same configuration and replicate) are dropped.

    Raises
    ------
    InvalidInputError
        For an unknown field, an empty list of values, or a value the
        configuration rejects.
    """
    grid = dict(grid or {})
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    for key in list(grid) + [k for v in variants for k in v]:
        if key not in names:
            raise InvalidInputError(
                f"grid field {key!r} is not a TrainConfig field; valid fields: "
                f"{sorted(names)}"
            )
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or len(values) == 0:
            raise InvalidInputError(
                f"grid field {key!r} must list at least one value; got {values!r}"
            )
    reps = [check_int(r, "replicates", minimum=0) for r in replicates]
    if not reps:
        raise InvalidInputError("`replicates` must list at least one replicate index")
    cells: list[Cell] = []
    seen: set[str] = set()
    keys = list(grid)
    for combo in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, combo, strict=True))
        for variant in variants:
            cfg = dataclasses.replace(base, **{**point, **variant})
            for r in reps:
                cell = Cell(cfg, r)
                if cell.cell_id not in seen:
                    seen.add(cell.cell_id)
                    cells.append(cell)
    return cells


def run_cell(
    cell: Cell, root_seed: int, callbacks: Sequence[Callback] = ()
) -> dict[str, Any]:
    """Train one cell; returns its journal entry (JSON-ready).

    The entry holds ``cell_id``, ``replicate``, ``root_seed``, the seed's
    ``spawn_key``, the ``config``, the flat ``summary`` record, the
    ``history`` and the triplet ``diagrams`` (at most ``diagram_size``
    anchors each, values to :data:`DIAGRAM_DIGITS` significant digits).
    """
    seed = cell_seed(root_seed, cell.replicate)
    result = Trainer(cell.config, seed=seed, callbacks=callbacks).run(threads=1)
    ids = {"cell_id": cell.cell_id, "replicate": cell.replicate, "root_seed": int(root_seed)}
    return config_key({  # the exact form a journal line is read back in
        **ids,
        "spawn_key": list(seed.spawn_key),
        "config": cell.config.to_dict(),
        "summary": {**ids, **result.summary()},
        "history": result.history,
        "diagrams": {k: v.to_dict(max_anchors=cell.config.diagram_size, digits=DIAGRAM_DIGITS)
                     for k, v in result.diagrams.items()},
    })


@dataclass(frozen=True)
class SweepResult:
    """Entries of a sweep in grid order.

    Attributes
    ----------
    entries : list of dict
        One journal entry per cell (see :func:`run_cell`).
    n_computed, n_resumed : int
        Cells trained by this call, and cells taken from the journal.
    """

    entries: list[dict[str, Any]]
    n_computed: int
    n_resumed: int

    @property
    def records(self) -> list[dict[str, Any]]:
        """The flat summary records (one per cell)."""
        return [e["summary"] for e in self.entries]


def run_sweep(
    cells: Sequence[Cell],
    *,
    root_seed: int,
    journal: str | os.PathLike | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    client: Any = None,
    connect_timeout: float = 10.0,
    progress: bool = False,
    callbacks: Sequence[Callback] = (),
    on_cell_done: Callable[[dict[str, Any], int], None] | None = None,
) -> SweepResult:
    """Train every cell not yet in the journal; return all entries in grid order.

    Parameters
    ----------
    cells : sequence of Cell
    root_seed : int
        Root of every cell's seed (see :func:`cell_seed`).
    journal : path or None
        Where finished cells are recorded (``None``: nowhere, no resuming).
    jobs : int, default 1
        Worker processes.  With ``jobs > 1`` (or on Dask) the ``callbacks``
        must be picklable (module-level functions).
    scheduler, client, connect_timeout
        Run on a Dask cluster (:func:`isoapprox.runs.executor`).
    progress : bool
        A progress bar over the cells.
    callbacks : sequence of callables
        Logging hooks passed to every cell's trainer.
    on_cell_done : callable, optional
        ``on_cell_done(entry, n_finished)`` after each cell is journalled
        (an exception raised there stops the sweep; the journal keeps every
        finished cell).

    Returns
    -------
    SweepResult

    Raises
    ------
    InvalidInputError
        If the journal was written with another root seed.
    """
    jobs = check_int(jobs, "jobs", minimum=1)
    root_seed = check_int(root_seed, "root_seed", minimum=0)
    jr = (None if journal is None else
          RunJournal(journal, experiment="train", config={"root_seed": root_seed}))
    ids = [c.cell_id for c in cells]
    done = {} if jr is None else {i: jr.done[i] for i in ids if i in jr.done}
    todo = [c for c in cells if c.cell_id not in done]
    n_resumed = len(cells) - len(todo)
    if n_resumed:
        logger.info("resuming: %d of %d cells already in the journal", n_resumed, len(cells))
    results: dict[str, dict[str, Any]] = {}
    bar = progress_bar(progress, len(cells), "cells", initial=n_resumed, unit="cell",
                       log=logger)

    def finish(entry: dict[str, Any]) -> None:
        if jr is not None:
            jr.add(entry["cell_id"], entry)
        results[entry["cell_id"]] = entry
        bar.update(1)
        s = entry["summary"]
        logger.debug("cell %s done: %s N=%s n=%s -> diameter %.4g (%.1f s)", entry["cell_id"],
                     s.get("loss"), s.get("batch_size"), s.get("embedding_dim"),
                     s.get("final_eval_diameter") or float("nan"), s.get("seconds") or 0.0)
        if on_cell_done is not None:
            on_cell_done(entry, n_resumed + len(results))

    try:
        ex = executor(jobs if len(todo) > 1 else 1, scheduler=scheduler, client=client,
                      timeout=connect_timeout)
        run_units(_run_cell_task, [(c, root_seed, tuple(callbacks)) for c in todo], ex, finish)
    finally:
        bar.close()
    entries = [done[i] if i in done else results[i] for i in ids]
    return SweepResult(entries, len(results), n_resumed)


def _run_cell_task(task: tuple[Cell, int, tuple[Callback, ...]]) -> dict[str, Any]:
    """One unit of work (top level, so executors can pickle it)."""
    return run_cell(*task)


@dataclass(frozen=True)
class RuntimeEstimate:
    """Predicted wall-clock time of a sweep.

    Attributes
    ----------
    seconds : float
        Serial time of the cells still to run.
    per_cell : list of float
        Prediction per cell (0 for cells already done).
    jobs : int
        Worker processes assumed by :attr:`wall_seconds`.
    """

    seconds: float
    per_cell: list[float]
    jobs: int

    @property
    def wall_seconds(self) -> float:
        """``seconds / jobs``, but never less than the longest cell."""
        longest = max(self.per_cell, default=0.0)
        return max(self.seconds / self.jobs, longest)


def estimate_runtime(
    cells: Sequence[Cell],
    *,
    probe_steps: int = 8,
    jobs: int = 1,
    skip: set[str] | None = None,
) -> RuntimeEstimate:
    """Time a few steps of representative cells and extrapolate.

    For each (data set, model, hidden widths, batch size, loss) the cells
    with the smallest and the largest embedding dimension are probed:
    ``probe_steps`` updates and one evaluation, after one untimed warm-up
    step.  The cost of a step is affine in the dimension ``n`` (distance
    kernels, last layer), so other dimensions are interpolated linearly, and
    a cell is predicted as ``steps * t_step + (steps / log_every + 2) * t_eval``.
    The probes take a few seconds for the default collapse grid.

    Parameters
    ----------
    cells : sequence of Cell
    probe_steps : int, default 8
    jobs : int, default 1
    skip : set of str, optional
        Ids of finished cells (predicted 0).
    """
    probe_steps = check_int(probe_steps, "probe_steps", minimum=1)
    jobs = check_int(jobs, "jobs", minimum=1)
    skip = skip or set()

    def key(c: TrainConfig):
        return (c.dataset, c.model, c.hidden, c.batch_size, c.loss, c.samples_per_class)

    todo = [c for c in cells if c.cell_id not in skip]
    extremes: dict[Any, dict[int, TrainConfig]] = {}
    for cell in todo:
        dims = extremes.setdefault(key(cell.config), {})
        dims[cell.config.embedding_dim] = cell.config
    timing: dict[tuple, tuple[float, float]] = {}
    with limit_threads(1):
        for k, dims in extremes.items():
            for n in {min(dims), max(dims)}:
                tr = Trainer(dims[n], seed=0)
                tr.step()
                t0 = time.perf_counter()
                for _ in range(probe_steps):
                    tr.step()
                t_step = (time.perf_counter() - t0) / probe_steps
                t0 = time.perf_counter()
                tr.evaluate()
                timing[k + (n,)] = (t_step, time.perf_counter() - t0)

    def predict(c: TrainConfig) -> float:
        dims = extremes[key(c)]
        lo, hi = min(dims), max(dims)
        a, b = timing[key(c) + (lo,)], timing[key(c) + (hi,)]
        w = 0.0 if hi == lo else (c.embedding_dim - lo) / (hi - lo)
        t_step = (1 - w) * a[0] + w * b[0]
        t_eval = (1 - w) * a[1] + w * b[1]
        return c.steps * t_step + (c.steps / c.log_every + 2) * t_eval

    per_cell = [0.0 if cell.cell_id in skip else predict(cell.config) for cell in cells]
    return RuntimeEstimate(float(sum(per_cell)), per_cell, jobs)


def write_sweep_results(
    path: str | os.PathLike,
    result: SweepResult,
    *,
    experiment: str,
    config: Mapping[str, Any],
    root_seed: int,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write a sweep atomically: JSON (records, histories, diagrams) and CSV (records).

    The JSON's ``records`` are the flat summaries; ``histories`` and
    ``triplet_diagrams`` map each ``cell_id`` to its logged records and
    diagram data; ``seed`` describes the seed derivation.
    """
    more = {
        "histories": {e["cell_id"]: e["history"] for e in result.entries},
        "triplet_diagrams": {e["cell_id"]: e["diagrams"] for e in result.entries},
        **(extra or {}),
    }
    seed = {
        "root_seed": int(root_seed),
        "derivation": "numpy.random.SeedSequence(root_seed, spawn_key=(replicate,)); "
        "spawned into data, init, sampler and evaluation streams",
    }
    return write_results(
        path,
        experiment=experiment,
        config=config,
        records=result.records,
        seed=seed,
        extra=more,
    )
