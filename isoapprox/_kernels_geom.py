"""numba kernels for planar geometry: exact minimum enclosing circle, the
certified angle search of minimax Procrustes, convex hull and rotating
calipers.

Arrays in, arrays out: no validation, no I/O, no randomness (the public
wrappers in :mod:`isoapprox.procrustes` and :mod:`isoapprox.thickness` check
their inputs and call these).  Every kernel works in float64, computes
distances by direct differences and is compiled with ``cache=True`` and
``fastmath=False`` (max/min semantics matter everywhere here).  None of them
is parallel.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

__all__ = [
    "diameter_serial",
    "farthest_from_serial",
    "hull_2d",
    "meb_2d",
    "min_width_2d",
    "minimax_angle_search",
    "width_along",
]

_JIT = dict(cache=True, fastmath=False, nogil=True)

#: a point is "outside" the current circle only beyond this relative slack
#: on the squared radius; the radius returned is always re-scored exactly.
_IN_RTOL = 1e-12
_EPS = 2.220446049250313e-16
_TWO_PI = 2.0 * np.pi


# ---------------------------------------------------------------------------
# Minimum enclosing circle (Welzl's algorithm, iterative, move-to-front)
# ---------------------------------------------------------------------------


@njit(inline="always", **_JIT)
def _d2(P, i, cx, cy):
    dx = P[i, 0] - cx
    dy = P[i, 1] - cy
    return dx * dx + dy * dy


@njit(**_JIT)
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


@njit(**_JIT)
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
        if _d2(P, pa, cx, cy) <= r2 * (1.0 + _IN_RTOL):
            continue
        cx = P[pa, 0]
        cy = P[pa, 1]
        r2 = 0.0
        s0 = pa
        s1 = -1
        s2 = -1
        for b in range(a):
            pb = order[b]
            if _d2(P, pb, cx, cy) <= r2 * (1.0 + _IN_RTOL):
                continue
            cx = 0.5 * (P[pa, 0] + P[pb, 0])
            cy = 0.5 * (P[pa, 1] + P[pb, 1])
            r2 = _d2(P, pa, cx, cy)
            s0 = pa
            s1 = pb
            s2 = -1
            for c in range(b):
                pc = order[c]
                if _d2(P, pc, cx, cy) <= r2 * (1.0 + _IN_RTOL):
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
        l0 = 1.0 - l1 - l2
        l0 = max(l0, 0.0)
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
        d = _d2(P, k, cx, cy)
        if d > rr:
            rr = d
    return cx, cy, np.sqrt(rr)


# ---------------------------------------------------------------------------
# Minimax Procrustes in the plane: certified branch and bound over the angle
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _eval_angle(A, E, phi, P, order, sup, w):
    """Evaluate ``r(phi)`` = MEB radius of ``{E_k - R(phi) A_k}``.

    Returns ``(r_up, r_lo2, K, Zr, Zi, cx, cy)``: the radius attained by the
    returned centre, a proven lower bound of ``r(phi)^2`` (a dual value), and
    the coefficients of the dual sinusoid
    ``g(t) = K - 2 Re(Z exp(-i t))``, a lower bound of ``r(t)^2`` for every
    angle ``t`` (weak MEB duality with the weights found at ``phi``).
    """
    N = A.shape[0]
    c = np.cos(phi)
    s = np.sin(phi)
    for k in range(N):
        ax = A[k, 0]
        ay = A[k, 1]
        P[k, 0] = E[k, 0] - (c * ax - s * ay)
        P[k, 1] = E[k, 1] - (s * ax + c * ay)
    cx, cy, r_up = meb_2d(P, order, sup, w)
    # dual quantities on the support
    ebx = 0.0
    eby = 0.0
    abx = 0.0
    aby = 0.0
    pbx = 0.0
    pby = 0.0
    for t in range(3):
        k = sup[t]
        if k < 0:
            continue
        wt = w[t]
        ebx += wt * E[k, 0]
        eby += wt * E[k, 1]
        abx += wt * A[k, 0]
        aby += wt * A[k, 1]
        pbx += wt * P[k, 0]
        pby += wt * P[k, 1]
    K = 0.0
    alpha = 0.0
    beta = 0.0
    g = 0.0
    for t in range(3):
        k = sup[t]
        if k < 0:
            continue
        wt = w[t]
        ux = E[k, 0] - ebx
        uy = E[k, 1] - eby
        vx = A[k, 0] - abx
        vy = A[k, 1] - aby
        K += wt * (ux * ux + uy * uy + vx * vx + vy * vy)
        alpha += wt * (vx * ux + vy * uy)
        beta += wt * (vx * uy - vy * ux)
        dx = P[k, 0] - pbx
        dy = P[k, 1] - pby
        g += wt * (dx * dx + dy * dy)
    return r_up, g, K, alpha, beta, cx, cy


@njit(inline="always", **_JIT)
def _maxcos(psi, lo, hi):
    """``max_{t in [lo, hi]} cos(t - psi)`` for an interval shorter than 2 pi."""
    t = lo + ((psi - lo) % _TWO_PI)
    if t <= hi:
        return 1.0
    return max(np.cos(lo - psi), np.cos(hi - psi))


@njit(inline="always", **_JIT)
def _sinus_min(K, Zr, Zi, lo, hi):
    """Proven lower bound of ``min_{t in [lo, hi]} K - 2 Re(Z e^{-it})``."""
    rho = np.hypot(Zr, Zi)
    if rho == 0.0:
        return K - 64.0 * _EPS * K
    psi = np.arctan2(Zi, Zr)
    m = K - 2.0 * rho * _maxcos(psi, lo, hi)
    return m - 64.0 * _EPS * (K + 2.0 * rho)


@njit(**_JIT)
def _interval_bound(lo, hi, ra, rb, Ka, Zra, Zia, Kb, Zrb, Zib, L, slack, target):
    """Proven lower bound of ``min r`` on ``[lo, hi]`` (angles of one family).

    Combines (i) the Lipschitz cones from the endpoint lower bounds ``ra``,
    ``rb`` (Piyavskii-Shubert) and (ii) the dual sinusoids of the two
    endpoints and of their convex combinations (``lam g_a + (1-lam) g_b``
    bounds ``r^2`` from below for every ``lam`` in [0, 1]); the combination
    weight is found by golden-section search (the bound is concave in it)
    only when the cheaper bounds do not already reach ``target``.
    ``slack`` is an absolute allowance for rounding, subtracted at the end.
    """
    h = hi - lo
    # Lipschitz cones: max(ra - L (t - lo), rb - L (hi - t)) minimised over t
    if L > 0.0:
        t = (ra - rb + L * (lo + hi)) / (2.0 * L)
        t = min(max(t, lo), hi)
        lip = max(ra - L * (t - lo), rb - L * (hi - t))
    else:
        lip = min(ra, rb)
    best = lip
    ga = _sinus_min(Ka, Zra, Zia, lo, hi)
    gb = _sinus_min(Kb, Zrb, Zib, lo, hi)
    g = max(ga, gb)
    if g > 0.0:
        best = max(best, np.sqrt(g))
    if best - slack < target and h > 0.0:
        # golden section on lam in [0, 1] of the combined sinusoid
        gr = 0.6180339887498949
        a = 0.0
        b = 1.0
        x1 = b - gr * (b - a)
        x2 = a + gr * (b - a)
        f1 = _sinus_min(
            x1 * Ka + (1 - x1) * Kb, x1 * Zra + (1 - x1) * Zrb, x1 * Zia + (1 - x1) * Zib, lo, hi
        )
        f2 = _sinus_min(
            x2 * Ka + (1 - x2) * Kb, x2 * Zra + (1 - x2) * Zrb, x2 * Zia + (1 - x2) * Zib, lo, hi
        )
        for _ in range(28):
            if f1 < f2:
                a = x1
                x1 = x2
                f1 = f2
                x2 = a + gr * (b - a)
                f2 = _sinus_min(
                    x2 * Ka + (1 - x2) * Kb,
                    x2 * Zra + (1 - x2) * Zrb,
                    x2 * Zia + (1 - x2) * Zib,
                    lo,
                    hi,
                )
            else:
                b = x2
                x2 = x1
                f2 = f1
                x1 = b - gr * (b - a)
                f1 = _sinus_min(
                    x1 * Ka + (1 - x1) * Kb,
                    x1 * Zra + (1 - x1) * Zrb,
                    x1 * Zia + (1 - x1) * Zib,
                    lo,
                    hi,
                )
        g = max(g, f1, f2)
        if g > 0.0:
            best = max(best, np.sqrt(g))
    return max(best - slack, 0.0)


@njit(**_JIT)
def minimax_angle_search(A, AF, E, L, tol, max_eval, m0):
    """Certified global minimisation of ``r(phi)`` over both planar families.

    ``r_f(phi)`` is the minimum enclosing circle radius of
    ``{E_k - R(phi) B_k}`` with ``B = A`` (rotations, family 0) or ``B = AF``
    (``A`` with its second coordinate negated: reflections, family 1).
    ``L >= max_k ||A_k||`` is a Lipschitz constant of every ``r_f``.

    Best-first branch and bound on ``[0, 2 pi]`` for each family, starting
    from ``m0`` equal intervals; an interval's lower bound is
    :func:`_interval_bound`.  Stops when ``upper - lower <= tol`` or after
    ``max_eval`` evaluations.  Then the best angle is polished by golden
    section inside its neighbouring intervals.

    Returns ``(family, phi, cx, cy, upper, lower, n_eval, converged)``.
    """
    N = A.shape[0]
    cap = max_eval + 2 * (m0 + 1) + 64
    fam = np.empty(cap, dtype=np.int64)
    phis = np.empty(cap)
    rup = np.empty(cap)
    rlo = np.empty(cap)
    Ks = np.empty(cap)
    Zrs = np.empty(cap)
    Zis = np.empty(cap)
    cxs = np.empty(cap)
    cys = np.empty(cap)
    P = np.empty((N, 2))
    order = np.arange(N)
    sup = np.empty(3, dtype=np.int64)
    w = np.empty(3)
    # absolute rounding allowance: a few ulps of the coordinates involved
    amax = 0.0
    for k in range(N):
        amax = max(amax, abs(A[k, 0]), abs(A[k, 1]), abs(E[k, 0]), abs(E[k, 1]))
    slack = 64.0 * _EPS * amax
    ne = 0
    best = 0
    for f in range(2):
        B = A if f == 0 else AF
        for j in range(m0 + 1):
            phi = _TWO_PI * j / m0
            r_up, g, K, zr, zi, cx, cy = _eval_angle(B, E, phi, P, order, sup, w)
            fam[ne] = f
            phis[ne] = phi
            rup[ne] = r_up
            rlo[ne] = max(np.sqrt(max(g, 0.0)) - slack, 0.0)
            Ks[ne] = K
            Zrs[ne] = zr
            Zis[ne] = zi
            cxs[ne] = cx
            cys[ne] = cy
            if r_up < rup[best]:
                best = ne
            ne += 1
    upper = rup[best]
    # intervals: (lb, id) on a heap; id -> endpoints (ia, ib)
    icap = 2 * cap
    ia = np.empty(icap, dtype=np.int64)
    ib = np.empty(icap, dtype=np.int64)
    ni = 0
    heap = [(0.0, 0)]
    heap.pop()
    for f in range(2):
        base = f * (m0 + 1)
        for j in range(m0):
            a = base + j
            b = a + 1
            lb = _interval_bound(
                phis[a],
                phis[b],
                rlo[a],
                rlo[b],
                Ks[a],
                Zrs[a],
                Zis[a],
                Ks[b],
                Zrs[b],
                Zis[b],
                L,
                slack,
                upper - tol,
            )
            ia[ni] = a
            ib[ni] = b
            heapq.heappush(heap, (lb, ni))
            ni += 1
    converged = False
    while len(heap) > 0:
        lb, iv = heap[0]
        if upper - lb <= tol:
            converged = True
            break
        if ne >= cap - 1 or ne >= max_eval + 2 * (m0 + 1):
            break
        heapq.heappop(heap)
        a = ia[iv]
        b = ib[iv]
        f = fam[a]
        B = A if f == 0 else AF
        phi = 0.5 * (phis[a] + phis[b])
        r_up, g, K, zr, zi, cx, cy = _eval_angle(B, E, phi, P, order, sup, w)
        m = ne
        fam[m] = f
        phis[m] = phi
        rup[m] = r_up
        rlo[m] = max(np.sqrt(max(g, 0.0)) - slack, 0.0)
        Ks[m] = K
        Zrs[m] = zr
        Zis[m] = zi
        cxs[m] = cx
        cys[m] = cy
        ne += 1
        if r_up < upper:
            upper = r_up
            best = m
        for x, y in ((a, m), (m, b)):
            lbc = _interval_bound(
                phis[x],
                phis[y],
                rlo[x],
                rlo[y],
                Ks[x],
                Zrs[x],
                Zis[x],
                Ks[y],
                Zrs[y],
                Zis[y],
                L,
                slack,
                upper - tol,
            )
            # a child's bound never needs to be below its parent's
            lbc = max(lbc, lb)
            ia[ni] = x
            ib[ni] = y
            heapq.heappush(heap, (lbc, ni))
            ni += 1
    if len(heap) > 0:
        lower = heap[0][0]
    else:
        lower = upper
    # polish: golden section around the best angle inside its neighbours
    f = fam[best]
    B = A if f == 0 else AF
    pb = phis[best]
    h = _TWO_PI / m0
    for m in range(ne):
        if fam[m] == f and m != best:
            d = abs(phis[m] - pb)
            if 0.0 < d < h:
                h = d
    a = pb - h
    b = pb + h
    gr = 0.6180339887498949
    x1 = b - gr * (b - a)
    x2 = a + gr * (b - a)
    r1, _, _, _, _, c1x, c1y = _eval_angle(B, E, x1, P, order, sup, w)
    r2, _, _, _, _, c2x, c2y = _eval_angle(B, E, x2, P, order, sup, w)
    bphi = pb
    bcx = cxs[best]
    bcy = cys[best]
    bval = rup[best]
    n_pol = 2
    for _ in range(60):
        if r1 < bval:
            bval, bphi, bcx, bcy = r1, x1, c1x, c1y
        if r2 < bval:
            bval, bphi, bcx, bcy = r2, x2, c2x, c2y
        if b - a <= 1e-15 * (1.0 + abs(pb)):
            break
        if r1 <= r2:
            b = x2
            x2 = x1
            r2 = r1
            c2x, c2y = c1x, c1y
            x1 = b - gr * (b - a)
            r1, _, _, _, _, c1x, c1y = _eval_angle(B, E, x1, P, order, sup, w)
        else:
            a = x1
            x1 = x2
            r1 = r2
            c1x, c1y = c2x, c2y
            x2 = a + gr * (b - a)
            r2, _, _, _, _, c2x, c2y = _eval_angle(B, E, x2, P, order, sup, w)
        n_pol += 1
    upper = min(upper, bval)
    return f, bphi, bcx, bcy, bval, min(lower, upper), ne + n_pol, converged


# ---------------------------------------------------------------------------
# Convex hull and rotating calipers (thickness in the plane)
# ---------------------------------------------------------------------------


@njit(inline="always", **_JIT)
def _cross(P, o, a, b):
    return (P[a, 0] - P[o, 0]) * (P[b, 1] - P[o, 1]) - (P[a, 1] - P[o, 1]) * (P[b, 0] - P[o, 0])


@njit(**_JIT)
def hull_2d(P, order):
    """Convex hull (Andrew's monotone chain) of the rows of ``P`` (N, 2).

    ``order`` must sort the rows lexicographically by (x, y).  Returns the
    hull vertex indices in counter-clockwise order, collinear points
    dropped.
    """
    N = order.shape[0]
    H = np.empty(2 * N + 1, dtype=np.int64)
    k = 0
    for t in range(N):
        i = order[t]
        while k >= 2 and _cross(P, H[k - 2], H[k - 1], i) <= 0.0:
            k -= 1
        H[k] = i
        k += 1
    lower_end = k + 1
    for t in range(N - 2, -1, -1):
        i = order[t]
        while k >= lower_end and _cross(P, H[k - 2], H[k - 1], i) <= 0.0:
            k -= 1
        H[k] = i
        k += 1
    if k > 1:
        k -= 1  # the last point repeats the first
    return H[:k].copy()


@njit(**_JIT)
def min_width_2d(P, hull):
    """Minimum width of a convex polygon by rotating calipers.

    ``hull`` holds counter-clockwise vertex indices of ``P`` (at least 3).
    For every edge the farthest vertex is tracked by a moving pointer; the
    width flush on that edge is ``cross(edge, vertex - start) / |edge|``
    computed by direct differences.  Returns ``(width, edge_index)``: the
    minimum over edges and the first edge attaining it.
    """
    h = hull.shape[0]
    best = np.inf
    best_e = -1
    j = 1
    for e in range(h):
        a = hull[e]
        b = hull[(e + 1) % h]
        ex = P[b, 0] - P[a, 0]
        ey = P[b, 1] - P[a, 1]
        ln = np.hypot(ex, ey)
        # advance j while the next vertex is farther from the edge line
        if e == 0:
            j = 1
        cur = (P[hull[j], 0] - P[a, 0]) * ey - (P[hull[j], 1] - P[a, 1]) * ex
        cur = abs(cur)
        for _ in range(h):
            jn = (j + 1) % h
            nxt = abs((P[hull[jn], 0] - P[a, 0]) * ey - (P[hull[jn], 1] - P[a, 1]) * ex)
            if nxt >= cur:
                j = jn
                cur = nxt
            else:
                break
        wdt = cur / ln
        if wdt < best:
            best = wdt
            best_e = e
    return best, best_e


@njit(**_JIT)
def farthest_from_serial(Y, c):
    """``(max_k ||Y_k - c||, argmax)`` by direct differences, serially.

    The serial twin of :func:`isoapprox._kernels.farthest_from` for the small
    point sets of inner loops, where a thread pool costs more than the work.
    """
    best = -1.0
    arg = 0
    for i in range(Y.shape[0]):
        s = 0.0
        for k in range(Y.shape[1]):
            t = Y[i, k] - c[k]
            s += t * t
        if s > best:
            best = s
            arg = i
    return np.sqrt(best), arg


@njit(**_JIT)
def diameter_serial(X):
    """``(max_{i<j} ||X_i - X_j||, i, j)`` by direct differences, serially.

    The serial twin of :func:`isoapprox._kernels.diameter_kernel` for small
    point sets (first pair on ties).  Returns ``(0.0, 0, 0)`` for ``N < 2``.
    """
    N = X.shape[0]
    best = 0.0
    bi = 0
    bj = 0
    for i in range(N):
        for j in range(i + 1, N):
            s = 0.0
            for k in range(X.shape[1]):
                t = X[i, k] - X[j, k]
                s += t * t
            if s > best:
                best = s
                bi = i
                bj = j
    return np.sqrt(best), bi, bj


@njit(**_JIT)
def width_along(X, e):
    """``max_k <X_k, e> - min_k <X_k, e>`` with its two extreme indices."""
    lo = np.inf
    hi = -np.inf
    ilo = 0
    ihi = 0
    for i in range(X.shape[0]):
        s = 0.0
        for k in range(X.shape[1]):
            s += X[i, k] * e[k]
        if s < lo:
            lo = s
            ilo = i
        if s > hi:
            hi = s
            ihi = i
    return hi - lo, ilo, ihi
