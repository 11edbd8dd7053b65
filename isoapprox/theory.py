"""The theory evaluated: distances to the ideal set and the statements of SPEC section 3.

:func:`evaluate_theory` is the one evaluation (both distances to ``F_TS``
with every proven bound, ``c``, ``theta``, ``D*`` and the checks) that the
toy, ``diagnose``, the training callbacks and the batch stage format;
the ``check_*`` functions check single statements.

Notation and the statements 1-5 (our reconstruction of the paper's results):
see docs/theory.md.  Every check returns both sides with their brackets, the
slack and a verdict (``None`` when the brackets overlap the bound).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ._typing import ArrayLike, FloatArray, RNGLike
from ._validation import (
    as_labels,
    as_points,
    as_rng,
    check_instance,
    check_int,
    check_margin,
    check_option,
    check_positive,
    require_triplets,
)
from .bracket import BRACKET_FIELDS, Bracket, Bracketed
from .exceptions import InvalidInputError, SolverError
from .geometry import compute_farthest_pair, compute_min_enclosing_ball, diameter
from .ideal import (
    IdealResult,
    SolverOptions,
    embedding_kind,
    nearest_ideal,
    nearest_zero_loss,
    pair_bounds,
    resolve_budget,
    solve_nearest,
)
from .losses import (
    batch_hard_loss,
    compute_batch_hard,
    compute_worst_slack,
    contrastive_loss,
    margin_loss,
)
from .metrics import compute_isometric_error, compute_pointwise, hausdorff_like, isometric_error
from .packing import (
    LOWER_BOUND_CURVES,
    compute_d_star_bracket,
    compute_packing_distance_bound,
    compute_packing_radius_bound,
    d_star,
    separated_count,
)
from .procrustes import ProcrustesResult, compute_minimax_procrustes, minimax_procrustes
from .thickness import compute_thickness
from .tolerances import BOUND_RTOL, FLOOR_RTOL, VERDICT_RTOL

__all__ = [
    "CHECKS",
    "CheckResult",
    "CollapseResult",
    "ConstantResult",
    "DistanceResult",
    "TheoryOptions",
    "TheoryResult",
    "TheoryView",
    "check_bound",
    "check_collapse",
    "check_iso_haus",
    "check_loss_iso",
    "check_pair_loss",
    "constant_result",
    "empirical_constant",
    "evaluate_theory",
]

logger = logging.getLogger(__name__)

#: ``diagnose`` evaluates batches larger than this on seeded random ``P x K``
#: batches of this size (``diagnostics.theory_subsample``)
THEORY_MAX_POINTS = 200
#: nearest_ideal(objective="haus") runs by default only up to this many points,
#: the toy sizes where it can certify (its exact single-triplet bound alone took
#: 1.6 s at N = 16 and 28 s at N = 64 on the shared 2-core machine)
HAUS_MAX_POINTS = 12
#: ``rho``: the loss of a collapsed batch (alpha) should be within this factor
#: of its distance to the ideal set (D*); 2 is the factor of statement 3
FAITHFUL_RATIO = 2.0


@dataclass(frozen=True)
class CheckResult:
    """One inequality ``lhs <= rhs`` evaluated numerically.

    Attributes
    ----------
    statement : str
    lhs, rhs, lhs_lower, lhs_upper, rhs_lower, rhs_upper : float
        Estimates of both sides and their certified brackets.
    slack : float
        ``rhs - lhs``.
    holds : bool or None
        ``lhs_upper <= rhs_lower`` (True), ``lhs_lower > rhs_upper`` (False), else None.
    """

    statement: str
    lhs: float
    rhs: float
    lhs_lower: float
    lhs_upper: float
    rhs_lower: float
    rhs_upper: float
    slack: float
    holds: bool | None

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-ready)."""
        return asdict(self)


def check_bound(statement: str, lhs: tuple[float, float, float], rhs: tuple[float, float, float],
           scale: float = 0.0) -> CheckResult:
    """Build a :class:`CheckResult` from ``(estimate, lower, upper)`` of each side.

    ``scale`` is the size of the instance (e.g. its diameter): rounding
    noise of the inputs is of that size times machine epsilon, even when
    both sides are near zero.
    """
    l, l_lo, l_up = lhs
    r, r_lo, r_up = rhs
    scale = max(abs(l_up), abs(r_up), scale, 1e-300)
    tol = VERDICT_RTOL * scale
    if l_up <= r_lo + tol:
        holds: bool | None = True
    elif l_lo > r_up + tol:
        holds = False
    else:
        holds = None
    return CheckResult(statement, float(l), float(r), float(l_lo), float(l_up), float(r_lo),
                      float(r_up), float(r - l), holds)


def check_iso_haus(E1: ArrayLike, E2: ArrayLike, *, mode: str = "pointwise") -> CheckResult:
    """Statement 1: ``d_iso(E1, E2) <= 2 d_haus(E1, E2)``.

    Parameters
    ----------
    E1, E2 : array_like of shape (N, n)
        Two embeddings of the same ``N`` points (row ``i`` of each is point ``i``).
    mode : {"pointwise", "isometry"}, default "pointwise"
        ``"pointwise"`` compares the points as they are
        (:func:`isoapprox.hausdorff_like`); ``"isometry"`` first moves ``E2``
        by the best isometry, with the certified bracket of
        :func:`isoapprox.minimax_procrustes`.

    Returns
    -------
    CheckResult
        Both sides, their brackets and the verdict ``holds``.

    Examples
    --------
    >>> chk = check_iso_haus([[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [3.0, 0.0]])
    >>> chk.lhs, chk.rhs, chk.holds
    (2.0, 4.0, True)
    """
    mode = check_option(mode, "mode", ("pointwise", "isometry"))
    d_iso = isometric_error(E1, E2)
    scale = max(diameter(E1), diameter(E2))
    if mode == "pointwise":
        h = hausdorff_like(E1, E2, mode="pointwise")
        rhs = (2 * h, 2 * h, 2 * h)
    else:
        res = minimax_procrustes(E1, E2)
        rhs = (2 * res.value, 2 * res.lower, 2 * res.upper)
    return check_bound(f"d_iso(E1, E2) <= 2 d_haus_{mode}(E1, E2)", (d_iso, d_iso, d_iso), rhs,
                       scale)


def check_loss_iso(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, iso: Any = None, rng: RNGLike = None,
    tol: float = 1e-6,
) -> tuple[CheckResult, CheckResult]:
    """Statement 3: ``L(E)/2 <= d_iso(E, F_TS)`` and ``d_iso(E, F_TS) <= L(E)``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Labels admitting a triplet.
    margin : float, default 0.0
        The triplet margin ``alpha`` of the loss and of ``F_TS(alpha)``.
    iso : IdealResult, optional
        A precomputed ``nearest_ideal(E, y, margin=margin, objective="iso")``.
    rng : None, int or Generator
        Seeds the solver's starts when ``iso`` is not given.
    tol : float, default 1e-6
        The solver's requested relative gap when ``iso`` is not given.

    Returns
    -------
    lower_check : CheckResult
        The proven ``L(E)/2 <= d_iso(E, F_TS)``.
    upper_check : CheckResult
        ``d_iso(E, F_TS) <= L(E)``, which may fail when the perturbed table
        is not realisable in ``R^n``.
    """
    margin = check_margin(margin)
    if iso is None:
        iso = nearest_ideal(E, y, margin=margin, objective="iso", rng=rng, tol=tol,
                            warn_uncertified=False)
    L = batch_hard_loss(E, y, margin=margin, reduction="max")
    return _sandwich("L(E)/2", L / 2, "d_iso(E, F_TS)", iso, L, max(diameter(E), margin))


def check_pair_loss(
    E: ArrayLike,
    y: ArrayLike,
    *,
    loss: str = "contrastive",
    margin: float = 0.0,
    pos_margin: float = 0.0,
    beta: float = 1.0,
    iso: Any = None,
    rng: RNGLike = None,
    tol: float = 1e-6,
) -> tuple[CheckResult, CheckResult]:
    """Statement 5: ``L(E) <= d_iso(E, F)`` and ``d_iso(E, F) <= L(E)`` for a pair loss.

    ``L`` is the max-reduced pair loss and ``F`` its zero-loss set
    (:func:`isoapprox.nearest_zero_loss`).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Labels.
    loss : {"contrastive", "margin"}, default "contrastive"
        The pair loss, as in :func:`isoapprox.nearest_zero_loss`.
    margin, pos_margin, beta : float
        The loss's parameters, as in :func:`isoapprox.nearest_zero_loss`.
    iso : IdealResult, optional
        A precomputed ``nearest_zero_loss(..., objective="iso")`` of the
        same loss and parameters.
    rng, tol
        As in :func:`check_loss_iso`.

    Returns
    -------
    lower_check : CheckResult
        The proven ``L(E) <= d_iso(E, F)``.
    upper_check : CheckResult
        ``d_iso(E, F) <= L(E)``, which holds (with equality) when the clipped
        table is realisable in ``R^n``.

    Raises
    ------
    InvalidInputError
        As :func:`isoapprox.nearest_zero_loss`, or when ``iso`` was computed
        for another loss or other parameters.

    Examples
    --------
    >>> lo, up = check_pair_loss([[0.0], [3.0], [1.0]], [0, 0, 1], margin=2.0, pos_margin=1.0)
    >>> lo.lhs, lo.holds, up.holds
    (2.0, True, True)
    """
    u, l = pair_bounds(loss, margin=margin, pos_margin=pos_margin, beta=beta)
    if iso is None:
        iso = nearest_zero_loss(E, y, loss=loss, margin=margin, pos_margin=pos_margin,
                                beta=beta, objective="iso", rng=rng, tol=tol,
                                warn_uncertified=False)
    elif (iso.loss != loss or iso.objective != "iso"
          or iso.thresholds.get("upper") != u or iso.thresholds.get("lower") != l):
        raise InvalidInputError(
            f"`iso` must be nearest_zero_loss(..., loss={loss!r}, objective='iso') with "
            f"upper={u!r}, lower={l!r}; got loss={iso.loss!r}, objective={iso.objective!r}, "
            f"thresholds={iso.thresholds!r}"
        )
    if loss == "contrastive":
        L = contrastive_loss(E, y, margin=margin, pos_margin=pos_margin, reduction="max")
    else:
        L = margin_loss(E, y, margin=margin, beta=beta, reduction="max")
    return _sandwich("L(E)", L, "d_iso(E, F)", iso, L, max(diameter(E), l))


def _sandwich(low_name: str, low: float, name: str, iso: IdealResult, L: float,
              scale: float) -> tuple[CheckResult, CheckResult]:
    """The checks ``low <= d`` and ``d <= L(E)`` of the bracket of ``iso``."""
    d = iso.bracket.triple
    return (check_bound(f"{low_name} <= {name}", (low,) * 3, d, scale),
            check_bound(f"{name} <= L(E)", d, (L,) * 3, scale))


@dataclass(frozen=True)
class TheoryOptions:
    """Options of :func:`evaluate_theory` (and of the theory section of ``diagnose``).

    Attributes
    ----------
    effort : {"quick", "default", "thorough"}, default "default"
        The work budget of each ``nearest_ideal`` solve
        (:func:`isoapprox.nearest_ideal`'s ``effort``): counts of work, so
        the result is the same on a busy or a quiet machine.
    time_limit : float or None, default None
        The safety net of each solve (``nearest_ideal``'s ``time_limit``;
        None: 600 s); when it fires the solve says so (``reproducible``).
    tol : float, default 1e-6
        Requested relative gap of the solvers.
    solver : {"auto", "scipy", "cvxpy"}, default "auto"
    n_starts, max_iter : int or None, default None
        Local solves of each ``nearest_ideal`` call and their iteration cap;
        None: the ``effort``'s (24 and 200 for ``"default"``).
    haus_max_points : int or None, default 12
        ``nearest_ideal(objective="haus")`` runs only up to this many points
        (its exact single-triplet bound costs ~30 s at ``N = 64``); above it
        the ``d_haus`` bracket comes from the iso solution.  None: always.
    procrustes_max_dim : int or None, default None
        ``f*`` is moved onto ``E`` by the minimax Procrustes isometry (seconds
        in ``n = 32``) only up to this dimension; 0: never.  None: always.
    seed : int, default 0
        Seeds the minimax Procrustes starts (and, in ``diagnose``, the
        solvers and the subsample).
    c_n : float or None
        If given, statement 2 is checked with this constant.
    max_subbatches : int or None, default None
        Sub-problems whose proven lower ends bound ``d_haus`` of batches above
        12 points (``nearest_ideal``'s ``max_subbatches``; None: the
        ``effort``'s, 8 for ``"default"``); 0 skips them.
    thickness_starts : int, default 0
        Random starts of the local descent of :func:`thickness_report` (its
        ``n_starts``) beyond its deterministic ones (the best principal axis
        or facet normal and the least principal axis).  The thickness bracket
        is certified whatever the number; random starts may lower its upper
        end, at about one linear-programming descent each (in ``R^64`` with
        200 points, 8 starts cost 7.5 x the time of none and lowered the
        upper end by 0.5 %, the lower end unchanged).
    max_points, faithful_ratio, curve
        Of the ``diagnose`` theory section: its subsample size, the ``rho``
        of the layout criterion and the lower-bound curve of the suggestion.
    """

    effort: str = "default"
    time_limit: float | None = None
    tol: float = 1e-6
    solver: str = "auto"
    n_starts: int | None = None
    max_iter: int | None = None
    haus_max_points: int | None = HAUS_MAX_POINTS
    procrustes_max_dim: int | None = None
    seed: int = 0
    c_n: float | None = None
    max_subbatches: int | None = None
    thickness_starts: int = 0
    max_points: int = THEORY_MAX_POINTS
    faithful_ratio: float = FAITHFUL_RATIO
    curve: str | Callable[[int, int, float], float] = "packing"

    def __post_init__(self) -> None:
        self.solver_options()  # checks effort, the counts, time_limit, tol and solver
        if self.haus_max_points is not None:  # None: no limit
            check_int(self.haus_max_points, "haus_max_points", minimum=0)
        if self.procrustes_max_dim is not None:
            check_int(self.procrustes_max_dim, "procrustes_max_dim", minimum=0)
        check_int(self.seed, "seed", minimum=0)
        if self.c_n is not None:
            check_positive(self.c_n, "c_n")
        check_int(self.thickness_starts, "thickness_starts", minimum=0)
        check_int(self.max_points, "max_points", minimum=3)
        rho = check_positive(self.faithful_ratio, "faithful_ratio")
        if rho < 1.0:
            raise InvalidInputError(f"`faithful_ratio` must be >= 1; got {rho!r}")
        if not callable(self.curve):
            check_option(self.curve, "curve", LOWER_BOUND_CURVES)

    def budget(self):
        """The resolved work budget of each solve (:class:`isoapprox.ideal._budget.Budget`)."""
        return resolve_budget(self.effort, n_starts=self.n_starts, max_iter=self.max_iter,
                              max_subbatches=self.max_subbatches)

    def solver_options(self, objective: str = "iso") -> SolverOptions:
        """The options of each solve (:func:`isoapprox.ideal.solve_nearest`), silent when
        uncertified (the result says it).

        Parameters
        ----------
        objective : {"iso", "haus"}, default "iso"

        Returns
        -------
        SolverOptions
        """
        return SolverOptions(objective, self.solver, self.tol, self.budget(), self.time_limit,
                             warn_uncertified=False)


@dataclass(frozen=True)
class DistanceResult(Bracketed):
    """A distance to ``F_TS`` with its certified bracket and a minimiser.

    Attributes
    ----------
    objective : {"iso", "haus"}
    bracket : Bracket
        ``value``, ``lower``, ``upper``, ``certified``, ``lower_source`` and
        ``upper_source`` (``solver``), read by the attributes below.
    value, lower, upper : float
        ``lower <= d(E, F_TS) <= upper = value`` (re-scored in float64).
    gap, rel_gap : float
        ``upper - lower`` and ``gap / max(value, FLOOR_RTOL * max(diam E, alpha))``.
    certified : bool
        ``rel_gap <= tol`` with a finite bracket.
    lower_source : str
        A :attr:`IdealResult.bounds` name, ``"iso_half"`` (statement 1) or
        ``"packing_radius"`` (:func:`isoapprox.packing.packing_radius_bound`).
    solver : str
        Origin of ``embedding``: the solver, ``"cross:haus"`` or ``"procrustes"``.
    status : str
        ``"certified"``, the solver's status, or ``"bracket"``.
    kind : {"collapsed", "class-collapsed", "general"}
    seconds : float
    embedding : ndarray of shape (N, n)
        Triplet-separated in float64.
    """

    objective: str
    SERIAL_FIELDS = ("objective", *BRACKET_FIELDS, "solver", "status", "kind", "seconds",
                     "embedding")
    bracket: Bracket
    solver: str
    status: str
    kind: str
    seconds: float
    embedding: FloatArray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary without the embedding (JSON-ready)."""
        return {k: getattr(self, k) for k in self.SERIAL_FIELDS if k != "embedding"}

    @classmethod
    def from_bracket(cls, objective: str, value: float, lower: float, source: str,
                     solver: str, status: str, kind: str, seconds: float, G: np.ndarray,
                     scale: float, tol: float) -> DistanceResult:
        """The result for a bracket ``[lower, value]`` (``rel_gap`` with the floor
        ``FLOOR_RTOL * scale``); a lower end above the value is a contradiction
        (:class:`~isoapprox.exceptions.SolverError`)."""
        if lower > value * (1.0 + BOUND_RTOL) + 1e-300:
            raise SolverError(f"internal inconsistency: the {objective} lower bound {lower!r} "
                              f"({source}) exceeds the value {value!r} of a feasible embedding",
                              solver=solver, status=status)
        b = Bracket.relative(value, min(lower, value), tol=tol, floor=FLOOR_RTOL * scale,
                             lower_source=source, upper_source=solver)
        return cls(objective, b, solver, "certified" if b.certified else status, kind,
                   float(seconds), np.asarray(G))


@dataclass(frozen=True)
class TheoryResult:
    """Every quantity of the theory for one embedding (:func:`evaluate_theory`).

    Attributes
    ----------
    n_points, dim, n_classes, n_separated_classes : int
        ``N``, ``n``, ``P`` and ``P'`` (:func:`isoapprox.packing.separated_class_count`).
    margin, loss_max, loss_mean, diameter : float
        ``alpha``, the batch-hard loss (max and mean) and ``diam(E)``.
    iso, haus : DistanceResult
        ``d_iso(E, F_TS)`` and ``d_haus(E, F_TS)`` with their certified brackets.
    iso_crossed, haus_crossed : bool
        A bracket end came from the other objective's solution.
    packing_lower : float
        ``D*_lower(P', n, alpha) - diam(E)`` (proven).
    c, c_lower, c_upper : float
        ``d_haus / d_iso`` and its bracket (NaN when ``E`` is separated).
    theta, theta_lower, theta_upper : float
        Thickness with its bracket (0 when ``E`` is flat).
    implied_cn : float
        ``c * theta``: the least ``c_n`` compatible with ``E`` in statement 2.
    d_haus_fstar, d_haus_fstar_lower, d_haus_fstar_upper, ratio_fstar : float
        ``d_haus_isometry(E, f*)`` (NaN when not run) and its ratio to ``d_iso``.
    d_star, d_star_lower, d_star_upper, d_star_exact, d_star_source
        ``D*(P', n, alpha)`` (:func:`isoapprox.packing.d_star_bracket`).
    beyond_simplex : bool
        ``P' > n + 1``.
    ideal_diameter : float
        ``diam(f*)``.
    checks : dict of str to CheckResult
        The statements that apply, by key of :data:`CHECKS`.
    solver_results : dict of str to IdealResult
        ``nearest_ideal``'s own results (``"iso"``, and ``"haus"`` when it ran).
    aligned : ndarray of shape (N, n) or None
        ``f*`` moved onto ``E`` by the best isometry.
    seconds : float
    """

    n_points: int
    dim: int
    n_classes: int
    n_separated_classes: int
    margin: float
    loss_max: float
    loss_mean: float
    diameter: float
    iso: DistanceResult
    haus: DistanceResult
    iso_crossed: bool
    haus_crossed: bool
    packing_lower: float
    c: float
    c_lower: float
    c_upper: float
    theta: float
    theta_lower: float
    theta_upper: float
    implied_cn: float
    d_haus_fstar: float
    d_haus_fstar_lower: float
    d_haus_fstar_upper: float
    ratio_fstar: float
    d_star: float
    d_star_lower: float
    d_star_upper: float
    d_star_exact: bool
    d_star_source: str
    beyond_simplex: bool
    ideal_diameter: float
    checks: dict = field(default_factory=dict, repr=False)
    solver_results: dict = field(default_factory=dict, repr=False)
    aligned: FloatArray | None = field(default=None, repr=False)
    seconds: float = 0.0

    @property
    def separated(self) -> bool:
        """``E`` is triplet-separated (both distances vanish)."""
        return self.iso.value == 0.0

    def to_row(self) -> dict[str, Any]:
        """Flat dictionary of scalars (one CSV row); checks as ``<key>_slack`` / ``<key>_holds``."""
        out: dict[str, Any] = {}
        for k in self.__dataclass_fields__:
            v = getattr(self, k)
            if isinstance(v, DistanceResult):
                for f in ("value", "lower", "upper", "rel_gap", "certified", "lower_source",
                          "solver", "status", "kind"):
                    out[f"d_{k}" if f == "value" else f"d_{k}_{f}"] = getattr(v, f)
            elif isinstance(v, (bool, int, float, str, np.floating, np.integer)):
                out[k] = v
        for key, chk in self.checks.items():
            out[f"{key}_slack"] = chk.slack
            out[f"{key}_holds"] = chk.holds
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary: the row, the two brackets, the checks and the solvers' results."""
        out = self.to_row()
        out["iso"] = self.iso.to_dict()
        out["haus"] = self.haus.to_dict()
        out["checks"] = {k: c.to_dict() for k, c in self.checks.items()}
        out["ideal_solver"] = {k: solver_dict(r) for k, r in self.solver_results.items()}
        return out


#: the checks of :attr:`TheoryResult.checks`: key -> (SPEC section 3 item, inequality, kind)
CHECKS: dict[str, tuple[str, str, str]] = {
    "1_pointwise": ("1", "d_iso(E, f*) <= 2 d_haus_pointwise(E, f*)", "theorem"),
    "1_pointwise_haus": ("1", "d_iso(E, f*_haus) <= 2 d_haus_pointwise(E, f*_haus)", "theorem"),
    "1_isometry": ("1", "d_iso(E, f*) <= 2 d_haus_isometry(E, f*)", "theorem"),
    "2_half": ("2", "1/2 <= c(E)", "theorem"),
    "2_cn": ("2", "d_haus(E, F_TS) <= (c_n / theta) d_iso(E, F_TS)", "conjecture"),
    "3_lower": ("3", "L(E)/2 <= d_iso(E, F_TS)", "theorem"),
    "3_upper": ("3", "d_iso(E, F_TS) <= L(E)", "conditional"),
    "4_diameter": ("4", "D*(P, n, alpha) - d_iso(E, F_TS) <= diam(E)", "theorem"),
}


#: the attributes of a ``nearest_ideal`` result that :func:`solver_dict` keeps, in order
_SOLVER_KEYS = ("objective", "value", "lower", "upper", "rel_gap", "certified", "solver",
                "status", "kind", "n_starts", "n_iter", "seconds", "bounds", "lower_source")


def solver_dict(res: IdealResult) -> dict[str, Any]:
    """The summary of a ``nearest_ideal`` result kept in reports (no embedding)."""
    return {k: dict(res.bounds) if k == "bounds" else getattr(res, k) for k in _SOLVER_KEYS}


def _ratio(num: float, den: float) -> float:
    if den == 0.0:
        return math.nan if num == 0.0 else math.inf
    return num / den


def evaluate_theory(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    options: TheoryOptions | None = None,
    rng: RNGLike = None,
    haus_rng: RNGLike = None,
    iso: IdealResult | None = None,
    haus: IdealResult | None = None,
    procrustes: ProcrustesResult | None = None,
) -> TheoryResult:
    """Both distances to ``F_TS`` with every proven bound, ``c``, ``theta`` and the checks.

    The one evaluation of the theory (its strategy: docs/theory.md).
    ``d_iso`` is :func:`isoapprox.nearest_ideal`'s bracket, its upper end
    lowered by the haus solution when better; ``d_haus`` is the better of
    the haus solver (``N <= haus_max_points``) and ``f*`` moved onto ``E``
    by its minimax Procrustes isometry, with lower end at least half that
    of ``d_iso`` (statement 1).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (``N >= 3``).
    y : array_like of shape (N,)
        Labels admitting a triplet.
    margin : float, default 0.0
    options : TheoryOptions, optional
    rng, haus_rng : None, int or Generator
        Seed the iso solver's starts (and the haus solver's, unless ``haus_rng``).
    iso, haus : IdealResult, optional
        Precomputed ``nearest_ideal`` results for this ``E``, ``y`` and margin.
    procrustes : ProcrustesResult, optional
        A precomputed ``minimax_procrustes(E, iso.embedding)``.

    Returns
    -------
    TheoryResult

    Examples
    --------
    >>> E = [[0.0, 0.0], [1.0, 0.0], [0.5, 0.2], [0.6, 1.0], [2.0, 0.5]]
    >>> r = evaluate_theory(E, [0, 0, 1, 1, 2])
    >>> r.iso.certified, round(r.iso.value, 6), round(r.c_lower, 4), r.checks["2_half"].holds
    (True, 0.230742, 0.9622, True)
    """
    t0 = time.perf_counter()
    opts = options if options is not None else TheoryOptions()
    check_instance(opts, TheoryOptions, "options")
    X = as_points(E, "E", min_points=3)
    codes, classes = as_labels(y, X.shape[0], "y")
    require_triplets(codes)
    alpha = check_margin(margin)
    return evaluate_core(X, codes, alpha, opts, rng, haus_rng=haus_rng, iso_res=iso,
                         haus_res=haus, proc=procrustes, t0=t0)[0]


#: what :func:`evaluate_core` (and ``diagnose``'s theory section) certifies:
#: ``"verdict"`` (``diagnose``'s default) only what a verdict reads -- the ``d_iso``
#: bracket against the loss (statement 3), ``D*`` and the layout -- leaving out the
#: minimax Procrustes isometry, the thickness and the certified enclosing ball;
#: ``"all"``: every quantity of :func:`evaluate_theory`
CERTIFY = ("verdict", "all")
#: ``certify="verdict"``: the ball of the radius packing bound of ``d_haus`` by
#: Frank-Wolfe to this relative gap, at most ``_LOOSE_BALL_MAX_ITER`` iterations
#: per working set (its radius, re-scored from its centre, bounds the least radius
#: from above whatever the gap: the bound stays proven, a little weaker); on a
#: 200 x 128 batch 5 ms instead of 50-330 ms at 1e-12
_LOOSE_BALL_RTOL = 1e-3
_LOOSE_BALL_MAX_ITER = 1000
#: ``certify="verdict"``: the iteration cap of the first stage's one local solve
#: (on batches above 300 rows an augmented Lagrangian of 8 rounds of 125 L-BFGS
#: iterations).  On the 200-point batches of benchmarks/bench_diagnose.py's files
#: (R^16 to R^128) it decided statement 3 at 0.1 to 0.4 x the work of the default
#: effort; 20 left two of the four open, 100 cost 1.5 to 4.6 x the work of 50
_FIRST_MAX_ITER = 50


def _first_budget(full):
    """The first, verdict-deciding stage of ``certify="verdict"``: one local solve of at
    most ``_FIRST_MAX_ITER`` iterations, the other counts as ``full``'s."""
    return replace(full, n_starts=min(full.n_starts, 1),
                   max_iter=min(full.max_iter, _FIRST_MAX_ITER))


def evaluate_core(X: np.ndarray, codes: np.ndarray, alpha: float, opts: TheoryOptions,
                  rng: RNGLike, *, haus_rng: RNGLike = None, iso_res: IdealResult | None = None,
                  haus_res: IdealResult | None = None, proc: ProcrustesResult | None = None,
                  t0: float | None = None, certify: str = "all"
                  ) -> tuple[TheoryResult, list[dict[str, Any]] | None]:
    """:func:`evaluate_theory` without its checks, for callers that validated.

    ``X`` finite float64 points (``N >= 3``), ``codes`` label codes admitting a
    triplet, ``alpha >= 0``.  ``certify="all"`` is :func:`evaluate_theory`.
    ``certify="verdict"`` certifies only what a verdict reads: ``d_iso`` is
    searched in stages, each bounded by counts: first :func:`_first_budget` (one
    local solve), and the effort's whole budget only while the bracket still
    straddles ``L`` (statement 3 undecided), so the verdict is the one the whole
    budget gives (a decided check is proven either way).  The ``haus`` solver (up
    to ``haus_max_points`` points) runs, with the whole budget, only while
    statement 3 is open: its solution may lower ``d_iso``'s upper end.  ``D*``
    and checks 3 and 4 as there.  Left out: the minimax Procrustes isometry (the
    ``d_haus`` upper end is ``f*`` where the solver left it, in ``E``'s frame,
    and ``aligned`` is ``f*``), the thickness (NaN) and the certified enclosing
    ball (the radius packing bound of ``d_haus`` uses a loose ball,
    :data:`_LOOSE_BALL_RTOL`; still proven).  So check ``"1_isometry"`` and,
    with ``c_n``, ``"2_cn"`` are absent.  Returns the result and, with
    ``"verdict"``, its stages (the budget and what each used; else None).
    """
    t0 = time.perf_counter() if t0 is None else t0
    verdict = certify == "verdict"
    N, n = X.shape
    tol = opts.tol
    diam = compute_farthest_pair(X)[0]
    scale = max(diam, alpha)
    L, L_mean = compute_batch_hard(X, codes, alpha, ("max", "mean"))
    P_sep = separated_count(codes)
    iso_opts, haus_opts = opts.solver_options("iso"), opts.solver_options("haus")
    runs_haus = opts.haus_max_points is None or N <= opts.haus_max_points
    haus_rng = rng if haus_rng is None else haus_rng

    # d_iso: the solver's bracket, the haus solution as a candidate ---------------
    def iso_bracket(res: IdealResult) -> tuple[DistanceResult, bool]:
        iso = DistanceResult.from_bracket("iso", res.value, res.lower, res.lower_source,
                res.solver, res.status, res.kind, res.seconds, res.embedding, scale, tol)
        if haus_res is not None and iso.value > 0.0:
            v = compute_isometric_error(X, haus_res.embedding)
            if v < iso.upper:
                cross = DistanceResult.from_bracket("iso", v, iso.lower, iso.lower_source,
                        "cross:haus", "bracket", haus_res.kind, res.seconds,
                        haus_res.embedding, scale, tol)
                return cross, True
        return iso, False

    def decided(iso: DistanceResult) -> bool:
        return check_bound("", iso.bracket.triple, (L,) * 3,
                           scale).holds is not None

    stages: list[dict[str, Any]] | None = None
    if verdict and iso_res is None:
        stages = []
        for budget in dict.fromkeys((_first_budget(iso_opts.budget), iso_opts.budget)):
            iso_res = solve_nearest(X, codes, alpha, rng, replace(iso_opts, budget=budget))
            iso, iso_crossed = iso_bracket(iso_res)
            if not decided(iso) and runs_haus and haus_res is None:
                # its solution is a d_iso candidate too (small batches only)
                haus_res = solve_nearest(X, codes, alpha, haus_rng, haus_opts)
                iso, iso_crossed = iso_bracket(iso_res)
            stages.append({"budget": budget.to_dict(), "n_starts": int(iso_res.n_starts),
                           "n_iter": int(iso_res.n_iter), "status": iso_res.status,
                           "verdict_decided": decided(iso)})
            if stages[-1]["verdict_decided"]:
                break
    else:
        if iso_res is None:
            iso_res = solve_nearest(X, codes, alpha, rng, iso_opts)
        if haus_res is None and runs_haus:
            haus_res = solve_nearest(X, codes, alpha, haus_rng, haus_opts)
        iso, iso_crossed = iso_bracket(iso_res)
    solvers = {"iso": iso_res} if haus_res is None else {"iso": iso_res, "haus": haus_res}
    fstar = iso.embedding

    # d_haus: the solver (small N) and f* moved onto E ------------------------------
    run_proc = not verdict and (opts.procrustes_max_dim is None or n <= opts.procrustes_max_dim)
    aligned = fstar  # unless Procrustes moves it onto E
    if iso.value == 0.0:
        if not verdict:
            proc = ProcrustesResult.trivial(np.zeros(n))
        haus = DistanceResult("haus", Bracket(0.0, 0.0, 0.0, True, iso.lower_source, iso.solver),
                              iso.solver, iso.status, iso.kind, 0.0, fstar)
        haus_crossed = False
    else:
        cands = []  # (value, G, solver, status, seconds); the solver's first: it wins ties
        if haus_res is not None:
            cands.append((haus_res.value, np.asarray(haus_res.embedding), haus_res.solver,
                          haus_res.status, haus_res.seconds))
        if proc is None and run_proc:
            proc = compute_minimax_procrustes(X, np.asarray(fstar, dtype=float),
                                              gen=as_rng(opts.seed), stacklevel=4)
        if proc is not None:
            # the best isometry maps X_k to Q X_k + b ~ f*_k; its inverse moves f* onto X
            aligned = (fstar - proc.b) @ proc.Q
            if compute_worst_slack(aligned, codes, alpha) >= 0.0:
                cands.append((compute_pointwise(X, aligned), aligned, "procrustes", "bracket",
                              0.0))
        lower, source = iso.lower / 2.0, "iso_half"
        if haus_res is None:
            # the radius form of the packing bound (the solver, where it runs, has it)
            ball = (compute_min_enclosing_ball(X, _LOOSE_BALL_RTOL, _LOOSE_BALL_MAX_ITER) if verdict
                    else compute_min_enclosing_ball(X))
            pr = compute_packing_radius_bound(codes, n, alpha, ball.radius)
            if pr > lower:
                lower, source = pr, "packing_radius"
        elif haus_res.lower > lower:
            lower, source = haus_res.lower, haus_res.lower_source
        if not cands:  # no haus solver ran, and Procrustes did not or rounding broke its copy
            if proc is not None:
                logger.warning("the ideal embedding moved onto E is not triplet-separated "
                               "in float64 (rounding); the d_haus upper end uses f* unmoved")
            cands.append((compute_pointwise(X, fstar), fstar, iso.solver, "bracket", 0.0))
        value, G, solver, status, secs = min(cands, key=lambda c: c[0])
        kind = haus_res.kind if (haus_res is not None and G is haus_res.embedding) else \
            embedding_kind(G, codes, scale)
        haus = DistanceResult.from_bracket("haus", value, lower, source, solver, status, kind, secs,
                G, scale, tol)
        haus_crossed = haus_res is None or solver != haus_res.solver or source == "iso_half"

    # c, theta, f* ratio -------------------------------------------------------------
    separated = iso.value == 0.0
    c = _ratio(haus.value, iso.value)
    c_lo = _ratio(haus.lower, iso.upper) if iso.upper > 0 else math.nan
    c_up = _ratio(haus.upper, iso.lower) if iso.value > 0 else math.nan
    if verdict:
        theta = th_lo = th_up = math.nan
    elif np.ptp(X, axis=0).max() > 0.0:
        th = compute_thickness(X, n_starts=opts.thickness_starts)
        theta, th_lo, th_up = th.value, th.lower, th.upper
    else:
        theta = th_lo = th_up = 0.0
    if proc is not None:
        f_val, f_lo, f_up = proc.value, proc.lower, proc.upper
    else:
        f_val = f_lo = f_up = math.nan
    ds, ds_lo, ds_up, ds_exact, ds_src = compute_d_star_bracket(codes, n, alpha)

    # the checks of SPEC section 3 -----------------------------------------------------
    iso_b = iso.bracket.triple
    checks: dict[str, CheckResult] = {}

    def check(key: str, lhs: tuple, rhs: tuple, size: float = scale) -> None:
        checks[key] = check_bound(CHECKS[key][1], lhs, rhs, size)

    fstar_diam = compute_farthest_pair(np.asarray(fstar, dtype=float))[0]
    if not separated:  # else f* = E and statements 1 and 2 are void
        d_f, h_f = compute_isometric_error(X, fstar), compute_pointwise(X, fstar)
        sc = max(diam, fstar_diam)
        check("1_pointwise", (d_f,) * 3, (2 * h_f,) * 3, sc)
        G = haus.embedding
        d_h, h_h = compute_isometric_error(X, G), compute_pointwise(X, G)
        check("1_pointwise_haus", (d_h,) * 3, (2 * h_h,) * 3,
              max(diam, compute_farthest_pair(np.asarray(G, dtype=float))[0]))
        if proc is not None:
            check("1_isometry", (d_f,) * 3, (2 * f_val, 2 * f_lo, 2 * f_up), sc)
        check("2_half", (0.5,) * 3, (c, c_lo, c_up), 0.0)
    if opts.c_n is not None and th_lo > 0.0:
        bound = (opts.c_n / theta * iso.value, opts.c_n / th_up * iso.lower,
                 opts.c_n / th_lo * iso.upper)
        check("2_cn", haus.bracket.triple, bound)
    check("3_lower", (L / 2,) * 3, iso_b)
    check("3_upper", iso_b, (L,) * 3)
    check("4_diameter", (ds - iso.value, ds_lo - iso.upper, ds_up - iso.lower), (diam,) * 3)
    return TheoryResult(
        n_points=N, dim=n, n_classes=int(codes.max()) + 1, n_separated_classes=P_sep,
        margin=alpha, loss_max=L, loss_mean=L_mean, diameter=diam, iso=iso, haus=haus,
        iso_crossed=iso_crossed, haus_crossed=bool(haus_crossed),
        packing_lower=compute_packing_distance_bound(codes, n, alpha, diam),
        c=c, c_lower=c_lo, c_upper=c_up, theta=theta, theta_lower=th_lo, theta_upper=th_up,
        implied_cn=c * theta if math.isfinite(c) else math.nan,
        d_haus_fstar=f_val, d_haus_fstar_lower=f_lo, d_haus_fstar_upper=f_up,
        ratio_fstar=_ratio(f_val, iso.value) if proc is not None else math.nan,
        d_star=ds, d_star_lower=ds_lo, d_star_upper=ds_up, d_star_exact=ds_exact,
        d_star_source=ds_src, beyond_simplex=P_sep > n + 1, ideal_diameter=fstar_diam,
        checks=checks, solver_results=solvers, aligned=np.asarray(aligned),
        seconds=time.perf_counter() - t0,
    ), stages


class TheoryView:
    """A named view of a :class:`TheoryResult`: attributes read from its ``to_row()``.

    The base of :class:`ConstantResult` and :class:`isoapprox.train.BatchTheory`:
    dataclasses with a field ``theory`` that name their attributes in ``ROW``
    (attribute -> key of the row).
    """

    theory: TheoryResult
    ROW: dict[str, str] = {}
    #: the attributes a serialised copy lists, in order (:func:`isoapprox.io.to_jsonable`)
    SERIAL_FIELDS: tuple[str, ...] = ()

    @functools.cached_property
    def row(self) -> dict[str, Any]:
        """``theory.to_row()`` (computed once)."""
        return self.theory.to_row()

    def __getattr__(self, name: str) -> Any:
        key = type(self).ROW.get(name)
        if key is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.row[key]


#: :class:`ConstantResult`'s attributes from the row of :class:`TheoryResult`
_CONSTANT_ROW = {k: k for k in ("c", "c_lower", "c_upper", "d_iso", "d_iso_lower", "d_iso_upper",
                                "d_haus", "d_haus_lower", "d_haus_upper", "ratio_fstar",
                                "d_haus_fstar", "theta", "theta_lower", "theta_upper",
                                "implied_cn")}


@dataclass(frozen=True)
class ConstantResult(TheoryView):
    """The empirical constant ``c(E)``: a view of :class:`TheoryResult` (:class:`TheoryView`).

    Attributes
    ----------
    theory : TheoryResult
        The evaluation it reads.
    c, c_lower, c_upper : float
        ``c = d_haus / d_iso`` and its bracket.
    d_iso, d_iso_lower, d_iso_upper, d_haus, d_haus_lower, d_haus_upper : float
        The two distances and their brackets (``theory``'s names).
    ratio_fstar, d_haus_fstar, theta, theta_lower, theta_upper, implied_cn : float
        As in :class:`TheoryResult`.
    half_check, cn_check : CheckResult or None
        ``theory``'s checks ``"2_half"`` and ``"2_cn"``.
    kind_iso, kind_haus : str
        The kinds of the two minimisers.
    extra : dict
        ``"d_haus_source"``: ``"procrustes_fstar"`` or ``"nearest_ideal"``.
    """

    theory: TheoryResult = field(repr=False)
    ROW = {**_CONSTANT_ROW, "kind_iso": "d_iso_kind", "kind_haus": "d_haus_kind"}
    SERIAL_FIELDS = (*_CONSTANT_ROW, "half_check", "cn_check", "kind_iso", "kind_haus", "extra")

    @property
    def half_check(self) -> CheckResult | None:
        return self.theory.checks.get("2_half")

    @property
    def cn_check(self) -> CheckResult | None:
        return self.theory.checks.get("2_cn")

    @property
    def extra(self) -> dict[str, str]:
        return {"d_haus_source": "procrustes_fstar" if self.theory.haus.solver == "procrustes"
                else "nearest_ideal"}

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-ready)."""
        out = {k: getattr(self, k) for k in self.SERIAL_FIELDS}
        return {k: v.to_dict() if isinstance(v, CheckResult) else v for k, v in out.items()}

    def __repr__(self) -> str:
        return (f"ConstantResult(c={self.c!r}, c_lower={self.c_lower!r}, "
                f"c_upper={self.c_upper!r}, theta={self.theta!r})")


def empirical_constant(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    c_n: float | None = None,
    iso: Any = None,
    haus: Any = None,
    rng: RNGLike = None,
    tol: float = 1e-6,
    fstar: bool = True,
    fstar_procrustes: Any = None,
) -> ConstantResult:
    """Statement 2: the empirical constant ``c(E)`` with its bracket and ``theta(E)``.

    :func:`evaluate_theory` with ``nearest_ideal``'s defaults (both
    objectives solved, the default work budget each), formatted.  The
    constant is ``c(E) = d_haus(E, F_TS) / d_iso(E, F_TS)``, the ratio of the
    two distances of ``E`` to the triplet-separated embeddings, each
    bracketed by a certified lower and upper end (NaN when ``E`` is already
    separated).  Statement 2: ``1/2 <= c(E)`` (a theorem) and
    ``c(E) <= c_n / theta(E)`` in ``R^n`` with ``theta`` the thickness of
    ``E`` (the conjectured part, checked when ``c_n`` is given).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (``N >= 3``).
    y : array_like of shape (N,)
        Labels admitting a triplet.
    margin : float, default 0.0
        The triplet margin ``alpha`` of ``F_TS(alpha)``.
    c_n : float, optional
        When given, the result also checks ``d_haus <= (c_n / theta) d_iso``
        (``cn_check``).
    iso, haus : IdealResult, optional
        Precomputed ``nearest_ideal`` results (``objective="iso"`` and
        ``"haus"``) for this ``E``, ``y`` and margin.
    rng : None, int or Generator
        Seeds the solvers' starts.
    tol : float, default 1e-6
        The solvers' requested relative gap.
    fstar : bool, default True
        Move ``f*`` (the nearest ideal embedding for ``d_iso``) onto ``E``
        by its minimax Procrustes isometry; ``False`` skips it
        (``ratio_fstar`` and ``d_haus_fstar`` are NaN).
    fstar_procrustes : ProcrustesResult, optional
        A precomputed ``minimax_procrustes(E, iso.embedding)``.

    Returns
    -------
    ConstantResult
        ``c`` with its bracket ``[c_lower, c_upper]``, the brackets of
        ``d_iso`` and ``d_haus`` it is the ratio of, ``theta`` with its
        bracket and the checks ``half_check`` (``1/2 <= c``) and
        ``cn_check`` (None without ``c_n``).

    See Also
    --------
    evaluate_theory : The same evaluation, with every bound and check.

    Examples
    --------
    >>> E = [[0.0, 0.0], [1.0, 0.0], [0.5, 0.2], [0.6, 1.0], [2.0, 0.5]]
    >>> r = empirical_constant(E, [0, 0, 1, 1, 2])
    >>> round(r.c_lower, 4), round(r.c_upper, 4), r.half_check.holds
    (0.9622, 0.9622, True)
    >>> round(r.d_iso, 6), round(r.d_haus, 6)
    (0.230742, 0.222008)
    """
    if c_n is not None:
        c_n = check_positive(c_n, "c_n")
    opts = TheoryOptions(tol=check_positive(tol, "tol"), haus_max_points=None,
                         procrustes_max_dim=None if fstar else 0, c_n=c_n)
    r = evaluate_theory(E, y, margin=margin, options=opts, rng=rng, iso=iso, haus=haus,
                        procrustes=fstar_procrustes if fstar else None)
    return constant_result(r)


def constant_result(r: TheoryResult) -> ConstantResult:
    """The :class:`ConstantResult` view of a :class:`TheoryResult`."""
    return ConstantResult(r)


@dataclass(frozen=True)
class CollapseResult:
    """Statement 4 for one label layout in ``R^n`` (:func:`check_collapse`).

    ``loss_collapsed`` (max) and ``loss_collapsed_mean`` both equal
    ``alpha``; ``d_iso*`` bracket ``d_iso(collapsed, F_TS)`` and ``d_star*``
    ``D*(P, n, alpha)``; ``faithful_ratio = d_iso / L`` (1 while the loss is a
    faithful proxy, beyond 2 once ``P >> n``); ``beyond_simplex`` is
    ``P > n + 1``; ``agreement`` checks ``d_iso == D*`` from both brackets.
    """

    n_classes: int
    dim: int
    margin: float
    loss_collapsed: float
    loss_collapsed_mean: float
    d_iso: float
    d_iso_lower: float
    d_iso_upper: float
    d_star: float
    d_star_lower: float
    d_star_upper: float
    faithful_ratio: float
    beyond_simplex: bool
    agreement: CheckResult

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-ready)."""
        return asdict(self)


def check_collapse(
    y: ArrayLike, dim: int, *, margin: float = 1.0, rng: RNGLike = None, tol: float = 1e-6
) -> CollapseResult:
    """Statement 4: at collapse the loss is ``alpha`` but the distance is ``D*``.

    Parameters
    ----------
    y : array_like of shape (N,)
        Labels of the collapsed batch (every point at the origin).  They
        should give every class two or more points: then ``f*`` of the
        collapsed batch collapses each class and ``d_iso = D*(P, n, alpha)``.
    dim : int
        The dimension ``n >= 1``.
    margin : float, default 1.0
        The triplet margin ``alpha``.
    rng : None, int or Generator
        Seeds the solvers' starts.
    tol : float, default 1e-6
        The solvers' requested relative gap.

    Returns
    -------
    CollapseResult
        The loss of the collapsed batch, the bracket of its ``d_iso``, that
        of ``D*(P, n, alpha)`` and whether the two agree.
    """
    dim = check_int(dim, "dim", minimum=1)
    margin = check_margin(margin)
    codes, classes = as_labels(y, None, "y")
    require_triplets(codes)
    P = int(len(classes))
    E = np.zeros((codes.shape[0], dim))
    L, L_mean = compute_batch_hard(E, codes, margin, ("max", "mean"))
    iso = nearest_ideal(E, codes, margin=margin, objective="iso", rng=rng, tol=tol,
                        warn_uncertified=False)
    ds = d_star(P, dim, margin)
    # agreement: |d_iso - D*| <= 0, i.e. both d_iso <= D* and D* <= d_iso;
    # encode as the larger violation of the two one-sided checks
    a = check_bound("d_iso(collapsed, F_TS) <= D*(P, n, alpha)",
                    iso.bracket.triple, ds.bracket.triple, margin)
    b = check_bound("D*(P, n, alpha) <= d_iso(collapsed, F_TS)",
                    ds.bracket.triple, iso.bracket.triple, margin)
    verdict = False if False in (a.holds, b.holds) else (True if a.holds and b.holds else None)
    agreement = CheckResult(
        "d_iso(collapsed, F_TS) == D*(P, n, alpha)", iso.value, ds.value, iso.lower, iso.upper,
        ds.lower, ds.upper, float(ds.value - iso.value), verdict,
    )
    return CollapseResult(
        n_classes=P, dim=dim, margin=margin, loss_collapsed=L, loss_collapsed_mean=L_mean,
        d_iso=iso.value, d_iso_lower=iso.lower, d_iso_upper=iso.upper,
        d_star=ds.value, d_star_lower=ds.lower, d_star_upper=ds.upper,
        faithful_ratio=_ratio(iso.value, L), beyond_simplex=P > dim + 1, agreement=agreement,
    )
