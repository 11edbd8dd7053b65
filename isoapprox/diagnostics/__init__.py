"""Collapse diagnosis of an embedding: statistics, signatures and a report.

Modules
-------
:mod:`~isoapprox.diagnostics.distances`
    Exact summary and quantiles of the pair distances.
:mod:`~isoapprox.diagnostics.statistics`
    Collapse statistics: ranks, normalised statistics, class spread,
    losses and triplets, all at once in :func:`collapse_statistics`.
:mod:`~isoapprox.diagnostics.signatures`
    The known collapse signatures and their thresholds.
:mod:`~isoapprox.diagnostics.report`
    :func:`diagnose` and :func:`diagnose_batches`: the report's sections
    and its plain-language verdict.
"""

from __future__ import annotations

from .distances import (
    DEFAULT_QUANTILES,
    MAX_CANDIDATES,
    N_BINS,
    DistanceSummary,
    distance_quantiles,
    distance_summary,
)
from .report import (
    DEFAULT_SECTIONS,
    MAX_TRIPLET_TERMS,
    Batch,
    DiagnoseOptions,
    diagnose,
    diagnose_batches,
    verdict,
)
from .signatures import (
    CLASS_COLLAPSE_RATIO,
    DIMENSIONAL_COLLAPSE_RATIO,
    FULL_COLLAPSE_RATIO,
    LN2,
    SIGNATURE_NAMES,
    SOFT_MARGIN_ATOL,
    SOFT_MARGIN_DIAMETER,
    STUCK_DIAMETER_RATIO,
    STUCK_MARGIN_RTOL,
    Signature,
    SignatureThresholds,
    detect_signatures,
)
from .statistics import (
    RANKME_EPS,
    ClassSpread,
    CollapseStatistics,
    active_triplet_fraction,
    alignment,
    class_spread,
    collapse_statistics,
    effective_rank,
    rankme,
    std_of_l2_normalized,
    uniformity,
)

__all__ = [
    "CLASS_COLLAPSE_RATIO",
    "DEFAULT_QUANTILES",
    "DEFAULT_SECTIONS",
    "DIMENSIONAL_COLLAPSE_RATIO",
    "FULL_COLLAPSE_RATIO",
    "LN2",
    "MAX_CANDIDATES",
    "MAX_TRIPLET_TERMS",
    "N_BINS",
    "RANKME_EPS",
    "SIGNATURE_NAMES",
    "SOFT_MARGIN_ATOL",
    "SOFT_MARGIN_DIAMETER",
    "STUCK_DIAMETER_RATIO",
    "STUCK_MARGIN_RTOL",
    "Batch",
    "ClassSpread",
    "CollapseStatistics",
    "DiagnoseOptions",
    "DistanceSummary",
    "Signature",
    "SignatureThresholds",
    "active_triplet_fraction",
    "alignment",
    "class_spread",
    "collapse_statistics",
    "detect_signatures",
    "diagnose",
    "diagnose_batches",
    "distance_quantiles",
    "distance_summary",
    "effective_rank",
    "rankme",
    "std_of_l2_normalized",
    "uniformity",
    "verdict",
]
