"""numba kernels of the batch engine: many configurations per call.

Arrays in, arrays out; no validation (see :mod:`isoapprox.batch.cheap` and
:mod:`isoapprox.batch.generators`).  A batch of ``B`` configurations of
``N`` points in ``R^n`` is a float64 array ``X`` of shape ``(B, N, n)`` with
integer labels ``codes`` of shape ``(B, N)``.

The kernels are serial (no ``prange``): the engine runs them in one thread
per worker process or Dask task, so calling them from several threads at
once is safe and the results never depend on a thread count.  Workspace is
allocated once per call, not per configuration.  Every configuration is
rescaled by an exact power of two when its coordinates (or the margin) lie
outside ``[2**-100, 2**100]``, so extreme scales keep full relative
precision, as in the single-configuration functions.

Distances are by direct differences, ``fastmath`` is off (max/min/NaN
semantics matter) and everything is float64.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .. import _kernels as K
from . import _random as R

__all__ = [
    "CHEAP_FLOAT_FIELDS",
    "CHEAP_INT_FIELDS",
    "DISTRIBUTION_CODES",
    "cheap_kernel",
    "generate_kernel",
    "meb_2d",
    "thickness_2d",
]

_JIT = dict(cache=True, fastmath=False, nogil=True)

#: column order of the float output of :func:`cheap_kernel`
CHEAP_FLOAT_FIELDS = (
    "batch_hard_max",
    "batch_hard_mean",
    "triplet_mean",
    "diameter",
    "d_iso_collapsed",
    "meb_radius",
    "meb_radius_lower",
    "thickness",
)
#: column order of the integer output of :func:`cheap_kernel`
CHEAP_INT_FIELDS = ("n_triplets", "n_classes_present")

#: distribution name -> code understood by :func:`generate_kernel`
DISTRIBUTION_CODES = {"gaussian": 0, "ball": 1, "sphere": 2, "clustered": 3, "collapsed": 4}

_LOW = 2.0**-100
_HIGH = 2.0**100
#: relative slack of the "point outside the circle" test of the incremental
#: minimum enclosing circle (rounding of a few flops on the radius)
_MEB_TOL = 1e-14
#: Frank-Wolfe target gap for the minimum enclosing ball in n >= 3
_MEB_FW_EPS = 1e-10
_MEB_FW_ITER = 100_000


# ---------------------------------------------------------------------------
# minimum enclosing circle (2-D, exact) and ball (n >= 3, bracketed)
# ---------------------------------------------------------------------------


@njit(inline="always", **_JIT)
def _dxy(W, i, cx, cy):
    dx = W[i, 0] - cx
    dy = W[i, 1] - cy
    return np.sqrt(dx * dx + dy * dy)


@njit(inline="always", **_JIT)
def _pair_circle(W, i, j):
    cx = 0.5 * (W[i, 0] + W[j, 0])
    cy = 0.5 * (W[i, 1] + W[j, 1])
    return cx, cy, max(_dxy(W, i, cx, cy), _dxy(W, j, cx, cy))


@njit(**_JIT)
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


@njit(**_JIT)
def _support_radius(W, i, j, k):
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


@njit(inline="always", **_JIT)
def _outside(W, i, cx, cy, r):
    """Whether point ``i`` lies outside the circle (squared test with slack)."""
    dx = W[i, 0] - cx
    dy = W[i, 1] - cy
    rr = r * (1.0 + _MEB_TOL)
    return dx * dx + dy * dy > rr * rr


@njit(**_JIT)
def meb_2d(W):
    """Minimum enclosing circle of the rows of ``W`` (shape ``(N, 2)``).

    Incremental algorithm (Welzl 1991 without randomisation: the points are
    taken in index order, ``O(N^3)`` in the worst case, fine for small
    ``N``).  Returns ``(cx, cy, upper, lower)``: ``upper`` is the largest
    distance of a point from the returned centre (a feasible radius) and
    ``lower`` is the exact enclosing radius of the two or three support
    points, a lower bound of the optimum.  They agree to rounding.
    """
    N = W.shape[0]
    if N == 0:
        return 0.0, 0.0, 0.0, 0.0
    cx = W[0, 0]
    cy = W[0, 1]
    r = 0.0
    s0 = 0
    s1 = -1
    s2 = -1
    for i in range(1, N):
        if _outside(W, i, cx, cy, r):
            cx = W[i, 0]
            cy = W[i, 1]
            r = 0.0
            s0 = i
            s1 = -1
            s2 = -1
            for j in range(i):
                if _outside(W, j, cx, cy, r):
                    cx, cy, r = _pair_circle(W, i, j)
                    s1 = j
                    s2 = -1
                    for k in range(j):
                        if _outside(W, k, cx, cy, r):
                            ox, oy, rr, ok = _circumcircle(W, i, j, k)
                            if ok:
                                cx, cy, r = ox, oy, rr
                                s2 = k
                            else:  # rounding: the farthest pair of the three
                                dij = _dxy(W, i, W[j, 0], W[j, 1])
                                dik = _dxy(W, i, W[k, 0], W[k, 1])
                                djk = _dxy(W, j, W[k, 0], W[k, 1])
                                if dik >= dij and dik >= djk:
                                    cx, cy, r = _pair_circle(W, i, k)
                                    s1 = k
                                elif djk >= dij:
                                    cx, cy, r = _pair_circle(W, j, k)
                                    s0 = j
                                    s1 = k
                                s2 = -1
    upper2 = 0.0
    for q in range(N):
        dx = W[q, 0] - cx
        dy = W[q, 1] - cy
        d2 = dx * dx + dy * dy
        if d2 > upper2:
            upper2 = d2
    upper = np.sqrt(upper2)
    lower = min(_support_radius(W, s0, s1, s2), upper)
    return cx, cy, upper, lower


@njit(**_JIT)
def _meb_nd(W):
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
    a = 0
    best = -1.0
    for i in range(N):
        s = 0.0
        for k in range(n):
            t = Y[i, k] - Y[0, k]
            s += t * t
        if s > best:
            best = s
            a = i
    b = a
    best = -1.0
    for i in range(N):
        s = 0.0
        for k in range(n):
            t = Y[i, k] - Y[a, k]
            s += t * t
        if s > best:
            best = s
            b = i
    if best == 0.0:
        return 0.0, 0.0
    idx = np.arange(N)
    u = np.zeros(N)
    u[a] = 0.5
    u[b] = 0.5
    c, _ = K._meb_dual_fw(Y, idx, u, _MEB_FW_ITER, _MEB_FW_EPS)
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


@njit(**_JIT)
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


# ---------------------------------------------------------------------------
# the cheap quantities of many configurations
# ---------------------------------------------------------------------------


@njit(**_JIT)
def cheap_kernel(X, codes, margin):
    """Losses, diameter, enclosing ball and thickness of every configuration.

    Parameters
    ----------
    X : float64 array (B, N, n)
    codes : int64 array (B, N)
        Class labels (any integers; only equality matters).
    margin : float
        ``alpha >= 0``.

    Returns
    -------
    F : float64 array (B, 8)
        Columns :data:`CHEAP_FLOAT_FIELDS`; the losses are NaN for a
        configuration without a triplet; ``thickness`` is NaN when
        ``n >= 3`` and ``N > n`` (not computed here).
    I : int64 array (B, 2)
        Columns :data:`CHEAP_INT_FIELDS`.
    """
    B, N, n = X.shape
    F = np.empty((B, 8))
    I = np.empty((B, 2), dtype=np.int64)
    D = np.empty((N, N))
    W = np.empty((N, n))
    pos = np.empty(N, dtype=np.int64)
    neg = np.empty(N, dtype=np.int64)
    for b in range(B):
        # exact power-of-two rescaling out of the over/underflow range
        m = margin
        for i in range(N):
            for k in range(n):
                a = abs(X[b, i, k])
                if a > m:
                    m = a
        s = 1.0
        if m > 0.0 and (m < _LOW or m > _HIGH):
            s = math.ldexp(1.0, -math.frexp(m)[1])
        for i in range(N):
            for k in range(n):
                W[i, k] = X[b, i, k] * s
        alpha = margin * s
        # distances, diameter, isometric error to the collapsed embedding
        diam = 0.0
        diso = 0.0
        di = 0
        dj = 0
        for i in range(N):
            D[i, i] = 0.0
            for j in range(i + 1, N):
                acc = 0.0
                for k in range(n):
                    t = W[i, k] - W[j, k]
                    acc += t * t
                d = np.sqrt(acc)
                D[i, j] = d
                D[j, i] = d
                if d > diam:
                    diam = d
                    di = i
                    dj = j
                e = abs(d - 0.0)  # |D_ij - D^collapsed_ij|
                if e > diso:
                    diso = e
        # number of distinct classes
        P = 0
        for i in range(N):
            new = True
            for j in range(i):
                if codes[b, j] == codes[b, i]:
                    new = False
                    break
            if new:
                P += 1
        # batch-hard (hardest positive / negative per anchor) and all triplets
        bh_max = -np.inf
        bh_sum = 0.0
        n_anchor = 0
        t_sum = 0.0
        n_trip = 0
        for a in range(N):
            ca = codes[b, a]
            hp = -np.inf
            hn = np.inf
            npos = 0
            nneg = 0
            for q in range(N):
                if q == a:
                    continue
                d = D[a, q]
                if codes[b, q] == ca:
                    pos[npos] = q
                    npos += 1
                    if d > hp:
                        hp = d
                else:
                    neg[nneg] = q
                    nneg += 1
                    if d < hn:
                        hn = d
            if npos == 0 or nneg == 0:
                continue
            t = hp - hn + alpha
            if t < 0.0:
                t = 0.0
            bh_sum += t
            n_anchor += 1
            if t > bh_max:
                bh_max = t
            n_trip += npos * nneg
            # all triplets of this anchor: [d_ap + alpha - d_am]_+
            for q in range(npos):
                tp = D[a, pos[q]] + alpha
                for r in range(nneg):
                    t_sum += max(tp - D[a, neg[r]], 0.0)
        if n_anchor == 0:
            F[b, 0] = np.nan
            F[b, 1] = np.nan
            F[b, 2] = np.nan
        else:
            F[b, 0] = bh_max / s
            F[b, 1] = (bh_sum / n_anchor) / s
            F[b, 2] = (t_sum / n_trip) / s
        F[b, 3] = diam / s
        F[b, 4] = diso / s
        # minimum enclosing ball: exact for n <= 2, bracketed above.  Fast
        # path: when the ball on the farthest pair holds every point it is
        # the minimum one (any enclosing ball has radius >= diam / 2).
        fast = True
        r2 = 0.0
        lim = 0.5 * diam * (1.0 + _MEB_TOL)
        lim *= lim
        for i in range(N):
            acc = 0.0
            for k in range(n):
                t = W[i, k] - 0.5 * (W[di, k] + W[dj, k])
                acc += t * t
            if acc > lim:
                fast = False
                break
            if acc > r2:
                r2 = acc
        if fast:
            r_up = np.sqrt(r2)
            r_lo = min(0.5 * diam, r_up)
        elif n == 1:
            lo = W[0, 0]
            hi = W[0, 0]
            for i in range(1, N):
                lo = min(lo, W[i, 0])
                hi = max(hi, W[i, 0])
            r_up = 0.5 * (hi - lo)
            r_lo = r_up
        elif n == 2:
            _, _, r_up, r_lo = meb_2d(W)
        else:
            r_up, r_lo = _meb_nd(W)
        F[b, 5] = r_up / s
        F[b, 6] = r_lo / s
        # thickness: exact for n <= 2; 0 when N <= n (a hyperplane holds the set)
        if diam == 0.0:
            th = 0.0
        elif n == 1:
            th = 1.0
        elif n == 2:
            th = thickness_2d(W, diam)
        elif N <= n:
            th = 0.0
        else:
            th = np.nan
        F[b, 7] = th
        I[b, 0] = n_trip
        I[b, 1] = P
    return F, I


# ---------------------------------------------------------------------------
# configuration generation
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _normalise_rows(z, N, n):
    for i in range(N):
        s = 0.0
        for k in range(n):
            s += z[i * n + k] * z[i * n + k]
        s = np.sqrt(s)
        if s == 0.0:  # probability zero; keep the point on the sphere
            z[i * n] = 1.0
            s = 1.0
        for k in range(n):
            z[i * n + k] /= s


@njit(**_JIT)
def generate_kernel(entropy, word0, word1, reps, dist, P, random_layout, base_codes,
                    spread, scale, X, codes):
    """Draw configurations ``reps`` of one grid cell into ``X`` and ``codes``.

    Configuration ``r`` uses the Philox stream of
    ``SeedSequence(entropy, spawn_key=(word0, word1, r))``.  Draw order:
    labels first (random layout only: the first ``P`` points get classes
    ``0 .. P-1``, the others a uniform class, then a Fisher-Yates shuffle),
    then the points:

    - gaussian: ``N n`` standard normals, row by row;
    - sphere: the same, each row divided by its norm;
    - ball: the sphere's rows, then ``N`` uniforms ``u``, radius ``u**(1/n)``;
    - clustered: ``P n`` normals (class centres), then ``N n`` normals times
      ``spread`` added to the centre of each point's class;
    - collapsed: ``n`` normals (one centre), then ``N n`` normals times
      ``scale``.
    """
    B, N, n = X.shape
    st = np.empty(R.STREAM_LEN, dtype=np.uint64)
    spawn = np.empty(3, dtype=np.uint64)
    spawn[0] = word0
    spawn[1] = word1
    z = np.empty(N * n)
    cz = np.empty(max(P, 1) * n)
    for b in range(B):
        spawn[2] = reps[b]
        k0, k1 = R.seedseq_key(entropy, spawn)
        R.stream_init(st, k0, k1)
        if random_layout:
            for i in range(N):
                codes[b, i] = i if i < P else R.uniform_index(st, P)
            for i in range(N - 1, 0, -1):
                j = R.uniform_index(st, i + 1)
                t = codes[b, i]
                codes[b, i] = codes[b, j]
                codes[b, j] = t
        else:
            for i in range(N):
                codes[b, i] = base_codes[i]
        if dist == 3:
            R.normals(st, cz)
            R.normals(st, z)
            for i in range(N):
                c = codes[b, i]
                for k in range(n):
                    X[b, i, k] = cz[c * n + k] + spread * z[i * n + k]
        elif dist == 4:
            R.normals(st, cz[:n])
            R.normals(st, z)
            for i in range(N):
                for k in range(n):
                    X[b, i, k] = cz[k] + scale * z[i * n + k]
        else:
            R.normals(st, z)
            if dist == 1 or dist == 2:
                _normalise_rows(z, N, n)
            for i in range(N):
                rad = 1.0
                if dist == 1:
                    rad = R.next_double(st) ** (1.0 / n)
                for k in range(n):
                    X[b, i, k] = rad * z[i * n + k]
