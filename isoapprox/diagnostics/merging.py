"""Partial and class-level collapse: which classes have merged, and which overlap.

A *merged group* is a cluster of single linkage cut at height ``h`` (a
connected component of the graph ``d(i, j) <= h``) that holds most of the
points of two or more classes; a cluster that holds most of the points of
one class only, with a diameter at most ``h``, is that class *collapsed to a
point* at scale ``h``.  The height is
relative to the margin and to the embedding's size:

    ``h = max(MERGE_MARGIN_RATIO x margin, MERGE_DIAMETER_RATIO x diameter)``

(0.5 and 0.01 by default).  Below the margin, two classes in one cluster
are a certain violation: a chain of links ``<= h < margin`` joins them, so
some point of one class lies within ``h`` of a point of another, and every
triplet with that pair as anchor and negative is violated.  The components
come from one half sweep over the pairs with union-find
(:func:`isoapprox.kernels.stats.threshold_components`; in
:func:`~isoapprox.diagnostics.collapse_statistics` the same half sweep
also histograms the pair distances, :func:`isoapprox.kernels.stats.pair_sweep`):
``O(N^2 n)`` time, ``O(N n)`` memory, no ``N x N`` matrix.

Two classes *overlap* when an anchor of one has its hardest negative, a
point of the other, strictly inside its hardest-positive distance
(``min_m d(a, m) < max_p d(a, p)``): read off the anchor sweep, ``O(N)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._typing import IntArray
from ..geometry import (
    MERGE_DIAMETER_RATIO,
    MERGE_MARGIN_RATIO,
    class_owners,
    diameter,
    merge_height,
    n_chunks,
    n_units,
)
from ..kernels import stats as KS

__all__ = [
    "MAX_LISTED_PAIRS",
    "MERGE_DIAMETER_RATIO",
    "MERGE_MARGIN_RATIO",
    "ClassGroup",
    "ClassMerging",
    "compute_merging",
    "merge_height",
]

#: overlapping class pairs listed (the most invaded first); all are counted
MAX_LISTED_PAIRS = 100


@dataclass(frozen=True)
class ClassGroup:
    """One cluster at the merge height: the ``classes`` (labels) most of whose points
    it holds, its ``n_points`` (of every class), their ``share`` of the batch and
    its ``diameter``."""

    classes: tuple[Any, ...]
    n_points: int
    share: float
    diameter: float

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        return {"classes": list(self.classes), "n_classes": len(self.classes),
                **{k: getattr(self, k) for k in ("n_points", "share", "diameter")}}


@dataclass(frozen=True)
class ClassMerging:
    """Merged groups, collapsed classes and overlapping class pairs at height ``height``.

    ``groups`` hold two or more classes each (largest first),
    ``collapsed_classes`` one class each, of diameter at most ``height``;
    ``class_group[c]`` is the index in ``groups`` of class code ``c``'s group
    (``-1`` if none); ``invaded[c]``
    counts the anchors of class ``c`` whose hardest negative lies strictly
    inside their hardest-positive distance; ``overlaps`` lists up to
    :data:`MAX_LISTED_PAIRS` class pairs ``(a, b, anchors of a invaded by b,
    anchors of b invaded by a)``, most invaded first, of
    ``n_overlapping_pairs``.
    """

    height: float
    margin_ratio: float
    diameter_ratio: float
    n_points: int
    n_classes: int
    n_components: int
    groups: tuple[ClassGroup, ...]
    collapsed_classes: tuple[ClassGroup, ...]
    class_group: IntArray
    invaded: IntArray
    overlaps: tuple[tuple[Any, Any, int, int], ...]
    n_overlapping_pairs: int

    @property
    def merged_points(self) -> int:
        """Points in the merged groups."""
        return sum(g.n_points for g in self.groups)

    @property
    def merged_share(self) -> float:
        """Share of the points in the merged groups."""
        return self.merged_points / self.n_points

    @property
    def n_merged_classes(self) -> int:
        """Classes in the merged groups."""
        return sum(len(g.classes) for g in self.groups)

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable)."""
        return {
            **{k: getattr(self, k) for k in ("height", "margin_ratio", "diameter_ratio",
                                             "n_components", "n_merged_classes",
                                             "merged_points", "merged_share")},
            "groups": [g.to_dict() for g in self.groups],
            "collapsed_classes": [g.to_dict() for g in self.collapsed_classes],
            "n_overlapping_pairs": self.n_overlapping_pairs,
            "overlaps": [
                {"classes": [a, b], "invaded_a": na, "invaded_b": nb, "mutual": na > 0 and nb > 0}
                for a, b, na, nb in self.overlaps
            ],
        }


def _group(X: np.ndarray, idx: np.ndarray, labels: list, N: int) -> ClassGroup:
    d = diameter(X[idx]) if len(idx) >= 2 else 0.0
    return ClassGroup(tuple(labels), int(len(idx)), len(idx) / N, d)


def compute_merging(
    X: np.ndarray,
    Xs: np.ndarray,
    XT: np.ndarray,
    s: float,
    codes: np.ndarray,
    classes: np.ndarray,
    hp: np.ndarray,
    hn: np.ndarray,
    hn_idx: np.ndarray,
    *,
    height: float,
    margin_ratio: float = MERGE_MARGIN_RATIO,
    diameter_ratio: float = MERGE_DIAMETER_RATIO,
    labels: np.ndarray | None = None,
) -> ClassMerging:
    """:class:`ClassMerging` of validated input (``Xs, XT, s`` from :func:`.distances.scaled`
    with ``height`` among its extras; ``hp, hn, hn_idx`` from the anchor sweep).

    ``labels``: the single-linkage components at ``height`` when a sweep
    already computed them (:func:`.distances.summary_and_components`).
    """
    N = X.shape[0]
    P = len(classes)
    if labels is None:
        labels = KS.threshold_components(Xs, XT, height * s, n_chunks(n_units(N)))
    _, comp = np.unique(labels, return_inverse=True)
    # class c belongs to the component holding more than half of its points
    owner = class_owners(labels, codes, P)
    members: dict[int, list[int]] = {}
    for c in range(P):
        if owner[c] >= 0:
            members.setdefault(int(owner[c]), []).append(c)
    comp_size = np.bincount(comp)
    order = sorted(members, key=lambda k: (-int(comp_size[k]), k))
    groups: list[ClassGroup] = []
    collapsed: list[ClassGroup] = []
    class_group = np.full(P, -1, dtype=np.int64)
    for k in order:
        cs = members[k]
        if len(cs) == 1 and comp_size[k] < 2:
            continue
        g = _group(X, np.flatnonzero(comp == k), [classes[c].item() for c in cs], N)
        if len(cs) >= 2:
            class_group[cs] = len(groups)
            groups.append(g)
        elif g.diameter <= height:
            collapsed.append(g)

    valid = np.isfinite(hp) & np.isfinite(hn)
    inv = np.flatnonzero(valid & (hn < hp))
    a, b = codes[inv], codes[hn_idx[inv]]
    invaded = np.bincount(a, minlength=P).astype(np.int64)
    pair, n_pair = np.unique(a * P + b, return_counts=True)
    directed = dict(zip(pair.tolist(), n_pair.tolist(), strict=True))
    unordered = sorted({(min(k // P, k % P), max(k // P, k % P)) for k in directed})
    rows = [(i, j, directed.get(i * P + j, 0), directed.get(j * P + i, 0)) for i, j in unordered]
    rows.sort(key=lambda r: -(r[2] + r[3]))
    overlaps = tuple(
        (classes[i].item(), classes[j].item(), int(ni), int(nj))
        for i, j, ni, nj in rows[:MAX_LISTED_PAIRS]
    )
    return ClassMerging(
        height=float(height),
        margin_ratio=float(margin_ratio),
        diameter_ratio=float(diameter_ratio),
        n_points=N,
        n_classes=P,
        n_components=int(comp_size.size),
        groups=tuple(groups),
        collapsed_classes=tuple(collapsed),
        class_group=class_group,
        invaded=invaded,
        overlaps=overlaps,
        n_overlapping_pairs=len(rows),
    )
