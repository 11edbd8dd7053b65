"""Collapse diagnosis of an embedding: statistics, signatures and a report.

Notation
--------
``E`` has shape ``(N, n)`` (row ``k`` is ``f(x_k)``), ``y`` holds ``N``
class labels of ``P`` classes, ``d(i, j) = ||E_i - E_j||`` (Euclidean, by
direct differences in float64) and ``alpha = margin >= 0``.  The ``m =
N (N - 1) / 2`` *pair distances* are ``d(i, j)`` over unordered pairs
``i < j`` (duplicate points give distance-0 pairs), as in
:func:`scipy.spatial.distance.pdist`.

Statistics
----------
Every statistic is exact (no sampling) and none builds the ``N x N``
matrix; the sweeps over pairs live in :mod:`isoapprox._kernels_stats`.

Pair distances
    Diameter ``max d(i, j)``, least pair distance, mean, and quantiles.
    **Quantile convention:** numpy's default (``method="linear"``,
    Hyndman & Fan type 7) over the ``m`` pair distances: with the sorted
    values ``v_0 <= ... <= v_{m-1}``, ``h = (m - 1) q``, the quantile is
    ``v_{floor h} + (h - floor h) (v_{floor h + 1} - v_{floor h})``, with
    numpy's own interpolation arithmetic, so the result equals
    ``np.quantile(pdist(E), q)`` computed on the same distances.  The
    order statistics are found by a histogram sweep over ``[min, max]``
    (``N_BINS`` bins, each with its exact least and largest value), then a
    sweep that collects only the values in the bins holding the wanted ranks
    (at most ``MAX_CANDIDATES`` of them; a bin with more is refined by
    another histogram sweep restricted to it).  A rank that is the first or
    last of its bin, or a bin whose values are all equal (ties, duplicate
    points), needs no collection.
Minimum enclosing ball radius ``R(E)``
    :func:`isoapprox.geometry.min_enclosing_ball` (certified bracket);
    ``R(E)`` is the pointwise Hausdorff-like distance to the best collapsed
    embedding, ``diam(E)`` the isometric error to any collapsed one.
Per-class spread against separation (:class:`ClassSpread`)
    For each class: its minimum-enclosing-ball radius and its diameter
    (largest intra-class distance, 0 for a singleton), against the distance
    from its centroid to the nearest other class centroid and the least
    distance from one of its points to a point of another class.
Effective rank (Roy & Vetterli 2007)
    Of the *centred* embeddings ``E - mean(E)``: with singular values
    ``s_1 >= ... >= s_r`` and ``p_k = s_k / sum_l s_l``,
    ``erank = exp(-sum_k p_k log p_k)`` (``0 log 0 = 0``).  So
    ``1 <= erank <= rank``.  This is the definition of O. Roy and
    M. Vetterli, "The effective rank: a measure of effective
    dimensionality", EUSIPCO 2007, pp. 606-610, on the *plain* singular
    values.  Some implementations use the squared singular values (the
    eigenvalues of the covariance) or skip the centring; ``squared=True``
    gives the squared variant, which is never larger.  We define the
    effective rank of an all-zero centred matrix (every point equal) as 0.
RankMe (Garrido et al., ICML 2023)
    ``exp(-sum_k p_k log p_k)`` with ``p_k = s_k / sum_l s_l + eps`` over
    the singular values of the *uncentred* embeddings, ``eps = 1e-7`` as in
    the paper (Q. Garrido, R. Balestriero, L. Najman, Y. LeCun, "RankMe:
    assessing the downstream performance of pretrained self-supervised
    representations by their rank", ICML 2023).  0 for an all-zero matrix.
Std of L2-normalised embeddings (SimSiam; lightly's ``std_of_l2_normalized``)
    ``mean_k std_i(z_ik)`` with ``z_i = E_i / ||E_i||`` and the sample
    standard deviation (``ddof=1``, as ``torch.std``).  0 when collapsed,
    about ``1 / sqrt(n)`` when the directions are isotropic.
Alignment and uniformity (Wang & Isola, ICML 2020)
    On the L2-normalised embeddings ``z``: alignment ``= mean ||z_i -
    z_j||^a`` over the positive pairs (``i < j``, same class), ``a = 2`` by
    default; uniformity ``= log mean_{i<j} exp(-t ||z_i - z_j||^2)``,
    ``t = 2`` by default.  Uniformity is summed exactly over all pairs with
    a running log-sum-exp (every term is scaled by the largest one, so
    nothing underflows, whatever ``t``).
Fraction of active triplets
    The share of triplets ``(a, p, m)`` with a strictly positive hinge
    term, ``d(a, m) < d(a, p) + alpha``; computed per anchor by sorting
    and binary search (``O(N^2 n + N^2 log K)``), never by enumeration.

Zero vectors
    The L2-normalised statistics (std, alignment, uniformity) are
    undefined for a zero row.  The single-statistic functions raise
    :class:`~isoapprox.exceptions.InvalidInputError` naming the row;
    :func:`collapse_statistics` leaves such rows out of those three
    statistics only and reports how many it left out.

Signatures
----------
:func:`detect_signatures` recognises, from the statistics and optionally a
loss value reported by a training run, the known collapse signatures (each
threshold a module constant, overridable through
:class:`SignatureThresholds`):

``stuck_at_margin``
    batch-hard loss within ``STUCK_MARGIN_RTOL`` of the margin and diameter
    at most ``STUCK_DIAMETER_RATIO * margin``: hardest positive and hardest
    negative both at distance ~0, so every anchor contributes ``alpha``.
``stuck_at_ln2``
    soft-margin batch-hard loss ``softplus(hp - hn)`` within
    ``SOFT_MARGIN_ATOL`` of ``ln 2 = softplus(0)`` and diameter at most
    ``SOFT_MARGIN_DIAMETER``.
``all_distances_small`` (full collapse)
    diameter at most ``FULL_COLLAPSE_RATIO`` times the reference scale
    ``max(rms norm of the rows, margin)``.
``class_collapse``
    not fully collapsed, and the largest class diameter is at most
    ``CLASS_COLLAPSE_RATIO`` times the least distance between two classes.
``dimensional_collapse``
    not fully collapsed, and the effective rank is below
    ``DIMENSIONAL_COLLAPSE_RATIO * min(n, N - 1, P - 1)``: ``P`` classes
    need ``P - 1`` dimensions to sit at equal mutual distances.

Report
------
:func:`diagnose` runs a list of *sections*, each a function
``section(batch, options) -> dict`` of a :class:`Batch` (the validated
``E`` and ``y``, with the shared statistics cached) and the
:class:`DiagnoseOptions`; a section may add plain-language ``"findings"``
that the verdict quotes.  :data:`DEFAULT_SECTIONS` lists them; further
sections (for instance the loss against the distance to the ideal set)
plug in by passing ``sections=DEFAULT_SECTIONS + ((name, fn),)``.
:func:`diagnose_batches` evaluates random ``P x K`` batches, as training
sees them, and summarises over batches (extra per-batch sections plug in
the same way; their numbers are summarised over the batches).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numba
import numpy as np

from ._blas import numba_threads, single_threaded_blas
from ._scaling import pow2_scale
from ._typing import ArrayLike, FloatArray, IntArray, RNGLike
from ._validation import (
    as_labels,
    as_points,
    as_rng,
    check_int,
    check_margin,
    check_nonnegative,
    check_positive,
    class_counts,
    require_triplets,
)
from .exceptions import InvalidInputError
from .geometry import farthest_pair, min_enclosing_ball
from .kernels import stats as KS
from .losses import batch_hard_loss, separation_report, triplet_loss
from .metrics import isometric_error

__all__ = [
    "CLASS_COLLAPSE_RATIO",
    "DEFAULT_QUANTILES",
    "DEFAULT_SECTIONS",
    "DIMENSIONAL_COLLAPSE_RATIO",
    "FULL_COLLAPSE_RATIO",
    "LN2",
    "MAX_CANDIDATES",
    "MAX_TRIPLET_TERMS",
    "N_BINS",
    "RANKME_EPS",
    "SIGNATURE_NAMES",
    "SOFT_MARGIN_ATOL",
    "SOFT_MARGIN_DIAMETER",
    "STUCK_DIAMETER_RATIO",
    "STUCK_MARGIN_RTOL",
    "Batch",
    "ClassSpread",
    "CollapseStatistics",
    "DiagnoseOptions",
    "DistanceSummary",
    "Signature",
    "SignatureThresholds",
    "active_triplet_fraction",
    "alignment",
    "basic_report",
    "class_spread",
    "collapse_statistics",
    "detect_signatures",
    "diagnose",
    "diagnose_batches",
    "distance_quantiles",
    "distance_summary",
    "effective_rank",
    "rankme",
    "std_of_l2_normalized",
    "uniformity",
    "verdict",
]

# --- constants --------------------------------------------------------------

#: quantile levels of the pair distances reported by default
DEFAULT_QUANTILES: tuple[float, ...] = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99)
#: bins of the histogram sweep that locates the order statistics (a multiple of 64)
N_BINS = 2**15
#: most pair distances held in memory at once by the selection sweep (8 bytes each)
MAX_CANDIDATES = 2**23
#: epsilon added to the normalised singular values by RankMe (Garrido et al. 2023)
RANKME_EPS = 1e-7
#: the full triplet loss sorts every anchor's negatives and adds one term per
#: active triplet; the report computes it only when N^2 + (active triplets) is
#: at most this
MAX_TRIPLET_TERMS = 500_000_000
#: ln 2 = softplus(0), the soft-margin batch-hard loss of a collapsed embedding
LN2 = math.log(2.0)

#: ``stuck_at_margin``: |loss - margin| <= STUCK_MARGIN_RTOL * margin ...
STUCK_MARGIN_RTOL = 0.02
#: ... and diameter <= STUCK_DIAMETER_RATIO * margin (then every anchor's term
#: lies within this fraction of the margin, so the loss is the margin)
STUCK_DIAMETER_RATIO = 0.1
#: ``stuck_at_ln2``: |soft-margin loss - ln 2| <= SOFT_MARGIN_ATOL ...
SOFT_MARGIN_ATOL = 0.005
#: ... and diameter <= SOFT_MARGIN_DIAMETER (absolute: softplus(x) moves from
#: ln 2 by at most |x| / 2, and |hp - hn| <= diameter)
SOFT_MARGIN_DIAMETER = 0.1
#: ``all_distances_small``: diameter <= FULL_COLLAPSE_RATIO * max(rms norm, margin)
FULL_COLLAPSE_RATIO = 1e-2
#: ``class_collapse``: largest class diameter <= CLASS_COLLAPSE_RATIO * least
#: distance between two classes
CLASS_COLLAPSE_RATIO = 0.05
#: ``dimensional_collapse``: effective rank < DIMENSIONAL_COLLAPSE_RATIO * min(n, N-1, P-1)
DIMENSIONAL_COLLAPSE_RATIO = 0.5

#: signature names, in the order the verdict ranks them
SIGNATURE_NAMES = (
    "all_distances_small",
    "stuck_at_margin",
    "stuck_at_ln2",
    "class_collapse",
    "dimensional_collapse",
)

_COARSE_BINS = 64

logger = logging.getLogger(__name__)
#: above this many pair-coordinate operations (N^2 n) the sweeps are logged at
#: INFO (they take minutes), else at DEBUG
_LOG_INFO_WORK = 10**11


# --- helpers ----------------------------------------------------------------


#: classes up to this size get their minimum enclosing ball with one numba
#: thread: waking a thread pool costs far more than the work on a few points
_SERIAL_MEB_POINTS = 4096


@contextlib.contextmanager
def _serial_numba(active: bool = True):
    """Run numba's parallel kernels on one thread inside the block (results unchanged)."""
    with numba_threads(1 if active else None):
        yield


def _n_chunks(units: int) -> int:
    """Parallel work split (results never depend on it)."""
    return max(1, min(int(units), 2 * numba.get_num_threads()))


def _n_units(N: int) -> int:
    nb = (N + KS.RB - 1) // KS.RB
    return (nb + 1) // 2


def _scaled(X: np.ndarray, *extra: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Exactly rescaled copy (power of two), its transpose, and the factor."""
    s = pow2_scale(X, np.asarray(extra, dtype=np.float64))
    Xs = X * s if s != 1.0 else X
    return Xs, np.ascontiguousarray(Xs.T), s


def _check_quantiles(q: Any) -> np.ndarray:
    try:
        arr = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`quantiles` must be real numbers in [0, 1]; got {q!r}") from None
    if arr.ndim > 1:
        raise InvalidInputError(
            f"`quantiles` must be a number or a 1-D sequence; got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise InvalidInputError(f"`quantiles` must lie in [0, 1]; got {arr.tolist()}")
    return arr


def _linear_quantile_ranks(q: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's ``method="linear"``: (previous rank, next rank, gamma) for each level."""
    virtual = (m - 1) * q
    above = virtual >= m - 1
    prev = np.where(above, m - 1, np.floor(virtual)).astype(np.int64)
    nxt = np.where(above, m - 1, prev + 1).astype(np.int64)
    gamma = virtual - prev
    return prev, nxt, gamma


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's interpolation arithmetic (``numpy.lib._function_base_impl._lerp``)."""
    diff = b - a
    out = a + diff * t
    return np.where(t >= 0.5, b - diff * (1 - t), out)


class _PairSweeps:
    """Exact order statistics of the pair distances of one (rescaled) point set."""

    def __init__(self, Xs: np.ndarray, XT: np.ndarray, *, n_bins: int, max_candidates: int):
        self.Xs = Xs
        self.XT = XT
        self.N = Xs.shape[0]
        self.m = self.N * (self.N - 1) // 2
        self.n_bins = n_bins
        self.max_candidates = max_candidates
        self.n_chunks = _n_chunks(_n_units(self.N))

    def extremes(self) -> tuple[float, float, float]:
        """(least, largest, sum) of the pair distances: one sweep with a single bin."""
        counts, mins, maxs, sums = KS.pair_histogram(
            self.Xs, self.XT, 0.0, np.inf, 0.0, 1, self.n_chunks
        )
        return float(mins[0]), float(maxs[0]), math.fsum(sums)

    def _histogram(self, lo: float, hi: float):
        scale = self.n_bins / (hi - lo)
        if not math.isfinite(scale):  # pragma: no cover - excluded by the pow2 rescaling
            raise RuntimeError(f"histogram range [{lo!r}, {hi!r}] too narrow to bin")
        counts, mins, maxs, sums = KS.pair_histogram(
            self.Xs, self.XT, lo, hi, scale, self.n_bins, self.n_chunks
        )
        return scale, counts, mins, maxs, sums

    def select(self, ranks: Iterable[int], lo: float, hi: float) -> tuple[dict[int, float], Any]:
        """Values of the given 0-based ranks; ``lo``/``hi`` are the least/largest distance.

        Returns the values and the level-0 histogram ``(total counts, block sums)``.
        """
        out: dict[int, float] = {}
        ranks = sorted(set(int(r) for r in ranks))
        if lo == hi:
            return {r: lo for r in ranks}, None
        level0 = self._select(ranks, lo, hi, 0, out, 0)
        return out, level0

    def _select(self, ranks, lo, hi, base, out, depth):
        if depth > 64:  # pragma: no cover - each level strictly shrinks the bin
            raise RuntimeError("order-statistic selection did not converge")
        scale, counts, mins, maxs, sums = self._histogram(lo, hi)
        total = counts.sum(axis=0)
        cum = np.cumsum(total)
        pending: dict[int, list[int]] = {}
        for r in ranks:
            rr = r - base
            k = int(np.searchsorted(cum, rr, side="right"))
            first = int(cum[k] - total[k])
            if rr == first:
                out[r] = float(mins[k])
            elif rr == int(cum[k]) - 1 or mins[k] == maxs[k]:
                out[r] = float(maxs[k])
            else:
                pending.setdefault(k, []).append(r)
        if pending:
            chosen: list[int] = []
            budget = 0
            for k in sorted(pending, key=lambda b: int(total[b])):
                if budget + int(total[k]) <= self.max_candidates:
                    chosen.append(k)
                    budget += int(total[k])
            if chosen:
                chosen.sort()
                mask = np.zeros(self.n_bins, dtype=np.bool_)
                mask[chosen] = True
                per_chunk = counts[:, mask].sum(axis=1)
                offsets = np.concatenate(([0], np.cumsum(per_chunk))).astype(np.int64)
                vals = KS.pair_collect(
                    self.Xs,
                    self.XT,
                    lo,
                    hi,
                    scale,
                    self.n_bins,
                    mask,
                    offsets,
                    int(offsets[-1]),
                )
                vals.sort()
                start = 0
                for k in chosen:
                    first = int(cum[k] - total[k])
                    for r in pending[k]:
                        out[r] = float(vals[start + (r - base - first)])
                    start += int(total[k])
            for k in sorted(set(pending) - set(chosen)):
                first = int(cum[k] - total[k])
                self._select(
                    pending[k], float(mins[k]), float(maxs[k]), base + first, out, depth + 1
                )
        return total, sums


def _quantiles_from(q: np.ndarray, m: int, values: Mapping[int, float]) -> np.ndarray:
    prev, nxt, gamma = _linear_quantile_ranks(q, m)
    a = np.array([values[int(r)] for r in prev.ravel()], dtype=np.float64).reshape(prev.shape)
    b = np.array([values[int(r)] for r in nxt.ravel()], dtype=np.float64).reshape(nxt.shape)
    return _lerp(a, b, gamma)


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
    s = pow2_scale(X)
    Y = X * s if s != 1.0 else X
    if center:
        Y = Y - Y.mean(axis=0)
    # a threaded BLAS next to numba's thread pool oversubscribes small
    # machines; a tall (N, n) SVD is fast on one thread
    with single_threaded_blas():
        return np.linalg.svd(Y, compute_uv=False)


def _softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` without overflow."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


# --- single statistics ------------------------------------------------------


@dataclass(frozen=True)
class DistanceSummary:
    """Exact summary of the ``m = N (N - 1) / 2`` pair distances.

    Attributes
    ----------
    n_pairs : int
        ``m``.
    min, max, mean : float
        Least pair distance, diameter and mean pair distance.
    levels : tuple of float
        Quantile levels ``q``.
    quantiles : tuple of float
        The quantiles (numpy's ``"linear"`` convention, see the module
        docstring).
    histogram_counts : tuple of int
        Counts of the pair distances in ``len(histogram_edges) - 1`` equal
        bins over ``[min, max]`` (the last bin is closed).
    histogram_edges : tuple of float
        The bin edges.
    """

    n_pairs: int
    min: float
    max: float
    mean: float
    levels: tuple[float, ...]
    quantiles: tuple[float, ...]
    histogram_counts: tuple[int, ...]
    histogram_edges: tuple[float, ...]

    @property
    def median(self) -> float:
        """The 0.5 quantile (computed if 0.5 is not among ``levels``)."""
        for q, v in zip(self.levels, self.quantiles, strict=True):
            if q == 0.5:
                return v
        raise InvalidInputError(
            f"the median was not computed: 0.5 is not among the levels {list(self.levels)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        return {
            "n_pairs": self.n_pairs,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "quantiles": {f"{q:g}": v for q, v in zip(self.levels, self.quantiles, strict=True)},
            "histogram_counts": list(self.histogram_counts),
            "histogram_edges": list(self.histogram_edges),
        }


def _coarse_histogram(
    level0, lo: float, hi: float, m: int
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    if level0 is None or lo == hi:
        return (m,), (lo, hi)
    total = level0[0]
    coarse = total.reshape(_COARSE_BINS, -1).sum(axis=1)
    edges = lo + (hi - lo) * np.arange(_COARSE_BINS + 1) / _COARSE_BINS
    edges[-1] = hi
    return tuple(int(c) for c in coarse), tuple(float(e) for e in edges)


def _distance_summary(Xs, XT, s, levels, lo, hi, total_sum, *, n_bins, max_candidates):
    """Summary from known extremes (rescaled units); values returned in input units."""
    sweeps = _PairSweeps(Xs, XT, n_bins=n_bins, max_candidates=max_candidates)
    m = sweeps.m
    prev, nxt, _ = _linear_quantile_ranks(levels, m)
    values, level0 = sweeps.select(np.concatenate([prev.ravel(), nxt.ravel()]), lo, hi)
    if level0 is not None:
        total_sum = math.fsum(level0[1])
    elif total_sum is None:
        total_sum = m * lo
    q = _quantiles_from(levels, m, values) / s
    counts, edges = _coarse_histogram(level0, lo / s, hi / s, m)
    return DistanceSummary(
        n_pairs=m,
        min=float(lo / s),
        max=float(hi / s),
        mean=float(total_sum / m / s),
        levels=tuple(float(v) for v in np.atleast_1d(levels)),
        quantiles=tuple(float(v) for v in np.atleast_1d(q)),
        histogram_counts=counts,
        histogram_edges=edges,
    )


def distance_summary(
    E: ArrayLike,
    *,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    n_bins: int = N_BINS,
    max_candidates: int = MAX_CANDIDATES,
) -> DistanceSummary:
    """Least, largest, mean and quantiles of the pair distances, exactly.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Points, ``N >= 2``.
    quantiles : sequence of float in [0, 1]
        Quantile levels (numpy's ``"linear"`` convention over the
        ``N (N - 1) / 2`` pair distances ``i < j``).
    n_bins : int, default ``N_BINS``
        Bins of the histogram sweep (a multiple of 64).
    max_candidates : int, default ``MAX_CANDIDATES``
        Most distances held in memory at once.

    Returns
    -------
    DistanceSummary

    Notes
    -----
    Two or three sweeps over the pairs, ``O(N^2 n)`` time, no distance
    matrix: memory ``O(N + n_bins * threads)`` plus the candidates in the
    bins of the wanted ranks (at most ``max_candidates``).

    Examples
    --------
    >>> s = distance_summary([[0.0], [1.0], [3.0]], quantiles=(0.5,))
    >>> s.min, s.max, s.mean, s.quantiles
    (1.0, 3.0, 2.0, (2.0,))
    """
    X = as_points(E, "E", min_points=2)
    levels = _check_quantiles(quantiles).reshape(-1)
    n_bins = check_int(n_bins, "n_bins", minimum=_COARSE_BINS)
    if n_bins % _COARSE_BINS:
        raise InvalidInputError(f"`n_bins` must be a multiple of {_COARSE_BINS}; got {n_bins}")
    max_candidates = check_int(max_candidates, "max_candidates", minimum=1)
    Xs, XT, s = _scaled(X)
    sweeps = _PairSweeps(Xs, XT, n_bins=n_bins, max_candidates=max_candidates)
    lo, hi, total = sweeps.extremes()
    return _distance_summary(
        Xs, XT, s, levels, lo, hi, total, n_bins=n_bins, max_candidates=max_candidates
    )


def distance_quantiles(
    E: ArrayLike, q: float | Sequence[float], *, max_candidates: int = MAX_CANDIDATES
) -> float | FloatArray:
    """Exact quantiles of the pair distances, as ``np.quantile(pdist(E), q)``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Points, ``N >= 2``.
    q : float or sequence of float in [0, 1]
        Quantile level(s); numpy's default ``"linear"`` convention over the
        ``N (N - 1) / 2`` distances of the pairs ``i < j``.
    max_candidates : int, default ``MAX_CANDIDATES``
        Most distances held in memory at once.

    Returns
    -------
    float or ndarray
        A float for a scalar ``q``, else an array of ``q``'s shape.

    Examples
    --------
    >>> distance_quantiles([[0.0], [1.0], [3.0], [3.0]], 0.5)
    2.0
    """
    levels = _check_quantiles(q)
    out = np.array(
        distance_summary(E, quantiles=levels.reshape(-1), max_candidates=max_candidates).quantiles
    )
    if levels.ndim == 0:
        return float(out[0])
    return out.reshape(levels.shape)


def effective_rank(E: ArrayLike, *, center: bool = True, squared: bool = False) -> float:
    """Effective rank (Roy & Vetterli 2007) of the embeddings.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings, ``N >= 1``.
    center : bool, default True
        Subtract the mean row first (the default: spread, not offset).
    squared : bool, default False
        Use the squared singular values (covariance eigenvalues), a variant
        found in some implementations; the default is Roy & Vetterli's
        plain singular values.

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
        ``mean_k std_i(z_ik)``, ``z_i = E_i / ||E_i||``, sample std
        (``ddof=1``, as lightly's ``std_of_l2_normalized`` with
        ``torch.std``).  0 for a collapsed embedding; about ``1/sqrt(n)``
        for isotropic directions.

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
    Ms, Ss = KS.uniformity_blocks(Z, np.ascontiguousarray(Z.T), t, _n_chunks(_n_units(N)))
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

    Notes
    -----
    One fused sweep over the pairs with a running log-sum-exp: exact up to
    rounding for any ``t``, no distance matrix.

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
    """Per-class spread against between-class separation.

    All arrays have one entry per class, in the order of ``classes``.

    Attributes
    ----------
    classes : ndarray of shape (P,)
        The class labels (sorted).
    sizes : ndarray of int
        Points per class.
    meb_radius : ndarray of float
        Radius of the class's minimum enclosing ball (its pointwise
        Hausdorff-like distance to the class collapsed to its best point).
    diameter : ndarray of float
        Largest intra-class distance (0 for a singleton).
    nearest_centroid : ndarray of float
        Distance from the class centroid to the nearest other centroid.
    nearest_centroid_class : ndarray
        Label of that nearest other class.
    min_inter : ndarray of float
        Least distance from a point of the class to a point of another class.
    """

    classes: np.ndarray
    sizes: IntArray
    meb_radius: FloatArray
    diameter: FloatArray
    nearest_centroid: FloatArray
    nearest_centroid_class: np.ndarray
    min_inter: FloatArray

    @property
    def max_class_diameter(self) -> float:
        """Largest class diameter."""
        return float(np.max(self.diameter))

    @property
    def min_class_gap(self) -> float:
        """Least distance between points of two different classes."""
        return float(np.min(self.min_inter))

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        return {
            "classes": self.classes.tolist(),
            "sizes": self.sizes.tolist(),
            "meb_radius": self.meb_radius.tolist(),
            "diameter": self.diameter.tolist(),
            "nearest_centroid": self.nearest_centroid.tolist(),
            "nearest_centroid_class": self.nearest_centroid_class.tolist(),
            "min_inter": self.min_inter.tolist(),
            "max_class_diameter": self.max_class_diameter,
            "min_class_gap": self.min_class_gap,
        }


def _class_spread(X: np.ndarray, codes: np.ndarray, classes: np.ndarray, hp, hn) -> ClassSpread:
    """From the anchor sweep's hardest positives/negatives (input units)."""
    P = len(classes)
    sizes = class_counts(codes)
    diam = np.zeros(P)
    np.maximum.at(diam, codes, np.where(np.isfinite(hp), hp, 0.0))
    min_inter = np.full(P, np.inf)
    np.minimum.at(min_inter, codes, hn)
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    meb = np.empty(P)
    centroids = np.empty((P, X.shape[1]))
    for c in range(P):
        pts = X[order[starts[c] : starts[c] + sizes[c]]]
        with _serial_numba(len(pts) <= _SERIAL_MEB_POINTS):
            meb[c] = min_enclosing_ball(pts).radius
        centroids[c] = pts.mean(axis=0)
    if P >= 2:
        Cs, CT, s = _scaled(centroids)
        best, arg = KS.nearest_other(Cs, CT, _n_chunks((P + KS.RB - 1) // KS.RB))
        near, near_cls = best / s, classes[arg]
    else:
        near, near_cls = np.full(P, np.inf), classes[:0]
    return ClassSpread(
        classes=classes,
        sizes=sizes,
        meb_radius=meb,
        diameter=diam,
        nearest_centroid=near,
        nearest_centroid_class=near_cls,
        min_inter=min_inter,
    )


def _anchor_sweep(X: np.ndarray, codes: np.ndarray, margin: float, atol: float):
    """Anchor sweep in input units: see :func:`isoapprox._kernels_stats.anchor_pass`."""
    Xs, XT, s = _scaled(X, margin, atol)
    nb = (X.shape[0] + KS.RB - 1) // KS.RB
    members = np.argsort(codes, kind="stable").astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(class_counts(codes)))).astype(np.int64)
    hp, hn, pi, ni, far, far_idx, near, active, viol = KS.anchor_pass(
        Xs, XT, codes, members, starts, margin * s, atol * s, _n_chunks(nb)
    )
    return Xs, XT, s, hp, hn, pi, ni, far, far_idx, near, active, viol


def class_spread(E: ArrayLike, y: ArrayLike) -> ClassSpread:
    """Per-class spread (ball radius, diameter) against between-class distances.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels, at least two classes.

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
    if len(classes) < 2:
        raise InvalidInputError(
            f"`y` must contain at least two classes to compare classes; got one class "
            f"({X.shape[0]} point(s))"
        )
    _, _, s, hp, hn, *_ = _anchor_sweep(X, codes, 0.0, 0.0)
    return _class_spread(X, codes, classes, hp / s, hn / s)


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
    *_, active, _ = _anchor_sweep(X, codes, margin, 0.0)
    return int(np.sum(active)) / _n_triplets(codes)


def _n_triplets(codes: np.ndarray) -> int:
    counts = class_counts(codes)
    per = counts[codes]
    return int(np.sum((per - 1) * (codes.shape[0] - per)))


# --- all statistics at once -------------------------------------------------


@dataclass(frozen=True)
class CollapseStatistics:
    """Every collapse statistic of one labelled embedding (see the module docstring).

    Attributes
    ----------
    n_points, dim, n_classes : int
        ``N``, ``n`` and ``P``.
    margin : float
        ``alpha`` used for the losses and the active triplets.
    distances : DistanceSummary
        Pair distances: min, diameter, mean, quantiles, histogram.
    diameter_pair : tuple of int
        ``(i, j)``, ``i < j``, attaining the diameter (the first such pair).
    meb_radius, meb_lower : float
        Minimum-enclosing-ball radius (upper end of its certified bracket)
        and the bracket's lower end.
    rms_norm : float
        ``sqrt(mean_k ||E_k||^2)``: the typical length of an embedding.
    centroid_norm : float
        ``||mean_k E_k||``: the common offset.
    effective_rank, rankme : float
        Roy-Vetterli effective rank of the centred rows; RankMe of the raw rows.
    std_l2_normalized, uniformity, alignment : float or None
        L2-normalised statistics over the non-zero rows (``None`` with fewer
        than two non-zero rows, or, for alignment, no positive pair).
    n_zero_rows : int
        Rows left out of the L2-normalised statistics.
    uniformity_t, alignment_alpha : float
        Their parameters.
    batch_hard_mean, batch_hard_max, batch_hard_sum : float
        Batch-hard loss ``[hp - hn + alpha]_+`` over the anchors with a
        positive and a negative.
    soft_margin_mean : float
        Soft-margin batch-hard loss ``mean softplus(hp - hn)`` (ln 2 at
        collapse).
    n_anchors : int
        Anchors with a positive and a negative.
    n_triplets, n_active, n_violated : int
        Triplets; those with ``d(a,m) < d(a,p) + alpha``; those with
        ``d(a,p) + alpha - d(a,m) > atol``.
    worst_slack : float
        ``min d(a,m) - d(a,p) - alpha`` over the triplets.
    worst_triplet : tuple of int
        ``(a, p, m)`` attaining it.
    atol : float
        Tolerance of ``n_violated``.
    classes : ClassSpread
        Per-class spread and separation.
    """

    n_points: int
    dim: int
    n_classes: int
    margin: float
    distances: DistanceSummary
    diameter_pair: tuple[int, int]
    meb_radius: float
    meb_lower: float
    rms_norm: float
    centroid_norm: float
    effective_rank: float
    rankme: float
    std_l2_normalized: float | None
    uniformity: float | None
    alignment: float | None
    n_zero_rows: int
    uniformity_t: float
    alignment_alpha: float
    batch_hard_mean: float
    batch_hard_max: float
    batch_hard_sum: float
    soft_margin_mean: float
    n_anchors: int
    n_triplets: int
    n_active: int
    n_violated: int
    worst_slack: float
    worst_triplet: tuple[int, int, int]
    atol: float
    classes: ClassSpread = field(repr=False)

    @property
    def diameter(self) -> float:
        """Largest pair distance."""
        return self.distances.max

    @property
    def active_fraction(self) -> float:
        """Share of triplets with a strictly positive hinge term."""
        return self.n_active / self.n_triplets

    @property
    def violated_fraction(self) -> float:
        """Share of triplets violated beyond ``atol``."""
        return self.n_violated / self.n_triplets

    def scalars(self) -> dict[str, float | int | None]:
        """The scalar statistics as a flat dictionary (used to summarise batches)."""
        out: dict[str, Any] = {
            "diameter": self.diameter,
            "min_distance": self.distances.min,
            "mean_distance": self.distances.mean,
        }
        for q, v in zip(self.distances.levels, self.distances.quantiles, strict=True):
            out[f"distance_q{q:g}"] = v
        out.update(
            meb_radius=self.meb_radius,
            rms_norm=self.rms_norm,
            centroid_norm=self.centroid_norm,
            effective_rank=self.effective_rank,
            rankme=self.rankme,
            std_l2_normalized=self.std_l2_normalized,
            uniformity=self.uniformity,
            alignment=self.alignment,
            batch_hard_mean=self.batch_hard_mean,
            batch_hard_max=self.batch_hard_max,
            soft_margin_mean=self.soft_margin_mean,
            active_fraction=self.active_fraction,
            violated_fraction=self.violated_fraction,
            worst_slack=self.worst_slack,
            max_class_diameter=self.classes.max_class_diameter,
            min_class_gap=self.classes.min_class_gap,
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["distances"] = self.distances.to_dict()
        out["classes"] = self.classes.to_dict()
        out["diameter_pair"] = list(self.diameter_pair)
        out["worst_triplet"] = list(self.worst_triplet)
        out["active_fraction"] = self.active_fraction
        out["violated_fraction"] = self.violated_fraction
        return out


def collapse_statistics(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    uniformity_t: float = 2.0,
    alignment_alpha: float = 2.0,
    atol: float = 1e-9,
    max_candidates: int = MAX_CANDIDATES,
) -> CollapseStatistics:
    """All collapse statistics of a labelled embedding, sharing the sweeps.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels admitting a triplet.
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

    Returns
    -------
    CollapseStatistics

    Raises
    ------
    NoTripletError
        If the labels admit no triplet.

    Notes
    -----
    One sweep over every anchor's row (losses, active and violated
    triplets, class diameters and gaps, diameter, least distance), one
    histogram sweep and usually one selection sweep over the pairs
    (quantiles, mean), one over the normalised pairs (uniformity), the
    positive pairs (alignment), two SVDs of ``(N, n)`` matrices and one
    minimum enclosing ball per class.  ``O(N^2 n)`` time, ``O(N n)``
    memory.
    """
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    margin = check_margin(margin)
    require_triplets(codes)
    levels = _check_quantiles(quantiles).reshape(-1)
    uniformity_t = check_positive(uniformity_t, "uniformity_t")
    alignment_alpha = check_positive(alignment_alpha, "alignment_alpha")
    atol = check_nonnegative(atol, "atol")
    max_candidates = check_int(max_candidates, "max_candidates", minimum=1)
    N, n = X.shape
    level = logging.INFO if N * N * n > _LOG_INFO_WORK else logging.DEBUG
    logger.log(level, "collapse statistics of %d points in R^%d: anchor sweep", N, n)
    Xs, XT, s, hp, hn, pi, ni, far, far_idx, near, active, viol = _anchor_sweep(
        X, codes, margin, atol
    )
    logger.log(level, "pair-distance histogram and quantile selection")
    # diameter: the first anchor reaching the largest row maximum, with its
    # first partner, is the lexicographically first diametral pair
    hi = float(np.max(far))
    a = int(np.argmax(far == hi))
    diam_pair = (min(a, int(far_idx[a])), max(a, int(far_idx[a])))
    lo = float(np.min(near))
    distances = _distance_summary(
        Xs, XT, s, levels, lo, hi, None, n_bins=N_BINS, max_candidates=max_candidates
    )
    del Xs, XT  # the remaining sweeps work on the normalised rows

    valid = (pi >= 0) & (ni >= 0)
    alpha_s = margin * s
    terms = np.maximum(hp[valid] - hn[valid] + alpha_s, 0.0)
    soft = _softplus((hp[valid] - hn[valid]) / s)
    slack = np.where(valid, hn - hp - alpha_s, np.inf)
    w = int(np.argmin(slack))

    ball = min_enclosing_ball(X)
    amax = float(np.max(np.abs(X)))
    if amax > 0.0:
        Y = X / amax
        rms = amax * math.sqrt(float(np.mean(np.einsum("ij,ij->i", Y, Y))))
        centroid = amax * float(np.linalg.norm(Y.mean(axis=0)))
    else:
        rms = centroid = 0.0

    logger.log(level, "uniformity, alignment, spectra and class balls")
    Z, zero = _unit_rows(X)
    n_zero = int(zero.sum())
    if Z.shape[0] >= 2:
        std_l2 = float(np.mean(np.std(Z, axis=0, ddof=1)))
        unif = _uniformity_unit(Z, uniformity_t)
    else:
        std_l2 = unif = None
    align, n_pos = _alignment_unit(Z, codes[~zero], alignment_alpha) if Z.shape[0] else (0.0, 0)
    align = align if n_pos else None

    return CollapseStatistics(
        n_points=N,
        dim=n,
        n_classes=len(classes),
        margin=margin,
        distances=distances,
        diameter_pair=diam_pair,
        meb_radius=ball.radius,
        meb_lower=ball.lower,
        rms_norm=rms,
        centroid_norm=centroid,
        effective_rank=_entropy_rank(_singular_values(X, True)),
        rankme=_entropy_rank(_singular_values(X, False), RANKME_EPS),
        std_l2_normalized=std_l2,
        uniformity=unif,
        alignment=align,
        n_zero_rows=n_zero,
        uniformity_t=uniformity_t,
        alignment_alpha=alignment_alpha,
        batch_hard_mean=float(np.sum(terms) / len(terms) / s),
        batch_hard_max=float(np.max(terms) / s),
        batch_hard_sum=float(np.sum(terms) / s),
        soft_margin_mean=float(np.mean(soft)),
        n_anchors=int(np.sum(valid)),
        n_triplets=_n_triplets(codes),
        n_active=int(np.sum(active)),
        n_violated=int(np.sum(viol)),
        worst_slack=float(slack[w] / s),
        worst_triplet=(w, int(pi[w]), int(ni[w])),
        atol=atol,
        classes=_class_spread(X, codes, classes, hp / s, hn / s),
    )


# --- signatures -------------------------------------------------------------


@dataclass(frozen=True)
class SignatureThresholds:
    """Thresholds of :func:`detect_signatures` (defaults: the module constants).

    Attributes
    ----------
    stuck_margin_rtol : float
        ``STUCK_MARGIN_RTOL``.
    stuck_diameter_ratio : float
        ``STUCK_DIAMETER_RATIO``.
    soft_margin_atol : float
        ``SOFT_MARGIN_ATOL``.
    soft_margin_diameter : float
        ``SOFT_MARGIN_DIAMETER``.
    full_collapse_ratio : float
        ``FULL_COLLAPSE_RATIO``.
    class_collapse_ratio : float
        ``CLASS_COLLAPSE_RATIO``.
    dimensional_collapse_ratio : float
        ``DIMENSIONAL_COLLAPSE_RATIO``.
    """

    stuck_margin_rtol: float = STUCK_MARGIN_RTOL
    stuck_diameter_ratio: float = STUCK_DIAMETER_RATIO
    soft_margin_atol: float = SOFT_MARGIN_ATOL
    soft_margin_diameter: float = SOFT_MARGIN_DIAMETER
    full_collapse_ratio: float = FULL_COLLAPSE_RATIO
    class_collapse_ratio: float = CLASS_COLLAPSE_RATIO
    dimensional_collapse_ratio: float = DIMENSIONAL_COLLAPSE_RATIO

    def __post_init__(self) -> None:
        for f in fields(self):
            check_positive(getattr(self, f.name), f.name)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The threshold names."""
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class Signature:
    """One collapse signature, whether it holds, and the numbers behind it.

    Attributes
    ----------
    name : str
        One of :data:`SIGNATURE_NAMES`.
    holds : bool
        Whether the signature is present.
    summary : str
        One or two sentences a practitioner can read, with the numbers.
    evidence : dict
        The numbers and the thresholds they were compared with.
    """

    name: str
    holds: bool
    summary: str
    evidence: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        return asdict(self)


def detect_signatures(
    stats: CollapseStatistics,
    *,
    loss: float | None = None,
    thresholds: SignatureThresholds | None = None,
) -> tuple[Signature, ...]:
    """Recognise the known collapse signatures in the statistics.

    Parameters
    ----------
    stats : CollapseStatistics
        From :func:`collapse_statistics`.
    loss : float, optional
        A loss value reported by the training run (batch-hard with a margin,
        or soft-margin).  Without it, the losses computed from ``stats`` are
        used: the batch-hard loss for ``stuck_at_margin`` and the soft-margin
        loss for ``stuck_at_ln2``.
    thresholds : SignatureThresholds, optional
        Overrides of the module's threshold constants.

    Returns
    -------
    tuple of Signature
        One per name in :data:`SIGNATURE_NAMES`, in that order.
    """
    if not isinstance(stats, CollapseStatistics):
        raise TypeError(
            f"`stats` must be a CollapseStatistics (from collapse_statistics); got "
            f"{type(stats).__name__}"
        )
    th = thresholds if thresholds is not None else SignatureThresholds()
    if not isinstance(th, SignatureThresholds):
        raise TypeError(f"`thresholds` must be a SignatureThresholds; got {type(th).__name__}")
    if loss is not None:
        loss = check_nonnegative(loss, "loss")
    alpha = stats.margin
    diam = stats.diameter

    # full collapse -----------------------------------------------------------
    if alpha > stats.rms_norm:
        scale, scale_name = alpha, "the margin"
    else:
        scale, scale_name = stats.rms_norm, "the rms norm of the embeddings"
    full = diam <= th.full_collapse_ratio * scale
    rel = diam / scale if scale > 0 else (0.0 if diam == 0 else math.inf)
    if full:
        text = (
            f"All {stats.distances.n_pairs} pairwise distances are at most {diam:.3g}, "
            f"{rel:.2g} x {scale_name} ({scale:.3g}): the embedding has collapsed to "
            "(nearly) a single point."
        )
    else:
        text = (
            f"The diameter {diam:.3g} is {rel:.2g} x {scale_name} ({scale:.3g}), above the "
            f"collapse threshold {th.full_collapse_ratio:g}: the points are spread out."
        )
    sig_full = Signature(
        "all_distances_small",
        bool(full),
        text,
        {
            "diameter": diam,
            "reference_scale": scale,
            "reference": scale_name,
            "ratio": rel,
            "threshold": th.full_collapse_ratio,
        },
    )

    # stuck at the margin -----------------------------------------------------
    L = loss if loss is not None else stats.batch_hard_mean
    src = "reported" if loss is not None else "computed"
    who = "The reported loss" if loss is not None else "The batch-hard loss (mean)"
    if alpha > 0.0:
        loss_rel = abs(L - alpha) / alpha
        diam_rel = diam / alpha
        at_margin = loss_rel <= th.stuck_margin_rtol
        small = diam_rel <= th.stuck_diameter_ratio
        holds = bool(at_margin and small)
        if holds:
            text = (
                f"{who} {L:.4g} equals the margin {alpha:g} and the diameter "
                f"{diam:.3g} is only {diam_rel:.2g} x the margin: every anchor's hardest "
                "positive and hardest negative are both at distance ~0, so each anchor "
                f"contributes [0 - 0 + {alpha:g}]_+ = {alpha:g}. The loss is stuck at the "
                "margin because the embedding has collapsed."
            )
        elif at_margin:
            text = (
                f"{who} {L:.4g} equals the margin {alpha:g}, but the diameter "
                f"{diam:.3g} is {diam_rel:.2g} x the margin: not a collapse; the hardest "
                "positive of each anchor is about as far as its hardest negative."
            )
        else:
            text = f"{who} {L:.4g} is not the margin {alpha:g} (off by {loss_rel:.1%})."
        ev = {
            "loss": L,
            "loss_source": src,
            "loss_matches": bool(at_margin),
            "margin": alpha,
            "loss_rel_error": loss_rel,
            "diameter": diam,
            "diameter_over_margin": diam_rel,
            "rtol": th.stuck_margin_rtol,
            "diameter_ratio": th.stuck_diameter_ratio,
        }
    else:
        holds = False
        text = "Not applicable: the margin is 0 (pass the training margin to check it)."
        ev = {"loss": L, "loss_source": src, "loss_matches": False, "margin": alpha}
    sig_margin = Signature("stuck_at_margin", holds, text, ev)

    # stuck at ln 2 -----------------------------------------------------------
    Ls = loss if loss is not None else stats.soft_margin_mean
    src = "reported" if loss is not None else "computed"
    who = "The reported loss" if loss is not None else "The soft-margin batch-hard loss (mean)"
    off = abs(Ls - LN2)
    at_ln2 = off <= th.soft_margin_atol
    small = diam <= th.soft_margin_diameter
    holds = bool(at_ln2 and small)
    if holds:
        text = (
            f"{who} {Ls:.4g} equals ln 2 = {LN2:.4f} = softplus(0) and the "
            f"diameter is {diam:.3g}: hardest positive and hardest negative coincide for "
            "every anchor, the soft-margin signature of a collapse."
        )
    elif at_ln2:
        text = (
            f"{who} {Ls:.4g} equals ln 2, but the diameter {diam:.3g} exceeds "
            f"{th.soft_margin_diameter:g}: each anchor's hardest positive is about as far as "
            "its hardest negative, without a collapse."
        )
    else:
        text = f"{who} {Ls:.4g} is not ln 2 = {LN2:.4f} (off by {off:.3g})."
    sig_ln2 = Signature(
        "stuck_at_ln2",
        holds,
        text,
        {
            "loss": Ls,
            "loss_source": src,
            "loss_matches": bool(at_ln2),
            "ln2": LN2,
            "abs_error": off,
            "diameter": diam,
            "atol": th.soft_margin_atol,
            "max_diameter": th.soft_margin_diameter,
        },
    )

    # class collapse ----------------------------------------------------------
    cs = stats.classes
    d_in = cs.max_class_diameter
    gap = cs.min_class_gap
    ratio = d_in / gap if gap > 0 else math.inf
    holds = bool((not full) and gap > 0 and ratio <= th.class_collapse_ratio)
    if holds:
        text = (
            f"Every class has shrunk to (nearly) a point while the classes stay apart: the "
            f"largest class diameter {d_in:.3g} is {ratio:.2g} x the smallest distance "
            f"between two classes ({gap:.3g})."
        )
    elif full:
        text = "Not class collapse: the whole embedding has collapsed, classes included."
    else:
        text = (
            f"Classes are not points: the largest class diameter {d_in:.3g} is "
            f"{ratio:.2g} x the smallest distance between two classes ({gap:.3g})."
        )
    sig_class = Signature(
        "class_collapse",
        holds,
        text,
        {
            "max_class_diameter": d_in,
            "min_class_gap": gap,
            "ratio": ratio,
            "threshold": th.class_collapse_ratio,
        },
    )

    # dimensional collapse ----------------------------------------------------
    r_ref = max(1, min(stats.dim, stats.n_points - 1, stats.n_classes - 1))
    er = stats.effective_rank
    holds = bool((not full) and er < th.dimensional_collapse_ratio * r_ref)
    if full:
        text = (
            "Not evaluated: the embedding has collapsed to a point, so its spread has no "
            "meaningful directions."
        )
    elif holds:
        text = (
            f"The centred embeddings have effective rank {er:.3g}: they spread over about "
            f"{er:.1f} of {stats.dim} dimensions, fewer than {th.dimensional_collapse_ratio:g}"
            f" x {r_ref} (min(n, N-1, P-1)) that {stats.n_classes} classes need."
        )
    else:
        text = (
            f"Effective rank {er:.3g} of {stats.dim} dimensions (reference "
            f"min(n, N-1, P-1) = {r_ref}): no dimensional collapse."
        )
    sig_dim = Signature(
        "dimensional_collapse",
        holds,
        text,
        {
            "effective_rank": er,
            "reference_rank": r_ref,
            "dim": stats.dim,
            "threshold": th.dimensional_collapse_ratio,
        },
    )
    return (sig_full, sig_margin, sig_ln2, sig_class, sig_dim)


_HEADLINES = {
    "all_distances_small": (
        "collapsed",
        "COLLAPSED: the embedding has collapsed to (nearly) a single point.",
    ),
    "stuck_at_margin": (
        "collapsed",
        "COLLAPSED: the loss is stuck at the margin because the embedding collapsed.",
    ),
    "stuck_at_ln2": (
        "collapsed",
        "COLLAPSED: the soft-margin loss is stuck at ln 2 = 0.693 because the embedding collapsed.",
    ),
    "class_collapse": (
        "class-collapsed",
        "CLASS-COLLAPSED: every class is (nearly) a single point, and the classes are apart.",
    ),
    "dimensional_collapse": (
        "dimensional-collapse",
        "DIMENSIONAL COLLAPSE: the embedding uses only a few of its dimensions.",
    ),
}

_ADVICE = {
    "collapsed": (
        "With a margin alpha > 0 a collapsed batch gives every anchor the loss alpha; with "
        "alpha = 0 a collapsed embedding is triplet-separated (loss 0), so the loss cannot "
        "see the collapse. Remedies practitioners report: a lower learning rate; smaller "
        "batches (fewer classes per batch) or easier (semi-hard) mining first, larger ones "
        "later; plain, not squared, Euclidean distances in the loss."
    ),
    "class-collapsed": (
        "On these labels this is a triplet-separated (ideal) embedding whenever the class "
        "gaps exceed the margin; it keeps no structure inside a class, which can hurt "
        "retrieval of classes not seen in training."
    ),
    "dimensional-collapse": (
        "The embeddings vary along few directions; the other dimensions carry no "
        "information. In self-supervised learning the usual remedy is a variance or "
        "decorrelation penalty (as in VICReg or Barlow Twins)."
    ),
}


def verdict(signatures: Sequence[Signature], *, findings: Sequence[str] = ()) -> dict[str, Any]:
    """A plain-language verdict from the signatures (and other sections' findings).

    Parameters
    ----------
    signatures : sequence of Signature
        From :func:`detect_signatures`.
    findings : sequence of str
        Further sentences (from other report sections) quoted after the
        signatures.

    Returns
    -------
    dict
        ``status`` (``"collapsed"``, ``"class-collapsed"``,
        ``"dimensional-collapse"``, ``"loss-at-collapse-value"`` or
        ``"no-collapse-signature"``), ``headline``, ``signatures`` (names
        that hold), ``details`` (their summaries, then the findings) and
        ``advice``.
    """
    by_name = {s.name: s for s in signatures}
    held = [name for name in SIGNATURE_NAMES if name in by_name and by_name[name].holds]
    details = [by_name[n].summary for n in held]
    advice = ""
    if held:
        # SIGNATURE_NAMES is ordered by priority: full collapse, the two loss
        # signatures (a diameter small against the margin), class, dimensional
        status, headline = _HEADLINES[held[0]]
        advice = _ADVICE[status]
    else:
        reported = [
            n
            for n in ("stuck_at_margin", "stuck_at_ln2")
            if n in by_name
            and by_name[n].evidence.get("loss_source") == "reported"
            and by_name[n].evidence.get("loss_matches")
        ]
        if reported:
            status = "loss-at-collapse-value"
            headline = (
                "LOSS AT A COLLAPSE VALUE, but the embedding has not collapsed: each "
                "anchor's hardest positive is about as far as its hardest negative."
            )
            details = [by_name[n].summary for n in reported]
        else:
            status = "no-collapse-signature"
            headline = "NO COLLAPSE SIGNATURE: the embedding is spread out and uses its dimensions."
    return {
        "status": status,
        "headline": headline,
        "signatures": held,
        "details": details + [str(f) for f in findings],
        "advice": advice,
    }


# --- the report -------------------------------------------------------------


@dataclass(frozen=True)
class DiagnoseOptions:
    """Options of :func:`diagnose` and :func:`diagnose_batches`.

    Attributes
    ----------
    margin : float
        Training margin ``alpha >= 0``.
    loss : float or None
        A loss value reported by the training run, if any.
    quantiles : tuple of float
        Levels of the pair-distance quantiles.
    uniformity_t, alignment_alpha : float
        Parameters of uniformity and alignment.
    atol : float
        Tolerance of the violated-triplet count.
    thresholds : SignatureThresholds
        Signature thresholds.
    max_triplet_terms : int
        The full triplet loss is computed only when ``N^2 + (active
        triplets)`` is at most this (its cost).
    """

    margin: float = 0.0
    loss: float | None = None
    quantiles: tuple[float, ...] = DEFAULT_QUANTILES
    uniformity_t: float = 2.0
    alignment_alpha: float = 2.0
    atol: float = 1e-9
    thresholds: SignatureThresholds = field(default_factory=SignatureThresholds)
    max_triplet_terms: int = MAX_TRIPLET_TERMS

    def __post_init__(self) -> None:
        check_margin(self.margin)
        if self.loss is not None:
            check_nonnegative(self.loss, "loss")
        q = _check_quantiles(self.quantiles).reshape(-1)
        object.__setattr__(self, "quantiles", tuple(float(v) for v in q))
        check_positive(self.uniformity_t, "uniformity_t")
        check_positive(self.alignment_alpha, "alignment_alpha")
        check_nonnegative(self.atol, "atol")
        if not isinstance(self.thresholds, SignatureThresholds):
            raise TypeError(
                f"`thresholds` must be a SignatureThresholds; got {type(self.thresholds).__name__}"
            )
        check_int(self.max_triplet_terms, "max_triplet_terms", minimum=0)


class Batch:
    """Validated embeddings and labels of one batch, with the shared statistics cached.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels admitting a triplet.

    Attributes
    ----------
    E : ndarray of shape (N, n)
        float64 embeddings.
    y : ndarray of shape (N,)
        Dense integer class codes ``0 .. P-1``.
    classes : ndarray of shape (P,)
        The original labels of the codes.
    """

    def __init__(self, E: ArrayLike, y: ArrayLike) -> None:
        self.E = as_points(E, "E", min_points=2)
        self.y, self.classes = as_labels(y, self.E.shape[0], "y")
        require_triplets(self.y)
        self._stats: dict[tuple, CollapseStatistics] = {}

    def statistics(self, options: DiagnoseOptions) -> CollapseStatistics:
        """:func:`collapse_statistics` for these options (computed once)."""
        key = (
            options.margin,
            options.quantiles,
            options.uniformity_t,
            options.alignment_alpha,
            options.atol,
        )
        if key not in self._stats:
            self._stats[key] = collapse_statistics(
                self.E,
                self.y,
                margin=options.margin,
                quantiles=options.quantiles,
                uniformity_t=options.uniformity_t,
                alignment_alpha=options.alignment_alpha,
                atol=options.atol,
            )
        return self._stats[key]

    def signatures(self, options: DiagnoseOptions) -> tuple[Signature, ...]:
        """:func:`detect_signatures` of the cached statistics."""
        return detect_signatures(
            self.statistics(options), loss=options.loss, thresholds=options.thresholds
        )


#: a report section: ``fn(batch, options) -> dict`` (JSON-ready; optional
#: key ``"findings"``: sentences the verdict quotes)
Section = Callable[[Batch, DiagnoseOptions], dict]


def data_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Size, dimension, classes and the options that matter for reading the report."""
    sizes = class_counts(batch.y)
    out: dict[str, Any] = {
        "n_points": int(batch.E.shape[0]),
        "dim": int(batch.E.shape[1]),
        "n_classes": int(len(batch.classes)),
        "class_size_min": int(sizes.min()),
        "class_size_median": float(np.median(sizes)),
        "class_size_max": int(sizes.max()),
        "margin": options.margin,
        "reported_loss": options.loss,
    }
    if len(sizes) <= 64:
        out["class_sizes"] = {
            str(c): int(k) for c, k in zip(batch.classes.tolist(), sizes, strict=True)
        }
    return out


def losses_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Batch-hard (hinge and soft-margin) losses; the full triplet loss when affordable."""
    st = batch.statistics(options)
    out: dict[str, Any] = {
        "batch_hard_mean": st.batch_hard_mean,
        "batch_hard_max": st.batch_hard_max,
        "batch_hard_sum": st.batch_hard_sum,
        "soft_margin_mean": st.soft_margin_mean,
    }
    work = st.n_points**2 + st.n_active
    if work <= options.max_triplet_terms:
        total = triplet_loss(batch.E, batch.y, margin=options.margin, reduction="sum")
        out["triplet_mean"] = total / st.n_triplets
        out["triplet_sum"] = total
    else:
        out["triplet_mean"] = out["triplet_sum"] = None
        out["triplet_note"] = (
            f"skipped: N^2 + {st.n_active} active triplets = {work} exceeds "
            f"max_triplet_terms = {options.max_triplet_terms}"
        )
    return out


def separation_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Triplet separation: violated and active triplets, worst triplet and slack."""
    st = batch.statistics(options)
    if st.n_violated == 0:
        finding = (
            f"The embedding is triplet-separated at margin {st.margin:g}: every anchor's "
            "hardest negative is at least the margin farther than its hardest positive "
            "(loss 0)."
        )
    else:
        a, p, m = st.worst_triplet
        finding = (
            f"{st.n_violated} of {st.n_triplets} triplets ({st.violated_fraction:.1%}) violate "
            f"d(a,p) + {st.margin:g} <= d(a,m); the worst, (a, p, m) = ({a}, {p}, {m}), by "
            f"{-st.worst_slack:.3g}. {st.active_fraction:.1%} of triplets are active "
            f"(d(a,m) < d(a,p) + margin)."
        )
    return {
        "findings": [finding],
        "separated": st.n_violated == 0,
        "n_triplets": st.n_triplets,
        "n_violated": st.n_violated,
        "fraction_violated": st.violated_fraction,
        "n_active": st.n_active,
        "fraction_active": st.active_fraction,
        "worst_triplet": list(st.worst_triplet),
        "worst_slack": st.worst_slack,
        "margin": st.margin,
        "atol": st.atol,
    }


def collapse_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Distances to the collapsed embeddings (``d_iso = diam``, ``d_haus = R``)."""
    st = batch.statistics(options)
    return {
        "diameter": st.diameter,
        "diameter_pair": list(st.diameter_pair),
        "d_iso_to_collapsed": st.diameter,
        "meb_radius": st.meb_radius,
        "meb_radius_lower": st.meb_lower,
        "d_haus_to_collapsed": st.meb_radius,
    }


def statistics_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Pair-distance summary, norms, spectrum and the normalised statistics."""
    st = batch.statistics(options)
    d = st.distances
    finding = (
        f"Pair distances range over [{d.min:.3g}, {d.max:.3g}] (mean {d.mean:.3g}) against an "
        f"rms embedding norm of {st.rms_norm:.3g}; the centred embeddings have effective rank "
        f"{st.effective_rank:.3g} of {st.dim} dimensions."
    )
    return {
        "findings": [finding],
        "distances": st.distances.to_dict(),
        "rms_norm": st.rms_norm,
        "centroid_norm": st.centroid_norm,
        "effective_rank": st.effective_rank,
        "rankme": st.rankme,
        "std_l2_normalized": st.std_l2_normalized,
        "std_l2_isotropic": 1.0 / math.sqrt(st.dim),
        "uniformity": st.uniformity,
        "uniformity_t": st.uniformity_t,
        "alignment": st.alignment,
        "alignment_alpha": st.alignment_alpha,
        "n_zero_rows": st.n_zero_rows,
    }


def classes_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """Per-class spread against separation, with the worst classes first."""
    st = batch.statistics(options)
    cs = st.classes
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = cs.diameter / cs.min_inter
    ratio = np.where(np.isnan(ratio), 0.0, ratio)
    order = np.argsort(-ratio, kind="stable")
    out = cs.to_dict()
    out["spread_ratio"] = ratio.tolist()
    out["worst_classes"] = [cs.classes[k].item() for k in order[:5]]
    return out


def signatures_section(batch: Batch, options: DiagnoseOptions) -> dict[str, Any]:
    """The collapse signatures and whether each holds."""
    return {s.name: s.to_dict() for s in batch.signatures(options)}


#: the report's sections, in order: ``(name, fn)``
DEFAULT_SECTIONS: tuple[tuple[str, Section], ...] = (
    ("data", data_section),
    ("losses", losses_section),
    ("separation", separation_section),
    ("collapse", collapse_section),
    ("statistics", statistics_section),
    ("classes", classes_section),
    ("signatures", signatures_section),
)


def _check_sections(sections: Any) -> tuple[tuple[str, Section], ...]:
    out = tuple(sections)
    names = set()
    for item in out:
        if not (
            isinstance(item, tuple)
            and len(item) == 2
            and isinstance(item[0], str)
            and callable(item[1])
        ):
            raise TypeError(f"`sections` must hold (name, function) pairs; got {item!r}")
        if item[0] in names or item[0] == "verdict":
            raise InvalidInputError(
                f"`sections` names must be unique and not 'verdict'; got {item[0]!r} twice "
                "or reserved"
            )
        names.add(item[0])
    return out


def diagnose(
    E: ArrayLike,
    y: ArrayLike,
    *,
    options: DiagnoseOptions | None = None,
    sections: Sequence[tuple[str, Section]] = DEFAULT_SECTIONS,
) -> dict[str, Any]:
    """The collapse report of one labelled embedding.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels admitting a triplet.
    options : DiagnoseOptions, optional
        Margin, reported loss, quantile levels, thresholds.
    sections : sequence of (name, fn)
        The sections to run, in order; each ``fn(batch, options)`` returns a
        dict, optionally with ``"findings"`` (sentences) for the verdict.

    Returns
    -------
    dict
        One key per section, then ``"verdict"`` (see :func:`verdict`).

    Raises
    ------
    NoTripletError
        If the labels admit no triplet.
    """
    options = options if options is not None else DiagnoseOptions()
    if not isinstance(options, DiagnoseOptions):
        raise TypeError(f"`options` must be a DiagnoseOptions; got {type(options).__name__}")
    sections = _check_sections(sections)
    batch = Batch(E, y)
    report: dict[str, Any] = {}
    findings: list[str] = []
    for name, fn in sections:
        result = fn(batch, options)
        if not isinstance(result, dict):
            raise TypeError(f"section {name!r} must return a dict; got {type(result).__name__}")
        report[name] = result
        findings.extend(str(f) for f in result.get("findings", ()))
    report["verdict"] = verdict(batch.signatures(options), findings=findings)
    return report


def _sample_batches(codes, batch_size, per_class, n_batches, rng):
    counts = class_counts(codes)
    P = batch_size // per_class
    eligible = np.flatnonzero(counts >= per_class)
    if len(eligible) < P:
        raise InvalidInputError(
            f"`batch_size` = {batch_size} with {per_class} samples per class needs {P} "
            f"classes with at least {per_class} points; got {len(eligible)} such classes "
            f"(of {len(counts)})"
        )
    members = [np.flatnonzero(codes == c) for c in range(len(counts))]
    for _ in range(n_batches):
        chosen = rng.choice(eligible, size=P, replace=False)
        yield np.concatenate(
            [rng.choice(members[c], size=per_class, replace=False) for c in np.sort(chosen)]
        )


def diagnose_batches(
    E: ArrayLike,
    y: ArrayLike,
    *,
    batch_size: int,
    samples_per_class: int = 4,
    n_batches: int = 20,
    rng: RNGLike = None,
    options: DiagnoseOptions | None = None,
    sections: Sequence[tuple[str, Section]] = (),
) -> dict[str, Any]:
    """Collapse statistics over random ``P x K`` batches, as training sees them.

    Each batch draws ``P = batch_size // samples_per_class`` classes among
    those with at least ``K = samples_per_class`` points, then ``K`` points of
    each, without replacement (the PK sampling of Hermans et al. 2017).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels.
    batch_size : int
        Points per batch, a multiple of ``samples_per_class`` with ``P >= 2``.
    samples_per_class : int, default 4
        ``K >= 2``.
    n_batches : int, default 20
        Number of batches.
    rng : None, int or Generator
        Randomness of the draws.
    options : DiagnoseOptions, optional
        As for :func:`diagnose`.
    sections : sequence of (name, fn)
        Extra per-batch sections (as for :func:`diagnose`); the numbers at
        the top level of what each returns are summarised over the batches
        as ``"name.key"``.

    Returns
    -------
    dict
        ``"data"`` (sizes and sampling), ``"statistics"`` (per statistic:
        mean, std, min, median, max over the batches), ``"signatures"``
        (per signature: the number and share of batches where it holds),
        ``"per_batch"`` (each batch's scalars and held signatures) and
        ``"verdict"``.
    """
    options = options if options is not None else DiagnoseOptions()
    if not isinstance(options, DiagnoseOptions):
        raise TypeError(f"`options` must be a DiagnoseOptions; got {type(options).__name__}")
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    K = check_int(samples_per_class, "samples_per_class", minimum=2)
    B = check_int(batch_size, "batch_size", minimum=2 * K)
    if B % K:
        raise InvalidInputError(
            f"`batch_size` must be a multiple of samples_per_class = {K}; got {B}"
        )
    n_batches = check_int(n_batches, "n_batches", minimum=1)
    sections = _check_sections(sections)
    gen = as_rng(rng)
    rows: list[dict[str, Any]] = []
    held_counts = dict.fromkeys(SIGNATURE_NAMES, 0)
    for idx in _sample_batches(codes, B, K, n_batches, gen):
        batch = Batch(X[idx], codes[idx])
        st = batch.statistics(options)
        sigs = batch.signatures(options)
        held = [s.name for s in sigs if s.holds]
        for name in held:
            held_counts[name] += 1
        row: dict[str, Any] = dict(st.scalars())
        for name, fn in sections:
            result = fn(batch, options)
            if not isinstance(result, dict):
                raise TypeError(f"section {name!r} must return a dict; got {type(result).__name__}")
            for key, value in result.items():
                if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
                    value, (bool, np.bool_)
                ):
                    row[f"{name}.{key}"] = float(value)
        row["signatures"] = held
        rows.append(row)
    keys = [k for k in rows[0] if k != "signatures"]
    keys += [k for r in rows for k in r if k not in keys and k != "signatures"]
    summary: dict[str, Any] = {}
    for k in keys:
        vals = np.array([r[k] for r in rows if r.get(k) is not None], dtype=np.float64)
        if vals.size == 0:
            summary[k] = None
            continue
        summary[k] = {
            "mean": float(np.mean(vals)),
            "std": float(np.std(vals)),
            "min": float(np.min(vals)),
            "median": float(np.median(vals)),
            "max": float(np.max(vals)),
        }
    signatures = {
        name: {"batches": held_counts[name], "share": held_counts[name] / n_batches}
        for name in SIGNATURE_NAMES
    }
    majority = [n for n in SIGNATURE_NAMES if held_counts[n] * 2 > n_batches]
    if majority:
        status, headline = _HEADLINES[majority[0]]
        advice = _ADVICE[status]
    else:
        status = "no-collapse-signature"
        headline = (
            "NO COLLAPSE SIGNATURE in most batches: the batches are spread out and use "
            "their dimensions."
        )
        advice = ""
    details = [
        f"{name}: in {held_counts[name]} of {n_batches} batches"
        for name in SIGNATURE_NAMES
        if held_counts[name]
    ]
    n_sep = sum(1 for r in rows if r["violated_fraction"] == 0.0)
    details.append(
        f"triplet-separated at margin {options.margin:g} in {n_sep} of {n_batches} batches"
    )
    bh = summary["batch_hard_mean"]
    details.append(
        f"batch-hard loss over batches: median {bh['median']:.4g} (min {bh['min']:.4g}, max "
        f"{bh['max']:.4g}); diameter median {summary['diameter']['median']:.3g}"
    )
    return {
        "data": {
            "n_points": int(X.shape[0]),
            "dim": int(X.shape[1]),
            "n_classes": int(len(classes)),
            "batch_size": B,
            "classes_per_batch": B // K,
            "samples_per_class": K,
            "n_batches": n_batches,
            "margin": options.margin,
            "reported_loss": options.loss,
        },
        "statistics": summary,
        "signatures": signatures,
        "per_batch": rows,
        "verdict": {
            "status": status,
            "headline": headline,
            "signatures": majority,
            "details": details,
            "advice": advice,
        },
    }


def basic_report(E: ArrayLike, y: ArrayLike, *, margin: float = 0.0) -> dict[str, Any]:
    """Losses, separation report and collapse distances of one batch.

    The short report (no collapse statistics): the batch-hard and triplet
    losses, the triplet-separation report, the diameter (equal to the
    isometric error to the fully collapsed embedding) and the
    minimum-enclosing-ball radius (the pointwise Hausdorff-like distance to
    the best collapsed embedding).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Class labels.
    margin : float, default 0.0
        ``alpha >= 0``.

    Returns
    -------
    dict
        JSON-ready sections ``data``, ``losses``, ``separation`` and
        ``collapse``.
    """
    X = as_points(E, "E", min_points=2)
    codes, classes = as_labels(y, X.shape[0], "y")
    margin = check_margin(margin)
    require_triplets(codes)
    counts = class_counts(codes)
    diam, i, j = farthest_pair(X)
    ball = min_enclosing_ball(X)
    collapsed = np.broadcast_to(ball.center, X.shape)
    losses = {
        f"batch_hard_{r}": batch_hard_loss(X, codes, margin=margin, reduction=r)
        for r in ("mean", "max", "sum")
    }
    losses.update(
        {
            f"triplet_{r}": triplet_loss(X, codes, margin=margin, reduction=r)
            for r in ("mean", "sum")
        }
    )
    return {
        "data": {
            "n_points": int(X.shape[0]),
            "dim": int(X.shape[1]),
            "n_classes": int(len(classes)),
            "class_sizes": {
                str(c): int(k) for c, k in zip(classes.tolist(), counts.tolist(), strict=True)
            },
            "margin": margin,
        },
        "losses": losses,
        "separation": separation_report(X, codes, margin=margin).to_dict(),
        "collapse": {
            "diameter": diam,
            "diameter_pair": [i, j],
            "d_iso_to_collapsed": isometric_error(X, collapsed),
            "meb_radius": ball.radius,
            "meb_radius_lower": ball.lower,
            "d_haus_to_collapsed": ball.radius,
        },
    }
