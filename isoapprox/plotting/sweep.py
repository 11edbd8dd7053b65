"""Figures of the collapse sweep (``experiments/collapse_sweep.py``).

Design notes: docs/dev/kernels_design.md, section ``isoapprox.plotting.sweep``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._lazy import matplotlib
from ._style import COLORS, FULL_WIDTH, FigureTask, save_figures, style_context

__all__ = [
    "VERDICT_COLORS",
    "dim_colors",
    "plot_collapse_trend",
    "plot_crosscheck",
    "plot_diameter_vs_batch",
    "plot_lower_bound_curve",
    "plot_triplet_diagram",
    "sweep_figures",
]

#: verdict -> colour (certified true, certified false, undetermined)
VERDICT_COLORS = {True: "#009E73", False: "#D55E00", None: "#7F7F7F"}
_VERDICT_NAMES = {True: "certified true", False: "certified false", None: "undetermined"}
#: readable names of the sweep's set-ups
SETUP_NAMES = {
    "batch_hard": "batch-hard (raw)",
    "batch_hard_normalized": "batch-hard (normalised)",
    "selectively_contrastive": "selectively contrastive",
}
DATASET_NAMES = {"digits": "digits (held-out classes)", "gaussian": "synthetic (held-out classes)"}


def dim_colors(dims: Sequence[int]) -> dict[int, Any]:
    """One colour per embedding dimension, light to dark as ``n`` grows (viridis)."""
    dims = sorted(set(int(d) for d in dims))
    cmap = matplotlib().colormaps["viridis"]
    if len(dims) == 1:
        return {dims[0]: cmap(0.4)}
    return {d: cmap(0.85 * (1 - k / (len(dims) - 1))) for k, d in enumerate(dims)}


def _setup_name(s: str) -> str:
    return SETUP_NAMES.get(s, s)


def _grid(rows: Sequence[Mapping[str, Any]], row_key: str, col_key: str):
    r_vals = list(dict.fromkeys(r[row_key] for r in rows))
    c_vals = list(dict.fromkeys(r[col_key] for r in rows))
    return r_vals, c_vals


def _log2_batch_axis(ax, Ns: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(set(Ns)))
    ax.set_xticklabels([str(n) for n in sorted(set(Ns))])
    ax.minorticks_off()


#: the legend entry of the bands of :func:`plot_diameter_vs_batch`
_SD_BAND = "shaded: ± 1 sd over seeds"
#: the legend entry of the shaded region of :func:`plot_triplet_diagram`
_HARD = "S_an > S_ap: hard triplets"


def plot_diameter_vs_batch(
    summary: Sequence[Mapping[str, Any]],
    curve: Sequence[Mapping[str, Any]] = (),
    *,
    field: str = "diameter",
):
    """Final held-out diameter (or median distance) against the batch size.

    Parameters
    ----------
    summary : sequence of dict
        Rows with ``dataset``, ``variant``, ``batch_size``, ``embedding_dim``,
        ``field`` and ``field + "_sd"`` (mean and spread over seeds).
    curve : sequence of dict
        Rows with ``dataset``, ``variant``, ``batch_size``,
        ``embedding_dim``, ``curve`` (the lower bound of ``D*`` at the
        training layout); drawn dashed.  Empty: no curve.
    field : {"diameter", "median_distance"}

    Returns
    -------
    matplotlib.figure.Figure
        One panel per (set-up, data set): rows are set-ups, columns data
        sets.
    """
    plt = matplotlib().pyplot
    variants, datasets = _grid(summary, "variant", "dataset")
    colors = dim_colors([r["embedding_dim"] for r in summary])
    label = {"diameter": "final diameter", "median_distance": "final median distance"}.get(
        field, field)
    with style_context():
        fig, axes = plt.subplots(
            len(variants), len(datasets), figsize=(FULL_WIDTH, 1.9 * len(variants) + 0.6),
            squeeze=False, sharex="col",
        )
        for i, var in enumerate(variants):
            for j, ds in enumerate(datasets):
                ax = axes[i][j]
                rows = [r for r in summary if r["variant"] == var and r["dataset"] == ds]
                for n in sorted(colors):
                    pts = sorted((r["batch_size"], r[field], r.get(f"{field}_sd"))
                                 for r in rows if r["embedding_dim"] == n
                                 and r.get(field) is not None)
                    if not pts:
                        continue
                    x = [p[0] for p in pts]
                    y = [p[1] for p in pts]
                    ax.plot(x, y, "o-", color=colors[n], ms=3, label=f"n = {n}")
                    sd = [p[2] or 0.0 for p in pts]
                    lo = [max(a - b, a * 0.05) for a, b in zip(y, sd, strict=True)]
                    hi = [a + b for a, b in zip(y, sd, strict=True)]
                    if any(v > 0 for v in sd):  # no spread recorded: no band
                        ax.fill_between(x, lo, hi, color=colors[n], alpha=0.15, lw=0,
                                        label=_SD_BAND)
                    cv = sorted((r["batch_size"], r["curve"]) for r in curve
                                if r["variant"] == var and r["dataset"] == ds
                                and r["embedding_dim"] == n)
                    if cv:
                        ax.plot([c[0] for c in cv], [c[1] for c in cv], "--", color=colors[n],
                                lw=1.0, alpha=0.9)
                ax.set_yscale("log")
                _log2_batch_axis(ax, [r["batch_size"] for r in rows] or [4])
                ax.set_title(f"{_setup_name(var)} — {DATASET_NAMES.get(ds, ds)}")
                if j == 0:
                    ax.set_ylabel(label)
                if i == len(variants) - 1:
                    ax.set_xlabel("batch size N = P K")
                ax.grid(True, which="major", alpha=0.25, lw=0.5)
        # one entry per dimension, and one grey patch for the bands of every colour
        named = dict(zip(*axes[0][0].get_legend_handles_labels()[::-1], strict=True))
        Patch = matplotlib().patches.Patch
        named.pop(_SD_BAND, None)
        banded = any(c.get_label() == _SD_BAND for a in axes.flat for c in a.collections)
        labels, handles = list(named), list(named.values())
        if banded:
            labels.append(_SD_BAND)
            handles.append(Patch(color="0.5", alpha=0.3, lw=0))
        if curve:
            Line2D = matplotlib().lines.Line2D
            handles.append(Line2D([], [], ls="--", color="0.3"))
            labels.append("lower-bound curve D*(N/K, n, α)")
        fig.legend(handles, labels, loc="upper center", ncol=len(labels),
                   bbox_to_anchor=(0.5, 1.0), frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig


def plot_lower_bound_curve(
    curves: Sequence[Mapping[str, Any]],
    measured: Sequence[Mapping[str, Any]] = (),
):
    """The lower-bound curve ``D*(P, n, alpha)`` against the classes per batch.

    Parameters
    ----------
    curves : sequence of dict
        One per dimension: ``embedding_dim``, ``margin``, lists ``P`` and
        ``lower`` (the proven lower bound of ``D*``), optionally ``upper``
        (the best configuration found, an upper bound).
    measured : sequence of dict
        Sweep rows with ``variant``, ``dataset``, ``P``, ``embedding_dim``
        and ``diameter`` (final held-out diameter, mean over seeds); one
        panel per ``variant`` when given.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = matplotlib().pyplot
    dims = [c["embedding_dim"] for c in curves] + [r["embedding_dim"] for r in measured]
    colors = dim_colors(dims)
    panels = list(dict.fromkeys(r["variant"] for r in measured)) or [None]
    markers = {"digits": "o", "gaussian": "s"}
    with style_context():
        fig, axes = plt.subplots(1, len(panels), figsize=(FULL_WIDTH, 3.0), squeeze=False,
                                 sharey=True)
        for k, var in enumerate(panels):
            ax = axes[0][k]
            for c in curves:
                n = c["embedding_dim"]
                pl = [(p, v) for p, v in zip(c["P"], c["lower"], strict=True) if v > 0]
                ax.plot([p for p, _ in pl], [v for _, v in pl], "-", color=colors[n], lw=1.2,
                        label=f"D* lower bound, n = {n}")
                if c.get("upper"):
                    pu = [(p, u) for p, u in zip(c["P"], c["upper"], strict=True)
                          if u is not None]
                    ax.plot([p for p, _ in pu], [u for _, u in pu], ":", color=colors[n],
                            lw=1.0)
            for r in measured:
                if r["variant"] != var or r.get("diameter") is None:
                    continue
                ax.plot(r["P"], r["diameter"], markers.get(r["dataset"], "^"),
                        color=colors[r["embedding_dim"]], ms=3.5, mfc="none", mew=0.9)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("classes per batch P = N / K")
            if k == 0:
                m = curves[0]["margin"] if curves else None
                ax.set_ylabel("diameter" + (f" (margin α = {m:g})" if m is not None else ""))
            if var is not None:
                ax.set_title(_setup_name(var))
            ax.grid(True, which="major", alpha=0.25, lw=0.5)
        Line2D = matplotlib().lines.Line2D
        handles = [Line2D([], [], color=colors[n], lw=1.2, label=f"n = {n}")
                   for n in sorted(colors)]
        handles.append(Line2D([], [], color="0.3", lw=1.2, label="proven lower bound of D*"))
        if any(c.get("upper") for c in curves):
            handles.append(Line2D([], [], color="0.3", ls=":", label="best packing found"))
        for ds, mk in markers.items():
            if any(r["dataset"] == ds for r in measured):
                handles.append(Line2D([], [], ls="", marker=mk, mfc="none", color="0.3",
                                      label=f"final diameter, {ds}"))
        fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 3),
                   bbox_to_anchor=(0.5, 1.02), frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.075 * -(-len(handles) // 3)))
    return fig


def plot_collapse_trend(trend: Sequence[Mapping[str, Any]]):
    """The collapse trend: diameter ratio and fraction collapsed against ``N / n``.

    Parameters
    ----------
    trend : sequence of dict
        Rows with ``dataset``, ``variant``, ``batch_over_dim`` (batch size over
        embedding dimension), ``runs``, ``collapsed_fraction`` and
        ``diameter_ratio_mean`` / ``diameter_ratio_min`` (final over initial
        held-out diameter), as tabulated by the sweep.

    Returns
    -------
    matplotlib.figure.Figure
        Left: mean (line) and least (open marker) final-to-initial diameter
        ratio against ``N / n``; right: the fraction of runs that collapsed.
        Colour: set-up; marker: data set.
    """
    plt = matplotlib().pyplot
    variants = list(dict.fromkeys(r["variant"] for r in trend))
    datasets = list(dict.fromkeys(r["dataset"] for r in trend))
    palette = [COLORS["embedding"], COLORS["ideal"], "#CC79A7", "#E69F00", "#56B4E9"]
    vcol = {v: palette[k % len(palette)] for k, v in enumerate(variants)}
    markers = dict(zip(datasets, "os^Dv", strict=False))
    styles = dict(zip(datasets, ("-", "--", ":", "-."), strict=False))
    with style_context():
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(FULL_WIDTH, 2.6))
        for var in variants:
            for ds in datasets:
                rows = sorted((r for r in trend if r["variant"] == var and r["dataset"] == ds),
                              key=lambda r: r["batch_over_dim"])
                if not rows:
                    continue
                x = [r["batch_over_dim"] for r in rows]
                mean = [r["diameter_ratio_mean"] for r in rows]
                low = [r["diameter_ratio_min"] for r in rows]
                kw = dict(color=vcol[var], ms=3.5, lw=1.0, ls=styles[ds])
                ax1.plot(x, mean, marker=markers[ds], **kw)
                ax1.plot(x, low, ls="", marker=markers[ds], mfc="none", color=vcol[var],
                         ms=3.5, mew=0.8)
                ax2.plot(x, [r["collapsed_fraction"] for r in rows], marker=markers[ds], **kw)
        for ax in (ax1, ax2):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("batch size / embedding dimension  N / n")
            ax.grid(True, which="major", alpha=0.25, lw=0.5)
        ax1.set_yscale("log")
        ax1.set_ylabel("final / initial held-out diameter")
        ax2.set_ylabel("fraction of runs collapsed")
        ax2.set_ylim(-0.03, 1.03)
        Line2D = matplotlib().lines.Line2D
        handles = [Line2D([], [], color=vcol[v], lw=1.2, label=_setup_name(v)) for v in variants]
        handles += [Line2D([], [], color="0.3", ls=styles[d], marker=markers[d], ms=3.5,
                           label=DATASET_NAMES.get(d, d)) for d in datasets]
        handles.append(Line2D([], [], color="0.3", ls="", marker="o", mfc="none",
                              label="least over runs"))
        fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 3),
                   bbox_to_anchor=(0.5, 1.02), frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.80))
    return fig


def plot_triplet_diagram(panels: Sequence[Mapping[str, Any]]):
    """Xuan et al.'s triplet diagram, early and late, one row per loss.

    Parameters
    ----------
    panels : sequence of dict
        One per row: ``title`` and ``early`` / ``late`` diagram dicts (as
        stored by the sweep: ``s_ap``, ``s_an``, ``hard_fraction``,
        ``n_anchors``), optionally ``early_label`` / ``late_label``.

    Returns
    -------
    matplotlib.figure.Figure
        Each panel plots ``S_ap`` (least similar positive) against ``S_an``
        (most similar negative) per anchor; the region ``S_an > S_ap`` (hard
        triplets) is shaded.
    """
    plt = matplotlib().pyplot
    with style_context():
        fig, axes = plt.subplots(len(panels), 2, figsize=(FULL_WIDTH * 0.75, 2.9 * len(panels)),
                                 squeeze=False, sharex=True, sharey=True)
        for i, p in enumerate(panels):
            for j, when in enumerate(("early", "late")):
                ax = axes[i][j]
                d = p[when]
                ax.fill_between([-1, 1], [-1, -1], [-1, 1], color=COLORS["ideal"], alpha=0.10,
                                lw=0, label=_HARD)
                ax.plot([-1, 1], [-1, 1], color="0.4", lw=0.7)
                ax.scatter(d["s_an"], d["s_ap"], s=7, color=COLORS["embedding"], alpha=0.75,
                           lw=0)
                ax.set_xlim(-1.02, 1.02)
                ax.set_ylim(-1.02, 1.02)
                ax.set_aspect("equal")
                # the share of hard anchors goes in the title: no text over the dots
                ax.set_title(f"{p['title']}\n{p.get(when + '_label', when)}\n"
                             f"hard: {100 * d['hard_fraction']:.0f}% of {d['n_anchors']} anchors",
                             fontsize=8)
                if i == len(panels) - 1:
                    ax.set_xlabel("S_an (most similar negative)")
                if j == 0:
                    ax.set_ylabel("S_ap (least similar positive)")
        Patch = matplotlib().patches.Patch
        # the shaded region is named in a legend below the panels, never over the dots
        fig.legend(handles=[Patch(color=COLORS["ideal"], alpha=0.25,
                                  label=_HARD)],
                   loc="lower center", bbox_to_anchor=(0.5, 0.0), frameon=False)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def plot_crosscheck(
    slacks: Sequence[Mapping[str, Any]],
    summary: Sequence[Mapping[str, Any]] = (),
    statements: Mapping[str, Mapping[str, Any]] | None = None,
):
    """Relative slack of every bound on the held-out batches.

    Parameters
    ----------
    slacks : sequence of dict
        Groups with ``statement``, ``setup``, lists ``rel_slack`` and
        ``holds`` (True / False / None).
    summary : sequence of dict
        Per statement ``n``, ``true``, ``false``, ``undetermined`` (printed
        at the right).
    statements : mapping, optional
        ``key -> {"inequality": ...}`` for the axis labels.

    Returns
    -------
    matplotlib.figure.Figure
        One row per statement: every check as a dot at its relative slack
        ``(rhs - lhs) / max(|lhs|, |rhs|)`` (symmetric-log axis; 0 means
        equality, negative means the estimates violate the bound), coloured
        by its certified verdict.
    """
    plt = matplotlib().pyplot
    keys = list(dict.fromkeys(g["statement"] for g in slacks))
    setups = list(dict.fromkeys(g["setup"] for g in slacks))
    offsets = {s: (k - (len(setups) - 1) / 2) * 0.22 for k, s in enumerate(setups)}
    by_key = {r["statement"]: r for r in summary}
    statements = statements or {}
    with style_context():
        # 0.7 in per row: the dots fill +-0.3 of a row, its inequality sits below them
        fig, ax = plt.subplots(figsize=(FULL_WIDTH, 0.7 * len(keys) + 1.6))
        rng = np.random.default_rng(0)  # jitter of the dots only (display)
        for row, key in enumerate(keys):
            for g in (g for g in slacks if g["statement"] == key):
                vals = np.array([np.nan if v is None else v for v in g["rel_slack"]], float)
                holds = g["holds"]
                y = row + offsets[g["setup"]] + rng.uniform(-0.07, 0.07, vals.size)
                for verdict, col in VERDICT_COLORS.items():
                    m = np.array([h is verdict for h in holds]) & np.isfinite(vals)
                    if m.any():
                        ax.scatter(vals[m], y[m], s=5, color=col, alpha=0.6, lw=0)
            s = by_key.get(key)
            if s:
                ax.text(1.01, row, f"{s['true']}/{s['false']}/{s['undetermined']}",
                        transform=ax.get_yaxis_transform(), va="center", fontsize=8)
        ax.set_xscale("symlog", linthresh=1e-3)
        ticks = [-1.0, -1e-2, 0.0, 1e-2, 1e-1, 1.0]
        ax.set_xticks(ticks)
        ax.set_xticklabels(["−1", "−0.01", "0", "0.01", "0.1", "1"])
        ax.set_xlim(-1.5, 1.5)
        ax.axvline(0.0, color="0.3", lw=0.7)
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels(keys, fontsize=8)
        for row, k in enumerate(keys):
            ineq = statements.get(k, {}).get("inequality")
            if ineq:
                ax.text(0.005, row - 0.41, ineq, transform=ax.get_yaxis_transform(),
                        fontsize=8, color="0.35", va="center", ha="left", zorder=5,
                        bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none"})
        ax.set_ylim(len(keys) - 0.5, -0.5)
        xlabel = ("relative slack (rhs − lhs) / max(|lhs|, |rhs|)   "
                  "(symmetric log; linear within ±10⁻³)")
        if len(setups) > 1:
            xlabel += ("\nwithin a row, set-ups from top to bottom: "
                       + ", ".join(_setup_name(s) for s in setups))
        ax.set_xlabel(xlabel)
        ax.text(1.01, -0.75, "true/false/undet.", transform=ax.get_yaxis_transform(),
                fontsize=8, va="center")
        ax.grid(True, axis="x", alpha=0.25, lw=0.5)
        Line2D = matplotlib().lines.Line2D
        handles = [Line2D([], [], ls="", marker="o", ms=4, color=c, label=_VERDICT_NAMES[v])
                   for v, c in VERDICT_COLORS.items()]
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1.0), ncol=3,
                   frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def _diagram_panels(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    cells = doc.get("diagram_cells") or {}
    diagrams = doc.get("triplet_diagrams") or {}
    recs = {r["cell_id"]: r for r in doc.get("records", [])}
    steps = {r.get("steps") for r in recs.values()}
    out = []
    for var, cid in cells.items():
        if cid not in diagrams:
            continue
        r = recs.get(cid, {})
        d = diagrams[cid]
        title = (f"{_setup_name(var)}\n{r.get('dataset', '')}, N = {r.get('batch_size')}, "
                 f"n = {r.get('embedding_dim')}")
        last = r.get("steps") if len(steps) == 1 else None
        out.append({
            "title": title, "early": d["heldout_initial"], "late": d["heldout_final"],
            "early_label": "held-out, before training",
            "late_label": "held-out, after training"
            + (f" (step {last})" if last else ""),
        })
    return out


def sweep_figures(doc: dict, out_dir: Path, source: Path, *, jobs: int = 1) -> list[Path]:
    """All figures of a ``collapse_sweep`` results file (full or compact)."""
    tasks: list[FigureTask] = []
    summary = doc.get("summary") or []
    curve = doc.get("curve_summary") or []
    if summary:
        tasks.append(FigureTask("sweep_diameter", plot_diameter_vs_batch, (summary, curve),
                                "final held-out diameter vs batch size, with the "
                                "lower-bound curve D*(N/K, n, margin)",
                                kwargs={"field": "diameter"}))
        tasks.append(FigureTask("sweep_median", plot_diameter_vs_batch, (summary, ()),
                                "final held-out median pairwise distance vs batch size",
                                kwargs={"field": "median_distance"}))
    if doc.get("trend"):
        tasks.append(FigureTask("sweep_collapse_trend", plot_collapse_trend, (doc["trend"],),
                                "final/initial held-out diameter and fraction of "
                                "runs collapsed against batch size over embedding dimension"))
    if doc.get("lower_bound_curves"):
        tasks.append(FigureTask("sweep_lower_bound", plot_lower_bound_curve,
                                (doc["lower_bound_curves"], curve),
                                "D*(P, n, margin) vs classes per batch, with the "
                                "sweep's final diameters"))
    panels = _diagram_panels(doc)
    if panels:
        tasks.append(FigureTask("sweep_triplet_diagram", plot_triplet_diagram, (panels,),
                                "triplet diagram (S_ap vs S_an), early vs late, "
                                "batch-hard vs selectively contrastive"))
    if doc.get("crosscheck_slacks"):
        tasks.append(FigureTask("sweep_crosscheck", plot_crosscheck,
                                (doc["crosscheck_slacks"], doc.get("crosscheck_summary") or [],
                                 doc.get("statements")),
                                "relative slack of every bound on held-out batches"))
    return save_figures(tasks, out_dir, sources=[source], jobs=jobs)
