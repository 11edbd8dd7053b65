"""Torch-free training harness: small numpy networks trained with triplet losses.

Reproduces, on one CPU machine, the experiments behind the collapse analysis
of hard negative mining: numpy networks (:class:`MLP`, a free
:class:`EmbeddingTable`) trained with batch-hard, all-triplet, semi-hard,
selectively contrastive, contrastive and margin losses (gradients in
:mod:`isoapprox.losses`), on P x K batches of synthetic clusters,
scikit-learn's digits or MNIST-1D (generated offline) with class-disjoint
splits; logged collapse
statistics, retrieval recall and Xuan et al.'s triplet diagram; resumable
parameter sweeps (:func:`run_sweep`, ``isoapprox train``).

Modules
-------
- :mod:`~isoapprox.train.networks`: MLP, embedding table, L2 normalisation.
- :mod:`~isoapprox.train.losses`: former home of the losses with gradients
  (now :mod:`isoapprox.losses`; re-exported).
- :mod:`~isoapprox.train.optim`: SGD (momentum) and Adam (decoupled decay).
- :mod:`~isoapprox.train.data`: data sets, splits, P x K sampler.
- :mod:`~isoapprox.train.evaluate`: collapse statistics, Recall@K, diagram.
- :mod:`~isoapprox.train.trainer`: :class:`TrainConfig`, :func:`train`.
- :mod:`~isoapprox.train.sweep`: grids, per-cell seeds, resumable sweeps.
- :mod:`~isoapprox.train.bounds`: theory of training batches, bound cross-check.
"""

from __future__ import annotations

from ..losses import (
    LOSSES,
    LossResult,
    all_triplet_loss_grad,
    batch_hard_loss_grad,
    contrastive_loss_grad,
    l2_normalize,
    l2_normalize_backward,
    loss_and_grad,
    margin_loss_grad,
    selectively_contrastive_loss_grad,
    semi_hard_loss_grad,
)
from .bounds import (
    BatchTheory,
    CrossCheckCallback,
    TheoryCallback,
    batch_theory,
    crosscheck_rows,
    crosscheck_summary,
    curve_rows,
)
from .data import (
    Dataset,
    DataSplit,
    MissingDependencyError,
    PKSampler,
    build_split,
    class_disjoint_split,
    gaussian_clusters,
    load_digits,
    load_mnist1d,
    resolve_pk,
)
from .evaluate import (
    EmbeddingStats,
    TripletDiagram,
    embedding_stats,
    recall_at_k,
    triplet_diagram,
)
from .networks import MLP, EmbeddingTable
from .optim import SGD, Adam, make_optimizer
from .sweep import (
    Cell,
    RuntimeEstimate,
    SweepResult,
    cell_seed,
    estimate_runtime,
    expand_grid,
    run_cell,
    run_sweep,
    write_sweep_results,
)
from .trainer import LogState, TrainConfig, Trainer, TrainResult, train

__all__ = [
    "curve_rows",
    "crosscheck_summary",
    "crosscheck_rows",
    "batch_theory",
    "TheoryCallback",
    "CrossCheckCallback",
    "BatchTheory",
    "LOSSES",
    "MLP",
    "SGD",
    "Adam",
    "Cell",
    "DataSplit",
    "Dataset",
    "EmbeddingStats",
    "EmbeddingTable",
    "LogState",
    "LossResult",
    "MissingDependencyError",
    "PKSampler",
    "RuntimeEstimate",
    "SweepResult",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "TripletDiagram",
    "all_triplet_loss_grad",
    "batch_hard_loss_grad",
    "build_split",
    "cell_seed",
    "class_disjoint_split",
    "contrastive_loss_grad",
    "embedding_stats",
    "estimate_runtime",
    "expand_grid",
    "gaussian_clusters",
    "l2_normalize",
    "l2_normalize_backward",
    "load_digits",
    "load_mnist1d",
    "loss_and_grad",
    "make_optimizer",
    "margin_loss_grad",
    "recall_at_k",
    "resolve_pk",
    "run_cell",
    "run_sweep",
    "selectively_contrastive_loss_grad",
    "semi_hard_loss_grad",
    "train",
    "triplet_diagram",
    "write_sweep_results",
]
