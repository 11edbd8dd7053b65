"""Collapse statistics of a labelled embedding.

Every statistic is exact (no sampling), in float64 by direct differences,
and none builds the ``N x N`` matrix; the sweeps over pairs are in
:mod:`isoapprox.kernels.stats`.  Definitions and conventions (effective
rank, RankMe, alignment, uniformity, zero rows): see docs/dev/diagnostics_design.md.
"""

from __future__ import annotations

import logging
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .._blas import numba_threads, single_threaded_blas
from .._scaling import pow2_scaled
from .._typing import ArrayLike, FloatArray, IntArray
from .._validation import (
    as_labels,
    as_points,
    check_bool,
    check_int,
    check_margin,
    check_nonnegative,
    check_positive,
    check_quantiles,
    class_counts,
    require_triplets,
)
from ..exceptions import InvalidInputError
from ..geometry import min_enclosing_ball
from ..kernels import stats as KS
from ..metrics import RETRIEVAL_MAX_QUERIES, RetrievalMetrics, compute_retrieval
from .distances import (
    DEFAULT_QUANTILES,
    MAX_CANDIDATES,
    N_BINS,
    DistanceSummary,
    n_chunks,
    n_units,
    scaled,
    summary_and_components,
)
from .merging import (
    MERGE_DIAMETER_RATIO,
    MERGE_MARGIN_RATIO,
    ClassMerging,
    compute_merging,
    merge_height,
)

__all__ = [
    "BALL_RTOL",
    "RANKME_EPS",
    "ClassSpread",
    "CollapseStatistics",
    "QuickStatistics",
    "active_triplet_fraction",
    "alignment",
    "class_merging",
    "class_spread",
    "collapse_statistics",
    "effective_rank",
    "quick_statistics",
    "rankme",
    "std_of_l2_normalized",
    "uniformity",
]

#: epsilon added to the normalised singular values by RankMe (Garrido et al. 2023)
RANKME_EPS = 1e-7
#: relative gap to which the enclosing balls (whole set and each class) are certified
BALL_RTOL = 1e-12
#: classes up to this size get their minimum enclosing ball on one numba
#: thread: waking a thread pool costs far more than the work on a few points
_SERIAL_MEB_POINTS = 4096
#: above this many pair-coordinate operations (N^2 n) the sweeps are logged at
#: INFO (they take minutes), else at DEBUG
_LOG_INFO_WORK = 10**11
#: default tolerance of the violated-triplet count
_ATOL = 1e-9

logger = logging.getLogger(__name__)


def _unit_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length (overflow/underflow-safe) and the mask of zero rows."""
    amax = np.max(np.abs(X), axis=1)
    zero = amax == 0.0
    Y = X[~zero] / amax[~zero, None]
    Y = Y / np.sqrt(np.einsum("ij,ij->i", Y, Y))[:, None]
    return np.ascontiguousarray(Y), zero


def _unit_rows_strict(X: np.ndarray, name: str) -> np.ndarray:
    Z, zero = _unit_rows(X)
    if zero.any():
        k = int(np.flatnonzero(zero)[0])
        raise InvalidInputError(
            f"`{name}` must have no zero rows for L2-normalised statistics; got "
            f"{int(zero.sum())} zero row(s), the first at index {k} (drop them first)"
        )
    return Z


def _entropy_rank(s: np.ndarray, eps: float = 0.0) -> float:
    total = math.fsum(s.tolist())
    if total == 0.0:
        return 0.0
    p = s / total + eps
    nz = p[p > 0.0]
    return float(math.exp(-math.fsum((nz * np.log(nz)).tolist())))


def _singular_values(X: np.ndarray, center: bool) -> np.ndarray:
    Y = pow2_scaled(X)[0]
    if center:
        Y = Y - Y.mean(axis=0)
    # a threaded BLAS next to numba's thread pool oversubscribes small
    # machines; a tall (N, n) SVD is fast on one thread
    with single_threaded_blas():
        return np.linalg.svd(Y, compute_uv=False)


def _softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` without overflow."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def effective_rank(E: ArrayLike, *, center: bool = True, squared: bool = False) -> float:
    """Effective rank (Roy & Vetterli 2007) of the embeddings.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings, ``N >= 1``.
    center : bool, default True
        Subtract the mean row first (spread, not offset).
    squared : bool, default False
        Use the squared singular values (a variant of some implementations).

    Returns
    -------
    float
        ``exp(-sum p_k log p_k)``, ``p_k = s_k / sum s``; in ``[1, rank]``,
        and ``0.0`` for an all-zero (centred) matrix.

    Examples
    --------
    >>> effective_rank([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    2.0
    """
    X = as_points(E, "E")
    s = _singular_values(X, bool(center))
    return _entropy_rank(s * s if squared else s)


def rankme(E: ArrayLike, *, eps: float = RANKME_EPS) -> float:
    """RankMe (Garrido et al., ICML 2023) of the uncentred embeddings.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings, ``N >= 1``.
    eps : float, default ``RANKME_EPS`` (1e-7)
        Added to every normalised singular value, as in the paper.

    Returns
    -------
    float
        ``exp(-sum p_k log p_k)``, ``p_k = s_k / sum s + eps``; ``0.0`` for an
        all-zero matrix.

    Examples
    --------
    >>> round(rankme([[1.0, 0.0], [0.0, 1.0]]), 6)
    2.0
    """
    X = as_points(E, "E")
    eps = check_nonnegative(eps, "eps")
    return _entropy_rank(_singular_values(X, False), eps)


def std_of_l2_normalized(E: ArrayLike) -> float:
    """Mean over dimensions of the std of the L2-normalised embeddings.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings, ``N >= 2``, no zero row.

    Returns
    -------
    float
        ``mean_k std_i(z_ik)``, ``z_i = E_i / ||E_i||``, ``ddof=1`` (as
        lightly's); 0 when collapsed, about ``1/sqrt(n)`` when isotropic.

    Raises
    ------
    InvalidInputError
        If a row is zero.

    Examples
    --------
    >>> std_of_l2_normalized([[1.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    0.0
    """
    X = as_points(E, "E", min_points=2)
    Z = _unit_rows_strict(X, "E")
    return float(np.mean(np.std(Z, axis=0, ddof=1)))


def _uniformity_unit(Z: np.ndarray, t: float) -> float:
    N = Z.shape[0]
    Ms, Ss = KS.uniformity_blocks(Z, np.ascontiguousarray(Z.T), t, n_chunks(n_units(N)))
    M = float(np.max(Ms))
    total = math.fsum(
        float(S) * math.exp(float(Mb) - M) for Mb, S in zip(Ms, Ss, strict=True) if S > 0.0
    )
    m = N * (N - 1) // 2
    return M + math.log(total) - math.log(m)


def uniformity(E: ArrayLike, *, t: float = 2.0) -> float:
    """Uniformity (Wang & Isola 2020) of the L2-normalised embeddings.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings, ``N >= 2``, no zero row.
    t : float, default 2.0
        Temperature ``t > 0``.

    Returns
    -------
    float
        ``log mean_{i<j} exp(-t ||z_i - z_j||^2)`` in ``[-4 t, 0]``; 0 when
        every direction coincides.

    Raises
    ------
    InvalidInputError
        If a row is zero or ``t <= 0``.

    Examples
    --------
    >>> round(uniformity([[1.0, 0.0], [-1.0, 0.0]]), 12)
    -8.0
    """
    X = as_points(E, "E", min_points=2)
    t = check_positive(t, "t")
    return _uniformity_unit(_unit_rows_strict(X, "E"), t)


def _alignment_unit(Z: np.ndarray, codes: np.ndarray, alpha: float) -> tuple[float, int]:
    order = np.argsort(codes, kind="stable")
    Zs = np.ascontiguousarray(Z[order])
    cs = codes[order]
    counts = class_counts(cs) if cs.size else np.zeros(0, np.int64)
    n_pos = int(np.sum(counts * (counts - 1) // 2))
    if n_pos == 0:
        return math.nan, 0
    ends = np.cumsum(counts)[cs].astype(np.int64)
    rows = KS.alignment_rows(Zs, ends, float(alpha))
    return math.fsum(rows.tolist()) / n_pos, n_pos


def alignment(E: ArrayLike, y: ArrayLike, *, alpha: float = 2.0) -> float:
    """Alignment (Wang & Isola 2020) of the L2-normalised embeddings.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings, no zero row.
    y : array_like of shape (N,)
        Class labels; the positive pairs are the same-class pairs ``i < j``.
    alpha : float, default 2.0
        Exponent ``alpha > 0``.

    Returns
    -------
    float
        ``mean ||z_i - z_j||^alpha`` over the positive pairs, in
        ``[0, 2^alpha]``; 0 when every class is collapsed in direction.

    Raises
    ------
    InvalidInputError
        If a row is zero, ``alpha <= 0``, or no class has two points.

    Examples
    --------
    >>> alignment([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]], [0, 0, 1])
    2.0
    """
    X = as_points(E, "E", min_points=2)
    codes, _ = as_labels(y, X.shape[0], "y")
    alpha = check_positive(alpha, "alpha")
    Z = _unit_rows_strict(X, "E")
    value, n_pos = _alignment_unit(Z, codes, alpha)
    if n_pos == 0:
        raise InvalidInputError(
            "`y` must contain a class with at least two points (a positive pair); got "
            f"{len(class_counts(codes))} classes, all singletons"
        )
    return value


@dataclass(frozen=True)
class ClassSpread:
    """Per-class spread against between-class separation: the ``classes`` section
    of :class:`CollapseStatistics`.

    One entry per class of ``classes`` (sorted labels): ``sizes``,
    ``meb_radius`` (minimum enclosing ball), ``diameter`` (0 for a
    singleton), ``nearest_centroid`` (distance from the centroid to the
    nearest other one, of class ``nearest_centroid_class``), ``min_inter``
    (least distance from a point of the class to another class, of class
    ``nearest_class``) and ``violated`` (triplets anchored in the class
    violated at the margin of the sweep).  The quick statistics
    (``collapse_statistics(..., quick=True)``) leave the enclosing balls and
    the centroids out (``None``).
    """

    classes: np.ndarray
    sizes: IntArray
    meb_radius: FloatArray | None
    diameter: FloatArray
    nearest_centroid: FloatArray | None
    nearest_centroid_class: np.ndarray | None
    min_inter: FloatArray
    nearest_class: np.ndarray
    violated: IntArray

    @property
    def max_class_diameter(self) -> float:
        """Largest class diameter."""
        return float(np.max(self.diameter))

    @property
    def min_class_gap(self) -> float:
        """Least distance between points of two different classes."""
        return float(np.min(self.min_inter))

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable; the parts not computed are ``None``)."""
        out: dict[str, Any] = {
            f.name: None if getattr(self, f.name) is None else getattr(self, f.name).tolist()
            for f in fields(self)
        }
        out.update(max_class_diameter=self.max_class_diameter, min_class_gap=self.min_class_gap)
        return out


def _class_spread(X: np.ndarray, codes: np.ndarray, classes: np.ndarray, hp, hn, hn_idx,
                  viol, *, balls: bool = True) -> ClassSpread:
    """From the anchor sweep's hardest positives/negatives (input units) and violations;
    without ``balls``, no enclosing balls and no centroids."""
    P = len(classes)
    sizes = class_counts(codes)
    diam = np.zeros(P)
    np.maximum.at(diam, codes, np.where(np.isfinite(hp), hp, 0.0))
    min_inter = np.full(P, np.inf)
    np.minimum.at(min_inter, codes, hn)
    # the first anchor of each class reaching the class's least inter-class distance
    order_a = np.lexsort((np.arange(len(codes)), hn, codes))
    first = order_a[np.searchsorted(codes[order_a], np.arange(P))]
    nearest_class = classes[codes[np.maximum(hn_idx[first], 0)]]
    meb = near = near_cls = None
    if balls:
        meb, near, near_cls = _balls_and_centroids(X, codes, classes, sizes)
    return ClassSpread(
        classes=classes,
        sizes=sizes,
        meb_radius=meb,
        diameter=diam,
        nearest_centroid=near,
        nearest_centroid_class=near_cls,
        min_inter=min_inter,
        nearest_class=nearest_class,
        violated=np.bincount(codes, weights=viol, minlength=P).astype(np.int64),
    )


def _balls_and_centroids(X: np.ndarray, codes: np.ndarray, classes: np.ndarray,
                         sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each class's enclosing-ball radius, and its centroid's distance to the nearest other
    centroid and that one's class."""
    P = len(classes)
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    meb = np.empty(P)
    centroids = np.empty((P, X.shape[1]))
    for c in range(P):
        pts = X[order[starts[c] : starts[c] + sizes[c]]]
        with numba_threads(1 if len(pts) <= _SERIAL_MEB_POINTS else None):
            meb[c] = min_enclosing_ball(pts, rtol=BALL_RTOL).radius
        centroids[c] = pts.mean(axis=0)
    if P >= 2:
        Cs, CT, s = scaled(centroids)
        best, arg = KS.nearest_other(Cs, CT, n_chunks((P + KS.RB - 1) // KS.RB))
        return meb, best / s, classes[arg]
    return meb, np.full(P, np.inf), classes[:0]


def _anchor_sweep(X: np.ndarray, codes: np.ndarray, margin: float, atol: float, *extra: float):
    """Anchor sweep in rescaled units: see :func:`isoapprox.kernels.stats.anchor_pass`.

    ``extra`` are further lengths the rescaled copy must represent (as ``margin``).
    """
    Xs, XT, s = scaled(X, margin, atol, *extra)
    nb = (X.shape[0] + KS.RB - 1) // KS.RB
    members = np.argsort(codes, kind="stable").astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(class_counts(codes)))).astype(np.int64)
    hp, hn, pi, ni, far, far_idx, near, active, viol, hinge = KS.anchor_pass(
        Xs, XT, codes, members, starts, margin * s, atol * s, n_chunks(nb)
    )
    return Xs, XT, s, hp, hn, pi, ni, far, far_idx, near, active, viol, hinge


def class_spread(E: ArrayLike, y: ArrayLike, *, margin: float = 0.0) -> ClassSpread:
    """Per-class spread (ball radius, diameter) against between-class distances.

    The ``classes`` section of :func:`collapse_statistics` on its own: one
    anchor sweep and a ball per class, for any two or more classes (no
    triplet needed).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels, at least two classes.
    margin : float, default 0.0
        ``alpha >= 0`` of the violated-triplet counts (``atol = 0``).

    Returns
    -------
    ClassSpread

    Examples
    --------
    >>> cs = class_spread([[0.0], [1.0], [5.0], [7.0]], [0, 0, 1, 1])
    >>> cs.diameter.tolist(), cs.nearest_centroid.tolist(), cs.min_inter.tolist()
    ([1.0, 2.0], [5.5, 5.5], [4.0, 4.0])
    """
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    margin = check_margin(margin)
    if len(classes) < 2:
        raise InvalidInputError(
            f"`y` must contain at least two classes to compare classes; got one class "
            f"({X.shape[0]} point(s))"
        )
    _, _, s, hp, hn, _, ni, *_, viol, _ = _anchor_sweep(X, codes, margin, 0.0)
    return _class_spread(X, codes, classes, hp / s, hn / s, ni, viol)


def class_merging(E: ArrayLike, y: ArrayLike, *, height: float) -> ClassMerging:
    """Merged groups of classes, collapsed classes and overlapping class pairs.

    Single linkage cut at ``height`` (see :mod:`isoapprox.diagnostics.merging`).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels.
    height : float
        ``h >= 0``: points at most ``h`` apart are linked
        (:func:`~isoapprox.diagnostics.merging.merge_height` gives the report's).

    Returns
    -------
    ClassMerging
        ``margin_ratio`` and ``diameter_ratio`` are NaN (the height is given).

    Examples
    --------
    >>> m = class_merging([[0.0], [0.02], [0.01], [0.03], [5.0], [6.0]],
    ...                   [0, 0, 1, 1, 2, 2], height=0.1)
    >>> [(g.classes, g.n_points) for g in m.groups], m.overlaps
    ([((0, 1), 4)], ((0, 1, 2, 2),))
    """
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    height = check_nonnegative(height, "height")
    Xs, XT, s, hp, hn, _, ni, *_ = _anchor_sweep(X, codes, 0.0, 0.0, height)
    return compute_merging(
        X, Xs, XT, s, codes, classes, hp, hn, ni, height=height,
        margin_ratio=math.nan, diameter_ratio=math.nan,
    )


def active_triplet_fraction(E: ArrayLike, y: ArrayLike, *, margin: float = 0.0) -> float:
    """Share of triplets with a strictly positive hinge term.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels admitting a triplet.
    margin : float, default 0.0
        ``alpha >= 0``.

    Returns
    -------
    float
        ``#{(a, p, m): d(a, m) < d(a, p) + alpha} / #triplets``.

    Raises
    ------
    NoTripletError
        If the labels admit no triplet.

    Examples
    --------
    >>> active_triplet_fraction([[0.0], [0.0], [0.0]], [0, 0, 1], margin=1.0)
    1.0
    >>> active_triplet_fraction([[0.0], [0.0], [0.0]], [0, 0, 1], margin=0.0)
    0.0
    """
    X = as_points(E, "E", min_points=2)
    codes, _ = as_labels(y, X.shape[0], "y")
    margin = check_margin(margin)
    require_triplets(codes)
    *_, active, _, _ = _anchor_sweep(X, codes, margin, 0.0)
    return int(np.sum(active)) / _n_triplets(codes)


def _n_triplets(codes: np.ndarray) -> int:
    counts = class_counts(codes)
    per = counts[codes]
    return int(np.sum((per - 1) * (codes.shape[0] - per)))


def _anchor_losses(hp, hn, pi, ni, s: float, margin: float) -> dict[str, Any]:
    """Batch-hard and soft-margin losses and the worst slack from the anchor sweep.

    ``hp``, ``hn`` are in the sweep's rescaled units (factor ``s``); the
    values returned are in input units, keyed by their :class:`CollapseStatistics`
    fields; ``worst`` is the anchor of the worst slack.
    """
    valid = (pi >= 0) & (ni >= 0)
    alpha_s = margin * s
    terms = np.maximum(hp[valid] - hn[valid] + alpha_s, 0.0)
    soft = _softplus((hp[valid] - hn[valid]) / s)
    slack = np.where(valid, hn - hp - alpha_s, np.inf)
    w = int(np.argmin(slack))
    return {
        "batch_hard_mean": float(np.sum(terms) / len(terms) / s),
        "batch_hard_max": float(np.max(terms) / s),
        "batch_hard_sum": float(np.sum(terms) / s),
        "soft_margin_mean": float(np.mean(soft)),
        "n_anchors": int(np.sum(valid)),
        # anchors with a positive term (pytorch-metric-learning's AvgNonZeroReducer)
        "n_hard_active": int(np.count_nonzero(terms > 0.0)),
        "worst_slack": float(slack[w] / s),
        "worst": w,
    }


def _norms(X: np.ndarray) -> tuple[float, float]:
    """``sqrt(mean ||X_k||^2)`` and ``||mean X_k||``, overflow-safe."""
    amax = float(np.max(np.abs(X)))
    if amax == 0.0:
        return 0.0, 0.0
    Y = X / amax
    rms = amax * math.sqrt(float(np.mean(np.einsum("ij,ij->i", Y, Y))))
    return rms, amax * float(np.linalg.norm(Y.mean(axis=0)))


def _delegate(path: str, doc: str) -> property:
    """A read-only attribute that reads ``path`` (dotted) of the instance."""
    return property(operator.attrgetter(path), doc=doc)


def _share(name: str, doc: str) -> property:
    """A read-only attribute: ``name`` over the number of triplets."""
    return property(lambda self: getattr(self, name) / self.n_triplets, doc=doc)


@dataclass(frozen=True)
class CollapseStatistics:
    """The collapse statistics of one labelled embedding (see docs/dev/diagnostics_design.md).

    From :func:`collapse_statistics`; ``quick`` says how much was computed:
    the full statistics, or (``quick=True``) those of one anchor sweep and
    one spectrum, cheap enough for every training step, whose other fields
    are ``None`` (``distances``, ``diameter_pair``, the enclosing balls,
    RankMe, the L2-normalised statistics and the per-class balls and
    centroids of ``classes``).  The fields both levels hold are computed by
    the same code, so they are equal.

    ``N``, ``n``, ``P`` are ``n_points``, ``dim``, ``n_classes``;
    ``diameter`` and ``min_distance`` are the largest and least pair
    distances; ``diameter_pair`` is the first pair attaining the diameter;
    ``meb_radius`` and ``meb_lower`` bracket the minimum-enclosing-ball
    radius; ``rms_norm`` is ``sqrt(mean ||E_k||^2)`` and ``centroid_norm``
    ``||mean E_k||``; the L2-normalised statistics leave out ``n_zero_rows``
    zero rows (``None`` when undefined); the batch-hard losses are over the
    ``n_anchors`` anchors with a positive and a negative; ``n_active`` counts
    ``d(a,m) < d(a,p) + alpha``, ``n_violated`` a violation beyond ``atol``;
    ``triplet_sum`` is the triplet loss summed over all ``n_triplets``
    triplets (from the same sweep); ``worst_slack`` is
    ``min d(a,m) - d(a,p) - alpha``, attained at ``worst_triplet``;
    ``classes`` holds the per-class spread; ``merging`` the merged groups of
    classes at the merge height; ``retrieval`` the leave-one-out Recall@1,
    R-Precision and MAP@R (:func:`~isoapprox.metrics.retrieval_metrics`; over
    a sample of :data:`~isoapprox.metrics.RETRIEVAL_MAX_QUERIES` queries,
    seed 0, when there are more).
    """

    n_points: int
    dim: int
    n_classes: int
    margin: float
    distances: DistanceSummary | None
    diameter_pair: tuple[int, int] | None
    meb_radius: float | None
    meb_lower: float | None
    rms_norm: float
    centroid_norm: float
    effective_rank: float
    rankme: float | None
    std_l2_normalized: float | None
    uniformity: float | None
    alignment: float | None
    n_zero_rows: int | None
    uniformity_t: float | None
    alignment_alpha: float | None
    batch_hard_mean: float
    batch_hard_max: float
    batch_hard_sum: float
    soft_margin_mean: float
    n_anchors: int
    n_hard_active: int
    n_triplets: int
    n_active: int
    n_violated: int
    triplet_sum: float
    worst_slack: float
    worst_triplet: tuple[int, int, int]
    atol: float
    classes: ClassSpread = field(repr=False)
    merging: ClassMerging = field(repr=False)
    retrieval: RetrievalMetrics = field(repr=False)
    diameter: float
    min_distance: float
    quick: bool

    @property
    def n_pairs(self) -> int:
        """Number of pairs ``i < j``."""
        return self.n_points * (self.n_points - 1) // 2

    max_class_diameter = _delegate("classes.max_class_diameter", "Largest class diameter.")
    min_class_gap = _delegate("classes.min_class_gap",
                              "Least distance between points of two different classes.")
    class_sizes = _delegate("classes.sizes", "Size of each class (``classes.sizes``).")
    class_diameter = _delegate("classes.diameter",
                               "Diameter of each class (``classes.diameter``).")
    class_gap = _delegate("classes.min_inter", "Least distance from each class to another "
                                               "(``classes.min_inter``).")
    active_fraction = _share("n_active", "Share of triplets with a strictly positive hinge term.")
    violated_fraction = _share("n_violated", "Share of triplets violated beyond ``atol``.")
    triplet_mean = _share("triplet_sum", "The triplet loss, mean over all triplets "
                                         "(``triplet_sum / n_triplets``).")

    def scalars(self) -> dict[str, float | int | None]:
        """The scalar statistics as a flat dictionary (the monitor logs the quick ones;
        the report summarises batches by the full ones)."""
        if self.quick:
            out: dict[str, Any] = {k: getattr(self, k) for k in _QUICK_SCALARS}
        else:
            out = {
                "diameter": self.diameter,
                "min_distance": self.distances.min,
                "mean_distance": self.distances.mean,
            }
            for q, v in zip(self.distances.levels, self.distances.quantiles, strict=True):
                out[f"distance_q{q:g}"] = v
            out.update({k: getattr(self, k) for k in _FULL_SCALARS})
            out.update(merged_classes=self.merging.n_merged_classes,
                       merged_share=self.merging.merged_share)
        r = self.retrieval
        out.update(recall_at_1=r.recall_at_1, r_precision=r.r_precision, map_at_r=r.map_at_r)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in ("diameter", "min_distance", "quick")}
        for name in ("distances", "classes", "merging", "retrieval"):
            out[name] = None if out[name] is None else out[name].to_dict()
        for name in ("diameter_pair", "worst_triplet"):
            out[name] = None if out[name] is None else list(out[name])
        out.update({k: getattr(self, k) for k in ("active_fraction", "violated_fraction",
                                                  "triplet_mean")})
        if self.quick:
            out.update(quick=True, diameter=self.diameter, min_distance=self.min_distance)
        return out


#: the scalars of the quick statistics before the retrieval's, in the order the monitor
#: logs them
_QUICK_SCALARS = (
    "n_points", "dim", "n_classes", "margin", "diameter", "min_distance", "rms_norm",
    "centroid_norm", "effective_rank", "batch_hard_mean", "batch_hard_max",
    "soft_margin_mean", "n_anchors", "n_hard_active", "n_triplets", "n_active", "n_violated",
    "triplet_sum", "worst_slack", "atol", "n_pairs", "max_class_diameter", "min_class_gap",
    "active_fraction", "violated_fraction", "triplet_mean",
)
#: the scalars of the full statistics after the distances and before the merged classes
#: and the retrieval, in the report's order
_FULL_SCALARS = (
    "meb_radius", "rms_norm", "centroid_norm", "effective_rank", "rankme",
    "std_l2_normalized", "uniformity", "alignment", "batch_hard_mean", "batch_hard_max",
    "soft_margin_mean", "triplet_mean", "active_fraction", "violated_fraction", "worst_slack",
    "max_class_diameter", "min_class_gap",
)

#: the former name of the quick statistics, now :class:`CollapseStatistics` with ``quick=True``
QuickStatistics = CollapseStatistics


def collapse_statistics(
    E: ArrayLike,
    y: ArrayLike,
    *,
    quick: bool = False,
    margin: float = 0.0,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    uniformity_t: float = 2.0,
    alignment_alpha: float = 2.0,
    atol: float = _ATOL,
    max_candidates: int = MAX_CANDIDATES,
    merge_margin_ratio: float = MERGE_MARGIN_RATIO,
    merge_diameter_ratio: float = MERGE_DIAMETER_RATIO,
) -> CollapseStatistics:
    """The collapse statistics of a labelled embedding, sharing the sweeps.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels admitting a triplet.
    quick : bool, default False
        Compute only what one anchor sweep and one spectrum give (cheap
        enough for every training step: the monitor's statistics), leaving
        the rest ``None`` (:class:`CollapseStatistics`); ``quantiles``,
        ``uniformity_t``, ``alignment_alpha`` and ``max_candidates`` are then
        checked but not used.
    margin : float, default 0.0
        ``alpha >= 0`` for the losses and the active triplets.
    quantiles : sequence of float in [0, 1]
        Levels of the pair-distance quantiles.
    uniformity_t, alignment_alpha : float
        Parameters of uniformity and alignment (both ``> 0``).
    atol : float, default 1e-9
        Tolerance of the violated-triplet count (as
        :func:`~isoapprox.losses.separation_report`).
    max_candidates : int
        Most distances held in memory by the quantile selection.
    merge_margin_ratio, merge_diameter_ratio : float
        The merge height of :attr:`CollapseStatistics.merging`:
        ``max(merge_margin_ratio x margin, merge_diameter_ratio x diameter)``.

    Returns
    -------
    CollapseStatistics
        Accepted by :func:`~isoapprox.diagnostics.detect_signatures` at
        either level, with the same answers.

    Raises
    ------
    NoTripletError
        If the labels admit no triplet.

    Notes
    -----
    ``O(N^2 n)`` time and ``O(N n)`` memory: one anchor sweep, two or three
    half sweeps over the pairs, two SVDs and one minimum enclosing ball per
    class.  With ``quick``: the anchor sweep
    (:func:`isoapprox.kernels.stats.anchor_pass`), one half sweep for the
    merged classes (single linkage at the merge height), one SVD of the
    centred embedding on one BLAS thread and the leave-one-out retrieval
    (one more pass over the pairs, which the partial-collapse and
    compression signatures read; a sample of queries above
    :data:`~isoapprox.metrics.RETRIEVAL_MAX_QUERIES`).

    Examples
    --------
    >>> q = collapse_statistics([[0.0], [1.0], [5.0], [7.0]], [0, 0, 1, 1], margin=1.0,
    ...                         quick=True)
    >>> q.diameter, q.batch_hard_max, q.class_diameter.tolist(), q.class_gap.tolist()
    (7.0, 0.0, [1.0, 2.0], [4.0, 4.0])
    """
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    quick = check_bool(quick, "quick")
    margin = check_margin(margin)
    require_triplets(codes)
    levels = check_quantiles(quantiles).reshape(-1)
    uniformity_t = check_positive(uniformity_t, "uniformity_t")
    alignment_alpha = check_positive(alignment_alpha, "alignment_alpha")
    atol = check_nonnegative(atol, "atol")
    max_candidates = check_int(max_candidates, "max_candidates", minimum=1)
    merge_margin_ratio = check_nonnegative(merge_margin_ratio, "merge_margin_ratio")
    merge_diameter_ratio = check_nonnegative(merge_diameter_ratio, "merge_diameter_ratio")
    return compute_collapse_statistics(
        X,
        codes,
        classes,
        quick=quick,
        margin=margin,
        levels=levels,
        uniformity_t=uniformity_t,
        alignment_alpha=alignment_alpha,
        atol=atol,
        max_candidates=max_candidates,
        merge_margin_ratio=merge_margin_ratio,
        merge_diameter_ratio=merge_diameter_ratio,
    )


def compute_collapse_statistics(
    X: np.ndarray,
    codes: np.ndarray,
    classes: np.ndarray,
    *,
    quick: bool = False,
    margin: float,
    levels: np.ndarray | None = None,
    uniformity_t: float = 2.0,
    alignment_alpha: float = 2.0,
    atol: float = _ATOL,
    max_candidates: int = MAX_CANDIDATES,
    merge_margin_ratio: float = MERGE_MARGIN_RATIO,
    merge_diameter_ratio: float = MERGE_DIAMETER_RATIO,
) -> CollapseStatistics:
    """:func:`collapse_statistics` of input validated as it validates it (``codes`` dense;
    ``levels`` needed unless ``quick``)."""
    N, n = X.shape
    level = logging.INFO if N * N * n > _LOG_INFO_WORK else logging.DEBUG
    if not quick:
        logger.log(level, "collapse statistics of %d points in R^%d: anchor sweep", N, n)
    Xs, XT, s, hp, hn, pi, ni, far, far_idx, near, active, viol, hinge = _anchor_sweep(
        X, codes, margin, atol
    )
    hi = float(np.max(far))
    lo = float(np.min(near))
    # the pow2 factor s keeps margin * s and the diameter hi in range, so h * s too
    h = merge_height(margin, hi / s, margin_ratio=merge_margin_ratio,
                     diameter_ratio=merge_diameter_ratio)
    full: dict[str, Any] = dict.fromkeys(
        ("distances", "diameter_pair", "meb_radius", "meb_lower", "rankme",
         "std_l2_normalized", "uniformity", "alignment", "n_zero_rows", "uniformity_t",
         "alignment_alpha")
    )
    labels = None
    if quick:
        diameter, min_distance = hi / s, lo / s
    else:
        logger.log(level, "pair-distance histogram, merged classes and quantile selection")
        # diameter: the first anchor reaching the largest row maximum, with its
        # first partner, is the lexicographically first diametral pair
        a = int(np.argmax(far == hi))
        full["diameter_pair"] = (min(a, int(far_idx[a])), max(a, int(far_idx[a])))
        # single linkage at h rides along the histogram's sweep
        distances, labels = summary_and_components(
            Xs, XT, s, levels, lo, hi, None, n_bins=N_BINS, max_candidates=max_candidates,
            height=h * s,
        )
        full["distances"] = distances
        diameter, min_distance = distances.max, distances.min
    merging = compute_merging(
        X, Xs, XT, s, codes, classes, hp, hn, ni, height=h,
        margin_ratio=merge_margin_ratio, diameter_ratio=merge_diameter_ratio, labels=labels,
    )
    del Xs, XT  # the remaining sweeps work on the normalised rows

    losses = _anchor_losses(hp, hn, pi, ni, s, margin)
    w = losses.pop("worst")
    rms, centroid = _norms(X)
    if not quick:
        ball = min_enclosing_ball(X, rtol=BALL_RTOL)
        logger.log(level, "uniformity, alignment, spectra and class balls")
        full.update(_normalised(X, codes, uniformity_t, alignment_alpha),
                    meb_radius=ball.radius, meb_lower=ball.lower,
                    rankme=_entropy_rank(_singular_values(X, False), RANKME_EPS))

    return CollapseStatistics(
        n_points=N,
        dim=n,
        n_classes=len(classes),
        margin=margin,
        rms_norm=rms,
        centroid_norm=centroid,
        effective_rank=_entropy_rank(_singular_values(X, True)),
        n_triplets=_n_triplets(codes),
        n_active=int(np.sum(active)),
        n_violated=int(np.sum(viol)),
        triplet_sum=float(np.sum(hinge)) / s,
        worst_triplet=(w, int(pi[w]), int(ni[w])),
        atol=atol,
        classes=_class_spread(X, codes, classes, hp / s, hn / s, ni, viol, balls=not quick),
        merging=merging,
        retrieval=compute_retrieval(X, codes, max_queries=RETRIEVAL_MAX_QUERIES, rng=0),
        diameter=diameter,
        min_distance=min_distance,
        quick=quick,
        **losses,
        **full,
    )


def _normalised(X: np.ndarray, codes: np.ndarray, uniformity_t: float,
                alignment_alpha: float) -> dict[str, Any]:
    """The statistics of the L2-normalised rows (zero rows left out)."""
    Z, zero = _unit_rows(X)
    if Z.shape[0] >= 2:
        std_l2 = float(np.mean(np.std(Z, axis=0, ddof=1)))
        unif = _uniformity_unit(Z, uniformity_t)
    else:
        std_l2 = unif = None
    align, n_pos = _alignment_unit(Z, codes[~zero], alignment_alpha) if Z.shape[0] else (0.0, 0)
    return {"std_l2_normalized": std_l2, "uniformity": unif, "alignment": align if n_pos else None,
            "n_zero_rows": int(zero.sum()), "uniformity_t": uniformity_t,
            "alignment_alpha": alignment_alpha}


def quick_statistics(E: ArrayLike, y: ArrayLike, *, margin: float = 0.0,
                     atol: float = _ATOL, merge_margin_ratio: float = MERGE_MARGIN_RATIO,
                     merge_diameter_ratio: float = MERGE_DIAMETER_RATIO) -> CollapseStatistics:
    """``collapse_statistics(E, y, quick=True, ...)``: the former name, kept for its callers.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels admitting a triplet.
    margin : float, default 0.0
        ``alpha >= 0`` for the losses and the active triplets.
    atol : float, default 1e-9
        Tolerance of the violated-triplet count.
    merge_margin_ratio, merge_diameter_ratio : float
        The merge height of ``merging``, as in :func:`collapse_statistics`.

    Returns
    -------
    CollapseStatistics
        With ``quick=True``.
    """
    return collapse_statistics(E, y, quick=True, margin=margin, atol=atol,
                               merge_margin_ratio=merge_margin_ratio,
                               merge_diameter_ratio=merge_diameter_ratio)
