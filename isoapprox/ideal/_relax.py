"""Convex (SDP) lower bounds, solved with cvxpy and Clarabel.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._relax``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ._clock import cvxpy, solver_clock
from ._problem import Problem, ProgramCache, pair_index, triplet_table, unit_rows
from ._sdpdual import Rows, gram_bound, make_rows, q_of, shor_bound, triplet_rows

__all__ = ["gram_sdp_bound", "hardest_triplets", "shor_sdp_bound"]

_CACHE = ProgramCache(16)
_CLARABEL = {"max_threads": 1, "tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10,
             "tol_feas": 1e-10, "tol_ktratio": 1e-8}


def hardest_triplets(prob: Problem, G: np.ndarray, per_anchor: int) -> np.ndarray:
    """The ``per_anchor`` triplets of each anchor with the least slack
    ``|G_a - G_m| - |G_a - G_p|`` at ``G`` (normalised units; ties in table
    order), as rows of the triplet table, in its order.

    Dropping triplets relaxes the problem, so a bound proven on these alone
    is a bound of the batch (:func:`shor_sdp_bound` with ``trip``); those
    nearest to violation at a good ``G`` are the ones the relaxation needs.
    """
    T = triplet_table(prob)
    if T.shape[0] == 0 or per_anchor <= 0:
        return T[:0]
    G = np.asarray(G, dtype=float)
    dap = np.sqrt(np.sum((G[T[:, 0]] - G[T[:, 1]]) ** 2, axis=1))
    dam = np.sqrt(np.sum((G[T[:, 0]] - G[T[:, 2]]) ** 2, axis=1))
    order = np.lexsort((np.arange(T.shape[0]), dam - dap, T[:, 0]))
    anchors = T[order, 0]
    rank = np.arange(order.size) - np.searchsorted(anchors, anchors, side="left")
    return T[np.sort(order[rank < per_anchor])]


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
    """``q_pos <= u^2`` and ``q_neg >= l^2`` with the bounds as parameters.

    Returns ``(u2, l2, rows)``, ``rows`` the list of ``(constraint, pair
    indices, sign)`` (sign ``+1`` for ``q <= u2``, ``-1`` for ``q >= l2``)."""
    cp = cvxpy()

    I, J = np.triu_indices(prob.N, 1)
    same = prob.codes[I] == prob.codes[J]
    u2 = cp.Parameter(nonneg=True)
    l2 = cp.Parameter(nonneg=True)
    pos, neg = np.flatnonzero(same), np.flatnonzero(~same)
    rows = []
    if pos.size:
        cons.append(q[pos] <= u2)
        rows.append((cons[-1], pos, 1.0))
    if neg.size:
        cons.append(q[neg] >= l2)
        rows.append((cons[-1], neg, -1.0))
    return u2, l2, rows


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


def _duals(con) -> np.ndarray | None:
    """A constraint's multipliers as a flat array clipped at 0 (any ``>= 0``
    multipliers give a valid bound), or None."""
    v = con.dual_value
    if v is None:
        return None
    v = np.asarray(v, dtype=float).ravel()
    return np.maximum(v, 0.0) if np.all(np.isfinite(v)) else None


class _SDP:
    """What the two relaxations share: their family's rows for the proof."""

    pair_params: tuple | None
    margin: bool
    ap: np.ndarray
    am: np.ndarray

    def _family(self, prob: Problem, q, cons: list) -> bool:
        """Append the family's constraints on ``q`` to ``cons``: the pair rows, or
        ``q[am] >= q[ap]`` for the triplets (``ap``, ``am``: their pairs' indices),
        with a margin by the chords of sqrt (parameters ``c0``, ``c1``, ``alpha``).
        Whether it is the chords."""
        cp = cvxpy()
        self.pair_params = _pair_rows(prob, q, cons) if prob.pairs is not None else None
        self.ap = ap = self.pid[self.trip[:, 0], self.trip[:, 1]]
        self.am = am = self.pid[self.trip[:, 0], self.trip[:, 2]]
        self.margin = prob.alpha > 0.0
        if self.pair_params is not None:
            return False
        if not self.margin:
            cons.append(q[am] >= q[ap])
            return False
        self.c0 = cp.Parameter(len(self.trip))
        self.c1 = cp.Parameter(len(self.trip), nonneg=True)
        self.alpha = cp.Parameter(nonneg=True)
        cons.append(cp.square(self.c0 + cp.multiply(self.c1, q[ap]) + self.alpha) <= q[am])
        return True

    def _set_family(self, prob: Problem, width: float) -> bool:
        """The values of :meth:`_family`'s parameters (the chords over ``width``);
        whether it is the chords."""
        if self.pair_params is not None:
            _set_pairs(prob, self.pair_params)
            return False
        if not self.margin:
            return False
        self.c0.value, self.c1.value = _chords(prob, self.trip, self.pid, width)
        self.alpha.value = prob.alpha
        return True

    def _multipliers(self) -> np.ndarray | None:
        """The multipliers of every constraint but the first, in order (:func:`_duals`),
        or None when one has none."""
        duals = [_duals(c) for c in self.cons[1:]]
        return None if any(d is None for d in duals) else np.concatenate(duals)

    def _family_rows(self, q0: np.ndarray, n: int) -> Rows:
        """The pair rows or the triplet rows, in the order of their
        constraints (and so of their multipliers)."""
        if self.pair_params is not None:
            u2, l2, prs = self.pair_params
            out = []
            for _con, idx, sign in prs:
                bound = float(u2.value) if sign > 0 else float(l2.value)
                out.append(make_rows(sign * (q0[idx] - bound), np.abs(q0[idx]) + abs(bound), n,
                                     q=idx, qc=np.full(idx.size, sign)))
            return Rows.concat(out) if out else make_rows([], [], n)
        chord = ((np.asarray(self.c0.value, dtype=float), np.asarray(self.c1.value, dtype=float),
                  float(self.alpha.value)) if self.margin else None)
        return triplet_rows(q0, self.ap, self.am, n, chord)


class _GramSDP(_SDP):
    def __init__(self, prob: Problem):
        cp = cvxpy()

        N = prob.N
        self.trip = triplet_table(prob)
        self.pid = pair_index(N)
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
        self._family(prob, q, cons)
        self.K, self.s, self.cons = K, s, cons
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
        self._set_family(prob, s_hi)
        # an "infeasible" answer is not used: the incumbent's own Gram matrix
        # is feasible at s_hi, so it can only come from solver tolerances
        if not _solve(self.problem):
            return None
        return self.proven(s_lo, s_hi)

    def lagrangian(self, s_lo: float, s_hi: float) -> tuple | None:
        """``(K0, s0, rows, multipliers, trace_max)`` of the last solve for
        :func:`._sdpdual.gram_bound`, or None: the rows are the bounds
        of ``s``, ``(D - s)_+^2 <= q``, the secants ``q <= A + B s`` and the
        family's rows; ``trace K = sum_{i<j} q_ij / N <= sum (A + B s_hi) / N``
        on the feasible points (``K 1 = 0``)."""
        K0, s0 = self.K.value, self.s.value
        if K0 is None or s0 is None:
            return None
        K0 = np.asarray(K0, dtype=float)
        s0 = float(s0)
        lam = self._multipliers()
        if lam is None or not (np.all(np.isfinite(K0)) and np.isfinite(s0)):
            return None
        K0 = 0.5 * (K0 + K0.T)
        q0 = q_of(K0)
        Dv, Av, Bv = (np.asarray(p.value, dtype=float) for p in (self.D, self.A, self.B))
        idx = np.arange(q0.size)
        r = np.maximum(Dv - s0, 0.0)
        rows = [make_rows([s_lo - s0], [abs(s_lo) + abs(s0)], 0, sc=-1.0),
                make_rows([s0 - s_hi], [abs(s0) + abs(s_hi)], 0, sc=1.0),
                make_rows(r * r - q0, r * r + np.abs(q0), 0, q=idx, qc=-np.ones(q0.size),
                          sc=-2.0 * r),
                make_rows(q0 - Av - Bv * s0, np.abs(q0) + np.abs(Av) + Bv * abs(s0), 0,
                          q=idx, qc=np.ones(q0.size), sc=-Bv)]
        rows.append(self._family_rows(q0, 0))
        trace_max = float(np.sum(Av + Bv * s_hi)) / K0.shape[0] * (1.0 + 1e-12)
        rows = Rows.concat(rows)
        if lam.size != rows.size:
            return None  # multipliers not as the rows (never seen): no proof
        return K0, s0, rows, lam, trace_max

    def proven(self, s_lo: float, s_hi: float) -> float | None:
        """The proven bound of :meth:`lagrangian`'s data, or None."""
        data = self.lagrangian(s_lo, s_hi)
        if data is None:
            return None
        K0, s0, rows, lam, trace_max = data
        v = gram_bound(K0, s0, rows, lam, s_lo, s_hi, trace_max)
        return v if np.isfinite(v) else None


class _ShorSDP(_SDP):
    def __init__(self, prob: Problem, trip: np.ndarray | None = None):
        cp = cvxpy()

        N, n = prob.N, prob.n
        self.trip = triplet_table(prob) if trip is None else np.asarray(trip, dtype=np.int64)
        self.pid = pair_index(N)
        G = cp.Variable((N, n))
        K = cp.Variable((N, N), symmetric=True)
        tau = cp.Variable()
        q = _q_expr(K, N)
        self.E = cp.Parameter((N, n))
        self.E2 = cp.Parameter(N)
        cons = [cp.bmat([[np.eye(n), G.T], [G, K]]) >> 0,
                cp.diag(K) - 2 * cp.sum(cp.multiply(self.E, G), axis=1) + self.E2 <= tau]
        self.cut_cons: list = []
        if self._family(prob, q, cons):  # with the margin: the tangent cuts too
            T = len(self.trip)
            self.alpha2 = cp.Parameter(nonneg=True)
            diff = G[self.trip[:, 0]] - G[self.trip[:, 1]]
            self.U = [cp.Parameter((T, n)), cp.Parameter((T, n))]
            # U holds 2 alpha u (one parameter, so that the problem stays DPP)
            for U in self.U:
                cons.append(q[self.am] >= q[self.ap] + self.alpha2
                            + cp.sum(cp.multiply(U, diff), axis=1))
                self.cut_cons.append((cons[-1], U))
        self.G, self.K, self.tau, self.cons = G, K, tau, cons
        self.problem = cp.Problem(cp.Minimize(tau), cons)

    def solve(self, prob: Problem, upper: float, G_hint: np.ndarray | None) -> float | None:

        E = prob.E
        self.E.value = E
        self.E2.value = np.sum(E * E, axis=1)
        if self._set_family(prob, 2.0 * upper):
            self.alpha2.value = prob.alpha ** 2
            for U, X in zip(self.U, (E, E if G_hint is None else G_hint), strict=True):
                U.value = 2.0 * prob.alpha * unit_rows(X[self.trip[:, 0]] - X[self.trip[:, 1]])
        if not _solve(self.problem):
            return None
        v = self.proven(E, upper)
        return None if v is None else float(np.sqrt(max(v, 0.0)))

    def lagrangian(self, E: np.ndarray) -> tuple | None:
        """``(G0, K0, t0, rows, multipliers, Y)`` of the last solve for
        :func:`._sdpdual.shor_bound` (``Y`` the multiplier block of the
        identity), or None."""
        G0, K0, t0 = self.G.value, self.K.value, self.tau.value
        Z = self.cons[0].dual_value
        if G0 is None or K0 is None or t0 is None or Z is None:
            return None
        G0 = np.asarray(G0, dtype=float)
        K0 = np.asarray(K0, dtype=float)
        Z = np.asarray(Z, dtype=float)
        t0 = float(t0)
        lam = self._multipliers()
        if lam is None or not (np.all(np.isfinite(G0)) and np.all(np.isfinite(K0))
                               and np.isfinite(t0) and np.all(np.isfinite(Z))):
            return None
        K0 = 0.5 * (K0 + K0.T)
        N, n = G0.shape
        q0 = q_of(K0)
        E2 = np.sum(E * E, axis=1)
        dK = np.diag(K0)
        ks = np.arange(N)
        rows = [make_rows(dK - 2.0 * np.sum(E * G0, axis=1) + E2 - t0,
                          np.abs(dK) + 2.0 * np.sum(np.abs(E * G0), axis=1) + E2 + abs(t0), n,
                          kd=ks, kdc=np.ones(N), g=ks, gc=-2.0 * E, sc=-1.0),
                self._family_rows(q0, n)]
        a, p = self.trip[:, 0], self.trip[:, 1]
        for _con, U in self.cut_cons:
            Uv = np.asarray(U.value, dtype=float)
            diff = G0[a] - G0[p]
            a2 = float(self.alpha2.value)
            rows.append(make_rows(
                q0[self.ap] + a2 + np.sum(Uv * diff, axis=1) - q0[self.am],
                np.abs(q0[self.ap]) + a2 + np.sum(np.abs(Uv * diff), axis=1)
                + np.abs(q0[self.am]), n,
                q=np.column_stack([self.ap, self.am]),
                qc=np.column_stack([np.ones(a.size), -np.ones(a.size)]),
                g=np.column_stack([a, p]), gc=np.stack([Uv, -Uv], axis=1)))
        rows = Rows.concat(rows)
        if lam.size != rows.size or Z.shape != (N + n, N + n):
            return None  # multipliers not as the rows (never seen): no proof
        return G0, K0, t0, rows, lam, Z[:n, :n]

    def proven(self, E: np.ndarray, upper: float) -> float | None:
        """A proven lower bound of ``min tau`` over the relaxation's points with
        ``tau <= upper^2`` (those of every ``G`` within ``upper`` of ``E``, the
        only ones the chords are valid for), from the solver's point and
        multipliers (:func:`._sdpdual.shor_bound`), or None."""
        data = self.lagrangian(E)
        if data is None:
            return None
        G0, K0, t0, rows, lam, Y = data
        v = shor_bound(G0, K0, t0, rows, lam, Y, E, upper)
        return v if np.isfinite(v) else None


def _solve(problem) -> bool:
    """Whether Clarabel returned a point and multipliers.

    The tight tolerances are tried first, then the default ones; status
    ``optimal`` is taken from either, ``optimal_inaccurate`` from the second.
    The bound is proven from whatever point and multipliers are returned
    (:mod:`._sdpdual`), so the tolerances decide how tight it is, never
    whether it holds.
    """
    cp = cvxpy()

    for opts in (_CLARABEL, {"max_threads": 1}):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                problem.solve(solver=cp.CLARABEL, **opts)
        except cp.error.SolverError:
            continue
        if problem.status == cp.OPTIMAL or (problem.status == cp.OPTIMAL_INACCURATE
                                            and opts is not _CLARABEL):
            return True
    return False


def _key(prob: Problem, kind: str) -> tuple:
    return (kind, prob.N, prob.n, prob.alpha > 0.0, prob.codes.tobytes(),
            prob.pairs is not None)


def _get(prob: Problem, kind: str):
    build = _GramSDP if kind == "gram" else _ShorSDP
    return _CACHE.get_or_build(_key(prob, kind), lambda: build(prob))


def gram_sdp_bound(prob: Problem, s_lo: float, s_hi: float, *, rounds: int = 4,
                   deadline: float | None = None) -> float | None:
    """Proven lower bound on ``d_iso`` from the Gram SDP with secant rounds (normalised units).

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
        if best is not None and v <= best + 1e-9:
            break
        best = v if best is None else max(best, v)
        if v <= lo:
            break
        lo = v
        if lo >= s_hi or (deadline is not None and solver_clock() > deadline):
            break
    return best


def shor_sdp_bound(prob: Problem, upper: float, *, G_hint: np.ndarray | None = None,
                   trip: np.ndarray | None = None) -> float | None:
    """Proven lower bound on ``d_haus`` from the Shor relaxation (normalised units).

    ``trip`` (rows of the triplet family, for example
    :func:`hardest_triplets`): the relaxation keeps only those triplets, a
    relaxation of the batch whose bound is the batch's too; built for this
    call, not cached.  Triplet family only.
    """
    if trip is None:
        obj = _get(prob, "shor")
    else:
        if prob.pairs is not None:
            raise ValueError("shor_sdp_bound: `trip` is for the triplet family only")
        if len(trip) == 0:
            return 0.0  # no relation left: E itself is a point of the relaxation
        obj = _ShorSDP(prob, trip)
    v = obj.solve(prob, upper, G_hint)
    return None if v is None else max(v, 0.0)
