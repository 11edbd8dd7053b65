"""Nearest ideal embeddings with certified brackets.

:func:`nearest_ideal` computes ``d_iso(E, F_TS)`` or ``d_haus(E, F_TS)`` and
a minimiser, with proven lower bounds; :func:`nearest_zero_loss` does the
same for the zero-loss sets of the pairwise contrastive and margin losses;
:class:`IdealResult` holds either answer; :func:`solve_nearest` is
:func:`nearest_ideal` without its checks and :func:`embedding_kind` the one
rule of collapsed / class-collapsed / general, for the package's own callers.
cvxpy is imported only when a convex solver runs.
"""

from ._result import IdealResult
from ._session import SOLVER_LOCK
from .nearest import OBJECTIVES, SOLVERS, embedding_kind, nearest_ideal, solve_nearest
from .zero_loss import nearest_zero_loss, pair_bounds

__all__ = [
    "OBJECTIVES",
    "SOLVERS",
    "SOLVER_LOCK",
    "IdealResult",
    "embedding_kind",
    "nearest_ideal",
    "nearest_zero_loss",
    "pair_bounds",
    "solve_nearest",
]
