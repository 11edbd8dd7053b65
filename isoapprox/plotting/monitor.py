"""Curves over training from a :class:`~isoapprox.CollapseMonitor` log (Fig. 3 style).

:func:`plot_history` draws what the log holds (:func:`isoapprox.read_history`):
the losses, the diameter and the class spread, the distances to ``F_TS``
with their certified brackets at the theory evaluations, the active
triplets, the share of collapsed classes and when each signature held.
Nothing here computes a metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._lazy import matplotlib
from .._validation import check_instance
from ..exceptions import InvalidInputError
from ..monitor import MONITOR_SIGNATURES as SIGNATURE_NAMES
from ..monitor import MonitorHistory
from ._style import COLORS, FULL_WIDTH, log_if_wide, save_figure, style_context

__all__ = ["history_figures", "plot_history"]

_GREY = "#9A9A9A"
_LIGHT = "#C8C8C8"
_BAD = "#D55E00"
#: colour of each signature in the timeline and its onset lines
_SIGNATURE_COLORS = {"all_distances_small": "#000000", "stuck_at_margin": COLORS["d_haus"],
                     "stuck_at_ln2": COLORS["collapsed"], "class_collapse": COLORS["bound"],
                     "dimensional_collapse": COLORS["diameter"], "shrinking": COLORS["embedding"]}


#: an axes legend below its axes, never over the curves
_BELOW = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.12), "ncol": 1, "frameon": False,
          "fontsize": 8, "handlelength": 1.8, "borderaxespad": 0.0}


def _finite(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]


def plot_history(history: MonitorHistory, *, title: str = "") -> Any:
    """Six panels over training steps from a monitor history.

    Parameters
    ----------
    history : MonitorHistory
        From :func:`isoapprox.read_history` or :meth:`CollapseMonitor.history`.
    title : str
        Figure title (default: the log's name and the margin).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InvalidInputError
        If the history holds no evaluated update.
    """
    check_instance(history, MonitorHistory, "history")
    if not history.updates:
        raise InvalidInputError(
            f"the monitor log {history.source!r} holds no evaluated update "
            f"({len(history.bad_batches)} bad batch(es)); nothing to draw")
    plt = matplotlib().pyplot
    t = history.steps()
    col = history.column
    alpha = history.margin
    intervals = history.signature_intervals()
    with style_context():
        # constrained layout keeps the long signature names inside the page width
        fig, axes = plt.subplots(2, 3, figsize=(FULL_WIDTH, 6.6), sharex=True,
                                 layout="constrained")
        a1, a2, a3, a4, a5, a6 = axes.ravel()

        # loss -------------------------------------------------------------------
        rep = col("loss", None)
        if np.isfinite(rep).any():
            a1.plot(*_finite(t, rep), color=_LIGHT, lw=2.6, label="reported loss")
        a1.plot(*_finite(t, col("batch_hard_mean")), color=COLORS["loss"], lw=1.1,
                label="batch-hard, mean")
        a1.plot(*_finite(t, col("batch_hard_max")), color=COLORS["loss"], lw=0.8, ls="--",
                label="batch-hard, max")
        if alpha:
            a1.axhline(alpha, color=COLORS["bound"], ls=":", lw=1.0,
                       label=f"margin $\\alpha = {alpha:g}$")
        a1.set_ylim(bottom=0)
        a1.set_title("loss")
        a1.legend(**_BELOW)

        # diameter and class spread -------------------------------------------------
        d = col("diameter")
        a2.plot(*_finite(t, d), color=COLORS["diameter"], label="diameter")
        a2.plot(*_finite(t, col("max_class_diameter")), color=COLORS["embedding"], lw=0.9,
                ls="--", label="largest class diameter")
        a2.plot(*_finite(t, col("min_class_gap")), color=COLORS["ideal"], lw=0.9, ls=":",
                label="least gap between classes")
        log_if_wide(a2, d, col("max_class_diameter"), col("min_class_gap"))
        a2.set_title("diameter $= d_{iso}(f_\\theta, f_c)$")
        a2.legend(**_BELOW)

        # distances to the ideal set --------------------------------------------------
        have = np.isfinite(col("d_iso", "theory"))
        if have.any():
            tt = t[have]
            for key, color, label in (("d_iso", COLORS["d_iso"], "$d_{iso}(f_\\theta, F_{TS})$"),
                                      ("d_haus", COLORS["d_haus"],
                                       "$d_{haus}(f_\\theta, F_{TS})$")):
                lo, up = col(f"{key}_lower", "theory")[have], col(f"{key}_upper", "theory")[have]
                a3.fill_between(tt, lo, up, color=color, alpha=0.25, lw=0)
                a3.vlines(tt, lo, up, color=color, lw=1.2, alpha=0.6)
                a3.plot(tt, col(key, "theory")[have], "-o", color=color, ms=2.4, lw=1.0,
                        label=label)
            L = col("loss_max", "theory")[have]
            a3.plot(tt, 0.5 * L, color=COLORS["loss"], lw=0.8, ls=":", label="$L_{max}/2$")
            a3.plot(tt, L, color=COLORS["loss"], lw=0.8, ls="--", label="$L_{max}$")
            ds = col("d_star", "theory")[have]
            if np.isfinite(ds).any():
                a3.plot(tt, ds, color=COLORS["bound"], lw=0.8, ls="-.",
                        label="$D^*(P, n, \\alpha)$")
            a3.set_ylim(bottom=0)
            a3.legend(**_BELOW)
        else:
            a3.text(0.5, 0.5, "no theory evaluation in the log", transform=a3.transAxes,
                    ha="center", va="center", fontsize=8, color=_GREY, zorder=5,
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"})
        a3.set_title("distances to $F_{TS}$\n(subsample; bars: brackets)")

        # triplets ------------------------------------------------------------------
        a4.plot(*_finite(t, col("active_fraction")), color=COLORS["embedding"],
                label="active: $d(a,m) < d(a,p) + \\alpha$")
        a4.plot(*_finite(t, col("violated_fraction")), color=COLORS["ideal"], lw=0.9, ls="--",
                label="violated")
        a4.set_ylim(-0.02, 1.02)
        a4.set_title("share of triplets")
        a4.legend(**{**_BELOW, "bbox_to_anchor": (0.5, -0.3)})

        # collapsed classes ------------------------------------------------------------
        a5.plot(*_finite(t, col("collapsed_share")), color=COLORS["collapsed"], lw=1.2)
        a5.set_ylim(-0.02, 1.02)
        a5.set_title("share of collapsed classes")

        # signature timeline -------------------------------------------------------------
        last = np.nanmax(t) if np.isfinite(t).any() else 0.0
        rows = {name: k for k, name in enumerate(SIGNATURE_NAMES)}
        for iv in intervals:
            if iv["start"] is None:
                continue
            end = iv["end"] if iv["end"] is not None else last
            k = rows.get(iv["signature"], len(rows))
            color = _SIGNATURE_COLORS.get(iv["signature"], _GREY)
            a6.plot([iv["start"], max(end, iv["start"])], [k, k], color=color, lw=5,
                    solid_capstyle="butt")
            for ax in (a1, a2, a3, a4, a5):
                ax.axvline(iv["start"], color=color, lw=0.6, ls=(0, (1, 1.5)), zorder=0)
        bad = [b.get("step") for b in history.bad_batches if b.get("step") is not None]
        if bad:
            a6.plot(bad, [-1] * len(bad), "x", color=_BAD, ms=3.5)
        a6.set_yticks(range(-1, len(SIGNATURE_NAMES)),
                      ["bad batch", *(n.replace("_", " ") for n in SIGNATURE_NAMES)],
                      fontsize=8)
        a6.set_ylim(-1.6, len(SIGNATURE_NAMES) - 0.4)
        a6.set_title("signatures held\n(dotted lines: onsets)")

        for ax in (a4, a5, a6):
            ax.set_xlabel("training step")
        src = Path(history.source).name if history.source else "monitor"
        fig.suptitle(title or f"{src}: collapse monitor"
                     + (f", margin $\\alpha = {alpha:g}$" if alpha is not None else ""),
                     fontsize=8)
    return fig


def history_figures(history: MonitorHistory, out_dir: str | Path, *, name: str = "history",
                    sources: Sequence[str | Path] = ()) -> list[Path]:
    """Draw :func:`plot_history` into ``out_dir/name.{png,pdf}`` (and a provenance sidecar)."""
    fig = plot_history(history)
    return save_figure(fig, out_dir, name, sources=sources,
                       description="collapse monitor: curves over training")
