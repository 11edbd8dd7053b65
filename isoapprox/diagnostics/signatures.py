"""Collapse signatures: which known failure a set of collapse statistics shows.

:func:`detect_signatures` reads a :class:`~.statistics.CollapseStatistics`
and optionally a loss value reported by a training run; each threshold is a
module constant, overridable through :class:`SignatureThresholds`.

The six collapse signatures (:data:`COLLAPSE_SIGNATURES`, ranked for the
verdict) and the three consistency signatures (:data:`CONSISTENCY_SIGNATURES`:
does the file agree with what training reports?) and their thresholds are
tabulated in docs/diagnose.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from .._validation import check_nonnegative, check_positive
from ..exceptions import InvalidInputError
from .merging import MERGE_DIAMETER_RATIO, MERGE_MARGIN_RATIO
from .statistics import CollapseStatistics, QuickStatistics

__all__ = [
    "CLASS_COLLAPSE_RATIO",
    "COLLAPSE_SIGNATURES",
    "CONSISTENCY_SIGNATURES",
    "DIMENSIONAL_COLLAPSE_RATIO",
    "FULL_COLLAPSE_RATIO",
    "LARGE_MARGIN_RATIO",
    "LN2",
    "LOSS_MISMATCH_RTOL",
    "PARTIAL_COLLAPSE_SHARE",
    "SIGNATURE_NAMES",
    "SOFT_MARGIN_ATOL",
    "SOFT_MARGIN_DIAMETER",
    "STUCK_DIAMETER_RATIO",
    "STUCK_MARGIN_RTOL",
    "Signature",
    "SignatureThresholds",
    "detect_signatures",
]

#: ln 2 = softplus(0), the soft-margin batch-hard loss of a collapsed embedding
LN2 = math.log(2.0)

#: ``stuck_at_margin``: ``|loss - margin| <= STUCK_MARGIN_RTOL * margin`` ...
STUCK_MARGIN_RTOL = 0.02
#: ... and diameter <= STUCK_DIAMETER_RATIO * margin (then every anchor's term
#: lies within this fraction of the margin, so the loss is the margin)
STUCK_DIAMETER_RATIO = 0.1
#: ``stuck_at_ln2``: ``|soft-margin loss - ln 2| <= SOFT_MARGIN_ATOL`` ...
SOFT_MARGIN_ATOL = 0.005
#: ... and diameter <= SOFT_MARGIN_DIAMETER (absolute: softplus(x) moves from
#: ln 2 by at most ``|x| / 2``, and ``|hp - hn| <= diameter``)
SOFT_MARGIN_DIAMETER = 0.1
#: ``all_distances_small``: diameter <= FULL_COLLAPSE_RATIO * max(rms norm, margin)
FULL_COLLAPSE_RATIO = 1e-2
#: ``class_collapse``: largest class diameter <= CLASS_COLLAPSE_RATIO * least
#: distance between two classes
CLASS_COLLAPSE_RATIO = 0.05
#: ``dimensional_collapse``: effective rank < DIMENSIONAL_COLLAPSE_RATIO * min(n, N-1, P-1)
DIMENSIONAL_COLLAPSE_RATIO = 0.5
#: ``partial_collapse``: groups of two or more merged classes hold at least
#: this share of the points (the merge height: :mod:`.merging`)
PARTIAL_COLLAPSE_SHARE = 0.05
#: ``loss_mismatch``: the reported loss is off the file's batch-hard loss by
#: more than LOSS_MISMATCH_RTOL * max(reported, computed, margin), and off its
#: soft-margin loss by more than LOSS_MISMATCH_RTOL * max(reported, computed)
LOSS_MISMATCH_RTOL = 0.1
#: ``large_margin``: margin >= LARGE_MARGIN_RATIO * diameter
LARGE_MARGIN_RATIO = 0.5

#: collapse signatures, in the order the verdict ranks them
COLLAPSE_SIGNATURES = (
    "all_distances_small",
    "stuck_at_margin",
    "stuck_at_ln2",
    "partial_collapse",
    "class_collapse",
    "dimensional_collapse",
)
#: consistency signatures: the file against what training reports
CONSISTENCY_SIGNATURES = ("loss_mismatch", "missing_classes", "large_margin")
#: every signature name, in the order :func:`detect_signatures` returns them
SIGNATURE_NAMES = COLLAPSE_SIGNATURES + CONSISTENCY_SIGNATURES


@dataclass(frozen=True)
class SignatureThresholds:
    """Thresholds of :func:`detect_signatures`, all positive.

    Each attribute defaults to the module constant of its name in capitals
    (``stuck_margin_rtol`` to ``STUCK_MARGIN_RTOL`` and so on; the merge
    ratios to those of :mod:`.merging`).  The merge ratios set the height at
    which the statistics cluster the points, so they take effect where the
    statistics are computed (:func:`~.report.diagnose` passes them on).
    """

    stuck_margin_rtol: float = STUCK_MARGIN_RTOL
    stuck_diameter_ratio: float = STUCK_DIAMETER_RATIO
    soft_margin_atol: float = SOFT_MARGIN_ATOL
    soft_margin_diameter: float = SOFT_MARGIN_DIAMETER
    full_collapse_ratio: float = FULL_COLLAPSE_RATIO
    class_collapse_ratio: float = CLASS_COLLAPSE_RATIO
    dimensional_collapse_ratio: float = DIMENSIONAL_COLLAPSE_RATIO
    partial_collapse_share: float = PARTIAL_COLLAPSE_SHARE
    merge_margin_ratio: float = MERGE_MARGIN_RATIO
    merge_diameter_ratio: float = MERGE_DIAMETER_RATIO
    loss_mismatch_rtol: float = LOSS_MISMATCH_RTOL
    large_margin_ratio: float = LARGE_MARGIN_RATIO

    def __post_init__(self) -> None:
        for f in fields(self):
            check_positive(getattr(self, f.name), f.name)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The threshold names."""
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class Signature:
    """One collapse signature: whether it ``holds``, in words and in numbers.

    ``name`` is one of :data:`SIGNATURE_NAMES`, ``summary`` one or two
    sentences with the numbers, ``evidence`` the numbers and thresholds.
    """

    name: str
    holds: bool
    summary: str
    evidence: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        return asdict(self)


def detect_signatures(
    stats: CollapseStatistics | QuickStatistics,
    *,
    loss: float | None = None,
    thresholds: SignatureThresholds | None = None,
    other_losses: Mapping[str, float | None] | None = None,
) -> tuple[Signature, ...]:
    """Recognise the known collapse signatures in the statistics.

    Parameters
    ----------
    stats : CollapseStatistics or QuickStatistics
        From :func:`collapse_statistics` or :func:`quick_statistics` (the
        signatures read only what both hold, so both give the same answers).
    loss : float, optional
        A loss value reported by the training run (batch-hard with a margin,
        or soft-margin).  Without it, the losses computed from ``stats`` are
        used: the batch-hard loss for ``stuck_at_margin`` and the soft-margin
        loss for ``stuck_at_ln2``.
    thresholds : SignatureThresholds, optional
        Overrides of the module's threshold constants.  Its merge ratios
        must be those the statistics were computed with.
    other_losses : mapping of str to float, optional
        Further losses of the same embedding under other definitions (the
        report passes the triplet loss over all and over the active
        triplets): ``loss_mismatch`` says when the reported loss equals one.

    Returns
    -------
    tuple of Signature
        One per name in :data:`SIGNATURE_NAMES`, in that order.

    Raises
    ------
    InvalidInputError
        If the thresholds' merge ratios differ from those of ``stats``.
    """
    if not isinstance(stats, (CollapseStatistics, QuickStatistics)):
        raise TypeError(
            f"`stats` must be a CollapseStatistics or QuickStatistics (from "
            f"collapse_statistics or quick_statistics); got {type(stats).__name__}"
        )
    th = thresholds if thresholds is not None else SignatureThresholds()
    if not isinstance(th, SignatureThresholds):
        raise TypeError(f"`thresholds` must be a SignatureThresholds; got {type(th).__name__}")
    if loss is not None:
        loss = check_nonnegative(loss, "loss")
    mg = stats.merging
    for name in ("margin_ratio", "diameter_ratio"):
        want, got = getattr(th, f"merge_{name}"), getattr(mg, name)
        if not math.isnan(got) and want != got:
            raise InvalidInputError(
                f"`thresholds.merge_{name}` must be the one the statistics were computed "
                f"with ({got:g}); got {want:g} (pass merge_{name}={want:g} to "
                "collapse_statistics)"
            )
    alpha = stats.margin
    diam = stats.diameter
    # the file's own batch-hard losses against a reported value
    bh, sm = stats.batch_hard_mean, stats.soft_margin_mean
    bh_matches = sm_matches = True
    if loss is not None:
        bh_matches = abs(loss - bh) <= th.loss_mismatch_rtol * max(loss, bh, alpha)
        sm_matches = abs(loss - sm) <= th.loss_mismatch_rtol * max(loss, sm)
    own = (
        f"this file's own batch-hard loss is {bh:.4g} (soft-margin {sm:.4g}): the reported "
        "value does not describe these embeddings (see loss_mismatch)"
    )

    # full collapse -----------------------------------------------------------
    if alpha > stats.rms_norm:
        scale, scale_name = alpha, "the margin"
    else:
        scale, scale_name = stats.rms_norm, "the rms norm of the embeddings"
    full = diam <= th.full_collapse_ratio * scale
    rel = diam / scale if scale > 0 else (0.0 if diam == 0 else math.inf)
    if full:
        text = (
            f"All {stats.n_pairs} pairwise distances are at most {diam:.3g}, "
            f"{rel:.2g} x {scale_name} ({scale:.3g}): the embedding has collapsed to "
            "(nearly) a single point."
        )
    else:
        text = (
            f"The diameter {diam:.3g} is {rel:.2g} x {scale_name} ({scale:.3g}), above the "
            f"collapse threshold {th.full_collapse_ratio:g}: the points are spread out."
        )
    sig_full = Signature(
        "all_distances_small",
        bool(full),
        text,
        {
            "diameter": diam,
            "reference_scale": scale,
            "reference": scale_name,
            "ratio": rel,
            "threshold": th.full_collapse_ratio,
        },
    )

    # stuck at the margin -----------------------------------------------------
    L = loss if loss is not None else stats.batch_hard_mean
    src = "reported" if loss is not None else "computed"
    who = "The reported loss" if loss is not None else "The batch-hard loss (mean)"
    if alpha > 0.0:
        loss_rel = abs(L - alpha) / alpha
        diam_rel = diam / alpha
        at_margin = loss_rel <= th.stuck_margin_rtol
        small = diam_rel <= th.stuck_diameter_ratio
        holds = bool(at_margin and small)
        if holds:
            text = (
                f"{who} {L:.4g} equals the margin {alpha:g} and the diameter "
                f"{diam:.3g} is only {diam_rel:.2g} x the margin: every anchor's hardest "
                "positive and hardest negative are both at distance ~0, so each anchor "
                f"contributes [0 - 0 + {alpha:g}]_+ = {alpha:g}. The loss is stuck at the "
                "margin because the embedding has collapsed."
            )
        elif at_margin and not bh_matches:
            text = (
                f"{who} {L:.4g} equals the margin {alpha:g}, but the diameter "
                f"{diam:.3g} is {diam_rel:.2g} x the margin, and {own}."
            )
        elif at_margin:
            text = (
                f"{who} {L:.4g} equals the margin {alpha:g}, but the diameter "
                f"{diam:.3g} is {diam_rel:.2g} x the margin: not a collapse; the hardest "
                "positive of each anchor is about as far as its hardest negative."
            )
        else:
            text = f"{who} {L:.4g} is not the margin {alpha:g} (off by {loss_rel:.1%})."
        ev = {
            "loss": L,
            "loss_source": src,
            "loss_matches": bool(at_margin),
            "file_loss_matches": bool(bh_matches),
            "margin": alpha,
            "loss_rel_error": loss_rel,
            "diameter": diam,
            "diameter_over_margin": diam_rel,
            "rtol": th.stuck_margin_rtol,
            "diameter_ratio": th.stuck_diameter_ratio,
        }
    else:
        holds = False
        text = "Not applicable: the margin is 0 (pass the training margin to check it)."
        ev = {"loss": L, "loss_source": src, "loss_matches": False, "margin": alpha}
    sig_margin = Signature("stuck_at_margin", holds, text, ev)

    # stuck at ln 2 -----------------------------------------------------------
    Ls = loss if loss is not None else stats.soft_margin_mean
    src = "reported" if loss is not None else "computed"
    who = "The reported loss" if loss is not None else "The soft-margin batch-hard loss (mean)"
    off = abs(Ls - LN2)
    at_ln2 = off <= th.soft_margin_atol
    small = diam <= th.soft_margin_diameter
    holds = bool(at_ln2 and small)
    if holds:
        text = (
            f"{who} {Ls:.4g} equals ln 2 = {LN2:.4f} = softplus(0) and the "
            f"diameter is {diam:.3g}: hardest positive and hardest negative coincide for "
            "every anchor, the soft-margin signature of a collapse."
        )
    elif at_ln2 and not sm_matches:
        text = (
            f"{who} {Ls:.4g} equals ln 2, but the diameter {diam:.3g} exceeds "
            f"{th.soft_margin_diameter:g}, and {own}."
        )
    elif at_ln2:
        text = (
            f"{who} {Ls:.4g} equals ln 2, but the diameter {diam:.3g} exceeds "
            f"{th.soft_margin_diameter:g}: each anchor's hardest positive is about as far as "
            "its hardest negative, without a collapse."
        )
    else:
        text = f"{who} {Ls:.4g} is not ln 2 = {LN2:.4f} (off by {off:.3g})."
    sig_ln2 = Signature(
        "stuck_at_ln2",
        holds,
        text,
        {
            "loss": Ls,
            "loss_source": src,
            "loss_matches": bool(at_ln2),
            "file_loss_matches": bool(sm_matches),
            "ln2": LN2,
            "abs_error": off,
            "diameter": diam,
            "atol": th.soft_margin_atol,
            "max_diameter": th.soft_margin_diameter,
        },
    )

    sig_partial = _partial_collapse(stats, th, full)

    # class collapse ----------------------------------------------------------
    d_in = stats.max_class_diameter
    gap = stats.min_class_gap
    ratio = d_in / gap if gap > 0 else math.inf
    holds = bool((not full) and gap > 0 and ratio <= th.class_collapse_ratio)
    if holds:
        text = (
            f"Every class has shrunk to (nearly) a point while the classes stay apart: the "
            f"largest class diameter {d_in:.3g} is {ratio:.2g} x the smallest distance "
            f"between two classes ({gap:.3g})."
        )
    elif full:
        text = "Not class collapse: the whole embedding has collapsed, classes included."
    else:
        text = (
            f"Classes are not points: the largest class diameter {d_in:.3g} is "
            f"{ratio:.2g} x the smallest distance between two classes ({gap:.3g})."
        )
    sig_class = Signature(
        "class_collapse",
        holds,
        text,
        {
            "max_class_diameter": d_in,
            "min_class_gap": gap,
            "ratio": ratio,
            "threshold": th.class_collapse_ratio,
        },
    )

    # dimensional collapse ----------------------------------------------------
    r_ref = max(1, min(stats.dim, stats.n_points - 1, stats.n_classes - 1))
    er = stats.effective_rank
    holds = bool((not full) and er < th.dimensional_collapse_ratio * r_ref)
    if full:
        text = (
            "Not evaluated: the embedding has collapsed to a point, so its spread has no "
            "meaningful directions."
        )
    elif holds:
        text = (
            f"The centred embeddings have effective rank {er:.3g}: they spread over about "
            f"{er:.1f} of {stats.dim} dimensions, fewer than {th.dimensional_collapse_ratio:g}"
            f" x {r_ref} (min(n, N-1, P-1)) that {stats.n_classes} classes need."
        )
    else:
        text = (
            f"Effective rank {er:.3g} of {stats.dim} dimensions (reference "
            f"min(n, N-1, P-1) = {r_ref}): no dimensional collapse."
        )
    sig_dim = Signature(
        "dimensional_collapse",
        holds,
        text,
        {
            "effective_rank": er,
            "reference_rank": r_ref,
            "dim": stats.dim,
            "threshold": th.dimensional_collapse_ratio,
        },
    )
    return (
        sig_full,
        sig_margin,
        sig_ln2,
        sig_partial,
        sig_class,
        sig_dim,
        _loss_mismatch(stats, th, loss, bh_matches, sm_matches, other_losses),
        _missing_classes(stats),
        _large_margin(stats, th, full),
    )


def _classes_text(labels: tuple[Any, ...], most: int = 8) -> str:
    shown = ", ".join(str(c) for c in labels[:most])
    return shown + (f", ... ({len(labels)} classes)" if len(labels) > most else "")


def _partial_collapse(stats: CollapseStatistics, th: SignatureThresholds, full: bool) -> Signature:
    mg = stats.merging
    P, N = stats.n_classes, stats.n_points
    groups = mg.groups
    k, share = mg.n_merged_classes, mg.merged_share
    scale = (
        f"single linkage at height h = {mg.height:.3g}"
        + (
            f" = max({mg.margin_ratio:g} x margin, {mg.diameter_ratio:g} x diameter)"
            if not math.isnan(mg.margin_ratio)
            else ""
        )
    )
    into = "one cluster" if len(groups) == 1 else f"{len(groups)} clusters"
    holds = bool((not full) and groups and share >= th.partial_collapse_share)
    headline = ""
    if full:
        text = "Not partial: the whole embedding has collapsed, every class included."
    elif groups:
        big = groups[0]
        text = (
            f"{k} of {P} classes, {share:.1%} of the points ({mg.merged_points} of {N}), "
            f"have merged into {into} ({scale}); the largest holds classes "
            f"{_classes_text(big.classes)}: {big.n_points} points ({big.share:.1%}), diameter "
            f"{big.diameter:.3g} against {_typical(stats)}."
        )
        if not holds:
            text += f" Below the share threshold {th.partial_collapse_share:g}."
        else:
            headline = (
                f"PARTIAL COLLAPSE: {k} of {P} classes, {share:.1%} of the points, merged "
                f"into {into} (diameter {big.diameter:.3g}"
                + (", the largest" if len(groups) > 1 else "")
                + "), while the other classes stay apart."
            )
    else:
        text = f"No two classes share a cluster ({scale})."
    if mg.n_overlapping_pairs and not full:
        text += (
            f" {mg.n_overlapping_pairs} class pair(s) overlap: an anchor's hardest negative, "
            "of the other class, lies inside its hardest-positive distance."
        )
    return Signature(
        "partial_collapse",
        holds,
        text,
        {
            "height": mg.height,
            "n_groups": len(groups),
            "merged_classes": k,
            "merged_points": mg.merged_points,
            "merged_share": share,
            "largest_group": groups[0].to_dict() if groups else None,
            "n_overlapping_pairs": mg.n_overlapping_pairs,
            "threshold": th.partial_collapse_share,
            "headline": headline,
        },
    )


def _typical(stats: CollapseStatistics | QuickStatistics) -> str:
    """The scale a merged group is compared with: the embedding's diameter,
    which both kinds of statistics hold (so they give the same text)."""
    return f"an embedding diameter of {stats.diameter:.3g}"


def _class_sizes(stats: CollapseStatistics | QuickStatistics) -> tuple[np.ndarray, np.ndarray]:
    """(labels, sizes) of the classes, from either kind of statistics."""
    if isinstance(stats, QuickStatistics):
        return stats.classes, stats.class_sizes
    return stats.classes.classes, stats.classes.sizes


def _loss_mismatch(
    stats: CollapseStatistics,
    th: SignatureThresholds,
    loss: float | None,
    bh_matches: bool,
    sm_matches: bool,
    other_losses: Mapping[str, float | None] | None,
) -> Signature:
    bh, sm = stats.batch_hard_mean, stats.soft_margin_mean
    ev: dict[str, Any] = {
        "loss": loss,
        "batch_hard_mean": bh,
        "soft_margin_mean": sm,
        "rtol": th.loss_mismatch_rtol,
    }
    if loss is None:
        return Signature(
            "loss_mismatch", False, "Not applicable: no reported loss (pass --loss).", ev
        )
    holds = not (bh_matches or sm_matches)
    others = {k: float(v) for k, v in (other_losses or {}).items() if v is not None}
    same = [
        k for k, v in others.items() if abs(loss - v) <= th.loss_mismatch_rtol * max(loss, v)
    ]
    ev.update(matches_batch_hard=bool(bh_matches), matches_soft_margin=bool(sm_matches),
              other_losses=others, matches_other=same)
    if holds:
        text = (
            f"The reported loss {loss:.4g} does not match this file: its batch-hard loss "
            f"(mean over {stats.n_anchors} anchors, margin {stats.margin:g}) is {bh:.4g} and "
            f"its soft-margin batch-hard loss {sm:.4g}, both off by more than "
            f"{th.loss_mismatch_rtol:.0%}. The reported value was computed on other "
            "embeddings (other batches, another training step, layers in training mode) "
            "or by another definition; the checks against the margin and ln 2 read it, "
            "not this file."
        )
        if same:
            text += (
                f" It does equal this file's {same[0]} ({others[same[0]]:.4g}): if training "
                "reports that, the numbers agree."
            )
    else:
        which = "batch-hard loss" if bh_matches else "soft-margin batch-hard loss"
        value = bh if bh_matches else sm
        text = f"The reported loss {loss:.4g} matches this file's {which} {value:.4g}."
    return Signature("loss_mismatch", bool(holds), text, ev)


def _missing_classes(stats: CollapseStatistics) -> Signature:
    labels, sizes = _class_sizes(stats)
    single = [c.item() for c, k in zip(labels, sizes, strict=True) if k == 1]
    holds = bool(single)
    if holds:
        text = (
            f"{len(single)} of {stats.n_classes} classes have a single point (classes "
            f"{_classes_text(tuple(single))}): with no positive they are never anchors, so "
            f"the batch-hard loss averages over {stats.n_anchors} anchors, not "
            f"{stats.n_points}, and these classes appear only as negatives."
        )
    else:
        text = (
            f"Every class has at least two points (sizes {int(sizes.min())}.."
            f"{int(sizes.max())}): each takes part as anchor, positive and negative."
        )
    return Signature(
        "missing_classes",
        holds,
        text,
        {"singleton_classes": single, "n_anchors": stats.n_anchors,
         "n_points": stats.n_points},
    )


def _large_margin(stats: CollapseStatistics, th: SignatureThresholds, full: bool) -> Signature:
    alpha, diam = stats.margin, stats.diameter
    rel = alpha / diam if diam > 0 else (0.0 if alpha == 0 else math.inf)
    holds = bool((not full) and alpha > 0 and rel >= th.large_margin_ratio)
    if full:
        text = "Not evaluated: the embedding has collapsed (see all_distances_small)."
    elif alpha == 0:
        text = "Not applicable: the margin is 0."
    elif holds:
        text = (
            f"The margin {alpha:g} is {rel:.2g} x the diameter {diam:.3g}: no negative is "
            "farther than the diameter, so an anchor meets d(a,p) + margin <= d(a,m) only "
            f"with all its positives within {max(diam - alpha, 0.0):.3g}; the loss can "
            "only be met by growing the embedding (impossible for L2-normalised "
            "embeddings, whose diameter is at most 2, once the margin nears 2)."
        )
    else:
        text = f"The margin {alpha:g} is {rel:.2g} x the diameter {diam:.3g}."
    return Signature(
        "large_margin",
        holds,
        text,
        {"margin": alpha, "diameter": diam, "ratio": rel, "threshold": th.large_margin_ratio},
    )
