"""Planar geometry: convex hull, width and thickness, minimax angle search.

Not parallel.  The certified angle search of minimax Procrustes evaluates
the minimum enclosing circle of :mod:`isoapprox.kernels.meb` (cross-file
jitted call: ``meb_2d``; ``tests/test_kernels_cache.py`` checks it from a
cold and a warm cache).
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

from . import JIT
from .meb import meb_2d

__all__ = [
    "hull_2d",
    "min_width_2d",
    "minimax_angle_search",
    "thickness_2d",
    "width_along",
]

_EPS = 2.220446049250313e-16
_TWO_PI = 2.0 * np.pi


# ---------------------------------------------------------------------------
# Minimax Procrustes in the plane: certified branch and bound over the angle
# ---------------------------------------------------------------------------


@njit(**JIT)
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


@njit(inline="always", **JIT)
def _maxcos(psi, lo, hi):
    """``max_{t in [lo, hi]} cos(t - psi)`` for an interval shorter than 2 pi."""
    t = lo + ((psi - lo) % _TWO_PI)
    if t <= hi:
        return 1.0
    return max(np.cos(lo - psi), np.cos(hi - psi))


@njit(inline="always", **JIT)
def _sinus_min(K, Zr, Zi, lo, hi):
    """Proven lower bound of ``min_{t in [lo, hi]} K - 2 Re(Z e^{-it})``."""
    rho = np.hypot(Zr, Zi)
    if rho == 0.0:
        return K - 64.0 * _EPS * K
    psi = np.arctan2(Zi, Zr)
    m = K - 2.0 * rho * _maxcos(psi, lo, hi)
    return m - 64.0 * _EPS * (K + 2.0 * rho)


@njit(inline="always", **JIT)
def _mixed_sinus_min(x, Ka, Zra, Zia, Kb, Zrb, Zib, lo, hi):
    """:func:`_sinus_min` of the combination ``x g_a + (1 - x) g_b`` of two sinusoids."""
    return _sinus_min(x * Ka + (1 - x) * Kb, x * Zra + (1 - x) * Zrb, x * Zia + (1 - x) * Zib,
                      lo, hi)


@njit(**JIT)
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
        f1 = _mixed_sinus_min(x1, Ka, Zra, Zia, Kb, Zrb, Zib, lo, hi)
        f2 = _mixed_sinus_min(x2, Ka, Zra, Zia, Kb, Zrb, Zib, lo, hi)
        for _ in range(28):
            if f1 < f2:
                a = x1
                x1 = x2
                f1 = f2
                x2 = a + gr * (b - a)
                f2 = _mixed_sinus_min(x2, Ka, Zra, Zia, Kb, Zrb, Zib, lo, hi)
            else:
                b = x2
                x2 = x1
                f2 = f1
                x1 = b - gr * (b - a)
                f1 = _mixed_sinus_min(x1, Ka, Zra, Zia, Kb, Zrb, Zib, lo, hi)
        g = max(g, f1, f2)
        if g > 0.0:
            best = max(best, np.sqrt(g))
    return max(best - slack, 0.0)


#: columns of the evaluation records of :func:`minimax_angle_search`: the angle,
#: the radius found, its proven lower bound, the dual sinusoid, the centre
_PHI, _RUP, _RLO, _K, _ZR, _ZI, _CX, _CY = range(8)


@njit(inline="always", **JIT)
def _record(B, E, phi, P, order, sup, w, slack, rec, m):
    """:func:`_eval_angle` at ``phi`` into row ``m`` of the records ``rec``; the radius."""
    r_up, g, K, zr, zi, cx, cy = _eval_angle(B, E, phi, P, order, sup, w)
    row = rec[m]
    row[_PHI] = phi
    row[_RUP] = r_up
    row[_RLO] = max(np.sqrt(max(g, 0.0)) - slack, 0.0)
    row[_K] = K
    row[_ZR] = zr
    row[_ZI] = zi
    row[_CX] = cx
    row[_CY] = cy
    return r_up


@njit(inline="always", **JIT)
def _bound_between(rec, x, y, L, slack, target):
    """:func:`_interval_bound` between the recorded angles ``x`` and ``y``."""
    a = rec[x]
    b = rec[y]
    return _interval_bound(a[_PHI], b[_PHI], a[_RLO], b[_RLO], a[_K], a[_ZR], a[_ZI], b[_K],
                           b[_ZR], b[_ZI], L, slack, target)


@njit(**JIT)
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
    rec = np.empty((cap, 8))
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
            fam[ne] = f
            r_up = _record(B, E, _TWO_PI * j / m0, P, order, sup, w, slack, rec, ne)
            if r_up < rec[best, _RUP]:
                best = ne
            ne += 1
    upper = rec[best, _RUP]
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
            lb = _bound_between(rec, a, b, L, slack, upper - tol)
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
        m = ne
        fam[m] = f
        r_up = _record(B, E, 0.5 * (rec[a, _PHI] + rec[b, _PHI]), P, order, sup, w, slack, rec, m)
        ne += 1
        if r_up < upper:
            upper = r_up
            best = m
        for x, y in ((a, m), (m, b)):
            lbc = _bound_between(rec, x, y, L, slack, upper - tol)
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
    pb = rec[best, _PHI]
    h = _TWO_PI / m0
    for m in range(ne):
        if fam[m] == f and m != best:
            d = abs(rec[m, _PHI] - pb)
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
    bcx = rec[best, _CX]
    bcy = rec[best, _CY]
    bval = rec[best, _RUP]
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
# Convex hull, width, thickness
# ---------------------------------------------------------------------------


@njit(inline="always", **JIT)
def _cross(P, o, a, b):
    return (P[a, 0] - P[o, 0]) * (P[b, 1] - P[o, 1]) - (P[a, 1] - P[o, 1]) * (P[b, 0] - P[o, 0])


@njit(**JIT)
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


@njit(**JIT)
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
        cur = abs((P[hull[j], 0] - P[a, 0]) * ey - (P[hull[j], 1] - P[a, 1]) * ex)
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


@njit(**JIT)
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



@njit(**JIT)
def thickness_2d(W, diam):
    """Exact thickness ``min_e width_e / diam`` of a planar point set.

    The minimal width of a convex polygon is attained normal to one of its
    edges, and the width normal to any other line is at least as large, so
    the minimum over all point pairs ``(i, j)`` of the spread of the signed
    distances ``cross(p_j - p_i, p_k - p_i) / |p_j - p_i|`` is exact; no
    hull is needed.  ``0`` for collinear sets and when ``diam == 0``.
    """
    N = W.shape[0]
    if diam == 0.0 or N < 3:
        return 0.0
    best = np.inf
    for i in range(N):
        for j in range(i + 1, N):
            dx = W[j, 0] - W[i, 0]
            dy = W[j, 1] - W[i, 1]
            L = np.sqrt(dx * dx + dy * dy)
            if L == 0.0:
                continue
            cap = best * L
            lo = 0.0
            hi = 0.0
            for k in range(N):
                s = dx * (W[k, 1] - W[i, 1]) - dy * (W[k, 0] - W[i, 0])
                lo = min(lo, s)
                hi = max(hi, s)
            if hi - lo < cap:
                best = (hi - lo) / L
    if not np.isfinite(best):
        return 0.0
    return min(best / diam, 1.0)
