"""The toy system: five labelled points in the plane, embedded by a small network.

:func:`run_toy` trains every :class:`Scenario` (an MLP ``2 - 16 - 2`` on the
mean batch-hard loss), finds when and in which order points merge, classifies
the run, and evaluates the theory (:func:`evaluate_embedding`) at log-spaced
steps, at every merge and on random 5-point toys.  Notation, pipeline and
reproducibility: see docs/toy.md.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ._validation import (
    as_labels,
    as_points,
    check_instance,
    check_int,
    check_margin,
    check_nonnegative,
    check_option,
    check_positive,
    check_probability,
    require_triplets,
)
from .exceptions import InvalidInputError
from .geometry import min_enclosing_ball
from .kernels import cache
from .losses import LOSSES, batch_hard_loss, hardest_pairs
from .metrics import isometric_error_report
from .runs import RunJournal, config_key, executor, progress_bar, run_units
from .theory import TheoryOptions, evaluate_theory
from .train.networks import MLP
from .train.optim import SGD

__all__ = [
    "DEFAULT_SCENARIOS",
    "JUNG_PLANE",
    "PAPER_C",
    "RANDOM_LAYOUTS",
    "MAX_PERTURBATION",
    "SMOKE",
    "TOY_THEORY",
    "Scenario",
    "ToyConfig",
    "analyse_training",
    "classify_run",
    "evaluate_embedding",
    "is_sequential",
    "learning_rate_schedule",
    "linkage_heights",
    "linked_groups",
    "logged_steps",
    "merge_events",
    "merge_order",
    "run_toy",
    "step_distances",
    "summarize_random",
    "toy_inputs",
    "train_scenario",
]

logger = logging.getLogger(__name__)

#: the empirical constant the paper reports for its toy
PAPER_C = 0.53
#: ``sqrt(n / (2 (n + 1)))`` for ``n = 2``: the largest ``R/D`` in the plane
#: (Jung), so the largest ``c`` of a near-collapsed embedding with a
#: class-collapsed ``f*``
JUNG_PLANE = 1.0 / math.sqrt(3.0)
#: label layouts of the random toys (five points, at least one class of >= 2)
RANDOM_LAYOUTS: tuple[tuple[int, ...], ...] = ((0, 0, 0, 1, 1), (0, 0, 1, 1, 2), (0, 0, 1, 1, 1))
#: ``ToyConfig.perturbation`` is a relative size below this (it models last-bit
#: differences, ~1e-12, not another configuration)
MAX_PERTURBATION = 1e-2


@dataclass(frozen=True)
class Scenario:
    """One training run of the toy: labels, margin ``alpha``, learning rate,
    seed of the initial weights and a one-line description."""

    name: str
    labels: tuple[int, ...]
    margin: float
    lr: float
    init_seed: int
    description: str = ""


#: the three default scenarios, chosen by ``experiments/toy.py --search``
#: (see docs/toy.md); descriptions say what is set, the outcome is measured
DEFAULT_SCENARIOS: tuple[Scenario, ...] = (
    Scenario("collapse", (0, 0, 0, 1, 1), 1.0, 0.25, 59, "margin 1, learning rate 0.25"),
    Scenario("separate", (0, 0, 0, 1, 1), 1.0, 0.125, 59, "margin 1, learning rate 0.125"),
    Scenario("margin0", (0, 0, 0, 1, 1), 0.0, 0.25, 59,
             "margin 0, the theory's; learning rate 0.25"),
)


@dataclass(frozen=True)
class ToyConfig:
    """Configuration of :func:`run_toy` (all fields JSON-ready; see docs/toy.md).

    Attributes
    ----------
    scenarios : tuple of Scenario
    input_seed : int
        Seed of the inputs ``x_k ~ N(0, I_2)``.
    n_points : int
    hidden : tuple of int
        Hidden widths of the MLP ``2 - hidden - 2``.
    activation : {"tanh", "relu"}
    steps : int
        Gradient steps per scenario.
    lr_decay_start, lr_end : float
        Arguments of :func:`learning_rate_schedule`.
    perturbation, perturbation_seed : float, int
        Multiply the initial weights and inputs by ``1 + perturbation * z``
        (``z ~ N(0, 1)`` from ``perturbation_seed``) before training; ``1e-12``
        models the last-bit differences between machines.
    n_logged, n_history : int
        Log-spaced steps evaluated (merges are added) and stored in the history.
    example_step : int or None
        Step of the Fig. 2/3-style figures (nearest evaluated one); ``None``:
        the one with the largest ``d_iso``.
    merge_rtol, merge_release, collapse_rtol : float
        Thresholds relative to the initial diameter (:func:`merge_events`,
        :func:`classify_run`); ``merge_release >= 1`` is the hysteresis.
    n_random, random_layouts, random_margins
        Random toys, spread evenly over layouts and margins.
    seed : int
        Root seed of the solvers' starts and of the random toys.
    tol, effort, n_starts, time_limit
        Options of :func:`isoapprox.nearest_ideal` (work budgets: the same
        outcomes on a busy machine; ``time_limit`` is only its safety net).
    """

    scenarios: tuple[Scenario, ...] = DEFAULT_SCENARIOS
    input_seed: int = 5
    n_points: int = 5
    hidden: tuple[int, ...] = (16,)
    activation: str = "tanh"
    steps: int = 3000
    lr_decay_start: float = 0.6
    lr_end: float = 1e-4
    perturbation: float = 0.0
    perturbation_seed: int = 0
    n_logged: int = 28
    n_history: int = 240
    example_step: int | None = None
    merge_rtol: float = 1e-2
    merge_release: float = 3.0
    collapse_rtol: float = 1e-3
    n_random: int = 300
    random_layouts: tuple[tuple[int, ...], ...] = RANDOM_LAYOUTS
    random_margins: tuple[float, ...] = (0.0, 1.0)
    seed: int = 0
    tol: float = 1e-6
    effort: str = "default"
    n_starts: int = 8
    time_limit: float | None = None

    def __post_init__(self) -> None:
        for name, minimum in (("n_points", 3), ("steps", 1), ("n_logged", 2), ("n_history", 2),
                              ("example_step", 0), ("n_random", 0), ("seed", 0),
                              ("input_seed", 0)):
            if name != "example_step" or self.example_step is not None:
                check_int(getattr(self, name), name, minimum=minimum)
        check_positive(self.merge_rtol, "merge_rtol")
        if check_positive(self.merge_release, "merge_release") < 1.0:
            raise InvalidInputError(f"`merge_release` must be >= 1; got {self.merge_release!r}")
        check_probability(self.lr_decay_start, "lr_decay_start")
        if check_positive(self.lr_end, "lr_end") > 1.0:
            raise InvalidInputError(f"`lr_end` must be <= 1; got {self.lr_end!r}")
        if check_nonnegative(self.perturbation, "perturbation") >= MAX_PERTURBATION:
            raise InvalidInputError(f"`perturbation` must be < {MAX_PERTURBATION:g} (a relative "
                                    f"size); got {self.perturbation!r}")
        check_int(self.perturbation_seed, "perturbation_seed", minimum=0)
        check_positive(self.collapse_rtol, "collapse_rtol")
        self.theory_options()  # checks tol, effort, n_starts and time_limit
        check_option(self.activation, "activation", ("tanh", "relu"))
        if not self.scenarios:
            raise InvalidInputError("`scenarios` must hold at least one Scenario; got ()")
        names = [s.name for s in self.scenarios]
        if len(set(names)) != len(names):
            raise InvalidInputError(f"`scenarios` must have distinct names; got {names}")
        for s in self.scenarios:
            if len(s.labels) != self.n_points:
                raise InvalidInputError(
                    f"scenario {s.name!r}: `labels` must hold n_points = {self.n_points} "
                    f"labels; got {len(s.labels)}"
                )
            codes, _ = as_labels(np.asarray(s.labels), self.n_points, "labels")
            require_triplets(codes, "labels")
            check_margin(s.margin, "margin")
            check_positive(s.lr, "lr")
            check_int(s.init_seed, "init_seed", minimum=0)
        if self.n_random and not (self.random_layouts and self.random_margins):
            raise InvalidInputError(
                "`random_layouts` and `random_margins` must not be empty when n_random > 0"
            )
        for lay in self.random_layouts:
            if len(lay) != self.n_points:
                raise InvalidInputError(
                    f"`random_layouts` entries must hold {self.n_points} labels; got {lay!r}"
                )
            require_triplets(as_labels(np.asarray(lay), self.n_points, "random_layouts")[0],
                             "random_layouts")
        for m in self.random_margins:
            check_margin(m, "random_margins")

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-ready)."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> ToyConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def theory_options(self, **changes: Any) -> TheoryOptions:
        """The options of :func:`evaluate_embedding` for this run (``tol``, ``effort``,
        ``n_starts``, ``time_limit``; the ``d_haus`` search at any number of points),
        with ``changes`` applied."""
        opts = {"tol": self.tol, "effort": self.effort, "n_starts": self.n_starts,
                "time_limit": self.time_limit, "haus_max_points": None, **changes}
        return TheoryOptions(**opts)

    def with_margin(self, margin: float) -> ToyConfig:
        """A copy whose positive-margin scenarios use ``margin`` instead.

        The margin-0 scenario keeps margin 0 (it is the theory's case).
        """
        margin = check_margin(margin)
        scen = tuple(dataclasses.replace(s, margin=margin) if s.margin > 0 else s
                     for s in self.scenarios)
        return dataclasses.replace(self, scenarios=scen)


#: the options of :func:`evaluate_embedding` by default (``ToyConfig()``'s but
#: ``n_starts``: the effort's)
TOY_THEORY = TheoryOptions(haus_max_points=None)

#: a tiny configuration for tests (seconds once compiled)
SMOKE = ToyConfig(steps=60, n_logged=5, n_history=20, n_random=6, n_starts=4)


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------


def toy_inputs(config: ToyConfig) -> np.ndarray:
    """The inputs ``x_k ~ N(0, I_2)`` drawn from ``input_seed`` (shape (n_points, 2))."""
    return np.random.default_rng(config.input_seed).normal(size=(config.n_points, 2))


def logged_steps(steps: int, n: int) -> np.ndarray:
    """About ``n`` log-spaced integer steps in ``[0, steps]``, always with 0 and ``steps``.

    Examples
    --------
    >>> logged_steps(100, 6).tolist()
    [0, 1, 3, 10, 32, 100]
    """
    steps = check_int(steps, "steps", minimum=1)
    n = check_int(n, "n", minimum=2)
    grid = np.geomspace(1.0, float(steps), max(n - 1, 1))
    return np.unique(np.concatenate([[0], np.rint(grid).astype(np.int64), [steps]]))


def learning_rate_schedule(steps: int, *, decay_start: float, end: float) -> np.ndarray:
    """The factor of the learning rate at each step ``0, ..., steps - 1``.

    ``1`` up to step ``t0 = floor(decay_start * steps)``, then geometric decay
    that would reach ``end`` at step ``steps`` (the step after the last
    update).

    Examples
    --------
    >>> learning_rate_schedule(4, decay_start=0.5, end=1e-2).tolist()
    [1.0, 1.0, 1.0, 0.1]
    """
    steps = check_int(steps, "steps", minimum=1)
    decay_start = check_probability(decay_start, "decay_start")
    if not 0.0 < check_positive(end, "end") <= 1.0:
        raise InvalidInputError(f"`end` must be <= 1; got {end!r}")
    t0 = int(math.floor(decay_start * steps))
    t = np.arange(steps, dtype=float)
    if steps <= t0:
        return np.ones(steps)
    return np.where(t <= t0, 1.0, end ** ((t - t0) / (steps - t0)))


def _perturb(arrays: Sequence[np.ndarray], eps: float, seed: int) -> None:
    """Multiply every entry by ``1 + eps * z`` (``z`` standard normal) in place."""
    gen = np.random.default_rng([0x70E7, seed])
    for a in arrays:
        a *= 1.0 + eps * gen.standard_normal(a.shape)


def train_scenario(config: ToyConfig, scenario: Scenario) -> dict[str, Any]:
    """Train the toy network of one scenario, keeping every step's embedding.

    Returns a dict: ``embeddings`` (steps + 1, N, 2), ``loss_mean`` and
    ``n_active`` (steps + 1,), ``diverged``, ``inputs`` (N, 2), ``codes``.
    """
    X = toy_inputs(config)
    codes, _ = as_labels(np.asarray(scenario.labels), config.n_points, "labels")
    net = MLP((2, *config.hidden, 2), activation=config.activation,
              rng=np.random.default_rng(scenario.init_seed))
    if config.perturbation > 0.0:
        _perturb([*net.params, X], float(config.perturbation), config.perturbation_seed)
    opt = SGD(net.params, lr=scenario.lr)
    loss_fn = LOSSES["batch_hard"].fn  # on validated arrays (validated once above)
    T = config.steps
    lrs = scenario.lr * learning_rate_schedule(T, decay_start=config.lr_decay_start,
                                               end=config.lr_end)
    embs = np.full((T + 1, config.n_points, 2), np.nan)
    loss = np.full(T + 1, np.nan)
    active = np.zeros(T + 1, dtype=np.int64)
    diverged = False
    for s in range(T + 1):
        E, cache = net.forward(X)
        if not np.all(np.isfinite(E)):
            diverged = True
            break
        r = loss_fn(E, codes, margin=scenario.margin, reduction="mean")
        embs[s], loss[s], active[s] = E, r.value, r.n_active
        if s < T:
            opt.lr = float(lrs[s])
            opt.step(net.backward(r.grad, cache))
    return {"embeddings": embs, "loss_mean": loss, "n_active": active, "diverged": diverged,
            "inputs": X, "codes": codes}


def step_distances(embeddings: np.ndarray) -> np.ndarray:
    """Pairwise distances (``triu`` order) of every step's embedding, by direct differences.

    Examples
    --------
    >>> step_distances(np.array([[[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]])).tolist()
    [[5.0, 1.0, 4.242640687119285]]
    """
    iu, ju = np.triu_indices(embeddings.shape[1], 1)
    diff = embeddings[:, iu, :] - embeddings[:, ju, :]
    return np.sqrt(np.einsum("tpk,tpk->tp", diff, diff))


def analyse_training(config: ToyConfig, scenario: Scenario, trained: dict[str, Any]
                     ) -> dict[str, Any]:
    """Classify a trained run: merges, their order, the outcome, when the loss reached zero.

    Returns ``trained`` (of :func:`train_scenario`) with ``last`` (last finite
    step), ``D``, ``diam``, ``pair_steps``, ``events``, ``merge_order``,
    ``outcome``, ``sequential``, ``final_diameter_ratio``, ``loss_max_final``
    and ``zero_loss_step``; raises InvalidInputError if the first output is
    not finite.
    """
    embs = trained["embeddings"]
    N = config.n_points
    ok = np.all(np.isfinite(embs), axis=(1, 2))
    last = int(np.flatnonzero(ok)[-1]) if ok.any() else -1
    if last < 0 or not ok[0]:
        raise InvalidInputError(f"scenario {scenario.name!r}: the network output is not finite")
    D = step_distances(embs[: last + 1])
    diam = D.max(axis=1)
    pair_steps, events = merge_events(D, np.arange(last + 1), config.merge_rtol * diam[0],
                                      release=config.merge_release)
    loss_max_final = batch_hard_loss(embs[last], trained["codes"], margin=scenario.margin,
                                     reduction="max")
    outcome = classify_run(diam, loss_max_final, collapse_rtol=config.collapse_rtol,
                           diverged=trained["diverged"])
    zero = (_zero_loss_step(embs[: last + 1], trained["codes"], scenario.margin)
            if scenario.margin > 0 else None)
    return {
        **trained,
        "last": last,
        "D": D,
        "diam": diam,
        "pair_steps": pair_steps,
        "events": events,
        "merge_order": merge_order(pair_steps, events, N),
        "outcome": outcome,
        "sequential": bool(outcome == "collapsed" and is_sequential(events, N)),
        "final_diameter_ratio": float(diam[last] / diam[0]),
        "loss_max_final": float(loss_max_final),
        "zero_loss_step": zero,
    }


def merge_events(distances: np.ndarray, steps: np.ndarray, threshold: float, *,
                 release: float = 1.0) -> tuple[list[int | None], list[tuple[int, int]]]:
    """When pairs merge for good (with hysteresis), and how the number of clusters falls.

    Parameters
    ----------
    distances : ndarray of shape (T, M)
        Pairwise distances (``triu`` order) at the increasing ``steps``.
    steps : ndarray of shape (T,)
    threshold : float
        A pair merges when its distance is at most ``threshold``.
    release : float, default 1
        A merged pair comes apart only above ``release * threshold`` (``>= 1``).

    Returns
    -------
    pair_steps : list of int or None
        Per pair, the first step from which it stays merged (``None``: apart at the end).
    events : list of (step, n_clusters)
        The steps at which the number of clusters falls, with the count after.

    Examples
    --------
    >>> D = np.array([[3.0, 3.0, 3.0], [0.0, 3.0, 3.0], [0.0, 0.0, 0.0]])
    >>> merge_events(D, np.array([0, 5, 9]), 0.1)
    ([5, 9, 9], [(5, 2), (9, 1)])
    >>> D = np.array([[3.0, 3.0, 3.0], [0.05, 3.0, 3.0], [0.15, 3.0, 3.0], [0.0, 0.0, 0.0]])
    >>> merge_events(D, np.array([0, 1, 2, 3]), 0.1, release=2.0)[0]
    [1, 3, 3]
    """
    T, M = distances.shape
    if not (release >= 1.0):
        raise InvalidInputError(f"`release` must be >= 1; got {release!r}")
    N = int(round((1 + math.sqrt(1 + 8 * M)) / 2))
    below = distances <= threshold
    apart = distances > release * threshold
    pair_steps: list[int | None] = []
    for k in range(M):
        if not below[-1, k]:
            pair_steps.append(None)
            continue
        out = np.flatnonzero(apart[:, k])
        since = 0 if out.size == 0 else int(out[-1]) + 1
        first = since + int(np.argmax(below[since:, k]))
        pair_steps.append(int(steps[first]))
    events: list[tuple[int, int]] = []
    n_clusters = N
    for s in sorted({st for st in pair_steps if st is not None}):
        n = len(_merged_groups(pair_steps, s, N))
        if n < n_clusters:
            events.append((s, n))
            n_clusters = n
    return pair_steps, events


def classify_run(diameters: np.ndarray, loss_max_final: float, *, collapse_rtol: float,
                 diverged: bool = False) -> str:
    """``"collapsed"``, ``"separated"``, ``"neither"`` or ``"diverged"``.

    ``"collapsed"``: final diameter at most ``collapse_rtol`` times the
    initial one; ``"separated"``: the final embedding has zero loss (it is
    triplet-separated) and did not collapse.

    Examples
    --------
    >>> classify_run(np.array([2.0, 1.0, 1e-4]), 1.0, collapse_rtol=1e-3)
    'collapsed'
    >>> classify_run(np.array([2.0, 3.0]), 0.0, collapse_rtol=1e-3)
    'separated'
    """
    if diverged or not np.all(np.isfinite(diameters)):
        return "diverged"
    if diameters[-1] <= collapse_rtol * diameters[0]:
        return "collapsed"
    if loss_max_final == 0.0:
        return "separated"
    return "neither"


def linkage_heights(distances: np.ndarray) -> np.ndarray:
    """Single-linkage merge heights (sorted minimum-spanning-tree edges) of each row.

    ``distances`` (T, M) holds pairwise distances in ``triu`` order; the
    result (T, N - 1) has ``k`` clusters at any scale in ``[h_{N-k}, h_{N-k+1})``.

    Examples
    --------
    >>> linkage_heights(np.array([[1.0, 5.0, 4.5]])).tolist()   # 3 points
    [[1.0, 4.5]]
    """
    D = np.atleast_2d(np.asarray(distances, dtype=float))
    T, M = D.shape
    N = int(round((1 + math.sqrt(1 + 8 * M)) / 2))
    return np.array([np.sort(linkage(row, "single")[:, 2]) for row in D]).reshape(T, N - 1)


def is_sequential(events: Sequence[tuple[int, int]], n_points: int) -> bool:
    """The events of :func:`merge_events` leave ``N - 1, ..., 1`` clusters, each at its own step.

    Examples
    --------
    >>> is_sequential([(10, 4), (30, 3), (31, 2), (90, 1)], 5)
    True
    >>> is_sequential([(10, 4), (30, 2), (90, 1)], 5)
    False
    """
    counts = [int(k) for _, k in events]
    return counts == list(range(int(n_points) - 1, 0, -1))


def merge_order(pair_steps: Sequence[int | None], events: Sequence[tuple[int, int]],
                n_points: int) -> list[list[list[int]]]:
    """The clusters of two or more points after each merge event of :func:`merge_events`.

    Examples
    --------
    >>> merge_order([5, 9, 9], [(5, 2), (9, 1)], 3)
    [[[0, 1]], [[0, 1, 2]]]
    """
    return [[g for g in _merged_groups(pair_steps, step, int(n_points)) if len(g) > 1]
            for step, _ in events]


def _merged_groups(pair_steps: Sequence[int | None], step: int, N: int) -> list[list[int]]:
    """The clusters (singletons included) of the pairs merged by ``step`` (:func:`merge_events`)."""
    return _groups(N, [s is not None and s <= step for s in pair_steps])


def _groups(N: int, linked: Any) -> list[list[int]]:
    """Connected components of the graph on ``range(N)`` whose edges are the pairs
    (``triu`` order) where ``linked`` is true: sorted lists, sorted."""
    iu, ju = np.triu_indices(N, 1)
    keep = np.asarray(linked, dtype=bool)
    graph = coo_matrix((np.ones(int(keep.sum())), (iu[keep], ju[keep])), shape=(N, N))
    n, comp = connected_components(graph, directed=False)
    return sorted(np.flatnonzero(comp == c).tolist() for c in range(n))


# ---------------------------------------------------------------------------
# evaluation of one embedding
# ---------------------------------------------------------------------------


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def evaluate_embedding(
    E: Any,
    y: Any,
    *,
    margin: float,
    rng: Any = None,
    options: TheoryOptions = TOY_THEORY,
) -> dict[str, Any]:
    """Every quantity of the theory for one embedding (a flat, JSON-ready record).

    :func:`isoapprox.evaluate_theory` formatted for the toy (fields: docs/toy.md,
    "What is computed").  Undefined ratios (``E`` already separated) are ``None``.

    Parameters
    ----------
    E : array_like, shape (N, n)
        The embedding.
    y : array_like, shape (N,)
        Its labels.
    margin : float
        The margin ``alpha >= 0``.
    rng : int or numpy.random.Generator, optional
        Seeds the solvers' starts.
    options : TheoryOptions, default :data:`TOY_THEORY`
        Options of the evaluation (:meth:`ToyConfig.theory_options` gives a run's).

    Returns
    -------
    dict
    """
    r = evaluate_theory(E, y, margin=margin, options=options, rng=rng)  # checks options
    X = as_points(E, "E", min_points=3)  # validated by evaluate_theory: a cheap float64 view
    codes = as_labels(y, X.shape[0], "y")[0]
    iso, haus = r.iso, r.haus
    fstar = iso.embedding
    pair = isometric_error_report(X, fstar)
    ball = min_enclosing_ball(X)
    hp, hp_star = hardest_pairs(X, codes), hardest_pairs(fstar, codes)
    half = r.checks.get("2_half")
    return {
        "loss_max": r.loss_max, "loss_mean": r.loss_mean, "separated": r.separated,
        "diameter": r.diameter, "radius": float(ball.radius), "center": ball.center.tolist(),
        "d_iso": iso.value, "d_iso_lower": iso.lower, "d_iso_upper": iso.upper,
        "iso_certified": iso.certified, "iso_status": iso.status, "iso_solver": iso.solver,
        "iso_lower_source": iso.lower_source,
        "fstar_kind": iso.kind, "fstar": fstar.tolist(), "fstar_aligned": r.aligned.tolist(),
        "fstar_diameter": r.ideal_diameter,
        "iso_pair": [int(pair.pair[0]), int(pair.pair[1])],
        "iso_pair_d": pair.d1, "iso_pair_d_star": pair.d2,
        "d_haus": haus.value, "d_haus_lower": haus.lower, "d_haus_upper": haus.upper,
        "haus_certified": haus.certified, "haus_status": haus.status, "fhaus_kind": haus.kind,
        "haus_lower_source": haus.lower_source, "haus_solver": haus.solver,
        "fhaus": haus.embedding.tolist(),
        "d_haus_fstar": r.d_haus_fstar, "d_haus_fstar_lower": r.d_haus_fstar_lower,
        "d_haus_fstar_upper": r.d_haus_fstar_upper,
        "theta": r.theta, "theta_lower": r.theta_lower, "theta_upper": r.theta_upper,
        "c": _finite_or_none(r.c), "c_lower": _finite_or_none(r.c_lower),
        "c_upper": _finite_or_none(r.c_upper), "ratio_fstar": _finite_or_none(r.ratio_fstar),
        "half_holds": None if half is None else half.holds,
        "loss_half_holds": r.checks["3_lower"].holds,
        "loss_upper_holds": r.checks["3_upper"].holds,
        "hard_pos": [int(i) for i in hp.positive_index],
        "hard_neg": [int(i) for i in hp.negative_index],
        "fstar_hard_pos": [int(i) for i in hp_star.positive_index],
        "fstar_hard_neg": [int(i) for i in hp_star.negative_index],
        "seconds": r.seconds,
    }


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------


def _eval_task(task: tuple) -> tuple[tuple, dict[str, Any]]:
    """One unit of work: evaluate one embedding (top level, so executors can pickle it)."""
    key, E, labels, margin, seed_key, opts = task
    rec = evaluate_embedding(np.asarray(E), np.asarray(labels), margin=margin,
                             rng=np.random.default_rng(list(seed_key)), options=opts)
    return key, rec


#: fields of :func:`evaluate_embedding` not stored for random toys (the
#: embedding is: everything else can be recomputed from it)
_RANDOM_DROP = frozenset({"fstar_aligned", "fhaus", "center", "hard_pos", "hard_neg",
                          "fstar_hard_pos", "fstar_hard_neg"})


def _warm_up(config: ToyConfig, ex: Any = None) -> None:
    """Compile (or load from numba's cache) the kernels of a training and of the
    evaluations, on tiny toys, before the progress bar counts work: from a fresh
    cache that is half a minute or more (the kernels log one line when they
    compile), which would otherwise read as the first units' cost in the bar's
    estimate; from a warm cache, a fraction of a second.  The evaluations take the
    paths of the run, its effort included (a random toy of the run reaches the
    search the ``"quick"`` effort skips; the small toy, the collapse statistics).

    With local worker processes (``ex``, :func:`isoapprox.runs.executor`), one of
    them evaluates the random toy while this process trains and evaluates the
    small toy, so that two cores compile at once; each writes numba's cache
    (under the lock of :mod:`isoapprox.kernels.cache`), from which the other
    processes load what they did not compile.  Without ``ex``, or where files
    cannot be locked, all three run here.  Nothing here touches a seed or a result of the run.
    """
    far = ex.submit(_warm_random, config) if ex is not None and cache.LOCKED else None
    train_scenario(config.replace(steps=2, n_logged=2, n_history=2), config.scenarios[0])
    E = np.array([[0.0, 0.0], [1.0, 0.2], [0.3, 1.0], [2.0, 0.5], [1.5, 1.5]])
    evaluate_embedding(E, (0, 0, 0, 1, 1), margin=1.0, rng=np.random.default_rng(0),
                       options=config.theory_options(effort="quick", n_starts=1))
    if far is None:
        _warm_random(config)
    else:
        far.result()


#: the random toy of the warm-up (seed 0): of the default configuration's, the one
#: that reaches the angular search at least cost (0.4 s of CPU warm; the first one
#: took 4.1 s, on the critical path of every run's start)
_WARM_RANDOM = 6


def _warm_random(config: ToyConfig) -> None:
    """The warm-up's random toy at the run's effort (top level: a worker runs it)."""
    E, labels, margin = _random_embedding(config.replace(seed=0), _WARM_RANDOM)
    evaluate_embedding(E, labels, margin=margin, rng=np.random.default_rng(0),
                       options=config.theory_options(n_starts=1))


def _layout_name(labels: Sequence[int]) -> str:
    return "".join(str(int(v)) for v in labels)


def _random_embedding(config: ToyConfig, i: int) -> tuple[np.ndarray, tuple[int, ...], float]:
    n_lay = len(config.random_layouts)
    lay = config.random_layouts[i % n_lay]
    margin = float(config.random_margins[(i // n_lay) % len(config.random_margins)])
    E = np.random.default_rng([config.seed, 2, i]).normal(size=(config.n_points, 2))
    return E, tuple(int(v) for v in lay), margin


def run_toy(
    config: ToyConfig = ToyConfig(),
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    connect_timeout: float = 10.0,
    progress: bool = False,
    journal: Any = None,
) -> dict[str, Any]:
    """Run the toy: train the scenarios, evaluate them and the random toys.

    Parameters
    ----------
    config : ToyConfig
    jobs : int, default 1
        Worker processes for the evaluations (seeds are keyed per task).
    scheduler : str, optional
        Address of a Dask scheduler (:func:`isoapprox.runs.executor`).
    connect_timeout : float, default 10
        Seconds to wait for the scheduler.
    progress : bool, default False
        Show a progress bar (tqdm, on stderr).
    journal : path-like, optional
        JSON-lines :class:`isoapprox.runs.RunJournal`: a rerun with the same
        configuration skips the evaluations it holds (same result).

    Raises
    ------
    InvalidInputError
        If ``journal`` was written for another configuration.

    Returns
    -------
    dict
        ``"trajectory"`` (one record per evaluated step and scenario),
        ``"random"`` (one per random toy), ``"scenarios"`` (one summary per
        scenario), ``"random_summary"``, ``"figures"`` (the scenario and step
        the figures draw), ``"inputs"``, ``"seconds"``.

    Examples
    --------
    >>> cfg = SMOKE.replace(scenarios=SMOKE.scenarios[:1], n_random=0, steps=4, n_logged=2)
    >>> out = run_toy(cfg)
    >>> sorted(out), len(out["trajectory"]) >= 2
    (['figures', 'inputs', 'random', 'random_summary', 'scenarios', 'seconds', 'trajectory'], True)
    """
    check_instance(config, ToyConfig, "config")
    jobs = check_int(jobs, "jobs", minimum=1)
    t_start = time.perf_counter()
    n_scen = len(config.scenarios)
    # local workers start first and warm up beside this process (_warm_up); a Dask
    # cluster's workers compile on their own machines, so it starts after training
    ex = executor(jobs) if jobs > 1 and scheduler is None else None
    try:
        _warm_up(config, ex)
        bar = progress_bar(progress, n_scen * (1 + config.n_logged) + config.n_random, "toy",
                           log=logger)

        # 1. training (cheap: every step is kept)
        trained: list[dict[str, Any]] = []
        tasks: list[tuple] = []
        opts = config.theory_options()
        for si, sc in enumerate(config.scenarios):
            bar.set_description(f"toy: training {sc.name}")
            tr = analyse_training(config, sc, train_scenario(config, sc))
            embs, last = tr["embeddings"], tr["last"]
            logged = logged_steps(last, config.n_logged) if last > 0 else np.array([0])
            snaps = _snapshots(tr, config)
            snap_steps = [sn["step"] for sn in snaps]
            eval_steps = np.unique(np.concatenate([logged, snap_steps])).astype(int)
            hist = logged_steps(last, config.n_history) if last > 0 else np.array([0])
            tr.update(eval_steps=eval_steps, snapshots=snaps, history_steps=hist)
            trained.append(tr)
            for s in eval_steps:
                tasks.append(((0, si, int(s)), embs[s], sc.labels, sc.margin,
                              (config.seed, 1, si, int(s)), opts))
            bar.update(1)
        # 2. random toys
        for i in range(config.n_random):
            E, lay, margin = _random_embedding(config, i)
            tasks.append(((1, i, 0), E, lay, margin, (config.seed, 3, i), opts))

        bar.set_total(n_scen + len(tasks))
        bar.set_description("toy: distances to F_TS")
        results: dict[tuple, dict[str, Any]] = {}
        jr = None
        if journal is not None:
            jr = RunJournal(journal, experiment="toy", config=config_key(config))
            keys = {t[0] for t in tasks}
            results = {k: v for k, v in jr.done.items() if k in keys}
            if results:
                bar.note(f"toy: {len(results)} of {len(tasks)} evaluations resumed from {journal}")
                bar.update(len(results))

        def finish(done: tuple[tuple, dict[str, Any]]) -> None:
            key, rec = done
            results[key] = rec
            if jr is not None:
                jr.add(list(key), rec)
            bar.update(1)

        todo = [t for t in tasks if t[0] not in results]
    except BaseException:
        if ex is not None:  # the workers started for the warm-up
            ex.close(cancel=True)
        raise
    if ex is None:
        ex = executor(jobs if len(todo) > 1 else 1, scheduler=scheduler,
                      timeout=connect_timeout)
    run_units(_eval_task, todo, ex, finish)
    bar.close()

    # 3. assemble
    trajectory: list[dict[str, Any]] = []
    scen_summaries: list[dict[str, Any]] = []
    for si, (sc, tr) in enumerate(zip(config.scenarios, trained, strict=True)):
        rows = [{
            "part": "trajectory",
            "scenario": sc.name,
            "step": int(s),
            "margin": sc.margin,
            "labels": list(sc.labels),
            "loss_mean_train": float(tr["loss_mean"][s]),
            "n_active": int(tr["n_active"][s]),
            "embedding": tr["embeddings"][s].tolist(),
            "distances": tr["D"][s].tolist(),
            **results[(0, si, int(s))],
        } for s in tr["eval_steps"]]
        trajectory.extend(rows)
        scen_summaries.append(_scenario_summary(config, sc, tr, rows))
    random_rows: list[dict[str, Any]] = []
    for i in range(config.n_random):
        E, lay, margin = _random_embedding(config, i)
        slim = {k: v for k, v in results[(1, i, 0)].items() if k not in _RANDOM_DROP}
        random_rows.append({"part": "random", "index": i, "labels": list(lay),
                            "layout": _layout_name(lay), "margin": margin,
                            "embedding": E.tolist(), **slim})
    collapsed = [s["name"] for s in scen_summaries if s["outcome"] == "collapsed"]
    seq = [s["name"] for s in scen_summaries
           if s["outcome"] == "collapsed" and s["sequential"] and s["margin"] > 0]
    example = (seq or collapsed or [scen_summaries[0]["name"]])[0]
    figures = {
        "example_scenario": example,
        "example_step": next(s["example_step"] for s in scen_summaries if s["name"] == example),
        "collapse_scenarios": collapsed,
    }
    return {
        "inputs": toy_inputs(config).tolist(),
        "figures": figures,
        "trajectory": trajectory,
        "random": random_rows,
        "scenarios": scen_summaries,
        "random_summary": summarize_random(random_rows),
        "seconds": time.perf_counter() - t_start,
    }


def _zero_loss_step(embs: np.ndarray, codes: np.ndarray, margin: float) -> int | None:
    """The first step from which the max batch-hard loss is zero to the end (or ``None``)."""

    def zero(step: int) -> bool:
        return batch_hard_loss(embs[step], codes, margin=margin, reduction="max") == 0.0

    last = len(embs) - 1
    if not zero(last):
        return None
    # zero loss stops gradient descent: once zero, always zero (a bisection)
    return bisect.bisect_left(range(last), True, key=zero)


def _snapshots(tr: dict[str, Any], config: ToyConfig) -> list[dict[str, Any]]:
    """Steps drawn in the Fig. 4-style figure, with their clusters.

    Step 0, the merge events (at most four, spread over the run; a
    sequential collapse has exactly ``N - 1``) with the clusters merged for
    good by then, and, unless the run collapsed, its last step.
    """
    N = config.n_points
    D, last, events = tr["D"], tr["last"], tr["events"]
    thr = config.merge_rtol * float(D[0].max())
    snaps = [{"step": 0, "clusters": [[i] for i in range(N)]}]
    picks = list(range(len(events)))
    if len(picks) > 4:
        picks = [int(k) for k in np.unique(np.rint(np.linspace(0, len(events) - 1, 4)))]
    for k in picks:
        merged = {i for g in tr["merge_order"][k] for i in g}
        groups = tr["merge_order"][k] + [[i] for i in range(N) if i not in merged]
        snaps.append({"step": int(events[k][0]), "clusters": sorted(groups)})
    if tr["outcome"] != "collapsed":
        snaps.append({"step": int(last), "clusters": linked_groups(D[last], thr, N)})
    first: dict[int, dict[str, Any]] = {}  # of each step, the first in this order
    for sn in sorted(snaps, key=lambda x: x["step"]):
        first.setdefault(sn["step"], sn)
    return list(first.values())


def linked_groups(distances: np.ndarray, threshold: float, n_points: int) -> list[list[int]]:
    """Groups of points linked by distances at most ``threshold`` (single linkage, as the
    merge events count them), singletons included.

    Parameters
    ----------
    distances : ndarray of shape (M,)
        Pairwise distances of ``n_points`` points in ``triu`` order.
    threshold : float
    n_points : int

    Examples
    --------
    >>> linked_groups(np.array([0.05, 1.0, 1.0]), 0.1, 3)
    [[0, 1], [2]]
    """
    n = check_int(n_points, "n_points", minimum=1)
    d = np.asarray(distances)
    if d.shape != (n * (n - 1) // 2,):
        raise InvalidInputError(
            f"`distances` must hold the n (n - 1) / 2 = {n * (n - 1) // 2} pairwise "
            f"distances of `n_points` = {n} points; got shape {d.shape}")
    return _groups(n, d <= threshold)


def _example_step(config: ToyConfig, rows: Sequence[dict[str, Any]]) -> int:
    """``config.example_step``, else the evaluated step farthest from ``F_TS`` (largest d_iso)."""
    if config.example_step is not None:
        return int(min((r["step"] for r in rows), key=lambda s: abs(s - config.example_step)))
    return int(max(rows, key=lambda r: (r["d_iso"], -r["step"]))["step"])


#: the statistics of :func:`_stats`, in order
_STATS = ("min", "q05", "q25", "median", "q75", "q95", "max", "mean")


def _stats(values: Iterable[float | None]) -> dict[str, Any]:
    v = np.array([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return {"n": 0, **dict.fromkeys(_STATS)}
    q = np.quantile(v, [0.05, 0.25, 0.5, 0.75, 0.95])
    stats = [v.min(), *q, v.max(), v.mean()]
    return {"n": int(v.size), **{k: float(x) for k, x in zip(_STATS, stats, strict=True)}}


def _scenario_summary(config: ToyConfig, sc: Scenario, tr: dict[str, Any],
                      rows: list[dict[str, Any]]) -> dict[str, Any]:
    cs = [r["c"] for r in rows if r["c"] is not None]
    rf = [r["ratio_fstar"] for r in rows if r["ratio_fstar"] is not None]
    last = tr["last"]
    hist = tr["history_steps"]
    final = rows[-1]
    defined = [r for r in rows if r["c"] is not None]
    return {
        "name": sc.name,
        "description": sc.description,
        "labels": list(sc.labels),
        "margin": sc.margin,
        "lr": sc.lr,
        "init_seed": sc.init_seed,
        "n_classes": len(set(sc.labels)),
        "outcome": tr["outcome"],
        "sequential": tr["sequential"],
        "n_merge_events": len(tr["events"]),
        "merge_events": [list(e) for e in tr["events"]],
        "merge_order": tr["merge_order"],
        "zero_loss_step": tr["zero_loss_step"],
        "pair_merge_steps": tr["pair_steps"],
        "merge_threshold": config.merge_rtol * float(tr["diam"][0]),
        "steps_run": last,
        "diverged": tr["diverged"],
        "initial_diameter": float(tr["diam"][0]),
        "final_diameter": float(tr["diam"][last]),
        "final_diameter_ratio": tr["final_diameter_ratio"],
        "final_loss_mean": float(tr["loss_mean"][last]),
        "final_loss_max": float(tr["loss_max_final"]),
        "final_d_iso": final["d_iso"],
        "final_d_haus": final["d_haus"],
        "final_fstar_kind": final["fstar_kind"],
        "c_max": max(cs) if cs else None,
        "c_max_step": int(max(defined, key=lambda r: r["c"])["step"]) if cs else None,
        "c_min": min(cs) if cs else None,
        "c_final": final["c"],
        "c_median": float(np.median(cs)) if cs else None,
        "ratio_fstar_max": max(rf) if rf else None,
        "ratio_fstar_min": min(rf) if rf else None,
        "ratio_fstar_final": final["ratio_fstar"],
        "n_evaluated": len(rows),
        "n_uncertified": sum(not (r["iso_certified"] and r["haus_certified"]) for r in rows),
        "n_half_violated": sum(r["half_holds"] is False for r in rows),
        "n_loss_upper_failed": sum(r["loss_upper_holds"] is False for r in rows),
        "snapshot_steps": [int(sn["step"]) for sn in tr["snapshots"]],
        "snapshot_clusters": [sn["clusters"] for sn in tr["snapshots"]],
        "example_step": _example_step(config, rows),
        "history": {
            "step": [int(s) for s in hist],
            "loss_mean": [float(tr["loss_mean"][s]) for s in hist],
            "diameter": [float(tr["diam"][s]) for s in hist],
            "distances": [tr["D"][s].tolist() for s in hist],
            "linkage": linkage_heights(tr["D"][hist]).tolist(),
            "pairs": np.transpose(np.triu_indices(config.n_points, 1)).tolist(),
        },
    }


def summarize_random(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Distribution of ``c`` and ``ratio_fstar`` over random toys: ``"all"``,
    ``"by_margin"`` and ``"by_layout"`` (counts, statistics, share of ``c <= 0.53``)."""

    def group(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        defined = [r for r in rs if r["c"] is not None]
        lows = [r["c_lower"] for r in defined if r["c_lower"] is not None]
        return {
            "n": len(rs),
            "n_separated": sum(r["c"] is None for r in rs),
            "n_uncertified": sum(not (r["iso_certified"] and r["haus_certified"]) for r in rs),
            "c": _stats(r["c"] for r in defined),
            "ratio_fstar": _stats(r["ratio_fstar"] for r in defined),
            "share_c_at_most_paper": (sum(r["c"] <= PAPER_C for r in defined) / len(defined)
                                      if defined else None),
            "min_c_lower": min(lows) if lows else None,
            "n_half_violated": sum(r["half_holds"] is False for r in rs),
        }

    margins = sorted({r["margin"] for r in rows})
    layouts = sorted({r["layout"] for r in rows})
    return {
        "all": group(rows),
        "by_margin": {f"{m:g}": group([r for r in rows if r["margin"] == m]) for m in margins},
        "by_layout": {lay: group([r for r in rows if r["layout"] == lay]) for lay in layouts},
        "paper_c": PAPER_C, "floor": 0.5, "jung_plane": JUNG_PLANE,
    }
