"""The grid of a batch run: cells, repetitions, chunks and the run's configuration.

A :class:`Grid` is the product ``N x n x classes x layout x margin x
distribution`` (in that order, the last varying fastest) times
``repetitions``.  Configuration ``(cell c, repetition r)`` has the global
index ``c * repetitions + r``; a chunk is a contiguous range of repetitions
of one cell, so all its configurations share ``(N, n)`` and are evaluated by
the vectorised stages in one call.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from .._validation import check_instance, check_int, check_margin, check_option
from ..exceptions import InvalidInputError
from .generators import (
    DISTRIBUTIONS,
    LAYOUTS,
    GeneratorOptions,
    cell_words,
    validate_cell,
)
from .stages import PARAM_COLUMNS, Column, Stage, resolve_stages

__all__ = [
    "FORMATS",
    "PARAM_COLUMNS",
    "BatchConfig",
    "Cell",
    "Grid",
]

FORMATS = ("csv", "jsonl")


@dataclass(frozen=True)
class Cell:
    """One grid cell: the parameters shared by its repetitions."""

    distribution: str
    n_points: int
    dim: int
    n_classes: int
    layout: str
    margin: float

    def words(self) -> tuple[int, int]:
        """The cell's seed words (the margin is not part of them)."""
        return cell_words(self.distribution, self.n_points, self.dim, self.n_classes, self.layout)

    def to_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        return (f"{self.distribution} N={self.n_points} n={self.dim} P={self.n_classes} "
                f"{self.layout} alpha={self.margin:g}")


def _tuple_of(values, name: str, kind) -> tuple:
    if isinstance(values, (str, int, float)):
        values = (values,)
    out = tuple(values)
    if not out:
        raise InvalidInputError(f"`{name}` must list at least one value; got none")
    if len(set(out)) != len(out):
        raise InvalidInputError(f"`{name}` must not repeat values; got {list(out)}")
    return tuple(kind(v) for v in out)


@dataclass(frozen=True)
class Grid:
    """The parameter grid of a batch run.

    Parameters
    ----------
    n_points, dims, classes : sequence of int
        ``N``, ``n`` and ``P`` values.
    layouts : sequence of str
        Label layouts (:data:`~isoapprox.batch.generators.LAYOUTS`).
    margins : sequence of float
        Margins ``alpha >= 0``.
    distributions : sequence of str
        Point distributions (:data:`~isoapprox.batch.generators.DISTRIBUTIONS`).
    repetitions : int
        Configurations per cell.
    skip_invalid : bool, default False
        Drop cells that admit no triplet (``P > N - 1``) instead of raising;
        they are listed in :attr:`skipped`.
    """

    n_points: tuple[int, ...] = (5,)
    dims: tuple[int, ...] = (2,)
    classes: tuple[int, ...] = (2,)
    layouts: tuple[str, ...] = ("balanced",)
    margins: tuple[float, ...] = (0.0,)
    distributions: tuple[str, ...] = ("gaussian",)
    repetitions: int = 1000
    skip_invalid: bool = False
    _cells: tuple[Cell, ...] = field(default=(), init=False, repr=False, compare=False)
    _skipped: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        def set_(name, check):
            object.__setattr__(self, name, _tuple_of(getattr(self, name), name, check))

        set_("n_points", lambda v: check_int(v, "n_points", minimum=3))
        set_("dims", lambda v: check_int(v, "dims", minimum=1))
        set_("classes", lambda v: check_int(v, "classes", minimum=2))
        set_("layouts", lambda v: check_option(v, "layouts", LAYOUTS))
        set_("margins", lambda v: check_margin(v, "margins"))
        set_("distributions", lambda v: check_option(v, "distributions", DISTRIBUTIONS))
        object.__setattr__(self, "repetitions",
                           check_int(self.repetitions, "repetitions", minimum=1, maximum=2**32))
        cells, skipped = [], []
        for N, n, P, lay, a, dist in itertools.product(
            self.n_points, self.dims, self.classes, self.layouts, self.margins, self.distributions
        ):
            cell = Cell(dist, N, n, P, lay, a)
            try:
                validate_cell(dist, N, n, P, lay)
            except InvalidInputError as exc:
                if not self.skip_invalid:
                    raise InvalidInputError(
                        f"grid cell ({cell.label()}): {exc} (pass skip_invalid / "
                        f"--skip-invalid to drop such cells)"
                    ) from None
                skipped.append(cell.label())
                continue
            cells.append(cell)
        if not cells:
            raise InvalidInputError("the grid has no valid cell (every cell admits no triplet)")
        object.__setattr__(self, "_cells", tuple(cells))
        object.__setattr__(self, "_skipped", tuple(skipped))

    @property
    def cells(self) -> tuple[Cell, ...]:
        """Valid cells in product order."""
        return self._cells

    @property
    def skipped(self) -> tuple[str, ...]:
        """Labels of the cells dropped by ``skip_invalid``."""
        return self._skipped

    @property
    def n_configurations(self) -> int:
        return len(self._cells) * self.repetitions

    def to_dict(self) -> dict:
        axes = ("n_points", "dims", "classes", "layouts", "margins", "distributions")
        return {**{k: list(getattr(self, k)) for k in axes},
                "repetitions": self.repetitions, "skip_invalid": self.skip_invalid}


@dataclass(frozen=True)
class BatchConfig:
    """Everything that determines the rows of a batch run.

    Parameters
    ----------
    grid : Grid
    seed : int, default 0
        Root seed of every random stream.
    stages : sequence of str or Stage, default ("cheap",)
        Evaluation stages in order (names, ``module:attribute`` or objects).
    chunk_size : int, default 4096
        Configurations per task (a chunk never spans two cells).
    options : GeneratorOptions
        Distribution parameters.
    format : {"csv", "jsonl"}, default "csv"
        Format of the result table.
    """

    grid: Grid = field(default_factory=Grid)
    seed: int = 0
    stages: tuple = ("cheap",)
    chunk_size: int = 4096
    options: GeneratorOptions = field(default_factory=GeneratorOptions)
    format: str = "csv"

    def __post_init__(self) -> None:
        check_instance(self.grid, Grid, "grid")
        check_instance(self.options, GeneratorOptions, "options")
        check_int(self.seed, "seed", minimum=0)
        check_int(self.chunk_size, "chunk_size", minimum=1)
        check_option(self.format, "format", FORMATS)
        stages = self.stages
        if isinstance(stages, (str, Stage)):
            stages = (stages,)
        object.__setattr__(self, "stages", tuple(stages))
        self.resolved_stages()  # validates

    def resolved_stages(self) -> tuple[Stage, ...]:
        return resolve_stages(self.stages)

    def columns(self) -> tuple[Column, ...]:
        """All result columns, in table order."""
        cols = list(PARAM_COLUMNS)
        for st in self.resolved_stages():
            cols.extend(st.output_columns())
        return tuple(cols)

    def chunks(self) -> Iterable[tuple[int, int, Cell, int, int]]:
        """``(chunk, cell_index, cell, start, stop)`` in chunk order."""
        k = 0
        reps = self.grid.repetitions
        for c, cell in enumerate(self.grid.cells):
            for start in range(0, reps, self.chunk_size):
                yield k, c, cell, start, min(start + self.chunk_size, reps)
                k += 1

    @property
    def n_chunks(self) -> int:
        per = -(-self.grid.repetitions // self.chunk_size)
        return per * len(self.grid.cells)

    def to_dict(self) -> dict:
        return {
            "grid": self.grid.to_dict(),
            "seed": self.seed,
            "stages": [s.signature() for s in self.resolved_stages()],
            "chunk_size": self.chunk_size,
            "options": self.options.to_dict(),
            "format": self.format,
        }

    @classmethod
    def from_dict(cls, doc: Mapping) -> BatchConfig:
        """Rebuild from :meth:`to_dict` (stages by name)."""
        grid = Grid(**doc["grid"])
        stages = tuple(s["name"] if isinstance(s, Mapping) else s for s in doc["stages"])
        return cls(grid=grid, seed=doc["seed"], stages=stages, chunk_size=doc["chunk_size"],
                   options=GeneratorOptions(**doc["options"]), format=doc["format"])

    def fingerprint(self) -> str:
        """SHA-256 of everything that determines the rows (not the executor)."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()
