"""Nearest triplet-separated ("ideal") embeddings with certified brackets.

:func:`nearest_ideal` computes ``d_iso(E, F_TS)`` or ``d_haus(E, F_TS)`` and
a minimiser, with proven lower bounds; :class:`IdealResult` holds the answer.
cvxpy is imported only when a convex solver runs.
"""

from ._result import IdealResult
from .nearest import nearest_ideal

__all__ = ["IdealResult", "nearest_ideal"]
