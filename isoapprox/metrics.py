"""Isometric error and Hausdorff-like distances between two embeddings, and
leave-one-out retrieval metrics of one labelled embedding.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.metrics``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from ._scaling import pow2_scaled, pow2_scaled_pair
from ._typing import ArrayLike, FloatArray, IntArray, RNGLike
from ._validation import (
    as_labels,
    as_points,
    as_rng,
    check_int,
    check_option,
    check_same_shape,
    class_counts,
)
from .exceptions import InvalidInputError
from .geometry import warn_overflow
from .kernels import distances as K
from .kernels import hausdorff as KH
from .kernels import retrieval as KR
from .procrustes import minimax_procrustes

__all__ = [
    "HAUSDORFF_MODES",
    "RETRIEVAL_MAX_QUERIES",
    "IsometricErrorResult",
    "RetrievalMetrics",
    "hausdorff_distance",
    "hausdorff_like",
    "isometric_error",
    "isometric_error_report",
    "retrieval_metrics",
]

HAUSDORFF_MODES = ("pointwise", "isometry", "classwise")


def _pair(E1: ArrayLike, E2: ArrayLike, min_points: int):
    X1 = as_points(E1, "E1", min_points=min_points)
    X2 = as_points(E2, "E2", min_points=min_points)
    check_same_shape(X1, X2, ("E1", "E2"))
    return pow2_scaled_pair(X1, X2)


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

    Notes: docs/dev/kernels_design.md, ``isoapprox.metrics.isometric_error_report``.
    """
    return _isometric_error_report(*_pair(E1, E2, 2))


def _isometric_error_report(X1: np.ndarray, X2: np.ndarray, s: float) -> IsometricErrorResult:
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
        nearest point of its own class in ``E2`` (docs/dev/kernels_design.md).
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

    Notes: docs/dev/kernels_design.md, ``isoapprox.metrics.hausdorff_like``.

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


def compute_isometric_error(X1: np.ndarray, X2: np.ndarray) -> float:
    """:func:`isometric_error` without its checks, for callers that validated
    (finite float64 arrays of the same shape, at least two rows)."""
    return _isometric_error_report(*pow2_scaled_pair(X1, X2)).value


def compute_pointwise(X1: np.ndarray, X2: np.ndarray) -> float:
    """``hausdorff_like(mode="pointwise")`` without its checks, for callers that
    validated (finite float64 arrays of the same shape)."""
    Y1, Y2, s = pow2_scaled_pair(X1, X2)
    return float(K.pointwise_kernel(Y1, Y2)[0]) / s


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
    XA, XB, s = pow2_scaled_pair(XA, XB)
    value = _root(KH.directed(XA, XB)[0])
    if not directed:
        value = max(value, _root(KH.directed(XB, XA)[0]))
    return warn_overflow(value / s, "hausdorff_distance", "the Hausdorff distance")


#: :func:`retrieval_metrics` evaluates at most this many queries by default (a
#: seeded sample of them, each still against all points): ``O(Q N n)`` time
RETRIEVAL_MAX_QUERIES = 20_000


@dataclass(frozen=True)
class RetrievalMetrics:
    """Leave-one-out retrieval of a labelled embedding (:func:`retrieval_metrics`).

    Attributes
    ----------
    recall_at_1, r_precision, map_at_r : float
        Means over the evaluated queries (NaN when there are none: every
        class a singleton).
    n_queries : int
        Queries evaluated.
    n_eligible : int
        Points whose class has another point (the possible queries).
    sampled : bool
        Whether ``n_queries < n_eligible`` (a seeded sample of queries).
    class_sizes : ndarray of int
        Size of each class (dense codes ``0 .. P-1``).
    class_queries : ndarray of int
        Queries evaluated per class.
    class_r_precision : ndarray of float
        Mean R-Precision of each class's queries (NaN where none).
    """

    recall_at_1: float
    r_precision: float
    map_at_r: float
    n_queries: int
    n_eligible: int
    sampled: bool
    class_sizes: IntArray = field(repr=False)
    class_queries: IntArray = field(repr=False)
    class_r_precision: FloatArray = field(repr=False)

    def _rp_and_chance(self, members: np.ndarray | None) -> tuple[float, float]:
        mask = np.zeros(len(self.class_sizes), dtype=bool)
        mask[slice(None) if members is None else np.asarray(members, dtype=np.int64)] = True
        q = np.where(mask, self.class_queries, 0).astype(np.float64)
        total = float(q.sum())
        Ng = int(self.class_sizes[mask].sum())
        if total == 0 or Ng < 2:
            return math.nan, math.nan
        chance_c = (self.class_sizes - 1) / (Ng - 1)
        rp_c = np.where(self.class_queries > 0, self.class_r_precision, 0.0)
        return float(np.sum(q * rp_c)) / total, float(np.sum(q * chance_c)) / total

    def chance(self, members: np.ndarray | None = None) -> float:
        """The R-Precision of random neighbours for the queries of the classes
        ``members`` (codes; default all): the mean of ``(|c| - 1) / (N_g - 1)``,
        ``N_g`` the points of those classes (NaN without queries)."""
        return self._rp_and_chance(members)[1]

    def structure_score(self, members: np.ndarray | None = None) -> float:
        """How far the R-Precision of the classes ``members`` (codes; default all)
        is from chance towards perfect: ``(rp - chance) / (1 - chance)``.

        ``rp`` is the mean R-Precision of the members' queries; ``chance`` the
        mean over the same queries of ``(|c| - 1) / (N_g - 1)``, the
        R-Precision of a query of class ``c`` whose neighbours are drawn at
        random among the ``N_g`` points of the members' classes
        (:meth:`chance`).  1 for perfectly ranked classes, about 0 (or below)
        for mixed ones; NaN without queries.
        """
        rp, chance = self._rp_and_chance(members)
        if math.isnan(rp) or chance >= 1.0:
            return math.nan
        return (rp - chance) / (1.0 - chance)

    def to_dict(self) -> dict:
        """Plain-Python dictionary of the scalars (the fields shown by ``repr``) and the
        structure score (JSON-serialisable)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        return {**out, "structure_score": self.structure_score(),
                "chance_r_precision": self.chance()}


def retrieval_metrics(
    E: ArrayLike,
    y: ArrayLike,
    *,
    max_queries: int | None = RETRIEVAL_MAX_QUERIES,
    rng: RNGLike = None,
) -> RetrievalMetrics:
    """Leave-one-out Recall@1, R-Precision and MAP@R of a labelled embedding.

    Every point whose class has ``R = |class| - 1 >= 1`` other points is a
    query; the other ``N - 1`` points are the gallery.  Its ``R`` nearest
    neighbours (itself excluded) give, as pytorch-metric-learning's
    ``AccuracyCalculator`` defines them: Recall@1 (precision at 1: the
    nearest neighbour is of the query's class), R-Precision (the share of
    the ``R`` neighbours of its class) and MAP@R (the mean over ``i <= R`` of
    the precision at ``i``, counted at the positions ``i`` of its class,
    divided by ``R``).  Each is averaged over the queries.  Points of a
    singleton class are never queries (``R = 0``), but they are in the
    gallery.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels.
    max_queries : int or None, default RETRIEVAL_MAX_QUERIES (20,000)
        With more possible queries, a sample of this many (without
        replacement, drawn by ``rng``) is evaluated, each against all
        points; ``None`` evaluates every query.
    rng : None, int or Generator
        Randomness of the sample of queries (unused when all are evaluated).

    Returns
    -------
    RetrievalMetrics

    Raises
    ------
    InvalidInputError
        If ``E`` is not a finite 2-D array, ``y`` has the wrong length, or
        ``max_queries < 1``.

    Notes
    -----
    Exact: squared Euclidean distances by direct differences in float64
    (rescaled by a power of two), the same order as the distances.  Ties
    are broken pessimistically and deterministically: among points at the
    same distance from the query, those of another class rank first, then
    by index, so a tie never counts as a retrieval (a collapsed embedding,
    all points equal, scores 0).  ``O(Q N n)`` time for ``Q`` queries and
    ``O(N)`` memory per thread (no ``N x N`` matrix): the distances of one
    query, a partial selection of the ``R`` smallest and their sort
    (:mod:`isoapprox.kernels.retrieval`); the numbers do not depend on the
    thread count.

    Examples
    --------
    >>> m = retrieval_metrics([[0.0], [0.1], [5.0], [5.1], [0.05]], [0, 0, 1, 1, 1])
    >>> m.recall_at_1, m.n_queries  # 0.05 ties between 0 and 0.1: counted as a miss
    (0.4, 5)
    """
    X = as_points(E, "E", min_points=1)
    codes, _ = as_labels(y, X.shape[0], "y")
    if max_queries is not None:
        max_queries = check_int(max_queries, "max_queries", minimum=1)
    return compute_retrieval(X, codes, max_queries=max_queries, rng=rng)


def compute_retrieval(
    X: np.ndarray, codes: np.ndarray, *, max_queries: int | None, rng: RNGLike
) -> RetrievalMetrics:
    """:func:`retrieval_metrics` of validated input (``X`` finite float64, ``codes`` dense)."""
    sizes = class_counts(codes)
    eligible = np.flatnonzero(sizes[codes] >= 2)
    sampled = max_queries is not None and eligible.size > max_queries
    if sampled:
        queries = np.sort(as_rng(rng).choice(eligible, size=max_queries, replace=False))
    else:
        queries = eligible
    P = len(sizes)
    Q = int(queries.size)
    if Q == 0:
        nan = math.nan
        return RetrievalMetrics(nan, nan, nan, 0, 0, False, sizes, np.zeros(P, np.int64),
                                np.full(P, nan))
    Xs = np.ascontiguousarray(pow2_scaled(X)[0])
    hit, rp, mapr = KR.loo_retrieval(Xs, codes.astype(np.int64), sizes,
                                     queries.astype(np.int64))
    qc = codes[queries]
    cq = np.bincount(qc, minlength=P).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        crp = np.bincount(qc, weights=rp, minlength=P) / cq
    return RetrievalMetrics(
        recall_at_1=float(math.fsum(hit.tolist()) / Q),
        r_precision=float(math.fsum(rp.tolist()) / Q),
        map_at_r=float(math.fsum(mapr.tolist()) / Q),
        n_queries=Q,
        n_eligible=int(eligible.size),
        sampled=bool(sampled),
        class_sizes=sizes,
        class_queries=cq,
        class_r_precision=crp,
    )
