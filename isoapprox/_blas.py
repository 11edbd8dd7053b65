"""Run small dense linear algebra on one BLAS thread.

The optimisers here call LAPACK on tiny matrices thousands of times (SLSQP's
least-squares subproblems, SVDs of ``n x n`` matrices).  Waking a BLAS
thread team costs more than that work, and on a loaded machine much more:
measured on a shared 2-core machine, one SLSQP run for 8 points in the plane
took 250 ms with 2 OpenBLAS threads and 41 ms with one.  Results do not
depend on the thread count.

``threadpoolctl`` (a runtime dependency) sets the limit; should it be
missing the context does nothing.  The limit holds for the whole process
until the context exits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["single_threaded_blas"]


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
