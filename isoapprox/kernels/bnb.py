"""numba kernels of the spatial branch-and-bound of the nearest ideal embedding
(the search behind the proofs of ``D*``'s lower bounds is in
``tools/packing_proofs.py``).

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels.bnb``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import JIT

__all__ = [
    "HAUS",
    "ISO",
    "bnb_search",
    "box_maxdist",
    "box_mindist",
    "node_bound",
    "pair_cut",
    "point_box_maxdist",
    "point_box_mindist",
    "propagate",
    "sector_rows",
    "triplet_upper",
]

#: objective codes of the kernels
ISO = 0
HAUS = 1


# ----------------------------------------------------------------------
# distances between boxes and points (rounded to nearest; callers add the
# rounding allowance)
# ----------------------------------------------------------------------


@njit(**JIT)
def box_mindist(lo1, hi1, lo2, hi2):
    """Least distance between a point of box 1 and a point of box 2."""
    s = 0.0
    for d in range(lo1.shape[0]):
        g = max(lo2[d] - hi1[d], lo1[d] - hi2[d])
        if g > 0.0:
            s += g * g
    return np.sqrt(s)


@njit(**JIT)
def box_maxdist(lo1, hi1, lo2, hi2):
    """Largest distance between a point of box 1 and a point of box 2."""
    s = 0.0
    for d in range(lo1.shape[0]):
        g = max(abs(hi2[d] - lo1[d]), abs(hi1[d] - lo2[d]))
        s += g * g
    return np.sqrt(s)


@njit(**JIT)
def point_box_mindist(x, lo, hi):
    """Least distance between the point ``x`` and a point of the box."""
    return box_mindist(x, x, lo, hi)


@njit(**JIT)
def point_box_maxdist(x, lo, hi):
    """Largest distance between the point ``x`` and a point of the box."""
    return box_maxdist(lo, hi, x, x)


@njit(**JIT)
def _pdist(X, i, Y, j):
    """``|X_i - Y_j|`` by direct differences: the sum of ``distances.dist``, written
    here so that this module makes no cross-file jitted call (numba's cache would
    not see a change to ``distances``)."""
    s = 0.0
    for d in range(X.shape[1]):
        t = X[i, d] - Y[j, d]
        s += t * t
    return np.sqrt(s)


@njit(**JIT)
def triplet_upper(E, D, objective, T, lo, hi, a, p, m, rtol):
    """Proven upper bound of ``|F_a - F_m| - |F_a - F_p|`` over ``F_k`` in the boxes.

    With ``objective`` ``ISO`` or ``HAUS`` only the ``F`` with objective at
    most ``T`` count (``|F_i - F_j| <= D_ij + T`` and ``>= D_ij - T``, or
    ``|F_k - E_k| <= T``); any other value: every ``F`` in the boxes.  The
    bound is the smaller of

    - ``maxd(a, m) - mind(a, p)``, the largest and least distances between
      the sets (boxes, capped by the objective's constraints), and
    - the Lipschitz form ``g(c) + 2 rho``: ``g(x)`` bounds the difference
      for ``F_a = x`` from above and is 2-Lipschitz in ``x`` (a difference of
      minima / maxima of 1-Lipschitz distances), ``c`` is the computed centre
      of ``B_a`` and ``rho = max_{x in B_a} |x - c|``;

    each raised by ``rtol * (1 + the magnitudes involved)``, which covers the
    rounding of the few float64 operations (see
    :data:`isoapprox.tolerances.BNB_RTOL`).
    """
    n = lo.shape[1]
    mx = box_maxdist(lo[a], hi[a], lo[m], hi[m])
    mn = box_mindist(lo[a], hi[a], lo[p], hi[p])
    extra = 0.0
    if objective == ISO:
        mx = min(mx, D[a, m] + T)
        mn = max(mn, D[a, p] - T)
        extra = D[a, m] + D[a, p] + 2.0 * T
    elif objective == HAUS:
        mx = min(mx, D[a, m] + 2.0 * T, box_maxdist(lo[a], hi[a], E[m], E[m]) + T,
                 box_maxdist(lo[m], hi[m], E[a], E[a]) + T)
        mn = max(mn, D[a, p] - 2.0 * T, box_mindist(E[p], E[p], lo[a], hi[a]) - T,
                 box_mindist(E[a], E[a], lo[p], hi[p]) - T)
        extra = D[a, m] + D[a, p] + 4.0 * T
    u1 = mx - mn + rtol * (1.0 + abs(mx) + abs(mn) + extra)
    c = np.empty(n)
    rho2 = 0.0
    for d in range(n):
        c[d] = 0.5 * (lo[a, d] + hi[a, d])
        e = max(c[d] - lo[a, d], hi[a, d] - c[d])
        rho2 += e * e
    rho = np.sqrt(rho2)
    gx = box_maxdist(lo[m], hi[m], c, c)
    gn = box_mindist(c, c, lo[p], hi[p])
    if objective == ISO:
        gx = min(gx, D[a, m] + T)
        gn = max(gn, D[a, p] - T)
    elif objective == HAUS:
        em = 0.0
        ep = 0.0
        for d in range(n):
            em += (c[d] - E[m, d]) ** 2
            ep += (c[d] - E[p, d]) ** 2
        gx = min(gx, np.sqrt(em) + T)
        gn = max(gn, np.sqrt(ep) - T)
    u2 = gx - gn + 2.0 * rho + rtol * (1.0 + abs(gx) + abs(gn) + 2.0 * rho + extra)
    return min(u1, u2)


# ----------------------------------------------------------------------
# one node: contraction, lower bound, triplet pruning
# ----------------------------------------------------------------------


@njit(**JIT)
def node_bound(E, D, objective, trip, alpha, T, rtol, lo, hi):
    """Contract the boxes ``lo, hi`` (N, n) in place and bound the objective over them.

    Returns a proven lower bound of the objective over the triplet-separated
    ``F`` in the boxes with objective at most ``T`` (``inf`` when there is
    none): the contraction removes only points with objective above ``T``
    (``"haus"``: ``|F_k - E_k| <= T``; ``"iso"``: ``|F_i - F_j| <= D_ij + T``
    and, for ``n = 1``, ``|F_i - F_j| >= D_ij - T``; for ``n >= 2``, after
    the distance intervals are tightened by :func:`propagate`, by those
    intervals through :func:`pair_cut`, which removes only points of no
    separated ``F`` of objective at most ``T``), the bound is the
    largest violation of the objective's own constraints over the boxes,
    and a triplet whose upper bound :func:`triplet_upper` is below
    ``alpha`` proves the boxes hold no separated point.  Every computed
    quantity is moved outward by ``rtol * (1 + magnitudes)``.
    """
    N, n = E.shape
    inf = np.inf
    if objective == HAUS:
        for k in range(N):
            for d in range(n):
                lw = E[k, d] - T
                up = E[k, d] + T
                sl = rtol * (1.0 + abs(E[k, d]) + T)
                lo[k, d] = max(lo[k, d], lw - sl)
                hi[k, d] = min(hi[k, d], up + sl)
                if lo[k, d] > hi[k, d]:
                    return inf
    else:
        for _ in range(2):
            for i in range(N):
                for j in range(N):
                    if i == j:
                        continue
                    r = D[i, j] + T
                    for d in range(n):
                        sl = rtol * (1.0 + abs(lo[i, d]) + abs(hi[i, d]) + r)
                        lw = lo[i, d] - r - sl
                        up = hi[i, d] + r + sl
                        lo[j, d] = max(lo[j, d], lw)
                        hi[j, d] = min(hi[j, d], up)
                        if lo[j, d] > hi[j, d]:
                            return inf
                    if n == 1:
                        # F_j outside (hi_i - L, lo_i + L) with L = D_ij - T
                        L = D[i, j] - T
                        sl = rtol * (1.0 + abs(lo[i, 0]) + abs(hi[i, 0]) + D[i, j] + T)
                        x0 = hi[i, 0] - L + sl
                        x1 = lo[i, 0] + L - sl
                        if L > 0.0 and x0 < x1:
                            if x0 < lo[j, 0] < x1:
                                lo[j, 0] = x1
                            if x0 < hi[j, 0] < x1:
                                hi[j, 0] = x0
                            if lo[j, 0] > hi[j, 0]:
                                return inf
    lb = 0.0
    if objective == HAUS:
        for k in range(N):
            v = box_mindist(E[k], E[k], lo[k], hi[k])
            v -= rtol * (1.0 + v)
            if v > lb:
                lb = v
    if lb >= T:
        return lb
    # intervals [L_ij, U_ij] of the distances |F_i - F_j|
    L = np.empty((N, N))
    U = np.empty((N, N))
    for i in range(N):
        L[i, i] = 0.0
        U[i, i] = 0.0
        for j in range(i + 1, N):
            mn = box_mindist(lo[i], hi[i], lo[j], hi[j])
            mx = box_maxdist(lo[i], hi[i], lo[j], hi[j])
            sl = rtol * (1.0 + mx + D[i, j] + 2.0 * T)
            if objective == ISO:
                lw = max(mn, D[i, j] - T) - sl
                up = min(mx, D[i, j] + T) + sl
                lb = max(lb, mn - D[i, j] - sl, D[i, j] - mx - sl)
            else:
                lw = max(mn, D[i, j] - 2.0 * T, box_mindist(E[i], E[i], lo[j], hi[j]) - T,
                         box_mindist(E[j], E[j], lo[i], hi[i]) - T) - sl
                up = min(mx, D[i, j] + 2.0 * T, box_maxdist(lo[j], hi[j], E[i], E[i]) + T,
                         box_maxdist(lo[i], hi[i], E[j], E[j]) + T) + sl
            lw = max(lw, 0.0)
            if lw > up:
                return np.inf
            L[i, j] = lw
            L[j, i] = lw
            U[i, j] = up
            U[j, i] = up
    if lb >= T:
        return lb
    if not propagate(L, U, trip, alpha, rtol, 3):
        return np.inf
    if n >= 2:
        # the boxes by the distance intervals (pair_cut: the interval's upper
        # end on each axis, its lower end cut from the boxes' ends)
        gl = np.empty(n)
        gh = np.empty(n)
        for _ in range(2):
            ch = 0
            for i in range(N):
                for j in range(N):
                    if i != j:
                        code = pair_cut(lo, hi, i, j, L[i, j], U[i, j], rtol, gl, gh)
                        if code < 0:
                            return np.inf
                        ch += code
            if ch == 0:
                break
    if objective == ISO:
        for i in range(N):
            for j in range(i + 1, N):
                sl = rtol * (1.0 + U[i, j] + D[i, j])
                lb = max(lb, L[i, j] - D[i, j] - sl, D[i, j] - U[i, j] - sl)
        if lb >= T:
            return lb
    for t in range(trip.shape[0]):
        if triplet_upper(E, D, objective, T, lo, hi, trip[t, 0], trip[t, 1], trip[t, 2],
                         rtol) < alpha:
            return np.inf
    return lb


@njit(**JIT)
def propagate(L, U, trip, alpha, rtol, rounds):
    """Tighten distance intervals ``L <= |F_i - F_j| <= U`` in place; False when one empties.

    Rules (each new end moved outward by ``rtol * (1 + magnitudes)``):
    a triplet ``(a, p, m)`` needs ``d_am >= d_ap + alpha``, so
    ``L_am >= L_ap + alpha`` and ``U_ap <= U_am - alpha``; the triangle
    inequality gives ``U_ij <= U_ik + U_kj`` and ``L_ij >= L_ik - U_kj``.
    """
    N = L.shape[0]
    for _ in range(rounds):
        changed = False
        for t in range(trip.shape[0]):
            a = trip[t, 0]
            p = trip[t, 1]
            m = trip[t, 2]
            v = L[a, p] + alpha
            v -= rtol * (1.0 + v)
            if v > L[a, m]:
                L[a, m] = v
                L[m, a] = v
                changed = True
            v = U[a, m] - alpha
            v += rtol * (1.0 + abs(v) + alpha)
            if v < U[a, p]:
                U[a, p] = v
                U[p, a] = v
                changed = True
            if L[a, m] > U[a, m] or L[a, p] > U[a, p]:
                return False
        for i in range(N):
            for j in range(i + 1, N):
                for k in range(N):
                    if k == i or k == j:
                        continue
                    v = U[i, k] + U[k, j]
                    v += rtol * (1.0 + v)
                    if v < U[i, j]:
                        U[i, j] = v
                        U[j, i] = v
                        changed = True
                    v = max(L[i, k] - U[k, j], L[j, k] - U[k, i])
                    v -= rtol * (1.0 + U[i, k] + U[j, k] + abs(v))
                    if v > L[i, j]:
                        L[i, j] = v
                        L[j, i] = v
                        changed = True
                if L[i, j] > U[i, j]:
                    return False
        if not changed:
            break
    return True


# ----------------------------------------------------------------------
# best-first search
# ----------------------------------------------------------------------


@njit(**JIT)
def _heap_push(heap, key, size, s):
    i = size
    heap[i] = s
    while i > 0:
        par = (i - 1) // 2
        if key[heap[par]] <= key[heap[i]]:
            break
        heap[par], heap[i] = heap[i], heap[par]
        i = par


@njit(**JIT)
def _heap_pop(heap, key, size):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        lft = 2 * i + 1
        if lft >= size:
            break
        c = lft
        if lft + 1 < size and key[heap[lft + 1]] < key[heap[lft]]:
            c = lft + 1
        if key[heap[i]] <= key[heap[c]]:
            break
        heap[c], heap[i] = heap[i], heap[c]
        i = c
    return top


@njit(**JIT)
def _centre_split(E, D, objective, trip, alpha, T, lo, hi, c, dc):
    """Centre value, feasibility and the coordinate to bisect.

    Returns ``(value, feasible, k, d)``: the objective at the box centres
    ``c``, whether ``c`` is separated at ``alpha``, and the point ``k`` and
    axis ``d`` to split: the widest axis among the points of the constraint
    most violated at ``c`` (the widest axis of all when none of them has
    width), ``k = -1`` when every box is a point.
    """
    N, n = E.shape
    for k in range(N):
        for d in range(n):
            c[k, d] = 0.5 * (lo[k, d] + hi[k, d])
    for i in range(N):
        dc[i, i] = 0.0
        for j in range(i + 1, N):
            v = _pdist(c, i, c, j)
            dc[i, j] = v
            dc[j, i] = v
    worst = -np.inf
    w0 = -1
    w1 = -1
    w2 = -1
    value = 0.0
    if objective == HAUS:
        for k in range(N):
            v = _pdist(c, k, E, k)
            value = max(value, v)
            if v - T > worst:
                worst = v - T
                w0 = k
                w1 = -1
                w2 = -1
    else:
        for i in range(N):
            for j in range(i + 1, N):
                v = abs(dc[i, j] - D[i, j])
                value = max(value, v)
                if v - T > worst:
                    worst = v - T
                    w0 = i
                    w1 = j
                    w2 = -1
    feasible = True
    for t in range(trip.shape[0]):
        a = trip[t, 0]
        p = trip[t, 1]
        m = trip[t, 2]
        v = alpha - (dc[a, m] - dc[a, p])
        if v > 0.0:
            feasible = False
        if v > worst:
            worst = v
            w0 = a
            w1 = p
            w2 = m
    bw = 0.0
    bk = -1
    bd = -1
    for k in (w0, w1, w2):
        if k >= 0:
            bw, bk, bd = _wider_axis(lo, hi, k, bw, bk, bd)
    if bk < 0:
        bw, bk, bd = _widest(lo, hi)
    return value, feasible, bk, bd


@njit(**JIT)
def _widest(lo, hi):
    """``(width, k, d)`` of the widest coordinate of the boxes (ties to the first
    point and axis); ``(0.0, -1, -1)`` when every box is a point."""
    bw = 0.0
    bk = -1
    bd = -1
    for k in range(lo.shape[0]):
        bw, bk, bd = _wider_axis(lo, hi, k, bw, bk, bd)
    return bw, bk, bd


@njit(inline="always", **JIT)
def _wider_axis(lo, hi, k, bw, bk, bd):
    """``(width, k, d)`` of the widest axis ``d`` of box ``k`` (the first on ties) when
    it is wider than ``bw``, else ``(bw, bk, bd)``."""
    for d in range(lo.shape[1]):
        w = hi[k, d] - lo[k, d]
        if w > bw:
            bw = w
            bk = k
            bd = d
    return bw, bk, bd


@njit(**JIT)
def bnb_search(E, objective, trip, alpha, T, rtol, lo, hi, key, heap, free, st, fst,
               max_nodes, report, out):
    """Best-first branch-and-bound over boxes of ``F`` (N, n), resumable.

    Node storage: slots ``lo, hi`` (cap, N, n) with lower bounds ``key``
    (cap,); ``heap`` (cap,) holds the open slots as a binary min-heap on
    ``key``, ``free`` (cap,) a stack of free slots.  ``st`` (int64):
    ``[heap size, nodes processed, free slots]``; ``fst`` (float64):
    ``[least bound of the nodes left unsplit (boxes of zero width), value of
    the reported point]``.  ``T`` is the pruning level: a node whose bound
    reaches ``T`` is dropped.  Each popped node counts one against
    ``max_nodes`` (a total over calls).

    Returns
    -------
    int
        0: no node is left (every point with objective below ``T`` was
        excluded); 1: ``max_nodes`` reached; 2: no free slot (grow the
        arrays and call again); 3: the box centres of the last node are
        separated at ``alpha`` with objective below ``T`` (only when
        ``report``): they are in ``out`` and their value in ``fst[1]``; the
        node was split and the search can resume.

    On any return the open nodes, ``fst[0]`` and ``T`` give the proven
    bound ``min(T, min key over the heap, fst[0])`` on the objective of
    every separated point in the root boxes.
    """
    N, n = E.shape
    D = np.empty((N, N))
    for i in range(N):
        for j in range(N):
            D[i, j] = _pdist(E, i, E, j)
    cl = np.empty((N, n))
    ch = np.empty((N, n))
    c = np.empty((N, n))
    dc = np.empty((N, N))
    while True:
        size = st[0]
        if size == 0:
            return 0
        if st[1] >= max_nodes:
            return 1
        if st[2] < 1:
            return 2
        if key[heap[0]] >= T:
            # every open node is bounded below by T: drop them all
            for i in range(size):
                free[st[2]] = heap[i]
                st[2] += 1
            st[0] = 0
            return 0
        s = _heap_pop(heap, key, size)
        st[0] = size - 1
        st[1] += 1
        for k in range(N):
            for d in range(n):
                cl[k, d] = lo[s, k, d]
                ch[k, d] = hi[s, k, d]
        free[st[2]] = s
        st[2] += 1
        lb = node_bound(E, D, objective, trip, alpha, T, rtol, cl, ch)
        if lb >= T:
            continue
        value, feasible, bk, bd = _centre_split(E, D, objective, trip, alpha, T, cl, ch, c, dc)
        found = report and feasible and value < T
        mid = 0.0
        if bk >= 0:
            mid = 0.5 * (cl[bk, bd] + ch[bk, bd])
        if bk < 0 or not (cl[bk, bd] < mid < ch[bk, bd]):
            # nothing left to split (widths at the resolution of float64)
            if lb < fst[0]:
                fst[0] = lb
        else:
            for half in range(2):
                st[2] -= 1
                t = free[st[2]]
                for k in range(N):
                    for d in range(n):
                        lo[t, k, d] = cl[k, d]
                        hi[t, k, d] = ch[k, d]
                if half == 0:
                    hi[t, bk, bd] = mid
                else:
                    lo[t, bk, bd] = mid
                key[t] = lb
                _heap_push(heap, key, st[0], t)
                st[0] += 1
        if found:
            for k in range(N):
                for d in range(n):
                    out[k, d] = c[k, d]
            fst[1] = value
            return 3


# ----------------------------------------------------------------------
# the contraction of a pair of boxes by a distance interval (also the
# search of the proofs of D*, tools/packing_proofs.py)
# ----------------------------------------------------------------------


@njit(**JIT)
def pair_cut(lo, hi, i, j, L, U, rtol, gap_lo, gap_hi):
    """Tighten box ``i`` by ``L <= |x_i - x_j| <= U`` for ``x_j`` in box ``j``.

    Returns -1 when no point of the boxes meets the constraint (or box ``i``
    empties), 1 when box ``i`` shrank, 0 when not.  Coordinates whose bounds
    are equal are never moved, only tested.

    - Upper: ``|x_ia - x_ja|^2 <= U^2 - (least squared gap of the boxes on
      the other axes)``, so ``x_ia`` lies within ``w`` of box ``j``'s range.
    - Lower: if the largest squared distance of the boxes on the other axes
      is ``M < L^2``, a value ``t`` of ``x_ia`` whose largest distance to box
      ``j``'s range is below ``sqrt(L^2 - M)`` puts every ``x_j`` closer
      than ``L``: such ``t`` (an open interval) is cut from the ends of box
      ``i``.

    Allowances (``rtol``, :data:`isoapprox.tolerances.BNB_RTOL`): the pair
    is refused only when its least squared distance exceeds ``U^2 (1 +
    rtol)`` or its largest is below ``L^2 (1 - rtol)``; the squared widths
    under the square roots are moved by ``rtol (1 + U^2 + M)`` and the
    widths by ``rtol (1 + U)``, far above the rounding of the few float64
    operations involved.  Gaps computed before a cut of another axis belong
    to the larger box, so they only weaken the later cuts.
    """
    n = lo.shape[1]
    U2 = U * U
    L2 = L * L
    smin = 0.0
    smax = 0.0
    for a in range(n):
        g = max(lo[j, a] - hi[i, a], lo[i, a] - hi[j, a], 0.0)
        gap_lo[a] = g * g
        smin += g * g
        g = max(abs(hi[j, a] - lo[i, a]), abs(hi[i, a] - lo[j, a]))
        gap_hi[a] = g * g
        smax += g * g
    if smin > U2 * (1.0 + rtol) or smax < L2 * (1.0 - rtol):
        return -1
    slack = rtol * (1.0 + U2 + smax)
    pad = rtol * (1.0 + U)
    changed = 0
    for a in range(n):
        if lo[i, a] == hi[i, a]:
            continue
        r2 = max(U2 - (smin - gap_lo[a]), 0.0)
        w = np.sqrt(r2 + slack) + pad
        t = lo[j, a] - w
        if t > lo[i, a]:
            lo[i, a] = t
            changed = 1
        t = hi[j, a] + w
        if t < hi[i, a]:
            hi[i, a] = t
            changed = 1
        m2 = L2 - (smax - gap_hi[a]) - slack
        if m2 > 0.0:
            w = np.sqrt(m2) - pad
            cl = hi[j, a] - w
            ch = lo[j, a] + w
            if cl < ch:
                if cl < lo[i, a] < ch:
                    lo[i, a] = ch
                    changed = 1
                if cl < hi[i, a] < ch:
                    hi[i, a] = cl
                    changed = 1
        if lo[i, a] > hi[i, a]:
            return -1
    return changed


@njit(**JIT)
def sector_rows(A0, b0, E, Fs, points, qpos, I, J, cq, lo, hi, g, shrink, rtol):
    """The rows of a node LP of the angular search (:mod:`isoapprox.ideal._sector`).

    Stacked in this order: the fixed rows ``A0 x <= b0``; with ``points``,
    the tangents ``u.F_k - t <= u.E_k + rtol (1 + |E_k|_1)`` with ``u`` the
    direction of ``F_k - E_k`` of every point ``F`` of ``Fs`` (H, N, 2)
    (shrunk by ``shrink``; skipped where it vanishes); the tangents
    ``u.(F_i - F_j) - d_q <= 0`` of the pairs ``qpos`` at the same points;
    per cone ``c`` (pair ``cq[c]``, rays ``lo[c]``, ``hi[c]``, chord
    over-estimate ``g[c]``) the rows ``cross(lo, v) >= 0``, ``cross(v, hi)
    >= 0`` and ``d_q <= g.v``, ``v = F_i - F_j``.  Variables ``x = (F (2 N),
    t, d (P))``.  Returns ``(A, b)``.
    """
    H, N = Fs.shape[0], Fs.shape[1]
    nv = A0.shape[1]
    nF = 2 * N
    Qp = qpos.size
    C = cq.size
    m0 = A0.shape[0]
    # room for every row; the tangents where the direction vanishes are skipped
    m = m0 + H * ((N if points else 0) + Qp) + 3 * C
    A = np.zeros((m, nv))
    b = np.zeros(m)
    A[:m0] = A0
    b[:m0] = b0
    r = m0
    if points:
        for h in range(H):
            for k in range(N):
                w0 = Fs[h, k, 0] - E[k, 0]
                w1 = Fs[h, k, 1] - E[k, 1]
                nw = np.sqrt(w0 * w0 + w1 * w1)
                if nw > 0.0 and np.isfinite(nw):
                    u0 = w0 / nw * shrink
                    u1 = w1 / nw * shrink
                    A[r, 2 * k] = u0
                    A[r, 2 * k + 1] = u1
                    A[r, nF] = -1.0
                    b[r] = (u0 * E[k, 0] + u1 * E[k, 1]) + rtol * (
                        1.0 + (abs(E[k, 0]) + abs(E[k, 1])))
                    r += 1
    for h in range(H):
        for s in range(Qp):
            q = qpos[s]
            i, j = I[q], J[q]
            w0 = Fs[h, i, 0] - Fs[h, j, 0]
            w1 = Fs[h, i, 1] - Fs[h, j, 1]
            nw = np.sqrt(w0 * w0 + w1 * w1)
            if nw > 0.0 and np.isfinite(nw):
                u0 = w0 / nw * shrink
                u1 = w1 / nw * shrink
                A[r, 2 * i] = u0
                A[r, 2 * j] = -u0
                A[r, 2 * i + 1] = u1
                A[r, 2 * j + 1] = -u1
                A[r, nF + 1 + q] = -1.0
                r += 1
    for c in range(C):
        q = cq[c]
        i, j = I[q], J[q]
        for t in range(3):
            if t == 0:
                a0, a1 = lo[c, 1], -lo[c, 0]
            elif t == 1:
                a0, a1 = -hi[c, 1], hi[c, 0]
            else:
                a0, a1 = -g[c, 0], -g[c, 1]
            A[r, 2 * i] = a0
            A[r, 2 * j] = -a0
            A[r, 2 * i + 1] = a1
            A[r, 2 * j + 1] = -a1
            if t == 2:
                A[r, nF + 1 + q] = 1.0
            r += 1
    return A[:r].copy(), b[:r].copy()
