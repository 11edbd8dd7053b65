"""The least diameter with a witness layout: :func:`min_separated_diameter`, and
the SLSQP local search of the least-diameter problem (shared with the offline
table builder, ``tools/build_dstar_table.py``; re-exported by
:mod:`isoapprox.packing`).
"""

from __future__ import annotations

import functools
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from .._blas import single_threaded_blas
from .._typing import FloatArray, RNGLike
from .._validation import as_rng, check_int, check_margin, check_positive
from ..bracket import Bracket, Bracketed
from ._dstar import (
    check_witness,
    compute_d_star,
    feasible,
    fields_repr,
    scaled_feasible,
    unit_witness,
)
from .constructions import min_max_distance


@dataclass(frozen=True, repr=False)
class PackingResult(Bracketed):
    """Least diameter of ``P`` separated points, with a bracket and a witness.

    Attributes
    ----------
    points : ndarray of shape (P, n)
        Pairwise distances ``>= margin`` (checked in float64 by direct differences).
    bracket : Bracket
        ``value``, ``lower``, ``upper``, ``certified``, ``lower_source`` and
        ``upper_source`` (``method``), read by the attributes below.
    value, lower, upper : float
        ``lower <= D*(P, n, margin) <= upper = value``, the diameter of ``points``.
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

    points: FloatArray
    bracket: Bracket
    exact: bool
    method: str
    n_starts: int
    #: the attributes of the repr and of a serialised copy, in order
    SERIAL_FIELDS = ("value", "lower", "upper", "points", "exact", "certified", "lower_source",
                     "method", "n_starts")

    @classmethod
    def of(cls, upper: float, lower: float, points: FloatArray, exact: bool, certified: bool,
           lower_source: str, method: str, n_starts: int) -> PackingResult:
        """The result of these fields (its bracket ``[lower, upper]``, value ``upper``,
        the upper end's source ``method``)."""
        return cls(points, Bracket(upper, lower, upper, certified, lower_source, method),
                   exact, method, n_starts)

    def __repr__(self) -> str:
        return fields_repr(self, self.SERIAL_FIELDS)


def slsqp(X0: np.ndarray, maxiter: int = 400, ftol: float = 1e-15, *,
           lo_pairs: tuple[np.ndarray, np.ndarray] | None = None,
           hi_pairs: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Local optimum of ``min s s.t. |x_i - x_j|^2 <= s, |x_i - x_j|^2 >= 1``.

    The one SLSQP home of the least-diameter problem (the offline table
    builder calls it too).  By default every pair has both rows; ``lo_pairs``
    / ``hi_pairs`` (index arrays ``(i, j)``) keep only those pairs' rows
    ``>= 1`` / ``<= s`` (an active set: the caller checks the other pairs).
    The start is made unit-separated first (:func:`feasible`); a result that
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

    X0 = feasible(X0)
    _, dmax = min_max_distance(X0)
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


def ball_start(rng: np.random.Generator, P: int, n: int) -> np.ndarray:
    """``P`` points uniform in the ball of radius ``0.5 P^(1/n) + 0.5`` (a start for ``slsqp``).

    The radius is about that of ``P`` unit-separated points packed densely.
    """
    Z = rng.normal(size=(P, n))
    radius = 0.5 * P ** (1.0 / n) + 0.5
    Z *= (radius * rng.uniform(size=(P, 1)) ** (1.0 / n)) / np.linalg.norm(Z, axis=1)[:, None]
    return Z


@functools.lru_cache(maxsize=256)
def unit_packing(P: int, n: int, n_random: int, seed: int) -> tuple[np.ndarray, int]:
    """Best unit-margin configuration from the witness and random starts (cached)."""
    starts = [unit_witness(P, n)]
    rng = np.random.default_rng(seed)
    starts += [ball_start(rng, P, n) for _ in range(n_random)]
    best, best_d = starts[0], min_max_distance(starts[0])[1]
    with single_threaded_blas():
        for X0 in starts:
            X = feasible(slsqp(X0, maxiter=200, ftol=1e-12))
            d = min_max_distance(X)[1]
            if d < best_d:
                best, best_d = X, d
    best = np.array(best)
    best.setflags(write=False)
    return best, len(starts)


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
    check_witness(P, n, margin)
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
    ds = compute_d_star(P, n, margin)
    if P == 1 or margin == 0.0:
        return PackingResult.of(0.0, 0.0, np.zeros((P, n)), True, True, ds.lower_source,
                                "closed-form", 0)
    if ds.exact:
        X, _ = scaled_feasible(unit_witness(P, n), margin)
        return PackingResult.of(ds.upper, ds.lower, X, True, True, ds.lower_source,
                                "closed-form", 0)
    Xu, method, tried = unit_witness(P, n), ("table" if ds.in_table else "construction"), 0
    if not ds.in_table and P <= max_opt_points and ds.upper - ds.lower > rtol * ds.upper:
        Xo, tried = unit_packing(P, n, n_random, seed)
        if min_max_distance(Xo)[1] < min_max_distance(Xu)[1]:
            Xu, method = Xo, "slsqp-multistart"
    X, d = scaled_feasible(np.array(Xu), margin)
    upper = min(d, ds.upper)
    return PackingResult.of(upper, ds.lower, X, False, bool(upper - ds.lower <= rtol * upper),
                            ds.lower_source, method, tried)
