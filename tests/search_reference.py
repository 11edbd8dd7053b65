"""Random feasible points plus a plain SLSQP polish: an independent upper bound.

Shared by the references of the triplet-separated set (``ideal_reference``)
and of the pair losses' zero-loss sets (``pairs_reference``); each supplies
its set as three functions.  Written without the package's solvers, so a
certified lower end of :func:`isoapprox.nearest_ideal` /
:func:`isoapprox.nearest_zero_loss` must never exceed what this finds.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize

from .reference import isometric_error, pairwise


def objective(E, G, which: str) -> float:
    """``d_iso(E, G)`` (``"iso"``) or ``max_k ||E_k - G_k||`` (``"haus"``), by loops."""
    if which == "iso":
        return isometric_error(E, G)
    E, G = np.asarray(E, float), np.asarray(G, float)
    return max(math.dist(a, b) for a, b in zip(E, G, strict=True))


def random_then_polish(
    E, y, which: str, rng, *,
    scale: float,
    repair: Callable[[np.ndarray], np.ndarray | None],
    set_rows: Callable[[np.ndarray, Callable], list[float]],
    feasible: Callable[[np.ndarray], bool],
    n_random: int = 300,
    n_polish: int = 6,
) -> float:
    """Best value over ``n_random`` random points made feasible by ``repair``,
    then an SLSQP polish of the ``n_polish`` best in epigraph form with the
    set's constraint rows ``set_rows(G, d) >= 0`` (``d(G, i, j)`` a smoothed
    distance); only points with ``feasible(G)`` in float64 count."""
    E = np.asarray(E, dtype=float)
    N, n = E.shape
    P = int(y.max()) + 1
    best = math.inf
    cands = []
    for _ in range(n_random):
        kind = rng.integers(3)
        if kind == 0:
            G = E + rng.normal(scale=rng.choice([0.1, 0.3, 1.0]) * scale, size=E.shape)
        elif kind == 1:
            C = rng.normal(scale=scale, size=(P, n))
            G = C[y] + rng.normal(scale=0.05 * scale, size=E.shape)
        else:
            lam = rng.uniform(0, 1)
            C = np.array([E[y == c].mean(axis=0) for c in range(P)])
            G = C[y] * rng.uniform(1, 3) + lam * (E - C[y])
        G = repair(G)
        if G is not None:
            v = objective(E, G, which)
            cands.append((v, G))
            best = min(best, v)
    cands.sort(key=lambda t: t[0])
    eps = 1e-9 * scale
    iu = np.triu_indices(N, 1)
    DE = pairwise(E)

    def d(G, i, j):
        return np.sqrt(np.sum((G[i] - G[j]) ** 2) + eps * eps)

    for _, G0 in cands[:n_polish]:
        x0 = np.concatenate([G0.ravel(), [objective(E, G0, which)]])

        def cons(x):
            G = x[:-1].reshape(N, n)
            t = x[-1]
            out = list(set_rows(G, d))
            if which == "iso":
                DG = np.sqrt(np.sum((G[:, None] - G[None]) ** 2, axis=-1))
                out += list(t - (DG - DE)[iu]) + list(t + (DG - DE)[iu])
            else:
                out += list(t * t - np.sum((G - E) ** 2, axis=1))
            return np.array(out)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = minimize(lambda x: x[-1], x0, method="SLSQP",
                           constraints=[{"type": "ineq", "fun": cons}],
                           options={"maxiter": 300, "ftol": 1e-12})
        G = res.x[:-1].reshape(N, n)
        if feasible(G):
            best = min(best, objective(E, G, which))
    return best
