"""Proven lower bounds on the distances to the triplet-separated set.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._bounds``.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from ..kernels import ideal as K
from ._lpdual import dual_multipliers, safe_dual_bound
from ._problem import Problem, pair_index

__all__ = [
    "METRIC_LP_MAX_POINTS",
    "haus_triplet_bound",
    "metric_lp_bound",
    "three_point_bound",
]

#: the metric LP has ``3 C(N, 3)`` triangle rows; beyond this many points it
#: is skipped (the 3-point bound is its cheap shadow)
METRIC_LP_MAX_POINTS = 24


def three_point_bound(prob: Problem) -> tuple[float, tuple[int, int, int]]:
    """Largest exact 3-point sub-problem value (normalised units)."""
    v, i, j, k = K.three_point_bounds(prob.E, prob.codes, prob.alpha)
    return max(float(v), 0.0), (int(i), int(j), int(k))


def haus_triplet_bound(prob: Problem, floor: float) -> float | None:
    """Largest certified single-triplet haus value above ``floor`` (normalised), or None."""
    v = float(K.haus_triplet_bound(prob.E, prob.codes, prob.alpha, floor))
    return v if v > floor else None


def _triangle_rows(N: int, pid: np.ndarray) -> np.ndarray:
    trip = np.array(list(itertools.combinations(range(N), 3)), dtype=np.int64)
    if trip.size == 0:
        return np.zeros((0, 3), np.int64)
    i, j, k = trip[:, 0], trip[:, 1], trip[:, 2]
    a, b, c = pid[i, j], pid[i, k], pid[j, k]
    # (longer, shorter1, shorter2): longer <= shorter1 + shorter2
    return np.concatenate([np.column_stack([a, b, c]), np.column_stack([b, a, c]),
                           np.column_stack([c, a, b])])


def metric_lp_bound(prob: Problem, upper: float) -> float:
    """Certified value of the metric LP relaxation (normalised units).

    Parameters
    ----------
    prob : Problem
    upper : float
        A feasible value (the incumbent), used as the cap on ``s``.

    Returns
    -------
    float
        A lower bound on ``d_iso(E, F_TS)``; ``0.0`` if HiGHS fails.  Certified
        from HiGHS' duals by :func:`._lpdual.safe_dual_bound`.
    """

    N = prob.N
    npair = prob.I.size
    pid = pair_index(N)
    A = prob.n_anchors
    nv = npair + 1 + A
    s_col = npair
    rows, cols, vals, b = [], [], [], []

    def block(cs: list, vs: list[float], rhs: np.ndarray) -> None:
        """Rows ``sum_k vs[k] x[cs[k]] <= rhs`` (``cs[k]``: a column per row)."""
        r = sum(v.size for v in b) + np.arange(rhs.size)
        rows.extend([r] * len(cs))
        cols.extend(cs)
        vals.extend(np.full(rhs.size, v) for v in vs)
        b.append(rhs)

    # |t - D| <= s
    k = np.arange(npair)
    s = np.full(npair, s_col)
    block([k, s], [1.0, -1.0], prob.D)
    block([k, s], [-1.0, -1.0], -prob.D)
    tri = _triangle_rows(N, pid)
    if tri.shape[0]:
        block([tri[:, 0], tri[:, 1], tri[:, 2]], [1.0, -1.0, -1.0], np.zeros(tri.shape[0]))
    # anchors: t_ap <= r_a ; r_a - t_am <= -alpha
    pos, neg = prob.pos, prob.neg
    block([pid[pos[:, 0], pos[:, 1]], s_col + 1 + pos[:, 2]], [1.0, -1.0], np.zeros(len(pos)))
    block([s_col + 1 + neg[:, 2], pid[neg[:, 0], neg[:, 1]]], [1.0, -1.0],
          np.full(len(neg), -prob.alpha))
    r = sum(v.size for v in b)
    Aub = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(r, nv)).tocsr()
    bub = np.concatenate(b)
    c = np.zeros(nv)
    c[s_col] = 1.0
    U = float(upper)
    lo = np.zeros(nv)
    hi = np.empty(nv)
    hi[:npair] = prob.D + U
    hi[s_col] = U
    hi[s_col + 1:] = float(prob.D.max()) + U
    res = linprog(c, A_ub=Aub, b_ub=bub, bounds=np.column_stack([lo, hi]), method="highs")
    y = dual_multipliers(res) if res.status in (0, 1) else None
    if y is None:
        return 0.0
    return max(safe_dual_bound(c, Aub, bub, lo, hi, y), 0.0)
