"""Loss values: triplet, batch-hard, contrastive and margin losses and their zero-loss sets.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.losses``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, FloatArray, IntArray
from .._validation import (
    as_labels,
    as_points,
    check_margin,
    check_nonnegative,
    check_option,
    require_triplets,
)
from ..geometry import warn_overflow
from ..kernels import losses as K
from ._core import (
    REDUCTIONS,
    TRIPLET_REDUCTIONS,
    fill_doc,
    mine_batch_hard,
    reduce_pairs,
    reduce_terms,
    unit_scale,
)

__all__ = [
    "REDUCTIONS",
    "TRIPLET_REDUCTIONS",
    "HardestPairs",
    "PairLossResult",
    "SeparationResult",
    "batch_hard_loss",
    "contrastive_loss",
    "contrastive_report",
    "hardest_pairs",
    "is_triplet_separated",
    "margin_loss",
    "margin_loss_report",
    "separation_report",
    "triplet_loss",
]


def points_and_codes(E: ArrayLike, y: ArrayLike, *, triplets: bool):
    """Checked float64 points (``N >= 2``), label codes and classes; with
    ``triplets``, labels that admit a triplet."""
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    if triplets:
        require_triplets(codes)
    return X, codes, classes


def _prepare(E: ArrayLike, y: ArrayLike, margin: float):
    """:func:`points_and_codes` (labels admitting a triplet; the margin checked
    before the labels are), rescaled with the margin: ``X, codes, classes, alpha, s``."""
    X, codes, classes = points_and_codes(E, y, triplets=False)
    margin = check_margin(margin)
    require_triplets(codes)
    X, (alpha,), s = unit_scale(X, margin)
    return X, codes, classes, alpha, s


@dataclass(frozen=True)
class HardestPairs:
    """Hardest positive and negative of every anchor (batch-hard mining).

    Attributes
    ----------
    hardest_positive, hardest_negative : ndarray of shape (N,)
        ``max_p d(a, p)`` (``-inf`` without positives) and ``min_m d(a, m)``
        (``+inf`` without negatives).
    positive_index, negative_index : ndarray of shape (N,), int
        Indices attaining them (``-1`` if none; smallest index on ties).
    valid : ndarray of shape (N,), bool
        Anchors with at least one positive and one negative.
    """

    hardest_positive: FloatArray
    hardest_negative: FloatArray
    positive_index: IntArray
    negative_index: IntArray
    valid: np.ndarray


@fill_doc
def hardest_pairs(E: ArrayLike, y: ArrayLike) -> HardestPairs:
    """Batch-hard mining: each anchor's hardest positive and hardest negative.

    Parameters
    ----------
    {E_y}

    Returns
    -------
    HardestPairs

    Raises
    ------
    {raises_triplet}
    """
    X, codes, _, _, s = _prepare(E, y, 0.0)
    hp, hn, pi, ni = K.batch_hard_terms(X, codes, 0.0)
    if s != 1.0:
        hp = hp / s
        hn = hn / s
    return HardestPairs(hp, hn, pi, ni, (pi >= 0) & (ni >= 0))


@fill_doc
def batch_hard_loss(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, reduction: str = "mean"
) -> float:
    """Batch-hard triplet loss (hard negative mining).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (``N >= 2``; float64 arithmetic).
    y : array_like of shape (N,)
        Class labels.
    margin : float, default 0.0
        ``alpha >= 0``.  The paper's theory uses 0; training uses ``> 0``.
    reduction : {"mean", "sum", "max", "mean_nonzero"}
        Reduction over the anchors that have a positive and a negative;
        ``"mean_nonzero"`` averages over the anchors whose term is positive
        (0 when none is): pytorch-metric-learning's default reducer
        (``AvgNonZeroReducer``) on the triplets of its ``BatchHardMiner``.

    Returns
    -------
    float
        ``reduce_a [max_p d(a,p) - min_m d(a,m) + alpha]_+``, as accurate at
        every scale (computed on a copy rescaled by a power of two); ``inf``, with
        a ``RuntimeWarning`` ``"overflow encountered in batch_hard_loss:
        ..."``, when it exceeds the largest float64 (``~1.8e308``).

    Raises
    ------
    {raises_triplet}
    InvalidInputError
        For NaN/inf or mis-shaped input, a negative margin or an unknown
        reduction.

    Notes: docs/dev/kernels_design.md, ``isoapprox.losses.batch_hard_loss``.

    Examples
    --------
    >>> E = [[0.0], [1.0], [3.0], [5.0]]
    >>> batch_hard_loss(E, [0, 0, 1, 1], margin=0.5, reduction="max")
    0.5
    >>> batch_hard_loss(E, [0, 0, 1, 1], margin=0.5, reduction="mean")
    0.125
    >>> batch_hard_loss(E, [0, 0, 1, 1], margin=0.5, reduction="mean_nonzero")
    0.5
    """
    reduction = check_option(reduction, "reduction", TRIPLET_REDUCTIONS)
    X, codes, _, alpha, s = _prepare(E, y, margin)
    value = _batch_hard_scaled(X, codes, alpha, (reduction,))[0] / s
    return warn_overflow(value, "batch_hard_loss", "the loss")


def _batch_hard_scaled(X: np.ndarray, codes: np.ndarray, alpha: float,
                       reductions: tuple[str, ...]) -> list[float]:
    """The batch-hard loss under each of ``reductions``, from one kernel pass, in
    the units of ``X`` (already rescaled: :func:`_prepare`)."""
    hp, hn, _, _, valid = mine_batch_hard(X, codes, alpha)
    terms = np.maximum(hp[valid] - hn[valid] + alpha, 0.0)
    return [reduce_terms(terms, r) for r in reductions]


def compute_batch_hard(X: np.ndarray, codes: np.ndarray, alpha: float,
                      reductions: tuple[str, ...]) -> list[float]:
    """:func:`batch_hard_loss` without its checks, for callers that validated
    (finite float64 ``X``, label codes admitting a triplet, ``alpha >= 0``),
    under each of ``reductions`` from one kernel pass; no overflow warning."""
    X, (alpha_s,), s = unit_scale(X, alpha)
    return [v / s for v in _batch_hard_scaled(X, codes, alpha_s, reductions)]


def compute_worst_slack(X: np.ndarray, codes: np.ndarray, alpha: float) -> float:
    """``min_(a,p,m) d(a,m) - d(a,p) - alpha`` (:attr:`SeparationResult.worst_slack`)
    without the checks of :func:`separation_report` or its violation counts."""
    X, (alpha_s,), s = unit_scale(X, alpha)
    hp, hn, _, _, valid = mine_batch_hard(X, codes, alpha_s)
    return float(np.min(np.where(valid, hn - hp - alpha_s, np.inf))) / s


@fill_doc
def triplet_loss(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, reduction: str = "mean"
) -> float:
    """Triplet loss over every triplet of the batch.

    Parameters
    ----------
    {E_y}
    {margin}
    reduction : {"mean", "sum", "max", "mean_nonzero"}
        ``mean`` divides by the number of triplets (active or not),
        ``mean_nonzero`` by the number of triplets with a positive term (0
        when none has): pytorch-metric-learning's default reducer
        (``AvgNonZeroReducer``) over all triplets.

    Returns
    -------
    float
        ``reduce_{(a,p,m)} [d(a,p) - d(a,m) + alpha]_+``; ``inf``, with a
        ``RuntimeWarning``, when it exceeds the largest float64 (as
        :func:`batch_hard_loss`).

    Raises
    ------
    {raises_triplet}

    Notes: docs/dev/kernels_design.md, ``isoapprox.losses.triplet_loss``.

    Examples
    --------
    >>> triplet_loss([[0.0], [1.0], [3.0], [5.0]], [0, 0, 1, 1], margin=0.5, reduction="sum")
    0.5
    >>> triplet_loss([[0.0], [1.0], [3.0], [5.0]], [0, 0, 1, 1], margin=0.5,
    ...              reduction="mean_nonzero")
    0.5
    """
    reduction = check_option(reduction, "reduction", TRIPLET_REDUCTIONS)
    X, codes, _, alpha, s = _prepare(E, y, margin)
    if reduction == "max":  # the largest triplet term is the largest batch-hard term
        total = _batch_hard_scaled(X, codes, alpha, ("max",))[0]
    else:
        sums, counts, active = K.triplet_loss_kernel(X, codes, alpha)
        total = float(np.sum(sums))
        if reduction == "mean":
            total /= float(np.sum(counts))
        elif reduction == "mean_nonzero":
            # active: the triplets whose term the kernel added is positive
            n_active = int(np.sum(active))
            total = total / n_active if n_active else 0.0
    return warn_overflow(total / s, "triplet_loss", "the loss")


@dataclass(frozen=True)
class SeparationResult:
    """How far an embedding is from being triplet-separated.

    Attributes
    ----------
    separated : bool
        True when every triplet satisfies ``d(a,p) + alpha <= d(a,m) + atol``.
    worst_slack : float
        ``min_{(a,p,m)} d(a,m) - d(a,p) - alpha``; negative when violated.
        ``-worst_slack`` is the max-reduced loss when violated.
    worst_triplet : tuple of int
        ``(a, p, m)`` attaining ``worst_slack``.
    n_violated : int
        Number of triplets with ``d(a,p) + alpha - d(a,m) > atol``.
    n_triplets : int
        Number of triplets.
    margin, atol : float
        The margin and tolerance used.
    """

    separated: bool
    worst_slack: float
    worst_triplet: tuple[int, int, int]
    n_violated: int
    n_triplets: int
    margin: float
    atol: float

    @property
    def fraction_violated(self) -> float:
        """Share of triplets that are violated."""
        return self.n_violated / self.n_triplets

    def to_dict(self) -> dict:
        """Plain-Python dictionary (JSON-serialisable)."""
        return {
            "separated": self.separated,
            "worst_slack": self.worst_slack,
            "worst_triplet": list(self.worst_triplet),
            "n_violated": self.n_violated,
            "n_triplets": self.n_triplets,
            "fraction_violated": self.fraction_violated,
            "margin": self.margin,
            "atol": self.atol,
        }


@fill_doc
def separation_report(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, atol: float = 1e-9
) -> SeparationResult:
    """Triplet-separation report: worst triplet, its slack, number violated.

    Parameters
    ----------
    {E_y}
    {margin}
    atol : float, default 1e-9
        Absolute tolerance: a triplet counts as violated only when
        ``d(a,p) + alpha - d(a,m) > atol``.

    Returns
    -------
    SeparationResult

    Raises
    ------
    {raises_triplet}

    Notes: docs/dev/kernels_design.md, ``isoapprox.losses.separation_report``.
    """
    atol = check_nonnegative(atol, "atol")
    X, codes, _, alpha, s = _prepare(E, y, margin)
    hp, hn, pi, ni, valid = mine_batch_hard(X, codes, alpha)
    slack = np.where(valid, hn - hp - alpha, np.inf)
    a = int(np.argmin(slack))
    viol = K.separation_counts(X, codes, alpha, atol * s)
    pos_counts = np.bincount(codes)[codes] - 1
    neg_counts = X.shape[0] - np.bincount(codes)[codes]
    n_trip = int(np.sum(pos_counts * neg_counts))
    worst = warn_overflow(float(slack[a]) / s, "separation_report", "the worst slack")
    n_viol = int(np.sum(viol))
    return SeparationResult(
        separated=n_viol == 0,
        worst_slack=worst,
        worst_triplet=(a, int(pi[a]), int(ni[a])),
        n_violated=n_viol,
        n_triplets=n_trip,
        margin=float(margin),
        atol=float(atol),
    )


@fill_doc
def is_triplet_separated(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, atol: float = 1e-9
) -> bool:
    """Whether ``E`` lies in ``F_TS(margin)`` up to ``atol``.

    True iff ``max_p d(a,p) + alpha <= min_m d(a,m) + atol`` for every anchor,
    i.e. iff the batch-hard and triplet losses vanish (up to ``atol``).

    Parameters
    ----------
    {E_y}
    {margin}
    atol : float, default 1e-9
        Absolute tolerance on each triplet's slack.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_triplet_separated([[0.0], [0.0], [5.0]], [0, 0, 1], margin=1.0)
    True
    """
    atol = check_nonnegative(atol, "atol")
    X, codes, _, alpha, s = _prepare(E, y, margin)
    hp, hn, _, _, valid = mine_batch_hard(X, codes, alpha)
    return bool(np.all(hp[valid] + alpha - hn[valid] <= atol * s))


@dataclass(frozen=True)
class PairLossResult:
    """Value of a pairwise loss and its worst pair.

    Attributes
    ----------
    value : float
        The reduced loss.
    worst : float
        Largest single pair term (the ``max`` reduction).
    worst_pair : tuple of int
        ``(i, j)`` attaining it.
    n_active : int
        Pairs with a strictly positive term.
    n_pairs : int
        ``N (N - 1) / 2``.
    zero_loss : bool
        True when ``worst <= atol`` (the embedding lies in the zero set).
    """

    value: float
    worst: float
    worst_pair: tuple[int, int]
    n_active: int
    n_pairs: int
    zero_loss: bool


def _pair_loss(E, y, pos_thr, neg_thr, reduction, atol, margin_for_scale) -> PairLossResult:
    reduction = check_option(reduction, "reduction", REDUCTIONS)
    atol = check_nonnegative(atol, "atol")
    X, codes, _ = points_and_codes(E, y, triplets=False)
    X, (_, pos_s, neg_s), s = unit_scale(X, margin_for_scale, pos_thr, neg_thr)
    value, worst, pair, n_pairs, n_act, _ = reduce_pairs(X, codes, pos_s, neg_s, reduction)
    worst /= s
    return PairLossResult(
        value=value / s,
        worst=worst,
        worst_pair=pair,
        n_active=n_act,
        n_pairs=n_pairs,
        zero_loss=worst <= atol,
    )


@fill_doc
def contrastive_report(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, pos_margin: float = 0.0,
    reduction: str = "mean", atol: float = 1e-9
) -> PairLossResult:
    """Pairwise contrastive loss with its worst pair and zero-loss check.

    Parameters
    ----------
    {E_y_pairs}
    {contrastive}
    {pair_reduction}
    {pair_report}
    """
    res = _contrastive(E, y, margin, pos_margin, reduction, atol)
    warn_overflow(max(res.value, res.worst), "contrastive_report", "the loss")
    return res


def _contrastive(E, y, margin, pos_margin, reduction, atol) -> PairLossResult:
    margin = check_margin(margin)
    pos_margin = check_nonnegative(pos_margin, "pos_margin")
    return _pair_loss(E, y, pos_margin, margin, reduction, atol, margin)


@fill_doc
def contrastive_loss(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, pos_margin: float = 0.0,
    reduction: str = "mean"
) -> float:
    """Pairwise contrastive loss ``[d_pos - pos_margin]_+ + [alpha - d_neg]_+``.

    The ``value`` of :func:`contrastive_report`.

    Parameters
    ----------
    {E_y_pairs}
    {contrastive}
    {pair_reduction}

    {pair_value}

    Examples
    --------
    >>> contrastive_loss([[0.0], [1.0], [1.5]], [0, 0, 1], margin=1.0, reduction="sum")
    1.5
    """
    value = _contrastive(E, y, margin, pos_margin, reduction, 1e-9).value
    return warn_overflow(value, "contrastive_loss", "the loss")


@fill_doc
def margin_loss_report(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, beta: float = 1.0,
    reduction: str = "mean", atol: float = 1e-9
) -> PairLossResult:
    """Margin loss (Wu et al. 2017) with its worst pair and zero-loss check.

    Parameters
    ----------
    {E_y_pairs}
    margin : float, default 0.0
        ``alpha >= 0``, half the width of the band around ``beta``.
    beta : float, default 1.0
        Boundary between positive and negative distances (``>= 0``).  The
        zero set is empty when ``beta < alpha`` and a positive pair exists.
    {pair_reduction}
    {pair_report}
    """
    res = _margin(E, y, margin, beta, reduction, atol)
    warn_overflow(max(res.value, res.worst), "margin_loss_report", "the loss")
    return res


def _margin(E, y, margin, beta, reduction, atol) -> PairLossResult:
    margin = check_margin(margin)
    beta = check_nonnegative(beta, "beta")
    return _pair_loss(E, y, beta - margin, beta + margin, reduction, atol, beta + margin)


@fill_doc
def margin_loss(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, beta: float = 1.0,
    reduction: str = "mean"
) -> float:
    """Margin loss ``[d_pos - beta + alpha]_+ + [beta - d_neg + alpha]_+``.

    The ``value`` of :func:`margin_loss_report`.

    Parameters
    ----------
    {E_y_pairs}
    {margin_loss}
    {pair_reduction}

    {pair_value}

    Examples
    --------
    >>> margin_loss([[0.0], [0.5], [2.0]], [0, 0, 1], margin=0.2, beta=1.0, reduction="max")
    0.0
    """
    value = _margin(E, y, margin, beta, reduction, 1e-9).value
    return warn_overflow(value, "margin_loss", "the loss")
