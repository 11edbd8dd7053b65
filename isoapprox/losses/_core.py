"""What the loss values and the losses with gradients share: the reductions,
the power-of-two rescaling, the batch-hard mining and the pair selection.

No validation: the callers hand in finite float64 points and label codes.
"""

from __future__ import annotations

import numpy as np

from .._scaling import pow2_scale
from ..kernels import losses as K

#: reductions of the pair losses (:func:`contrastive_loss`, :func:`margin_loss`)
REDUCTIONS = ("sum", "mean", "max")
#: reductions of the triplet losses (:func:`batch_hard_loss`, :func:`triplet_loss`)
#: and of the losses with gradients: those of :data:`REDUCTIONS` and
#: ``"mean_nonzero"``, the mean over the terms that are positive (0 when none
#: is), pytorch-metric-learning's default ``AvgNonZeroReducer``
TRIPLET_REDUCTIONS = ("sum", "mean", "max", "mean_nonzero")


def unit_scale(X: np.ndarray, *lengths: float) -> tuple[np.ndarray, list[float], float]:
    """``X`` and ``lengths`` times the power of two ``s`` of :func:`~isoapprox._scaling.pow2_scale`.

    Exact (a power of two); ``s == 1`` and no copy unless the points or the
    lengths lie beyond ``2**+-100``.  A hinge loss computed on the copies is
    ``s`` times the caller's, its gradient the caller's.
    """
    s = pow2_scale(X, lengths=lengths)
    if s == 1.0:
        return X, list(lengths), 1.0
    return X * s, [v * s for v in lengths], s


def mine_batch_hard(X: np.ndarray, codes: np.ndarray, alpha: float):
    """:func:`~isoapprox.kernels.losses.batch_hard_terms` and the mask ``valid``
    of the anchors with a positive and a negative: ``(hp, hn, pi, ni, valid)``."""
    hp, hn, pi, ni = K.batch_hard_terms(X, codes, alpha)
    return hp, hn, pi, ni, (pi >= 0) & (ni >= 0)


def reduce_terms(values: np.ndarray, reduction: str) -> float:
    """Sum, mean, max or mean of the positive ones of non-negative terms.

    ``"mean_nonzero"`` divides the sum by the number of positive terms, and
    is 0 when none is (as pytorch-metric-learning's ``AvgNonZeroReducer``).
    """
    if reduction == "sum":
        return float(np.sum(values))
    if reduction == "mean":
        return float(np.sum(values) / len(values))
    if reduction == "mean_nonzero":
        k = int(np.count_nonzero(values > 0.0))
        return float(np.sum(values) / k) if k else 0.0
    return float(np.max(values))


def reduce_with_weights(terms: np.ndarray, reduction: str) -> tuple[float, np.ndarray]:
    """Value (:func:`reduce_terms`) and per-term weights ``dR/dterm``.

    ``"mean_nonzero"``: ``sum / k`` over the ``k`` positive terms, so ``1 / k``
    on each of them (``k`` is constant between kinks; a zero hinge term has no
    derivative), all weights 0 when none is positive (the value is 0).
    """
    w = np.zeros(terms.shape[0])
    if terms.shape[0] == 0:
        return 0.0, w
    if reduction == "max":
        w[int(np.argmax(terms))] = 1.0
    elif reduction == "mean_nonzero":
        positive = terms > 0.0
        k = int(np.count_nonzero(positive))
        if k:
            w[positive] = 1.0 / k
    else:
        w[:] = 1.0 if reduction == "sum" else 1.0 / terms.shape[0]
    return reduce_terms(terms, reduction), w


def reduce_pairs(X: np.ndarray, codes: np.ndarray, pos_thr: float, neg_thr: float,
                 reduction: str):
    """The pair hinge terms of :func:`~isoapprox.kernels.losses.pair_loss_kernel`, reduced.

    Returns ``(value, worst, (i, j), n_pairs, n_active, divisor)`` in the
    units of ``X``: ``worst`` is the largest term (the ``max`` reduction),
    ``(i, j)`` its pair (first pair on ties), ``divisor`` what the sum was
    divided by (``None`` for ``sum`` and ``max``).
    """
    sums, best, arg, active = K.pair_loss_kernel(X, codes, pos_thr, neg_thr)
    rows = np.flatnonzero(arg >= 0)
    i = int(rows[np.argmax(best[rows])])
    j = int(arg[i])
    worst = float(best[i])
    N = X.shape[0]
    n_pairs = N * (N - 1) // 2
    n_act = int(np.sum(active))
    divisor = None
    if reduction == "sum":
        value = float(np.sum(sums))
    elif reduction == "mean":
        divisor = n_pairs
        value = float(np.sum(sums)) / n_pairs
    elif reduction == "mean_nonzero":
        divisor = max(n_act, 1)
        value = float(np.sum(sums)) / n_act if n_act else 0.0
    else:
        value = worst
    return value, worst, (i, j), n_pairs, n_act, divisor


#: numpydoc blocks the public losses share: a docstring line holding only
#: ``{name}`` becomes the block, indented as that line (:func:`fill_doc`)
DOC_BLOCKS = {
    "E_y": """\
E : array_like of shape (N, n)
    Embeddings.
y : array_like of shape (N,)
    Class labels.""",
    "E_y_pairs": """\
E : array_like of shape (N, n)
    Embeddings.
y : array_like of shape (N,)
    Class labels (any layout; ``N >= 2``).""",
    "margin": """\
margin : float, default 0.0
    ``alpha >= 0``.""",
    "contrastive": """\
margin : float, default 0.0
    ``alpha``: negatives closer than ``alpha`` are penalised.
pos_margin : float, default 0.0
    Positives farther than ``pos_margin`` are penalised.""",
    "margin_loss": """\
margin : float, default 0.0
    ``alpha >= 0``, half the width of the band around ``beta``.
beta : float, default 1.0
    Boundary between positive and negative distances (``>= 0``).""",
    "pair_reduction": """\
reduction : {"mean", "sum", "max"}
    Over all ``N (N - 1) / 2`` pairs.""",
    "pair_report": """\
atol : float, default 1e-9
    Tolerance of the zero-loss check.

Returns
-------
PairLossResult
    ``value`` and ``worst`` are ``inf``, with a ``RuntimeWarning``, when
    they exceed the largest float64.""",
    "pair_value": """\
Returns
-------
float
    The loss; ``inf``, with a ``RuntimeWarning``, when it exceeds the
    largest float64.""",
    "pair_grad": """\
reduction : {"mean", "sum", "max", "mean_nonzero"}
    Over all ``N (N - 1) / 2`` pairs (``"mean_nonzero"``: over those
    with a positive term).

Returns
-------
LossResult
    ``value`` as the loss's value (:func:`isoapprox.losses.contrastive_loss`,
    :func:`isoapprox.losses.margin_loss`).

Raises
------
InvalidInputError
    For bad inputs or a bad option value.""",
    "raises_triplet": """\
NoTripletError
    If the labels admit no triplet.""",
    "raises_grad": """\
NoTripletError
    For a triplet loss on labels that admit no triplet.
InvalidInputError
    For bad inputs, an unknown loss or option, or a bad option value.""",
}


def fill_doc(fn):
    """Put the :data:`DOC_BLOCKS` into ``fn``'s docstring (lines holding only ``{name}``)."""
    lines = []
    for line in fn.__doc__.split("\n"):
        key = line.strip()
        if key.startswith("{") and key.endswith("}") and key[1:-1] in DOC_BLOCKS:
            indent = line[: len(line) - len(line.lstrip())]
            block = DOC_BLOCKS[key[1:-1]].split("\n")
            lines.extend(indent + b if b else b for b in block)
        else:
            lines.append(line)
    fn.__doc__ = "\n".join(lines)
    return fn
