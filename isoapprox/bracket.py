"""The certified bracket of a minimised distance: one type for every result that carries one."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["BRACKET_FIELDS", "Bracket", "Bracketed", "accepts_bracket_fields"]

#: the names a result carrying a bracket exposes as read-only attributes (and,
#: for callers written before :class:`Bracket`, accepts as constructor keywords)
BRACKET_FIELDS = ("value", "lower", "upper", "gap", "rel_gap", "certified", "lower_source")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@dataclass(frozen=True)
class Bracket:
    """A value with proven lower and upper ends and whether they certify it.

    The one bracket of :class:`isoapprox.IdealResult`,
    :class:`isoapprox.DistanceResult` and :class:`isoapprox.ProcrustesResult`
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

    def _with_fields(self, **given: Any) -> Bracket:
        """A copy with some of :data:`BRACKET_FIELDS` given: ``gap`` and ``rel_gap``
        must be the derived ones (a ``rel_gap`` sets a ``floor`` that gives it)."""
        gap, rel = given.pop("gap", None), given.pop("rel_gap", None)
        b = replace(self, **given)
        if rel is not None and not _same(b.rel_gap, rel):
            b = replace(b, floor=_floor_for(b.gap, b.value, rel, b.floor))
        for name, want in (("gap", gap), ("rel_gap", rel)):
            if want is not None and not _same(getattr(b, name), want):
                raise ValueError(f"`{name}` must be the bracket's own ({getattr(b, name)!r}, "
                                 f"derived from value, lower, upper and floor); got {want!r}")
        return b


def _floor_for(gap: float, value: float, rel: float, floor: float) -> float:
    """A floor ``f`` with ``gap / max(value, f) == rel`` (``floor`` when none is found):
    ``gap / rel`` is within an ulp or two of one."""
    f = gap / rel if gap > 0.0 and rel > 0.0 else math.nan
    for _ in range(8):
        if not math.isfinite(f):
            break
        r = gap / max(value, f)
        if r == rel:
            return f
        f = math.nextafter(f, math.inf if r > rel else 0.0)
    return floor


class Bracketed:
    """Base of the results that hold a ``bracket``: its fields as read-only attributes."""

    bracket: Bracket
    value = property(lambda self: self.bracket.value, doc="The bracket's value.")
    lower = property(lambda self: self.bracket.lower, doc="The bracket's proven lower end.")
    upper = property(lambda self: self.bracket.upper, doc="The bracket's proven upper end.")
    gap = property(lambda self: self.bracket.gap, doc="``upper - lower``.")
    rel_gap = property(lambda self: self.bracket.rel_gap, doc="The bracket's relative gap.")
    certified = property(lambda self: self.bracket.certified, doc="The bracket certifies.")
    lower_source = property(lambda self: self.bracket.lower_source,
                            doc="What gives the lower end.")


def accepts_bracket_fields(upper_source: str):
    """Class decorator: the constructor also takes :data:`BRACKET_FIELDS` as keywords.

    For callers written before :class:`Bracket` (and ``dataclasses.replace``
    with those names): they build, or change, the ``bracket``; its upper end's
    source is the keyword ``upper_source`` names (e.g. ``"solver"``).
    """

    def wrap(cls):
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self, *args: Any, **kw: Any) -> None:
            given = {k: kw.pop(k) for k in BRACKET_FIELDS if k in kw}
            if given:
                base = kw.get("bracket")
                if upper_source in kw:
                    given["upper_source"] = kw[upper_source]
                if base is None:
                    missing = [k for k in ("value", "lower", "certified") if k not in given]
                    if missing:
                        raise TypeError(f"{cls.__name__}() needs `bracket` or {missing}")
                    base = Bracket(given["value"], given["lower"],
                                   given.get("upper", given["value"]), given["certified"])
                kw["bracket"] = base._with_fields(**given)
            init(self, *args, **kw)

        cls.__init__ = __init__
        return cls

    return wrap
