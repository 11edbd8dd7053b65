"""Small dense LPs through HiGHS (``highspy``), as status, point and multipliers.

The node LPs of the angular branch-and-bound (:mod:`._sector`) have a few
dozen columns and a few hundred rows, and a search solves thousands of
them.  They go to HiGHS directly, without presolve: through
:func:`scipy.optimize.linprog` (the same solver) an LP took two to three
times as long, most of it in the wrapper's input and option checks
(``benchmarks/bench_lp.py``).  The caller receives non-negative
multipliers of the rows; the bound it proves from them
(:func:`._lpdual.safe_dual_bound`) does not depend on their accuracy.

Each thread keeps one solver, and every LP is passed to it whole, with the
solver state cleared first: an answer never depends on what the thread
solved before.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._clock import highspy

__all__ = ["DEFAULT_TOLERANCE", "TIGHT_TOLERANCE", "LPResult", "solve_lp"]

#: primal and dual feasibility tolerances of the tight solve (HiGHS's
#: default, ``1e-7``, is the fallback when the tight solve reports trouble)
TIGHT_TOLERANCE = 1e-10
DEFAULT_TOLERANCE = 1e-7


@dataclass
class LPResult:
    """Outcome of :func:`solve_lp`."""

    #: ``"optimal"``, ``"infeasible"`` or ``"failed"``
    status: str
    #: primal solution (None unless optimal)
    x: np.ndarray | None
    #: non-negative multipliers of the rows ``A x <= b`` (None unless optimal)
    y: np.ndarray | None
    #: the solver's dual ray of the rows when it reports them infeasible (a
    #: Farkas certificate up to its sign and accuracy: to be proven by the
    #: caller), else None
    ray: np.ndarray | None = None


@functools.cache
def _quiet_highs() -> type:
    """``highspy.Highs`` without callbacks (none is used here).  Setting them up
    is what makes ``highspy.Highs()`` write HiGHS's banner to the process's
    standard output, below Python, before any option can silence it.  Built
    on first use, so that importing isoapprox does not import highspy."""

    class _QuietHighs(highspy().Highs):
        def enableCallbacks(self) -> None:  # noqa: N802 (highspy's name)
            return None

    return _QuietHighs


_local = threading.local()


def _solver() -> Any:
    h = getattr(_local, "highs", None)
    if h is None:
        h = _quiet_highs()()
        h.silent()
        for name, value in (("presolve", "off"), ("threads", 1), ("random_seed", 0)):
            h.setOptionValue(name, value)
        _local.highs = h
        _local.tolerance = None
    return h


def _csc(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column starts, row indices and values of the non-zeros of dense ``A``,
    column by column (as ``scipy.sparse.csc_matrix(A)`` stores them)."""
    At = np.ascontiguousarray(A.T, dtype=np.float64)
    nz = At != 0.0
    _, rows = np.nonzero(nz)
    start = np.zeros(At.shape[0], dtype=np.int32)
    np.cumsum(np.count_nonzero(nz, axis=1)[:-1], out=start[1:])
    return start, rows.astype(np.int32), At[nz]


def solve_lp(c: np.ndarray, A: np.ndarray, b: np.ndarray, xl: np.ndarray, xh: np.ndarray,
             *, tight: bool = True) -> LPResult:
    """``min c.x`` s.t. ``A x <= b``, ``xl <= x <= xh`` (dense ``A``, finite bounds).

    ``tight`` asks for feasibility tolerances of :data:`TIGHT_TOLERANCE`.
    HiGHS reports the multipliers of ``<=`` rows of a minimisation as row
    duals ``<= 0``; they are returned as ``y = max(-dual, 0)``.
    """
    c, b, xl, xh = (np.ascontiguousarray(v, dtype=np.float64) for v in (c, b, xl, xh))
    m, n = A.shape
    col_start, row_index, values = _csc(A)
    h, hs = _solver(), highspy()
    tol = TIGHT_TOLERANCE if tight else DEFAULT_TOLERANCE
    if _local.tolerance != tol:
        h.setOptionValue("primal_feasibility_tolerance", tol)
        h.setOptionValue("dual_feasibility_tolerance", tol)
        _local.tolerance = tol
    h.clearSolver()
    status = h.passModel(n, m, int(values.size), int(hs.MatrixFormat.kColwise),
                         int(hs.ObjSense.kMinimize), 0.0, c, xl, xh,
                         np.full(m, -np.inf), b, col_start, row_index, values,
                         np.zeros(n, dtype=np.int32))
    if status == hs.HighsStatus.kError:
        return LPResult("failed", None, None)
    h.run()
    model_status = h.getModelStatus()
    if model_status == hs.HighsModelStatus.kInfeasible:
        ray = None
        if h.getDualRayExist()[1]:
            got = h.getDualRay()
            values = np.array(got[2], dtype=float)
            if got[1] and values.shape == (m,) and np.all(np.isfinite(values)):
                ray = values
        return LPResult("infeasible", None, None, ray)
    if model_status != hs.HighsModelStatus.kOptimal:
        return LPResult("failed", None, None)
    sol = h.getSolution()
    x = np.array(sol.col_value, dtype=float)
    y = np.maximum(-np.array(sol.row_dual, dtype=float), 0.0)
    if x.shape != (n,) or y.shape != (m,) or not (np.all(np.isfinite(x))
                                                  and np.all(np.isfinite(y))):
        return LPResult("failed", None, None)
    return LPResult("optimal", x, y)
