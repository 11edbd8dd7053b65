"""
Watching a training run collapse
================================

:class:`isoapprox.CollapseMonitor` takes plain arrays from any training
loop: ``monitor.update(step, embeddings, labels, loss=loss)``.  At every
call it computes the statistics of one anchor sweep and checks the collapse
signatures; every ``theory_every`` calls it evaluates the theory (the
certified distance to the ideal set, ``D*``) on a seeded subsample.  Here it
watches the torch-free training harness (:func:`isoapprox.train.train`):
a tanh MLP on 16 hard Gaussian classes, batch-hard loss at margin 0.2, SGD
at a large learning rate, which collapses within a few hundred steps (the
setting of ``examples/monitor_numpy.py``, shortened).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

import isoapprox as ia
from isoapprox.train import TrainConfig, train

config = TrainConfig(
    dataset="gaussian", n_classes=24, n_train_classes=16, per_class=8, input_dim=8,
    separation=0.3, noise=1.0, model="mlp", hidden=(16,), activation="tanh",
    embedding_dim=2, loss="batch_hard", margin=0.2, optimizer="sgd", lr=0.3, momentum=0.9,
    batch_size=64, samples_per_class=4, steps=200, log_every=10,
)
monitor = ia.CollapseMonitor(margin=config.margin, theory_every=2)


def watch(state):  # the trainer's logging hook, every `log_every` steps
    monitor.update(state.step, state.batch_E, state.batch_y, loss=state.loss.value)


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ia.CollapseWarning)
    train(config, seed=0, callbacks=[watch], threads=1)
for w in caught:
    if issubclass(w.category, ia.CollapseWarning):
        print(str(w.message)[:120], "...")

history = monitor.history()
for iv in history.signature_intervals():
    end = "to the end" if iv["end"] is None else f"until step {iv['end']}"
    print(f"{iv['signature']}: from step {iv['start']} {end}")

# %%
# The curves over training: the loss falls to the margin, and stays there,
# as the batch's diameter collapses.  The distance of the subsample to the
# ideal set (bracketed) falls with the loss at first, then stops at
# ``D*(P', n, margin)`` of the subsample's ``P'`` classes, above the loss
# (statement 4 of the theory: a collapsed batch has loss ``alpha`` while its
# distance to the ideal set is ``D*``).

steps = history.steps()
theory = history.theory_updates()
t_steps = np.array([u["step"] for u in theory])
d_iso = np.array([u["theory"]["d_iso"] for u in theory])
d_lo = np.array([u["theory"]["d_iso_lower"] for u in theory])
d_hi = np.array([u["theory"]["d_iso_upper"] for u in theory])
d_star = np.array([u["theory"]["d_star"] for u in theory])

fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
ax = axes[0]
ax.plot(steps, history.column("loss", section=None), label="batch-hard loss (mean)")
ax.plot(steps, history.column("diameter"), label="diameter of the batch")
ax.axhline(config.margin, color="k", ls=":", lw=1, label="margin")
ax.set_yscale("log")
ax.legend(fontsize=8)
for iv in history.signature_intervals():
    if iv["signature"] in ("all_distances_small", "stuck_at_margin"):
        end = steps[-1] if iv["end"] is None else iv["end"]
        for a in axes:
            a.axvspan(iv["start"], end, color="C3", alpha=0.08, lw=0)
ax = axes[1]
ax.fill_between(t_steps, d_lo, d_hi, color="C2", alpha=0.3, lw=0)
ax.plot(t_steps, d_iso, "o-", color="C2", ms=3, label="d_iso(subsample, F_TS), bracketed")
ax.plot(t_steps, d_star, "--", color="k", lw=1, label="D*(P', n, margin)")
ax.set_xlabel("step")
ax.legend(fontsize=8)
axes[0].set_title("collapse signatures held in the shaded steps", fontsize=10)
fig.tight_layout()
