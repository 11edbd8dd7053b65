"""Explicit configurations of separated points: the upper ends of ``D*(P, n, 1)``.

A construction is named by a string and built by :func:`construct` as a
``(P, n)`` float64 array of distinct points; its *ratio* (largest over
least pairwise distance, :func:`certified_ratio`) is an upper bound of
``D*(P, n, 1)``, since scaling the points to least distance 1 gives a
feasible layout of that diameter.  Any ``P`` rows of a larger layout, padded
with zero coordinates into a larger dimension, are again a layout, whose
ratio is no larger: this is how :func:`isoapprox.packing.d_star` makes its
upper bound non-increasing in ``n`` and non-decreasing in ``P``.

Names (each built deterministically, without randomness):

``"simplex"``
    ``P <= n + 1`` vertices of a regular simplex (ratio 1).
``"line"``
    ``n = 1``: ``0, 1, ..., P - 1`` (ratio ``P - 1``).
``"cross-polytope"``
    ``P <= 2 n`` of the points ``+-e_i`` (ratio ``sqrt 2`` once two are
    antipodal).
``"code:w"``
    Binary words of length ``n + 1`` and weight ``w``, in lexicographic
    order, in orthonormal coordinates of their hyperplane (constant-weight
    code: least distance ``sqrt 2``, largest ``sqrt(2 min(w, n + 1 - w))``,
    ratio ``sqrt(min(w, n + 1 - w))``, ``C(n + 1, w)`` points).
``"cube:k"``
    ``{0, 1}^k`` in lexicographic order, ``k <= n`` (ratio ``sqrt k``).
``"polygon:k"``
    ``n >= 2``: a regular ``(P - k)``-gon of unit side (circumradius at
    least 1 when ``k = 1``) with ``k`` in {0, 1} points at its centre.
``"grid:m:k"``, ``"hexagon:k"``
    The closed-form families of :func:`family_ratio`.
``"lattice:L:j"``
    The ``P`` points of the lattice ``L`` (``Z`` = ``Z^n``, ``D`` = ``D_n``,
    ``A`` = ``A_n``, the hexagonal lattice for ``n = 2``, ``E8``) nearest to
    its ``j``-th deterministic centre (:func:`lattice_centres`), ties broken by
    the enumeration order; distances are compared exactly in integers.

Examples
--------
>>> X = construct("code:2", 10, 4)          # C(5, 2) = 10 points in R^4
>>> round(certified_ratio(X), 12)           # sqrt 2, rounded up
1.414213562375
"""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np

from ..tolerances import DSTAR_RTOL

__all__ = [
    "LATTICES",
    "certified_ratio",
    "construct",
    "construction_names",
    "family_ratio",
    "lattice_centres",
    "min_max_distance",
]

#: lattices of the ball cuts, with the least dimension each is used in
LATTICES = {"Z": 2, "D": 3, "A": 2, "E8": 8}
#: a lattice cut enumerates at most this many candidate points
_MAX_POOL = 400_000


#: pairs per block of :func:`min_max_distance`
_PAIR_BLOCK = 1 << 20


def min_max_distance(X: np.ndarray) -> tuple[float, float]:
    """(least, largest) pairwise distance of the rows of ``X``, by direct differences.

    ``(nan, nan)`` if a distance is not a number (a coordinate is ``nan``, or
    two are infinite), so that no comparison can take such points for a layout.

    Examples
    --------
    >>> min_max_distance(np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    (1.0, 5.0)
    """
    P = X.shape[0]
    if P < 2:
        return math.inf, 0.0
    lo, hi = math.inf, 0.0
    # rows in blocks of about _PAIR_BLOCK pairs: memory O(_PAIR_BLOCK n), not
    # O(P^2 n); each pair's distance is the same float64 expression as in one pass
    i0 = 0
    while i0 < P - 1:
        i1, pairs = i0, 0
        while i1 < P - 1 and (pairs == 0 or pairs + (P - 1 - i1) <= _PAIR_BLOCK):
            pairs += P - 1 - i1
            i1 += 1
        counts = P - 1 - np.arange(i0, i1)
        iu = np.repeat(np.arange(i0, i1), counts)
        starts = np.cumsum(counts) - counts
        ju = np.arange(pairs) - np.repeat(starts, counts) + iu + 1
        with np.errstate(invalid="ignore"):  # inf - inf: nan, reported below
            d = X[iu] - X[ju]
            dist = np.sqrt(np.sum(d * d, axis=1))
        if np.isnan(dist).any():
            return math.nan, math.nan
        lo, hi = min(lo, float(dist.min())), max(hi, float(dist.max()))
        i0 = i1
    return lo, hi


def certified_ratio(X: np.ndarray) -> float:
    """Largest over least pairwise distance of ``X`` (float64), rounded up.

    The distances are computed by direct differences in float64, each within
    ``(n + 3) / 2`` units in the last place of the exact real for ``n <= 64``
    coordinates, so the float quotient is within ``n + 4`` ulps of the exact
    ratio; it is raised by :data:`isoapprox.tolerances.DSTAR_RTOL` (``1e-12``,
    thousands of ulps), a proven upper bound of ``D*(P, n, 1)`` for
    ``P = len(X)``.  ``0.0`` for one point, ``inf`` if two points coincide or a
    distance is not a number (a ``nan`` coordinate never certifies a ratio).

    Examples
    --------
    >>> certified_ratio(np.eye(3)) == 1.0 + 1e-12
    True
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] < 2:
        return 0.0
    lo, hi = min_max_distance(X)
    if not lo > 0.0:
        return math.inf
    return (hi / lo) * (1.0 + DSTAR_RTOL)


def lattice_centres(kind: str, n: int) -> list[tuple[Fraction, ...]]:
    """The deterministic centres of the ball cuts of a lattice (in its coordinates).

    ``Z``, ``D``: ``(1/2, ..., 1/2, 0, ..., 0)`` with ``k = 0..n`` halves,
    and ``e_1`` for ``D`` (a deep hole).  ``A`` (coordinates of
    ``Z^(n + 1)`` summing to 0): the glue vectors ``[k]``, ``k = 0..(n+1)//2``,
    and ``(e_1 - e_2) / 2``.  ``E8``: ``0``, ``e_1``, ``(e_1 + e_2) / 2`` and
    ``(1/4, ..., 1/4)``.

    Examples
    --------
    >>> [tuple(map(str, c)) for c in lattice_centres("Z", 2)]
    [('0', '0'), ('1/2', '0'), ('1/2', '1/2')]
    """
    h, z = Fraction(1, 2), Fraction(0)
    if kind in ("Z", "D"):
        out = [tuple([h] * k + [z] * (n - k)) for k in range(n + 1)]
        if kind == "D":
            out.append(tuple([Fraction(1)] + [z] * (n - 1)))
        return out
    if kind == "A":
        m = n + 1
        out = []
        for k in range(0, m // 2 + 1):
            out.append(tuple([Fraction(k, m)] * (m - k) + [Fraction(k - m, m)] * k))
        out.append(tuple([h, -h] + [z] * (m - 2)))
        return out
    if kind == "E8":
        q = Fraction(1, 4)
        return [tuple([z] * 8), tuple([Fraction(1)] + [z] * 7), tuple([h, h] + [z] * 6),
                tuple([q] * 8)]
    raise ValueError(f"unknown lattice {kind!r}")


def construction_names(P: int, n: int) -> list[str]:
    """Names of the constructions that give ``P`` points in ``R^n`` (arguments not checked).

    Examples
    --------
    >>> construction_names(4, 2)[:3]
    ['cross-polytope', 'cube:2', 'polygon:0']
    """
    out: list[str] = []
    if P <= n + 1:
        out.append("simplex")
    if n == 1:
        out.append("line")
    if n + 1 < P <= 2 * n:
        out.append("cross-polytope")
    if (w := _code_weight(P, n)) is not None:  # the least weight has the least ratio
        out.append(f"code:{w}")
    for k in range(2, n + 1):
        if 2**k >= P:
            out.append(f"cube:{k}")
            break
    if n >= 2 and P >= 3:
        out.append("polygon:0")
        if P >= 4:
            out.append("polygon:1")
    for kind, least in LATTICES.items():
        if n < least or (kind == "E8" and n != 8) or P < 2:
            continue
        for j in range(len(lattice_centres(kind, n))):
            if _lattice_pool(kind, n, j) is not None:
                out.append(f"lattice:{kind}:{j}")
    return out


def construct(name: str, P: int, n: int) -> np.ndarray | None:
    """The ``(P, n)`` float64 points of construction ``name``, or None if it has fewer.

    Examples
    --------
    >>> construct("cross-polytope", 4, 2).tolist()
    [[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]
    """
    kind, _, arg = name.partition(":")
    if kind == "simplex":
        X = _regular_simplex(P, n) if P <= n + 1 else None
    elif kind == "line":
        X = np.arange(P, dtype=float)[:, None]
    elif kind == "cross-polytope":
        V = np.vstack([np.eye(n), -np.eye(n)]) + 0.0  # no signed zeros
        X = V[np.arange(2 * n).reshape(2, n).T.ravel()] if P <= 2 * n else None
    elif kind == "code":
        X = _code(int(arg), n)
    elif kind == "cube":
        k = int(arg)
        X = np.array(list(itertools.product((0.0, 1.0), repeat=k))) if k <= n else None
    elif kind == "polygon":
        X = _polygon(P, int(arg)) if n >= 2 else None
    elif kind == "lattice":
        lat, _, j = arg.partition(":")
        X = _lattice_cut(lat, n, int(j), P)
    elif kind == "grid":
        m, _, k = arg.partition(":")
        X = _grid(int(m), int(k)) if int(m) <= n else None
    elif kind == "hexagon":
        X = _hexagon(int(arg)) if n >= 2 else None
    else:
        raise ValueError(f"unknown construction {name!r}")
    if X is None or X.shape[0] < P or X.shape[1] > n:
        return None
    return pad(X, P, n)


def pad(X: np.ndarray, P: int, n: int) -> np.ndarray:
    """The first ``P`` rows of ``X`` (of at most ``n`` columns), padded with zero coordinates
    to ``n`` columns (a new array)."""
    if X.shape[0] < P or X.shape[1] > n:
        raise ValueError(f"pad: X of shape {X.shape} has fewer than P = {P} rows or more "
                         f"than n = {n} columns")
    return np.pad(X[:P], ((0, 0), (0, n - X.shape[1])))


def _code_weight(P: int, n: int) -> int | None:
    """The least weight ``w`` in ``[2, (n + 1) // 2]`` of a binary code of length ``n + 1``
    with at least ``P`` words (``"code:w"``), or None."""
    return next((w for w in range(2, (n + 1) // 2 + 1) if math.comb(n + 1, w) >= P), None)


# ---------------------------------------------------------------------------
# the constructions
# ---------------------------------------------------------------------------


def _hyperplane_basis(m: int) -> np.ndarray:
    """An orthonormal basis (rows) of ``{x in R^m : sum x = 0}`` (Helmert)."""
    B = np.zeros((m - 1, m))
    for k in range(1, m):
        B[k - 1, :k] = 1.0 / math.sqrt(k * (k + 1))
        B[k - 1, k] = -k / math.sqrt(k * (k + 1))
    return B


def _regular_simplex(P: int, n: int) -> np.ndarray:
    """``P <= n + 1`` vertices of a regular simplex of edge ``sqrt 2`` in ``R^(P - 1)``."""
    if P == 1:
        return np.zeros((1, 1))
    return np.eye(P) @ _hyperplane_basis(P).T


@functools.lru_cache(maxsize=64)
def _code(w: int, n: int) -> np.ndarray | None:
    m = n + 1
    if not 1 <= w <= m - 1 or math.comb(m, w) > 100_000:
        return None
    W = np.zeros((math.comb(m, w), m))
    for r, c in enumerate(itertools.combinations(range(m), w)):
        W[r, list(c)] = 1.0
    X = W @ _hyperplane_basis(m).T
    X.setflags(write=False)
    return X


def _polygon(P: int, k: int) -> np.ndarray | None:
    m = P - k
    if m < 3 or k not in (0, 1):
        return None
    R = 1.0 / (2.0 * math.sin(math.pi / m))
    if k:
        R = max(R, 1.0)
    a = 2.0 * math.pi * np.arange(m) / m
    X = R * np.c_[np.cos(a), np.sin(a)]
    return np.vstack([X, np.zeros((k, 2))]) if k else X


def _box(centre: np.ndarray, reach: int) -> np.ndarray:
    """Integer points within ``reach`` of the integer box around ``centre`` (floats)."""
    axes = [range(math.floor(c) - reach, math.ceil(c) + reach + 1) for c in centre]
    return np.array(list(itertools.product(*axes)), dtype=np.int64)


@functools.lru_cache(maxsize=512)
def _lattice_pool(kind: str, n: int, j: int) -> np.ndarray | None:
    """Lattice points in integer coordinates, sorted by exact distance to centre ``j``.

    Returns at most 64 rows (the table's largest ``P``), or None when the
    enumeration would exceed ``_MAX_POOL`` candidates.
    """
    centre = lattice_centres(kind, n)[j]
    q = math.lcm(*(c.denominator for c in centre))
    if kind == "E8":
        q = math.lcm(q, 2)
    cq = np.array([int(c * q) for c in centre], dtype=np.int64)
    cf = np.array([float(c) for c in centre])
    if kind == "E8":
        ints = np.array(list(itertools.product(range(-2, 3), repeat=8)), dtype=np.int64)
        ints = ints[ints.sum(axis=1) % 2 == 0] * 2
        halves = np.array(list(itertools.product((-3, -1, 1, 3), repeat=8)), dtype=np.int64)
        halves = halves[halves.sum(axis=1) % 4 == 0]
        pts, scale = np.vstack([ints, halves]), 2  # coordinates times 2
    else:
        dim = n  # A_n: the first n coordinates; the last is minus their sum
        reach = 0
        while reach < 6 and (2 * reach + 4) ** dim <= _MAX_POOL:
            reach += 1  # the box has at most 2 reach + 2 values per axis
        if reach == 0:
            return None
        pts = _box(cf[:dim], reach)
        if kind == "D":
            pts = pts[pts.sum(axis=1) % 2 == 0]
        elif kind == "A":
            pts = np.c_[pts, -pts.sum(axis=1)]
        scale = 1
    diff = pts * (q // scale) - cq if kind == "E8" else pts * q - cq
    d2 = np.sum(diff * diff, axis=1)  # exact integers
    order = np.argsort(d2, kind="stable")[:64]
    out = pts[order]
    out.setflags(write=False)
    return out


def _lattice_cut(kind: str, n: int, j: int, P: int) -> np.ndarray | None:
    if kind not in LATTICES or n < LATTICES[kind] or (kind == "E8" and n != 8):
        return None
    if j >= len(lattice_centres(kind, n)):
        return None
    pool = _lattice_pool(kind, n, j)
    if pool is None or pool.shape[0] < P:
        return None
    X = pool[:P].astype(float)
    if kind == "A":
        X = X @ _hyperplane_basis(n + 1).T
    return X


# ---------------------------------------------------------------------------
# closed-form families for any (P, n): the upper end beyond the table
# ---------------------------------------------------------------------------


def family_ratio(P: int, n: int) -> tuple[float, str]:
    """Least closed-form ratio of the families ``code``, ``cross-polytope``, ``grid``, ``hexagon``.

    Each is non-decreasing in ``P`` and non-increasing in ``n``, and the
    value is the exact real ratio rounded up by ``DSTAR_RTOL`` (a square root
    and a product, a few ulps).  ``grid:m:k`` is ``{0..k-1}^m`` (``k^m``
    points, ratio ``(k - 1) sqrt m``) for ``m <= min(n, 64)``; ``hexagon:k``
    the hexagonal patch of side ``k`` (``3 k (k + 1) + 1`` points, ratio
    ``2 k``) for ``n >= 2``.  Arguments are not checked (``P >= 2``).

    Examples
    --------
    >>> family_ratio(64, 2)[1], family_ratio(65, 2)[1], family_ratio(50, 16)[1]
    ('grid:2:8', 'hexagon:5', 'code:2')
    """
    up = 1.0 + DSTAR_RTOL
    cands: list[tuple[float, str]] = []
    if P <= n + 1:
        cands.append((up, "simplex"))
    if P <= 2 * n:
        cands.append((math.sqrt(2.0) * up, "cross-polytope"))
    if (w := _code_weight(P, n)) is not None:
        cands.append((math.sqrt(w) * up, f"code:{w}"))
    for m in range(1, min(n, 64) + 1):
        k = max(2, math.ceil(round(P ** (1.0 / m), 9)))
        while k**m < P:
            k += 1
        while k > 2 and (k - 1) ** m >= P:
            k -= 1
        cands.append(((k - 1) * math.sqrt(m) * up, f"grid:{m}:{k}"))
    if n >= 2:
        k = _hexagon_side(P)
        cands.append((2.0 * k * up, f"hexagon:{k}"))
    return min(cands)


def _hexagon_side(P: int) -> int:
    """The least side ``k >= 1`` of a hexagonal patch with ``3 k (k + 1) + 1 >= P`` points.

    In integers, from ``isqrt((P - 1) // 3)`` (within one of the answer), so
    ``O(1)`` steps for any ``P`` (a count from 1 up would take ``sqrt(P / 3)``).

    Examples
    --------
    >>> [_hexagon_side(P) for P in (2, 7, 8, 19, 20)], _hexagon_side(10**18)
    ([1, 1, 2, 2, 3], 577350269)
    """
    k = max(1, math.isqrt(max(P - 1, 0) // 3))
    while 3 * k * (k + 1) + 1 < P:
        k += 1
    while k > 1 and 3 * (k - 1) * k + 1 >= P:
        k -= 1
    return k


def _grid(m: int, k: int) -> np.ndarray | None:
    if k**m > 10**6:
        return None
    return np.array(list(itertools.product(range(k), repeat=m)), dtype=float)


def _hexagon(k: int) -> np.ndarray | None:
    if 3 * k * (k + 1) + 1 > 10**6:
        return None
    pts = [(i + 0.5 * j, j * math.sqrt(3.0) / 2.0)
           for j in range(-k, k + 1) for i in range(-k, k + 1) if abs(i + j) <= k]
    return np.array(pts)
