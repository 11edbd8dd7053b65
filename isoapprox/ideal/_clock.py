"""The solvers' clock: wall time less the time numba spends compiling or loading code.

A solve's ``time_limit`` budgets search, not compilation.  The first solve
in a fresh process (or with a cold cache) compiles the kernels it calls,
which takes seconds to minutes depending on the machine and its load; on
the wall clock that compilation would eat the budget, and how far a search
got -- and so whether its answer is certified -- would depend on the
machine.  :func:`solver_clock` runs like ``time.perf_counter`` but stops
while numba holds its compiler lock (the ``numba:compiler_lock`` events,
outermost only: compiling, loading from the cache, initialising LLVM), so
deadlines measured on it do not.  The clock is per process: while any
thread holds (or waits for) the compiler lock, every solve's deadline waits
too.  The batch engine runs one solve per worker process.  Measured cold:
the lock covered 23.91 s of a 23.93 s first solve, where the
``numba:compile`` events alone left 0.35 s uncounted.
"""

from __future__ import annotations

import threading
import time

from numba.core import event

__all__ = ["compile_seconds", "solver_clock"]


class _CompileTimer(event.Listener):
    """Total seconds spent inside outermost ``numba:compiler_lock`` events."""

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
event.register("numba:compiler_lock", _TIMER)


def compile_seconds() -> float:
    """Seconds this process has spent in numba's compiler (compiling, loading) so far."""
    return _TIMER.total


def solver_clock() -> float:
    """``time.perf_counter()`` less the time spent in numba's compiler: the clock of deadlines."""
    return time.perf_counter() - _TIMER.total
