"""The named numerical tolerances of verdicts, kinds and certificates (one home).

Each is relative to the size of the instance, ``scale = max(diam(E), margin)``
unless said otherwise, so that results are invariant under scaling.
"""

from __future__ import annotations

__all__ = [
    "BNB_RTOL", "BOUND_RTOL", "DSTAR_RTOL", "FLOOR_RTOL", "KIND_RTOL", "LP_DUAL_RTOL",
    "PACKING_RTOL", "VERDICT_RTOL",
]

#: a verdict ``lhs <= rhs`` decided from brackets allows this much rounding,
#: relative to the larger of both sides and of the instance's scale: the
#: inputs carry rounding noise of that size times a few machine epsilons
VERDICT_RTOL = 1e-9

#: a bound counts as holding for the estimates when ``slack >= -BOUND_RTOL *
#: scale`` (the same rounding allowance as :data:`VERDICT_RTOL`, applied to
#: the incumbents instead of the brackets); a computed lower bound above a
#: feasible value by more than this is a contradiction, not rounding
BOUND_RTOL = VERDICT_RTOL

#: a class (or the whole embedding) counts as collapsed when its diameter is
#: at most ``KIND_RTOL * scale``; the solvers produce exact collapse (equal
#: rows), so this only absorbs rounding
KIND_RTOL = 1e-9

#: the relative gap of a bracket is measured against ``max(value, FLOOR_RTOL *
#: scale)``: values below a thousandth of the instance's size are certified to
#: the absolute accuracy ``tol * FLOOR_RTOL * scale`` instead of a relative one
FLOOR_RTOL = 1e-3

#: the packing bound ``D*_lower - diam(E)`` is lowered by ``PACKING_RTOL *
#: max(D*_lower, diam(E))``: ``D*_lower`` (square roots, powers, a product with
#: the margin) and ``diam(E)`` (a kernel's sum of squares) are each within a
#: few ulps of the exact reals, so a thousand times more keeps the float64
#: bound proven
PACKING_RTOL = 1e-12

#: the bounds of the ``D*(P, n, 1)`` table (isoapprox.packing.d_star) are moved
#: outward by this much, relative: a lower bound is a closed formula (a few
#: square roots, powers and quotients, each within a few ulps of the exact
#: real) multiplied by ``1 - DSTAR_RTOL``; an upper bound is the ratio of the
#: largest to the least pairwise distance of explicit float64 points, computed
#: by direct differences (within ``n + 4`` ulps for ``n <= 64``), multiplied by
#: ``1 + DSTAR_RTOL``.  Exact entries (closed forms) are not moved.
DSTAR_RTOL = 1e-12

#: rounding allowance of the branch-and-bound's interval bounds
#: (:mod:`isoapprox.kernels.bnb`): every computed distance between boxes, box
#: bound and difference is moved outward by ``BNB_RTOL * (1 + the magnitudes
#: involved)``, in normalised units (the instance has size about 1).  Each such
#: quantity takes at most a dozen float64 operations on numbers of that
#: magnitude, so its rounding error is below ``1e-14`` of it; ``1e-12`` keeps a
#: hundredfold margin.  The same allowance, scaled by the size of the caller's
#: coordinates, covers the rounding of the normalisation ``(E - shift) / scale``
#: (``isoapprox.ideal._bnb``)
BNB_RTOL = 1e-12

#: rounding allowance of a certified LP bound from approximate duals
#: (:func:`isoapprox.ideal._lpdual.safe_dual_bound`, Neumaier-Shcherbina): the
#: float64 value of ``-y.b + sum_j min(r_j lo_j, r_j hi_j)``, ``r = c + A^T y``,
#: is within ``(m + n + 2) eps`` of the magnitude ``|y|.|b| + sum_j (|c| +
#: |A|^T |y|)_j max(|lo_j|, |hi_j|)`` (each term a product of two rounded
#: numbers, summed over at most ``m + n`` terms); ``1e-12`` of the magnitude
#: covers LPs of up to about four thousand rows and columns with a twofold margin
LP_DUAL_RTOL = 1e-12
