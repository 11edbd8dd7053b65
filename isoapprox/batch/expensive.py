"""Expensive per-configuration stages: the distances to ``F_TS`` and every bound of SPEC section 3.

See docs/dev/batch_design.md ("isoapprox.batch.expensive: notes").
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from .._blas import quiet_threads
from .._validation import check_int
from ..ideal import SOLVER_LOCK, SolverOptions, resolve_budget, solve_nearest
from ..losses import batch_hard_loss
from ..packing import d_star
from ..theory import TheoryOptions, TheoryResult, evaluate_theory
from ..tolerances import BOUND_RTOL
from .adversarial import OBJECTIVES, register_objective
from .stages import Column, Stage, register_stage

__all__ = [
    "IDEAL",
    "IDEAL_COLUMNS",
    "NO_TIME_LIMIT",
    "OBJECTIVE_SETTINGS",
    "POINTS",
    "IdealSettings",
    "c_incumbent_objective",
    "c_lower_objective",
    "collapse_quantities",
    "ideal_quantities",
    "ideal_stage",
    "solve_pair",
]

#: ``time_limit`` handed to the solvers: effectively none (every search is
#: bounded by its work budget), so results never depend on timing
NO_TIME_LIMIT = 1e9


@dataclass(frozen=True)
class IdealSettings:
    """Solver settings of the ``ideal`` stage (they enter the run fingerprint).

    Attributes
    ----------
    tol : float, default 1e-4
        Requested relative gap of :func:`isoapprox.nearest_ideal`.  A looser
        tolerance stops the search earlier on instances whose bracket closes;
        it does not widen an open bracket.
    effort : {"quick", "default", "thorough"}, default "default"
        The work budget of each solve (``nearest_ideal``'s ``effort``).
    n_starts : int or None, default None
        Local solves of ``nearest_ideal``; None: the ``effort``'s (24 for
        ``"default"``; why 24: docs/dev/batch_design.md, "IdealSettings.n_starts"),
        stored resolved.
    max_iter : int or None, default None
        Iteration cap of each local solve; None: the ``effort``'s (200 for
        ``"default"``), stored resolved.
    solver : {"auto", "scipy", "cvxpy"}, default "auto"
    seed : int, default 0
        Seed of the computations that are shared between configurations
        (statement 4, cached) and of the adversarial objectives.
    """

    tol: float = 1e-4
    effort: str = "default"
    n_starts: int | None = None
    max_iter: int | None = None
    solver: str = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        # the resolved counts enter the fingerprint, whatever spelled them
        b = resolve_budget(self.effort, n_starts=self.n_starts, max_iter=self.max_iter)
        object.__setattr__(self, "n_starts", b.n_starts)
        object.__setattr__(self, "max_iter", b.max_iter)
        self.solver_options()  # checks tol and solver
        check_int(self.seed, "seed", minimum=0)

    def theory_options(self) -> TheoryOptions:
        """The :func:`isoapprox.evaluate_theory` options: both objectives solved, no time limit."""
        return TheoryOptions(effort=self.effort, time_limit=NO_TIME_LIMIT, tol=self.tol,
                             solver=self.solver, n_starts=self.n_starts, max_iter=self.max_iter,
                             haus_max_points=None)

    def solver_options(self, objective: str = "iso") -> SolverOptions:
        """:meth:`theory_options`'s :meth:`~isoapprox.TheoryOptions.solver_options`: the
        :class:`~isoapprox.SolverOptions` of each ``objective`` solve."""
        return self.theory_options().solver_options(objective)


_C = Column


def _distance_columns(obj: str, cross: str) -> tuple[Column, ...]:
    """The columns of ``d_<obj>(E, F_TS)``: its bracket, the nearest ideal embedding's
    kind and whether the other solve improved it (described by ``cross``)."""
    d = f"d_{obj}"
    return (
        _C(d, "float", f"{d}(E, F_TS): incumbent (= upper end)"),
        _C(f"{d}_lower", "float", f"certified lower bound of {d}(E, F_TS)"),
        _C(f"{d}_upper", "float", f"certified upper bound of {d}(E, F_TS)"),
        _C(f"{d}_rel_gap", "float", f"relative gap of the {d} bracket"),
        _C(f"{d}_certified", "bool", f"{d} bracket within the stage's tol"),
        _C(f"{d}_lower_source", "str", f"which bound gives {d}_lower"),
        _C(f"{d}_kind", "str", f"kind of the {obj}-nearest ideal embedding"),
        _C(f"{d}_cross", "bool", cross),
    )


#: the columns of the ``ideal`` stage, in table order
IDEAL_COLUMNS: tuple[Column, ...] = (
    _C("loss", "float", "L(E): batch-hard loss, max reduction"),
    # the two distances to F_TS
    *_distance_columns("iso", "the upper end comes from the haus solution (see solve_pair)"),
    *_distance_columns("haus", "the bracket was improved from the iso solution (see solve_pair)"),
    _C("certified", "bool", "both brackets within the stage's tol"),
    # the nearest ideal embeddings' structure
    _C("collapsed_iso", "bool", "the iso-nearest ideal embedding is collapsed"),
    _C("class_collapsed_iso", "bool",
       "the iso-nearest ideal embedding is class-collapsed (every class a point, not all one)"),
    _C("collapsed_haus", "bool", "the haus-nearest ideal embedding is collapsed"),
    _C("class_collapsed_haus", "bool", "the haus-nearest ideal embedding is class-collapsed"),
    # statement 2: the empirical constant and the thickness
    _C("c", "float", "c(E) = d_haus / d_iso (incumbents); NaN when E is separated"),
    _C("c_lower", "float", "certified lower end of c: d_haus_lower / d_iso_upper"),
    _C("c_upper", "float", "certified upper end of c: d_haus_upper / d_iso_lower (inf if 0)"),
    _C("ratio_fstar", "float", "d_haus_isometry(E, f*_iso) / d_iso(E, F_TS)"),
    _C("theta", "float", "thickness theta(E)"),
    _C("theta_lower", "float", "certified lower bound of theta(E)"),
    _C("theta_upper", "float", "certified upper bound of theta(E)"),
    _C("implied_cn", "float", "c * theta: the least c_n compatible with E in statement 2"),
    _C("slack_s2_half", "float", "c - 1/2 (statement 2's floor, from statement 1)"),
    _C("holds_s2_half", "bool", "c >= 1/2 up to rounding"),
    _C("proven_s2_half", "bool", "c_lower >= 1/2 (the brackets prove it)"),
    # statement 1 on the nearest ideal embeddings
    _C("slack_s1_pointwise", "float",
       "2 d_haus_pointwise(E, f*_haus) - d_iso(E, f*_haus) (exact quantities)"),
    _C("holds_s1_pointwise", "bool", "slack_s1_pointwise >= 0 up to rounding"),
    _C("slack_s1_isometry", "float",
       "2 d_haus_isometry(E, f*_iso) - d_iso(E, f*_iso) (minimax Procrustes incumbent)"),
    _C("holds_s1_isometry", "bool", "slack_s1_isometry >= 0 up to rounding"),
    # statement 3
    _C("slack_s3_lower", "float", "d_iso - L/2"),
    _C("holds_s3_lower", "bool", "L/2 <= d_iso up to rounding"),
    _C("proven_s3_lower", "bool", "L/2 <= d_iso_lower"),
    _C("slack_s3_upper", "float", "L - d_iso"),
    _C("holds_s3_upper", "bool", "d_iso <= L up to rounding"),
    _C("proven_s3_upper", "bool", "d_iso_upper <= L (the brackets prove it)"),
    _C("violated_s3_upper", "bool", "d_iso_lower > L (the brackets prove a violation)"),
    # statement 4 for this label layout (does not depend on the points)
    _C("loss_collapsed", "float", "L(collapsed) (= alpha)"),
    _C("p_separated", "int",
       "classes that must be pairwise alpha apart at collapse: those with >= 2 points, "
       "plus one if some class is a singleton (0 at alpha = 0)"),
    _C("d_iso_collapsed_ts", "float", "d_iso(collapsed, F_TS): incumbent"),
    _C("d_iso_collapsed_ts_lower", "float", "certified lower bound of d_iso(collapsed, F_TS)"),
    _C("d_iso_collapsed_ts_upper", "float", "certified upper bound of d_iso(collapsed, F_TS)"),
    _C("d_star", "float", "D*(P, n, alpha): least diameter of a known layout (d_star)"),
    _C("d_star_lower", "float", "certified lower bound of D*"),
    _C("d_star_upper", "float", "certified upper bound of D* (a known layout)"),
    _C("collapse_loss_ratio", "float",
       "d_iso(collapsed, F_TS) / L(collapsed) (NaN at alpha = 0)"),
    _C("slack_s4_equal", "float", "D* - d_iso(collapsed, F_TS) (0 when statement 4 holds)"),
    _C("holds_s4_equal", "bool", "|D* - d_iso(collapsed, F_TS)| within rounding and the tol"),
    _C("slack_s3_upper_collapsed", "float", "L(collapsed) - d_iso(collapsed, F_TS)"),
    _C("holds_s3_upper_collapsed", "bool", "d_iso(collapsed, F_TS) <= L(collapsed) up to rounding"),
)


@contextlib.contextmanager
def _single_threaded() -> Iterator[None]:
    """The solver lock of :mod:`isoapprox.ideal` for the whole configuration (its
    several solves, and the BLAS limit set here, which is process-wide, are
    not interleaved with another thread's), and numba and BLAS on one thread
    (results must not depend on thread counts or on other threads)."""
    with SOLVER_LOCK, quiet_threads():
        yield


def _canonical_codes(codes: np.ndarray) -> tuple[int, ...]:
    """Class sizes, largest first: statement 4 depends on nothing else."""
    counts = np.bincount(codes)
    counts = counts[counts > 0]
    return tuple(int(c) for c in sorted(counts.tolist(), reverse=True))


@lru_cache(maxsize=4096)
def _collapse_cached(sizes: tuple[int, ...], dim: int, margin: float,
                     settings: IdealSettings) -> tuple[tuple[str, float], ...]:
    codes = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    E0 = np.zeros((codes.shape[0], dim))
    # batch_hard_loss checks dim, margin and that the labels admit a triplet
    L = batch_hard_loss(E0, codes, margin=margin, reduction="max")
    iso = solve_nearest(E0, codes, margin, settings.seed, settings.solver_options("iso"))
    P = len(sizes)
    ds = d_star(P, dim, margin)
    # Proven bracket of d_iso(0, F_TS) from D*: any G in F_TS keeps every point
    # of another class at distance >= alpha from an anchor that has a positive,
    # so one point of each class with >= 2 points, plus one singleton class if
    # any, are pairwise >= alpha apart: d_iso(0, G) = diam(G) >= D*(P', n, alpha)
    # with P' = p_separated.  Collapsing each class onto a point of a
    # D*(P, n, alpha) witness is in F_TS (0 + alpha <= alpha exactly), so
    # d_iso(0, F_TS) <= D*_upper(P, n, alpha).  (Putting every singleton class
    # on one witness point shows d_iso(0, F_TS) = D*(P', n, alpha): below
    # D*(P, n, alpha) when two or more classes are singletons.)
    multi = sum(1 for s in sizes if s >= 2)
    p_eff = multi + (1 if multi < P else 0)
    lower = iso.lower
    if p_eff >= 2 and margin > 0.0:
        lower = max(lower, d_star(p_eff, dim, margin).lower)
    # the better of the solver's incumbent and the D* witness (both feasible)
    value = upper = min(iso.upper, ds.upper)
    lower = min(lower, upper)
    return (("loss_collapsed", L), ("p_separated", p_eff if margin > 0.0 else 0),
            ("d_iso_collapsed_ts", value),
            ("d_iso_collapsed_ts_lower", lower), ("d_iso_collapsed_ts_upper", upper),
            ("d_star", ds.value), ("d_star_lower", ds.lower), ("d_star_upper", ds.upper))


def collapse_quantities(codes: np.ndarray, dim: int, margin: float,
                        settings: IdealSettings | None = None) -> dict[str, float]:
    """Statement 4 for a label layout in ``R^dim`` (cached per class sizes, ``dim``, ``margin``).

    Parameters
    ----------
    codes : ndarray of shape (N,)
        Labels ``0 .. P-1``; only the class sizes matter (the collapsed
        embedding and ``F_TS`` are invariant under permutations of the
        points), so a canonical layout with the classes in blocks, largest
        first, is solved.
    dim : int
        ``n``.
    margin : float
        ``alpha``.
    settings : IdealSettings, optional

    Returns
    -------
    dict
        ``loss_collapsed`` (``L(0) = alpha``), ``p_separated``, ``d_iso_collapsed_ts`` with
        its bracket (the bracket of ``nearest_ideal`` tightened by the
        ``D*`` argument in the source), ``d_star`` with its bracket,
        ``collapse_loss_ratio``, ``slack_s4_equal``, ``holds_s4_equal``,
        ``slack_s3_upper_collapsed``, ``holds_s3_upper_collapsed``.
    """
    settings = settings or IdealSettings()
    sizes = _canonical_codes(np.asarray(codes))
    out = dict(_collapse_cached(sizes, int(dim), float(margin), settings))
    d, d_lo, d_up = out["d_iso_collapsed_ts"], out["d_iso_collapsed_ts_lower"], \
        out["d_iso_collapsed_ts_upper"]
    L = out["loss_collapsed"]
    scale = max(out["d_star_upper"], float(margin), 1e-300)
    rounding = BOUND_RTOL * scale
    out["collapse_loss_ratio"] = d / L if L > 0.0 else math.nan
    out["slack_s4_equal"] = out["d_star"] - d
    # equal when the two values agree to the requested tolerance (both are
    # incumbents of minimisations), or when the brackets force it
    agree = abs(out["d_star"] - d) <= rounding + settings.tol * scale
    forced = (d_up <= out["d_star_lower"] + rounding) and (out["d_star_upper"] <= d_lo + rounding)
    out["holds_s4_equal"] = bool(agree or forced)
    out["slack_s3_upper_collapsed"] = L - d
    out["holds_s3_upper_collapsed"] = bool(L - d >= -rounding)
    return out


def solve_pair(E: np.ndarray, codes: np.ndarray, margin: float, *,
               rng: np.random.Generator | int | None = None,
               settings: IdealSettings | None = None) -> TheoryResult:
    """:func:`isoapprox.evaluate_theory` with the stage's settings, in the solver lock.

    Both nearest ideal embeddings, each improved by the other's solution
    (a multi-start solver can miss its optimum where the other one does not:
    measured, a near-collapsed configuration whose iso solve returned the
    collapsed embedding at ``d_iso = diam(E)`` while the haus solution was at
    a third of that).  ``rng`` seeds the iso starts, then the haus starts.
    """
    settings = settings or IdealSettings()
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    with _single_threaded():
        return evaluate_theory(E, codes, margin=margin, options=settings.theory_options(),
                               rng=gen)


def ideal_quantities(E: np.ndarray, codes: np.ndarray, margin: float, *,
                     rng: np.random.Generator | int | None = None,
                     settings: IdealSettings | None = None) -> dict:
    """Every column of the ``ideal`` stage for one configuration.

    Parameters
    ----------
    E : ndarray of shape (N, n)
    codes : ndarray of shape (N,)
        Integer labels admitting a triplet.
    margin : float
        ``alpha >= 0``.
    rng : Generator or int, optional
        Seeds the starts of both ``nearest_ideal`` calls (iso first).
    settings : IdealSettings, optional

    Returns
    -------
    dict
        One value per :data:`IDEAL_COLUMNS` name.
    """
    settings = settings or IdealSettings()
    r = solve_pair(np.asarray(E, dtype=np.float64), np.asarray(codes, dtype=np.int64), margin,
                   rng=rng, settings=settings)
    with _single_threaded():
        collapse = collapse_quantities(codes, r.dim, margin, settings)
    iso, haus, L = r.iso, r.haus, r.loss_max
    rounding = BOUND_RTOL * max(r.diameter, float(margin))
    separated = r.separated
    slack_half = r.c - 0.5 if math.isfinite(r.c) else math.nan
    s1_pw = r.checks["1_pointwise_haus"].slack if not separated else 0.0
    s1_iso = 2.0 * r.d_haus_fstar - iso.value
    out = {
        "loss": L,
        "d_iso": iso.value, "d_iso_lower": iso.lower, "d_iso_upper": iso.upper,
        "d_iso_rel_gap": iso.rel_gap, "d_iso_certified": iso.certified,
        "d_iso_lower_source": iso.lower_source, "d_iso_kind": iso.kind,
        "d_iso_cross": r.iso_crossed,
        "d_haus": haus.value, "d_haus_lower": haus.lower, "d_haus_upper": haus.upper,
        "d_haus_rel_gap": haus.rel_gap, "d_haus_certified": haus.certified,
        "d_haus_lower_source": haus.lower_source, "d_haus_kind": haus.kind,
        "d_haus_cross": r.haus_crossed,
        "certified": iso.certified and haus.certified,
        "collapsed_iso": iso.kind == "collapsed",
        "class_collapsed_iso": iso.kind == "class-collapsed",
        "collapsed_haus": haus.kind == "collapsed",
        "class_collapsed_haus": haus.kind == "class-collapsed",
        **{k: getattr(r, k) for k in ("c", "c_lower", "c_upper", "ratio_fstar", "theta",
                                      "theta_lower", "theta_upper", "implied_cn")},
        "slack_s2_half": slack_half,
        # c >= 1/2 is a theorem (statement 1 at the haus-nearest point); with
        # E separated both distances vanish and c is undefined
        "holds_s2_half": None if separated else bool(slack_half >= -BOUND_RTOL),
        "proven_s2_half": None if separated else bool(r.c_lower >= 0.5 - BOUND_RTOL),
        "slack_s1_pointwise": s1_pw,
        "holds_s1_pointwise": bool(s1_pw >= -rounding),
        "slack_s1_isometry": s1_iso,
        "holds_s1_isometry": bool(s1_iso >= -rounding),
        "slack_s3_lower": iso.value - L / 2.0,
        "holds_s3_lower": bool(iso.value - L / 2.0 >= -rounding),
        "proven_s3_lower": bool(iso.lower >= L / 2.0 - rounding),
        "slack_s3_upper": L - iso.value,
        "holds_s3_upper": bool(L - iso.value >= -rounding),
        "proven_s3_upper": bool(iso.upper <= L + rounding),
        "violated_s3_upper": bool(iso.lower > L + rounding),
    }
    out.update(collapse)
    return out


@dataclass(frozen=True)
class _IdealFunc:
    """The ``ideal`` stage function with its settings (picklable by value)."""

    settings: IdealSettings = field(default_factory=IdealSettings)

    def __call__(self, E: np.ndarray, codes: np.ndarray, margin: float, prev: Mapping,
                 rng: np.random.Generator) -> dict:
        return ideal_quantities(E, codes, margin, rng=rng, settings=self.settings)


def ideal_stage(name: str = "ideal", *, settings: IdealSettings | None = None,
                version: int = 1) -> Stage:
    """An ``ideal`` stage with other solver settings (not registered).

    The settings enter the stage's signature and so the run fingerprint: a
    resumed run refuses to mix rows computed with different settings.

    Examples
    --------
    >>> st = ideal_stage("ideal_fine", settings=IdealSettings(tol=1e-6, n_starts=24))
    >>> st.kind, dict(st.params)["n_starts"]
    ('config', 24)
    """
    settings = settings or IdealSettings()
    return Stage(
        name, "config", _IdealFunc(settings), IDEAL_COLUMNS, version=version,
        headline=("c", "theta", "d_iso"),
        params=tuple(sorted(asdict(settings).items())),
        description=("nearest ideal embeddings (iso, haus) with brackets, c, theta, "
                     "statements 1-4 (slack, holds, proven)"),
    )


#: distances to F_TS, c, theta and statements 1-4 for every configuration
IDEAL = register_stage(ideal_stage())


def _points(E: np.ndarray, codes: np.ndarray, margin: float, prev: Mapping,
            rng: np.random.Generator) -> dict:
    # repr of a float64 round-trips exactly, and json.dumps uses it
    return {"points": json.dumps(np.asarray(E, dtype=np.float64).tolist()),
            "labels": json.dumps(np.asarray(codes).astype(int).tolist())}


#: the configuration itself, as JSON text (for saving adversarial finds)
POINTS = register_stage(Stage(
    "points", "config", _points,
    (Column("points", "str", "coordinates, JSON list of N lists of n floats (exact)"),
     Column("labels", "str", "labels, JSON list of N ints")),
    description="the configuration's coordinates and labels as JSON text",
))


# ---------------------------------------------------------------------------
# adversarial objectives
# ---------------------------------------------------------------------------


def _c_pair(E: np.ndarray, codes: np.ndarray, margin: float,
            settings: IdealSettings) -> tuple[float, float]:
    r = solve_pair(E, codes, margin, rng=settings.seed, settings=settings)
    return r.c_lower, r.c  # NaN when separated


#: settings of the adversarial objectives: fewer starts than the stage (the
#: search evaluates hundreds of candidates); a missed optimum only makes
#: ``c_lower`` smaller, so the search stays conservative
OBJECTIVE_SETTINGS = IdealSettings(n_starts=8)


def c_lower_objective(X: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
    """Adversarial objective ``c``: the certified lower end of ``c`` per configuration.

    ``X`` (B, N, n), ``codes`` (B, N); NaN (never chosen) for separated
    configurations.
    """
    s = OBJECTIVE_SETTINGS
    return np.array([_c_pair(X[b], codes[b], margin, s)[0] for b in range(X.shape[0])])


def c_incumbent_objective(X: np.ndarray, codes: np.ndarray, margin: float) -> np.ndarray:
    """Adversarial objective ``c_incumbent``: the ratio of the two incumbents."""
    s = OBJECTIVE_SETTINGS
    return np.array([_c_pair(X[b], codes[b], margin, s)[1] for b in range(X.shape[0])])


for _name, _func in (("c", c_lower_objective), ("c_incumbent", c_incumbent_objective)):
    if OBJECTIVES.get(_name) is not _func:
        register_objective(_name, _func, replace=_name in OBJECTIVES)
