"""Checks of a drawn figure through matplotlib's renderer: what a reader sees.

:func:`figure_problems` draws a figure once, records every text the renderer
actually draws (tick labels of ticks outside the view are not drawn, so they
are not checked) and every plotted marker, and lists what would spoil the
printed figure:

* a font under :data:`MIN_FONT_PT` points (the figure is printed at its size
  in inches, at most :data:`MAX_WIDTH_IN` wide);
* two texts whose bounding boxes overlap;
* a text over a marker (scatter offsets and line markers, in display units,
  each marker a square of its size);
* a text inside an axes crossed by a plotted curve (unless the text sits on an
  opaque box, which hides the curve).

:func:`saved_problems` checks written files: PNG at :data:`MIN_DPI` or more
with a PDF beside it.  Both return lists of strings (empty when all is well)
so that a test can show every problem at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image  # pillow: a dependency of matplotlib

from isoapprox._lazy import matplotlib

#: smallest font size at the printed size
MIN_FONT_PT = 8.0
#: a double-column figure
MAX_WIDTH_IN = 7.0
#: smallest resolution of a PNG
MIN_DPI = 200.0
#: overlaps smaller than this (display pixels at the figure's dpi) in either
#: direction are touching, not overlapping: glyph boxes include blank bearings
TOUCH_PX = 1.0


@contextlib.contextmanager
def _record_drawn_texts(drawn: list):
    Text = matplotlib().text.Text
    original = Text.draw

    def draw(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return original(self, renderer)

    Text.draw = draw
    try:
        yield
    finally:
        Text.draw = original


def _overlap(a, b, tol: float = TOUCH_PX) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > tol
            and min(a.y1, b.y1) - max(a.y0, b.y0) > tol)


def _name(t) -> str:
    return repr(t.get_text()[:40])


def _markers(fig, renderer) -> list[tuple[float, float, float, str]]:
    """Every drawn marker as (x, y, half size in px, owner), display units."""
    mpl = matplotlib()
    px_per_pt = fig.dpi / 72.0
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        box = ax.get_window_extent(renderer)
        for coll in ax.collections:
            if not (coll.get_visible() and isinstance(coll, mpl.collections.PathCollection)):
                continue
            offs = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
            if not len(offs):
                continue
            xy = coll.get_offset_transform().transform(offs)
            sizes = np.asarray(coll.get_sizes(), dtype=float)
            if sizes.size == 0:
                sizes = np.array([matplotlib().rcParams["lines.markersize"] ** 2])
            alphas = coll.get_alpha()
            if alphas is not None and alphas < 0.3:
                continue  # a faint backdrop, drawn to be written over
            for k, (x, y) in enumerate(xy):
                if not (np.isfinite(x) and np.isfinite(y)) or not box.contains(x, y):
                    continue
                half = 0.5 * np.sqrt(sizes[k % sizes.size]) * px_per_pt
                out.append((x, y, half, "scatter"))
        for line in ax.lines:
            mk = line.get_marker()
            if not line.get_visible() or mk in (None, "", " ", "None", "none"):
                continue
            xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
            half = 0.5 * line.get_markersize() * px_per_pt
            for x, y in xy:
                if np.isfinite(x) and np.isfinite(y) and box.contains(x, y):
                    out.append((x, y, half, f"line {line.get_label()!r}"))
    return out


def _curves(ax) -> list[np.ndarray]:
    """Display-unit vertices of the visible lines drawn with a line style."""
    out = []
    for line in ax.lines:
        if not line.get_visible() or line.get_linestyle() in ("None", "", " ", "none"):
            continue
        path = line.get_transform().transform_path(line.get_path())
        v = np.asarray(path.vertices, dtype=float)
        if len(v) >= 2:
            out.append(v)
    return out


def _segment_hits_box(p: np.ndarray, q: np.ndarray, b, shrink: float) -> bool:
    """Whether the segment p-q meets the box shrunk by ``shrink`` px (Liang-Barsky)."""
    x0, x1, y0, y1 = b.x0 + shrink, b.x1 - shrink, b.y0 + shrink, b.y1 - shrink
    if x0 >= x1 or y0 >= y1 or not (np.isfinite(p).all() and np.isfinite(q).all()):
        return False
    d = q - p
    t0, t1 = 0.0, 1.0
    for pk, qk in ((-d[0], p[0] - x0), (d[0], x1 - p[0]), (-d[1], p[1] - y0), (d[1], y1 - p[1])):
        if pk == 0:
            if qk < 0:
                return False
        else:
            t = qk / pk
            if pk < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
            if t0 > t1:
                return False
    return True


def _opaque_box(t) -> bool:
    patch = t.get_bbox_patch()
    if patch is None:
        return False
    fc = patch.get_facecolor()
    return fc[3] * (patch.get_alpha() if patch.get_alpha() is not None else 1.0) > 0.8


def figure_problems(fig, *, name: str = "figure", min_font: float = MIN_FONT_PT) -> list[str]:
    """Everything that spoils ``fig`` when printed (empty list: none)."""
    problems: list[str] = []
    width = float(fig.get_size_inches()[0])
    if width > MAX_WIDTH_IN + 1e-9:
        problems.append(f"{name}: {width:.2f} in wide, more than {MAX_WIDTH_IN} in")
    drawn: list = []
    with _record_drawn_texts(drawn):
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    saved = float(fig.get_tightbbox(renderer).width)  # inches: what bbox_inches="tight" saves
    if saved > MAX_WIDTH_IN + 0.05:
        problems.append(f"{name}: {saved:.2f} in wide when saved, more than {MAX_WIDTH_IN} in")
    boxes = [(t, t.get_window_extent(renderer)) for t in drawn]
    for t, _ in boxes:
        if t.get_fontsize() < min_font - 1e-9:
            problems.append(f"{name}: text {_name(t)} at {t.get_fontsize():g} pt < {min_font} pt")
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if _overlap(boxes[i][1], boxes[j][1]):
                problems.append(f"{name}: texts {_name(boxes[i][0])} and {_name(boxes[j][0])} "
                                "overlap")
    markers = _markers(fig, renderer)
    for t, b in boxes:
        for x, y, half, owner in markers:
            mb = matplotlib().transforms.Bbox.from_extents(x - half, y - half, x + half, y + half)
            if _overlap(b, mb):
                problems.append(f"{name}: text {_name(t)} covers a marker of {owner} at "
                                f"({x:.0f}, {y:.0f}) px")
                break
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        inside = [t for t in drawn if (t in ax.texts) and not _opaque_box(t)]
        if not inside:
            continue
        curves = _curves(ax)
        for t in inside:
            b = t.get_window_extent(renderer)
            hit = any(_segment_hits_box(v[k], v[k + 1], b, TOUCH_PX)
                      for v in curves for k in range(len(v) - 1))
            if hit:
                problems.append(f"{name}: a curve crosses the text {_name(t)}")
    return problems


def saved_problems(paths: Iterable[str | Path], *, min_dpi: float = MIN_DPI) -> list[str]:
    """Problems of written figure files: PNG resolution and the PDF beside each PNG."""
    problems = []
    for p in map(Path, paths):
        if p.suffix != ".png":
            continue
        with Image.open(p) as im:
            dpi = im.info.get("dpi", (0.0, 0.0))
            w, h = im.size
        if min(dpi) < min_dpi - 0.5:
            problems.append(f"{p.name}: {min(dpi):.0f} dpi < {min_dpi:.0f}")
        if w / max(dpi[0], 1e-9) > MAX_WIDTH_IN + 0.05:
            problems.append(f"{p.name}: {w / dpi[0]:.2f} in wide, more than {MAX_WIDTH_IN} in")
        pdf = p.with_suffix(".pdf")
        if not pdf.exists() or not pdf.read_bytes().startswith(b"%PDF"):
            problems.append(f"{p.name}: no PDF beside it")
    return problems


def png_size(path: str | Path) -> tuple[int, int, float]:
    """``(width px, height px, dpi)`` of a PNG."""
    with Image.open(path) as im:
        return im.size[0], im.size[1], float(im.info.get("dpi", (0.0, 0.0))[0])


def all_problems(figs: Sequence[tuple[str, object]]) -> list[str]:
    """:func:`figure_problems` of several named figures (each closed afterwards)."""
    plt = matplotlib().pyplot
    out: list[str] = []
    for name, fig in figs:
        out += figure_problems(fig, name=name)
        plt.close(fig)
    return out


# --- what a legend, a shading and a bar chart must say ----------------------------------------


def _rgb(c) -> tuple:
    rgba = matplotlib().colors.to_rgba(c)
    return tuple(round(v, 3) for v in rgba[:3])


def _legends(fig) -> list:
    out = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return out + list(fig.legends)


def _entry_key(h) -> tuple | None:
    """What tells a legend entry apart: the colour of a marker-only entry (shapes are too
    small to tell coloured groups apart; only a neutral grey or black marks a legend keyed
    by shape), face colour of a patch, colour and style of a line; None for an entry that
    draws nothing."""
    mpl = matplotlib()
    if isinstance(h, mpl.lines.Line2D):
        ls, mk = h.get_linestyle(), h.get_marker()
        no_line = ls in ("None", "", " ", "none")
        no_marker = mk in (None, "", " ", "None", "none")
        if no_line and no_marker:
            return None
        if no_line:
            face, edge = _rgb(h.get_markerfacecolor()), _rgb(h.get_markeredgecolor())
            # a legend keyed by shape draws its shapes in one neutral grey: the shape counts
            neutral = max(edge) - min(edge) < 0.02
            return ("marker", face, edge) + ((str(mk),) if neutral else ())
        return ("line", _rgb(h.get_color()), str(ls), str(mk))
    if isinstance(h, mpl.patches.Patch):
        return ("patch", _rgb(h.get_facecolor()), h.get_hatch())
    if isinstance(h, mpl.collections.LineCollection):  # an errorbar entry
        c = _rgb(h.get_colors()[0])
        return ("marker", c, c)
    if isinstance(h, mpl.collections.Collection):
        fc, ec = h.get_facecolors(), h.get_edgecolors()
        f = _rgb(fc[0]) if len(fc) else None
        return ("marker", f, _rgb(ec[0]) if len(ec) else f)
    return None


def legend_problems(fig, *, name: str = "figure") -> list[str]:
    """Legend entries a reader cannot tell apart: two marker-only (or errorbar) entries
    of one colour, two patches of one colour, two lines of one colour and style."""
    problems = []
    for leg in _legends(fig):
        seen: dict[tuple, str] = {}
        for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True):
            key = _entry_key(h)
            if key is None:
                continue
            label = t.get_text()
            if key in seen:
                problems.append(f"{name}: legend entries {seen[key]!r} and {label!r} look "
                                f"alike ({key[0]} {key[1]})")
            else:
                seen[key] = label
    return problems


#: a shading thinner than this on average (display px) cannot be seen
THIN_PX = 1.5
#: words by which a legend entry admits that its shading is too thin to see
THIN_WORDS = ("narrower than", "too thin", "not visible")


def _polygon_mean_height(coll, ax) -> float:
    """Area / width (display px) of a filled collection's paths."""
    area, x0, x1 = 0.0, np.inf, -np.inf
    for path in coll.get_paths():
        v = ax.transData.transform(np.asarray(path.vertices, dtype=float))
        v = v[np.all(np.isfinite(v), axis=1)]
        if len(v) < 3:
            continue
        x, y = v[:, 0], v[:, 1]
        area += 0.5 * abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1)))
        x0, x1 = min(x0, x.min()), max(x1, x.max())
    return area / (x1 - x0) if x1 > x0 else 0.0


def shading_problems(fig, *, name: str = "figure") -> list[str]:
    """Shaded regions (``fill_between``) not named by a legend entry (of their axes or the
    figure: the entry's text is the shading's label); an entry whose shadings are all too
    thin to see, unless it says so; a title that speaks of shading in an axes without a
    visible shading."""
    mpl = matplotlib()
    fig.canvas.draw()
    problems = []
    height: dict[str, float] = {}  # label -> its thickest shading (mean px)
    for k, ax in enumerate(fig.axes):
        leg = ax.get_legend()
        entries = {t.get_text() for t in leg.get_texts()} if leg is not None else set()
        entries |= {t.get_text() for fl in fig.legends for t in fl.get_texts()}
        fills = [c for c in ax.collections if c.get_visible()
                 and isinstance(c, mpl.collections.PolyCollection)
                 and not isinstance(c, mpl.collections.PathCollection)]
        where = f"{name}: axes {k} ({ax.get_title()[:40]!r})"
        visible = False
        for c in fills:
            label = c.get_label()
            h = _polygon_mean_height(c, ax)
            visible |= h >= THIN_PX
            if label.startswith("_") or label not in entries:
                problems.append(f"{where}: a shading has no legend entry naming it "
                                "(its label in the axes' or the figure's legend)")
                continue
            height[label] = max(height.get(label, 0.0), h)
        if "shaded" in ax.get_title() and not visible:
            problems.append(f"{where}: the title speaks of shading; none is visible")
    for label, h in height.items():
        if h < THIN_PX and not any(w in label for w in THIN_WORDS):
            problems.append(f"{name}: the shading {label!r} is too thin to see "
                            f"({h:.2f} px) and its entry does not say so")
    return problems


def stacked_problems(fig, *, name: str = "figure") -> list[str]:
    """Bars stacked on bars (a stacked histogram) in a figure that never says 'stacked'
    (in a title, an axis label or a legend title)."""
    mpl = matplotlib()
    stacked = False
    for ax in fig.axes:
        bars = [(round(p.get_x(), 9), round(p.get_width(), 9), p.get_y(), p.get_height())
                for p in ax.patches if isinstance(p, mpl.patches.Rectangle)
                and p.get_visible() and p.get_width() > 0 and p.get_height() > 0]
        tops = {(x, w, round(y + h, 9)) for x, w, y, h in bars}
        if any(y > 0 and (x, w, round(y, 9)) in tops for x, w, y, h in bars):
            stacked = True
    if not stacked:
        return []
    words = [fig._suptitle.get_text() if fig._suptitle is not None else ""]
    for ax in fig.axes:
        words += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
    words += [leg.get_title().get_text() for leg in _legends(fig)]
    if any("stacked" in w for w in words):
        return []
    return [f"{name}: bars are stacked, and no title, axis label or legend title says so"]


def meaning_problems(figs: Sequence[tuple[str, object]]) -> list[str]:
    """:func:`legend_problems`, :func:`shading_problems` and :func:`stacked_problems` of
    several named figures (each closed afterwards)."""
    plt = matplotlib().pyplot
    out: list[str] = []
    for name, fig in figs:
        out += legend_problems(fig, name=name)
        out += shading_problems(fig, name=name)
        out += stacked_problems(fig, name=name)
        plt.close(fig)
    return out


# --- the labels of the zoomed views of the collapse figure ------------------------------------


def _single_linkage(E: np.ndarray, threshold: float) -> list[set[int]]:
    """Groups of points linked by distances at most ``threshold`` (scipy, independent of
    the package's own union-find)."""
    from scipy.cluster.hierarchy import fcluster, linkage

    E = np.asarray(E, dtype=float)
    if len(E) < 2:
        return [{0}] if len(E) else []
    ids = fcluster(linkage(E, "single"), t=threshold, criterion="distance")
    return [set(np.flatnonzero(ids == k).tolist()) for k in np.unique(ids)]


def _named(text: str) -> set[int]:
    return {int(v) - 1 for v in text.replace("{", "").replace("}", "").split(",") if v}


def zoom_label_problems(fig, embeddings: Sequence[np.ndarray], threshold: float, *,
                        dot_pt2: float, name: str = "figure") -> list[str]:
    """Labels of the zoomed views (axes with gid ``"zoom"``, in order, one per embedding)
    that do not name what is drawn.

    Each view's ``"merged: ..."`` text must list the groups linked at ``threshold``
    (computed here with scipy); each label (gid ``"zoom-label"``) must name points of
    one merged group whose dots (area ``dot_pt2``) touch on the drawn axes, and points
    of one merged group whose dots touch must share a label.
    """
    fig.canvas.draw()
    zooms = [ax for ax in fig.axes if ax.get_gid() == "zoom"]
    problems = []
    if len(zooms) != len(embeddings):
        return [f"{name}: {len(zooms)} zoomed views for {len(embeddings)} snapshots"]
    reach = np.sqrt(dot_pt2) * fig.dpi / 72.0
    for k, (ax, E) in enumerate(zip(zooms, embeddings, strict=True)):
        E = np.asarray(E, dtype=float)
        merged = _single_linkage(E, threshold)
        where = f"{name}: zoomed view {k}"
        texts = [t.get_text() for t in ax.texts if t.get_gid() == "zoom-merged"]
        want = sorted(sorted(g) for g in merged if len(g) > 1)
        if len(texts) != 1:
            problems.append(f"{where}: no 'merged:' text")
        else:
            said = texts[0].split("merged:")[-1].strip()
            got = [] if said == "none" else sorted(sorted(_named(w)) for w in said.split())
            if got != want:
                problems.append(f"{where}: says merged {said!r}; the distances give "
                                f"{[[i + 1 for i in g] for g in want] or 'none'}")
        labels = [_named(t.get_text()) for t in ax.texts if t.get_gid() == "zoom-label"]
        if sorted(i for g in labels for i in g) != list(range(len(E))):
            problems.append(f"{where}: the labels {labels} do not name each point once")
            continue
        xy = ax.transData.transform(E)
        touch = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1)) < reach
        of = {i: j for j, g in enumerate(merged) for i in g}
        for g in labels:
            text = ",".join(str(i + 1) for i in sorted(g))
            if len({of[i] for i in g}) > 1:
                problems.append(f"{where}: label {text!r} names points that are not merged")
            # the named dots form one chain of touching dots
            seen, todo = set(), [min(g)]
            while todo:
                i = todo.pop()
                seen.add(i)
                todo += [j for j in g if j not in seen and touch[i, j]]
            if seen != g:
                problems.append(f"{where}: label {text!r} names dots drawn apart")
        lab = {i: j for j, g in enumerate(labels) for i in g}
        for i in range(len(E)):
            for j in range(i + 1, len(E)):
                if touch[i, j] and of[i] == of[j] and lab[i] != lab[j]:
                    problems.append(f"{where}: points {i + 1} and {j + 1} are merged and drawn "
                                    "as one dot, but labelled apart")
    return problems
