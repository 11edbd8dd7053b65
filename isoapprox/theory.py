"""Numerical checks of the statements of the theory (SPEC section 3).

Notation
--------
``E`` (N, n) embeds a batch with labels ``y``; ``alpha = margin >= 0``;
``L(E) = batch_hard_loss(E, y, margin=alpha, reduction="max")``;
``F_TS = F_TS(alpha)`` is the triplet-separated set;
``d_iso(E, F_TS)`` and ``d_haus(E, F_TS)`` are the distances to it computed
by :func:`isoapprox.nearest_ideal` with certified brackets;
``theta(E)`` is the thickness; ``D*(P, n, alpha)`` the least diameter of
``P`` points of ``R^n`` with pairwise distances ``>= alpha``.

The statements (our reconstruction of the paper's results; the paper's own
statements are not public, see the README):

1. ``d_iso(E1, E2) <= 2 d_haus(E1, E2)`` (pointwise and isometry modes).
2. ``d_haus(E, F_TS) <= (c_n / theta(E)) d_iso(E, F_TS)``; the empirical
   constant ``c(E) = d_haus(E, F_TS) / d_iso(E, F_TS)`` satisfies
   ``c(E) >= 1/2`` by (1).
3. ``L(E) / 2 <= d_iso(E, F_TS)``, and ``d_iso(E, F_TS) <= L(E)`` when the
   perturbed distance table is realisable in ``R^n`` (it can fail near
   collapse with more than ``n + 1`` classes).
4. Collapse: ``L(collapsed) = alpha`` while
   ``d_iso(collapsed, F_TS) = D*(P, n, alpha)``.
5. The same template for the pairwise contrastive and margin losses, whose
   zero-loss sets are ``F = {d_pos <= u, d_neg >= l}``
   (:func:`isoapprox.nearest_zero_loss`).  With ``L`` the max-reduced pair
   loss: ``L(E) <= d_iso(E, F)`` (factor 1, not 2: each pair constraint
   involves one distance, where a triplet's violation is shared by two),
   hence ``L(E) / 2 <= d_haus(E, F)`` by (1); and ``d_iso(E, F) <= L(E)``
   (so equality) when the clipped table (``min(D, u)`` on positives,
   ``max(D, l)`` on negatives) is realisable in ``R^n``.  The metric
   relaxation never exceeds ``L``; only the dimension does (collapse with
   more than ``n + 1`` classes).

Every check returns numbers: both sides with their brackets, the slack, and
a verdict that is ``True`` or ``False`` only when the brackets decide it
(``None`` when the brackets overlap the bound).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ._typing import ArrayLike, RNGLike
from ._validation import (
    as_labels,
    as_points,
    check_int,
    check_margin,
    check_option,
    check_positive,
    require_triplets,
)
from .exceptions import InvalidInputError
from .geometry import diameter
from .losses import batch_hard_loss, separation_report
from .metrics import hausdorff_like, isometric_error

__all__ = [
    "BoundCheck",
    "CollapseCheck",
    "ConstantReport",
    "check_collapse",
    "check_iso_haus",
    "check_loss_iso",
    "check_pair_loss",
    "empirical_constant",
]

#: rounding allowance when a verdict is decided from brackets, relative to the
#: larger of the two sides and of the instance's own scale (its diameter)
VERDICT_RTOL = 1e-9


@dataclass(frozen=True)
class BoundCheck:
    """One inequality ``lhs <= rhs`` evaluated numerically.

    Attributes
    ----------
    statement : str
        The inequality in words, e.g. ``"d_iso(E1, E2) <= 2 d_haus(E1, E2)"``.
    lhs, rhs : float
        Best estimates of both sides.
    lhs_lower, lhs_upper, rhs_lower, rhs_upper : float
        Certified brackets of both sides (equal to the estimate when exact).
    slack : float
        ``rhs - lhs``: non-negative when the estimates satisfy the bound.
    holds : bool or None
        ``True`` when ``lhs_upper <= rhs_lower`` (certified), ``False`` when
        ``lhs_lower > rhs_upper`` (certified violation), ``None`` otherwise.
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


def _check(statement: str, lhs: tuple[float, float, float], rhs: tuple[float, float, float],
           scale: float = 0.0) -> BoundCheck:
    """Build a :class:`BoundCheck` from ``(estimate, lower, upper)`` of each side.

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
    return BoundCheck(statement, float(l), float(r), float(l_lo), float(l_up), float(r_lo),
                      float(r_up), float(r - l), holds)


def check_iso_haus(E1: ArrayLike, E2: ArrayLike, *, mode: str = "pointwise") -> BoundCheck:
    """Statement 1: ``d_iso(E1, E2) <= 2 d_haus(E1, E2)``.

    Parameters
    ----------
    E1, E2 : array_like of shape (N, n)
        Two embeddings of the same points.
    mode : {"pointwise", "isometry"}
        Hausdorff-like mode.  ``"isometry"`` uses the certified bracket of
        :func:`isoapprox.minimax_procrustes`.

    Returns
    -------
    BoundCheck

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
        from .procrustes import minimax_procrustes

        res = minimax_procrustes(E1, E2)
        rhs = (2 * res.value, 2 * res.lower, 2 * res.upper)
    return _check(f"d_iso(E1, E2) <= 2 d_haus_{mode}(E1, E2)", (d_iso, d_iso, d_iso), rhs, scale)


def check_loss_iso(
    E: ArrayLike, y: ArrayLike, *, margin: float = 0.0, iso: Any = None, rng: RNGLike = None,
    tol: float = 1e-6,
) -> tuple[BoundCheck, BoundCheck]:
    """Statement 3: ``L(E)/2 <= d_iso(E, F_TS)`` and ``d_iso(E, F_TS) <= L(E)``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Labels.
    margin : float, default 0.0
        ``alpha >= 0``.
    iso : IdealResult, optional
        A precomputed ``nearest_ideal(E, y, margin=margin, objective="iso")``.
    rng : None, int or Generator
        Seeds the solver's starts when ``iso`` is not given.
    tol : float, default 1e-6
        Requested relative gap of the solver.

    Returns
    -------
    lower_check, upper_check : BoundCheck
        The proven lower bound (always holds) and the upper bound (may fail
        when the perturbed table is not realisable in ``R^n``).
    """
    from .ideal import nearest_ideal

    margin = check_margin(margin)
    if iso is None:
        iso = nearest_ideal(E, y, margin=margin, objective="iso", rng=rng, tol=tol)
    L = batch_hard_loss(E, y, margin=margin, reduction="max")
    scale = max(diameter(E), margin)
    d = (iso.value, iso.lower, iso.upper)
    lower = _check("L(E)/2 <= d_iso(E, F_TS)", (L / 2, L / 2, L / 2), d, scale)
    upper = _check("d_iso(E, F_TS) <= L(E)", d, (L, L, L), scale)
    return lower, upper


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
) -> tuple[BoundCheck, BoundCheck]:
    """Statement 5: ``L(E) <= d_iso(E, F)`` and ``d_iso(E, F) <= L(E)`` for a pair loss.

    ``L`` is the max-reduced pair loss and ``F`` its zero-loss set
    (see :func:`isoapprox.nearest_zero_loss`).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Labels.
    loss : {"contrastive", "margin"}, default "contrastive"
    margin : float, default 0.0
        ``alpha >= 0``.
    pos_margin : float, default 0.0
        ``tau >= 0`` (contrastive loss).
    beta : float, default 1.0
        ``beta >= 0`` (margin loss).
    iso : IdealResult, optional
        A precomputed ``nearest_zero_loss(E, y, ..., objective="iso")`` for
        the same loss and parameters.
    rng : None, int or Generator
        Seeds the solver's starts when ``iso`` is not given.
    tol : float, default 1e-6
        Requested relative gap of the solver.

    Returns
    -------
    lower_check, upper_check : BoundCheck
        The proven lower bound ``L(E) <= d_iso(E, F)`` (factor 1; it always
        holds) and the upper bound ``d_iso(E, F) <= L(E)``, which holds
        (with equality) when the clipped distance table is realisable in
        ``R^n`` and can fail near collapse with more than ``n + 1`` classes.

    Raises
    ------
    InvalidInputError
        As :func:`isoapprox.nearest_zero_loss` (unknown loss, negative
        parameters, an empty margin-loss zero set), or when ``iso`` was
        computed for another loss or other parameters.

    Examples
    --------
    >>> lo, up = check_pair_loss([[0.0], [3.0], [1.0]], [0, 0, 1], margin=2.0, pos_margin=1.0)
    >>> lo.lhs, lo.holds, up.holds
    (2.0, True, True)
    """
    from .ideal import nearest_zero_loss
    from .ideal.zero_loss import pair_bounds
    from .losses import contrastive_loss, margin_loss

    u, l = pair_bounds(loss, margin=margin, pos_margin=pos_margin, beta=beta)
    if iso is None:
        iso = nearest_zero_loss(E, y, loss=loss, margin=margin, pos_margin=pos_margin,
                                beta=beta, objective="iso", rng=rng, tol=tol)
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
    scale = max(diameter(E), l)
    d = (iso.value, iso.lower, iso.upper)
    lower = _check("L(E) <= d_iso(E, F)", (L, L, L), d, scale)
    upper = _check("d_iso(E, F) <= L(E)", d, (L, L, L), scale)
    return lower, upper


@dataclass(frozen=True)
class ConstantReport:
    """The empirical constant ``c(E) = d_haus(E, F_TS) / d_iso(E, F_TS)``.

    Attributes
    ----------
    c, c_lower, c_upper : float
        The ratio of the two incumbents and its certified bracket
        ``[haus.lower / iso.upper, haus.upper / iso.lower]`` (``inf`` when
        ``iso.lower == 0``; all ``nan`` when ``E`` is already triplet
        separated, since then both distances vanish).
    d_iso, d_iso_lower, d_iso_upper : float
        ``d_iso(E, F_TS)`` and its bracket.
    d_haus, d_haus_lower, d_haus_upper : float
        ``d_haus(E, F_TS)`` and its bracket: the value is the better of the
        ``objective="haus"`` solver's incumbent and ``f*`` moved onto ``E``
        by its best isometry (when ``fstar``; ideal too, re-checked
        triplet-separated and re-scored in float64); ``extra["d_haus_source"]``
        says which (``"nearest_ideal"`` or ``"procrustes_fstar"``).
    ratio_fstar : float
        ``d_haus_isometry(E, f*) / d_iso(E, F_TS)`` with ``f*`` the
        iso-nearest ideal embedding (our reading of the quantity the paper's
        toy figure annotates as ``d_haus(f_theta, f*)``: a reconstruction);
        ``>= c`` up to the brackets.
    d_haus_fstar : float
        ``d_haus_isometry(E, f*)``.
    theta, theta_lower, theta_upper : float
        Thickness of ``E`` and its bracket (0 for flat sets, e.g. ``N <= n``).
    implied_cn : float
        ``c * theta``: the smallest ``c_n`` compatible with this ``E`` in
        statement 2 (``nan`` when undefined).
    half_check : BoundCheck
        ``1/2 <= c(E)`` (a consequence of statement 1).
    cn_check : BoundCheck or None
        ``d_haus <= (c_n / theta) d_iso`` for the given ``c_n`` (None when
        ``c_n`` is not given or ``theta == 0``).
    kind_iso, kind_haus : str
        Whether each nearest ideal embedding is collapsed, class-collapsed
        or general.
    """

    c: float
    c_lower: float
    c_upper: float
    d_iso: float
    d_iso_lower: float
    d_iso_upper: float
    d_haus: float
    d_haus_lower: float
    d_haus_upper: float
    ratio_fstar: float
    d_haus_fstar: float
    theta: float
    theta_lower: float
    theta_upper: float
    implied_cn: float
    half_check: BoundCheck | None
    cn_check: BoundCheck | None
    kind_iso: str
    kind_haus: str
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-ready)."""
        out = asdict(self)
        return out


def _ratio(num: float, den: float) -> float:
    if den == 0.0:
        return math.nan if num == 0.0 else math.inf
    return num / den


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
) -> ConstantReport:
    """Statement 2: the empirical constant ``c(E)`` with its bracket and ``theta(E)``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Embeddings.
    y : array_like of shape (N,)
        Labels.
    margin : float, default 0.0
        ``alpha >= 0``.
    c_n : float, optional
        The dimension constant of the isometric approximation theorem
        (unknown in closed form); when given, the bound
        ``d_haus <= (c_n / theta) d_iso`` is checked.
    iso, haus : IdealResult, optional
        Precomputed ``nearest_ideal`` results for the two objectives.
    rng : None, int or Generator
        Seeds the solvers' starts.
    tol : float, default 1e-6
        Requested relative gap of the solvers.
    fstar : bool, default True
        Compute ``ratio_fstar`` (a minimax Procrustes problem: seconds in
        ``n = 32``); ``False`` leaves it and ``d_haus_fstar`` NaN.
    fstar_procrustes : ProcrustesResult, optional
        A precomputed ``minimax_procrustes(E, iso.embedding)`` (it costs
        seconds for a few hundred points in tens of dimensions; pass it to
        reuse it).  Ignored when ``fstar`` is False.

    Returns
    -------
    ConstantReport
    """
    from .ideal import nearest_ideal
    from .procrustes import minimax_procrustes
    from .thickness import thickness_report

    X = as_points(E, "E", min_points=2)
    codes, _ = as_labels(y, X.shape[0], "y")
    require_triplets(codes)
    margin = check_margin(margin)
    if c_n is not None:
        c_n = check_positive(c_n, "c_n")
    if iso is None:
        iso = nearest_ideal(X, codes, margin=margin, objective="iso", rng=rng, tol=tol)
    if haus is None:
        haus = nearest_ideal(X, codes, margin=margin, objective="haus", rng=rng, tol=tol)
    h_value, h_lower, h_upper, kind_haus = haus.value, haus.lower, haus.upper, haus.kind
    h_source = "nearest_ideal"
    if fstar:
        proc = (fstar_procrustes if fstar_procrustes is not None
                else minimax_procrustes(X, iso.embedding))
        d_haus_fstar = proc.value
        ratio_fstar = _ratio(d_haus_fstar, iso.value)
        # f* moved onto E by the best isometry is ideal too (F_TS is closed
        # under isometries): a feasible point for d_haus, re-checked and
        # re-scored in float64, that can beat the haus solver's incumbent
        moved = (iso.embedding - proc.b) @ proc.Q
        if separation_report(moved, codes, margin=margin, atol=0.0).worst_slack >= 0.0:
            v = hausdorff_like(X, moved, mode="pointwise")
            if v < h_value:
                h_value = h_upper = v
                h_lower = min(h_lower, v)
                kind_haus, h_source = iso.kind, "procrustes_fstar"
    else:
        d_haus_fstar = ratio_fstar = math.nan
    c = _ratio(h_value, iso.value)
    c_lo = _ratio(h_lower, iso.upper) if iso.upper > 0 else math.nan
    c_up = _ratio(h_upper, iso.lower) if iso.value > 0 else math.nan
    if np.ptp(X, axis=0).max() > 0.0:
        th = thickness_report(X)
        theta, th_lo, th_up = th.value, th.lower, th.upper
    else:
        theta = th_lo = th_up = 0.0
    implied = c * theta if math.isfinite(c) else math.nan
    scale = max(diameter(X), margin)
    half = None
    if math.isfinite(c):
        half = _check("1/2 <= c(E)", (0.5, 0.5, 0.5), (c, c_lo, c_up))
    cn_check = None
    if c_n is not None and th_lo > 0.0:
        bound = (c_n / theta * iso.value, c_n / th_up * iso.lower, c_n / th_lo * iso.upper)
        cn_check = _check("d_haus(E, F_TS) <= (c_n / theta) d_iso(E, F_TS)",
                          (h_value, h_lower, h_upper), bound, scale)
    return ConstantReport(
        c=c, c_lower=c_lo, c_upper=c_up,
        d_iso=iso.value, d_iso_lower=iso.lower, d_iso_upper=iso.upper,
        d_haus=h_value, d_haus_lower=h_lower, d_haus_upper=h_upper,
        ratio_fstar=ratio_fstar, d_haus_fstar=d_haus_fstar,
        theta=theta, theta_lower=th_lo, theta_upper=th_up,
        implied_cn=implied, half_check=half, cn_check=cn_check,
        kind_iso=iso.kind, kind_haus=kind_haus, extra={"d_haus_source": h_source},
    )


@dataclass(frozen=True)
class CollapseCheck:
    """Statement 4 for one label layout in ``R^n``.

    Attributes
    ----------
    n_classes : int
        ``P``, the number of classes in the batch.
    dim : int
        ``n``.
    margin : float
        ``alpha``.
    loss_collapsed : float
        ``L(collapsed)`` (max reduction); equals ``alpha``.
    loss_collapsed_mean : float
        The mean-reduced batch-hard loss at collapse; equals ``alpha``.
    d_iso : float
        ``d_iso(collapsed, F_TS)`` and its bracket ``d_iso_lower``,
        ``d_iso_upper``.
    d_star, d_star_lower, d_star_upper : float
        ``D*(P, n, alpha)`` and its bracket.
    faithful_ratio : float
        ``d_iso(collapsed, F_TS) / L(collapsed)``: 1 while the loss is a
        faithful proxy of the distance to the ideal set; grows beyond 2 once
        ``P >> n``.
    beyond_simplex : bool
        ``P > n + 1``.
    agreement : BoundCheck
        ``|d_iso(collapsed, F_TS) - D*| <= 0`` evaluated from both brackets
        (``holds`` is True when the brackets force agreement within
        rounding, None when they only overlap, False when they are disjoint).
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
    agreement: BoundCheck

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-ready)."""
        return asdict(self)


def check_collapse(
    y: ArrayLike, dim: int, *, margin: float = 1.0, rng: RNGLike = None, tol: float = 1e-6
) -> CollapseCheck:
    """Statement 4: at collapse the loss is ``alpha`` but the distance is ``D*``.

    Parameters
    ----------
    y : array_like of shape (N,)
        Labels of the batch; every class should have at least two points
        (then the nearest ideal embedding of the collapsed one collapses
        each class and ``d_iso = D*(P, n, alpha)``).
    dim : int
        Embedding dimension ``n >= 1``.
    margin : float, default 1.0
        ``alpha >= 0``.
    rng : None, int or Generator
        Seeds the solvers.
    tol : float, default 1e-6
        Requested relative gap.

    Returns
    -------
    CollapseCheck
    """
    from .ideal import nearest_ideal
    from .packing import min_separated_diameter

    dim = check_int(dim, "dim", minimum=1)
    margin = check_margin(margin)
    y_arr = np.asarray(y)
    codes, classes = as_labels(y_arr, y_arr.shape[0] if y_arr.ndim == 1 else -1, "y")
    require_triplets(codes)
    N = codes.shape[0]
    P = int(len(classes))
    E = np.zeros((N, dim))
    L = batch_hard_loss(E, codes, margin=margin, reduction="max")
    L_mean = batch_hard_loss(E, codes, margin=margin, reduction="mean")
    iso = nearest_ideal(E, codes, margin=margin, objective="iso", rng=rng, tol=tol)
    ds = min_separated_diameter(P, dim, margin=margin, rng=rng)
    # agreement: |d_iso - D*| <= 0, i.e. both d_iso <= D* and D* <= d_iso;
    # encode as the larger violation of the two one-sided checks
    a = _check("d_iso(collapsed, F_TS) <= D*(P, n, alpha)",
               (iso.value, iso.lower, iso.upper), (ds.value, ds.lower, ds.upper), margin)
    b = _check("D*(P, n, alpha) <= d_iso(collapsed, F_TS)",
               (ds.value, ds.lower, ds.upper), (iso.value, iso.lower, iso.upper), margin)
    if a.holds is False or b.holds is False:
        verdict: bool | None = False
    elif a.holds and b.holds:
        verdict = True
    else:
        verdict = None
    agreement = BoundCheck(
        "d_iso(collapsed, F_TS) == D*(P, n, alpha)", iso.value, ds.value, iso.lower, iso.upper,
        ds.lower, ds.upper, float(ds.value - iso.value), verdict,
    )
    return CollapseCheck(
        n_classes=P, dim=dim, margin=margin, loss_collapsed=L, loss_collapsed_mean=L_mean,
        d_iso=iso.value, d_iso_lower=iso.lower, d_iso_upper=iso.upper,
        d_star=ds.value, d_star_lower=ds.lower, d_star_upper=ds.upper,
        faithful_ratio=_ratio(iso.value, L), beyond_simplex=P > dim + 1, agreement=agreement,
    )
