"""Train a small network until its batch-hard loss is stuck at the margin; save a batch.

The planted case of ``isoapprox diagnose``: a one-hidden-layer tanh MLP
(8 -> 16 -> 2) trained with batch-hard triplet loss (margin 0.2) and plain
SGD at a large learning rate (0.3, momentum 0.9) on 16 hard Gaussian
classes (separation 0.3, noise 1), with 16 classes x 4 samples = 64 points
per batch, collapses within a few hundred steps: every embedding ends at
one point and the loss reads the margin.  The batch holds 16 classes in
R^2, far more than n + 1 = 3, so its distance to the nearest
triplet-separated embedding is about D*(16, 2, 0.2) ~ 0.72, 3.6 times the
loss.

The last training batch (its embeddings after the last update, as the
training loop logs them) is saved to ``stuck_at_margin.npz`` beside this
script with arrays ``embeddings`` (64, 2), ``labels`` (64,), ``margin``,
``loss`` (the training loss at the last step) and ``config`` (JSON).
Deterministic on one machine (one seed, one thread; about a second on a
laptop).  The run is chaotic: another OpenBLAS kernel or another SIMD path
of numpy's ``tanh`` changes the last bits, moves the collapse onset (steps
~100 to ~200) and gives other coordinates, but the same stuck-at-margin
outcome (step-300 diameter about 2e-4 to 2e-3, loss within 5e-4 of the
margin).  The shipped ``stuck_at_margin.npz`` is one such outcome; a rerun
elsewhere need not reproduce its digits.

Usage::

    python examples/make_stuck_at_margin.py [--out PATH]
    isoapprox diagnose examples/stuck_at_margin.npz --margin 0.2 --loss 0.2002
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isoapprox.io import atomic_write_bytes
from isoapprox.train import TrainConfig, train

HERE = Path(__file__).resolve().parent
OUT = HERE / "stuck_at_margin.npz"
SEED = 0

CONFIG = TrainConfig(
    dataset="gaussian", n_classes=24, n_train_classes=16, per_class=8, input_dim=8,
    separation=0.3, noise=1.0, model="mlp", hidden=(16,), activation="tanh",
    embedding_dim=2, loss="batch_hard", margin=0.2, optimizer="sgd", lr=0.3, momentum=0.9,
    batch_size=64, samples_per_class=4, steps=300, log_every=100,
)


def make(config: TrainConfig = CONFIG, seed: int = SEED) -> dict[str, np.ndarray]:
    """Train ``config`` and return the last training batch and its loss."""
    captured: dict[str, np.ndarray] = {}

    def last_batch(state):
        if state.step == state.config.steps:
            captured["embeddings"] = np.array(state.batch_E, dtype=np.float64)
            captured["labels"] = np.array(state.batch_y, dtype=np.int64)
            captured["loss"] = np.float64(state.loss.value)
        return None

    result = train(config, seed=seed, callbacks=[last_batch], threads=1)
    if result.diverged or "embeddings" not in captured:
        raise RuntimeError("training did not reach its last step")
    captured["margin"] = np.float64(config.margin)
    captured["config"] = np.array(json.dumps({"config": config.to_dict(), "seed": seed}))
    return captured


def main(argv: Sequence[str] | None = None) -> Path:
    """Train and write the ``.npz``; returns its path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"output file (default {OUT})")
    args = parser.parse_args(argv)
    import io

    buf = io.BytesIO()
    np.savez(buf, **make())
    path = atomic_write_bytes(args.out, buf.getvalue())
    print(path)
    return path


if __name__ == "__main__":
    main()
