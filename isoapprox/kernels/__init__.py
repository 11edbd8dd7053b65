"""numba kernels of isoapprox, one module per concept.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.kernels``.

The first time a kernel is compiled in a process (a fresh cache, or a new
version of isoapprox), one line is logged at INFO level on the
``isoapprox`` logger (the command line shows it): compilation takes seconds
to a minute, once; later calls, in this process or the next, load the
machine code from numba's cache.
"""

from __future__ import annotations

import logging
import threading

from numba.core import event

from .cache import lock_cache_saves

__all__ = ["JIT", "COMPILE_NOTICE"]

#: the one set of numba options of every kernel
JIT = dict(cache=True, fastmath=False, nogil=True)
#: the line logged at the first compilation of a kernel in a process
COMPILE_NOTICE = ("compiling numba kernels, once (later runs load them from the cache; "
                  "up to a minute or two on a 2-core machine)")

_logger = logging.getLogger("isoapprox")


class _FirstCompile(event.Listener):
    """Logs :data:`COMPILE_NOTICE` at the first compilation of an isoapprox kernel."""

    def __init__(self) -> None:
        self.announced = False
        self._lock = threading.Lock()

    def on_start(self, ev: event.Event) -> None:
        if self.announced:
            return
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith("isoapprox."):
            return
        with self._lock:
            if not self.announced:
                self.announced = True
                _logger.info(COMPILE_NOTICE)

    def on_end(self, ev: event.Event) -> None:
        pass


event.register("numba:compile", _FirstCompile())
lock_cache_saves()
