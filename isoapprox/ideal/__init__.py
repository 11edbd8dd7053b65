"""Nearest ideal embeddings with certified brackets.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal``.
"""

from ._budget import EFFORTS, SAFETY_TIME_LIMIT, Budget, resolve_budget, safety_limit
from ._result import IdealResult
from ._session import SOLVER_LOCK
from ._subbatch import SUB_BATCH_COUNT
from .nearest import (
    OBJECTIVES,
    SOLVERS,
    SolverOptions,
    embedding_kind,
    nearest_ideal,
    solve_nearest,
)
from .zero_loss import nearest_zero_loss, pair_bounds

__all__ = [
    "EFFORTS",
    "OBJECTIVES",
    "SOLVERS",
    "SAFETY_TIME_LIMIT",
    "SOLVER_LOCK",
    "SUB_BATCH_COUNT",
    "Budget",
    "IdealResult",
    "SolverOptions",
    "embedding_kind",
    "nearest_ideal",
    "nearest_zero_loss",
    "pair_bounds",
    "resolve_budget",
    "safety_limit",
    "solve_nearest",
]
