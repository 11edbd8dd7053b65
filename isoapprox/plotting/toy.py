"""Figures of the toy system (``experiment == "toy"`` results files; see docs/toy.md, "Figures").

Every function takes the results document (:func:`isoapprox.io.read_results`)
and returns a matplotlib ``Figure``; it computes no metric and draws the
scenario and steps the run recorded (``doc["figures"]``, ``snapshot_steps``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._lazy import axes_divider, matplotlib
from ..exceptions import InvalidInputError
from ..toy import JUNG_PLANE, PAPER_C, linked_groups
from ._place import label_hline, label_points
from ._style import (
    CLASS_COLORS,
    COLORS,
    COLUMN_WIDTH,
    FULL_WIDTH,
    FigureTask,
    class_style,
    log_if_wide,
    save_figures,
    style_context,
)

__all__ = [
    "plot_collapse",
    "plot_constant",
    "plot_curves",
    "plot_iso_example",
    "plot_toy_system",
    "toy_figures",
]

_GREY = "#9A9A9A"
_LIGHT = "#D9D9D9"
#: subscript digits: plain text where mathtext would only lower a number
#: (mathtext is kept for the notation, f_theta, d_iso, F_TS; plain text is
#: laid out, measured and embedded in the PDF at a fraction of its cost)
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


# ---------------------------------------------------------------------------
# access helpers
# ---------------------------------------------------------------------------


def _scenario(doc: dict[str, Any], name: str) -> dict[str, Any]:
    for s in doc.get("scenarios", []):
        if s["name"] == name:
            return s
    known = [s["name"] for s in doc.get("scenarios", [])]
    raise InvalidInputError(f"no scenario {name!r} in the results; known: {known}")


def _rows(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    rows = [r for r in doc["records"] if r.get("part") == "trajectory" and r["scenario"] == name]
    if not rows:
        raise InvalidInputError(f"the results hold no trajectory records of scenario {name!r}")
    return sorted(rows, key=lambda r: r["step"])


def _row_at(doc: dict[str, Any], name: str, step: int) -> dict[str, Any]:
    for r in _rows(doc, name):
        if r["step"] == step:
            return r
    raise InvalidInputError(f"scenario {name!r} has no evaluated step {step}")


def _col(rows: Sequence[dict[str, Any]], key: str) -> np.ndarray:
    return np.array([np.nan if r.get(key) is None else r[key] for r in rows], dtype=float)


def _example(doc: dict[str, Any], scenario: str | None,
             step: int | None) -> tuple[str, int, dict[str, Any]]:
    """The scenario, step and record drawn (default: the run's recorded example)."""
    fig = doc.get("figures") or {}
    name = scenario or fig.get("example_scenario") or doc["scenarios"][0]["name"]
    st = int(fig.get("example_step", 0)) if step is None else step
    return name, st, _row_at(doc, name, st)


# ---------------------------------------------------------------------------
# drawing helpers
# ---------------------------------------------------------------------------


def outcome_phrase(sc: dict[str, Any]) -> str:
    """The scenario's measured outcome in words (what its figures' titles say)."""
    out = sc["outcome"]
    if out == "collapsed":
        return "sequential collapse" if sc.get("sequential") else "collapse"
    return {"separated": "separated (zero loss)", "neither": "neither collapsed nor separated",
            "diverged": "diverged"}.get(out, out)


def _class_color(c: int) -> str:
    return class_style(int(c))[0]


def _points(ax, P, labels, *, hollow=False, size=34, numbers=True, zorder=4, alpha=1.0,
            marker="o") -> list:
    """Scatter ``P`` in class colours; returns the point numbers still to be placed
    (``[(ax, P, texts, colours)]``, empty when ``numbers`` is False) for :func:`_number`."""
    P = np.asarray(P, dtype=float)
    for k, (x, y) in enumerate(P):
        col = _class_color(labels[k])
        paint = ({"facecolors": "white", "edgecolors": col, "linewidths": 1.3} if hollow
                 else {"color": col, "edgecolors": "white", "linewidths": 0.6})
        ax.scatter([x], [y], s=size, marker=marker, zorder=zorder, alpha=alpha, **paint)
    if not numbers:
        return []
    return [(ax, P, [str(k + 1) for k in range(len(P))],
             [_class_color(c) for c in labels])]


def _number(pending, *, laid_out: bool = False) -> None:
    """Place the point numbers of :func:`_points` where they cover no text, marker or line
    (after the layout is final; ``laid_out`` as in :func:`label_points`)."""
    for k, (ax, P, texts, colors) in enumerate(pending):
        label_points(ax, P, texts, colors=colors, fontsize=8, zorder=6,
                     laid_out=laid_out or k > 0)


def _triplets(ax, P, labels, hard_pos, hard_neg, *, alpha=1.0) -> None:
    """Hardest positive (solid, class colour) and hardest negative (dashed) of each anchor."""
    P = np.asarray(P, dtype=float)
    seen: set[tuple[bool, int, int]] = set()  # (positive, a, b): each pair drawn once a kind
    for a in range(len(P)):
        for positive, b in ((True, hard_pos[a]), (False, hard_neg[a])):
            if b is None or b < 0 or (positive, min(a, b), max(a, b)) in seen:
                continue
            seen.add((positive, min(a, b), max(a, b)))
            style = ({"color": _class_color(labels[a]), "lw": 1.3, "zorder": 2,
                      "solid_capstyle": "round"} if positive else
                     {"color": "#444444", "lw": 0.8, "ls": (0, (3, 2)), "zorder": 1})
            ax.plot(*P[[a, b]].T, alpha=alpha, **style)


def _limits(*arrays, pad=0.12) -> tuple[tuple[float, float], tuple[float, float]]:
    """Square limits around the points of ``arrays``, ``pad`` of their span on each side."""
    A = np.vstack([np.asarray(a, dtype=float).reshape(-1, 2) for a in arrays])
    lo, hi = A.min(axis=0), A.max(axis=0)
    half = (max(float((hi - lo).max()), 1e-12) / 2) * (1 + 2 * pad)
    centre = (lo + hi) / 2
    return ((centre[0] - half, centre[0] + half), (centre[1] - half, centre[1] + half))


def _frame(ax, lims, *, ticks=True) -> None:
    ax.set_xlim(*lims[0])
    ax.set_ylim(*lims[1])
    ax.set_aspect("equal", adjustable="box")
    if not ticks:
        ax.set_xticks([])
        ax.set_yticks([])
    for side in ("top", "right"):
        ax.spines[side].set_visible(True)
    for sp in ax.spines.values():
        sp.set_color(_LIGHT)


def _below(ax, text, fontsize=8) -> None:
    """Statistics of a panel, in place of its x label."""
    ax.set_xlabel(text, fontsize=fontsize, linespacing=1.4)


def _textbox(ax, text, loc="upper left", fontsize=8) -> None:
    x, ha = (0.03, "left") if "left" in loc else (0.97, "right")
    y, va = (0.97, "top") if "upper" in loc else (0.03, "bottom")
    ax.text(x, y, text, transform=ax.transAxes, ha=ha, va=va, fontsize=fontsize,
            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": _LIGHT, "alpha": 0.9},
            zorder=10)


def _triplet_legend(fig, labels, *, y=0.0, extra=()) -> None:
    Line2D = matplotlib().lines.Line2D

    classes = sorted(set(int(c) for c in labels))
    handles = [Line2D([], [], marker="o", ls="", color=_class_color(c), label=f"class {c}")
               for c in classes]
    handles += [Line2D([], [], color="#444444", lw=1.3, label="anchor - hardest positive"),
                Line2D([], [], color="#444444", lw=0.8, ls=(0, (3, 2)),
                       label="anchor - hardest negative")]
    handles += list(extra)
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.5, y), fontsize=8, handlelength=2.2, columnspacing=1.2)


def _steps_axis(ax) -> None:
    ax.set_xscale("symlog", linthresh=1.0, linscale=0.4)
    ax.set_xlabel("gradient step t")
    ax.set_xlim(left=0)


# ---------------------------------------------------------------------------
# Fig. 2 style: the toy system
# ---------------------------------------------------------------------------


def plot_toy_system(doc: dict[str, Any], *, scenario: str | None = None,
                    step: int | None = None):
    """Inputs, ``f_theta``, nearest ideal ``f*`` and the collapsed embedding (four axes).

    ``scenario`` and ``step`` choose the embedding (default: the run's recorded example).
    """
    plt = matplotlib().pyplot
    name, st, r = _example(doc, scenario, step)
    sc = _scenario(doc, name)
    y = r["labels"]
    X = np.asarray(doc["inputs"], dtype=float)
    E = np.asarray(r["embedding"], dtype=float)
    F = np.asarray(r["fstar_aligned"], dtype=float)
    c = np.asarray(r["center"], dtype=float)
    R = r["radius"]
    lims = _limits(E, F, circle_full(c, R, 9), pad=0.1)
    with style_context():
        fig, axes = plt.subplots(1, 4, figsize=(FULL_WIDTH, 2.45))
        ax = axes[0]
        pending = _points(ax, X, y)
        _frame(ax, _limits(X, pad=0.15))
        ax.set_title("inputs xₖ")
        ax.set_ylabel("input coordinates")
        _below(ax, f"labels {', '.join(str(v) for v in y)}\n(numbers: point index k)")

        ax = axes[1]
        _triplets(ax, E, y, r["hard_pos"], r["hard_neg"])
        pending += _points(ax, E, y)
        _frame(ax, lims)
        ax.set_title(f"embedding $f_\\theta$ (step {st})")
        ax.set_ylabel("embedding coordinates")
        _below(ax, f"$L_{{max}}(f_\\theta) = {r['loss_max']:.3f}$\n"
                   f"margin α = {sc['margin']:g}")

        ax = axes[2]
        _points(ax, E, y, numbers=False, alpha=0.25, size=22)
        _triplets(ax, F, y, r["fstar_hard_pos"], r["fstar_hard_neg"])
        pending += _points(ax, F, y, marker="D", size=28)
        _frame(ax, lims)
        ax.set_title("nearest ideal $f^*\\in F_{TS}$")
        _below(ax, f"$d_{{iso}}(f_\\theta, F_{{TS}}) = {r['d_iso']:.3f}$\n"
                   f"$d_{{haus}}(f_\\theta, f^*) = {r['d_haus_fstar']:.3f}$ ({r['fstar_kind']})")

        ax = axes[3]
        _points(ax, E, y, numbers=False, alpha=0.35, size=22)
        ax.plot(*circle_full(c, R).T, color=COLORS["collapsed"], lw=0.8, ls=(0, (1, 1.5)))
        for e in E:
            ax.plot(*np.stack([e, c]).T, color=_LIGHT, lw=0.6, zorder=1)
        ax.scatter([c[0]], [c[1]], s=46, color=COLORS["collapsed"], edgecolors="white",
                   linewidths=0.6, zorder=5)
        _frame(ax, lims)
        ax.set_title("collapsed $f_c$")
        _below(ax, f"$d_{{iso}}(f_\\theta, f_c) = $ diam $= {r['diameter']:.3f}$\n"
                   f"$d_{{haus}}(f_\\theta, f_c) = R = {R:.3f}$")
        for a in axes[1:]:
            a.tick_params(labelsize=8)
        Line2D = matplotlib().lines.Line2D

        extra = [Line2D([], [], marker="D", ls="", color="#444444", label="$f^*$ (aligned)")]
        fig.tight_layout(rect=(0, 0.09, 1, 1), w_pad=0.8)
        _triplet_legend(fig, y, y=0.0, extra=extra)
        _number(pending)
        label_points(axes[3], [c], ["1-5"], colors=[COLORS["collapsed"]], fontsize=8, zorder=6,
                     laid_out=True)
    return fig


def circle_full(c: np.ndarray, R: float, n: int = 200) -> np.ndarray:
    """Points of the circle of centre ``c`` and radius ``R`` (drawing helper)."""
    t = np.linspace(0, 2 * np.pi, n)
    return np.asarray(c, dtype=float) + R * np.stack([np.cos(t), np.sin(t)], axis=1)


# ---------------------------------------------------------------------------
# Fig. 3 style: one example of d_iso, and the curves over training
# ---------------------------------------------------------------------------


def plot_iso_example(doc: dict[str, Any], *, scenario: str | None = None,
                     step: int | None = None):
    """``f_theta`` and ``f*`` with the pair whose distance changes most (``d_iso``), one axes."""
    plt = matplotlib().pyplot
    name, st, r = _example(doc, scenario, step)
    y = r["labels"]
    E = np.asarray(r["embedding"], dtype=float)
    F = np.asarray(r["fstar_aligned"], dtype=float)
    i, j = r["iso_pair"]
    with style_context():
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 3.3))
        ax.plot(*E[[i, j]].T, color=COLORS["embedding"], lw=2.0, zorder=3,
                solid_capstyle="round")
        ax.plot(*F[[i, j]].T, color=COLORS["ideal"], lw=2.0, zorder=3, solid_capstyle="round")
        pending = _points(ax, E, y, size=36)
        pending += _points(ax, F, y, hollow=True, marker="D", size=30)
        lims = _limits(E, F, pad=0.16)
        _frame(ax, lims)
        ax.set_xlabel("embedding coordinate 1")
        ax.set_ylabel("embedding coordinate 2")
        ax.set_title(f"$d_{{iso}}(f_\\theta, F_{{TS}}) = |{r['iso_pair_d']:.3f} - "
                     f"{r['iso_pair_d_star']:.3f}| = {r['d_iso']:.3f}$", fontsize=8)
        Line2D = matplotlib().lines.Line2D

        handles = [
            Line2D([], [], marker="o", ls="", color="#444444", label=f"$f_\\theta$ (step {st})"),
            Line2D([], [], marker="D", ls="", mfc="white", mec="#444444",
                   label="nearest ideal $f^*$ (aligned)"),
            Line2D([], [], color=COLORS["embedding"], lw=2,
                   label=f"$d_{{f_\\theta}}(x_{i + 1}, x_{j + 1})$"),
            Line2D([], [], color=COLORS["ideal"], lw=2, label=f"$d_{{f^*}}(x_{i + 1}, x_{j + 1})$"),
        ]
        fig.tight_layout(rect=(0, 0.15, 1, 1))
        fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 0.0), columnspacing=1.0)
        # the two lengths first (beside their segments), then the point numbers
        label_points(ax, [E[[i, j]].mean(axis=0), F[[i, j]].mean(axis=0)],
                     [f"{r['iso_pair_d']:.3f}", f"{r['iso_pair_d_star']:.3f}"],
                     colors=[COLORS["embedding"], COLORS["ideal"]], fontsize=8, zorder=6,
                     fontweight="bold")
        _number(pending, laid_out=True)
    return fig


def _below_legend(ncol: int, y: float = -0.2) -> dict[str, Any]:
    """Keywords of an axes legend below the axes (under its x label, ``y`` axes heights
    below the axes)."""
    return {"loc": "upper center", "bbox_to_anchor": (0.5, y), "ncol": ncol,
            "frameon": False, "fontsize": 8, "handlelength": 1.8, "columnspacing": 1.0,
            "borderaxespad": 0.0}


#: a bracket narrower than this share of its largest upper end is not seen beside its curve
BRACKET_SEEN_RTOL = 0.01


def _brackets(ax, t, rows, keys: Sequence[tuple[str, str]], what: str) -> str:
    """Shade the certified brackets ``[key_lower, key_upper]`` of ``keys`` (key, colour),
    named ``"shaded: <what>"`` in the legend, unless every one is narrower than its
    curve's line; then nothing is drawn and the words for the title are returned."""
    thin = True
    for key, _ in keys:
        lo, hi = _col(rows, f"{key}_lower"), _col(rows, f"{key}_upper")
        ok = np.isfinite(lo) & np.isfinite(hi)
        if ok.any():
            top = float(np.max(np.abs(hi[ok])))
            thin &= float(np.max(hi[ok] - lo[ok])) <= BRACKET_SEEN_RTOL * top
    if thin:
        return f"{what}: within the line"
    for key, color in keys:
        ax.fill_between(t, _col(rows, f"{key}_lower"), _col(rows, f"{key}_upper"),
                        color=color, alpha=0.3, lw=0, label=f"shaded: {what}")
    return ""


def _titled(title: str, note: str) -> str:
    return f"{title}\n({note})" if note else title


def _legend(ax, ncol: int, y: float = -0.2) -> None:
    """The axes' legend below it, one entry per label (shadings may share one)."""
    named = dict(zip(*ax.get_legend_handles_labels()[::-1], strict=True))
    ax.legend(list(named.values()), list(named), **_below_legend(ncol, y))


def plot_curves(doc: dict[str, Any], scenario: str):
    """Loss, distances to ``F_TS`` with bounds, constants, thickness and diameter (five axes).

    Every shading is named in its panel's legend: the band from ``d_iso / 2`` to
    ``c d_iso`` (the run's largest ``c``) and the certified brackets of ``d_iso``,
    ``d_haus``, ``c`` and ``theta``.  A bracket narrower than its line (within
    :data:`BRACKET_SEEN_RTOL` of the curve, as where the solvers certify to 1e-4 or
    better) is not drawn; the panel's title says so.
    """
    plt = matplotlib().pyplot
    sc = _scenario(doc, scenario)
    rows = _rows(doc, scenario)
    t = _col(rows, "step")
    alpha = sc["margin"]
    c_run = sc["c_max"]
    h = sc["history"]
    with style_context():
        # legends below their panels (constrained layout makes room): never over a curve
        fig = plt.figure(figsize=(FULL_WIDTH, 6.6), layout="constrained")
        gs = fig.add_gridspec(2, 6)
        a1 = fig.add_subplot(gs[0, :3])
        a2 = fig.add_subplot(gs[0, 3:], sharex=a1)
        a3 = fig.add_subplot(gs[1, :2], sharex=a1)
        a4 = fig.add_subplot(gs[1, 2:4], sharex=a1)
        a5 = fig.add_subplot(gs[1, 4:], sharex=a1)

        a1.plot(h["step"], h["loss_mean"], color=_LIGHT, lw=0.8, zorder=1,
                label="$L_{mean}$, every step")
        a1.plot(t, _col(rows, "loss_mean"), "-o", color=_GREY, lw=0.9, ms=2.2, zorder=2,
                label="$L_{mean}$ (training loss)")
        a1.plot(t, _col(rows, "loss_max"), "-", color=COLORS["loss"], lw=1.3, zorder=3,
                label="$L_{max}$ (theory)")
        a1.axhline(alpha, color=COLORS["bound"], ls=":", lw=1.0, zorder=0,
                   label=f"margin α = {alpha:g}")
        a1.set_ylabel("batch-hard loss")
        a1.set_title("loss")
        a1.set_ylim(bottom=0)
        a1.legend(**_below_legend(2))

        d_iso = _col(rows, "d_iso")
        d_h = _col(rows, "d_haus")
        d_hf = _col(rows, "d_haus_fstar")
        cb = c_run if c_run is not None else 0.5
        a2.fill_between(t, 0.5 * d_iso, cb * d_iso, color=COLORS["bound"], alpha=0.13, lw=0,
                        label=f"shaded: $\\frac{{1}}{{2}}d_{{iso}}$ to $c\\,d_{{iso}}$, "
                              f"$c={cb:.3f}$")
        note2 = _brackets(a2, t, rows, (("d_iso", COLORS["d_iso"]),
                                        ("d_haus", COLORS["d_haus"])), "certified brackets")
        a2.plot(t, d_iso, color=COLORS["d_iso"], label="$d_{iso}(f_\\theta, F_{TS})$")
        a2.plot(t, d_h, color=COLORS["d_haus"], label="$d_{haus}(f_\\theta, F_{TS})$")
        a2.plot(t, d_hf, color=COLORS["d_haus"], ls=(0, (2.5, 1.5)), lw=1.0,
                label="$d_{haus}(f_\\theta, f^*)$")
        a2.plot(t, 0.5 * _col(rows, "loss_max"), color=COLORS["loss"], lw=0.8, ls=":",
                label="$L_{max}/2$")
        pos = np.concatenate([d_iso[d_iso > 0], d_h[d_h > 0]])
        log_if_wide(a2, pos)
        if a2.get_yscale() != "log":
            a2.set_ylim(bottom=0)
        a2.set_ylabel("distance (embedding units)")
        a2.set_title(_titled("distances to $F_{TS}$", note2))
        _legend(a2, 2)

        c = _col(rows, "c")
        note3 = _brackets(a3, t, rows, (("c", COLORS["d_haus"]),), "certified bracket of c")
        a3.plot(t, c, color=COLORS["d_haus"], label="$c = d_{haus}/d_{iso}$ to $F_{TS}$")
        a3.plot(t, _col(rows, "ratio_fstar"), color=COLORS["d_haus"], ls=(0, (2.5, 1.5)),
                lw=1.0, label="$d_{haus}(f_\\theta, f^*)/d_{iso}$")
        # the reference lines lie too close together for labels beside them: the legend names them
        for val, label, ls in ((0.5, "floor 1/2", "-"), (PAPER_C, "paper: 0.53", "--"),
                               (JUNG_PLANE, "1/√3 (Jung)", ":")):
            a3.axhline(val, color=COLORS["bound"], lw=0.8, ls=ls, zorder=1, label=label)
        top = np.nanmax(np.concatenate([c, _col(rows, "ratio_fstar"), [JUNG_PLANE]]))
        a3.set_ylim(0.45, 0.45 + (top - 0.45) * 1.1)
        a3.set_ylabel("ratio")
        a3.set_title(_titled("constants", note3.replace("certified ", "")))
        _legend(a3, 1, -0.3)

        a4.plot(t, _col(rows, "theta"), color=COLORS["embedding"], lw=1.0,
                label="$\\theta(f_\\theta)$")
        note4 = _brackets(a4, t, rows, (("theta", COLORS["embedding"]),),
                          "certified bracket of θ")
        a4.set_ylim(0, 1)
        if not note4:
            _legend(a4, 1, -0.3)
        a4.set_ylabel("$\\theta(f_\\theta)$ (width / diameter)")
        a4.set_title(_titled("thickness", note4.replace("certified ", "")))

        a5.plot(h["step"], h["diameter"], color=COLORS["diameter"], lw=1.0,
                label="diam $f_\\theta$ $= d_{iso}(f_\\theta, f_c)$")
        a5.plot(t, _col(rows, "radius"), color=COLORS["collapsed"], lw=0.9, ls="--",
                label="$R = d_{haus}(f_\\theta, f_c)$")
        a5.plot(t, _col(rows, "fstar_diameter"), color=COLORS["ideal"], lw=0.9,
                label="diam $f^*$")
        for st, _k in sc["merge_events"]:
            a5.axvline(st, color=_LIGHT, lw=0.8, zorder=0)
        a5.set_yscale("log")
        a5.set_ylabel("length (embedding units)")
        a5.set_title("diameter" + (" (grey: merges)" if sc["merge_events"] else ""))
        a5.legend(**_below_legend(1, -0.3))
        for a in (a1, a2, a3, a4, a5):
            _steps_axis(a)
        for a in (a1, a2):
            a.set_xlabel("")
        fig.suptitle(f"scenario '{scenario}' ({sc['description']}): {outcome_phrase(sc)}",
                     fontsize=8)
    return fig


# ---------------------------------------------------------------------------
# Fig. 4 style: sequential collapse
# ---------------------------------------------------------------------------


#: marker area (pt^2) of the points of the zoomed views
_ZOOM_DOT = 16.0


def merged_groups(E: np.ndarray, threshold: float) -> list[list[int]]:
    """The points of ``E`` merged at ``threshold``: groups linked by distances at most
    ``threshold`` (single linkage, as the toy's merge events), singletons included.

    Examples
    --------
    >>> merged_groups(np.array([[0.0, 0.0], [0.05, 0.0], [1.0, 0.0]]), 0.1)
    [[0, 1], [2]]
    """
    E = np.asarray(E, dtype=float)
    diff = E[:, None, :] - E[None, :, :]
    return linked_groups(np.sqrt((diff ** 2).sum(-1))[np.triu_indices(len(E), 1)], threshold,
                         len(E))


def drawn_groups(ax: Any, E: np.ndarray, merged: Sequence[Sequence[int]], *,
                 dot: float) -> list[list[int]]:
    """The groups one label each names in a zoomed view: points of one merged group whose
    dots (area ``dot`` pt^2) overlap on the drawn axes (chains of overlaps count).

    Call once the layout is final.  A label so names one visible dot, never points
    that are drawn apart, nor points that are not merged.
    """
    xy = ax.transData.transform(np.asarray(E, dtype=float))
    reach = np.sqrt(dot) * ax.figure.dpi / 72.0  # one dot's diameter (px)
    group_of = {i: k for k, g in enumerate(merged) for i in g}
    N = len(xy)
    iu, ju = np.triu_indices(N, 1)
    close = [k for k in range(len(iu))
             if group_of[int(iu[k])] == group_of[int(ju[k])]
             and np.hypot(*(xy[iu[k]] - xy[ju[k]])) < reach]
    return linked_groups(np.where(np.isin(np.arange(len(iu)), close), 0.0, 1.0), 0.5, N)


def _groups_text(groups: Sequence[Sequence[int]]) -> str:
    """``{1,4} {2,5}`` (points from 1) of the groups of two or more points; ``none``."""
    big = [g for g in groups if len(g) > 1]
    return " ".join("{" + ",".join(str(i + 1) for i in g) + "}" for g in big) or "none"


def plot_collapse(doc: dict[str, Any], scenario: str):
    """Snapshots of a run (common scale, zoomed: ``2 k`` axes) and its pairwise distances.

    Fig. 4 style, for every scenario: step 0, each merge and, unless it collapsed, its end.
    Below each zoomed view: the groups merged at that step (:func:`merged_groups` of its
    points at the run's merge threshold); each label in the view names the points of one
    drawn dot of a merged group (:func:`drawn_groups`), so that a label never names
    points drawn apart.
    """
    plt = matplotlib().pyplot
    sc = _scenario(doc, scenario)
    steps = sc["snapshot_steps"]
    rows = [_row_at(doc, scenario, s) for s in steps]
    y = sc["labels"]
    k = len(rows)
    with style_context():
        fig = plt.figure(figsize=(FULL_WIDTH, 1.25 * 2 + 3.0))
        gs = fig.add_gridspec(3, k, height_ratios=[1, 1, 1.45], hspace=0.7, wspace=0.08)
        allE = [np.asarray(r["embedding"]) for r in rows]
        allF = [np.asarray(r["fstar_aligned"]) for r in rows]
        common = _limits(*allE, *allF, pad=0.06)
        thr = float(sc["merge_threshold"])
        zooms = []  # (axes, points, merged groups) of the zoomed views, labelled at the end
        for n, (r, E, F) in enumerate(zip(rows, allE, allF, strict=True)):
            ax = fig.add_subplot(gs[0, n])
            _points(ax, F, y, hollow=True, marker="D", size=14, numbers=False)
            _points(ax, E, y, size=14, numbers=False)
            _frame(ax, common, ticks=False)
            ax.set_title(f"step {r['step']}", fontsize=8)
            ax.text(0.5, -0.04, f"$d_{{haus}}={r['d_haus']:.3f}$",
                    transform=ax.transAxes, ha="center", va="top", fontsize=8)
            if n == 0:
                ax.set_ylabel("common\nscale", fontsize=8)
            ax2 = fig.add_subplot(gs[1, n], gid="zoom")
            zl = _limits(E, pad=0.3)
            for i in range(len(E)):
                ax2.scatter(*E[i], s=_ZOOM_DOT, color=_class_color(y[i]), edgecolors="white",
                            linewidths=0.4, zorder=4)
            _frame(ax2, zl, ticks=False)
            merged = merged_groups(E, thr)
            ax2.text(0.5, -0.04, f"diam = {r['diameter']:.2g}\nmerged: {_groups_text(merged)}",
                     transform=ax2.transAxes, ha="center", va="top", fontsize=8,
                     linespacing=1.3, gid="zoom-merged")
            zooms.append((ax2, E, merged))
            if n == 0:
                ax2.set_ylabel("zoom on\n$f_\\theta$", fontsize=8)
        ax = fig.add_subplot(gs[2, :])
        h = sc["history"]
        D = np.asarray(h["distances"], dtype=float)
        hs = np.asarray(h["step"], dtype=float)
        ax.plot(hs, D, color=_LIGHT, lw=0.5, zorder=1)
        if h.get("linkage") is not None:
            L = np.asarray(h["linkage"], dtype=float)
            N = L.shape[1] + 1
            cmap = plt.get_cmap("viridis")
            for kk in range(L.shape[1]):
                h_k = "h" + str(kk + 1).translate(_SUB)
                ax.plot(hs, L[:, kk], color=cmap(kk / max(L.shape[1] - 1, 1) * 0.85), lw=1.1,
                        zorder=3, label=f"{h_k}: {N - kk} → {N - kk - 1} clusters")
        for s_ in steps:
            ax.axvline(s_, color=_GREY, lw=0.7, ls=(0, (1, 1.5)), zorder=0)
        ax.axhline(sc["merge_threshold"], color=COLORS["bound"], lw=0.8, ls=":")
        ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.32),
                  ncol=4, columnspacing=1.0, handlelength=1.8)
        ax.set_yscale("log")
        _steps_axis(ax)
        ax.set_ylabel("distance (embedding units)")
        ax.set_title("single-linkage heights hₖ (grey: all pairwise distances; dotted: the "
                     "snapshots)", fontsize=8)
        Line2D = matplotlib().lines.Line2D

        handles = [Line2D([], [], marker="o", ls="", color="#444444", label="$f_\\theta$"),
                   Line2D([], [], marker="D", ls="", mfc="white", mec="#444444",
                          label="nearest ideal $f^*$")]
        handles.append(Line2D([], [], ls="", label="$d_{haus}$: of $f_\\theta$ to $F_{TS}$"))
        fig.legend(handles=handles, loc="upper center", ncol=3, frameon=False, fontsize=8,
                   bbox_to_anchor=(0.5, 0.965), handletextpad=0.3)
        fig.suptitle(f"{outcome_phrase(sc)}: scenario '{scenario}' ({sc['description']})",
                     fontsize=8, y=0.995)
        fig.subplots_adjust(top=0.88, bottom=0.16, left=0.07, right=0.98)
        fig.draw_without_rendering()  # the layout is final: one pass for every label below
        for ax2, E, merged in zooms:
            groups = drawn_groups(ax2, E, merged, dot=_ZOOM_DOT)
            cols = [_class_color(y[g[0]]) if len({y[i] for i in g}) == 1 else "#444444"
                    for g in groups]
            anns = label_points(ax2, [E[g].mean(axis=0) for g in groups],
                                [",".join(str(i + 1) for i in g) for g in groups],
                                colors=cols, fontsize=8, zorder=6, laid_out=True)
            for a in anns:
                a.set_gid("zoom-label")
        label_hline(ax, sc["merge_threshold"], "merge threshold", color=COLORS["bound"],
                    fontsize=8, laid_out=True)
    return fig


# ---------------------------------------------------------------------------
# the constant over random toys
# ---------------------------------------------------------------------------


def plot_constant(doc: dict[str, Any]):
    """Histograms of ``c`` and ``d_haus(f, f*)/d_iso`` over the random toys (two axes),
    the trained runs' constants marked above the first.

    The bars of the margins are stacked (each bar's height is the count over every
    margin); the y label says so.
    """
    mpl = matplotlib()
    plt = mpl.pyplot
    Line2D = mpl.lines.Line2D
    Patch = mpl.patches.Patch

    rows = [r for r in doc["records"] if r.get("part") == "random" and r.get("c") is not None]
    if not rows:
        raise InvalidInputError("the results hold no random toy with a defined constant")
    margins = sorted({r["margin"] for r in rows})
    colors = [CLASS_COLORS[(2 + 2 * k) % len(CLASS_COLORS)] for k in range(len(margins))]
    summ = doc.get("random_summary", {}).get("all", {})
    refs = ((0.5, "floor 1/2", "-"), (PAPER_C, "paper: c = 0.53", "--"),
            (JUNG_PLANE, "1/√3 (collapse, Jung)", ":"))
    with style_context():
        fig, axes = plt.subplots(1, 2, figsize=(FULL_WIDTH, 3.4))
        for ax, key, title in ((axes[0], "c", "$c = d_{haus}(f, F_{TS})\\,/\\,d_{iso}(f, F_{TS})$"),
                               (axes[1], "ratio_fstar",
                                "$d_{haus}(f, f^*)\\,/\\,d_{iso}(f, F_{TS})$")):
            vals = [np.array([r[key] for r in rows if r["margin"] == m and r[key] is not None])
                    for m in margins]
            allv = np.concatenate(vals)
            bins = np.linspace(0.45, max(1.0, float(allv.max())) + 0.03, 45)
            ax.hist(vals, bins=bins, stacked=True, color=colors, edgecolor="white",
                    linewidth=0.3)
            for val, _lab, ls in refs:
                ax.axvline(val, color="#222222", lw=0.8, ls=ls)
            st = summ.get(key, {})
            if st.get("n"):
                _textbox(ax, f"{st['n']} toys\nmin {st['min']:.3f}\nmedian {st['median']:.3f}\n"
                             f"max {st['max']:.3f}", loc="upper right")
            ax.set_xlabel("ratio (dimensionless)")
            ax.set_title(title)
            ax.set_xlim(bins[0], bins[-1])
        marks = [(sc["name"], sc["c_min"], sc["c_max"], sc["c_final"])
                 for sc in doc.get("scenarios", []) if sc.get("c_max") is not None]
        if marks:
            strip = axes_divider(axes[0]).append_axes("top", size="45%", pad=0.05,
                                                             sharex=axes[0])
            for n, (name, cmin, cmax, cend) in enumerate(marks):
                strip.plot([cmin, cmax], [n, n], color="#444444", lw=1.2,
                           solid_capstyle="butt")
                if cend is not None:
                    strip.plot([cend], [n], marker="o", ms=3, color="#444444", mfc="white")
                strip.annotate(name, (cmax, n), xytext=(4, 0), textcoords="offset points",
                               va="center", fontsize=8, color="#444444")
            for val, _lab, ls in refs:
                strip.axvline(val, color="#222222", lw=0.8, ls=ls)
            strip.set_ylim(-0.7, len(marks) - 0.3)
            strip.invert_yaxis()
            strip.set_yticks([])
            strip.tick_params(labelbottom=False)
            strip.spines["left"].set_visible(False)
            strip.set_title(axes[0].get_title())
            axes[0].set_title("")
        axes[0].set_ylabel("random toys (stacked by margin)")
        handles = [Patch(color=col, label=f"margin {m:g}")
                   for m, col in zip(margins, colors, strict=True)]
        handles += [Line2D([], [], color="#222222", lw=0.8, ls=ls, label=lab)
                    for _v, lab, ls in refs]
        if marks:
            handles.append(Line2D([], [], color="#444444", marker="o", ms=3, mfc="white",
                                  lw=1.2, label="trained runs: range of $c$, o = end"))
        n_sep = summ.get("n_separated", 0)
        fig.suptitle(f"the empirical constant over {summ.get('n', len(rows))} random 5-point "
                     f"embeddings in the plane\n({n_sep} already triplet-separated: undefined, "
                     "not shown)", fontsize=8)
        fig.tight_layout(rect=(0, 0.2, 1, 1))
        fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False,
                   fontsize=8, bbox_to_anchor=(0.5, 0.0), columnspacing=1.1,
                   handlelength=1.8)
    return fig


# ---------------------------------------------------------------------------
# builder
# ---------------------------------------------------------------------------


def toy_figures(doc: dict[str, Any], out_dir: Path, source: Path, *,
                jobs: int = 1) -> list[Path]:
    """Every toy figure of a results document, saved as PNG and PDF (in ``jobs``
    worker processes: :func:`isoapprox.plotting._style.save_figures`)."""
    tasks = [
        FigureTask("toy_system", plot_toy_system, (doc,),
                   "inputs, f_theta, nearest ideal f* and collapsed embedding (Fig. 2 style)"),
        FigureTask("toy_iso_example", plot_iso_example, (doc,),
                   "the pair whose distance changes most between f_theta and f*: d_iso "
                   "(Fig. 3 style)"),
    ]
    for s in doc["scenarios"]:
        tasks.append(FigureTask(
            f"toy_curves_{s['name']}", plot_curves, (doc, s["name"]),
            f"loss, distances to F_TS, bounds and constants over training ({s['name']})"))
    for s in doc["scenarios"]:
        tasks.append(FigureTask(
            f"toy_collapse_{s['name']}", plot_collapse, (doc, s["name"]),
            f"snapshots, merges and pairwise distances ({s['name']}: {outcome_phrase(s)}; "
            "Fig. 4 style)"))
    if any(r.get("part") == "random" and r.get("c") is not None for r in doc["records"]):
        tasks.append(FigureTask("toy_constant", plot_constant, (doc,),
                                "the empirical constant over random toys against 1/2 and 0.53"))
    return save_figures(tasks, out_dir, sources=[source], jobs=jobs)
