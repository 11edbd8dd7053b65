"""Training loop: one configuration, seeded, logged, with a hook for more quantities.

See docs/dev/train_design.md ("isoapprox.train.trainer: notes").
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .._blas import numba_threads, single_threaded_blas
from .._typing import FloatArray, IntArray
from .._validation import (
    as_labels,
    check_instance,
    check_int,
    check_margin,
    check_nonnegative,
    check_option,
    check_positive,
)
from ..exceptions import InvalidInputError
from ..kernels import distances as K
from ..kernels import losses as KL
from ..losses import LOSSES, LossResult, check_loss_options
from .bounds import CrossCheckCallback, TheoryCallback, heldout_layout
from .data import DATASETS, PKSampler, build_split, resolve_pk
from .evaluate import (
    EmbeddingStats,
    TripletDiagram,
    diagram_of_codes,
    recall_from_distances,
    stats_from_distances,
)
from .networks import ACTIVATIONS, MLP, EmbeddingTable
from .optim import OPTIMIZERS, make_optimizer

__all__ = [
    "MODELS",
    "LogState",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "limit_threads",
    "train",
]

logger = logging.getLogger(__name__)

MODELS = ("mlp", "table")
#: the statistics of the evaluation embedding in every record (``eval_`` + name)
_EVAL_STATS = tuple(f.name for f in fields(EmbeddingStats))


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on except its seed.

    The fields, in groups: data (``dataset`` ... ``noise``), model (``model``
    ... ``normalize``), loss (``loss`` ... ``sc_hard_threshold``),
    optimisation (``optimizer`` ... ``steps``), logging (``log_every`` ...
    ``diagram_size``) and theory (``theory_every`` ...).

    Attributes
    ----------
    dataset : {"digits", "gaussian", "mnist1d"}
    train_classes : tuple of int or None
        Training labels; the others are held out.  Default: digits 0-5;
        mnist1d 0-7 (:func:`~isoapprox.train.data.load_mnist1d`, 500
        signals a class, generated with a seed drawn from the run's data
        stream); gaussian the first ``n_train_classes``.
    n_classes, n_train_classes, per_class, input_dim, separation, noise
        The synthetic set (:func:`~isoapprox.train.data.gaussian_clusters`).
    model : {"mlp", "table"}
    hidden : tuple of int
        Hidden widths of the MLP (empty: a linear map).
    activation : {"tanh", "relu"}
    embedding_dim : int
        ``n``.
    normalize : bool
        L2-normalised embeddings (on the unit sphere).
    loss : str
        A name of :data:`~isoapprox.losses.registry.LOSSES`.
    margin : float
        ``alpha`` (triplet losses, contrastive negatives, margin loss band);
        also the margin of the logged batch-hard quantities.
    reduction : {"mean", "sum", "max", "mean_nonzero"}
        Of the loss's terms (:attr:`~isoapprox.losses.registry.LossSpec.reductions`;
        ``"mean_nonzero"``, the mean over the positive terms, is
        pytorch-metric-learning's default; the selectively contrastive loss
        takes ``"mean"`` or ``"sum"``).
    pos_margin, beta, sc_lambda, sc_temperature, sc_positive, sc_hard_threshold
        Options of the contrastive, margin and selectively contrastive losses.
    optimizer : {"sgd", "adam"}
    lr, momentum, weight_decay
        ``momentum`` is Adam's ``beta1``.
    batch_size : int
        ``N = P K``.
    samples_per_class : int or "auto"
        ``K`` (see :func:`~isoapprox.train.data.resolve_pk`).
    steps : int
        Number of updates.
    log_every : int
    eval_size : int or None
        Size of the fixed evaluation subset (None: all of it).
    recall_ks : tuple of int
    collapse_rtol : float
        A run counts as collapsed when its final evaluation diameter is
        below ``collapse_rtol`` times the initial one (default 0.1).
    diagram_size : int
        Anchors kept (evenly spaced) when a triplet diagram is stored in
        results; the mining always runs over the whole batch.
    theory_every : int
        ``T > 0`` logs the theory quantities of the training batch
        (``theory_*`` fields: ``d_iso`` and ``d_haus`` to the triplet-separated
        set with brackets, ``c``, ``theta``, ...) at the steps that are
        multiples of ``T`` (itself a multiple of ``log_every``) and at the last one
        (:class:`~isoapprox.train.bounds.TheoryCallback`); 0 (default) logs
        none.  Costs up to seconds per evaluation.
    theory_max_points : int
        Batches larger than this are evaluated on a seeded P' x K' sub-batch
        (see :mod:`isoapprox.train.bounds`).
    theory_per_class : int
        ``K'`` of that sub-batch at most (>= 2; fewer samples per class give
        more classes, so ``P' > n + 1`` is reached sooner).
    theory_n_starts : int
        Local solves of each nearest-ideal computation.
    crosscheck_batches : int
        ``B > 0`` evaluates every statement of the theory on ``B`` held-out
        P x K batches of the final embedding
        (:class:`~isoapprox.train.bounds.CrossCheckCallback`); 0 (default)
        none.
    """

    dataset: str = "digits"
    train_classes: tuple[int, ...] | None = None
    n_classes: int = 80
    n_train_classes: int = 64
    per_class: int = 40
    input_dim: int = 32
    separation: float = 2.0
    noise: float = 1.0
    model: str = "mlp"
    hidden: tuple[int, ...] = (64,)
    activation: str = "tanh"
    embedding_dim: int = 32
    normalize: bool = False
    loss: str = "batch_hard"
    margin: float = 0.2
    reduction: str = "mean"
    pos_margin: float = 0.0
    beta: float = 1.0
    sc_lambda: float = 1.0
    sc_temperature: float = 0.1
    sc_positive: str = "easy"
    sc_hard_threshold: float | None = None
    optimizer: str = "sgd"
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 0.0
    batch_size: int = 128
    samples_per_class: int | str = "auto"
    steps: int = 2000
    log_every: int = 100
    eval_size: int | None = None
    recall_ks: tuple[int, ...] = (1, 2, 4, 8)
    #: 0.1 sits in an empty gap of the final / initial diameter ratios (docs/dev/train_design.md,
    #: "Why collapse_rtol = 0.1")
    collapse_rtol: float = 0.1
    diagram_size: int = 64
    theory_every: int = 0
    theory_max_points: int = 16
    theory_per_class: int = 4
    theory_n_starts: int = 4
    crosscheck_batches: int = 0

    def __post_init__(self) -> None:
        check_option(self.dataset, "dataset", DATASETS)
        check_option(self.model, "model", MODELS)
        check_option(self.activation, "activation", ACTIVATIONS)
        check_option(self.optimizer, "optimizer", OPTIMIZERS)
        check_option(self.loss, "loss", tuple(LOSSES))
        for name in (
            "n_classes",
            "n_train_classes",
            "per_class",
            "input_dim",
            "embedding_dim",
            "steps",
            "log_every",
            "diagram_size",
            "theory_n_starts",
        ):
            check_int(getattr(self, name), name, minimum=1)
        check_int(self.theory_every, "theory_every", minimum=0)
        if self.theory_every % self.log_every:
            raise InvalidInputError(
                "`theory_every` must be 0 or a multiple of `log_every` "
                f"({self.log_every}); got {self.theory_every}"
            )
        check_int(self.crosscheck_batches, "crosscheck_batches", minimum=0)
        check_int(self.theory_max_points, "theory_max_points", minimum=4)
        check_int(self.theory_per_class, "theory_per_class", minimum=2)
        check_int(self.batch_size, "batch_size", minimum=4)
        if (
            self.n_train_classes >= self.n_classes
            and self.model == "mlp"
            and self.dataset == "gaussian"
            and self.train_classes is None
        ):
            raise InvalidInputError(
                "`n_train_classes` must be < `n_classes` to leave held-out "
                "classes; got "
                f"{self.n_train_classes} of {self.n_classes}"
            )
        for name in ("separation", "noise", "lr", "collapse_rtol"):
            check_positive(getattr(self, name), name)
        check_margin(self.margin)
        check_nonnegative(self.weight_decay, "weight_decay")
        check_nonnegative(self.momentum, "momentum")
        if self.momentum >= 1.0:
            raise InvalidInputError(f"`momentum` must be < 1; got {self.momentum!r}")
        for h in self.hidden:
            check_int(h, "hidden", minimum=1)
        for k in self.recall_ks:
            check_int(k, "recall_ks", minimum=1)
        if self.eval_size is not None:
            check_int(self.eval_size, "eval_size", minimum=4)
        if self.samples_per_class != "auto":
            check_int(self.samples_per_class, "samples_per_class", minimum=2)
        check_loss_options(self.loss, self.loss_options())

    def loss_options(self) -> dict[str, Any]:
        """The options of the configured loss, by the loss's own names."""
        table = {
            "margin": self.margin,
            "reduction": self.reduction,
            "pos_margin": self.pos_margin,
            "beta": self.beta,
            "lam": self.sc_lambda,
            "temperature": self.sc_temperature,
            "positive": self.sc_positive,
            "hard_threshold": self.sc_hard_threshold,
        }
        return {k: table[k] for k in LOSSES[self.loss].options}

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (tuples become lists in JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainConfig:
        """Inverse of :meth:`to_dict` (lists become tuples; unknown keys: error)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise InvalidInputError(
                f"TrainConfig has no field(s) {unknown}; valid fields: {sorted(names)}"
            )
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()}
        return cls(**kw)


@dataclass(frozen=True, eq=False)
class LogState:
    """What a logging callback sees (see docs/dev/train_design.md)."""

    step: int
    config: TrainConfig
    model: Any
    batch_E: FloatArray
    batch_y: IntArray
    batch_index: IntArray
    loss: LossResult
    eval_E: FloatArray
    eval_y: IntArray
    record: Mapping[str, Any]


Callback = Callable[[LogState], "Mapping[str, Any] | None"]


@dataclass(frozen=True, eq=False)
class TrainResult:
    """Outcome of one run.

    Attributes
    ----------
    config : TrainConfig
    history : list of dict
        The logged records (see docs/dev/train_design.md).
    diagrams : dict of str to TripletDiagram
        ``heldout_initial``, ``heldout_final`` (a fixed P x K batch of the
        evaluation set) and ``train_final`` (the last training batch).
    P, K : int
        The batch layout.
    n_params : int
    diverged : bool
        A non-finite loss, gradient or embedding stopped the run.
    steps_done : int
    seconds : float
        Wall-clock time (the only number that differs between identical runs).
    eval_E, eval_y : ndarray
        Final embedding of the evaluation set and its labels.
    """

    config: TrainConfig
    history: list[dict[str, Any]]
    diagrams: dict[str, TripletDiagram]
    P: int
    K: int
    n_params: int
    diverged: bool
    steps_done: int
    seconds: float
    eval_E: FloatArray = field(repr=False)
    eval_y: IntArray = field(repr=False)

    @property
    def initial(self) -> dict[str, Any]:
        """The record at step 0."""
        return self.history[0]

    @property
    def final(self) -> dict[str, Any]:
        """The last record."""
        return self.history[-1]

    def summary(self) -> dict[str, Any]:
        """One flat record: configuration, layout, initial and final numbers."""
        c = self.config
        out: dict[str, Any] = {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in c.to_dict().items()
        }
        out.update({k: getattr(self, k) for k in ("P", "K", "n_params", "steps_done", "diverged")})
        ini, fin = self.initial, self.final
        for key in _EVAL_STATS:
            out[f"initial_eval_{key}"] = ini.get(f"eval_{key}")
        for key, value in fin.items():
            if key in ("step", "epoch") or isinstance(value, (list, tuple, dict)):
                continue  # nested fields (e.g. ``crosscheck``) stay in the history
            out[f"final_{key}"] = value
        for name, key in (("diameter_ratio", "eval_diameter"),
                          ("median_ratio", "eval_median_distance")):
            out[name] = _ratio(fin.get(key), ini.get(key))
        out["collapsed"] = bool(
            out["diameter_ratio"] is not None
            and out["diameter_ratio"] < c.collapse_rtol
        )
        for name, diag in self.diagrams.items():
            out[f"{name}_hard_fraction"] = diag.hard_fraction
            out[f"{name}_hard_fraction_easy"] = diag.hard_fraction_easy
        out["seconds"] = self.seconds
        return out


def _ratio(a, b):
    if (
        a is None
        or b is None
        or not (math.isfinite(a) and math.isfinite(b))
        or b == 0.0
    ):
        return None
    return a / b


@contextlib.contextmanager
def limit_threads(n: int | None):
    """Run numba kernels on ``n`` threads, and BLAS on one if ``n == 1``.

    Training batches are small (``N <= 512``): waking a thread team costs
    more than the work, and on a loaded machine much more.  Measured on the
    shared 2-core machine: ``batch_hard_terms`` at ``N = 128, n = 32`` took
    12 ms on 2 numba threads and 1 ms on one; an MLP 64-64-2 forward and
    backward pass at ``N = 512`` took 169 ms with 2 OpenBLAS threads and
    7 ms with one.  Results do not depend on the thread counts.  numba's
    setting is per calling thread; the BLAS limit
    (:func:`isoapprox._blas.single_threaded_blas`, through threadpoolctl when
    it is installed) holds for the whole process until the context exits.
    ``None`` leaves both as they are.
    """
    if n is None:
        yield
        return
    n = max(1, int(n))
    with numba_threads(n), single_threaded_blas() if n == 1 else contextlib.nullcontext():
        yield


def _theory_callbacks(config: TrainConfig, theory_ss, check_ss) -> tuple:
    """The callbacks a configuration asks for (see the ``Theory`` fields)."""
    out: list = []
    if config.theory_every or config.crosscheck_batches:
        kw = dict(max_points=config.theory_max_points, per_class=config.theory_per_class,
                  n_starts=config.theory_n_starts)
        if config.theory_every:
            out.append(TheoryCallback(config.theory_every, seed=theory_ss, **kw))
        if config.crosscheck_batches:
            out.append(CrossCheckCallback(config.crosscheck_batches, seed=check_ss, **kw))
    return tuple(out)


def _seed_sequence(seed) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None or (
        isinstance(seed, (int, np.integer))
        and not isinstance(seed, bool)
        and int(seed) >= 0
    ):
        return np.random.SeedSequence(None if seed is None else int(seed))
    raise TypeError(
        f"`seed` must be None, a non-negative int or a SeedSequence; got {seed!r}"
    )


class Trainer:
    """A training run in progress (see :func:`train`).

    Parameters
    ----------
    config : TrainConfig
    seed : None, int or SeedSequence
        Root of the run's random streams.
    data_seed : None, int or SeedSequence
        Stream of the synthetic data (default: spawned from ``seed``).
    callbacks : sequence of callables
        Logging hooks (see docs/dev/train_design.md).
    """

    def __init__(
        self,
        config: TrainConfig,
        *,
        seed=None,
        data_seed=None,
        callbacks: Sequence[Callback] = (),
    ) -> None:
        check_instance(config, TrainConfig, "config")
        self.config = config
        ss = _seed_sequence(seed)
        # spawn(6)[:4] equals spawn(4): the theory streams change no trained number
        data_ss, init_ss, sample_ss, eval_ss, theory_ss, check_ss = ss.spawn(6)
        self.callbacks = tuple(callbacks) + _theory_callbacks(config, theory_ss, check_ss)
        if data_seed is not None:
            data_ss = _seed_sequence(data_seed)
        self.split = build_split(config, rng=np.random.default_rng(data_ss))
        tr = self.split.train
        self.train_X = tr.X
        self.train_codes, self.train_classes = as_labels(tr.y, len(tr), "y")
        sizes = np.bincount(self.train_codes)
        self.P, self.K = resolve_pk(config.batch_size, sizes, config.samples_per_class)
        init_rng = np.random.default_rng(init_ss)
        if config.model == "mlp":
            sizes_ = (tr.X.shape[1], *config.hidden, config.embedding_dim)
            self.model = MLP(
                sizes_,
                activation=config.activation,
                normalize=config.normalize,
                rng=init_rng,
            )
        else:
            self.model = EmbeddingTable(
                len(tr), config.embedding_dim, normalize=config.normalize, rng=init_rng
            )
        self.optimizer = make_optimizer(
            config.optimizer,
            self.model.params,
            lr=config.lr,
            momentum=config.momentum,
            weight_decay=config.weight_decay,
        )
        self.sampler = PKSampler(
            self.train_codes, self.P, self.K, rng=np.random.default_rng(sample_ss)
        )
        self.loss_fn = LOSSES[config.loss].fn
        self.loss_options = check_loss_options(config.loss, config.loss_options())
        self._setup_eval(np.random.default_rng(eval_ss))
        self.step_count = 0

    # -- evaluation set ------------------------------------------------------
    def _setup_eval(self, rng: np.random.Generator) -> None:
        c = self.config
        if c.model == "mlp":
            inputs_all, y = self.split.test.X, self.split.test.y
        else:
            y = self.split.train.y
            inputs_all = np.arange(len(y))
        idx = np.arange(len(y))
        if c.eval_size is not None and c.eval_size < len(y):
            idx = np.sort(rng.choice(len(y), size=c.eval_size, replace=False))
        self.eval_inputs = inputs_all[idx]
        self.eval_codes, _ = as_labels(y[idx], idx.size, "y")
        counts = np.bincount(self.eval_codes)
        if counts.size < 2 or counts.max() < 2:
            raise InvalidInputError(
                "the evaluation set must hold two classes and a class of two "
                "samples; got "
                f"class sizes {counts.tolist()} (raise `eval_size`)"
            )
        p, k = heldout_layout(self.eval_codes, self.P, self.K)
        self.diagram_index = PKSampler(self.eval_codes, p, k, rng=rng).sample()

    def _inputs(self, idx: np.ndarray) -> np.ndarray:
        return self.train_X[idx] if self.model.input_kind == "features" else idx

    def evaluate(self) -> tuple[dict[str, Any], FloatArray]:
        """Evaluation-set fields of a record, and the evaluation embedding."""
        E = self.model(self.eval_inputs)
        ks = self.config.recall_ks
        if not np.all(np.isfinite(E)):
            keys = [f"eval_{name}" for name in _EVAL_STATS] + [f"eval_recall_at_{k}" for k in ks]
            return dict.fromkeys(keys, float("nan")), E
        D = K.pairwise_distances_kernel(E)
        st = stats_from_distances(D, E)
        rec = {f"eval_{name}": getattr(st, name) for name in _EVAL_STATS}
        for k, v in recall_from_distances(D, self.eval_codes, ks).items():
            rec[f"eval_recall_at_{k}"] = v
        return rec, E

    def diagram(self, which: str = "heldout") -> TripletDiagram:
        """Triplet-diagram data of the fixed held-out batch or the last train batch."""
        if which == "heldout":
            E = self.model(self.eval_inputs[self.diagram_index])
            return diagram_of_codes(E, self.eval_codes[self.diagram_index])
        E = self.model(self._inputs(self._last_idx))
        return diagram_of_codes(E, self.train_codes[self._last_idx])

    # -- one step ------------------------------------------------------------
    def _batch(self):
        idx = self.sampler.sample()
        E, cache = self.model.forward(self._inputs(idx))
        codes = self.train_codes[idx]
        if not np.all(np.isfinite(E)):
            return idx, E, cache, codes, None
        res = self.loss_fn(E, codes, **self.loss_options)
        if not (math.isfinite(res.value) and np.all(np.isfinite(res.grad))):
            return idx, E, cache, codes, None
        return idx, E, cache, codes, res

    def _update(self, res: LossResult, cache) -> None:
        self.optimizer.step(self.model.backward(res.grad, cache))
        self.step_count += 1

    def step(self) -> LossResult | None:
        """One update on a fresh batch; ``None`` (no update) if it is not finite."""
        idx, E, cache, codes, res = self._batch()
        self._last_idx = idx
        if res is not None:
            self._update(res, cache)
        return res

    def _record(
        self, idx, E, codes, res: LossResult, losses_since: list[float]
    ) -> tuple[dict[str, Any], FloatArray]:
        c = self.config
        N = idx.size
        D = K.pairwise_distances_kernel(E)
        st = stats_from_distances(D, E)
        hp, hn, pi, ni = KL.batch_hard_terms(E, codes, c.margin)
        valid = (pi >= 0) & (ni >= 0)
        z = hp[valid] - hn[valid] + c.margin
        bh = np.maximum(z, 0.0)
        rec: dict[str, Any] = {
            "step": self.step_count,
            "epoch": self.step_count * N / self.train_X.shape[0],
            "loss": res.value,
            "loss_avg": float(np.mean(losses_since)) if losses_since else res.value,
            "active_fraction": res.active_fraction,
            "grad_norm": float(np.sqrt(np.sum(res.grad * res.grad))),
            "batch_diameter": st.diameter,
            "batch_median_distance": st.median_distance,
            "batch_hard_mean": float(np.sum(bh) / bh.size),
            "batch_hard_max": float(np.max(bh)),
            "batch_hard_active_fraction": float(np.mean(z > 0.0)),
        }
        ev, eval_E = self.evaluate()
        rec.update(ev)
        return rec, eval_E

    def _log(self, idx, E, codes, res, losses_since, history) -> None:
        rec, eval_E = self._record(idx, E, codes, res, losses_since)
        if self.callbacks:
            state = LogState(
                self.step_count,
                self.config,
                self.model,
                E,
                codes,
                idx,
                res,
                eval_E,
                self.eval_codes,
                dict(rec),
            )
            for cb in self.callbacks:
                extra = cb(state)
                if not extra:
                    continue
                clash = sorted(set(extra) & set(rec))
                if clash:
                    raise InvalidInputError(
                        f"a logging callback returned field(s) {clash} that are "
                        "already "
                        f"logged; rename them"
                    )
                rec.update(extra)
        history.append(rec)
        logger.debug("step %d: %s", rec["step"], rec)

    def run(self, *, progress: bool = False, threads: int | None = 1) -> TrainResult:
        """Run ``config.steps`` updates with logging; returns the :class:`TrainResult`.

        ``threads`` is the number of numba and BLAS threads used meanwhile
        (see :func:`limit_threads`); it does not change any result.
        """
        # divergence is detected by explicit finiteness checks; numpy's
        # overflow warnings on the way there would only repeat it
        with limit_threads(threads), np.errstate(over="ignore", invalid="ignore"):
            return self._run(progress)

    def _run(self, progress: bool) -> TrainResult:

        c = self.config
        t0 = time.perf_counter()
        history: list[dict[str, Any]] = []
        diagrams = {"heldout_initial": self.diagram("heldout")}
        losses_since: list[float] = []
        diverged = False
        bar = tqdm(
            total=c.steps,
            disable=not progress,
            leave=False,
            desc=f"{c.loss} N={c.batch_size} n={c.embedding_dim}",
        )
        try:
            for t in range(c.steps + 1):
                idx, E, cache, codes, res = self._batch()
                self._last_idx = idx
                if res is None:
                    diverged = True
                    logger.warning(
                        "training diverged at step %d (non-finite loss, gradient "
                        "or embedding)",
                        t,
                    )
                    break
                if t % c.log_every == 0 or t == c.steps:
                    self._log(idx, E, codes, res, losses_since, history)
                    losses_since = []
                    bar.set_postfix(
                        loss=f"{res.value:.4g}",
                        diam=f"{history[-1]['eval_diameter']:.3g}",
                    )
                if t == c.steps:
                    break
                losses_since.append(res.value)
                self._update(res, cache)
                bar.update(1)
        finally:
            bar.close()
        if diverged:
            history.append({
                "step": self.step_count,
                "epoch": self.step_count * c.batch_size / self.train_X.shape[0],
                "diverged": True,
                **self.evaluate()[0],
            })
        diagrams["heldout_final"] = self.diagram("heldout")
        diagrams["train_final"] = self.diagram("train")
        eval_E = self.model(self.eval_inputs)
        return TrainResult(
            config=c,
            history=history,
            diagrams=diagrams,
            P=self.P,
            K=self.K,
            n_params=self.model.n_params,
            diverged=diverged,
            steps_done=self.step_count,
            seconds=time.perf_counter() - t0,
            eval_E=eval_E,
            eval_y=self.eval_codes,
        )


def train(
    config: TrainConfig,
    *,
    seed=None,
    data_seed=None,
    callbacks: Sequence[Callback] = (),
    progress: bool = False,
    threads: int | None = 1,
) -> TrainResult:
    """Train one configuration.

    Parameters
    ----------
    config : TrainConfig
    seed : None, int or SeedSequence
        Root of the run's random streams (``None``: fresh entropy, not
        reproducible).
    data_seed : None, int or SeedSequence
        Overrides the stream of the synthetic data set.
    callbacks : sequence of callables
        ``cb(LogState) -> mapping or None`` at every logged step.
    progress : bool, default False
        Show a progress bar over the steps.
    threads : int or None, default 1
        numba and BLAS threads while training (see :func:`limit_threads`;
        results do not depend on it).

    Returns
    -------
    TrainResult

    Examples
    --------
    >>> cfg = TrainConfig(dataset="gaussian", n_classes=6, n_train_classes=4,
    ...                   per_class=8, input_dim=5, hidden=(8,), embedding_dim=2,
    ...                   batch_size=8, steps=3, log_every=2)
    >>> r = train(cfg, seed=0)
    >>> [rec["step"] for rec in r.history], (r.P, r.K)
    ([0, 2, 3], (2, 4))
    """
    return Trainer(config, seed=seed, data_seed=data_seed, callbacks=callbacks).run(
        progress=progress, threads=threads
    )
