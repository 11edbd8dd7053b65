"""Linear-relaxation node bounds of the spatial branch-and-bound (``"haus"``).

Design notes: docs/zero_loss.md, section ``isoapprox.ideal._bnblp``.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from ..kernels import bnb as KB
from ..tolerances import BNB_RTOL
from ._lpdual import dual_multipliers, safe_dual_bound

__all__ = ["NodeLP", "haus_node_lp", "lp_search", "pair_table"]

#: a computed unit vector is shrunk by this factor so that its exact norm is
#: below 1 (``fl(v / |v|)`` has norm within ``3 eps`` of 1), which makes
#: ``u.x <= |x|`` hold exactly for the float64 ``u``
_SHRINK = 1.0 - 1e-15
#: a node's LP takes tangent directions from the LP solutions of at most this
#: many of its nearest ancestors (measured on an open toy of five points in
#: the plane: 1916 LPs to close its gap without, 893 with one, 409 with four)
HINTS = 4
#: a relation counts as active in the LP when a row of it has a dual above this
_ACTIVE_DUAL = 1e-9


@dataclass
class NodeLP:
    """The outcome of one node LP."""

    #: proven lower bound of the objective over the separated ``F`` in the
    #: boxes (``inf``: none; ``-inf``: the LP gave nothing)
    bound: float
    #: the LP's ``F`` (N, n), or None
    F: np.ndarray | None
    #: point and axis to split (``-1, -1``: none suggested)
    split: tuple[int, int]


def pair_table(trip: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of the triplets: ``pairs`` (P, 2) with ``i < j``, ``positive`` (P,) bool,
    and ``tid`` (K, 2): the indices of ``(a, p)`` and ``(a, m)`` in ``pairs``."""
    index: dict[tuple[int, int], int] = {}
    pos: list[bool] = []
    tid = np.zeros((trip.shape[0], 2), dtype=np.int64)
    for t, (a, p, m) in enumerate(trip.tolist()):
        for q, (i, j, is_pos) in enumerate(((a, p, True), (a, m, False))):
            key = (min(i, j), max(i, j))
            if key not in index:
                index[key] = len(index)
                pos.append(is_pos)
            tid[t, q] = index[key]
    pairs = np.array(sorted(index, key=index.__getitem__), dtype=np.int64).reshape(-1, 2)
    return pairs, np.array(pos, dtype=bool), tid


def _corners(dlo: np.ndarray, dhi: np.ndarray) -> np.ndarray:
    """Vertices of the boxes ``[dlo_q, dhi_q]`` (M, n): (M, 2^n, n), product order
    (for ``n = 2``: (lo, lo), (lo, hi), (hi, lo), (hi, hi))."""
    M, n = dlo.shape
    bits = np.array(list(itertools.product((0, 1), repeat=n)), dtype=bool)  # (2^n, n)
    return np.where(bits[None], dhi[:, None, :], dlo[:, None, :])


def _units(dlo: np.ndarray, dhi: np.ndarray,
           extra: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors towards the centre and the corners of each box (M, n)
    (and towards ``extra`` (M, H, n) when given).

    Returns ``U`` (M, 1 + 2^n, n) and a mask of the usable ones (non-zero
    direction).  Each is shrunk by ``_SHRINK`` so that its exact norm is
    below 1, and ``u.x <= |x|`` holds exactly for the float64 ``u``.
    """
    P = np.concatenate([0.5 * (dlo + dhi)[:, None, :], _corners(dlo, dhi)], axis=1)
    if extra is not None:
        P = np.concatenate([P, extra], axis=1)
    nv = np.sqrt(np.sum(P * P, axis=2))
    ok = (nv > 0.0) & np.isfinite(nv)
    U = np.where(ok[..., None], P / np.where(ok, nv, 1.0)[..., None], 0.0) * _SHRINK
    return U, ok


def _upper_planes(dlo: np.ndarray, dhi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Affine ``(g, h)`` with ``g.x + h >= |x|`` on each box ``[dlo_q, dhi_q]`` (M, n).

    ``|x|`` is convex, so ``g.x + h >= |x|`` on the box when it holds at the
    vertices (``|x| <= sum lambda_v |v| <= sum lambda_v (g.v + h)``).  The
    slopes are those of the planes through three vertex values (all four
    triangles of the rectangle; the secant for ``n = 1``); ``h = max_v (|v| -
    g.v)``, raised by the rounding allowance.  Returns ``g`` (M, S, n) and
    ``h`` (M, S).
    """
    M, n = dlo.shape
    V = _corners(dlo, dhi)  # (M, 2^n, n)
    f = np.sqrt(np.sum(V * V, axis=2))  # (M, 2^n)
    w = dhi - dlo
    safe_w = np.where(w > 0.0, w, 1.0)

    def sl(df, d):
        return np.where(w[:, d] > 0.0, df / safe_w[:, d], 0.0)

    if n == 1:
        G = sl(f[:, 1] - f[:, 0], 0)[:, None, None]
    else:
        G = np.stack([
            np.stack([sl(f[:, 2] - f[:, 0], 0), sl(f[:, 3] - f[:, 2], 1)], axis=1),
            np.stack([sl(f[:, 3] - f[:, 1], 0), sl(f[:, 1] - f[:, 0], 1)], axis=1),
            np.stack([sl(f[:, 2] - f[:, 0], 0), sl(f[:, 1] - f[:, 0], 1)], axis=1),
            np.stack([sl(f[:, 3] - f[:, 1], 0), sl(f[:, 3] - f[:, 2], 1)], axis=1),
        ], axis=1)  # (M, 4, n)
    GV = np.einsum("msd,mvd->msv", G, V)  # (M, S, 2^n)
    H = np.max(f[:, None, :] - GV, axis=2)
    mag = np.max(f, axis=1)[:, None] + np.max(np.abs(V), axis=(1, 2))[:, None] * (
        1.0 + np.sum(np.abs(G), axis=2))
    return G, H + BNB_RTOL * (1.0 + mag)


def _widen(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sl = BNB_RTOL * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))
    return lo - sl, hi + sl


def haus_node_lp(E: np.ndarray, trip: np.ndarray, tables, alpha: float,
                 lo: np.ndarray, hi: np.ndarray, hint: np.ndarray | None = None) -> NodeLP:
    """Proven lower bound of ``max_k |F_k - E_k|`` over separated ``F`` with ``F_k`` in ``B_k``.

    The linear relaxation: variables ``F`` (N n), ``t`` and ``d_ij`` for the
    pairs of the triplets; rows, each satisfied by every separated ``F`` in
    the boxes with ``t = max_k |F_k - E_k|`` and ``d_ij = |F_i - F_j|``:

    - ``u.(F_k - E_k) <= t`` for unit ``u`` towards the centre and corners
      of ``B_k - E_k`` (``u.x <= |x|``);
    - ``u.(F_a - F_p) <= d_ap`` for the positive pairs, ``u`` as above for the
      difference box ``B_a - B_p``;
    - ``d_am <= g.(F_a - F_m) + h`` for the negative pairs: planes through
      three vertex values of ``|x|`` on ``B_a - B_m``, lifted over the fourth
      (:func:`_upper_planes`);
    - ``d_am - d_ap >= alpha`` for every triplet;
    - the boxes, ``t`` between the least and largest ``|E_k - B_k|``, ``d_ij``
      between the least and largest box distances.

    With ``hint`` (points ``F``, (H, N, n): the LP solutions of the node's
    ancestors) the directions towards ``F_k - E_k`` and ``F_a - F_p`` join
    the tangents (any unit ``u`` gives a valid row; these cut off the
    ancestors' solutions).

    Minimising ``t`` gives a lower bound of the objective over the node; its
    float64 solution is certified by :func:`._lpdual.safe_dual_bound`.  An
    infeasible LP is certified by the same bound on the least violation
    ``s`` of its rows (``A x - s <= b``): positive means no separated point.
    """
    N, n = E.shape
    pairs, positive, tid = tables
    P = pairs.shape[0]
    nF = N * n
    it = nF
    nv = nF + 1 + P
    blocks: list[np.ndarray] = []
    rhs: list[np.ndarray] = []
    kinds: list[np.ndarray] = []  # 0: point k, 1: pair q, 2: triplet t
    idx: list[np.ndarray] = []
    # objective rows u.F_k - t <= u.E_k
    dlo, dhi = _widen(lo - E, hi - E)
    U, ok = _units(dlo, dhi, None if hint is None else (hint - E[None]).transpose(1, 0, 2))
    kk, ss = np.nonzero(ok)
    u = U[kk, ss]
    R = np.zeros((kk.size, nv))
    for d in range(n):
        R[np.arange(kk.size), kk * n + d] = u[:, d]
    R[:, it] = -1.0
    blocks.append(R)
    rhs.append(np.sum(u * E[kk], axis=1) + BNB_RTOL * (1.0 + np.sum(np.abs(E[kk]), axis=1)))
    kinds.append(np.zeros(kk.size, np.int64))
    idx.append(kk)
    near = np.clip(E, lo, hi)
    mn = np.sqrt(np.sum((near - E) ** 2, axis=1))
    mx = np.sqrt(np.sum(np.maximum(np.abs(lo - E), np.abs(hi - E)) ** 2, axis=1))
    t_lo = max(float(np.max(mn - BNB_RTOL * (1.0 + mn))), 0.0)
    t_hi = float(np.max(mx + BNB_RTOL * (1.0 + mx)))
    # pair distances: box bounds, tangents (positive), vertex planes (negative)
    I, J = pairs[:, 0], pairs[:, 1]
    glo = np.maximum(lo[J] - hi[I], lo[I] - hi[J])
    pmn = np.sqrt(np.sum(np.maximum(glo, 0.0) ** 2, axis=1))
    pmx = np.sqrt(np.sum(np.maximum(np.abs(hi[J] - lo[I]), np.abs(hi[I] - lo[J])) ** 2, axis=1))
    dl = np.maximum(pmn - BNB_RTOL * (1.0 + pmx), 0.0)
    dh = pmx + BNB_RTOL * (1.0 + pmx)
    dlo, dhi = _widen(lo[I] - hi[J], hi[I] - lo[J])
    qp = np.flatnonzero(positive)
    if qp.size:
        U, ok = _units(dlo[qp], dhi[qp],
                       None if hint is None
                       else (hint[:, I[qp]] - hint[:, J[qp]]).transpose(1, 0, 2))
        qq, ss = np.nonzero(ok)
        u = U[qq, ss]
        q = qp[qq]
        R = np.zeros((q.size, nv))
        rr = np.arange(q.size)
        for d in range(n):
            R[rr, I[q] * n + d] = u[:, d]
            R[rr, J[q] * n + d] = -u[:, d]
        R[rr, nF + 1 + q] = -1.0
        blocks.append(R)
        rhs.append(np.zeros(q.size))
        kinds.append(np.ones(q.size, np.int64))
        idx.append(q)
    qn = np.flatnonzero(~positive)
    if qn.size:
        G, H = _upper_planes(dlo[qn], dhi[qn])
        S = G.shape[1]
        q = np.repeat(qn, S)
        g = G.reshape(-1, n)
        R = np.zeros((q.size, nv))
        rr = np.arange(q.size)
        for d in range(n):
            R[rr, I[q] * n + d] = -g[:, d]
            R[rr, J[q] * n + d] = g[:, d]
        R[rr, nF + 1 + q] = 1.0
        blocks.append(R)
        rhs.append(H.ravel())
        kinds.append(np.ones(q.size, np.int64))
        idx.append(q)
    K = trip.shape[0]
    R = np.zeros((K, nv))
    R[np.arange(K), nF + 1 + tid[:, 0]] = 1.0
    R[np.arange(K), nF + 1 + tid[:, 1]] = -1.0
    blocks.append(R)
    rhs.append(np.full(K, -alpha))
    kinds.append(np.full(K, 2, np.int64))
    idx.append(np.arange(K))
    A = np.concatenate(blocks)
    b = np.concatenate(rhs)
    tag = (np.concatenate(kinds), np.concatenate(idx))
    xl = np.concatenate([lo.ravel(), [t_lo], dl])
    xh = np.concatenate([hi.ravel(), [max(t_hi, t_lo)], dh])
    c = np.zeros(nv)
    c[it] = 1.0
    res = linprog(c, A_ub=A, b_ub=b, bounds=np.column_stack([xl, xh]), method="highs")
    if res.status == 2:
        return NodeLP(_infeasible(A, b, xl, xh), None, (-1, -1))
    y = dual_multipliers(res) if res.status == 0 else None
    if y is None or res.x is None:
        return NodeLP(-np.inf, None, (-1, -1))
    bound = safe_dual_bound(c, A, b, xl, xh, y)
    x = np.asarray(res.x, dtype=float)
    F = x[:nF].reshape(N, n)
    return NodeLP(bound, F, _split(E, trip, pairs, positive, tid, tag, y, x, lo, hi))


def _infeasible(A, b, xl, xh) -> float:
    """``inf`` when the rows ``A x <= b`` are proven to have no solution in the box."""
    m, nv = A.shape
    A1 = np.hstack([A, -np.ones((m, 1))])
    big = 1.0 + float(np.max(np.abs(b))) + float(np.sum(np.abs(A) @ np.maximum(np.abs(xl),
                                                                                 np.abs(xh))))
    l1 = np.concatenate([xl, [0.0]])
    h1 = np.concatenate([xh, [big]])
    c1 = np.zeros(nv + 1)
    c1[-1] = 1.0
    res = linprog(c1, A_ub=A1, b_ub=b, bounds=np.column_stack([l1, h1]), method="highs")
    y = dual_multipliers(res) if res.status == 0 else None
    if y is not None and safe_dual_bound(c1, A1, b, l1, h1, y) > 0.0:
        return np.inf
    return -np.inf


def _split(E, trip, pairs, positive, tid, tag, y, x, lo, hi) -> tuple[int, int]:
    """Axis to bisect: the widest among the points of the active relation that the
    LP relaxes most (its value against the exact function at the LP's ``F``)."""
    N, n = E.shape
    nF = N * n
    F = x[:nF].reshape(N, n)
    t = x[nF]
    d = x[nF + 1:]
    act_k = np.zeros(N, dtype=bool)
    act_q = np.zeros(pairs.shape[0], dtype=bool)
    kind, idx = tag
    on = y > _ACTIVE_DUAL
    act_k[idx[on & (kind == 0)]] = True
    act_q[idx[on & (kind == 1)]] = True
    tt = idx[on & (kind == 2)]
    act_q[tid[tt, 0]] = True
    act_q[tid[tt, 1]] = True
    best = -np.inf
    pts: tuple[int, ...] = ()
    for k in np.flatnonzero(act_k):
        e = float(np.linalg.norm(F[k] - E[k])) - t
        if e > best:
            best, pts = e, (int(k),)
    for q in np.flatnonzero(act_q):
        i, j = int(pairs[q, 0]), int(pairs[q, 1])
        true = float(np.linalg.norm(F[i] - F[j]))
        e = true - d[q] if positive[q] else d[q] - true
        if e > best:
            best, pts = e, (i, j)
    cand = pts if pts else tuple(range(N))
    bk, bd, bw = -1, -1, 0.0
    for k in cand:
        for dd in range(n):
            w = hi[k, dd] - lo[k, dd]
            if w > bw:
                bk, bd, bw = k, dd, w
    if bk < 0 and pts:
        for k in range(N):
            for dd in range(n):
                w = hi[k, dd] - lo[k, dd]
                if w > bw:
                    bk, bd, bw = k, dd, w
    return bk, bd


def lp_search(E, trip, alpha, T, lo, hi, max_lp, offer=None, stop=None):
    """Best-first branch-and-bound with interval and LP node bounds (``"haus"``).

    Parameters
    ----------
    E : ndarray (N, n)
    trip : ndarray (K, 3)
    alpha : float
    T : float
        Pruning level.
    lo, hi : ndarray (N, n)
        Root boxes, holding every separated ``F`` of objective ``<= T``.
    max_lp : int
        Budget: the number of node LPs (each node takes one).
    offer : callable or None
        ``offer(F) -> float``: called with LP solutions separated at ``alpha``
        below ``T``; returns the new level (at most ``T``).
    stop : callable or None
        ``stop() -> bool``, asked after every sixteenth of the budget (the
        caller's deadline); True ends the search with the bound so far.

    Returns
    -------
    (float, int)
        A proven lower bound ``min(T, least key of the open boxes)`` of the
        objective over the separated ``F`` in the root boxes, and the number
        of LPs solved.
    """
    N, n = E.shape
    D = np.sqrt(np.sum((E[:, None, :] - E[None, :, :]) ** 2, axis=2))
    tables = pair_table(trip)
    heap = [(-np.inf, 0, lo.copy(), hi.copy(), None)]
    seq = 1
    n_lp = 0
    stuck = np.inf  # least bound of the nodes that cannot be split
    step = max(max_lp // 16, 1)
    while heap and n_lp < max_lp:
        if stop is not None and n_lp % step == 0 and n_lp > 0 and stop():
            break
        if heap[0][0] >= T:
            heap.clear()
            break
        key, _, nlo, nhi, hint = heapq.heappop(heap)
        lb = KB.node_bound(E, D, KB.HAUS, trip, alpha, T, BNB_RTOL, nlo, nhi)
        if lb >= T:
            continue
        res = haus_node_lp(E, trip, tables, alpha, nlo, nhi, hint)
        n_lp += 1
        b = max(key, lb, res.bound)
        if b >= T:
            continue
        if offer is not None and res.F is not None:
            T = min(T, offer(res.F))
            if b >= T:
                continue
        k, d = res.split
        if k < 0:
            w = nhi - nlo
            k, d = divmod(int(np.argmax(w)), n)
        mid = 0.5 * (nlo[k, d] + nhi[k, d])
        if k < 0 or not (nlo[k, d] < mid < nhi[k, d]):
            stuck = min(stuck, b)
            continue
        chint = hint
        if res.F is not None:
            chint = res.F[None] if hint is None else np.concatenate([res.F[None], hint])
            chint = chint[:HINTS]
        for half in range(2):
            clo, chi = nlo.copy(), nhi.copy()
            if half == 0:
                chi[k, d] = mid
            else:
                clo[k, d] = mid
            heapq.heappush(heap, (b, seq, clo, chi, chint))
            seq += 1
    bound = min(T, stuck)
    if heap:
        bound = min(bound, heap[0][0])
    return bound, n_lp
