"""Spatial branch-and-bound: a proven lower bound for small instances in R^1 and R^2.

On the line the search is the order search of :mod:`._line`; in the plane,
boxes of the coordinates (this module) and cones of directions
(:mod:`._sector`).

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._bnb``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..kernels import bnb as KB
from ..tolerances import BNB_RTOL, FLOOR_RTOL
from ._line import line_search
from ._problem import Problem, triplet_table
from ._sector import SECTOR_MAX_LP, lp_budget, sector_search

__all__ = [
    "BNB_MAX_DIM",
    "BNB_MAX_LP",
    "BNB_MAX_NODES",
    "BNB_MAX_POINTS",
    "BNB_MAX_POLISH",
    "BNB_MAX_REPORTS",
    "LINE_MAX_POINTS",
    "applies",
    "branch_and_bound",
    "data_allowance",
    "gauge_points",
    "root_boxes",
    "to_gauge",
]

logger = logging.getLogger(__name__)

#: the search runs for at most this many points in the plane ...
BNB_MAX_POINTS = 10
#: ... and on the line (the order search of :mod:`._line`: its node LPs have
#: ``N (N - 1) / 2 + N + 1`` columns and a row per triplet, dense; about 15 ms
#: each at 20 points, so that the LP budget, about 250 LPs there, and not the
#: solver clock ends a search; at 32 points an LP takes about 100 ms)
LINE_MAX_POINTS = 20
#: ... in at most this many dimensions (the boxes live in ``R^(N n)``: beyond
#: that the node budget is spent long before the boxes are small)
BNB_MAX_DIM = 2
#: default node budget of one call (``nearest_ideal(max_nodes=...)``): enough
#: for the toys of up to 8 points on the line (they need at most a few thousand
#: nodes), a few tenths of a second on a toy of five points in the plane
BNB_MAX_NODES = 20_000
#: default LP budget of the angular search (``nearest_ideal(max_lps=...)``,
#: ``"haus"`` in the plane, :mod:`._sector`): a deterministic count of node
#: LPs, one to two milliseconds each.  On the five-point toys in the plane that
#: the relaxations leave open (92 of 300), the search certifies all but one
#: within it (docs/dev/zero_loss_design.md, ``isoapprox.ideal._sector``)
BNB_MAX_LP = SECTOR_MAX_LP
#: separated box centres found below the pruning level are polished by at most
#: this many local solves ...
BNB_MAX_POLISH = 4
#: ... and offered at most this many times; later ones are not reported
BNB_MAX_REPORTS = 64
#: node slots allocated first (doubled on demand)
_INITIAL_SLOTS = 1024
#: the budget is spent in this many slices, the solver clock read between them
_SLICES = 16


class SearchState(Protocol):
    """What the driver needs of the caller's search (``nearest._Search``)."""

    prob: Problem
    best: np.ndarray | None
    best_value: float
    tol: float
    scale: float

    def offer(self, G: np.ndarray, solver: str, *, normalised: bool = True) -> bool: ...

    def time_left(self) -> float: ...


def applies(prob: Problem) -> bool:
    """Whether the search runs: ``N <= LINE_MAX_POINTS`` on the line (both
    families), ``N <= BNB_MAX_POINTS`` in the plane (triplet family)."""
    if prob.n == 1:
        return prob.N <= LINE_MAX_POINTS
    return prob.pairs is None and prob.n <= BNB_MAX_DIM and prob.N <= BNB_MAX_POINTS


def gauge_points(E: np.ndarray) -> tuple[int, int, int]:
    """``i0, i1``: the farthest pair (smallest indices on ties); ``i2``: the point
    farthest from the line through them (``-1`` when ``n = 1`` or ``N = 2``)."""
    N, n = E.shape
    D = np.sqrt(np.sum((E[:, None, :] - E[None, :, :]) ** 2, axis=2))
    flat = int(np.argmax(D))
    i0, i1 = divmod(flat, N)
    i0, i1 = min(i0, i1), max(i0, i1)
    if n < 2 or N < 3:
        return i0, i1, -1
    u = E[i1] - E[i0]
    nu = float(np.linalg.norm(u))
    rest = [k for k in range(N) if k not in (i0, i1)]
    if nu == 0.0:
        return i0, i1, rest[0]
    w = E[rest] - E[i0]
    h = np.abs(w[:, 0] * u[1] - w[:, 1] * u[0]) / nu
    return i0, i1, rest[int(np.argmax(h))]


def root_boxes(prob: Problem, T: float) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (``lo``, ``hi``, each (N, n)) holding every ``F`` of objective ``<= T``.

    ``"haus"``: ``F_k`` within ``T`` of ``E_k``.  ``"iso"`` (invariant
    under isometries of ``F``, which also keep ``F`` separated): the gauge
    ``F_i0 = 0``, ``F_i1 = (r, 0)`` with ``r >= 0`` and, for ``n = 2``, the
    second coordinate of ``F_i2`` non-negative (a rotation, then a
    reflection about the first axis); then ``|F_k - F_i0| <= D_i0k + T``.
    Every end is moved outward by the rounding allowance.
    """
    E = prob.E
    N, n = E.shape
    rt = BNB_RTOL
    if prob.objective == "haus":
        sl = rt * (1.0 + np.abs(E) + T)
        return E - T - sl, E + T + sl
    i0, i1, i2 = gauge_points(E)
    D0 = np.sqrt(np.sum((E - E[i0]) ** 2, axis=1))
    R = D0 + T
    R = R + rt * (1.0 + R)
    lo = np.repeat(-R[:, None], n, axis=1)
    hi = np.repeat(R[:, None], n, axis=1)
    lo[i0] = 0.0
    hi[i0] = 0.0
    lo[i1, 0] = max(D0[i1] - T - rt * (1.0 + D0[i1] + T), 0.0)
    lo[i1, 1:] = 0.0
    hi[i1, 1:] = 0.0
    if i2 >= 0:
        lo[i2, 1] = 0.0
    return lo, hi


def data_allowance(E_caller: np.ndarray, prob: Problem) -> float:
    """Normalised allowance for the rounding of ``(E - shift) / scale``.

    Each coordinate of ``prob.E`` is within ``2^-53 (|E| + |shift|) / scale``
    of the exact normalised point (``scale`` is a power of two); moving every
    point by ``delta`` changes ``d_iso`` by at most ``2 sqrt(n) delta`` and
    ``d_haus`` by at most ``sqrt(n) delta``.  ``BNB_RTOL`` (a thousand times
    more) covers both.
    """
    size = (float(np.max(np.abs(E_caller))) + float(np.max(np.abs(prob.shift)))) / prob.scale
    return BNB_RTOL * (1.0 + size)


def _target(S: SearchState) -> float:
    """Normalised pruning level: a proof below it certifies the incumbent to ``tol / 2``."""
    v = S.best_value
    return (v - 0.5 * S.tol * max(v, FLOOR_RTOL * S.scale)) / S.prob.scale


class _Tree:
    """Node arrays of :func:`isoapprox.kernels.bnb.bnb_search`, grown on demand."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray):
        N, n = lo.shape
        cap = _INITIAL_SLOTS
        self.lo = np.zeros((cap, N, n))
        self.hi = np.zeros((cap, N, n))
        self.key = np.zeros(cap)
        self.heap = np.zeros(cap, dtype=np.int64)  # heap[0] = 0: the root's slot
        self.free = np.zeros(cap, dtype=np.int64)
        self.lo[0] = lo
        self.hi[0] = hi
        self.free[: cap - 1] = np.arange(cap - 1, 0, -1)
        self.st = np.array([1, 0, cap - 1], dtype=np.int64)
        self.fst = np.array([np.inf, np.inf])

    def grow(self) -> None:
        cap = self.key.size
        new = 2 * cap
        for name in ("lo", "hi", "key", "heap"):
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros_like(a)]))
        nf = int(self.st[2])
        free = np.zeros(new, dtype=np.int64)
        free[:nf] = self.free[:nf]
        free[nf:nf + cap] = np.arange(new - 1, cap - 1, -1)
        self.free = free
        self.st[2] = nf + cap

    def bound(self, T: float) -> float:
        """``min(T, least open key, least unsplit bound)``."""
        b = min(T, float(self.fst[0]))
        if self.st[0] > 0:
            b = min(b, float(self.key[self.heap[0]]))
        return b


def branch_and_bound(S: SearchState, E_caller: np.ndarray, max_nodes: int,
                     max_lps: int = BNB_MAX_LP, *,
                     local: Callable[[np.ndarray], None]) -> float | None:
    """Raise the lower bound of an open gap by best-first spatial branch-and-bound.

    Parameters
    ----------
    S : SearchState
        The caller's search: problem, incumbent (offered new points), tolerance.
    E_caller : ndarray (N, n)
        The caller's data (for the normalisation allowance).
    max_nodes : int
        Node budget (deterministic); ``0`` switches the search off.
    max_lps : int, default ``BNB_MAX_LP``
        LP budget of the searches by linear programmes: the order search on
        the line (:mod:`._line`), which replaces the interval search there;
        the angular search (:mod:`._sector`), which replaces it for
        ``"haus"`` in the plane and follows it for ``"iso"`` in the plane
        (with half the budget); for up to five points (scaled by ``(5 /
        N)^2`` beyond: :func:`._sector.lp_budget`); ``0`` switches them off.
    local : callable
        ``local(G)``: the caller's local solve (its solver family) from a
        normalised point, offering its result to ``S``; used to polish the
        points the searches find.

    Returns
    -------
    float or None
        A proven lower bound on the objective in normalised units (multiply
        by ``S.prob.scale``), or None when the search did not run.

    Notes
    -----
    The decision "is there a separated ``F`` with objective ``< T``" is
    answered for ``T`` just below the incumbent (``tol / 2`` of it): the
    root boxes hold every such ``F`` (up to the gauge), and a best-first
    search prunes boxes by :func:`isoapprox.kernels.bnb.node_bound`.  When
    no box is left, ``T`` is a lower bound; when the budget runs out the
    least bound of the open boxes is (``min(T, ...)``), which is at least the
    largest ``T`` a bisection on the decision would prove from the same
    tree.  Box centres that turn out separated below ``T`` are offered to
    the incumbent and polished by ``local``, which lowers ``T``.

    On the line the boxes give way to the order search of
    :func:`._line.line_search`, which ends with the optimum (a leaf of its
    tree is one LP).  For ``"haus"`` in the plane the boxes give way to the cones of
    :func:`._sector.sector_search` (the interval bounds need boxes as small
    as the gap near the optimum: in the plane they certified none of the
    open five-point toys).
    """
    prob = S.prob
    if max_nodes <= 0 or S.best is None or not applies(prob):
        return None
    trip = triplet_table(prob)
    obj = KB.ISO if prob.objective == "iso" else KB.HAUS
    T = _target(S)
    if T <= 0.0:
        return None
    if prob.n == 1 or (prob.objective == "haus" and prob.n == 2):
        budget = lp_budget(max_lps, prob.N)
        if budget <= 0:
            return None
        phase = _line_phase if prob.n == 1 else _sector_phase
        return phase(S, trip, T, budget, local) - data_allowance(E_caller, prob)
    tree = _Tree(*root_boxes(prob, T))
    out = np.zeros_like(prob.E)
    polished = reported = 0
    step = max(max_nodes // _SLICES, 1)
    while True:
        limit = min(max_nodes, int(tree.st[1]) + step)
        code = KB.bnb_search(prob.E, obj, trip, prob.alpha, T, BNB_RTOL, tree.lo, tree.hi,
                             tree.key, tree.heap, tree.free, tree.st, tree.fst, limit,
                             reported < BNB_MAX_REPORTS, out)
        if code == 0:
            break
        if code == 2:
            tree.grow()
            continue
        if code == 3:
            reported += 1
            S.offer(out.copy(), "branch_and_bound")
            if polished < BNB_MAX_POLISH:
                polished += 1
                local(out.copy())
            T = min(T, _target(S))
            continue
        if tree.st[1] >= max_nodes or S.time_left() <= 0:
            break
    lower = tree.bound(T)
    logger.debug("branch_and_bound(%s): %d nodes, %d open, bound %.12g, level %.12g",
                 prob.objective, int(tree.st[1]), int(tree.st[0]), lower, T)
    if lower < T and prob.objective == "iso" and prob.n == 2 and S.time_left() > 0:
        # the cones, in the gauge of the boxes, where the intervals stop; half
        # the budget (an "iso" LP has tangents and cones for every pair and
        # takes about twice as long), so that the count ends it, not the clock
        budget = lp_budget(max_lps, prob.N) // 2
        if budget > 0:
            lower = max(lower, _sector_phase(S, trip, T, budget, local, gauged=True))
    return lower - data_allowance(E_caller, prob)


def _line_phase(S: SearchState, trip: np.ndarray, T: float, max_lps: int,
                local: Callable[[np.ndarray], None]) -> float:
    """The order search on the line (:func:`._line.line_search`) below level ``T``;
    every LP point is offered to the incumbent (repaired and re-scored there),
    a few are polished by the caller's local solve, and an improvement lowers
    the level."""
    prob = S.prob
    gauge = gauge_points(prob.E)[:2] if prob.objective == "iso" else None
    pairs = None if prob.pairs is None else (prob.pairs.upper, prob.pairs.lower)
    offer, polish = _reporters(S, local, lambda: min(T, _target(S)))
    bound, n_lp, level = line_search(prob.E, trip, prob.alpha, T, max_lps,
                                     objective=prob.objective, gauge=gauge, pairs=pairs,
                                     codes=prob.codes, offer=offer,
                                     stop=lambda: S.time_left() <= 0, polish=polish)
    logger.debug("branch_and_bound (order): %d LPs, bound %.12g, level %.12g", n_lp, bound,
                 level)
    return bound


def _reporters(S: SearchState, local: Callable[[np.ndarray], None],
               level: Callable[[], Any]) -> tuple[Callable, Callable]:
    """The ``offer`` and ``polish`` of a search by linear programmes: an LP point
    offered to the incumbent, or polished by the caller's local solve; each
    returns ``level()`` afterwards (the lowered level, with what else it needs)."""

    def offer(F: np.ndarray) -> Any:
        S.offer(F, "branch_and_bound")
        return level()

    def polish(F: np.ndarray) -> Any:
        local(F.copy())
        return level()

    return offer, polish


def to_gauge(F: np.ndarray, i0: int, i1: int, i2: int) -> np.ndarray:
    """``F`` moved by an isometry into the gauge of :func:`root_boxes` (``"iso"``):
    ``F_i0 = 0``, ``F_i1`` on the non-negative first axis, ``F_i2`` in the upper
    half-plane (``n = 2``)."""
    G = F - F[i0]
    a = float(np.arctan2(G[i1, 1], G[i1, 0]))
    c, s = np.cos(a), np.sin(a)
    G = G @ np.array([[c, -s], [s, c]])
    G[i0] = 0.0
    G[i1, 1] = 0.0
    if i2 >= 0 and G[i2, 1] < 0.0:
        G[:, 1] = -G[:, 1]
    return G


def _sector_phase(S: SearchState, trip: np.ndarray, T: float, max_lps: int,
                  local: Callable[[np.ndarray], None], gauged: bool = False) -> float:
    """The angular search (:func:`._sector.sector_search`) below level ``T``; every
    LP point is offered to the incumbent (repaired and re-scored there), a
    few are polished by the caller's local solve, and an improvement lowers
    the level.  ``gauged`` (``"iso"``): the search works in the gauge of
    :func:`root_boxes`, and the incumbent is moved into it."""
    prob = S.prob
    gauge = None
    if gauged:
        i0, i1, i2 = gauge_points(prob.E)
        gauge = (lambda level: root_boxes(prob, level), (i0, i1))

    def frame(G: np.ndarray) -> np.ndarray:
        return to_gauge(G, i0, i1, i2) if gauged else G

    offer, polish = _reporters(S, local,
                               lambda: (min(T, _target(S)), frame(prob.from_caller(S.best))))
    # "iso" reads E only through its pair distances and, as split hints, its pair
    # directions: those in the gauge frame are the ones an F near E has there
    bound, n_lp, level = sector_search(frame(prob.E), trip, prob.alpha, T,
                                       frame(prob.from_caller(S.best)), max_lps, offer,
                                       stop=lambda: S.time_left() <= 0, polish=polish,
                                       gauge=gauge)
    logger.debug("branch_and_bound (sectors): %d LPs, bound %.12g, level %.12g", n_lp, bound,
                 level)
    return bound
