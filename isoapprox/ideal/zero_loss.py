"""Nearest embedding with zero pair loss (contrastive or margin), with a certified bracket.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal.zero_loss``.
"""

from __future__ import annotations

import time

import numpy as np

from .._typing import ArrayLike, RNGLike
from .._validation import (
    as_labels,
    as_points,
    check_margin,
    check_nonnegative,
    check_option,
)
from ..exceptions import InvalidInputError
from ._pairs import PAIR_LOSSES, PairSpec
from ._problem import PairBounds
from ._result import IdealResult
from .nearest import SolverOptions, run_solve

__all__ = ["PAIR_LOSSES", "nearest_zero_loss", "pair_bounds"]


def pair_bounds(loss: str, *, margin: float = 0.0, pos_margin: float = 0.0,
                beta: float = 1.0) -> tuple[float, float]:
    """The bounds ``(u, l)`` of a pair loss's zero set: ``d_pos <= u``, ``d_neg >= l``.

    Parameters
    ----------
    loss : {"contrastive", "margin"}
    margin : float, default 0.0
        ``alpha >= 0``.
    pos_margin : float, default 0.0
        ``tau >= 0`` (contrastive loss only).
    beta : float, default 1.0
        ``beta >= 0`` (margin loss only).

    Returns
    -------
    (float, float)
        ``(tau, alpha)`` for the contrastive loss, ``(beta - alpha, beta +
        alpha)`` for the margin loss (``u < 0`` means: no positive pair can
        be satisfied).

    Examples
    --------
    >>> pair_bounds("margin", margin=0.2, beta=1.0)
    (0.8, 1.2)
    """
    return _pair_bounds(check_option(loss, "loss", PAIR_LOSSES), check_margin(margin),
                        check_nonnegative(pos_margin, "pos_margin"),
                        check_nonnegative(beta, "beta"))


def _pair_bounds(loss: str, margin: float, pos_margin: float, beta: float) -> tuple[float, float]:
    """:func:`pair_bounds` without its checks, for callers that validated."""
    if loss == "contrastive":
        return pos_margin, margin
    return beta - margin, beta + margin


def nearest_zero_loss(
    E: ArrayLike,
    y: ArrayLike,
    *,
    loss: str = "contrastive",
    margin: float = 0.0,
    pos_margin: float = 0.0,
    beta: float = 1.0,
    objective: str = "iso",
    rng: RNGLike = None,
    tol: float = 1e-6,
    solver: str = "auto",
    effort: str = "default",
    n_starts: int | None = None,
    max_iter: int | None = None,
    time_limit: float | None = None,
    warn_uncertified: bool = True,
) -> IdealResult:
    """Nearest embedding in a pair loss's zero-loss set, under ``d_iso`` or ``d_haus``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (``N >= 2``).
    y : array_like of shape (N,)
        Class labels (any layout).
    loss : {"contrastive", "margin"}, default "contrastive"
        ``"contrastive"``: ``F_C = {d_pos <= pos_margin, d_neg >= margin}``;
        ``"margin"``: ``F_M = {d_pos <= beta - margin, d_neg >= beta +
        margin}``.
    margin : float, default 0.0
        ``alpha >= 0``.
    pos_margin : float, default 0.0
        ``tau >= 0``; contrastive loss only.
    beta : float, default 1.0
        ``beta >= 0``; margin loss only.
    objective : {"iso", "haus"}, default "iso"
        ``"iso"``: ``max_{i<j} |D^E_ij - D^G_ij|``; ``"haus"``:
        ``max_k ||E_k - G_k||``.
    rng, tol, solver, effort, n_starts, max_iter, time_limit, warn_uncertified
        As in :func:`isoapprox.nearest_ideal` (the pair losses have no
        sub-batch bounds: ``max_subbatches`` is 0).

    Returns
    -------
    IdealResult
        ``loss`` names the loss and ``thresholds`` holds its parameters and
        the bounds ``upper`` and ``lower``; ``slack`` is
        ``min(upper - d_pos, d_neg - lower)`` at the returned embedding
        (``>= 0`` in float64).  ``bounds`` holds ``"loss"`` (``L_max``, the
        max-reduced loss: ``d_iso >= L_max``) or ``"half_loss"``
        (``d_haus >= L_max / 2``), ``"packing"``, the SDP bounds when
        they ran and, on the line (up to 20 points), ``"branch_and_bound"``
        (the order search of :mod:`isoapprox.ideal._line`, exact).

    Raises
    ------
    InvalidInputError
        NaN/inf or mis-shaped ``E``, bad labels, a negative ``margin``,
        ``pos_margin`` or ``beta``, an unknown ``loss``, ``objective``,
        ``solver`` or ``effort``, non-positive ``tol`` or ``time_limit``; and for the
        margin loss an empty zero-loss set (``beta < margin`` while a class
        has two or more points); ``E`` and the loss's parameters whose
        largest magnitude is neither 0 nor in ``[2**-900, 2**900]``.

    Notes: docs/dev/zero_loss_design.md, ``isoapprox.ideal.zero_loss.nearest_zero_loss``.

    Examples
    --------
    >>> E = [[0.0, 0.0], [3.0, 0.0], [1.0, 0.0]]
    >>> res = nearest_zero_loss(E, [0, 0, 1], margin=2.0, pos_margin=1.0)
    >>> res.certified, round(res.value, 6), round(res.lower, 6)
    (True, 2.0, 2.0)
    """
    t_start = time.perf_counter()
    X = as_points(E, "E", min_points=2)
    codes, _ = as_labels(y, X.shape[0], "y")
    loss = check_option(loss, "loss", PAIR_LOSSES)
    alpha, tau, b = (check_margin(margin), check_nonnegative(pos_margin, "pos_margin"),
                     check_nonnegative(beta, "beta"))
    u, l = _pair_bounds(loss, alpha, tau, b)
    opts = SolverOptions.from_effort(effort, objective=objective, solver=solver, tol=tol,
                                     time_limit=time_limit, warn_uncertified=warn_uncertified,
                                     n_starts=n_starts, max_iter=max_iter, max_subbatches=0)
    counts = np.bincount(codes)
    if u < 0.0 and np.any(counts >= 2):
        raise InvalidInputError(
            f"the margin loss's zero-loss set is empty: `beta` ({b!r}) < `margin` "
            f"({alpha!r}) forces d_pos <= beta - margin < 0, and `y` has a positive pair "
            f"(a class with {int(counts.max())} points); need beta >= margin"
        )
    spec = PairSpec(loss=loss, margin=alpha, pos_margin=tau, beta=b,
                    bounds=PairBounds(float(u), float(l)))
    return run_solve(X, codes, alpha, opts, rng, t_start, "nearest_zero_loss", spec)
