"""Collapse diagnosis of an embedding: statistics, signatures and a report.

Modules
-------
:mod:`~isoapprox.diagnostics.distances`
    Exact summary and quantiles of the pair distances.
:mod:`~isoapprox.diagnostics.merging`
    Partial and class-level collapse: merged groups of classes (single
    linkage at a margin-relative height) and overlapping class pairs.
:mod:`~isoapprox.diagnostics.statistics`
    Collapse statistics: ranks, normalised statistics, class spread,
    losses and triplets, all at once in one type and entry point,
    :func:`collapse_statistics` (``quick=True``: the part one anchor sweep
    gives, for every training step).
:mod:`~isoapprox.diagnostics.signatures`
    The known collapse signatures, their thresholds and their registry
    (:data:`SIGNATURES`: names, verdict order, help text, docs table).
:mod:`~isoapprox.diagnostics.ideal_distance`
    The theory section: the loss against the distance to the ideal set
    (:func:`diagnose_theory`, :func:`add_theory`).
:mod:`~isoapprox.diagnostics.report`
    :func:`diagnose` and :func:`diagnose_batches`: the report's sections
    and its plain-language verdict.
"""

from __future__ import annotations

from . import distances, ideal_distance, merging, report, signatures, statistics
from .distances import *  # noqa: F403
from .ideal_distance import *  # noqa: F403
from .merging import *  # noqa: F403
from .report import *  # noqa: F403
from .signatures import *  # noqa: F403
from .statistics import *  # noqa: F403

__all__ = [
    *distances.__all__,
    *merging.__all__,
    *statistics.__all__,
    *signatures.__all__,
    *ideal_distance.__all__,
    *report.__all__,
]
