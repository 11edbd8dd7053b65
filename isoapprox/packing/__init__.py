"""Least diameter ``D*(P, n, alpha)`` of ``P`` points of ``R^n`` at distances ``>= alpha``.

The one home of ``D*``: :func:`d_star` is a pure function of ``(P, n,
margin)`` with a proven bracket and its sources, read from a shipped table
for ``P <= 64``, ``n <= 16`` (optimised layouts and constructions, each
ratio re-certified from its coordinates) and computed from closed formulas
beyond it.  Lower bounds: :mod:`isoapprox.packing.bounds`; constructions:
:mod:`isoapprox.packing.constructions`; the table and its sources:
docs/dstar.md.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from .._blas import single_threaded_blas
from .._scaling import pow2_scale
from .._typing import ArrayLike, FloatArray, RNGLike
from .._validation import (
    as_labels,
    as_rng,
    check_int,
    check_margin,
    check_option,
    check_positive,
    class_counts,
)
from ..exceptions import InvalidInputError
from ..tolerances import DSTAR_RTOL, PACKING_RTOL
from .bounds import (
    PLANAR_EXACT,
    code_radius_lower,
    shell_radius_lower,
    unit_lower_candidates,
)
from .bounds import exact_unit as _exact_unit
from .constructions import construct, family_ratio, min_max_distance

__all__ = [
    "BOUND_N_MAX",
    "BOUND_P_MAX",
    "DSTAR_N_MAX",
    "DSTAR_P_MAX",
    "DStar",
    "LOWER_BOUND_CURVES",
    "PackingResult",
    "class_representatives",
    "d_star",
    "d_star_bracket",
    "d_star_witness",
    "lower_bound_curve",
    "min_separated_diameter",
    "packing_distance_bound",
    "packing_lower_bound",
    "packing_radius_bound",
    "radius_lower_bound",
    "separated_class_count",
    "separated_distance_bound",
    "separated_radius_bound",
    "table_entries",
    "unit_lower_bound",
    "unit_radius_lower",
]

#: the named curves of :func:`lower_bound_curve`: ``"packing"`` (the proven
#: ``D*`` bracket) and ``"simplex"`` (its upper end, one curve)
LOWER_BOUND_CURVES = ("packing", "simplex")

#: the shipped table covers ``P <= DSTAR_P_MAX`` points in ``R^n``, ``n <= DSTAR_N_MAX``
DSTAR_P_MAX = 64
#: ... and ``n <= DSTAR_N_MAX``
DSTAR_N_MAX = 16
#: the largest number of points ``P`` of the bounds and brackets (:func:`d_star`,
#: :func:`packing_lower_bound`, :func:`lower_bound_curve`, :func:`unit_radius_lower`,
#: ...): the int64 range, so that every count is also a numpy integer.  Each
#: answers any ``P`` up to it at once: beyond the table a bracket is a few
#: closed formulas evaluated in float64 (the volume bound ``~ P^(1/n)`` lowered
#: by ``DSTAR_RTOL``, as every formula) and the integer side of a grid or a
#: hexagonal patch; no loop runs over ``P``.  A larger ``P`` (a Python integer
#: beyond it, such as ``10**400``, could not even be converted to float64) is
#: refused with :class:`~isoapprox.exceptions.InvalidInputError`
BOUND_P_MAX = 2**63 - 1
#: the largest dimension ``n`` of the bounds and brackets (as :data:`BOUND_P_MAX`)
BOUND_N_MAX = 2**63 - 1
#: the most points of a witness layout (:func:`d_star_witness`,
#: :func:`min_separated_diameter`): every layout is checked pair by pair in
#: float64 (``P (P - 1) / 2`` distances, about a second at this size), so larger
#: ``P`` is refused before anything is built; :func:`d_star` brackets any ``P``
WITNESS_P_MAX = 4096
#: the most coordinates ``P * n`` of a witness layout (128 MiB of float64)
WITNESS_SIZE_MAX = 2**24
_DATA = Path(__file__).resolve().parent / "data"
#: a stored layout of integer type (``int16``) holds its coordinates in units
#: of this power of two (:func:`_load_layout`); ``float32`` ones hold them as they are
LAYOUT_INT_STEP = 2.0**-14


def _load_layout(stored: np.ndarray) -> np.ndarray:
    """The float64 coordinates of a stored layout: ``float32`` values as they
    are, ``int16`` values times ``LAYOUT_INT_STEP`` (exact: a power of two).

    The table's large layouts are stored as ``int16`` to keep the shipped data
    small; every certified ratio is computed from these float64 numbers.
    """
    A = np.asarray(stored)
    if A.dtype == np.float32:
        return A.astype(np.float64)
    if A.dtype == np.int16:
        return A.astype(np.float64) * LAYOUT_INT_STEP
    raise ValueError(f"a stored D* layout must be float32 or int16 coordinates, "
                     f"got dtype {A.dtype}")


_FLOAT_MAX = float(np.finfo(np.float64).max)


def _check_counts(P: object, n: object) -> tuple[int, int]:
    """``P`` and ``n`` of a bound as ints in ``[1, BOUND_P_MAX]`` and ``[1, BOUND_N_MAX]``
    (``TypeError`` for a non-integer or a bool, else ``InvalidInputError`` naming
    the argument, the limit and the value)."""
    return (check_int(P, "P", minimum=1, maximum=BOUND_P_MAX),
            check_int(n, "n", minimum=1, maximum=BOUND_N_MAX))


#: exact planar values for unit margin, P = 2..8 (theorems; see docs/dstar.md)
_PLANAR = PLANAR_EXACT


@dataclass(frozen=True)
class DStar:
    """``D*(P, n, margin)`` with its proven bracket: ``lower <= D* <= upper``.

    Attributes
    ----------
    P, n : int
    margin : float
    lower, upper : float
        Proven bounds (``margin`` times the unit values).  ``upper`` is the
        diameter of an explicit layout (:func:`d_star_witness`).  When
        ``margin`` times the unit upper value exceeds the float64 range,
        ``upper`` is ``inf``, ``lower`` at most the largest float64 and
        ``exact`` False.
    exact : bool
        ``lower == upper`` is the closed form (``P <= n + 1``, ``n = 1``, the
        planar theorems ``P <= 8``, ``P = 1`` or ``margin = 0``), in float64.
    lower_source, upper_source : str
        The theorem, formula or construction behind each end, and whether it
        came through monotonicity in ``P`` or ``n``.
    in_table : bool
        ``P <= 64`` and ``n <= 16`` (the shipped table, docs/dstar.md).
    """

    P: int
    n: int
    margin: float
    lower: float
    upper: float
    exact: bool
    lower_source: str
    upper_source: str
    in_table: bool

    @property
    def value(self) -> float:
        """The best known value: ``upper`` (the least diameter of a known layout)."""
        return self.upper


@dataclass(frozen=True)
class _Unit:
    """Unit-margin entry: bounds, sources and the witness recipe ``(P', n', construction)``."""

    lower: float
    upper: float
    exact: bool
    lower_source: str
    upper_source: str
    witness: tuple[int, int, str]


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
        Known in closed form (``P <= n + 1``, ``n = 1``, planar ``P <= 8``,
        ``P = 1`` or ``margin = 0``).
    certified : bool
        ``upper - lower <= rtol * upper``.
    lower_source : str
    method : {"closed-form", "table", "construction", "slsqp-multistart"}
    n_starts : int
        Optimiser starts tried (0 unless ``method`` is ``"slsqp-multistart"``).
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
# the unit table (pure, cached)
# ---------------------------------------------------------------------------

_CONSTRUCTION_WORDS = {
    "simplex": "regular simplex",
    "line": "equally spaced points",
    "cross-polytope": "cross-polytope",
    "code": "constant-weight binary code, weight {}",
    "cube": "cube {{0, 1}}^{}",
    "polygon": "regular polygon + {} centre point(s)",
    "lattice": "ball cut of the lattice {}",
    "grid": "grid {}",
    "hexagon": "hexagonal patch of side {}",
    "layout": "optimised layout (dstar_layouts.npz)",
}


def _words(name: str) -> str:
    kind, _, arg = name.partition(":")
    text = _CONSTRUCTION_WORDS[kind]
    if kind == "lattice":
        lat, _, j = arg.partition(":")
        return text.format({"Z": "Z^n", "D": "D_n", "A": "A_n", "E8": "E8"}[lat]) + \
            f" (centre {j})"
    if kind == "grid":
        m, _, k = arg.partition(":")
        return text.format(f"{{0..{int(k) - 1}}}^{m}")
    return text.format(arg) if "{}" in text else text


def _formula_lower(P: int, n: int) -> tuple[float, str]:
    """Largest formula lower bound (rounded down by ``DSTAR_RTOL``) and its source."""
    v, src = max(unit_lower_candidates(P, n), key=lambda t: t[0])
    return v * (1.0 - DSTAR_RTOL), src


_LAYOUT_KEY = re.compile(r"P([0-9]+)_n([0-9]+)")


def _layout_key(P: int, n: int) -> str:
    """The name of the ``(P, n)`` layout in ``dstar_layouts.npz``."""
    return f"P{P}_n{n}"


def _parse_layout_key(key: str) -> tuple[int, int]:
    """``(P, n)`` of a layout's name (:func:`_layout_key`); ``ValueError`` naming
    the key if it is not ``P<P>_n<n>``."""
    m = _LAYOUT_KEY.fullmatch(key)
    if m is None:
        raise ValueError(f"layout entry {key!r} is not named 'P<P>_n<n>'")
    return int(m[1]), int(m[2])


@functools.lru_cache(maxsize=1)
def _stored() -> tuple[dict, dict]:
    """The shipped own ratios ``{(P, n): (ratio, construction)}`` and layouts."""
    doc = json.loads((_DATA / "dstar_table.json").read_text(encoding="utf-8"))
    own = {(e["P"], e["n"]): (float(e["ratio"]), e["construction"]) for e in doc["entries"]}
    with np.load(_DATA / "dstar_layouts.npz") as z:
        layouts = {}
        for key in z.files:
            X = _load_layout(z[key])
            X.setflags(write=False)
            layouts[_parse_layout_key(key)] = X
    return own, layouts


@functools.lru_cache(maxsize=1)
def _unit_table() -> dict[tuple[int, int], _Unit]:
    """``D*(P, n, 1)`` for ``P <= 64``, ``n <= 16``, with monotonicity propagated.

    Lower: ``lower(P, n) = max(formulas(P, n), lower(P - 1, n), lower(P, n + 1))``;
    upper: ``upper(P, n) = min(own(P, n), families(P, n), upper(P + 1, n),
    upper(P, n - 1))``, where ``own`` is the shipped certified ratio of the
    entry's best layout (dropping points and padding coordinates keep a
    layout feasible without raising its ratio).
    """
    own, _ = _stored()
    Pm, Nm = DSTAR_P_MAX, DSTAR_N_MAX
    low: dict[tuple[int, int], tuple[float, str]] = {}
    for n in range(Nm, 0, -1):
        for P in range(1, Pm + 1):
            ex = _exact_unit(P, n)
            if ex is not None:
                low[P, n] = ex
                continue
            cands = [_formula_lower(P, n)]
            if P > 1:
                v, s = low[P - 1, n]
                cands.append((v, _via(s, f"monotonicity in P (from P = {P - 1})")))
            if n < Nm:
                v, s = low[P, n + 1]
                cands.append((v, _via(s, f"monotonicity in n (from n = {n + 1})")))
            low[P, n] = max(cands, key=lambda t: t[0])
    up: dict[tuple[int, int], tuple[float, tuple[int, int, str]]] = {}
    for n in range(1, Nm + 1):
        for P in range(Pm, 0, -1):
            if P == 1:
                up[P, n] = (0.0, (1, n, "simplex"))
                continue
            r, name = own[P, n]
            fr, fname = family_ratio(P, n)
            cands = [(r, (P, n, name)), (fr, (P, n, fname))]
            if P < Pm:
                cands.append(up[P + 1, n])
            if n > 1:
                cands.append(up[P, n - 1])
            up[P, n] = min(cands, key=lambda t: (t[0], -t[1][0], t[1][1]))
    out = {}
    for (P, n), (lo, lsrc) in low.items():
        ex = _exact_unit(P, n)
        r, wit = up[P, n]
        if ex is not None:
            out[P, n] = _Unit(ex[0], ex[0], True, ex[1], ex[1], wit)
        else:
            out[P, n] = _Unit(lo, r, False, lsrc, _upper_words(P, n, wit), wit)
    return out


def _via(source: str, step: str) -> str:
    return source if "monotonicity" in source else f"{source} + {step}"


def _upper_words(P: int, n: int, wit: tuple[int, int, str]) -> str:
    p, q, name = wit
    text = f"{_words(name)} (P = {p}, n = {q})" if (p, q) != (P, n) else _words(name)
    if (p, q) != (P, n):
        text += " + monotonicity"
    return text


@functools.lru_cache(maxsize=4096)
def _unit_beyond(P: int, n: int) -> _Unit:
    """``D*(P, n, 1)`` outside the table: formulas and closed-form families (no optimiser)."""
    ex = _exact_unit(P, n)
    if ex is not None:
        wit = (P, n, "line" if n == 1 and P > 1 else "simplex")
        return _Unit(ex[0], ex[0], True, ex[1], ex[1], wit)
    lo, lsrc = _formula_lower(P, n)
    fr, fname = family_ratio(P, n)
    up, wit, usrc = fr, (P, n, fname), _words(fname)
    table = _unit_table()
    if n <= DSTAR_N_MAX:  # so P > DSTAR_P_MAX: monotone in P from the table's last row
        t = table[DSTAR_P_MAX, n]
        if t.lower > lo:
            lo, lsrc = t.lower, _via(t.lower_source, f"monotonicity in P (from P = "
                                                     f"{DSTAR_P_MAX})")
    elif P <= DSTAR_P_MAX:  # n > DSTAR_N_MAX: monotone in n from the table's last column
        t = table[P, DSTAR_N_MAX]
        if t.upper < up:
            up, wit = t.upper, t.witness
            usrc = _upper_words(P, n, t.witness)
    return _Unit(lo, up, False, lsrc, usrc, wit)


def _unit(P: int, n: int) -> _Unit:
    if P <= DSTAR_P_MAX and n <= DSTAR_N_MAX:
        return _unit_table()[P, n]
    return _unit_beyond(P, n)


def table_entries() -> dict[tuple[int, int], DStar]:
    """The shipped table: ``{(P, n): d_star(P, n)}`` for ``P <= 64``, ``n <= 16``.

    Examples
    --------
    >>> t = table_entries()
    >>> len(t), t[4, 2].exact
    (1024, True)
    """
    return {(P, n): d_star(P, n) for (P, n) in _unit_table()}


# ---------------------------------------------------------------------------
# public D*
# ---------------------------------------------------------------------------


def d_star(P: int, n: int, margin: float = 1.0) -> DStar:
    """``D*(P, n, margin)``: least diameter of ``P`` points of ``R^n`` pairwise ``>= margin``.

    A pure function of its arguments (no randomness, no optimiser at call
    time; cached): ``margin`` times the unit values, non-decreasing in ``P``
    and non-increasing in ``n`` at both ends, ``= margin`` for
    ``2 <= P <= n + 1``.  For ``P <= 64`` and ``n <= 16`` the upper end is
    the shipped table (constructions and optimised layouts, each ratio
    certified from its float64 coordinates, docs/dstar.md); beyond it the
    closed-form families of
    :func:`isoapprox.packing.constructions.family_ratio`.  The lower end is
    the largest proven bound of :mod:`isoapprox.packing.bounds` (with the
    table's, through monotonicity), lowered by
    :data:`~isoapprox.tolerances.DSTAR_RTOL` unless exact.

    Any ``P`` and ``n`` up to :data:`BOUND_P_MAX` and :data:`BOUND_N_MAX`
    (``2**63 - 1``) answer at once: beyond the table the bracket is a few
    closed formulas (for large ``P`` the volume and Blichfeldt bounds, ``~
    sqrt((n + 1) / (2 n)) P^(1/n)``, and Oler's in the plane) against the
    best grid, hexagonal patch or code, each computed in ``O(1)`` or ``O(n)``
    operations (``d_star(10**18, 2)`` brackets ``D*`` in ``[1.05e9,
    1.155e9]``).

    Parameters
    ----------
    P, n : int
        Number of points and dimension, each in ``[1, 2**63 - 1]``.
    margin : float, default 1.0
        ``alpha >= 0``.

    Returns
    -------
    DStar

    Raises
    ------
    InvalidInputError
        If ``P`` or ``n`` is below 1 or above ``2**63 - 1``, or ``margin``
        is negative or not finite.
    TypeError
        If ``P`` or ``n`` is not an integer (floats and bools are refused).

    Examples
    --------
    >>> d_star(3, 2, 0.5).upper, d_star(3, 2, 0.5).exact
    (0.5, True)
    >>> r = d_star(16, 2, 0.2)
    >>> round(r.lower, 4), r.lower_source
    (0.6627, 'linear programming (certificate in dstar_lp.json)')
    """
    P, n = _check_counts(P, n)
    margin = check_margin(margin)
    u = _unit(P, n)
    in_table = P <= DSTAR_P_MAX and n <= DSTAR_N_MAX
    if margin == 0.0 and P > 1:
        return DStar(P, n, 0.0, 0.0, 0.0, True, "exact: margin 0", "exact: margin 0", in_table)
    lower, upper, exact = margin * u.lower, margin * u.upper, u.exact
    if not math.isfinite(upper):
        # beyond the float64 range: inf is a true upper bound, and the largest
        # float64 a true lower bound when the product overflows (it exceeds it)
        exact = False
        lower = min(lower, _FLOAT_MAX)
    return DStar(P, n, margin, lower, upper, exact, u.lower_source, u.upper_source, in_table)


def d_star_witness(P: int, n: int, margin: float = 1.0) -> FloatArray:
    """A layout of ``P`` points of ``R^n`` pairwise ``>= margin`` of diameter ``<= d_star().upper``.

    Rebuilt from the entry's recipe (a construction, or a stored layout),
    scaled so that the least distance, checked in float64 by direct
    differences, is ``>= margin``.

    Parameters
    ----------
    P, n : int
        ``1 <= P <=`` :data:`WITNESS_P_MAX` (4096) points of ``R^n``, ``n >= 1``,
        ``P * n <=`` :data:`WITNESS_SIZE_MAX` (``2**24``); larger layouts are
        refused before anything is built (:func:`d_star` brackets any ``P``).
    margin : float, default 1.0
        The least distance ``alpha`` between two points of the layout.

    Returns
    -------
    ndarray of shape (P, n)
        The layout: pairwise distances ``>= margin``, diameter ``<=
        d_star(P, n, margin).upper``.

    Raises
    ------
    InvalidInputError
        As :func:`min_separated_diameter` (bad ``P``, ``n`` or ``margin``, a
        layout too large to build, or one whose diameter would exceed the
        float64 range).

    Examples
    --------
    >>> X = d_star_witness(5, 2)
    >>> X.shape, round(float(np.max(np.abs(X[0] - X[2]))), 3) > 0
    ((5, 2), True)
    """
    P = check_int(P, "P", minimum=1)
    n = check_int(n, "n", minimum=1)
    margin = check_margin(margin)
    _check_witness(P, n, margin)
    if P == 1 or margin == 0.0:
        return np.zeros((P, n))
    X = _unit_witness(P, n)
    Y, _ = _scaled_feasible(X, margin)
    return Y


def _check_witness(P: int, n: int, margin: float) -> None:
    """Refuse, before any work, a witness layout of more than :data:`WITNESS_P_MAX`
    points or :data:`WITNESS_SIZE_MAX` coordinates, or one whose diameter
    ``margin * D*_upper(P, n, 1)`` would not be a float64 number (with a
    factor 2 to spare; its coordinates are centred, so no larger).  Integer
    comparisons only until then, so any Python ``P`` and ``n`` are refused at once."""
    if P > WITNESS_P_MAX:
        raise InvalidInputError(
            f"`P` must be <= {WITNESS_P_MAX} for a layout of P points in R^n (each layout's "
            f"P (P - 1) / 2 distances are checked in float64); got P = {P} (n = {n}); "
            f"d_star(P, n, margin) gives the proven bracket of D*(P, n, margin) for any P "
            f"without a layout"
        )
    if P * n > WITNESS_SIZE_MAX:
        raise InvalidInputError(
            f"`P` * `n` must be <= {WITNESS_SIZE_MAX} for a layout of P points in R^n (an "
            f"array of P * n float64 numbers); got P = {P}, n = {n}; d_star(P, n, margin) "
            f"gives the proven bracket of D*(P, n, margin) without a layout"
        )
    if P > 1 and margin > 0.0:
        unit_upper = _unit(P, n).upper
        if not margin * unit_upper <= _FLOAT_MAX / 2:
            raise InvalidInputError(
                f"`margin` must be <= {_FLOAT_MAX / 2 / unit_upper:.6g} for a layout of P = {P} "
                f"points in R^{n} (its diameter, margin * {unit_upper:.6g}, must be a float64 "
                f"number); got {margin!r}; d_star(P, n, margin) gives the bracket without a "
                f"layout"
            )


@functools.lru_cache(maxsize=256)
def _unit_witness(P: int, n: int) -> np.ndarray:
    """The unit-margin witness (cached, read-only: a pure function of ``P, n``)."""
    p, q, name = _unit(P, n).witness
    if name == "layout":
        X = _stored()[1][p, q]
    else:
        X = construct(name, p, q)
    if X is None:
        raise InvalidInputError(f"no layout of {P} points in R^{n} small enough to build here "
                                f"({name}); use d_star() for the bracket")
    out = np.zeros((P, n))
    out[:, : X.shape[1]] = X[:P]
    out = _feasible(out)
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------------------
# lower bounds and brackets of the applications
# ---------------------------------------------------------------------------


def unit_lower_bound(P: int, n: int) -> tuple[float, str]:
    """Proven lower bound of ``D*(P, n, 1)`` and its source (:func:`d_star`).

    Parameters
    ----------
    P, n : int
        Each in ``[1, 2**63 - 1]`` (:data:`BOUND_P_MAX`, :data:`BOUND_N_MAX`);
        any of them answers at once (:func:`d_star`).

    Raises
    ------
    InvalidInputError
        If ``P`` or ``n`` is below 1 or above ``2**63 - 1``.
    TypeError
        If ``P`` or ``n`` is not an integer.

    Examples
    --------
    >>> unit_lower_bound(4, 2)
    (1.4142135623730951, 'theorem: Bateman & Erdos 1951 (exact planar value)')
    """
    P, n = _check_counts(P, n)
    u = _unit(P, n)
    return u.lower, u.lower_source


def packing_lower_bound(P: int, n: int, *, margin: float = 1.0) -> float:
    """Proven lower bound of ``D*(P, n, margin)``: ``d_star(P, n, margin).lower``.

    Parameters
    ----------
    P, n : int
        Each in ``[1, 2**63 - 1]``; every ``P`` answers at once, for large
        ``P`` from the volume-type bounds ``~ margin sqrt((n + 1) / (2 n))
        P^(1/n)`` (:func:`d_star`).
    margin : float, default 1.0
        The least distance ``alpha`` between two of the ``P`` points.

    Returns
    -------
    float
        A proven lower bound of the least diameter of ``P`` points of
        ``R^n`` pairwise ``>= margin`` apart.

    Raises
    ------
    InvalidInputError, TypeError
        As :func:`d_star`.

    Examples
    --------
    >>> packing_lower_bound(3, 2)
    1.0
    >>> round(packing_lower_bound(5, 2), 9)  # Bateman-Erdos: the golden ratio
    1.618033989
    """
    return d_star(P, n, margin).lower


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
            (0.5 * _unit(P, n).lower, "half of D*"),
            (code_radius_lower(P, n) * r, "directions from the centre")]


@functools.lru_cache(maxsize=65536)
def _radius_table(n: int, P: int) -> tuple[float, str]:
    """:func:`unit_radius_lower` for ``n >= 2``, ``P <= RADIUS_P_MAX``: a pure
    function, each count from the values of the smaller ones (cached)."""
    if P <= 1:
        return 0.0, "a single point"
    if P <= n + 1:
        return math.sqrt((P - 1) / (2.0 * P)), "exact: regular simplex"
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
    InvalidInputError
        If ``P`` or ``n`` is below 1 or above ``2**63 - 1``.
    TypeError
        If ``P`` or ``n`` is not an integer.

    Examples
    --------
    >>> round(unit_radius_lower(4, 3)[0], 6)   # the regular tetrahedron
    0.612372
    >>> v, src = unit_radius_lower(16, 3)
    >>> round(v, 4), src
    (1.0534, 'shells about the centre')
    """
    P, n = _check_counts(P, n)
    return _unit_radius(P, n)


def _unit_radius(P: int, n: int) -> tuple[float, str]:
    """:func:`unit_radius_lower` of checked ``P`` and ``n``."""
    if n == 1:
        return (0.5 * (P - 1), "exact: equally spaced points on a line") if P > 1 else \
            (0.0, "a single point")
    if P <= RADIUS_P_MAX:
        return _radius_table(n, P)
    if P <= n + 1:
        return math.sqrt((P - 1) / (2.0 * P)), "exact: regular simplex"
    cands = _radius_direct(P, n)
    # the shells' value of RADIUS_P_MAX points is at most r*(RADIUS_P_MAX, n) <=
    # D*(RADIUS_P_MAX, n) (a ball about one point holds them all): once a direct
    # candidate reaches the least known diameter, as for every large P, it cannot
    # win (nor tie first: it comes last) and is not computed (the cold cost of
    # the shells, a second, would be the only work of a huge P)
    if max(v for v, _ in cands) < _unit(RADIUS_P_MAX, n).upper:
        v, src = _radius_table(n, RADIUS_P_MAX)
        cands.append((v, _via(src, f"monotonicity in P (from P = {RADIUS_P_MAX})")))
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
    InvalidInputError
        If ``P`` or ``n`` is below 1 or above ``2**63 - 1``, or ``margin``
        is negative or not finite.
    TypeError
        If ``P`` or ``n`` is not an integer, or ``margin`` not a real number.

    Examples
    --------
    >>> radius_lower_bound(2, 2, margin=0.2)
    0.1
    """
    P, n = _check_counts(P, n)
    margin = check_margin(margin)
    if not margin > 0.0:
        return 0.0
    return margin * _unit_radius(P, n)[0]


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
    P, n = _check_counts(P, n)
    ds = margin * _unit(P, n).lower
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
    P, n = _check_counts(P, n)
    rs = margin * _unit_radius(P, n)[0]
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
    dim = check_int(dim, "dim", minimum=1, maximum=BOUND_N_MAX)
    return separated_distance_bound(separated_count(codes), dim, margin, diam)


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
    dim = check_int(dim, "dim", minimum=1, maximum=BOUND_N_MAX)
    return separated_radius_bound(separated_count(codes), dim, margin, radius)


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
    dim = check_int(dim, "dim", minimum=1, maximum=BOUND_N_MAX)
    r = d_star(separated_count(codes), dim, margin)
    src = r.lower_source if r.exact else f"lower: {r.lower_source}; upper: {r.upper_source}"
    return r.upper, r.lower, r.upper, r.exact, src


# ---------------------------------------------------------------------------
# configurations
# ---------------------------------------------------------------------------


def _min_max_dist(X: np.ndarray) -> tuple[float, float]:
    """(least, largest) pairwise distance by direct differences."""
    return min_max_distance(X)


def _feasible(X: np.ndarray) -> np.ndarray:
    """Scale ``X`` (about its centroid) so that every distance is ``>= 1``."""
    X = X - X.mean(axis=0)
    dmin, _ = _min_max_dist(X)
    if not dmin > 0:
        return X
    X = X / dmin
    eps = np.finfo(float).eps
    for k in range(20):
        dmin, _ = _min_max_dist(X)
        if dmin >= 1.0 + 4 * eps:
            break
        # the bump doubles each time: coordinates far from the centroid (large
        # patches) carry rounding of many ulps of the least distance
        X = X * (1.0 + 8 * eps * 2.0**k)
    return X


def _slsqp(X0: np.ndarray, maxiter: int = 400, ftol: float = 1e-15, *,
           lo_pairs: tuple[np.ndarray, np.ndarray] | None = None,
           hi_pairs: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Local optimum of ``min s s.t. |x_i - x_j|^2 <= s, |x_i - x_j|^2 >= 1``.

    The one SLSQP home of the least-diameter problem (the offline table
    builder calls it too).  By default every pair has both rows; ``lo_pairs``
    / ``hi_pairs`` (index arrays ``(i, j)``) keep only those pairs' rows
    ``>= 1`` / ``<= s`` (an active set: the caller checks the other pairs).
    The start is made unit-separated first (:func:`_feasible`); a result that
    is not finite gives that start back.
    """

    P, n = X0.shape
    iu, ju = np.triu_indices(P, 1)
    il, jl = (iu, ju) if lo_pairs is None else lo_pairs
    ih, jh = (iu, ju) if hi_pairs is None else hi_pairs
    mh, ml = len(ih), len(il)
    rows_h, rows_l = np.arange(mh), mh + np.arange(ml)
    off = np.arange(n)

    def sq(z, i, j):
        X = z[:-1].reshape(P, n)
        d = X[i] - X[j]
        return d, np.einsum("ij,ij->i", d, d)

    def cons(z):
        _, dh = sq(z, ih, jh)
        _, dl = sq(z, il, jl)
        return np.concatenate([z[-1] - dh, dl - 1.0])

    def jac(z):
        d_h, _ = sq(z, ih, jh)
        d_l, _ = sq(z, il, jl)
        J = np.zeros((mh + ml, P * n + 1))
        J[rows_h[:, None], ih[:, None] * n + off] = -2.0 * d_h
        J[rows_h[:, None], jh[:, None] * n + off] = 2.0 * d_h
        J[:mh, -1] = 1.0
        J[rows_l[:, None], il[:, None] * n + off] = 2.0 * d_l
        J[rows_l[:, None], jl[:, None] * n + off] = -2.0 * d_l
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


def _ball_start(rng: np.random.Generator, P: int, n: int) -> np.ndarray:
    """``P`` points uniform in the ball of radius ``0.5 P^(1/n) + 0.5`` (a start for ``_slsqp``).

    The radius is about that of ``P`` unit-separated points packed densely.
    """
    Z = rng.normal(size=(P, n))
    radius = 0.5 * P ** (1.0 / n) + 0.5
    Z *= (radius * rng.uniform(size=(P, 1)) ** (1.0 / n)) / np.linalg.norm(Z, axis=1)[:, None]
    return Z


@functools.lru_cache(maxsize=256)
def _unit_packing(P: int, n: int, n_random: int, seed: int) -> tuple[np.ndarray, int]:
    """Best unit-margin configuration from the witness and random starts (cached)."""
    starts = [_unit_witness(P, n)]
    rng = np.random.default_rng(seed)
    starts += [_ball_start(rng, P, n) for _ in range(n_random)]
    best, best_d = starts[0], _min_max_dist(starts[0])[1]
    with single_threaded_blas():
        for X0 in starts:
            X = _feasible(_slsqp(X0, maxiter=200, ftol=1e-12))
            d = _min_max_dist(X)[1]
            if d < best_d:
                best, best_d = X, d
    best = np.array(best)
    best.setflags(write=False)
    return best, len(starts)


def _scaled_feasible(X: np.ndarray, margin: float) -> tuple[np.ndarray, float]:
    """``X * margin`` scaled up by ulps until every distance is ``>= margin``.

    Distances are checked by direct differences after an exact power-of-two
    rescaling (so extreme margins neither overflow nor underflow).
    """
    Y = X * margin
    for k in range(60):
        s = pow2_scale(Y, np.array([margin]))
        dmin, dmax = _min_max_dist(Y * s)
        if dmin / s >= margin:
            return Y, dmax / s
        # doubling bumps (see _feasible); 4 eps at first
        Y = Y * (1.0 + 4 * np.finfo(float).eps * 2.0 ** min(k, 40))
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
    """``D*(P, n, margin)`` with a witness: :func:`d_star`'s bracket and a layout.

    The bracket is :func:`d_star`'s (pure in ``P, n, margin``) and the points
    are :func:`d_star_witness`'s.  Only beyond the table (``n > 16``), where
    the upper end is a closed-form construction, an SLSQP multistart from
    that layout and ``n_starts`` random starts may find a smaller diameter
    (``P <= max_opt_points``); the upper end is never above :func:`d_star`'s.

    Parameters
    ----------
    P, n : int
        Number of points (classes) and dimension, ``>= 1``.
    margin : float, default 1.0
    rng : None, int or Generator, optional
        Seed of the random starts beyond the table (``None``: 0; a Generator gives one integer).
    n_starts : int, optional
        Random starts beyond the table (default 24 for ``P <= 12``, else 12).
    rtol : float, default 1e-9
        ``certified`` means ``upper - lower <= rtol * upper``.
    max_opt_points : int, default 30
        Beyond the table, the optimiser runs only up to this ``P``.

    Returns
    -------
    PackingResult

    Raises
    ------
    InvalidInputError
        If ``P < 1``, ``n < 1``, ``margin < 0`` or an option is out of range;
        if the layout is too large to build and check (``P >``
        :data:`WITNESS_P_MAX` or ``P * n >`` :data:`WITNESS_SIZE_MAX`: use
        :func:`d_star` for the bracket alone) or its diameter would exceed
        the float64 range.
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
    _check_witness(P, n, margin)
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
    ds = d_star(P, n, margin)
    if P == 1 or margin == 0.0:
        return PackingResult(0.0, 0.0, 0.0, np.zeros((P, n)), True, True, ds.lower_source,
                             "closed-form", 0)
    if ds.exact:
        X, _ = _scaled_feasible(_unit_witness(P, n), margin)
        return PackingResult(ds.upper, ds.lower, ds.upper, X, True, True, ds.lower_source,
                             "closed-form", 0)
    Xu, method, tried = _unit_witness(P, n), ("table" if ds.in_table else "construction"), 0
    if not ds.in_table and P <= max_opt_points and ds.upper - ds.lower > rtol * ds.upper:
        Xo, tried = _unit_packing(P, n, n_random, seed)
        if _min_max_dist(Xo)[1] < _min_max_dist(Xu)[1]:
            Xu, method = Xo, "slsqp-multistart"
    X, d = _scaled_feasible(np.array(Xu), margin)
    upper = min(d, ds.upper)
    return PackingResult(upper, ds.lower, upper, X, False,
                         bool(upper - ds.lower <= rtol * upper), ds.lower_source, method, tried)


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
    else:
        name = check_option(curve, "curve", LOWER_BOUND_CURVES)
        if name == "packing":

            def func(p, n_, m_):
                return packing_lower_bound(p, n_, margin=m_)
        else:

            def func(p, n_, m_):
                if p <= n_ + 1:
                    return 0.0 if p == 1 else m_
                return d_star(p, n_, m_).upper

    arr = np.asarray(P)
    # Python integers beyond the int64 range come as an object array
    big = arr.dtype.kind == "O" and arr.size > 0 and all(
        isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in arr.flat)
    if arr.dtype.kind not in "iuf" and not big:
        raise TypeError(f"`P` must be an integer or an array of integers; got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise InvalidInputError(f"`P` must hold integers; got {P!r}")
    if arr.size:
        # Python numbers: exact comparisons with the int64 limit (a float 2**63 is above it)
        lo, hi = (min(arr.flat), max(arr.flat)) if big else (arr.min().item(), arr.max().item())
        if lo < 1:
            raise InvalidInputError(f"`P` must be >= 1; got minimum {lo!r}")
        if hi > BOUND_P_MAX:
            raise InvalidInputError(f"`P` must be <= {BOUND_P_MAX}; got maximum "
                                    f"{hi!r}")
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
