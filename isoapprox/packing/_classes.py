"""The bounds of the applications: ``D*`` and ``r*`` of the ``P'`` classes that
a triplet-separated embedding keeps apart, and the lower-bound curve
(re-exported by :mod:`isoapprox.packing`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np

from .._typing import ArrayLike, FloatArray
from .._validation import as_labels, check_int, check_margin, check_option, class_counts
from ..exceptions import InvalidInputError
from ..tolerances import PACKING_RTOL
from ._dstar import BOUND_N_MAX, BOUND_P_MAX, check_counts, compute_d_star, unit_bounds
from ._radius import compute_unit_radius_lower

#: the named curves of :func:`lower_bound_curve`: ``"packing"`` (the proven
#: ``D*`` bracket) and ``"simplex"`` (its upper end, one curve)
LOWER_BOUND_CURVES = ("packing", "simplex")


def check_dim(codes: np.ndarray, dim: object) -> int:
    """The embedding dimension of a bound of ``codes``, an int in ``[1, BOUND_N_MAX]``
    (``TypeError`` or ``InvalidInputError`` naming ``dim`` otherwise; and, as
    :func:`d_star`, ``InvalidInputError`` naming ``P`` for empty codes)."""
    dim = check_int(dim, "dim", minimum=1, maximum=BOUND_N_MAX)
    if codes.size == 0:  # P' = 0, refused as d_star refuses it (P' >= 1 otherwise)
        check_counts(0, dim)
    return dim


def separated_class_count(y: ArrayLike) -> int:
    """``P'``: classes that every triplet-separated embedding keeps ``margin`` apart.

    A point of a class with two or more points is at distance ``>= alpha``
    from every point of another class; two singletons constrain nothing.  So
    ``P'`` counts the classes with two or more points, plus one if some class
    is a singleton.

    Parameters
    ----------
    y : array_like of shape (N,)
        Class labels.

    Returns
    -------
    int
        ``P'``, the ``P`` of ``D*(P, n, alpha)`` in the theory's bounds.

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


def separated_distance_bound(P: int, n: int, margin: float, diam: float) -> float:
    """Proven float64 lower bound of ``max_ij |d_G(i, j) - d_E(i, j)|`` over every
    ``G`` in which ``P`` given points are pairwise ``>= margin`` apart, for
    points ``E`` of diameter at most ``diam`` in ``R^n``: ``D*_lower(P, n,
    margin) - diam`` (some pair of the ``P`` has ``d_G >= D*`` and ``d_E <=
    diam``), lowered by ``PACKING_RTOL * max(D*_lower, diam)``, clipped at 0.
    ``D*_lower`` is :func:`d_star`'s.  The one home of this bound and its
    allowance (:func:`packing_distance_bound`, the class representatives of
    :mod:`isoapprox.ideal._subbatch`).

    ``P`` and ``n`` are checked as for :func:`d_star` (each in ``[1, 2**63 -
    1]``, any of them answered at once; ``InvalidInputError`` or
    ``TypeError`` naming the argument otherwise); ``margin`` (``>= 0``) and
    ``diam`` (``>= 0``, finite) are not.

    Examples
    --------
    >>> round(separated_distance_bound(4, 2, 1.0, 0.0), 9)  # sqrt 2
    1.414213562
    """
    P, n = check_counts(P, n)
    return compute_separated_distance_bound(P, n, margin, diam)


def compute_separated_distance_bound(P: int, n: int, margin: float, diam: float) -> float:
    """:func:`separated_distance_bound` of checked ``P`` and ``n``."""
    ds = margin * unit_bounds(P, n).lower
    return max(0.0, ds - diam - PACKING_RTOL * max(ds, diam))


def separated_radius_bound(P: int, n: int, margin: float, radius: float) -> float:
    """Proven float64 lower bound of ``max_k |G_k - E_k|`` over every ``G`` in
    which ``P`` given points are pairwise ``>= margin`` apart, for points
    ``E`` in a ball of radius ``radius`` in ``R^n``: ``r*_lower(P, n, margin)
    - radius`` (the ``P`` points of ``G`` lie in the concentric ball of radius
    ``radius + t``; :func:`radius_lower_bound`), lowered by ``PACKING_RTOL *
    max(r*_lower, radius)``, clipped at 0.  The one home of this bound and
    its allowance (:func:`packing_radius_bound`, the class representatives
    of :mod:`isoapprox.ideal._subbatch`).

    ``P`` and ``n`` are checked as for :func:`unit_radius_lower` (each in
    ``[1, 2**63 - 1]``, any of them answered at once); ``margin`` (``>= 0``)
    and ``radius`` (``>= 0``, finite) are not.

    Examples
    --------
    >>> round(separated_radius_bound(16, 3, 1.0, 0.0), 4)   # r*(16, 3) >= 1.0534
    1.0534
    """
    P, n = check_counts(P, n)
    return compute_separated_radius_bound(P, n, margin, radius)


def compute_separated_radius_bound(P: int, n: int, margin: float, radius: float) -> float:
    """:func:`separated_radius_bound` of checked ``P`` and ``n``."""
    rs = margin * compute_unit_radius_lower(P, n)[0]
    return max(0.0, rs - radius - PACKING_RTOL * max(rs, radius))


def packing_distance_bound(codes: np.ndarray, dim: int, margin: float, diam: float) -> float:
    """Proven float64 lower bound of ``d_iso(E, F_TS)``: ``D*_lower(P', n, alpha) - diam(E)``.

    The ``P'`` representatives of any ``G`` in ``F_TS(alpha)`` are pairwise
    ``>= alpha`` apart: :func:`separated_distance_bound` of ``P'``
    (:func:`separated_count`).  ``dim`` is checked (an integer in ``[1, 2**63
    - 1]``, ``InvalidInputError`` or ``TypeError`` naming it otherwise);
    ``codes`` (validated, non-empty), ``margin`` and ``diam`` are not.

    Examples
    --------
    >>> codes = np.repeat(np.arange(4), 2)          # 4 classes collapsed in R^2
    >>> round(packing_distance_bound(codes, 2, 1.0, 0.0), 9)  # sqrt 2
    1.414213562
    """
    return compute_packing_distance_bound(codes, check_dim(codes, dim), margin, diam)


def compute_packing_distance_bound(codes: np.ndarray, dim: int, margin: float,
                                   diam: float) -> float:
    """:func:`packing_distance_bound` of a checked ``dim``."""
    return compute_separated_distance_bound(separated_count(codes), dim, margin, diam)


def packing_radius_bound(codes: np.ndarray, dim: int, margin: float, radius: float) -> float:
    """Proven float64 lower bound of ``d_haus(E, F_TS)``: ``r*_lower(P', n, alpha) - R``.

    ``radius`` is the radius ``R`` of a ball holding ``E`` (an upper bound of
    its least one); the ``P'`` representatives of any ``G`` in
    ``F_TS(alpha)`` are pairwise ``>= alpha`` apart:
    :func:`separated_radius_bound` of ``P'`` (:func:`separated_count`).
    Half of :func:`packing_distance_bound`, ``(D*_lower - diam(E)) / 2``, can
    be larger when ``R`` is above ``diam(E) / 2`` (as it may be: up to
    ``diam(E) sqrt(n / (2 (n + 1)))``, Jung); near collapse this one is, as
    ``r*_lower >= D*_lower / 2``.  ``dim`` is checked as for
    :func:`packing_distance_bound`; ``codes``, ``margin`` and ``radius`` are not.

    Examples
    --------
    >>> codes = np.repeat(np.arange(16), 2)          # 16 classes collapsed in R^3
    >>> round(packing_radius_bound(codes, 3, 1.0, 0.0), 4)
    1.0534
    """
    return compute_packing_radius_bound(codes, check_dim(codes, dim), margin, radius)


def compute_packing_radius_bound(codes: np.ndarray, dim: int, margin: float,
                                 radius: float) -> float:
    """:func:`packing_radius_bound` of a checked ``dim``."""
    return compute_separated_radius_bound(separated_count(codes), dim, margin, radius)


def d_star_bracket(codes: np.ndarray, dim: int, margin: float) -> tuple[float, float, float, bool,
                                                                         str]:
    """``(value, lower, upper, exact, source)`` of ``D*(P', n, margin)`` (:func:`d_star`).

    ``P'`` is :func:`separated_class_count` of ``codes``; the bracket depends
    on ``(P', n, margin)`` only.  ``source`` is the exact value's source, or
    ``"lower: ...; upper: ..."``.  ``dim`` (``n``) is checked as for
    :func:`packing_distance_bound` and ``margin`` as for :func:`d_star`.

    Examples
    --------
    >>> d_star_bracket(np.repeat(np.arange(3), 2), 2, 0.5)[:4]
    (0.5, 0.5, 0.5, True)
    """
    return compute_d_star_bracket(codes, check_dim(codes, dim), check_margin(margin))


def compute_d_star_bracket(codes: np.ndarray, dim: int,
                           margin: float) -> tuple[float, float, float, bool, str]:
    """:func:`d_star_bracket` of a checked ``dim`` and ``margin``."""
    r = compute_d_star(separated_count(codes), dim, margin)
    src = r.lower_source if r.exact else f"lower: {r.lower_source}; upper: {r.upper_source}"
    return r.upper, r.lower, r.upper, r.exact, src


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
        Number(s) of classes, each in ``[1, 2**63 - 1]`` (:data:`BOUND_P_MAX`;
        integral floats are accepted).  Every element answers at once for
        ``"packing"`` and ``"simplex"`` (:func:`d_star`); the work is one
        bracket per element, never a loop up to ``P``.
    n : int
        Embedding dimension, in ``[1, 2**63 - 1]``.
    margin : float, default 1.0
    curve : {"packing", "simplex"} or callable, default "packing"
        ``"packing"``: :func:`packing_lower_bound` (proven).  ``"simplex"``:
        ``margin`` for ``2 <= P <= n + 1`` (0 for ``P = 1``), else the upper
        end of :func:`d_star` (the diameter of a known layout).  A
        callable ``f(P, n, margin) -> float`` is called once per element.

    Returns
    -------
    float or ndarray
        A float for a scalar ``P``, else an array of the shape of ``P``.

    Raises
    ------
    InvalidInputError
        For ``P < 1`` or ``P > 2**63 - 1`` (also a Python integer beyond
        float64, such as ``10**400``), non-integral ``P``, ``n`` out of
        range, an unknown curve name, or a callable that returns a negative
        or non-finite value.
    TypeError
        If ``curve`` is neither a name nor callable, ``P`` is not numeric
        (strings, bools) or ``n`` not an integer.

    Examples
    --------
    >>> lower_bound_curve([1, 2, 3, 4], 2).round(6).tolist()
    [0.0, 1.0, 1.0, 1.414214]
    >>> lower_bound_curve(3, 2, margin=0.5)
    0.5
    """
    n = check_int(n, "n", minimum=1, maximum=BOUND_N_MAX)
    margin = check_margin(margin)
    if callable(curve):
        func = curve
    else:  # d_star's upper end is margin (0 for P = 1) for P <= n + 1, the simplex
        end = "lower" if check_option(curve, "curve", LOWER_BOUND_CURVES) == "packing" else "upper"

        def func(p, n_, m_):
            return getattr(compute_d_star(p, n_, m_), end)

    arr = np.asarray(P)
    # Python integers beyond the int64 range come as an object array
    big = arr.dtype.kind == "O" and arr.size > 0 and all(
        isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in arr.flat)
    if arr.dtype.kind not in "iuf" and not big:
        raise TypeError(f"`P` must be an integer or an array of integers; got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise InvalidInputError(f"`P` must hold integers; got {P!r}")
    if arr.size:
        # Python numbers: exact comparisons with the int64 limit (a float 2**63 is above it)
        lo, hi = (min(arr.flat), max(arr.flat)) if big else (arr.min().item(), arr.max().item())
        if lo < 1:
            raise InvalidInputError(f"`P` must be >= 1; got minimum {lo!r}")
        if hi > BOUND_P_MAX:
            raise InvalidInputError(f"`P` must be <= {BOUND_P_MAX}; got maximum {hi!r}")
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
