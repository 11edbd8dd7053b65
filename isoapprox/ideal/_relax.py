"""Convex (SDP) lower bounds, solved with cvxpy and Clarabel.

Design notes: docs/zero_loss.md, section ``isoapprox.ideal._relax``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .._lazy import cvxpy
from ._clock import solver_clock
from ._problem import Problem, ProgramCache

__all__ = ["SDP_SAFETY", "SDP_SAFETY_LOOSE", "gram_sdp_bound", "shor_sdp_bound"]

#: absolute safety subtracted from every SDP optimum (normalised units)
SDP_SAFETY = 1e-8
#: extra safety when only Clarabel's default tolerances (1e-8) were met
SDP_SAFETY_LOOSE = 1e-6
_CACHE = ProgramCache(16)
_CLARABEL = {"max_threads": 1, "tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10,
             "tol_feas": 1e-10, "tol_ktratio": 1e-8}


def _triplets(prob: Problem) -> np.ndarray:
    rows = []
    codes = prob.codes
    for a in prob.anchors:
        same = codes == codes[a]
        ps = np.flatnonzero(same)
        ps = ps[ps != a]
        ms = np.flatnonzero(~same)
        for p in ps:
            for m in ms:
                rows.append((a, p, m))
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def _pair_index(N: int) -> np.ndarray:
    pid = np.zeros((N, N), dtype=np.int64)
    I, J = np.triu_indices(N, 1)
    pid[I, J] = np.arange(I.size)
    pid[J, I] = np.arange(I.size)
    return pid


def _q_expr(Kmat, N: int):
    """Vector of ``K_ii + K_jj - 2 K_ij`` over the pairs ``i < j``."""
    cp = cvxpy()

    I, J = np.triu_indices(N, 1)
    m = I.size
    # vec(K) in column-major (Fortran) order, as cvxpy's vec
    r = np.concatenate([np.arange(m)] * 4)
    c = np.concatenate([I + N * I, J + N * J, I + N * J, J + N * I])
    v = np.concatenate([np.ones(m), np.ones(m), -np.ones(m), -np.ones(m)])
    S = sp.csr_matrix((v, (r, c)), shape=(m, N * N))
    return S @ cp.vec(Kmat, order="F")


def _pair_rows(prob: Problem, q, cons: list) -> tuple:
    """``q_pos <= u^2`` and ``q_neg >= l^2`` with the bounds as parameters."""
    cp = cvxpy()

    I, J = np.triu_indices(prob.N, 1)
    same = prob.codes[I] == prob.codes[J]
    u2 = cp.Parameter(nonneg=True)
    l2 = cp.Parameter(nonneg=True)
    pos, neg = np.flatnonzero(same), np.flatnonzero(~same)
    if pos.size:
        cons.append(q[pos] <= u2)
    if neg.size:
        cons.append(q[neg] >= l2)
    return u2, l2


def _set_pairs(prob: Problem, params: tuple) -> None:
    params[0].value = prob.pairs.upper ** 2
    params[1].value = prob.pairs.lower ** 2


def _chords(prob: Problem, trip: np.ndarray, pid: np.ndarray, width: float):
    """Chord coefficients ``c(u) = c0 + c1 u`` of sqrt on ``[l^2, h^2]`` per triplet."""
    Dap = prob.D[pid[trip[:, 0], trip[:, 1]]]
    lo = np.maximum(Dap - width, 0.0)
    hi = Dap + width
    c1 = 1.0 / np.maximum(lo + hi, 1e-300)
    c0 = lo - lo * lo * c1
    return c0, c1


class _GramSDP:
    def __init__(self, prob: Problem):
        cp = cvxpy()

        N = prob.N
        self.trip = _triplets(prob)
        self.pid = _pair_index(N)
        npair = N * (N - 1) // 2
        K = cp.Variable((N, N), PSD=True)
        s = cp.Variable()
        q = _q_expr(K, N)
        self.D = cp.Parameter(npair)
        self.A = cp.Parameter(npair)
        self.B = cp.Parameter(npair, nonneg=True)
        self.s_lo = cp.Parameter()
        self.s_hi = cp.Parameter()
        cons = [cp.sum(K, axis=0) == 0, s >= self.s_lo, s <= self.s_hi,
                cp.square(cp.pos(self.D - s)) <= q, q <= self.A + cp.multiply(self.B, s)]
        self.pair_params = _pair_rows(prob, q, cons) if prob.pairs is not None else None
        ap = self.pid[self.trip[:, 0], self.trip[:, 1]]
        am = self.pid[self.trip[:, 0], self.trip[:, 2]]
        self.margin = prob.alpha > 0.0
        if self.pair_params is not None:
            pass
        elif self.margin:
            self.c0 = cp.Parameter(len(self.trip))
            self.c1 = cp.Parameter(len(self.trip), nonneg=True)
            self.alpha = cp.Parameter(nonneg=True)
            cons.append(cp.square(self.c0 + cp.multiply(self.c1, q[ap]) + self.alpha) <= q[am])
        else:
            cons.append(q[am] >= q[ap])
        self.s = s
        self.problem = cp.Problem(cp.Minimize(s), cons)

    def solve(self, prob: Problem, s_lo: float, s_hi: float) -> float | None:

        D = prob.D
        self.D.value = D
        a, b = (D + s_lo) ** 2, (D + s_hi) ** 2
        slope = (b - a) / (s_hi - s_lo)
        self.A.value = a - slope * s_lo
        self.B.value = np.maximum(slope, 0.0)
        self.s_lo.value = s_lo
        self.s_hi.value = s_hi
        if self.pair_params is not None:
            _set_pairs(prob, self.pair_params)
        elif self.margin:
            c0, c1 = _chords(prob, self.trip, self.pid, s_hi)
            self.c0.value = c0
            self.c1.value = c1
            self.alpha.value = prob.alpha
        # an "infeasible" answer is not used: the incumbent's own Gram matrix
        # is feasible at s_hi, so it can only come from solver tolerances
        return _solve(self.problem, self.s)


class _ShorSDP:
    def __init__(self, prob: Problem):
        cp = cvxpy()

        N, n = prob.N, prob.n
        self.trip = _triplets(prob)
        self.pid = _pair_index(N)
        G = cp.Variable((N, n))
        K = cp.Variable((N, N), symmetric=True)
        tau = cp.Variable()
        q = _q_expr(K, N)
        self.E = cp.Parameter((N, n))
        self.E2 = cp.Parameter(N)
        cons = [cp.bmat([[np.eye(n), G.T], [G, K]]) >> 0,
                cp.diag(K) - 2 * cp.sum(cp.multiply(self.E, G), axis=1) + self.E2 <= tau]
        self.pair_params = _pair_rows(prob, q, cons) if prob.pairs is not None else None
        ap = self.pid[self.trip[:, 0], self.trip[:, 1]]
        am = self.pid[self.trip[:, 0], self.trip[:, 2]]
        self.margin = prob.alpha > 0.0
        if self.pair_params is not None:
            pass
        elif self.margin:
            T = len(self.trip)
            self.c0 = cp.Parameter(T)
            self.c1 = cp.Parameter(T, nonneg=True)
            self.alpha = cp.Parameter(nonneg=True)
            self.alpha2 = cp.Parameter(nonneg=True)
            cons.append(cp.square(self.c0 + cp.multiply(self.c1, q[ap]) + self.alpha) <= q[am])
            diff = G[self.trip[:, 0]] - G[self.trip[:, 1]]
            self.U = [cp.Parameter((T, n)), cp.Parameter((T, n))]
            # U holds 2 alpha u (one parameter, so that the problem stays DPP)
            for U in self.U:
                cons.append(q[am] >= q[ap] + self.alpha2
                            + cp.sum(cp.multiply(U, diff), axis=1))
        else:
            cons.append(q[am] >= q[ap])
        self.tau = tau
        self.problem = cp.Problem(cp.Minimize(tau), cons)

    def solve(self, prob: Problem, upper: float, G_hint: np.ndarray | None) -> float | None:

        E = prob.E
        self.E.value = E
        self.E2.value = np.sum(E * E, axis=1)
        if self.pair_params is not None:
            _set_pairs(prob, self.pair_params)
        elif self.margin:
            c0, c1 = _chords(prob, self.trip, self.pid, 2.0 * upper)
            self.c0.value = c0
            self.c1.value = c1
            self.alpha.value = prob.alpha
            self.alpha2.value = prob.alpha ** 2
            for U, X in zip(self.U, (E, E if G_hint is None else G_hint), strict=True):
                diff = X[self.trip[:, 0]] - X[self.trip[:, 1]]
                nrm = np.sqrt(np.sum(diff * diff, axis=1))
                Uv = np.zeros_like(diff)
                ok = nrm > 0
                Uv[ok] = diff[ok] / nrm[ok, None]
                Uv[~ok, 0] = 1.0
                U.value = 2.0 * prob.alpha * Uv
        v = _solve(self.problem, self.tau)
        return None if v is None else float(np.sqrt(max(v, 0.0)))


def _solve(problem, var) -> float | None:
    """Optimal value (minus the safety that matches the tolerances used), or None.

    The tight tolerances are tried first; when Clarabel cannot reach them
    the default ones are used with the larger ``SDP_SAFETY_LOOSE``.
    """
    cp = cvxpy()

    for opts, safety in ((_CLARABEL, 0.0), ({"max_threads": 1}, SDP_SAFETY_LOOSE)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                problem.solve(solver=cp.CLARABEL, **opts)
        except cp.error.SolverError:
            continue
        if problem.status == cp.OPTIMAL and var.value is not None:
            return float(var.value) - safety
    return None


def _key(prob: Problem, kind: str) -> tuple:
    return (kind, prob.N, prob.n, prob.alpha > 0.0, prob.codes.tobytes(),
            prob.pairs is not None)


def _get(prob: Problem, kind: str):
    build = _GramSDP if kind == "gram" else _ShorSDP
    return _CACHE.get_or_build(_key(prob, kind), lambda: build(prob))


def gram_sdp_bound(prob: Problem, s_lo: float, s_hi: float, *, rounds: int = 4,
                   deadline: float | None = None) -> float | None:
    """Lower bound on ``d_iso`` from the Gram SDP with secant rounds (normalised units).

    ``s_lo`` must be a proven lower bound and ``s_hi`` a feasible value.
    Returns ``None`` when no solve succeeded.
    """
    if not s_hi > s_lo:
        return None
    obj = _get(prob, "gram")
    best = None
    lo = s_lo
    for _ in range(rounds):
        v = obj.solve(prob, lo, s_hi)
        if v is None:
            break
        v -= SDP_SAFETY
        if best is not None and v <= best + 1e-9:
            break
        best = v if best is None else max(best, v)
        if v <= lo:
            break
        lo = v
        if lo >= s_hi or (deadline is not None and solver_clock() > deadline):
            break
    return best


def shor_sdp_bound(prob: Problem, upper: float, *, G_hint: np.ndarray | None = None
                   ) -> float | None:
    """Lower bound on ``d_haus`` from the Shor relaxation (normalised units)."""
    obj = _get(prob, "shor")
    v = obj.solve(prob, upper, G_hint)
    if v is None:
        return None
    return max(v - SDP_SAFETY, 0.0)
