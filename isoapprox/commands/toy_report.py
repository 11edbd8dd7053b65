"""What ``isoapprox toy`` writes and prints: the results document and the summary text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..io import write_results
from ..toy import PAPER_C, ToyConfig

__all__ = ["format_merge_order", "format_summary", "write_toy_results"]

#: the fields of run_toy's result written as top-level fields of the results document
_TOP_LEVEL = ("inputs", "figures", "scenarios", "random_summary", "seconds")


def write_toy_results(path: Any, config: ToyConfig, result: dict[str, Any], *,
                      jobs: int = 1) -> Path:
    """Write :func:`~isoapprox.toy.run_toy`'s result as a results document (JSON + CSV).

    The records are the trajectory rows followed by the random-toy rows
    (field ``part`` tells them apart); the scenario summaries, the random
    summary, the inputs and the figure choices are top-level fields.
    """
    return write_results(
        path,
        experiment="toy",
        config=config.to_dict(),
        records=result["trajectory"] + result["random"],
        seed=config.seed,
        extra={**{k: result[k] for k in _TOP_LEVEL}, "jobs": jobs},
    )


def _fmt(x: float | None, spec: str = ".3g") -> str:
    return "-" if x is None else format(x, spec)


def format_merge_order(order: Sequence[Sequence[Sequence[int]]]) -> str:
    """The clusters after each merge, with points numbered from 1 as in the figures.

    Examples
    --------
    >>> format_merge_order([[[0, 3]], [[0, 3, 4]], [[0, 1, 3, 4]], [[0, 1, 2, 3, 4]]])
    '{1,4} -> {1,4,5} -> {1,2,4,5} -> {1,2,3,4,5}'
    """
    return " -> ".join(" ".join("{" + ",".join(str(i + 1) for i in g) + "}" for g in part)
                       for part in order)


def format_summary(result: dict[str, Any]) -> str:
    """A short plain-text summary of :func:`run_toy`'s result (or a results document)."""
    lines = []
    head = ("scenario", "margin", "lr", "outcome", "merges (step: clusters left)",
            "diam 0 -> end", "loss end", "c max / end", "d_haus(f,f*)/d_iso max")
    rows = [head]
    for s in result["scenarios"]:
        merges = " ".join(f"{st}:{k}" for st, k in s["merge_events"]) or "none"
        outcome = s["outcome"] + (" (sequential)" if s.get("sequential") else "")
        rows.append((
            s["name"], f"{s['margin']:g}", f"{s['lr']:g}", outcome, merges,
            f"{s['initial_diameter']:.3g} -> {s['final_diameter']:.3g}",
            f"{s['final_loss_mean']:.4g}",
            f"{_fmt(s['c_max'])} / {_fmt(s['c_final'])}",
            _fmt(s["ratio_fstar_max"]),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        lines.append("  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip())
    for s in result["scenarios"]:
        if s.get("merge_order"):
            lines.append(f"  {s['name']}: merge order (points 1-{len(s['labels'])}) "
                         + format_merge_order(s["merge_order"]))
    rs = result.get("random_summary") or {}
    a = rs.get("all")
    lines.append("")
    lines.append("empirical constant c = d_haus(f, F_TS) / d_iso(f, F_TS): floor 1/2, "
                 f"the paper reports {PAPER_C}")
    for s in result["scenarios"]:
        if s["c_max"] is not None:
            lines.append(f"  {s['name']:<9s} along the run: max {s['c_max']:.3f} (step "
                         f"{s['c_max_step']}), median {s['c_median']:.3f}, "
                         f"end {_fmt(s['c_final'], '.3f')}")
    if a and a["c"]["n"]:
        c = a["c"]
        margins = ", ".join(rs.get("by_margin", {}))
        lines.append(
            f"  random toys ({a['n']}: {len(rs.get('by_layout', {}))} label layouts, margins "
            f"{margins}; {a['n_separated']} already separated): min {c['min']:.3f}, median "
            f"{c['median']:.3f}, max {c['max']:.3f}; {100 * a['share_c_at_most_paper']:.0f}% "
            f"have c <= {PAPER_C}")
        rf = a["ratio_fstar"]
        lines.append(f"  d_haus(f, f*) / d_iso over the random toys: min {rf['min']:.3f}, median "
                     f"{rf['median']:.3f}, max {rf['max']:.3f}")
        if a["n_uncertified"]:
            lines.append(f"  ({a['n_uncertified']} of {a['n']} brackets not closed to the "
                         "tolerance; their c is reported with its bracket)")
    return "\n".join(lines)
