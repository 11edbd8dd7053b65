"""``isoapprox diagnose --history LOG``: a training monitor's log as curves and a summary."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
from pathlib import Path
from typing import Any

from ..exceptions import InvalidInputError
from ..io import atomic_write_text, to_jsonable
from .common import claim_outputs


def _num(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return f"{v:.{digits}g}"


def _bracket(v: Any, lo: Any, up: Any, certified: Any, rel_gap: Any) -> str:
    if v is None:
        return "n/a"
    text = _num(v) if lo is None or up is None or up == lo else \
        f"{_num(v)} in [{_num(lo)}, {_num(up)}]"
    if certified:
        return text + " (certified)"
    return text + (f" (open: relative gap {rel_gap:.1e})" if rel_gap is not None else " (open)")


def _intervals(ivs: list[dict[str, Any]]) -> str:
    parts = []
    for iv in ivs:
        end = "held to the end" if iv["end"] is None else f"ended at step {iv['end']}"
        parts.append(f"started at step {iv['start']}, {end}")
    return "; ".join(parts) if parts else "never"


def format_history(summary: dict[str, Any]) -> str:
    """The text summary of :meth:`isoapprox.MonitorHistory.summary`."""
    from ..diagnostics import SIGNATURE_NAMES

    s = summary
    span = (f"steps {s['first_step']}..{s['last_step']}" if s["first_step"] is not None
            else "no valid step")
    lines = [
        f"{s['source']}: collapse monitor log, {s['updates']} update(s) ({span}), "
        f"{s['bad_batches']} bad batch(es), theory at {s['theory_evaluations']} update(s); "
        f"margin {_num(s['margin'])}"
        + (f" ({s['segments']} segments: the log was continued)" if s["segments"] > 1 else ""),
        "",
        "signatures (when each held)",
    ]
    names = list(SIGNATURE_NAMES) + sorted({iv["signature"] for iv in s["signatures"]}
                                           - set(SIGNATURE_NAMES))
    w = max(len(n) for n in names)
    for name in names:
        ivs = [iv for iv in s["signatures"] if iv["signature"] == name]
        lines.append(f"  {name:<{w}}  {_intervals(ivs)}")
    if s["bad_batch_reasons"]:
        lines += ["", "bad batches (logged, not raised)"]
        for reason, r in s["bad_batch_reasons"].items():
            first = f"first at step {r['first_step']}" if r["first_step"] is not None else ""
            lines.append(f"  {reason:<{w}}  {r['count']}" + (f" ({first})" if first else ""))
    last = s["last"]
    if last is not None:
        lines += [
            "",
            f"last update (step {last['step']}): N = {last['n_points']} points in "
            f"R^{last['dim']}, {last['n_classes']} classes",
            f"  batch-hard loss mean / max  {_num(last['batch_hard_mean'])} / "
            f"{_num(last['batch_hard_max'])}"
            + (f"  (reported {_num(last['loss'])})" if last.get("loss") is not None else ""),
            f"  diameter                    {_num(last['diameter'])}",
            f"  active triplets             {100 * last['active_fraction']:.1f}%",
            f"  collapsed classes           {last['collapsed_classes']} of {last['n_classes']}",
        ]
    th = s["last_theory"]
    if th is not None:
        iso, haus = (_bracket(th[k], th[f"{k}_lower"], th[f"{k}_upper"], th[f"{k}_certified"],
                              th.get(f"{k}_rel_gap")) for k in ("d_iso", "d_haus"))
        lines += [
            "",
            f"last theory (step {th['step']}, {th['evaluated']} of {th['batch_points']} points"
            + (", a seeded random P x K batch" if th["subsampled"] else "") + ")",
            f"  d_iso(E, F_TS)              {iso}",
            f"  d_haus(E, F_TS)             {haus}",
            f"  L_max / D*(P, n, margin)    {_num(th['loss_max'])} / {_num(th['d_star'])}",
            f"  d_iso <= L_max (statement 3) {_UPPER[th.get('3_upper_holds')]}",
        ]
    return "\n".join(lines)


_UPPER = {True: "holds (certified): the loss is within a factor 2 of the distance",
          False: "fails (certified): the loss understates the distance to the ideal set",
          None: "undecided: the bracket straddles L_max"}


def _figure_name(path: Path) -> str:
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in path.stem) or "monitor"
    return f"{stem}_history"


def run_history(args: argparse.Namespace) -> int:
    """Execute ``isoapprox diagnose --history LOG``."""
    if args.file is not None:
        raise InvalidInputError(
            f"`--history` reads a monitor log instead of an embedding file; drop FILE "
            f"({str(args.file)!r}) or --history")
    if args.plot is not None and args.plot.exists() and not args.plot.is_dir():
        raise InvalidInputError(f"`--plot` must name a folder; {str(args.plot)!r} is a file")
    with contextlib.ExitStack() as claims:
        # the figures go beside LOG without --plot
        plot = args.plot if args.plot is not None or not args.history.is_file() else \
            args.history.parent
        claim_outputs(claims, files={"--json": args.json_out}, folders={"--plot": plot})
        return _run_history(args)


def _run_history(args: argparse.Namespace) -> int:
    from ..monitor import read_history
    from ..plotting.monitor import history_figures

    history = read_history(args.history)
    summary = history.summary()
    print(format_history(summary))
    written: list[str] = []
    if history.updates:
        out_dir = args.plot if args.plot is not None else args.history.parent
        written += [str(p) for p in history_figures(history, out_dir,
                                                     name=_figure_name(args.history),
                                                     sources=[args.history])]
    else:
        print("\nno figure: the log holds no evaluated update")
    if args.json_out is not None:
        written.append(str(atomic_write_text(
            args.json_out, json.dumps(to_jsonable(summary), indent=1) + "\n")))
    if written:
        print("\nwritten: " + ", ".join(written))
    return 0
