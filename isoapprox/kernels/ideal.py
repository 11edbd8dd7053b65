"""numba kernels of the nearest-ideal solvers: arrays in, arrays out.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.ideal``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import JIT
from .distances import dist, isometric_error_kernel, pointwise_kernel, sq_dist

__all__ = [
    "al_value_grad",
    "anchor_slack",
    "class_diameters",
    "epigraph_rows",
    "haus_triplet_bound",
    "haus_triplet_level",
    "haus_value",
    "iso_value",
    "pair_slack",
    "three_point_bounds",
]

@njit(**JIT)
def epigraph_rows(x, N, n, E, kind, ri, rj, rk, rv, alpha, kappa, want_jac, c, J):
    """Evaluate the constraint rows (and their Jacobian when ``want_jac``).

    ``c`` (m,) and ``J`` (m, N*n + 1 + A) are written in place; ``J`` must be
    zero on entry when ``want_jac`` (only the non-zero entries are written).
    """
    t_idx = N * n
    G = x[:t_idx].reshape((N, n))
    for row in range(kind.shape[0]):
        kd = kind[row]
        i = ri[row]
        j = rj[row]
        if kd == 2:
            c[row] = x[t_idx] - sq_dist(G, i, E, j)
            if want_jac:
                for d in range(n):
                    J[row, i * n + d] = -2.0 * (x[i * n + d] - E[j, d])
                J[row, t_idx] = 1.0
            continue
        q = sq_dist(G, i, G, j)
        # the row's derivative in G_i is f (G_i - G_j), in G_j its negative
        if kd == 0:
            Dv = rv[row]
            t = x[t_idx]
            c[row] = (Dv + t) * (Dv + t) - q
            f = -2.0
            if want_jac:
                J[row, t_idx] = 2.0 * (Dv + t)
        elif kd == 1:
            Dv = rv[row]
            w = Dv - x[t_idx]
            c[row] = q - w * abs(w)
            f = 2.0
            if want_jac:
                J[row, t_idx] = 2.0 * abs(w)
        elif kd == 3:
            r = x[t_idx + 1 + rk[row]]
            c[row] = r * r - q
            f = -2.0
            if want_jac:
                J[row, t_idx + 1 + rk[row]] = 2.0 * r
        elif kd == 4:
            r = x[t_idx + 1 + rk[row]]
            if alpha > 0.0:
                c[row] = q - (r + alpha) * (r + alpha)
                dr = -2.0 * (r + alpha)
            else:
                c[row] = q - (1.0 + kappa) * r * r
                dr = -2.0 * (1.0 + kappa) * r
            f = 2.0
            if want_jac:
                J[row, t_idx + 1 + rk[row]] = dr
        else:
            bnd = rv[row]
            sg = -1.0 if kd == 5 else 1.0
            c[row] = sg * (q - bnd * bnd)
            f = 2.0 * sg
        if want_jac:
            for d in range(n):
                u = x[i * n + d] - x[j * n + d]
                J[row, i * n + d] = f * u
                J[row, j * n + d] = -f * u
    return c


def iso_value(X1, X2):
    """``max_{i<j} |d1(i, j) - d2(i, j)|`` (``0.0`` without a pair).

    A Python function: :func:`isometric_error_kernel` compiles only the serial
    or the parallel sweep, whichever the size needs.
    """
    return max(isometric_error_kernel(X1, X2)[0], 0.0)


@njit(**JIT)
def haus_value(X1, X2):
    """``max_k ||X1_k - X2_k||`` (``0.0`` without a point)."""
    return max(pointwise_kernel(X1, X2)[0], 0.0)


@njit(**JIT)
def class_diameters(X, codes, n_classes):
    """Diameter of every class and (last entry) of all of ``X`` (serial)."""
    out = np.zeros(n_classes + 1)
    N = X.shape[0]
    for i in range(N):
        for j in range(i + 1, N):
            d = dist(X, i, X, j)
            if d > out[n_classes]:
                out[n_classes] = d
            if codes[i] == codes[j] and d > out[codes[i]]:
                out[codes[i]] = d
    return out


@njit(**JIT)
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
            d = dist(X, a, X, b)
            if codes[b] == codes[a]:
                hp = max(hp, d)
            else:
                hn = min(hn, d)
        if hp >= 0.0 and hn < np.inf:
            out[a] = hn - (hp + alpha)
    return out


@njit(**JIT)
def pair_slack(X, codes, upper, lower):
    """Worst slacks of the pair bounds: ``(min_pos upper - d, min_neg d - lower)``.

    Positive pairs are ``i < j`` of one class, negative pairs of two classes;
    ``+inf`` when there is no such pair.  Direct differences, serial.
    """
    N = X.shape[0]
    sp = np.inf
    sn = np.inf
    for i in range(N):
        for j in range(i + 1, N):
            d = dist(X, i, X, j)
            if codes[i] == codes[j]:
                sp = min(sp, upper - d)
            else:
                sn = min(sn, d - lower)
    return sp, sn


@njit(**JIT)
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
    # the first of the largest (a later value replaces an earlier one only when larger)
    return max(0.0, 0.5 * (Dx - lo + alpha), alpha - lo, (hi - 2.0 * lo + alpha) / 3.0,
               (hi - lo - Dx) / 3.0)


@njit(**JIT)
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
            Dx = dist(X, i, X, j)
            for k in range(N):
                if codes[k] == codes[i]:
                    continue
                s = _three_point_level(Dx, dist(X, i, X, k), dist(X, j, X, k), alpha)
                if s > best:
                    best = s
                    bi = i
                    bj = j
                    bk = k
    return best, bi, bj, bk


@njit(**JIT)
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
    G = x[:t_idx].reshape((N, n))
    for row in range(kind.shape[0]):
        kd = kind[row]
        i = ri[row]
        j = rj[row]
        l = lam[row]
        if kd == 2:
            cv = x[t_idx] - sq_dist(G, i, E, j)
        else:
            q = sq_dist(G, i, G, j)
            if kd == 0:
                Dv = rv[row] + x[t_idx]
                cv = Dv * Dv - q
            elif kd == 1:
                w = rv[row] - x[t_idx]
                cv = q - w * abs(w)
            elif kd == 3:
                r = x[t_idx + 1 + rk[row]]
                cv = r * r - q
            elif kd == 4:
                r = x[t_idx + 1 + rk[row]]
                if alpha > 0.0:
                    cv = q - (r + alpha) * (r + alpha)
                else:
                    cv = q - (1.0 + kappa) * r * r
            elif kd == 5:
                cv = rv[row] * rv[row] - q
            else:
                cv = q - rv[row] * rv[row]
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
        elif kd == 5:
            sign = -1.0
        elif kd == 6:
            sign = 1.0
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


# ---------------------------------------------------------------------------
# Single-triplet bound for the pointwise (haus) objective
# ---------------------------------------------------------------------------


@njit(**JIT)
def _circle_g(px, mx, my, delta, phi):
    """``g = |x - m| - |x - p|`` at ``x = delta (cos phi, sin phi)`` and ``dg/dphi``."""
    x = delta * np.cos(phi)
    y = delta * np.sin(phi)
    dm = np.sqrt((x - mx) ** 2 + (y - my) ** 2)
    dp = np.sqrt((x - px) ** 2 + y * y)
    tx = -y
    ty = x
    gm = ((x - mx) * tx + (y - my) * ty) / dm if dm > 0.0 else delta
    gp = ((x - px) * tx + y * ty) / dp if dp > 0.0 else -delta
    return dm - dp, gm - gp, dp


@njit(**JIT)
def _circle_max_below(px, mx, my, delta, thresh, max_eval):
    """Is ``max_phi g(delta e(phi)) < thresh`` provably?  ``g(x) = |x - m| - |x - p|``.

    ``p = (px, 0)``, ``m = (mx, my)``, the circle of radius ``delta`` about the
    origin.  Branch and bound on arcs: on an arc of half-width ``w`` about
    ``c``, ``max g <= g(c) + min(2 delta w, |g'(c)| w + M w^2 / 2)`` with
    ``|g'| <= 2 delta`` and ``|g''| <= M = 2 delta + delta^2 (1/r_m + 1/r_p)``,
    ``r_m``, ``r_p`` the distances from the circle to ``m`` and ``p``.  Arcs
    that lie inside ``B(p, delta)`` (``|x - p| <= |x_c - p| + delta w < delta``)
    are dropped: the lens branch covers them.  Returns 1 (proved below), 0 (a
    point outside ``B(p, delta)`` reaches ``thresh``) or -1 (undecided within
    ``max_eval`` evaluations).
    """
    rm = abs(np.sqrt(mx * mx + my * my) - delta)
    rp = abs(abs(px) - delta)
    if rm > 0.0 and rp > 0.0:
        M = 2.0 * delta + delta * delta * (1.0 / rm + 1.0 / rp)
    else:
        M = np.inf
    K = 64
    cap = 4096
    cen = np.empty(cap)
    half = np.empty(cap)
    n_live = 0
    w0 = np.pi / K
    n_eval = 0
    for k in range(K):
        c = -np.pi + (2 * k + 1) * w0
        g, dg, dp = _circle_g(px, mx, my, delta, c)
        n_eval += 1
        if dp + delta * w0 < delta:
            continue
        if g >= thresh and dp >= delta:
            return 0
        if g + min(2.0 * delta * w0, abs(dg) * w0 + 0.5 * M * w0 * w0) >= thresh:
            cen[n_live] = c
            half[n_live] = w0
            n_live += 1
    while n_live > 0:
        if n_eval >= max_eval or n_live + 2 > cap:
            return -1
        n_live -= 1
        c = cen[n_live]
        w = 0.5 * half[n_live]
        for s in (-1.0, 1.0):
            cc = c + s * w
            g, dg, dp = _circle_g(px, mx, my, delta, cc)
            n_eval += 1
            if dp + delta * w < delta:
                continue
            if g >= thresh and dp >= delta:
                return 0
            if g + min(2.0 * delta * w, abs(dg) * w + 0.5 * M * w * w) >= thresh:
                cen[n_live] = cc
                half[n_live] = w
                n_live += 1
    return 1


@njit(**JIT)
def _lens_far(px, mx, my, delta):
    """Largest distance from ``m`` to the lens ``B(0, delta) & B((px, 0), delta)``.

    A convex function attains its maximum over the lens at an extreme point:
    the farthest point of either disk from ``m`` when it lies in the other
    disk, or one of the two corners.
    """
    best = -1.0
    tol = 1e-12 * (delta + px)
    for k in range(2):
        cx = 0.0 if k == 0 else px  # this disk's centre
        ox = px if k == 0 else 0.0  # the other disk's centre
        ux = cx - mx
        uy = -my
        un = np.sqrt(ux * ux + uy * uy)
        if un > 0.0:
            qx = cx + delta * ux / un
            qy = delta * uy / un
        else:
            qx = cx + delta
            qy = 0.0
        if np.sqrt((qx - ox) ** 2 + qy * qy) <= delta + tol:
            best = max(best, np.sqrt((qx - mx) ** 2 + (qy - my) ** 2))
    h2 = delta * delta - 0.25 * px * px
    h = np.sqrt(h2) if h2 > 0.0 else 0.0
    for sy in (-1.0, 1.0):
        best = max(best, np.sqrt((0.5 * px - mx) ** 2 + (sy * h - my) ** 2))
    return best * (1.0 + 1e-12) + tol


@njit(**JIT)
def _triplet_infeasible(dap, px, mx, my, dam, dpm, delta, alpha):
    """Certify that no moves of ``a, p, m`` by ``<= delta`` satisfy the triplet."""
    # a at the origin, p = (px, 0), m = (mx, my), all in the plane of the three
    # points (rotation about the line pm maps any a' to that plane closer to a)
    # -- the branch |a' - p| < delta (then p' = a' is best) needs a' in the
    #    lens B(a, delta) & B(p, delta) with |a' - m| + delta >= alpha
    if dap < 2.0 * delta and _lens_far(dap, mx, my, delta) + delta >= alpha * (1.0 - 1e-12):
        return False
    # -- outside B(p, delta), h = g + delta with g = |x - m| - |x - p|; g has
    #    its global maximum |p - m| on the ray p + t (p - m) / |p - m|; the
    #    part t >= delta of the ray is outside B(p, delta)
    wx = px - mx
    wy = -my
    wn = np.sqrt(wx * wx + wy * wy)
    if wn > 0.0:
        wx /= wn
        wy /= wn
        # projection of the origin on the ray's line, from p, at least delta
        t = max(-(px * wx), delta)
        qx = px + t * wx
        qy = t * wy
        if np.sqrt(qx * qx + qy * qy) <= delta:
            return dpm < alpha - 2.0 * delta
    else:
        # p = m: g vanishes identically
        return 0.0 < alpha - 2.0 * delta
    # -- no other interior critical point is a maximum (g is critical only on
    #    the two rays of the line pm, with its minimum beyond m), so the
    #    maximum of h is on the circle |x| = delta (bounded there by g + delta)
    #    or on the arc |x - p| = delta (covered by the lens branch above)
    return _circle_max_below(px, mx, my, delta, alpha - 2.0 * delta, 4000) == 1


@njit(**JIT)
def haus_triplet_level(A, P, Mv, alpha):
    """Certified lower bound on the single-triplet haus problem of ``(a, p, m)``.

    ``min delta`` such that moving ``a, p, m`` by at most ``delta`` each gives
    ``d(a', m') >= d(a', p') + alpha``.  With ``l = D_ap - D_am + alpha``,
    ``l / 4`` is proved (each of ``d_ap``, ``d_am`` moves by ``<= 2 delta``)
    and ``l / 2`` is feasible; bisection keeps the largest ``delta`` whose
    infeasibility is certified.
    """
    n = A.shape[0]
    dap = 0.0
    dam = 0.0
    for d in range(n):
        dap += (P[d] - A[d]) ** 2
        dam += (Mv[d] - A[d]) ** 2
    dap = np.sqrt(dap)
    dam = np.sqrt(dam)
    ell = dap - dam + alpha
    if ell <= 0.0:
        return 0.0
    # plane coordinates: a = 0, p = (dap, 0), m = (mx, my >= 0)
    if dap > 0.0:
        mx = 0.0
        for d in range(n):
            mx += (Mv[d] - A[d]) * (P[d] - A[d])
        mx /= dap
    else:
        mx = dam
    my2 = dam * dam - mx * mx
    my = np.sqrt(my2) if my2 > 0.0 else 0.0
    dpm = 0.0
    for d in range(n):
        dpm += (Mv[d] - P[d]) ** 2
    dpm = np.sqrt(dpm)
    lo = 0.25 * ell
    hi = 0.5 * ell
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _triplet_infeasible(dap, dap, mx, my, dam, dpm, mid, alpha):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo


@njit(**JIT)
def haus_triplet_bound(X, codes, alpha, floor):
    """Max over triplets of :func:`haus_triplet_level` when it exceeds ``floor``.

    Triplets whose loss ``l`` has ``l / 2 <= floor`` are skipped (their value
    is at most ``l / 2``).  Returns ``-1.0`` when no triplet beats ``floor``.
    """
    N = X.shape[0]
    best = floor
    found = -1.0
    for a in range(N):
        for p in range(N):
            if p == a or codes[p] != codes[a]:
                continue
            for m in range(N):
                if codes[m] == codes[a]:
                    continue
                dap = dist(X, a, X, p)
                dam = dist(X, a, X, m)
                if 0.5 * (dap - dam + alpha) <= best:
                    continue
                v = haus_triplet_level(X[a], X[p], X[m], alpha)
                if v > best:
                    best = v
                    found = v
    return found
