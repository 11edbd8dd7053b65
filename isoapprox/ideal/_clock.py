"""The solvers' clock: wall time less the time numba spends compiling.

A solve's ``time_limit`` budgets search, not compilation.  The first solve
in a fresh process (or with a cold cache) compiles the kernels it calls,
which takes seconds to minutes depending on the machine and its load; on
the wall clock that compilation would eat the budget, and how far a search
got -- and so whether its answer is certified -- would depend on the
machine.  :func:`solver_clock` runs like ``time.perf_counter`` but stops
while numba compiles (numba's ``numba:compile`` events, outermost only), so
deadlines measured on it do not.
"""

from __future__ import annotations

import threading
import time

from numba.core import event

__all__ = ["compile_seconds", "solver_clock"]


class _CompileTimer(event.Listener):
    """Total seconds spent inside outermost ``numba:compile`` events."""

    def __init__(self) -> None:
        self.total = 0.0
        self._depth = 0
        self._t0 = 0.0
        self._lock = threading.Lock()

    def on_start(self, ev: event.Event) -> None:
        with self._lock:
            if self._depth == 0:
                self._t0 = time.perf_counter()
            self._depth += 1

    def on_end(self, ev: event.Event) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self.total += time.perf_counter() - self._t0


_TIMER = _CompileTimer()
event.register("numba:compile", _TIMER)


def compile_seconds() -> float:
    """Seconds this process has spent compiling numba functions so far."""
    return _TIMER.total


def solver_clock() -> float:
    """``time.perf_counter()`` less the time spent compiling: the clock of deadlines."""
    return time.perf_counter() - _TIMER.total
