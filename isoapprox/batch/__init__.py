"""Batch evaluation of the bounds over many random configurations.

The pieces, in the order data flows through them:

- :mod:`~isoapprox.batch.generators`: seeded configurations (distributions,
  label layouts), each reproducible alone from the root seed;
- :mod:`~isoapprox.batch.adversarial`: a search for the worst case of a
  pluggable objective (the ``adversarial`` distribution);
- :mod:`~isoapprox.batch.cheap`: the cheap quantities of many
  configurations in one vectorised numba call;
- :mod:`~isoapprox.batch.stages`: the registry of evaluation stages (vector
  stages over a chunk, per-configuration stages for solvers);
- :mod:`~isoapprox.batch.expensive`: the per-configuration ``ideal`` stage
  (nearest ideal embeddings, ``c``, ``theta``, statements 1-4 with
  brackets), the ``points`` stage and the adversarial objectives ``c`` and
  ``c_incumbent``;
- :mod:`~isoapprox.batch.grid` and :mod:`~isoapprox.batch.engine`: the grid,
  chunks as tasks on a local process pool or a Dask cluster, resumable
  tidy result files;
- :mod:`~isoapprox.batch.summary`: per-cell summaries;
- :mod:`~isoapprox.batch.best`: the best configurations of a finished run
  by a column (for instance the largest ``c`` an adversarial search found).
"""

from __future__ import annotations

from .adversarial import (
    OBJECTIVES,
    SearchResult,
    adversarial_search,
    get_objective,
    register_objective,
)
from .best import best_rows, check_best_column, save_best
from .cheap import CHEAP_FIELDS, cheap_quantities
from .engine import (
    BatchResult,
    ChunkTask,
    claim_batch_output,
    evaluate_chunk,
    plan,
    run_batch,
    run_chunk,
)
from .expensive import IDEAL, IDEAL_COLUMNS, POINTS, IdealSettings, ideal_quantities, ideal_stage
from .generators import (
    DISTRIBUTIONS,
    LAYOUTS,
    GeneratorOptions,
    class_sizes,
    config_generator,
    generate,
    layout_codes,
)
from .grid import PARAM_COLUMNS, BatchConfig, Cell, Grid
from .stages import STAGES, Column, Stage, get_stage, register_stage
from .summary import format_table, summarise

__all__ = [
    "CHEAP_FIELDS",
    "IDEAL",
    "IDEAL_COLUMNS",
    "POINTS",
    "DISTRIBUTIONS",
    "LAYOUTS",
    "OBJECTIVES",
    "PARAM_COLUMNS",
    "STAGES",
    "BatchConfig",
    "BatchResult",
    "Cell",
    "ChunkTask",
    "Column",
    "GeneratorOptions",
    "Grid",
    "IdealSettings",
    "SearchResult",
    "Stage",
    "adversarial_search",
    "best_rows",
    "check_best_column",
    "claim_batch_output",
    "cheap_quantities",
    "class_sizes",
    "config_generator",
    "evaluate_chunk",
    "format_table",
    "generate",
    "get_objective",
    "get_stage",
    "ideal_quantities",
    "ideal_stage",
    "layout_codes",
    "plan",
    "register_objective",
    "register_stage",
    "run_batch",
    "run_chunk",
    "save_best",
    "summarise",
]
