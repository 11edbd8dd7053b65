"""Figures of the bounds survey (``experiments/bounds_survey.py``).

Each function takes the survey's per-configuration records (dicts with the
columns of the batch ``ideal`` stage: ``c``, ``c_lower``, ``c_upper``,
``loss``, ``d_iso`` with its bracket, ``theta``, ``n_points``, ``dim``,
``part`` ...) and returns a matplotlib ``Figure``; nothing is computed but
what is drawn.  The builder for the experiment
``"bounds_survey"`` writes all of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._lazy import matplotlib
from ..batch.summary import collapse_share_rows, run_records
from ._style import (
    CLASS_MARKERS,
    COLORS,
    COLUMN_WIDTH,
    FULL_WIDTH,
    FigureTask,
    group_colors,
    save_figures,
    style_context,
)

__all__ = [
    "BATCH_FIELDS",
    "batch_figures",
    "c_bracket_histogram",
    "collapse_share_plot",
    "collapse_share_figures",
    "c_theta_scatter",
    "loss_iso_scatter",
    "survey_figures",
]


def _finite(v: Any) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def _with_c(records: Sequence[dict]) -> list[dict]:
    return [r for r in records if _finite(r.get("c")) and _finite(r.get("c_lower"))]


def _group(r: dict) -> str:
    if r.get("distribution") == "adversarial":
        return f"adversarial N={r['n_points']}, n={r['dim']}"
    return f"N={r['n_points']}, n={r['dim']}"


def _bracket_points(rs: Sequence[dict], x_key: str, y_key: str, hi_key, height: float):
    """A new figure (``FULL_WIDTH * 0.62`` by ``height`` inches) with one point per record at
    ``(x_key, y_key)``, bars its bracket; per group (in order of first appearance) its own
    colour (:func:`~._style.group_colors`: no two alike) and a marker shape as a second
    cue.  Returns the figure, its axes and the groups."""
    fig, ax = matplotlib().pyplot.subplots(figsize=(FULL_WIDTH * 0.62, height))
    groups: dict[str, list[dict]] = {}
    for r in rs:
        groups.setdefault(_group(r), []).append(r)
    colors = group_colors(len(groups))
    for k, (name, g) in enumerate(groups.items()):
        lo = [max(r[y_key] - r[f"{y_key}_lower"], 0.0) for r in g]
        hi = [hi_key(r) for r in g]
        col, marker = colors[k], CLASS_MARKERS[k % len(CLASS_MARKERS)]
        ax.errorbar([r[x_key] for r in g], [r[y_key] for r in g], yerr=[lo, hi], fmt=marker,
                    markersize=2.5, color=col, elinewidth=0.6, alpha=0.7, label=name)
    return fig, ax, groups


def c_bracket_histogram(records: Sequence[dict[str, Any]], *, bins: int = 40):
    """Histogram of ``c`` (incumbents) with the histograms of its bracket ends.

    Parameters
    ----------
    records : sequence of dict
        Survey records; those without a finite ``c`` (separated
        configurations) are left out.
    bins : int, default 40

    Returns
    -------
    matplotlib.figure.Figure
        Filled: ``c = d_haus / d_iso``; steps: the certified ends
        ``c_lower = d_haus_lower / d_iso_upper`` and ``c_upper`` (finite
        ones); dashed: ``c = 1/2``, the floor that statement 1 implies.
    """
    plt = matplotlib().pyplot
    rs = _with_c(records)
    c = [r["c"] for r in rs]
    lo = [r["c_lower"] for r in rs]
    hi = [r["c_upper"] for r in rs if _finite(r.get("c_upper"))]
    with style_context():
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2.3))
        if c:
            top = max(c + lo + hi)
            edges = [0.5 * (1 - 1e-9) + (top * 1.0001 - 0.5 * (1 - 1e-9)) * k / bins
                     for k in range(bins + 1)]
            if min(lo) < edges[0]:
                edges = [min(lo)] + edges
            ax.hist(c, bins=edges, color=COLORS["measured"], alpha=0.6, label="c (incumbents)")
            ax.hist(lo, bins=edges, histtype="step", color=COLORS["d_iso"],
                    label="c_lower (certified)")
            ax.hist(hi, bins=edges, histtype="step", color=COLORS["d_haus"], linestyle=":",
                    label="c_upper (certified)")
        ax.axvline(0.5, color=COLORS["bound"], linestyle="--", linewidth=1,
                   label="1/2 (statement 1)")
        ax.set_xlabel(r"$c(E) = d_{haus}(E, F_{TS}) / d_{iso}(E, F_{TS})$")
        ax.set_ylabel("configurations")
        ax.set_title(f"{len(rs)} configurations")
        ax.legend(frameon=False)
        fig.tight_layout()
    return fig


def loss_iso_scatter(records: Sequence[dict[str, Any]]):
    """``d_iso(E, F_TS)`` (with its bracket) against the loss ``L(E)``, with statement 3.

    Parameters
    ----------
    records : sequence of dict

    Returns
    -------
    matplotlib.figure.Figure
        One point per configuration, coloured by group (N, n), vertical bars
        the certified bracket of ``d_iso``; lines ``d_iso = L / 2`` (the
        lower bound of statement 3) and ``d_iso = L`` (its upper bound).
    """
    rs = [r for r in records if _finite(r.get("loss")) and _finite(r.get("d_iso"))]
    with style_context():
        fig, ax, _ = _bracket_points(rs, "loss", "d_iso",
                                     lambda r: max(r["d_iso_upper"] - r["d_iso"], 0.0), 2.8)
        top = max([r["loss"] for r in rs] + [1e-12])
        ax.plot([0, top], [0, top / 2], color=COLORS["bound"], linestyle="--", linewidth=1,
                label=r"$L/2$ (statement 3, lower)")
        ax.plot([0, top], [0, top], color=COLORS["loss"], linestyle="-", linewidth=1,
                label=r"$L$ (statement 3, upper)")
        ax.set_xlabel(r"batch-hard loss $L(E)$ (max)")
        ax.set_ylabel(r"$d_{iso}(E, F_{TS})$")
        ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        fig.tight_layout()
    return fig


def c_theta_scatter(records: Sequence[dict[str, Any]]):
    """``c`` (with its bracket) against the thickness ``theta(E)``.

    Parameters
    ----------
    records : sequence of dict

    Returns
    -------
    matplotlib.figure.Figure
        One point per configuration with a finite ``c``, coloured by group;
        dashed: ``c = 1/2``.
    """
    rs = [r for r in _with_c(records) if _finite(r.get("theta"))]
    with style_context():
        fig, ax, groups = _bracket_points(
            rs, "theta", "c",
            lambda r: max(r["c_upper"] - r["c"], 0.0) if _finite(r.get("c_upper")) else 0.0,
            2.6)
        ax.axhline(0.5, color=COLORS["bound"], linestyle="--", linewidth=1,
                   label="$c = 1/2$ (statement 1)")
        ax.set_xlabel(r"thickness $\theta(E)$")
        ax.set_ylabel(r"$c(E)$")
        if groups:
            ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        fig.tight_layout()
    return fig


def survey_figures(doc: dict, out_dir: Path, source: Path, *, jobs: int = 1) -> list[Path]:
    """Builder: ``survey_c_hist``, ``survey_loss_iso``, ``survey_c_theta``."""
    records = doc.get("records", [])
    tasks = [
        FigureTask("survey_c_hist", c_bracket_histogram, (records,),
                   "Histogram of the empirical constant c with its certified bracket ends."),
        FigureTask("survey_loss_iso", loss_iso_scatter, (records,),
                   "d_iso(E, F_TS) with bracket against L(E), with statement 3's bounds "
                   "L/2 and L."),
        FigureTask("survey_c_theta", c_theta_scatter, (records,),
                   "c with bracket against the thickness theta."),
    ]
    return save_figures(tasks, out_dir, sources=[source], jobs=jobs)


def collapse_share_plot(rows: Sequence[dict[str, Any]]):
    """The nearest ideal embedding against the collapsed one, as ``N / n`` grows.

    Parameters
    ----------
    rows : sequence of dict
        One per value of ``N / n`` (``experiments/collapse_share.py``):
        ``N_over_n``, ``d_iso_over_diameter_median``,
        ``d_iso_over_diameter_max``, ``collapsed_share``,
        ``class_collapsed_share``.

    Returns
    -------
    matplotlib.figure.Figure
        Left: ``d_iso(E, F_TS) / diam(E)`` (median and maximum; 1 means the
        collapsed embedding is a nearest ideal one).  Right: the share of
        configurations whose nearest ideal embedding is collapsed or
        class-collapsed.
    """
    plt = matplotlib().pyplot
    rs = sorted(rows, key=lambda r: r["N_over_n"])
    x = [r["N_over_n"] for r in rs]
    with style_context():
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(FULL_WIDTH, 2.3))
        a1.plot(x, [r["d_iso_over_diameter_median"] for r in rs], "o-",
                color=COLORS["d_iso"], label="median")
        a1.plot(x, [r["d_iso_over_diameter_max"] for r in rs], "s--",
                color=COLORS["d_iso"], alpha=0.6, label="maximum")
        a1.axhline(1.0, color=COLORS["bound"], linestyle=":", linewidth=1)
        a1.set_ylim(0, 1.05)
        a1.set_xlabel(r"batch size / dimension $N / n$")
        a1.set_ylabel(r"$d_{iso}(E, F_{TS}) \,/\, \mathrm{diam}(E)$")
        a1.legend(frameon=False, fontsize=8)
        a2.plot(x, [r["collapsed_share"] for r in rs], "o-", color=COLORS["loss"],
                label="collapsed")
        a2.plot(x, [r["class_collapsed_share"] for r in rs], "s--", color=COLORS["d_haus"],
                label="class-collapsed")
        a2.set_ylim(-0.02, 1.0)
        a2.set_xlabel(r"batch size / dimension $N / n$")
        a2.set_ylabel("share of nearest ideal embeddings")
        a2.legend(frameon=False, fontsize=8)
        fig.tight_layout()
    return fig


#: the columns of a batch run that :func:`batch_figures` reads (stages cheap and ideal)
BATCH_FIELDS = (
    "distribution", "n_points", "dim", "n_classes", "margin", "diameter", "loss",
    "d_iso", "d_iso_lower", "d_iso_upper", "c", "c_lower", "c_upper", "theta",
    "collapsed_iso", "class_collapsed_iso",
)


def batch_figures(doc: dict, out_dir: Path, source: Path, *, jobs: int = 1) -> list[Path]:
    """Builder of an ``isoapprox batch`` run (its ``summary.json``; the table beside it).

    ``batch_c_theta``, ``batch_loss_iso``, ``batch_c_hist`` (the survey's
    figures, one point per configuration of the run) and
    ``batch_collapse_share`` (per ``N / n`` of the grid).  The run needs the
    columns of stage ``ideal`` (in the default stages).
    """
    records = run_records(doc, source, BATCH_FIELDS)
    table = Path(source).parent / str(doc["results_file"])
    tasks = [
        FigureTask("batch_c_theta", c_theta_scatter, (records,),
                   "c with its certified bracket against theta."),
        FigureTask("batch_loss_iso", loss_iso_scatter, (records,),
                   "d_iso(E, F_TS) with bracket against L(E), with statement 3's bounds "
                   "L/2 and L."),
        FigureTask("batch_c_hist", c_bracket_histogram, (records,),
                   "Histogram of the empirical constant c with its certified bracket ends."),
        FigureTask("batch_collapse_share", collapse_share_plot, (collapse_share_rows(records),),
                   "d_iso(E, F_TS) / diam(E) and the share of collapsed nearest ideal "
                   "embeddings against N / n, at the run's margins."),
    ]
    return save_figures(tasks, out_dir, sources=[source, table], jobs=jobs)


def collapse_share_figures(doc: dict, out_dir: Path, source: Path, *,
                           jobs: int = 1) -> list[Path]:
    """Builder: ``survey_collapse_share``."""
    task = FigureTask("survey_collapse_share", collapse_share_plot, (doc.get("records", []),),
                      "d_iso(E, F_TS) / diam(E) and the share of collapsed nearest ideal "
                      "embeddings against N / n, margin 0.")
    return save_figures([task], out_dir, sources=[source], jobs=jobs)
