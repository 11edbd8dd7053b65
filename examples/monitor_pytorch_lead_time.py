"""Lead time and false alarms of :class:`isoapprox.CollapseMonitor` on PyTorch runs.

A deep-metric-learning run as a practitioner writes it: scikit-learn's
digits (8 x 8 images, 10 classes; a stratified 75 / 25 split of the samples,
pixels / 16), an MLP 64 -> 128 -> d (ReLU), pytorch-metric-learning's
``TripletMarginLoss(margin=0.2)`` with a ``BatchHardMiner`` (its default
reducer, ``AvgNonZeroReducer``: the monitor gets ``loss_reduction=
"mean_nonzero"``), batches of P classes x K samples drawn at every step.
The monitor sees every step (the detached batch embedding, its labels and
the loss pml reports).  Set-ups:

- ``collapse_2d_lr1e-3``: L2-normalised 2-d embeddings, P = 10 x K = 32, Adam
  lr 1e-3 (the set-up reported to collapse to chance Recall@1 ~0.09);
- ``collapse_2d_lr1e-2``: the same at lr 1e-2;
- ``healthy_16d``: 16-d normalised, P = 10 x K = 8, Adam lr 1e-3;
- ``healthy_32d_sgd``: 32-d normalised, P = 8 x K = 4, SGD lr 0.05 momentum 0.9;
- ``compressed_16d_K32``: ``healthy_16d`` with P = 10 x K = 32;
- ``compressed_16d_lr1e-2``: ``healthy_16d`` at lr 1e-2.

The last two end at a held-out Recall@1 of 0.88-1.00 (healthy, as a
practitioner judges a run), yet early on their embedding shrinks 8-20x into a
small cap of the sphere (the loss sitting at the margin for a while) before
it spreads out again: a warning there counts as a false alarm.

Per run it prints the held-out Recall@1 at the end
(:func:`isoapprox.retrieval_metrics` on the test split; also before training
and at the first warning), the step and
signature of the monitor's first warning, the first onsets of ``shrinking``,
``stuck_at_margin`` and ``partial_collapse`` (which only logs by default),
the step from which the reported loss stays within 2 % of the margin for 20
steps (as in ``monitor_lead_time.py``), the lead (that step minus the first
warning's), the warnings (a warning in a healthy run is a false alarm) and
the monitor's CPU time per update against the training step's
(``time.process_time``, medians; the theory calls, every
``--theory-every`` updates and at onsets, are counted apart).

Usage::

    pip install torch pytorch-metric-learning scikit-learn
    python examples/monitor_pytorch_lead_time.py [--seeds 0,1,2] [--steps 600]
        [--setups A,B] [--theory-every 100] [--recall-every N] [--json out.json]

Measured (5 seeds, 600 steps, the shared 2-core machine, one torch thread):
``shrinking`` was the first warning in all 10 collapsing runs, at steps 3-14,
17-324 steps before the loss settled at the margin; but the 2-d runs are at
chance from the start (held-out Recall@1 0.13-0.22 before training, never
above 0.29), so the warning saves no learned structure.  No warning in the
10 healthy runs (nor over 2,000 steps, 3 seeds each), but ``shrinking``
warned in all 10 ``compressed_*`` runs, which recover.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time
import warnings
from collections.abc import Sequence

import numpy as np

from isoapprox import CollapseMonitor, CollapseWarning, retrieval_metrics
from isoapprox.diagnostics.signatures import STUCK_MARGIN_RTOL

MARGIN = 0.2
#: steps the loss must stay at the margin to count as having reached it
PLATEAU = 20

#: name -> (embedding dim, P, K, optimiser, lr, expected to collapse)
SETUPS = {
    "collapse_2d_lr1e-3": (2, 10, 32, "adam", 1e-3, True),
    "collapse_2d_lr1e-2": (2, 10, 32, "adam", 1e-2, True),
    "healthy_16d": (16, 10, 8, "adam", 1e-3, False),
    "healthy_32d_sgd": (32, 8, 4, "sgd", 0.05, False),
    # healthy by held-out Recall@1 (0.97-0.99), but the embedding shrinks into a
    # small cap of the sphere and the loss sits at the margin: a warning here
    # counts as a false alarm
    "compressed_16d_K32": (16, 10, 32, "adam", 1e-3, False),
    "compressed_16d_lr1e-2": (16, 10, 8, "adam", 1e-2, False),
}


def _imports():
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        raise SystemExit("monitor_pytorch_lead_time.py needs PyTorch, which isoapprox does "
                         "not depend on: pip install torch pytorch-metric-learning "
                         "(a CPU build is enough)") from None
    try:
        losses = importlib.import_module("pytorch_metric_learning.losses")
        miners = importlib.import_module("pytorch_metric_learning.miners")
    except ImportError:
        raise SystemExit("monitor_pytorch_lead_time.py needs pytorch-metric-learning: "
                         "pip install pytorch-metric-learning") from None
    try:
        datasets = importlib.import_module("sklearn.datasets")
        model_selection = importlib.import_module("sklearn.model_selection")
    except ImportError:
        raise SystemExit("monitor_pytorch_lead_time.py needs scikit-learn (the digits): "
                         "pip install scikit-learn") from None
    return torch, losses, miners, datasets, model_selection


def _first_warning_summary(first: dict[str, int], warned: Sequence[str]) -> tuple:
    onsets = sorted((first[n], n) for n in warned if n in first)
    return onsets[0] if onsets else (None, None)


def one_run(mods, setup: str, seed: int, steps: int, theory_every: int,
            recall_every: int = 0) -> dict:
    torch, losses, miners, datasets, model_selection = mods
    dim, P, K, opt_name, lr, collapses = SETUPS[setup]
    digits = datasets.load_digits()
    X = digits.data.astype(np.float32) / 16.0
    y = digits.target.astype(np.int64)
    X_tr, X_te, y_tr, y_te = model_selection.train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    X_tr_t, X_te_t = torch.from_numpy(X_tr), torch.from_numpy(X_te)
    by_class = [np.flatnonzero(y_tr == c) for c in range(10)]

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                            torch.nn.Linear(128, dim))

        def forward(self, x):
            return torch.nn.functional.normalize(self.body(x), dim=1)

    model = Net()
    if opt_name == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    miner = miners.BatchHardMiner()
    loss_fn = losses.TripletMarginLoss(margin=MARGIN)
    mon = CollapseMonitor(margin=MARGIN, theory_every=theory_every,
                          loss_reduction="mean_nonzero")
    loss_curve: list[float] = []
    step_cpu: list[float] = []
    mon_cpu: list[float] = []
    theory_cpu: list[float] = []
    recall_curve: list[tuple[int, float]] = []
    recall_at_warning = None

    def test_recall() -> float:
        model.eval()
        with torch.no_grad():
            E_te = model(X_te_t).numpy()
        model.train()
        return float(retrieval_metrics(E_te, y_te).recall_at_1)

    recall_init = test_recall()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CollapseWarning)
        for step in range(steps):
            # the order of the docs: forward, loss, monitor, backward, step
            t0 = time.process_time()
            classes = rng.choice(10, size=P, replace=False)
            idx = np.concatenate([rng.choice(by_class[c], size=K, replace=False)
                                  for c in classes])
            labels = torch.from_numpy(y_tr[idx])
            emb = model(X_tr_t[idx])
            loss = loss_fn(emb, labels, miner(emb, labels))
            t1 = time.process_time()
            upd = mon.update(step, emb.detach().cpu().numpy(), labels.numpy(),
                             loss=loss.item())
            t2 = time.process_time()
            (theory_cpu if upd.theory is not None else mon_cpu).append(t2 - t1)
            loss_curve.append(float(loss.item()))
            # held-out Recall@1 of the model that made this batch (not timed)
            if recall_at_warning is None and set(upd.onsets) & set(mon.warn):
                recall_at_warning = test_recall()
            if recall_every and step % recall_every == 0:
                recall_curve.append((step, test_recall()))
            t3 = time.process_time()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_cpu.append((t1 - t0) + (time.process_time() - t3))
    recall = test_recall()
    first: dict[str, int] = {}
    ended: dict[str, int] = {}
    for rec in mon.records[1:]:
        for name in rec.get("onsets", ()):
            first.setdefault(name, rec["step"])
        for name in rec.get("ends", ()):
            ended.setdefault(name, rec["step"])
    near = [abs(v - MARGIN) <= STUCK_MARGIN_RTOL * MARGIN for v in loss_curve]
    at_margin = next((k for k in range(len(near))
                      if len(near[k:k + PLATEAU]) == PLATEAU and all(near[k:k + PLATEAU])),
                     None)
    warn_step, warn_name = _first_warning_summary(first, mon.warn)
    n_warn = sum(1 for w in caught if issubclass(w.category, CollapseWarning))
    med_step = statistics.median(step_cpu)
    med_mon = statistics.median(mon_cpu) if mon_cpu else float("nan")
    return {
        "setup": setup, "seed": seed, "collapses": collapses, "steps": steps,
        "recall_at_1": float(recall), "recall_init": recall_init,
        "recall_at_warning": recall_at_warning, "recall_curve": recall_curve,
        "final_loss": loss_curve[-1],
        "holding_at_end": list(mon.records[-1].get("signatures", ())),
        "first_warning_step": warn_step, "first_warning": warn_name,
        "shrinking": first.get("shrinking"), "stuck_at_margin": first.get("stuck_at_margin"),
        "partial_collapse": first.get("partial_collapse"),
        "all_distances_small": first.get("all_distances_small"),
        "loss_at_margin": at_margin,
        "lead": None if warn_step is None or at_margin is None else at_margin - warn_step,
        "warnings": n_warn, "first_ends": ended,
        "diameter_ratio": [r["stats"]["diameter"] / r["stats"]["diameter_running_max"]
                           for r in mon.records[1:] if r.get("kind") == "update"
                           and r["stats"]["diameter_running_max"] > 0],
        "warned": [str(w.message).split(": collapse signature ")[-1].split(" started")[0]
                   for w in caught if issubclass(w.category, CollapseWarning)],
        "onsets": first,
        "false_alarm": (not collapses) and n_warn > 0,
        "step_cpu_ms": 1e3 * med_step, "monitor_cpu_ms": 1e3 * med_mon,
        "monitor_over_step": med_mon / med_step if med_step > 0 else float("nan"),
        "theory_calls": len(theory_cpu),
        "theory_cpu_ms": 1e3 * statistics.median(theory_cpu) if theory_cpu else None,
        "monitor_total_over_train": (sum(mon_cpu) + sum(theory_cpu)) / max(sum(step_cpu), 1e-12),
    }


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


COLUMNS = (("setup", 20), ("seed", 5), ("R@1", 6), ("R@1@0", 6), ("R@1@w", 6),
           ("1st warning", 24), ("shrink", 7),
           ("stuck", 6), ("partial", 8), ("loss=m", 7), ("lead", 6), ("warns", 6),
           ("mon ms", 7), ("step ms", 8), ("mon/step", 9), ("theory", 7), ("tot", 6))


def _row(r: dict) -> str:
    warn = "-" if r["first_warning_step"] is None else \
        f"{r['first_warning_step']} {r['first_warning']}"
    rw = r["recall_at_warning"]
    vals = (r["setup"], r["seed"], f"{r['recall_at_1']:.3f}", f"{r['recall_init']:.3f}",
            None if rw is None else f"{rw:.3f}", warn, r["shrinking"],
            r["stuck_at_margin"], r["partial_collapse"], r["loss_at_margin"], r["lead"],
            r["warnings"], f"{r['monitor_cpu_ms']:.2f}", f"{r['step_cpu_ms']:.2f}",
            f"{r['monitor_over_step']:.2f}", r["theory_calls"],
            f"{r['monitor_total_over_train']:.2f}")
    return "".join(f"{_fmt(v):>{w}}" if i else f"{_fmt(v):<{w}}"
                   for i, (v, (_, w)) in enumerate(zip(vals, COLUMNS, strict=True)))


def main(argv: Sequence[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    p.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    p.add_argument("--setups", default=",".join(SETUPS),
                   help=f"comma-separated, of {', '.join(SETUPS)} (default all)")
    p.add_argument("--theory-every", type=int, default=100,
                   help="the monitor's theory_every (default 100, the monitor's; 0: never)")
    p.add_argument("--recall-every", type=int, default=0,
                   help="also record the held-out Recall@1 every this many steps in the "
                        "JSON (default 0: only at the start, the first warning and the end)")
    p.add_argument("--json", default=None, help="write the rows to this JSON file")
    args = p.parse_args(argv)
    mods = _imports()
    torch = mods[0]
    torch.set_num_threads(1)
    for name in args.setups.split(","):
        if name not in SETUPS:
            p.error(f"unknown set-up {name!r}; choose from {', '.join(SETUPS)}")
    print("".join(f"{h:>{w}}" if i else f"{h:<{w}}" for i, (h, w) in enumerate(COLUMNS)))
    rows = []
    for name in args.setups.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            r = one_run(mods, name, seed, args.steps, args.theory_every,
                        args.recall_every)
            rows.append(r)
            print(_row(r), flush=True)
    healthy = [r for r in rows if not r["collapses"]]
    print(f"false alarms (healthy runs with a warning): "
          f"{sum(r['false_alarm'] for r in healthy)} of {len(healthy)}")
    print("columns: R@1 held-out Recall@1 at the end, R@1@0 before training, R@1@w at the"
          " first warning; 1st warning: step and signature; shrink / stuck /"
          " partial: first onset of shrinking / stuck_at_margin / partial_collapse;"
          " loss=m: loss within 2% of the margin for 20 steps from this step; lead = loss=m -"
          " 1st warning; mon ms / step ms: median CPU per update (theory calls apart) / per"
          " training step; theory: theory calls; tot: all monitor CPU / all training CPU")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
