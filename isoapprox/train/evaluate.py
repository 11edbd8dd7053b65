"""Evaluation during training: collapse statistics, retrieval, triplet diagram.

See docs/dev/train_design.md ("isoapprox.train.evaluate: notes").
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, FloatArray, IntArray
from .._validation import as_labels, as_points, check_int
from ..kernels import distances as K
from ..kernels import losses as KL
from ..losses import l2_normalize

__all__ = [
    "EmbeddingStats",
    "TripletDiagram",
    "embedding_stats",
    "recall_at_k",
    "triplet_diagram",
]


@dataclass(frozen=True)
class EmbeddingStats:
    """Spread of an embedding.

    Attributes
    ----------
    diameter : float
        Largest pairwise distance.
    median_distance : float
        Median over the ``N (N - 1) / 2`` pairwise distances.
    mean_norm : float
        Mean Euclidean norm of the rows.
    """

    diameter: float
    median_distance: float
    mean_norm: float


@functools.lru_cache(maxsize=8)
def _upper(N: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(N, k=1)


def stats_from_distances(D: np.ndarray, X: np.ndarray) -> EmbeddingStats:
    """:class:`EmbeddingStats` of validated points ``X`` with distance matrix ``D``."""
    return EmbeddingStats(
        diameter=float(D.max()),
        median_distance=float(np.median(D[_upper(D.shape[0])])),
        mean_norm=float(np.mean(np.sqrt(np.einsum("ij,ij->i", X, X)))),
    )


def embedding_stats(E: ArrayLike) -> EmbeddingStats:
    """Diameter, median pairwise distance and mean norm of ``E`` (N >= 2, n).

    Examples
    --------
    >>> embedding_stats([[0.0, 0.0], [3.0, 4.0], [0.0, 4.0]])
    EmbeddingStats(diameter=5.0, median_distance=4.0, mean_norm=3.0)
    """
    X = as_points(E, "E", min_points=2)
    return stats_from_distances(K.pairwise_distances_kernel(X), X)


def recall_from_distances(
    D: np.ndarray, codes: np.ndarray, ks: Sequence[int]
) -> dict[int, float]:
    """Recall@K from a distance matrix, without sorting.

    The rank of a point ``j`` in query ``i``'s list (stable order: by
    distance, ties by index) is ``#{l: D_il < D_ij} + #{l < j: D_il == D_ij}``;
    a query is a hit at ``K`` when its nearest same-class point (the first
    one on ties) has rank ``< K``.
    """
    N = D.shape[0]
    D = D.copy()
    np.fill_diagonal(D, np.inf)
    same = codes[:, None] == codes[None, :]
    np.fill_diagonal(same, False)
    Ds = np.where(same, D, np.inf)
    j = np.argmin(Ds, axis=1)
    ds = Ds[np.arange(N), j][:, None]
    rank = np.sum(D < ds, axis=1) + np.sum(
        (D == ds) & (np.arange(N)[None, :] < j[:, None]), axis=1
    )
    rank = np.where(np.isfinite(ds[:, 0]), rank, N)
    return {int(k): float(np.mean(rank < k)) for k in ks}


def recall_at_k(
    E: ArrayLike, y: ArrayLike, *, ks: Sequence[int] = (1, 2, 4, 8)
) -> dict[int, float]:
    """Leave-one-out Recall@K for every ``K`` in ``ks``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (``N >= 2``).
    y : array_like of shape (N,)
        Class labels.
    ks : sequence of int
        The ``K`` values (``>= 1``; values ``>= N`` count every other point).

    Returns
    -------
    dict
        ``{K: fraction of points with a same-class point among their K
        nearest others}``.

    Examples
    --------
    >>> recall_at_k([[0.0], [0.1], [1.0], [1.2]], [0, 0, 1, 0], ks=(1, 2))
    {1: 0.5, 2: 0.75}
    """
    X = as_points(E, "E", min_points=2)
    codes, _ = as_labels(y, X.shape[0], "y")
    ks = tuple(check_int(k, "ks", minimum=1) for k in ks)
    return recall_from_distances(K.pairwise_distances_kernel(X), codes, ks)


@dataclass(frozen=True, eq=False)
class TripletDiagram:
    """Per-anchor similarities of the hardest triplets (Xuan et al.'s diagram).

    Attributes
    ----------
    anchor : ndarray of int, shape (A,)
        Anchors that have a positive and a negative.
    s_ap : ndarray, shape (A,)
        Cosine similarity to the least similar positive (hard positive).
    s_ap_easy : ndarray, shape (A,)
        Cosine similarity to the most similar positive (easy positive).
    s_an : ndarray, shape (A,)
        Cosine similarity to the most similar negative (hardest negative).
    d_ap, d_an : ndarray, shape (A,)
        Euclidean hardest-positive and hardest-negative distances of the
        raw (unnormalised) embeddings.
    """

    anchor: IntArray
    s_ap: FloatArray
    s_ap_easy: FloatArray
    s_an: FloatArray
    d_ap: FloatArray
    d_an: FloatArray

    @property
    def hard_fraction(self) -> float:
        """Share of anchors with ``S_an > S_ap`` (hard positive)."""
        return float(np.mean(self.s_an > self.s_ap)) if self.anchor.size else 0.0

    @property
    def hard_fraction_easy(self) -> float:
        """Share of anchors with ``S_an > S_ap_easy`` (Xuan et al.'s hard triplets)."""
        return float(np.mean(self.s_an > self.s_ap_easy)) if self.anchor.size else 0.0

    def to_dict(
        self, *, max_anchors: int | None = None, digits: int | None = None
    ) -> dict:
        """Lists, ready for JSON.

        Parameters
        ----------
        max_anchors : int, optional
            Keep at most this many anchors, evenly spaced over the batch
            (the hard fractions are still those of all anchors).
        digits : int, optional
            Round the similarities and distances to this many significant
            digits (smaller files; a scatter plot needs no more than 4).
        """
        A = self.anchor.size
        keep = np.arange(A)
        if max_anchors is not None and A > max_anchors:
            keep = np.unique(
                np.linspace(0, A - 1, max_anchors).round().astype(np.int64)
            )

        def out(v: np.ndarray) -> list:
            v = v[keep]
            if digits is None:
                return v.tolist()
            return [float(f"{x:.{digits}g}") for x in v.tolist()]

        return {
            "n_anchors": int(A),
            "anchor": self.anchor[keep].tolist(),
            **{k: out(getattr(self, k)) for k in ("s_ap", "s_ap_easy", "s_an", "d_ap", "d_an")},
            "hard_fraction": self.hard_fraction,
            "hard_fraction_easy": self.hard_fraction_easy,
        }


def diagram_of_codes(X: np.ndarray, codes: np.ndarray) -> TripletDiagram:
    """:func:`triplet_diagram` of validated points and dense label codes."""
    U, _ = l2_normalize(X)
    S = U @ U.T
    same = codes[:, None] == codes[None, :]
    diff = ~same
    np.fill_diagonal(same, False)
    valid = same.any(axis=1) & diff.any(axis=1)
    a = np.flatnonzero(valid)
    Sv = S[a]
    s_ap = np.where(same[a], Sv, np.inf).min(axis=1)
    s_ap_easy = np.where(same[a], Sv, -np.inf).max(axis=1)
    s_an = np.where(diff[a], Sv, -np.inf).max(axis=1)
    hp, hn, _, _ = KL.batch_hard_terms(X, codes, 0.0)
    return TripletDiagram(a, s_ap, s_ap_easy, s_an, hp[a], hn[a])


def triplet_diagram(E: ArrayLike, y: ArrayLike) -> TripletDiagram:
    """Triplet-diagram data of one batch (see docs/dev/train_design.md).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (normalised inside for the similarities).
    y : array_like of shape (N,)
        Class labels.

    Returns
    -------
    TripletDiagram

    Examples
    --------
    >>> t = triplet_diagram([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1]], [0, 0, 1])
    >>> t.anchor.tolist(), t.hard_fraction
    ([0, 1], 1.0)
    """
    X = as_points(E, "E", min_points=2)
    codes, _ = as_labels(y, X.shape[0], "y")
    return diagram_of_codes(X, codes)
