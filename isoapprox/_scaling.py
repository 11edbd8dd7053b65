"""Exact power-of-two rescaling that keeps squared distances in range.

Distances are computed as ``sqrt(sum (x - y)**2)``.  For coordinates beyond
about ``1e150`` the squares overflow, and below about ``1e-160`` they
underflow.  Multiplying every input by the same power of two is exact in
binary floating point (as long as the product stays normal), commutes with
every distance, and is undone exactly on the way out, so extreme scales give
the same relative precision as unit scales.

The whole float64 range is covered, subnormal inputs and inputs near the
overflow threshold included: the factor ``s`` returned by :func:`pow2_scale`
is always a finite power of two (``2**-1024 <= s <= 2**1023``), so ``X * s``
never overflows and ``value / s`` is the correctly rounded result in the
caller's units.  A result larger than the largest float64 (``~1.8e308``) then
comes back as ``inf`` and one smaller than the least subnormal as ``0.0``:
that is the honest float64 answer, and callers that certify anything must
check finiteness (they never derive a certificate from ``inf`` or ``nan``).
Coordinates smaller than ``2**-1022`` times the largest one are rounded to
that absolute resolution by the scaling; distances are computed to a
comparable absolute accuracy anyway (squares below about ``1e-308`` times
the largest square flush to zero).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

_LOW = 2.0**-100
_HIGH = 2.0**100
#: the largest exponent of a finite power of two (``2**1023``); the scaling
#: of a subnormal maximum stops there (its scaled maximum is then at least
#: ``2**-51``, so squares are normal)
_MAX_EXP = 1023
#: points scaled below this (relative to unit size) trigger the length rule
_DATA_FLOOR = 2.0**-256
#: scaled lengths stay below ``2**_LENGTH_EXP``
_LENGTH_EXP = 600


def pow2_scale(*arrays: np.ndarray, lengths: Iterable[float] = ()) -> float:
    """Power of two ``s`` such that ``s * max|arrays, lengths|`` lies in ``[0.5, 1)``.

    Returns ``1.0`` when the inputs are all zero or already in a safe range
    ``[2**-100, 2**100]``.  For a subnormal maximum (below ``2**-1022``) the
    factor is capped at ``2**1023`` and the scaled maximum lies in
    ``[2**-51, 0.5)``.  The inputs must be finite (callers validate them
    first).

    ``lengths`` are scalars (a margin, a tolerance) that are compared with or
    added to distances but never squared.  When they dominate the points so
    much that the scaled points would fall below ``2**-256`` (where the
    squares of their differences start to lose range), ``s`` is raised as far
    as the points allow (scaled maximum below 1) while every scaled length
    stays below ``2**600`` (sums of up to ``2**400`` such terms stay finite).
    Without ``lengths`` the points alone decide.

    Examples
    --------
    >>> pow2_scale(np.array([3.0]))
    1.0
    >>> pow2_scale(np.array([1e-310])) == 2.0**1023
    True
    >>> pow2_scale(np.array([1e308])) == 2.0**-1024
    True
    >>> pow2_scale(np.array([1e-300]), lengths=(1e-9,)) == 2.0**629
    True
    """
    return pow2_factor(max_magnitude(*arrays), lengths)


def pow2_scaled(X: np.ndarray, *others: np.ndarray,
                lengths: Iterable[float] = ()) -> tuple[np.ndarray, float]:
    """``X`` times the factor ``s = pow2_scale(X, *others, lengths=lengths)``
    (``X`` itself when ``s`` is 1), and ``s``; ``others`` only take part in
    choosing ``s`` (a margin as a one-element array, say)."""
    s = pow2_scale(X, *others, lengths=lengths)
    return (X * s if s != 1.0 else X), s


def pow2_scaled_pair(X1: np.ndarray, X2: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``X1`` and ``X2`` times their common factor ``s = pow2_scale(X1, X2)``
    (themselves when ``s`` is 1), and ``s``."""
    s = pow2_scale(X1, X2)
    return (X1 * s, X2 * s, s) if s != 1.0 else (X1, X2, s)


def max_magnitude(*arrays: np.ndarray) -> float:
    """``max |arrays|`` (0.0 when all are empty), for :func:`pow2_factor`."""
    m = 0.0
    for a in arrays:
        if a.size:  # max |a| without the temporary of np.abs (0.5 ms at 10,000 x 32)
            m = max(m, float(np.max(a)), -float(np.min(a)))
    return m


def pow2_factor(m: float, lengths: Iterable[float] = ()) -> float:
    """:func:`pow2_scale` of points whose largest magnitude is ``m``
    (:func:`max_magnitude`), for callers that scale the same points with
    several others: ``pow2_factor(max(max_magnitude(E), max_magnitude(G)))``
    is ``pow2_scale(E, G)`` without reading ``E`` again."""
    L = max((abs(float(v)) for v in lengths), default=0.0)
    s = _unit_factor(max(m, L))
    if m > 0.0 and L > 0.0 and m * s < _DATA_FLOOR:
        _, e_m = math.frexp(m)
        _, e_l = math.frexp(L)
        s = math.ldexp(1.0, min(-e_m, _LENGTH_EXP - e_l, _MAX_EXP))
    return s


def _unit_factor(m: float) -> float:
    if m == 0.0 or _LOW <= m <= _HIGH:
        return 1.0
    _, exponent = math.frexp(m)
    return math.ldexp(1.0, min(-exponent, _MAX_EXP))
