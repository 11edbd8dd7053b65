"""Shared figure style and saving: the one home of sizes, fonts, colours and files.

Figures are drawn at the size they are printed: a paper column
(:data:`COLUMN_WIDTH`, 3.5 in) or the full width (:data:`FULL_WIDTH`, 7 in),
every text at least :data:`FONT_SIZE` (8 pt) at that size.  Colours are
colour-blind safe (Okabe and Ito's palette) and fixed by role, so that every
figure uses the same colour for the same quantity; classes take
:func:`class_style`, a (hue, marker) pair that stays distinct beyond the
number of hues.  :func:`save_figure` writes a PNG at :data:`DPI` and a PDF
beside it, each atomically (a temporary file, then ``os.replace``: a crash
never leaves half a figure).  Saved files carry no timestamp (PDF
``CreationDate`` and PNG ``Software`` metadata are cleared), so regenerating
a figure from the same results gives the same bytes.  A builder lists its
figures as :class:`FigureTask` s and :func:`save_figures` draws them, in
worker processes when it is given more than one job (the same bytes: each
figure is drawn alone either way).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._lazy import matplotlib
from ..exceptions import InvalidInputError
from ..io import atomic_write_bytes, atomic_write_text, file_sha256
from ..runs import executor, run_units

__all__ = [
    "COLORS",
    "CLASS_COLORS",
    "CLASS_MARKERS",
    "COLUMN_WIDTH",
    "DPI",
    "FONT_SIZE",
    "FigureTask",
    "FULL_WIDTH",
    "GROUP_COLORS",
    "QUIET_LOGGERS",
    "class_style",
    "group_colors",
    "log_if_wide",
    "quiet_font_loggers",
    "save_figure",
    "save_figures",
    "style_context",
]

#: single-column width (inches): a figure is drawn at its printed size
COLUMN_WIDTH = 3.5
#: double-column (full page) width (inches)
FULL_WIDTH = 7.0
#: every text, at the printed size (points)
FONT_SIZE = 8.0
#: resolution of the PNG files (dots per inch)
DPI = 300

#: colour by role (colour-blind safe, Okabe-Ito)
COLORS = {
    "embedding": "#0072B2",  # f_theta
    "ideal": "#D55E00",  # f*
    "collapsed": "#7F7F7F",  # collapsed embedding
    "loss": "#000000",
    "d_iso": "#0072B2",
    "d_haus": "#D55E00",
    "bound": "#009E73",
    "diameter": "#CC79A7",
    "curve": "#E69F00",
    "measured": "#56B4E9",
}
#: hues of classes: Okabe-Ito without its yellow (too pale on white)
CLASS_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
#: marker shapes of classes: the k-th hue cycle uses the k-th shape
CLASS_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


#: hues of groups in a legend (Tableau 10, then its lighter twins: Tableau 20)
GROUP_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]


def group_colors(k: int) -> list[str]:
    """``k`` distinct colours for the groups of one legend.

    The qualitative :data:`GROUP_COLORS` (20) while they last; beyond, ``k``
    evenly spaced hues of the ``turbo`` colour map, so that no two legend
    entries share a colour.

    Examples
    --------
    >>> len(set(group_colors(10))), len(set(group_colors(30)))
    (10, 30)
    """
    k = int(k)
    if k <= len(GROUP_COLORS):
        return GROUP_COLORS[:k]
    cmap = matplotlib().colormaps["turbo"]
    to_hex = matplotlib().colors.to_hex
    return [to_hex(cmap(0.05 + 0.9 * i / (k - 1))) for i in range(k)]


def class_style(code: int) -> tuple[str, str]:
    """``(colour, marker)`` of class ``code`` (0, 1, 2, ...).

    The hue cycles over :data:`CLASS_COLORS`; each further cycle takes the next
    shape of :data:`CLASS_MARKERS`, so the first
    ``len(CLASS_COLORS) * len(CLASS_MARKERS)`` (56) classes get distinct pairs.

    Examples
    --------
    >>> class_style(0), class_style(7)
    (('#0072B2', 'o'), ('#0072B2', 's'))
    """
    k = len(CLASS_COLORS)
    return CLASS_COLORS[int(code) % k], CLASS_MARKERS[(int(code) // k) % len(CLASS_MARKERS)]


_RC = {
    "font.size": FONT_SIZE,
    "axes.titlesize": FONT_SIZE,
    "axes.labelsize": FONT_SIZE,
    "legend.fontsize": FONT_SIZE,
    "legend.title_fontsize": FONT_SIZE,
    "figure.titlesize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE,
    "ytick.labelsize": FONT_SIZE,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": DPI,
    "figure.dpi": 100,
    "pdf.fonttype": 42,
    "svg.hashsalt": "isoapprox",
    "path.simplify": False,
}


def style_context():
    """A ``matplotlib.rc_context`` with the house style."""
    return matplotlib().rc_context(_RC)


def log_if_wide(ax: Any, *arrays: Any) -> None:
    """A log y axis when the positive finite values of ``arrays`` span more than 30 times."""
    v = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    v = v[np.isfinite(v) & (v > 0)]
    if v.size and v.max() / v.min() > 30:
        ax.set_yscale("log")


#: loggers that chatter while a figure is saved (the PDF backend's font
#: subsetting logs every glyph table at INFO/DEBUG): held at WARNING
QUIET_LOGGERS = ("fontTools", "matplotlib.font_manager")


@contextlib.contextmanager
def quiet_font_loggers() -> Iterator[None]:
    """Hold :data:`QUIET_LOGGERS` at WARNING or above, whatever the caller's logging level.

    A script that configures logging at INFO (``logging.basicConfig``) would
    otherwise print hundreds of lines of font subsetting for each PDF.
    """
    saved = []
    for name in QUIET_LOGGERS:
        log = logging.getLogger(name)
        saved.append((log, log.level))
        if log.getEffectiveLevel() < logging.WARNING:
            log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for log, level in saved:
            log.setLevel(level)


#: the metadata of each format without a date or a producer (same results, same bytes)
_NO_DATES = {"pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
             "png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
#: blank margin around the drawn content of a saved figure (inches)
_PAD_INCHES = 0.02


def _frozen_tight_box(fig: Any) -> Any:
    """The figure's content box (inches, padded by 0.02 in), its layout frozen.

    One layout pass (a draw without rendering) for every format: ``savefig``
    with ``bbox_inches="tight"`` would lay the figure out and measure its
    texts again for each file, and a layout engine (constrained layout) would
    run again at each; here it runs once, then the layout is kept as it is.
    """
    fig.draw_without_rendering()
    box = fig.get_tightbbox(fig.canvas.get_renderer()).padded(_PAD_INCHES)
    fig.set_layout_engine("none")
    return box


def save_figure(
    fig: Any,
    out_dir: str | Path,
    name: str,
    *,
    sources: Sequence[str | Path] = (),
    formats: Iterable[str] = ("png", "pdf"),
    description: str = "",
) -> list[Path]:
    """Save ``fig`` as ``out_dir/name.{png,pdf}`` plus a provenance sidecar.

    The one way figures are written: PNG at :data:`DPI`, PDF beside it (fonts
    embedded as TrueType), each file written atomically; the font loggers
    stay at WARNING meanwhile (:func:`quiet_font_loggers`).  The figure is laid
    out and cropped to its content once, for every format.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure (closed after saving).
    out_dir : path-like
        Target folder (created).
    name : str
        File stem, letters, digits, ``-`` and ``_`` only.
    sources : sequence of path-like
        Result files the figure was built from; their SHA-256 go into the
        sidecar ``name.json``.
    formats : iterable of str
        Any of ``"png"``, ``"pdf"``, ``"svg"``.
    description : str
        One line stored in the sidecar.

    Returns
    -------
    list of Path
        The files written (figures first, then the sidecar).
    """
    _check_name(name)
    formats = list(formats)
    for fmt in formats:
        if fmt not in ("png", "pdf", "svg"):
            raise InvalidInputError(f"`formats` must hold 'png', 'pdf' or 'svg'; got {fmt!r}")
    return _save_figure(fig, Path(out_dir), name, formats, description, _source_records(sources))


def _check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise InvalidInputError(f"`name` must use letters, digits, '-' and '_'; got {name!r}")


def _source_records(sources: Sequence[str | Path]) -> list[dict[str, str]]:
    """The sidecar's ``sources``: each existing file's path and SHA-256."""
    return [{"path": str(s), "sha256": file_sha256(s, "figure source")} for s in sources
            if Path(s).exists()]


def _save_figure(fig: Any, out_dir: Path, name: str, formats: list[str], description: str,
                 sources: list[dict[str, str]]) -> list[Path]:
    """:func:`save_figure` on checked arguments, the sources already hashed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with style_context(), quiet_font_loggers():
        box = _frozen_tight_box(fig)
        for fmt in formats:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, metadata=_NO_DATES[fmt], dpi=DPI, bbox_inches=box)
            written.append(atomic_write_bytes(out_dir / f"{name}.{fmt}", buf.getvalue()))
    matplotlib().pyplot.close(fig)
    side = {
        "figure": name,
        "description": description,
        "files": [p.name for p in written],
        "sources": sources,
    }
    written.append(atomic_write_text(out_dir / f"{name}.json", json.dumps(side, indent=1) + "\n"))
    return written


@dataclass(frozen=True)
class FigureTask:
    """One figure of a builder: ``plot(*args, **kwargs)`` saved as ``name`` (:func:`save_figure`).

    ``plot`` is a module-level function (a worker process draws it by name):
    a lambda or a nested function is refused here, not by a pickling error in
    a worker.
    """

    #: file stem
    name: str
    #: draws the figure: ``plot(*args, **kwargs) -> matplotlib.figure.Figure``
    plot: Callable[..., Any]
    #: its arguments
    args: tuple = ()
    #: one line for the provenance sidecar
    description: str = ""
    #: its keyword arguments
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_name(self.name)
        if "<" in getattr(self.plot, "__qualname__", "<"):
            raise InvalidInputError(
                f"figure {self.name!r}: `plot` must be a module-level function (worker "
                f"processes draw it by name); got {self.plot!r}"
            )


def _draw(task: FigureTask, out_dir: Path, sources: list[dict[str, str]]) -> list[Path]:
    return _save_figure(task.plot(*task.args, **task.kwargs), out_dir, task.name,
                        ["png", "pdf"], task.description, sources)


def _draw_unit(unit: tuple) -> tuple[int, list[Path]]:
    """One figure in a worker process (top level, so the executor can pickle it)."""
    index, task, out_dir, sources = unit
    return index, _draw(task, out_dir, sources)


def save_figures(tasks: Sequence[FigureTask], out_dir: str | Path, *,
                 sources: Sequence[str | Path] = (), jobs: int = 1) -> list[Path]:
    """Draw and save every figure of ``tasks`` (:func:`save_figure`, PNG and PDF).

    Parameters
    ----------
    tasks : sequence of FigureTask
        The figures, in the order their files are listed.
    out_dir : path-like
        Target folder (created).
    sources : sequence of path-like
        Result files the figures are built from (their SHA-256 go into each
        sidecar).
    jobs : int, default 1
        Worker processes (:func:`isoapprox.runs.executor`); each draws whole
        figures, so the files are those of ``jobs=1``, byte for byte.  With 1,
        or a single figure, everything is drawn in this process.

    Returns
    -------
    list of Path
        The files written, figure by figure in the order of ``tasks``.
    """
    out_dir = Path(out_dir)
    sources = _source_records(sources)  # each file hashed once, not once per figure
    jobs = min(jobs, len(tasks))
    if jobs <= 1:
        return [p for task in tasks for p in _draw(task, out_dir, sources)]
    done: dict[int, list[Path]] = {}
    run_units(_draw_unit, [(i, task, out_dir, sources) for i, task in enumerate(tasks)],
              executor(jobs), lambda result: done.__setitem__(*result))
    return [p for i in range(len(tasks)) for p in done[i]]
