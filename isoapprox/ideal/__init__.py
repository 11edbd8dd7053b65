"""Nearest ideal embeddings with certified brackets.

:func:`nearest_ideal` computes ``d_iso(E, F_TS)`` or ``d_haus(E, F_TS)`` and
a minimiser, with proven lower bounds; :func:`nearest_zero_loss` does the
same for the zero-loss sets of the pairwise contrastive and margin losses;
:class:`IdealResult` holds either answer.  cvxpy is imported only when a
convex solver runs.
"""

from ._result import IdealResult
from .nearest import nearest_ideal
from .zero_loss import nearest_zero_loss, pair_bounds

__all__ = ["IdealResult", "nearest_ideal", "nearest_zero_loss", "pair_bounds"]
