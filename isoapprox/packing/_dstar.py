"""``D*(P, n, margin)``: the shipped table, the formulas beyond it, and its witness layouts.

The table (``data/dstar_table.json``, ``data/dstar_layouts.npz``) gives the
upper ends for ``P <= 64``, ``n <= 16``; the lower ends are the largest of
the bounds of :mod:`isoapprox.packing.bounds`, propagated by monotonicity.
Pure and cached; public names re-exported by :mod:`isoapprox.packing`.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._scaling import pow2_scale
from .._typing import FloatArray
from .._validation import check_int, check_margin
from ..bracket import Bracket, Bracketed
from ..exceptions import InvalidInputError
from ..tolerances import DSTAR_RTOL
from .bounds import exact_unit, unit_lower_candidates
from .constructions import construct, family_ratio, min_max_distance, pad

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
#: of this power of two (:func:`load_layout`); ``float32`` ones hold them as they are
LAYOUT_INT_STEP = 2.0**-14


def load_layout(stored: np.ndarray) -> np.ndarray:
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


def check_counts(P: object, n: object) -> tuple[int, int]:
    """``P`` and ``n`` of a bound as ints in ``[1, BOUND_P_MAX]`` and ``[1, BOUND_N_MAX]``
    (``TypeError`` for a non-integer or a bool, else ``InvalidInputError`` naming
    the argument, the limit and the value)."""
    return (check_int(P, "P", minimum=1, maximum=BOUND_P_MAX),
            check_int(n, "n", minimum=1, maximum=BOUND_N_MAX))


def fields_repr(obj: object, names: tuple[str, ...]) -> str:
    """``Name(a=..., b=...)`` of the attributes ``names``: the repr of a dataclass
    whose bracket's fields were its own (:class:`DStar`, :class:`PackingResult`)."""
    return f"{type(obj).__qualname__}(" + ", ".join(f"{k}={getattr(obj, k)!r}" for k in names) + ")"


@dataclass(frozen=True, repr=False)
class DStar(Bracketed):
    """``D*(P, n, margin)`` with its proven bracket: ``lower <= D* <= upper``.

    Attributes
    ----------
    P, n : int
    margin : float
    bracket : Bracket
        ``value`` (``upper``), ``lower``, ``upper``, ``certified`` (``exact``),
        ``lower_source`` and ``upper_source``, read by the attributes below.
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
    bracket: Bracket
    exact: bool
    in_table: bool
    #: the attributes of the repr and of a serialised copy, in order
    SERIAL_FIELDS = ("P", "n", "margin", "lower", "upper", "exact", "lower_source",
                     "upper_source", "in_table")

    @classmethod
    def of(cls, P: int, n: int, margin: float, lower: float, upper: float, exact: bool,
           lower_source: str, upper_source: str, in_table: bool) -> DStar:
        """The entry of these fields (its bracket ``[lower, upper]``, value ``upper``,
        certified when ``exact``)."""
        return cls(P, n, margin, Bracket(upper, lower, upper, exact, lower_source, upper_source),
                   exact, in_table)

    def __repr__(self) -> str:
        return fields_repr(self, self.SERIAL_FIELDS)


@dataclass(frozen=True)
class _Unit:
    """Unit-margin entry: bounds, sources and the witness recipe ``(P', n', construction)``."""

    lower: float
    upper: float
    exact: bool
    lower_source: str
    upper_source: str
    witness: tuple[int, int, str]


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


def layout_key(P: int, n: int) -> str:
    """The name of the ``(P, n)`` layout in ``dstar_layouts.npz``."""
    return f"P{P}_n{n}"


def parse_layout_key(key: str) -> tuple[int, int]:
    """``(P, n)`` of a layout's name (:func:`layout_key`); ``ValueError`` naming
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
            X = load_layout(z[key])
            X.setflags(write=False)
            layouts[parse_layout_key(key)] = X
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
            ex = exact_unit(P, n)
            if ex is not None:
                low[P, n] = ex
                continue
            cands = [_formula_lower(P, n)]
            if P > 1:
                v, s = low[P - 1, n]
                cands.append((v, via(s, f"monotonicity in P (from P = {P - 1})")))
            if n < Nm:
                v, s = low[P, n + 1]
                cands.append((v, via(s, f"monotonicity in n (from n = {n + 1})")))
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
        ex = exact_unit(P, n)
        r, wit = up[P, n]
        if ex is not None:
            out[P, n] = _Unit(ex[0], ex[0], True, ex[1], ex[1], wit)
        else:
            out[P, n] = _Unit(lo, r, False, lsrc, _upper_words(P, n, wit), wit)
    return out


def via(source: str, step: str) -> str:
    return source if "monotonicity" in source else f"{source} + {step}"


def _upper_words(P: int, n: int, wit: tuple[int, int, str]) -> str:
    p, q, name = wit
    if (p, q) == (P, n):
        return _words(name)
    return f"{_words(name)} (P = {p}, n = {q}) + monotonicity"


@functools.lru_cache(maxsize=4096)
def _unit_beyond(P: int, n: int) -> _Unit:
    """``D*(P, n, 1)`` outside the table: formulas and closed-form families (no optimiser)."""
    ex = exact_unit(P, n)
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
            lo, lsrc = t.lower, via(t.lower_source, f"monotonicity in P (from P = "
                                                     f"{DSTAR_P_MAX})")
    elif P <= DSTAR_P_MAX:  # n > DSTAR_N_MAX: monotone in n from the table's last column
        t = table[P, DSTAR_N_MAX]
        if t.upper < up:
            up, wit = t.upper, t.witness
            usrc = _upper_words(P, n, t.witness)
    return _Unit(lo, up, False, lsrc, usrc, wit)


def unit_bounds(P: int, n: int) -> _Unit:
    """The unit-margin entry of checked ``P`` and ``n``: the table's, or beyond it
    the formulas' (the core of :func:`d_star` and of the radius bounds)."""
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
    return {(P, n): compute_d_star(P, n, 1.0) for (P, n) in _unit_table()}


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
    P, n = check_counts(P, n)
    return compute_d_star(P, n, check_margin(margin))


def compute_d_star(P: int, n: int, margin: float) -> DStar:
    """:func:`d_star` of checked ``P``, ``n`` (ints) and ``margin`` (a float ``>= 0``)."""
    u = unit_bounds(P, n)
    in_table = P <= DSTAR_P_MAX and n <= DSTAR_N_MAX
    if margin == 0.0 and P > 1:
        return DStar.of(P, n, 0.0, 0.0, 0.0, True, "exact: margin 0", "exact: margin 0",
                        in_table)
    lower, upper, exact = margin * u.lower, margin * u.upper, u.exact
    if not math.isfinite(upper):
        # beyond the float64 range: inf is a true upper bound, and the largest
        # float64 a true lower bound when the product overflows (it exceeds it)
        exact = False
        lower = min(lower, _FLOAT_MAX)
    return DStar.of(P, n, margin, lower, upper, exact, u.lower_source, u.upper_source, in_table)


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
    return compute_d_star_witness(P, n, check_margin(margin))


def compute_d_star_witness(P: int, n: int, margin: float) -> FloatArray:
    """:func:`d_star_witness` of checked ``P``, ``n`` (ints ``>= 1``) and ``margin``
    (a float ``>= 0``); a layout too large to build is still refused (:func:`check_witness`)."""
    check_witness(P, n, margin)
    if P == 1 or margin == 0.0:
        return np.zeros((P, n))
    X = unit_witness(P, n)
    Y, _ = scaled_feasible(X, margin)
    return Y


def check_witness(P: int, n: int, margin: float) -> None:
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
        unit_upper = unit_bounds(P, n).upper
        if not margin * unit_upper <= _FLOAT_MAX / 2:
            raise InvalidInputError(
                f"`margin` must be <= {_FLOAT_MAX / 2 / unit_upper:.6g} for a layout of P = {P} "
                f"points in R^{n} (its diameter, margin * {unit_upper:.6g}, must be a float64 "
                f"number); got {margin!r}; d_star(P, n, margin) gives the bracket without a "
                f"layout"
            )


@functools.lru_cache(maxsize=256)
def unit_witness(P: int, n: int) -> np.ndarray:
    """The unit-margin witness (cached, read-only: a pure function of ``P, n``)."""
    p, q, name = unit_bounds(P, n).witness
    if name == "layout":
        X = _stored()[1][p, q]
    else:
        X = construct(name, p, q)
    if X is None:
        raise InvalidInputError(f"no layout of {P} points in R^{n} small enough to build here "
                                f"({name}); use d_star() for the bracket")
    out = feasible(pad(X, P, n))
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------------------
# lower bounds, and the layouts' scaling to a margin
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
    P, n = check_counts(P, n)
    u = unit_bounds(P, n)
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
    P, n = check_counts(P, n)
    return compute_d_star(P, n, check_margin(margin)).lower


def feasible(X: np.ndarray) -> np.ndarray:
    """Scale ``X`` (about its centroid) so that every distance is ``>= 1``."""
    X = X - X.mean(axis=0)
    dmin, _ = min_max_distance(X)
    if not dmin > 0:
        return X
    X = X / dmin
    eps = np.finfo(float).eps
    for k in range(20):
        dmin, _ = min_max_distance(X)
        if dmin >= 1.0 + 4 * eps:
            break
        # the bump doubles each time: coordinates far from the centroid (large
        # patches) carry rounding of many ulps of the least distance
        X = X * (1.0 + 8 * eps * 2.0**k)
    return X


def scaled_feasible(X: np.ndarray, margin: float) -> tuple[np.ndarray, float]:
    """``X * margin`` scaled up by ulps until every distance is ``>= margin``.

    Distances are checked by direct differences after an exact power-of-two
    rescaling (so extreme margins neither overflow nor underflow).
    """
    Y = X * margin
    for k in range(60):
        s = pow2_scale(Y, np.array([margin]))
        dmin, dmax = min_max_distance(Y * s)
        if dmin / s >= margin:
            return Y, dmax / s
        # doubling bumps (see feasible); 4 eps at first
        Y = Y * (1.0 + 4 * np.finfo(float).eps * 2.0 ** min(k, 40))
    raise InvalidInputError(  # pragma: no cover - defensive
        f"could not scale a configuration to margin {margin!r}"
    )
