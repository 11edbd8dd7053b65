"""Watch a PyTorch training run with :class:`isoapprox.CollapseMonitor`.

PyTorch is not a dependency of isoapprox: this example imports it when it
runs and exits with a message when it is absent.  With
pytorch-metric-learning installed the loss is its ``TripletMarginLoss``
with a ``BatchHardMiner`` (plain, un-normalised Euclidean distances);
without it, the same batch-hard loss written in a few lines of torch.

The model and data are those of ``monitor_numpy.py`` (a tanh MLP 8 -> 16 ->
2, margin 0.2, SGD at a large learning rate on 16 hard Gaussian classes x 4
samples per batch, made with numpy: nothing is downloaded), so the run
collapses within a few hundred steps.  The monitor needs plain arrays::

    monitor = isoapprox.CollapseMonitor(margin=0.2, log="run.jsonl",
                                        loss_reduction="mean_nonzero")  # pml's reducer
    ...
    monitor.update(step, emb.detach().cpu().numpy(), labels.cpu().numpy(),
                   loss=loss.item())

It never raises on a bad batch (NaN, a single class, a wrong shape): it logs
it and warns once.  Afterwards ``isoapprox diagnose --history run.jsonl``
prints when each signature started and draws the curves over training.

Install and run (CPU is enough)::

    pip install torch pytorch-metric-learning
    python examples/monitor_pytorch.py [--log run.jsonl] [--steps 300] [--every 1]
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isoapprox import CollapseMonitor

MARGIN = 0.2
P, K = 16, 4  # classes per batch, samples per class
N_CLASSES, PER_CLASS, INPUT_DIM = 16, 8, 8


def _torch():
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise SystemExit("monitor_pytorch.py needs PyTorch, which isoapprox does not depend "
                         "on: pip install torch (and optionally pytorch-metric-learning)"
                         ) from None


def _pml_loss(torch):
    """pytorch-metric-learning's batch-hard triplet loss and its reduction, or None
    when it is absent."""
    try:
        losses = importlib.import_module("pytorch_metric_learning.losses")
        miners = importlib.import_module("pytorch_metric_learning.miners")
        distances = importlib.import_module("pytorch_metric_learning.distances")
    except ImportError:
        return None
    dist = distances.LpDistance(normalize_embeddings=False)
    miner = miners.BatchHardMiner(distance=dist)
    loss_fn = losses.TripletMarginLoss(margin=MARGIN, distance=dist)
    # its default reducer (AvgNonZeroReducer) averages over the positive terms
    return (lambda emb, labels: loss_fn(emb, labels, miner(emb, labels))), "mean_nonzero"


def _batch_hard(torch):
    """The batch-hard triplet loss (mean over anchors) in plain torch."""

    def loss(emb, labels):
        d = torch.cdist(emb, emb)
        same = labels[:, None] == labels[None, :]
        eye = torch.eye(len(labels), dtype=torch.bool)
        hardest_pos = torch.where(same & ~eye, d, torch.zeros_like(d)).amax(dim=1)
        hardest_neg = torch.where(same, torch.full_like(d, float("inf")), d).amin(dim=1)
        return torch.relu(hardest_pos - hardest_neg + MARGIN).mean()

    return loss


def run(log: Path | None, *, steps: int = 300, every: int = 1, seed: int = 0,
        theory_every: int = 50) -> CollapseMonitor:
    """Train and monitor; returns the monitor."""
    torch = _torch()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    centres = 0.3 * rng.normal(size=(N_CLASSES, INPUT_DIM))
    y_all = np.repeat(np.arange(N_CLASSES), PER_CLASS)
    X_all = torch.tensor(centres[y_all] + rng.normal(size=(y_all.size, INPUT_DIM)),
                         dtype=torch.float32)
    model = torch.nn.Sequential(torch.nn.Linear(INPUT_DIM, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    loss_fn, reduction = _pml_loss(torch) or (_batch_hard(torch), "mean")
    # the reported loss is compared with the batch's loss of the same reduction
    monitor = CollapseMonitor(margin=MARGIN, log=log, theory_every=theory_every,
                              overwrite=True, loss_reduction=reduction)
    for step in range(steps + 1):
        classes = rng.choice(N_CLASSES, size=P, replace=False)
        idx = np.concatenate([rng.choice(np.flatnonzero(y_all == c), size=K, replace=False)
                              for c in classes])
        labels = torch.as_tensor(y_all[idx])
        emb = model(X_all[idx])
        loss = loss_fn(emb, labels)
        if step % every == 0:
            # plain arrays: the monitor never sees a tensor or the graph
            monitor.update(step, emb.detach().cpu().numpy(), labels.cpu().numpy(),
                           loss=loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return monitor


def main(argv: Sequence[str] | None = None) -> CollapseMonitor:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", type=Path, default=Path("run.jsonl"),
                        help="the monitor's JSON-lines log (default run.jsonl; overwritten)")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--every", type=int, default=1,
                        help="monitor every this many steps (default 1)")
    args = parser.parse_args(argv)
    monitor = run(args.log, steps=args.steps, every=args.every)
    for iv in monitor.history().signature_intervals():
        end = "to the end" if iv["end"] is None else f"until step {iv['end']}"
        print(f"{iv['signature']}: from step {iv['start']} {end}")
    print(f"log: {args.log}  (isoapprox diagnose --history {args.log})")
    return monitor


if __name__ == "__main__":
    main()
