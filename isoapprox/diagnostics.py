"""Diagnosis of an embedding batch: losses, separation and collapse numbers.

:func:`basic_report` gathers, for embeddings ``E`` (N, n) and labels ``y``,
the quantities a practitioner looks at first: the batch-hard and triplet
losses, the triplet-separation report, the diameter (equal to the isometric
error to the fully collapsed embedding) and the minimum-enclosing-ball radius
(the pointwise Hausdorff-like distance to the best collapsed embedding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._typing import ArrayLike
from ._validation import as_labels, as_points, check_margin, class_counts, require_triplets
from .geometry import farthest_pair, min_enclosing_ball
from .losses import batch_hard_loss, separation_report, triplet_loss
from .metrics import isometric_error

__all__ = ["basic_report"]


def basic_report(E: ArrayLike, y: ArrayLike, *, margin: float = 0.0) -> dict[str, Any]:
    """Losses, separation report and collapse distances of one batch.

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
        {f"triplet_{r}": triplet_loss(X, codes, margin=margin, reduction=r) for r in ("mean", "sum")}
    )
    return {
        "data": {
            "n_points": int(X.shape[0]),
            "dim": int(X.shape[1]),
            "n_classes": int(len(classes)),
            "class_sizes": {str(c): int(k) for c, k in zip(classes.tolist(), counts.tolist())},
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
