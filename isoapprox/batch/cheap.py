"""Cheap quantities of many configurations at once (vectorised numba).

See docs/dev/batch_design.md ("isoapprox.batch.cheap: notes").
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from .._validation import as_array, check_margin, check_nonnegative
from ..exceptions import InvalidInputError, NoTripletError
from ..kernels import batch as BK
from ..tolerances import BOUND_RTOL

__all__ = ["BOUND_RTOL", "CHEAP_FIELDS", "SEPARATION_ATOL", "cheap_from_kernel", "cheap_quantities"]

# a bound counts as holding when ``slack >= -BOUND_RTOL * diameter``
# (:mod:`isoapprox.tolerances`)
#: absolute tolerance of ``separated`` (as :func:`isoapprox.is_triplet_separated`)
SEPARATION_ATOL = 1e-9

#: (name, dtype, description) of every cheap quantity, in column order
CHEAP_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("n_classes_present", "int", "number of distinct classes P"),
    ("many_classes", "bool", "P > n + 1"),
    ("n_triplets", "int", "number of triplets (a, p, m)"),
    ("batch_hard_max", "float", "batch-hard loss, max over anchors (L)"),
    ("batch_hard_mean", "float", "batch-hard loss, mean over anchors"),
    ("triplet_mean", "float", "triplet loss, mean over all triplets"),
    ("separated", "bool", "triplet-separated: L <= 1e-9"),
    ("d_iso_ts_lower", "float", "L / 2, a lower bound of d_iso(E, F_TS)"),
    ("diameter", "float", "diam(E)"),
    ("d_iso_collapsed", "float", "d_iso(E, collapsed) (= diam)"),
    ("meb_radius", "float", "minimum enclosing ball radius R (feasible, upper)"),
    ("meb_radius_lower", "float", "certified lower bound of R"),
    ("collapse_ratio", "float", "R / diam = d_haus(E, c) / d_iso(E, c)"),
    ("thickness", "float", "theta(E) (exact n <= 2; NaN if n >= 3 and N > n)"),
    ("slack_s1_collapsed", "float", "2 R_lower - diam (statement 1 at collapse)"),
    ("holds_s1_collapsed", "bool", "slack_s1_collapsed >= -1e-9 diam"),
    ("slack_jung", "float", "diam sqrt(n / (2 (n+1))) - R (Jung)"),
    ("holds_jung", "bool", "slack_jung >= -1e-9 diam"),
)


def _as_batch(X: ArrayLike) -> np.ndarray:
    arr = as_array(X, "X", "(B, N, n)")
    if arr.shape[1] < 2 or arr.shape[2] < 1:
        raise InvalidInputError(
            f"`X` must hold at least 2 points of dimension >= 1 per configuration; got "
            f"shape {arr.shape}"
        )
    out = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(out).all():
        b = int(np.argwhere(~np.isfinite(out))[0][0])
        raise InvalidInputError(
            f"`X` must contain only finite values; configuration {b} has NaN or inf"
        )
    return out


def _as_codes(codes: ArrayLike, B: int, N: int) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.dtype.kind not in "iub":
        raise TypeError(f"`codes` must be an integer array; got dtype {arr.dtype}")
    if arr.shape == (N,):
        arr = np.broadcast_to(arr, (B, N))
    if arr.shape != (B, N):
        raise InvalidInputError(
            f"`codes` must have shape ({B}, {N}) or ({N},); got shape {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def cheap_quantities(
    X: ArrayLike, codes: ArrayLike, *, margin: float = 0.0
) -> dict[str, np.ndarray]:
    """Cheap quantities of ``B`` configurations in one vectorised call.

    Parameters
    ----------
    X : array_like of shape (B, N, n)
        ``B`` embeddings of ``N >= 2`` points in ``R^n``.
    codes : array_like of shape (B, N) or (N,)
        Integer class labels (one row per configuration, or one for all).
    margin : float, default 0.0
        ``alpha >= 0``.

    Returns
    -------
    dict of str to ndarray of shape (B,)
        One entry per :data:`CHEAP_FIELDS` name, in that order; integer
        columns are int64, flags bool, the rest float64.

    Raises
    ------
    NoTripletError
        If some configuration's labels admit no triplet.
    InvalidInputError
        For mis-shaped or non-finite input or a negative margin.

    Notes
    -----
    Per configuration ``O(N^2 n)`` for distances and batch-hard, ``O(N P_a
    N_a)`` for the all-triplet mean (``P_a`` positives and ``N_a`` negatives
    per anchor), ``O(N^3)`` worst case for the planar enclosing circle and
    thickness.  Each configuration is computed as the single-configuration
    functions do (direct differences, power-of-two rescaling at extreme
    scales), so the results agree with them to rounding.

    Examples
    --------
    >>> q = cheap_quantities([[[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]]], [0, 0, 1])
    >>> float(q["batch_hard_max"][0]), float(q["diameter"][0]), bool(q["separated"][0])
    (0.0, 3.1622776601683795, True)
    """
    Xa = _as_batch(X)
    B, N, n = Xa.shape
    C = _as_codes(codes, B, N)
    margin = check_margin(margin)
    F, I = BK.cheap_kernel(Xa, C, margin)
    bad = np.flatnonzero(I[:, 0] == 0)
    if bad.size:
        raise NoTripletError(
            f"`codes` must admit a triplet (a class with two points and another class) in "
            f"every configuration; configuration {int(bad[0])} has none"
        )
    return _assemble(F, I, n)


def _assemble(F: np.ndarray, I: np.ndarray, n: int) -> dict[str, np.ndarray]:
    f = {name: F[:, k] for k, name in enumerate(BK.CHEAP_FLOAT_FIELDS)}
    P = I[:, 1]
    diam = f["diameter"]
    tol = BOUND_RTOL * diam
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diam > 0.0, f["meb_radius"] / diam, np.nan)
    s1 = 2.0 * f["meb_radius_lower"] - f["d_iso_collapsed"]
    jung = np.sqrt(n / (2.0 * (n + 1.0))) * diam - f["meb_radius"]
    out = {
        **f,  # the kernel's float fields, under their names
        "n_classes_present": P.copy(),
        "many_classes": P > n + 1,
        "n_triplets": I[:, 0].copy(),
        "separated": f["batch_hard_max"] <= SEPARATION_ATOL,
        "d_iso_ts_lower": 0.5 * f["batch_hard_max"],
        "collapse_ratio": ratio,
        "slack_s1_collapsed": s1,
        "holds_s1_collapsed": s1 >= -tol,
        "slack_jung": jung,
        "holds_jung": jung >= -tol,
    }
    return {name: np.ascontiguousarray(out[name]) for name, _, _ in CHEAP_FIELDS}


def cheap_from_kernel(X: np.ndarray, codes: np.ndarray, margin: float) -> dict[str, np.ndarray]:
    """:func:`cheap_quantities` without validation (the engine's validated inputs)."""
    check_nonnegative(margin, "margin")
    F, I = BK.cheap_kernel(X, codes, margin)
    return _assemble(F, I, X.shape[2])
