"""Per-cell summaries of a batch result table.

For every grid cell: the number of configurations; for every numeric
quantity the minimum, the 5 %, 50 % and 95 % quantiles and the maximum
(over the non-missing values) and the number missing; for every flag
(``holds_*``, ``many_classes``, ``separated``, ...) the share that is true;
for every ``<stage>_error`` column the number of failures.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ..exceptions import InvalidInputError
from ..io import file_sha256
from .grid import PARAM_COLUMNS, BatchConfig
from .stages import COLUMN_DTYPES, Column
from .table import iter_cells, row_value

__all__ = [
    "QUANTILES",
    "TABLE_WIDTH",
    "collapse_share_rows",
    "run_records",
    "format_table",
    "summarise",
    "summarise_cell",
    "summarise_values",
    "summary_columns",
    "summary_values",
]

#: (suffix, quantile) reported for every numeric quantity
QUANTILES = (("min", 0.0), ("p05", 0.05), ("median", 0.5), ("p95", 0.95), ("max", 1.0))

_PARAMS = {c.name for c in PARAM_COLUMNS}


def _present(v: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``v[ok]``: the values not missing, in order (``v`` itself when none is
    missing and it is contiguous: the same values, the same sums)."""
    return v if v.flags.c_contiguous and ok.all() else v[ok]


def summarise_cell(data: dict[str, np.ndarray], columns: Sequence[Column]) -> dict:
    """Summary record of one cell's rows (internal column representation)."""
    rec: dict = {"cell": int(data["cell"][0])}
    for c in PARAM_COLUMNS:
        if c.name not in ("config", "cell", "rep"):
            v = data[c.name][0]
            rec[c.name] = v if c.dtype == "str" else (int(v) if c.dtype == "int" else float(v))
    rec["count"] = int(len(data["cell"]))
    for c in columns:
        if c.name in _PARAMS:
            continue
        v = data[c.name]
        if c.dtype == "str":
            rec[f"{c.name}_count"] = int(sum(1 for s in v if s))
        elif c.dtype == "bool":
            ok = ~np.isnan(v)
            rec[f"share_{c.name}"] = float(_present(v, ok).mean()) if ok.any() else float("nan")
        else:
            ok = ~np.isnan(v)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                q = (np.quantile(_present(v, ok), [p for _, p in QUANTILES]) if ok.any()
                     else np.full(len(QUANTILES), np.nan))
            for (suffix, _), val in zip(QUANTILES, q, strict=True):
                rec[f"{c.name}_{suffix}"] = float(val)
            rec[f"{c.name}_missing"] = int((~ok).sum())
    return rec


def summarise(path, config: BatchConfig) -> list[dict]:
    """Summary records of every cell of a result table written for ``config`` (parses it)."""
    columns = config.columns()
    return [summarise_cell(data, columns) for _, data in iter_cells(path, columns, config.format)]


def summary_columns(columns: Sequence[Column]) -> list[Column]:
    """The columns a chunk's summary values hold: every column but the text
    parameters (a text column of a stage as 1.0 when non-empty, 0.0 else)."""
    return [c for c in columns if c.dtype != "str" or c.name not in _PARAMS]


def summary_values(cols: dict[str, np.ndarray], columns: Sequence[Column]) -> np.ndarray:
    """A chunk's summary values, float64 ``(B, k)`` (see :func:`summary_columns`)."""
    keep = summary_columns(columns)
    B = len(cols["cell"])
    out = np.empty((B, len(keep)))
    for j, c in enumerate(keep):
        if c.dtype == "str":
            out[:, j] = [1.0 if v else 0.0 for v in cols[c.name]]
        else:
            out[:, j] = cols[c.name]
    return out


def summarise_values(chunks: Iterable[np.ndarray], config: BatchConfig) -> list[dict]:
    """Summary records from the chunks' summary values, in chunk order."""
    columns = config.columns()
    keep = summary_columns(columns)
    k_cell = [c.name for c in keep].index("cell")
    cells = config.grid.cells
    records: list[dict] = []

    def flush(pending: list[np.ndarray]) -> None:
        # column by column, each contiguous (the chunks are row-major)
        vals = np.empty((pending[0].shape[1], sum(len(p) for p in pending)))
        np.concatenate([p.T for p in pending], axis=1, out=vals)
        data = {}
        for j, c in enumerate(keep):
            col = vals[j]
            data[c.name] = (np.where(col == 1.0, "x", "").astype(object) if c.dtype == "str"
                            else col)
        cell = cells[int(vals[k_cell, 0])]
        # the text parameters: summarise_cell reads their first value only
        data["distribution"] = np.array([cell.distribution], dtype=object)
        data["layout"] = np.array([cell.layout], dtype=object)
        records.append(summarise_cell(data, columns))

    # a cell's rows are contiguous: its chunks follow each other
    for _, group in itertools.groupby(chunks, lambda vals: vals[0, k_cell]):
        flush(list(group))
    return records


#: the widest line of :func:`format_table`
TABLE_WIDTH = 100
#: width of a name column (longer names are shortened with "~")
_NAME_WIDTH = 26
#: width of one ``name share`` entry of the flags block (three to a line)
_FLAG_WIDTH = 32


def _fmt(x: float) -> str:
    if x != x:
        return "-"
    return f"{x:.4g}"


def _short(name: str, width: int = _NAME_WIDTH) -> str:
    return name if len(name) <= width else name[: width - 1] + "~"


def _flow(prefix: str, items: Sequence[str], width: int) -> list[str]:
    """``items`` after ``prefix``, as many to a line as fit in ``width``."""
    lines, line = [], prefix
    for it in items:
        if line.strip() and len(line) + len(it) > width:
            lines.append(line.rstrip())
            line = " " * len(prefix)
        line += it
    if line.strip():
        lines.append(line.rstrip())
    return lines


def _is_flag(c: Column) -> bool:
    return c.dtype == "bool" and (
        c.name.startswith(("holds_", "proven_", "violated_"))
        or c.name in ("many_classes", "certified"))


def format_table(records: Sequence[dict], config: BatchConfig) -> str:
    """A plain-text summary at most :data:`TABLE_WIDTH` (100) characters wide.

    One block per cell: a title line (the cell's parameters and count); one
    row per headline quantity of the stages (with the certified ends
    ``<name>_lower`` / ``<name>_upper`` below it where the table has them)
    and the columns median, p05, p95, min, max and missing; the share of
    configurations for which each statement's flag is true (``holds_*``,
    ``proven_*``, ``violated_*``, ``many_classes``, ``certified``), three to
    a line; the failures of each per-configuration stage.
    """
    names = {c.name for c in config.columns()}
    rows_of: list[tuple[str, str]] = []  # (column, its name in the table)
    for st in config.resolved_stages():
        for h in st.headline:
            rows_of.append((h, h))
            rows_of += [(f"{h}_{end}", f"  {h}_{end}") for end in ("lower", "upper")
                        if f"{h}_{end}" in names]
    flags = [c.name for c in config.columns() if _is_flag(c)]
    errors = [c.name for c in config.columns() if c.name.endswith("_error") and c.dtype == "str"]
    stats = ("median", "p05", "p95", "min", "max")
    head = f"  {'quantity':<{_NAME_WIDTH}}" + "".join(f"{s:>11}" for s in stats) + "  missing"
    n_cells = len(records)
    lines: list[str] = []
    for k, r in enumerate(records):
        if k:
            lines.append("")
        title = (f"cell {k + 1} of {n_cells}: {r['distribution']} N={r['n_points']} "
                 f"n={r['dim']} P={r['n_classes']} {r['layout']} alpha={r['margin']:g}, "
                 f"{r['count']} configurations")
        lines.append(title[:TABLE_WIDTH])
        if rows_of:
            lines.append(head)
        for q, name in rows_of:
            vals = "".join(f"{_fmt(r[f'{q}_{s}']):>11}" for s in stats)
            lines.append(f"  {_short(name):<{_NAME_WIDTH}}{vals}  {r[f'{q}_missing']:>7}")
        if flags:
            lines += _flow("  share true: ", [
                f"{_short(f, _FLAG_WIDTH - 8)} {_fmt(r[f'share_{f}']):<6}".ljust(_FLAG_WIDTH)
                for f in flags], TABLE_WIDTH)
        if errors:
            lines += _flow("  failures: ", [f"{_short(e)} {r[f'{e}_count']}".ljust(_FLAG_WIDTH)
                                            for e in errors], TABLE_WIDTH)
    return "\n".join(lines)


def run_records(doc: Mapping, source: str | Path, fields: Sequence[str]) -> list[dict]:
    """The rows of a finished batch run as dicts of ``fields`` (missing values: None).

    Parameters
    ----------
    doc : mapping
        The run's ``summary.json`` (experiment ``"batch"``), which names the
        result table, its columns, format and SHA-256.
    source : path-like
        Where ``doc`` was read from; the table lies beside it.
    fields : sequence of str
        Columns to keep; each must be a column of the run.

    Raises
    ------
    InvalidInputError
        If a field is not a column of the run (naming the stage that gives
        it, where known) or the table is missing or not the one the summary
        describes.
    """
    source = Path(source)
    try:
        columns = tuple(Column(str(n), str(d)) for n, d, *_ in doc["columns"])
        table = source.parent / str(doc["results_file"])
        fmt = str(doc["config"]["format"])
        sha = str(doc["results_sha256"])
    except (KeyError, TypeError, ValueError, InvalidInputError):
        raise InvalidInputError(
            f"`{source}` is not the summary.json of a finished `isoapprox batch` run "
            "(expected 'columns', 'results_file', 'results_sha256' and config.format)"
        ) from None
    names = [c.name for c in columns]
    missing = [f for f in fields if f not in names]
    if missing:
        raise InvalidInputError(
            f"the batch run of `{source}` has no column {', '.join(map(repr, missing))}: "
            "these come from stage 'ideal' (rerun with the default stages, "
            "--stages cheap ideal points)"
        )
    if not table.is_file():
        raise InvalidInputError(f"`{table}`, the result table of `{source}`, does not exist")
    if file_sha256(table, "batch results table") != sha:
        raise InvalidInputError(
            f"`{table}` is not the table `{source}` describes (its SHA-256 differs): "
            "rerun the batch command to rebuild it"
        )
    dtypes = {c.name: c.dtype for c in columns if c.dtype in COLUMN_DTYPES}
    out = []
    for _, data in iter_cells(table, columns, fmt):
        for i in range(len(data["cell"])):
            out.append({f: row_value(data[f][i], dtypes[f]) for f in fields})
    return out


def collapse_share_rows(records: Sequence[Mapping]) -> list[dict]:
    """Per ``N / n`` of ``records`` (run rows with ``n_points``, ``dim``, ``d_iso``,
    ``diameter``, ``collapsed_iso``, ``class_collapsed_iso``): the median and
    maximum of ``d_iso(E, F_TS) / diam(E)`` and the shares of configurations
    whose nearest ideal embedding is collapsed or class-collapsed.

    The rows of :func:`isoapprox.plotting.survey.collapse_share_plot`.
    """
    groups: dict[float, list[Mapping]] = {}
    for r in records:
        groups.setdefault(r["n_points"] / r["dim"], []).append(r)
    rows = []
    for x, rs in sorted(groups.items()):
        ratio = [r["d_iso"] / r["diameter"] for r in rs
                 if r["d_iso"] is not None and r["diameter"]]
        kinds = [r for r in rs if r["collapsed_iso"] is not None]
        rows.append({
            "N_over_n": x,
            "configurations": len(rs),
            "d_iso_over_diameter_median": float(np.median(ratio)) if ratio else math.nan,
            "d_iso_over_diameter_max": float(np.max(ratio)) if ratio else math.nan,
            "collapsed_share": (sum(bool(r["collapsed_iso"]) for r in kinds) / len(kinds)
                                if kinds else math.nan),
            "class_collapsed_share": (sum(bool(r["class_collapsed_iso"]) for r in kinds)
                                      / len(kinds) if kinds else math.nan),
        })
    return rows
