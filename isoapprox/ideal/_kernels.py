"""numba kernels of the nearest-ideal solvers: arrays in, arrays out.

No validation, no randomness.  Every kernel is compiled at module level with
``cache=True`` and ``fastmath=False`` and computes distances by direct
differences.

Constraint rows of the epigraph programs
----------------------------------------
The local solvers work on ``x = [G.ravel(), t, r]`` with ``G`` of shape
``(M, n)`` (one row per *distinct* point: with classes collapsed, several
data points share a row), the epigraph variable ``t`` and one radius
``r_k`` per anchor.  ``N`` below is the number of rows of ``G``.
A row is described by ``(kind, i, j, k, value)``; with ``q_ij = ||G_i - G_j||^2``
the row functions (all required ``>= 0``) are

=====  ==========================================================
kind   function
=====  ==========================================================
0      ``(D + t)^2 - q_ij``                (iso, upper side)
1      ``q_ij - (D - t)|D - t|``            (iso, lower side)
2      ``t - ||G_i - E_j||^2``               (haus, ``t`` is a squared radius)
3      ``r_k^2 - q_ij``                     (positive pair of anchor ``i``)
4      ``q_ij - (r_k + alpha)^2``  if ``alpha > 0``, else
       ``q_ij - (1 + kappa) r_k^2``          (negative pair of anchor ``i``)
=====  ==========================================================

``|d - D| <= t`` is equivalent to rows 0 and 1 for ``t >= 0`` (the lower
side ``d >= D - t`` is void when ``D < t``); rows 3 and 4 state
``max_p d_ap <= r_a`` and ``min_m d_am >= r_a + alpha``, the per-anchor form
of the triplet constraints.  All rows are continuously differentiable.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "al_value_grad",
    "anchor_slack",
    "class_diameters",
    "epigraph_rows",
    "haus_value",
    "iso_value",
    "three_point_bounds",
]

_JIT = dict(cache=True, fastmath=False, nogil=True)


@njit(**_JIT)
def epigraph_rows(x, N, n, E, kind, ri, rj, rk, rv, alpha, kappa, want_jac, c, J):
    """Evaluate the constraint rows (and their Jacobian when ``want_jac``).

    ``c`` (m,) and ``J`` (m, N*n + 1 + A) are written in place; ``J`` must be
    zero on entry when ``want_jac`` (only the non-zero entries are written).
    """
    t_idx = N * n
    m = kind.shape[0]
    for row in range(m):
        kd = kind[row]
        i = ri[row]
        j = rj[row]
        if kd == 2:
            s = 0.0
            for d in range(n):
                u = x[i * n + d] - E[j, d]
                s += u * u
            c[row] = x[t_idx] - s
            if want_jac:
                for d in range(n):
                    J[row, i * n + d] = -2.0 * (x[i * n + d] - E[j, d])
                J[row, t_idx] = 1.0
            continue
        q = 0.0
        for d in range(n):
            u = x[i * n + d] - x[j * n + d]
            q += u * u
        if kd == 0:
            Dv = rv[row]
            t = x[t_idx]
            c[row] = (Dv + t) * (Dv + t) - q
            if want_jac:
                for d in range(n):
                    u = x[i * n + d] - x[j * n + d]
                    J[row, i * n + d] = -2.0 * u
                    J[row, j * n + d] = 2.0 * u
                J[row, t_idx] = 2.0 * (Dv + t)
        elif kd == 1:
            Dv = rv[row]
            w = Dv - x[t_idx]
            c[row] = q - w * abs(w)
            if want_jac:
                for d in range(n):
                    u = x[i * n + d] - x[j * n + d]
                    J[row, i * n + d] = 2.0 * u
                    J[row, j * n + d] = -2.0 * u
                J[row, t_idx] = 2.0 * abs(w)
        elif kd == 3:
            r = x[t_idx + 1 + rk[row]]
            c[row] = r * r - q
            if want_jac:
                for d in range(n):
                    u = x[i * n + d] - x[j * n + d]
                    J[row, i * n + d] = -2.0 * u
                    J[row, j * n + d] = 2.0 * u
                J[row, t_idx + 1 + rk[row]] = 2.0 * r
        else:
            r = x[t_idx + 1 + rk[row]]
            if alpha > 0.0:
                c[row] = q - (r + alpha) * (r + alpha)
                dr = -2.0 * (r + alpha)
            else:
                c[row] = q - (1.0 + kappa) * r * r
                dr = -2.0 * (1.0 + kappa) * r
            if want_jac:
                for d in range(n):
                    u = x[i * n + d] - x[j * n + d]
                    J[row, i * n + d] = 2.0 * u
                    J[row, j * n + d] = -2.0 * u
                J[row, t_idx + 1 + rk[row]] = dr
    return c


@njit(**_JIT)
def _dist(X, i, j):
    s = 0.0
    for d in range(X.shape[1]):
        u = X[i, d] - X[j, d]
        s += u * u
    return np.sqrt(s)


@njit(**_JIT)
def iso_value(X1, X2):
    """``max_{i<j} |d1(i, j) - d2(i, j)|`` (serial: for the solvers' inner loops)."""
    N = X1.shape[0]
    best = 0.0
    for i in range(N):
        for j in range(i + 1, N):
            e = abs(_dist(X1, i, j) - _dist(X2, i, j))
            if e > best:
                best = e
    return best


@njit(**_JIT)
def haus_value(X1, X2):
    """``max_k ||X1_k - X2_k||`` (serial)."""
    best = 0.0
    for k in range(X1.shape[0]):
        s = 0.0
        for d in range(X1.shape[1]):
            u = X1[k, d] - X2[k, d]
            s += u * u
        s = np.sqrt(s)
        if s > best:
            best = s
    return best


@njit(**_JIT)
def class_diameters(X, codes, n_classes):
    """Diameter of every class and (last entry) of all of ``X`` (serial)."""
    out = np.zeros(n_classes + 1)
    N = X.shape[0]
    for i in range(N):
        for j in range(i + 1, N):
            d = _dist(X, i, j)
            if d > out[n_classes]:
                out[n_classes] = d
            if codes[i] == codes[j] and d > out[codes[i]]:
                out[codes[i]] = d
    return out


@njit(**_JIT)
def anchor_slack(X, codes, alpha):
    """Per-anchor ``min_m d_am - (max_p d_ap + alpha)`` (``+inf`` if not an anchor)."""
    N = X.shape[0]
    out = np.full(N, np.inf)
    for a in range(N):
        hp = -1.0
        hn = np.inf
        for b in range(N):
            if b == a:
                continue
            d = _dist(X, a, b)
            if codes[b] == codes[a]:
                if d > hp:
                    hp = d
            elif d < hn:
                hn = d
        if hp >= 0.0 and hn < np.inf:
            out[a] = hn - (hp + alpha)
    return out


@njit(**_JIT)
def _three_point_level(Dx, Du, Dv, alpha):
    """Least ``s`` at which the 3-point table problem is feasible.

    Points ``i, j`` of one class and ``k`` of another; ``Dx = D_ij``,
    ``Du = D_ik``, ``Dv = D_jk``.  Tables ``(x, u, v) >= 0`` with
    ``|x - Dx|, |u - Du|, |v - Dv| <= s``, the two triplets
    ``u >= x + alpha``, ``v >= x + alpha`` and the triangle inequalities.
    Fourier-Motzkin elimination (see ``_bounds``) gives the closed form.
    """
    lo = min(Du, Dv)
    hi = max(Du, Dv)
    s = 0.0
    v1 = 0.5 * (Dx - lo + alpha)
    if v1 > s:
        s = v1
    v2 = alpha - lo
    if v2 > s:
        s = v2
    v3 = (hi - 2.0 * lo + alpha) / 3.0
    if v3 > s:
        s = v3
    v4 = (hi - lo - Dx) / 3.0
    if v4 > s:
        s = v4
    return s


@njit(**_JIT)
def three_point_bounds(X, codes, alpha):
    """Largest 3-point sub-problem value over all ``{i, j, k}`` (``y_i = y_j != y_k``).

    Returns the value and the attaining ``(i, j, k)`` (``-1`` if none).
    """
    N = X.shape[0]
    best = -1.0
    bi = -1
    bj = -1
    bk = -1
    for i in range(N):
        for j in range(i + 1, N):
            if codes[i] != codes[j]:
                continue
            Dx = _dist(X, i, j)
            for k in range(N):
                if codes[k] == codes[i]:
                    continue
                s = _three_point_level(Dx, _dist(X, i, k), _dist(X, j, k), alpha)
                if s > best:
                    best = s
                    bi = i
                    bj = j
                    bk = k
    return best, bi, bj, bk


@njit(**_JIT)
def al_value_grad(x, N, n, E, kind, ri, rj, rk, rv, alpha, kappa, lam, rho, grad, c):
    """Augmented Lagrangian ``t + sum_i psi(c_i, lam_i)`` and its gradient.

    ``psi(c, l) = -l c + rho c^2 / 2`` when ``c <= l / rho``, else
    ``-l^2 / (2 rho)`` (Powell-Hestenes-Rockafellar, inequalities
    ``c_i >= 0``).  ``grad`` and ``c`` (the row values) are written in place.
    """
    t_idx = N * n
    for k in range(grad.shape[0]):
        grad[k] = 0.0
    grad[t_idx] = 1.0
    total = x[t_idx]
    m = kind.shape[0]
    for row in range(m):
        kd = kind[row]
        i = ri[row]
        j = rj[row]
        l = lam[row]
        if kd == 2:
            s = 0.0
            for d in range(n):
                u = x[i * n + d] - E[j, d]
                s += u * u
            cv = x[t_idx] - s
        else:
            q = 0.0
            for d in range(n):
                u = x[i * n + d] - x[j * n + d]
                q += u * u
            if kd == 0:
                Dv = rv[row] + x[t_idx]
                cv = Dv * Dv - q
            elif kd == 1:
                w = rv[row] - x[t_idx]
                cv = q - w * abs(w)
            elif kd == 3:
                r = x[t_idx + 1 + rk[row]]
                cv = r * r - q
            else:
                r = x[t_idx + 1 + rk[row]]
                if alpha > 0.0:
                    cv = q - (r + alpha) * (r + alpha)
                else:
                    cv = q - (1.0 + kappa) * r * r
        c[row] = cv
        if cv * rho <= l:
            total += -l * cv + 0.5 * rho * cv * cv
            g = -l + rho * cv  # d psi / d c
        else:
            total += -0.5 * l * l / rho
            continue
        if g == 0.0:
            continue
        if kd == 2:
            for d in range(n):
                grad[i * n + d] += g * (-2.0) * (x[i * n + d] - E[j, d])
            grad[t_idx] += g
            continue
        sign = 1.0
        if kd == 0:
            sign = -1.0
            grad[t_idx] += g * 2.0 * (rv[row] + x[t_idx])
        elif kd == 1:
            grad[t_idx] += g * 2.0 * abs(rv[row] - x[t_idx])
        elif kd == 3:
            sign = -1.0
            grad[t_idx + 1 + rk[row]] += g * 2.0 * x[t_idx + 1 + rk[row]]
        else:
            r = x[t_idx + 1 + rk[row]]
            if alpha > 0.0:
                grad[t_idx + 1 + rk[row]] += g * (-2.0) * (r + alpha)
            else:
                grad[t_idx + 1 + rk[row]] += g * (-2.0) * (1.0 + kappa) * r
        for d in range(n):
            u = x[i * n + d] - x[j * n + d]
            grad[i * n + d] += g * 2.0 * sign * u
            grad[j * n + d] -= g * 2.0 * sign * u
    return total
