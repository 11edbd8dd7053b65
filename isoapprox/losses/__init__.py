"""The losses: values, gradients and the registry, in one home.

- :mod:`~isoapprox.losses.values`: triplet, batch-hard, contrastive and
  margin loss values, separation and pair-loss reports (zero-loss sets).
- :mod:`~isoapprox.losses.gradients`: the losses with their gradients with
  respect to the embeddings, on validated arrays (the training harness's).
- :mod:`~isoapprox.losses.registry`: :data:`~isoapprox.losses.registry.LOSSES`
  (name -> core, triplet or pair, options, reductions, help) and the
  validating :func:`loss_and_grad` and named ``*_grad`` functions.

Design notes: docs/dev/kernels_design.md (``isoapprox.losses``) and
docs/dev/train_design.md (the losses with gradients).
"""

from __future__ import annotations

from . import gradients, registry, values
from .gradients import *  # noqa: F403
from .registry import *  # noqa: F403
from .values import *  # noqa: F403
from .values import compute_batch_hard, compute_worst_slack  # noqa: F401  (validated callers)

__all__ = [*values.__all__, *gradients.__all__, *registry.__all__]
