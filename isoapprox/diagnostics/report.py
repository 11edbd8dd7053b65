"""The collapse report: its sections, the plain-language verdict, batches.

:func:`diagnose` validates ``E`` and ``y`` once into a :class:`Batch` (which
computes the collapse statistics and signatures once) and builds the
report's sections in order; the separation and statistics sections add
sentences under ``"findings"`` that the verdict quotes.
:func:`diagnose_batches` evaluates random ``P x K`` batches, as training
sees them, and summarises over them (with the theory section on the first
batches when asked).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._scaling import pow2_scale
from .._typing import ArrayLike, RNGLike
from .._validation import (
    as_labels,
    as_points,
    as_rng,
    check_instance,
    check_int,
    check_margin,
    check_nonnegative,
    check_option,
    check_positive,
    check_quantiles,
    class_counts,
    require_triplets,
)
from ..exceptions import InvalidInputError
from ..sampling import class_members, pk_draw
from ..theory import TheoryOptions
from .distances import DEFAULT_QUANTILES, MAX_CANDIDATES, N_BINS
from .ideal_distance import CERTIFY, diagnose_theory, theory_batch_summary, theory_numbers
from .signatures import (
    CONSISTENCY_SIGNATURES,
    SIGNATURE_NAMES,
    SIGNATURE_REGISTRY,
    VERDICT_ORDER,
    Signature,
    SignatureThresholds,
    detect_signatures,
)
from .statistics import BALL_RTOL, CollapseStatistics, compute_collapse_statistics

__all__ = [
    "Batch",
    "DiagnoseOptions",
    "diagnose",
    "diagnose_batches",
    "NO_MARGIN_NOTE",
    "THEORY_NEEDS_MARGIN",
    "VERDICT_WORDS",
    "verdict",
]

#: per signature of :data:`~.signatures.VERDICT_ORDER`: (status, verdict word, headline),
#: from the signature registry
_HEADLINES = {
    name: (SIGNATURE_REGISTRY[name].status, SIGNATURE_REGISTRY[name].word,
           SIGNATURE_REGISTRY[name].headline)
    for name in VERDICT_ORDER
}

#: the verdict words, by status
VERDICT_WORDS = {
    **{status: word for status, word, _ in _HEADLINES.values()},
    "loss-mismatch": "LOSS MISMATCH",
    "loss-at-collapse-value": "LOSS AT A COLLAPSE VALUE",
    "healthy": "HEALTHY",
}

_ADVICE = {
    "collapsed": (
        "Lower the learning rate (or add a warmup); fewer classes per batch; semi-hard "
        "mining first, hard (batch-hard) mining later; L2-normalise the embeddings (or fix "
        "their scale) and set the margin for that scale; plain, not squared, distances in "
        "the loss; a margin above 0 (at margin 0 a collapsed batch has loss 0, so the loss "
        "cannot show it)."
    ),
    "partial-collapse": (
        "Check the merged classes' data and labels first (near-duplicate or mislabelled "
        "classes merge legitimately). Otherwise act early, as for a collapse: a lower "
        "learning rate, fewer classes per batch, semi-hard before hard mining. The mean "
        "loss sits between 0 and the margin and does not show this."
    ),
    "no-class-structure": (
        "At initialisation this is expected: train, then diagnose again. Otherwise check "
        "that the labels belong to these rows (same order; the labels file); then the "
        "remedies of a collapse: a lower learning rate, semi-hard before hard mining, fewer "
        "classes per batch."
    ),
    "compressed": (
        "Not a collapse, typical of early training: fix the scale, not the ranking. "
        "L2-normalise the embeddings (or learn a scale) and set the margin for that scale "
        "(about 0.1-0.3 on the unit sphere); a learning-rate warmup lets the embedding "
        "expand before hard mining; if it persists, a smaller margin or semi-hard mining."
    ),
    "loss-mismatch": (
        "Diagnose the embeddings the loss was computed on (the same batch, at the same "
        "step, with the network in the mode it trained in), or pass the loss this file "
        "gives."
    ),
    "class-collapsed": (
        "On these labels this is a triplet-separated (ideal) embedding whenever the class "
        "gaps exceed the margin; it keeps no structure inside a class, which can hurt "
        "retrieval of classes not seen in training (a smaller margin or semi-hard mining "
        "keeps some)."
    ),
    "dimensional-collapse": (
        "A batch of P classes needs about P - 1 directions: more classes per batch spreads "
        "the embedding over more; a lower learning rate and semi-hard before hard mining "
        "avoid the early loss of directions; L2-normalise (an unbounded norm shows as one "
        "direction); if the rank stays low, a smaller embedding dimension loses nothing."
    ),
    "loss-at-collapse-value": (
        "Nothing collapsed: the loss is flat because hardest positives and negatives are "
        "equally far; harder (semi-hard, then batch-hard) mining or a larger margin moves it."
    ),
    "healthy": "",
}

#: the note of a report without a margin
NO_MARGIN_NOTE = (
    "no margin given (--margin): margin-relative checks (stuck_at_margin, large_margin, "
    "compressed against the margin) are off; the losses are at margin 0"
)


#: why the theory section is skipped without a margin
THEORY_NEEDS_MARGIN = (
    "theory skipped: it compares the loss with the distance to the triplet-separated "
    "set at the training margin; pass --margin"
)


def _retrieval_line(by_name: dict[str, Signature]) -> str | None:
    sig = by_name.get("no_class_structure")
    if sig is None:
        return None
    ev = sig.evidence
    if ev.get("n_queries", 0) == 0:
        return None
    sampled = (f", over a sample of {ev['n_queries']} queries" if ev.get("sampled")
               else f", {ev['n_queries']} queries")
    return (
        f"leave-one-out retrieval: Recall@1 {ev['recall_at_1']:.3f}, R-Precision "
        f"{ev['r_precision']:.3f}, MAP@R {ev['map_at_r']:.3f}{sampled} (chance R-Precision "
        f"{ev['chance_r_precision']:.3f}; structure score {ev['structure_score']:.2f})"
    )


def verdict(signatures: Sequence[Signature], *, findings: Sequence[str] = (),
            notes: Sequence[str] = ()) -> dict[str, Any]:
    """A plain-language verdict from the signatures (and other sections' findings).

    ``findings`` are further sentences quoted after the signatures; ``notes``
    (such as :data:`NO_MARGIN_NOTE`) are shown with the verdict.

    Returns
    -------
    dict
        ``status`` (``"collapsed"``, ``"partial-collapse"``,
        ``"no-class-structure"``, ``"compressed"``, ``"class-collapsed"``,
        ``"dimensional-collapse"``, ``"loss-mismatch"``,
        ``"loss-at-collapse-value"`` or ``"healthy"``), ``word`` (its
        verdict word, :data:`VERDICT_WORDS`), ``headline``, ``evidence``
        (two to four sentences: the deciding signatures and the retrieval),
        ``advice``, ``notes``, ``signatures`` (names that hold, the deciding
        one first) and ``details`` (their summaries, then the findings).
    """
    by_name = {s.name: s for s in signatures}
    held = [name for name in VERDICT_ORDER if name in by_name and by_name[name].holds]
    consistent = [n for n in CONSISTENCY_SIGNATURES if n in by_name and by_name[n].holds]
    details = [by_name[n].summary for n in held]
    # a reported loss at a collapse value (the margin, ln 2) that is this file's too
    reported = [
        n
        for n in ("stuck_at_margin", "stuck_at_ln2")
        if n in by_name
        and not by_name[n].holds
        and by_name[n].evidence.get("loss_source") == "reported"
        and by_name[n].evidence.get("loss_matches")
        and by_name[n].evidence.get("file_loss_matches", True)
    ]
    if held:
        status, _, headline = _HEADLINES[held[0]]
        headline = by_name[held[0]].evidence.get("headline") or headline
        details += [by_name[n].summary for n in reported]
    elif "loss_mismatch" in consistent:
        status = "loss-mismatch"
        headline = (
            "REPORTED LOSS DOES NOT MATCH THE FILE: the embeddings show no collapse "
            "signature, and the loss training reports is not theirs."
        )
    elif reported:
        status = "loss-at-collapse-value"
        headline = (
            "LOSS AT A COLLAPSE VALUE, but the embedding has not collapsed: each "
            "anchor's hardest positive is about as far as its hardest negative."
        )
        details = [by_name[n].summary for n in reported]
    else:
        status = "healthy"
        headline = (
            "HEALTHY: no collapse signature; the embedding is spread out, uses its "
            "dimensions and ranks its classes."
        )
    details += [by_name[n].summary for n in consistent]
    evidence = details[:1]
    line = _retrieval_line(by_name)
    if line is not None and held[:1] != ["no_class_structure"]:  # that one quotes them
        evidence.append(line)
    evidence += [by_name[n].summary for n in consistent if by_name[n].summary not in evidence]
    evidence += [str(f) for f in findings][: max(0, 2 - len(evidence))]
    return _verdict_record(status, headline, evidence, held + consistent,
                           details + [str(f) for f in findings], [str(n) for n in notes])


def _verdict_record(status: str, headline: str, evidence: list[str], signatures: list[str],
                    details: list[str], notes: list[str]) -> dict[str, Any]:
    """The verdict's record (of :func:`verdict` and :func:`diagnose_batches`): its word
    and advice from ``status``, at most four sentences of ``evidence``."""
    return {"status": status, "word": VERDICT_WORDS[status], "headline": headline,
            "evidence": evidence[:4], "signatures": signatures, "details": details,
            "advice": _ADVICE[status], "notes": notes}


@dataclass(frozen=True)
class DiagnoseOptions:
    """Options of :func:`diagnose` and :func:`diagnose_batches`.

    ``margin`` is the training margin (``None``, the default: not known; the
    statistics then use 0 and the margin-relative signatures are off), ``loss``
    a loss value the training
    run reports, ``quantiles`` the pair-distance levels, ``uniformity_t``
    and ``alignment_alpha`` their parameters, ``atol`` the tolerance of the
    violated-triplet count.  The full triplet loss comes from the statistics'
    anchor sweep (``CollapseStatistics.triplet_sum``), at no extra sweep.
    """

    margin: float | None = None
    loss: float | None = None
    #: how training computes ``loss`` (:func:`~.signatures.convention_loss`)
    loss_kind: str = "batch_hard"
    loss_reduction: str = "mean"
    quantiles: tuple[float, ...] = DEFAULT_QUANTILES
    uniformity_t: float = 2.0
    alignment_alpha: float = 2.0
    atol: float = 1e-9
    thresholds: SignatureThresholds = field(default_factory=SignatureThresholds)

    def __post_init__(self) -> None:
        if self.margin is not None:
            check_margin(self.margin)
        if self.loss is not None:
            check_nonnegative(self.loss, "loss")
        q = check_quantiles(self.quantiles).reshape(-1)
        object.__setattr__(self, "quantiles", tuple(float(v) for v in q))
        check_positive(self.uniformity_t, "uniformity_t")
        check_positive(self.alignment_alpha, "alignment_alpha")
        check_nonnegative(self.atol, "atol")
        check_instance(self.thresholds, SignatureThresholds, "thresholds")


def _margin(options: DiagnoseOptions) -> float:
    """The margin the statistics use: 0 when none is given (margin-relative checks off)."""
    return 0.0 if options.margin is None else float(options.margin)


class Batch:
    """Validated embeddings and labels of one batch, with the shared statistics cached.

    ``E`` float64 ``(N, n)``; ``y`` dense class codes ``0 .. P-1`` admitting a
    triplet, ``classes`` their original labels.
    """

    def __init__(self, E: ArrayLike, y: ArrayLike) -> None:
        self.E = as_points(E, "E", min_points=2)
        self.y, self.classes = as_labels(y, self.E.shape[0], "y")
        require_triplets(self.y)
        self._stats: dict[tuple, CollapseStatistics] = {}

    def statistics(self, options: DiagnoseOptions) -> CollapseStatistics:
        """:func:`~.statistics.collapse_statistics` for these options (computed once)."""
        th = options.thresholds
        kw = {
            "margin": _margin(options),
            "uniformity_t": float(options.uniformity_t),
            "alignment_alpha": float(options.alignment_alpha),
            "atol": float(options.atol),
            "merge_margin_ratio": float(th.merge_margin_ratio),
            "merge_diameter_ratio": float(th.merge_diameter_ratio),
        }
        key = (options.quantiles, *kw.values())
        if key not in self._stats:
            # E, y and the options are validated: no second pass through the checks
            self._stats[key] = compute_collapse_statistics(
                self.E, self.y, self.classes,
                levels=np.array(options.quantiles, dtype=np.float64), **kw,
            )
        return self._stats[key]

    def signatures(self, options: DiagnoseOptions) -> tuple[Signature, ...]:
        """:func:`detect_signatures` of the cached statistics."""
        st = self.statistics(options)
        others: dict[str, float | None] = {}
        if options.loss is not None:
            others["triplet loss, mean over all triplets"] = st.triplet_mean
            if st.n_active:
                others["triplet loss, mean over the active triplets"] = (
                    st.triplet_sum / st.n_active
                )
        return detect_signatures(
            st, loss=options.loss, thresholds=options.thresholds, other_losses=others,
            loss_kind=options.loss_kind, loss_reduction=options.loss_reduction,
        )


def data_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Size, dimension, classes and the options that matter for reading the report."""
    sizes = class_counts(batch.y)
    out: dict[str, Any] = {
        "n_points": int(batch.E.shape[0]),
        "dim": int(batch.E.shape[1]),
        "n_classes": int(len(batch.classes)),
        "class_size_min": int(sizes.min()),
        "class_size_median": float(np.median(sizes)),
        "class_size_max": int(sizes.max()),
        "margin": options.margin,
        "reported_loss": options.loss,
    }
    if len(sizes) <= 64:
        out["class_sizes"] = {
            str(c): int(k) for c, k in zip(batch.classes.tolist(), sizes, strict=True)
        }
    return out


#: the statistics the losses section lists, in its order
_LOSS_KEYS = ("batch_hard_mean", "batch_hard_max", "batch_hard_sum", "soft_margin_mean",
              "triplet_mean", "triplet_sum")


def losses_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Batch-hard (hinge and soft-margin) losses and the full triplet loss."""
    st = batch.statistics(options)
    return {k: getattr(st, k) for k in _LOSS_KEYS}


def separation_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Triplet separation: violated and active triplets, worst triplet and slack."""
    st = batch.statistics(options)
    if st.n_violated == 0:
        finding = (
            f"The embedding is triplet-separated at margin {st.margin:g}: every anchor's "
            "hardest negative is at least the margin farther than its hardest positive "
            "(loss 0)."
        )
    else:
        a, p, m = st.worst_triplet
        finding = (
            f"{st.n_violated} of {st.n_triplets} triplets ({st.violated_fraction:.1%}) violate "
            f"d(a,p) + {st.margin:g} <= d(a,m); the worst, (a, p, m) = ({a}, {p}, {m}), by "
            f"{-st.worst_slack:.3g}. {st.active_fraction:.1%} of triplets are active "
            f"(d(a,m) < d(a,p) + margin)."
        )
    return {
        "findings": [finding],
        "separated": st.n_violated == 0,
        "n_triplets": st.n_triplets,
        "n_violated": st.n_violated,
        "fraction_violated": st.violated_fraction,
        "n_active": st.n_active,
        "fraction_active": st.active_fraction,
        "worst_triplet": list(st.worst_triplet),
        "worst_slack": st.worst_slack,
        "margin": st.margin,
        "atol": st.atol,
    }


def retrieval_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Leave-one-out Recall@1, R-Precision and MAP@R
    (:func:`~isoapprox.metrics.retrieval_metrics`), and the structure score."""
    return batch.statistics(options).retrieval.to_dict()


def collapse_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Distances to the collapsed embeddings (``d_iso = diam``, ``d_haus = R``)."""
    st = batch.statistics(options)
    return {
        "diameter": st.diameter,
        "diameter_pair": list(st.diameter_pair),
        "d_iso_to_collapsed": st.diameter,
        "meb_radius": st.meb_radius,
        "meb_radius_lower": st.meb_lower,
        "d_haus_to_collapsed": st.meb_radius,
    }


def _statistics_budget(st: CollapseStatistics) -> dict[str, Any]:
    """What the statistics cost: every number exact, over all points and pairs (no sample).

    ``pairs`` (``N (N - 1) / 2``), ``points`` and ``classes``; the exact
    quantiles' histogram ``bins`` and ``max_candidates`` (the most distances
    held at once); the enclosing balls (whole set and each class) are
    certified to the relative gap ``ball_rtol``.
    """
    return {"sampled": False, "points": st.n_points, "pairs": st.n_pairs,
            "classes": st.n_classes, "bins": N_BINS, "max_candidates": MAX_CANDIDATES,
            "ball_rtol": BALL_RTOL}


def statistics_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Pair-distance summary, norms, spectrum and the normalised statistics, and
    ``budget``: what they cost (all exact, no sampling)."""
    st = batch.statistics(options)
    d = st.distances
    finding = (
        f"Pair distances range over [{d.min:.3g}, {d.max:.3g}] (mean {d.mean:.3g}) against an "
        f"rms embedding norm of {st.rms_norm:.3g}; the centred embeddings have effective rank "
        f"{st.effective_rank:.3g} of {st.dim} dimensions."
    )
    return {
        "findings": [finding],
        "budget": _statistics_budget(st),
        "distances": d.to_dict(),
        **{k: getattr(st, k) for k in ("rms_norm", "centroid_norm", "effective_rank", "rankme",
                                       "std_l2_normalized")},
        "std_l2_isotropic": 1.0 / math.sqrt(st.dim),
        **{k: getattr(st, k) for k in ("uniformity", "uniformity_t", "alignment",
                                       "alignment_alpha", "n_zero_rows")},
    }


def classes_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Per-class spread against separation, merged groups and the per-class table.

    ``table`` has one row per class, worst first: by share of the violated
    triplets, then by spread ratio (diameter over the gap to the nearest
    other class); ``merging`` is :class:`~.merging.ClassMerging`'s record.
    """
    st = batch.statistics(options)
    cs, mg = st.classes, st.merging
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = cs.diameter / cs.min_inter
    ratio = np.where(np.isnan(ratio), 0.0, ratio)
    order = np.argsort(-ratio, kind="stable")
    out = cs.to_dict()
    out["spread_ratio"] = ratio.tolist()
    out["worst_classes"] = [cs.classes[k].item() for k in order[:5]]
    N = st.n_points
    share = cs.violated / st.n_violated if st.n_violated else np.zeros(len(cs.sizes))
    own = cs.sizes * (cs.sizes - 1) * (N - cs.sizes)
    worst = np.lexsort((np.arange(len(cs.sizes)), -ratio, -share))
    out["table"] = [
        {
            "class": cs.classes[c].item(),
            "size": int(cs.sizes[c]),
            "diameter": float(cs.diameter[c]),
            "meb_radius": float(cs.meb_radius[c]),
            "nearest_class": cs.nearest_class[c].item(),
            "gap": float(cs.min_inter[c]),
            "spread_ratio": float(ratio[c]),
            "violated": int(cs.violated[c]),
            "violated_share": float(share[c]),
            "violated_fraction": float(cs.violated[c] / own[c]) if own[c] else 0.0,
            "invaded_anchors": int(mg.invaded[c]),
            "group": int(mg.class_group[c]) if mg.class_group[c] >= 0 else None,
        }
        for c in worst
    ]
    out["merging"] = mg.to_dict()
    return out


def signatures_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """The collapse signatures and whether each holds."""
    return {s.name: s.to_dict() for s in batch.signatures(options)}


#: the report's sections, in order
_SECTIONS = (
    ("data", data_section),
    ("losses", losses_section),
    ("separation", separation_section),
    ("retrieval", retrieval_section),
    ("collapse", collapse_section),
    ("statistics", statistics_section),
    ("classes", classes_section),
    ("signatures", signatures_section),
)


def _options(options: Any) -> DiagnoseOptions:
    return check_instance(DiagnoseOptions() if options is None else options, DiagnoseOptions,
                          "options")


def diagnose(
    E: ArrayLike,
    y: ArrayLike,
    *,
    options: DiagnoseOptions | None = None,
) -> dict[str, Any]:
    """The collapse report of one labelled embedding.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels admitting a triplet.
    options : DiagnoseOptions, optional
        Margin, reported loss, quantile levels, thresholds.

    Returns
    -------
    dict
        ``data``, ``losses``, ``separation``, ``retrieval`` (leave-one-out
        Recall@1, R-Precision, MAP@R, whether sampled), ``collapse``,
        ``statistics``, ``classes``, ``signatures``, then ``verdict`` (see
        :func:`verdict`; without ``options.margin`` its ``notes`` say that the
        margin-relative checks are off and the statistics use margin 0).
        :func:`~isoapprox.diagnostics.add_theory` adds the theory section.

    Raises
    ------
    NoTripletError
        If the labels admit no triplet.

    Examples
    --------
    >>> E = [[0.0, 0.0], [0.1, 0.0], [3.0, 0.0], [3.1, 0.0], [0.0, 3.0], [0.0, 3.1]]
    >>> report = diagnose(E, [0, 0, 1, 1, 2, 2], options=DiagnoseOptions(margin=1.0))
    >>> report["separation"]["separated"], report["separation"]["n_violated"]
    (True, 0)
    >>> "verdict" in report
    True
    """
    options = _options(options)
    batch = Batch(E, y)
    report = {name: fn(batch, options) for name, fn in _SECTIONS}
    findings = [str(f) for part in report.values() for f in part.get("findings", ())]
    notes = [NO_MARGIN_NOTE] if options.margin is None else []
    report["verdict"] = verdict(batch.signatures(options), findings=findings, notes=notes)
    return report


def sample_batches(codes, batch_size, per_class, n_batches, rng):
    """Index arrays of ``n_batches`` random ``P x K`` batches (see :func:`diagnose_batches`;
    :func:`isoapprox.sampling.pk_draw`, classes visited in increasing order)."""
    members = class_members(codes)
    P = batch_size // per_class
    eligible = [m for m in members if m.size >= per_class]
    if len(eligible) < P:
        raise InvalidInputError(
            f"`batch_size` = {batch_size} with {per_class} samples per class needs {P} "
            f"classes with at least {per_class} points; got {len(eligible)} such classes "
            f"(of {len(members)})"
        )
    for _ in range(n_batches):
        yield pk_draw(eligible, P, per_class, rng, draw="sorted_choice")


def diagnose_batches(
    E: ArrayLike,
    y: ArrayLike,
    *,
    batch_size: int,
    samples_per_class: int = 4,
    n_batches: int = 20,
    rng: RNGLike = None,
    options: DiagnoseOptions | None = None,
    theory: TheoryOptions | None = None,
    theory_batches: int | None = None,
    certify: str = "verdict",
) -> dict[str, Any]:
    """Collapse statistics over random ``P x K`` batches, as training sees them.

    Each batch draws ``P = batch_size // samples_per_class`` classes among
    those with at least ``K = samples_per_class`` points, then ``K`` points of
    each, without replacement (the PK sampling of Hermans et al. 2017).

    Parameters
    ----------
    E, y : array_like
        Embeddings ``(N, n)`` and class labels ``(N,)``.
    batch_size : int
        Points per batch, a multiple of ``samples_per_class`` with ``P >= 2``.
    samples_per_class : int, default 4
        ``K >= 2``.
    n_batches : int, default 20
        Number of batches.
    rng : None, int or Generator
        Randomness of the draws.
    options : DiagnoseOptions, optional
        As for :func:`diagnose`.
    theory : TheoryOptions, optional
        Run :func:`~isoapprox.diagnose_theory` on the batches too; its
        numbers are summarised over the batches as ``"theory.key"``.
    theory_batches : int, optional
        Run it on the first this many batches only (default: all).
    certify : {"verdict", "all"}, default "verdict"
        What the theory certifies (:func:`~isoapprox.diagnose_theory`).

    Returns
    -------
    dict
        ``"data"`` (sizes and sampling), ``"statistics"`` (per statistic:
        mean, std, min, median, max over the batches), ``"signatures"``
        (per signature: the number and share of batches where it holds),
        ``"per_batch"`` (each batch's scalars and held signatures),
        ``"verdict"`` and, with ``theory``, ``"theory"``
        (:func:`~isoapprox.diagnostics.theory_batch_summary`, whose findings
        the verdict quotes, and the ``"budget"`` of the first evaluated
        batch: :func:`~isoapprox.diagnostics.theory_budget`).  ``"data"``'s
        ``"budget"`` is the sampling: batches, their size, the batches with
        theory; each batch's statistics are exact.
    """
    options = _options(options)
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    K = check_int(samples_per_class, "samples_per_class", minimum=2)
    B = check_int(batch_size, "batch_size", minimum=2 * K)
    if B % K:
        raise InvalidInputError(
            f"`batch_size` must be a multiple of samples_per_class = {K}; got {B}"
        )
    n_batches = check_int(n_batches, "n_batches", minimum=1)
    if theory is not None:
        check_instance(theory, TheoryOptions, "theory")
    if theory_batches is not None:
        theory_batches = check_int(theory_batches, "theory_batches", minimum=0)
    certify = check_option(certify, "certify", CERTIFY)
    notes = [NO_MARGIN_NOTE] if options.margin is None else []
    if theory is not None and options.margin is None:
        theory = None
        notes.append(THEORY_NEEDS_MARGIN)
    n_theory = 0
    theory_budget: dict[str, Any] | None = None
    gen = as_rng(rng)
    rows: list[dict[str, Any]] = []
    drawn = np.zeros(len(classes), dtype=bool)
    for idx in sample_batches(codes, B, K, n_batches, gen):
        drawn[codes[idx]] = True
        batch = Batch(X[idx], codes[idx])
        row: dict[str, Any] = dict(batch.statistics(options).scalars())
        held = [s.name for s in batch.signatures(options) if s.holds]
        if theory is not None and (theory_batches is None or n_theory < theory_batches):
            n_theory += 1
            res = diagnose_theory(batch.E, batch.y, margin=_margin(options), options=theory,
                                  certify=certify)
            row.update(theory_numbers(res))
            if theory_budget is None:
                theory_budget = res.budget
        row["signatures"] = held
        rows.append(row)
    held_counts = {name: sum(name in r["signatures"] for r in rows) for name in SIGNATURE_NAMES}
    summary: dict[str, Any] = {}
    for k in dict.fromkeys(k for r in rows for k in r if k != "signatures"):
        vals = np.array([r[k] for r in rows if r.get(k) is not None], dtype=np.float64)
        if vals.size == 0:
            summary[k] = None
            continue
        # an exact power-of-two rescaling keeps the squares of the std (and the
        # sums of the mean and median) in range for values near 1e300
        sc = pow2_scale(vals[np.isfinite(vals)])
        summary[k] = {
            "mean": float(np.mean(vals * sc) / sc),
            "std": float(np.std(vals * sc) / sc),
            "min": float(np.min(vals)),
            "median": float(np.median(vals * sc) / sc),
            "max": float(np.max(vals)),
        }
    signatures = {
        name: {"batches": held_counts[name], "share": held_counts[name] / n_batches}
        for name in SIGNATURE_NAMES
    }
    majority = [n for n in VERDICT_ORDER if held_counts[n] * 2 > n_batches]
    if majority:
        status, _, headline = _HEADLINES[majority[0]]
        headline = headline.replace(": ", " in most batches: ", 1)
    else:
        status = "healthy"
        headline = (
            "HEALTHY: no collapse signature in most batches; the batches are spread out, "
            "use their dimensions and rank their classes."
        )
    details = [
        f"{name}: in {held_counts[name]} of {n_batches} batches"
        for name in SIGNATURE_NAMES
        if held_counts[name]
    ]
    sizes = class_counts(codes)
    never = [classes[c].item() for c in np.flatnonzero(~drawn)]
    coverage = {
        "classes_drawn": int(drawn.sum()),
        "classes_too_small": int(np.sum(sizes < K)),
        "classes_never_drawn": never,
        "points_never_drawn": int(sizes[~drawn].sum()),
    }
    if never:
        details.append(
            f"{len(never)} of {len(classes)} classes ({coverage['points_never_drawn']} points) "
            f"are in none of the {n_batches} batches, {coverage['classes_too_small']} of them "
            f"because they have fewer than K = {K} points: the batch statistics do not "
            "describe them."
        )
    n_sep = sum(1 for r in rows if r["violated_fraction"] == 0.0)
    details.append(
        f"triplet-separated at margin {_margin(options):g} in {n_sep} of {n_batches} batches"
    )
    bh = summary["batch_hard_mean"]
    details.append(
        f"batch-hard loss over batches: median {bh['median']:.4g} (min {bh['min']:.4g}, max "
        f"{bh['max']:.4g}); diameter median {summary['diameter']['median']:.3g}"
    )
    retrieval = None
    if summary.get("r_precision") is not None:
        r1, rp = summary["recall_at_1"], summary["r_precision"]
        retrieval = (
            f"leave-one-out retrieval within the batches: median Recall@1 {r1['median']:.3f}, "
            f"R-Precision {rp['median']:.3f} (min {rp['min']:.3f}, max {rp['max']:.3f})"
        )
        details.append(retrieval)
    evidence = [d for d in details if d.endswith(" batches") and ": in " in d][:2]
    evidence += [retrieval] if retrieval else []
    evidence += [d for d in details if d not in evidence][: max(0, 3 - len(evidence))]
    report = {
        "data": {
            "n_points": int(X.shape[0]),
            "dim": int(X.shape[1]),
            "n_classes": int(len(classes)),
            "batch_size": B,
            "classes_per_batch": B // K,
            "samples_per_class": K,
            "n_batches": n_batches,
            "margin": options.margin,
            "reported_loss": options.loss,
            "coverage": coverage,
            "budget": {"n_batches": n_batches, "batch_size": B,
                       "points_sampled": n_batches * B, "theory_batches": n_theory,
                       "statistics": "exact within each batch"},
        },
        "statistics": summary,
        "signatures": signatures,
        "per_batch": rows,
        "verdict": _verdict_record(status, headline, evidence, majority, details, notes),
    }
    if theory is not None:
        report["theory"] = theory_batch_summary(report)
        report["theory"]["budget"] = theory_budget
        report["verdict"]["details"].extend(report["theory"]["findings"])
    return report
