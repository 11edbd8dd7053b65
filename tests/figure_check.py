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
