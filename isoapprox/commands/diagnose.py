"""``isoapprox diagnose FILE``: a collapse report on anyone's embeddings."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import as_labels, as_points, require_triplets
from ..bracket import bracket_words
from ..diagnostics import (
    DEFAULT_QUANTILES,
    SIGNATURE_NAMES,
    DiagnoseOptions,
    SignatureThresholds,
    add_theory,
    diagnose,
    diagnose_batches,
    diagnose_theory,
    embedding_view,
)
from ..diagnostics.report import THEORY_NEEDS_MARGIN, VERDICT_WORDS
from ..diagnostics.signatures import signatures_help
from ..exceptions import InvalidInputError, IsoapproxError
from ..ideal import EFFORTS
from ..io import atomic_write_bytes, atomic_write_text, read_embeddings, to_jsonable
from ..theory import TheoryOptions
from .common import bounded_int, claim_outputs

_WIDTH = 92


def _verdict_help() -> str:
    """The verdict words of the help, in the verdict's order (from the signature registry)."""
    words = list(dict.fromkeys(VERDICT_WORDS.values()))
    text = (f"verdict (first lines; --summary prints only them): {', '.join(words[:-1])} or "
            f"{words[-1]}, with its evidence and what to do.")
    return textwrap.fill(text, _WIDTH, subsequent_indent="  ", break_on_hyphens=False) + "\n"


_EPILOG = """\
input files (the report's first lines say what was read: rows, columns, labels, index):
  .npz      arrays 'embeddings' (N, n) and 'labels' (N,) (other names: --embeddings-key,
            --labels-key); float16/float32 are computed in float64
  .npy      the embeddings; the labels come from --labels
  .csv      one row per point: numeric embedding columns and one label column (named
            'label', 'labels' or 'y', else the last; or --label-col NAME|POSITION).
            Also .txt (the same), .tsv (tab-separated) and .parquet (needs pyarrow:
            pip install isoapprox[parquet]). Header: the first row when it names
            columns (a name above a number, or pandas' 0,1,2,...); else all rows are data.
            Row index (pandas' to_csv writes one): dropped when its header is '',
            'index', 'id' or 'Unnamed: K'; a first column of distinct integers filling a
            range (0..N-1) that no header names so is refused as ambiguous:
            --index-col COLUMN drops it (name or 0-based position), --no-index keeps it
  --labels  one label per embedding: .npy, .csv/.tsv (one column, optional header and
            index column) or .txt (one per line); class names or integers. Replaces
            the labels of FILE

""" + signatures_help() + """
theory (skip with --no-theory):
  d_iso(E, F_TS), d_haus(E, F_TS)   distances to the triplet-separated (ideal) set, with
                                    certified brackets; the nearest ideal embedding, its kind
                                    (collapsed, class-collapsed, general), theta and c
  L/2 <= d_iso <= L                 statement 3, L the batch-hard loss (max): the loss is a
                                    faithful proxy of d_iso unless d_iso > L
  D*(P, n, margin)                  least diameter of P classes alpha apart in R^n: a
                                    collapsed batch has loss = margin but d_iso = D*, larger
                                    than the margin once P > n + 1
  suggested layout                  largest classes per batch and least dimension with
                                    D* <= 2 x margin (our criterion), proven by the D*
                                    table: a layout exists up to it, and where the lower
                                    end proves more impossible; P <= n + 1 for D* = margin
  Files above --theory-max-points points (default 200) are evaluated on random P x K
  batches of that size, drawn as training draws batches (--theory-batches of them,
  default 1); with --batch-size, on the first --theory-batches (default 3) of its
  batches. Solver work per distance: --effort (quick, default, thorough): counts of
  work, so the brackets are the same on a busy machine; --theory-time-limit is only a
  safety net (a bracket cut by it depends on the machine's speed, and says so). The
  section states the budget it used. By default only what the verdict reads is
  certified (d_iso against L, D*, the layout); --certify-all also tightens d_haus by
  the minimax Procrustes isometry and a certified enclosing ball and computes theta
  (minutes in R^128).

history (--history LOG, a log of isoapprox.CollapseMonitor; see docs/monitor.md):
  a summary (when each signature started and ended, bad batches, the last numbers) and
  STEM_history.png/.pdf (STEM: LOG's name): loss, diameter, distances to F_TS with
  brackets, active triplets, share of collapsed classes and the signatures over steps.

""" + _verdict_help() + """
exit status: 0 on success; 2 on a bad file or option (one line on stderr); 3 when a
  --fail-on signature holds.

examples:
  isoapprox diagnose examples/collapsed.npz --margin 0.2
  isoapprox diagnose emb.npz --margin 0.2 --summary --fail-on partial_collapse,collapsed
  isoapprox diagnose emb.npy --labels labels.npy --loss 0.693 --json report.json
  isoapprox diagnose emb.csv --batch-size 128 --samples-per-class 4 --n-batches 50
  isoapprox diagnose examples/stuck_at_margin.npz --margin 0.2 --out ideal.npz --plot figs
  isoapprox diagnose --history run.jsonl --plot figs
"""

#: the epilog of ``isoapprox diagnose --help`` (``_EPILOG``: its old name)
EPILOG = _EPILOG

#: the description of ``isoapprox diagnose --help`` (printed as written, not filled)
DESCRIPTION = (
    "Diagnose embeddings trained with a triplet loss: the losses (batch-hard, "
    "soft-margin, triplet), triplet separation, the distances to the collapsed "
    "embedding, exact pair-distance quantiles, effective rank, RankMe, the std of "
    "L2-normalised embeddings, alignment and uniformity, per-class spread against "
    "class separation; then the known collapse signatures (loss stuck at the margin "
    "or at ln 2, all distances tiny, partial collapse: which classes merged, class "
    "collapse, dimensional collapse; a reported loss that is not the file's) and a "
    "verdict in words; and the theory: the loss against the distance to the ideal "
    "(triplet-separated) set, the nearest ideal embedding, D*(P, n, margin) and the "
    "batch layout it suggests. With --batch-size the same over random P x K batches "
    "drawn from the file, as training sees them."
)
FILL_DESCRIPTION = False


def _column(text: str) -> str | int:
    """A table's column as ``--label-col`` and ``--index-col`` name it: a name, or digits
    (maybe after ``-``) for a 0-based position."""
    return int(text) if text.lstrip("-").isdigit() else text


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of ``isoapprox diagnose``."""
    p.add_argument("file", type=Path, nargs="?",
                   help="embedding file (.npz, .npy, .csv, .tsv, .txt or .parquet)")
    p.add_argument("--history", type=Path, metavar="LOG",
                   help="instead of FILE: a CollapseMonitor log (JSON lines); print when each "
                        "signature started and draw the curves over training into --plot DIR "
                        "(default: beside LOG); --json OUT writes the summary")
    p.add_argument("--labels", type=Path, metavar="LABELS",
                   help="labels file, one per embedding: .npy, .csv, .tsv or .txt (one per "
                        "line), class names or integers (required with an .npy FILE; "
                        "replaces the labels of FILE)")
    p.add_argument("--embeddings-key", metavar="KEY",
                   help="array name of the embeddings in the .npz (default 'embeddings')")
    p.add_argument("--labels-key", metavar="KEY",
                   help="array name of the labels in the .npz (default 'labels')")
    p.add_argument("--label-col", "--label-column", dest="label_column", type=_column,
                   metavar="COLUMN",
                   help="label column of a table (.csv, .tsv, .parquet), by name or 0-based "
                        "position (default 'label', 'labels' or 'y', else the last)")
    index = p.add_mutually_exclusive_group()
    index.add_argument("--index-col", type=_column, metavar="COLUMN",
                       help="row-index column of a table, by name or 0-based position: "
                            "dropped (default: detected, see input files below)")
    index.add_argument("--no-index", action="store_true",
                       help="no column of the table is a row index: keep them all")
    p.add_argument("--margin", type=float,
                   help="the training margin alpha >= 0 (default: not given; the losses are "
                        "then at margin 0, the margin-relative checks and the theory are off)")
    p.add_argument("--loss", type=float, metavar="VALUE",
                   help="the loss value training reports (checked against the margin and ln 2)")
    p.add_argument("--loss-reduction", default="mean",
                   choices=("mean", "sum", "max", "mean_nonzero"),
                   help="how training reduces the batch-hard terms of --loss (default mean; "
                        "mean_nonzero: over the positive terms, pytorch-metric-learning's "
                        "default)")
    p.add_argument("--loss-kind", default="batch_hard", choices=("batch_hard", "all"),
                   help="the terms of --loss: one per anchor (batch_hard, default) or one per "
                        "triplet (all)")
    p.add_argument("--quantiles", metavar="Q1,Q2,...",
                   help="pair-distance quantile levels in [0, 1] (default "
                        "0.01,0.1,0.25,0.5,0.75,0.9,0.99)")
    p.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                   help="override a signature threshold (repeatable; names in the list below)")
    p.add_argument("--batch-size", type=int, metavar="B",
                   help="evaluate random batches of B = P x K points instead of the whole file")
    p.add_argument("--samples-per-class", type=bounded_int(2), default=4, metavar="K",
                   help="K points per class in each batch (default 4)")
    p.add_argument("--n-batches", type=bounded_int(1), default=20, metavar="M",
                   help="number of random batches (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the batch draws (default 0)")
    p.add_argument("--summary", action="store_true",
                   help="print only the verdict block (verdict word, evidence, what to do)")
    p.add_argument("--fail-on", metavar="SIG[,SIG...]",
                   help="exit with status 3 when one of these signatures holds (names in the "
                        "list below), or the verdict is one of these words (collapsed, "
                        "partial-collapse, compressed, ...); 'any': any verdict but healthy")
    p.add_argument("--json", dest="json_out", type=Path, metavar="OUT",
                   help="also write the full report as JSON to OUT")
    p.add_argument("--no-theory", action="store_true",
                   help="skip the theory section (nearest ideal embedding, D*, layout)")
    p.add_argument("--effort", choices=EFFORTS, default="default",
                   help="work budget of each solve of the theory section: counts of local "
                        "solves, nodes and LPs, never seconds (default: default)")
    p.add_argument("--certify-all", action="store_true",
                   help="certify every quantity of the theory section, also those no verdict "
                        "reads: d_haus by the minimax Procrustes isometry and a certified "
                        "enclosing ball, the thickness theta (default: d_iso against L, D* "
                        "and the layout only)")
    p.add_argument("--theory-time-limit", type=float, metavar="SECONDS",
                   help="safety net: wall-clock seconds per solve after which it stops "
                        "with a machine-dependent bracket (default 600)")
    p.add_argument("--theory-max-points", type=int, metavar="N",
                   help="evaluate the theory on random P x K batches of at most N points "
                        "(default 200)")
    p.add_argument("--theory-batches", type=int, metavar="M",
                   help="evaluate the theory on M random batches (default 1); with "
                        "--batch-size on the first M of its batches (default 3); 0 skips "
                        "the theory, as --no-theory does")
    p.add_argument("--out", type=Path, metavar="FILE.npz",
                   help="save the nearest ideal embedding (arrays 'embedding', 'labels', the "
                        "brackets, ...) to FILE.npz")
    p.add_argument("--plot", type=Path, metavar="DIR",
                   help="draw a 2-D view of the embeddings with their nearest ideal embedding "
                        "and the pair-distance histogram into DIR (PNG and PDF)")


# --- formatting -------------------------------------------------------------


def _num(v: Any, digits: int = 4) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):  # "inf", "-inf" and "nan" as Python formats them
        return f"{v:.{digits}g}"
    return str(v)


def _table(rows: list[tuple[str, str, str]], header: tuple[str, ...]) -> list[str]:
    w0 = max(len(header[0]), *(len(r[0]) for r in rows))
    w1 = max(len(header[1]), *(len(r[1]) for r in rows))
    out = [f"  {header[0]:<{w0}}  {header[1]:<{w1}}  {header[2]}".rstrip(),
           f"  {'-' * w0}  {'-' * w1}  {'-' * len(header[2])}".rstrip()]
    for a, b, c in rows:
        out.append(f"  {a:<{w0}}  {b:<{w1}}  {c}".rstrip())
    return out


def _wrap(text: str, indent: str = "  ", first: str | None = None) -> list[str]:
    return textwrap.wrap(text, width=_WIDTH, initial_indent=first if first is not None else indent,
                         subsequent_indent=indent)


def _statistics_rows(r: dict) -> list[tuple[str, str, str]]:
    d, losses, sep, col, st, cl = (r["data"], r["losses"], r["separation"], r["collapse"],
                                   r["statistics"], r["classes"])
    alpha = d["margin"] if d["margin"] is not None else 0.0
    rows = [
        ("batch-hard loss, mean / max", f"{_num(losses['batch_hard_mean'])} / "
         f"{_num(losses['batch_hard_max'])}", f"[hp - hn + {alpha:g}]_+ ; = margin at collapse"),
        ("soft-margin batch-hard loss", _num(losses["soft_margin_mean"]),
         "softplus(hp - hn) ; = ln 2 = 0.6931 at collapse"),
        ("triplet loss, mean", _num(losses.get("triplet_mean")),
         "over all triplets"),
        ("active triplets", f"{sep['n_active']} of {sep['n_triplets']} "
         f"({100 * sep['fraction_active']:.1f}%)", "d(a,m) < d(a,p) + margin"),
        ("violated triplets", f"{sep['n_violated']} ({100 * sep['fraction_violated']:.1f}%)",
         f"worst (a,p,m) = {tuple(sep['worst_triplet'])}, slack {_num(sep['worst_slack'])}"),
        *_retrieval_rows(r.get("retrieval")),
        ("diameter = d_iso(E, collapsed)", _num(col["diameter"]),
         f"pair {tuple(col['diameter_pair'])}"),
        ("MEB radius = d_haus(E, collapsed)", _num(col["meb_radius"]),
         f"certified >= {_num(col['meb_radius_lower'], 6)}"),
    ]
    dist = st["distances"]
    rows.append(("pair distance min / mean", f"{_num(dist['min'])} / {_num(dist['mean'])}",
                 f"over {dist['n_pairs']} pairs i < j"))
    for q, v in dist["quantiles"].items():
        label = "median pair distance" if float(q) == 0.5 else f"pair distance quantile {q}"
        rows.append((label, _num(v), "exact (numpy 'linear')" if float(q) == 0.5 else ""))
    rows += [
        ("rms norm / centroid norm", f"{_num(st['rms_norm'])} / {_num(st['centroid_norm'])}",
         "length of a row / of the mean row"),
        ("effective rank (centred)", _num(st["effective_rank"]),
         f"Roy & Vetterli; of n = {d['dim']}"),
        ("RankMe", _num(st["rankme"]), "Garrido et al.; uncentred, eps 1e-7"),
        ("std of L2-normalised rows", _num(st["std_l2_normalized"]),
         f"0 = collapsed, {_num(st['std_l2_isotropic'], 3)} = isotropic"),
        (f"uniformity (t = {st['uniformity_t']:g})", _num(st["uniformity"]),
         f"0 = one direction, >= {-4 * st['uniformity_t']:g}"),
        (f"alignment (alpha = {st['alignment_alpha']:g})", _num(st["alignment"]),
         "same-class pairs; 0 = aligned"),
    ]
    if st["n_zero_rows"]:
        rows.append(("zero rows", str(st["n_zero_rows"]), "left out of the last three"))
    rows += [
        ("largest class diameter", _num(cl["max_class_diameter"]),
         f"worst classes: {', '.join(str(c) for c in cl['worst_classes'][:3])}"),
        ("smallest gap between classes", _num(cl["min_class_gap"]),
         "least distance, points of two classes"),
    ]
    return rows


def _retrieval_rows(ret: dict | None) -> list[tuple[str, str, str]]:
    if not ret or not ret.get("n_queries"):
        return []
    how = (f"a sample of {ret['n_queries']} of {ret['n_eligible']} queries (seed 0)"
           if ret["sampled"] else f"all {ret['n_queries']} queries")
    return [
        ("Recall@1 / R-Precision / MAP@R",
         f"{_num(ret['recall_at_1'], 3)} / {_num(ret['r_precision'], 3)} / "
         f"{_num(ret['map_at_r'], 3)}", f"leave-one-out, {how}; singletons are no queries"),
        ("class structure score", _num(ret["structure_score"], 3),
         "(R-Precision - chance) / (1 - chance): 1 ranked, 0 mixed"),
    ]


#: rows of the per-class table in the text report (all are in the JSON)
_CLASS_ROWS = 8


def _classes_lines(cl: dict) -> list[str]:
    """Merged groups, collapsed classes, overlapping pairs and the worst classes."""
    mg = cl["merging"]
    lines = [f"classes: merged groups at height h = {_num(mg['height'], 3)} (single linkage)"]
    groups = mg["groups"]
    if groups:
        lines += _wrap(f"{mg['n_merged_classes']} classes, {mg['merged_points']} points "
                       f"({100 * mg['merged_share']:.1f}%), in {len(groups)} merged group(s):")
        for k, g in enumerate(groups[:_CLASS_ROWS]):
            shown = ", ".join(str(c) for c in g["classes"][:16])
            more = f", ... ({g['n_classes']} classes)" if g["n_classes"] > 16 else ""
            lines += _wrap(f"classes {shown}{more}: {g['n_points']} points "
                           f"({100 * g['share']:.1f}%), diameter {_num(g['diameter'], 3)}",
                           indent="      ", first=f"    {k + 1}. ")
        if len(groups) > _CLASS_ROWS:
            lines.append(f"    ... {len(groups) - _CLASS_ROWS} more groups in the JSON report")
    else:
        lines.append("  no two classes share a cluster")
    if mg["collapsed_classes"]:
        cc = mg["collapsed_classes"]
        lines += _wrap(f"{len(cc)} class(es) collapsed to a point (diameter <= h): "
                       + ", ".join(str(g["classes"][0]) for g in cc[:16])
                       + (", ..." if len(cc) > 16 else ""))
    if mg["n_overlapping_pairs"]:
        pairs = ", ".join(f"{o['classes'][0]}/{o['classes'][1]}" for o in mg["overlaps"][:6])
        lines += _wrap(f"{mg['n_overlapping_pairs']} overlapping class pair(s) (an anchor's "
                       f"hardest negative inside its hardest-positive distance), most: {pairs}")
    rows = [(str(r["class"]), str(r["size"]), _num(r["diameter"], 3), str(r["nearest_class"]),
             _num(r["gap"], 3), f"{100 * r['violated_share']:.1f}%",
             "-" if r["group"] is None else str(r["group"] + 1))
            for r in cl["table"][:_CLASS_ROWS]]
    header = ("class", "size", "diameter", "nearest", "gap", "viol. share", "group")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines.append("  " + "  ".join(f"{h:<{w}}" for h, w in zip(header, widths, strict=True)))
    lines.append("  " + "  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  " + "  ".join(f"{v:<{w}}" for v, w in zip(r, widths, strict=True)).rstrip())
    if len(cl["table"]) > _CLASS_ROWS:
        lines.append(f"  ... {len(cl['table']) - _CLASS_ROWS} more classes in the JSON report "
                     "(worst first: share of violated triplets, then diameter / gap)")
    return lines


def _format_signatures(sigs: dict) -> list[str]:
    lines = []
    for name, s in sigs.items():
        mark = "[x]" if s["holds"] else "[ ]"
        lines += _wrap(s["summary"], indent=" " * 6, first=f"  {mark} {name}: ")
    return lines


def _verdict_block(report: dict) -> list[str]:
    """The report's first lines: the verdict word, its evidence, what to do, the notes
    and the input's description (all that ``--summary`` prints)."""
    v = report["verdict"]
    word = v.get("word") or v["status"].upper()
    lines = [f"VERDICT: {word}"]
    lines += _wrap(v["headline"])
    for e in v.get("evidence", v["details"][:3]):
        lines += _wrap(e, indent="    ", first="  - ")
    if v.get("advice"):
        lines += _wrap(v["advice"], indent="    ", first="  what to do: ")
    for note in v.get("notes", ()):
        lines += _wrap(note, indent="    ", first="  note: ")
    desc = (report.get("input") or {}).get("description")
    if desc:
        lines += _wrap(str(desc), indent="    ", first="  input: ")
    return lines


def _format_details(v: dict) -> list[str]:
    """Every finding behind the verdict (the block at the top quotes the first)."""
    lines = ["verdict details"]
    for d in v["details"]:
        lines += _wrap(d, indent="    ", first="  - ")
    return lines


def _bracket(v: Any, lo: Any, up: Any, digits: int = 4) -> str:
    if v is None:
        return "n/a"
    return bracket_words(v, lo, up, lambda x: _num(x, digits))


_HOLDS = {True: "holds", False: "fails", None: "undecided"}


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _c_text(cst: dict) -> str:
    if _nan(cst["c"]):
        return "n/a"
    return _bracket(cst["c"], cst["c_lower"], cst["c_upper"], 3)


def _theory_rows(t: dict) -> list[tuple[str, str, str]]:
    if "skipped" in t:
        return [("theory", "skipped", t["skipped"])]
    P, n, alpha = t["n_separated_classes"], t["dim"], t["margin"]
    iso, haus, cst, sug = t["iso"], t["haus"], t["constant"], t["suggestion"]
    lean = t.get("certify") == "verdict"
    beyond = (f"P > n + 1 = {n + 1}: loss < distance at collapse" if t["beyond_simplex"]
              else f"P <= n + 1 = {n + 1}: loss = distance at collapse")
    if iso["certified"]:
        iso_note = f"certified; lower bound: {iso['lower_source']}"
    else:
        iso_note = (f"gap {100 * iso['rel_gap']:.0f}% ({iso['status']}); lower bound: "
                    f"{iso['lower_source']}")
    up = t["loss_upper_check"]["holds"]
    up_note = {False: "d_iso > L (certified): the loss understates the distance",
               True: "certified: the loss pins the distance within a factor 2",
               None: "the bracket straddles L"}[up]
    rows = [
        ("classes P / dimension n", f"{P} / {n}", beyond),
        ("batch-hard loss L (max / mean)", f"{_num(t['loss_max'])} / {_num(t['loss_mean'])}",
         f"margin alpha = {alpha:g}"),
        ("d_iso(E, F_TS)", _bracket(iso["value"], iso["lower"], iso["upper"]), iso_note),
        ("L/2 <= d_iso(E, F_TS)", _HOLDS[t["loss_lower_check"]["holds"]], "statement 3 (proven)"),
        ("d_iso(E, F_TS) <= L", _HOLDS[up], up_note),
        ("D*(P, n, margin)", _bracket(t["d_star"], t["d_star_lower"], t["d_star_upper"]),
         ("exact" if t["d_star_exact"] else "proven bracket (docs/dstar.md)")
         + (f"; {_num(t['collapse_ratio_lower'], 3)}"
            + ("" if t["d_star_exact"] else f"-{_num(t['collapse_ratio_upper'], 3)}")
            + " x margin" if alpha > 0 else "")),
        ("d_haus(E, F_TS)", _bracket(haus["value"], haus["lower"], haus["upper"]),
         f"upper: {haus['solver']}; lower: {haus['lower_source']}"
         + ("; not tightened (--certify-all)" if lean and not haus["certified"] else "")),
        ("nearest ideal embedding", f"{iso['kind']}", f"diameter {_num(t['ideal_diameter'])}; "
         f"from {iso['solver']}"),
        ("c = d_haus / d_iso", _c_text(cst),
         "undefined: d_iso = 0, E is ideal" if _nan(cst["c"]) else ">= 1/2 by statement 1"),
        ("thickness theta(E)", "not computed", "not read by the verdict; --certify-all")
        if lean else
        ("thickness theta(E)", _bracket(cst["theta"], cst["theta_lower"], cst["theta_upper"], 3),
         "0 for flat sets"),
    ]
    if sug["applicable"] and (t["beyond_simplex"] or not sug["within_ratio"]):
        if sug["max_classes_capped"]:
            value = (">" if sug["max_classes_beyond"] else ">=") + f" {sug['max_classes']}"
            note = f"the table ends at {sug['max_classes']}"
        else:
            value = str(sug["max_classes"])
            note = "a layout exists"
            if sug["batch_size"] is not None:
                note += f"; batch size {sug['batch_size']} at K = {sug['samples_per_class']}"
        if sug["classes_impossible_from"] is not None:
            note += f"; impossible from {sug['classes_impossible_from']}"
        rows.append((f"most classes per batch, D* <= {sug['ratio']:g} x margin", value,
                     f"{note}; {sug['max_classes_exact']} for D* = margin"))
        below = sug["dims_impossible_below"]
        rows.append((f"least dimension for {P} classes", str(sug["min_dim"]),
                     (f"impossible below {below}; " if below > 1 else "")
                     + f"{sug['min_dim_exact']} for D* = margin; bounds: {sug['curve']}"))
    batches = t.get("batches")
    if batches is not None:
        sm = batches["summary"]
        m = sm["n_evaluated"]
        rows.append((f"over {m} random batches", f"d_iso > L in {sm['unfaithful']}",
                     f"d_iso <= L in {sm['faithful']}, undecided in {sm['undecided']}; "
                     f"median d_iso {_num(sm['median_d_iso'])}, median L "
                     f"{_num(sm['median_loss_max'])}"))
    rows += _budget_rows(t.get("budget"))
    rows.append(("theory time", f"{t['seconds']:.2f} s", "first batch"
                 if batches is not None else ""))
    return rows


def _budget_rows(b: dict | None) -> list[tuple[str, str, str]]:
    """The work the theory section ran under (its ``budget``), in two rows."""
    if not b:
        return []
    ps, iso = b["per_solve"], b["solves"]["iso"]
    used = f"d_iso: {iso['n_starts']} local solves, {iso['n_iter']} iterations"
    if b.get("iso_stages"):
        used = "d_iso: " + ", then ".join(
            f"{st['n_starts']} local solves at max_iter {st['budget']['max_iter']} "
            f"({st['n_iter']} iterations; statement 3 "
            f"{'decided' if st['verdict_decided'] else 'open'})" for st in b["iso_stages"])
    if "haus" in b["solves"]:
        h = b["solves"]["haus"]
        used += f"; d_haus: {h['n_starts']}, {h['n_iter']}"
    net = (f"safety net {b['safety_net_seconds']:g} s"
           + (" FIRED: not reproducible" if not b["reproducible"] else " (not reached)"))
    rows = [(f"work budget (effort {b['effort']})",
             f"{b['points']} points, {b['classes']} classes",
             f"per solve <= {ps['n_starts']} local solves (fewer beyond 16 points) at "
             f"max_iter {ps['max_iter']}, {ps['max_nodes']} nodes, {ps['max_lps']} LPs, "
             f"{ps['max_subbatches']} sub-problems; used {used}; {net}")]
    if b["certify"] == "verdict":
        rows.append(("certified", "what the verdict reads",
                     "d_iso bracket, D*, layout; not: " + "; ".join(b["skipped"])
                     + " (--certify-all)"))
    else:
        rows.append(("certified", "all", f"thickness starts {b['thickness_starts']}"))
    return rows


def _theory_title(t: dict) -> str:
    """What the theory section describes: the whole file or random P x K batches of it."""
    title = "theory: the loss against the distance to the ideal (triplet-separated) set"
    ev = t.get("evaluated")
    if ev is None:
        return title
    if ev["mode"] == "all":
        return title + ", on all points"
    m = t["batches"]["n_batches"] if "batches" in t else 1
    return (f"{title}, on {'a random batch' if m == 1 else f'{m} random batches'} of "
            f"{ev['n_classes']} classes x {ev['samples_per_class']} = {ev['n_points']} of the "
            f"{ev['n_input_points']} points (P x K sampling, as in training; "
            + ("the table: the first batch)" if m > 1 else "--theory-batches for more)"))


def _statistics_title(b: dict | None) -> str:
    """The statistics' heading, with what they cost (exact: every point and pair)."""
    if not b:
        return "statistics"
    return (f"statistics (exact, no sampling: all {b['points']} points, {b['pairs']} pairs; "
            f"enclosing balls certified to {b['ball_rtol']:g})")


def format_report(report: dict) -> str:
    """The text report of :func:`isoapprox.diagnostics.diagnose`."""
    d = report["data"]
    lines = [
        *_verdict_block(report),
        "",
        f"{report.get('file', 'embeddings')}: N = {d['n_points']} points in R^{d['dim']}, "
        f"{d['n_classes']} classes (sizes {d['class_size_min']}..{d['class_size_max']}), "
        + _margin_text(d["margin"])
        + (f", reported loss {d['reported_loss']:g}" if d.get("reported_loss") is not None
           else ""),
        "",
        _statistics_title(report["statistics"].get("budget")),
    ]
    lines += _table(_statistics_rows(report), ("statistic", "value", "note"))
    lines += ["", *_classes_lines(report["classes"])]
    if isinstance(report.get("theory"), dict):
        lines += ["", _theory_title(report["theory"])]
        lines += _table(_theory_rows(report["theory"]), ("quantity", "value", "note"))
    lines += ["", "signatures"]
    lines += _format_signatures(report["signatures"])
    lines += ["", *_format_details(report["verdict"])]
    return "\n".join(lines)


def _margin_text(margin: float | None) -> str:
    return "no margin given" if margin is None else f"margin alpha = {margin:g}"


#: theory numbers shown in the batch table (all are in the JSON)
_BATCH_THEORY_KEYS = ("theory.loss_max", "theory.d_iso", "theory.d_iso_lower",
                      "theory.d_iso_upper", "theory.d_haus", "theory.d_star", "theory.c",
                      "theory.theta", "theory.seconds")


def format_batch_report(report: dict) -> str:
    """The text report of :func:`isoapprox.diagnostics.diagnose_batches`."""
    d = report["data"]
    lines = [
        *_verdict_block(report),
        "",
        f"{report.get('file', 'embeddings')}: N = {d['n_points']} points in R^{d['dim']}, "
        f"{d['n_classes']} classes; {d['n_batches']} random batches of "
        f"{d['classes_per_batch']} classes x {d['samples_per_class']} = {d['batch_size']} "
        f"points, " + _margin_text(d["margin"]),
        "",
        "statistics over batches (exact within each batch)",
    ]
    shown = {k: v for k, v in report["statistics"].items()
             if not k.startswith("theory.") or k in _BATCH_THEORY_KEYS}
    w = max(len(k) for k in shown)
    cols = ("mean", "min", "median", "max")
    rows = [("statistic", cols), ("-" * w, ("-" * 10,) * len(cols))]
    rows += [(k, ("n/a",) if s is None else tuple(_num(s[c]) for c in cols))
             for k, s in shown.items()]
    lines += [f"  {k:<{w}}" + "".join(f"  {v:>10}" for v in cells) for k, cells in rows]
    tb = report.get("theory", {}).get("budget")
    if tb:
        lines += ["", "theory budget (per evaluated batch)"]
        lines += _table(_budget_rows(tb), ("budget", "value", "note"))
    lines += ["", "signatures (batches where each holds)"]
    for name, s in report["signatures"].items():
        lines.append(f"  {name:<22s} {s['batches']:>4d} of {d['n_batches']}")
    lines += ["", *_format_details(report["verdict"])]
    return "\n".join(lines)


# --- running ----------------------------------------------------------------


def _parse_thresholds(items: list[str]):
    names = SignatureThresholds.names()
    values: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in names:
            raise InvalidInputError(
                f"`--threshold` must be NAME=VALUE with NAME one of {', '.join(names)}; got "
                f"{item!r}"
            )
        try:
            values[name] = float(value)
        except ValueError:
            raise InvalidInputError(
                f"`--threshold {name}` must be a number; got {value!r}"
            ) from None
    return SignatureThresholds(**values)


def _parse_quantiles(text: str | None):
    if text is None:
        return DEFAULT_QUANTILES
    try:
        levels = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        levels = ()
    if not levels:
        raise InvalidInputError(
            f"`--quantiles` must be comma-separated numbers in [0, 1]; got {text!r}"
        )
    return levels


def _validated(path: Path, E, y):
    """Validate loaded arrays, naming the file in every message."""
    try:
        X = as_points(E, "embeddings", min_points=2)
        codes, _ = as_labels(y, X.shape[0], "labels")
        require_triplets(codes, "labels")
    except (IsoapproxError, TypeError) as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    return X


def _theory_options(args: argparse.Namespace):
    kw: dict[str, Any] = {"seed": args.seed, "effort": args.effort}
    if args.theory_time_limit is not None:
        kw["time_limit"] = args.theory_time_limit
    if args.theory_max_points is not None:
        kw["max_points"] = args.theory_max_points
    try:
        return TheoryOptions(**kw)
    except (IsoapproxError, TypeError) as exc:
        name = str(exc).split("`")[1] if "`" in str(exc) else ""
        flag = {"time_limit": "--theory-time-limit", "max_points": "--theory-max-points",
                "effort": "--effort",
                "seed": "--seed"}.get(name, "theory option")
        raise InvalidInputError(f"`{flag}`: {exc}") from None


def _check_outputs(args: argparse.Namespace) -> None:
    if args.out is not None:
        if args.out.suffix != ".npz":
            raise InvalidInputError(f"`--out` must name a .npz file; got {str(args.out)!r}")
        if args.no_theory:
            raise InvalidInputError(
                "`--out` saves the nearest ideal embedding, which the theory section computes; "
                "drop --no-theory"
            )
    if args.batch_size is not None and (args.out is not None or args.plot is not None):
        raise InvalidInputError(
            "`--out` and `--plot` describe one embedding and cannot be combined with "
            "--batch-size; save a batch to a file and diagnose that file"
        )
    if args.plot is not None and args.plot.exists() and not args.plot.is_dir():
        raise InvalidInputError(f"`--plot` must name a folder; {str(args.plot)!r} is a file")
    if args.theory_batches is not None and args.theory_batches < 0:
        raise InvalidInputError(f"`--theory-batches` must be >= 0; got {args.theory_batches}")
    if args.out is not None and args.margin is None:
        raise InvalidInputError(
            "`--out` saves the nearest ideal embedding, which needs the training margin; "
            "pass --margin"
        )


#: what ``--fail-on any`` means: any verdict but healthy
_FAIL_ANY = "any"


#: the names ``--fail-on`` takes: signatures, verdict statuses and ``any``
_FAIL_ON_NAMES = (*SIGNATURE_NAMES, *VERDICT_WORDS, _FAIL_ANY)


def _parse_fail_on(text: str | None) -> tuple[str, ...]:
    """``--fail-on SIG[,SIG...]``: signature names, verdict statuses or ``any``."""
    if text is None:
        return ()
    got = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in got if v not in _FAIL_ON_NAMES]
    if not got or bad:
        raise InvalidInputError(
            f"`--fail-on` must be comma-separated names among {', '.join(_FAIL_ON_NAMES)}; got "
            f"{text!r}"
        )
    return got


def _exit_status(report: dict, fail_on: tuple[str, ...]) -> int:
    """3 when a ``--fail-on`` name holds (a signature, in most batches with
    --batch-size; the verdict's status; ``any``: a verdict but healthy), else 0."""
    if not fail_on:
        return 0
    sigs = report["signatures"]
    if "per_batch" in report:
        held = {n for n, s in sigs.items() if s["batches"] * 2 > report["data"]["n_batches"]}
    else:
        held = {n for n, s in sigs.items() if s["holds"]}
    status = report["verdict"]["status"]
    held.add(status)
    if status != "healthy":
        held.add(_FAIL_ANY)
    return 3 if held.intersection(fail_on) else 0


def save_ideal(path: Path, res, *, margin: float) -> Path:
    """Write the nearest ideal embedding of a theory result to ``path`` (.npz)."""
    labels = np.asarray(res.labels)
    if labels.dtype == object:
        labels = labels.astype(str)
    cst = res.constant
    arrays: dict[str, Any] = {
        "embedding": np.asarray(res.iso.embedding),
        "embedding_aligned": np.asarray(res.aligned),
        "embedding_haus": np.asarray(res.haus.embedding),
        "labels": labels,
        "indices": np.asarray(res.indices, dtype=np.int64),
        "margin": np.float64(margin),
    }
    for name, r in (("d_iso", res.iso), ("d_haus", res.haus)):
        arrays.update({name: np.float64(r.value), f"{name}_lower": np.float64(r.lower),
                       f"{name}_upper": np.float64(r.upper)})
    arrays.update(kind=np.array(res.iso.kind), kind_haus=np.array(res.haus.kind))
    for name, obj in (("c", cst), ("theta", cst), ("d_star", res)):
        for key in (name, f"{name}_lower", f"{name}_upper"):
            arrays[key] = np.float64(getattr(obj, key))
    arrays["loss_max"] = np.float64(res.loss_max)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return atomic_write_bytes(path, buf.getvalue())


def run(args: argparse.Namespace) -> int:
    """Execute ``isoapprox diagnose``."""
    if args.history is not None:
        from .history import run_history

        given = [flag for flag, on in (("--summary", args.summary),
                                       ("--fail-on", args.fail_on is not None)) if on]
        if given:
            raise InvalidInputError(
                f"{' and '.join(given)} cannot be combined with --history LOG (they belong "
                "to an embedding FILE's report); run the two separately"
            )
        return run_history(args)
    if args.file is None:
        raise InvalidInputError("diagnose needs an embedding FILE (or --history LOG)")
    options = DiagnoseOptions(
        margin=args.margin,
        loss=args.loss,
        loss_kind=args.loss_kind,
        loss_reduction=args.loss_reduction,
        quantiles=_parse_quantiles(args.quantiles),
        thresholds=_parse_thresholds(args.threshold),
    )
    _check_outputs(args)
    args.fail_on = _parse_fail_on(args.fail_on)
    theory = None if args.no_theory else _theory_options(args)
    with contextlib.ExitStack() as claims:
        claim_outputs(claims, files={"--out": args.out, "--json": args.json_out},
                      folders={"--plot": args.plot})
        return _run(args, options, theory)


def _run(args: argparse.Namespace, options, theory) -> int:
    loaded = read_embeddings(args.file, labels=args.labels, embeddings_key=args.embeddings_key,
                             labels_key=args.labels_key, label_column=args.label_column,
                             index_col=False if args.no_index else args.index_col)
    E, y = loaded.embeddings, loaded.labels
    X = _validated(args.file, E, y)
    res = None
    certify = "all" if args.certify_all else "verdict"
    if args.batch_size is not None:
        report = diagnose_batches(
            X, y, batch_size=args.batch_size, samples_per_class=args.samples_per_class,
            n_batches=args.n_batches, rng=args.seed, options=options, theory=theory,
            theory_batches=3 if args.theory_batches is None else args.theory_batches,
            certify=certify,
        )
    else:
        report = diagnose(X, y, options=options)
    report = {"file": str(args.file), "input": loaded.to_dict(), **report}
    if args.batch_size is None:
        m = 1 if args.theory_batches is None else args.theory_batches
        if theory is not None and m > 0 and options.margin is None:
            report["verdict"]["notes"].append(THEORY_NEEDS_MARGIN)
        elif theory is not None and m > 0:
            res = diagnose_theory(X, y, margin=options.margin, options=theory,
                                  certify=certify)
            # one batch when the file is small enough to be evaluated whole
            more = [diagnose_theory(X, y, margin=options.margin, options=theory, batch=b,
                                    certify=certify)
                    for b in range(1, m)] if res.evaluated != "all" else []
            report = add_theory(report, res, more)
    form = format_report if args.batch_size is None else format_batch_report
    print("\n".join(_verdict_block(report)) if args.summary else form(report))
    written: list[str] = []
    if args.out is not None and res is not None:
        written.append(str(save_ideal(args.out, res, margin=options.margin)))
    if args.plot is not None:
        if res is not None:
            report["view"] = embedding_view(X[res.indices], res.labels, ideal=res.aligned,
                                            rng=args.seed)
        else:
            report["view"] = embedding_view(X, y, rng=args.seed)
    if args.json_out is not None:
        atomic_write_text(args.json_out, json.dumps(to_jsonable(report), indent=1) + "\n")
    if args.plot is not None:
        from ..plotting.diagnose import diagnose_figures

        sources = [args.json_out] if args.json_out is not None else []
        written += [str(p) for p in diagnose_figures(report, args.plot, sources=sources)]
    if written:
        print("\nwritten: " + ", ".join(written))
    return _exit_status(report, args.fail_on)
