"""The loss against the distance to the ideal (triplet-separated) set, for the diagnosis.

:func:`diagnose_theory` evaluates one batch (above ``max_points`` points, on
random ``P x K`` batches drawn as training draws them: :func:`theory_subsample`),
suggests a batch layout (:func:`suggest_layout`) and words the findings;
:func:`add_theory` merges it into a :func:`~isoapprox.diagnose` report.  What
it certifies is ``certify`` (:data:`CERTIFY`): by default only what a verdict
reads (the ``d_iso`` bracket against the loss, ``D*`` and the layout), with
``"all"`` every quantity of :func:`isoapprox.evaluate_theory`.  Every search
stops on counts of work (the ``effort`` of :class:`TheoryOptions`), and the
section records them (:attr:`TheoryDiagnosis.budget`).  Notation, what is
reported and the cost: see docs/dev/diagnostics_design.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from .._typing import ArrayLike, IntArray
from .._validation import (
    as_labels,
    as_points,
    as_rng,
    check_instance,
    check_int,
    check_margin,
    check_option,
    check_positive,
    class_counts,
    require_triplets,
)
from ..bracket import bracket_words
from ..exceptions import InvalidInputError
from ..packing import (
    DSTAR_P_MAX,
    LOWER_BOUND_CURVES,
    d_star,
    lower_bound_curve,
    separated_class_count,
)
from ..sampling import class_members, pk_draw
from ..theory import (
    CERTIFY,
    FAITHFUL_RATIO,
    HAUS_MAX_POINTS,
    THEORY_MAX_POINTS,
    CheckResult,
    ConstantResult,
    TheoryOptions,
    TheoryResult,
    constant_result,
    evaluate_core,
    solver_dict,
)
from ..tolerances import VERDICT_RTOL

__all__ = [
    "CERTIFY",
    "FAITHFUL_RATIO",
    "HAUS_MAX_POINTS",
    "SUGGEST_MAX_CLASSES",
    "SUGGEST_MAX_P",
    "THEORY_MAX_POINTS",
    "VIEW_MAX_POINTS",
    "LayoutSuggestion",
    "TheoryDiagnosis",
    "TheoryOptions",
    "add_theory",
    "bracket_text",
    "diagnose_theory",
    "embedding_view",
    "separated_class_count",
    "layout_sentence",
    "suggest_layout",
    "theory_batch_summary",
    "theory_budget",
    "theory_numbers",
    "theory_subsample",
]

#: the search for the least number of classes proven beyond the ratio (and, for a
#: custom curve, for the largest within it) stops here
SUGGEST_MAX_CLASSES = 10**6
#: :func:`suggest_layout` answers up to this many classes (its least-dimension
#: search visits the dimensions one by one: 0.3 s at 10**9 classes, minutes at
#: 10**18) and refuses more before any work
SUGGEST_MAX_P = 10**9
#: the 2-D view shows at most this many points (a seeded subsample)
VIEW_MAX_POINTS = 2000
#: points per class preferred by the subsample (as in P x K batches)
_SUBSAMPLE_PER_CLASS = 4
#: what ``certify="verdict"`` leaves out (recorded in the section's budget)
_SKIPPED = ("minimax Procrustes isometry (d_haus upper end: f* unmoved)",
            "thickness theta", "certified enclosing ball (d_haus lower end: a loose ball)")


def _ratio(num: float, den: float) -> float:
    if den == 0.0:
        return math.nan if num == 0.0 else math.inf
    return num / den


# --- layout suggestion ------------------------------------------------------------


@dataclass(frozen=True)
class LayoutSuggestion:
    """Classes per batch and embedding dimension that keep ``D* <= ratio * margin``.

    The criterion (ours, see docs/dev/diagnostics_design.md): a batch of ``P`` classes in
    ``R^n`` keeps the loss a proxy of the distance to the ideal set within a
    factor ``ratio`` at collapse iff ``D*(P, n, alpha) <= ratio * alpha``.
    With the default ``curve="packing"`` both ends of
    :func:`isoapprox.packing.d_star` decide, so every number is proven:

    - ``max_classes``: the largest ``P`` of the table (``P <= 64``) whose
      upper end is within the ratio (a layout with that many classes
      exists); ``max_classes_capped`` when that is the table's last row
      (``max_classes_beyond``: 65 is also proven, by a construction);
    - ``classes_impossible_from``: the least ``P`` whose lower end exceeds
      the ratio (proven impossible from there on; None if not below
      ``SUGGEST_MAX_CLASSES``);
    - ``min_dim``: the least ``n`` whose upper end for ``n_classes`` is within
      the ratio; ``dims_impossible_below``: below this ``n`` the lower end
      proves it impossible.

    ``curve_value`` and ``curve_upper`` bracket ``D*(n_classes, dim,
    margin)``; ``within_ratio`` means proven within (upper end),
    ``beyond_ratio`` proven beyond (lower end).  ``exact`` is ``P <= n + 1``
    (``D* = alpha``), ``max_classes_exact = n + 1``, ``min_dim_exact = max(1,
    P - 1)``.  A callable or ``"simplex"`` ``curve`` is one curve for both ends
    (an estimate, searched up to ``SUGGEST_MAX_CLASSES``).  ``applicable`` is
    False at ``alpha = 0`` (every layout qualifies).  The batch sizes are the
    class counts times ``samples_per_class`` (None without it or when capped).
    """

    n_classes: int
    dim: int
    margin: float
    samples_per_class: int | None
    ratio: float
    curve: str
    applicable: bool
    curve_value: float
    curve_upper: float
    collapse_ratio_lower: float
    collapse_ratio_upper: float
    within_ratio: bool
    beyond_ratio: bool
    exact: bool
    max_classes_exact: int
    min_dim_exact: int
    max_classes: int
    max_classes_capped: bool
    max_classes_beyond: bool
    classes_impossible_from: int | None
    min_dim: int
    dims_impossible_below: int
    batch_size: int | None
    batch_size_exact: int | None

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-ready)."""
        return asdict(self)


def _largest(f: Callable[[int], float], bound: float, lo: int, cap: int) -> tuple[int, bool]:
    """Largest ``P`` in ``[lo, cap]`` with ``f(P) <= bound`` (``f`` nondecreasing,
    ``f(lo) <= bound``), by doubling and bisection; and whether ``cap`` qualifies."""
    hi = min(2 * lo, cap)
    while f(hi) <= bound:
        lo = hi
        if hi >= cap:
            return cap, True
        hi = min(2 * hi, cap)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if f(mid) <= bound:
            lo = mid
        else:
            hi = mid
    return lo, False


def suggest_layout(
    n_classes: int,
    dim: int,
    *,
    margin: float,
    samples_per_class: int | None = None,
    ratio: float = FAITHFUL_RATIO,
    curve: str | Callable[[int, int, float], float] = "packing",
) -> LayoutSuggestion:
    """Largest classes per batch and least dimension keeping ``D* <= ratio * margin``.

    Parameters
    ----------
    n_classes, dim : int
        ``P`` (use :func:`separated_class_count`) and ``n``, both ``>= 1``.
    margin : float
        ``alpha >= 0``.
    samples_per_class : int, optional
        ``K``: turns a number of classes into a batch size ``P K``.
    ratio : float, default ``FAITHFUL_RATIO`` (2)
        ``rho >= 1``.
    curve : {"packing", "simplex"} or callable, default "packing"
        ``"packing"``: the proven bracket of :func:`isoapprox.packing.d_star`
        (its table for ``P <= 64``).  ``"simplex"`` (its upper end) or a
        callable ``f(P, n, margin)``, nondecreasing in ``P``: one curve.

    Returns
    -------
    LayoutSuggestion

    Raises
    ------
    InvalidInputError
        On a bad argument or an unknown curve, and for more than
        :data:`SUGGEST_MAX_P` (``10**9``) classes (:func:`isoapprox.packing.d_star`
        brackets ``D*`` for any ``P``).

    Examples
    --------
    >>> s = suggest_layout(16, 2, margin=0.2, samples_per_class=4)
    >>> s.max_classes, s.classes_impossible_from, s.batch_size, s.max_classes_exact
    (7, 8, 28, 3)
    >>> s.dims_impossible_below, s.min_dim_exact
    (3, 15)
    """
    P = check_int(n_classes, "n_classes", minimum=1, maximum=SUGGEST_MAX_P)
    n = check_int(dim, "dim", minimum=1)
    alpha = check_margin(margin)
    rho = check_positive(ratio, "ratio")
    if rho < 1.0:
        raise InvalidInputError(f"`ratio` must be >= 1 (D* >= margin always); got {rho!r}")
    K = None if samples_per_class is None else check_int(samples_per_class,
                                                         "samples_per_class", minimum=1)
    if callable(curve):
        name = getattr(curve, "__name__", "custom")
    else:
        name = check_option(curve, "curve", LOWER_BOUND_CURVES)

    if name == "packing" and not callable(curve):
        def lo_f(p: int, d: int) -> float:
            return d_star(p, d, alpha).lower

        def up_f(p: int, d: int) -> float:
            return d_star(p, d, alpha).upper

        cap = DSTAR_P_MAX
    else:
        def lo_f(p: int, d: int) -> float:
            return float(lower_bound_curve(p, d, margin=alpha, curve=curve))

        up_f = lo_f
        cap = SUGGEST_MAX_CLASSES

    if alpha == 0.0:
        return LayoutSuggestion(
            P, n, alpha, K, rho, name, False, 0.0, 0.0, math.nan, math.nan, True, False,
            P <= n + 1, n + 1, max(1, P - 1), cap, True, True, None, 1, 1, None,
            None if K is None else (n + 1) * K,
        )
    bound = rho * alpha
    value, upper = lo_f(P, n), up_f(P, n)
    # largest P proven within the ratio: D*(n + 1) = alpha <= bound
    max_classes, capped = _largest(lambda p: up_f(p, n), bound, n + 1, max(cap, n + 1))
    beyond = capped and up_f(max_classes + 1, n) <= bound
    # least P proven beyond it
    last, never = _largest(lambda p: lo_f(p, n), bound, n + 1, SUGGEST_MAX_CLASSES)
    impossible_from = None if never else last + 1
    top = max(1, P - 1)  # at n = P - 1 the simplex gives D* = alpha
    min_dim = next((d for d in range(1, top) if up_f(P, d) <= bound), top)
    dims_impossible_below = next((d for d in range(1, top) if lo_f(P, d) <= bound), top)
    return LayoutSuggestion(
        n_classes=P, dim=n, margin=alpha, samples_per_class=K, ratio=rho, curve=name,
        applicable=True, curve_value=value, curve_upper=upper,
        collapse_ratio_lower=value / alpha, collapse_ratio_upper=upper / alpha,
        within_ratio=upper <= bound, beyond_ratio=value > bound, exact=P <= n + 1,
        max_classes_exact=n + 1, min_dim_exact=top, max_classes=max_classes,
        max_classes_capped=capped, max_classes_beyond=bool(beyond),
        classes_impossible_from=impossible_from, min_dim=min_dim,
        dims_impossible_below=dims_impossible_below,
        batch_size=None if (K is None or capped) else max_classes * K,
        batch_size_exact=None if K is None else (n + 1) * K,
    )


# --- the result -------------------------------------------------------------------


@dataclass(frozen=True)
class TheoryDiagnosis:
    """The theory section's numbers for one batch.

    ``theory`` is the :func:`isoapprox.evaluate_theory` record of the
    evaluated points (its attributes read through this object too);
    ``evaluated`` is ``"all"`` or ``"subsample"``: the ``batch``-th random
    ``P x K`` batch of :func:`theory_subsample` (rows ``indices`` of the
    ``n_input_points``, labels ``labels``); ``samples_per_class`` the median
    class size; ``findings`` the sentences the verdict quotes.  Derived:
    ``loss_lower_check`` / ``loss_upper_check`` (statement 3),
    ``loss_faithful``, ``proxy_ratio`` (``d_iso / L``) and ``collapse_ratio``
    (``D* / alpha``) with their brackets, ``constant`` and ``ideal_solver``.
    ``certify`` is what was certified (:data:`CERTIFY`; with ``"verdict"`` the
    thickness is NaN and the ``d_haus`` bracket is not tightened) and
    ``budget`` the work it ran under (:func:`theory_budget`).
    """

    theory: TheoryResult
    samples_per_class: int
    evaluated: str
    n_input_points: int
    indices: IntArray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    suggestion: LayoutSuggestion | None = None
    findings: tuple[str, ...] = ()
    seconds: float = 0.0
    batch: int = 0
    certify: str = "all"
    budget: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "theory":
            raise AttributeError(name)
        return getattr(self.theory, name)

    @property
    def loss_lower_check(self) -> CheckResult:
        return self.theory.checks["3_lower"]

    @property
    def loss_upper_check(self) -> CheckResult:
        return self.theory.checks["3_upper"]

    @property
    def loss_faithful(self) -> bool | None:
        return self.loss_upper_check.holds

    def _per_loss(self, v: float) -> float:
        return _ratio(v, self.theory.loss_max) if self.theory.loss_max > 0 else math.nan

    def _per_margin(self, v: float) -> float:
        return _ratio(v, self.theory.margin) if self.theory.margin > 0 else math.nan

    proxy_ratio = property(lambda self: self._per_loss(self.theory.iso.value))
    proxy_ratio_lower = property(lambda self: self._per_loss(self.theory.iso.lower))
    proxy_ratio_upper = property(lambda self: self._per_loss(self.theory.iso.upper))
    collapse_ratio = property(lambda self: self._per_margin(self.theory.d_star))
    collapse_ratio_lower = property(lambda self: self._per_margin(self.theory.d_star_lower))
    collapse_ratio_upper = property(lambda self: self._per_margin(self.theory.d_star_upper))

    @property
    def constant(self) -> ConstantResult:
        return constant_result(self.theory)

    @property
    def ideal_solver(self) -> dict[str, Any]:
        return {k: solver_dict(r) for k, r in self.theory.solver_results.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary: flat numbers first (summarised over batches), then details.

        Leaves out the embeddings; ``indices`` only when subsampled.
        """
        t = self.theory
        iso, haus = t.iso, t.haus
        # the names of this object's attributes (its theory's read through it)
        flat = {k: getattr(self, k) for k in _FLAT_HEAD}
        for name, r in (("d_iso", iso), ("d_haus", haus)):
            flat.update({name: r.value, f"{name}_lower": r.lower, f"{name}_upper": r.upper})
        flat.update({k: getattr(self, k) for k in _FLAT_BRACKETS})
        flat.update(
            max_classes=self.suggestion.max_classes, min_dim=self.suggestion.min_dim,
            seconds=self.seconds,
            # flags and words
            beyond_simplex=t.beyond_simplex, loss_faithful=self.loss_faithful, kind=iso.kind,
            kind_haus=haus.kind, d_star_exact=t.d_star_exact, d_star_source=t.d_star_source,
            certify=self.certify,
        )
        return {
            "findings": list(self.findings),
            **flat,
            "evaluated": {
                "mode": self.evaluated,
                "n_points": t.n_points,
                "n_classes": t.n_classes,
                "samples_per_class": self.samples_per_class,
                "n_input_points": self.n_input_points,
                "batch": self.batch,
                "indices": self.indices.tolist() if self.evaluated != "all" else None,
            },
            "iso": iso.to_dict(),
            "haus": haus.to_dict(),
            "ideal_solver": self.ideal_solver,
            "loss_lower_check": self.loss_lower_check.to_dict(),
            "loss_upper_check": self.loss_upper_check.to_dict(),
            "constant": self.constant.to_dict(),
            "suggestion": self.suggestion.to_dict(),
            "budget": self.budget,
        }


def _bracketed(*names: str) -> tuple[str, ...]:
    """Each name, then with ``_lower`` and ``_upper``: a value and its bracket."""
    return tuple(f"{k}{end}" for k in names for end in ("", "_lower", "_upper"))


#: the first flat entries of :meth:`TheoryDiagnosis.to_dict`, then (after ``d_iso`` and
#: ``d_haus`` with their brackets) the bracketed ratios and constants
_FLAT_HEAD = ("n_points", "dim", "n_classes", "n_separated_classes", "samples_per_class",
              "margin", "loss_max", "loss_mean", "diameter")
_FLAT_BRACKETS = ("packing_lower", *_bracketed("proxy_ratio", "d_star", "collapse_ratio"),
                  "ideal_diameter", *_bracketed("c", "theta"))


# --- subsample ----------------------------------------------------------------------


def theory_subsample(y: ArrayLike, max_points: int, *, rng: Any = 0) -> IntArray:
    """Increasing rows of a seeded random ``P x K`` batch of at most ``max_points >= 3`` points.

    The batch is drawn as training draws its batches (the PK sampling of
    Hermans et al. 2017): ``P = min(classes, max(2, max_points // 4))``
    classes at random, those with two or more points first, and ``K =
    max_points // P`` random points of each (all of a smaller class), so
    ``K = 4`` when the file has many classes.  All rows when ``N <=
    max_points``.

    Examples
    --------
    >>> theory_subsample([0, 0, 1, 1], 10).tolist()
    [0, 1, 2, 3]
    >>> len(theory_subsample(list(range(50)) * 8, 40))
    40
    """
    arr = np.asarray(y)
    codes, _ = as_labels(arr, None, "y")
    max_points = check_int(max_points, "max_points", minimum=3)
    N = codes.shape[0]
    if N <= max_points:
        return np.arange(N)
    members = class_members(codes)
    n_cls = max(2, min(len(members), max_points // _SUBSAMPLE_PER_CLASS))
    return pk_draw(members, n_cls, max_points // n_cls, as_rng(rng),
                   draw="permutation", sort=True)


# --- the section --------------------------------------------------------------------


def _fmt(v: float, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if math.isinf(v):
        return "inf"
    return f"{v:.{digits}g}"


def bracket_text(value: float, lower: float, upper: float, digits: int = 4) -> str:
    """``"0.5"`` when the bracket is tight, else ``"in [lo, up]"`` (for reports)."""
    return bracket_words(value, lower, upper, lambda x: _fmt(x, digits), tight="= {v}",
                         wide="in [{lo}, {up}]")


_KIND_WORDS = {
    "collapsed": "collapsed (all points at one location)",
    "class-collapsed": "class-collapsed (each class at one point)",
    "general": "general (not every class at one point)",
}


def layout_sentence(sug: LayoutSuggestion, P: int) -> str:
    """The layout advice of a suggestion, in words (every number proven by ``d_star``)."""
    rho, n = f"{sug.ratio:g}", sug.dim
    if sug.max_classes_capped:
        most = "more than" if sug.max_classes_beyond else "at least"
        cls = (f"{most} {sug.max_classes} classes per batch in R^{n} keep D* <= {rho} x margin "
               f"(the table ends at {sug.max_classes})")
    else:
        bs = (f" (batch size {sug.batch_size} at {sug.samples_per_class} per class)"
              if sug.batch_size is not None else "")
        cls = (f"up to {sug.max_classes} classes per batch in R^{n}{bs} keep D* <= {rho} x "
               "margin (a layout exists)")
    if sug.classes_impossible_from is not None:
        cls += f"; from {sug.classes_impossible_from} classes on it is proven impossible"
    dim = (f"for {P} classes, dimension {sug.min_dim} suffices"
           + (f" and below {sug.dims_impossible_below} none does"
              if sug.dims_impossible_below > 1 else ""))
    return (f"Batch layout ({sug.curve}): {cls}; at most {sug.max_classes_exact} classes "
            f"keep D* = margin. Or, {dim} ({sug.min_dim_exact} for D* = margin).")


def _findings(res: TheoryDiagnosis, max_points: int) -> list[str]:
    """Plain-language sentences from the computed numbers."""
    out: list[str] = []
    r = res.theory
    P, n, alpha = r.n_separated_classes, r.dim, r.margin
    iso, haus, L, sug = r.iso, r.haus, r.loss_max, res.suggestion
    where = f"{P} classes in R^{n}"
    if res.evaluated != "all":
        out.append(
            f"Theory on a random batch of {r.n_classes} classes x {res.samples_per_class} = "
            f"{r.n_points} of the {res.n_input_points} points, drawn as training draws its "
            f"batches (P x K sampling; above {max_points} points the theory is evaluated on "
            "such batches, to keep the nearest-ideal solver affordable)."
        )
    if alpha == 0.0:
        out.append(
            "At margin 0 every collapsed and class-collapsed embedding is itself "
            "triplet-separated: the loss and the distance to the ideal set both read 0 at "
            "collapse, so neither can reveal it. Pass the training margin (--margin) to "
            "compare them."
        )
    elif r.beyond_simplex:
        ds = (f"= {_fmt(r.d_star)}" if r.d_star_exact else
              f"in [{_fmt(r.d_star_lower)}, {_fmt(r.d_star_upper)}]")
        cr_lo, cr_up = _ratio(r.d_star_lower, alpha), _ratio(r.d_star_upper, alpha)
        ratio = f"{cr_lo:.2g}" if r.d_star_exact else f"{cr_lo:.2g}-{cr_up:.2g}"
        out.append(
            f"This batch holds {where}, more than n + 1 = {n + 1}: a collapsed batch has loss "
            f"L = margin = {alpha:g}, yet its distance to the nearest triplet-separated (ideal) "
            f"embedding is D*({P}, {n}, {alpha:g}) {ds}, {ratio} x the margin (statement 4). "
            "Near collapse the loss understates how far the embedding is from the ideal set."
        )
    else:
        out.append(
            f"This batch holds {where}, at most n + 1 = {n + 1}: even a collapsed batch is at "
            f"distance D* = margin = {alpha:g} from the ideal set, equal to its loss, so the "
            "loss stays a faithful proxy of that distance (statement 4)."
        )
    # measured
    if iso.upper == 0.0:
        out.append(
            f"d_iso(E, F_TS) = 0: the embedding is triplet-separated at margin {alpha:g}, its "
            f"own nearest ideal embedding ({iso.kind})."
        )
    else:
        br = bracket_text(iso.value, iso.lower, iso.upper)
        faithful = res.loss_faithful
        if faithful is False:
            out.append(
                f"Measured: d_iso(E, F_TS) {br} > L = {_fmt(L)} (batch-hard loss, max): the "
                "loss is no longer a faithful proxy of the distance to the ideal set "
                f"(statement 3's d_iso <= L fails, certified by the {iso.lower_source} bound)."
            )
        elif faithful is True:
            out.append(
                f"Measured: L/2 = {_fmt(L / 2)} <= d_iso(E, F_TS) {br} <= L = {_fmt(L)}: the "
                "loss is a faithful proxy of the distance to the ideal set here (statement 3)."
            )
        else:
            out.append(
                f"Measured: d_iso(E, F_TS) {br} against L = {_fmt(L)}: the bracket straddles L, "
                "so whether the loss still bounds the distance is undecided (a larger "
                "--effort may narrow it)."
            )
        c_txt = (f"c = d_haus / d_iso = {_fmt(r.c, 3)} "
                 f"(bracket [{_fmt(r.c_lower, 3)}, {_fmt(r.c_upper, 3)}])")
        tail = (f", thickness theta(E) = {_fmt(r.theta, 3)}." if res.certify == "all" else
                ". (Not needed by the verdict, so not tightened: d_haus without the minimax "
                "Procrustes isometry, theta not computed; --certify-all computes both.)")
        out.append(
            f"The nearest ideal embedding is {_KIND_WORDS[iso.kind]}, diameter "
            f"{_fmt(r.ideal_diameter, 3)}; reaching one moves every point by at most "
            f"d_haus(E, F_TS) {bracket_text(haus.value, haus.lower, haus.upper, 3)}; "
            f"{c_txt}{tail}"
        )
    if sug.applicable and (r.beyond_simplex or not sug.within_ratio):
        out.append(layout_sentence(sug, P))
    return out


# --- what a verdict reads ------------------------------------------------------------


def theory_budget(options: TheoryOptions, res: TheoryResult, *, certify: str = "all",
                  n_input_points: int | None = None,
                  stages: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The work a theory evaluation ran under, for the report (JSON-ready).

    ``certify`` (:data:`CERTIFY`) and ``skipped`` (what ``"verdict"`` left
    out); ``effort`` and ``per_solve``, the budget of each ``nearest_ideal``
    solve (:meth:`TheoryOptions.solver_options`: ``n_starts`` local solves up to 16
    points, fewer beyond, each of at most ``max_iter`` iterations,
    ``max_nodes`` boxes, ``max_lps`` linear programmes, ``max_subbatches``
    sub-problems); ``solves``: what each solve used (``n_starts``,
    ``n_iter``, ``status``, ``reproducible``); ``iso_stages``: with
    ``"verdict"``, the stages of the ``d_iso`` search (each budget, what it
    used and whether it decided statement 3); ``safety_net_seconds`` (the
    clock that only a runaway solve reaches) and ``reproducible`` (False
    when it fired); the batch evaluated (``points`` of ``input_points``,
    ``classes``, ``max_points``) and ``thickness_starts`` (``"all"`` only).

    Examples
    --------
    >>> t = diagnose_theory([[0.0, 0.0], [0.0, 0.1], [3.0, 0.0], [3.0, 0.1]], [0, 0, 1, 1],
    ...                     margin=1.0)
    >>> b = t.budget
    >>> b["certify"], b["effort"], b["per_solve"]["n_starts"], b["points"]
    ('verdict', 'default', 24, 4)
    """
    solves = {k: {"n_starts": int(r.n_starts), "n_iter": int(r.n_iter), "status": r.status,
                  "reproducible": bool(r.reproducible)}
              for k, r in res.solver_results.items()}
    solve = options.solver_options()
    return {
        "certify": certify,
        "skipped": list(_SKIPPED) if certify == "verdict" else [],
        "effort": options.effort,
        "per_solve": solve.budget.to_dict(),
        "solves": solves,
        "iso_stages": None if stages is None else [dict(st) for st in stages],
        "safety_net_seconds": solve.time_limit,
        "reproducible": all(v["reproducible"] for v in solves.values()),
        "points": res.n_points,
        "input_points": res.n_points if n_input_points is None else int(n_input_points),
        "classes": res.n_classes,
        "max_points": options.max_points,
        "thickness_starts": options.thickness_starts if certify == "all" else None,
    }


def diagnose_theory(
    E: ArrayLike,
    y: ArrayLike,
    *,
    margin: float = 0.0,
    options: TheoryOptions | None = None,
    batch: int = 0,
    certify: str = "verdict",
) -> TheoryDiagnosis:
    """The loss against the distance to the ideal set, for one batch.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings (``N >= 3``).
    y : array_like of shape (N,)
        Class labels admitting a triplet.
    margin : float, default 0.0
        The training margin ``alpha >= 0``.
    options : TheoryOptions, optional
        Time limit, tolerance, seed, batch size (``max_points``), layout
        criterion.
    batch : int, default 0
        Above ``options.max_points`` points: which random ``P x K`` batch
        (:func:`theory_subsample`) to evaluate; batch 0 is seeded by
        ``options.seed``, batch ``b`` by ``(seed, b)``: independent draws.
    certify : {"verdict", "all"}, default "verdict"
        ``"verdict"``: certify only what a verdict reads (the ``d_iso``
        bracket against the loss, ``D*``, the layout); the thickness is NaN
        and ``d_haus`` keeps the bracket of ``f*`` unmoved, without the
        minimax Procrustes isometry or a certified enclosing ball.  ``"all"``:
        :func:`isoapprox.evaluate_theory`, every quantity with its proven
        bracket (on ``n = 128`` its Procrustes and thickness cost minutes).

    Returns
    -------
    TheoryDiagnosis

    Raises
    ------
    NoTripletError
        If the labels (of the evaluated points) admit no triplet.

    Examples
    --------
    >>> E = [[0.0, 0.0], [0.0, 0.1], [3.0, 0.0], [3.0, 0.1]]
    >>> t = diagnose_theory(E, [0, 0, 1, 1], margin=1.0)
    >>> t.iso.value, t.loss_faithful, t.beyond_simplex
    (0.0, True, False)
    """
    t0 = time.perf_counter()
    opts = check_instance(TheoryOptions() if options is None else options, TheoryOptions,
                          "options")
    certify = check_option(certify, "certify", CERTIFY)
    X_all = as_points(E, "E", min_points=3)
    codes_all, classes = as_labels(y, X_all.shape[0], "y")
    alpha = check_margin(margin)
    require_triplets(codes_all)
    b = check_int(batch, "batch", minimum=0)
    seed = opts.seed if b == 0 else np.random.default_rng([opts.seed, b])
    idx = theory_subsample(codes_all, opts.max_points, rng=seed)
    evaluated = "all" if idx.size == X_all.shape[0] else "subsample"
    X = X_all[idx]
    codes, sub_classes = as_labels(codes_all[idx], idx.size, "y")
    require_triplets(codes)
    theory, stages = evaluate_core(X, codes, alpha, opts, opts.seed, certify=certify)
    P_sep, n = theory.n_separated_classes, theory.dim
    K = int(np.median(class_counts(codes)))
    suggestion = suggest_layout(P_sep, n, margin=alpha, samples_per_class=K,
                                ratio=opts.faithful_ratio, curve=opts.curve)
    res = TheoryDiagnosis(
        theory=theory, samples_per_class=K, evaluated=evaluated,
        n_input_points=int(X_all.shape[0]), indices=idx, labels=classes[sub_classes[codes]],
        suggestion=suggestion, batch=b, certify=certify,
        budget=theory_budget(opts, theory, certify=certify, n_input_points=X_all.shape[0],
                             stages=stages),
    )
    return replace(res, findings=tuple(_findings(res, opts.max_points)),
                   seconds=time.perf_counter() - t0)


def add_theory(report: Mapping[str, Any], res: TheoryDiagnosis,
               more: Sequence[TheoryDiagnosis] = ()) -> dict[str, Any]:
    """A :func:`~isoapprox.diagnose` report with the theory section before the verdict.

    The section is ``res``'s; with ``more`` (further batches, e.g. of
    ``diagnose_theory(..., batch=b)``) it also holds ``"batches"``: each
    batch's numbers (``per_batch``) and their :func:`theory_batch_summary`.
    The verdict quotes the theory's findings after its own details (and the
    summary's, with ``more``).
    """
    out = {k: v for k, v in report.items() if k != "verdict"}
    section = res.to_dict()
    details = list(res.findings)
    if more:
        per_batch = [theory_numbers(r) for r in (res, *more)]
        summary = theory_batch_summary({"per_batch": per_batch})
        section["batches"] = {"n_batches": len(per_batch), "per_batch": per_batch,
                              "summary": summary}
        details += summary["findings"]
    out["theory"] = section
    verdict = dict(report["verdict"])
    verdict["details"] = [*verdict["details"], *details]
    out["verdict"] = verdict
    return out


def theory_numbers(res: TheoryDiagnosis) -> dict[str, float]:
    """The numeric entries of ``res.to_dict()`` as ``"theory.key"`` (one batch's row)."""
    return {f"theory.{k}": float(v) for k, v in res.to_dict().items()
            if isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_))}


# --- over batches -------------------------------------------------------------------


def theory_batch_summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """Summarise the theory over the batches of a ``diagnose_batches`` report.

    Returns ``n_evaluated`` (batches with theory numbers), the counts of
    batches with ``P' > n + 1`` (``beyond_simplex``), ``d_iso > L`` certified
    (``unfaithful``), ``d_iso <= L`` certified (``faithful``), neither
    (``undecided``), the medians and the ``findings``.
    """
    rows = [r for r in report.get("per_batch", ()) if r.get("theory.d_iso") is not None]
    out: dict[str, Any] = {"n_evaluated": len(rows), "n_batches": len(report.get("per_batch", ()))}
    if not rows:
        out["findings"] = []
        return out

    def col(k):
        return np.array([r[f"theory.{k}"] for r in rows], dtype=float)

    P, n = col("n_separated_classes"), col("dim")
    lo, up, L = col("d_iso_lower"), col("d_iso_upper"), col("loss_max")
    tol = VERDICT_RTOL * np.maximum(np.maximum(up, L), 1e-300)
    beyond = int(np.sum(P > n + 1))
    unfaithful = int(np.sum(lo > L + tol))
    faithful = int(np.sum(up <= L + tol))
    out.update(
        beyond_simplex=beyond, unfaithful=unfaithful, faithful=faithful,
        undecided=len(rows) - unfaithful - faithful,
        median_d_iso=float(np.median(col("d_iso"))),
        median_d_iso_lower=float(np.median(lo)),
        median_loss_max=float(np.median(L)),
        median_d_star=float(np.median(col("d_star"))),
        classes_per_batch=int(np.median(P)), dim=int(np.median(n)),
        max_classes=int(np.median(col("max_classes"))),
        min_dim=int(np.median(col("min_dim"))),
    )
    m = len(rows)
    alpha = float(rows[0]["theory.margin"])
    text = [
        f"Theory on {m} of {out['n_batches']} batches: {beyond} of {m} hold more than n + 1 "
        f"classes; d_iso(E, F_TS) > L (loss no longer a faithful proxy, certified) in "
        f"{unfaithful} of {m}, d_iso <= L (faithful) in {faithful}, undecided in "
        f"{out['undecided']}; median d_iso {_fmt(out['median_d_iso'])} against median L "
        f"{_fmt(out['median_loss_max'])}."
    ]
    if alpha > 0 and beyond:
        text.append(
            f"With {out['classes_per_batch']} classes per batch in R^{out['dim']} a collapsed "
            f"batch is D* ~ {_fmt(out['median_d_star'])} from the ideal set while its loss is "
            f"{alpha:g}; a layout with D* <= 2 x margin exists for up to {out['max_classes']} "
            f"classes per batch, or in dimension {out['min_dim']}."
        )
    out["findings"] = text
    return out


# --- the 2-D view ------------------------------------------------------------------


def embedding_view(
    E: ArrayLike,
    y: ArrayLike,
    *,
    ideal: ArrayLike | None = None,
    max_points: int = VIEW_MAX_POINTS,
    rng: Any = 0,
) -> dict[str, Any]:
    """2-D principal-component view of ``E`` and, overlaid, an ideal embedding.

    The axes are those of ``E`` and ``ideal`` stacked, so that a collapsed
    ``E`` and its spread-out ideal embedding are both visible.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Labels.
    ideal : array_like of shape (N, n), optional
        The ideal embedding, moved onto ``E`` (:attr:`TheoryDiagnosis.aligned`).
    max_points : int, default ``VIEW_MAX_POINTS``
        Show a seeded random subset of at most this many rows.
    rng : None, int or Generator, default 0
        Randomness of that subset.

    Returns
    -------
    dict
        JSON-ready: ``embedding`` and ``ideal`` (``[x, y]`` lists or None),
        ``labels`` (codes), ``classes``, ``axes_variance``, ``rows`` (shown,
        None for all), ``n_points``, ``n_shown`` and ``projection``.

    Examples
    --------
    >>> v = embedding_view([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [0, 0, 1])
    >>> v["axes_variance"][1] > 0, v["n_shown"]
    (True, 3)
    """
    X = as_points(E, "E", min_points=1)
    codes, classes = as_labels(y, X.shape[0], "y")
    max_points = check_int(max_points, "max_points", minimum=1)
    G = None
    if ideal is not None:
        G = as_points(ideal, "ideal", min_points=1)
        if G.shape != X.shape:
            raise InvalidInputError(
                f"`ideal` must have the shape of `E` {X.shape}; got {G.shape}"
            )
    stack = X if G is None else np.vstack([X, G])
    center = stack.mean(axis=0)
    C = stack - center
    s = np.max(np.abs(C)) if C.size else 0.0
    if s > 0.0:
        _, sv, Vt = np.linalg.svd(C / s, full_matrices=False)
    else:
        sv, Vt = np.zeros(min(C.shape)), np.eye(X.shape[1])
    V = np.zeros((2, X.shape[1]))
    k = min(2, Vt.shape[0])
    V[:k] = Vt[:k]
    var = sv**2
    total = float(np.sum(var))
    shares = [float(var[i] / total) if (i < var.size and total > 0) else 0.0 for i in range(2)]
    rows = None
    if X.shape[0] > max_points:
        rows = np.sort(as_rng(rng).choice(X.shape[0], size=max_points, replace=False))
    sel = slice(None) if rows is None else rows
    P2 = (X[sel] - center) @ V.T
    return {
        "projection": ("principal axes of the embeddings and the ideal embedding together"
                       if G is not None else "principal axes of the embeddings"),
        "axes_variance": shares,
        "n_points": int(X.shape[0]),
        "n_shown": int(P2.shape[0]),
        "rows": None if rows is None else rows.tolist(),
        "labels": codes[sel].tolist(),
        "classes": [str(c) for c in classes.tolist()],
        "embedding": P2.tolist(),
        "ideal": None if G is None else ((G[sel] - center) @ V.T).tolist(),
    }


