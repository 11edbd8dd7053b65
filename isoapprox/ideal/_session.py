"""One solve at a time, each independent of the solves before it.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._session``.
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
    """Hold the solver lock and start from fresh solver state (docs/dev/zero_loss_design.md)."""
    with SOLVER_LOCK:
        forget_solver_state()
        yield
