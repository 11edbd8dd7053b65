"""Per-cell summaries of a batch result table.

For every grid cell: the number of configurations; for every numeric
quantity the minimum, the 5 %, 50 % and 95 % quantiles and the maximum
(over the non-missing values) and the number missing; for every flag
(``holds_*``, ``many_classes``, ``separated``, ...) the share that is true;
for every ``<stage>_error`` column the number of failures.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

import numpy as np

from .grid import PARAM_COLUMNS, BatchConfig
from .stages import Column
from .table import iter_cells

__all__ = [
    "QUANTILES",
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
            rec[f"share_{c.name}"] = float(v[ok].mean()) if ok.any() else float("nan")
        else:
            ok = ~np.isnan(v)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                q = (np.quantile(v[ok], [p for _, p in QUANTILES]) if ok.any()
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
    pending: list[np.ndarray] = []

    def flush():
        vals = np.concatenate(pending)
        data = {}
        for j, c in enumerate(keep):
            col = vals[:, j]
            data[c.name] = (np.where(col == 1.0, "x", "").astype(object) if c.dtype == "str"
                            else col)
        cell = cells[int(vals[0, k_cell])]
        B = len(vals)
        data["distribution"] = np.full(B, cell.distribution, dtype=object)
        data["layout"] = np.full(B, cell.layout, dtype=object)
        records.append(summarise_cell(data, columns))

    for vals in chunks:
        if pending and vals[0, k_cell] != pending[-1][0, k_cell]:
            flush()
            pending = []
        pending.append(vals)
    if pending:
        flush()
    return records


def _fmt(x: float) -> str:
    if x != x:
        return "-"
    return f"{x:.4g}"


def format_table(records: Sequence[dict], config: BatchConfig) -> str:
    """A plain-text table: one line per cell, headline quantities and shares."""
    headline = [h for st in config.resolved_stages() for h in st.headline]
    shares = []
    for c in config.columns():
        if c.dtype == "bool" and (c.name.startswith("holds_") or c.name == "many_classes"):
            shares.append(c.name)
    errors = [c.name for c in config.columns() if c.name.endswith("_error") and c.dtype == "str"]
    head = ["distribution", "N", "n", "P", "layout", "alpha", "count"]
    head += [f"{h} median [p05, p95]" for h in headline]
    head += [f"share {s}" for s in shares]
    head += [f"{e} count" for e in errors]
    rows = []
    for r in records:
        row = [r["distribution"], str(r["n_points"]), str(r["dim"]), str(r["n_classes"]),
               r["layout"], f"{r['margin']:g}", str(r["count"])]
        for h in headline:
            row.append(f"{_fmt(r[h + '_median'])} [{_fmt(r[h + '_p05'])}, {_fmt(r[h + '_p95'])}]")
        for s in shares:
            row.append(_fmt(r[f"share_{s}"]))
        for e in errors:
            row.append(str(r[f"{e}_count"]))
        rows.append(row)
    widths = [max(len(h), *(len(row[k]) for row in rows)) for k, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    return "\n".join(lines)
