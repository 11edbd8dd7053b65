"""Metric-learning losses with their gradients with respect to the embeddings.

See docs/dev/train_design.md ("isoapprox.train.losses: notes").

Scales: every loss is computed on a copy of the embeddings (and of its
lengths: margins, thresholds) rescaled by the power of two of
:func:`isoapprox._scaling.pow2_scale`, as the losses of :mod:`isoapprox.losses`
are.  The hinge losses are positively homogeneous, so their values are as
accurate at every scale where they fit in float64 as at unit scale and their
gradients do not change (``L(2^k E, 2^k alpha) == 2^k L(E, alpha)`` and the
same gradient, bit for bit); the selectively contrastive loss normalises each
row with an overflow-free norm (value unchanged, gradient ``2^-k`` times); the
soft-margin batch-hard loss takes its softplus in the caller's units.  A value beyond the largest
float64 is ``inf``, with a ``RuntimeWarning`` from :func:`loss_and_grad`
and the named functions (the internal functions of :data:`LOSSES`, which
the trainer calls, stay silent: the trainer checks finiteness itself).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit

from .._scaling import pow2_scale
from .._typing import ArrayLike, FloatArray
from .._validation import (
    as_labels,
    as_points,
    check_margin,
    check_nonnegative,
    check_option,
    check_positive,
    require_triplets,
)
from ..exceptions import InvalidInputError
from ..geometry import warn_overflow
from ..kernels import distances as K
from ..kernels import losses as KL
from ..kernels import train as TK
from ..losses import TRIPLET_REDUCTIONS, reduce_terms, worst_pair
from .networks import l2_normalize, l2_normalize_backward

__all__ = [
    "LOSSES",
    "TRIPLET_LOSSES",
    "LossResult",
    "all_triplet_loss_grad",
    "batch_hard_loss_grad",
    "contrastive_loss_grad",
    "loss_and_grad",
    "margin_loss_grad",
    "selectively_contrastive_loss_grad",
    "semi_hard_loss_grad",
]

#: the reductions of the training losses: those of the core triplet losses
#: (:data:`isoapprox.losses.TRIPLET_REDUCTIONS`, ``"mean_nonzero"`` included:
#: pytorch-metric-learning's default ``AvgNonZeroReducer``), for every loss but
#: the selectively contrastive one (``"sum"`` and ``"mean"``)
REDUCTIONS = TRIPLET_REDUCTIONS


@dataclass(frozen=True, eq=False)
class LossResult:
    """A loss value, its gradient and what the mining selected.

    Attributes
    ----------
    value : float
        The reduced loss.
    grad : ndarray of shape (N, n)
        ``dL/dE`` (a subgradient at kinks, see docs/dev/train_design.md).
    n_terms : int
        Number of terms the reduction runs over (anchors, triplets, pairs).
    n_active : int
        Terms with a non-zero derivative (for hinges: strictly positive).
    selection : dict
        The mining: index arrays (``anchor``, ``positive``, ``negative`` or
        ``pair_*``) and masks (``active``, ``hard``), for diagnostics and
        for checking that a finite-difference step does not cross a kink.
    """

    value: float
    grad: FloatArray
    n_terms: int
    n_active: int
    selection: dict[str, Any] = field(default_factory=dict)

    @property
    def active_fraction(self) -> float:
        """``n_active / n_terms`` (0 when there are no terms)."""
        return self.n_active / self.n_terms if self.n_terms else 0.0


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _reduce(terms: np.ndarray, reduction: str) -> tuple[float, np.ndarray]:
    """Value (:func:`isoapprox.losses.reduce_terms`) and per-term weights ``dR/dterm``.

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


def _unit_scale(X: np.ndarray, *lengths: float) -> tuple[np.ndarray, list[float], float]:
    """``X`` and ``lengths`` times the power of two ``s`` of :func:`~isoapprox._scaling.pow2_scale`.

    Exact (a power of two); ``s == 1`` and no copy unless the points or the
    lengths lie beyond ``2**+-100``.  A hinge loss computed on the copies is
    ``s`` times the caller's, its gradient the caller's.
    """
    s = pow2_scale(X, lengths=lengths)
    if s == 1.0:
        return X, list(lengths), 1.0
    return X * s, [v * s for v in lengths], s


def _sphere(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~isoapprox.train.networks.l2_normalize` without overflow, and the row factors.

    Returns ``U``, ``r`` and ``f`` with ``dL/dX = l2_normalize_backward(dL/dU, U, r) * f``.
    Rows whose squared norm is finite are those of ``l2_normalize`` bit for
    bit (``f = 1``); a row beyond (norm above about ``1.3e154``) is
    normalised on a copy scaled by its own power of two ``f``
    (:func:`~isoapprox._scaling.pow2_scale`), ``r`` being its norm in those
    units, so that ``U`` is exact and the gradient, ``f`` times smaller, is
    too.  Such rows are never clamped (their norm exceeds ``eps``).
    """
    with np.errstate(over="ignore"):
        sq = np.einsum("ij,ij->i", X, X)
    huge = ~np.isfinite(sq)
    f = np.ones(X.shape[0])
    if not np.any(huge):
        U, r = l2_normalize(X)
        return U, r, f
    U, r = l2_normalize(np.where(huge[:, None], 0.0, X))
    rows = np.flatnonzero(huge)
    f[rows] = [pow2_scale(X[i]) for i in rows]
    Xs = X[rows] * f[rows, None]
    r[rows] = np.sqrt(np.einsum("ij,ij->i", Xs, Xs))  # as l2_normalize computes it
    U[rows] = Xs / r[rows, None]
    return U, r, f


def _unit(X: np.ndarray, i: np.ndarray, j: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``(X_i - X_j) / d`` row by row; rows with ``d == 0`` are 0 (subgradient)."""
    diff = X[i] - X[j]
    safe = np.where(d > 0.0, d, 1.0)
    return np.where((d > 0.0)[:, None], diff / safe[:, None], 0.0)


def _scatter_triplets(X, a, p, m, d_ap, d_am, coef) -> np.ndarray:
    """Gradient of ``sum_t coef_t (d(a_t,p_t) - d(a_t,m_t))``."""
    G = np.zeros_like(X)
    nz = coef != 0.0
    if not np.any(nz):
        return G
    a, p, m, c = a[nz], p[nz], m[nz], coef[nz][:, None]
    u_ap = _unit(X, a, p, d_ap[nz]) * c
    u_am = _unit(X, a, m, d_am[nz]) * c
    np.add.at(G, a, u_ap - u_am)
    np.add.at(G, p, -u_ap)
    np.add.at(G, m, u_am)
    return G


# ---------------------------------------------------------------------------
# internal implementations on validated arrays (X float64 (N, n), codes 0..P-1)
# ---------------------------------------------------------------------------


def _batch_hard(X, codes, *, margin=0.0, reduction="mean", soft=False) -> LossResult:
    X, (margin,), s = _unit_scale(X, margin)
    hp, hn, pi, ni = KL.batch_hard_terms(X, codes, margin)
    valid = (pi >= 0) & (ni >= 0)
    anchors = np.flatnonzero(valid)
    z = hp[valid] - hn[valid] + margin
    if soft:  # softplus is not homogeneous: its argument in the caller's units
        zc = z / s
        terms = np.logaddexp(0.0, zc)
        slope = expit(zc)
        value, w = _reduce(terms, reduction)
    else:
        terms = np.maximum(z, 0.0)
        slope = (z > 0.0).astype(np.float64)
        value, w = _reduce(terms, reduction)
        value /= s
    coef = w * slope
    G = _scatter_triplets(X, anchors, pi[valid], ni[valid], hp[valid], hn[valid], coef)
    return LossResult(
        value=value,
        grad=G,
        n_terms=int(anchors.size),
        n_active=int(np.sum(slope > 0.0)),
        selection={
            "anchor": anchors,
            "positive": pi[valid],
            "negative": ni[valid],
            "active": z > 0.0,
            "argmax": int(np.argmax(terms)) if terms.size else -1,
        },
    )


def _all_triplet(X, codes, *, margin=0.0, reduction="mean") -> LossResult:
    X, (margin,), s = _unit_scale(X, margin)
    sums, counts, active = KL.triplet_loss_kernel(X, codes, margin)
    n_trip = int(np.sum(counts))
    n_act = int(np.sum(active))
    if reduction == "max":
        bh = _batch_hard(X, codes, margin=margin, reduction="max")
        return LossResult(bh.value / s, bh.grad, n_trip, n_act, bh.selection)
    value = float(np.sum(sums))
    C = TK.triplet_pair_counts(X, codes, margin)
    if reduction == "mean":
        value /= float(n_trip)
        C /= float(n_trip)
    elif reduction == "mean_nonzero":  # as isoapprox.losses.triplet_loss
        value = value / n_act if n_act else 0.0
        C /= float(max(n_act, 1))
    G = TK.pair_grad_kernel(X, C + C.T)
    return LossResult(value / s, G, n_trip, n_act, {"pair_coefficients": C})


def _semi_hard(X, codes, *, margin=0.0, reduction="mean") -> LossResult:
    X, (margin,), s = _unit_scale(X, margin)
    sizes = np.bincount(codes)
    npos = sizes[codes] - 1
    offsets = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(npos, out=offsets[1:])
    a, p, m, d_ap, d_am, fb = TK.semihard_kernel(X, codes, offsets)
    keep = m >= 0
    a, p, m, d_ap, d_am, fb = (
        a[keep],
        p[keep],
        m[keep],
        d_ap[keep],
        d_am[keep],
        fb[keep],
    )
    z = d_ap - d_am + margin
    terms = np.maximum(z, 0.0)
    value, w = _reduce(terms, reduction)
    slope = (z > 0.0).astype(np.float64)
    G = _scatter_triplets(X, a, p, m, d_ap, d_am, w * slope)
    return LossResult(
        value=value / s,
        grad=G,
        n_terms=int(a.size),
        n_active=int(np.sum(slope > 0.0)),
        selection={
            "anchor": a,
            "positive": p,
            "negative": m,
            "active": z > 0.0,
            "fallback": fb,
            "argmax": int(np.argmax(terms)) if terms.size else -1,
        },
    )


def _mine_on_sphere(U: np.ndarray, codes: np.ndarray, positive: str):
    """Per anchor: the chosen positive and the hardest negative on the sphere.

    On unit vectors ``S = 1 - d^2 / 2`` is decreasing in ``d``, so the most
    similar negative is the nearest one.  The hardest negative (and the
    ``hard`` positive, the farthest) come from
    :func:`isoapprox.kernels.losses.batch_hard_terms`; the ``easy`` positive, the
    nearest, from :func:`~isoapprox.kernels.train.nearest_positive_kernel`.
    All distances are the package's direct differences, bit for bit, with
    the first index on ties, so the selection equals an argmin/argmax over
    the full distance matrix.  ``-1`` marks anchors without a positive or a
    negative.
    """
    _, _, hp_idx, hn_idx = KL.batch_hard_terms(U, codes, 0.0)
    if positive == "easy":
        return TK.nearest_positive_kernel(U, codes), hn_idx
    return hp_idx, hn_idx


def _selectively_contrastive(
    X,
    codes,
    *,
    lam=1.0,
    temperature=0.1,
    positive="easy",
    hard_threshold=None,
    reduction="mean",
) -> LossResult:
    U, r, f = _sphere(X)
    pi, ni = _mine_on_sphere(U, codes, positive)
    valid = (pi >= 0) & (ni >= 0)
    a = np.flatnonzero(valid)
    p, m = pi[valid], ni[valid]
    s_ap = np.einsum("ij,ij->i", U[a], U[p])
    s_an = np.einsum("ij,ij->i", U[a], U[m])
    hard = s_an > s_ap
    if hard_threshold is not None:
        hard |= s_an > hard_threshold
    zt = (s_an - s_ap) / temperature
    terms = np.where(hard, lam * s_an, np.logaddexp(0.0, zt))
    value, w = _reduce(terms, reduction)
    g = expit(zt) / temperature
    d_sap = np.where(hard, 0.0, -g) * w
    d_san = np.where(hard, lam, g) * w
    dU = np.zeros_like(U)
    np.add.at(dU, a, d_sap[:, None] * U[p] + d_san[:, None] * U[m])
    np.add.at(dU, p, d_sap[:, None] * U[a])
    np.add.at(dU, m, d_san[:, None] * U[a])
    G = l2_normalize_backward(dU, U, r)
    if np.any(f != 1.0):
        G *= f[:, None]
    n_active = int(np.sum((d_sap != 0.0) | (d_san != 0.0)))
    return LossResult(
        value=value,
        grad=G,
        n_terms=int(a.size),
        n_active=n_active,
        selection={
            "anchor": a,
            "positive": p,
            "negative": m,
            "hard": hard,
            "s_ap": s_ap,
            "s_an": s_an,
            "argmax": int(np.argmax(terms)) if terms.size else -1,
        },
    )


def _pair(X, codes, pos_thr, neg_thr, *, reduction="mean") -> LossResult:
    X, (pos_thr, neg_thr), s = _unit_scale(X, pos_thr, neg_thr)
    N = X.shape[0]
    sums, best, arg, active = KL.pair_loss_kernel(X, codes, pos_thr, neg_thr)
    n_pairs = N * (N - 1) // 2
    iw, jw = worst_pair(best, arg)
    D = K.pairwise_distances_kernel(X)
    same = codes[:, None] == codes[None, :]
    t = np.where(same, D - pos_thr, neg_thr - D)
    coef = np.triu(np.where(t > 0.0, np.where(same, 1.0, -1.0), 0.0), k=1)
    if reduction == "sum":
        value = float(np.sum(sums))
    elif reduction == "mean":
        value = float(np.sum(sums)) / n_pairs
        coef /= n_pairs
    elif reduction == "mean_nonzero":
        n_act = int(np.sum(active))
        value = float(np.sum(sums)) / n_act if n_act else 0.0
        coef /= max(n_act, 1)
    else:
        value = float(best[iw])
        c = coef[iw, jw]
        coef = np.zeros_like(coef)
        coef[iw, jw] = c
    G = TK.pair_grad_kernel(X, coef + coef.T)
    return LossResult(
        value / s,
        G,
        n_pairs,
        int(np.sum(active)),
        {"active": np.triu(t > 0.0, k=1), "worst_pair": (iw, jw)},
    )


def _contrastive(
    X, codes, *, margin=0.0, pos_margin=0.0, reduction="mean"
) -> LossResult:
    return _pair(X, codes, pos_margin, margin, reduction=reduction)


def _margin(X, codes, *, margin=0.0, beta=1.0, reduction="mean") -> LossResult:
    return _pair(X, codes, beta - margin, beta + margin, reduction=reduction)


def _batch_hard_soft(X, codes, *, margin=0.0, reduction="mean") -> LossResult:
    return _batch_hard(X, codes, margin=margin, reduction=reduction, soft=True)


#: name -> (internal function on validated arrays, needs triplets, options it accepts)
LOSSES: dict[str, tuple[Callable[..., LossResult], bool, tuple[str, ...]]] = {
    "batch_hard": (_batch_hard, True, ("margin", "reduction")),
    "batch_hard_soft": (_batch_hard_soft, True, ("margin", "reduction")),
    "all_triplet": (_all_triplet, True, ("margin", "reduction")),
    "semi_hard": (_semi_hard, True, ("margin", "reduction")),
    "selectively_contrastive": (
        _selectively_contrastive,
        True,
        ("lam", "temperature", "positive", "hard_threshold", "reduction"),
    ),
    "contrastive": (_contrastive, False, ("margin", "pos_margin", "reduction")),
    "margin": (_margin, False, ("margin", "beta", "reduction")),
}

#: the losses built on triplets (the others are pairwise)
TRIPLET_LOSSES = tuple(k for k, v in LOSSES.items() if v[1])


def check_loss_options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """Validate the options of loss ``name`` (unknown keys are an error)."""
    allowed = LOSSES[name][2]
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in allowed:
            raise InvalidInputError(
                f"loss {name!r} takes the options {', '.join(allowed)}; got {key!r}"
            )
        if key == "margin":
            out[key] = check_margin(value)
        elif key == "reduction":
            valid = ("sum", "mean") if name == "selectively_contrastive" else REDUCTIONS
            out[key] = check_option(value, "reduction", valid)
        elif key in ("pos_margin", "beta", "lam"):
            out[key] = check_nonnegative(value, key)
        elif key == "temperature":
            out[key] = check_positive(value, key)
        elif key == "positive":
            out[key] = check_option(value, "positive", ("easy", "hard"))
        elif key == "hard_threshold":
            out[key] = _check_cosine(value, "hard_threshold")
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
        Exact at every scale (see the module's notes); a ``value`` beyond
        the largest float64 is ``inf``, with a ``RuntimeWarning``
        ``"overflow encountered in <name>: ..."``.

    Raises
    ------
    NoTripletError
        For a triplet loss on labels that admit no triplet.
    InvalidInputError
        For bad inputs, an unknown loss or option, or a bad option value.

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
    fn, needs_triplets, _ = LOSSES[name]
    opts = check_loss_options(name, options)
    X = as_points(E, "E", min_points=2)
    codes, _ = as_labels(y, X.shape[0], "y")
    if needs_triplets:
        require_triplets(codes)
    res = fn(X, codes, **opts)
    warn_overflow(res.value, name, "the loss", stacklevel=4)
    return res


# ---------------------------------------------------------------------------
# named public wrappers
# ---------------------------------------------------------------------------


def batch_hard_loss_grad(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    reduction: str = "mean",
    soft: bool = False,
) -> LossResult:
    """Batch-hard triplet loss and its gradient.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels.
    margin : float, default 0.0
        ``alpha >= 0``.
    reduction : {"mean", "sum", "max", "mean_nonzero"}
        Over the anchors that have a positive and a negative;
        ``"mean_nonzero"`` over those whose term is positive (0 when none is).
    soft : bool, default False
        ``softplus`` instead of the hinge (soft-margin variant).

    Returns
    -------
    LossResult
        ``value`` equals :func:`isoapprox.losses.batch_hard_loss` (hinge).
    """
    return _loss_and_grad(
        "batch_hard_soft" if soft else "batch_hard", E, y,
        dict(margin=margin, reduction=reduction),
    )


def all_triplet_loss_grad(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, reduction: str = "mean"
) -> LossResult:
    """Triplet loss over every triplet and its gradient.

    ``value`` equals :func:`isoapprox.losses.triplet_loss`.  Time
    ``O(N^2 (n + log N))``, memory ``O(N^2)`` (one coefficient per pair).
    """
    return _loss_and_grad("all_triplet", E, y, dict(margin=margin, reduction=reduction))


def semi_hard_loss_grad(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, reduction: str = "mean"
) -> LossResult:
    """FaceNet semi-hard triplet loss (TensorFlow's rule) and its gradient.

    One term per ordered positive pair ``(a, p)``; see docs/dev/train_design.md for
    the choice of negative and the fallback.  ``selection["fallback"]``
    marks the pairs that used it.
    """
    return _loss_and_grad("semi_hard", E, y, dict(margin=margin, reduction=reduction))


def selectively_contrastive_loss_grad(
    E: ArrayLike,
    y: ArrayLike,
    *,
    lam: float = 1.0,
    temperature: float = 0.1,
    positive: str = "easy",
    hard_threshold: float | None = None,
    reduction: str = "mean",
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
    """
    return _loss_and_grad(
        "selectively_contrastive", E, y,
        dict(lam=lam, temperature=temperature, positive=positive,
             hard_threshold=hard_threshold, reduction=reduction),
    )


def contrastive_loss_grad(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    pos_margin: float = 0.0,
    reduction: str = "mean",
) -> LossResult:
    """Pairwise contrastive loss and its gradient (value as
    :func:`isoapprox.losses.contrastive_loss`)."""
    return _loss_and_grad(
        "contrastive", E, y,
        dict(margin=margin, pos_margin=pos_margin, reduction=reduction),
    )


def margin_loss_grad(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    beta: float = 1.0,
    reduction: str = "mean",
) -> LossResult:
    """Margin loss (Wu et al. 2017) and its gradient (value as
    :func:`isoapprox.losses.margin_loss`)."""
    return _loss_and_grad("margin", E, y, dict(margin=margin, beta=beta, reduction=reduction))
