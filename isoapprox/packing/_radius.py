"""``r*(P, n)``: proven lower bounds of the least radius of a ball holding
``P`` points of ``R^n`` pairwise ``>= 1`` apart (re-exported by
:mod:`isoapprox.packing`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._validation import check_margin
from ..tolerances import DSTAR_RTOL
from ._dstar import check_counts, unit_bounds, via
from .bounds import code_radius_lower, shell_radius_lower

#: :func:`unit_radius_lower` runs its shell bound, which needs the bounds of
#: every smaller count, up to this many points; beyond, it uses this count's
#: value (the radius does not decrease with ``P``) and the direct candidates
RADIUS_P_MAX = 256


def _radius_direct(P: int, n: int) -> list[tuple[float, str]]:
    """The candidates of :func:`unit_radius_lower` that need no smaller count
    (``O(1)`` work for any ``P``)."""
    r = 1.0 - DSTAR_RTOL
    return [(math.sqrt((P - 1) / (2.0 * P)) * r, "sum of squares about the centroid"),
            (0.5 * (P ** (1.0 / n) - 1.0) * r, "volume"),
            (0.5 * unit_bounds(P, n).lower, "half of D*"),
            (code_radius_lower(P, n) * r, "directions from the centre")]


def _exact_radius(P: int, n: int) -> tuple[float, str] | None:
    """``r*(P, n)`` where it is known in closed form (``P <= n + 1``: one point or
    the regular simplex), else None."""
    if P <= 1:
        return 0.0, "a single point"
    if P <= n + 1:
        return math.sqrt((P - 1) / (2.0 * P)), "exact: regular simplex"
    return None


@functools.lru_cache(maxsize=65536)
def _radius_table(n: int, P: int) -> tuple[float, str]:
    """:func:`unit_radius_lower` for ``n >= 2``, ``P <= RADIUS_P_MAX``: a pure
    function, each count from the values of the smaller ones (cached)."""
    exact = _exact_radius(P, n)
    if exact is not None:
        return exact
    inner = np.array([_radius_table(n, j)[0] for j in range(P)])
    cands = _radius_direct(P, n)
    cands.append((shell_radius_lower(P, n, inner), "shells about the centre"))
    cands.append((float(inner[P - 1]), f"monotonicity in P (from P = {P - 1})"))
    return max(cands, key=lambda t: t[0])


def unit_radius_lower(P: int, n: int) -> tuple[float, str]:
    """Proven lower bound of ``r*(P, n)``, the least radius of a ball holding
    ``P`` points of ``R^n`` at pairwise distances ``>= 1``, and its source.

    Exact on the line (``(P - 1) / 2``) and for ``P <= n + 1`` (the regular
    simplex, ``sqrt((P - 1) / (2 P))``); otherwise the largest of: the sum
    of squared distances about the centroid (``r^2 >= (P - 1) / (2 P)``);
    volume (``P`` disjoint balls of radius ``1/2`` in one of radius ``r +
    1/2``); half of ``D*`` (:func:`unit_lower_bound`); the directions from
    the centre (:func:`isoapprox.packing.bounds.code_radius_lower`); shells
    about the centre (:func:`isoapprox.packing.bounds.shell_radius_lower`,
    from the bounds of fewer points, up to ``RADIUS_P_MAX``); the bound of
    ``P - 1`` points.  Each is lowered by ``DSTAR_RTOL``.

    Parameters
    ----------
    P, n : int
        Each in ``[1, 2**63 - 1]`` (:data:`BOUND_P_MAX`, :data:`BOUND_N_MAX`).
        Beyond ``RADIUS_P_MAX`` the shells are not recomputed (the value of
        ``RADIUS_P_MAX`` points stands, by monotonicity) and the other
        candidates are closed forms, so any ``P`` answers at once; for
        large ``P`` the volume bound ``(P^(1/n) - 1) / 2`` or half of
        :func:`d_star`'s lower end decides.

    Raises
    ------
    InvalidInputError, TypeError
        As :func:`unit_lower_bound` (``P`` or ``n`` out of range, or not an integer).

    Examples
    --------
    >>> round(unit_radius_lower(4, 3)[0], 6)   # the regular tetrahedron
    0.612372
    >>> v, src = unit_radius_lower(16, 3)
    >>> round(v, 4), src
    (1.0534, 'shells about the centre')
    """
    P, n = check_counts(P, n)
    return compute_unit_radius_lower(P, n)


def compute_unit_radius_lower(P: int, n: int) -> tuple[float, str]:
    """:func:`unit_radius_lower` of checked ``P`` and ``n``."""
    if n == 1:
        return (0.5 * (P - 1), "exact: equally spaced points on a line") if P > 1 else \
            (0.0, "a single point")
    exact = _exact_radius(P, n)  # not through the table: a large simplex fills no slot
    if exact is not None:
        return exact
    if P <= RADIUS_P_MAX:
        return _radius_table(n, P)
    cands = _radius_direct(P, n)
    # the shells' value of RADIUS_P_MAX points is at most r*(RADIUS_P_MAX, n) <=
    # D*(RADIUS_P_MAX, n) (a ball about one point holds them all): once a direct
    # candidate reaches the least known diameter, as for every large P, it cannot
    # win (nor tie first: it comes last) and is not computed (the cold cost of
    # the shells, a second, would be the only work of a huge P)
    if max(v for v, _ in cands) < unit_bounds(RADIUS_P_MAX, n).upper:
        v, src = _radius_table(n, RADIUS_P_MAX)
        cands.append((v, via(src, f"monotonicity in P (from P = {RADIUS_P_MAX})")))
    return max(cands, key=lambda t: t[0])


def radius_lower_bound(P: int, n: int, *, margin: float = 1.0) -> float:
    """Proven lower bound of the least radius of a ball holding ``P`` points of
    ``R^n`` at pairwise distances ``>= margin``: ``margin *``
    :func:`unit_radius_lower` (``0`` for ``margin <= 0``).

    Parameters
    ----------
    P, n : int
        ``P`` points of ``R^n``, each in ``[1, 2**63 - 1]`` (any ``P`` answers
        at once: :func:`unit_radius_lower`).
    margin : float
        The separation, ``>= 0`` and finite (as for :func:`d_star`).

    Raises
    ------
    InvalidInputError, TypeError
        As :func:`d_star` (``P``, ``n`` or ``margin`` out of range, or of the wrong type).

    Examples
    --------
    >>> radius_lower_bound(2, 2, margin=0.2)
    0.1
    """
    P, n = check_counts(P, n)
    return compute_radius_lower_bound(P, n, check_margin(margin))


def compute_radius_lower_bound(P: int, n: int, margin: float) -> float:
    """:func:`radius_lower_bound` of checked ``P``, ``n`` and ``margin``."""
    if not margin > 0.0:
        return 0.0
    return margin * compute_unit_radius_lower(P, n)[0]
