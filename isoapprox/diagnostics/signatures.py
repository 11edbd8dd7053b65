"""Collapse signatures: which known failure a set of collapse statistics shows.

:func:`detect_signatures` reads a :class:`~.statistics.CollapseStatistics`
and optionally a loss value reported by a training run; each threshold is a
module constant, overridable through :class:`SignatureThresholds`.

The five signatures and their thresholds are tabulated in docs/diagnose.md;
:data:`SIGNATURE_NAMES` ranks them for the verdict.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from .._validation import check_nonnegative, check_positive
from .statistics import CollapseStatistics, QuickStatistics

__all__ = [
    "CLASS_COLLAPSE_RATIO",
    "DIMENSIONAL_COLLAPSE_RATIO",
    "FULL_COLLAPSE_RATIO",
    "LN2",
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

#: ``stuck_at_margin``: |loss - margin| <= STUCK_MARGIN_RTOL * margin ...
STUCK_MARGIN_RTOL = 0.02
#: ... and diameter <= STUCK_DIAMETER_RATIO * margin (then every anchor's term
#: lies within this fraction of the margin, so the loss is the margin)
STUCK_DIAMETER_RATIO = 0.1
#: ``stuck_at_ln2``: |soft-margin loss - ln 2| <= SOFT_MARGIN_ATOL ...
SOFT_MARGIN_ATOL = 0.005
#: ... and diameter <= SOFT_MARGIN_DIAMETER (absolute: softplus(x) moves from
#: ln 2 by at most |x| / 2, and |hp - hn| <= diameter)
SOFT_MARGIN_DIAMETER = 0.1
#: ``all_distances_small``: diameter <= FULL_COLLAPSE_RATIO * max(rms norm, margin)
FULL_COLLAPSE_RATIO = 1e-2
#: ``class_collapse``: largest class diameter <= CLASS_COLLAPSE_RATIO * least
#: distance between two classes
CLASS_COLLAPSE_RATIO = 0.05
#: ``dimensional_collapse``: effective rank < DIMENSIONAL_COLLAPSE_RATIO * min(n, N-1, P-1)
DIMENSIONAL_COLLAPSE_RATIO = 0.5

#: signature names, in the order the verdict ranks them
SIGNATURE_NAMES = (
    "all_distances_small",
    "stuck_at_margin",
    "stuck_at_ln2",
    "class_collapse",
    "dimensional_collapse",
)


@dataclass(frozen=True)
class SignatureThresholds:
    """Thresholds of :func:`detect_signatures`, all positive.

    Each attribute defaults to the module constant of its name in capitals
    (``stuck_margin_rtol`` to ``STUCK_MARGIN_RTOL`` and so on).
    """

    stuck_margin_rtol: float = STUCK_MARGIN_RTOL
    stuck_diameter_ratio: float = STUCK_DIAMETER_RATIO
    soft_margin_atol: float = SOFT_MARGIN_ATOL
    soft_margin_diameter: float = SOFT_MARGIN_DIAMETER
    full_collapse_ratio: float = FULL_COLLAPSE_RATIO
    class_collapse_ratio: float = CLASS_COLLAPSE_RATIO
    dimensional_collapse_ratio: float = DIMENSIONAL_COLLAPSE_RATIO

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
        Overrides of the module's threshold constants.

    Returns
    -------
    tuple of Signature
        One per name in :data:`SIGNATURE_NAMES`, in that order.
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
    alpha = stats.margin
    diam = stats.diameter

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
            "ln2": LN2,
            "abs_error": off,
            "diameter": diam,
            "atol": th.soft_margin_atol,
            "max_diameter": th.soft_margin_diameter,
        },
    )

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
    return (sig_full, sig_margin, sig_ln2, sig_class, sig_dim)
