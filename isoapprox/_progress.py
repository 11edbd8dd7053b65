"""Progress bars, and long kernels that show progress and stop on Ctrl-C.

One home for both: :func:`progress_bar` (the bars of the run protocol, the
toy, ``batch`` and ``train``) and :func:`run_kernel`, which runs a numba
sweep over work units in a helper thread while the calling thread draws a
bar and waits for an interrupt.

A long numba call cannot be interrupted: Python handles Ctrl-C only when
control comes back to the interpreter.  The sweeps at ``N >= 100,000``
take minutes (``diagnose`` on 100,000 points in ``R^32`` runs four of
them), so each such kernel takes a control array ``ctl`` (int64): it reads
``ctl[0]`` before every work unit and stops when it is non-zero, and adds 1
to its slot ``ctl[1 + k]`` after every unit (slot ``k`` is written by one
thread only).  The kernels are compiled with ``nogil=True``, so the calling
thread waits in ``join`` with a timeout, updates the bar from the slots and,
on ``KeyboardInterrupt``, sets ``ctl[0]``, waits for the kernel to leave
(within one unit) and re-raises: nothing half-computed is returned, and the
results of a call that runs to its end do not depend on whether it was
watched (the same units in the same order on each chunk).

Bars are off unless asked for: ``with isoapprox.show_progress(): ...`` (the
command line turns them on unless ``--quiet``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numba
import numpy as np
from tqdm.auto import tqdm

__all__ = ["WATCH_MIN_WORK", "progress_bar", "progress_enabled", "run_kernel", "show_progress"]

logger = logging.getLogger("isoapprox")

#: work (pair distances x coordinates) from which a sweep runs watched, in a
#: helper thread (about a second on one core); below it, directly
WATCH_MIN_WORK = 2e9

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("isoapprox_progress",
                                                                default=False)


@contextlib.contextmanager
def show_progress(enabled: bool = True) -> Iterator[None]:
    """Show progress bars (on stderr) for the long sweeps run inside the block.

    The O(N^2) sweeps of :func:`isoapprox.batch_hard_loss`,
    :func:`isoapprox.isometric_error`, :func:`isoapprox.diagnose` and the
    collapse statistics draw a bar when they are long (about a second of
    work or more, e.g. ``N >= 20,000`` points); they stop cleanly on Ctrl-C
    (``KeyboardInterrupt``) whether or not a bar is shown.

    Parameters
    ----------
    enabled : bool, default True
        ``False`` turns the bars off inside the block.

    Yields
    ------
    None
        Inside the block the bars are on (or off, with ``enabled=False``);
        the previous setting comes back when it ends.

    Examples
    --------
    >>> import numpy as np, isoapprox as ia
    >>> with ia.show_progress():
    ...     ia.batch_hard_loss([[0.0], [1.0], [1.5]], [0, 0, 1], margin=1.0)
    1.0
    """
    token = _ENABLED.set(bool(enabled))
    try:
        yield
    finally:
        _ENABLED.reset(token)


def progress_enabled() -> bool:
    """Whether bars are on here (:func:`show_progress`)."""
    return _ENABLED.get()


class _NoBar:
    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def note(self, text: str) -> None:
        self._log.info(text)

    def set_description(self, text: str) -> None:
        pass

    def set_total(self, total: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Bar(tqdm):
    def set_total(self, total: int) -> None:
        self.total = total
        self.refresh()

    def note(self, text: str) -> None:
        """A message above the bar (a log line would be drawn into it)."""
        self.write(text, file=sys.stderr)


def progress_bar(enabled: bool, total: int, desc: str, *, initial: int = 0, unit: str = "it",
                 log: logging.Logger = logger):
    """A tqdm bar on stderr with ``note`` and ``set_total`` (disabled: notes go to ``log``)."""
    if not enabled:
        return _NoBar(log)
    return _Bar(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr,
                leave=False, dynamic_ncols=True)


def new_control(n_slots: int) -> np.ndarray:
    """A control array for a kernel with ``n_slots`` progress slots (stop flag at 0)."""
    return np.zeros(1 + int(n_slots), dtype=np.int64)


def run_kernel(kernel: Callable[..., Any], args: tuple, *, n_slots: int, units: int,
               work: float, desc: str, unit: str = "blk") -> Any:
    """``kernel(*args, ctl)``, watched when ``work >= WATCH_MIN_WORK``.

    Parameters
    ----------
    kernel : numba dispatcher compiled with ``nogil=True``
        Reads ``ctl[0]`` before each work unit (stops when non-zero) and adds
        1 to ``ctl[1 + k]``, ``0 <= k < n_slots``, after each.
    args : tuple
        The kernel's arguments before ``ctl``.
    n_slots : int
        Progress slots the kernel writes.
    units : int
        Total work units (the bar's total).
    work : float
        The call's size (pair distances x coordinates) that decides whether
        it is watched.
    desc : str
        The bar's label.
    unit : str, default "blk"
        What a unit is (the bar's rate label).

    Raises
    ------
    KeyboardInterrupt
        After the kernel stopped, when the caller was interrupted.
    """
    ctl = new_control(n_slots)
    if work < WATCH_MIN_WORK:
        return kernel(*args, ctl)
    threads = numba.get_num_threads()  # thread-local: the helper thread inherits it here
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            numba.set_num_threads(threads)
            out["value"] = kernel(*args, ctl)
        except BaseException as exc:  # handed to the calling thread
            out["error"] = exc

    worker = threading.Thread(target=target, name=f"isoapprox {desc}", daemon=True)
    bar = progress_bar(progress_enabled(), units, desc, unit=unit)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
            done = int(ctl[1:].sum())
            if done > bar.n:
                bar.update(done - bar.n)
    except BaseException:
        ctl[0] = 1
        worker.join()
        raise
    finally:
        bar.close()
    if "error" in out:
        raise out["error"]
    return out["value"]
