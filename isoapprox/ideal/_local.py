"""scipy local solvers on the smooth epigraph form: SLSQP and an augmented Lagrangian.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._local``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import fmin_l_bfgs_b, minimize

from ..kernels import ideal as K
from ._clock import solver_clock
from ._problem import Program

__all__ = ["SLSQP_MAX_ROWS", "TIGHTEN_ALPHA", "TIGHTEN_KAPPA", "al_epigraph",
           "slsqp_epigraph"]

#: relative tightening of a positive margin inside the local solvers
TIGHTEN_ALPHA = 1e-9
#: relative tightening ``q_am >= (1 + kappa) r_a^2`` for margin 0
TIGHTEN_KAPPA = 1e-9


def _effective_rv(prog: Program) -> np.ndarray:
    """Row values with the pair bounds (rows 5, 6) tightened; the others as they are."""
    rv = prog.rv
    k5 = prog.kind == 5
    k6 = prog.kind == 6
    if not (k5.any() or k6.any()):
        return rv
    rv = rv.copy()
    rv[k5] *= 1.0 - TIGHTEN_ALPHA
    rv[k6] *= 1.0 + TIGHTEN_ALPHA
    return rv


def _initial_state(prog: Program, Gr: np.ndarray) -> tuple[float, np.ndarray]:
    prob = prog.prob
    G = prog.expand(Gr)
    t0 = max(prob.value(G), prog.t_min)
    if prob.objective == "haus":
        t0 = t0 * t0
    r = np.zeros(prog.n_r)
    sel = prog.kind == 3
    if sel.any():
        d = np.sqrt(np.sum((Gr[prog.ri[sel]] - Gr[prog.rj[sel]]) ** 2, axis=1))
        np.maximum.at(r, prog.rk[sel], d)
    return t0, r


def _setup(prog: Program, G0: np.ndarray) -> tuple[tuple, np.ndarray, float]:
    """The rows' arguments of the kernels (``M, n, E, kind, ri, rj, rk, rv,
    alpha, kappa``, tightened), the start ``x0`` from ``G0`` and the least ``t``."""
    prob = prog.prob
    M = prog.M
    alpha_eff = prob.alpha * (1.0 + TIGHTEN_ALPHA) if prob.alpha > 0 else 0.0
    rows = (M, prob.n, prob.E, prog.kind, prog.ri, prog.rj, prog.rk, _effective_rv(prog),
            alpha_eff, TIGHTEN_KAPPA)
    Gr0 = prog.reduce(G0) if prog.collapsed or G0.shape[0] != M else G0
    t0, r0 = _initial_state(prog, Gr0)
    t_lo = prog.t_min * prog.t_min if prob.objective == "haus" else prog.t_min
    return rows, np.concatenate([Gr0.ravel(), [t0], r0]), t_lo


def slsqp_epigraph(
    prog: Program,
    G0: np.ndarray,
    *,
    max_iter: int = 200,
    ftol: float = 1e-13,
) -> tuple[np.ndarray, int, bool]:
    """One SLSQP run from ``G0`` (full ``(N, n)`` array, normalised units).

    Returns
    -------
    G : ndarray (N, n)
        The final iterate expanded to every data point (not yet checked).
    n_iter : int
    success : bool
        SLSQP's own flag (informative only; the caller re-scores).
    """

    rows, x0, t_lo = _setup(prog, G0)
    M, n = prog.M, prog.prob.n
    m = prog.kind.size
    nv = M * n + 1 + prog.n_r
    cbuf = np.empty(m)
    Jbuf = np.zeros((m, nv))
    dummy = np.zeros((1, 1))

    def fun_c(x):
        return K.epigraph_rows(x, *rows, False, cbuf, dummy).copy()

    def jac_c(x):
        Jbuf[:] = 0.0
        K.epigraph_rows(x, *rows, True, cbuf, Jbuf)
        return Jbuf.copy()

    grad = np.zeros(nv)
    grad[M * n] = 1.0
    lo = np.full(nv, -np.inf)
    hi = np.full(nv, np.inf)
    lo[M * n] = t_lo
    lo[M * n + 1:] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(
            lambda x: x[M * n], x0, jac=lambda x: grad, method="SLSQP",
            constraints=[{"type": "ineq", "fun": fun_c, "jac": jac_c}],
            bounds=list(zip(lo, hi, strict=True)), options={"maxiter": max_iter, "ftol": ftol},
        )
    Gr = np.asarray(res.x[: M * n]).reshape(M, n)
    return prog.expand(Gr), int(res.nit), bool(res.success)


# ----------------------------------------------------------------------
# Augmented Lagrangian with L-BFGS-B (any size)
# ----------------------------------------------------------------------

#: SLSQP is used while the program has at most this many rows (scipy's
#: SLSQP costs grow about quadratically with the rows: ~30 ms per iteration
#: for 264 rows)
SLSQP_MAX_ROWS = 300


def al_epigraph(
    prog: Program,
    G0: np.ndarray,
    *,
    max_outer: int = 30,
    max_inner: int = 500,
    feas_tol: float = 1e-12,
    deadline: float | None = None,
) -> tuple[np.ndarray, int, bool]:
    """Augmented-Lagrangian method on the epigraph rows (normalised units).

    Inner problems ``min_x t + sum_i psi(c_i(x), lam_i)`` over the bounds
    ``t >= t_min``, ``r >= 0`` are solved by L-BFGS-B with the numba
    gradient (``O(rows)`` per evaluation, no Jacobian matrix, so it scales
    to every row of ``N = 200``); multipliers are updated by
    ``lam <- max(0, lam - rho c)`` and the penalty ``rho`` grows tenfold when
    the violation does not fall by a factor 4.

    Returns the final iterate (full ``(N, n)``), the number of inner
    iterations and whether the rows are satisfied to ``feas_tol``.
    """

    rows, x, t_lo = _setup(prog, G0)
    M, n = prog.M, prog.prob.n
    nv = M * n + 1 + prog.n_r
    m = prog.kind.size
    lam = np.zeros(m)
    rho = 10.0
    grad = np.zeros(nv)
    cbuf = np.zeros(m)
    bounds = [(None, None)] * (M * n) + [(t_lo, None)] + [(0.0, None)] * prog.n_r
    total_it = 0
    viol_prev = np.inf
    ok = False

    def fg(z):
        v = K.al_value_grad(z, *rows, lam, rho, grad, cbuf)
        return v, grad.copy()

    for _ in range(max_outer):
        x, _, info = fmin_l_bfgs_b(fg, x, bounds=bounds, m=20, factr=10.0, pgtol=1e-13,
                                   maxiter=max_inner)
        total_it += int(info["nit"])
        K.al_value_grad(x, *rows, lam, rho, grad, cbuf)
        c = cbuf
        viol = float(np.max(np.maximum(-c, 0.0))) if m else 0.0
        lam = np.maximum(0.0, lam - rho * c)
        if viol <= feas_tol:
            ok = True
            # complementarity: stop when the multipliers are settled too
            if np.max(np.minimum(lam, np.maximum(c, 0.0)), initial=0.0) <= 1e-10:
                break
        elif viol > 0.25 * viol_prev:
            rho = min(rho * 10.0, 1e10)
        viol_prev = viol
        if deadline is not None and solver_clock() > deadline:
            break
    Gr = x[: M * n].reshape(M, n)
    return prog.expand(Gr), total_it, ok
