"""Exceptions and warnings raised by isoapprox.

Every exception derives from :class:`IsoapproxError`, so ``except
IsoapproxError`` catches anything the library raises on purpose.

- :class:`InvalidInputError` (also a :class:`ValueError`): an argument has the
  right kind but a bad value (NaN, wrong shape, negative margin, unknown
  option, ...).  The message names the argument, what was expected and what
  was received.
- :class:`NoTripletError` (an :class:`InvalidInputError`): the labels admit no
  triplet ``(a, p, m)`` (one class only, or every class a singleton), so a
  triplet quantity is undefined.  Raised consistently by every function that
  needs a triplet.
- :class:`SolverError` (also a :class:`RuntimeError`): a valid problem could
  not be solved; carries the solver name and its status.
- :class:`ConvergenceWarning`: a usable result whose solver did not converge
  (or whose certified gap is wider than requested).
- :class:`CollapseWarning`: a training monitor saw a collapse signature start.
- :class:`MonitorWarning`: a training monitor could not evaluate a batch
  (non-finite values, one class, a wrong shape) or write its log, and went on.

Wrong *kinds* of argument (a string where an array is expected, a float
where an int is expected) raise the built-in :class:`TypeError`.
"""

from __future__ import annotations

__all__ = [
    "CollapseWarning",
    "ConvergenceWarning",
    "InvalidInputError",
    "IsoapproxError",
    "MonitorWarning",
    "NoTripletError",
    "SolverError",
]


class IsoapproxError(Exception):
    """Base class of every exception raised on purpose by isoapprox."""


class InvalidInputError(IsoapproxError, ValueError):
    """An argument has an invalid value (shape, range, NaN, unknown option)."""


class NoTripletError(InvalidInputError):
    """The labels admit no triplet: need a class with >= 2 points and >= 2 classes."""


class SolverError(IsoapproxError, RuntimeError):
    """A valid problem could not be solved.

    Parameters
    ----------
    message : str
        What went wrong.
    solver : str
        Name of the solver that failed.
    status : str
        The solver's own status string.
    """

    def __init__(self, message: str, *, solver: str = "", status: str = "") -> None:
        super().__init__(message)
        self.solver = solver
        self.status = status


class MissingDependencyError(IsoapproxError, ImportError):
    """An optional dependency needed by the requested feature is not installed."""


class ConvergenceWarning(UserWarning):
    """A result is usable but its solver did not converge as requested."""


class CollapseWarning(UserWarning):
    """A collapse signature started during training (:class:`isoapprox.CollapseMonitor`)."""


class MonitorWarning(UserWarning):
    """A training monitor skipped a bad batch or a log write and went on.

    Raised by :class:`isoapprox.CollapseMonitor` (once per kind of problem).
    """
