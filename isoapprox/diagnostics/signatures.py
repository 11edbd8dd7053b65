"""Collapse signatures: which known failure a set of collapse statistics shows.

:func:`detect_signatures` reads a :class:`~.statistics.CollapseStatistics`
and optionally a loss value reported by a training run; each threshold is a
module constant, overridable through :class:`SignatureThresholds`.

The six collapse signatures (:data:`COLLAPSE_SIGNATURES`), the three
consistency signatures (:data:`CONSISTENCY_SIGNATURES`: does the file agree
with what training reports?) and the two class-structure signatures
(:data:`STRUCTURE_SIGNATURES`) have one entry each in the registry
:data:`SIGNATURES` (:class:`SignatureSpec`): their order, their place in the
verdict (:data:`VERDICT_ORDER`), their rule in ``isoapprox diagnose --help``
(:func:`signatures_help`) and their row in the tables of docs/diagnose.md
(:func:`signature_table`; a test checks the page) all come from it.

Collapse is told apart from compression by the leave-one-out retrieval
(:attr:`~.statistics.CollapseStatistics.retrieval`): its *structure score*
``(R-Precision - chance) / (1 - chance)``
(:meth:`~isoapprox.metrics.RetrievalMetrics.structure_score`) is 1 for
perfectly ranked classes and about 0 for mixed ones.  A group of points has
*lost its class structure* when the score of its classes is at most
``lost_structure_score`` (0.25), or cannot be computed (no class with two
points); classes are *clearly ranked* when it is at least
``ranked_structure_score`` (0.5).  The two thresholds leave a band between
them so that a verdict does not flip on sampling noise (the score of a mixed
batch of 4 classes x 4 points has a spread of about 0.08).  ``all_distances_small``,
``stuck_at_margin`` and ``stuck_at_ln2`` hold unless the whole file is
clearly ranked; ``partial_collapse`` counts the merged groups that lost it
(while the classes outside them keep it: score above 0.25); clearly ranked
but small embeddings are ``compressed``, and a file whose classes lost it
without a collapse is ``no_class_structure``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from .._validation import check_instance, check_nonnegative, check_option, check_positive
from ..exceptions import InvalidInputError
from ..metrics import RETRIEVAL_MAX_QUERIES
from .merging import MERGE_DIAMETER_RATIO, MERGE_MARGIN_RATIO
from .statistics import CollapseStatistics

__all__ = [
    "CLASS_COLLAPSE_RATIO",
    "COLLAPSE_SIGNATURES",
    "COMPRESSED_DIAMETER_RATIO",
    "CONSISTENCY_SIGNATURES",
    "DIMENSIONAL_COLLAPSE_RATIO",
    "FULL_COLLAPSE_RATIO",
    "LARGE_MARGIN_RATIO",
    "LN2",
    "LOSS_KINDS",
    "LOSS_MISMATCH_RTOL",
    "LOST_STRUCTURE_SCORE",
    "PARTIAL_COLLAPSE_SHARE",
    "RANKED_STRUCTURE_SCORE",
    "SIGNATURES",
    "SIGNATURE_GROUPS",
    "SIGNATURE_NAMES",
    "SIGNATURE_REGISTRY",
    "SOFT_MARGIN_ATOL",
    "SOFT_MARGIN_DIAMETER",
    "STUCK_DIAMETER_RATIO",
    "STRUCTURE_SIGNATURES",
    "STUCK_MARGIN_RTOL",
    "VERDICT_ORDER",
    "Signature",
    "SignatureSpec",
    "SignatureThresholds",
    "convention_loss",
    "detect_signatures",
    "signature_table",
    "signatures_help",
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
#: class structure is lost where the retrieval structure score
#: ``(R-Precision - chance) / (1 - chance)`` is at most this: mixed classes
#: score about 0 (8 classes x 4: spread 0.04, at most 0.19 in 4000 draws),
#: ranked ones near 1, and real test embeddings of hard data sets
#: (R-Precision ~0.35 over 100 classes) ~0.35
LOST_STRUCTURE_SCORE = 0.25
#: classes are clearly ranked where the structure score is at least this: a
#: collapsed geometry is then compressed, not collapsed (a mixed batch of 4
#: classes x 4 never reached it in 4000 draws; one of 2 classes x 4 in 0.4%)
RANKED_STRUCTURE_SCORE = 0.5
#: ``compressed``: diameter <= COMPRESSED_DIAMETER_RATIO * margin (every
#: negative within two margins of every anchor) while the classes stay ranked
COMPRESSED_DIAMETER_RATIO = 2.0

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
    lost_structure_score: float = LOST_STRUCTURE_SCORE
    ranked_structure_score: float = RANKED_STRUCTURE_SCORE
    compressed_diameter_ratio: float = COMPRESSED_DIAMETER_RATIO

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


@dataclass(frozen=True)
class SignatureSpec:
    """One entry of the signature registry (:data:`SIGNATURES`).

    ``name`` is the signature's name; ``group`` one of :data:`SIGNATURE_GROUPS`
    (``"collapse"``, ``"consistency"``, ``"structure"``); ``rule`` the rule
    as ``isoapprox diagnose --help`` lists it (its lines as printed);
    ``doc`` the "holds when" cell of its row in docs/diagnose.md;
    ``thresholds`` the :class:`SignatureThresholds` it reads (the row's
    defaults); ``verdict_rank`` its place in :data:`VERDICT_ORDER` (``None``:
    it never decides the verdict word) and, for those that do, ``status``,
    ``word`` and ``headline`` of the verdict it gives.
    """

    name: str
    group: str
    rule: str
    doc: str
    thresholds: tuple[str, ...] = ()
    verdict_rank: int | None = None
    status: str | None = None
    word: str | None = None
    headline: str | None = None

    def defaults(self) -> str:
        """The defaults of its thresholds, as the docs table lists them.

        Returns
        -------
        str
            The default of each of ``thresholds``, comma-separated (``-``: none).
        """
        th = SignatureThresholds()
        return ", ".join(f"{getattr(th, t):g}" for t in self.thresholds) or "-"

    def table_row(self) -> str:
        """Its row of the signature table in docs/diagnose.md.

        Returns
        -------
        str
            ``| `name` | doc | defaults |``.
        """
        return f"| `{self.name}` | {self.doc} | {self.defaults()} |"


#: the groups of signatures, in the order :func:`detect_signatures` returns them
SIGNATURE_GROUPS = ("collapse", "consistency", "structure")

_COLLAPSED = ("collapsed", "COLLAPSED")
_UNLESS_RANKED = "unless the classes are clearly ranked"

#: the signature registry: one entry per signature, in the order
#: :func:`detect_signatures` returns them (by group, :data:`SIGNATURE_GROUPS`); the
#: names, the verdict order, ``diagnose --help`` and the tables of
#: docs/diagnose.md (a test checks them) all come from it
SIGNATURES: tuple[SignatureSpec, ...] = (
    SignatureSpec(
        "all_distances_small", "collapse",
        "diameter <= full_collapse_ratio x max(rms norm, margin)",
        "diameter <= `FULL_COLLAPSE_RATIO` x max(rms norm, margin), "
        f"{_UNLESS_RANKED} (structure score >= `RANKED_STRUCTURE_SCORE`)",
        ("full_collapse_ratio", "ranked_structure_score"), 0, *_COLLAPSED,
        "COLLAPSED: the embedding has collapsed to (nearly) a single point, classes mixed.",
    ),
    SignatureSpec(
        "stuck_at_margin", "collapse",
        "|loss - margin| <= stuck_margin_rtol x margin and\n"
        "diameter <= stuck_diameter_ratio x margin",
        r"\|batch-hard loss - margin\| <= `STUCK_MARGIN_RTOL` x margin and diameter <= "
        f"`STUCK_DIAMETER_RATIO` x margin, {_UNLESS_RANKED}",
        ("stuck_margin_rtol", "stuck_diameter_ratio"), 1, *_COLLAPSED,
        "COLLAPSED: the loss is stuck at the margin because the embedding collapsed.",
    ),
    SignatureSpec(
        "stuck_at_ln2", "collapse",
        "|soft-margin loss - ln 2| <= soft_margin_atol and\ndiameter <= soft_margin_diameter",
        r"\|soft-margin loss - ln 2\| <= `SOFT_MARGIN_ATOL` and diameter <= "
        f"`SOFT_MARGIN_DIAMETER`, {_UNLESS_RANKED}",
        ("soft_margin_atol", "soft_margin_diameter"), 2, *_COLLAPSED,
        "COLLAPSED: the soft-margin loss is stuck at ln 2 = 0.693 because the embedding "
        "collapsed.",
    ),
    SignatureSpec(
        "partial_collapse", "collapse",
        "groups of >= 2 classes merged into one cluster (single linkage at\n"
        "h = max(merge_margin_ratio x margin, merge_diameter_ratio x\n"
        "diameter)) and mixed there (structure score <=\n"
        "lost_structure_score) hold >= partial_collapse_share of the\n"
        "points, while the other classes stay ranked",
        "not fully collapsed; the merged groups (two or more classes in one cluster at the "
        "merge height `h`) whose classes are mixed there (their structure score <= "
        "`LOST_STRUCTURE_SCORE`) hold >= `PARTIAL_COLLAPSE_SHARE` of the points, and the "
        "other classes stay ranked (their score > `LOST_STRUCTURE_SCORE`)",
        ("partial_collapse_share", "lost_structure_score"), 3,
        "partial-collapse", "PARTIAL COLLAPSE",
        "PARTIAL COLLAPSE: groups of classes have merged into clusters and mixed there, "
        "while the other classes stay ranked.",
    ),
    SignatureSpec(
        "class_collapse", "collapse",
        "largest class diameter <= class_collapse_ratio x smallest\n"
        "distance between two classes",
        "not fully collapsed; largest class diameter <= `CLASS_COLLAPSE_RATIO` x least "
        "distance between two classes",
        ("class_collapse_ratio",), 6, "class-collapsed", "CLASS-COLLAPSED",
        "CLASS-COLLAPSED: every class is (nearly) a single point, and the classes are apart.",
    ),
    SignatureSpec(
        "dimensional_collapse", "collapse",
        "effective rank < dimensional_collapse_ratio x min(n, N-1, P-1)",
        "not fully collapsed; effective rank < `DIMENSIONAL_COLLAPSE_RATIO` x "
        "min(n, N - 1, P - 1)",
        ("dimensional_collapse_ratio",), 7, "dimensional-collapse", "DIMENSIONAL COLLAPSE",
        "DIMENSIONAL COLLAPSE: the embedding uses only a few of its dimensions.",
    ),
    SignatureSpec(
        "loss_mismatch", "consistency",
        "--loss is off the file's loss of --loss-kind and --loss-reduction\n"
        "(default: batch-hard, mean) and its soft-margin loss by more\n"
        "than loss_mismatch_rtol (relative)",
        "`--loss` is given and is off the file's loss of `--loss-kind` and "
        "`--loss-reduction` (default: the batch-hard loss, mean over anchors; "
        "`mean_nonzero` is pytorch-metric-learning's default reducer) by more than "
        "`LOSS_MISMATCH_RTOL` x max(reported, computed, margin) and off its soft-margin "
        "loss by more than `LOSS_MISMATCH_RTOL` x max(reported, computed)",
        ("loss_mismatch_rtol",),
    ),
    SignatureSpec(
        "missing_classes", "consistency",
        "classes with a single point (never anchors)",
        "some classes have a single point: no positive, never an anchor, only negatives",
    ),
    SignatureSpec(
        "large_margin", "consistency",
        "margin >= large_margin_ratio x diameter",
        "not fully collapsed; margin >= `LARGE_MARGIN_RATIO` x diameter",
        ("large_margin_ratio",),
    ),
    SignatureSpec(
        "compressed", "structure",
        "classes ranked (score >= ranked_structure_score); the diameter\n"
        "is tiny (all_distances_small), or <= compressed_diameter_ratio x\n"
        "margin, or ranked classes chained closer than h (set by the\n"
        "margin) hold >= partial_collapse_share of the points",
        "no collapse signature; the classes are clearly ranked (structure score >= "
        "`RANKED_STRUCTURE_SCORE`) and the embedding is small: the diameter is tiny against "
        "the rms norm or the margin (the `all_distances_small` test), or <= "
        "`COMPRESSED_DIAMETER_RATIO` x margin, or clearly ranked classes chained closer than "
        "a margin-set `h` hold >= `PARTIAL_COLLAPSE_SHARE` of the points",
        ("ranked_structure_score", "compressed_diameter_ratio"), 5, "compressed", "COMPRESSED",
        "COMPRESSED: the embedding is small against the margin (or its norm), but its "
        "classes stay ranked: not a collapse.",
    ),
    SignatureSpec(
        "no_class_structure", "structure",
        "score <= lost_structure_score with no collapse: untrained-like",
        "no collapse signature, and the structure score of the whole file is <= "
        "`LOST_STRUCTURE_SCORE`",
        ("lost_structure_score",), 4, "no-class-structure", "NO CLASS STRUCTURE",
        "NO CLASS STRUCTURE: the classes are not ranked (leave-one-out retrieval at "
        "chance), but nothing has collapsed: untrained-like.",
    ),
)


def _registry(specs: tuple[SignatureSpec, ...]) -> dict[str, SignatureSpec]:
    """The registry by name, refusing a name or a verdict rank listed twice (so no list
    generated from it can hold a signature twice)."""
    by_name: dict[str, SignatureSpec] = {}
    for s in specs:
        if s.name in by_name:
            raise ValueError(f"signature {s.name!r} is registered twice")
        if s.group not in SIGNATURE_GROUPS:
            raise ValueError(f"signature {s.name!r}: unknown group {s.group!r}")
        by_name[s.name] = s
    if [s.group for s in specs] != sorted((s.group for s in specs), key=SIGNATURE_GROUPS.index):
        raise ValueError("the signature registry must list its entries by group")
    ranks = [s.verdict_rank for s in specs if s.verdict_rank is not None]
    if sorted(ranks) != list(range(len(ranks))):
        raise ValueError(f"the verdict ranks must be 0 .. {len(ranks) - 1}, each once; "
                         f"got {sorted(ranks)}")
    return by_name


#: the registry by name
SIGNATURE_REGISTRY = _registry(SIGNATURES)


def _names(group: str) -> tuple[str, ...]:
    return tuple(s.name for s in SIGNATURES if s.group == group)


#: collapse signatures
COLLAPSE_SIGNATURES = _names("collapse")
#: consistency signatures: the file against what training reports
CONSISTENCY_SIGNATURES = _names("consistency")
#: class-structure signatures: classes ranked but small, or nowhere ranked
STRUCTURE_SIGNATURES = _names("structure")
#: every signature name, in the order :func:`detect_signatures` returns them
SIGNATURE_NAMES = tuple(s.name for s in SIGNATURES)
#: the order in which the verdict ranks the signatures that describe the geometry
VERDICT_ORDER = tuple(s.name for s in sorted(
    (s for s in SIGNATURES if s.verdict_rank is not None), key=lambda s: s.verdict_rank))

#: the notes of ``diagnose --help`` before and after each group's rules, in the
#: order the help lists the groups
_HELP_GROUPS = (
    ("collapse", "", "The first three hold unless the classes are clearly ranked: structure "
                     "score >=\nranked_structure_score."),
    ("structure",
     "Class structure (leave-one-out retrieval: Recall@1, R-Precision, MAP@R; structure\n"
     "score = (R-Precision - chance) / (1 - chance), 1 ranked, ~0 mixed; over a seeded\n"
     f"sample of {RETRIEVAL_MAX_QUERIES} queries above that):",
     "The loss is the value given with --loss, else the one computed from the file.\n"
     "Without --margin, stuck_at_margin, large_margin and the margin tests are off."),
    ("consistency", "Consistency of the file with what training reports:", ""),
)


def signatures_help() -> str:
    """The signature section of ``isoapprox diagnose --help``, from the registry.

    Returns
    -------
    str
        Each signature's rule under its name, once, by group (collapse,
        structure, consistency) with the groups' notes.
    """
    lines = ["signatures (thresholds: --threshold NAME=VALUE, names below):"]
    for group, before, after in _HELP_GROUPS:
        lines += ["  " + ln for ln in before.splitlines()]
        for s in SIGNATURES:
            if s.group == group:
                first, *rest = s.rule.splitlines()
                lines.append(f"  {s.name:<22}{first}")
                lines += [" " * 24 + ln for ln in rest]
        lines += ["  " + ln for ln in after.splitlines()]
    return "\n".join(lines) + "\n"


def signature_table(group: str) -> str:
    """The Markdown table of one group of signatures in docs/diagnose.md.

    Parameters
    ----------
    group : {"collapse", "consistency", "structure"}
        The group (:data:`SIGNATURE_GROUPS`).

    Returns
    -------
    str
        The header and one row per signature of the group, in the registry's order.

    Raises
    ------
    InvalidInputError
        For an unknown group.
    """
    group = check_option(group, "group", SIGNATURE_GROUPS)
    rows = [s.table_row() for s in SIGNATURES if s.group == group]
    return "\n".join(["| signature | holds when | default |", "|---|---|---|", *rows]) + "\n"


def detect_signatures(
    stats: CollapseStatistics,
    *,
    loss: float | None = None,
    thresholds: SignatureThresholds | None = None,
    other_losses: Mapping[str, float | None] | None = None,
    loss_kind: str = "batch_hard",
    loss_reduction: str = "mean",
) -> tuple[Signature, ...]:
    """Recognise the known collapse signatures in the statistics.

    Parameters
    ----------
    stats : CollapseStatistics
        From :func:`collapse_statistics`, full or quick (the signatures read
        only what both levels hold, so both give the same answers).
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
    loss_kind : {"batch_hard", "all"}, default "batch_hard"
    loss_reduction : {"sum", "mean", "max", "mean_nonzero"}, default "mean"
        How training computes the reported ``loss`` (:func:`convention_loss`):
        ``loss_mismatch`` compares it with this file's loss of that kind and
        reduction (and with the soft-margin loss).

    Returns
    -------
    tuple of Signature
        One per name in :data:`SIGNATURE_NAMES`, in that order.

    Raises
    ------
    InvalidInputError
        If the thresholds' merge ratios differ from those of ``stats``.
    """
    if not isinstance(stats, CollapseStatistics):
        raise TypeError(
            f"`stats` must be a CollapseStatistics (from collapse_statistics); got "
            f"{type(stats).__name__}"
        )
    th = check_instance(SignatureThresholds() if thresholds is None else thresholds,
                        SignatureThresholds, "thresholds")
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
    # class structure: the leave-one-out retrieval of the whole file
    score_all = stats.retrieval.structure_score()
    ranked_all = _ranked(score_all, th)
    ranked = _ranked_text(stats, score_all)
    # the file's own batch-hard losses against a reported value
    bh, sm = stats.batch_hard_mean, stats.soft_margin_mean
    bh_matches = sm_matches = True
    conv = convention_loss(stats, loss_kind, loss_reduction)
    if loss is not None:
        bh_matches = abs(loss - conv) <= th.loss_mismatch_rtol * max(loss, conv, alpha)
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
    full_geom = diam <= th.full_collapse_ratio * scale
    full = bool(full_geom and not ranked_all)
    rel = diam / scale if scale > 0 else (0.0 if diam == 0 else math.inf)
    if full_geom and not full:
        text = (
            f"All {stats.n_pairs} pairwise distances are at most {diam:.3g}, "
            f"{rel:.2g} x {scale_name} ({scale:.3g}), but {ranked}: the embedding is "
            "compressed, not collapsed (see compressed)."
        )
    elif full:
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
            "structure_score": score_all,
            "structure_ranked": bool(ranked_all),
        },
    )

    # stuck at the margin -----------------------------------------------------
    L, src, who = _which_loss(loss, stats.batch_hard_mean, "The batch-hard loss (mean)")
    if alpha > 0.0:
        loss_rel = abs(L - alpha) / alpha
        diam_rel = diam / alpha
        at_margin = loss_rel <= th.stuck_margin_rtol
        case = _stuck_case(at_margin, diam_rel <= th.stuck_diameter_ratio, ranked_all,
                           bh_matches)
        holds = case == "holds"
        text = {
            "compressed": (
                f"{who} {L:.4g} equals the margin {alpha:g} and the diameter {diam:.3g} is "
                f"only {diam_rel:.2g} x the margin, but {ranked}: the embedding is "
                "compressed below the margin, not collapsed (see compressed)."
            ),
            "holds": (
                f"{who} {L:.4g} equals the margin {alpha:g} and the diameter "
                f"{diam:.3g} is only {diam_rel:.2g} x the margin: every anchor's hardest "
                "positive and hardest negative are both at distance ~0, so each anchor "
                f"contributes [0 - 0 + {alpha:g}]_+ = {alpha:g}. The loss is stuck at the "
                "margin because the embedding has collapsed."
            ),
            "other_file": (
                f"{who} {L:.4g} equals the margin {alpha:g}, but the diameter "
                f"{diam:.3g} is {diam_rel:.2g} x the margin, and {own}."
            ),
            "not_collapse": (
                f"{who} {L:.4g} equals the margin {alpha:g}, but the diameter "
                f"{diam:.3g} is {diam_rel:.2g} x the margin: not a collapse; the hardest "
                "positive of each anchor is about as far as its hardest negative."
            ),
            "off": f"{who} {L:.4g} is not the margin {alpha:g} (off by {loss_rel:.1%}).",
        }[case]
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
    Ls, src, who = _which_loss(loss, stats.soft_margin_mean,
                               "The soft-margin batch-hard loss (mean)")
    off = abs(Ls - LN2)
    at_ln2 = off <= th.soft_margin_atol
    case = _stuck_case(at_ln2, diam <= th.soft_margin_diameter, ranked_all, sm_matches)
    text = {
        "compressed": (
            f"{who} {Ls:.4g} equals ln 2 = {LN2:.4f} and the diameter is {diam:.3g}, but "
            f"{ranked}: the embedding is compressed, not collapsed (see compressed)."
        ),
        "holds": (
            f"{who} {Ls:.4g} equals ln 2 = {LN2:.4f} = softplus(0) and the "
            f"diameter is {diam:.3g}: hardest positive and hardest negative coincide for "
            "every anchor, the soft-margin signature of a collapse."
        ),
        "other_file": (
            f"{who} {Ls:.4g} equals ln 2, but the diameter {diam:.3g} exceeds "
            f"{th.soft_margin_diameter:g}, and {own}."
        ),
        "not_collapse": (
            f"{who} {Ls:.4g} equals ln 2, but the diameter {diam:.3g} exceeds "
            f"{th.soft_margin_diameter:g}: each anchor's hardest positive is about as far as "
            "its hardest negative, without a collapse."
        ),
        "off": f"{who} {Ls:.4g} is not ln 2 = {LN2:.4f} (off by {off:.3g}).",
    }[case]
    sig_ln2 = Signature(
        "stuck_at_ln2",
        case == "holds",
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
    collapsed = bool(full or sig_margin.holds or sig_ln2.holds or sig_partial.holds)
    structure = _structure_signatures(
        stats, th, collapsed=collapsed, full_geom=bool(full_geom),
        stuck_geom=bool(sig_margin.evidence.get("loss_matches") and alpha > 0
                        and diam <= th.stuck_diameter_ratio * alpha),
        score_all=score_all, ranked_all=ranked_all, ranked=ranked,
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
    found = {s.name: s for s in (
        sig_full, sig_margin, sig_ln2, sig_partial, sig_class, sig_dim,
        _loss_mismatch(stats, th, loss, bh_matches, sm_matches, other_losses,
                       (loss_kind, loss_reduction, conv)),
        _missing_classes(stats), _large_margin(stats, th, full), *structure,
    )}
    return tuple(found[name] for name in SIGNATURE_NAMES)  # the registry's order


def _classes_text(labels: tuple[Any, ...], most: int = 8) -> str:
    shown = ", ".join(str(c) for c in labels[:most])
    return shown + (f", ... ({len(labels)} classes)" if len(labels) > most else "")


def _lost(score: float, th: SignatureThresholds) -> bool:
    """Whether a structure score says the class structure is lost (or cannot be told)."""
    return bool(math.isnan(score) or score <= th.lost_structure_score)


def _ranked(score: float, th: SignatureThresholds) -> bool:
    """Whether a structure score says the classes are clearly ranked."""
    return bool(not math.isnan(score) and score >= th.ranked_structure_score)


def _ranked_text(stats: CollapseStatistics, score: float) -> str:
    r = stats.retrieval
    return (
        f"the classes are still ranked (leave-one-out Recall@1 {r.recall_at_1:.2f}, "
        f"R-Precision {r.r_precision:.2f}, structure score {score:.2f})"
    )


def _which_loss(loss: float | None, computed: float, name: str) -> tuple[float, str, str]:
    """The loss a stuck-at-a-value signature reads: (value, source, how the text names it)."""
    if loss is not None:
        return loss, "reported", "The reported loss"
    return computed, "computed", name


def _stuck_case(at_value: bool, small: bool, ranked_all: bool, file_matches: bool) -> str:
    """The case of a stuck-at-a-value signature (the loss at the margin, or at ln 2):
    ``"holds"`` (at the value, small, classes not ranked), ``"compressed"`` (ranked),
    ``"other_file"`` (at the value, not small, and the file's own loss is not the
    reported one), ``"not_collapse"`` (at the value, not small) or ``"off"``."""
    if at_value and small:
        return "compressed" if ranked_all else "holds"
    if at_value:
        return "not_collapse" if file_matches else "other_file"
    return "off"


def _group_scores(stats: CollapseStatistics) -> list[float]:
    """The structure score of each merged group's classes."""
    mg = stats.merging
    return [
        stats.retrieval.structure_score(np.flatnonzero(mg.class_group == k))
        for k in range(len(mg.groups))
    ]


def _partial_collapse(stats: CollapseStatistics, th: SignatureThresholds, full: bool) -> Signature:
    mg = stats.merging
    P, N = stats.n_classes, stats.n_points
    groups = mg.groups
    scores = _group_scores(stats)
    lost_idx = [k for k, sc in enumerate(scores) if _lost(sc, th)]
    lost = [groups[k] for k in lost_idx]
    k = sum(len(g.classes) for g in lost)
    points = sum(g.n_points for g in lost)
    share = points / N
    lost_codes = np.flatnonzero(np.isin(mg.class_group, lost_idx))
    rest = np.setdiff1d(np.arange(P), lost_codes)
    score_rest = stats.retrieval.structure_score(rest) if rest.size else math.nan
    rest_ranked = bool(rest.size and not score_rest <= th.lost_structure_score)
    lost_score = (
        stats.retrieval.structure_score(lost_codes) if lost_codes.size else math.nan
    )
    scale = f"single linkage at height h = {mg.height:.3g}"
    if not math.isnan(mg.margin_ratio):
        scale += f" = max({mg.margin_ratio:g} x margin, {mg.diameter_ratio:g} x diameter)"
    into = "one cluster" if len(lost) == 1 else f"{len(lost)} clusters"
    holds = bool((not full) and lost and share >= th.partial_collapse_share and rest_ranked)
    headline = ""
    if full:
        text = "Not partial: the whole embedding has collapsed, every class included."
    elif not groups:
        text = f"No two classes share a cluster ({scale})."
    elif not lost:
        km = mg.n_merged_classes
        text = (
            f"{km} of {P} classes, {mg.merged_share:.1%} of the points, share clusters "
            f"({scale}), but are not mixed there (least structure score of a cluster "
            f"{min(scores):.2f} > {th.lost_structure_score:g}): not a collapse."
        )
    else:
        big = lost[0]
        text = (
            f"{k} of {P} classes, {share:.1%} of the points ({points} of {N}), have merged "
            f"into {into} ({scale}) and lost their class structure there (structure score "
            f"{lost_score:.2f} <= {th.lost_structure_score:g}: the nearest neighbours of "
            f"their points are of any of them); the largest holds classes "
            f"{_classes_text(big.classes)}: {big.n_points} points ({big.share:.1%}), diameter "
            f"{big.diameter:.3g} against {_typical(stats)}."
        )
        if not rest.size:
            text += (
                " Every class is in such a cluster: not partial (see all_distances_small "
                "and no_class_structure)."
            )
        elif not rest_ranked:
            text += (
                f" The other classes are not ranked either (structure score "
                f"{score_rest:.2f}): no class structure anywhere, not a partial collapse "
                "(see no_class_structure)."
            )
        elif not holds:
            text += f" Below the share threshold {th.partial_collapse_share:g}."
        else:
            names = ", ".join(_classes_text(g.classes) for g in lost)
            headline = (
                f"PARTIAL COLLAPSE: {k} of {P} classes, {share:.1%} of the points, merged "
                f"into {into} (diameter {big.diameter:.3g}"
                + (", the largest" if len(lost) > 1 else "")
                + f") and mixed there (structure score {lost_score:.2f}), while the other "
                f"{P - k} classes stay ranked (score {score_rest:.2f}); merged: classes "
                f"{names}."
            )
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
            "merged_points": points,
            "merged_share": share,
            "collapsed_groups": [
                {**groups[i].to_dict(), "structure_score": scores[i]} for i in lost_idx
            ],
            "group_scores": scores,
            "structure_score": lost_score,
            "rest_structure_score": score_rest,
            "largest_group": lost[0].to_dict() if lost else None,
            "n_overlapping_pairs": mg.n_overlapping_pairs,
            "threshold": th.partial_collapse_share,
            "structure_threshold": th.lost_structure_score,
            "headline": headline,
        },
    )


def _structure_signatures(
    stats: CollapseStatistics,
    th: SignatureThresholds,
    *,
    collapsed: bool,
    full_geom: bool,
    stuck_geom: bool,
    score_all: float,
    ranked_all: bool,
    ranked: str,
) -> tuple[Signature, Signature]:
    """``compressed`` (small, but the classes stay ranked) and ``no_class_structure``
    (the classes are ranked nowhere, and nothing merged or shrank to say collapse)."""
    alpha, diam = stats.margin, stats.diameter
    mg = stats.merging
    ret = stats.retrieval
    scores = _group_scores(stats)
    kept = [g for g, sc in zip(mg.groups, scores, strict=True) if _ranked(sc, th)]
    kept_share = sum(g.n_points for g in kept) / stats.n_points
    by_margin = bool(alpha > 0 and not math.isnan(mg.margin_ratio)
                     and mg.margin_ratio * alpha >= mg.diameter_ratio * diam)
    reasons: list[str] = []
    if full_geom:
        reasons.append(f"the diameter {diam:.3g} is tiny against the rms norm "
                       f"{stats.rms_norm:.3g} or the margin")
    elif stuck_geom:
        reasons.append(f"the loss is the margin and the diameter {diam:.3g} is "
                       f"{diam / alpha:.2g} x the margin {alpha:g}")
    elif alpha > 0 and diam <= th.compressed_diameter_ratio * alpha:
        reasons.append(f"the diameter {diam:.3g} is only {diam / alpha:.2g} x the margin "
                       f"{alpha:g} (<= {th.compressed_diameter_ratio:g})")
    if by_margin and kept and kept_share >= th.partial_collapse_share:
        nk = sum(len(g.classes) for g in kept)
        reasons.append(f"{nk} classes ({kept_share:.1%} of the points) are chained closer "
                       f"than h = {mg.height:.3g} = {mg.margin_ratio:g} x margin")
    comp = bool(not collapsed and ranked_all and reasons)
    if comp:
        text = (
            f"Compressed, not collapsed: {'; '.join(reasons)}, but {ranked}. The geometry "
            "shrank against the margin, the class structure did not go: the margin cannot "
            "be met at this scale, so most triplets are active."
        )
    elif collapsed:
        text = "Not compressed: the class structure is lost (see the collapse signatures)."
    elif not ranked_all:
        text = (
            f"Not compressed: the classes are not clearly ranked (structure score "
            f"{score_all:.2f} < {th.ranked_structure_score:g})."
        )
    else:
        text = (
            f"The scale is not small against the margin or the norm (diameter {diam:.3g}"
            + (f", {diam / alpha:.2g} x the margin" if alpha > 0 else "")
            + ")."
        )
    sig_comp = Signature(
        "compressed",
        comp,
        text,
        {
            "reasons": reasons,
            "structure_score": score_all,
            "diameter": diam,
            "margin": alpha,
            "diameter_over_margin": diam / alpha if alpha > 0 else None,
            "kept_share": kept_share,
            "threshold": th.compressed_diameter_ratio,
            "structure_threshold": th.ranked_structure_score,
        },
    )
    none = bool(not collapsed and not math.isnan(score_all)
                and score_all <= th.lost_structure_score)
    chance = ret.chance()
    nums = (
        f"leave-one-out Recall@1 {ret.recall_at_1:.2f}, R-Precision {ret.r_precision:.2f}, "
        f"MAP@R {ret.map_at_r:.2f}; structure score {score_all:.2f}"
    )
    if math.isnan(score_all):
        text = "Not evaluated: no class has two points, so no point can be a query."
    elif collapsed:
        text = f"Not separate from the collapse found ({nums})."
    elif none:
        scale = f"diameter {diam:.3g}" + (f", {diam / alpha:.2g} x the margin" if alpha > 0
                                          else "")
        text = (
            f"The classes are not ranked ({nums} <= {th.lost_structure_score:g}: chance "
            f"level), yet nothing has collapsed ({scale}). The "
            "positions do not reflect the labels: an untrained network, or labels that do "
            "not belong to these rows; after training, a collapse in progress."
        )
    else:
        text = f"The classes are ranked ({nums} > {th.lost_structure_score:g})."
    sig_none = Signature(
        "no_class_structure",
        none,
        text,
        {
            "recall_at_1": ret.recall_at_1,
            "r_precision": ret.r_precision,
            "map_at_r": ret.map_at_r,
            "chance_r_precision": chance,
            "structure_score": score_all,
            "n_queries": ret.n_queries,
            "sampled": ret.sampled,
            "threshold": th.lost_structure_score,
        },
    )
    return sig_comp, sig_none


def _typical(stats: CollapseStatistics) -> str:
    """The scale a merged group is compared with: the embedding's diameter,
    which both levels of statistics hold (so they give the same text)."""
    return f"an embedding diameter of {stats.diameter:.3g}"


#: what a reported loss sums over (:func:`convention_loss`): ``"batch_hard"``, one
#: term per anchor (its hardest positive and negative), or ``"all"``, every triplet
LOSS_KINDS = ("batch_hard", "all")
#: the reductions of :func:`convention_loss` (:data:`isoapprox.losses.TRIPLET_REDUCTIONS`)
_LOSS_REDUCTIONS = ("sum", "mean", "max", "mean_nonzero")


def convention_loss(stats: CollapseStatistics, kind: str = "batch_hard",
                    reduction: str = "mean") -> float:
    """This embedding's hinge triplet loss of one kind and reduction, from its statistics.

    ``kind`` ``"batch_hard"`` reduces one term per anchor, ``"all"`` one per
    triplet; ``reduction`` is ``"mean"``, ``"sum"``, ``"max"`` or
    ``"mean_nonzero"`` (the mean over the positive terms, 0 when none is:
    pytorch-metric-learning's default ``AvgNonZeroReducer``), as in
    :func:`isoapprox.batch_hard_loss` and :func:`isoapprox.triplet_loss`.  No
    further sweep: the statistics hold the sums and counts.

    Raises
    ------
    InvalidInputError
        For an unknown kind or reduction (naming the valid ones).
    """
    kind = check_option(kind, "loss_kind", LOSS_KINDS)
    reduction = check_option(reduction, "loss_reduction", _LOSS_REDUCTIONS)
    if reduction == "max":  # the largest triplet term is the largest batch-hard term
        return float(stats.batch_hard_max)
    if kind == "batch_hard":
        total, count = stats.batch_hard_mean * stats.n_anchors, stats.n_anchors
        if reduction == "mean":
            return float(stats.batch_hard_mean)
        positive = stats.n_hard_active
    else:
        total, count, positive = stats.triplet_sum, stats.n_triplets, stats.n_active
    if reduction == "sum":
        return float(total)
    if reduction == "mean":
        return float(total / count)
    return float(total / positive) if positive else 0.0


def _convention_text(kind: str, reduction: str, stats: CollapseStatistics
                     ) -> str:
    over = (f"{stats.n_anchors} anchors" if kind == "batch_hard"
            else f"{stats.n_triplets} triplets")
    what = {"mean": f"mean over {over}", "sum": f"sum over {over}", "max": f"max over {over}",
            "mean_nonzero": f"mean over the positive terms of {over}"}[reduction]
    name = "batch-hard loss" if kind == "batch_hard" else "triplet loss"
    return f"{name} ({what}, margin {stats.margin:g})"


def _loss_mismatch(
    stats: CollapseStatistics,
    th: SignatureThresholds,
    loss: float | None,
    bh_matches: bool,
    sm_matches: bool,
    other_losses: Mapping[str, float | None] | None,
    convention: tuple[str, str, float] = ("batch_hard", "mean", math.nan),
) -> Signature:
    """``loss_mismatch``: the reported loss against this file's loss of the reported
    convention (``(kind, reduction, value)`` of :func:`convention_loss`) and its
    soft-margin loss."""
    kind, reduction, conv = convention
    bh, sm = stats.batch_hard_mean, stats.soft_margin_mean
    ev: dict[str, Any] = {
        "loss": loss,
        "batch_hard_mean": bh,
        "soft_margin_mean": sm,
        "loss_kind": kind,
        "loss_reduction": reduction,
        "convention_loss": conv,
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
    conv_text = _convention_text(kind, reduction, stats)
    if holds:
        text = (
            f"The reported loss {loss:.4g} does not match this file: its {conv_text} is "
            f"{conv:.4g} and its soft-margin batch-hard loss {sm:.4g}, both off by more than "
            f"{th.loss_mismatch_rtol:.0%}. The reported value was computed on other "
            "embeddings (other batches, another training step, layers in training mode) "
            "or by another definition (--loss-reduction names the reduction); the checks "
            "against the margin and ln 2 read it, not this file."
        )
        if same:
            text += (
                f" It does equal this file's {same[0]} ({others[same[0]]:.4g}): if training "
                "reports that, the numbers agree."
            )
    else:
        which = conv_text if bh_matches else "soft-margin batch-hard loss"
        value = conv if bh_matches else sm
        text = f"The reported loss {loss:.4g} matches this file's {which} {value:.4g}."
    return Signature("loss_mismatch", bool(holds), text, ev)


def _missing_classes(stats: CollapseStatistics) -> Signature:
    labels, sizes = stats.classes.classes, stats.classes.sizes
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
