"""Lower bounds of the nearest-ideal distances from sub-batches.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._subbatch``.

Notation: ``E`` (N, n), dense class codes, margin ``alpha``; ``F_TS`` the
triplet-separated set of the batch and ``F_TS(S)`` that of a sub-batch
``S`` (the points ``E[S]`` with their own labels).

**Restriction.**  Let ``G`` be in ``F_TS`` and ``S`` a set of indices.  Every
triplet ``(a, p, m)`` of ``S`` (``p != a`` in the class of ``a``, ``m`` in
another class, all three in ``S``) is a triplet of the batch, so ``G[S]``
satisfies ``d(a, p) + alpha <= d(a, m)`` for it: ``G[S]`` is in ``F_TS(S)``
(the batch-hard form over ``S`` takes its max and min over fewer points, so
it is implied as well).  The objectives restricted to ``S`` can only shrink:
``max_{i<j in S} |D^E_ij - D^G_ij| <= d_iso(E, G)`` and
``max_{k in S} |E_k - G_k| <= d_haus(E, G)``.  Taking the infimum over ``G``,

    d(E[S], F_TS(S)) <= d(E, F_TS)      (d = d_iso or d_haus),

so every proven lower bound of the sub-problem, certified or not, is a
proven lower bound of the batch (:func:`sub_batch_bound`).

**Representatives.**  A point with a positive in the batch and a point of
another class are ``>= alpha`` apart in every ``G`` of ``F_TS`` (``d(a, m)
>= d(a, p) + alpha >= alpha``).  So one point of each class with two or more
points, plus one singleton (two singletons need not be apart), are pairwise
``>= alpha`` apart in ``G``: ``P'`` points whatever representatives are
picked (:func:`representative_bound` picks them close together in ``E``).
For ``k`` of them, ``R = E[chosen]``:

- ``"iso"``: some pair of ``G[chosen]`` is at least ``D*(k, n, alpha)`` apart
  (the least diameter of ``k`` such points), while ``d_E <= diam(R)`` there:
  ``d_iso >= D*_lower(k, n, alpha) - diam(R)``, and half of it for
  ``d_haus`` (``d_iso <= 2 d_haus``, statement 1);
- ``"haus"``, radius form: with ``t = d_haus(E, G)`` and any centre ``c``,
  ``G[chosen]`` lies in the ball of radius ``rho + t`` about ``c`` with
  ``rho = max |R_i - c|``.  ``k`` points pairwise ``>= alpha`` apart in a ball
  of radius ``r`` need ``r >= r*_lower(k, n, alpha)``
  (:func:`isoapprox.packing.radius_lower_bound`: the sum of squared
  distances about the centroid, volume, half of ``D*_lower``, and the
  directions of the points from the centre and shells about it, bounded by
  spherical codes; proofs in :mod:`isoapprox.packing.bounds`), so ``t >=
  r*_lower - rho``.

Both are computed, with their rounding allowance (``PACKING_RTOL`` times
the larger of the two terms), by :func:`isoapprox.packing.separated_distance_bound`
and :func:`isoapprox.packing.separated_radius_bound`, as the whole-batch
packing bounds are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._scaling import pow2_scaled
from .._validation import class_counts
from ..geometry import compute_min_enclosing_ball
from ..kernels import ideal as K
from ..packing import (
    compute_separated_distance_bound,
    compute_separated_radius_bound,
    compute_unit_radius_lower,
)
from ._pairs import greedy_transversals

__all__ = [
    "SUB_BATCH_COUNT",
    "SUB_BATCH_OBJECTIVES",
    "SUB_BATCH_SEED",
    "SUB_BATCH_SIZE",
    "SUB_BATCH_STARTS",
    "SubBatchBound",
    "choose_sub_batches",
    "dense_codes",
    "representative_bound",
    "sub_batch_bound",
    "support_indices",
]

#: points per sub-batch (at most): sub-problems of this size are certified or
#: bounded by the exact relaxations in about a tenth of a second
SUB_BATCH_SIZE = 8
#: default number of sub-problems solved (the ``max_subbatches`` option)
SUB_BATCH_COUNT = 8
#: local solves per sub-problem (``n_starts`` of its search)
SUB_BATCH_STARTS = 2
#: seed of every sub-problem's search: the bound does not depend on the
#: caller's ``rng``
SUB_BATCH_SEED = 0
#: objectives for which sub-problems are solved.  ``"iso"`` is left out: on
#: the measured batches (benchmarks/bench_subbatch.py) no sub-problem of up to
#: 10 points ever gave more than the whole batch's half batch-hard loss and
#: 3-point bound, because its relaxations see no dimension; the
#: representatives bound serves both objectives
SUB_BATCH_OBJECTIVES = ("haus",)
#: the support of an incumbent (:func:`support_indices`): relations within this
#: fraction of the instance scale of being active
SUPPORT_RTOL = 1e-6
#: the representatives bound builds the ``N x N`` distance matrix: beyond
#: this many points it is skipped
REP_MAX_POINTS = 2048


@dataclass(frozen=True)
class SubBatchBound:
    """A proven lower bound (caller's units) and the sub-batch that gave it.

    Attributes
    ----------
    value : float
        ``0.0`` when no sub-batch gave a positive bound.
    indices : ndarray of int
        Rows of ``E`` (increasing); empty with ``value == 0.0``.
    """

    value: float
    indices: np.ndarray


_NONE = SubBatchBound(0.0, np.zeros(0, dtype=np.int64))


def _distances_to(X: np.ndarray, k: int, s: float) -> np.ndarray:
    """``|E_i - E_k|`` for every ``i``, by direct differences in a fixed order.

    Column by column with element-wise operations only, so that the result is
    the same on every machine (no reduction whose order may vary); from the
    copy ``X, s = pow2_scaled(E)`` scaled by an exact power of two, so that
    the squares stay in range.
    """
    d = X[:, 0] - X[k, 0]
    acc = d * d
    for j in range(1, X.shape[1]):
        d = X[:, j] - X[k, j]
        acc = acc + d * d
    return np.sqrt(acc) / s


# ----------------------------------------------------------------------
# sub-problems
# ----------------------------------------------------------------------


def _anchor_order(E: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
    """Anchors by decreasing batch-hard violation ``max_p d_ap + alpha - min_m d_am`` in ``E``.

    Ties keep the lower index first.
    """
    X, s = pow2_scaled(E, np.array([margin]))
    slack = K.anchor_slack(X, codes, margin * s)
    anchors = np.flatnonzero(np.isfinite(slack))
    return anchors[np.argsort(slack[anchors], kind="stable")]


def _grow(E: np.ndarray, codes: np.ndarray, a: int, size: int) -> np.ndarray:
    """The sub-batch of anchor ``a``: breadth-first over hardest partners.

    Starting from ``[a]``, every point taken (in order) brings its hardest
    positive (the farthest point of its class) and its hardest negative (the
    nearest point of another class), until ``size`` points are taken or no
    new point comes.  The first step brings ``a``'s own hardest triplet.
    """
    X, s = pow2_scaled(E)
    taken = [int(a)]
    q = 0
    while len(taken) < size and q < len(taken):
        k = taken[q]
        q += 1
        d = _distances_to(X, k, s)
        same = codes == codes[k]
        same[k] = False
        picks = []
        if same.any():
            picks.append(int(np.flatnonzero(same)[np.argmax(d[same])]))
        other = codes != codes[k]
        if other.any():
            picks.append(int(np.flatnonzero(other)[np.argmin(d[other])]))
        for p in picks:
            if p not in taken and len(taken) < size:
                taken.append(p)
    return np.sort(np.array(taken, dtype=np.int64))


def choose_sub_batches(E: np.ndarray, codes: np.ndarray, margin: float, *,
                       count: int = SUB_BATCH_COUNT,
                       size: int = SUB_BATCH_SIZE) -> list[np.ndarray]:
    """Up to ``count`` distinct sub-batches of at most ``size`` points, hardest first.

    One per anchor in the order of :func:`_anchor_order` (largest batch-hard
    violation in ``E`` first), grown by :func:`_grow`; a sub-batch equal to
    an earlier one is skipped.  Every sub-batch holds an anchor, a positive
    and a negative of it, so it admits a triplet.  Depends on ``E``, the
    codes and the margin only.

    Parameters
    ----------
    E : ndarray (N, n)
    codes : ndarray (N,)
        Dense codes admitting a triplet.
    margin : float
    count, size : int
        ``size >= 3``.

    Returns
    -------
    list of ndarray
        Increasing row indices.

    Examples
    --------
    >>> E = np.array([[0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [5.0, 0.0]])
    >>> [s.tolist() for s in choose_sub_batches(E, np.array([0, 0, 1, 1]), 0.5, size=3)]
    [[0, 2, 3], [0, 1, 2], [1, 2, 3]]
    """
    if count <= 0:
        return []
    out: dict[tuple[int, ...], np.ndarray] = {}  # the first of equal sub-batches
    for a in _anchor_order(E, codes, margin):
        if len(out) >= count:
            break
        idx = _grow(E, codes, int(a), max(size, 3))
        out.setdefault(tuple(idx.tolist()), idx)
    return list(out.values())


def dense_codes(codes: np.ndarray) -> np.ndarray:
    """Codes ``0 .. P-1`` in the order of the labels (int64)."""
    return np.unique(codes, return_inverse=True)[1].astype(np.int64).reshape(-1)


def sub_batch_bound(E: np.ndarray, codes: np.ndarray, margin: float,
                    solve_lower: Callable[[np.ndarray, np.ndarray], float], *,
                    count: int = SUB_BATCH_COUNT,
                    size: int = SUB_BATCH_SIZE) -> SubBatchBound:
    """Largest proven lower bound over the sub-problems of :func:`choose_sub_batches`.

    Parameters
    ----------
    E, codes, margin
        The batch (codes dense, admitting a triplet).
    solve_lower : callable
        ``solve_lower(E[S], codes_S) -> float``: a proven lower bound of the
        sub-problem's distance (``codes_S`` dense); by the restriction
        argument of this module it bounds the batch's distance.
    count, size : int
        Budget: number of sub-problems and their size.

    Returns
    -------
    SubBatchBound
        The largest value and its sub-batch (the first one on ties).

    Examples
    --------
    >>> E = np.array([[0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [5.0, 0.0]])
    >>> half_loss = lambda X, c: 0.0 if X.shape[0] < 4 else 1.25
    >>> sub_batch_bound(E, np.array([0, 0, 1, 1]), 0.5, half_loss, size=4).value
    1.25
    """
    best = _NONE
    for idx in choose_sub_batches(E, codes, margin, count=count, size=size):
        v = float(solve_lower(E[idx], dense_codes(codes[idx])))
        if v > best.value:
            best = SubBatchBound(v, idx)
    return best


def support_indices(E: np.ndarray, codes: np.ndarray, margin: float, objective: str,
                    G: np.ndarray, scale: float) -> np.ndarray:
    """The support of an incumbent ``G``: the points of its active relations.

    With ``t`` the objective at ``G`` and ``eps = SUPPORT_RTOL * scale``: for
    ``"haus"`` the points with ``|G_k - E_k| >= t - eps``, for ``"iso"`` both
    ends of the pairs with ``|D^G_ij - D^E_ij| >= t - eps``; and the three
    points of every triplet with ``d^G(a, m) - d^G(a, p) - margin <= eps``.

    At a local minimiser these are the relations that hold the objective up,
    so the sub-problem on the support often has the same optimum as the
    batch: its proven lower bound (a bound of the batch by restriction,
    whatever the support) then closes the gap at the cost of a sub-problem
    (:func:`isoapprox.nearest_ideal` solves it with the branch-and-bound
    when it is small; docs/dev/zero_loss_design.md, ``isoapprox.ideal._subbatch``).

    Returns
    -------
    ndarray of int
        Increasing row indices (all of them when everything is active).
    """
    N = E.shape[0]
    eps = SUPPORT_RTOL * scale
    DG = _distance_matrix(G)
    chosen = np.zeros(N, dtype=bool)
    if objective == "haus":
        moved = np.sqrt(np.sum((G - E) ** 2, axis=1))
        chosen |= moved >= moved.max() - eps
    else:
        dev = np.abs(DG - _distance_matrix(E))
        top = dev >= dev.max() - eps
        chosen |= top.any(axis=0) | top.any(axis=1)
    same = codes[:, None] == codes[None, :]
    for a in range(N):
        pos = np.flatnonzero(same[a] & (np.arange(N) != a))
        neg = np.flatnonzero(~same[a])
        if pos.size == 0 or neg.size == 0:
            continue
        tight = DG[a, neg][None, :] - DG[a, pos][:, None] - margin <= eps
        if tight.any():
            chosen[a] = True
            chosen[pos[tight.any(axis=1)]] = True
            chosen[neg[tight.any(axis=0)]] = True
    return np.flatnonzero(chosen)


# ----------------------------------------------------------------------
# representatives
# ----------------------------------------------------------------------


def _distance_matrix(E: np.ndarray) -> np.ndarray:
    """All ``|E_i - E_j|`` (direct differences, fixed order; see :func:`_distances_to`)."""
    X, s = pow2_scaled(E)
    return np.stack([_distances_to(X, k, s) for k in range(E.shape[0])])


def representative_bound(E: np.ndarray, codes: np.ndarray, margin: float,
                         objective: str) -> SubBatchBound:
    """Packing bound of close class representatives (see the module notes).

    The representatives are the greedy transversals of
    :func:`isoapprox.ideal._pairs.greedy_transversals` (each step adds the
    point of a new class that least increases the diameter, from many seeds),
    with all singleton classes as one class, so that a transversal holds one
    singleton at most.  Each transversal of ``k >= 2`` points gives
    ``D*_lower(k, n, alpha) - diam(R)`` for ``"iso"``; for ``"haus"`` the
    larger of its half and ``r*_lower(k, n, alpha) - rho`` with ``rho`` the
    radius of ``R``'s least ball (recomputed from its centre) and
    ``r*_lower`` :func:`isoapprox.packing.radius_lower_bound`.  The largest
    value is returned with its transversal.  The whole-batch packing bound of
    :mod:`isoapprox.packing` is ``D*_lower(P', n, alpha) - diam(E)``, with the
    diameter of the whole batch in place of ``diam(R)``.  Nothing is computed
    beyond ``REP_MAX_POINTS`` points (the distance matrix).

    Examples
    --------
    >>> E = np.array([[0.0, 0.0], [9.0, 0.0], [0.0, 0.001], [9.0, 0.001]])
    >>> b = representative_bound(E, np.array([0, 0, 1, 1]), 1.0, "iso")
    >>> round(b.value, 9), b.indices.tolist()
    (0.999, [0, 2])
    """
    N, n = E.shape
    if margin <= 0.0 or N > REP_MAX_POINTS:
        return _NONE
    counts = class_counts(codes)
    multi = counts >= 2
    P = int(multi.sum()) + int((~multi).any())
    if P < 2:
        return _NONE
    # one class for all singletons (two singletons need not be apart)
    pseudo = np.where(multi[codes], (np.cumsum(multi) - 1)[codes], P - 1).astype(np.int64)
    best = _NONE
    for k, (diam, S) in sorted(greedy_transversals(_distance_matrix(E), pseudo, P, 2).items()):
        v = compute_separated_distance_bound(k, n, margin, diam)
        if objective == "haus":
            v = 0.5 * v
            # the least ball is computed only where its bound could win
            if margin * compute_unit_radius_lower(k, n)[0] > max(v, best.value):
                v = max(v, compute_separated_radius_bound(k, n, margin,
                                                  compute_min_enclosing_ball(E[S]).radius))
        if v > best.value:
            best = SubBatchBound(float(v), np.sort(S))
    return best
