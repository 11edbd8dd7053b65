"""Collapse phase diagram: the probability of collapse over classes per batch and dimension.

The theory (SPEC section 3, statement 4) says that a collapsed batch of ``P``
classes has batch-hard loss ``alpha`` (the margin) while its distance to the
ideal set is ``D*(P, n, alpha)``, the least diameter of ``P`` points of
``R^n`` pairwise ``>= alpha``: ``alpha`` for ``P <= n + 1``, larger beyond.
So the loss stops being a faithful proxy for the distance once ``P > n + 1``,
and hard negative mining should collapse "when N >> n".  This script measures
the probability of collapse against ``P`` (classes per batch, ``K = 4``
samples each) and ``n`` (embedding dimension) with the torch-free harness
(:mod:`isoapprox.train`), over

- loss set-ups: batch-hard on raw embeddings, batch-hard on L2-normalised
  embeddings, and Xuan et al.'s selectively contrastive loss (normalised) as
  the control;
- optimisers: SGD with momentum and Adam;
- data sets: synthetic Gaussian classes (64 training classes), the same
  generator with overlapping classes in a low input dimension,
  scikit-learn's digits and MNIST-1D (generated offline by the ``mnist1d``
  package; both with 8 training classes, so ``P <= 8``);

with several seeds a cell.  Each run records the held-out collapse outcome
(the harness's: final held-out diameter below ``collapse_rtol`` = 0.1 of the
initial one), Recall@1 on the held-out classes, the final batch-hard loss
against the margin, and, on the last training batch, the certified distance
to the ideal set of a ``P' x 2`` sub-batch (``nearest_ideal`` with
``effort="quick"``: a bracket ``lower <= d_iso <= upper``) against
``D*(P', n, alpha)``.

The analysis (from the results file only): collapse rates with Wilson
intervals per cell, a logistic fit of the probability of collapse against
``log(P / (n + 1))`` with its Fisher-information confidence band, and per
set-up a verdict on "collapse when P >> n" (reproduced / refuted /
qualified; :func:`verdict`).

Usage::

    python experiments/collapse_phase.py [--grid bounded|full|smoke] [--jobs N |
        --scheduler ADDRESS] [--out PATH] [--overwrite | --resume] [--figures DIR]
    python experiments/collapse_phase.py --smoke --out /tmp/smoke.json --figures /tmp/figs

Grids (``--grid``): ``bounded`` (the default and the committed results: 4 data
sets x P 2..64 (digits, mnist1d: 2..8) x n 2..32 x 3 set-ups x 2 optimisers x
5 seeds, 800 steps),
``full`` (more steps, seeds, dimensions and the semi-hard control; its cost
is in docs/collapse_phase.md) and ``smoke`` (seconds).  ``--dry-run`` prints
the number of runs and an estimate of their cost.

Results: ``experiments/results/collapse_phase/collapse_phase_GRID.json`` (every
record and its history, configuration, seeds, versions and BLAS) with a CSV
beside it, and ``..._compact.json`` (slim records and the analysis tables,
small enough to commit); figures build from either (``--figures DIR``; alone
when the results exist).  The run flags are those of every long run
(:mod:`isoapprox.runs`, docs/cli.md): finished runs are journalled next to the
results, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import isoapprox
from isoapprox.commands.common import CommandParser, add_run_arguments, check_jobs, guarded
from isoapprox.exceptions import InvalidInputError
from isoapprox.io import read_results, write_results
from isoapprox.packing import d_star
from isoapprox.runs import config_key, finished_units, journal_path, prepare_output
from isoapprox.train import (
    Cell,
    TrainConfig,
    expand_grid,
    run_sweep,
    write_sweep_results,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "collapse_phase"
EXPERIMENT = "collapse_phase"

logger = logging.getLogger(EXPERIMENT)

#: two-sided 95 % normal quantile (Wilson intervals, confidence bands)
Z95 = 1.959963984540054

#: data set name -> TrainConfig fields.  ``gaussian_overlap``: the same generator
#: with classes that overlap (a quarter of the separation, 8 input dimensions);
#: digits and mnist1d (MNIST-1D, generated offline by the mnist1d package, 500 signals
#: a class): 8 training classes (P <= 8), 8 and 9 held out.
DATASETS: dict[str, dict[str, Any]] = {
    "gaussian": {"dataset": "gaussian", "n_classes": 80, "n_train_classes": 64,
                 "per_class": 20, "input_dim": 32, "separation": 2.0, "noise": 1.0},
    "gaussian_overlap": {"dataset": "gaussian", "n_classes": 80, "n_train_classes": 64,
                         "per_class": 20, "input_dim": 8, "separation": 0.5, "noise": 1.0},
    "digits": {"dataset": "digits", "train_classes": tuple(range(8))},
    "mnist1d": {"dataset": "mnist1d", "train_classes": tuple(range(8))},
}
#: most classes per batch of each data set (its training classes)
MAX_P = {"gaussian": 64, "gaussian_overlap": 64, "digits": 8, "mnist1d": 8}

#: loss set-up name -> TrainConfig fields
SETUPS: dict[str, dict[str, Any]] = {
    "batch_hard": {"loss": "batch_hard", "normalize": False},
    "batch_hard_normalized": {"loss": "batch_hard", "normalize": True},
    "selectively_contrastive": {"loss": "selectively_contrastive", "normalize": True},
    "semi_hard": {"loss": "semi_hard", "normalize": False},
}

#: optimiser names of the harness (their learning rates are Config fields)
OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class Config:
    """The grid (all fields JSON-ready)."""

    datasets: tuple[str, ...] = tuple(DATASETS)
    classes_per_batch: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    dims: tuple[int, ...] = (2, 4, 8, 16, 32)
    setups: tuple[str, ...] = ("batch_hard", "batch_hard_normalized", "selectively_contrastive")
    optimizers: tuple[str, ...] = OPTIMIZERS
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    root_seed: int = 20261206
    samples_per_class: int = 4
    steps: int = 800
    margin: float = 0.2
    sgd_lr: float = 0.1
    adam_lr: float = 1e-3
    momentum: float = 0.9
    weight_decay: float = 5e-4
    hidden: tuple[int, ...] = (64,)
    activation: str = "tanh"
    #: classes of the sub-batch whose distance to the ideal set is certified
    theory_classes: int = 8
    #: work budget of that computation (``nearest_ideal``'s ``effort``)
    theory_effort: str = "quick"
    #: anchors kept per stored triplet diagram (small: the file stays small)
    diagram_size: int = 8

    def base(self, dataset: str, optimizer: str) -> TrainConfig:
        lr = {"sgd": self.sgd_lr, "adam": self.adam_lr}[optimizer]
        return TrainConfig(
            **DATASETS[dataset], hidden=self.hidden, activation=self.activation,
            margin=self.margin, optimizer=optimizer, lr=lr, momentum=self.momentum,
            weight_decay=self.weight_decay, samples_per_class=self.samples_per_class,
            steps=self.steps, log_every=self.steps, diagram_size=self.diagram_size,
            recall_ks=(1,),
        )

    def check(self) -> None:
        """Refuse unknown names and empty or out-of-range axes (one line each)."""
        for field, valid in (("datasets", DATASETS), ("setups", SETUPS),
                             ("optimizers", OPTIMIZERS)):
            values = getattr(self, field)
            unknown = sorted(set(values) - set(valid))
            if unknown or not values:
                raise InvalidInputError(
                    f"`{field}` must list some of {sorted(valid)}; got {list(values)}")
        for field, low in (("classes_per_batch", 2), ("dims", 1), ("seeds", 0)):
            values = getattr(self, field)
            if not values or any(not isinstance(v, int) or v < low for v in values):
                raise InvalidInputError(
                    f"`{field}` must list integers >= {low}; got {list(values)}")
        if self.theory_effort not in ("quick", "default", "thorough"):
            raise InvalidInputError("`theory_effort` must be 'quick', 'default' or "
                                    f"'thorough'; got {self.theory_effort!r}")

    def cells(self) -> list[Cell]:
        """Every run, in a fixed order: seed, then data set, optimiser, P, n, set-up.

        Seeds vary slowest, so that an interrupted run has whole seeds done:
        ``--seeds K`` then analyses the first ``K`` seeds from the journal.
        """
        self.check()
        out: list[Cell] = []
        for ds in self.datasets:
            Ps = [P for P in self.classes_per_batch if P <= MAX_P[ds]]
            if not Ps:
                continue
            for opt in self.optimizers:
                out += expand_grid(
                    self.base(ds, opt),
                    {"batch_size": [self.samples_per_class * P for P in Ps],
                     "embedding_dim": list(self.dims)},
                    variants=[SETUPS[s] for s in self.setups],
                    replicates=self.seeds,
                )
        rank = {s: i for i, s in enumerate(self.seeds)}
        return sorted(out, key=lambda c: rank[c.replicate])  # stable: grid order within


#: the committed grid: at most an hour on 2 cores (docs/collapse_phase.md, "Cost")
BOUNDED = Config()

#: the full grid: more seeds and steps, n up to 64, the semi-hard control as well
FULL = Config(
    dims=(2, 4, 8, 16, 32, 64),
    setups=("batch_hard", "batch_hard_normalized", "selectively_contrastive", "semi_hard"),
    seeds=tuple(range(10)),
    steps=2000,
    theory_classes=12,
)

SMOKE = Config(
    datasets=("gaussian", "digits"),
    classes_per_batch=(2, 8),
    dims=(2, 8),
    setups=("batch_hard", "selectively_contrastive"),
    optimizers=("sgd",),
    seeds=(0, 1),
    steps=10,
    hidden=(8,),
    theory_classes=4,
)

#: grid name -> configuration (``--grid``)
GRIDS: dict[str, Config] = {"bounded": BOUNDED, "full": FULL, "smoke": SMOKE}


# ---------------------------------------------------------------------------
# the certified distance of a trained batch to the ideal set
# ---------------------------------------------------------------------------


class IdealDistance:
    """Logging hook: the certified ``d_iso`` of the last training batch against ``D*``.

    At the last step, ``classes`` classes of the training batch (all of them if
    fewer) with 2 samples each form a sub-batch ``P' x 2``; its distance to the
    ideal set is bracketed by :func:`isoapprox.nearest_ideal` (``objective="iso"``,
    the given ``effort``), and set against ``D*(P', n, margin)``
    (:func:`isoapprox.packing.d_star`) and ``D*(P, n, margin)`` of the whole
    batch.  A sub-batch's distance is a lower bound of the batch's.  The draw
    is seeded by the configuration and the batch's indices: the same on every
    machine and load.  Fields are prefixed ``ideal_``.
    """

    def __init__(self, classes: int, effort: str) -> None:
        self.classes = int(classes)
        self.effort = str(effort)

    def __call__(self, state) -> dict[str, Any] | None:
        c = state.config
        if state.step != c.steps:
            return None
        E = np.asarray(state.batch_E, dtype=np.float64)
        y = np.asarray(state.batch_y)
        if not np.all(np.isfinite(E)):
            return None
        text = json.dumps(config_key(c.to_dict()), sort_keys=True).encode()
        digest = hashlib.sha256(text + np.asarray(state.batch_index, np.int64).tobytes())
        rng = np.random.default_rng(int.from_bytes(digest.digest()[:8], "little"))
        labels = np.unique(y)
        chosen = np.sort(rng.choice(labels, size=min(self.classes, labels.size), replace=False))
        idx = np.sort(np.concatenate(
            [rng.choice(np.flatnonzero(y == k), size=2, replace=False) for k in chosen]))
        Es, ys = E[idx], y[idx]
        n = E.shape[1]
        r = isoapprox.nearest_ideal(Es, ys, margin=c.margin, objective="iso",
                                    effort=self.effort, rng=int(rng.integers(2**31)),
                                    warn_uncertified=False)
        sub, full = d_star(int(chosen.size), n, c.margin), d_star(int(labels.size), n, c.margin)
        return {
            "ideal_P_sub": int(chosen.size),
            "ideal_points": int(idx.size),
            "ideal_sub_diameter": isoapprox.diameter(Es),
            "ideal_sub_loss_max": isoapprox.batch_hard_loss(Es, ys, margin=c.margin,
                                                            reduction="max"),
            "ideal_d_iso_lower": float(r.lower),
            "ideal_d_iso_upper": float(r.upper),
            "ideal_d_iso_certified": bool(r.certified),
            "ideal_d_star_sub_lower": float(sub.lower),
            "ideal_d_star_sub_upper": float(sub.upper),
            "ideal_d_star_lower": float(full.lower),
            "ideal_d_star_upper": float(full.upper),
        }


# ---------------------------------------------------------------------------
# statistics: Wilson intervals and the logistic fit
# ---------------------------------------------------------------------------


def wilson_interval(k: int, n: int, *, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / n`` (``(0, 1)`` when ``n = 0``).

    Examples
    --------
    >>> [round(v, 4) for v in wilson_interval(5, 10)]
    [0.2366, 0.7634]
    """
    if not (isinstance(k, (int, np.integer)) and isinstance(n, (int, np.integer))):
        raise TypeError(f"`k` and `n` must be integers; got {k!r} and {n!r}")
    if n < 0 or not 0 <= k <= n:
        raise InvalidInputError(f"`k` must lie in [0, n] with n >= 0; got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    # exact ends at k = 0 and k = n (the formula gives them up to rounding)
    return (0.0 if k == 0 else lo), (1.0 if k == n else hi)


def _expit(t: np.ndarray) -> np.ndarray:
    return np.where(t >= 0, 1.0 / (1.0 + np.exp(-np.abs(t))),
                    np.exp(-np.abs(t)) / (1.0 + np.exp(-np.abs(t))))


@dataclass(frozen=True)
class LogisticFit:
    """Maximum-likelihood fit of ``P(y = 1 | x) = expit(b0 + b1 x)``.

    Attributes
    ----------
    status : {"ok", "no events", "all events", "separated", "not converged"}
        Only ``"ok"`` has finite estimates and a band.
    b0, b1 : float or None
    cov : list of list of float or None
        Inverse Fisher information at the estimate (2 x 2).
    iterations : int
    n, events : int
    """

    status: str
    b0: float | None
    b1: float | None
    cov: list[list[float]] | None
    iterations: int
    n: int
    events: int

    def slope_interval(self, z: float = Z95) -> tuple[float, float] | None:
        """Wald interval of ``b1``."""
        if self.status != "ok":
            return None
        se = math.sqrt(self.cov[1][1])
        return self.b1 - z * se, self.b1 + z * se

    def band(self, x: Sequence[float], z: float = Z95) -> dict[str, list[float]] | None:
        """Fitted probability at ``x`` and its pointwise band: ``expit(eta +- z se(eta))``."""
        if self.status != "ok":
            return None
        xs = np.asarray(x, dtype=np.float64)
        eta = self.b0 + self.b1 * xs
        C = np.asarray(self.cov)
        se = np.sqrt(np.maximum(C[0, 0] + 2 * xs * C[0, 1] + xs * xs * C[1, 1], 0.0))
        return {"x": xs.tolist(), "p": _expit(eta).tolist(),
                "lower": _expit(eta - z * se).tolist(), "upper": _expit(eta + z * se).tolist()}


def fit_logistic(x: Sequence[float], y: Sequence[int], *, max_iter: int = 100,
                 tol: float = 1e-10, max_coef: float = 30.0) -> LogisticFit:
    """Logistic regression of 0/1 outcomes ``y`` on ``x`` by Newton's method (IRLS).

    Stops when a Newton step changes no coefficient by more than ``tol`` (relative);
    reports ``"separated"`` when ``max |x|`` times a coefficient passes ``max_coef``
    (the likelihood has no maximum: complete or quasi-complete separation).

    Examples
    --------
    >>> f = fit_logistic([0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 0, 1, 1, 1])
    >>> f.status, round(f.b0, 6), round(f.b1, 6)
    ('ok', -1.098612, 2.197225)
    """
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    if xs.ndim != 1 or xs.shape != ys.shape:
        raise InvalidInputError(f"`x` and `y` must be 1-D of one length; got shapes "
                                f"{xs.shape} and {ys.shape}")
    if not np.all(np.isfinite(xs)) or not np.all((ys == 0) | (ys == 1)):
        raise InvalidInputError("`x` must be finite and `y` hold 0 or 1")
    n, events = int(xs.size), int(ys.sum())
    if events == 0 or events == n:
        return LogisticFit("no events" if events == 0 else "all events",
                           None, None, None, 0, n, events)
    status, beta, cov, it = _irls(np.column_stack([np.ones_like(xs), xs]), ys,
                                  max_iter=max_iter, tol=tol, max_coef=max_coef)
    if status != "ok":
        return LogisticFit(status, None, None, None, it, n, events)
    return LogisticFit("ok", float(beta[0]), float(beta[1]), cov.tolist(), it, n, events)


def _irls(X: np.ndarray, ys: np.ndarray, *, max_iter: int, tol: float, max_coef: float):
    """Newton's method for the logistic likelihood: ``(status, beta, cov, iterations)``
    (``cov`` the inverse Fisher information at ``beta``; None unless ``"ok"``).
    Column 0 of ``X`` is the intercept; a slope whose effect ``|b_j| max |X_j|``
    passes ``max_coef`` means separation."""
    events, n = float(ys.sum()), ys.size
    scale = np.maximum(1.0, np.max(np.abs(X), axis=0))
    beta = np.zeros(X.shape[1])
    beta[0] = math.log(events / (n - events))
    status, it = "not converged", 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        p = _expit(X @ beta)
        H = X.T @ (X * (p * (1.0 - p))[:, None])
        try:
            step = np.linalg.solve(H, X.T @ (ys - p))
        except np.linalg.LinAlgError:
            status = "separated"
            break
        beta = beta + step
        if np.max(np.abs(beta[1:]) * scale[1:]) > max_coef or abs(beta[0]) > max_coef:
            status = "separated"
            break
        if np.max(np.abs(step)) <= tol * (1.0 + np.max(np.abs(beta))):
            status = "ok"
            break
    if status != "ok":
        return status, None, None, it
    p = _expit(X @ beta)
    H = X.T @ (X * (p * (1.0 - p))[:, None])
    return "ok", beta, np.linalg.inv(H), it


def ratio_test(records: Sequence[Mapping[str, Any]], *, z: float = Z95) -> dict[str, Any]:
    """Does collapse depend on ``P / (n + 1)`` only?  The fit
    ``logit p = b0 + bP log P + bn log(n + 1)`` (``P`` and ``n`` as separate
    factors); the ratio alone predicts ``bn = -bP``.  Returns the estimates with
    their Wald 95 % intervals, and ``z`` of ``bP + bn`` (``|z| > 1.96``: the data
    reject "the ratio alone" at the 5 % level).  Not ``"ok"`` when the fit is not."""
    ys = np.array([float(bool(r["collapsed"])) for r in records])
    if ys.size == 0 or ys.sum() in (0, ys.size):
        return {"status": "no events" if ys.sum() == 0 else "all events"}
    X = np.column_stack([np.ones(ys.size), [math.log(r["P"]) for r in records],
                         [math.log(r["embedding_dim"] + 1) for r in records]])
    if np.linalg.matrix_rank(X) < 3:
        return {"status": "P and n not varied independently"}
    status, beta, cov, _ = _irls(X, ys, max_iter=100, tol=1e-10, max_coef=30.0)
    if status != "ok":
        return {"status": status}
    se = np.sqrt(np.diag(cov))
    se_sum = math.sqrt(cov[1, 1] + cov[2, 2] + 2 * cov[1, 2])
    return {"status": "ok",
            "b_logP": float(beta[1]), "b_logP_ci": [float(beta[1] - z * se[1]),
                                                    float(beta[1] + z * se[1])],
            "b_logn1": float(beta[2]), "b_logn1_ci": [float(beta[2] - z * se[2]),
                                                      float(beta[2] + z * se[2])],
            "ratio_z": float((beta[1] + beta[2]) / se_sum)}


# ---------------------------------------------------------------------------
# analysis (from records only)
# ---------------------------------------------------------------------------


def _label(record: Mapping[str, Any], table: Mapping[str, Mapping[str, Any]]) -> str:
    for name, fields in table.items():
        if all(_same(record.get(k), v) for k, v in fields.items()):
            return name
    return "other"


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, tuple):
        return a is not None and list(a) == list(b)
    return a == b


def dataset_of(record: Mapping[str, Any]) -> str:
    """The :data:`DATASETS` name of a record."""
    return _label(record, DATASETS)


def setup_of(record: Mapping[str, Any]) -> str:
    """The :data:`SETUPS` name of a record."""
    return _label(record, SETUPS)


#: fields of the slim records (compact results file)
SLIM_FIELDS = (
    "cell_id", "replicate", "dataset", "loss", "normalize", "optimizer", "lr", "batch_size",
    "embedding_dim", "margin", "steps", "P", "K", "diverged", "collapsed", "diameter_ratio",
    "median_ratio", "final_eval_recall_at_1", "final_loss", "final_batch_hard_mean",
    "final_batch_hard_max", "final_batch_hard_active_fraction", "final_ideal_P_sub",
    "final_ideal_points", "final_ideal_sub_diameter", "final_ideal_sub_loss_max",
    "final_ideal_d_iso_lower", "final_ideal_d_iso_upper", "final_ideal_d_iso_certified",
    "final_ideal_d_star_sub_lower", "final_ideal_d_star_sub_upper", "final_ideal_d_star_lower",
    "final_ideal_d_star_upper", "seconds",
)


def slim(record: Mapping[str, Any]) -> dict[str, Any]:
    """A slim record with its data set and set-up names."""
    out = {k: record.get(k) for k in SLIM_FIELDS}
    out["dataset"] = dataset_of(record)
    out["setup"] = setup_of(record)
    return out


def _named(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [r if "setup" in r else slim(r) for r in records]


#: the secondary outcome: the final batch-hard loss of the training batch reads the
#: margin within this relative tolerance (statement 4's signature of collapse)
AT_MARGIN_RTOL = 0.1


def at_margin(r: Mapping[str, Any]) -> bool:
    """Whether the final batch-hard loss (mean over anchors) is within
    :data:`AT_MARGIN_RTOL` of the margin."""
    v = r.get("final_batch_hard_mean")
    return v is not None and abs(v / r["margin"] - 1.0) <= AT_MARGIN_RTOL


def _x(r: Mapping[str, Any]) -> float:
    return math.log(r["P"] / (r["embedding_dim"] + 1))


def phase_cells(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per data set, set-up, optimiser, ``P`` and ``n``: runs, collapses (Wilson 95 %),
    mean Recall@1, median final batch-hard loss over the margin and the median
    certified ``d_iso`` of the trained sub-batch over ``D*(P', n, alpha)``."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in _named(records):
        key = (r["dataset"], r["setup"], r["optimizer"], r["P"], r["embedding_dim"])
        groups.setdefault(key, []).append(r)
    rows = []
    for (ds, su, opt, P, n), rs in sorted(groups.items()):
        k = sum(bool(r["collapsed"]) for r in rs)
        lo, hi = wilson_interval(k, len(rs))
        rec = [r["final_eval_recall_at_1"] for r in rs
               if r.get("final_eval_recall_at_1") is not None]
        lm = [r["final_batch_hard_mean"] / r["margin"] for r in rs
              if r.get("final_batch_hard_mean") is not None]
        dl = [r["final_ideal_d_iso_lower"] / r["final_ideal_d_star_sub_upper"] for r in rs
              if r.get("final_ideal_d_iso_lower") is not None]
        rows.append({
            "dataset": ds, "setup": su, "optimizer": opt, "P": P, "embedding_dim": n,
            "P_over_n1": P / (n + 1), "runs": len(rs), "collapsed": k,
            "rate": k / len(rs), "wilson_lower": lo, "wilson_upper": hi,
            "diverged": sum(bool(r.get("diverged")) for r in rs),
            "at_margin": sum(at_margin(r) for r in rs),
            "recall_at_1": float(np.mean(rec)) if rec else None,
            "loss_over_margin": float(np.median(lm)) if lm else None,
            "d_iso_over_d_star": float(np.median(dl)) if dl else None,
        })
    return rows


#: the two groups of the verdict: P at most n + 1, and P at least HI_RATIO (n + 1)
HI_RATIO = 2.0


def _group(rs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    k = sum(bool(r["collapsed"]) for r in rs)
    lo, hi = wilson_interval(k, len(rs))
    m = sum(at_margin(r) for r in rs)
    recall = [r["final_eval_recall_at_1"] for r in rs
              if r.get("final_eval_recall_at_1") is not None]
    return {"runs": len(rs), "collapsed": k, "rate": k / len(rs) if rs else None,
            "wilson_lower": lo, "wilson_upper": hi, "at_margin": m,
            "at_margin_rate": m / len(rs) if rs else None,
            "recall_at_1": float(np.mean(recall)) if recall else None}


#: fewest runs at ``P >= 2 (n + 1)`` for a verdict
HI_MIN_RUNS = 10


def verdict(lo: Mapping[str, Any], hi: Mapping[str, Any], fit: LogisticFit,
            two: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The verdict on "collapse when P >> n" for one set-up, and its reason.

    - ``not tested``: fewer than :data:`HI_MIN_RUNS` runs with ``P >= 2 (n + 1)``;
    - ``refuted``: collapse is rare where it is predicted (the Wilson upper end
      of the rate at ``P >= 2 (n + 1)`` is below 0.2), or it is likelier at
      ``P <= n + 1`` (Wilson intervals apart, in that order);
    - ``reproduced``: at ``P >= 2 (n + 1)`` most runs collapse (rate >= 0.5),
      at ``P <= n + 1`` few do (rate <= 0.2: "and not otherwise"), the first
      Wilson interval lies above the second, the fitted
      slope's 95 % interval is above 0 (or the fit separates the outcomes in
      the predicted direction), and the two-factor fit (``two``,
      :func:`ratio_test`) does not reject "the ratio ``P / (n + 1)`` alone";
    - ``qualified``: anything between (collapse more likely but not the rule,
      intervals that overlap, or a dependence on ``P`` that ``n`` does not
      offset).
    """
    if hi["runs"] < HI_MIN_RUNS:
        return "not tested", f"{hi['runs']} run(s) with P >= 2 (n + 1), fewer than {HI_MIN_RUNS}"
    nums = (f"{hi['collapsed']}/{hi['runs']} collapsed at P >= 2(n+1) "
            f"[{hi['wilson_lower']:.2f}, {hi['wilson_upper']:.2f}]")
    if lo["runs"]:
        nums += (f", {lo['collapsed']}/{lo['runs']} at P <= n+1 "
                 f"[{lo['wilson_lower']:.2f}, {lo['wilson_upper']:.2f}]")
    ci = fit.slope_interval()
    if ci is not None:
        nums += f"; slope {fit.b1:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"
    else:
        nums += f"; fit: {fit.status}"
    ratio_rejected = False
    if two is not None and two.get("status") == "ok":
        ratio_rejected = abs(two["ratio_z"]) > Z95
        nums += (f"; bP {two['b_logP']:.2f}, bn {two['b_logn1']:.2f} (z of bP + bn "
                 f"{two['ratio_z']:.2f})")
    if hi["wilson_upper"] < 0.2:
        return "refuted", nums
    if lo["runs"] and lo["wilson_lower"] > hi["wilson_upper"]:
        return "refuted", nums
    apart = not lo["runs"] or hi["wilson_lower"] > lo["wilson_upper"]
    rising = (ci is not None and ci[0] > 0) or (fit.status == "separated" and apart)
    rare_below = not lo["runs"] or lo["rate"] <= 0.2
    if hi["rate"] >= 0.5 and rare_below and apart and rising and not ratio_rejected:
        return "reproduced", nums
    return "qualified", nums


def verdicts(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per data set, set-up and optimiser: the two groups, the logistic fit of the
    collapse outcome on ``log(P / (n + 1))`` (with its band on a grid) and the
    verdict."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in _named(records):
        groups.setdefault((r["dataset"], r["setup"], r["optimizer"]), []).append(r)
    out = []
    for (ds, su, opt), rs in sorted(groups.items()):
        ok = [r for r in rs if not r.get("diverged")]
        lo = _group([r for r in ok if r["P"] <= r["embedding_dim"] + 1])
        hi = _group([r for r in ok if r["P"] >= HI_RATIO * (r["embedding_dim"] + 1)])
        fit = fit_logistic([_x(r) for r in ok], [int(bool(r["collapsed"])) for r in ok])
        xs = [_x(r) for r in ok] or [0.0]
        grid = np.linspace(min(xs), max(xs), 41)
        two = ratio_test(ok)
        word, why = verdict(lo, hi, fit, two)
        ci = fit.slope_interval()
        x50 = (-fit.b0 / fit.b1) if fit.status == "ok" and fit.b1 > 0 else None
        out.append({
            "dataset": ds, "setup": su, "optimizer": opt, "runs": len(rs),
            "diverged": len(rs) - len(ok), "low": lo, "high": hi,
            "fit": {**dataclasses.asdict(fit), "slope_ci": list(ci) if ci else None,
                    "P_over_n1_at_half": math.exp(x50) if x50 is not None else None},
            "band": fit.band(grid),
            "two_factor": two,
            "verdict": word, "reason": why,
        })
    return out


def ideal_summary(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Statement 4 on trained batches, per set-up: for collapsed and other runs, the
    median final batch-hard loss over the margin and the median of the certified
    ``d_iso`` bracket of the sub-batch over ``D*(P', n, alpha)``; and how many
    sub-batches with ``P' > n + 1`` have a certified ``d_iso`` above the margin."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in _named(records):
        if r.get("final_ideal_d_iso_lower") is None:
            continue
        groups.setdefault((r["dataset"], r["setup"], r["optimizer"], bool(r["collapsed"])),
                          []).append(r)
    out = []
    for (ds, su, opt, col), rs in sorted(groups.items()):
        lo = [r["final_ideal_d_iso_lower"] / r["final_ideal_d_star_sub_upper"] for r in rs]
        up = [r["final_ideal_d_iso_upper"] / r["final_ideal_d_star_sub_lower"] for r in rs]
        lm = [r["final_batch_hard_mean"] / r["margin"] for r in rs]
        beyond = [r for r in rs if r["final_ideal_P_sub"] > r["embedding_dim"] + 1]
        above = sum(r["final_ideal_d_iso_lower"] > r["margin"] for r in beyond)
        out.append({
            "dataset": ds, "setup": su, "optimizer": opt, "collapsed": col, "runs": len(rs),
            "loss_over_margin_median": float(np.median(lm)),
            "d_iso_lower_over_d_star_median": float(np.median(lo)),
            "d_iso_upper_over_d_star_median": float(np.median(up)),
            "certified": sum(bool(r["final_ideal_d_iso_certified"]) for r in rs),
            "sub_beyond_n1": len(beyond), "d_iso_above_margin": int(above),
        })
    return out


def dstar_curve(config: Config, *, factor: float = 2.0) -> dict[str, Any]:
    """Per dimension (every integer in the grid's range), the least ``P`` (up to the
    grid's largest) at which
    ``D*(P, n, alpha) >= factor * alpha`` (its proven lower end), and the ratios
    ``D*(P, n, alpha) / alpha`` of the grid's cells."""
    P_max = max(config.classes_per_batch)
    first: dict[str, int | None] = {}
    for n in range(min(config.dims), max(config.dims) + 1):
        first[str(n)] = next((P for P in range(2, P_max + 1)
                              if d_star(P, n, 1.0).lower >= factor), None)
    ratio = {f"{P},{n}": d_star(P, n, 1.0).upper
             for P in config.classes_per_batch for n in config.dims}
    return {"factor": factor, "first_P": first, "ratio_upper": ratio}


def tables(config: Config, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Everything the figures and printed tables need, from the records."""
    return {"cells": phase_cells(records), "verdicts": verdicts(records),
            "ideal": ideal_summary(records), "dstar_curve": dstar_curve(config)}


def format_verdicts(rows: Sequence[Mapping[str, Any]]) -> str:
    """The verdicts as text, one line per set-up."""
    lines = ['"collapse when P >> n", per data set / loss set-up / optimiser:']
    for r in rows:
        lines.append(f"  {r['dataset']:<17s}{r['setup']:<25s}{r['optimizer']:<5s}"
                     f"{r['verdict']:<12s}{r['reason']}")
    return "\n".join(lines)


def format_cells(rows: Sequence[Mapping[str, Any]]) -> str:
    """Collapsed / runs per cell: one block per set-up, P across and n down."""
    blocks: dict[tuple, dict[tuple, Mapping]] = {}
    for r in rows:
        blocks.setdefault((r["dataset"], r["setup"], r["optimizer"]), {})[
            (r["P"], r["embedding_dim"])] = r
    lines = []
    for (ds, su, opt), cells in blocks.items():
        Ps = sorted({k[0] for k in cells})
        ns = sorted({k[1] for k in cells})
        lines.append(f"{ds} / {su} / {opt}: collapsed / runs (P across, n down)")
        lines.append("      " + "".join(f"{'P=' + str(P):>8s}" for P in Ps))
        for n in ns:
            row = f"n={n:<4d}"
            for P in Ps:
                c = cells.get((P, n))
                row += f"{c['collapsed']:>5d}/{c['runs']:<2d}" if c else f"{'-':>8s}"
            lines.append(row)
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------


def run(config: Config, *, journal: str | Path | None = None, jobs: int = 1,
        scheduler: str | None = None, connect_timeout: float = 10.0,
        progress: bool = False):
    """Train every run (resuming from ``journal``); a pure function of ``config``."""
    return run_sweep(
        config.cells(), root_seed=config.root_seed, journal=journal, jobs=jobs,
        scheduler=scheduler, connect_timeout=connect_timeout, progress=progress,
        callbacks=(IdealDistance(config.theory_classes, config.theory_effort),),
    )


def compact_path(out: Path) -> Path:
    """Where the compact results file goes, beside ``out``."""
    return out.with_name(out.stem + "_compact.json")


#: CPU seconds of a run, measured on the project's 2-core machine (one thread, process
#: time, so load does not enter): per step, per step and sample of the batch, and
#: the certified distance at the end (docs/collapse_phase.md, "Cost")
COST_PER_STEP = 1.6e-4
COST_PER_STEP_SAMPLE = 3.75e-6
COST_IDEAL = 0.1


def estimate_seconds(cells: Sequence[Cell]) -> float:
    """Predicted CPU seconds of the runs (one core; see :data:`COST_PER_STEP`)."""
    return float(sum(c.config.steps * (COST_PER_STEP + COST_PER_STEP_SAMPLE
                                       * c.config.batch_size) + COST_IDEAL for c in cells))


def main(argv: Sequence[str] | None = None) -> int:
    parser = CommandParser(prog=EXPERIMENT, description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny grid (seconds); the same as --grid smoke")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="bounded",
                        help="bounded (default: the committed results, about 19 min of CPU), "
                             "full (about 2 h of CPU; docs/collapse_phase.md) or smoke")
    add_run_arguments(parser, out=None,
                      out_help=f"results JSON (default {RESULTS}/collapse_phase_GRID.json)",
                      jobs=1, jobs_help="worker processes (default 1: in this process)")
    parser.add_argument("--seeds", type=int, default=None, metavar="K",
                        help="only the grid's first K seeds (a sub-grid: after an interrupted "
                             "run, the seeds it finished, taken from the journal)")
    parser.add_argument("--reanalyse", action="store_true",
                        help="recompute the analysis of existing results (the compact file) "
                             "from their records; no training")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the number of runs and the cost estimate only")
    parser.add_argument("--figures", type=Path, default=None, metavar="DIR",
                        help="build the figures from the compact results into DIR (when the "
                             "results exist and neither --overwrite nor --resume is given, "
                             "only the figures are built)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(message)s", stream=sys.stderr)
    return guarded(EXPERIMENT, _main, args)


def _main(args: argparse.Namespace) -> int:
    jobs = check_jobs(args.jobs)
    grid = "smoke" if args.smoke else args.grid
    config = GRIDS[grid]
    if args.seeds is not None:
        if not 1 <= args.seeds <= len(config.seeds):
            raise InvalidInputError(f"--seeds must lie in [1, {len(config.seeds)}] for --grid "
                                    f"{grid}; got {args.seeds}")
        config = dataclasses.replace(config, seeds=config.seeds[:args.seeds])
    out = args.out or RESULTS / f"{EXPERIMENT}_{grid}.json"
    if out.suffix != ".json":
        raise InvalidInputError(f"--out must name a .json file; got {str(out)!r}")
    if args.reanalyse:
        return _reanalyse(out, figures_dir=args.figures, quiet=args.quiet)
    fresh = args.overwrite or args.resume or args.dry_run
    if args.figures is not None and out.exists() and not fresh:
        return _figures(compact_path(out), args.figures, quiet=args.quiet)
    cfg = dataclasses.asdict(config)
    cells = config.cells()
    journal = journal_path(out)
    if args.dry_run:
        done = finished_units(journal) if journal.exists() else set()
        todo = [c for c in cells if c.cell_id not in done]
        est = estimate_seconds(todo)
        print(f"{EXPERIMENT} --grid {grid}: {len(cells)} runs ({len(cells) - len(todo)} done); "
              f"about {est / 60:.0f} min of CPU ({est / 60 / jobs:.0f} min with --jobs {jobs} "
              "on idle cores)")
        return 0
    prepare_output(out, experiment=EXPERIMENT, config=config_key(cfg),
                   overwrite=args.overwrite, resume=args.resume)
    result = run(config, journal=journal, jobs=jobs, scheduler=args.scheduler,
                 connect_timeout=args.connect_timeout, progress=not args.quiet)
    write_sweep_results(out, result, experiment=EXPERIMENT, config=cfg,
                        root_seed=config.root_seed)
    tabs = write_compact(out, cfg, result.records)
    if not args.quiet:
        print(format_cells(tabs["cells"]))
        print(format_verdicts(tabs["verdicts"]))
        print(f"results: {out} (compact: {compact_path(out)})")
    if args.figures is not None:
        return _figures(compact_path(out), args.figures, quiet=args.quiet)
    return 0


# ---------------------------------------------------------------------------
# figures (from a results file only)
# ---------------------------------------------------------------------------


def config_from(mapping: Mapping[str, Any]) -> Config:
    """The :class:`Config` of a results document's ``config`` (lists become tuples)."""
    return Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in mapping.items()})


def write_compact(out: Path, cfg: Mapping[str, Any],
                  records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Write the compact results file beside ``out`` (slim records and the analysis
    tables); returns the tables."""
    tabs = tables(config_from(cfg), records)
    seed = {"root_seed": cfg["root_seed"],
            "derivation": "numpy.random.SeedSequence(root_seed, spawn_key=(replicate,))"}
    write_results(compact_path(out), experiment=EXPERIMENT, config=cfg,
                  records=[slim(r) for r in records], seed=seed,
                  extra={**tabs, "compact": True}, csv_path=False)
    return tabs


def _reanalyse(out: Path, *, figures_dir: Path | None, quiet: bool) -> int:
    """Recompute the compact file's analysis from the records of ``out``."""
    if not out.exists():
        raise InvalidInputError(f"--reanalyse needs the results {str(out)!r}; run the grid "
                                "first")
    doc = read_results(out)
    if doc.get("experiment") != EXPERIMENT:
        raise InvalidInputError(f"{str(out)!r} holds results of {doc.get('experiment')!r}, "
                                f"not {EXPERIMENT}")
    tabs = write_compact(out, doc["config"], doc["records"])
    if not quiet:
        print(format_verdicts(tabs["verdicts"]))
    if figures_dir is not None:
        return _figures(compact_path(out), figures_dir, quiet=quiet)
    return 0


def _index(values: Sequence[int], v: float) -> float:
    """Position of ``v`` on a categorical axis of log-spaced ``values``."""
    return float(np.interp(math.log(v), [math.log(u) for u in values],
                           np.arange(len(values))))


def figure_map(doc: Mapping[str, Any], dataset: str):
    """Heat maps of the collapse rate over (P, n): set-ups down, optimisers across,
    with the line ``P = n + 1`` and the curve ``D*(P, n, alpha) = 2 alpha``."""
    from isoapprox._lazy import matplotlib
    from isoapprox.plotting._style import COLORS, FULL_WIDTH, style_context

    plt = matplotlib().pyplot
    cfg = doc["config"]
    cells = [c for c in doc["cells"] if c["dataset"] == dataset]
    setups = [s for s in cfg["setups"] if any(c["setup"] == s for c in cells)]
    opts = [o for o in cfg["optimizers"] if any(c["optimizer"] == o for c in cells)]
    Ps = [P for P in cfg["classes_per_batch"] if P <= MAX_P[dataset]]
    ns = list(cfg["dims"])
    curve = doc["dstar_curve"]
    import matplotlib.patheffects as pe

    outline = [pe.Stroke(linewidth=2.8, foreground="black"), pe.Normal()]
    with style_context():
        fig, axes = plt.subplots(len(setups), len(opts), squeeze=False, sharex=True,
                                 sharey=True, layout="constrained",
                                 figsize=(FULL_WIDTH * 0.75, 1.0 + 1.45 * len(setups)))
        cmap = matplotlib().colormaps["viridis"].with_extremes(bad="#DDDDDD")
        im = None
        for i, su in enumerate(setups):
            for j, opt in enumerate(opts):
                ax = axes[i][j]
                Z = np.full((len(ns), len(Ps)), np.nan)
                for c in cells:
                    if c["setup"] == su and c["optimizer"] == opt and c["P"] in Ps:
                        Z[ns.index(c["embedding_dim"]), Ps.index(c["P"])] = c["rate"]
                im = ax.imshow(np.ma.masked_invalid(Z), origin="lower", cmap=cmap, vmin=0,
                               vmax=1, aspect="auto")
                nn = np.geomspace(ns[0], ns[-1], 50)
                pts = [(_index(Ps, n + 1), _index(ns, n)) for n in nn
                       if Ps[0] <= n + 1 <= Ps[-1]]
                if pts:
                    ax.plot(*zip(*pts, strict=True), color=COLORS["ideal"], lw=1.4,
                            label="P = n + 1")
                dp = [(_index(Ps, P), _index(ns, int(n))) for n, P in
                      curve["first_P"].items() if P is not None and P <= Ps[-1]
                      and ns[0] <= int(n) <= ns[-1]]
                if dp:
                    ax.plot(*zip(*dp, strict=True), color="white", lw=1.4, ls="--",
                            marker="o", ms=3, path_effects=outline,
                            label=f"D*(P, n, \u03b1) = {curve['factor']:g}\u03b1")
                ax.set_xticks(range(len(Ps)), [str(P) for P in Ps])
                ax.set_yticks(range(len(ns)), [str(n) for n in ns])
                ax.set_xlim(-0.5, len(Ps) - 0.5)
                ax.set_ylim(-0.5, len(ns) - 0.5)
                ax.set_title(f"{su.replace('_', ' ')}, {opt}")
                if i == len(setups) - 1:
                    ax.set_xlabel("classes per batch P")
                if j == 0:
                    ax.set_ylabel("dimension n")
        fig.colorbar(im, ax=axes, label="P(collapse)", shrink=0.8)
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="outside upper center", ncol=2, frameon=False)
    return fig


#: short names of data sets and set-ups in panel titles
SHORT = {"gaussian_overlap": "overlap", "batch_hard": "BH raw", "batch_hard_normalized": "BH L2",
         "selectively_contrastive": "SC (control)", "semi_hard": "semi-hard"}

#: ticks of the P / (n + 1) axis
XTICKS = (1 / 16, 1 / 4, 1, 4, 16)
XTICK_LABELS = ("1/16", "1/4", "1", "4", "16")


def figure_fit(doc: Mapping[str, Any], optimizer: str):
    """Collapse rate per cell (Wilson 95 %) against ``P / (n + 1)``, with the logistic
    fit and its 95 % band: data sets down, set-ups across."""
    from isoapprox._lazy import matplotlib
    from isoapprox.plotting._style import COLORS, FULL_WIDTH, group_colors, style_context

    plt = matplotlib().pyplot
    cfg = doc["config"]
    cells = [c for c in doc["cells"] if c["optimizer"] == optimizer]
    fits = {(v["dataset"], v["setup"]): v for v in doc["verdicts"]
            if v["optimizer"] == optimizer}
    dsets = [d for d in cfg["datasets"] if any(c["dataset"] == d for c in cells)]
    setups = [s for s in cfg["setups"] if any(c["setup"] == s for c in cells)]
    ns = list(cfg["dims"])
    colors = dict(zip(ns, group_colors(len(ns)), strict=True))
    import matplotlib.ticker as ticker

    ratios = [c["P_over_n1"] for c in cells] or [1.0]
    lo_x, hi_x = min(ratios) / 1.3, max(ratios) * 1.3
    with style_context():
        fig, axes = plt.subplots(len(dsets), len(setups), squeeze=False, sharex=True,
                                 sharey=True, layout="constrained",
                                 figsize=(FULL_WIDTH, 0.8 + 1.5 * len(dsets)))
        for i, ds in enumerate(dsets):
            for j, su in enumerate(setups):
                ax = axes[i][j]
                ax.axvline(1.0, color=COLORS["collapsed"], lw=0.8, ls=":", label="P = n + 1")
                v = fits.get((ds, su))
                if v is not None and v["band"] is not None:
                    b = v["band"]
                    x = np.exp(b["x"])
                    ax.fill_between(x, b["lower"], b["upper"], color=COLORS["curve"],
                                    alpha=0.3, lw=0, label="logistic fit, 95 % band")
                    ax.plot(x, b["p"], color=COLORS["curve"], lw=1.2)
                for k, n in enumerate(ns):
                    dodge = 1.0 + 0.03 * (k - (len(ns) - 1) / 2)  # bars side by side
                    cs = sorted((c for c in cells if c["dataset"] == ds and c["setup"] == su
                                 and c["embedding_dim"] == n), key=lambda c: c["P"])
                    if not cs:
                        continue
                    x = np.array([c["P_over_n1"] for c in cs]) * dodge
                    y = np.array([c["rate"] for c in cs])
                    err = np.array([[c["rate"] - c["wilson_lower"] for c in cs],
                                    [c["wilson_upper"] - c["rate"] for c in cs]])
                    ax.errorbar(x, y, yerr=err, color=colors[n], marker="o", ms=3, lw=0.8,
                                capsize=1.5, label=f"n = {n}")
                ax.set_xscale("log")
                ax.xaxis.set_major_locator(ticker.FixedLocator(XTICKS))
                ax.xaxis.set_major_formatter(ticker.FixedFormatter(XTICK_LABELS))
                ax.xaxis.set_minor_locator(ticker.NullLocator())
                ax.set_xlim(lo_x, hi_x)
                ax.set_ylim(-0.05, 1.05)
                title = f"{SHORT.get(ds, ds)}: {SHORT.get(su, su)}"
                if v is not None:
                    title += f"\n{v['verdict']}"
                ax.set_title(title)
                if i == len(dsets) - 1:
                    ax.set_xlabel("P / (n + 1)")
                if j == 0:
                    ax.set_ylabel("P(collapse)")
        handles, labels = [], []
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        fig.legend(handles, labels, loc="outside upper center", ncol=min(len(labels), 4),
                   frameon=False)
    return fig


def figure_ideal(doc: Mapping[str, Any]):
    """Statement 4 on the trained batches: the certified ``d_iso`` of each run's
    sub-batch over ``D*(P', n, alpha)`` against its final batch-hard loss over the
    margin; collapsed runs should sit at (1, 1)."""
    from isoapprox._lazy import matplotlib
    from isoapprox.plotting._style import COLORS, COLUMN_WIDTH, style_context

    plt = matplotlib().pyplot
    recs = [r for r in doc["records"] if r.get("final_ideal_d_iso_upper") is not None
            and r.get("final_batch_hard_mean") is not None]
    with style_context():
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2.9), layout="constrained")
        for collapsed, color, marker, label in ((False, COLORS["measured"], "o", "not collapsed"),
                                                (True, COLORS["ideal"], "s", "collapsed")):
            rs = [r for r in recs if bool(r["collapsed"]) == collapsed]
            if not rs:
                continue
            x = [r["final_batch_hard_mean"] / r["margin"] for r in rs]
            y = [r["final_ideal_d_iso_upper"] / r["final_ideal_d_star_sub_lower"] for r in rs]
            ax.scatter(x, y, s=6, color=color, marker=marker, alpha=0.6, lw=0,
                       label=f"{label} ({len(rs)})")
        ax.axvline(1.0, color=COLORS["collapsed"], lw=0.8, ls=":")
        ax.axhline(1.0, color=COLORS["collapsed"], lw=0.8, ls=":")
        ax.set_xscale("symlog", linthresh=0.01)
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_xlim(left=0.0)
        ax.set_ylim(bottom=0.0)
        ax.set_xlabel("final batch-hard loss / margin")
        ax.set_ylabel("d_iso(sub-batch, F_TS) / D*(P', n, \u03b1)")
        fig.legend(loc="outside upper center", ncol=2, frameon=False)
    return fig


def figures(doc: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Every figure of a results document, as ``(name, figure)`` pairs."""
    out = [(f"phase_map_{ds}", figure_map(doc, ds)) for ds in doc["config"]["datasets"]
           if any(c["dataset"] == ds for c in doc["cells"])]
    out += [(f"phase_fit_{opt}", figure_fit(doc, opt)) for opt in doc["config"]["optimizers"]
            if any(c["optimizer"] == opt for c in doc["cells"])]
    out.append(("phase_ideal", figure_ideal(doc)))
    return out


def _figures(source: Path, out_dir: Path, *, quiet: bool) -> int:
    """Build the figures from a results file (nothing is recomputed)."""
    from isoapprox.plotting._style import save_figure

    if not source.exists():
        raise InvalidInputError(f"no results file {str(source)!r}: run the grid first")
    doc = read_results(source)
    files = []
    for name, fig in figures(doc):
        files += save_figure(fig, out_dir, name, sources=[source],
                             description=f"{EXPERIMENT}: {name}")
    if not quiet:
        print(f"figures: {len(files)} files in {out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
