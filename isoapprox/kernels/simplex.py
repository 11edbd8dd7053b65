"""numba kernels of small dense linear programmes: the dual simplex method on
the active set, for the node LPs of the angular search, and the sums of the
certified bound from multipliers (:func:`isoapprox.ideal._lpdual.safe_dual_bound`).

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.simplex``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import JIT

__all__ = ["FAILED", "INFEASIBLE", "OPTIMAL", "dual_bound", "dual_residuals", "dual_simplex",
           "least_values"]

#: status codes of :func:`dual_simplex`
OPTIMAL = 0
INFEASIBLE = 1
FAILED = 2

#: iterations between two refactorisations of the basis (its inverse is
#: otherwise updated by rank-one steps)
_REFACTOR = 24
#: a basis pivot below this fraction of the largest one is singular
_SINGULAR = 1e-11


@njit(**JIT)
def _invert(B, out):
    """``out = B^-1`` by Gauss-Jordan elimination with partial pivoting, in a
    fixed order of operations (no LAPACK: the same bits on every machine);
    False when a pivot is below :data:`_SINGULAR` of the largest entry."""
    n = B.shape[0]
    M = B.copy()
    for i in range(n):
        for j in range(n):
            out[i, j] = 1.0 if i == j else 0.0
    scale = 0.0
    for i in range(n):
        for j in range(n):
            scale = max(scale, abs(M[i, j]))
    if not scale > 0.0:
        return False
    for col in range(n):
        piv = col
        for r in range(col + 1, n):
            if abs(M[r, col]) > abs(M[piv, col]):
                piv = r
        if not abs(M[piv, col]) > _SINGULAR * scale:
            return False
        if piv != col:
            for j in range(n):
                t = M[col, j]
                M[col, j] = M[piv, j]
                M[piv, j] = t
                t = out[col, j]
                out[col, j] = out[piv, j]
                out[piv, j] = t
        inv = 1.0 / M[col, col]
        for j in range(n):
            M[col, j] *= inv
            out[col, j] *= inv
        for r in range(n):
            if r != col:
                f = M[r, col]
                if f != 0.0:
                    for j in range(n):
                        M[r, j] -= f * M[col, j]
                        out[r, j] -= f * out[col, j]
    return True


@njit(**JIT)
def _row(A, b, xl, xh, k, out):
    """The normal ``g_k`` of constraint ``k`` (``g_k.x <= h_k``) into ``out``:
    row ``k`` of ``A`` for ``k < m``, ``e_j`` (``x_j <= xh_j``) for ``k = m + j``,
    ``-e_j`` (``-x_j <= -xl_j``) for ``k = m + n + j``; returns ``h_k``."""
    m, n = A.shape
    if k < m:
        for j in range(n):
            out[j] = A[k, j]
        return b[k]
    for j in range(n):
        out[j] = 0.0
    if k < m + n:
        out[k - m] = 1.0
        return xh[k - m]
    out[k - m - n] = -1.0
    return -xl[k - m - n]


@njit(**JIT)
def _refresh(A, b, xl, xh, c, W, Binv, x, lam, g, act):
    """Recompute ``Binv``, the vertex ``x = B^-1 h_W``, the multipliers
    ``lam = -B^-T c`` of the basis ``W`` (negative ones clipped to 0) and the
    row activities ``act``; False if the basis is singular."""
    m, n = A.shape
    B = np.empty((n, n))
    h = np.empty(n)
    for i in range(n):
        h[i] = _row(A, b, xl, xh, W[i], g)
        for j in range(n):
            B[i, j] = g[j]
    if not _invert(B, Binv):
        return False
    for r in range(n):
        s = 0.0
        for i in range(n):
            s += Binv[r, i] * h[i]
        x[r] = s
    for i in range(n):
        s = 0.0
        for r in range(n):
            s -= Binv[r, i] * c[r]
        lam[i] = s if s > 0.0 else 0.0
    _activities(A, x, act)
    return True


@njit(**JIT)
def _activities(A, x, act):
    """Row activities ``act = A x``."""
    m, n = A.shape
    for i in range(m):
        s = 0.0
        for j in range(n):
            s += A[i, j] * x[j]
        act[i] = s


@njit(**JIT)
def dual_simplex(c, A, b, xl, xh, tol, max_iter):
    """``min c.x`` s.t. ``A x <= b``, ``xl <= x <= xh`` (dense ``A`` (m, n), finite
    bounds ``xl <= xh``) by the dual simplex method on the active set.

    A basis is ``n`` linearly independent constraints held with equality (rows
    of ``A`` or bounds; ``B`` their normals, ``x = B^-1 h``); its multipliers
    ``lam = -B^-T c`` stay non-negative (dual feasible) from the first basis,
    the bound of each variable its cost points to.  Each iteration the
    violated constraint of largest ``excess^2 / (1 + |B^-T g_k|^2)`` enters
    (dual steepest edge; the weights of the rows are updated, those of the
    bounds computed), and the basis constraint that the multipliers' ratio
    test names leaves (Harris's two passes, ties to the largest pivot); the
    search ends when no row is violated by more than ``tol (1 + |b_i| + sum_j
    |A_ij| max(|xl_j|, |xh_j|))`` and no bound by more than ``tol (1 +
    |bound|)``.  The inverse of the basis is updated by rank-one steps; it and
    the row activities are recomputed every :data:`_REFACTOR` iterations and
    at the end.  Every loop
    runs in a fixed order (no BLAS, no LAPACK): the same bits on every machine.

    Returns ``(status, x, y, ray, iterations)``: :data:`OPTIMAL` with the
    point ``x`` and the non-negative row multipliers ``y`` (those of the
    bounds are implicit in ``c + A^T y``); :data:`INFEASIBLE` with ``ray``,
    non-negative row multipliers of a Farkas certificate (to be proven by the
    caller); :data:`FAILED` after ``max_iter`` iterations or on a singular
    basis.  Nothing proven rests on ``x`` or on the accuracy of ``y``.
    """
    m, n = A.shape
    K = m + 2 * n
    x = np.empty(n)
    y = np.zeros(m)
    ray = np.zeros(m)
    lam = np.empty(n)
    W = np.empty(n, dtype=np.int64)
    inW = np.zeros(K, dtype=np.bool_)
    Binv = np.zeros((n, n))
    g = np.empty(n)
    u = np.empty(n)
    d = np.empty(n)
    tau = np.empty(n)
    act = np.empty(m)
    wt = np.empty(m)
    slack = np.empty(m)
    for i in range(m):
        s = abs(b[i])
        for j in range(n):
            s += abs(A[i, j]) * max(abs(xl[j]), abs(xh[j]))
        slack[i] = tol * (1.0 + s)
    # the first basis: each variable at the bound its cost points to
    for j in range(n):
        if c[j] >= 0.0:
            W[j] = m + n + j
            Binv[j, j] = -1.0
            x[j] = xl[j]
            lam[j] = c[j]
        else:
            W[j] = m + j
            Binv[j, j] = 1.0
            x[j] = xh[j]
            lam[j] = -c[j]
        inW[W[j]] = True
    # the first weights (B = diag(+-1)): 1 + |a_i|^2
    for i in range(m):
        w = 1.0
        for j in range(n):
            w += A[i, j] * A[i, j]
        wt[i] = w
    _activities(A, x, act)
    it = 0
    since = 0
    while True:
        # pricing: the violated constraint of largest steepest-edge excess
        p = -1
        best = 0.0
        hp = 0.0
        for i in range(m):
            if inW[i]:
                continue
            v = act[i] - b[i]
            if v > slack[i]:
                v = v * v / wt[i]
                if v > best:
                    best, p, hp = v, i, b[i]
        for j in range(n):
            up = x[j] - xh[j]
            low = xl[j] - x[j]
            if up <= 0.0 and low <= 0.0:
                continue
            w = 1.0
            for r in range(n):
                w += Binv[j, r] * Binv[j, r]
            if not inW[m + j] and up > tol * (1.0 + abs(xh[j])) and up * up / w > best:
                best, p, hp = up * up / w, m + j, xh[j]
            if not inW[m + n + j] and low > tol * (1.0 + abs(xl[j])) and low * low / w > best:
                best, p, hp = low * low / w, m + n + j, -xl[j]
        if p < 0:
            if since > 0:  # clean the final vertex and multipliers, then look again
                if not _refresh(A, b, xl, xh, c, W, Binv, x, lam, g, act):
                    return FAILED, x, y, ray, it
                since = 0
                continue
            for i in range(n):
                if W[i] < m:
                    y[W[i]] = lam[i]
            return OPTIMAL, x, y, ray, it
        if it >= max_iter:
            return FAILED, x, y, ray, it
        it += 1
        since += 1
        # u = B^-T g_p: how the multipliers change as p's grows
        _row(A, b, xl, xh, p, g)
        umax = 0.0
        gx = 0.0
        for i in range(n):
            s = 0.0
            for r in range(n):
                s += Binv[r, i] * g[r]
            u[i] = s
            umax = max(umax, abs(s))
        for j in range(n):
            gx += g[j] * x[j]
        piv = 1e-9 * max(1.0, umax)
        # Harris's ratio test on the multipliers
        theta = np.inf
        for i in range(n):
            if u[i] > piv:
                theta = min(theta, (lam[i] + tol) / u[i])
        if theta == np.inf:  # no multiplier limits the step: p cannot be met
            if p < m:
                ray[p] = 1.0
            for i in range(n):
                if W[i] < m and u[i] < 0.0:
                    ray[W[i]] = -u[i]
            return INFEASIBLE, x, y, ray, it
        q = -1
        for i in range(n):
            if u[i] > piv and lam[i] / u[i] <= theta and (q < 0 or u[i] > u[q]):
                q = i
        step = max(lam[q] / u[q], 0.0)
        for i in range(n):
            lam[i] = max(lam[i] - step * u[i], 0.0)
        lam[q] = step
        # the vertex moves along the edge that frees constraint W[q]
        uq = u[q]
        uu = 0.0
        for i in range(n):
            uu += u[i] * u[i]
        for r in range(n):
            d[r] = Binv[r, q]
            s = 0.0
            for i in range(n):
                s += Binv[r, i] * u[i]
            tau[r] = s
        sigma = (hp - gx) / uq
        for r in range(n):
            x[r] += sigma * d[r]
        # activities and weights of the rows outside the new basis
        for i in range(m):
            if inW[i] or i == p:
                continue
            al = 0.0
            be = 0.0
            for j in range(n):
                al += A[i, j] * d[j]
                be += A[i, j] * tau[j]
            act[i] += sigma * al
            f = al / uq
            w = wt[i] - 2.0 * f * (be - al) + f * f * (uu - 2.0 * uq + 1.0)
            floor = 1.0 + f * f
            wt[i] = w if w > floor else floor
        leave = W[q]
        if leave < m:  # the leaving row: B_new^-T g = e_q (1 + 1/uq) - u / uq
            w = 1.0
            for i in range(n):
                z = -u[i] / uq + ((1.0 + 1.0 / uq) if i == q else 0.0)
                w += z * z
            wt[leave] = w
            s = 0.0
            for j in range(n):
                s += A[leave, j] * x[j]
            act[leave] = s
        # rank-one update of the inverse: row q of B becomes g_p
        for i in range(n):
            f = (u[i] - (1.0 if i == q else 0.0)) / uq
            if f != 0.0:
                for r in range(n):
                    Binv[r, i] -= d[r] * f
        inW[leave] = False
        W[q] = p
        inW[p] = True
        if since >= _REFACTOR:
            if not _refresh(A, b, xl, xh, c, W, Binv, x, lam, g, act):
                return FAILED, x, y, ray, it
            since = 0


@njit(**JIT)
def least_values(A, b, x, xl, first, sweeps):
    """A copy of the point ``x`` of ``A x <= b``, ``x >= xl`` with the variables
    ``first, first + 1, ...`` lowered, one after the other in ``sweeps`` sweeps,
    to the least value the rows allow with the others held: ``max(xl_j,
    max_{i: A_ij < 0} (b_i - sum_{k != j} A_ik x_k) / A_ij)``.  Lowering a
    variable never breaks a row where its coefficient is positive, so a
    feasible point stays feasible (up to rounding); the objective does not
    move when those variables cost nothing.
    """
    m, n = A.shape
    y = x.copy()
    act = np.empty(m)
    _activities(A, y, act)
    for _ in range(sweeps):
        for j in range(first, n):
            new = xl[j]
            for i in range(m):
                a = A[i, j]
                if a < 0.0:
                    new = max(new, (b[i] - (act[i] - a * y[j])) / a)
            if new < y[j]:
                delta = new - y[j]
                for i in range(m):
                    act[i] += A[i, j] * delta
                y[j] = new
    return y


@njit(**JIT)
def dual_residuals(c, A, y):
    """``r = c + A^T y`` and its magnitude ``|c| + |A|^T y`` (``y >= 0``), the rows
    summed in order (no BLAS: the same bits on every machine)."""
    m, n = A.shape
    r = c.copy()
    mag = np.abs(c)
    for i in range(m):
        yi = y[i]
        if yi != 0.0:
            for j in range(n):
                a = A[i, j]
                r[j] += a * yi
                mag[j] += abs(a) * yi
    return r, mag


@njit(**JIT)
def dual_bound(r, mag_r, b, lo, hi, y, rtol):
    """``-y.b + sum_j min(r_j lo_j, r_j hi_j)`` (a term 0 where ``r_j = 0``) lowered
    by ``rtol (1 + |b|.y + sum_j mag_r_j max(|lo_j|, |hi_j|))`` (a term 0 where
    ``mag_r_j = 0``, whatever the bounds), summed in order; ``-inf`` when it is
    not finite, never NaN (:func:`isoapprox.ideal._lpdual.safe_dual_bound`)."""
    s = 0.0
    mag = 0.0
    for i in range(b.shape[0]):
        s -= b[i] * y[i]
        mag += abs(b[i]) * y[i]
    for j in range(r.shape[0]):
        rj = r[j]
        if rj != 0.0:
            s += min(rj * lo[j], rj * hi[j])
        if mag_r[j] != 0.0:
            mag += mag_r[j] * max(abs(lo[j]), abs(hi[j]))
    out = s - rtol * (1.0 + mag)
    if not np.isfinite(out):
        return -np.inf
    return out
