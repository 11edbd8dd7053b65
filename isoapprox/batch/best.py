"""The best configurations of a finished batch run, by one column.

An adversarial search (``--distributions adversarial --objective c``) is
only useful if what it found is kept: :func:`best_rows` picks the ``k``
rows with the largest (or smallest) value of a column from a result table
and attaches each configuration's coordinates and labels, taken from the
``points`` stage's columns when the run had it, otherwise regenerated from
the root seed (which, for an adversarial cell, reruns the search: add the
``points`` stage to such runs).  :func:`save_best` writes them as a results
document (experiment ``batch_best``) next to the table.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int
from ..exceptions import InvalidInputError
from ..io import write_results
from .generators import generate
from .grid import BatchConfig
from .table import iter_cells, row_value

__all__ = ["BEST_FILE", "OBJECTIVE_COLUMNS", "best_rows", "check_best_column", "save_best"]

#: file name pattern of :func:`save_best` in the run folder
BEST_FILE = "best_{column}.json"

#: adversarial objective -> the result column that measures it (``isoapprox
#: batch`` saves the best rows by it when the grid has adversarial cells)
OBJECTIVE_COLUMNS = {
    "meb_ratio": "collapse_ratio",
    "thickness": "thickness",
    "c": "c_lower",
    "c_incumbent": "c",
}


def check_best_column(config: BatchConfig, column: str, *, name: str = "column") -> str:
    """``column`` if it is a numeric column of runs of ``config`` (checked before a run).

    Raises
    ------
    InvalidInputError
        If it is not; the message lists the numeric columns.
    """
    columns = config.columns()
    by_name = {c.name: c for c in columns}
    if column not in by_name or by_name[column].dtype == "str":
        numeric = [c.name for c in columns if c.dtype != "str"]
        raise InvalidInputError(
            f"`{name}` must be a numeric column of the run; got {column!r} (numeric columns: "
            f"{', '.join(numeric)})"
        )
    return column


def best_rows(results: str | os.PathLike, config: BatchConfig, column: str, *, k: int = 5,
              largest: bool = True) -> list[dict[str, Any]]:
    """The ``k`` rows of ``results`` with the largest (or smallest) ``column``.

    Parameters
    ----------
    results : path-like
        The result table of a finished run of ``config``.
    config : BatchConfig
        The run's configuration (columns, grid, seed, generator options).
    column : str
        A numeric column (``float``, ``int`` or ``bool``).  Missing values
        are never chosen; ties go to the lower configuration index.
    k : int, default 5
    largest : bool, default True

    Returns
    -------
    list of dict
        Best first: every column of the row (``None`` for missing values)
        plus ``points`` (``N`` lists of ``n`` floats) and ``labels``
        (``N`` ints).

    Raises
    ------
    InvalidInputError
        If ``column`` is not a numeric column of the run.
    """
    k = check_int(k, "k", minimum=1)
    check_best_column(config, column)
    columns = config.columns()
    sign = 1.0 if largest else -1.0
    best: list[tuple[float, int, dict]] = []
    for _, data in iter_cells(results, columns, config.format):
        v = sign * data[column]
        ok = np.flatnonzero(~np.isnan(v))
        if ok.size == 0:
            continue
        # at most k candidates per cell
        order = ok[np.lexsort((data["config"][ok], -v[ok]))][:k]
        for i in order.tolist():
            row = {c.name: row_value(data[c.name][i], c.dtype) for c in columns}
            best.append((float(v[i]), int(row["config"]), row))
        best.sort(key=lambda t: (-t[0], t[1]))
        best = best[:k]
    out = []
    for _, _, row in best:
        if "points" in row and row["points"]:
            row["points"] = json.loads(row["points"])
            row["labels"] = json.loads(row["labels"])
        else:
            cell = config.grid.cells[row["cell"]]
            X, y = generate(cell.distribution, cell.n_points, cell.dim, cell.n_classes,
                            cell.layout, [row["rep"]], seed=config.seed, margin=cell.margin,
                            options=config.options)
            row["points"] = X[0].tolist()
            row["labels"] = y[0].tolist()
        out.append(row)
    return out


def save_best(out: str | os.PathLike, config: BatchConfig, column: str, *, k: int = 5,
              largest: bool = True, path: str | os.PathLike | None = None) -> Path:
    """Write the best rows of the finished run in ``out`` to ``best_<column>.json``.

    Parameters
    ----------
    out : path-like
        The run folder of :func:`~isoapprox.batch.run_batch`.
    config : BatchConfig
    column : str
    k : int, default 5
    largest : bool, default True
    path : path-like, optional
        Target file (default ``out/best_<column>.json``).

    Returns
    -------
    Path
        The written results document (experiment ``"batch_best"``; records
        are the rows of :func:`best_rows`).
    """
    out = Path(out)
    results = out / f"results.{config.format}"
    if not results.exists():
        raise InvalidInputError(f"`out` must hold a finished run; {results} does not exist")
    rows = best_rows(results, config, column, k=k, largest=largest)
    target = Path(path) if path is not None else out / BEST_FILE.format(column=column)
    return write_results(
        target, experiment="batch_best", config=config.to_dict(), records=rows,
        seed=config.seed, csv_path=False,
        extra={"column": column, "largest": largest, "k": k, "results_file": results.name,
               "fingerprint": config.fingerprint()},
    )
