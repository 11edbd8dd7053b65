"""Figures of a collapse diagnosis: the 2-D view and the pair-distance histogram.

Both are drawn from the report's data only (the diagnose report as written to
JSON): the view from ``report["view"]`` (2-D
coordinates computed by :func:`isoapprox.diagnostics.embedding_view`),
the histogram from ``report["statistics"]["distances"]``, and the annotations
(margin, ``D*``, the distances to the ideal set) from ``report["data"]`` and
``report["theory"]``.  Nothing here computes a metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._lazy import matplotlib
from ..bracket import bracket_words
from ..exceptions import InvalidInputError
from ._style import (
    CLASS_COLORS,
    COLORS,
    COLUMN_WIDTH,
    class_style,
    save_figure,
    style_context,
)

__all__ = ["diagnose_figures", "plot_distance_histogram", "plot_embedding_view"]

#: a reference line farther than this times the largest distance is not drawn
#: (it would squeeze the histogram into one bar); it is named in a note instead
_OFF_SCALE = 3.0


#: merged groups named in the legend (the largest first); the others share one entry
_MAX_LISTED_GROUPS = 6
#: colour of the classes outside every merged group, when the view colours by group
_OTHER = "#BBBBBB"


def _group_of_class(view: Mapping[str, Any], merging: Mapping[str, Any] | None,
                    n_cls: int) -> np.ndarray | None:
    """Index of each class code's merged group (``-1``: none), or None to colour by class.

    By group when the classes outnumber the hues and the report found merged
    groups (``report["classes"]["merging"]``, :func:`isoapprox.diagnostics.compute_merging`).
    """
    groups = (merging or {}).get("groups") or []
    if n_cls <= len(CLASS_COLORS) or not groups:
        return None
    names = [str(c) for c in view.get("classes", range(n_cls))]
    where = {c: k for k, c in enumerate(names)}
    out = np.full(max(n_cls, len(names)), -1, dtype=int)
    for g, grp in enumerate(groups):
        for c in grp.get("classes", []):
            if str(c) in where:
                out[where[str(c)]] = g
    return out


def _num(v: float, digits: int = 3) -> str:
    return f"{v:.{digits}g}"


def _bracket(d: Mapping[str, Any], key: str) -> str:
    v = d.get(key)
    if v is None:
        return "n/a"
    return bracket_words(v, d.get(f"{key}_lower"), d.get(f"{key}_upper"), _num,
                         wide="{v} [{lo}, {up}]")


def _finish(fig: Any, ax: Any, title: str) -> None:
    """Title the axes (when a title is given) and tighten the figure's layout."""
    if title:
        ax.set_title(title)
    fig.tight_layout()


def plot_embedding_view(view: Mapping[str, Any], *, title: str = "",
                        merging: Mapping[str, Any] | None = None) -> Any:
    """Scatter of the 2-D view, classes coloured, the ideal embedding overlaid.

    Each class takes a (hue, marker) pair (:func:`isoapprox.plotting._style.class_style`:
    distinct for the first 56 classes).  When the classes outnumber the hues
    and ``merging`` holds merged groups, the points are coloured by merged
    group instead (the classes outside every group in light grey): what the
    view then shows is which classes merged.

    Parameters
    ----------
    view : mapping
        ``report["view"]``: ``embedding`` and optionally ``ideal`` (lists of
        ``[x, y]``), ``labels`` (class codes), ``classes``, ``axes_variance``,
        ``n_points``, ``n_shown``.
    title : str
        Axes title.
    merging : mapping, optional
        ``report["classes"]["merging"]`` (its ``groups``, each with the
        ``classes`` it holds).

    Returns
    -------
    matplotlib.figure.Figure
    """
    mpl = matplotlib()
    P = np.asarray(view["embedding"], dtype=float).reshape(-1, 2)
    labels = np.asarray(view["labels"], dtype=int)
    G = view.get("ideal")
    G = None if G is None else np.asarray(G, dtype=float).reshape(-1, 2)
    var = view.get("axes_variance", [math.nan, math.nan])
    n_cls = len(view.get("classes", ())) or int(labels.max(initial=-1)) + 1
    group_of = _group_of_class(view, merging, max(n_cls, int(labels.max(initial=-1)) + 1))
    Line2D = mpl.lines.Line2D
    grey = COLORS["collapsed"]
    with style_context():
        fig, ax = mpl.pyplot.subplots(figsize=(COLUMN_WIDTH * 1.3, COLUMN_WIDTH * 1.35))
        if G is not None:
            segs = np.stack([P, G], axis=1)
            ax.add_collection(mpl.collections.LineCollection(
                segs, colors=COLORS["collapsed"], linewidths=0.4, alpha=0.6, zorder=1))
        if group_of is None:
            sets = [(labels == c, *class_style(int(c))) for c in np.unique(labels)]
            key = f"{n_cls} classes (hue and marker)"
            group_handles = []
        else:
            g_of_point = group_of[labels]
            n_groups = int(group_of.max()) + 1
            sets = [(g_of_point == -1, _OTHER, "o")]
            sets += [(g_of_point == g, *class_style(g)) for g in range(n_groups)]
            sizes = [int(np.sum(group_of == g)) for g in range(n_groups)]
            key = (f"{n_cls} classes; colour: merged group ({n_groups}), "
                   "grey: not merged")
            group_handles = [
                Line2D([], [], marker=class_style(g)[1], linestyle="", color=class_style(g)[0],
                       markersize=4, label=f"group {g + 1}: {sizes[g]} classes")
                for g in range(min(n_groups, _MAX_LISTED_GROUPS))]
        for sel, color, marker in sets:
            if not sel.any():
                continue
            ax.scatter(P[sel, 0], P[sel, 1], s=14, c=color, marker=marker, linewidths=0,
                       alpha=0.85, zorder=3)
            if G is not None:
                ax.scatter(G[sel, 0], G[sel, 1], s=42, facecolors="none", edgecolors=color,
                           marker=marker, linewidths=1.0, zorder=2)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel(f"PC 1 ({100 * var[0]:.0f}% of variance)")
        ax.set_ylabel(f"PC 2 ({100 * var[1]:.0f}% of variance)")
        handles = [Line2D([], [], marker="o", linestyle="", color=grey, markersize=4,
                          label="embedding E")]
        if G is not None:
            handles += [
                Line2D([], [], marker="o", linestyle="", markerfacecolor="none",
                       markeredgecolor=grey, markersize=6, label="nearest ideal f* (moved onto E)"),
                Line2D([], [], color=grey, linewidth=0.6, label="E_k to f*_k"),
            ]
        handles += group_handles
        shown = view.get("n_shown", len(P))
        total = view.get("n_points", len(P))
        note = f"{key}; {shown} points" + (f" of {total}" if shown != total else "")
        # below the axes, never over the points: the legend, titled with the counts
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                  ncol=2, frameon=False, handletextpad=0.3, columnspacing=1.0,
                  title=note)
        _finish(fig, ax, title)
    return fig


def plot_distance_histogram(
    distances: Mapping[str, Any],
    *,
    margin: float | None = None,
    d_star: float | None = None,
    title: str = "",
) -> Any:
    """Histogram of the pair distances with the margin, ``D*`` and the median marked.

    Parameters
    ----------
    distances : mapping
        ``report["statistics"]["distances"]``: ``histogram_counts``,
        ``histogram_edges``, ``quantiles``, ``n_pairs``, ``min``, ``max``.
    margin : float, optional
        The margin ``alpha`` (not drawn when 0 or None).
    d_star : float, optional
        ``D*(P, n, alpha)``: the least diameter of an ideal embedding.
    title : str
        Axes title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = matplotlib().pyplot
    counts = np.asarray(distances["histogram_counts"], dtype=float)
    edges = np.asarray(distances["histogram_edges"], dtype=float)
    lo, hi = float(edges[0]), float(edges[-1])
    median = distances.get("quantiles", {}).get("0.5")
    with style_context():
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH * 1.3, COLUMN_WIDTH * 0.85))
        if hi > lo:
            ax.stairs(counts, edges, fill=True, color=COLORS["measured"], alpha=0.8,
                      label="pair distances")
        else:  # every distance equal: one bar of a visible width
            w = max(abs(hi) * 0.02, 1e-12)
            ax.bar([lo], counts[:1], width=w, color=COLORS["measured"], alpha=0.8,
                   label="pair distances")
            hi = lo + w
        scale = max(hi, 1e-300)
        same = bool(margin and d_star and abs(d_star - margin) <= 1e-12 * margin)
        lines = [("median", median, COLORS["loss"], ":"),
                 ("margin = D*(P, n, margin)" if same else "margin", margin if margin else None,
                  COLORS["bound"], "--"),
                 ("D*(P, n, margin)", d_star if (d_star and not same) else None, COLORS["ideal"],
                  "-.")]
        off = []
        for name, v, color, style in lines:
            if v is None:
                continue
            if v > _OFF_SCALE * scale:
                off.append(f"{name} = {_num(v)}")
                continue
            ax.axvline(v, color=color, linestyle=style, linewidth=1.0,
                       label=f"{name} = {_num(v)}")
        if off:
            ax.text(0.98, 0.97, "off scale to the right:\n" + "\n".join(off)
                    + f"\n(largest distance {_num(distances['max'])})",
                    transform=ax.transAxes, ha="right", va="top", fontsize=8, color="0.25")
        ax.set_xlabel("pair distance ||E_i - E_j||")
        ax.set_ylabel(f"pairs (of {distances['n_pairs']})")
        ax.set_xlim(left=min(0.0, lo))
        ax.legend(loc="upper left", frameon=False)
        _finish(fig, ax, title)
    return fig


def diagnose_figures(
    report: Mapping[str, Any],
    out_dir: str | Path,
    *,
    sources: Sequence[str | Path] = (),
) -> list[Path]:
    """Write the diagnosis figures of a report (PNG + PDF + provenance sidecar).

    Parameters
    ----------
    report : mapping
        A whole-file report of ``isoapprox diagnose`` (with ``"view"`` for
        the 2-D view; ``"theory"`` adds the distances to the title and ``D*``
        to the histogram).
    out_dir : path-like
        Folder (created).
    sources : sequence of path-like
        Files the report was read from or written to (hashed in the sidecars).

    Returns
    -------
    list of Path
        ``diagnose_view.*`` (when the report has a view) and
        ``diagnose_distances.*``.

    Raises
    ------
    InvalidInputError
        If the report has no pair-distance histogram (a batch report).
    """
    stats = report.get("statistics", {})
    dist = stats.get("distances") if isinstance(stats, Mapping) else None
    if not isinstance(dist, Mapping) or "histogram_counts" not in dist:
        raise InvalidInputError(
            "the report must hold statistics.distances with a histogram (a whole-file report "
            "of isoapprox diagnose); got keys " + str(sorted(report))
        )
    name = Path(str(report.get("file", "embeddings"))).name
    data = report.get("data", {})
    margin = data.get("margin")
    theory = report.get("theory") if isinstance(report.get("theory"), Mapping) else None
    if theory is not None and "d_iso" not in theory:
        theory = None
    written: list[Path] = []
    view = report.get("view")
    if isinstance(view, Mapping):
        if theory is not None:
            title = (f"{name}: d_iso(E, F_TS) = {_bracket(theory, 'd_iso')}\n"
                     f"d_haus(E, F_TS) = {_bracket(theory, 'd_haus')}, f* {theory['kind']}")
        else:
            title = name
        classes = report.get("classes")
        merging = classes.get("merging") if isinstance(classes, Mapping) else None
        fig = plot_embedding_view(view, title=title, merging=merging)
        written += save_figure(fig, out_dir, "diagnose_view", sources=sources,
                               description=f"2-D view of {name} and its nearest ideal embedding")
    d_star = theory.get("d_star") if theory is not None else None
    fig = plot_distance_histogram(dist, margin=margin, d_star=d_star,
                                  title=f"{name}: {dist['n_pairs']} pair distances")
    written += save_figure(fig, out_dir, "diagnose_distances", sources=sources,
                           description=f"pair-distance histogram of {name}")
    return written
