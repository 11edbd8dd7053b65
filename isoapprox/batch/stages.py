"""Evaluation stages: the pluggable per-configuration quantities of a batch run.

See docs/dev/batch_design.md ("isoapprox.batch.stages: notes").
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import geometry, losses, metrics
from .._validation import check_instance
from ..exceptions import InvalidInputError
from .cheap import CHEAP_FIELDS, cheap_from_kernel

__all__ = [
    "CHEAP",
    "COLUMN_DTYPES",
    "PARAM_COLUMNS",
    "REFERENCE",
    "STAGES",
    "STAGE_KINDS",
    "Column",
    "Stage",
    "get_stage",
    "register_stage",
    "resolve_stages",
]

STAGE_KINDS = ("vector", "config")
COLUMN_DTYPES = ("float", "int", "bool", "str")


def _check_named(what: str, name: Any, attr: str, value: Any, choices: tuple[str, ...]) -> None:
    """``name`` an identifier and ``value`` (the ``attr``) one of ``choices``, for a
    :class:`Column` or a :class:`Stage` (``what``)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidInputError(f"{what} name must be an identifier; got {name!r}")
    if value not in choices:
        raise InvalidInputError(f"{what} {name!r}: {attr} must be one of {choices}; got {value!r}")


@dataclass(frozen=True)
class Column:
    """One column of the result table.

    Attributes
    ----------
    name : str
    dtype : {"float", "int", "bool", "str"}
    description : str
    """

    name: str
    dtype: str
    description: str = ""

    def __post_init__(self) -> None:
        _check_named("column", self.name, "dtype", self.dtype, COLUMN_DTYPES)


#: the columns every result row starts with
PARAM_COLUMNS: tuple[Column, ...] = (
    Column("config", "int", "global configuration index: cell * repetitions + rep"),
    Column("cell", "int", "grid cell index"),
    Column("rep", "int", "repetition within the cell"),
    Column("distribution", "str", "point distribution"),
    Column("n_points", "int", "N"),
    Column("dim", "int", "embedding dimension n"),
    Column("n_classes", "int", "number of classes P"),
    Column("layout", "str", "label layout"),
    Column("margin", "float", "triplet margin alpha"),
)


@dataclass(frozen=True)
class Stage:
    """A named evaluation stage (its contract: docs/dev/batch_design.md).

    Attributes
    ----------
    name : str
        Registry name; also names the ``<name>_error`` column of a config stage.
    kind : {"vector", "config"}
    func : callable
        The stage function (module level, importable).
    columns : tuple of Column
        The columns ``func`` returns, in table order.
    requires : tuple of str
        Columns of earlier stages that ``func`` reads from ``prev``.
    version : int
        Part of the run fingerprint; bump when the numbers change.
    headline : tuple of str
        Columns shown in the printed summary table.
    description : str
    params : tuple of (str, value) pairs
        Settings of ``func`` that change its numbers (solver tolerances,
        numbers of starts); part of the run fingerprint when not empty.
    """

    name: str
    kind: str
    func: Callable
    columns: tuple[Column, ...]
    requires: tuple[str, ...] = ()
    version: int = 1
    headline: tuple[str, ...] = ()
    description: str = ""
    params: tuple[tuple[str, Any], ...] = ()
    _word: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_named("stage", self.name, "kind", self.kind, STAGE_KINDS)
        if not callable(self.func):
            raise TypeError(f"stage {self.name!r}: func must be callable")
        names = [c.name for c in self.columns]
        if not names or len(set(names)) != len(names):
            raise InvalidInputError(
                f"stage {self.name!r}: columns must be non-empty and distinct; got {names}"
            )
        for h in self.headline:
            if h not in names:
                raise InvalidInputError(
                    f"stage {self.name!r}: headline column {h!r} is not one of its columns"
                )
        word = int.from_bytes(hashlib.blake2b(self.name.encode(), digest_size=4).digest(), "little")
        object.__setattr__(self, "_word", word)

    @property
    def word(self) -> int:
        """32-bit word of this stage's per-configuration random streams."""
        return self._word

    @property
    def error_column(self) -> Column | None:
        """The automatic ``<name>_error`` column of a config stage."""
        if self.kind != "config":
            return None
        return Column(f"{self.name}_error", "str", f"error message of stage {self.name!r}")

    def output_columns(self) -> tuple[Column, ...]:
        """Declared columns plus the error column of a config stage."""
        err = self.error_column
        return self.columns + ((err,) if err is not None else ())

    def signature(self) -> dict:
        """What enters the run fingerprint."""
        module = getattr(self.func, "__module__", "?")
        qualname = getattr(self.func, "__qualname__", type(self.func).__name__)
        sig = {
            "name": self.name,
            "kind": self.kind,
            "version": self.version,
            "func": f"{module}:{qualname}",
            "columns": [[c.name, c.dtype] for c in self.columns],
        }
        if self.params:
            sig["params"] = [[k, v] for k, v in self.params]
        return sig


#: name -> Stage
STAGES: dict[str, Stage] = {}


def register_stage(stage: Stage, *, replace: bool = False) -> Stage:
    """Add ``stage`` to :data:`STAGES` under its name; returns it."""
    check_instance(stage, Stage, "stage")
    if stage.name in STAGES and not replace and STAGES[stage.name] is not stage:
        raise InvalidInputError(
            f"a stage named {stage.name!r} is already registered; pass replace=True"
        )
    STAGES[stage.name] = stage
    return stage


def lookup(spec: str, registry: Mapping[str, Any], label: str, what: str,
           accept: Callable[[Any], bool], unknown: str) -> Any:
    """``registry[spec]``, or the object a ``"module:attribute"`` spec names (``accept``
    checks it is ``what``); an error naming ``label``, and ``unknown`` for another name."""
    if spec in registry:
        return registry[spec]
    if ":" not in spec:
        raise InvalidInputError(unknown)
    mod_name, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise InvalidInputError(
            f"{label} {spec!r}: cannot import module {mod_name!r}: {exc}"
        ) from None
    obj = getattr(mod, attr, None)
    if not accept(obj):
        raise InvalidInputError(
            f"{label} {spec!r}: {mod_name}.{attr} must be {what}; got {type(obj).__name__}"
        )
    return obj


def get_stage(spec: str | Stage) -> Stage:
    """A registered stage by name, or ``"module:attribute"`` naming a :class:`Stage`."""
    if isinstance(spec, Stage):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"a stage is named by a string; got {type(spec).__name__}")
    listed = ", ".join(repr(k) for k in STAGES)
    return lookup(
        spec, STAGES, "stage", "a Stage", lambda obj: isinstance(obj, Stage),
        f"unknown stage {spec!r}; registered stages are {listed} (or pass module:attribute)",
    )


def resolve_stages(specs) -> tuple[Stage, ...]:
    """Resolve stage names, check column names are unique and requirements met."""
    stages = tuple(get_stage(s) for s in specs)
    if not stages:
        raise InvalidInputError("`stages` must name at least one stage; got none")
    seen = {c.name for c in PARAM_COLUMNS}
    names = set()
    for st in stages:
        if st.name in names:
            raise InvalidInputError(f"stage {st.name!r} is listed twice")
        names.add(st.name)
        for r in st.requires:
            if r not in seen:
                raise InvalidInputError(
                    f"stage {st.name!r} requires column {r!r}, which no earlier stage provides"
                )
        for c in st.output_columns():
            if c.name in seen:
                raise InvalidInputError(
                    f"stage {st.name!r}: column {c.name!r} is already produced by an earlier "
                    f"stage or is a parameter column"
                )
            seen.add(c.name)
    return stages


# ---------------------------------------------------------------------------
# built-in stages
# ---------------------------------------------------------------------------


def _cheap(X: np.ndarray, codes: np.ndarray, margin: float, prev: Mapping) -> dict:
    return cheap_from_kernel(X, codes, margin)


#: the vectorised cheap quantities (:mod:`isoapprox.batch.cheap`)
CHEAP = register_stage(Stage(
    "cheap", "vector", _cheap,
    tuple(Column(name, dtype, desc) for name, dtype, desc in CHEAP_FIELDS),
    headline=("batch_hard_max", "diameter", "collapse_ratio", "thickness"),
    description="losses, diameter, enclosing ball, thickness (n <= 2), P > n + 1",
))


def _reference(E: np.ndarray, codes: np.ndarray, margin: float, prev: Mapping,
               rng: np.random.Generator) -> dict:
    ball = geometry.min_enclosing_ball(E)
    return {
        "ref_batch_hard_max": losses.batch_hard_loss(E, codes, margin=margin, reduction="max"),
        "ref_batch_hard_mean": losses.batch_hard_loss(E, codes, margin=margin, reduction="mean"),
        "ref_triplet_mean": losses.triplet_loss(E, codes, margin=margin, reduction="mean"),
        "ref_separated": losses.is_triplet_separated(E, codes, margin=margin),
        "ref_diameter": geometry.diameter(E),
        "ref_d_iso_collapsed": metrics.isometric_error(E, np.zeros_like(E)),
        "ref_meb_radius": ball.radius,
        "ref_meb_radius_lower": ball.lower,
    }


#: the same quantities through the single-configuration public functions,
#: one configuration at a time (a cross-check and the benchmark's baseline)
REFERENCE = register_stage(Stage(
    "reference", "config", _reference,
    (
        Column("ref_batch_hard_max", "float", "batch_hard_loss(max)"),
        Column("ref_batch_hard_mean", "float", "batch_hard_loss(mean)"),
        Column("ref_triplet_mean", "float", "triplet_loss(mean)"),
        Column("ref_separated", "bool", "is_triplet_separated"),
        Column("ref_diameter", "float", "diameter"),
        Column("ref_d_iso_collapsed", "float", "isometric_error(E, 0)"),
        Column("ref_meb_radius", "float", "min_enclosing_ball(E).radius"),
        Column("ref_meb_radius_lower", "float", "min_enclosing_ball(E).lower"),
    ),
    description="single-configuration public functions, looped",
))
