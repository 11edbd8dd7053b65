"""A certified lower bound of a linear programme from approximate duals.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._lpdual``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import issparse

from ..kernels.simplex import INFEASIBLE, OPTIMAL, dual_bound, dual_residuals, dual_simplex
from ..tolerances import LP_DUAL_RTOL
from ._highs import DEFAULT_TOLERANCE, TIGHT_TOLERANCE, solve_lp

__all__ = ["certified_lp", "dual_multipliers", "farkas_infeasible", "proven_infeasible",
           "safe_dual_bound"]

#: iteration limit of the simplex kernel per constraint (rows and bounds); the
#: node LPs of the angular search take about a third of one per row
_MAX_ITER_PER_ROW = 10
#: a kernel bound further than this (relative) below its LP value is tried
#: again with HiGHS's multipliers
_WEAK_BOUND = 1e-9


def dual_multipliers(res) -> np.ndarray | None:
    """Non-negative multipliers ``y`` of the ``A x <= b`` rows from a HiGHS result.

    ``scipy.optimize.linprog`` reports ``ineqlin.marginals <= 0`` for a
    minimisation; ``y = max(-marginals, 0)``.  None when the solver gave none.
    """
    lin = getattr(res, "ineqlin", None)
    if lin is None or lin.marginals is None:
        return None
    y = np.maximum(-np.asarray(lin.marginals, dtype=float), 0.0)
    if not np.all(np.isfinite(y)):
        return None
    return y


def safe_dual_bound(c, A, b, lo, hi, y) -> float:
    """Proven lower bound of ``min c.x`` s.t. ``A x <= b``, ``lo <= x <= hi`` from any ``y >= 0``.

    Neumaier and Shcherbina (Math. Program. 99 (2004) 283-296): for every
    feasible ``x`` and ``y >= 0``, with ``r = c + A^T y``,
    ``c.x = r.x - y.(A x) >= r.x - y.b >= -y.b + sum_j min(r_j lo_j, r_j hi_j)``,
    whatever the accuracy of ``y``.  The float64 evaluation of the right-hand
    side (sums of at most ``m + n`` terms) is within ``(m + n + 2) eps`` of
    ``|y|.|b| + sum_j (|c| + |A|^T |y|)_j max(|lo_j|, |hi_j|)``; the result is
    lowered by :data:`isoapprox.tolerances.LP_DUAL_RTOL` times that
    magnitude.  ``lo`` and ``hi`` must be finite (an infinite end with
    ``r_j`` of the wrong sign gives ``-inf``, still a bound).  Every sum runs
    in a fixed order, without BLAS (:func:`isoapprox.kernels.simplex.dual_residuals`,
    :func:`~isoapprox.kernels.simplex.dual_bound`), so a bound has the same
    bits on every machine.

    Parameters
    ----------
    c : ndarray (nv,)
    A : ndarray or scipy sparse matrix (m, nv)
    b : ndarray (m,)
    lo, hi : ndarray (nv,)
    y : ndarray (m,)
        Multipliers; negative entries are clipped to 0.

    Returns
    -------
    float
        A lower bound of the LP's optimum (``+inf`` never; ``-inf`` possible).
    Raises
    ------
    ValueError
        If the shapes of ``b``, ``y``, ``c``, ``lo``, ``hi`` do not match ``A``'s.
    """
    y = np.maximum(np.asarray(y, dtype=np.float64), 0.0)
    c, b, lo, hi = (np.ascontiguousarray(v, dtype=np.float64) for v in (c, b, lo, hi))
    m, nv = A.shape
    if not (b.shape == y.shape == (m,) and c.shape == lo.shape == hi.shape == (nv,)):
        # the sums index without bounds checks: a wrong length would read past an array
        raise ValueError(
            f"safe_dual_bound: A is {m} x {nv}, so b and y need shape ({m},) and c, lo, hi "
            f"({nv},); got b {b.shape}, y {y.shape}, c {c.shape}, lo {lo.shape}, hi {hi.shape}"
        )
    if issparse(A):  # scipy's own loops, in a fixed order
        r = c + A.T @ y
        mag_r = np.abs(c) + abs(A).T @ y
    else:
        r, mag_r = dual_residuals(c, np.ascontiguousarray(A, dtype=np.float64), y)
    return dual_bound(r, mag_r, b, lo, hi, y, LP_DUAL_RTOL)


def farkas_infeasible(A, b, xl, xh, ray) -> bool:
    """Whether the solver's dual ray proves the rows ``A x <= b`` infeasible in the box.

    Any ``y >= 0`` gives ``0 >= -y.b + sum_j min(r_j xl_j, r_j xh_j)``, ``r =
    A^T y``, for every feasible ``x`` (:func:`safe_dual_bound` with ``c = 0``,
    rounding included), so a positive right-hand side proves that there is
    none.  Both signs of the ray are tried (its sign convention is the
    solver's); nothing rests on its accuracy.
    """
    if ray is None:
        return False
    zero = np.zeros(A.shape[1])
    return any(safe_dual_bound(zero, A, b, xl, xh, y) > 0.0
               for y in (np.maximum(-ray, 0.0), np.maximum(ray, 0.0)))


def proven_infeasible(A, b, xl, xh) -> bool:
    """Whether the rows ``A x <= b`` are proven to have no solution in the box.

    The phase-one LP ``min s`` s.t. ``A x - s <= b``, ``xl <= x <= xh``,
    ``0 <= s <= big`` (``big`` exceeds every row's excess in the box, so the
    box of ``s`` cuts nothing) has optimum 0 exactly when the rows are
    feasible; a certified positive lower bound (:func:`safe_dual_bound`)
    proves they are not.
    """
    m, nv = A.shape
    A1 = np.hstack([A, -np.ones((m, 1))])
    big = 1.0 + float(np.max(np.abs(b))) + float(np.sum(np.abs(A) @ np.maximum(np.abs(xl),
                                                                                 np.abs(xh))))
    l1 = np.concatenate([xl, [0.0]])
    h1 = np.concatenate([xh, [big]])
    c1 = np.zeros(nv + 1)
    c1[-1] = 1.0
    res = solve_lp(c1, A1, b, l1, h1)
    return res.status == "optimal" and safe_dual_bound(c1, A1, b, l1, h1, res.y) > 0.0


def certified_lp(c, A, b, xl, xh, *, tight: bool = True,
                 kernel: bool = False) -> tuple[float, np.ndarray | None]:
    """``min c.x`` s.t. ``A x <= b``, ``xl <= x <= xh`` with a proven bound.

    Solved by HiGHS (:func:`._highs.solve_lp`), or with ``kernel`` by the
    dual simplex kernel (:func:`isoapprox.kernels.simplex.dual_simplex`: a
    node LP of the angular search on five points in about a quarter of
    HiGHS's time, most of which is HiGHS's set-up for so small a model).
    HiGHS then solves the LPs where the kernel fails or its infeasibility
    ray proves nothing, and those whose kernel bound lies more than
    ``_WEAK_BOUND`` (relative) below its LP value (the better proven bound
    is kept).  Both give valid bounds; where an LP has several optimal
    vertices they can return different ones, and a search that branches on
    the LP points then takes another path (which is why the caller
    chooses: :data:`isoapprox.ideal._sector.KERNEL_POINTS`).

    Returns ``(bound, x)``: ``bound`` a proven lower bound of the optimum
    (:func:`safe_dual_bound` of the solver's multipliers; ``+inf`` when the
    rows are proven infeasible, ``-inf`` when nothing is proven) and ``x``
    the solver's point (None unless it reports an optimum).  The point is
    only a hint: nothing proven rests on it.
    """
    if not kernel:
        return _certified_highs(c, A, b, xl, xh, tight)
    c, A, b, xl, xh = (np.ascontiguousarray(v, dtype=np.float64) for v in (c, A, b, xl, xh))
    m, nv = A.shape
    status, x, y, ray, _ = dual_simplex(c, A, b, xl, xh,
                                        TIGHT_TOLERANCE if tight else DEFAULT_TOLERANCE,
                                        _MAX_ITER_PER_ROW * (m + 2 * nv))
    if status == OPTIMAL:
        bound = safe_dual_bound(c, A, b, xl, xh, y)
        value = math.fsum(c * x)  # exactly rounded: no BLAS kernel moves the test
        if value - bound <= _WEAK_BOUND * (1.0 + abs(value)):
            return bound, x
        # a vertex whose multipliers are large (nearly parallel rows of a narrow
        # cone) loses its bound to the rounding allowance: HiGHS's multipliers
        # of the same LP may be smaller, and the better proven bound is kept
        res = solve_lp(c, A, b, xl, xh, tight=tight)
        if res.status == "optimal":
            other = safe_dual_bound(c, A, b, xl, xh, res.y)
            if other > bound:
                return other, res.x
        return bound, x
    if status == INFEASIBLE and farkas_infeasible(A, b, xl, xh, ray):
        return np.inf, None
    # the kernel failed (iteration limit, singular basis) or its ray proves
    # nothing: HiGHS decides
    return _certified_highs(c, A, b, xl, xh, tight)


def _certified_highs(c, A, b, xl, xh, tight: bool) -> tuple[float, np.ndarray | None]:
    """:func:`certified_lp` through HiGHS alone."""
    res = solve_lp(c, A, b, xl, xh, tight=tight)
    if res.status == "infeasible":
        if farkas_infeasible(A, b, xl, xh, res.ray):
            return np.inf, None
        return (np.inf if proven_infeasible(A, b, xl, xh) else -np.inf), None
    if res.status != "optimal":
        return -np.inf, None
    return safe_dual_bound(c, A, b, xl, xh, res.y), res.x
