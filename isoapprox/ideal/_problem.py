"""The nearest-ideal problem in normalised coordinates.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._problem``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.distance import squareform

from ..kernels import ideal as K

__all__ = ["PairBounds", "Problem", "Program", "ProgramCache", "pair_index", "triplet_pairs",
           "triplet_table", "unit_rows"]


def unit_rows(diff: np.ndarray) -> np.ndarray:
    """The rows of ``diff`` scaled to unit length; a zero row (coincident points)
    becomes ``e_0``: any unit vector keeps the inner approximations valid."""
    norm = np.sqrt(np.sum(diff * diff, axis=1))
    U = np.zeros_like(diff)
    ok = norm > 0
    U[ok] = diff[ok] / norm[ok, None]
    U[~ok, 0] = 1.0
    return U


def pair_index(N: int) -> np.ndarray:
    """The (N, N) table of pair indices: the pair ``{i, j}`` is row ``pid[i, j]``
    of ``np.triu_indices(N, 1)`` (symmetric; the diagonal is 0, so ``i != j`` is the
    caller's to ensure, as is ``N >= 2``)."""
    return squareform(np.arange(N * (N - 1) // 2, dtype=np.int64))


def triplet_pairs(trip: np.ndarray, N: int) -> np.ndarray:
    """The pair indices (:func:`pair_index`) of ``(a, p)`` and ``(a, m)`` for each
    triplet ``(a, p, m)`` of ``trip``, shape (K, 2)."""
    pid = pair_index(N)
    return np.column_stack([pid[trip[:, 0], trip[:, 1]], pid[trip[:, 0], trip[:, 2]]])


def triplet_table(prob: Problem) -> np.ndarray:
    """Every triplet ``(a, p, m)`` of the problem, shape (K, 3), int64."""
    rows = []
    for a in prob.anchors:
        same = prob.codes == prob.codes[a]
        for p in np.flatnonzero(same):
            if p == a:
                continue
            for m in np.flatnonzero(~same):
                rows.append((int(a), int(p), int(m)))
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def _pow2_near(x: float) -> float:
    """The power of two ``2**e`` with ``x <= 2**e < 2 x``; 1 for 0 or non-finite ``x``.

    Capped at ``2**1023`` (the largest finite one), so it never overflows:
    for ``x >= 2**1023`` it returns ``2**1023 <= x``.  (The nearest-ideal
    entry points accept magnitudes up to ``2**900`` only; the cap keeps this
    helper total.)
    """
    if x <= 0.0 or not math.isfinite(x):
        return 1.0
    _, e = math.frexp(x)
    return math.ldexp(1.0, min(e, 1023))


@dataclass(frozen=True)
class PairBounds:
    """Fixed per-pair bounds of a pair-loss zero set.

    Attributes
    ----------
    upper : float
        ``u >= 0``: same-class (positive) pairs need ``d <= u``.
    lower : float
        ``l >= 0``: different-class (negative) pairs need ``d >= l``
        (void when ``l = 0``).
    """

    upper: float
    lower: float

    def scaled(self, factor: float) -> PairBounds:
        """Both bounds divided by ``factor``."""
        return PairBounds(self.upper / factor, self.lower / factor)


@dataclass
class Problem:
    """One instance, normalised; the row tables of the epigraph programs.

    Attributes
    ----------
    E : ndarray (N, n)
        ``(E_caller - shift) / scale``.
    codes : ndarray (N,)
        Dense class codes.
    alpha : float
        Margin divided by ``scale``.
    objective : {"iso", "haus"}
    scale : float
        A power of two, about ``max(diam, alpha)`` of the caller's data.
    shift : ndarray (n,)
        The caller's centroid.
    pairs : PairBounds or None
        ``None`` for the triplet family; the pair bounds (divided by
        ``scale``) for the pair family.
    """

    E: np.ndarray
    codes: np.ndarray
    alpha: float
    objective: str
    scale: float
    shift: np.ndarray
    pairs: PairBounds | None = None
    anchors: np.ndarray = field(init=False)
    I: np.ndarray = field(init=False)
    J: np.ndarray = field(init=False)
    D: np.ndarray = field(init=False)
    pos: np.ndarray = field(init=False)
    neg: np.ndarray = field(init=False)

    @classmethod
    def build(cls, E: np.ndarray, codes: np.ndarray, alpha: float, objective: str,
              diam: float, pairs: PairBounds | None = None) -> Problem:
        shift = E.mean(axis=0)
        if pairs is None:
            scale = _pow2_near(max(diam, alpha))
            return cls((E - shift) / scale, codes, alpha / scale, objective, scale, shift)
        scale = _pow2_near(max(diam, pairs.lower))
        return cls((E - shift) / scale, codes, 0.0, objective, scale, shift,
                   pairs.scaled(scale))

    def __post_init__(self) -> None:
        N = self.E.shape[0]
        codes = self.codes
        counts = np.bincount(codes)
        valid = (counts[codes] >= 2) & (counts.size >= 2)
        if self.pairs is not None:  # no anchors: the rows are per pair
            valid[:] = False
        self.anchors = np.flatnonzero(valid).astype(np.int64)
        I, J = np.triu_indices(N, 1)
        self.I = I.astype(np.int64)
        self.J = J.astype(np.int64)
        diff = self.E[self.I] - self.E[self.J]
        self.D = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        pos, neg = [], []
        for k, a in enumerate(self.anchors):
            same = codes == codes[a]
            p = np.flatnonzero(same)
            p = p[p != a]
            m = np.flatnonzero(~same)
            pos.append(np.column_stack([np.full(p.size, a), p, np.full(p.size, k)]))
            neg.append(np.column_stack([np.full(m.size, a), m, np.full(m.size, k)]))
        self.pos = np.concatenate(pos).astype(np.int64) if pos else np.zeros((0, 3), np.int64)
        self.neg = np.concatenate(neg).astype(np.int64) if neg else np.zeros((0, 3), np.int64)

    # ------------------------------------------------------------------
    @property
    def N(self) -> int:
        return self.E.shape[0]

    @property
    def n(self) -> int:
        return self.E.shape[1]

    @property
    def n_anchors(self) -> int:
        return int(self.anchors.size)

    @property
    def sep(self) -> float:
        """Least distance between class centres that makes a class-collapsed layout feasible."""
        return self.alpha if self.pairs is None else self.pairs.lower

    @property
    def forced(self) -> tuple[int, ...]:
        """Classes merged in every program (pair family with ``u = 0``)."""
        if self.pairs is None or self.pairs.upper > 0.0:
            return ()
        counts = np.bincount(self.codes)
        return tuple(int(c) for c in np.flatnonzero(counts >= 2))

    def to_caller(self, G: np.ndarray) -> np.ndarray:
        return G * self.scale + self.shift

    def from_caller(self, G: np.ndarray) -> np.ndarray:
        return (G - self.shift) / self.scale

    # ------------------------------------------------------------------
    def value(self, G: np.ndarray) -> float:
        """Objective at ``G`` (normalised units), float64 by the core kernels."""
        if self.objective == "iso":
            return float(K.iso_value(self.E, G))
        return float(K.haus_value(self.E, G))

    def slack(self, G: np.ndarray) -> float:
        """Worst constraint slack at ``G`` (normalised units).

        Triplet family: ``min_a (min_m d_am - max_p d_ap - alpha)``; pair
        family: ``min(u - d_pos, d_neg - l)`` (negatives only when ``l > 0``).
        """
        if self.pairs is not None:
            sp, sn = K.pair_slack(G, self.codes, self.pairs.upper, self.pairs.lower)
            return float(sp if self.pairs.lower <= 0.0 else min(sp, sn))
        return float(np.min(K.anchor_slack(G, self.codes, self.alpha)))

    def program(self, collapsed: tuple[int, ...] = ()) -> Program:
        """The epigraph program with the classes in ``collapsed`` merged to one point."""
        merged = set(int(c) for c in collapsed) | set(self.forced)
        return Program.build(self, tuple(sorted(merged)))


@dataclass
class Program:
    """Rows of one epigraph program (see :mod:`isoapprox.kernels.ideal`).

    With classes collapsed, every point of such a class maps to one shared
    row of ``G`` (``pmap``); pairs inside a collapsed class have distance 0,
    a constant error ``D_ij`` for ``"iso"`` that becomes the lower bound
    ``t_min`` of the epigraph variable.  Anchors of a collapsed class share
    one radius variable with no positive rows (its optimum is 0).
    """

    prob: Problem
    collapsed: tuple[int, ...]
    pmap: np.ndarray
    M: int
    kind: np.ndarray
    ri: np.ndarray
    rj: np.ndarray
    rk: np.ndarray
    rv: np.ndarray
    n_r: int
    t_min: float

    @classmethod
    def build(cls, prob: Problem, collapsed: tuple[int, ...]) -> Program:
        N = prob.N
        codes = prob.codes
        is_col = np.zeros(int(codes.max()) + 1, dtype=bool)
        is_col[list(collapsed)] = True
        # a row of G per point, one per collapsed class, numbered in order of appearance
        pmap = np.empty(N, dtype=np.int64)
        class_row: dict[int, int] = {}  # the row of each collapsed class
        M = 0
        for k, c in enumerate(codes.tolist()):
            if is_col[c] and c in class_row:
                pmap[k] = class_row[c]
                continue
            if is_col[c]:
                class_row[c] = M
            pmap[k] = M
            M += 1
        kinds, ris, rjs, rks, rvs = [], [], [], [], []
        t_min = 0.0
        if prob.objective == "iso":
            pi, pj = pmap[prob.I], pmap[prob.J]
            same = pi == pj
            if same.any():
                t_min = float(prob.D[same].max())
            keep = ~same
            a = np.minimum(pi[keep], pj[keep])
            b = np.maximum(pi[keep], pj[keep])
            Dk = prob.D[keep]
            # rows sharing a pair of G-rows: only the smallest target binds
            # the upper side and only the largest binds the lower side
            key = a * M + b
            order = np.lexsort((Dk, key))
            key_s, D_s = key[order], Dk[order]
            first = np.r_[True, key_s[1:] != key_s[:-1]]
            last = np.r_[key_s[1:] != key_s[:-1], True]
            ua, ub, uD = a[order][first], b[order][first], D_s[first]
            la, lb, lD = a[order][last], b[order][last], D_s[last]
            kinds += [np.zeros(ua.size, np.int64), np.ones(la.size, np.int64)]
            ris += [ua, la]
            rjs += [ub, lb]
            rks += [np.zeros(ua.size + la.size, np.int64)]
            rvs += [uD, lD]
        else:
            kinds.append(np.full(N, 2, np.int64))
            ris.append(pmap.copy())
            rjs.append(np.arange(N, dtype=np.int64))
            rks.append(np.zeros(N, np.int64))
            rvs.append(np.zeros(N))
        if prob.pairs is not None:
            return cls._with_pair_rows(prob, collapsed, pmap, M, kinds, ris, rjs, rks, rvs,
                                       t_min)
        # anchors: one radius per anchor of a free class, one per collapsed class
        rvar: dict = {}
        pos_rows, neg_rows = set(), set()
        for a in prob.anchors:
            c = int(codes[a])
            key = ("c", c) if is_col[c] else ("a", int(a))
            if is_col[c] and prob.alpha <= 0.0:
                continue
            k = rvar.setdefault(key, len(rvar))
            same = codes == c
            if not is_col[c]:
                for p in np.flatnonzero(same):
                    if p != a:
                        pos_rows.add((int(pmap[a]), int(pmap[p]), k))
            for m in np.flatnonzero(~same):
                neg_rows.add((int(pmap[a]), int(pmap[m]), k))
        pos = np.array(sorted(pos_rows), dtype=np.int64).reshape(-1, 3)
        neg = np.array(sorted(neg_rows), dtype=np.int64).reshape(-1, 3)
        kinds += [np.full(len(pos), 3, np.int64), np.full(len(neg), 4, np.int64)]
        ris += [pos[:, 0], neg[:, 0]]
        rjs += [pos[:, 1], neg[:, 1]]
        rks += [pos[:, 2], neg[:, 2]]
        rvs += [np.zeros(len(pos) + len(neg))]
        return cls._assemble(prob, collapsed, pmap, M, kinds, ris, rjs, rks, rvs, len(rvar), t_min)

    @classmethod
    def _with_pair_rows(cls, prob, collapsed, pmap, M, kinds, ris, rjs, rks, rvs, t_min):
        """Rows 5 (``d <= u`` per positive pair) and 6 (``d >= l`` per negative pair).

        Pairs inside a merged class have distance 0 (``<= u`` holds); pairs
        that share both ``G``-rows are kept once.  Negative rows are void
        and omitted when ``l = 0``.
        """
        pi, pj = pmap[prob.I], pmap[prob.J]
        same_class = prob.codes[prob.I] == prob.codes[prob.J]
        distinct = pi != pj
        a = np.minimum(pi, pj)
        b = np.maximum(pi, pj)
        for kd, sel, bound in ((5, same_class & distinct, prob.pairs.upper),
                               (6, ~same_class, prob.pairs.lower)):
            if kd == 6 and bound <= 0.0:
                continue
            key = np.unique(a[sel] * M + b[sel])
            kinds.append(np.full(key.size, kd, np.int64))
            ris.append(key // M)
            rjs.append(key % M)
            rks.append(np.zeros(key.size, np.int64))
            rvs.append(np.full(key.size, bound))
        return cls._assemble(prob, collapsed, pmap, M, kinds, ris, rjs, rks, rvs, 0, t_min)

    @classmethod
    def _assemble(cls, prob, collapsed, pmap, M, kinds, ris, rjs, rks, rvs, n_r, t_min):
        """The program from its row blocks (lists of arrays, concatenated)."""
        cat = np.concatenate
        return cls(prob, collapsed, pmap, M, cat(kinds).astype(np.int64),
                   cat(ris).astype(np.int64), cat(rjs).astype(np.int64),
                   cat(rks).astype(np.int64), cat(rvs).astype(np.float64), n_r, t_min)

    def reduce(self, G: np.ndarray) -> np.ndarray:
        """Rows of ``G`` averaged over the points that share a row."""
        out = np.zeros((self.M, G.shape[1]))
        cnt = np.bincount(self.pmap, minlength=self.M).astype(float)
        np.add.at(out, self.pmap, G)
        return out / cnt[:, None]

    def expand(self, Gr: np.ndarray) -> np.ndarray:
        return Gr[self.pmap]


class ProgramCache(OrderedDict):
    """Least-recently-used cache of compiled convex programs, at most ``size`` of them."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_or_build(self, key: tuple, build: Callable[[], Any]) -> Any:
        obj = self.get(key)
        if obj is None:
            obj = build()
            self[key] = obj
            if len(self) > self.size:
                self.popitem(last=False)
        else:
            self.move_to_end(key)
        return obj
