"""Angular branch-and-bound in the plane: certified lower bounds for ``"haus"``.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._sector``.

The only non-convex relations of the plane ``"haus"`` problem are the
negative distances ``|F_a - F_m| >= |F_a - F_p| + alpha`` (a lower bound on
a norm).  On a cone ``C`` of directions of ``v = F_a - F_m`` narrower than a
half-turn, ``|v| <= g.v`` for a ``g`` with ``g.r >= |r|`` on both boundary
rays ``r`` of ``C`` (``v`` is a non-negative combination of them), a linear
over-estimate exact on the bisector up to ``1 / cos(width / 2)``.  Every
other relation is convex and enters through tangents (``u.x <= |x|`` for
``|u| <= 1``).  So the search branches on the direction angles of the
negative pairs only (one angle per pair, against ``2 n`` coordinates per
point for boxes of the coordinates), and each node is one linear
programme, certified by :func:`._lpdual.safe_dual_bound`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernels.bnb import sector_rows
from ..kernels.simplex import least_values
from ..tolerances import BNB_RTOL
from ._frontier import Frontier, abs_rows, separation_rows
from ._lpdual import certified_lp
from ._problem import triplet_pairs

__all__ = ["KERNEL_POINTS", "SECTOR_MAX_LP", "chord_gradient", "lp_budget", "pair_table",
           "sector_search"]

#: default LP budget of one sector search (``nearest_ideal(max_lps=...)``) for
#: up to ``_BUDGET_POINTS`` points; scaled down beyond (:func:`lp_budget`)
SECTOR_MAX_LP = 4000
_BUDGET_POINTS = 5
#: a computed unit vector is shrunk by this factor so that its exact norm is
#: below 1 and ``u.x <= |x|`` holds exactly for the float64 ``u``
_SHRINK = 1.0 - 1e-15
#: tangent directions of every node: this many equally spaced ones ...
_BASE_DIRECTIONS = 8
#: ... and those towards the LP solutions of at most this many ancestors
_HINTS = 6
#: tangent rounds in one node: the LP is solved again with tangents at its
#: solution while a convex relation is relaxed by more than the pruning slack
_CUT_ROUNDS = 2
#: LP points are polished by a local solve (the caller's ``polish``) at most
#: :data:`._frontier.MAX_POLISH` times, at least this many LPs apart, while the
#: least open bound stays below the level by more than
#: :data:`._frontier.POLISH_GAP` of it
_POLISH_EVERY = 100
#: a sector narrower than this (radians) is not bisected further
_MIN_WIDTH = 1e-10
#: searches on at most this many points solve their node LPs by the simplex
#: kernel (:func:`._lpdual.certified_lp`), larger ones by HiGHS.  Measured
#: (design notes of :mod:`isoapprox.kernels.simplex`): at 5 points about a
#: quarter of the CPU an LP and as many certified within the same LP budget
#: (the toy's 300 random embeddings: 298 against 296; the 300 ``"haus"`` toys
#: of ``bench_certificates.py``: 297 against 299); at 7 and 8 points fewer
#: (``N7R2``: 17 against 19 of 20; near-collapsed ``N8R2c``: 4 against 7),
#: the kernel's optimal vertices guiding the branching less well there
KERNEL_POINTS = 5
#: sweeps of :func:`isoapprox.kernels.simplex.least_values` over the pair
#: distances of a kernel LP point (a negative pair's least value follows its
#: triplets' positive pairs, lowered in the sweep before)
_LIFT_SWEEPS = 2


def lp_budget(max_lps: int, n_points: int) -> int:
    """The LP budget of a search on ``n_points``: ``max_lps`` up to five points,
    scaled by ``(5 / N)^2`` beyond (at least 1 when ``max_lps > 0``).

    An LP's rows grow with the pairs and the triplets (measured on the 2-core
    machine, the whole search divided by its LPs, rows built and bounds
    certified, with HiGHS: about 1 ms an LP at ``N = 5``, 2 ms at ``N = 8`` and
    2.4 ms at ``N = 10`` for ``"haus"``, 1, 2.8 and 4 ms for ``"iso"``, so at
    most about 4 s for the default budget; at ``N <= KERNEL_POINTS`` the
    simplex kernel takes about a third of that), so that the budget, a
    count, and not the solver clock ends the search at the default
    ``time_limit``.
    """
    if max_lps <= 0 or n_points <= _BUDGET_POINTS:
        return max(max_lps, 0)
    return max(int(max_lps * (_BUDGET_POINTS / n_points) ** 2), 1)


def pair_table(trip: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of the triplets: ``pairs`` (P, 2) with ``i < j``, ``positive`` (P,) bool,
    and ``tid`` (K, 2): the indices of ``(a, p)`` and ``(a, m)`` in ``pairs``."""
    index: dict[tuple[int, int], int] = {}
    pos: list[bool] = []
    tid = np.zeros((trip.shape[0], 2), dtype=np.int64)
    for t, (a, p, m) in enumerate(trip.tolist()):
        for q, (i, j, is_pos) in enumerate(((a, p, True), (a, m, False))):
            key = (min(i, j), max(i, j))
            if key not in index:
                index[key] = len(index)
                pos.append(is_pos)
            tid[t, q] = index[key]
    pairs = np.array(sorted(index, key=index.__getitem__), dtype=np.int64).reshape(-1, 2)
    return pairs, np.array(pos, dtype=bool), tid


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.hypot(v[..., 0], v[..., 1])[..., None]


def _rotate(w: np.ndarray, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([c * w[0] - s * w[1], s * w[0] + c * w[1]])


def _cross(a: np.ndarray, b: np.ndarray) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def _width(lo: np.ndarray, hi: np.ndarray) -> float:
    """Counter-clockwise angle from ray ``lo`` to ray ``hi`` in ``[0, 2 pi)``."""
    a = float(np.arctan2(_cross(lo, hi), float(lo @ hi)))
    return a if a >= 0.0 else a + 2.0 * np.pi


def chord_gradient(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``g`` with ``g.v >= |v|`` for every ``v`` of the cone spanned by the rays
    ``lo`` and ``hi`` (counter-clockwise, less than a half-turn apart).

    ``v = l lo + h hi`` with ``l, h >= 0``, so ``|v| <= l |lo| + h |hi|``,
    which is at most ``g.v`` when ``g.lo >= |lo|`` and ``g.hi >= |hi|``;
    both are checked in float64 with a relative margin that covers the
    rounding of a two-term dot product (``g`` is enlarged until they hold).
    """
    failure = FloatingPointError(
        f"chord_gradient: no float64 over-estimate g with g.r >= |r| on both rays "
        f"lo={np.asarray(lo).tolist()} and hi={np.asarray(hi).tolist()} (a cone less "
        f"than a half-turn wide is needed)")
    s = _unit(lo) + _unit(hi)
    if not float(np.hypot(*s)) > 0.0:
        raise failure
    m = _unit(s)
    nlo, nhi = float(np.hypot(*lo)), float(np.hypot(*hi))
    c = min(float(m @ lo) / nlo, float(m @ hi) / nhi)
    if not c > 0.0:
        raise failure
    g = m / c * (1.0 + 1e-13)
    for _ in range(60):
        if float(g @ lo) >= nlo * (1.0 + 1e-14) and float(g @ hi) >= nhi * (1.0 + 1e-14):
            return g
        g = g * (1.0 + 1e-12)
    raise failure


@dataclass
class _Node:
    """One node: a cone (two rays) for some negative pairs, ancestors' LP points."""

    #: (Q, 2, 2): rays lo, hi of the negative pairs' cones
    rays: np.ndarray
    #: (Q,) bool: the pair has a cone (else any direction)
    has: np.ndarray
    hints: list = field(default_factory=list)
    #: (Q, 2): the cones' chord over-estimates (:func:`chord_gradient`; computed
    #: here when not given, a child computes only its new cone's)
    grads: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.grads is None:
            self.grads = np.zeros((self.has.size, 2))
            for s in np.flatnonzero(self.has):
                self.grads[s] = chord_gradient(*self.rays[s])


class _Geometry:
    """Fixed data and the LP of one search (normalised units).

    ``"haus"``: cones for the negative pairs, tangents for the points and the
    positive pairs.  ``"iso"`` (``gauge`` given: ``lo, hi`` boxes of the
    points in the gauge of :func:`._bnb.root_boxes` at level ``T``, and the
    pair ``(i0, i1)`` whose direction the gauge fixes): every pair has
    tangents and may get a cone, and ``|d_q - |E_i - E_j|| <= t``.
    """

    def __init__(self, E: np.ndarray, trip: np.ndarray, alpha: float, T: float,
                 best: np.ndarray | None, gauge=None):
        self.E = E = np.ascontiguousarray(E, dtype=np.float64)
        self.N = E.shape[0]
        self.alpha = alpha
        self.trip = trip
        self.iso = gauge is not None
        self.gauge = gauge
        if self.iso:
            I, J = np.triu_indices(self.N, 1)
            self.pairs = np.column_stack([I, J]).astype(np.int64)
            self.tid = triplet_pairs(trip, self.N)
            self.positive = np.zeros(I.size, dtype=bool)
        else:
            self.pairs, self.positive, self.tid = pair_table(trip)
        P = self.pairs.shape[0]
        self.I, self.J = (np.ascontiguousarray(self.pairs[:, 0]),
                          np.ascontiguousarray(self.pairs[:, 1]))
        self.e = E[self.I] - E[self.J]
        self.dE = np.sqrt(np.sum(self.e**2, axis=1))
        #: pairs that may get a cone (their distance is bounded below) ...
        self.qneg = np.arange(P) if self.iso else np.flatnonzero(~self.positive)
        #: ... and pairs with tangents (their distance is bounded above)
        self.qpos = np.arange(P) if self.iso else np.flatnonzero(self.positive)
        self.nF = 2 * self.N
        self.nv = self.nF + 1 + P
        self.best = best
        ang = 2.0 * np.pi * np.arange(_BASE_DIRECTIONS) / _BASE_DIRECTIONS
        base = np.column_stack([np.cos(ang), np.sin(ang)]) * _SHRINK
        rows = []
        if not self.iso:  # base tangents of the points
            rows.append(self._point_rows(np.repeat(np.arange(self.N), base.shape[0]),
                                         np.tile(base, (self.N, 1))))
        rows.append(self._pair_rows(np.repeat(self.qpos, base.shape[0]),
                                    np.tile(base, (self.qpos.size, 1))))
        dv = self.nF + 1 + np.arange(P)
        if self.iso:  # d_q - t <= dE_q and dE_q - d_q <= t
            al = BNB_RTOL * (1.0 + self.dE)
            rows.append(abs_rows(self.nv, dv, self.nF,
                                 np.concatenate([self.dE + al, -self.dE + al])))
        else:  # d_q <= dE_q + 2 t for the negative pairs
            Qn = self.qneg.size
            A = np.zeros((Qn, self.nv))
            A[np.arange(Qn), self.nF + 1 + self.qneg] = 1.0
            A[:, self.nF] = -2.0
            dn = self.dE[self.qneg]
            rows.append((A, dn + BNB_RTOL * (1.0 + dn)))
        rows.append(separation_rows(self.nv, self.nF + 1, self.tid, alpha))
        self.A0 = np.concatenate([r[0] for r in rows])
        self.b0 = np.concatenate([r[1] for r in rows])
        self.c = np.zeros(self.nv)
        self.c[self.nF] = 1.0
        self.set_level(T)

    def set_level(self, T: float) -> None:
        """Pruning level ``T``.  The LP's ``t`` runs to ``2 T`` (and the boxes of the
        points with it) so that a node whose relaxation barely misses ``T`` is
        bounded by its duals, not declared infeasible by a solver tolerance."""
        E = self.E
        self.T = T
        Tw = T + BNB_RTOL * (1.0 + T)
        self.Tw = Tw
        if self.iso:
            lo, hi = self.gauge[0](2.0 * Tw)
            flo, fhi = lo.ravel(), hi.ravel()
        else:
            sl = BNB_RTOL * (1.0 + np.abs(E) + T)
            flo, fhi = (E - 2.0 * Tw - sl).ravel(), (E + 2.0 * Tw + sl).ravel()
        self.xl = np.concatenate([flo, [0.0], np.zeros(self.pairs.shape[0])])
        self.xh = np.concatenate([fhi, [2.0 * Tw],
                                  self.dE + 4.0 * Tw + BNB_RTOL * (1.0 + self.dE + Tw)])

    def improve(self, T: float, best: np.ndarray) -> None:
        """A lower level ``T`` and its incumbent, from the caller's offer or polish."""
        if T < self.T:
            self.set_level(T)
            self.best = best

    def _point_rows(self, k: np.ndarray, U: np.ndarray):
        """``u.F_k - t <= u.E_k`` (``|u| <= 1``: ``u.(F_k - E_k) <= |F_k - E_k| <= t``)."""
        m = k.size
        A = np.zeros((m, self.nv))
        A[np.arange(m), 2 * k] = U[:, 0]
        A[np.arange(m), 2 * k + 1] = U[:, 1]
        A[:, self.nF] = -1.0
        Ek = self.E[k]
        b = np.sum(U * Ek, axis=1) + BNB_RTOL * (1.0 + np.sum(np.abs(Ek), axis=1))
        return A, b

    def _pair_rows(self, q: np.ndarray, U: np.ndarray):
        """``u.(F_i - F_j) - d_q <= 0`` for pairs ``q`` bounded above (``|u| <= 1``)."""
        m = q.size
        A = np.zeros((m, self.nv))
        r = np.arange(m)
        i, j = self.I[q], self.J[q]
        for d in range(2):
            A[r, 2 * i + d] = U[:, d]
            A[r, 2 * j + d] = -U[:, d]
        A[r, self.nF + 1 + q] = -1.0
        return A, np.zeros(m)

    def root_cones(self) -> tuple[np.ndarray, np.ndarray]:
        """Cones given at the root.  ``"haus"``: ``v = F_i - F_j`` lies within
        ``2 T`` of ``e = E_i - E_j``, so its angle within ``asin(2 T / |e|)``
        of ``e``'s (widened), when ``2 T < |e|``.  ``"iso"``: the gauge pair's
        direction is fixed (a cone of width 0)."""
        Q = self.qneg.size
        rays = np.zeros((Q, 2, 2))
        has = np.zeros(Q, dtype=bool)
        if self.iso:
            (i0, i1), s = self.gauge[1], None
            for s_, q in enumerate(self.qneg):
                if {int(self.I[q]), int(self.J[q])} == {i0, i1}:
                    s = s_
            # F_i0 = 0, F_i1 = (r, 0), r >= 0: v = F_I - F_J points along -x
            # when I = i0, along +x otherwise
            w = np.array([-1.0, 0.0]) if int(self.I[self.qneg[s]]) == i0 else np.array([1.0, 0.0])
            rays[s, 0] = w
            rays[s, 1] = w
            has[s] = True
            return rays, has
        for s, q in enumerate(self.qneg):
            d = float(self.dE[q])
            r = 2.0 * self.Tw * (1.0 + 1e-9)
            if d <= 0.0 or r >= d * 0.999:
                continue
            beta = float(np.arcsin(r / d)) * (1.0 + 1e-9) + 1e-9
            if beta >= 0.45 * np.pi:
                continue
            w = self.e[q] / d
            rays[s, 0] = _rotate(w, -beta)
            rays[s, 1] = _rotate(w, beta)
            has[s] = True
        return rays, has

    def lp(self, node: _Node, extra: list, relaxed: bool = False):
        """The node's LP: its certified bound and solution ``x`` (or None)."""
        # tangents at the incumbent in every node (with the cones split through
        # its directions the relaxation is exact there), at the ancestors' and
        # this node's earlier LP points
        pts = node.hints + extra + ([] if self.best is None else [self.best])
        Fs = np.stack(pts) if pts else np.zeros((0, self.N, 2))
        coned = np.flatnonzero(node.has)
        A, b = sector_rows(self.A0, self.b0, self.E, Fs, not self.iso, self.qpos, self.I,
                           self.J, self.qneg[coned], node.rays[coned, 0], node.rays[coned, 1],
                           node.grads[coned], _SHRINK, BNB_RTOL)
        kernel = self.N <= KERNEL_POINTS
        bound, x = certified_lp(self.c, A, b, self.xl, self.xh, tight=not relaxed,
                                kernel=kernel)
        if kernel and x is not None:
            # the kernel's optimal vertex leaves the pair distances d higher
            # than HiGHS's (0.024 on average, normalised units): lowered to the
            # least values the rows allow at the vertex's F and t (t, the
            # objective, stays), the lifts d_q - |F_i - F_j| that branch_pair
            # reads measure the relaxation's gap rather than a vertex's slack.
            # Applied to every point of a search at N <= KERNEL_POINTS, HiGHS's
            # too where certified_lp fell back: a point is only a hint, so this
            # chooses the search's path, never a bound
            x = least_values(A, b, x, self.xl, self.nF + 1, _LIFT_SWEEPS)
        return bound, x

    def violation(self, x: np.ndarray) -> float:
        """Largest excess of a convex relation at the LP solution (a point's
        distance to its datum, a distance bounded above)."""
        F = x[: self.nF].reshape(self.N, 2)
        t = x[self.nF]
        d = x[self.nF + 1:]
        v = -np.inf
        if not self.iso:
            v = float(np.max(np.sqrt(np.sum((F - self.E) ** 2, axis=1)) - t))
        if self.qpos.size:
            w = F[self.I[self.qpos]] - F[self.J[self.qpos]]
            v = max(v, float(np.max(np.sqrt(np.sum(w * w, axis=1)) - d[self.qpos])))
        return v

    def branch_pair(self, node: _Node, x: np.ndarray | None) -> int:
        """Index (into ``qneg``) of the pair to split, or -1: the one whose ``d_q``
        the LP lifts most above ``|F_i - F_j|`` (its over-estimate in use);
        without an LP point, the pair without a cone or with the widest."""
        width = np.array([_width(*node.rays[s]) if node.has[s] else 2.0 * np.pi
                          for s in range(self.qneg.size)])
        if x is None:
            s = int(np.argmax(width))
            return s if width[s] >= _MIN_WIDTH else -1
        F = x[: self.nF].reshape(self.N, 2)
        d = x[self.nF + 1:]
        q = self.qneg
        w = F[self.I[q]] - F[self.J[q]]
        err = np.where(width >= _MIN_WIDTH, d[q] - np.sqrt(np.sum(w * w, axis=1)), -np.inf)
        s = int(np.argmax(err))
        return s if err[s] > 0.0 else -1


def _split_ray(lo: np.ndarray, hi: np.ndarray, toward: list[np.ndarray]) -> np.ndarray:
    """Where to split the cone ``(lo, hi)``: the first of the directions
    ``toward`` inside it, away from its rays by a tenth of its width (the
    chord over-estimate is exact on the rays, so a split through the
    incumbent's direction makes the relaxation exact there); else the bisector."""
    width = _width(lo, hi)
    for v in toward:
        if not float(np.hypot(*v)) > 0.0:
            continue
        a = _width(lo, v)
        if 0.1 * width <= a <= 0.9 * width:
            return _unit(v)
    return _unit(_unit(lo) + _unit(hi))


def _children(node: _Node, s: int, toward: list[np.ndarray], hints: list) -> list[_Node]:
    """Split pair ``s``'s directions: a cone in two (:func:`_split_ray`); a pair
    without one in four quarter-turn cones, the first ray along ``toward[0]``."""
    out = []
    if node.has[s]:
        lo, hi = node.rays[s]
        m = _split_ray(lo, hi, toward)
        cones = [(lo, m), (m, hi)]
    else:
        w = toward[0]
        w = _unit(w) if float(np.hypot(*w)) > 0.0 else np.array([1.0, 0.0])
        r = [w, _rotate(w, np.pi / 2), _rotate(w, np.pi), _rotate(w, 3 * np.pi / 2)]
        cones = [(r[k], r[(k + 1) % 4]) for k in range(4)]
    for lo, hi in cones:
        rays = node.rays.copy()
        has = node.has.copy()
        grads = node.grads.copy()
        rays[s, 0], rays[s, 1] = lo, hi
        has[s] = True
        grads[s] = chord_gradient(lo, hi)
        out.append(_Node(rays, has, hints, grads))
    return out


def sector_search(E, trip, alpha, T, best, max_lp, offer=None, stop=None, polish=None,
                  gauge=None):
    """Best-first angular branch-and-bound for ``"haus"`` in the plane.

    Parameters
    ----------
    E : ndarray (N, 2)
        Normalised data.
    trip : ndarray (K, 3)
        The triplets ``(a, p, m)``.
    alpha : float
        Normalised margin.
    T : float
        Pruning level: the search proves that no separated ``F`` has
        ``max_k |F_k - E_k| < T``, or gives the least bound of its open nodes.
    best : ndarray (N, 2) or None
        The incumbent: cones are split through its directions, and every
        node LP has tangents at it, so that the relaxation is exact there.
    max_lp : int
        Budget: the number of LPs (tangent rounds included).
    offer : callable or None
        ``offer(F) -> (T, best)``: called with every LP solution; returns the
        level (at most the current one) and the incumbent.
    stop : callable or None
        ``stop() -> bool``, asked after every sixteenth of the budget.
    polish : callable or None
        ``polish(F) -> (T, best)``: a local solve from an LP point, offered
        to the incumbent (:data:`._frontier.MAX_POLISH` calls at most).

    Returns
    -------
    (float, int, float)
        A proven lower bound ``min(T, least key of the open nodes)`` of
        ``max_k |F_k - E_k|`` over the separated ``F``, the number of LPs
        solved and the final level ``T``.

    Notes
    -----
    Each node holds a cone (two rays, less than a half-turn apart) for some
    negative pairs.  Its LP minimises ``t`` over ``F``, ``t`` and the pair
    distances ``d_q`` subject to rows that every separated ``F`` of the node
    with ``max_k |F_k - E_k| <= T`` satisfies (with ``t`` that maximum and
    ``d_q = |F_i - F_j|``): tangents ``u.(F_k - E_k) <= t`` and
    ``u.(F_i - F_j) <= d_q`` (positive pairs) for unit ``u`` (shrunk below
    norm 1) in eight fixed directions and towards the incumbent, the
    ancestors' and the node's earlier LP points; for negative pairs
    ``d_q <= |E_i - E_j| + 2 t`` and, with a cone, its two half-planes and
    ``d_q <= g.(F_i - F_j)`` (:func:`chord_gradient`); ``d_ap - d_am <= -alpha``
    per triplet; boxes.  The children of a node partition its cone with one
    ray (a split through the incumbent's direction when it lies inside; a
    pair without a cone gets four quarter-turns starting at it), so the
    union of the children's cones is the parent's exactly: both children use
    the same float64 ray, once per side.  A root cone comes from
    ``|F_k - E_k| <= T`` when the pair is farther apart than ``2 T``.  The
    LP's bound is certified by :func:`._lpdual.safe_dual_bound` (an
    infeasible LP by the solver's dual ray, or the least violation of its
    rows), the node is pruned at ``T``, and otherwise split on the pair whose
    over-estimate the LP uses most.  Up to ``_CUT_ROUNDS`` LPs per node: the
    LP is solved again with tangents at its solution while a convex relation
    is relaxed there by more than a quarter of the node's distance to ``T``.
    """
    geo = _Geometry(E, trip, alpha, T, None if best is None else np.asarray(best, float),
                    gauge)
    rays, has = geo.root_cones()
    fr = Frontier(_Node(rays, has, []), max_lp, stop, polish_every=_POLISH_EVERY)
    while (item := fr.pop(geo.T)) is not None:
        key, node = item
        extra: list = []
        bound, x, F = key, None, None
        for _ in range(_CUT_ROUNDS):
            b, xx = geo.lp(node, extra)
            fr.n_lp += 1
            if xx is None and b == -np.inf:
                # numerical trouble at tight tolerances: once more at the defaults
                b, xx = geo.lp(node, extra, relaxed=True)
                fr.n_lp += 1
            bound = max(bound, b)
            if xx is None or bound >= geo.T:
                break
            x = xx
            F = x[: geo.nF].reshape(geo.N, 2).copy()
            if offer is not None:
                geo.improve(*offer(F))
                if bound >= geo.T:
                    break
            if geo.violation(x) <= 0.25 * (geo.T - bound):
                break
            extra.append(F)
        if polish is not None and F is not None and fr.polish_due(bound, geo.T):
            geo.improve(*polish(F))
        if bound >= geo.T:
            continue
        s = geo.branch_pair(node, x)
        if s < 0:
            fr.close(bound)
            continue
        hints = (([] if F is None else [F]) + extra[::-1] + node.hints)[:_HINTS]
        q = geo.qneg[s]
        i, j = geo.I[q], geo.J[q]
        toward = [] if geo.best is None else [geo.best[i] - geo.best[j]]
        if F is not None:
            toward.append(F[i] - F[j])
        toward.append(geo.e[q])
        for child in _children(node, s, toward, hints):
            fr.push(bound, child)
    return fr.bound(geo.T), fr.n_lp, geo.T
