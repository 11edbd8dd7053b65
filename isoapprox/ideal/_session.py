"""One solve at a time, each independent of the solves before it.

The convex programs of :mod:`isoapprox.ideal._relax` (SDP relaxations) and
:mod:`isoapprox.ideal._ccp` (convex-concave steps) are compiled once per
shape and cached at module level; the BLAS and numba thread limits that the
solvers set are process-wide.  Two consequences, both measured:

- **History.**  A cached cvxpy problem solved again hands the solver object
  of its previous solve (cvxpy's ``Problem._solver_cache``) to the next
  solve, and the returned values depend on it: the Shor lower bound of
  ``d_haus`` of one configuration moved in the 11th digit with the
  configurations solved earlier in the process.
- **Threads.**  Two threads solving at once share the cached parameters:
  one configuration received the Shor bound of the configuration solved in
  the other thread (0.696 instead of 0.751), a "lower bound" that need not
  hold.

:func:`solver_session` therefore holds a process-wide re-entrant lock for
the whole of a :func:`~isoapprox.nearest_ideal` or
:func:`~isoapprox.nearest_zero_loss` call (threads of one process solve in
turn; use processes for parallelism) and empties the solver state of every
cached program on entry (the compiled problems are kept: their parameters
are all reset by the next solve), so that each answer is a function of its
arguments alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from . import _ccp, _relax

__all__ = ["SOLVER_LOCK", "forget_solver_state", "solver_session"]

#: held for the whole of each solve; re-entrant, so a solve may call another
SOLVER_LOCK = threading.RLock()


def forget_solver_state() -> None:
    """Empty the solver state of every cached convex program.

    The compiled programs stay cached.  A cached object whose problem does
    not expose a dict ``_solver_cache`` (another cvxpy version) is dropped
    instead, which also gives history-free values at the cost of compiling
    it again.
    """
    for cache in (_relax._CACHE, _ccp._CACHE):
        for key, obj in list(cache.items()):
            holders = [v for v in vars(obj).values() if hasattr(v, "_solver_cache")]
            states = [v._solver_cache for v in holders]
            if holders and all(isinstance(st, dict) for st in states):
                for st in states:
                    st.clear()
            else:
                del cache[key]


@contextmanager
def solver_session() -> Iterator[None]:
    """Hold the solver lock and start from fresh solver state (see the module docstring)."""
    with SOLVER_LOCK:
        forget_solver_state()
        yield
