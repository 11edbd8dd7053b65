"""Minimum enclosing ball: the exact planar circle and the Frank-Wolfe dual.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.meb``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import JIT

__all__ = ["IN_RTOL", "meb_2d", "meb_bracket", "meb_dual_fw", "support_radius"]

#: relative slack on the squared radius of the "point outside the circle"
#: test (see docs/dev/kernels_design.md)
IN_RTOL = 1e-12
#: Frank-Wolfe target gap of :func:`meb_bracket`
_FW_EPS = 1e-10
_FW_ITER = 100_000


# ---------------------------------------------------------------------------
# Planar: Welzl with move-to-front
# ---------------------------------------------------------------------------


@njit(inline="always", **JIT)
def _d2(P, i, cx, cy):
    dx = P[i, 0] - cx
    dy = P[i, 1] - cy
    return dx * dx + dy * dy


@njit(**JIT)
def _circle3(P, i, j, k):
    """Circumcircle of three points; the farthest pair's diametral circle if
    they are (nearly) collinear.  Returns (cx, cy, r2, degenerate)."""
    bx = P[j, 0] - P[i, 0]
    by = P[j, 1] - P[i, 1]
    qx = P[k, 0] - P[i, 0]
    qy = P[k, 1] - P[i, 1]
    d = 2.0 * (bx * qy - by * qx)
    b2 = bx * bx + by * by
    q2 = qx * qx + qy * qy
    if abs(d) <= 1e-14 * (b2 + q2) or d == 0.0:
        # collinear: diametral circle of the farthest pair
        r_jk = (P[j, 0] - P[k, 0]) ** 2 + (P[j, 1] - P[k, 1]) ** 2
        if b2 >= q2 and b2 >= r_jk:
            return 0.5 * (P[i, 0] + P[j, 0]), 0.5 * (P[i, 1] + P[j, 1]), 0.25 * b2, True
        if q2 >= r_jk:
            return 0.5 * (P[i, 0] + P[k, 0]), 0.5 * (P[i, 1] + P[k, 1]), 0.25 * q2, True
        return 0.5 * (P[j, 0] + P[k, 0]), 0.5 * (P[j, 1] + P[k, 1]), 0.25 * r_jk, True
    ux = (qy * b2 - by * q2) / d
    uy = (bx * q2 - qx * b2) / d
    return P[i, 0] + ux, P[i, 1] + uy, ux * ux + uy * uy, False


@njit(**JIT)
def meb_2d(P, order, sup, w):
    """Minimum enclosing circle of the rows of ``P`` (N, 2).

    Iterative Welzl (de Berg et al., MiniDisc) over the index permutation
    ``order``; afterwards the support points are moved to the front of
    ``order`` (in place), so a nearby point set is solved in one ``O(N)``
    pass.  ``sup`` (3,) receives the support indices (``-1`` padded) and
    ``w`` (3,) dual weights on them (barycentric coordinates of the centre,
    clipped to the simplex: any simplex weights give a valid lower bound).

    Returns ``(cx, cy, radius)`` with ``radius = max_k ||P_k - c||`` computed
    by direct differences.
    """
    N = P.shape[0]
    i0 = order[0]
    cx = P[i0, 0]
    cy = P[i0, 1]
    r2 = 0.0
    s0 = i0
    s1 = -1
    s2 = -1
    for a in range(1, N):
        pa = order[a]
        if _d2(P, pa, cx, cy) <= r2 * (1.0 + IN_RTOL):
            continue
        cx = P[pa, 0]
        cy = P[pa, 1]
        r2 = 0.0
        s0 = pa
        s1 = -1
        s2 = -1
        for b in range(a):
            pb = order[b]
            if _d2(P, pb, cx, cy) <= r2 * (1.0 + IN_RTOL):
                continue
            cx = 0.5 * (P[pa, 0] + P[pb, 0])
            cy = 0.5 * (P[pa, 1] + P[pb, 1])
            r2 = _d2(P, pa, cx, cy)
            s0 = pa
            s1 = pb
            s2 = -1
            for c in range(b):
                pc = order[c]
                if _d2(P, pc, cx, cy) <= r2 * (1.0 + IN_RTOL):
                    continue
                cx, cy, r2, degen = _circle3(P, pa, pb, pc)
                s0 = pa
                s1 = pb
                s2 = pc
                if degen:
                    # keep the two points whose diametral circle was taken
                    d_ab = (P[pa, 0] - P[pb, 0]) ** 2 + (P[pa, 1] - P[pb, 1]) ** 2
                    d_ac = (P[pa, 0] - P[pc, 0]) ** 2 + (P[pa, 1] - P[pc, 1]) ** 2
                    d_bc = (P[pb, 0] - P[pc, 0]) ** 2 + (P[pb, 1] - P[pc, 1]) ** 2
                    if d_ab >= d_ac and d_ab >= d_bc:
                        s2 = -1
                    elif d_ac >= d_bc:
                        s1 = pc
                        s2 = -1
                    else:
                        s0 = pb
                        s1 = pc
                        s2 = -1
    sup[0] = s0
    sup[1] = s1
    sup[2] = s2
    # dual weights on the support
    if s1 < 0:
        w[0] = 1.0
        w[1] = 0.0
        w[2] = 0.0
    elif s2 < 0:
        w[0] = 0.5
        w[1] = 0.5
        w[2] = 0.0
    else:
        bx = P[s1, 0] - P[s0, 0]
        by = P[s1, 1] - P[s0, 1]
        qx = P[s2, 0] - P[s0, 0]
        qy = P[s2, 1] - P[s0, 1]
        ox = cx - P[s0, 0]
        oy = cy - P[s0, 1]
        det = bx * qy - by * qx
        l1 = (ox * qy - oy * qx) / det
        l2 = (bx * oy - by * ox) / det
        l0 = max(1.0 - l1 - l2, 0.0)
        l1 = max(l1, 0.0)
        l2 = max(l2, 0.0)
        t = l0 + l1 + l2
        if not (t > 0.0) or not np.isfinite(t):
            l0 = 1.0 / 3.0
            l1 = 1.0 / 3.0
            l2 = 1.0 / 3.0
            t = 1.0
        w[0] = l0 / t
        w[1] = l1 / t
        w[2] = l2 / t
    # move the support to the front of the order
    pos = 0
    for s in range(3):
        ss = sup[s]
        if ss < 0:
            continue
        for q in range(N):
            if order[q] == ss:
                for r in range(q, pos, -1):
                    order[r] = order[r - 1]
                order[pos] = ss
                pos += 1
                break
    # exact radius of the returned centre
    rr = 0.0
    for k in range(N):
        rr = max(rr, _d2(P, k, cx, cy))
    return cx, cy, np.sqrt(rr)


@njit(inline="always", **JIT)
def _dxy(W, i, cx, cy):
    dx = W[i, 0] - cx
    dy = W[i, 1] - cy
    return np.sqrt(dx * dx + dy * dy)


@njit(**JIT)
def _circumcircle(W, i, j, k):
    """Circle through three points; ``ok`` is False when they are (nearly) collinear."""
    ax = W[i, 0]
    ay = W[i, 1]
    bx = W[j, 0] - ax
    by = W[j, 1] - ay
    cx = W[k, 0] - ax
    cy = W[k, 1] - ay
    d = 2.0 * (bx * cy - by * cx)
    b2 = bx * bx + by * by
    c2 = cx * cx + cy * cy
    if d == 0.0 or not np.isfinite(d):
        return 0.0, 0.0, 0.0, False
    ux = (cy * b2 - by * c2) / d
    uy = (bx * c2 - cx * b2) / d
    if not (np.isfinite(ux) and np.isfinite(uy)):
        return 0.0, 0.0, 0.0, False
    ox = ax + ux
    oy = ay + uy
    r = max(_dxy(W, i, ox, oy), max(_dxy(W, j, ox, oy), _dxy(W, k, ox, oy)))
    return ox, oy, r, True


@njit(**JIT)
def support_radius(W, i, j, k):
    """Exact minimum enclosing radius of the support points (a lower bound)."""
    if j < 0:
        return 0.0
    dij = _dxy(W, i, W[j, 0], W[j, 1])
    if k < 0:
        return 0.5 * dij
    dik = _dxy(W, i, W[k, 0], W[k, 1])
    djk = _dxy(W, j, W[k, 0], W[k, 1])
    # longest side and the other two
    a = dij
    b = dik
    c = djk
    if b > a:
        a, b = b, a
    if c > a:
        a, c = c, a
    if a * a >= b * b + c * c:  # right or obtuse: the longest side's circle
        return 0.5 * a
    ox, oy, r, ok = _circumcircle(W, i, j, k)
    if not ok:
        return 0.5 * a
    return min(r, max(_dxy(W, i, ox, oy), max(_dxy(W, j, ox, oy), _dxy(W, k, ox, oy))))


# ---------------------------------------------------------------------------
# Any dimension: Frank-Wolfe with away steps on the dual
# ---------------------------------------------------------------------------


@njit(**JIT)
def meb_dual_fw(Y, idx, u, max_iter, eps):
    """Frank-Wolfe with away steps on the MEB dual restricted to rows ``idx``.

    Maximises ``Phi(u) = sum_i u_i |y_i|^2 - |sum_i u_i y_i|^2`` over the
    simplex (Yildirim 2008, Algorithm 2).  ``u`` (length ``len(idx)``) is
    updated in place.  Returns the centre and the number of iterations.
    """
    m = idx.shape[0]
    n = Y.shape[1]
    sq = np.empty(m)
    for i in range(m):
        s = 0.0
        for k in range(n):
            s += Y[idx[i], k] * Y[idx[i], k]
        sq[i] = s
    c = np.zeros(n)
    s_w = 0.0
    for i in range(m):
        if u[i] > 0.0:
            s_w += u[i] * sq[i]
            for k in range(n):
                c[k] += u[i] * Y[idx[i], k]
    dist2 = np.empty(m)
    it = 0
    target = (1.0 + eps) ** 2 - 1.0
    while it < max_iter:
        cc = 0.0
        for k in range(n):
            cc += c[k] * c[k]
        gamma = s_w - cc
        for i in range(m):
            s = 0.0
            for k in range(n):
                t = Y[idx[i], k] - c[k]
                s += t * t
            dist2[i] = s
        kap = 0
        for i in range(1, m):
            if dist2[i] > dist2[kap]:
                kap = i
        zeta = -1
        for i in range(m):
            if u[i] > 0.0 and (zeta < 0 or dist2[i] < dist2[zeta]):
                zeta = i
        if gamma <= 0.0:
            # all weight on coincident points: move towards the farthest one
            if dist2[kap] == 0.0:
                break
            gamma = 1e-300
        dplus = dist2[kap] / gamma - 1.0
        dminus = 1.0 - dist2[zeta] / gamma
        if max(dplus, dminus) <= target:
            break
        if dplus > dminus:
            lam = dplus / (2.0 * (1.0 + dplus))
            for i in range(m):
                u[i] *= 1.0 - lam
            u[kap] += lam
            for k in range(n):
                c[k] = (1.0 - lam) * c[k] + lam * Y[idx[kap], k]
            s_w = (1.0 - lam) * s_w + lam * sq[kap]
        else:
            uz = u[zeta]
            if uz >= 1.0:
                break
            # dminus == 1 when a weighted point sits exactly at the centre:
            # then the line search is unbounded and the step is clipped
            if dminus >= 1.0:
                lam = uz / (1.0 - uz)
            else:
                lam = min(dminus / (2.0 * (1.0 - dminus)), uz / (1.0 - uz))
            for i in range(m):
                u[i] *= 1.0 + lam
            u[zeta] -= lam
            if u[zeta] < 1e-300:
                u[zeta] = 0.0
            for k in range(n):
                c[k] = (1.0 + lam) * c[k] - lam * Y[idx[zeta], k]
            s_w = (1.0 + lam) * s_w - lam * sq[zeta]
        it += 1
    return c, it


@njit(inline="always", **JIT)
def _farthest_row(Y, a):
    """The first row of ``Y`` farthest from row ``a`` and its squared distance."""
    b = a
    best = -1.0
    for i in range(Y.shape[0]):
        s = 0.0
        for k in range(Y.shape[1]):
            t = Y[i, k] - Y[a, k]
            s += t * t
        if s > best:
            best = s
            b = i
    return b, best


@njit(**JIT)
def meb_bracket(W):
    """Minimum enclosing ball in any dimension: Frank-Wolfe bracket ``(upper, lower)``."""
    N, n = W.shape
    mean = np.zeros(n)
    for i in range(N):
        for k in range(n):
            mean[k] += W[i, k]
    for k in range(n):
        mean[k] /= N
    Y = np.empty((N, n))
    for i in range(N):
        for k in range(n):
            Y[i, k] = W[i, k] - mean[k]
    # start from the farthest pair (as isoapprox.min_enclosing_ball does): a
    # uniform start can put a weighted point at the centre, where the away
    # step of the Frank-Wolfe kernel divides by zero
    a, _ = _farthest_row(Y, 0)
    b, best = _farthest_row(Y, a)
    if best == 0.0:
        return 0.0, 0.0
    idx = np.arange(N)
    u = np.zeros(N)
    u[a] = 0.5
    u[b] = 0.5
    c, _ = meb_dual_fw(Y, idx, u, _FW_ITER, _FW_EPS)
    tot = 0.0
    for i in range(N):
        tot += u[i]
    cu = np.zeros(n)
    for i in range(N):
        w = u[i] / tot
        for k in range(n):
            cu[k] += w * Y[i, k]
    phi = 0.0
    up_c = 0.0
    up_u = 0.0
    for i in range(N):
        s_u = 0.0
        s_c = 0.0
        for k in range(n):
            t = Y[i, k] - cu[k]
            s_u += t * t
            t = Y[i, k] - c[k]
            s_c += t * t
        phi += (u[i] / tot) * s_u
        up_u = max(up_u, np.sqrt(s_u))
        up_c = max(up_c, np.sqrt(s_c))
    upper = min(up_u, up_c)
    return upper, min(np.sqrt(phi), upper)
