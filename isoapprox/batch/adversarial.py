"""Adversarial configurations: search for the worst case of a scalar objective.

See docs/dev/batch_design.md ("isoapprox.batch.adversarial: notes").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._typing import FloatArray
from .._validation import as_rng, check_int, check_nonnegative, check_positive
from ..exceptions import InvalidInputError
from ..kernels import batch as BK
from .stages import lookup

__all__ = [
    "OBJECTIVES",
    "Objective",
    "SearchResult",
    "adversarial_search",
    "get_objective",
    "register_objective",
]

Objective = Callable[[np.ndarray, np.ndarray, float], np.ndarray]

_F = {name: k for k, name in enumerate(BK.CHEAP_FLOAT_FIELDS)}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    out[~(den > 0.0)] = np.nan
    return out


def _meb_ratio(X: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
    F, _ = BK.cheap_kernel(X, codes, margin)
    return _ratio(F[:, _F["meb_radius"]], F[:, _F["diameter"]])


def _thickness(X: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
    if X.shape[2] > 2:
        raise InvalidInputError(
            f"objective 'thickness' is exact only in dimension n <= 2; got n = {X.shape[2]}"
        )
    F, _ = BK.cheap_kernel(X, codes, margin)
    return F[:, _F["thickness"]]


def _loss_ratio(X: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
    F, _ = BK.cheap_kernel(X, codes, margin)
    return _ratio(F[:, _F["batch_hard_max"]], F[:, _F["diameter"]])


#: name -> vectorised objective ``(X (B,N,n), codes (B,N), margin) -> (B,)``
OBJECTIVES: dict[str, Objective] = {
    "meb_ratio": _meb_ratio,
    "thickness": _thickness,
    "loss_ratio": _loss_ratio,
}


def get_objective(spec: str) -> Objective:
    """A registered objective by name, or ``"module:attribute"`` naming a vectorised one.

    The ``module:attribute`` form lets worker processes and Dask workers
    import an objective that was not registered in them.
    """
    if not isinstance(spec, str):
        raise TypeError(f"`objective` must be a name; got {type(spec).__name__}")
    listed = ", ".join(repr(k) for k in OBJECTIVES)
    return lookup(
        spec, OBJECTIVES, "`objective`", "callable", callable,
        f"`objective` must be one of {listed} or module:attribute; got {spec!r}",
    )


class _Looped:
    """A per-configuration objective ``f(E, codes, margin) -> float`` made vectorised."""

    def __init__(self, func: Callable[[np.ndarray, np.ndarray, float], float]) -> None:
        self.func = func

    def __call__(self, X: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
        return np.array([float(self.func(X[b], codes[b], margin)) for b in range(X.shape[0])])


def register_objective(name: str, func: Callable, *, vectorized: bool = True,
                       replace: bool = False) -> None:
    """Add an objective under ``name``.

    Parameters
    ----------
    name : str
        The name the ``adversarial`` distribution refers to.
    func : callable
        ``func(X, codes, margin) -> (B,)`` if ``vectorized``, else
        ``func(E, codes, margin) -> float`` for one configuration.  It must be
        importable by name (a module-level function) for process pools and
        Dask workers.
    vectorized : bool, default True
    replace : bool, default False
        Allow replacing an existing name.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"`name` must be a non-empty string; got {name!r}")
    if not callable(func):
        raise TypeError(f"`func` must be callable; got {type(func).__name__}")
    if name in OBJECTIVES and not replace:
        raise InvalidInputError(
            f"`name` {name!r} is already a registered objective; pass replace=True"
        )
    OBJECTIVES[name] = func if vectorized else _Looped(func)


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`adversarial_search`.

    Attributes
    ----------
    best : ndarray of shape (keep, N, n)
        The best candidates evaluated, best first (distinct evaluations,
        possibly near-copies of one another).
    values : ndarray of shape (keep,)
        Their objective values (re-evaluated together at the end).
    n_evaluations : int
        Objective evaluations spent (``<= budget``).
    history : ndarray
        Best value found so far after each generation (non-decreasing).
    """

    best: FloatArray
    values: FloatArray
    n_evaluations: int
    history: FloatArray


def _evaluate(objective: Objective, C: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
    B = C.shape[0]
    labels = np.broadcast_to(codes, (B, codes.shape[0])).copy()
    v = np.asarray(objective(np.ascontiguousarray(C), labels, margin), dtype=np.float64)
    if v.shape != (B,):
        raise InvalidInputError(
            f"the objective must return one value per configuration, shape ({B},); got "
            f"shape {v.shape}"
        )
    v = v.copy()
    v[~np.isfinite(v)] = -np.inf
    return v


def adversarial_search(
    objective: Objective | str,
    codes: np.ndarray,
    *,
    dim: int,
    margin: float = 0.0,
    budget: int = 512,
    population: int = 16,
    restarts: int = 2,
    keep: int = 1,
    step: float = 0.25,
    rng: None | int | np.random.Generator = None,
    init: np.ndarray | None = None,
) -> SearchResult:
    """Maximise ``objective`` over configurations with the labels ``codes``.

    Parameters
    ----------
    objective : callable or str
        A vectorised objective, the name of one in :data:`OBJECTIVES`, or
        ``"module:attribute"``.
    codes : array_like of shape (N,)
        Integer labels, fixed during the search.
    dim : int
        Embedding dimension ``n``.
    margin : float, default 0.0
        Passed to the objective.
    budget : int, default 512
        Total objective evaluations.
    population : int, default 16
        Candidates per generation.
    restarts : int, default 2
        Independent restarts sharing the budget (each starts from a standard
        normal configuration; the first from ``init`` when given).
    keep : int, default 1
        How many of the best configurations to return.
    step : float, default 0.25
        Initial step, relative to the root-mean-square spread of the start.
    rng : None, int or Generator
        Randomness (the search is deterministic given it).
    init : array_like of shape (N, n), optional
        Starting configuration of the first restart.

    Returns
    -------
    SearchResult

    Examples
    --------
    >>> res = adversarial_search("meb_ratio", [0, 0, 0, 1, 1], dim=2, budget=64, rng=0)
    >>> bool(0.5 <= res.values[0] <= 3 ** -0.5 + 1e-12)
    True
    """
    if isinstance(objective, str):
        objective = get_objective(objective)
    elif not callable(objective):
        raise TypeError(f"`objective` must be callable or a name; got {type(objective).__name__}")
    codes = np.ascontiguousarray(codes, dtype=np.int64).reshape(-1)
    N = codes.shape[0]
    dim = check_int(dim, "dim", minimum=1)
    margin = check_nonnegative(margin, "margin")
    budget = check_int(budget, "budget", minimum=1)
    population = check_int(population, "population", minimum=1)
    restarts = check_int(restarts, "restarts", minimum=1, maximum=budget)
    keep = check_int(keep, "keep", minimum=1)
    step = check_positive(step, "step")
    gen = as_rng(rng)
    if init is not None:
        init = np.array(init, dtype=np.float64)
        if init.shape != (N, dim) or not np.isfinite(init).all():
            raise InvalidInputError(
                f"`init` must be a finite array of shape ({N}, {dim}); got shape {init.shape}"
            )

    top_x = np.empty((0, N, dim))
    top_v = np.empty(0)

    def remember(C: np.ndarray, v: np.ndarray) -> None:
        nonlocal top_x, top_v
        allx = np.concatenate([top_x, C])
        allv = np.concatenate([top_v, v])
        order = np.argsort(-allv, kind="stable")[:keep]
        top_x, top_v = allx[order], allv[order]

    history = []
    used = 0
    for k in range(restarts):
        share = budget // restarts + (1 if k < budget % restarts else 0)
        x = init.copy() if (k == 0 and init is not None) else gen.normal(size=(N, dim))
        f = _evaluate(objective, x[None], codes, margin)
        remember(x[None], f)
        f = f[0]
        used += 1
        spent = 1
        scale = float(np.sqrt(np.mean((x - x.mean(axis=0)) ** 2))) or 1.0
        sigma = step * scale
        while spent < share:
            lam = min(population, share - spent)
            Z = gen.normal(size=(lam, N, dim))
            single = np.arange(lam) >= (lam + 1) // 2
            if single.any():
                which = gen.integers(0, N, size=int(single.sum()))
                mask = np.zeros((int(single.sum()), N, 1))
                mask[np.arange(len(which)), which, 0] = 2.0
                Z[single] *= mask
            C = x[None] + sigma * Z
            v = _evaluate(objective, C, codes, margin)
            remember(C, v)
            used += lam
            spent += lam
            j = int(np.argmax(v))
            if v[j] > f:
                x, f = C[j].copy(), float(v[j])
                sigma *= 1.3
            elif v[j] == f:  # a plateau: drift along it, keep the step
                x = C[j].copy()
            else:
                sigma *= 0.7
            if sigma < 1e-12 * scale:
                sigma = step * scale  # stalled: widen again
            history.append(float(top_v[0]))
    values = _evaluate(objective, top_x, codes, margin)
    return SearchResult(top_x, values, used, np.array(history))
