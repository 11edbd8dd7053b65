"""The registry of the losses with gradients, and their validating entry points.

One entry of :data:`LOSSES` per loss: its core on validated arrays (in
:mod:`isoapprox.losses.gradients`), whether it is built on triplets, the
options it takes, its reductions and a line of help.  The trainer, the
``isoapprox train`` command and :func:`loss_and_grad` read it; a new loss is
one core and one entry.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

from .._typing import ArrayLike
from .._validation import check_margin, check_nonnegative, check_option, check_positive
from ..exceptions import InvalidInputError
from ..geometry import warn_overflow
from ._core import TRIPLET_REDUCTIONS, fill_doc
from .gradients import (
    LossResult,
    grad_all_triplet,
    grad_batch_hard,
    grad_batch_hard_soft,
    grad_contrastive,
    grad_margin,
    grad_selectively_contrastive,
    grad_semi_hard,
)
from .values import points_and_codes

__all__ = [
    "LOSSES",
    "TRIPLET_LOSSES",
    "LossSpec",
    "all_triplet_loss_grad",
    "batch_hard_loss_grad",
    "check_loss_options",
    "contrastive_loss_grad",
    "loss_and_grad",
    "margin_loss_grad",
    "selectively_contrastive_loss_grad",
    "semi_hard_loss_grad",
]


class LossSpec(NamedTuple):
    """One loss of :data:`LOSSES`.

    Attributes
    ----------
    fn : callable
        ``fn(X, codes, **options) -> LossResult`` on validated arrays (finite
        float64 ``X``, label codes ``0 .. P-1`` admitting a triplet where
        ``triplet``); no checks, no overflow warning.
    triplet : bool
        Built on triplets (needs a class of two and another class); the
        others are pairwise.
    options : tuple of str
        The options it accepts (:func:`check_loss_options`).
    reductions : tuple of str
        Its reductions.
    help : str
        One line for ``isoapprox train --help`` and the docs.
    """

    fn: Callable[..., LossResult]
    triplet: bool
    options: tuple[str, ...]
    reductions: tuple[str, ...]
    help: str


_TRIPLET_OPTIONS = ("margin", "reduction")

#: name -> :class:`LossSpec`, in the order of the docs and the command's help
LOSSES: dict[str, LossSpec] = {
    "batch_hard": LossSpec(
        grad_batch_hard, True, _TRIPLET_OPTIONS, TRIPLET_REDUCTIONS,
        "Hermans et al. (2017): per anchor, hardest positive against hardest negative"),
    "batch_hard_soft": LossSpec(
        grad_batch_hard_soft, True, _TRIPLET_OPTIONS, TRIPLET_REDUCTIONS,
        "batch-hard with softplus in place of the hinge (soft margin)"),
    "all_triplet": LossSpec(
        grad_all_triplet, True, _TRIPLET_OPTIONS, TRIPLET_REDUCTIONS,
        "the hinge over every triplet of the batch"),
    "semi_hard": LossSpec(
        grad_semi_hard, True, _TRIPLET_OPTIONS, TRIPLET_REDUCTIONS,
        "FaceNet semi-hard mining (TensorFlow's rule), one term per positive pair"),
    "selectively_contrastive": LossSpec(
        grad_selectively_contrastive, True,
        ("lam", "temperature", "positive", "hard_threshold", "reduction"), ("sum", "mean"),
        "Xuan et al. (2020) on L2-normalised features: hard triplets push the negative only"),
    "contrastive": LossSpec(
        grad_contrastive, False, ("margin", "pos_margin", "reduction"), TRIPLET_REDUCTIONS,
        "pairwise: positives beyond pos_margin, negatives within the margin"),
    "margin": LossSpec(
        grad_margin, False, ("margin", "beta", "reduction"), TRIPLET_REDUCTIONS,
        "Wu et al. (2017): pairs outside the band beta +- margin"),
}

#: the losses built on triplets (the others are pairwise)
TRIPLET_LOSSES = tuple(k for k, v in LOSSES.items() if v.triplet)


def check_loss_options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """Validate the options of loss ``name`` (unknown keys are an error)."""
    spec = LOSSES[name]
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in spec.options:
            raise InvalidInputError(
                f"loss {name!r} takes the options {', '.join(spec.options)}; got {key!r}"
            )
        if key == "reduction":
            out[key] = check_option(value, "reduction", spec.reductions)
        else:
            out[key] = _OPTION_CHECKS[key](value, key)
    return out


def _check_cosine(value: Any, name: str) -> float | None:
    """``None`` or a real number in ``[-1, 1]`` (a cosine similarity)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"`{name}` must be None or a real number in [-1, 1]; got {value!r}"
        )
    v = float(value)
    if not -1.0 <= v <= 1.0:
        raise InvalidInputError(f"`{name}` must lie in [-1, 1]; got {value!r}")
    return v


#: option -> its check ``check(value, name)``
_OPTION_CHECKS = {
    "margin": check_margin, "pos_margin": check_nonnegative, "beta": check_nonnegative,
    "lam": check_nonnegative, "temperature": check_positive, "hard_threshold": _check_cosine,
    "positive": lambda value, name: check_option(value, name, ("easy", "hard")),
}


@fill_doc
def loss_and_grad(name: str, E: ArrayLike, y: ArrayLike, **options: Any) -> LossResult:
    """Any loss of :data:`LOSSES` with its gradient, by name.

    Parameters
    ----------
    name : str
        One of ``batch_hard``, ``batch_hard_soft``, ``all_triplet``,
        ``semi_hard``, ``selectively_contrastive``, ``contrastive``,
        ``margin``.
    E : array_like of shape (N, n)
        Embeddings (``N >= 2``).
    y : array_like of shape (N,)
        Class labels.
    **options
        The loss's options (see docs/dev/train_design.md and the named functions).

    Returns
    -------
    LossResult
        Exact at every scale (see :mod:`isoapprox.losses.gradients`); a
        ``value`` beyond the largest float64 is ``inf``, with a
        ``RuntimeWarning`` ``"overflow encountered in <name>: ..."``.

    Raises
    ------
    {raises_grad}

    Examples
    --------
    >>> r = loss_and_grad("batch_hard", [[0.0], [1.0], [0.5], [3.0]], [0, 0, 1, 1],
    ...                   margin=0.1, reduction="max")
    >>> r.value, r.grad.ravel().tolist()  # anchor 2: d(2,3) - d(2,0) + 0.1
    (2.1, [1.0, 0.0, -2.0, 1.0])
    """
    return _loss_and_grad(name, E, y, options)


def _loss_and_grad(name: str, E: ArrayLike, y: ArrayLike, options: dict[str, Any]
                   ) -> LossResult:
    """:func:`loss_and_grad` for it and the named wrappers (whose caller a warning names)."""
    name = check_option(name, "loss", tuple(LOSSES))
    spec = LOSSES[name]
    opts = check_loss_options(name, options)
    X, codes, _ = points_and_codes(E, y, triplets=spec.triplet)
    res = spec.fn(X, codes, **opts)
    warn_overflow(res.value, name, "the loss", stacklevel=4)
    return res


# ---------------------------------------------------------------------------
# named public wrappers
# ---------------------------------------------------------------------------


@fill_doc
def batch_hard_loss_grad(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, reduction: str = "mean",
    soft: bool = False
) -> LossResult:
    """Batch-hard triplet loss and its gradient.

    Parameters
    ----------
    {E_y}
    {margin}
    reduction : {"mean", "sum", "max", "mean_nonzero"}
        Over the anchors that have a positive and a negative;
        ``"mean_nonzero"`` over those whose term is positive (0 when none is).
    soft : bool, default False
        ``softplus`` instead of the hinge (soft-margin variant).

    Returns
    -------
    LossResult
        ``value`` equals :func:`isoapprox.losses.batch_hard_loss` (hinge).

    Raises
    ------
    {raises_grad}
    """
    return _loss_and_grad(
        "batch_hard_soft" if soft else "batch_hard", E, y,
        dict(margin=margin, reduction=reduction),
    )


@fill_doc
def all_triplet_loss_grad(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, reduction: str = "mean"
) -> LossResult:
    """Triplet loss over every triplet and its gradient.

    Time ``O(N^2 (n + log N))``, memory ``O(N^2)`` (one coefficient per pair).

    Parameters
    ----------
    {E_y}
    {margin}
    reduction : {"mean", "sum", "max", "mean_nonzero"}
        As :func:`isoapprox.losses.triplet_loss`.

    Returns
    -------
    LossResult
        ``value`` equals :func:`isoapprox.losses.triplet_loss`.

    Raises
    ------
    {raises_grad}
    """
    return _loss_and_grad("all_triplet", E, y, dict(margin=margin, reduction=reduction))


@fill_doc
def semi_hard_loss_grad(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, reduction: str = "mean"
) -> LossResult:
    """FaceNet semi-hard triplet loss (TensorFlow's rule) and its gradient.

    One term per ordered positive pair ``(a, p)``; see docs/dev/train_design.md for
    the choice of negative and the fallback.

    Parameters
    ----------
    {E_y}
    {margin}
    reduction : {"mean", "sum", "max", "mean_nonzero"}
        Over the ordered positive pairs.

    Returns
    -------
    LossResult
        ``selection["fallback"]`` marks the pairs that used the fallback.

    Raises
    ------
    {raises_grad}
    """
    return _loss_and_grad("semi_hard", E, y, dict(margin=margin, reduction=reduction))


@fill_doc
def selectively_contrastive_loss_grad(
    E: ArrayLike, y: ArrayLike, *, lam: float = 1.0, temperature: float = 0.1,
    positive: str = "easy", hard_threshold: float | None = None, reduction: str = "mean"
) -> LossResult:
    """Xuan et al.'s selectively contrastive triplet loss and its gradient.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Features; normalised inside (``e / max(||e||, 1e-12)``), the gradient
        flows back through the normalisation.
    y : array_like of shape (N,)
        Class labels.
    lam : float, default 1.0
        Weight ``lambda`` of the hard-triplet term ``lambda * S_an``.
    temperature : float, default 0.1
        Temperature ``T`` of the easy-triplet NCA term.
    positive : {"easy", "hard"}
        Most similar (default, as in the authors' code) or least similar
        positive.
    hard_threshold : float or None
        Also treat ``S_an > hard_threshold`` as hard (0.8 in the authors'
        code); ``None`` follows the paper's text (only ``S_an > S_ap``).
    reduction : {"mean", "sum"}

    Returns
    -------
    LossResult
        ``selection`` holds ``s_ap``, ``s_an`` and the ``hard`` mask.

    Raises
    ------
    {raises_grad}
    """
    return _loss_and_grad(
        "selectively_contrastive", E, y,
        dict(lam=lam, temperature=temperature, positive=positive,
             hard_threshold=hard_threshold, reduction=reduction),
    )


@fill_doc
def contrastive_loss_grad(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, pos_margin: float = 0.0,
    reduction: str = "mean"
) -> LossResult:
    """Pairwise contrastive loss and its gradient.

    Parameters
    ----------
    {E_y_pairs}
    {contrastive}
    {pair_grad}
    """
    return _loss_and_grad(
        "contrastive", E, y,
        dict(margin=margin, pos_margin=pos_margin, reduction=reduction),
    )


@fill_doc
def margin_loss_grad(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, beta: float = 1.0,
    reduction: str = "mean"
) -> LossResult:
    """Margin loss (Wu et al. 2017) and its gradient.

    Parameters
    ----------
    {E_y_pairs}
    {margin_loss}
    {pair_grad}
    """
    return _loss_and_grad("margin", E, y, dict(margin=margin, beta=beta, reduction=reduction))
