"""Minimax (sup-norm) Procrustes: the best isometry under the max norm.

Design notes: docs/performance.md, section ``isoapprox.procrustes``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.optimize import minimize

from ._blas import single_threaded_blas
from ._scaling import pow2_scale
from ._typing import ArrayLike, FloatArray, RNGLike
from ._validation import (
    as_points,
    as_rng,
    check_int,
    check_nonnegative,
    check_positive,
    check_same_shape,
)
from .exceptions import ConvergenceWarning
from .geometry import ball_bracket
from .kernels import distances as KD
from .kernels import meb as KM
from .kernels import planar as KP

__all__ = ["ProcrustesResult", "minimax_procrustes"]

_EPS = float(np.finfo(float).eps)
#: initial number of equal angle intervals per family in the planar search
_M0 = 16


@dataclass(frozen=True)
class ProcrustesResult:
    """Best isometry ``x -> Q x + b`` under the max norm, with a certified bracket.

    Attributes
    ----------
    Q : ndarray of shape (n, n)
        Orthogonal matrix (``det = -1`` for a reflection).
    b : ndarray of shape (n,)
        Translation.
    value : float
        ``max_k ||Q E1_k + b - E2_k||``, re-scored in float64 for the
        returned ``(Q, b)``; equal to ``upper``.
    lower, upper : float
        Proven bounds ``lower <= min_{Q, b} max_k ||Q E1_k + b - E2_k|| <=
        upper``.
    gap : float
        ``upper - lower``.
    certified : bool
        ``gap <= max(rtol * scale, atol)`` with ``scale = max(R(E1), R(E2))``.
    reflection : bool
        ``det(Q) < 0``.
    n_iter : int
        Objective evaluations (planar search) or solver iterations.
    method : str
        ``"trivial"`` (``N = 1``), ``"exact-1d"``, ``"branch-and-bound-2d"``
        or ``"kabsch-slsqp"`` (``n >= 3``).
    """

    Q: FloatArray
    b: FloatArray
    value: float
    lower: float
    upper: float
    gap: float
    certified: bool
    reflection: bool
    n_iter: int
    method: str


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _meb_nd(X: np.ndarray):
    """MEB of the small point sets of inner loops (any dimension).

    :func:`isoapprox.geometry.ball_bracket` with a rounding allowance on the
    lower bound.  Returns ``(center, radius, lower, support, weights)``;
    ``radius`` is attained by ``center`` and ``lower`` is a dual value, both
    proven; ``weights`` on ``support`` certify ``lower``.
    """
    center, lo, _, (support, weights), _ = ball_bracket(X)
    radius, _ = KD.farthest_from(X, center)
    Y = X - X.mean(axis=0)
    lower = max(min(lo - 64 * _EPS * _absmax(Y), float(radius)), 0.0)
    return center, float(radius), lower, support, weights


def _meb(X: np.ndarray) -> tuple[np.ndarray, float, float]:
    """MEB centre, radius (attained) and a proven lower bound of the radius."""
    if X.shape[1] == 2:
        order = np.arange(X.shape[0])
        sup = np.empty(3, dtype=np.int64)
        w = np.empty(3)
        cx, cy, r = KM.meb_2d(X, order, sup, w)
        c = np.array([cx, cy])
        idx = sup[sup >= 0]
        ww = w[: len(idx)]
        cw = ww @ X[idx]
        g = float(ww @ np.sum((X[idx] - cw) ** 2, axis=1))
        lo = min(max(np.sqrt(g) - 64 * _EPS * _absmax(X), 0.0), r)
        return c, float(r), float(lo)
    if X.shape[1] == 1:
        lo_, hi_ = float(X.min()), float(X.max())
        c = np.array([0.5 * (lo_ + hi_)])
        r = float(np.max(np.abs(X[:, 0] - c[0])))
        return c, r, max(0.5 * (hi_ - lo_) * (1 - 4 * _EPS), 0.0)
    c, r, lo, _, _ = _meb_nd(X)
    return c, r, lo


def _absmax(*arrays: np.ndarray) -> float:
    return max((float(np.max(np.abs(a))) for a in arrays if a.size), default=0.0)


def _rescore(X1: np.ndarray, X2: np.ndarray, Q: np.ndarray, b: np.ndarray) -> float:
    R = X1 @ Q.T + b - X2
    return float(np.sqrt(np.max(np.einsum("ij,ij->i", R, R))))


def _triangle_radii(D: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """MEB radii of the triangles ``idx`` (T, 3) given a distance matrix.

    Obtuse or right triangles: half the longest side; acute ones: the
    circumradius ``abc / (4 area)`` with Kahan's stable Heron formula.
    """
    s = np.sort(
        np.stack([D[idx[:, 0], idx[:, 1]], D[idx[:, 0], idx[:, 2]], D[idx[:, 1], idx[:, 2]]], 1),
        axis=1,
    )
    c, b, a = s[:, 0], s[:, 1], s[:, 2]  # a >= b >= c
    half = 0.5 * a
    obtuse = a * a >= b * b + c * c
    prod = (a + (b + c)) * (c - (a - b)) * (c + (a - b)) * (a + (b - c))
    area4 = np.sqrt(np.maximum(prod, 0.0))  # = 4 * area
    with np.errstate(divide="ignore", invalid="ignore"):
        circ = a * b * c / area4
    return np.where(obtuse | ~(area4 > 0.0), half, circ)


def _pairwise(X: np.ndarray) -> np.ndarray:
    diff = X[:, None, :] - X[None, :, :]
    return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))


def _subset_lower_bound(X1: np.ndarray, X2: np.ndarray, max_points: int = 40) -> float:
    """``max |R(E1_S) - R(E2_S)|`` over pairs and triples ``S`` (proven lower bound).

    Pairs give ``isometric_error / 2``; triples (only when ``N <= max_points``;
    beyond, pairs only, by the fused kernel) can be larger.  Each radius is
    computed to a few ulps; the allowance is subtracted.
    """
    N = X1.shape[0]
    if N > max_points:
        value, _, _ = KD.isometric_error_kernel(X1, X2)  # fused, O(N) memory
        slack = 64 * _EPS * 2 * (_absmax(X1) + _absmax(X2))
        return max(0.5 * float(value) - slack, 0.0)
    D1 = _pairwise(X1)
    D2 = _pairwise(X2)
    iu = np.triu_indices(N, 1)
    best = 0.5 * float(np.max(np.abs(D1[iu] - D2[iu]))) if N >= 2 else 0.0
    if N >= 3:
        idx = np.array(list(combinations(range(N), 3)), dtype=np.int64)
        r1 = _triangle_radii(D1, idx)
        r2 = _triangle_radii(D2, idx)
        best = max(best, float(np.max(np.abs(r1 - r2))))
    slack = 64 * _EPS * (_absmax(D1) + _absmax(D2))
    return max(best - slack, 0.0)


def _dual_value(a: np.ndarray, e: np.ndarray, w: np.ndarray):
    """``Phi(w) = K_w - 2 ||M_w||_*`` and the minimising ``Q`` (over O(n)).

    ``Phi(w) <= min_Q r(Q)^2`` for every ``w`` on the simplex (weak duality
    of the MEB, then the minimum of a linear function of ``Q`` over O(n)).
    Returns ``(Phi, allowance, Q)``.
    """
    ab = w @ a
    eb = w @ e
    u = e - eb
    v = a - ab
    K = float(w @ (np.einsum("ij,ij->i", u, u) + np.einsum("ij,ij->i", v, v)))
    M = (v * w[:, None]).T @ u
    U, S, Vt = np.linalg.svd(M)
    nuc = float(S.sum())
    Q = Vt.T @ U.T
    allow = 64 * _EPS * a.shape[1] * (K + 2 * nuc)
    return K - 2 * nuc, allow, Q


def _simplex(w: np.ndarray) -> np.ndarray:
    w = np.maximum(np.asarray(w, dtype=float), 0.0)
    s = w.sum()
    if not (s > 0) or not np.isfinite(s):
        return np.full(len(w), 1.0 / len(w))
    return w / s


def _dual_lower_bound(
    a: np.ndarray, e: np.ndarray, starts: list[np.ndarray], target: float = np.inf, n_fw: int = 40
) -> tuple[float, np.ndarray]:
    """Maximise the concave dual ``Phi`` over the simplex from the given starts.

    Frank-Wolfe (step ``2 / (t + 2)``), then an SLSQP polish; stops as soon
    as the bound reaches ``target``.  Every weight vector evaluated is a
    valid certificate; the best ``sqrt(Phi - allowance)`` is returned with
    its weights.
    """
    N = a.shape[0]
    best_val = -np.inf
    best_w = np.full(N, 1.0 / N)

    def score(w):
        phi, allow, Q = _dual_value(a, e, w)
        return phi - allow, Q

    for w0 in starts:
        w = _simplex(w0)
        val, _ = score(w)
        if val > best_val:
            best_val, best_w = val, w
    if best_val >= target * abs(target):
        return float(np.sqrt(max(best_val, 0.0))), best_w
    for w0 in starts:
        w = _simplex(w0)
        for t in range(n_fw):
            val, Q = score(w)
            if val > best_val:
                best_val, best_w = val, w.copy()
            p = e - a @ Q.T
            pb = w @ p
            grad = np.einsum("ij,ij->i", p - pb, p - pb)
            k = int(np.argmax(grad))
            gam = 2.0 / (t + 3.0)
            w = (1 - gam) * w
            w[k] += gam
    # SLSQP polish of the best weights (smooth where singular values are
    # simple), over the points that carry weight or lie farthest from the
    # weighted centre (at most 60 variables)
    _, _, Q = _dual_value(a, e, best_w)
    p = e - a @ Q.T
    far = np.argsort(-np.einsum("ij,ij->i", p - best_w @ p, p - best_w @ p), kind="stable")
    keep = np.union1d(np.flatnonzero(best_w > 0.0), far[: 2 * a.shape[1] + 2])
    if len(keep) > 60:
        keep = keep[np.argsort(-best_w[keep], kind="stable")[:60]]
    ak, ek = a[keep], e[keep]

    def f(v):
        v = np.maximum(v, 0.0)
        phi, _, Qv = _dual_value(ak, ek, v)
        pv = ek - ak @ Qv.T
        g = np.einsum("ij,ij->i", pv, pv) - 2 * pv @ (v @ pv)
        return -phi, -g

    try:
        res = minimize(
            f,
            _simplex(best_w[keep]),
            jac=True,
            method="SLSQP",
            bounds=[(0.0, 1.0)] * len(keep),
            constraints=[
                {"type": "eq", "fun": lambda v: np.sum(v) - 1.0, "jac": lambda v: np.ones_like(v)}
            ],
            options={"maxiter": 200, "ftol": 1e-16},
        )
        w = np.zeros(N)
        w[keep] = _simplex(res.x)
        val, _ = score(w)
        if val > best_val:
            best_val, best_w = val, w
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - defensive
        pass
    return float(np.sqrt(max(best_val, 0.0))), best_w


# ---------------------------------------------------------------------------
# the three dimension regimes
# ---------------------------------------------------------------------------


def _solve_1d(X1, X2):
    best = None
    for sgn in (1.0, -1.0):
        p = X2[:, 0] - sgn * X1[:, 0]
        lo, hi = float(p.min()), float(p.max())
        c = 0.5 * (lo + hi)
        r = 0.5 * (hi - lo)
        if best is None or r < best[0]:
            best = (r, sgn, c)
    r, sgn, c = best
    Q = np.array([[sgn]])
    b = np.array([c])
    return Q, b, max(r * (1 - 4 * _EPS), 0.0), 2, "exact-1d", True


def _solve_2d(X1, X2, tol, max_iter):
    c1, _, _ = _meb(X1)
    c2 = X2.mean(axis=0)
    A = np.ascontiguousarray(X1 - c1)
    E = np.ascontiguousarray(X2 - c2)
    AF = A.copy()
    AF[:, 1] = -AF[:, 1]
    L = float(np.max(np.sqrt(np.einsum("ij,ij->i", A, A)))) * (1.0 + 1e-12)
    fam, phi, cx, cy, upper, lower, n_eval, conv = KP.minimax_angle_search(
        A, AF, E, L, tol, max_iter, _M0
    )
    c, s = np.cos(phi), np.sin(phi)
    Q = np.array([[c, -s], [s, c]])
    if fam == 1:
        Q = Q @ np.diag([1.0, -1.0])
    b = np.array([cx, cy]) + c2 - Q @ c1
    return Q, b, float(lower), int(n_eval), "branch-and-bound-2d", bool(conv)


def _cayley_parts(S: np.ndarray):
    n = S.shape[0]
    I = np.eye(n)
    A = np.linalg.inv(I - S)
    return A, A @ (I + S)


def _refine_slsqp(a, e, Q0, max_iter):
    """SLSQP on the epigraph problem from ``Q0``; returns (Q, t, multipliers, nit)."""
    N, n = a.shape
    iu = np.triu_indices(n, 1)
    m = len(iu[0])
    p0 = e - a @ Q0.T
    c0, r0, _ = _meb(p0)
    z0 = np.concatenate([np.zeros(m), c0, [r0]])

    def unpack(z):
        S = np.zeros((n, n))
        S[iu] = z[:m]
        S = S - S.T
        return S, z[m : m + n], z[-1]

    def cons(z):
        S, b, t = unpack(z)
        _, C = _cayley_parts(S)
        Q = Q0 @ C
        r = a @ Q.T + b - e
        return t * t - np.einsum("ij,ij->i", r, r)

    def cons_jac(z):
        S, b, t = unpack(z)
        A, C = _cayley_parts(S)
        Q = Q0 @ C
        r = a @ Q.T + b - e
        G = Q0 @ A
        W = A @ a.T  # (n, N)
        RG = r @ G  # (N, n)
        i, j = iu
        dS = -4.0 * (RG[:, i] * W[j, :].T - RG[:, j] * W[i, :].T)
        J = np.empty((N, m + n + 1))
        J[:, :m] = dS
        J[:, m : m + n] = -2.0 * r
        J[:, -1] = 2.0 * t
        return J

    grad = np.zeros(m + n + 1)
    grad[-1] = 1.0
    bounds = [(None, None)] * (m + n) + [(0.0, None)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(
            lambda z: z[-1],
            z0,
            jac=lambda z: grad,
            method="SLSQP",
            bounds=bounds,
            constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
            options={"maxiter": min(max_iter, 500), "ftol": 1e-15},
        )
    S, _, _ = unpack(res.x)
    _, C = _cayley_parts(S)
    Q = Q0 @ C
    # re-orthogonalise (Cayley is orthogonal in exact arithmetic)
    U, _, Vt = np.linalg.svd(Q)
    Q = U @ Vt
    mult = getattr(res, "multipliers", None)
    mult = None if mult is None else np.asarray(mult, dtype=float).ravel()
    if mult is not None and mult.shape[0] != N:
        mult = None
    return Q, mult, int(res.nit)


def _random_orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    Z = rng.normal(size=(n, n))
    Q, R = np.linalg.qr(Z)
    return Q * np.sign(np.diag(R))


def _solve_nd(X1, X2, tol, rng, n_starts, max_iter):
    N, n = X1.shape
    m1 = X1.mean(axis=0)
    m2 = X2.mean(axis=0)
    a = X1 - m1
    e = X2 - m2
    U, _, Vt = np.linalg.svd(a.T @ e)
    D = np.eye(n)
    D[-1, -1] = -1.0
    kabsch = [Vt.T @ U.T, Vt.T @ D @ U.T]
    n_iter = 0
    state = {"r": np.inf, "c": None, "Q": None, "w": None}

    def consider(Q):
        c, r, _, sup, w = _meb_nd(e - a @ Q.T)
        if r < state["r"]:
            ww = np.zeros(N)
            ww[sup] = w
            state.update(r=r, c=c, Q=Q, w=ww)
        return r

    def refine(Q0):
        nonlocal n_iter
        Q, r_prev, mults = Q0, consider(Q0), []
        for _ in range(3):  # re-anchor the Cayley chart while it helps
            Qn, mult, nit = _refine_slsqp(a, e, Q, max_iter)
            n_iter += nit
            if mult is not None and np.sum(np.maximum(mult, 0.0)) > 0:
                mults.append(mult)
            r = consider(Qn)
            if not r < r_prev - tol:
                break
            Q, r_prev = Qn, r
        return mults

    lower = _subset_lower_bound(X1, X2)
    for Q0 in kabsch:
        consider(Q0)
    if state["r"] - lower <= tol:
        return state["Q"], state["c"] + m2 - state["Q"] @ m1, lower, n_iter, "kabsch-slsqp", True
    mults = []
    for Q0 in kabsch:
        mults += refine(Q0)
    lo_dual, w_best = _dual_lower_bound(a, e, [state["w"]] + mults, state["r"] - tol)
    lower = max(lower, lo_dual)
    for _ in range(n_starts):
        if state["r"] - lower <= tol:
            break
        r_before = state["r"]
        new = refine(_random_orthogonal(rng, n))
        if state["r"] < r_before:
            lo_dual, w_best = _dual_lower_bound(a, e, [state["w"], w_best] + new, state["r"] - tol)
            lower = max(lower, lo_dual)
    Q = state["Q"]
    return Q, state["c"] + m2 - Q @ m1, lower, n_iter, "kabsch-slsqp", True


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def minimax_procrustes(
    E1: ArrayLike,
    E2: ArrayLike,
    *,
    rtol: float = 1e-9,
    atol: float = 0.0,
    rng: RNGLike = None,
    max_iter: int = 20_000,
    n_starts: int = 4,
) -> ProcrustesResult:
    """Best isometry under the max norm (minimax Procrustes), with a bracket.

    Solves ``min over Q in O(n), b of max_k ||Q E1_k + b - E2_k||``
    (reflections allowed): the ``isometry`` mode of
    :func:`isoapprox.metrics.hausdorff_like`.

    Parameters
    ----------
    E1, E2 : array_like of shape (N, n)
        Two embeddings of the same ``N >= 1`` points.
    rtol : float, default 1e-9
        Requested gap relative to ``scale = max(R(E1), R(E2))`` (MEB radii).
    atol : float, default 0.0
        Requested absolute gap (in the units of ``E1``); the target is
        ``max(rtol * scale, atol)``.
    rng : None, int, SeedSequence or numpy Generator, optional
        Seeds the random orthogonal starts used when ``n >= 3``.  ``None``
        means the fixed seed 0, so results are reproducible; ``n <= 2`` uses
        no randomness.
    max_iter : int, default 20000
        Cap on objective evaluations of the planar search beyond its initial
        grid of 34 angles, and on SLSQP iterations per start (at most 500)
        when ``n >= 3``.
    n_starts : int, default 4
        Random orthogonal starts added to the two least-squares starts when
        ``n >= 3``.

    Returns
    -------
    ProcrustesResult
        ``Q``, ``b``, the re-scored ``value`` (= ``upper``), ``lower``,
        ``gap``, ``certified`` and the method used.

    Raises
    ------
    InvalidInputError
        If ``E1`` or ``E2`` is not a finite 2-D array, if their shapes
        differ, or if an option is out of range.
    TypeError
        For non-numeric arrays or options of the wrong kind.

    Warns
    -----
    ConvergenceWarning
        When the planar search (``n = 2``) stops at ``max_iter`` before its
        gap reaches the tolerance; the result is still a valid bracket.  For
        ``n >= 3`` an open bracket is the normal outcome and is reported by
        ``certified=False`` without a warning.

    Notes: docs/performance.md, ``isoapprox.procrustes.minimax_procrustes``.

    Examples
    --------
    >>> E1 = [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]
    >>> E2 = [[5.0, 5.0], [5.0, 6.0], [3.0, 5.0]]  # rotated by 90 degrees, moved
    >>> res = minimax_procrustes(E1, E2)
    >>> res.value < 1e-12, res.certified, res.reflection
    (True, True, False)
    """
    X1 = as_points(E1, "E1")
    X2 = as_points(E2, "E2")
    check_same_shape(X1, X2, ("E1", "E2"))
    rtol = check_positive(rtol, "rtol")
    atol = check_nonnegative(atol, "atol")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    n_starts = check_int(n_starts, "n_starts", minimum=0)
    gen = as_rng(0 if rng is None else rng)
    N, n = X1.shape
    s = pow2_scale(X1, X2)
    Y1, Y2 = (X1 * s, X2 * s) if s != 1.0 else (X1, X2)
    if N == 1:
        Q = np.eye(n)
        b = (X2[0] - X1[0]).copy()
        return ProcrustesResult(Q, b, 0.0, 0.0, 0.0, 0.0, True, False, 0, "trivial")
    _, R1, _ = _meb(Y1)
    _, R2, _ = _meb(Y2)
    scale = max(R1, R2)
    tol = max(rtol * scale, atol * s)
    if n == 1:
        Q, b, lower, n_iter, method, conv = _solve_1d(Y1, Y2)
    elif n == 2:
        Q, b, lower, n_iter, method, conv = _solve_2d(Y1, Y2, tol, max_iter)
    else:
        with single_threaded_blas():
            Q, b, lower, n_iter, method, conv = _solve_nd(Y1, Y2, tol, gen, n_starts, max_iter)
    value = _rescore(Y1, Y2, Q, b)
    # the solvers work on centred copies; centring moves each point by a few
    # ulps of the raw coordinates, which moves the optimum by at most as much
    centring = 8 * _EPS * (_absmax(Y1) + _absmax(Y2))
    lower = min(max(float(lower) - centring, 0.0), value)
    gap = value - lower
    certified = bool(gap <= tol)
    if not conv:
        warnings.warn(
            f"minimax_procrustes: the planar search stopped at max_iter={max_iter} "
            f"evaluations with gap {gap / s:.3g} > tolerance {tol / s:.3g}; the "
            "bracket [lower, upper] is still valid",
            ConvergenceWarning,
            stacklevel=2,
        )
    return ProcrustesResult(
        Q=Q,
        b=b / s,
        value=value / s,
        lower=lower / s,
        upper=value / s,
        gap=gap / s,
        certified=certified,
        reflection=bool(np.linalg.det(Q) < 0),
        n_iter=int(n_iter),
        method=method,
    )
