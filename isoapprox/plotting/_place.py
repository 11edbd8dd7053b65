"""Placing labels where they cover nothing: no other text, no marker, no curve.

A label is tried at candidate positions, nearest first, and put at the first
that overlaps no drawn marker, no curve segment, no text already on the
axes and stays inside the axes; when every candidate collides it goes where
it collides least.  Positions are measured in display units through the
figure's renderer, so placing must come after the layout is final
(``tight_layout`` / ``subplots_adjust``, limits and aspect set).  Each call
lays the figure out once (a draw without rendering); a caller that places
labels on several axes of a figure whose layout no longer changes draws it
once itself and passes ``laid_out=True``: labels added meanwhile change no
axes' position, and each call still avoids the texts already on its axes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._lazy import matplotlib

__all__ = ["label_hline", "label_points"]

#: gap (display px at the figure dpi) kept between a label and what it avoids
_GAP_PX = 1.0
#: distances (points) of the candidate positions around a point, nearest first
_RADII = (4.0, 7.0, 11.0, 16.0, 22.0)
#: directions (degrees) tried at each distance: up-right first, then around
_ANGLES = (45, 135, -45, -135, 0, 90, 180, -90, 22, 158, -22, -158, 68, 112, -68, -112)


class _Obstacles:
    """What a label must not cover on one axes (display units, fixed at creation)."""

    def __init__(self, ax: Any, laid_out: bool = False) -> None:
        fig = ax.figure
        if not laid_out:
            fig.draw_without_rendering()  # the final layout, measured; nothing rasterised
        self.renderer = fig.canvas.get_renderer()
        self.ax = ax
        self.box = ax.get_window_extent(self.renderer)
        mpl = matplotlib()
        px = fig.dpi / 72.0
        boxes = []
        for coll in ax.collections:
            if not (coll.get_visible() and isinstance(coll, mpl.collections.PathCollection)):
                continue
            offs = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
            if not len(offs):
                continue
            xy = coll.get_offset_transform().transform(offs)
            sizes = np.asarray(coll.get_sizes(), dtype=float)
            sizes = sizes if sizes.size else np.array([16.0])
            for k, (x, y) in enumerate(xy):
                h = 0.5 * np.sqrt(sizes[k % sizes.size]) * px
                boxes.append((x - h, y - h, x + h, y + h))
        self.segments: list[np.ndarray] = []
        for line in ax.lines:
            if not line.get_visible():
                continue
            v = line.get_transform().transform(
                np.column_stack(line.get_data()).astype(float))
            mk = line.get_marker()
            if mk not in (None, "", " ", "None", "none"):
                h = 0.5 * line.get_markersize() * px
                boxes += [(x - h, y - h, x + h, y + h) for x, y in v]
            if line.get_linestyle() not in ("None", "", " ", "none"):
                path = line.get_transform().transform_path(line.get_path())
                p = np.asarray(path.vertices, dtype=float)
                p = p[np.isfinite(p).all(axis=1)]
                if len(p) >= 2:
                    self.segments.append(p)
        self.markers = np.array(boxes, dtype=float).reshape(-1, 4)
        self.texts = [t.get_window_extent(self.renderer) for t in ax.texts
                      if t.get_visible() and t.get_text().strip()]

    def collisions(self, b: Any) -> float:
        """How badly the box ``b`` collides (0: not at all)."""
        g = _GAP_PX
        bad = 0.0
        if (b.x0 < self.box.x0 or b.x1 > self.box.x1 or b.y0 < self.box.y0
                or b.y1 > self.box.y1):
            bad += 10.0
        if len(self.markers):
            m = self.markers
            hit = ((np.minimum(m[:, 2], b.x1) - np.maximum(m[:, 0], b.x0) > -g)
                   & (np.minimum(m[:, 3], b.y1) - np.maximum(m[:, 1], b.y0) > -g))
            bad += 3.0 * float(hit.sum())
        for t in self.texts:
            if min(t.x1, b.x1) - max(t.x0, b.x0) > -g and min(t.y1, b.y1) - max(t.y0, b.y0) > -g:
                bad += 5.0
        for p in self.segments:
            bad += float(_segments_hitting(p, b, g))
        return bad

    def add(self, b: Any) -> None:
        self.texts.append(b)


def _segments_hitting(p: np.ndarray, b: Any, g: float) -> int:
    """Number of segments of the polyline ``p`` meeting box ``b`` grown by ``g`` (Liang-Barsky)."""
    x0, x1, y0, y1 = b.x0 - g, b.x1 + g, b.y0 - g, b.y1 + g
    a, d = p[:-1], p[1:] - p[:-1]
    t0 = np.zeros(len(a))
    t1 = np.ones(len(a))
    ok = np.ones(len(a), dtype=bool)
    for pk, qk in ((-d[:, 0], a[:, 0] - x0), (d[:, 0], x1 - a[:, 0]),
                   (-d[:, 1], a[:, 1] - y0), (d[:, 1], y1 - a[:, 1])):
        zero = pk == 0
        ok &= ~(zero & (qk < 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(zero, 0.0, qk / np.where(zero, 1.0, pk))
        t0 = np.where(~zero & (pk < 0), np.maximum(t0, t), t0)
        t1 = np.where(~zero & (pk > 0), np.minimum(t1, t), t1)
    return int(np.sum(ok & (t0 <= t1)))


def _align(dx: float, dy: float) -> tuple[str, str]:
    ha = "left" if dx > 1e-9 else ("right" if dx < -1e-9 else "center")
    va = "bottom" if dy > 1e-9 else ("top" if dy < -1e-9 else "center")
    return ha, va


def _least_covering(ann: Any, obs: _Obstacles, places: Iterable[tuple]) -> None:
    """Put ``ann`` at the first of ``places`` (``(x, y, offset, ha, va)``: the point,
    the text's offset from it in points and its alignment) where it covers nothing,
    else at the first where it covers least."""
    best, best_bad = None, np.inf
    for place in places:
        _move(ann, place)
        bad = obs.collisions(ann.get_window_extent(obs.renderer))
        if bad < best_bad:
            best, best_bad = place, bad
        if bad == 0:
            break
    _move(ann, best)


def _move(ann: Any, place: tuple) -> None:
    x, y, offset, ha, va = place
    ann.xy = (x, y)
    ann.set_position(offset)
    ann.set_ha(ha)
    ann.set_va(va)


def label_points(ax: Any, xy: Sequence[Sequence[float]], texts: Sequence[str], *,
                 colors: Sequence[Any] | None = None, laid_out: bool = False,
                 **kw: Any) -> list[Any]:
    """Annotate each point ``xy[k]`` (data units) with ``texts[k]`` where it covers nothing.

    ``laid_out=True``: the figure was drawn (``draw_without_rendering``) since its
    layout, limits or aspect last changed, so it is not laid out again.  Extra
    keywords go to ``ax.annotate``.  Returns the annotations.
    """
    obs = _Obstacles(ax, laid_out)
    out = []
    for k, (p, s) in enumerate(zip(xy, texts, strict=True)):
        color = colors[k] if colors is not None else None
        ann = ax.annotate(s, tuple(p), xytext=(0, 0), textcoords="offset points", color=color,
                          **kw)
        offsets = ((r * np.cos(np.radians(deg)), r * np.sin(np.radians(deg)))
                   for r in _RADII for deg in _ANGLES)
        _least_covering(ann, obs, ((*p, (dx, dy), *_align(dx, dy)) for dx, dy in offsets))
        obs.add(ann.get_window_extent(obs.renderer))
        out.append(ann)
    return out


def label_hline(ax: Any, y: float, text: str, *, color: Any = None, laid_out: bool = False,
                **kw: Any) -> Any:
    """Write ``text`` just above or below the horizontal line at ``y`` (data units), at the
    first place along it, from the right end, where it covers nothing (``laid_out`` as in
    :func:`label_points`)."""
    obs = _Obstacles(ax, laid_out)
    ann = ax.annotate(text, (0.99, y), xycoords=("axes fraction", "data"), xytext=(0, 1.5),
                      textcoords="offset points", color=color, **kw)
    _least_covering(ann, obs, (
        (x, y, (0, dy), "right" if x > 0.5 else ("left" if x < 0.5 else "center"), va)
        for x in (0.99, 0.01, 0.75, 0.5, 0.25, 0.9, 0.1, 0.6, 0.4)
        for dy, va in ((1.5, "bottom"), (-1.5, "top"))))
    return ann
