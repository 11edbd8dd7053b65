"""Order branch-and-bound on the line: certified lower bounds for ``n = 1``.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._line``.

On the line every distance is a signed difference, ``|F_i - F_j| = F_j -
F_i`` when ``F_i <= F_j``: once the order of the points is known, the
nearest-ideal problem (``"iso"`` and ``"haus"`` alike) is a linear
programme.  The search branches on the order of one pair at a time (``F_i
<= F_j`` or ``F_i >= F_j``, which together cover every ``F``), closes the
known relations under transitivity, and bounds each node by one LP whose
relaxation is exact on the pairs of known order; a leaf (every pair's order
known) is solved exactly.  So, unlike the boxes of :mod:`._bnb`, the search
ends with the optimum, not with a gap the size of its smallest box.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial.distance import squareform

from ..tolerances import BNB_RTOL
from ._frontier import Frontier, abs_rows, separation_rows
from ._lpdual import certified_lp
from ._problem import triplet_pairs

__all__ = ["line_search"]

#: LP points are polished by a local solve (the caller's ``polish``) at most
#: :data:`._frontier.MAX_POLISH` times, at least this many LPs apart, while the
#: least open bound stays below the level by more than
#: :data:`._frontier.POLISH_GAP` of it
_POLISH_EVERY = 50
#: slack of every triplet (or pair bound) in the LP point offered again for an
#: exact node (normalised units; it changes the node's optimum by about PUSH
#: times its multipliers)
PUSH = 1e-9
#: rounds of box propagation and order inference per node (each round costs
#: ``O(N^2)``; the fixed point is usually reached in two or three)
_PROPAGATION_ROUNDS = 8


def _allow(mag):
    """The rounding allowance of a computed end of magnitude ``mag``."""
    return BNB_RTOL * (1.0 + mag)


def closure(R: np.ndarray) -> np.ndarray:
    """Transitive closure of the relation ``R[i, j]``: ``F_i <= F_j`` is known.

    Floyd-Warshall on booleans; a cycle means equal points, which the
    relations keep as ``R[i, j] and R[j, i]``.
    """
    R = R.copy()
    for k in range(R.shape[0]):
        R |= R[:, k, None] & R[None, k, :]
    return R


class _Line:
    """Fixed data, boxes and the LP of one search (normalised units).

    Variables ``x = (F_0 .. F_{N-1}, t, d_q)`` for the pairs ``q`` of the
    objective and the triplets; ``t`` is the objective (``"haus"``:
    ``max_k |F_k - E_k|``; ``"iso"``: ``max_q |d_q - D_q|``), each ``d_q``
    stands for ``|F_i - F_j|``.
    """

    def __init__(self, E: np.ndarray, trip: np.ndarray, alpha: float, T: float, iso: bool,
                 gauge: tuple[int, int] | None, pairs: tuple[float, float] | None = None,
                 codes: np.ndarray | None = None):
        self.E = np.asarray(E, dtype=float).ravel()
        N = self.N = self.E.size
        self.alpha = alpha
        self.iso = iso
        self.gauge = gauge
        I, J = np.triu_indices(N, 1)
        self.I, self.J = I.astype(np.int64), J.astype(np.int64)
        P = self.P = I.size
        K = trip.shape[0]
        self.tid = triplet_pairs(trip, N)
        self.D = np.abs(self.E[self.I] - self.E[self.J])
        #: the same as an (N, N) table, for the propagation of every node
        self.Dm = squareform(self.D)
        self.nF = N
        self.nv = N + 1 + P
        self.c = np.zeros(self.nv)
        self.c[N] = 1.0
        dv = N + 1 + np.arange(P)
        rows = []
        if iso:  # |d_q - D_q| <= t (D_q rounded: moved outward)
            al = _allow(self.D)
            rows.append(abs_rows(self.nv, dv, N, np.concatenate([self.D + al, -self.D + al])))
        else:  # |F_k - E_k| <= t
            rows.append(abs_rows(self.nv, np.arange(N), N, np.concatenate([self.E, -self.E])))
        rows.append(separation_rows(self.nv, N + 1, self.tid, alpha))  # d_ap - d_am <= -alpha
        #: the rows of the separation (their slack is what ``push`` asks)
        self.sep_rows = sum(r[0].shape[0] for r in rows[:-1]) + np.arange(K)
        if pairs is not None:  # pair family: d_pos <= u, d_neg >= l (when l > 0)
            u, l = pairs
            same = np.asarray(codes)[self.I] == np.asarray(codes)[self.J]
            qp = np.flatnonzero(same)
            qn = np.flatnonzero(~same) if l > 0.0 else np.zeros(0, dtype=np.int64)
            A = np.zeros((qp.size + qn.size, self.nv))
            A[np.arange(qp.size), dv[qp]] = 1.0
            A[qp.size + np.arange(qn.size), dv[qn]] = -1.0
            first = sum(r[0].shape[0] for r in rows)
            rows.append((A, np.concatenate([np.full(qp.size, u), np.full(qn.size, -l)])))
            # a bound u = 0 (classes merged) is met exactly or not at all: not pushed
            pushed = np.concatenate([np.full(qp.size, u > 0.0), np.ones(qn.size, dtype=bool)])
            self.sep_rows = np.concatenate([self.sep_rows,
                                            first + np.flatnonzero(pushed)])
        self.A0 = np.concatenate([r[0] for r in rows])
        self.b0 = np.concatenate([r[1] for r in rows])
        #: pairs whose distance enters a row (the others are never split on)
        self.used = np.any(self.A0[:, N + 1:] != 0.0, axis=0)
        self.set_level(T)

    def set_level(self, T: float) -> None:
        """Pruning level ``T``; the LP's ``t`` runs to ``2 T`` (and the boxes with
        it) so that a node that barely misses ``T`` is bounded by its duals."""
        self.T = T
        self.Tw = T + _allow(T)
        W = 2.0 * self.Tw
        if self.iso:
            i0, _ = self.gauge
            R0 = np.abs(self.E - self.E[i0]) + W
            R0 = R0 + _allow(R0)
            self.lo0, self.hi0 = -R0, R0.copy()
            self.lo0[i0] = self.hi0[i0] = 0.0
        else:
            sl = _allow(np.abs(self.E) + W)
            self.lo0, self.hi0 = self.E - W - sl, self.E + W + sl

    def root(self) -> np.ndarray:
        R = np.zeros((self.N, self.N), dtype=bool)
        np.fill_diagonal(R, True)
        if self.iso:  # the reflection: F_i0 <= F_i1
            i0, i1 = self.gauge
            R[i0, i1] = True
        return R

    def propagate(self, R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Boxes of the points and the order relations they imply, to a fixed point
        (at most ``_PROPAGATION_ROUNDS``); None when a box is empty (the node holds
        no ``F`` with objective ``<= 2 T``).

        ``F_i <= F_j`` gives ``hi_i <= hi_j`` and ``lo_j >= lo_i``; for ``"iso"``
        also ``F_j - F_i`` in ``[D_ij - 2 T, D_ij + 2 T]``.  Boxes that do not
        overlap give a relation: ``hi_i <= lo_j`` proves ``F_i <= F_j``.  Every
        computed end is moved outward by the rounding allowance.
        """
        R = closure(R)
        lo, hi = self.lo0.copy(), self.hi0.copy()
        W = 2.0 * self.Tw
        for _ in range(_PROPAGATION_ROUNDS):
            lo_old, hi_old, R_old = lo.copy(), hi.copy(), R.copy()
            # F_i <= F_j for all j with R[i, j]: hi_i <= min_j hi_j; lo_j >= max_i lo_i
            Hj = np.where(R, hi[None, :], np.inf)
            hi = np.minimum(hi, Hj.min(axis=1))
            Li = np.where(R, lo[:, None], -np.inf)
            lo = np.maximum(lo, Li.max(axis=0))
            if self.iso:
                gap_lo = self.Dm - W  # F_j - F_i >= D_ij - 2T when F_i <= F_j
                gap_hi = self.Dm + W
                off = R & ~np.eye(self.N, dtype=bool)
                # lo_j >= lo_i + gap_lo, hi_j <= hi_i + gap_hi, both over i with R[i, j]
                cand = lo[:, None] + gap_lo
                cand = cand - _allow(np.abs(lo[:, None]) + np.abs(gap_lo))
                lo = np.maximum(lo, np.where(off, cand, -np.inf).max(axis=0))
                cand = hi[:, None] + gap_hi
                cand = cand + _allow(np.abs(hi[:, None]) + np.abs(gap_hi))
                hi = np.minimum(hi, np.where(off, cand, np.inf).min(axis=0))
                # hi_i <= hi_j - gap_lo, lo_i >= lo_j - gap_hi, over j with R[i, j]
                cand = hi[None, :] - gap_lo
                cand = cand + _allow(np.abs(hi[None, :]) + np.abs(gap_lo))
                hi = np.minimum(hi, np.where(off, cand, np.inf).min(axis=1))
                cand = lo[None, :] - gap_hi
                cand = cand - _allow(np.abs(lo[None, :]) + np.abs(gap_hi))
                lo = np.maximum(lo, np.where(off, cand, -np.inf).max(axis=1))
            if np.any(lo > hi):
                return None
            R = closure(R | (hi[:, None] <= lo[None, :]))
            if np.array_equal(R, R_old) and np.array_equal(lo, lo_old) and np.array_equal(
                    hi, hi_old):
                break
        return R, lo, hi

    def lp(self, R: np.ndarray, lo: np.ndarray, hi: np.ndarray, push: float = 0.0):
        """The node's LP: its certified bound and the solver's point (or None).

        ``push > 0`` asks for a point only: every triplet's (or pair bound's)
        slack at least ``push`` (so that the point is separated in float64
        after the solver's tolerances; the bound is then not one of the
        node)."""
        P = self.P
        I, J = self.I, self.J
        up = R[I, J]  # F_i <= F_j
        down = R[J, I]
        known = up | down
        rows = [(self.A0, self.b0)]
        # known order: d_q = F_j - F_i (or F_i - F_j); equal points: both, so d_q = 0
        for mask, s in ((up, 1.0), (down, -1.0)):
            q = np.flatnonzero(mask)
            A = np.concatenate([self._pair_rows(q, 1.0, -s), self._pair_rows(q, -1.0, s)])
            rows.append((A, np.zeros(2 * q.size)))
        q = np.flatnonzero(~known)
        if q.size:
            # d_q >= |F_j - F_i| ...
            # ... and d_q <= the secant of |x| over x = F_j - F_i in [xl, xh]
            # (xl < 0 < xh, else propagate() had found the order)
            xl = lo[J[q]] - hi[I[q]]
            xh = hi[J[q]] - lo[I[q]]
            mag = np.abs(lo[J[q]]) + np.abs(hi[I[q]]) + np.abs(hi[J[q]]) + np.abs(lo[I[q]])
            xl = xl - _allow(mag)
            xh = xh + _allow(mag)
            slope = (xh + xl) / (xh - xl)
            icpt = -2.0 * xl * xh / (xh - xl)
            A = np.concatenate([self._pair_rows(q, -1.0, 1.0), self._pair_rows(q, -1.0, -1.0),
                                self._pair_rows(q, 1.0, -slope)])
            # the float secant is within a few ulps of the exact one on [xl, xh]
            b = np.concatenate([np.zeros(2 * q.size), icpt + _allow(4.0 * (xh - xl))])
            rows.append((A, b))
        A = np.concatenate([blk[0] for blk in rows])
        b = np.concatenate([blk[1] for blk in rows])
        if push > 0.0:
            b = b.copy()
            b[self.sep_rows] -= push
        dmax = np.maximum(hi[J] - lo[I], hi[I] - lo[J])
        dmax = np.maximum(dmax + _allow(np.abs(hi[J]) + np.abs(lo[I]) + np.abs(hi[I])
                                      + np.abs(lo[J])), 0.0)
        if self.iso:
            dmax = np.minimum(dmax, self.D + 2.0 * self.Tw + _allow(self.D + self.Tw))
        xl = np.concatenate([lo, [0.0], np.zeros(P)])
        xh = np.concatenate([hi, [2.0 * self.Tw], dmax])
        return certified_lp(self.c, A, b, xl, xh)

    def _pair_rows(self, q: np.ndarray, cd: float, cf) -> np.ndarray:
        """The left sides ``cd d_q + cf (F_j - F_i)`` of rows over the pairs ``q``."""
        A = np.zeros((q.size, self.nv))
        r = np.arange(q.size)
        A[r, self.N + 1 + q] = cd
        A[r, self.J[q]] = cf
        A[r, self.I[q]] = -cf
        return A

    def branch_pair(self, R: np.ndarray, x: np.ndarray | None, lo, hi) -> int:
        """The pair of unknown order to split (among those whose distance enters a
        row): the one whose ``d_q`` the LP lifts most above ``|F_i - F_j|``;
        without an LP point, the one whose boxes overlap most; -1 when every
        such pair's order is known or the LP point is exact on all of them."""
        I, J = self.I, self.J
        unknown = ~(R[I, J] | R[J, I]) & self.used
        if not unknown.any():
            return -1
        if x is None:
            overlap = np.minimum(hi[I], hi[J]) - np.maximum(lo[I], lo[J])
            return int(np.argmax(np.where(unknown, overlap, -np.inf)))
        F = x[: self.N]
        d = x[self.N + 1:]
        err = np.where(unknown, d - np.abs(F[I] - F[J]), -np.inf)
        q = int(np.argmax(err))
        return q if err[q] > 0.0 else -1


def line_search(E: np.ndarray, trip: np.ndarray, alpha: float, T: float, max_lp: int, *,
                objective: str, gauge: tuple[int, int] | None = None,
                pairs: tuple[float, float] | None = None, codes: np.ndarray | None = None,
                offer: Callable[[np.ndarray], float] | None = None,
                stop: Callable[[], bool] | None = None,
                polish: Callable[[np.ndarray], float] | None = None) -> tuple[float, int, float]:
    """Best-first branch-and-bound on the order of the points on the line.

    Parameters
    ----------
    E : ndarray (N,) or (N, 1)
        Normalised data on the line.
    trip : ndarray (K, 3)
        The triplets ``(a, p, m)``: ``|F_a - F_p| + alpha <= |F_a - F_m|``.
    alpha : float
        Normalised margin.
    T : float
        Pruning level: the search proves that no separated ``F`` has objective
        ``< T``, or gives the least bound of its open nodes.
    max_lp : int
        Budget: the number of node LPs.
    objective : {"iso", "haus"}
    gauge : (int, int) or None
        ``"iso"`` only (required): the points ``i0, i1`` of the gauge
        ``F_i0 = 0 <= F_i1`` (``d_iso`` and separation are invariant under the
        translations and the reflection that bring any ``F`` there).
    pairs : (float, float) or None
        The zero-loss set of a pair loss instead of (or besides) triplets:
        ``(u, l)``, every same-class distance at most ``u`` and, when ``l >
        0``, every other distance at least ``l`` (``codes`` gives the classes).
    offer : callable or None
        ``offer(F) -> T``: called with every LP point (shape (N, 1)); returns
        the level (at most the current one).
    stop : callable or None
        ``stop() -> bool``, asked after every sixteenth of the budget.
    polish : callable or None
        ``polish(F) -> T``: a local solve from an LP point, offered to the
        incumbent (:data:`._frontier.MAX_POLISH` calls at most).

    Returns
    -------
    (float, int, float)
        A proven lower bound ``min(T, least key of the open nodes)`` of the
        objective over the separated ``F``, the number of LPs solved and the
        final level ``T``.

    Notes
    -----
    A node is a set of known relations ``F_i <= F_j`` (closed under
    transitivity).  Its boxes come from the level (``"haus"``: ``|F_k - E_k|
    <= 2 T``; ``"iso"``: the gauge and ``|F_k - F_i0| <= D_k,i0 + 2 T``) and
    are propagated through the relations, which in turn grow by every pair of
    boxes that do not overlap (:meth:`_Line.propagate`); an empty box prunes.
    Its LP minimises ``t`` over ``F``, ``t`` and ``d_q`` subject to the
    objective's rows, ``d_ap - d_am <= -alpha`` per triplet, ``d_q = +-(F_j -
    F_i)`` for the pairs of known order and, for the others, ``d_q >= |F_j -
    F_i|`` (two rows) and the secant of ``|x|`` over the box of ``x = F_j -
    F_i``, which every ``F`` of the node with objective ``<= 2 T`` satisfies
    with ``d_q = |F_i - F_j|``.  The bound is certified by
    :func:`._lpdual.certified_lp`; the node is pruned at ``T`` and otherwise
    split on the pair whose secant the LP uses most, into ``F_i <= F_j`` and
    ``F_i >= F_j``.  A node whose LP point is exact on every pair of unknown
    order is solved (its point is offered; its bound stays open only if that
    point does not improve the level).
    """
    iso = objective == "iso"
    if iso and gauge is None:
        raise ValueError("line_search: objective 'iso' needs the gauge (i0, i1)")
    if pairs is not None and codes is None:
        raise ValueError("line_search: pair bounds need the class codes")
    line = _Line(E, trip, alpha, T, iso, gauge, pairs, codes)
    fr = Frontier(line.root(), max_lp, stop, polish_every=_POLISH_EVERY)

    def level(T_new: float) -> None:
        if T_new < line.T:
            line.set_level(T_new)

    while (item := fr.pop(line.T)) is not None:
        key, R = item
        prop = line.propagate(R)
        if prop is None:
            continue
        R, lo, hi = prop
        b, x = line.lp(R, lo, hi)
        fr.n_lp += 1
        bound = max(key, b)
        F = None
        if x is not None and bound < line.T:
            F = x[: line.N].reshape(-1, 1).copy()
            if offer is not None:
                level(offer(F))
        if bound >= line.T:
            continue
        if polish is not None and F is not None and fr.polish_due(bound, line.T):
            level(polish(F))
            if bound >= line.T:
                continue
        q = line.branch_pair(R, x, lo, hi)
        if q < 0:
            # the LP point is exact: a separated F of objective about ``bound``,
            # which the incumbent did not take (a triplet held with equality is
            # violated after rounding); offered again with every triplet's slack
            # pushed to PUSH, the node is closed when it lowers the level
            if offer is not None:
                _, xp = line.lp(R, lo, hi, push=PUSH)
                fr.n_lp += 1
                if xp is not None:
                    level(offer(xp[: line.N].reshape(-1, 1).copy()))
            if bound < line.T:
                fr.close(bound)
            continue
        i, j = int(line.I[q]), int(line.J[q])
        # the child that agrees with the LP point first (a tie of keys is broken
        # by the order of insertion)
        first_up = F is None or F[i, 0] <= F[j, 0]
        for up in ((True, False) if first_up else (False, True)):
            Rc = R.copy()
            if up:
                Rc[i, j] = True
            else:
                Rc[j, i] = True
            fr.push(bound, Rc)
    return fr.bound(line.T), fr.n_lp, line.T
