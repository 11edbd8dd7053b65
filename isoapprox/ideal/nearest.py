"""The nearest triplet-separated ("ideal") embedding, with a certified bracket.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal.nearest``.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from .._blas import numba_threads, single_threaded_blas
from .._scaling import max_magnitude, pow2_factor, pow2_scaled
from .._typing import ArrayLike, RNGLike
from .._validation import (
    as_labels,
    as_points,
    as_rng,
    check_magnitudes,
    check_margin,
    check_option,
    check_positive,
    require_triplets,
)
from ..bracket import Bracket
from ..exceptions import ConvergenceWarning, SolverError
from ..geometry import class_owners, compute_min_enclosing_ball, merge_height, single_linkage
from ..kernels import ideal as K
from ..losses import compute_batch_hard
from ..metrics import compute_isometric_error, compute_pointwise
from ..packing import (
    DSTAR_N_MAX,
    DSTAR_P_MAX,
    compute_d_star_witness,
    compute_packing_distance_bound,
    compute_packing_radius_bound,
    separated_count,
)
from ..tolerances import FLOOR_RTOL, KIND_RTOL
from ._bnb import BNB_MAX_DIM, BNB_MAX_POINTS, branch_and_bound
from ._bnb import applies as bnb_applies
from ._bounds import (
    METRIC_LP_MAX_POINTS,
    haus_triplet_bound,
    metric_lp_bound,
    three_point_bound,
)
from ._budget import Budget, al_caps, local_starts, resolve_budget, safety_limit
from ._ccp import ccp_solve
from ._clock import solver_clock
from ._local import SLSQP_MAX_ROWS, al_epigraph, slsqp_epigraph
from ._pairs import (
    PairSpec,
    class_ball_bound,
    clipped_layouts,
    pair_packing_bound,
    pair_slack,
    pair_target_start,
    repair_pairs,
)
from ._problem import Problem, Program
from ._relax import gram_sdp_bound, hardest_triplets, shor_sdp_bound
from ._result import IdealResult
from ._session import forget_solver_state, solver_session
from ._starts import (
    class_means,
    noise_scales,
    shrink_family,
    spread_centres,
    target_start,
)
from ._subbatch import (
    SUB_BATCH_OBJECTIVES,
    SUB_BATCH_SEED,
    SUB_BATCH_STARTS,
    dense_codes,
    representative_bound,
    sub_batch_bound,
    support_indices,
)

__all__ = ["OBJECTIVES", "SOLVERS", "embedding_kind", "nearest_ideal", "solve_nearest"]

logger = logging.getLogger(__name__)

#: the distances to the ideal set: ``"iso"`` (``d_iso``) and ``"haus"`` (``d_haus``)
OBJECTIVES = ("iso", "haus")
#: the local solvers of :func:`nearest_ideal` (``"auto"`` picks by problem size)
SOLVERS = ("auto", "scipy", "cvxpy")

#: classes whose diameter is at most this (relative to the instance scale)
#: are snapped to their mean when repairing, and re-solved collapsed
SNAP_RTOL = 1e-6
#: a local solution whose class has diameter at most this (normalised units,
#: the instance has size about 1) is re-solved with the class merged
DETECT_RTOL = 1e-4
#: the convex relaxations are solved for at most this many points
SDP_MAX_POINTS = 12
#: beyond ``SDP_MAX_POINTS``, the Shor relaxation of ``"haus"`` on the hardest
#: triplets (this many per anchor, at the incumbent) bounds batches with
#: ``N + n`` up to ``TRIPLET_SDP_MAX_SIZE`` (the order of its PSD block; about
#: 2 s at 40 on the 2-core machine, measured, and 9 s at 72)
HARD_TRIPLETS_PER_ANCHOR = 8
TRIPLET_SDP_MAX_SIZE = 40
#: below this many points the numba-parallel metric kernels run on one thread
SERIAL_BELOW = 512
#: a more collapsed candidate replaces the incumbent when its value is
#: larger by at most ``PREFER_STRUCTURE * tol * max(value, floor)`` (and a
#: less collapsed one must be better by that much): among points equal to a
#: tenth of the requested tolerance the collapsed or class-collapsed one is
#: returned
PREFER_STRUCTURE = 0.1
#: the CCP polish in "auto" mode is skipped beyond this many rows
CCP_MAX_ROWS = 1500


@contextmanager
def _serial_numba(n_points: int) -> Iterator[None]:
    """Run numba's parallel kernels on one thread for small inputs.

    Thread start-up and barriers cost far more than the work for a few
    points (tens of milliseconds per call on a loaded machine).
    """
    with numba_threads(1 if n_points < SERIAL_BELOW else None):
        yield


def embedding_kind(G: np.ndarray, codes: np.ndarray, scale: float) -> str:
    """``"collapsed"``, ``"class-collapsed"`` or ``"general"`` (the one rule; see
    :data:`isoapprox.tolerances.KIND_RTOL`); validated codes ``0, ..., P-1``."""
    tol = KIND_RTOL * scale
    diams = _class_diameters(G, codes, int(codes.max()) + 1)
    if diams[-1] <= tol:
        return "collapsed"
    if np.all(diams[:-1] <= tol):
        return "class-collapsed"
    return "general"


def _class_diameters(G: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """The diameter of each class of ``G``, then of all of ``G`` (exactly rescaled)."""
    Gs, s = pow2_scaled(G)
    return K.class_diameters(Gs, codes, n_classes) / s


_KIND_RANK = {"collapsed": 2, "class-collapsed": 1, "general": 0}


class _Search:
    """Incumbent, bounds and budget of one call: the state the stages (:data:`STAGES`)
    read and write.  ``done`` holds the names of the stages that ran, so that a
    stage's condition can depend on another's without a field of its own."""

    def __init__(self, E, codes, margin, opts: SolverOptions, deadline, rng,
                 spec: PairSpec | None = None, *, start: np.ndarray | None = None,
                 polish: bool = True, support: bool = True):
        self.E = E
        self.spec = spec
        self.pairs = None if spec is None else spec.bounds
        self.codes = codes
        self.margin = margin
        self.opts = opts
        self.objective = opts.objective
        self.tol = opts.tol
        self.deadline = deadline
        self.rng = rng
        self.max_iter = opts.budget.max_iter
        #: a caller's candidate (a sub-problem: the batch's incumbent); the CCP
        #: polish and the support sub-problem, or not
        self.start, self.polish, self.support = start, polish, support
        #: the local solver of the multistart (and of the points the searches polish)
        self.family = "cvxpy" if opts.solver == "cvxpy" else "scipy"
        #: the index of the current local start (the multistart's hooks read it)
        self.k = -1
        self.done: set[str] = set()
        #: ``max |E|``: ``E`` is scaled with each candidate without reading it again
        self.e_max = max_magnitude(E)
        s = pow2_factor(self.e_max)
        diam = float(K.class_diameters(E * s, codes, int(codes.max()) + 1)[-1] / s)
        self.diam = diam
        self.scale = max(diam, margin if spec is None else spec.bounds.lower)
        self.prob = Problem.build(E, codes, margin, self.objective, diam, self.pairs)
        self.best: np.ndarray | None = None
        self.best_value = math.inf
        self.best_solver = ""
        self.best_kind = "general"
        self.bounds: dict[str, float] = {}
        self.n_iter = 0
        self.n_starts = 0
        self.n_classes = int(codes.max()) + 1
        #: the safety net fired at some check: the result is not reproducible
        self.clock_fired = False

    # -- bookkeeping ---------------------------------------------------
    def time_left(self) -> float:
        """Seconds to the safety net (recorded when it has fired)."""
        left = self.deadline - solver_clock()
        if left <= 0:
            self.clock_fired = True
        return left

    def lower(self) -> tuple[float, str]:
        if not self.bounds:
            return 0.0, ""
        name = max(self.bounds, key=self.bounds.get)
        return max(self.bounds[name], 0.0), name

    def add_bound(self, name: str, value_caller: float) -> None:
        if np.isfinite(value_caller):
            self.bounds[name] = max(float(value_caller), self.bounds.get(name, 0.0))

    def rel_gap(self) -> float:
        lo, _ = self.lower()
        gap = max(self.best_value - lo, 0.0)
        return gap / max(self.best_value, FLOOR_RTOL * self.scale)

    def certified(self) -> bool:
        # a bracket with an infinite or NaN end certifies nothing
        return (self.best is not None and math.isfinite(self.best_value)
                and math.isfinite(self.scale) and self.rel_gap() <= self.tol)

    def open(self) -> bool:
        """Not certified, and the safety net has not fired."""
        return not self.certified() and self.time_left() > 0

    # -- candidates ----------------------------------------------------
    def score(self, G: np.ndarray) -> tuple[float, float]:
        """Objective and worst slack of ``G`` in the caller's units (float64)."""
        E, codes, margin, objective = self.E, self.codes, self.margin, self.objective
        m = max(self.e_max, max_magnitude(G))  # pow2_scale(E, G, ...)
        s = pow2_factor(m) if self.pairs is not None else pow2_factor(m, (margin,))
        Es, Gs = (E * s, G * s) if s != 1.0 else (E, G)
        value = float(K.iso_value(Es, Gs) if objective == "iso" else K.haus_value(Es, Gs)) / s
        if self.pairs is not None:
            return value, pair_slack(G, codes, self.pairs)
        return value, float(np.min(K.anchor_slack(Gs, codes, margin * s))) / s

    def _repair(self, G: np.ndarray) -> tuple[np.ndarray, float, float] | None:
        """A separated ``G`` near ``G`` (whose slack is negative) with its
        :meth:`score`, or None."""
        codes, margin = self.codes, self.margin
        if self.pairs is not None:
            G = repair_pairs(G, codes, self.pairs, self.n_classes, self._snap)
            return None if G is None else (G, *self.score(G))
        # a G equal to one scored already (negative) is not scored again: every
        # round left would repeat it
        last = G
        for _ in range(3):
            if margin > 0.0:
                Gs, s = pow2_scaled(G, np.array([margin]))
                # min over anchors of hn - hp (the slack at margin 0)
                diff = float(np.min(K.anchor_slack(Gs, codes, 0.0))) / s
                if not (diff > 0.0 and margin / diff > 1.0):
                    break
                c = G.mean(axis=0)
                G = c + (G - c) * (margin / diff * (1.0 + 1e-12))
            else:
                G = self._snap(G)
                if np.array_equal(G, last):
                    break
            value, slack = self.score(G)
            if slack >= 0.0:
                return G, value, slack
            last = G
        G = self._snap(G)
        if np.array_equal(G, last):
            return None
        value, slack = self.score(G)
        return (G, value, slack) if slack >= 0.0 else None

    def _snap(self, G: np.ndarray) -> np.ndarray:
        G = G.copy()
        tol = SNAP_RTOL * self.scale
        diams = _class_diameters(G, self.codes, self.n_classes)
        for c in np.flatnonzero(diams[:-1] <= tol):
            idx = np.flatnonzero(self.codes == c)
            if idx.size > 1:
                G[idx] = G[idx].mean(axis=0)
        return G

    def offer(self, G: np.ndarray, solver: str, *, normalised: bool = True) -> bool:
        """Check, repair, re-score and keep ``G`` if it improves the incumbent."""
        if not np.all(np.isfinite(G)):
            return False
        Gc = self.prob.to_caller(G) if normalised else np.array(G, dtype=float)
        value, slack = self.score(Gc)
        if slack < 0.0:
            repaired = self._repair(Gc)
            if repaired is None:
                return False
            Gc, value, slack = repaired
            if solver == "identity":  # E scaled about its centroid
                solver = "construction"
        kind = embedding_kind(Gc, self.codes, self.scale)
        if self.best is None:
            better = True
        elif _KIND_RANK[kind] != _KIND_RANK[self.best_kind]:
            # between points of different kinds, values within a tenth of the
            # requested tolerance count as equal and the more collapsed wins
            slack_v = PREFER_STRUCTURE * self.tol * max(min(value, self.best_value),
                                                        FLOOR_RTOL * self.scale)
            if _KIND_RANK[kind] > _KIND_RANK[self.best_kind]:
                better = value <= self.best_value + slack_v
            else:
                better = value < self.best_value - slack_v
        else:
            better = value < self.best_value
        if better:
            self.best, self.best_value, self.best_solver, self.best_kind = Gc, value, solver, kind
        return better


# ----------------------------------------------------------------------
# phases
# ----------------------------------------------------------------------


def _closed_forms(S: _Search) -> None:
    """Collapsed and class-collapsed constructions; then, for triplets, the ``D*``
    layouts, and for a pair zero set (collapsed when ``l = 0``) its clipped layouts."""
    prob = S.prob
    collapsible = S.margin == 0.0 if S.pairs is None else prob.pairs.lower <= 0.0
    if collapsible:
        if S.objective == "iso":
            S.offer(np.zeros_like(prob.E), "construction")
        else:
            ball = compute_min_enclosing_ball(prob.E)
            S.offer(np.broadcast_to(ball.center, prob.E.shape).copy(), "construction")
    C = class_means(prob)
    if S.objective == "haus" and collapsible:
        for c in range(C.shape[0]):
            C[c] = compute_min_enclosing_ball(prob.E[prob.codes == c]).center
    S.offer(spread_centres(C, prob.sep, S.rng)[prob.codes], "construction")
    if S.pairs is not None:
        for G in clipped_layouts(prob, S.rng):
            S.offer(G, "construction")
        return
    _witness_layout(S)
    _group_layouts(S)


def _witness_layout(S: _Search) -> None:
    """Classes collapsed onto the points of a ``D*(P', n, margin)`` layout.

    The collapse regime's construction (more separated classes than
    ``n + 1``): the ``P'`` classes that must stay ``margin`` apart (every
    class with two or more points, and all singletons on one point) at the
    points of :func:`isoapprox.packing.d_star_witness`, centred on ``E``'s
    centroid.  Its ``d_iso`` is at most ``max(D*_upper, diam E)``.
    """
    n = S.E.shape[1]
    P_sep = separated_count(S.codes)
    if S.margin <= 0.0 or P_sep <= n + 1 or P_sep > DSTAR_P_MAX or n > DSTAR_N_MAX:
        return
    W = compute_d_star_witness(P_sep, n, S.margin)
    counts = np.bincount(S.codes, minlength=S.n_classes)
    slot = np.empty(S.n_classes, dtype=np.int64)
    multi = np.flatnonzero(counts >= 2)
    slot[multi] = np.arange(multi.size)
    slot[counts == 1] = multi.size
    G = W[slot[S.codes]]
    S.offer(G - G.mean(axis=0) + S.E.mean(axis=0), "construction", normalised=False)


def _group_layouts(S: _Search) -> None:
    """Merged classes spread onto ``D*`` layouts, group by group; the other points stay.

    The partial-collapse construction: the classes merged at the merge height
    (:func:`isoapprox.geometry.merge_height`, single linkage, a class in the
    component holding most of its points) are each put on one point of a
    :func:`isoapprox.packing.d_star_witness` layout of that many classes,
    centred on the group's centroid; the rest of ``E`` is kept.  Offered as
    any candidate (repaired if need be, re-scored, kept only if better).
    """
    n = S.E.shape[1]
    if S.margin <= 0.0 or n > DSTAR_N_MAX:
        return
    labels = single_linkage(S.E, merge_height(S.margin, S.diam))
    owner = class_owners(labels, S.codes, S.n_classes)
    G = S.E.copy()
    slot = np.full(S.n_classes, -1, dtype=np.int64)
    moved = False
    for comp in np.unique(owner[owner >= 0]):
        cs = np.flatnonzero(owner == comp)
        if cs.size < 2 or cs.size > DSTAR_P_MAX:
            continue
        W = compute_d_star_witness(int(cs.size), n, S.margin)
        rows = np.flatnonzero(np.isin(S.codes, cs))
        slot[cs] = np.arange(cs.size)
        G[rows] = W[slot[S.codes[rows]]] - W.mean(axis=0) + S.E[rows].mean(axis=0)
        moved = True
    if moved:
        S.offer(G, "construction", normalised=False)


def _lower_cheap_pairs(S: _Search) -> None:
    """``L_max`` (iso) or ``L_max / 2`` (haus), and the packing bound."""
    L = S.spec.loss_max(S.E, S.codes)
    if S.objective == "iso":
        S.add_bound("loss", _safe(L, S.scale))
    else:
        S.add_bound("half_loss", _safe(L / 2.0, S.scale))
    v = pair_packing_bound(S.prob)
    if v > 0.0:
        S.add_bound("packing", _safe(v * S.prob.scale, S.scale))


def _class_balls_pairs(S: _Search) -> None:
    """The class-ball haus bound, capped by the incumbent (after the closed forms)."""
    if S.pairs is None or S.objective != "haus" or S.best is None:
        return
    v = class_ball_bound(S.prob, S.best_value / S.prob.scale)
    if v > 0.0:
        S.add_bound("class_balls", _safe(v * S.prob.scale, S.scale))


def _lower_cheap(S: _Search) -> None:
    if S.pairs is not None:
        _lower_cheap_pairs(S)
        return
    half = compute_batch_hard(S.E, S.codes, S.margin, ("max",))[0] / 2.0
    tp, _ = three_point_bound(S.prob)
    tp = _safe(tp * S.prob.scale, S.scale)
    if S.objective == "iso":
        S.add_bound("half_loss", half)
        S.add_bound("three_point", tp)
    else:
        S.add_bound("iso_half", max(half, tp) / 2.0)
        v = haus_triplet_bound(S.prob, S.bounds["iso_half"] / S.prob.scale)
        if v is not None:
            S.add_bound("haus_triplet", _safe(v * S.prob.scale, S.scale))


def _safe(v: float, scale: float) -> float:
    """A computed bound lowered by a few rounding units of the instance's scale."""
    return max(v - 1e-13 * scale, 0.0)


def _detect_collapse(S: _Search, G: np.ndarray, prog: Program) -> tuple[int, ...]:
    tol = DETECT_RTOL  # normalised units: the instance has size about 1
    diams = K.class_diameters(G, S.codes, S.n_classes)
    counts = np.bincount(S.codes, minlength=S.n_classes)
    return tuple(int(c) for c in range(S.n_classes)
                 if c not in prog.collapsed and counts[c] > 1 and diams[c] <= tol)


def _local_solve(S: _Search, prog: Program, G0: np.ndarray,
                 family: str | None = None) -> np.ndarray:
    """One local solve from ``G0`` by ``family`` (default ``S``'s), counted and offered;
    its point."""
    family = S.family if family is None else family
    S.n_starts += 1
    if family == "cvxpy":
        G, it = ccp_solve(prog, G0, max_iter=S.max_iter, deadline=S.deadline)
    elif prog.kind.size <= SLSQP_MAX_ROWS:
        G, it, _ = slsqp_epigraph(prog, G0, max_iter=S.max_iter)
    else:
        # bounded by its counts (outer rounds, L-BFGS iterations), not the clock
        rounds, inner = al_caps(S.max_iter)
        G, it, _ = al_epigraph(prog, G0, max_outer=rounds, max_inner=inner, deadline=S.deadline)
    S.n_iter += it
    S.offer(G, family)
    return G


def _run_local(S: _Search, prog: Program, G0: np.ndarray) -> None:
    """One local solve from ``G0``, its offer, and a collapsed re-solve if it nearly collapsed."""
    G = _local_solve(S, prog, G0)
    new = _detect_collapse(S, G, prog)
    if new and not S.certified() and S.time_left() > 0:
        _local_solve(S, S.prob.program(tuple(prog.collapsed) + new), G)


def _shrink_scan(S: _Search) -> None:
    """Classes shrunk about their means by ``lam``, centres spread (cheap, any size)."""
    prob = S.prob
    Cs = spread_centres(class_means(prob), prob.sep, S.rng)
    for lam in (0.1, 0.25, 0.5, 0.75, 0.9):
        S.offer(shrink_family(prob, Cs, lam), "construction")


def _start_plan(S: _Search) -> Iterator[tuple[str, tuple[int, ...], np.ndarray]]:
    prob = S.prob
    counts = np.bincount(prob.codes)
    multi = tuple(int(c) for c in np.flatnonzero(counts >= 2))
    C = class_means(prob)
    Cs = spread_centres(C, prob.sep, S.rng)
    yield "E", (), prob.E
    if prob.pairs is not None:
        yield "target", (), pair_target_start(prob)
    elif S.objective == "iso":
        lo, _ = S.lower()
        yield "target", (), target_start(prob, lo / prob.scale)
    yield "class-collapsed", multi, Cs[prob.codes]
    if 1 < len(multi) <= 3:
        for k in range(1, len(multi)):
            for sub in itertools.combinations(multi, k):
                G0 = prob.E.copy()
                for c in sub:
                    G0[prob.codes == c] = C[c]
                yield "partial-collapse", sub, G0
    yield "shrink", (), shrink_family(prob, Cs, 0.5)
    k = 0
    while True:
        sigma = noise_scales[k % len(noise_scales)]
        yield "noise", (), prob.E + sigma * S.rng.normal(size=prob.E.shape)
        k += 1


def _escalate_bounds(S: _Search, *, early: bool = False) -> None:
    """The metric LP, then (a solver with cvxpy, the gap open; ``early``: for
    ``"haus"`` only) the SDP bound."""
    prob = S.prob
    allow_cvxpy = S.opts.solver in ("auto", "cvxpy") and (not early or S.objective == "haus")
    # the metric LP is triplet-only: for the pair family its value is L_max
    # (see ._pairs), which is already a bound
    if (S.objective == "iso" and prob.pairs is None and "metric_lp" not in S.bounds
            and prob.N <= METRIC_LP_MAX_POINTS):
        v = metric_lp_bound(prob, S.best_value / prob.scale)
        S.add_bound("metric_lp", _safe(v * prob.scale, S.scale))
    if S.certified() or not allow_cvxpy or prob.N > SDP_MAX_POINTS or S.time_left() <= 0:
        return
    key = "sdp" if S.objective == "iso" else "shor_sdp"
    if key in S.bounds:
        return
    lo, _ = S.lower()
    if S.objective == "iso":
        v = gram_sdp_bound(prob, lo / prob.scale, S.best_value / prob.scale,
                           deadline=S.deadline)
    else:
        v = shor_sdp_bound(prob, S.best_value / prob.scale,
                           G_hint=prob.from_caller(S.best))
    if v is not None:
        S.add_bound(key, _safe(v * prob.scale, S.scale))


# ----------------------------------------------------------------------


def nearest_ideal(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    objective: str = "iso",
    rng: RNGLike = None,
    tol: float = 1e-6,
    solver: str = "auto",
    effort: str = "default",
    n_starts: int | None = None,
    max_iter: int | None = None,
    time_limit: float | None = None,
    warn_uncertified: bool = True,
    max_subbatches: int | None = None,
    max_nodes: int | None = None,
    max_lps: int | None = None,
) -> IdealResult:
    """Nearest triplet-separated embedding under ``d_iso`` or ``d_haus``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (``N >= 3``).
    y : array_like of shape (N,)
        Class labels; they must admit a triplet.
    margin : float, default 0.0
        ``alpha >= 0``.
    objective : {"iso", "haus"}, default "iso"
        ``"iso"``: ``max_{i<j} |D^E_ij - D^G_ij|``; ``"haus"``:
        ``max_k ||E_k - G_k||``.
    rng : None, int or numpy Generator
        Randomness of the noisy starts.
    tol : float, default 1e-6
        Requested relative gap (see :class:`IdealResult` for the floor).
    solver : {"auto", "scipy", "cvxpy"}, default "auto"
        ``"scipy"``: SLSQP multi-start and LP bounds, no cvxpy.
        ``"cvxpy"``: convex-concave procedure from the same starts and the
        SDP bounds.  ``"auto"``: scipy first, cvxpy only while the gap is
        open.
    effort : {"quick", "default", "thorough"}, default "default"
        The preset of the work budget (:mod:`isoapprox.ideal._budget`):
        every search stops on a count of work (local solves, iterations,
        nodes, linear programmes, sub-problems), never on the clock, so the
        same call gives the same result on a quiet or a busy machine.  The
        options below, when given, override the preset's values (shown for
        ``"default"``; ``"quick"``: 4, 100, 2, 2000, 400; ``"thorough"``:
        96, 500, 32, 200000, 40000).
    n_starts : int, default 24
        Local solves from the start plan (closed forms not counted) for up to
        16 points; beyond, ``ceil(n_starts * 16 / N)``, at least
        ``min(n_starts, 4)``
        (:func:`isoapprox.ideal._budget.local_starts`).
    max_iter : int, default 200
        Iteration cap of each local solve.
    time_limit : float or None, default None
        A safety net, not a budget: seconds on the solver clock (which
        stops while numba compiles or loads kernels) after which the search
        ends at its next check; None means
        :data:`~isoapprox.ideal._budget.SAFETY_TIME_LIMIT` (600 s), far above
        what the budgets cost.  When it fires the result's ``status`` is
        ``"time_limit"`` and ``reproducible`` is False.
    warn_uncertified : bool, default True
        Warn with :class:`~isoapprox.ConvergenceWarning` when the gap is
        still larger than ``tol`` at the end, naming the bracket, the bound
        that limits it (``lower_source``) and why the search stopped
        (``status``).  ``False`` silences it (as does a warnings filter on
        ``ConvergenceWarning``); the result says the same in ``certified``.
    max_subbatches : int, default 8
        When the gap is still open after the search and ``N > 12``, this
        many sub-problems of at most 8 points are solved for their proven
        lower bounds (``"haus"`` only; bound ``"sub_batch"``): a fixed
        amount of work (two local solves and one SDP each, about a tenth
        of a second), independent of ``rng``.  ``0`` skips them, and the
        sub-problem on the incumbent's support too (``max_nodes`` below).
    max_nodes : int, default 20000
        Node budget of the spatial branch-and-bound that runs last, while
        the gap is still open, on instances of at most 10 points in ``R^2``
        (:mod:`isoapprox.ideal._bnb`, ``"iso"``); ``0`` switches every
        branch-and-bound off, the searches of ``max_lps`` too.  A count,
        not a time: the bound it proves is the same on every machine.
        Before it, when the points of the incumbent's active relations are
        a proper subset of the batch, the sub-problem on them is solved
        with the same budgets (bound ``"sub_batch_support"``,
        :func:`isoapprox.ideal._subbatch.support_indices`).
    max_lps : int, default 4000
        LP budget of the branch-and-bound searches by linear programmes
        (one to a few milliseconds an LP): on the line, for up to 20
        points, the order search (:mod:`isoapprox.ideal._line`), which is
        exact and runs right after the first local solve; in the plane the
        angular search (:mod:`isoapprox.ideal._sector`) for ``"haus"``, and
        after the interval search for ``"iso"`` (with half the budget).  The
        budget is for up to five points; for ``N`` points it is scaled by
        ``(5 / N)^2``.  ``0`` switches them off.  Like ``max_nodes`` a count;
        the safety net (``time_limit``) is read only between sixteenths
        of it.

    Returns
    -------
    IdealResult
        The embedding (feasible in float64), its re-scored value, the lower
        bound and the gap.

    Raises
    ------
    InvalidInputError
        NaN/inf or mis-shaped ``E``, bad labels, negative margin, unknown
        ``objective``, ``solver`` or ``effort``, non-positive ``tol`` or
        ``time_limit``, negative ``max_subbatches``, ``max_nodes`` or
        ``max_lps``; ``E`` and ``margin`` whose largest magnitude is neither 0
        nor in ``[2**-900, 2**900]`` (the answer might not be a normal float64
        number; rescale both by a common factor).
    NoTripletError
        If the labels admit no triplet.

    Notes: docs/dev/zero_loss_design.md, ``isoapprox.ideal.nearest.nearest_ideal``.

    Examples
    --------
    >>> E = [[0.0, 0.0], [2.0, 0.0], [1.0, 0.0]]
    >>> res = nearest_ideal(E, [0, 0, 1])
    >>> res.certified, round(res.value, 6), round(res.lower, 6)
    (True, 0.5, 0.5)
    """
    t_start = time.perf_counter()
    X = as_points(E, "E", min_points=3)
    codes, _ = as_labels(y, X.shape[0], "y")
    alpha = check_margin(margin)
    opts = SolverOptions.from_effort(effort, objective=objective, solver=solver, tol=tol,
                                     time_limit=time_limit, warn_uncertified=warn_uncertified,
                                     n_starts=n_starts, max_iter=max_iter,
                                     max_subbatches=max_subbatches, max_nodes=max_nodes,
                                     max_lps=max_lps)
    require_triplets(codes)
    return run_solve(X, codes, alpha, opts, rng, t_start, "nearest_ideal")


def solve_nearest(X: np.ndarray, codes: np.ndarray, margin: float, rng: RNGLike,
                  options: SolverOptions) -> IdealResult:
    """:func:`nearest_ideal` without its checks, for callers that validated everything.

    ``X`` float64 (N, n) with ``N >= 3``, ``codes`` dense int64 admitting a
    triplet, ``margin >= 0``; ``options`` (:class:`SolverOptions`, checked
    where it was built) says the objective, the solver, the tolerance, the
    work budget, the safety net and whether to warn when uncertified.
    """
    return run_solve(X, codes, margin, options, rng, time.perf_counter(), "nearest_ideal")


@dataclass(frozen=True)
class SolverOptions:
    """The options of one nearest-ideal solve, checked once where they are built.

    What :func:`nearest_ideal` and :func:`~isoapprox.nearest_zero_loss` take as
    keywords, in one object that the theory (:meth:`isoapprox.TheoryOptions.solver_options`),
    the batch's ``ideal`` stage and the monitor build once and hand to
    :func:`solve_nearest`.  :meth:`from_effort` builds it from an effort and
    overrides of its counts, as the public functions' keywords spell them.

    Attributes
    ----------
    objective : {"iso", "haus"}, default "iso"
        The distance to minimise (:func:`nearest_ideal`'s ``objective``).
    solver : {"auto", "scipy", "cvxpy"}, default "auto"
    tol : float, default 1e-6
        Requested relative gap (> 0).
    budget : Budget, default ``resolve_budget("default")``
        The work budget (:func:`isoapprox.ideal._budget.resolve_budget`).
    time_limit : float or None, default None
        The safety net's seconds (> 0) on the solver clock; None is
        :data:`~isoapprox.ideal._budget.SAFETY_TIME_LIMIT`, stored resolved.
    warn_uncertified : bool, default True
        Warn with :class:`~isoapprox.ConvergenceWarning` when the result is
        not certified.

    Raises
    ------
    InvalidInputError
        Unknown ``objective`` or ``solver``, non-positive ``tol`` or
        ``time_limit``.
    TypeError
        ``budget`` not a :class:`~isoapprox.ideal.Budget`, ``warn_uncertified``
        not a bool.

    Examples
    --------
    >>> opts = SolverOptions.from_effort("quick", objective="haus", n_starts=2)
    >>> opts.objective, opts.budget.n_starts, opts.time_limit
    ('haus', 2, 600.0)
    """

    objective: str = "iso"
    solver: str = "auto"
    tol: float = 1e-6
    budget: Budget = field(default_factory=resolve_budget)
    #: the safety net's seconds (resolved: never None)
    time_limit: float | None = None
    warn_uncertified: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise TypeError(f"`budget` must be a Budget (isoapprox.ideal.resolve_budget); "
                            f"got {type(self.budget).__name__}: {self.budget!r}")
        if not isinstance(self.warn_uncertified, (bool, np.bool_)):
            raise TypeError(f"`warn_uncertified` must be a bool; got {self.warn_uncertified!r}")
        set_ = object.__setattr__
        set_(self, "objective", check_option(self.objective, "objective", OBJECTIVES))
        set_(self, "solver", check_option(self.solver, "solver", SOLVERS))
        set_(self, "tol", check_positive(self.tol, "tol"))
        set_(self, "time_limit", safety_limit(self.time_limit))
        set_(self, "warn_uncertified", bool(self.warn_uncertified))

    @classmethod
    def from_effort(cls, effort: str = "default", *, objective: str = "iso",
                    solver: str = "auto", tol: float = 1e-6, time_limit: float | None = None,
                    warn_uncertified: bool = True, **counts: int | None) -> SolverOptions:
        """The options with the budget of ``effort`` and ``counts`` overriding its fields.

        Parameters
        ----------
        effort : {"quick", "default", "thorough"}, default "default"
        objective, solver, tol, time_limit, warn_uncertified
            As the class's fields.
        **counts : int or None
            Overrides of the budget's counts (``n_starts``, ``max_iter``,
            ``max_subbatches``, ``max_nodes``, ``max_lps``; None keeps the
            effort's), as :func:`isoapprox.ideal._budget.resolve_budget` takes them.

        Returns
        -------
        SolverOptions
        """
        return cls(objective, solver, tol, resolve_budget(effort, **counts), time_limit,
                   warn_uncertified)


def run_solve(X, codes, alpha: float, opts: SolverOptions, rng, t_start: float, caller: str,
              spec: PairSpec | None = None) -> IdealResult:
    """Search, bound and re-score under the solver session; warn if asked and uncertified.

    Inputs of extreme magnitude are rejected first (:func:`check_magnitudes`):
    the answer must be representable in the caller's units.
    """
    params = {"margin": alpha} if spec is None else spec.parameters()
    check_magnitudes({"E": X, **params}, what=caller)
    gen = as_rng(rng)
    # one BLAS thread for SLSQP's dense subproblems, whatever the size: with
    # more, its last bits depend on the machine's number of cores (entering the
    # limit costs about 10 us)
    # the safety net is on the solver clock, which stops while numba compiles
    # and while a solver module is first imported
    deadline = solver_clock() + opts.time_limit
    with solver_session(), _serial_numba(X.shape[0]), single_threaded_blas():
        res = _finish(_solve(X, codes, alpha, opts, gen, deadline, spec), t_start, opts.budget)
    if opts.warn_uncertified and not res.certified:
        warnings.warn(
            f"{caller}: not certified: the bracket [{res.lower:.6g}, {res.upper:.6g}] has "
            f"relative gap {res.rel_gap:.2e} > tol = {opts.tol:g}; its lower end is the "
            f"{res.lower_source or 'trivial (0)'} bound, its upper end a {res.solver!r} "
            f"solution; the search stopped with status {res.status!r} "
            f"(pass warn_uncertified=False to silence this)",
            ConvergenceWarning, stacklevel=3,
        )
    return res


# ----------------------------------------------------------------------
# the certificate search: its stages, in order, as data
# ----------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One step of the search: ``run(S)`` when ``when(S)`` holds; then, when
    ``check``, stop if the bracket is certified (whether or not it ran).

    ``run`` returns None to go on, or the status to stop with.
    """

    name: str
    run: Callable[[_Search], str | None]
    when: Callable[[_Search], bool] = lambda S: True
    check: bool = False


def _run_stages(stages: tuple[Stage, ...], S: _Search) -> str | None:
    """Run ``stages`` in order; the status of the one that stopped the search, or None."""
    for stage in stages:
        if stage.when(S):
            S.done.add(stage.name)
            status = stage.run(S)
            if status is not None:
                return status
        if stage.check and S.certified():
            return "certified"
    return None


def _identity(S: _Search) -> str | None:
    """``E`` itself: when it is separated (value 0) the search is over."""
    if S.offer(S.E.copy(), "identity", normalised=False) and S.best_value == 0.0:
        S.add_bound("separated" if S.spec is None else "zero_loss", 0.0)
        return "certified"


def _caller_start(S: _Search) -> None:
    """A caller's candidate (a sub-problem: the batch's incumbent)."""
    S.offer(np.array(S.start, dtype=float), "scipy", normalised=False)


def _multistart(S: _Search) -> str | None:
    """Local solves from :func:`_start_plan`, each followed by :data:`START_HOOKS`."""
    plan = _start_plan(S)
    for k in range(local_starts(S.opts.budget.n_starts, S.prob.N)):
        if S.time_left() <= 0:
            return None
        _, collapsed, G0 = next(plan)
        _run_local(S, S.prob.program(collapsed), G0)
        if S.certified():
            return "certified"
        S.k = k
        status = _run_stages(START_HOOKS, S)
        if status is not None:
            return status
    return None


def _polish(S: _Search) -> None:
    """The CCP from the incumbent, when affordable."""
    prog = S.prob.program(())
    if prog.kind.size <= CCP_MAX_ROWS:
        _local_solve(S, prog, S.prob.from_caller(S.best), "cvxpy")


def _branch_and_bound(S: _Search) -> None:
    """The proven bound of :func:`._bnb.branch_and_bound` (points it finds are
    polished by the local solver and offered to the incumbent)."""
    prog = S.prob.program(())
    b = S.opts.budget
    v = branch_and_bound(S, S.E, b.max_nodes, b.max_lps, local=lambda G: _run_local(S, prog, G))
    if v is not None:
        S.add_bound("branch_and_bound", _safe(v * S.prob.scale, S.scale))


def _sub_batches(S: _Search) -> None:
    """Bounds of sub-batches (:mod:`._subbatch`), after the search: they change no incumbent.

    The representatives bound always; for more than ``SDP_MAX_POINTS`` points
    and a solver with the SDPs (not ``"scipy"``), ``count`` sub-problems,
    each searched with ``SUB_BATCH_STARTS`` local solves, seed
    ``SUB_BATCH_SEED`` and no deadline (no clock decides the bound), and
    bounded by the exact relaxations; without the CCP polish, which comes
    after the relaxations and so cannot raise the bound, and without the
    branch-and-bound (whose cost the measured sub-batch budget does not include).

    Then, for ``"haus"`` beyond ``SDP_MAX_POINTS`` points, the Shor
    relaxation on the ``HARD_TRIPLETS_PER_ANCHOR`` hardest triplets of each
    anchor at the incumbent (dropping triplets relaxes the problem, so its
    proven bound is the batch's), when ``N + n <= TRIPLET_SDP_MAX_SIZE`` and
    the incumbent's classes are not collapsed: ``"shor_sdp_triplets"``
    (:func:`_hardest_triplets_bound`).
    """
    opts = S.opts
    count, solver = opts.budget.max_subbatches, opts.solver
    rep = representative_bound(S.E, S.codes, S.margin, S.objective)
    if rep.value > 0.0:
        S.add_bound("sub_batch_packing", rep.value)
        logger.debug("representatives bound %.12g from points %s", rep.value,
                     rep.indices.tolist())
    if (count > 0 and solver != "scipy" and S.objective in SUB_BATCH_OBJECTIVES
            and S.E.shape[0] > SDP_MAX_POINTS):
        def lower(X, c):
            return _sub_lower(S, X, c, math.inf, {"max_subbatches": 0, "max_nodes": 0})

        sub = sub_batch_bound(S.E, S.codes, S.margin, lower, count=count)
        if sub.value > 0.0:
            S.add_bound("sub_batch", sub.value)
        logger.debug("sub-batch bound %.12g from points %s", sub.value, sub.indices.tolist())
    # not when the incumbent has its classes collapsed: that optimum is decided
    # by how the classes pack in R^n, which the relaxation (of any dimension)
    # cannot see (measured: it proved alpha / 2 on the collapsed benchmark batches)
    if (count > 0 and solver != "scipy" and S.objective == "haus" and S.prob.pairs is None
            and S.E.shape[0] > SDP_MAX_POINTS and S.best_kind == "general"
            and not S.certified()):
        _hardest_triplets_bound(S)


def _hardest_triplets_bound(S: _Search) -> None:
    """``"shor_sdp_triplets"``: the Shor relaxation on the hardest triplets at the
    incumbent, when ``N + n <= TRIPLET_SDP_MAX_SIZE``."""
    prob = S.prob
    if prob.N + prob.n > TRIPLET_SDP_MAX_SIZE:
        return
    G = prob.from_caller(S.best)
    trip = hardest_triplets(prob, G, HARD_TRIPLETS_PER_ANCHOR)
    if trip.shape[0] == 0:
        return
    v = shor_sdp_bound(prob, S.best_value / prob.scale, G_hint=G, trip=trip)
    if v is not None and v > 0.0:
        S.add_bound("shor_sdp_triplets", _safe(v * prob.scale, S.scale))
    logger.debug("Shor bound on %d hardest triplets: %s", trip.shape[0], v)


def _support_bound(S: _Search) -> None:
    """The proven bound of the sub-problem on the incumbent's support
    (:func:`._subbatch.support_indices`), solved like the batch (its
    branch-and-bound included) from the incumbent's restriction, when the
    support is a proper subset small enough for the branch-and-bound.

    Its search has ``SUB_BATCH_STARTS`` local solves from seed
    ``SUB_BATCH_SEED``, the budgets ``max_nodes`` and ``max_lps`` and the
    caller's deadline; the bound it proves is a bound of the batch by
    restriction (:mod:`._subbatch`).
    """
    N, n = S.E.shape
    idx = support_indices(S.E, S.codes, S.margin, S.objective, S.best, S.scale)
    if not 3 <= idx.size < N or idx.size > BNB_MAX_POINTS or n > BNB_MAX_DIM:
        return
    codes = dense_codes(S.codes[idx])
    counts = np.bincount(codes)
    if counts.size < 2 or counts.max() < 2:
        return  # no triplet in the support
    value = _sub_lower(S, S.E[idx], codes, S.deadline, {"max_subbatches": 0},
                       start=S.best[idx], support=False)
    logger.debug("support bound %.12g from points %s", value, idx.tolist())
    if value > 0.0:
        S.add_bound("sub_batch_support", value)


def _sub_lower(S: _Search, X: np.ndarray, codes: np.ndarray, deadline: float,
               budget: dict[str, int], **flags) -> float:
    """The proven lower bound of the sub-problem ``(X, codes)`` of ``S`` (a bound of
    the batch by restriction, :mod:`._subbatch`): its own search with ``S``'s
    options but ``SUB_BATCH_STARTS`` local solves (and ``budget``'s counts), seed
    ``SUB_BATCH_SEED``, without the CCP polish (``flags``: more of :class:`_Search`'s)."""
    forget_solver_state()  # the sub-problem's bound is a function of it alone
    opts = replace(S.opts, budget=replace(S.opts.budget, n_starts=SUB_BATCH_STARTS, **budget))
    T, _ = _solve(X, codes, S.margin, opts, as_rng(SUB_BATCH_SEED), deadline, polish=False,
                  **flags)
    return T.lower()[0]


def _packing_bound(S: _Search) -> None:
    """The packing bound (the only one that sees the dimension), halved for
    ``"haus"`` (statement 1), and for ``"haus"`` its radius form
    (:func:`isoapprox.packing.packing_radius_bound` with the least ball of
    ``E``); applied after the search so that it changes no incumbent."""
    v = compute_packing_distance_bound(S.codes, S.E.shape[1], S.margin, S.diam)
    if v > 0.0:
        S.add_bound("packing" if S.objective == "iso" else "packing_half",
                    v if S.objective == "iso" else v / 2.0)
    if S.objective == "haus" and S.margin > 0.0:
        # the ball's radius is re-scored from its centre: an upper bound of R(E)
        r = compute_packing_radius_bound(S.codes, S.E.shape[1], S.margin,
                                 compute_min_enclosing_ball(S.E).radius)
        if r > 0.0:
            S.add_bound("packing_radius", r)


#: after each local solve of the multistart (``S.k``: its index): on the line
#: the order search, exact and cheap, after the first (it makes the rest of
#: the multistart unnecessary); the haus SDP after the third
START_HOOKS: tuple[Stage, ...] = (
    Stage("line_order", _branch_and_bound, check=True,
          when=lambda S: (S.opts.budget.max_nodes > 0 and S.prob.n == 1
                          and bnb_applies(S.prob) and "line_order" not in S.done)),
    Stage("escalate_early", lambda S: _escalate_bounds(S, early=True),
          when=lambda S: S.k == 2 and "escalate_early" not in S.done, check=True),
)

#: the search, in order (docs/dev/zero_loss_design.md, "The search as data").  A
#: new method is a function of the state (in its own module) and one entry here
STAGES: tuple[Stage, ...] = (
    Stage("identity", _identity),
    Stage("caller_start", _caller_start, when=lambda S: S.start is not None),
    Stage("lower_cheap", _lower_cheap),
    Stage("closed_forms", _closed_forms),
    Stage("shrink_scan", _shrink_scan),
    Stage("class_balls", _class_balls_pairs, check=True),
    Stage("multistart", _multistart),
    Stage("escalate", _escalate_bounds, when=lambda S: S.time_left() > 0),
    Stage("polish", _polish, when=lambda S: S.polish and S.opts.solver == "auto" and S.open()),
    # bounds that change no incumbent, after the search; the packing bound (also
    # applied in _finish, on every path) before the branch-and-bound, so that it
    # does not prove what the packing bound already gives
    Stage("sub_batches", _sub_batches, when=lambda S: S.spec is None and not S.certified()),
    Stage("packing", _packing_bound, when=lambda S: "sub_batches" in S.done),
    Stage("support", _support_bound,
          when=lambda S: (S.support and S.spec is None and S.opts.budget.max_nodes > 0
                          and S.opts.budget.max_subbatches > 0 and S.open())),
    # last: spatial branch-and-bound on small instances (for pair losses on the
    # line only)
    Stage("branch_and_bound", _branch_and_bound,
          when=lambda S: S.open() and "line_order" not in S.done),
)


def _solve(X: np.ndarray, codes: np.ndarray, alpha: float, opts: SolverOptions, gen,
           deadline: float, spec: PairSpec | None = None, **flags) -> tuple[_Search, str]:
    """The search (:data:`STAGES`) on checked input; the state and the status
    (``flags``: ``start``, ``polish``, ``support`` of :class:`_Search`)."""
    S = _Search(X, codes, alpha, opts, deadline, gen, spec, **flags)
    status = _run_stages(STAGES, S)
    if status is not None or S.certified():
        return S, status or "certified"
    return S, "time_limit" if S.time_left() <= 0 else "exhausted"


def _finish(state, t_start: float, budget: Budget) -> IdealResult:
    S, status = state
    G = S.best
    # the clock is monotone: if the safety net fired inside any solve, it shows here
    S.time_left()
    with _serial_numba(G.shape[0]):
        value = (compute_isometric_error(S.E, G) if S.objective == "iso"
                 else compute_pointwise(S.E, G))
        slack = S.score(G)[1]
    if not slack >= 0.0:  # pragma: no cover - every offer is checked
        what = "triplet-separated" if S.pairs is None else "in the zero-loss set"
        raise SolverError(f"internal error: the incumbent is not {what}",
                          solver=S.best_solver, status="infeasible")
    S.best_value = value
    if S.spec is None:
        _packing_bound(S)
    lower, source = S.lower()
    logger.debug("nearest_ideal(%s): value %.12g, bounds %s, %d local solves, %s",
                 S.objective, value, S.bounds, S.n_starts, status)
    # a bracket with an infinite or NaN end certifies nothing (the entry points
    # reject the magnitudes that could overflow; Bracket.relative keeps the rule)
    bracket = Bracket.relative(float(value), float(lower), tol=S.tol,
                               floor=FLOOR_RTOL * S.scale, lower_source=source,
                               upper_source=S.best_solver)
    if bracket.certified:
        status = "certified"
    elif status == "certified":
        status = "exhausted"
    return IdealResult(
        embedding=G,
        bracket=bracket,
        tol=float(S.tol),
        objective=S.objective,
        margin=float(S.margin),
        solver=S.best_solver,
        status=status,
        n_iter=int(S.n_iter),
        n_starts=int(S.n_starts),
        seconds=float(time.perf_counter() - t_start),
        slack=float(slack),
        kind=embedding_kind(G, S.codes, S.scale),
        bounds=dict(S.bounds),
        loss="triplet" if S.spec is None else S.spec.loss,
        thresholds={"margin": float(S.margin)} if S.spec is None else S.spec.thresholds(),
        budget=budget.to_dict(),
        reproducible=not S.clock_fired,
    )
