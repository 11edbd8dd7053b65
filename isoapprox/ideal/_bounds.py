"""Proven lower bounds on the distances to the triplet-separated set.

All functions take a normalised :class:`~isoapprox.ideal._problem.Problem`
and return values in its units (multiply by ``prob.scale``), except
:func:`half_loss_bound`, which works on the caller's data.

Isometric error ("iso")
-----------------------
``half_loss``
    ``L_max / 2`` with ``L_max = batch_hard_loss(E, y, margin, "max")``: for
    the worst triplet ``(a, p, m)`` and any separated ``G``,
    ``(D_ap - d_ap) + (d_am - D_am) >= L_max``, so one of the two terms is
    at least ``L_max / 2`` (reconstruction, Theorem 2.4(a)).
``three_point``
    Restricting the problem to three points ``{i, j, k}`` (``y_i = y_j !=
    y_k``), their three pairs and their two triplets ``(i, j, k)`` and
    ``(j, i, k)`` is a relaxation.  A realisable table ``(x, u, v) =
    (d_ij, d_ik, d_jk)`` satisfies the triangle inequalities, so the least
    level ``s`` at which the linear system

        |x - D_ij|, |u - D_ik|, |v - D_jk| <= s,   x, u, v >= 0,
        u >= x + alpha,  v >= x + alpha,  |u - v| <= x

    is feasible bounds ``d_iso`` from below (for ``n >= 2`` it *is* the
    3-point value: every metric on three points is planar).  Eliminating
    ``u`` and ``v`` (Fourier-Motzkin) leaves an interval for ``x`` whose
    end points are non-empty iff, with ``lo = min(D_ik, D_jk)`` and
    ``hi = max(D_ik, D_jk)``,

        s >= max(0, (D_ij - lo + alpha) / 2, alpha - lo,
                 (hi - 2 lo + alpha) / 3, (hi - lo - D_ij) / 3).

    The first term is the single-triplet ``L / 2``; the third sees that
    ``d_ik - d_jk <= d_ij`` couples the two triplets.  The maximum over all
    such triples dominates ``half_loss``.
``metric_lp``
    The same relaxation on all points at once: an LP over tables ``t_ij``
    with the box ``|t - D| <= s``, every triangle inequality and the triplet
    constraints in per-anchor form.  Its value is certified from the dual
    multipliers (Neumaier-Shcherbina): for any ``y >= 0``,
    ``-b.y + sum_j min(g_j l_j, g_j u_j)`` with ``g = c + A^T y`` is a lower
    bound on the LP over the box ``l <= x <= u``, whatever the accuracy of
    ``y``.  The box uses the incumbent value as a cap on ``s``, which does
    not cut off any optimal table.

Hausdorff-like distance ("haus")
--------------------------------
``iso_half``
    ``d_iso(E, G) <= 2 max_k ||E_k - G_k||`` for every ``G``, so half of any
    iso lower bound is a haus lower bound.
``haus_triplet``
    The exact single-triplet sub-problem: the least ``delta`` such that
    moving ``a, p, m`` by at most ``delta`` each satisfies
    ``d(a', m') >= d(a', p') + alpha``.  For a given ``a'`` the best ``p'``
    moves straight towards ``a'`` and the best ``m'`` straight away, so the
    question is whether ``h(x) = |x - m| + delta - (|x - p| - delta)_+``
    reaches ``alpha`` on the disk ``|x - a| <= delta``; rotating ``x`` about
    the line ``pm`` into the plane of ``a, p, m`` keeps ``h`` and brings it
    closer to ``a``, so the disk is planar.  Inside ``B(p, delta)`` the
    maximum of ``|x - m|`` over the lens is attained at one of four explicit
    points; outside it, ``g = |x - m| - |x - p|`` has no interior maximum
    except on the ray beyond ``p`` (checked directly), so the rest is a
    search on the circle ``|x - a| = delta``, certified by branch and bound
    with Lipschitz and curvature bounds.  ``l / 4 <= delta* <= l / 2`` with
    ``l = D_ap - D_am + alpha``; bisection keeps the largest certified
    infeasible ``delta``.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from ..kernels import ideal as K
from ._problem import Problem

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
        A lower bound on ``d_iso(E, F_TS)``; ``0.0`` if HiGHS fails.
    """

    N = prob.N
    npair = prob.I.size
    pid = np.zeros((N, N), dtype=np.int64)
    pid[prob.I, prob.J] = np.arange(npair)
    pid[prob.J, prob.I] = np.arange(npair)
    A = prob.n_anchors
    nv = npair + 1 + A
    s_col = npair
    rows, cols, vals, b = [], [], [], []
    r = 0
    # |t - D| <= s
    k = np.arange(npair)
    rows += [r + k, r + k, r + npair + k, r + npair + k]
    cols += [k, np.full(npair, s_col), k, np.full(npair, s_col)]
    vals += [np.ones(npair), -np.ones(npair), -np.ones(npair), -np.ones(npair)]
    b += [prob.D, -prob.D]
    r += 2 * npair
    tri = _triangle_rows(N, pid)
    nt = tri.shape[0]
    if nt:
        kk = np.arange(nt)
        rows += [r + kk, r + kk, r + kk]
        cols += [tri[:, 0], tri[:, 1], tri[:, 2]]
        vals += [np.ones(nt), -np.ones(nt), -np.ones(nt)]
        b.append(np.zeros(nt))
        r += nt
    # anchors: t_ap <= r_a ; r_a - t_am <= -alpha
    pos, neg = prob.pos, prob.neg
    npos, nneg = len(pos), len(neg)
    kk = np.arange(npos)
    rows += [r + kk, r + kk]
    cols += [pid[pos[:, 0], pos[:, 1]], s_col + 1 + pos[:, 2]]
    vals += [np.ones(npos), -np.ones(npos)]
    b.append(np.zeros(npos))
    r += npos
    kk = np.arange(nneg)
    rows += [r + kk, r + kk]
    cols += [s_col + 1 + neg[:, 2], pid[neg[:, 0], neg[:, 1]]]
    vals += [np.ones(nneg), -np.ones(nneg)]
    b.append(np.full(nneg, -prob.alpha))
    r += nneg
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
    if res.status not in (0, 1) or res.ineqlin is None:
        return 0.0
    y = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=float), 0.0)
    g = c + Aub.T @ y
    bound = -float(bub @ y) + float(np.sum(np.minimum(g * lo, g * hi)))
    return max(bound, 0.0)
