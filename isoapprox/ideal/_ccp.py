"""cvxpy local solver: the convex-concave procedure (CCP).

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._ccp``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ._clock import cvxpy, solver_clock
from ._problem import Program, ProgramCache, unit_rows

__all__ = ["CCP_MARGIN", "ccp_solve"]

#: relative tightening of the linearised rows (absorbs the interior-point
#: solver's feasibility tolerance; the caller re-checks in float64)
CCP_MARGIN = 1e-7
_CACHE = ProgramCache(32)
_CLARABEL = {"max_threads": 1}


def _selector(rows_i: np.ndarray, rows_j: np.ndarray | None, M: int):

    m = rows_i.size
    data = [np.ones(m)]
    r = [np.arange(m)]
    c = [rows_i]
    if rows_j is not None:
        data.append(-np.ones(m))
        r.append(np.arange(m))
        c.append(rows_j)
    return sp.csr_matrix((np.concatenate(data), (np.concatenate(r), np.concatenate(c))),
                         shape=(m, M))


class _CCPProblem:
    def __init__(self, prog: Program):
        cp = cvxpy()

        prob = prog.prob
        n = prob.n
        M = prog.M
        kind, ri, rj, rk = prog.kind, prog.ri, prog.rj, prog.rk
        self.sel = {k: np.flatnonzero(kind == k) for k in range(7)}
        G = cp.Variable((M, n))
        t = cp.Variable()
        r = cp.Variable(max(prog.n_r, 1))
        self.G, self.t, self.r = G, t, r
        self.tmin = cp.Parameter(nonneg=True)
        self.alpha = cp.Parameter(nonneg=True)
        self.coef = cp.Parameter(nonneg=True)
        cons = [t >= self.tmin, r >= 0]
        self.params = {}
        s0 = self.sel[0]
        if s0.size:
            D0 = cp.Parameter(s0.size)
            self.params[0] = D0
            cons.append(cp.norm(_selector(ri[s0], rj[s0], M) @ G, 2, axis=1) <= D0 + t)
        s1 = self.sel[1]
        if s1.size:
            D1 = cp.Parameter(s1.size)
            U1 = cp.Parameter((s1.size, n))
            self.params[1] = (D1, U1)
            B1 = _selector(ri[s1], rj[s1], M)
            # D1 holds (1 + CCP_MARGIN) D (one parameter, so that the problem is DPP)
            cons.append(cp.sum(cp.multiply(U1, B1 @ G), axis=1) >= D1 - t)
        s2 = self.sel[2]
        if s2.size:
            E2 = cp.Parameter((s2.size, n))
            self.params[2] = E2
            cons.append(cp.norm(_selector(ri[s2], None, M) @ G - E2, 2, axis=1) <= t)
        s3 = self.sel[3]
        if s3.size:
            R3 = _selector(rk[s3], None, max(prog.n_r, 1))
            cons.append(cp.norm(_selector(ri[s3], rj[s3], M) @ G, 2, axis=1) <= R3 @ r)
        s4 = self.sel[4]
        if s4.size:
            U4 = cp.Parameter((s4.size, n))
            self.params[4] = U4
            R4 = _selector(rk[s4], None, max(prog.n_r, 1))
            B4 = _selector(ri[s4], rj[s4], M)
            cons.append(cp.sum(cp.multiply(U4, B4 @ G), axis=1)
                        >= self.coef * (R4 @ r) + self.alpha)
        s5 = self.sel[5]
        if s5.size:
            U5 = cp.Parameter(s5.size, nonneg=True)
            self.params[5] = U5
            cons.append(cp.norm(_selector(ri[s5], rj[s5], M) @ G, 2, axis=1) <= U5)
        s6 = self.sel[6]
        if s6.size:
            L6 = cp.Parameter(s6.size, nonneg=True)
            U6 = cp.Parameter((s6.size, n))
            self.params[6] = (L6, U6)
            cons.append(cp.sum(cp.multiply(U6, _selector(ri[s6], rj[s6], M) @ G), axis=1)
                        >= L6)
        self.problem = cp.Problem(cp.Minimize(t), cons)

    def set_data(self, prog: Program) -> None:
        prob = prog.prob
        rv, rj = prog.rv, prog.rj
        if 0 in self.params:
            self.params[0].value = rv[self.sel[0]]
        if 1 in self.params:
            self.params[1][0].value = (1.0 + CCP_MARGIN) * rv[self.sel[1]]
        if 2 in self.params:
            self.params[2].value = prob.E[rj[self.sel[2]]]
        if 5 in self.params:
            self.params[5].value = (1.0 - CCP_MARGIN) * rv[self.sel[5]]
        if 6 in self.params:
            self.params[6][0].value = (1.0 + CCP_MARGIN) * rv[self.sel[6]]
        self.tmin.value = prog.t_min
        self.alpha.value = prob.alpha * (1.0 + CCP_MARGIN)
        self.coef.value = 1.0 + CCP_MARGIN

    def set_directions(self, prog: Program, Gr: np.ndarray) -> None:
        ri, rj = prog.ri, prog.rj
        for k in (1, 4, 6):
            if k not in self.params:
                continue
            s = self.sel[k]
            par = self.params[k][1] if k in (1, 6) else self.params[4]
            par.value = unit_rows(Gr[ri[s]] - Gr[rj[s]])


def _key(prog: Program) -> tuple:
    return (prog.prob.objective, prog.M, prog.prob.n, prog.n_r, prog.prob.alpha > 0.0,
            prog.kind.tobytes(), prog.ri.tobytes(), prog.rj.tobytes(), prog.rk.tobytes())


def _get(prog: Program) -> _CCPProblem:
    return _CACHE.get_or_build(_key(prog), lambda: _CCPProblem(prog))


def ccp_solve(prog: Program, G0: np.ndarray, *, max_iter: int = 50,
              deadline: float | None = None, rtol: float = 1e-10) -> tuple[np.ndarray, int]:
    """Convex-concave iterations from ``G0`` (full ``(N, n)``, normalised units).

    Returns the last iterate whose objective did not increase (expanded to
    every data point) and the number of convex solves.  Stops when the
    objective improves by less than ``rtol`` (relative), at ``max_iter``,
    at ``deadline`` or when a solve fails.
    """
    cp = cvxpy()

    obj = _get(prog)
    obj.set_data(prog)
    Gr = prog.reduce(G0) if prog.collapsed or G0.shape[0] != prog.M else G0.copy()
    best = Gr
    prev = np.inf
    it = 0
    while it < min(max_iter, 100):
        it += 1
        obj.set_directions(prog, Gr)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj.problem.solve(solver=cp.CLARABEL, warm_start=True, **_CLARABEL)
        except cp.error.SolverError:
            break
        if obj.problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or obj.G.value is None:
            break
        Gr = np.array(obj.G.value, dtype=float)
        best = Gr
        val = float(obj.t.value)
        if prev - val <= rtol * max(abs(prev), 1.0) and np.isfinite(prev):
            break
        prev = val
        if deadline is not None and solver_clock() > deadline:
            break
    return prog.expand(best), it
