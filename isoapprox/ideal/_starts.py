"""Starting points and cheap feasible constructions (normalised units).

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._starts``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..geometry import dense_distances
from ._problem import Problem

__all__ = ["class_means", "noise_scales", "shrink_family", "smacof", "spread_centres",
           "table_start", "target_start"]

#: standard deviations of the noisy starts, cycled (normalised units: the
#: instance has diameter about 1)
noise_scales = (0.05, 0.15, 0.3, 0.6, 1.0)


def class_means(prob: Problem) -> np.ndarray:
    P = int(prob.codes.max()) + 1
    C = np.zeros((P, prob.n))
    np.add.at(C, prob.codes, prob.E)
    return C / np.bincount(prob.codes, minlength=P)[:, None]


def spread_centres(C: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Scale the centres about their centroid until all pairs are ``>= alpha`` apart."""
    P = C.shape[0]
    if alpha <= 0.0 or P < 2:
        return C.copy()
    I, J = np.triu_indices(P, 1)
    C = C - C.mean(axis=0)
    for _ in range(4):
        dmin = float(np.min(np.sqrt(np.sum((C[I] - C[J]) ** 2, axis=1))))
        if dmin >= alpha:
            return C
        if dmin <= 1e-9 * alpha:
            C = C + alpha * rng.normal(size=C.shape)
            continue
        C = C * (alpha / dmin) * (1.0 + 1e-12)
    return C


def smacof(T: np.ndarray, X: np.ndarray, n_iter: int = 40) -> np.ndarray:
    """Guttman transforms for the unweighted stress of target table ``T``."""
    N = X.shape[0]
    X = X - X.mean(axis=0)
    for _ in range(n_iter):
        d = dense_distances(X)
        with np.errstate(divide="ignore", invalid="ignore"):
            B = np.where(d > 0, -T / d, 0.0)
        np.fill_diagonal(B, 0.0)
        np.fill_diagonal(B, -B.sum(axis=1))
        X = B @ X / N
    return X


def table_start(prob: Problem, within: Callable[[np.ndarray], np.ndarray],
                between: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """SMACOF realisation of the table ``within(D)`` on the pairs of one class and
    ``between(D)`` on the others (``D`` the distances of ``E``, zero diagonal)."""
    D = dense_distances(prob.E)
    T = np.where(prob.codes[:, None] == prob.codes[None, :], within(D), between(D))
    np.fill_diagonal(T, 0.0)
    return smacof(T, prob.E.copy())


def target_start(prob: Problem, level: float) -> np.ndarray:
    """SMACOF realisation of the table suggested by a lower bound ``level``."""
    return table_start(prob, lambda D: np.maximum(D - level, 0.0), lambda D: D + level)


def shrink_family(prob: Problem, C: np.ndarray, lam: float) -> np.ndarray:
    """``C_y + lam (E - mean_y)``: classes shrunk about their means, moved to ``C``."""
    M = class_means(prob)
    return C[prob.codes] + lam * (prob.E - M[prob.codes])
