"""Thread limits: small dense linear algebra on one BLAS thread, numba on few threads.

The optimisers here call LAPACK on tiny matrices thousands of times (SLSQP's
least-squares subproblems, SVDs of ``n x n`` matrices).  Waking a BLAS
thread team costs more than that work, and on a loaded machine much more:
measured on a shared 2-core machine, one SLSQP run for 8 points in the plane
took 250 ms with 2 OpenBLAS threads and 41 ms with one.  Results do not
depend on the thread count.

``threadpoolctl`` (a runtime dependency) sets the limit; should it be
missing the context does nothing.  The limit holds for the whole process
until the context exits.

Numba's parallel kernels have the same problem on tiny inputs: a thread
team's start-up and barriers cost more than the work.  :func:`numba_threads`
sets numba's thread count inside a block (numba's setting is per calling
thread), :func:`quiet_threads` both limits at once.  Every helper of the
package that limits threads goes through these.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["numba_threads", "quiet_threads", "single_threaded_blas"]


_CONTROLLER = None


def _controller():
    """A cached ``ThreadpoolController`` (building one scans the loaded
    libraries: ~10 ms, more than many of the solves it wraps)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        import scipy.linalg  # noqa: F401  (load scipy's BLAS before the scan)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS/LAPACK to one thread inside the ``with`` block (if possible)."""
    try:
        ctl = _controller()
    except ImportError:  # pragma: no cover - optional
        yield
        return
    with ctl.limit(limits=1, user_api="blas"):
        yield


@contextlib.contextmanager
def numba_threads(n: int | None) -> Iterator[None]:
    """Numba's parallel kernels on ``min(n, NUMBA_NUM_THREADS)`` threads inside the block.

    ``None`` leaves the setting alone.  Results do not depend on it: every
    parallel kernel of the package reduces in a fixed order.
    """
    if n is None:
        yield
        return
    import numba

    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


@contextlib.contextmanager
def quiet_threads() -> Iterator[None]:
    """One numba thread and one BLAS thread: thread wake-ups dominate tiny problems."""
    with numba_threads(1), single_threaded_blas():
        yield
