"""Work budgets of the searches: counts of work, never seconds.

Every search of :mod:`isoapprox.ideal` stops on a count that depends only on
its inputs and options -- local solves and their iterations, branch-and-bound
nodes, linear programmes, sub-problems -- so the same call gives the same
bracket, ``certified`` flag and status on a quiet or a saturated machine and
with one or two threads.  A wall-clock deadline stays only as a safety net
(:data:`SAFETY_TIME_LIMIT` by default, far above what the budgets cost): when
it fires the result's ``status`` is ``"time_limit"`` and ``reproducible`` is
False.

The rule (documented in ``docs/theory.md``, "Work budgets"):

* ``effort`` picks a preset (:data:`EFFORTS`): ``"quick"``, ``"default"``
  (the budgets of earlier releases) or ``"thorough"``; an explicit option
  (``n_starts=...``) overrides its field.
* Local solves: ``n_starts`` up to :data:`START_POINTS` points, scaled by
  ``START_POINTS / N`` beyond, never below ``min(n_starts, MIN_STARTS)``
  (:func:`local_starts`); each solve at most ``max_iter`` iterations
  (SLSQP), or beyond ``SLSQP_MAX_ROWS`` rows ``AL_ROUNDS_PER_ITER * max_iter``
  rounds of the augmented Lagrangian of at most ``AL_INNER_PER_ITER *
  max_iter`` L-BFGS iterations each (:func:`al_caps`: 30 and 500 at the
  default ``max_iter = 200``).
* Linear programmes of the angular and order searches: ``max_lps`` up to
  five points, scaled by ``(5 / N)^2`` beyond
  (:func:`isoapprox.ideal._sector.lp_budget`); boxes of the spatial
  branch-and-bound: ``max_nodes``.
* Sub-problems: ``max_subbatches``, each with a fixed number of starts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from .._validation import check_int, check_option, check_positive
from ._bnb import BNB_MAX_LP, BNB_MAX_NODES
from ._subbatch import SUB_BATCH_COUNT

__all__ = [
    "AL_INNER_PER_ITER",
    "AL_ROUNDS_PER_ITER",
    "EFFORTS",
    "MIN_STARTS",
    "SAFETY_TIME_LIMIT",
    "START_POINTS",
    "Budget",
    "al_caps",
    "local_starts",
    "resolve_budget",
    "safety_limit",
]

#: the presets of ``effort``
EFFORTS = ("quick", "default", "thorough")
#: the wall-clock safety net of one solve when ``time_limit`` is None (seconds
#: on the solver clock, which stops while numba compiles); far above what the
#: work budgets cost (the default effort's solves take at most tens of seconds
#: on the 2-core machine), so on an ordinary machine it never decides a result
SAFETY_TIME_LIMIT = 600.0
#: up to this many points a solve makes ``n_starts`` local solves; beyond, the
#: count falls as ``START_POINTS / N`` (a local solve costs more than linearly
#: in ``N``: the triplet rows grow as ``N^2``)
START_POINTS = 16
#: ... but never below this many (or ``n_starts`` if smaller)
MIN_STARTS = 4
#: outer rounds of one augmented-Lagrangian local solve (large programmes), per
#: unit of ``max_iter`` (30 at the default 200)
AL_ROUNDS_PER_ITER = 0.15
#: its L-BFGS iterations per round, per unit of ``max_iter`` (500 at the default 200)
AL_INNER_PER_ITER = 2.5


@dataclass(frozen=True)
class Budget:
    """The work budget of one solve of :func:`isoapprox.nearest_ideal`.

    Attributes
    ----------
    n_starts : int
        Local solves from the start plan (closed forms not counted) up to
        ``START_POINTS`` points; :func:`local_starts` scales it beyond.
    max_iter : int
        Iteration cap of each local solve.
    max_subbatches : int
        Sub-problems solved for proven lower bounds of larger batches.
    max_nodes : int
        Boxes of the spatial branch-and-bound (0 switches every
        branch-and-bound off).
    max_lps : int
        Linear programmes of the angular and order searches, for five points
        (scaled by ``(5 / N)^2`` beyond).
    """

    n_starts: int
    max_iter: int
    max_subbatches: int
    max_nodes: int
    max_lps: int

    def to_dict(self) -> dict[str, int]:
        """The budget as a plain dict (for result files)."""
        return asdict(self)


#: the budgets of each ``effort``; ``"default"`` is the budget of earlier releases
PRESETS: dict[str, Budget] = {
    "quick": Budget(n_starts=4, max_iter=100, max_subbatches=2, max_nodes=2_000,
                    max_lps=400),
    "default": Budget(n_starts=24, max_iter=200, max_subbatches=SUB_BATCH_COUNT,
                      max_nodes=BNB_MAX_NODES, max_lps=BNB_MAX_LP),
    "thorough": Budget(n_starts=96, max_iter=500, max_subbatches=32, max_nodes=200_000,
                       max_lps=40_000),
}

_MINIMA = {"n_starts": 1, "max_iter": 1, "max_subbatches": 0, "max_nodes": 0, "max_lps": 0}


def resolve_budget(effort: str = "default", **overrides: Any) -> Budget:
    """The preset of ``effort`` with the options that are not None put in.

    Parameters
    ----------
    effort : {"quick", "default", "thorough"}, default "default"
    **overrides : int or None
        ``n_starts``, ``max_iter``, ``max_subbatches``, ``max_nodes``,
        ``max_lps``; None keeps the preset's value.

    Returns
    -------
    Budget

    Raises
    ------
    InvalidInputError
        An unknown ``effort``, or an option that is not an integer in range.

    Examples
    --------
    >>> resolve_budget("quick", n_starts=8).n_starts
    8
    >>> resolve_budget().max_lps
    4000
    """
    base = PRESETS[check_option(effort, "effort", EFFORTS)]
    unknown = set(overrides) - set(_MINIMA)
    if unknown:
        raise TypeError(f"resolve_budget: unknown budget option(s) {sorted(unknown)}")
    given = {k: check_int(v, k, minimum=_MINIMA[k]) for k, v in overrides.items()
             if v is not None}
    return replace(base, **given) if given else base


def local_starts(n_starts: int, n_points: int) -> int:
    """Local solves of one search on ``n_points`` points (the size rule).

    ``n_starts`` up to :data:`START_POINTS` points; beyond,
    ``ceil(n_starts * START_POINTS / n_points)``, at least
    ``min(n_starts, MIN_STARTS)``.

    Examples
    --------
    >>> [local_starts(24, N) for N in (5, 16, 32, 64, 200)]
    [24, 24, 12, 6, 4]
    """
    if n_points <= START_POINTS:
        return n_starts
    scaled = math.ceil(n_starts * START_POINTS / n_points)
    return max(scaled, min(n_starts, MIN_STARTS))


def al_caps(max_iter: int) -> tuple[int, int]:
    """Rounds and L-BFGS iterations per round of an augmented-Lagrangian local solve
    for a local-solve cap ``max_iter``.

    Examples
    --------
    >>> al_caps(200), al_caps(100), al_caps(500)
    ((30, 500), (15, 250), (75, 1250))
    """
    return (max(math.ceil(AL_ROUNDS_PER_ITER * max_iter), 1),
            math.ceil(AL_INNER_PER_ITER * max_iter))


def safety_limit(time_limit: float | None) -> float:
    """The safety net's seconds: ``time_limit``, or :data:`SAFETY_TIME_LIMIT` for None."""
    if time_limit is None:
        return SAFETY_TIME_LIMIT
    return check_positive(time_limit, "time_limit")
