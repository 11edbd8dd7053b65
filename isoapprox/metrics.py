"""Isometric error and Hausdorff-like distances between two embeddings.

Design notes: docs/performance.md, section ``isoapprox.metrics``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._scaling import pow2_scale
from ._typing import ArrayLike
from ._validation import as_labels, as_points, check_option, check_same_shape
from .exceptions import InvalidInputError
from .geometry import warn_overflow
from .kernels import distances as K
from .kernels import hausdorff as KH
from .procrustes import minimax_procrustes

__all__ = [
    "HAUSDORFF_MODES",
    "IsometricErrorResult",
    "hausdorff_distance",
    "hausdorff_like",
    "isometric_error",
    "isometric_error_report",
]

HAUSDORFF_MODES = ("pointwise", "isometry", "classwise")


def _pair(E1: ArrayLike, E2: ArrayLike, min_points: int):
    X1 = as_points(E1, "E1", min_points=min_points)
    X2 = as_points(E2, "E2", min_points=min_points)
    check_same_shape(X1, X2, ("E1", "E2"))
    s = pow2_scale(X1, X2)
    if s != 1.0:
        X1, X2 = X1 * s, X2 * s
    return X1, X2, s


@dataclass(frozen=True)
class IsometricErrorResult:
    """Isometric error with the pair of points that attains it.

    Attributes
    ----------
    value : float
        ``max_{i<j} |D1_ij - D2_ij|``.
    pair : tuple of int
        ``(i, j)``, ``i < j``, attaining it (first in lexicographic order).
    d1, d2 : float
        ``D1_ij`` and ``D2_ij`` for that pair.
    """

    value: float
    pair: tuple[int, int]
    d1: float
    d2: float


def isometric_error_report(E1: ArrayLike, E2: ArrayLike) -> IsometricErrorResult:
    """Isometric error ``max_{i<j} |D1_ij - D2_ij|`` with its arg-max pair.

    Parameters
    ----------
    E1, E2 : array_like of shape (N, n)
        Two embeddings of the same ``N >= 2`` points (the dimensions must
        agree; pad with zero columns to compare different dimensions).

    Returns
    -------
    IsometricErrorResult

    Notes: docs/performance.md, ``isoapprox.metrics.isometric_error_report``.
    """
    X1, X2, s = _pair(E1, E2, 2)
    value, i, j = K.isometric_error_kernel(X1, X2)
    i, j = int(i), int(j)
    # the kernel's own direct-difference distances, so value == |d1 - d2|
    d1 = float(K.dist(X1, i, X1, j))
    d2 = float(K.dist(X2, i, X2, j))
    return IsometricErrorResult(float(value) / s, (i, j), d1 / s, d2 / s)


def isometric_error(E1: ArrayLike, E2: ArrayLike) -> float:
    """Isometric error ``d_iso(E1, E2) = max_{i<j} |D1_ij - D2_ij|``.

    Parameters
    ----------
    E1, E2 : array_like of shape (N, n)
        Two embeddings of the same ``N >= 2`` points.

    Returns
    -------
    float
        ``0.0`` exactly when ``E1`` and ``E2`` are equal arrays.

    Examples
    --------
    >>> isometric_error([[0.0, 0.0], [1.0, 0.0]], [[5.0, 5.0], [5.0, 7.0]])
    1.0
    """
    return isometric_error_report(E1, E2).value


def hausdorff_like(
    E1: ArrayLike,
    E2: ArrayLike,
    *,
    mode: str = "pointwise",
    labels: ArrayLike | None = None,
    directed: bool = False,
) -> float:
    """Hausdorff-like distance between two embeddings of the same batch.

    Parameters
    ----------
    E1, E2 : array_like of shape (N, n)
        Two embeddings of the same points.
    mode : {"pointwise", "isometry", "classwise"}, default "pointwise"
        ``max_k ||E1_k - E2_k||``; its minimum over isometries of ``E1``
        (minimax Procrustes); or, per point of ``E1``, the distance to the
        nearest point of its own class in ``E2`` (docs/performance.md).
    labels : array_like of shape (N,), optional
        Class labels; required by ``mode="classwise"`` and ignored otherwise.
    directed : bool, default False
        Only for ``mode="classwise"``: when True return the directed
        distance ``max_x d(f1(x), X^{y(x)}_{f2})`` from ``E1`` to ``E2``.

    Returns
    -------
    float

    Raises
    ------
    InvalidInputError
        For an unknown mode, mismatched shapes, or ``mode="classwise"``
        without labels.

    Notes: docs/performance.md, ``isoapprox.metrics.hausdorff_like``.

    Examples
    --------
    >>> hausdorff_like([[0.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]])
    1.0
    >>> hausdorff_like([[0.0], [1.0]], [[1.0], [0.0]], mode="classwise", labels=[0, 0])
    0.0
    """
    mode = check_option(mode, "mode", HAUSDORFF_MODES)
    if not isinstance(directed, (bool, np.bool_)):
        raise TypeError(f"`directed` must be a bool; got {directed!r}")
    if mode == "isometry":
        return minimax_procrustes(E1, E2).value
    X1, X2, s = _pair(E1, E2, 1)
    if mode == "pointwise":
        value, _ = K.pointwise_kernel(X1, X2)
        return float(value) / s
    if labels is None:
        raise InvalidInputError(
            "`labels` must be given for mode='classwise' (the class clouds X^i_f need "
            "labels); got None"
        )
    codes, classes = as_labels(labels, X1.shape[0], "labels")
    P = len(classes)
    forward = _root(KH.classwise_directed(X1, X2, codes, P)[0])
    if directed:
        return forward / s
    backward = _root(KH.classwise_directed(X2, X1, codes, P)[0])
    return max(forward, backward) / s


def _root(sq: float) -> float:
    return float(np.sqrt(sq))


def hausdorff_distance(A: ArrayLike, B: ArrayLike, *, directed: bool = False) -> float:
    """Hausdorff distance between two point sets of any sizes.

    ``max(h(A, B), h(B, A))`` with ``h(A, B) = max_{a in A} min_{b in B}
    ||a - b||`` (``directed=True``: ``h(A, B)`` alone).  Exact: the nearest
    points are found by the early break of Taha and Hanbury in a fixed random
    order, or for ``n <= 3`` and 256 points or more by a grid of ``B``
    (:mod:`isoapprox.kernels.hausdorff`), and the distances are direct
    differences in float64 (rescaled by a power of two where the squares
    could overflow or underflow).

    Parameters
    ----------
    A : array_like of shape (N_A, n)
    B : array_like of shape (N_B, n)
        Two sets of points of the same dimension, ``N_A, N_B >= 1``.
    directed : bool, default False
        Return ``h(A, B)`` only.

    Returns
    -------
    float

    Raises
    ------
    InvalidInputError
        If ``A`` or ``B`` is not a finite 2-D array, or their dimensions differ.
    TypeError
        For non-numeric arrays or a non-bool ``directed``.

    See Also
    --------
    hausdorff_like : the Hausdorff-like distances between two embeddings of
        the same points (``mode="classwise"`` with one label is this
        distance for two sets of the same size).
    scipy.spatial.distance.directed_hausdorff : the same directed distance.

    References
    ----------
    A. A. Taha and A. Hanbury, "An efficient algorithm for calculating the
    exact Hausdorff distance", IEEE TPAMI 37(11), 2015.
    doi:10.1109/TPAMI.2015.2408351

    Examples
    --------
    >>> A = [[0.0, 0.0], [1.0, 0.0]]
    >>> B = [[0.0, 0.0], [1.0, 0.0], [4.0, 0.0]]
    >>> hausdorff_distance(A, B), hausdorff_distance(A, B, directed=True)
    (3.0, 0.0)
    """
    if not isinstance(directed, (bool, np.bool_)):
        raise TypeError(f"`directed` must be a bool; got {directed!r}")
    XA = as_points(A, "A")
    XB = as_points(B, "B")
    if XA.shape[1] != XB.shape[1]:
        raise InvalidInputError(
            f"`A` and `B` must have the same dimension (columns); got {XA.shape[1]} and "
            f"{XB.shape[1]}")
    s = pow2_scale(XA, XB)
    if s != 1.0:
        XA, XB = XA * s, XB * s
    value = _root(KH.directed(XA, XB)[0])
    if not directed:
        value = max(value, _root(KH.directed(XB, XA)[0]))
    return warn_overflow(value / s, "hausdorff_distance", "the Hausdorff distance")
