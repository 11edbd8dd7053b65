"""``isoapprox diagnose FILE``: a report on anyone's embeddings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..io import atomic_write_text, load_embeddings, to_jsonable


def register(sub: argparse._SubParsersAction, name: str, help_text: str) -> argparse.ArgumentParser:
    """Add the ``diagnose`` subcommand."""
    p = sub.add_parser(
        name,
        help=help_text,
        description=(
            "Read embeddings and labels (.npz with arrays 'embeddings' and 'labels', "
            "a .npy of embeddings with --labels LABELS.npy, or a .csv with a label "
            "column) and report the triplet and batch-hard losses, the "
            "triplet-separation report and the distances to the collapsed embedding."
        ),
    )
    p.add_argument("file", type=Path, help="embedding file (.npz, .npy or .csv)")
    p.add_argument("--labels", type=Path, default=None, help="labels .npy (with an .npy FILE)")
    p.add_argument("--embeddings-key", default=None, help="array name in the .npz (default 'embeddings')")
    p.add_argument("--labels-key", default=None, help="array name in the .npz (default 'labels')")
    p.add_argument("--label-column", default=None,
                   help="CSV label column, by name or index (default 'label' or the last column)")
    p.add_argument("--margin", type=float, default=0.0, help="triplet margin alpha >= 0 (default 0)")
    p.add_argument("--json", dest="json_out", type=Path, default=None, metavar="OUT",
                   help="also write the report as JSON to OUT")
    p.set_defaults(func=run)
    return p


def _format(report: dict) -> str:
    lines = []
    d = report["data"]
    lines.append(f"embeddings: N = {d['n_points']} points in R^{d['dim']}, "
                 f"{d['n_classes']} classes, margin alpha = {d['margin']:g}")
    lines.append("")
    lines.append("losses")
    for k, v in report["losses"].items():
        lines.append(f"  {k:<24s} {v:.6g}")
    s = report["separation"]
    lines.append("")
    lines.append("triplet separation")
    lines.append(f"  {'separated':<24s} {s['separated']}")
    lines.append(f"  {'violated triplets':<24s} {s['n_violated']} of {s['n_triplets']} "
                 f"({100 * s['fraction_violated']:.1f}%)")
    a, p_, m = s["worst_triplet"]
    lines.append(f"  {'worst triplet (a, p, m)':<24s} ({a}, {p_}, {m}), slack {s['worst_slack']:.6g}")
    c = report["collapse"]
    lines.append("")
    lines.append("collapse")
    lines.append(f"  {'diameter':<24s} {c['diameter']:.6g}  (pair {c['diameter_pair']})")
    lines.append(f"  {'d_iso(E, collapsed)':<24s} {c['d_iso_to_collapsed']:.6g}")
    lines.append(f"  {'MEB radius = d_haus':<24s} {c['meb_radius']:.6g}")
    for key in ("extra",):
        if key in report:
            lines.append(str(report[key]))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Execute ``isoapprox diagnose``."""
    from ..diagnostics import basic_report

    label_column = args.label_column
    if label_column is not None and label_column.lstrip("-").isdigit():
        label_column = int(label_column)
    E, y = load_embeddings(
        args.file,
        labels=args.labels,
        embeddings_key=args.embeddings_key,
        labels_key=args.labels_key,
        label_column=label_column,
    )
    report = basic_report(E, y, margin=args.margin)
    report["file"] = str(args.file)
    print(_format(report))
    if args.json_out is not None:
        atomic_write_text(args.json_out, json.dumps(to_jsonable(report), indent=1) + "\n")
    return 0
