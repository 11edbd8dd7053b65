"""Shared figure style and deterministic saving.

Sizes are for a paper column (3.3 in wide) or a full width (6.8 in), fonts
readable at that size.  Colours are fixed by role so that every figure uses
the same colour for the same quantity.  Saved files carry no timestamp (PDF
``CreationDate`` and PNG ``Software`` metadata are cleared), so regenerating
a figure from the same results gives the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._lazy import matplotlib
from ..exceptions import InvalidInputError
from ..io import atomic_write_bytes, atomic_write_text

__all__ = [
    "COLORS",
    "CLASS_COLORS",
    "COLUMN_WIDTH",
    "FULL_WIDTH",
    "save_figure",
    "style_context",
]

COLUMN_WIDTH = 3.3  # inches
FULL_WIDTH = 6.8  # inches

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
#: colours of classes (labels 0, 1, 2, ...)
CLASS_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                "#F0E442", "#000000", "#999999", "#882255"]

_RC = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": 200,
    "figure.dpi": 100,
    "pdf.fonttype": 42,
    "svg.hashsalt": "isoapprox",
    "path.simplify": False,
}


def style_context():
    """A ``matplotlib.rc_context`` with the house style."""
    return matplotlib().rc_context(_RC)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise InvalidInputError(f"`name` must use letters, digits, '-' and '_'; got {name!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        if fmt not in ("png", "pdf", "svg"):
            raise InvalidInputError(f"`formats` must hold 'png', 'pdf' or 'svg'; got {fmt!r}")
        meta = {"pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
                "png": {"Software": None}, "svg": {"Date": None, "Creator": None}}[fmt]
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, metadata=meta, bbox_inches="tight")
        written.append(atomic_write_bytes(out_dir / f"{name}.{fmt}", buf.getvalue()))
    matplotlib().pyplot.close(fig)
    side = {
        "figure": name,
        "description": description,
        "files": [p.name for p in written],
        "sources": [{"path": str(s), "sha256": _sha256(Path(s))} for s in sources
                    if Path(s).exists()],
    }
    written.append(atomic_write_text(out_dir / f"{name}.json", json.dumps(side, indent=1) + "\n"))
    return written
