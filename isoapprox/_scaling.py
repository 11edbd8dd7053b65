"""Exact power-of-two rescaling that keeps squared distances in range.

Distances are computed as ``sqrt(sum (x - y)**2)``.  For coordinates beyond
about ``1e150`` the squares overflow, and below about ``1e-160`` they
underflow.  Multiplying every input by the same power of two is exact in
binary floating point, commutes with every distance, and is undone exactly
on the way out, so extreme scales give the same relative precision as unit
scales.
"""

from __future__ import annotations

import math

import numpy as np

_LOW = 2.0**-100
_HIGH = 2.0**100


def pow2_scale(*arrays: np.ndarray) -> float:
    """Power of two ``s`` such that ``s * max|arrays|`` lies in ``[0.5, 1)``.

    Returns ``1.0`` when the inputs are all zero or already in a safe range
    ``[2**-100, 2**100]``.
    """
    m = 0.0
    for a in arrays:
        if a.size:
            m = max(m, float(np.max(np.abs(a))))
    if m == 0.0 or _LOW <= m <= _HIGH:
        return 1.0
    _, exponent = math.frexp(m)
    return math.ldexp(1.0, -exponent)
