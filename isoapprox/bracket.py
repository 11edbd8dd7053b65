"""The certified bracket of a minimised distance: one type for every result that carries one."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

__all__ = ["BRACKET_FIELDS", "Bracket", "Bracketed", "bracket_words"]

#: the names a result carrying a bracket exposes as read-only attributes
BRACKET_FIELDS = ("value", "lower", "upper", "gap", "rel_gap", "certified", "lower_source")


@dataclass(frozen=True)
class Bracket:
    """A value with proven lower and upper ends and whether they certify it.

    The one bracket of :class:`isoapprox.IdealResult`,
    :class:`isoapprox.DistanceResult`, :class:`isoapprox.ProcrustesResult`,
    :class:`isoapprox.packing.DStar` and :class:`isoapprox.packing.PackingResult`
    (their ``value``, ``lower``, ``upper``, ``gap``, ``rel_gap``,
    ``certified`` and ``lower_source`` read it).

    Attributes
    ----------
    value : float
        The estimate: the objective re-scored at a feasible point.
    lower, upper : float
        Proven ends, ``lower <= minimum <= upper`` (``upper == value`` for a
        minimised objective scored at a feasible point).
    certified : bool
        The ends certify ``value`` to the requested accuracy (see
        :meth:`relative`; never from an infinite or NaN end).
    lower_source, upper_source : str
        What gives each end: the name of the bound (e.g. a key of
        :attr:`isoapprox.IdealResult.bounds`) and the solver or method of the
        feasible point.
    floor : float, default 0.0
        The least denominator of ``rel_gap`` (``FLOOR_RTOL * scale`` of
        :mod:`isoapprox.tolerances`): values below it are measured against it.
    gap : float
        ``max(upper - lower, 0)`` (derived).
    rel_gap : float
        ``gap / max(value, floor)``, 0 when ``gap`` is not positive (derived).

    Examples
    --------
    >>> b = Bracket.relative(2.0, 1.5, tol=0.3, floor=1e-3)
    >>> b.gap, b.rel_gap, b.certified
    (0.5, 0.25, True)
    """

    value: float
    lower: float
    upper: float
    certified: bool
    lower_source: str = ""
    upper_source: str = ""
    floor: float = 0.0

    def __post_init__(self) -> None:
        for name in ("value", "lower", "upper", "floor"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "certified", bool(self.certified))

    @property
    def triple(self) -> tuple[float, float, float]:
        """``(value, lower, upper)``: one side of :func:`isoapprox.theory.check_bound`."""
        return (self.value, self.lower, self.upper)

    @property
    def gap(self) -> float:
        """``max(upper - lower, 0)`` (NaN when an end is)."""
        return max(self.upper - self.lower, 0.0)

    @property
    def rel_gap(self) -> float:
        """``gap / max(value, floor)``; 0 when ``gap`` is not positive, inf over 0."""
        gap = self.gap
        if not gap > 0.0:
            return 0.0
        d = max(self.value, self.floor)
        return gap / d if d != 0.0 else math.inf

    @classmethod
    def relative(cls, value: float, lower: float, *, tol: float, floor: float = 0.0,
                 lower_source: str = "", upper_source: str = "") -> Bracket:
        """The bracket ``[lower, value]`` of a value scored at a feasible point.

        Parameters
        ----------
        value : float
            The objective at a feasible point: the estimate and the upper end.
        lower : float
            A proven lower bound.
        tol : float
            The requested relative gap.
        floor : float, default 0.0
            The least denominator of ``rel_gap``.
        lower_source, upper_source : str, default ""
            What gives each end.

        Returns
        -------
        Bracket
            Certified when ``rel_gap <= tol`` and ``value``, ``lower`` and
            ``floor`` are finite (never from ``inf`` or ``nan``).
        """
        b = cls(value, lower, value, False, lower_source, upper_source, floor)
        ok = b.rel_gap <= tol and math.isfinite(b.value) and math.isfinite(b.lower) \
            and math.isfinite(b.floor)
        return replace(b, certified=ok)


class Bracketed:
    """Base of the results that hold a ``bracket``: its fields as read-only attributes."""

    bracket: Bracket
    #: the attributes a serialised copy lists, in order (:func:`isoapprox.io.to_jsonable`):
    #: the bracket's fields where the class declared them before it held a Bracket
    SERIAL_FIELDS: tuple[str, ...] = ()
    value = property(lambda self: self.bracket.value, doc="The bracket's value.")
    lower = property(lambda self: self.bracket.lower, doc="The bracket's proven lower end.")
    upper = property(lambda self: self.bracket.upper, doc="The bracket's proven upper end.")
    gap = property(lambda self: self.bracket.gap, doc="``upper - lower``.")
    rel_gap = property(lambda self: self.bracket.rel_gap, doc="The bracket's relative gap.")
    certified = property(lambda self: self.bracket.certified, doc="The bracket certifies.")
    lower_source = property(lambda self: self.bracket.lower_source,
                            doc="What gives the lower end.")
    upper_source = property(lambda self: self.bracket.upper_source,
                            doc="What gives the upper end.")


def bracket_words(value: float | None, lower: float | None, upper: float | None,
                  num: Callable[[float | None], str], *, tight: str = "{v}",
                  wide: str = "{v} in [{lo}, {up}]") -> str:
    """A bracket in words, for reports and figures: one number when it is tight.

    Parameters
    ----------
    value, lower, upper : float or None
        The estimate and the ends; an end that is ``None`` (not known)
        counts as tight.
    num : callable
        Writes one number.
    tight, wide : str
        Templates of a tight bracket, finite ends with ``upper - lower <= 1e-6
        |upper|`` (field ``v``), and of any other (fields ``v``, ``lo``, ``up``).

    Returns
    -------
    str

    Examples
    --------
    >>> bracket_words(0.5, 0.25, 1.0, "{:.2g}".format)
    '0.5 in [0.25, 1]'
    >>> bracket_words(0.5, 0.5, 0.5, "{:.2g}".format)
    '0.5'
    >>> bracket_words(0.5, 0.25, math.inf, "{:.2g}".format)  # an infinite end is never tight
    '0.5 in [0.25, inf]'
    """
    if lower is None or upper is None or (
        math.isfinite(lower) and math.isfinite(upper)
        and upper - lower <= 1e-6 * max(abs(upper), 1e-300)
    ):
        return tight.format(v=num(value))
    return wide.format(v=num(value), lo=num(lower), up=num(upper))
