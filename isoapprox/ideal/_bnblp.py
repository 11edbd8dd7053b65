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


def _units(dlo: np.ndarray, dhi: np.ndarray) -> list[np.ndarray]:
    """Unit vectors (exact norm below 1) towards the centre and corners of a box."""
    n = dlo.size
    corners = itertools.product(*zip(dlo, dhi, strict=True))
    pts = [0.5 * (dlo + dhi)] + [np.array(v) for v in corners]
    out: list[np.ndarray] = []
    for v in pts:
        nv = float(np.sqrt(np.sum(v * v)))
        if nv > 0.0 and np.isfinite(nv):
            u = (v / nv) * _SHRINK
            if not any(np.array_equal(u, w) for w in out):
                out.append(u)
    if n == 1 and not out:
        out.append(np.array([_SHRINK]))
    return out


def _upper_planes(dlo: np.ndarray, dhi: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Affine ``(g, h)`` with ``g.x + h >= |x|`` on the box ``[dlo, dhi]``.

    ``|x|`` is convex, so ``g.x + h >= |x|`` on the box when it holds at the
    vertices (``|x| <= sum lambda_v |v| <= sum lambda_v (g.v + h)``).  The
    slopes are those of the planes through three vertex values (the secant for
    ``n = 1``); ``h = max_v (|v| - g.v)``, raised by the rounding allowance.
    """
    n = dlo.size
    V = np.array(list(itertools.product(*zip(dlo, dhi, strict=True))))
    f = np.sqrt(np.sum(V * V, axis=1))
    w = dhi - dlo
    slopes = []
    if n == 1:
        slopes.append(np.array([(f[1] - f[0]) / w[0] if w[0] > 0 else 0.0]))
    else:
        # vertices in product order: 0 (lo, lo), 1 (lo, hi), 2 (hi, lo), 3 (hi, hi)
        def sl(df, wd):
            return df / wd if wd > 0 else 0.0
        slopes.append(np.array([sl(f[2] - f[0], w[0]), sl(f[3] - f[2], w[1])]))
        slopes.append(np.array([sl(f[3] - f[1], w[0]), sl(f[1] - f[0], w[1])]))
        slopes.append(np.array([sl(f[2] - f[0], w[0]), sl(f[1] - f[0], w[1])]))
        slopes.append(np.array([sl(f[3] - f[1], w[0]), sl(f[3] - f[2], w[1])]))
    out = []
    mag = float(np.max(f)) + float(np.max(np.abs(V)))
    for g in slopes:
        if not np.all(np.isfinite(g)):
            continue
        h = float(np.max(f - V @ g))
        h += BNB_RTOL * (1.0 + mag * (1.0 + float(np.sum(np.abs(g)))))
        out.append((g, h))
    return out


def _widen(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sl = BNB_RTOL * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))
    return lo - sl, hi + sl


def haus_node_lp(E: np.ndarray, trip: np.ndarray, tables, alpha: float,
                 lo: np.ndarray, hi: np.ndarray) -> NodeLP:
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
    rows: list[np.ndarray] = []
    rhs: list[float] = []
    tag: list[tuple[int, int]] = []  # (kind, index): 0 point k, 1 pair, 2 triplet
    # objective rows
    t_lo = 0.0
    t_hi = 0.0
    for k in range(N):
        dlo, dhi = _widen(lo[k] - E[k], hi[k] - E[k])
        mn = KB.point_box_mindist(E[k], lo[k], hi[k])
        mx = KB.point_box_maxdist(E[k], lo[k], hi[k])
        t_lo = max(t_lo, mn - BNB_RTOL * (1.0 + mn))
        t_hi = max(t_hi, mx + BNB_RTOL * (1.0 + mx))
        ek = float(np.sum(np.abs(E[k])))
        for u in _units(dlo, dhi):
            r = np.zeros(nv)
            r[k * n:(k + 1) * n] = u
            r[it] = -1.0
            rows.append(r)
            rhs.append(float(u @ E[k]) + BNB_RTOL * (1.0 + ek))
            tag.append((0, k))
    dl = np.zeros(P)
    dh = np.zeros(P)
    for q in range(P):
        i, j = int(pairs[q, 0]), int(pairs[q, 1])
        mn = KB.box_mindist(lo[i], hi[i], lo[j], hi[j])
        mx = KB.box_maxdist(lo[i], hi[i], lo[j], hi[j])
        dl[q] = max(mn - BNB_RTOL * (1.0 + mx), 0.0)
        dh[q] = mx + BNB_RTOL * (1.0 + mx)
        dlo, dhi = _widen(lo[i] - hi[j], hi[i] - lo[j])
        if positive[q]:
            for u in _units(dlo, dhi):
                r = np.zeros(nv)
                r[i * n:(i + 1) * n] = u
                r[j * n:(j + 1) * n] = -u
                r[nF + 1 + q] = -1.0
                rows.append(r)
                rhs.append(0.0)
                tag.append((1, q))
        else:
            for g, h in _upper_planes(dlo, dhi):
                r = np.zeros(nv)
                r[i * n:(i + 1) * n] = -g
                r[j * n:(j + 1) * n] = g
                r[nF + 1 + q] = 1.0
                rows.append(r)
                rhs.append(h)
                tag.append((1, q))
    for t in range(trip.shape[0]):
        r = np.zeros(nv)
        r[nF + 1 + tid[t, 0]] = 1.0
        r[nF + 1 + tid[t, 1]] = -1.0
        rows.append(r)
        rhs.append(-alpha)
        tag.append((2, t))
    A = np.array(rows)
    b = np.array(rhs)
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
    for r, (kind, idx) in enumerate(tag):
        if y[r] > _ACTIVE_DUAL:
            if kind == 0:
                act_k[idx] = True
            elif kind == 1:
                act_q[idx] = True
            else:
                act_q[tid[idx, 0]] = True
                act_q[tid[idx, 1]] = True
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


def lp_search(E, trip, alpha, T, lo, hi, max_lp, offer=None):
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
    heap = [(-np.inf, 0, lo.copy(), hi.copy())]
    seq = 1
    n_lp = 0
    stuck = np.inf  # least bound of the nodes that cannot be split
    while heap and n_lp < max_lp:
        if heap[0][0] >= T:
            heap.clear()
            break
        key, _, nlo, nhi = heapq.heappop(heap)
        lb = KB.node_bound(E, D, KB.HAUS, trip, alpha, T, BNB_RTOL, nlo, nhi)
        if lb >= T:
            continue
        res = haus_node_lp(E, trip, tables, alpha, nlo, nhi)
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
        mid = 0.5 * (nlo[k, d] + nhi[k, d]) if k >= 0 else 0.0
        if k < 0 or not (nlo[k, d] < mid < nhi[k, d]):
            stuck = min(stuck, b)
            continue
        for half in range(2):
            clo, chi = nlo.copy(), nhi.copy()
            if half == 0:
                chi[k, d] = mid
            else:
                clo[k, d] = mid
            heapq.heappush(heap, (b, seq, clo, chi))
            seq += 1
    bound = min(T, stuck)
    if heap:
        bound = min(bound, heap[0][0])
    return bound, n_lp
