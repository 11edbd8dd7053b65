"""A proven lower bound of the SDP relaxations from an approximate solution.

The convex relaxations of :mod:`._relax` are solved by Clarabel; the bound
they give is not read off the solver's objective value but proven from its
point and multipliers by weak duality, with every float64 rounding allowed
for, so that it holds whatever the solver's accuracy (the accuracy decides
only how close the bound comes to the relaxation's optimum).

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._sdpdual``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Rows", "gram_bound", "make_rows", "q_of", "shor_bound", "triplet_rows"]

_EPS = float(np.finfo(float).eps)
#: a multiplier of at most this fraction of the largest one is left out of the
#: refinement (:func:`_refine`), and so is an eigenvalue of the solver's
#: matrix below this fraction of the largest one from its range
_ACTIVE_RTOL = 1e-9
_RANGE_RTOL = 1e-7
#: the multipliers are refined only when their bound is further than this
#: (relative) below the solver's objective value
_CLOSE_RTOL = 1e-10


@dataclass
class Rows:
    """Rows ``g_k <= 0`` of a relaxation over ``K`` (symmetric ``N x N``),
    ``G`` (``N x n``, the Shor relaxation only) and its scalar variable
    ``x`` (the objective), each convex and evaluated at the solver's point:
    ``val`` is ``g_k``, ``mag`` the sum of the magnitudes of its terms.  The
    gradient of a row has at most two entries in the pair quantities
    ``q_ij = K_ii + K_jj - 2 K_ij`` (``q`` pair indices, ``-1`` for none, with
    coefficients ``qc``), one diagonal entry of ``K`` (``kd``, ``kdc``), two
    rows of ``G`` (``g``, coefficient vectors ``gc``) and a coefficient of
    ``x`` (``sc``)."""

    val: np.ndarray
    mag: np.ndarray
    q: np.ndarray
    qc: np.ndarray
    kd: np.ndarray
    kdc: np.ndarray
    g: np.ndarray
    gc: np.ndarray
    sc: np.ndarray

    @property
    def size(self) -> int:
        return int(self.val.size)

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        return Rows(*(np.concatenate([getattr(p, f) for p in parts])
                      for f in Rows.__dataclass_fields__))


def make_rows(val, mag, n: int, *, q=None, qc=None, kd=None, kdc=None, g=None, gc=None,
              sc=None) -> Rows:
    """:class:`Rows` with the absent parts of the gradient filled in (``n``:
    the width of ``G``, 0 for the Gram relaxation)."""
    val = np.asarray(val, dtype=float).ravel()
    R = val.size

    def pair(idx, coef, shape):
        if idx is None:
            return np.full((R, 2), -1, dtype=np.int64), np.zeros((R, 2) + shape)
        idx = np.asarray(idx, dtype=np.int64).reshape(R, -1)
        coef = np.asarray(coef, dtype=float).reshape((R, idx.shape[1]) + shape)
        if idx.shape[1] == 1:
            idx = np.hstack([idx, np.full((R, 1), -1, dtype=np.int64)])
            coef = np.concatenate([coef, np.zeros((R, 1) + shape)], axis=1)
        return idx, coef

    q_, qc_ = pair(q, qc, ())
    g_, gc_ = pair(g, gc, (n,))
    kd_ = np.full(R, -1, dtype=np.int64) if kd is None else np.asarray(kd, dtype=np.int64)
    kdc_ = np.zeros(R) if kdc is None else np.asarray(kdc, dtype=float)
    sc_ = np.zeros(R) if sc is None else np.broadcast_to(np.asarray(sc, dtype=float), (R,))
    return Rows(val, np.asarray(mag, dtype=float).ravel(), q_, qc_, kd_, kdc_, g_, gc_,
                np.array(sc_, dtype=float))


def triplet_rows(q0: np.ndarray, ap: np.ndarray, am: np.ndarray, n: int,
                 chord: tuple | None) -> Rows:
    """The triplet rows ``q_ap - q_am <= 0`` or, with ``chord = (c0, c1,
    alpha)``, ``(c0 + c1 q_ap + alpha)^2 - q_am <= 0``."""
    if chord is None:
        return make_rows(q0[ap] - q0[am], np.abs(q0[ap]) + np.abs(q0[am]), n,
                         q=np.column_stack([ap, am]),
                         qc=np.column_stack([np.ones(ap.size), -np.ones(ap.size)]))
    c0, c1, alpha = chord
    h = c0 + c1 * q0[ap] + alpha
    return make_rows(h * h - q0[am], h * h + np.abs(q0[am]), n,
                     q=np.column_stack([ap, am]),
                     qc=np.column_stack([2.0 * h * c1, -np.ones(ap.size)]))


def q_of(K: np.ndarray) -> np.ndarray:
    """``q_ij = K_ii + K_jj - 2 K_ij`` over the pairs ``i < j``."""
    I, J = np.triu_indices(K.shape[0], 1)
    return K[I, I] + K[J, J] - 2.0 * K[I, J]


def _q_adjoint(N: int, w: np.ndarray) -> np.ndarray:
    """The symmetric ``C`` with ``<C, K> = w . q(K)``."""
    I, J = np.triu_indices(N, 1)
    C = np.zeros((N, N))
    np.add.at(C, (I, I), w)
    np.add.at(C, (J, J), w)
    C[I, J] -= w
    C[J, I] -= w
    return C


def _gradient(R: Rows, lam: np.ndarray, N: int, n: int, absolute: bool = False):
    """``(C_K, C_G, g_x)``: the gradient of ``x + sum_k lam_k g_k`` in ``K``
    (symmetric, ``<C_K, K>``), ``G`` and ``x``; with ``absolute`` the sums of
    the magnitudes of the contributions instead."""
    f = np.abs if absolute else (lambda v: v)
    w = np.zeros(N * (N - 1) // 2)
    CG = np.zeros((N, n))
    for c in (0, 1):
        ok = R.q[:, c] >= 0
        np.add.at(w, R.q[ok, c], f(lam[ok] * R.qc[ok, c]))
        ok = R.g[:, c] >= 0
        if n:
            np.add.at(CG, R.g[ok, c], f(lam[ok, None] * R.gc[ok, c]))
    CK = _q_adjoint(N, w)
    if absolute:
        CK = np.abs(CK)
    ok = R.kd >= 0
    d = np.zeros(N)
    np.add.at(d, R.kd[ok], f(lam[ok] * R.kdc[ok]))
    CK[np.diag_indices(N)] += d
    gx = 1.0 + (float(np.sum(np.abs(lam * R.sc))) if absolute else float(lam @ R.sc))
    return CK, CG, gx


def _allowance(terms: int, mag: float) -> float:
    """Rounding allowance of float64 sums of at most ``terms`` products of
    rounded numbers whose magnitudes add up to ``mag``: ``2 (terms + 16)
    eps`` of it (a recursive sum of ``k`` terms is within ``k eps`` of the
    sum of their magnitudes; each product adds one rounding)."""
    return 2.0 * (terms + 16) * _EPS * (1.0 + mag)


def _psd_floor(C: np.ndarray, trace_max: float) -> float:
    """A lower bound of ``<C, X>`` over ``X >= 0`` with ``trace X <= trace_max``:
    ``min(lambda_min(C), 0) trace_max``, ``lambda_min`` lowered by ``8 k eps
    |C|_F`` (``k`` the order) for the backward error of LAPACK's symmetric
    eigensolver."""
    C = 0.5 * (C + C.T)
    lam = float(np.linalg.eigvalsh(C)[0])
    lam -= 8.0 * C.shape[0] * _EPS * float(np.linalg.norm(C))
    return min(lam, 0.0) * trace_max


def _linear_floor(g: float, lo: float, hi: float) -> float:
    return min(g * lo, g * hi)


def _range(M: np.ndarray) -> np.ndarray:
    """Orthonormal eigenvectors of the solver's PSD matrix ``M`` with
    eigenvalues above ``_RANGE_RTOL`` of the largest."""
    ev, V = np.linalg.eigh(0.5 * (M + M.T))
    return V[:, ev > _RANGE_RTOL * max(float(ev[-1]), 1e-300)]


def _refine(residual, lam: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Multipliers closer to stationarity: ``residual(lam, free)`` is affine
    (the part of the gradient that vanishes at an exact solution); the
    least-norm change of the active multipliers (those above
    ``_ACTIVE_RTOL`` of the largest) and of the free ones that zeroes it in
    least squares, clipped at 0.  Any result is as valid as the input (the
    bound holds for every ``lam >= 0``), only tighter or not."""
    active = np.flatnonzero(lam > _ACTIVE_RTOL * max(float(np.max(lam, initial=0.0)), 1e-300))
    r0 = residual(lam, free)
    cols = []
    for k in active:
        e = lam.copy()
        e[k] += 1.0
        cols.append(residual(e, free) - r0)
    for k in range(free.size):
        e = free.copy()
        e[k] += 1.0
        cols.append(residual(lam, e) - r0)
    if not cols:
        return lam, free
    M = np.column_stack(cols)
    step = np.linalg.lstsq(M, -r0, rcond=None)[0]
    if not np.all(np.isfinite(step)):
        return lam, free
    lam1 = lam.copy()
    lam1[active] = np.maximum(lam[active] + step[:active.size], 0.0)
    return lam1, free + step[active.size:]


def gram_bound(K0: np.ndarray, s0: float, R: Rows, lam: np.ndarray, s_lo: float,
               s_hi: float, trace_max: float) -> float:
    """Proven lower bound of ``min s`` over the Gram relaxation's points with
    ``s`` in ``[s_lo, s_hi]``, from the solver's point ``(K0, s0)`` and any
    multipliers ``lam >= 0`` of the rows ``R`` (all its constraints but
    ``K >= 0`` and ``K 1 = 0``).

    ``L = s + sum_k lam_k g_k`` is convex and at most ``s`` on the feasible
    points, so every feasible point has ``s >= `` the tangent of ``L`` at
    ``(K0, s0)``.  Its ``K`` part is ``<C, K> = <P C P, K>`` (``K 1 = 0``,
    ``P = I - 1 1^T / N``) ``>= min(lambda_min(P C P), 0) trace K`` with
    ``trace K <= trace_max``; its ``s`` part is least at an end.  The bound is
    the larger of those from the solver's multipliers and from refined ones
    (:func:`_refine`, zeroing ``P C V`` on the range ``V`` of ``K0`` and the
    ``s`` coefficient).
    """
    N = K0.shape[0]
    K0 = 0.5 * (K0 + K0.T)
    P = np.eye(N) - 1.0 / N

    def bound(lam):
        CK, _, gs = _gradient(R, lam, N, 0)
        CKa, _, gsa = _gradient(R, lam, N, 0, absolute=True)
        intercept = s0 + float(lam @ R.val) - float(np.sum(CK * K0)) - gs * s0
        floor = _psd_floor(P @ CK @ P, trace_max) + _linear_floor(gs, s_lo, s_hi)
        # fl(P C P) is within 2 N eps |C| (entrywise) of P C P
        mag = (abs(s0) + float(lam @ R.mag)
               + float(np.sum(CKa * (np.abs(K0) + trace_max))) * (1.0 + 2.0 * N)
               + gsa * (abs(s0) + max(abs(s_lo), abs(s_hi))) + abs(floor))
        return intercept + floor - _allowance(R.size + N * N, mag)

    lam = np.maximum(lam, 0.0)
    b0 = bound(lam)
    if b0 >= s0 - _CLOSE_RTOL * (1.0 + abs(s0)):
        return b0  # as close to the solver's value as refining could bring it
    V = _range(P @ K0 @ P)

    def residual(lam_, _free):
        CK, _, gs = _gradient(R, lam_, N, 0)
        return np.concatenate([(P @ CK @ V).ravel(), [gs]])

    lam1, _ = _refine(residual, lam, np.zeros(0))
    out = max(b0, bound(lam1))
    return out if np.isfinite(out) else -np.inf


def shor_bound(G0: np.ndarray, K0: np.ndarray, t0: float, R: Rows, lam: np.ndarray,
               Y: np.ndarray, E: np.ndarray, upper: float) -> float:
    """Proven lower bound of ``min tau`` over the Shor relaxation's points with
    ``tau <= upper^2`` (those of every ``G`` within ``upper`` of ``E``), from
    the solver's point ``(G0, K0, t0)``, any multipliers ``lam >= 0`` of the
    rows ``R`` and any symmetric ``Y`` (``n x n``, the solver's multiplier of
    the identity block).

    Every such point has ``tau >= `` the tangent of ``L = tau + sum_k lam_k
    g_k`` at the solver's point.  Its ``(G, K)`` part is ``<W, M> - trace Y``
    for ``M = [[I, G^T], [G, K]] >= 0`` and ``W = [[Y, C_G^T / 2], [C_G / 2,
    C_K]]``, so at least ``min(lambda_min(W), 0) trace M - trace Y`` with
    ``trace M <= n + sum_k (|E_k| + upper)^2`` (``|G_k|^2 <= K_kk`` and
    ``K_kk - 2 E_k . G_k + |E_k|^2 <= tau``); its ``tau`` part is least at
    ``0`` or ``upper^2``.  The larger of the bounds from the given and from
    refined ``(lam, Y)`` (:func:`_refine`) is returned.
    """
    N, n = G0.shape
    K0 = 0.5 * (K0 + K0.T)
    E2 = np.sum(E * E, axis=1)
    t_hi = upper * upper
    trace_M = (n + float(np.sum((np.sqrt(E2) + upper) ** 2))) * (1.0 + 1e-12)
    gmax = np.sqrt(E2)[:, None] + upper

    def W_of(lam_, Y_):
        CK, CG, gt = _gradient(R, lam_, N, n)
        return np.block([[Y_, 0.5 * CG.T], [0.5 * CG, CK]]), CK, CG, gt

    def bound(lam_, Y_):
        W, CK, CG, gt = W_of(lam_, Y_)
        CKa, CGa, gta = _gradient(R, lam_, N, n, absolute=True)
        intercept = (t0 + float(lam_ @ R.val) - float(np.sum(CK * K0))
                     - float(np.sum(CG * G0)) - gt * t0)
        floor = _psd_floor(W, trace_M) - float(np.trace(Y_)) + _linear_floor(gt, 0.0, t_hi)
        mag = (abs(t0) + float(lam_ @ R.mag) + float(np.sum(CKa * (np.abs(K0) + trace_M)))
               + float(np.sum(CGa * (np.abs(G0) + gmax))) + gta * (abs(t0) + t_hi)
               + float(np.sum(np.abs(Y_))) + abs(floor))
        return intercept + floor - _allowance(R.size + (N + n) ** 2, mag)

    lam = np.maximum(lam, 0.0)
    Y = 0.5 * (Y + Y.T)
    b0 = bound(lam, Y)
    if b0 >= t0 - _CLOSE_RTOL * (1.0 + abs(t0)):
        return b0
    V = _range(np.block([[np.eye(n), G0.T], [G0, K0]]))
    iu = np.triu_indices(n)

    def residual(lam_, free):
        Y_ = np.zeros((n, n))
        Y_[iu] = free
        Y_ = Y_ + np.triu(Y_, 1).T
        W, _, _, gt = W_of(lam_, Y_)
        return np.concatenate([(W @ V).ravel(), [gt]])

    lam1, y1 = _refine(residual, lam, Y[iu])
    Y1 = np.zeros((n, n))
    Y1[iu] = y1
    Y1 = Y1 + np.triu(Y1, 1).T
    out = max(b0, bound(lam1, Y1))
    return out if np.isfinite(out) else -np.inf
