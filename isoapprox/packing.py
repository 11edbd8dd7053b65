"""Least diameter ``D*(P, n, alpha)`` of ``P`` points of ``R^n`` at distances ``>= alpha``.

Exact values, proven lower bounds and the optimised upper bounds: see
docs/theory.md, "Packing: D*(P, n, alpha)".
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ._blas import single_threaded_blas
from ._scaling import pow2_scale
from ._typing import ArrayLike, FloatArray, RNGLike
from ._validation import (
    as_labels,
    as_rng,
    check_int,
    check_margin,
    check_option,
    check_positive,
    class_counts,
)
from .exceptions import InvalidInputError
from .tolerances import PACKING_RTOL

__all__ = [
    "LOWER_BOUND_CURVES",
    "PackingResult",
    "class_representatives",
    "d_star_bracket",
    "lower_bound_curve",
    "min_separated_diameter",
    "packing_distance_bound",
    "packing_lower_bound",
    "separated_class_count",
    "unit_lower_bound",
]

LOWER_BOUND_CURVES = ("packing", "simplex")

#: exact planar values for unit margin, P = 2..8 (theorems; see docs/theory.md)
_PLANAR = {
    2: 1.0,
    3: 1.0,
    4: math.sqrt(2.0),
    5: (1.0 + math.sqrt(5.0)) / 2.0,
    6: 2.0 * math.sin(math.radians(72.0)),
    7: 2.0,
    8: 1.0 / (2.0 * math.sin(math.pi / 14.0)),
}
_PLANAR_SOURCE = {
    **{P: "theorem: Bateman & Erdos 1951 (exact planar value)" for P in range(4, 8)},
    8: "theorem: Bezdek & Fodor 1999 (exact planar value)",
}


@dataclass(frozen=True)
class PackingResult:
    """Least diameter of ``P`` separated points, with a bracket and a witness.

    Attributes
    ----------
    value, lower, upper : float
        ``lower <= D*(P, n, margin) <= upper = value``, the diameter of ``points``.
    points : ndarray of shape (P, n)
        Pairwise distances ``>= margin`` (checked in float64 by direct differences).
    exact : bool
        Known in closed form (``P <= n + 1``, ``n = 1``, ``P = 1`` or ``margin = 0``).
    certified : bool
        ``upper - lower <= rtol * upper``.
    lower_source : str
    method : {"closed-form", "slsqp-multistart", "lattice"}
    n_starts : int
        Starting configurations tried.
    """

    value: float
    lower: float
    upper: float
    points: FloatArray
    exact: bool
    certified: bool
    lower_source: str
    method: str
    n_starts: int


# ---------------------------------------------------------------------------
# lower bounds
# ---------------------------------------------------------------------------


def unit_lower_bound(P: int, n: int) -> tuple[float, str]:
    """Best proven lower bound of ``D*(P, n, 1)`` and its source (arguments not checked)."""
    if P <= 1:
        return 0.0, "exact: a single point"
    if n == 1:
        return float(P - 1), "exact: equally spaced points on a line"
    if P <= n + 1:
        return 1.0, "exact: regular simplex"
    cands = [(1.0, "margin")]
    cands.append((math.sqrt((n + 1) / n), "obtuse vectors (at most n + 1) + Jung"))
    cands.append((math.sqrt((n + 1) / (2 * n)) * (P ** (1.0 / n) - 1.0), "volume packing + Jung"))
    if n == 2:
        # D* is nondecreasing in P (drop points): the planar theorems bound every P >= 8
        Pt = min(P, max(_PLANAR))
        src = _PLANAR_SOURCE[Pt] if Pt == P else _PLANAR_SOURCE[Pt] + " + monotonicity in P"
        cands.append((_PLANAR[Pt], src))
    return max(cands, key=lambda t: t[0])


def packing_lower_bound(P: int, n: int, *, margin: float = 1.0) -> float:
    """Best proven lower bound of ``D*(P, n, margin)`` (docs/theory.md).

    Examples
    --------
    >>> packing_lower_bound(3, 2)
    1.0
    >>> round(packing_lower_bound(5, 2), 9)  # Bateman-Erdos: the golden ratio
    1.618033989
    """
    P = check_int(P, "P", minimum=1)
    n = check_int(n, "n", minimum=1)
    margin = check_margin(margin)
    return margin * unit_lower_bound(P, n)[0]


def separated_class_count(y: ArrayLike) -> int:
    """``P'``: classes that every triplet-separated embedding keeps ``margin`` apart.

    A point of a class with two or more points is at distance ``>= alpha``
    from every point of another class; two singletons constrain nothing.  So
    ``P'`` counts the classes with two or more points, plus one if some class
    is a singleton.

    Examples
    --------
    >>> separated_class_count([0, 0, 1, 1, 2])
    3
    >>> separated_class_count([0, 0, 1, 2, 3])
    2
    """
    arr = np.asarray(y)
    codes, _ = as_labels(arr, None, "y")
    return separated_count(codes)


def separated_count(codes: np.ndarray) -> int:
    """:func:`separated_class_count` of validated codes ``0 .. P-1``."""
    counts = class_counts(codes)
    return int(np.sum(counts >= 2) + (1 if np.any(counts == 1) else 0))


def class_representatives(codes: np.ndarray) -> np.ndarray:
    """Rows of the ``P'`` representatives: the first of each class with >= 2 points,
    plus the first singleton (validated codes; increasing indices)."""
    counts = class_counts(codes)
    first = np.full(len(counts), -1, dtype=np.int64)
    for i in range(codes.shape[0] - 1, -1, -1):
        first[codes[i]] = i
    multi = np.flatnonzero(counts >= 2)
    single = np.flatnonzero(counts == 1)
    keep = list(multi) + ([single[0]] if single.size else [])
    return np.sort(first[keep])


def packing_distance_bound(codes: np.ndarray, dim: int, margin: float, diam: float) -> float:
    """Proven float64 lower bound of ``d_iso(E, F_TS)``: ``D*_lower(P', n, alpha) - diam(E)``.

    The ``P'`` representatives of any ``G`` in ``F_TS(alpha)`` are pairwise
    ``>= alpha`` apart, so some pair has ``d_G >= D*`` while ``d_E <= diam(E)``;
    lowered by ``PACKING_RTOL * max(D*_lower, diam)``, clipped at 0.
    Arguments are not checked.

    Examples
    --------
    >>> codes = np.repeat(np.arange(4), 2)          # 4 classes collapsed in R^2
    >>> round(packing_distance_bound(codes, 2, 1.0, 0.0), 9)  # sqrt 2
    1.414213562
    """
    ds = margin * unit_lower_bound(separated_count(codes), dim)[0]
    return max(0.0, ds - diam - PACKING_RTOL * max(ds, diam))


def d_star_bracket(codes: np.ndarray, dim: int, margin: float,
                   G: np.ndarray) -> tuple[float, float, float, bool, str]:
    """``(value, lower, upper, exact, source)`` of ``D*(P', n, margin)``.

    The lower end is :func:`packing_lower_bound`; unless it is exact
    (``P' <= n + 1``, ``n = 1``, the planar theorems ``P' <= 8``), the upper
    end is the diameter of the ``P'`` representatives of an ideal embedding
    ``G`` scaled up to pairwise distances ``>= margin`` (a feasible layout).
    """
    P = separated_count(codes)
    lower_unit, source = unit_lower_bound(P, dim)
    lower = margin * lower_unit
    if margin == 0.0 or P <= dim + 1 or dim == 1 or (dim == 2 and P <= 8):
        return lower, lower, lower, True, source
    reps = G[class_representatives(codes)]
    iu, ju = np.triu_indices(reps.shape[0], 1)
    d = np.sqrt(np.sum((reps[iu] - reps[ju]) ** 2, axis=1))
    upper = max(float(d.max()) * max(1.0, margin / float(d.min())), lower)
    return upper, lower, upper, False, source


# ---------------------------------------------------------------------------
# configurations
# ---------------------------------------------------------------------------


def _min_max_dist(X: np.ndarray) -> tuple[float, float]:
    """(least, largest) pairwise distance by direct differences."""
    P = X.shape[0]
    if P < 2:
        return math.inf, 0.0
    iu, ju = np.triu_indices(P, 1)
    d = X[iu] - X[ju]
    dist = np.sqrt(np.einsum("ij,ij->i", d, d))
    return float(dist.min()), float(dist.max())


def _regular_simplex(P: int, n: int) -> np.ndarray:
    """``P <= n + 1`` vertices of a regular simplex of unit edge in ``R^n``."""
    if P == 1:
        return np.zeros((1, n))
    E = np.eye(P) / math.sqrt(2.0)
    C = E - E.mean(axis=0)
    # orthonormal coordinates of the (P - 1)-dimensional affine hull
    _, _, Vt = np.linalg.svd(C)
    Y = C @ Vt[: P - 1].T
    out = np.zeros((P, n))
    out[:, : P - 1] = Y
    return out


def _polygon(m: int, radius: float) -> np.ndarray:
    a = 2.0 * math.pi * np.arange(m) / m
    return radius * np.c_[np.cos(a), np.sin(a)]


def _lattice(n: int, kind: str, reach: int) -> np.ndarray:
    """Points of a unit-minimum-distance lattice within ``reach`` steps."""
    rng_ = range(-reach, reach + 1)
    if kind == "hex" and n == 2:
        pts = np.array([(i + 0.5 * j, j * math.sqrt(3) / 2) for i in rng_ for j in rng_])
    else:
        pts = np.array(list(itertools.product(rng_, repeat=n)), dtype=float)
        if kind == "dn" and n >= 3:
            pts = pts[pts.sum(axis=1) % 2 == 0] / math.sqrt(2.0)
    return pts


def _lattice_piece(P: int, n: int, kind: str, centre: np.ndarray) -> np.ndarray | None:
    reach = max(2, int(math.ceil(0.6 * P ** (1.0 / n))) + 2)
    if (2 * reach + 1) ** n > 200_000:
        return None
    L = _lattice(n, kind, reach)
    d = np.sum((L - centre) ** 2, axis=1)
    idx = np.argsort(d, kind="stable")[:P]
    if len(idx) < P:
        return None
    return L[idx] - centre


def _structured_starts(P: int, n: int) -> list[np.ndarray]:
    starts: list[np.ndarray] = []

    def pad(Y):
        out = np.zeros((P, n))
        out[:, : Y.shape[1]] = Y
        return out

    if n >= 2:
        for k in (0, 1, 2):  # regular polygon with k interior points
            m = P - k
            if m < 3:
                continue
            R = max(1.0 / (2.0 * math.sin(math.pi / m)), 1.0 if k else 0.0)
            pts = [_polygon(m, R)]
            if k == 1:
                pts.append(np.zeros((1, 2)))
            if k == 2:
                pts.append(np.array([[-0.5, 0.0], [0.5, 0.0]]))
            starts.append(pad(np.vstack(pts)))
    if P <= 2 * n:  # cross-polytope subset, unit edge
        V = np.vstack([np.eye(n), -np.eye(n)]) / math.sqrt(2.0)
        starts.append(V[np.r_[0:n, n : 2 * n].reshape(2, n).T.ravel()[:P]])
    if P == 2 * n + 1:  # cross-polytope with its centre (edge sqrt 2)
        starts.append(np.vstack([np.zeros((1, n)), np.eye(n), -np.eye(n)]))
    if P > n + 1:  # simplex plus reflected vertices
        S = _regular_simplex(n + 1, n)
        extra = -S[: P - n - 1] * 2.0 if P - n - 1 <= n + 1 else None
        if extra is not None:
            starts.append(np.vstack([S, extra]))
    kinds = ["square"] + (["hex"] if n == 2 else []) + (["dn"] if n >= 3 else [])
    for kind in kinds:
        for centre in (
            np.zeros(n),
            np.full(n, 0.5),
            np.r_[0.5, np.zeros(n - 1)],
            np.r_[0.5, math.sqrt(3) / 6, np.zeros(n - 2)] if n >= 2 else np.zeros(n),
        ):
            piece = _lattice_piece(P, n, kind, centre)
            if piece is not None:
                starts.append(piece)
    return [s for s in starts if s.shape == (P, n)]


def _feasible(X: np.ndarray) -> np.ndarray:
    """Scale ``X`` (about its centroid) so that every distance is ``>= 1``."""
    X = X - X.mean(axis=0)
    dmin, _ = _min_max_dist(X)
    if not dmin > 0:
        return X
    X = X / dmin
    for _ in range(20):
        dmin, _ = _min_max_dist(X)
        if dmin >= 1.0 + 4 * np.finfo(float).eps:
            break
        X = X * (1.0 + 8 * np.finfo(float).eps)
    return X


def _slsqp(X0: np.ndarray, maxiter: int = 400, ftol: float = 1e-15) -> np.ndarray:
    """Local optimum of ``min s s.t. |x_i - x_j|^2 <= s, |x_i - x_j|^2 >= 1``."""

    P, n = X0.shape
    iu, ju = np.triu_indices(P, 1)
    m = len(iu)
    rows = np.arange(m)
    cols_i = iu[:, None] * n + np.arange(n)
    cols_j = ju[:, None] * n + np.arange(n)

    def diffs(z):
        X = z[:-1].reshape(P, n)
        d = X[iu] - X[ju]
        return d, np.einsum("ij,ij->i", d, d)

    def cons(z):
        _, d2 = diffs(z)
        return np.concatenate([z[-1] - d2, d2 - 1.0])

    def jac(z):
        d, _ = diffs(z)
        J = np.zeros((2 * m, P * n + 1))
        J[rows[:, None], cols_i] = -2.0 * d
        J[rows[:, None], cols_j] = 2.0 * d
        J[:m, -1] = 1.0
        J[m + rows[:, None], cols_i] = 2.0 * d
        J[m + rows[:, None], cols_j] = -2.0 * d
        return J

    X0 = _feasible(X0)
    _, dmax = _min_max_dist(X0)
    z0 = np.concatenate([X0.ravel(), [dmax * dmax]])
    grad = np.zeros(P * n + 1)
    grad[-1] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(
            lambda z: z[-1],
            z0,
            jac=lambda z: grad,
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": cons, "jac": jac}],
            options={"maxiter": maxiter, "ftol": ftol},
        )
    X = res.x[:-1].reshape(P, n)
    return X if np.all(np.isfinite(X)) else X0


@functools.lru_cache(maxsize=256)
def _unit_packing(P: int, n: int, n_random: int, seed: int, max_opt_points: int):
    """Best unit-margin configuration found (cached); returns (points, n_starts, method)."""
    starts = _structured_starts(P, n)
    if P > max_opt_points:
        best, best_d = None, math.inf
        for X in starts:
            X = _feasible(X)
            d = _min_max_dist(X)[1]
            if d < best_d:
                best, best_d = X, d
        if best is None:  # pragma: no cover - lattices always give P points
            raise InvalidInputError(f"no lattice start for P={P}, n={n}")
        best.setflags(write=False)
        return best, len(starts), "lattice"
    rng = np.random.default_rng(seed)
    radius = 0.5 * P ** (1.0 / n) + 0.5
    for _ in range(n_random):
        Z = rng.normal(size=(P, n))
        Z *= (radius * rng.uniform(size=(P, 1)) ** (1.0 / n)) / np.linalg.norm(Z, axis=1)[:, None]
        starts.append(Z)
    best, best_d = None, math.inf
    with single_threaded_blas():
        for X0 in starts:
            X = _feasible(_slsqp(X0, maxiter=200, ftol=1e-12))
            d = _min_max_dist(X)[1]
            if d < best_d:
                best, best_d = X, d
        # polish the winner with a tight tolerance
        X = _feasible(_slsqp(best, maxiter=1000, ftol=1e-15))
    if _min_max_dist(X)[1] < best_d:
        best = X
    best.setflags(write=False)
    return best, len(starts), "slsqp-multistart"


def _scaled_feasible(X: np.ndarray, margin: float) -> tuple[np.ndarray, float]:
    """``X * margin`` scaled up by ulps until every distance is ``>= margin``.

    Distances are checked by direct differences after an exact power-of-two
    rescaling (so extreme margins neither overflow nor underflow).
    """
    Y = X * margin
    for _ in range(60):
        s = pow2_scale(Y, np.array([margin]))
        dmin, dmax = _min_max_dist(Y * s)
        if dmin / s >= margin:
            return Y, dmax / s
        Y = Y * (1.0 + 4 * np.finfo(float).eps)
    raise InvalidInputError(  # pragma: no cover - defensive
        f"could not scale a configuration to margin {margin!r}"
    )


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def min_separated_diameter(
    P: int,
    n: int,
    *,
    margin: float = 1.0,
    rng: RNGLike = None,
    n_starts: int | None = None,
    rtol: float = 1e-9,
    max_opt_points: int = 30,
) -> PackingResult:
    """``D*(P, n, margin)``: least diameter of ``P`` points with distances ``>= margin``.

    The unit-margin problem is optimised and cached (LRU, keyed by ``P, n``,
    starts and seed), then scaled by ``margin`` and re-checked.  The upper end
    is a local optimum from many starts: ``certified`` only where a matching
    lower bound is known.

    Parameters
    ----------
    P, n : int
        Number of points (classes) and dimension, ``>= 1``.
    margin : float, default 1.0
    rng : None, int or Generator, optional
        Seed of the random starts (``None``: 0; a Generator gives one integer).
    n_starts : int, optional
        Random starts added to the structured ones (default 24 for ``P <= 12``, else 12).
    rtol : float, default 1e-9
        ``certified`` means ``upper - lower <= rtol * upper``.
    max_opt_points : int, default 30
        Above this ``P`` the upper end is the best lattice piece (no optimiser).

    Returns
    -------
    PackingResult

    Raises
    ------
    InvalidInputError
        If ``P < 1``, ``n < 1``, ``margin < 0`` or an option is out of range.
    TypeError
        If ``P`` or ``n`` is not an integer.

    Examples
    --------
    >>> r = min_separated_diameter(3, 2, margin=2.0)
    >>> r.value, r.exact
    (2.0, True)
    >>> r = min_separated_diameter(5, 2)
    >>> round(r.value, 9), r.certified
    (1.618033989, True)
    """
    P = check_int(P, "P", minimum=1)
    n = check_int(n, "n", minimum=1)
    margin = check_margin(margin)
    rtol = check_positive(rtol, "rtol")
    max_opt_points = check_int(max_opt_points, "max_opt_points", minimum=2)
    if n_starts is None:
        n_random = 24 if P <= 12 else 12
    else:
        n_random = check_int(n_starts, "n_starts", minimum=0)
    if rng is None:
        seed = 0
    elif isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)):
        seed = check_int(rng, "rng", minimum=0)
    else:
        seed = int(as_rng(rng).integers(2**31))
    lo_unit, source = unit_lower_bound(P, n)
    closed = P == 1 or margin == 0.0 or n == 1 or P <= n + 1
    if closed:
        if P == 1 or margin == 0.0:
            src = "exact: margin 0" if margin == 0.0 and P > 1 else source
            return PackingResult(0.0, 0.0, 0.0, np.zeros((P, n)), True, True, src, "closed-form", 0)
        if n == 1:
            X = (np.arange(P, dtype=float) - (P - 1) / 2.0)[:, None]
        else:
            X = _regular_simplex(P, n)
            X = X / _min_max_dist(X)[0]
        X, _ = _scaled_feasible(X, margin)
        d = lo_unit * margin  # the closed form; the witness matches it to a few ulps
        return PackingResult(d, d, d, X, True, True, source, "closed-form", 0)
    Xu, tried, method = _unit_packing(P, n, n_random, seed, max_opt_points)
    X, d = _scaled_feasible(np.array(Xu), margin)
    lower = min(lo_unit * margin, d)
    return PackingResult(d, lower, d, X, False, bool(d - lower <= rtol * d), source, method, tried)


def lower_bound_curve(
    P: ArrayLike,
    n: int,
    *,
    margin: float = 1.0,
    curve: str | Callable[[int, int, float], float] = "packing",
) -> float | FloatArray:
    """Lower-bound curve of the embedding diameter against the number of classes.

    Our reconstruction of the paper's eq. 17 (its exact form is unknown): any
    triplet-separated embedding of ``P`` classes has diameter ``>= D*(P, n, margin)``.

    Parameters
    ----------
    P : int or array_like of int
        Number(s) of classes, each ``>= 1``.
    n : int
        Embedding dimension, ``>= 1``.
    margin : float, default 1.0
    curve : {"packing", "simplex"} or callable, default "packing"
        ``"packing"``: :func:`packing_lower_bound` (proven).  ``"simplex"``:
        ``margin`` for ``2 <= P <= n + 1`` (0 for ``P = 1``), else the upper
        end of :func:`min_separated_diameter` (an estimate, not a bound).  A
        callable ``f(P, n, margin) -> float`` is called once per element.

    Returns
    -------
    float or ndarray
        A float for a scalar ``P``, else an array of the shape of ``P``.

    Raises
    ------
    InvalidInputError
        For ``P < 1``, non-integral ``P``, an unknown curve name, or a
        callable that returns a negative or non-finite value.
    TypeError
        If ``curve`` is neither a name nor callable, or ``P`` is not numeric.

    Examples
    --------
    >>> lower_bound_curve([1, 2, 3, 4], 2).round(6).tolist()
    [0.0, 1.0, 1.0, 1.414214]
    >>> lower_bound_curve(3, 2, margin=0.5)
    0.5
    """
    n = check_int(n, "n", minimum=1)
    margin = check_margin(margin)
    if callable(curve):
        func = curve
    else:
        name = check_option(curve, "curve", LOWER_BOUND_CURVES)
        if name == "packing":

            def func(p, n_, m_):
                return packing_lower_bound(p, n_, margin=m_)
        else:

            def func(p, n_, m_):
                if p <= n_ + 1:
                    return 0.0 if p == 1 else m_
                return min_separated_diameter(p, n_, margin=m_).upper

    arr = np.asarray(P)
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise TypeError(f"`P` must be an integer or an array of integers; got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise InvalidInputError(f"`P` must hold integers; got {P!r}")
    if arr.size and arr.min() < 1:
        raise InvalidInputError(f"`P` must be >= 1; got minimum {arr.min().item()!r}")
    flat = arr.astype(np.int64).ravel()
    out = np.empty(flat.shape, dtype=float)
    for k, p in enumerate(flat.tolist()):
        v = func(int(p), n, margin)
        try:
            v = float(v)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"`curve` must return a real number; got {v!r} for P={p}"
            ) from exc
        if not (np.isfinite(v) and v >= 0.0):
            raise InvalidInputError(f"`curve` must return a finite value >= 0; got {v!r} for P={p}")
        out[k] = v
    if arr.ndim == 0:
        return float(out[0])
    return out.reshape(arr.shape)
