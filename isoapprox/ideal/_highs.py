"""Small dense LPs through HiGHS, without ``scipy.optimize.linprog``'s per-call overhead.

The node LPs of the angular branch-and-bound (:mod:`._sector`) have a few
dozen columns and a few hundred rows; ``linprog`` spends longer checking
options and converting formats than HiGHS spends solving (measured on node
LPs of a five-point toy: 2.1 ms a call against 0.9 ms through the model
interface).  SciPy ships HiGHS's Python binding as
``scipy.optimize._highspy._core`` (SciPy >= 1.15), a private module: it is
used when present, and :func:`scipy.optimize.linprog` otherwise.  Either
way the caller receives multipliers only; the bound it proves from them
(:func:`._lpdual.safe_dual_bound`) does not depend on their accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

__all__ = ["LPResult", "solve_lp"]

try:  # SciPy >= 1.15
    from scipy.optimize._highspy import _core as _hcore  # type: ignore[attr-defined]

    _HAVE_CORE = bool(hasattr(_hcore, "_Highs") and hasattr(_hcore, "HighsLp"))
except ImportError:  # pragma: no cover - older SciPy
    _hcore = None
    _HAVE_CORE = False

#: primal and dual feasibility tolerances of the tight solve (the default of
#: HiGHS, ``1e-7``, is the fallback when the tight solve reports trouble)
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
             *, tight: bool = True, use_core: bool | None = None) -> LPResult:
    """``min c.x`` s.t. ``A x <= b``, ``xl <= x <= xh`` (dense ``A``, finite bounds).

    ``tight`` asks for feasibility tolerances of :data:`TIGHT_TOLERANCE`;
    ``use_core`` forces (True) or avoids (False) the direct HiGHS model
    interface (default: use it when SciPy has it).
    """
    core = _HAVE_CORE if use_core is None else (use_core and _HAVE_CORE)
    if core:
        return _solve_core(c, A, b, xl, xh, tight)
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


def _solve_core(c, A, b, xl, xh, tight) -> LPResult:
    h = _hcore
    m, nv = A.shape
    rows, cols = np.nonzero(A)
    lp = h.HighsLp()
    lp.num_col_ = nv
    lp.num_row_ = m
    lp.col_cost_ = np.ascontiguousarray(c, dtype=float)
    lp.col_lower_ = np.ascontiguousarray(xl, dtype=float)
    lp.col_upper_ = np.ascontiguousarray(xh, dtype=float)
    lp.row_lower_ = np.full(m, -np.inf)
    lp.row_upper_ = np.ascontiguousarray(b, dtype=float)
    lp.a_matrix_.num_col_ = nv
    lp.a_matrix_.num_row_ = m
    lp.a_matrix_.format_ = h.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=m))]
                                         ).astype(np.int32)
    lp.a_matrix_.index_ = cols.astype(np.int32)
    lp.a_matrix_.value_ = A[rows, cols].astype(float)
    highs = h._Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("presolve", "off")
    if tight:
        highs.setOptionValue("primal_feasibility_tolerance", TIGHT_TOLERANCE)
        highs.setOptionValue("dual_feasibility_tolerance", TIGHT_TOLERANCE)
    highs.passModel(lp)
    highs.run()
    status = highs.getModelStatus()
    if status == h.HighsModelStatus.kInfeasible:
        return LPResult("infeasible", None, None)
    if status != h.HighsModelStatus.kOptimal:
        return LPResult("failed", None, None)
    sol = highs.getSolution()
    x = np.asarray(sol.col_value, dtype=float)
    y = np.maximum(-np.asarray(sol.row_dual, dtype=float), 0.0)
    if x.shape != (nv,) or y.shape != (m,) or not (np.all(np.isfinite(x))
                                                   and np.all(np.isfinite(y))):
        return LPResult("failed", None, None)
    return LPResult("optimal", x, y)
