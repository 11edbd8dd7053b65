"""Theory quantities of training batches, and the bound cross-check of trained embeddings.

:class:`TheoryCallback` logs :func:`batch_theory` on training batches
(``TrainConfig.theory_every``); :class:`CrossCheckCallback` evaluates every
statement of :data:`STATEMENTS` on held-out batches of the final embedding
(``TrainConfig.crosscheck_batches``).  Batches of more than ``max_points``
points are evaluated on a seeded sub-batch (:func:`sub_batch`), whose values
are certified lower bounds of the whole batch's.  Notation, cost cap, lower
bounds and reproducibility: see docs/dev/train_design.md ("train.bounds: notes").
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._typing import ArrayLike, IntArray, RNGLike
from .._validation import (
    as_labels,
    as_points,
    as_rng,
    check_int,
    check_margin,
    require_triplets,
)
from ..exceptions import InvalidInputError
from ..kernels import distances as K
from ..losses import compute_batch_hard
from ..packing import d_star, lower_bound_curve, packing_lower_bound
from ..sampling import PKSampler, class_members, pk_draw
from ..theory import (
    CHECKS,
    TheoryOptions,
    TheoryResult,
    TheoryView,
    check_bound,
    check_collapse,
    evaluate_core,
)

__all__ = [
    "MAX_POINTS",
    "N_STARTS",
    "SAFETY_TIME_LIMIT",
    "STATEMENTS",
    "BatchTheory",
    "CrossCheckCallback",
    "TheoryCallback",
    "batch_theory",
    "crosscheck_rows",
    "crosscheck_summary",
    "curve_rows",
    "sub_batch",
]

#: batches larger than this are evaluated on a P' x K' sub-batch
MAX_POINTS = 16
#: samples per class of the sub-batch (at most)
SUB_K = 4
#: local solves of each nearest_ideal call
N_STARTS = 4
#: a guard only (see docs/dev/train_design.md); never reached in the measured runs
SAFETY_TIME_LIMIT = 120.0
#: the packing-type bounds of :class:`isoapprox.IdealResult` (they see the dimension)
_PACKING_BOUNDS = ("packing", "sub_batch_packing")
#: the minimax-Procrustes (isometry) mode runs up to this embedding dimension
ISOMETRY_MAX_DIM = 8

#: statement key -> (SPEC section 3 item, the inequality, kind): the statements of
#: theory.CHECKS that apply to trained batches (statement 2 spelled out) and the
#: collapse and curve checks of training
STATEMENTS: dict[str, tuple[str, str, str]] = {
    **{k: CHECKS[k] for k in ("1_pointwise", "1_pointwise_haus", "1_isometry")},
    "2_half": ("2", "1/2 <= c(E) = d_haus(E, F_TS) / d_iso(E, F_TS)", "theorem"),
    **{k: CHECKS[k] for k in ("3_lower", "3_upper")},
    "4_collapse": ("4", "d_iso(collapsed, F_TS) == D*(P, n, alpha)", "theorem"),
    "4_diameter": CHECKS["4_diameter"],
    "4_curve": ("4", "D*_lower(P, n, alpha) <= diam(E) (whole batch)", "empirical"),
}


def sub_batch(
    y: ArrayLike,
    *,
    max_points: int = MAX_POINTS,
    per_class: int = SUB_K,
    rng: RNGLike = None,
) -> IntArray:
    """Indices of a seeded P' x K' sub-batch (the whole batch when it is small enough).

    Parameters
    ----------
    y : array_like of shape (N,)
        Labels of the batch.
    max_points : int, default 16
        Largest number of points evaluated (``>= 4``).
    per_class : int, default 4
        ``K'`` at most (``>= 2``).
    rng : None, int or Generator

    Returns
    -------
    ndarray of int
        Sorted indices into the batch: all of them when ``N <= max_points``,
        else ``K' = min(per_class, max_points // 2, smallest size of a class
        with two or more members)`` members of each of ``P' = min(#such
        classes, max_points // K')`` classes, drawn without replacement.

    Raises
    ------
    InvalidInputError
        If no class has two members and another class exists (no triplet).

    Examples
    --------
    >>> idx = sub_batch(np.repeat(np.arange(8), 4), max_points=8, rng=0)
    >>> idx.size, len(set(np.repeat(np.arange(8), 4)[idx].tolist()))
    (8, 2)
    """
    y_arr = np.asarray(y)
    codes, _ = as_labels(y_arr, None, "y")
    require_triplets(codes)
    max_points = check_int(max_points, "max_points", minimum=4)
    per_class = check_int(per_class, "per_class", minimum=2)
    return _sub_batch(codes, max_points, per_class, as_rng(rng))


def _sub_batch(codes: np.ndarray, max_points: int, per_class: int,
               gen: np.random.Generator) -> IntArray:
    """:func:`sub_batch` of checked codes (they admit a triplet)."""
    N = codes.shape[0]
    if N <= max_points:
        return np.arange(N)
    counts = np.bincount(codes)
    eligible = np.flatnonzero(counts >= 2)
    k = int(min(per_class, max_points // 2, counts[eligible].min()))
    p = int(min(eligible.size, max_points // k))
    if p < 2:
        # one class with members to spare: its pairs plus single points of others
        raise InvalidInputError(
            "`y` must hold two classes of two or more points to draw a sub-batch; "
            f"got class sizes {sorted(counts.tolist(), reverse=True)}"
        )
    members = class_members(codes)
    return pk_draw([members[c] for c in eligible], p, k, gen, sort=True)


#: :class:`BatchTheory`'s attributes from the row of :class:`isoapprox.TheoryResult`
_BATCH_ROW = {
    **{k: k for k in ("dim", "margin", "diameter", "loss_max", "d_iso", "d_iso_lower",
                      "d_iso_upper", "d_iso_lower_source", "d_iso_certified", "d_iso_status",
                      "d_haus", "d_haus_lower", "d_haus_upper", "d_haus_certified",
                      "d_haus_status", "c", "c_lower", "c_upper", "theta", "theta_lower",
                      "theta_upper", "implied_cn", "ratio_fstar")},
    "fstar_kind": "d_iso_kind",
}
#: the names of :meth:`BatchTheory.record`, in order
_RECORD = (
    "N", "P", "K", "dim", "margin", "full_diameter", "full_loss_max", "full_curve", "points",
    "sub_P", "sub_K", "subsampled", "diameter", "loss_max", "d_iso", "d_iso_lower",
    "d_iso_upper", "d_iso_solver_lower", "d_iso_lower_source", "d_iso_certified",
    "d_iso_status", "d_haus", "d_haus_lower", "d_haus_upper", "d_haus_solver_lower",
    "d_haus_certified", "d_haus_status", "c", "c_lower", "c_upper", "theta", "theta_lower",
    "theta_upper", "implied_cn", "ratio_fstar", "fstar_slack", "fstar_kind", "d_star",
    "d_star_lower", "d_star_upper",
)


@dataclass(frozen=True)
class BatchTheory(TheoryView):
    """Theory quantities of one batch (see :func:`batch_theory`): a view of its
    :class:`isoapprox.TheoryResult` (:class:`isoapprox.theory.TheoryView`) and the
    whole batch's numbers.

    Attributes
    ----------
    theory : TheoryResult
        The evaluation of the (sub-)batch (:func:`isoapprox.evaluate_theory`).
    N, P, K, dim : int
        The whole batch's size, classes, samples per class (the smallest
        class) and embedding dimension.
    margin : float
    full_diameter, full_loss_max : float
        Diameter and ``L`` of the whole batch.
    full_curve : float
        The proven lower bound of ``D*(P, n, alpha)`` of the whole batch
        (:func:`isoapprox.packing.packing_lower_bound`): a triplet-separated
        batch has at least this diameter.
    points, sub_P, sub_K : int
        The evaluated (sub-)batch.
    subsampled : bool
    diameter, loss_max : float
        Diameter and ``L`` of the evaluated batch.
    d_iso, d_iso_lower, d_iso_upper : float
        ``d_iso(E, F_TS)`` and its certified bracket (:func:`isoapprox.evaluate_theory`).
    d_iso_solver_lower : float
        The solver's largest lower bound other than the packing bounds
        (``"packing"`` and ``"sub_batch_packing"``).
    d_iso_lower_source : str
        The bound that gives ``d_iso_lower`` (``"packing"``, ``"three_point"``, ...).
    d_iso_certified : bool
        The relative gap is at most ``tol``.
    d_iso_status : str
    d_haus, d_haus_lower, d_haus_upper, d_haus_solver_lower, d_haus_certified, d_haus_status
        The same for ``d_haus(E, F_TS)``; the lower end is at least
        ``d_iso_lower / 2`` (statement 1 at the haus-nearest ideal embedding).
    c, c_lower, c_upper : float
        The empirical constant and its bracket (NaN when ``E`` is separated).
    theta, theta_lower, theta_upper : float
        Thickness of the evaluated batch (0 when it is flat, e.g. ``N <= n``).
    implied_cn : float
        ``c * theta``.
    ratio_fstar : float
        ``d_haus_isometry(E, f*) / d_iso(E, F_TS)`` (NaN above
        ``isometry_max_dim``).
    fstar_slack : float
        Least triplet slack of ``f*`` (``>= 0``: it is triplet separated).
    fstar_kind : str
        ``collapsed``, ``class-collapsed`` or ``general``.
    d_star, d_star_lower, d_star_upper : float
        ``D*(P', n, alpha)`` of the evaluated batch and its bracket.
    checks : dict of str to CheckResult
        By key of :data:`STATEMENTS` (only the ones that apply).
    """

    theory: TheoryResult = field(repr=False)
    N: int
    P: int
    K: int
    full_diameter: float
    full_loss_max: float
    full_curve: float
    points: int
    sub_P: int
    sub_K: int
    d_star: float
    d_star_lower: float
    d_star_upper: float
    checks: dict = field(default_factory=dict, repr=False)
    ROW = _BATCH_ROW
    SERIAL_FIELDS = (*_RECORD, "checks")

    @property
    def subsampled(self) -> bool:
        return bool(self.points < self.N)

    @property
    def d_iso_solver_lower(self) -> float:
        bounds = self.theory.solver_results["iso"].bounds
        lower = max((v for k, v in bounds.items() if k not in _PACKING_BOUNDS), default=0.0)
        return float(max(lower, 0.0))

    @property
    def d_haus_solver_lower(self) -> float:
        return self.theory.solver_results["haus"].lower

    @property
    def fstar_slack(self) -> float:
        return float(self.theory.solver_results["haus" if self.theory.iso_crossed
                                                else "iso"].slack)

    def record(self, prefix: str = "theory_") -> dict[str, Any]:
        """Flat scalar fields, names prefixed (no checks)."""
        return {f"{prefix}{k}": getattr(self, k) for k in _RECORD}

    def check_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per check: key, both sides, brackets, slack, verdict."""
        return [{"key": key, **{k: v for k, v in chk.to_dict().items() if k != "statement"}}
                for key, chk in self.checks.items()]


@functools.lru_cache(maxsize=256)
def _collapse(counts: tuple[int, ...], dim: int, margin: float):
    y = np.repeat(np.arange(len(counts)), counts)
    return check_collapse(y, dim, margin=margin, rng=0)


def batch_theory(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float,
    rng: RNGLike = None,
    max_points: int = MAX_POINTS,
    per_class: int = SUB_K,
    n_starts: int = N_STARTS,
    isometry_max_dim: int = ISOMETRY_MAX_DIM,
    checks: bool = True,
    tol: float = 1e-6,
) -> BatchTheory:
    """Distances to the ideal set, the constant, the thickness and the bound checks of a batch.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Batch embedding.
    y : array_like of shape (N,)
        Labels (they must admit a triplet).
    margin : float
        ``alpha >= 0``.
    rng : None, int or Generator
        Draws the sub-batch and seeds the solvers' starts.
    max_points, per_class : int
        The cost cap (see docs/dev/train_design.md and :func:`sub_batch`).
    n_starts : int, default 4
        Local solves of each ``nearest_ideal`` call.
    isometry_max_dim : int, default 8
        Largest ``n`` for which the isometry-mode Hausdorff distance is
        computed.
    checks : bool, default True
        Also evaluate the statements of :data:`STATEMENTS` (the collapse
        check costs up to a few seconds per new label layout; it is cached).
    tol : float, default 1e-6
        Requested relative gap of the solvers.

    Returns
    -------
    BatchTheory

    Examples
    --------
    >>> E = [[0.0, 0.0], [0.1, 0.0], [1.0, 0.0], [1.0, 0.1]]
    >>> t = batch_theory(E, [0, 0, 1, 1], margin=0.5, rng=0, checks=False)
    >>> t.d_iso, t.subsampled
    (0.0, False)
    """
    X = as_points(E, "E", min_points=3)
    codes, _ = as_labels(y, X.shape[0], "y")
    require_triplets(codes)
    margin = check_margin(margin)
    n_starts = check_int(n_starts, "n_starts", minimum=1)
    isometry_max_dim = check_int(isometry_max_dim, "isometry_max_dim", minimum=0)
    max_points = check_int(max_points, "max_points", minimum=4)
    per_class = check_int(per_class, "per_class", minimum=2)
    gen = as_rng(rng)
    N, n = X.shape
    counts = np.bincount(codes)
    P_full = int(np.sum(counts > 0))
    full_diam = float(K.diameter_kernel(X)[0])
    full_L = compute_batch_hard(X, codes, margin, ("max",))[0]
    full_curve = packing_lower_bound(P_full, n, margin=margin)

    idx = _sub_batch(codes, max_points, per_class, gen)
    Xs, cs = X[idx], as_labels(codes[idx], idx.size, "y")[0]
    sc = np.bincount(cs)
    sub_P, sub_K = int(sc.size), int(sc.min())
    seed_iso, seed_haus = (int(s) for s in gen.integers(2**31, size=2))
    opts = TheoryOptions(tol=tol, solver="scipy", n_starts=n_starts,
                         time_limit=SAFETY_TIME_LIMIT, haus_max_points=None,
                         procrustes_max_dim=isometry_max_dim)
    r = evaluate_core(Xs, cs, margin, opts, seed_iso, haus_rng=seed_haus)[0]
    iso = r.iso
    ds = d_star(sub_P, n, margin)
    diam = r.diameter
    found: dict[str, Any] = {}
    if checks:
        found = {k: r.checks[k] for k in ("1_pointwise", "1_pointwise_haus", "1_isometry",
                                          "2_half", "3_lower", "3_upper") if k in r.checks}
        found["4_collapse"] = _collapse(tuple(int(c) for c in sc), n, margin).agreement
        # statement 4 with the D* bracket of d_star (the logged d_star)
        found["4_diameter"] = check_bound(
            STATEMENTS["4_diameter"][1],
            (ds.value - iso.value, ds.lower - iso.upper, ds.upper - iso.lower),
            (diam, diam, diam), max(diam, margin))
        found["4_curve"] = check_bound(
            STATEMENTS["4_curve"][1], (full_curve,) * 3, (full_diam,) * 3,
            max(full_diam, margin))
        found = {k: found[k] for k in STATEMENTS if k in found}
    return BatchTheory(
        r, N=N, P=P_full, K=int(counts[counts > 0].min()), full_diameter=full_diam,
        full_loss_max=full_L, full_curve=full_curve, points=int(idx.size), sub_P=sub_P,
        sub_K=sub_K, d_star=ds.value, d_star_lower=ds.lower, d_star_upper=ds.upper,
        checks=found,
    )


class _TheoryEvaluator:
    """The settings and stream shared by the two callbacks."""

    def __init__(self, seed, max_points, per_class, n_starts, isometry_max_dim) -> None:
        self.max_points = check_int(max_points, "max_points", minimum=4)
        self.per_class = check_int(per_class, "per_class", minimum=2)
        self.n_starts = check_int(n_starts, "n_starts", minimum=1)
        self.isometry_max_dim = isometry_max_dim
        self.rng = np.random.default_rng(seed)

    def _theory(self, E, y, margin: float, *, checks: bool) -> BatchTheory:
        return batch_theory(
            E, y, margin=margin, rng=self.rng, max_points=self.max_points,
            per_class=self.per_class, n_starts=self.n_starts,
            isometry_max_dim=self.isometry_max_dim, checks=checks,
        )


class TheoryCallback(_TheoryEvaluator):
    """Logs :func:`batch_theory` of the training batch at logged steps.

    Parameters
    ----------
    every : int
        Evaluate at logged steps ``t`` with ``t % every == 0`` and at the
        last step (use a multiple of ``log_every``).
    seed : SeedSequence, int or None
        Stream of the sub-batch draws and the solvers' starts.
    max_points, per_class, n_starts, isometry_max_dim
        See :func:`batch_theory`.

    Notes
    -----
    Fields ``theory_*`` (:meth:`BatchTheory.record`); steps without an
    evaluation carry none of them.  Instances are picklable.
    """

    def __init__(self, every: int, *, seed=None, max_points: int = MAX_POINTS,
                 per_class: int = SUB_K, n_starts: int = N_STARTS,
                 isometry_max_dim: int = ISOMETRY_MAX_DIM) -> None:
        self.every = check_int(every, "every", minimum=1)
        super().__init__(seed, max_points, per_class, n_starts, isometry_max_dim)

    def __call__(self, state) -> dict[str, Any] | None:
        if state.step % self.every and state.step != state.config.steps:
            return None
        t = self._theory(state.batch_E, state.batch_y, state.config.margin, checks=False)
        return t.record("theory_")


def heldout_layout(codes: np.ndarray, P: int, K: int) -> tuple[int, int]:
    """P x K of held-out batches: the training layout, capped by the held-out classes."""
    counts = np.sort(np.bincount(codes))[::-1]
    p = int(min(P, np.sum(counts >= 2)))
    k = int(max(2, min(K, counts[p - 1])))
    p = int(min(p, np.sum(counts >= k)))
    return p, k


class CrossCheckCallback(_TheoryEvaluator):
    """Evaluates every statement on held-out P x K batches of the final embedding.

    Runs only at the last logged step (``step == config.steps``).  Returns
    ``crosscheck`` (a list with one dict per batch: the layout, the
    :meth:`BatchTheory.record` fields without prefix and ``checks``) and the
    flat counts ``crosscheck_batches``, ``crosscheck_true``,
    ``crosscheck_false``, ``crosscheck_undetermined`` (over every check of
    every batch).

    Parameters
    ----------
    n_batches : int
        Batches drawn.
    seed : SeedSequence, int or None
        Stream of the batch draws, the sub-batches and the solvers' starts.
    max_points, per_class, n_starts, isometry_max_dim
        See :func:`batch_theory`.
    """

    def __init__(self, n_batches: int, *, seed=None, max_points: int = MAX_POINTS,
                 per_class: int = SUB_K, n_starts: int = N_STARTS,
                 isometry_max_dim: int = ISOMETRY_MAX_DIM) -> None:
        self.n_batches = check_int(n_batches, "n_batches", minimum=1)
        super().__init__(seed, max_points, per_class, n_starts, isometry_max_dim)

    def __call__(self, state) -> dict[str, Any] | None:
        if state.step != state.config.steps:
            return None
        E, codes = np.asarray(state.eval_E), np.asarray(state.eval_y)
        y = np.asarray(state.batch_y)
        P_train = int(np.unique(y).size)
        K_train = int(y.size // P_train)
        p, k = heldout_layout(codes, P_train, K_train)
        sampler = PKSampler(codes, p, k, rng=self.rng)
        batches = []
        tally = {True: 0, False: 0, None: 0}
        for b in range(self.n_batches):
            idx = sampler.sample()
            t = self._theory(E[idx], codes[idx], state.config.margin, checks=True)
            rec = {"batch": b, **t.record(""), "checks": t.check_records()}
            for chk in t.checks.values():
                tally[chk.holds] += 1
            batches.append(rec)
        return {
            "crosscheck": batches,
            "crosscheck_batches": len(batches),
            "crosscheck_true": tally[True],
            "crosscheck_false": tally[False],
            "crosscheck_undetermined": tally[None],
        }


# ---------------------------------------------------------------------------
# tables from sweep results
# ---------------------------------------------------------------------------

#: cell fields copied onto every cross-check row
CELL_FIELDS = ("cell_id", "dataset", "loss", "normalize", "batch_size", "embedding_dim",
               "margin", "replicate", "P", "K")


def _entries(results: Any) -> list[tuple[dict, list[dict]]]:
    """(summary record, history) pairs from a results document or sweep entries."""
    if isinstance(results, Mapping) and "records" in results:
        hist = results.get("histories") or {}
        return [(r, hist.get(r.get("cell_id"), [])) for r in results["records"]]
    return [(e["summary"], e.get("history", [])) for e in results]


def _setup(record: Mapping[str, Any], label) -> str:
    """``label(record)``, by default the loss plus ``+norm`` when normalised."""
    return label(record) if label else record.get("loss", "") + (
        "+norm" if record.get("normalize") else "")


def crosscheck_rows(results: Any, *, label=None) -> list[dict[str, Any]]:
    """One row per (cell, held-out batch, statement) of a sweep's cross-check.

    Parameters
    ----------
    results : mapping or sequence
        A results document (``records`` and ``histories``, as written by
        :func:`~isoapprox.train.write_sweep_results`) or the sweep's entries
        (:attr:`~isoapprox.train.SweepResult.entries`).
    label : callable, optional
        ``label(record) -> str`` stored as ``setup`` (e.g. the experiment's
        variant name); default ``loss`` plus ``+norm`` when normalised.

    Returns
    -------
    list of dict
        Cell fields, ``batch``, ``points``, ``statement`` (the key),
        ``lhs``, ``rhs``, their brackets, ``slack = rhs - lhs``,
        ``rel_slack = slack / max(|lhs|, |rhs|)`` and ``holds`` (True /
        False / None).  Cells without a cross-check contribute nothing.
    """
    rows = []
    for rec, hist in _entries(results):
        if not hist or "crosscheck" not in hist[-1]:
            continue
        base = {**{k: rec.get(k) for k in CELL_FIELDS}, "setup": _setup(rec, label)}
        for b in hist[-1]["crosscheck"] or []:
            for chk in b.get("checks", []):
                lhs, rhs = chk.get("lhs"), chk.get("rhs")
                slack = chk.get("slack")
                rel = None
                if lhs is not None and rhs is not None and slack is not None:
                    s = max(abs(lhs), abs(rhs))
                    rel = slack / s if s > 0 else 0.0
                rows.append({
                    **base, "batch": b.get("batch"), "points": b.get("points"),
                    "sub_P": b.get("sub_P"), "statement": chk["key"],
                    "lhs": lhs, "rhs": rhs,
                    "lhs_lower": chk.get("lhs_lower"), "lhs_upper": chk.get("lhs_upper"),
                    "rhs_lower": chk.get("rhs_lower"), "rhs_upper": chk.get("rhs_upper"),
                    "slack": slack, "rel_slack": rel, "holds": chk.get("holds"),
                })
    return rows


def _quantiles(v: Sequence[float]) -> dict[str, float | None]:
    a = np.asarray([x for x in v if x is not None], dtype=float)
    names = ("min", "q10", "median", "q90", "max")
    if a.size == 0:
        return dict.fromkeys(names)
    q = np.quantile(a, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {k: float(x) for k, x in zip(names, q, strict=True)}


def crosscheck_summary(
    rows: Iterable[Mapping[str, Any]], *, by: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """How often each statement holds, and its slack distribution.

    Parameters
    ----------
    rows : iterable of dict
        :func:`crosscheck_rows`.
    by : sequence of str
        Extra grouping fields (e.g. ``("dataset", "setup")``).

    Returns
    -------
    list of dict
        Per statement (and group): ``n``, ``true`` (certified to hold),
        ``false`` (certified to fail), ``undetermined`` (brackets overlap
        the bound), ``holds_fraction`` (``true / n``), the relative-slack
        quantiles ``rel_slack_{min,q10,median,q90,max}`` and the median
        absolute slack.  Statements in :data:`STATEMENTS` order.
    """
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["statement"], *(r.get(k) for k in by)), []).append(r)
    order = {k: i for i, k in enumerate(STATEMENTS)}
    out = []
    for key in sorted(groups, key=lambda t: (order.get(t[0], 99), *map(str, t[1:]))):
        rs = groups[key]
        holds = [r["holds"] for r in rs]
        q = _quantiles([r["rel_slack"] for r in rs])
        item = STATEMENTS.get(key[0], ("?", key[0], "?"))
        out.append({
            "statement": key[0],
            **{k: v for k, v in zip(by, key[1:], strict=True)},
            "spec_item": item[0],
            "inequality": item[1],
            "kind": item[2],
            "n": len(rs),
            "true": sum(h is True for h in holds),
            "false": sum(h is False for h in holds),
            "undetermined": sum(h is None for h in holds),
            "holds_fraction": sum(h is True for h in holds) / len(rs),
            **{f"rel_slack_{k}": v for k, v in q.items()},
            "slack_median": _quantiles([r["slack"] for r in rs])["median"],
        })
    return out


def curve_rows(
    records: Iterable[Mapping[str, Any]], *, curve: str = "packing", label=None,
) -> list[dict[str, Any]]:
    """Final held-out diameter of each cell against the lower-bound curve ``D*(P, n, alpha)``.

    Parameters
    ----------
    records : iterable of dict
        Flat sweep records (``P``, ``K``, ``embedding_dim``, ``margin``,
        ``final_eval_diameter``, ...).
    curve : str or callable, default "packing"
        Passed to :func:`isoapprox.packing.lower_bound_curve`.
    label : callable, optional
        As in :func:`crosscheck_rows`.

    Returns
    -------
    list of dict
        Per cell: its fields, ``curve`` (the lower bound at the training
        layout's ``P = N / K``), ``d_star_estimate`` and ``d_star_method``
        (the upper end of :func:`~isoapprox.packing.d_star`, the diameter of a
        known layout, and that layout's source),
        ``diameter_over_curve`` and ``below_curve`` (the final held-out
        diameter is smaller than the proven lower bound: the held-out batches
        cannot be triplet separated at this margin).
    """
    out = []
    for r in records:
        P, n, m = int(r["P"]), int(r["embedding_dim"]), float(r["margin"])
        lb = float(lower_bound_curve(P, n, margin=m, curve=curve))
        ds = d_star(P, n, m)
        d = r.get("final_eval_diameter")
        out.append({
            **{k: r.get(k) for k in CELL_FIELDS}, "setup": _setup(r, label),
            "final_eval_diameter": d,
            "final_eval_median_distance": r.get("final_eval_median_distance"),
            "curve": lb, "d_star_estimate": ds.upper, "d_star_method": ds.upper_source,
            "diameter_over_curve": (d / lb) if (d is not None and lb > 0) else None,
            "below_curve": None if d is None else bool(d < lb),
        })
    return out

