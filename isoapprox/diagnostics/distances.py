"""Pair-distance summary of an embedding: extremes, mean, exact quantiles.

The ``N (N - 1) / 2`` pair distances ``||E_i - E_j||``, ``i < j``, as
:func:`scipy.spatial.distance.pdist`; quantiles as ``np.quantile(pdist(E),
q)``, found without the distance matrix (the method: see docs/dev/diagnostics_design.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._typing import ArrayLike, FloatArray
from .._validation import as_points, check_int, check_quantiles
from ..exceptions import InvalidInputError
from ..geometry import n_chunks, n_units, scaled
from ..kernels import stats as KS

__all__ = [
    "DEFAULT_QUANTILES",
    "MAX_CANDIDATES",
    "N_BINS",
    "DistanceSummary",
    "distance_quantiles",
    "distance_summary",
]

#: quantile levels of the pair distances reported by default
DEFAULT_QUANTILES: tuple[float, ...] = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99)
#: bins of the histogram sweep that locates the order statistics (a multiple of 64)
N_BINS = 2**15
#: most pair distances held in memory at once by the selection sweep (8 bytes each)
MAX_CANDIDATES = 2**23
#: bins of the reported histogram
COARSE_BINS = 64


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

    def __init__(self, Xs: np.ndarray, XT: np.ndarray, *, n_bins: int, max_candidates: int,
                 height: float = -1.0):
        self.Xs = Xs
        self.XT = XT
        self.N = Xs.shape[0]
        self.m = self.N * (self.N - 1) // 2
        self.n_bins = n_bins
        self.max_candidates = max_candidates
        self.n_chunks = n_chunks(n_units(self.N))
        # single linkage at `height` (rescaled) rides along the first histogram sweep
        self.height = height
        self.labels: np.ndarray | None = None

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
        height = self.height if self.labels is None else -1.0
        counts, mins, maxs, sums, labels = KS.pair_sweep(
            self.Xs, self.XT, lo, hi, scale, self.n_bins, height, self.n_chunks
        )
        if self.labels is None:
            self.labels = labels
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
    a, b = (np.array([values[int(r)] for r in ranks.ravel()], dtype=np.float64).reshape(ranks.shape)
            for ranks in (prev, nxt))
    return _lerp(a, b, gamma)


@dataclass(frozen=True)
class DistanceSummary:
    """Exact summary of the ``m = N (N - 1) / 2`` pair distances.

    ``n_pairs`` is ``m``; ``min``, ``max``, ``mean`` the least pair distance,
    the diameter and the mean; ``quantiles`` at ``levels`` follow numpy's
    ``"linear"`` convention; ``histogram_counts`` count the distances in the
    equal bins ``histogram_edges`` over ``[min, max]`` (the last closed).
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
            **{k: getattr(self, k) for k in ("n_pairs", "min", "max", "mean")},
            "quantiles": {f"{q:g}": v for q, v in zip(self.levels, self.quantiles, strict=True)},
            "histogram_counts": list(self.histogram_counts),
            "histogram_edges": list(self.histogram_edges),
        }


def _coarse_histogram(
    level0, lo: float, hi: float, m: int, s: float
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Counts and edges of the coarse histogram; ``lo``/``hi`` in rescaled units.

    The edges are spaced in rescaled units and divided by ``s`` last, so that
    a range beyond the largest float64 gives ``inf`` edges, never ``nan``.
    """
    if level0 is None or lo == hi:
        return (m,), (lo / s, hi / s)
    total = level0[0]
    coarse = total.reshape(COARSE_BINS, -1).sum(axis=1)
    edges = lo + (hi - lo) * np.arange(COARSE_BINS + 1) / COARSE_BINS
    edges[-1] = hi
    return tuple(int(c) for c in coarse), tuple(float(e) for e in edges / s)


def summary_and_components(Xs, XT, s, levels, lo, hi, total_sum, *, n_bins, max_candidates,
                           height):
    """The summary from known extremes (rescaled units; values returned in input units)
    and the single-linkage labels at ``height`` (rescaled; ``-1``: none).

    The components ride along the first histogram sweep (``KS.pair_sweep``):
    both for one half sweep over the pairs.
    """
    sweeps = _PairSweeps(Xs, XT, n_bins=n_bins, max_candidates=max_candidates, height=height)
    m = sweeps.m
    prev, nxt, _ = _linear_quantile_ranks(levels, m)
    values, level0 = sweeps.select(np.concatenate([prev.ravel(), nxt.ravel()]), lo, hi)
    if level0 is not None:
        total_sum = math.fsum(level0[1])
    elif total_sum is None:
        total_sum = m * lo
    q = _quantiles_from(levels, m, values) / s
    counts, edges = _coarse_histogram(level0, lo, hi, m, s)
    summary = DistanceSummary(
        n_pairs=m,
        min=float(lo / s),
        max=float(hi / s),
        mean=float(total_sum / m / s),
        levels=tuple(float(v) for v in np.atleast_1d(levels)),
        quantiles=tuple(float(v) for v in np.atleast_1d(q)),
        histogram_counts=counts,
        histogram_edges=edges,
    )
    labels = sweeps.labels
    if labels is None and height >= 0.0:
        # all distances equal (lo == hi): no histogram sweep ran
        labels = KS.threshold_components(Xs, XT, height, sweeps.n_chunks)
    return summary, labels


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

    Examples
    --------
    >>> s = distance_summary([[0.0], [1.0], [3.0]], quantiles=(0.5,))
    >>> s.min, s.max, s.mean, s.quantiles
    (1.0, 3.0, 2.0, (2.0,))
    """
    X = as_points(E, "E", min_points=2)
    levels = check_quantiles(quantiles).reshape(-1)
    n_bins = check_int(n_bins, "n_bins", minimum=COARSE_BINS)
    if n_bins % COARSE_BINS:
        raise InvalidInputError(f"`n_bins` must be a multiple of {COARSE_BINS}; got {n_bins}")
    max_candidates = check_int(max_candidates, "max_candidates", minimum=1)
    Xs, XT, s = scaled(X)
    sweeps = _PairSweeps(Xs, XT, n_bins=n_bins, max_candidates=max_candidates)
    lo, hi, total = sweeps.extremes()
    return summary_and_components(
        Xs, XT, s, levels, lo, hi, total, n_bins=n_bins, max_candidates=max_candidates,
        height=-1.0,
    )[0]


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
    levels = check_quantiles(q)
    out = np.array(
        distance_summary(E, quantiles=levels.reshape(-1), max_candidates=max_candidates).quantiles
    )
    if levels.ndim == 0:
        return float(out[0])
    return out.reshape(levels.shape)
