"""Thickness of a point set: least width over diameter.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.thickness``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, QhullError

from ._scaling import pow2_scaled
from ._typing import ArrayLike, FloatArray, RNGLike
from ._validation import as_points, as_rng, check_int, check_positive
from .exceptions import InvalidInputError
from .geometry import frank_wolfe_step
from .kernels import distances as KD
from .kernels import planar as KP

__all__ = ["ThicknessResult", "thickness", "thickness_report"]

_EPS = float(np.finfo(float).eps)
#: largest core set whose difference body is handed to qhull, per dimension
#: (measured: the triangulated difference body of random points has ~1e4
#: facets at n = 6 and |S| = 12, which takes ~0.2 s; it grows very fast).
_CORE_CAP = {3: 150, 4: 60, 5: 30, 6: 14}
#: largest N whose own convex hull supplies candidate normals in the bracket
#: (measured: 40 random points in R^8 have ~7e3 facets, 0.05 s)
_HULL_CAP = {7: 60, 8: 40, 9: 30, 10: 30}
#: inscribed-simplex bound: 2^n partitions, each one small SVD
_SIMPLEX_MAX_DIM = 14


@dataclass(frozen=True)
class ThicknessResult:
    """Thickness ``theta(A) = min_e w_e(A) / diam(A)`` with a certified bracket.

    Attributes
    ----------
    value : float
        The thickness: exact (to rounding) when ``exact``; otherwise the
        upper end of the bracket, ``width / diameter`` for the best
        direction found.
    lower, upper : float
        Proven bounds ``lower <= theta(A) <= upper``.
    exact : bool
        ``upper - lower <= rtol`` (the answer is exact to the tolerance), or
        the set is flat.
    direction : ndarray of shape (n,)
        Unit vector whose width gives ``upper`` (for flat sets, a normal of a
        hyperplane holding ``A`` to within ``rank_tol * diam``).
    width : float
        ``w_direction(A)``.
    diameter : float
        ``diam(A)``.
    method : str
        ``"flat"``, ``"line"`` (``n = 1``), ``"calipers"``,
        ``"difference-body"`` or ``"bracket"``.
    """

    value: float
    lower: float
    upper: float
    exact: bool
    direction: FloatArray
    width: float
    diameter: float
    method: str


# ---------------------------------------------------------------------------
# building blocks (inputs already validated and centred)
# ---------------------------------------------------------------------------


def _widths(X: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """Widths of ``X`` along each row of ``dirs`` (rows need not be unit)."""
    proj = X @ dirs.T
    return proj.max(axis=0) - proj.min(axis=0)


def _diameter(X: np.ndarray) -> float:
    """``diam(X)``, attained by hull vertices: reduce to them in 2-D and 3-D."""
    N, n = X.shape
    if n == 2 and N > 3:
        V = KP.hull_2d(X, np.lexsort((X[:, 1], X[:, 0])))
        if len(V) >= 2:
            X = X[V]
    elif n == 3 and N > 500:
        try:
            X = X[ConvexHull(X).vertices]
        except (QhullError, ValueError):  # flat: keep every point
            pass
    return float(KD.diameter_kernel(np.ascontiguousarray(X))[0])


def _extremes(X: np.ndarray, dirs: np.ndarray) -> set[int]:
    """Indices of the extreme points of ``X`` along each row of ``dirs``."""
    out: set[int] = set()
    for d in dirs:
        _, i0, i1 = KP.width_along(X, d)
        out.update((int(i0), int(i1)))
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _calipers(X: np.ndarray) -> tuple[float, np.ndarray]:
    order = np.lexsort((X[:, 1], X[:, 0]))
    hull = KP.hull_2d(X, order)
    width, e_idx = KP.min_width_2d(X, hull)
    a = X[hull[e_idx]]
    b = X[hull[(e_idx + 1) % len(hull)]]
    edge = b - a
    normal = _unit(np.array([-edge[1], edge[0]]))
    w, _, _ = KP.width_along(X, normal)
    return float(min(width, w)), normal


def _difference_body(S: np.ndarray):
    """Facet normals (unit, rows) of ``conv(S - S)`` and the least facet offset."""

    n = S.shape[1]
    D = (S[:, None, :] - S[None, :, :]).reshape(-1, n)
    D = np.unique(D[np.any(D != 0.0, axis=1)], axis=0)
    hull = ConvexHull(D)
    normals = hull.equations[:, :-1]
    offsets = -hull.equations[:, -1]
    return normals, float(offsets.min())


def _simplex_width(V: np.ndarray) -> tuple[float, np.ndarray]:
    """Least width of the simplex with vertices ``V`` (n + 1, n), exactly.

    ``min`` over partitions ``I | J`` of the vertices of the distance between
    ``aff I`` and ``aff J`` (the common normal of both is the width
    direction); returns the width and the direction.
    """
    m, n = V.shape
    best, best_e = np.inf, None
    for mask in range(1, 2 ** (m - 1)):  # vertex m-1 always in J: each split once
        I = [k for k in range(m) if mask >> k & 1]
        J = [k for k in range(m) if not mask >> k & 1]
        dirs = [V[k] - V[I[0]] for k in I[1:]] + [V[k] - V[J[0]] for k in J[1:]]
        if dirs:
            _, _, Vt = np.linalg.svd(np.array(dirs), full_matrices=True)
            e = Vt[-1]
        else:  # pragma: no cover - only for m = 2 (n = 1)
            e = _unit(V[J[0]] - V[I[0]])
        w = abs(float((V[J[0]] - V[I[0]]) @ e))
        if w < best:
            best, best_e = w, e
    return best, best_e


def _maximal_simplex(X: np.ndarray) -> np.ndarray:
    """Vaisala's maximal sequence: each vertex farthest from the previous span."""
    n = X.shape[1]
    _, i, j = KD.diameter_kernel(np.ascontiguousarray(X))
    idx = [int(i), int(j)]
    for _ in range(n - 1):
        B = X[idx[1:]] - X[idx[0]]
        Qb, _ = np.linalg.qr(B.T)
        R = X - X[idx[0]]
        R = R - (R @ Qb) @ Qb.T
        d = np.einsum("ij,ij->i", R, R)
        d[idx] = -1.0
        idx.append(int(np.argmax(d)))
    return np.array(idx)


def _variance_bound(X: np.ndarray, n_iter: int = 100) -> float:
    """``max_w 2 sqrt(lambda_min(Cov_w))`` by Frank-Wolfe (a proven lower bound).

    Every weight vector tried is a valid certificate; the best is returned
    after subtracting a rounding allowance.
    """
    N, n = X.shape
    w = np.full(N, 1.0 / N)
    best = 0.0
    scale2 = float(np.max(np.einsum("ij,ij->i", X, X)))
    for t in range(n_iter):
        m = w @ X
        C = X - m
        cov = (C * w[:, None]).T @ C
        lam, vec = np.linalg.eigh(cov)
        val = float(lam[0]) - 32 * n * _EPS * scale2
        best = max(best, val)
        w = frank_wolfe_step(w, (C @ vec[:, 0]) ** 2, t)
    return 2.0 * float(np.sqrt(max(best, 0.0)))


def _lp_descent(X: np.ndarray, e0: np.ndarray, max_steps: int = 30) -> tuple[float, np.ndarray]:
    """Local descent of ``w_e(A)`` on the sphere by linear programming.

    Each step solves ``min w_e(A) s.t. <e, e0> = 1`` (an LP in ``e`` and two
    slab offsets); ``|e| >= 1`` there, so ``e / |e|`` is no wider than
    ``e0``.  Returns the best width and unit direction.
    """
    N, n = X.shape
    e0 = _unit(e0)
    w0, _, _ = KP.width_along(X, e0)
    best_w, best_e = float(w0), e0
    c = np.zeros(n + 2)
    c[n] = 1.0
    c[n + 1] = -1.0
    A_ub = np.zeros((2 * N, n + 2))
    A_ub[:N, :n] = X
    A_ub[:N, n] = -1.0
    A_ub[N:, :n] = -X
    A_ub[N:, n + 1] = 1.0
    b_ub = np.zeros(2 * N)
    bounds = [(None, None)] * (n + 2)
    for _ in range(max_steps):
        A_eq = np.zeros((1, n + 2))
        A_eq[0, :n] = best_e
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
        if res.status != 0:
            break
        e = _unit(res.x[:n])
        w, _, _ = KP.width_along(X, e)
        if not w < best_w * (1 - 1e-13):
            break
        best_w, best_e = float(w), e
    return best_w, best_e


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def thickness_report(
    A: ArrayLike,
    *,
    rtol: float = 1e-9,
    rank_tol: float = 1e-12,
    rng: RNGLike = None,
    n_starts: int = 8,
) -> ThicknessResult:
    """Thickness ``theta(A) = min_e w_e(A) / diam(A)`` with a certified bracket.

    Parameters
    ----------
    A : array_like of shape (N, n)
        Points, at least two of them distinct.
    rtol : float, default 1e-9
        The bracket counts as exact when ``upper - lower <= rtol`` (theta is
        already relative to the diameter).
    rank_tol : float, default 1e-12
        ``A`` is flat (``theta = 0.0``) when its width along the least
        principal axis is at most ``rank_tol * diam(A)``.
    rng : None, int, SeedSequence or numpy Generator, optional
        Seeds the random starts of the local descent used only when the
        answer is bracketed; ``None`` means the fixed seed 0.
    n_starts : int, default 8
        Random starts of the local descent (bracketed case only).

    Returns
    -------
    ThicknessResult

    Raises
    ------
    InvalidInputError
        If ``A`` is not a finite 2-D array, or if all its points coincide
        (diameter 0: thickness is undefined).
    TypeError
        If ``A`` is not numeric.

    Notes: docs/dev/kernels_design.md, ``isoapprox.thickness.thickness_report``.

    Examples
    --------
    >>> r = thickness_report([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> round(r.value, 12), r.exact, r.method
    (0.707106781187, True, 'calipers')
    """
    X = as_points(A, "A")
    rtol = check_positive(rtol, "rtol")
    rank_tol = check_positive(rank_tol, "rank_tol")
    n_starts = check_int(n_starts, "n_starts", minimum=0)
    return compute_thickness(X, rtol, rank_tol, as_rng(0 if rng is None else rng), n_starts)


def compute_thickness(X: np.ndarray, rtol: float = 1e-9, rank_tol: float = 1e-12,
                      gen: np.random.Generator | None = None,
                      n_starts: int = 8) -> ThicknessResult:
    """:func:`thickness_report` without its checks, for callers that validated
    (finite float64 points; ``gen`` None: seed 0)."""
    gen = as_rng(0) if gen is None else gen
    X, s = pow2_scaled(X)
    N, n = X.shape
    X = X - X.mean(axis=0)
    diam = _diameter(X)
    if diam == 0.0:
        raise InvalidInputError(
            f"`A` must contain at least two distinct points (thickness divides by the "
            f"diameter); got {N} point(s), all equal"
        )

    def result(value, lower, upper, exact, e, width, method):
        return ThicknessResult(
            value=float(min(max(value, 0.0), 1.0)),
            lower=float(min(max(lower, 0.0), 1.0)),
            upper=float(min(upper, 1.0)),
            exact=bool(exact),
            direction=np.asarray(e, dtype=float),
            width=float(width) / s,
            diameter=diam / s,
            method=method,
        )

    if n == 1:
        return result(1.0, 1.0, 1.0, True, np.array([1.0]), diam, "line")
    # flat test along the least principal axis
    _, _, Vt = np.linalg.svd(X, full_matrices=N < n)  # (n, n) either way
    e_min = Vt[-1]
    w_min, _, _ = KP.width_along(X, e_min)
    if N <= n or w_min <= rank_tol * diam:
        return result(0.0, 0.0, w_min / diam, True, e_min, w_min, "flat")
    if n == 2:
        w, e = _calipers(X)
        allow = 64 * _EPS * diam
        return result(w / diam, (w - allow) / diam, w / diam, True, e, w, "calipers")

    # candidate directions: principal axes
    best_w, best_e = float(w_min), e_min
    for k in range(n - 1):
        wk, _, _ = KP.width_along(X, Vt[k])
        if wk < best_w:
            best_w, best_e = float(wk), Vt[k]
    lower = 0.0
    allow = 1e-12 * n * diam  # qhull normals/offsets: rounding of a few ulps
    method = "bracket"
    if n in _CORE_CAP:
        # core set: the extremes along the principal axes
        core = sorted(_extremes(X, Vt))
        while len(core) <= _CORE_CAP[n]:
            try:
                normals, _ = _difference_body(X[core])
            except (QhullError, ValueError):
                # core set not full-dimensional yet: add extremes of random axes
                new = set(core) | _extremes(X, gen.normal(size=(n, n)))
                if len(new) == len(core):
                    break
                core = sorted(new)
                continue
            wS = _widths(X[core], normals)
            lower = max(lower, float(wS.min()) - allow)
            # candidates on all of A: the facets with the smallest core widths
            cand = np.argsort(wS)[: min(len(wS), 2 * n)]
            wA = _widths(X, normals[cand])
            g = int(np.argmin(wA))
            if wA[g] < best_w:
                best_w, best_e = float(wA[g]), normals[cand[g]]
            if best_w - lower <= rtol * diam:
                method = "difference-body"
                break
            new = set(core)
            for k in cand:
                w_all, i0, i1 = KP.width_along(X, normals[k])
                if w_all > wS[k] * (1 + 1e-12):
                    new.update((int(i0), int(i1)))
            if len(new) == len(core):
                break
            core = sorted(new)
    if method == "bracket":
        # facet normals of conv(A) while qhull stays cheap
        facet_starts = []
        if n <= 10 and N <= _HULL_CAP.get(n, 30):
            try:
                normals = ConvexHull(X).equations[:, :-1]
            except (QhullError, ValueError):
                normals = np.empty((0, n))
            if len(normals):
                wf = _widths(X, normals)
                order = np.argsort(wf)
                if wf[order[0]] < best_w:
                    best_w, best_e = float(wf[order[0]]), normals[order[0]]
                facet_starts = [normals[k] for k in order[1:3]]
        # local descent from the best direction, other good facet normals, the
        # least principal axis and random starts
        starts = [best_e, e_min, *facet_starts] + [gen.normal(size=n) for _ in range(n_starts)]
        for e0 in starts:
            w, e = _lp_descent(X, e0)
            if w < best_w:
                best_w, best_e = w, e
        lower = max(lower, _variance_bound(X))
        if n <= _SIMPLEX_MAX_DIM:
            ws, _ = _simplex_width(X[_maximal_simplex(X)])
            lower = max(lower, ws - allow)
    best_e = _unit(best_e)
    w_final, _, _ = KP.width_along(X, best_e)
    best_w = min(best_w, float(w_final)) if np.isfinite(w_final) else best_w
    lower = min(lower, best_w)
    exact = method == "difference-body" or best_w - lower <= rtol * diam
    if exact and method == "bracket":
        method = "difference-body" if n in _CORE_CAP else "bracket"
    return result(best_w / diam, lower / diam, best_w / diam, exact, best_e, best_w, method)


def thickness(A: ArrayLike) -> float:
    """Thickness ``theta(A) = min over unit e of width_e(A) / diam(A)``.

    Parameters
    ----------
    A : array_like of shape (N, n)
        Points, at least two of them distinct.

    Returns
    -------
    float
        In ``[0, 1]``; ``0.0`` exactly for flat sets (``N <= n`` or all
        points within ``1e-12 * diam`` of a hyperplane).  Exact in the plane
        and, to rounding, in dimensions 3 to 6 for moderate ``N``; beyond,
        the upper end of a certified bracket (use :func:`thickness_report`
        for the bracket).

    Raises
    ------
    InvalidInputError
        If ``A`` is not a finite 2-D array or all its points coincide.

    Examples
    --------
    >>> round(thickness([[0.0, 0.0], [1.0, 0.0], [0.5, 3 ** 0.5 / 2]]), 12)
    0.866025403784
    >>> thickness([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    0.0
    """
    return thickness_report(A).value
