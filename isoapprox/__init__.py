"""isoapprox: numerical geometry of isometric approximation for metric learning.

Computes, in float64 and with certified brackets where optimisation is
involved, the quantities of the theory of hard negative mining via the
isometric approximation theorem (Xu et al., ICLR 2024): triplet and
batch-hard losses, triplet separation, isometric error, Hausdorff-like
distances, diameter, thickness, and the distances of an embedding to the
set of triplet-separated ("ideal") embeddings and to the zero-loss sets of
the pairwise contrastive and margin losses.  :class:`CollapseMonitor` watches
any training loop for collapse (docs/monitor.md).

``import isoapprox`` imports neither matplotlib nor cvxpy; they load on
first use of the plotting and optimisation functions.
"""

from __future__ import annotations

from ._progress import show_progress
from ._version import __version__
from .bracket import Bracket
from .diagnostics import (
    ClassSpread,
    CollapseStatistics,
    DiagnoseOptions,
    DistanceSummary,
    LayoutSuggestion,
    QuickStatistics,
    Signature,
    SignatureThresholds,
    TheoryDiagnosis,
    active_triplet_fraction,
    alignment,
    class_spread,
    collapse_statistics,
    detect_signatures,
    diagnose,
    diagnose_batches,
    diagnose_theory,
    distance_quantiles,
    distance_summary,
    effective_rank,
    quick_statistics,
    rankme,
    std_of_l2_normalized,
    suggest_layout,
    uniformity,
)
from .exceptions import (
    CollapseWarning,
    ConvergenceWarning,
    InvalidInputError,
    IsoapproxError,
    MonitorWarning,
    NoTripletError,
    SolverError,
)
from .geometry import BallResult, diameter, farthest_pair, min_enclosing_ball, pairwise_distances
from .ideal import IdealResult, SolverOptions, nearest_ideal, nearest_zero_loss
from .losses import (
    HardestPairs,
    PairLossResult,
    SeparationResult,
    batch_hard_loss,
    contrastive_loss,
    contrastive_report,
    hardest_pairs,
    is_triplet_separated,
    margin_loss,
    margin_loss_report,
    separation_report,
    triplet_loss,
)
from .metrics import (
    IsometricErrorResult,
    RetrievalMetrics,
    hausdorff_distance,
    hausdorff_like,
    isometric_error,
    isometric_error_report,
    retrieval_metrics,
)
from .monitor import CollapseMonitor, MonitorHistory, MonitorUpdate, read_history
from .packing import (
    DStar,
    PackingResult,
    d_star,
    d_star_witness,
    lower_bound_curve,
    min_separated_diameter,
    packing_lower_bound,
    separated_class_count,
)
from .procrustes import ProcrustesResult, minimax_procrustes
from .theory import (
    CheckResult,
    CollapseResult,
    ConstantResult,
    DistanceResult,
    TheoryOptions,
    TheoryResult,
    check_collapse,
    check_iso_haus,
    check_loss_iso,
    check_pair_loss,
    empirical_constant,
    evaluate_theory,
)
from .thickness import ThicknessResult, thickness, thickness_report

__all__ = [
    "CheckResult",
    "CollapseResult",
    "ConstantResult",
    "DistanceResult",
    "TheoryResult",
    "check_collapse",
    "check_iso_haus",
    "check_loss_iso",
    "check_pair_loss",
    "empirical_constant",
    "evaluate_theory",
    "BallResult",
    "Bracket",
    "ClassSpread",
    "CollapseMonitor",
    "CollapseStatistics",
    "CollapseWarning",
    "ConvergenceWarning",
    "DiagnoseOptions",
    "DStar",
    "DistanceSummary",
    "HardestPairs",
    "IdealResult",
    "InvalidInputError",
    "IsoapproxError",
    "IsometricErrorResult",
    "LayoutSuggestion",
    "MonitorHistory",
    "MonitorUpdate",
    "MonitorWarning",
    "NoTripletError",
    "PackingResult",
    "PairLossResult",
    "ProcrustesResult",
    "QuickStatistics",
    "RetrievalMetrics",
    "SeparationResult",
    "Signature",
    "SignatureThresholds",
    "SolverError",
    "SolverOptions",
    "TheoryDiagnosis",
    "TheoryOptions",
    "ThicknessResult",
    "__version__",
    "active_triplet_fraction",
    "alignment",
    "batch_hard_loss",
    "class_spread",
    "collapse_statistics",
    "contrastive_loss",
    "contrastive_report",
    "detect_signatures",
    "diagnose",
    "diagnose_batches",
    "diagnose_theory",
    "diameter",
    "distance_quantiles",
    "distance_summary",
    "d_star",
    "d_star_witness",
    "effective_rank",
    "farthest_pair",
    "hardest_pairs",
    "hausdorff_distance",
    "hausdorff_like",
    "is_triplet_separated",
    "isometric_error",
    "isometric_error_report",
    "lower_bound_curve",
    "margin_loss",
    "margin_loss_report",
    "min_enclosing_ball",
    "min_separated_diameter",
    "separated_class_count",
    "minimax_procrustes",
    "nearest_ideal",
    "nearest_zero_loss",
    "packing_lower_bound",
    "pairwise_distances",
    "quick_statistics",
    "rankme",
    "read_history",
    "retrieval_metrics",
    "separation_report",
    "show_progress",
    "thickness",
    "thickness_report",
    "std_of_l2_normalized",
    "suggest_layout",
    "triplet_loss",
    "uniformity",
]
