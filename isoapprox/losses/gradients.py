"""Losses with their gradients with respect to the embeddings.

See docs/dev/train_design.md ("isoapprox.losses: the losses with gradients").

Scales: every loss is computed on a copy of the embeddings (and of its
lengths: margins, thresholds) rescaled by the power of two of
:func:`isoapprox._scaling.pow2_scale`, as the loss values are.  The hinge
losses are positively homogeneous, so their values are as accurate at every
scale where they fit in float64 as at unit scale and their gradients do not
change (``L(2^k E, 2^k alpha) == 2^k L(E, alpha)`` and the same gradient, bit
for bit); the selectively contrastive loss normalises each row with an
overflow-free norm (value unchanged, gradient ``2^-k`` times); the soft-margin
batch-hard loss takes its softplus in the caller's units.  The functions here
take validated arrays (``X`` float64 ``(N, n)``, ``codes`` ``0 .. P-1``) and
stay silent on overflow; :func:`~isoapprox.losses.loss_and_grad` validates
and warns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit

from .._scaling import pow2_scale
from .._typing import FloatArray
from ..kernels import distances as KD
from ..kernels import losses as KL
from ..kernels import train as TK
from ._core import mine_batch_hard, reduce_pairs, reduce_with_weights, unit_scale

__all__ = ["NORM_EPS", "LossResult", "l2_normalize", "l2_normalize_backward"]

#: the floor of the norms of :func:`l2_normalize` (as ``torch.nn.functional.normalize``)
NORM_EPS = 1e-12


def l2_normalize(X: np.ndarray, eps: float = NORM_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Divide each row by ``max(||row||, eps)``.

    Returns
    -------
    U : ndarray of shape (N, n)
        The normalised rows.
    r : ndarray of shape (N,)
        The divisors ``max(||row||, eps)`` (needed by the backward pass).
    """
    r = np.maximum(np.sqrt(np.einsum("ij,ij->i", X, X)), eps)
    return X / r[:, None], r


def l2_normalize_backward(
    dU: np.ndarray, U: np.ndarray, r: np.ndarray, eps: float = NORM_EPS
) -> np.ndarray:
    """Backward pass of :func:`l2_normalize`: ``dX = (dU - U <U, dU>) / r``, the
    inner product ``<U, dU>`` taken row by row.

    A row whose norm was clamped at ``eps`` went through the linear map
    ``X / eps`` and gets ``dU / eps``.
    """
    proj = dU - U * np.einsum("ij,ij->i", U, dU)[:, None]
    clamped = (r <= eps)[:, None]
    return np.where(clamped, dU, proj) / r[:, None]


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


def _sphere(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`l2_normalize` without overflow, and the row factors.

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


def _triplet_result(value: float, G: np.ndarray, n_active: int, a: np.ndarray, p: np.ndarray,
                    m: np.ndarray, terms: np.ndarray, **selection: Any) -> LossResult:
    """The :class:`LossResult` of a loss with one term per triplet ``(a, p, m)``:
    its ``selection`` holds the triplets, then ``selection``, then ``argmax``."""
    return LossResult(value, G, int(a.size), n_active, {
        "anchor": a, "positive": p, "negative": m, **selection,
        "argmax": int(np.argmax(terms)) if terms.size else -1,
    })


# ---------------------------------------------------------------------------
# the cores of :data:`~isoapprox.losses.registry.LOSSES` (``LossSpec.fn``), on
# validated arrays (X float64 (N, n), codes 0..P-1); the options are those of
# the named functions of :mod:`isoapprox.losses.registry`
# ---------------------------------------------------------------------------


def grad_batch_hard(X, codes, *, margin=0.0, reduction="mean", soft=False) -> LossResult:
    X, (margin,), s = unit_scale(X, margin)
    hp, hn, pi, ni, valid = mine_batch_hard(X, codes, margin)
    anchors = np.flatnonzero(valid)
    z = hp[valid] - hn[valid] + margin
    if soft:  # softplus is not homogeneous: its argument in the caller's units
        zc = z / s
        terms = np.logaddexp(0.0, zc)
        slope = expit(zc)
    else:
        terms = np.maximum(z, 0.0)
        slope = (z > 0.0).astype(np.float64)
    value, w = reduce_with_weights(terms, reduction)
    if not soft:
        value /= s
    coef = w * slope
    G = _scatter_triplets(X, anchors, pi[valid], ni[valid], hp[valid], hn[valid], coef)
    return _triplet_result(value, G, int(np.sum(slope > 0.0)), anchors, pi[valid], ni[valid],
                           terms, active=z > 0.0)


def grad_all_triplet(X, codes, *, margin=0.0, reduction="mean") -> LossResult:
    X, (margin,), s = unit_scale(X, margin)
    sums, counts, active = KL.triplet_loss_kernel(X, codes, margin)
    n_trip = int(np.sum(counts))
    n_act = int(np.sum(active))
    if reduction == "max":
        bh = grad_batch_hard(X, codes, margin=margin, reduction="max")
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


def grad_semi_hard(X, codes, *, margin=0.0, reduction="mean") -> LossResult:
    X, (margin,), s = unit_scale(X, margin)
    sizes = np.bincount(codes)
    npos = sizes[codes] - 1
    offsets = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(npos, out=offsets[1:])
    a, p, m, d_ap, d_am, fb = TK.semihard_kernel(X, codes, offsets)
    keep = m >= 0
    a, p, m, d_ap, d_am, fb = (v[keep] for v in (a, p, m, d_ap, d_am, fb))
    z = d_ap - d_am + margin
    terms = np.maximum(z, 0.0)
    value, w = reduce_with_weights(terms, reduction)
    slope = (z > 0.0).astype(np.float64)
    G = _scatter_triplets(X, a, p, m, d_ap, d_am, w * slope)
    return _triplet_result(value / s, G, int(np.sum(slope > 0.0)), a, p, m, terms,
                           active=z > 0.0, fallback=fb)


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


def grad_selectively_contrastive(
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
    value, w = reduce_with_weights(terms, reduction)
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
    return _triplet_result(value, G, n_active, a, p, m, terms, hard=hard, s_ap=s_ap, s_an=s_an)


def _pair(X, codes, pos_thr, neg_thr, *, reduction="mean") -> LossResult:
    X, (pos_thr, neg_thr), s = unit_scale(X, pos_thr, neg_thr)
    value, _, (iw, jw), n_pairs, n_act, divisor = reduce_pairs(
        X, codes, pos_thr, neg_thr, reduction)
    D = KD.pairwise_distances_kernel(X)
    same = codes[:, None] == codes[None, :]
    t = np.where(same, D - pos_thr, neg_thr - D)
    coef = np.triu(np.where(t > 0.0, np.where(same, 1.0, -1.0), 0.0), k=1)
    if divisor is not None:
        coef /= divisor
    elif reduction == "max":
        c = coef[iw, jw]
        coef = np.zeros_like(coef)
        coef[iw, jw] = c
    G = TK.pair_grad_kernel(X, coef + coef.T)
    return LossResult(
        value / s,
        G,
        n_pairs,
        n_act,
        {"active": np.triu(t > 0.0, k=1), "worst_pair": (iw, jw)},
    )


def grad_contrastive(X, codes, *, margin=0.0, pos_margin=0.0, reduction="mean") -> LossResult:
    return _pair(X, codes, pos_margin, margin, reduction=reduction)


def grad_margin(X, codes, *, margin=0.0, beta=1.0, reduction="mean") -> LossResult:
    return _pair(X, codes, beta - margin, beta + margin, reduction=reduction)


def grad_batch_hard_soft(X, codes, *, margin=0.0, reduction="mean") -> LossResult:
    return grad_batch_hard(X, codes, margin=margin, reduction=reduction, soft=True)


