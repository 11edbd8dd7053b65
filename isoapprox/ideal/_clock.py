"""The solvers' clock: wall time less the time spent compiling or loading code.

Since the work budgets (:mod:`._budget`), no search stops on this clock
unless its safety net fires: it measures ``time_limit``, which is only that.

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
``numba:compile`` events alone left 0.35 s uncounted.  The first import of
the lazily loaded solver modules (:func:`cvxpy`, :func:`highspy`; one
import of cvxpy took 29 s on a loaded machine) does not count either.
"""

from __future__ import annotations

import functools
import threading
import time
from types import ModuleType

from numba.core import event

from .. import _lazy

__all__ = ["compile_seconds", "cvxpy", "highspy", "solver_clock"]


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


def _uncounted(load) -> ModuleType:
    """``load()``, its first call's seconds left off the solver clock."""
    t0, c0 = time.perf_counter(), _TIMER.total
    mod = load()
    # compilation during the import is already off the clock
    dt = time.perf_counter() - t0 - (_TIMER.total - c0)
    if dt > 0.0:
        with _TIMER._lock:
            _TIMER.total += dt
    return mod


@functools.cache
def cvxpy() -> ModuleType:
    """:func:`isoapprox._lazy.cvxpy`, its first import off the solver clock."""
    return _uncounted(_lazy.cvxpy)


@functools.cache
def highspy() -> ModuleType:
    """:func:`isoapprox._lazy.highspy`, its first import off the solver clock."""
    return _uncounted(_lazy.highspy)


def solver_clock() -> float:
    """``time.perf_counter()`` less the time spent in numba's compiler: the clock of deadlines."""
    return time.perf_counter() - _TIMER.total
