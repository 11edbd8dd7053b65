"""Small dense LPs through HiGHS (:func:`scipy.optimize.linprog`), as status, point and multipliers.

The node LPs of the angular branch-and-bound (:mod:`._sector`) have a few
dozen columns and a few hundred rows.  The caller receives non-negative
multipliers of the rows; the bound it proves from them
(:func:`._lpdual.safe_dual_bound`) does not depend on their accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

__all__ = ["TIGHT_TOLERANCE", "LPResult", "solve_lp"]

#: primal and dual feasibility tolerances of the tight solve (HiGHS's
#: default, ``1e-7``, is the fallback when the tight solve reports trouble)
TIGHT_TOLERANCE = 1e-10


@dataclass
class LPResult:
    """Outcome of :func:`solve_lp`."""

    #: ``"optimal"``, ``"infeasible"`` or ``"failed"``
    status: str
    #: primal solution (None unless optimal)
    x: np.ndarray | None
    #: non-negative multipliers of the rows ``A x <= b`` (None unless optimal)
    y: np.ndarray | None


def solve_lp(c: np.ndarray, A: np.ndarray, b: np.ndarray, xl: np.ndarray, xh: np.ndarray,
             *, tight: bool = True) -> LPResult:
    """``min c.x`` s.t. ``A x <= b``, ``xl <= x <= xh`` (dense ``A``, finite bounds).

    ``tight`` asks for feasibility tolerances of :data:`TIGHT_TOLERANCE`.
    HiGHS reports the multipliers of ``<=`` rows of a minimisation as
    ``marginals <= 0``; they are returned as ``y = max(-marginals, 0)``.
    """
    options = {"primal_feasibility_tolerance": TIGHT_TOLERANCE,
               "dual_feasibility_tolerance": TIGHT_TOLERANCE} if tight else {}
    res = linprog(c, A_ub=A, b_ub=b, bounds=np.column_stack([xl, xh]), method="highs",
                  options=options)
    if res.status == 2:
        return LPResult("infeasible", None, None)
    lin = getattr(res, "ineqlin", None)
    if res.status != 0 or res.x is None or lin is None or lin.marginals is None:
        return LPResult("failed", None, None)
    y = np.maximum(-np.asarray(lin.marginals, dtype=float), 0.0)
    if not np.all(np.isfinite(y)):
        return LPResult("failed", None, None)
    return LPResult("optimal", np.asarray(res.x, dtype=float), y)
