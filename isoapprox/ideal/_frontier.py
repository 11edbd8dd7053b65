"""The open nodes of a best-first branch-and-bound with an LP budget.

Shared by the searches that bound each node by linear programmes (the
angular search of :mod:`._sector`, the order search of :mod:`._line`):
the heap of open nodes keyed by a proven lower bound, the deterministic
budget (a count of LPs, the solver clock read only between sixteenths of
it), the schedule of local polishes, and the bound the search proves
whatever its budget; and the rows their LPs share (:func:`abs_rows`,
:func:`separation_rows`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MAX_POLISH", "POLISH_GAP", "Frontier", "abs_rows", "separation_rows"]

#: LP points are polished by a local solve (the search's ``polish``) at most
#: this many times, at least ``polish_every`` LPs apart, while the least open
#: bound stays below the level by more than ``POLISH_GAP`` of it: a search
#: whose incumbent is not the optimum cannot prove its level, and the LP points
#: near a better optimum are only nearly separated
MAX_POLISH = 8
POLISH_GAP = 1e-4


class Frontier:
    """Open nodes of a best-first search, its LP count and its proven bound.

    Parameters
    ----------
    root : object
        The root node (key ``-inf``).
    max_lp : int
        Budget: the search ends when ``n_lp`` (counted by the caller) reaches it.
    stop : callable or None
        ``stop() -> bool``, asked once per sixteenth of the budget.
    polish_every, max_polish, polish_gap : int, int, float
        :meth:`polish_due`: at most ``max_polish`` polishes, ``polish_every``
        LPs apart, while the node's bound is below the level by more than
        ``polish_gap`` of it.

    Notes
    -----
    Every node's key is a proven lower bound of the objective over the
    points of that node (its parent's bound), a node that cannot be split is
    closed with its bound (:meth:`close`), and a pruned node holds no point
    below the level, so at every moment :meth:`bound` (``min(level, least
    open key, least closed bound)``) is proven; when nothing is left open it
    is the level.  Ties of keys are broken by insertion order, so the search
    is deterministic.
    """

    def __init__(self, root: Any, max_lp: int, stop: Callable[[], bool] | None = None, *,
                 polish_every: int = 100, max_polish: int = MAX_POLISH,
                 polish_gap: float = POLISH_GAP):
        self._heap: list = [(-np.inf, 0, root)]
        self._seq = 1
        self.n_lp = 0
        self.max_lp = max_lp
        self._stop = stop
        self._step = max(max_lp // 16, 1)
        self._next_check = self._step
        self._closed = np.inf
        self._polish_every = polish_every
        self._max_polish = max_polish
        self._polish_gap = polish_gap
        self._n_polish = 0
        self._next_polish = polish_every

    def pop(self, level: float) -> tuple[float, Any] | None:
        """``(key, node)`` of the least key, or None when the search ends: nothing
        open, the budget spent, ``stop()`` true, or every key at least ``level``
        (then every open node is pruned)."""
        if not self._heap or self.n_lp >= self.max_lp:
            return None
        if self._stop is not None and self.n_lp >= self._next_check:
            self._next_check += self._step
            if self._stop():
                return None
        if self._heap[0][0] >= level:
            self._heap.clear()
            return None
        key, _, node = heapq.heappop(self._heap)
        return key, node

    def push(self, key: float, node: Any) -> None:
        """Open ``node`` with the proven lower bound ``key``."""
        heapq.heappush(self._heap, (key, self._seq, node))
        self._seq += 1

    def close(self, bound: float) -> None:
        """A node that cannot be split, with its proven bound, leaves the search."""
        self._closed = min(self._closed, bound)

    def polish_due(self, bound: float, level: float) -> bool:
        """Whether to polish the current node's LP point now (and count it)."""
        if (self._n_polish < self._max_polish and self.n_lp >= self._next_polish
                and level - bound > self._polish_gap * level):
            self._n_polish += 1
            self._next_polish = self.n_lp + self._polish_every
            return True
        return False

    def bound(self, level: float) -> float:
        """The proven lower bound ``min(level, least open key, least closed bound)``."""
        b = min(level, self._closed)
        if self._heap:
            b = min(b, self._heap[0][0])
        return b


def abs_rows(nv: int, cols: np.ndarray, t: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``x_c - x_t <= b[k]`` for the columns ``c = cols[k]``, then ``-x_c -
    x_t <= b[P + k]`` (``P`` columns, ``nv`` in all): ``|x_c - e_k| <= x_t`` for
    ``b = (e, -e)``.  Returns ``(A, b)``."""
    P = cols.size
    A = np.zeros((2 * P, nv))
    A[np.arange(P), cols] = 1.0
    A[P + np.arange(P), cols] = -1.0
    A[:, t] = -1.0
    return A, b


def separation_rows(nv: int, d0: int, tid: np.ndarray,
                    alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The triplet rows ``d_ap - d_am <= -alpha`` (``A``, ``b``) with the distance of
    pair ``q`` in column ``d0 + q`` (``tid``: the pairs ``(a, p)`` and ``(a, m)`` of
    each triplet, distinct)."""
    K = tid.shape[0]
    A = np.zeros((K, nv))
    A[np.arange(K), d0 + tid[:, 0]] = 1.0
    A[np.arange(K), d0 + tid[:, 1]] = -1.0
    return A, np.full(K, -alpha)
