"""``isoapprox diagnose --history LOG``: a training monitor's log as curves and a summary."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import textwrap
from pathlib import Path
from typing import Any

from ..exceptions import InvalidInputError
from ..io import atomic_write_text, to_jsonable
from .common import claim_outputs, file_name


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


#: the longest line of the summary (longer ones are wrapped)
WIDTH = 92


def _interval(iv: dict[str, Any]) -> str:
    end = "held to the end" if iv["end"] is None else f"ended at step {iv['end']}"
    return f"started at step {iv['start']}, {end}"


def _intervals(d: dict[str, Any] | None) -> str:
    """One signature's digest (:meth:`MonitorHistory.signature_summary`) in words."""
    if not d:
        return "never"
    if d["onsets"] == 1:
        return _interval(d["first"])
    return (f"{d['onsets']} onsets, first at step {d['first']['start']}, held at "
            f"{d['held_updates']} update(s); last {_interval(d['last'])}")


def _wrap(line: str, indent: int) -> list[str]:
    """``line`` wrapped to :data:`WIDTH` characters, continuations indented."""
    return textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent,
                         break_on_hyphens=False) or [line]


def format_history(summary: dict[str, Any]) -> str:
    """The text summary of :meth:`isoapprox.MonitorHistory.summary`."""
    from ..monitor import MONITOR_SIGNATURES

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
    names = list(MONITOR_SIGNATURES) + sorted(set(s["signatures"]) - set(MONITOR_SIGNATURES))
    w = max(len(n) for n in names)
    for name in names:
        lines += _wrap(f"  {name:<{w}}  {_intervals(s['signatures'].get(name))}", w + 4)
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
    return "\n".join(out for line in lines for out in _wrap(line, 4))


_UPPER = {True: "holds (certified): the loss is within a factor 2 of the distance",
          False: "fails (certified): the loss understates the distance to the ideal set",
          None: "undecided: the bracket straddles L_max"}


def _figure_source(sidecar: Path) -> set[str] | None:
    """The resolved logs a figure's sidecar names (None: unreadable, no sidecar)."""
    try:
        side = json.loads(sidecar.read_text(encoding="utf-8"))
        return {str(Path(src["path"]).resolve()) for src in side.get("sources", ())}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def figure_name(log: Path, out_dir: Path) -> str:
    """The stem of ``log``'s history figures in ``out_dir``, never another run's.

    ``PARENT_STEM_history`` (the log's folder and name: two runs' ``run.jsonl``
    in different folders get different figures).  A figure of that name
    whose sidecar (``.json``, which records the source log) names another
    log, or that has no readable sidecar, is not replaced: the name then
    gets the first 8 hex digits of the SHA-256 of the log's resolved path;
    if that name is taken by another log too, :class:`InvalidInputError`.
    """
    log = log.resolve()
    base = "_".join(p for p in (file_name(log.parent.name), file_name(log.stem)) if p) or "monitor"
    tag = hashlib.sha256(str(log).encode()).hexdigest()[:8]
    for name in (f"{base}_history", f"{base}_{tag}_history"):
        taken = [out_dir / f"{name}.{ext}" for ext in ("png", "pdf", "json")
                 if (out_dir / f"{name}.{ext}").exists()]
        if not taken or _figure_source(out_dir / f"{name}.json") == {str(log)}:
            return name
    raise InvalidInputError(
        f"`--plot` {str(out_dir)!r}: the figures {base}_history and {base}_{tag}_history "
        f"belong to other logs (their .json sidecars say which); not overwritten: pass "
        "another --plot folder")


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
    out_dir = args.plot if args.plot is not None else args.history.parent
    # decided before anything is printed or written: another run's figures stay
    name = figure_name(args.history, out_dir) if history.updates else None
    print(format_history(summary))
    written: list[str] = []
    if name is not None:
        written += [str(p) for p in history_figures(history, out_dir, name=name,
                                                     sources=[args.history.resolve()])]
    else:
        print("\nno figure: the log holds no evaluated update")
    if args.json_out is not None:
        written.append(str(atomic_write_text(
            args.json_out, json.dumps(to_jsonable(summary), indent=1) + "\n")))
    if written:
        print("\nwritten: " + ", ".join(written))
    return 0
