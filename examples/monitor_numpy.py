"""Watch a numpy training run collapse with :class:`isoapprox.CollapseMonitor`.

The network and data of ``make_stuck_at_margin.py`` (a tanh MLP 8 -> 16 -> 2,
batch-hard triplet loss with margin 0.2, SGD at a large learning rate, 16
hard Gaussian classes x 4 samples per batch) collapse within a few hundred
steps.  The monitor sees every 10th batch through the trainer's logging
callback, warns when a collapse signature starts (naming the step), runs
the theory on a 16-point subsample every 5th call and appends one JSON line
per call to the log.  Then::

    isoapprox diagnose --history run.jsonl

prints when each signature started and draws the curves over training.
With ``--healthy`` a learning rate of 0.01 on well separated classes trains
without a collapse (no warning).

The monitor needs only plain arrays: in any other loop call
``monitor.update(step, embeddings, labels, loss=loss)`` yourself (see
``monitor_pytorch.py`` for PyTorch).

Usage::

    python examples/monitor_numpy.py [--log run.jsonl] [--healthy] [--steps 300]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from isoapprox import CollapseMonitor
from isoapprox.train import TrainConfig, train

CONFIG = TrainConfig(
    dataset="gaussian", n_classes=24, n_train_classes=16, per_class=8, input_dim=8,
    separation=0.3, noise=1.0, model="mlp", hidden=(16,), activation="tanh",
    embedding_dim=2, loss="batch_hard", margin=0.2, optimizer="sgd", lr=0.3, momentum=0.9,
    batch_size=64, samples_per_class=4, steps=300, log_every=10,
)
#: a run that does not collapse: a small learning rate on well separated classes
HEALTHY = dataclasses.replace(CONFIG, lr=0.01, separation=3.0)


def run(log: Path | None, *, healthy: bool = False, steps: int = 300, seed: int = 0,
        theory_every: int = 5) -> CollapseMonitor:
    """Train with a monitor attached; returns the monitor (its records, its history)."""
    config = dataclasses.replace(HEALTHY if healthy else CONFIG, steps=steps)
    monitor = CollapseMonitor(margin=config.margin, log=log, theory_every=theory_every,
                              overwrite=True)

    def watch(state):  # the trainer's logging hook (every `log_every` steps)
        monitor.update(state.step, state.batch_E, state.batch_y, loss=state.loss.value)
        return None  # adds nothing to the trainer's own history

    train(config, seed=seed, callbacks=[watch], threads=1)
    return monitor


def main(argv: Sequence[str] | None = None) -> CollapseMonitor:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", type=Path, default=Path("run.jsonl"),
                        help="the monitor's JSON-lines log (default run.jsonl; overwritten)")
    parser.add_argument("--healthy", action="store_true", help="train without a collapse")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    args = parser.parse_args(argv)
    monitor = run(args.log, healthy=args.healthy, steps=args.steps)
    intervals = monitor.history().signature_intervals()
    for iv in intervals:
        end = "to the end" if iv["end"] is None else f"until step {iv['end']}"
        print(f"{iv['signature']}: from step {iv['start']} {end}")
    if not intervals:
        print("no collapse signature")
    print(f"log: {args.log}  (isoapprox diagnose --history {args.log})")
    return monitor


if __name__ == "__main__":
    main()
