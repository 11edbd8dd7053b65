"""The result of :func:`isoapprox.nearest_ideal` and :func:`isoapprox.nearest_zero_loss`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._typing import FloatArray
from ..bracket import Bracket, Bracketed

__all__ = ["IdealResult"]


#: the keys of :meth:`IdealResult.to_dict`, in order
_KEYS = ("embedding", "value", "lower", "upper", "gap", "rel_gap", "certified", "tol",
         "objective", "margin", "solver", "status", "n_iter", "n_starts", "seconds", "slack",
         "kind", "bounds", "lower_source", "loss", "thresholds", "budget", "reproducible")


@dataclass(frozen=True)
class IdealResult(Bracketed):
    """Nearest embedding of a target set, with a certified bracket.

    The target set is ``F_TS(margin)`` for :func:`isoapprox.nearest_ideal`
    (``loss == "triplet"``) and the zero-loss set of a pair loss for
    :func:`isoapprox.nearest_zero_loss` (``loss`` is ``"contrastive"`` or
    ``"margin"``; its bounds are in ``thresholds``).  Wherever the
    attributes below say "triplet-separated" or "triplet", read "in the
    zero-loss set" and "pair constraint" for a pair loss.

    Attributes
    ----------
    embedding : ndarray of shape (N, n)
        The returned ideal embedding ``f*``: triplet-separated in float64
        (``slack >= 0``), in the caller's coordinates.
    bracket : Bracket
        ``value``, ``lower``, ``upper``, ``certified``, ``lower_source``
        and ``upper_source`` (``solver``), read by the attributes below.
    value : float
        The objective re-scored at ``embedding`` with
        :func:`isoapprox.isometric_error` (``"iso"``) or
        :func:`isoapprox.hausdorff_like` in pointwise mode (``"haus"``);
        never a solver's own objective.
    lower : float
        The largest proven lower bound (see ``bounds``).
    upper : float
        Equal to ``value`` (the objective at a feasible point).
    gap, rel_gap : float
        ``gap = upper - lower >= 0`` and ``rel_gap = gap / max(value, FLOOR_RTOL *
        scale)`` (:mod:`isoapprox.tolerances`) with ``scale = max(diam(E), margin)``.
    certified : bool
        ``rel_gap <= tol`` with a finite bracket (never from ``inf`` or ``nan``).
    tol : float
        The requested relative gap.
    objective : {"iso", "haus"}
    margin : float
        The loss's margin ``alpha``.
    solver : str
        Which family produced the embedding: ``"identity"`` (``E`` is already
        separated), ``"construction"`` (collapsed or class-collapsed closed
        form), ``"scipy"`` (SLSQP), ``"cvxpy"`` (convex-concave procedure) or
        ``"branch_and_bound"`` (a point of the branch-and-bound search: a box
        centre, or a node LP's solution, repaired and re-scored).
    status : str
        ``"certified"``, ``"exhausted"`` (the work budget was spent with the
        gap open: every start, node and linear programme of ``budget``) or
        ``"time_limit"`` (the wall-clock safety net fired with the gap open;
        ``reproducible`` is then False).
    n_iter : int
        Local-solver iterations over all starts (SLSQP iterations plus CCP
        rounds).
    n_starts : int
        Local solves run.
    seconds : float
        Wall time.
    slack : float
        ``min over triplets of d(a, m) - d(a, p) - margin`` at ``embedding``
        in float64; ``>= 0``.  ``inf`` when no triplet constrains it.  For a
        pair loss: ``min(u - d_pos, d_neg - l)`` over the constrained pairs
        (negatives only when ``l > 0``).
    kind : {"collapsed", "class-collapsed", "general"}
        ``"collapsed"`` when ``diam(embedding) <= KIND_RTOL * scale``,
        ``"class-collapsed"`` when every class has diameter at most that,
        else ``"general"``.
    bounds : dict[str, float]
        Every lower bound computed, by name (caller's units): ``"separated"``
        (0 when ``E`` is already separated), ``"half_loss"``,
        ``"three_point"``, ``"metric_lp"``, ``"sdp"``, ``"packing"``
        (:func:`isoapprox.packing.packing_distance_bound`) for ``"iso"``;
        ``"iso_half"``, ``"haus_triplet"``, ``"shor_sdp"`` and
        ``"packing_half"`` (half the packing bound) and ``"packing_radius"``
        (:func:`isoapprox.packing.packing_radius_bound`: the least radius of
        ``P'`` separated points less that of ``E``) for ``"haus"``;
        ``"sub_batch_packing"`` (the packing bound of nearby class
        representatives, for ``"haus"`` also in radius form) for both and
        ``"sub_batch"`` (the best proven bound of a few sub-problems) and
        ``"shor_sdp_triplets"`` (the Shor relaxation on the hardest triplets
        at the incumbent, for more than 12 points with ``N + n <= 40`` and an
        incumbent whose classes are not collapsed) for ``"haus"`` (see
        :mod:`isoapprox.ideal._subbatch` and
        :func:`isoapprox.ideal._relax.hardest_triplets`); and for both, on
        small instances in ``R^1`` and ``R^2`` whose gap the others left open,
        ``"sub_batch_support"`` (the sub-problem on the points of the
        incumbent's active relations, solved with its branch-and-bound) and
        ``"branch_and_bound"`` (:mod:`isoapprox.ideal._bnb`; on the line the
        order search of :mod:`isoapprox.ideal._line`).  For a pair loss:
        ``"zero_loss"`` (0 when ``E`` is already in the set), ``"loss"``
        (``L_max``) and ``"sdp"`` for ``"iso"``, ``"half_loss"``
        (``L_max / 2``) and ``"shor_sdp"`` for ``"haus"``, ``"packing"`` for
        both (see :mod:`isoapprox.ideal._pairs`), and ``"branch_and_bound"``
        on the line.
    lower_source : str
        Name of the bound that gives ``lower``.
    loss : {"triplet", "contrastive", "margin"}
        Which target set: ``F_TS`` or a pair loss's zero-loss set.
    thresholds : dict[str, float]
        The set's parameters: ``{"margin": alpha}`` for ``F_TS``; for a pair
        loss also ``pos_margin`` (contrastive) or ``beta`` (margin loss) and
        the derived bounds ``upper`` (``d_pos <= upper``) and ``lower``
        (``d_neg >= lower``).
    budget : dict[str, int]
        The work budget the search ran under
        (:class:`isoapprox.ideal._budget.Budget`: ``n_starts``,
        ``max_iter``, ``max_subbatches``, ``max_nodes``, ``max_lps``).
    reproducible : bool
        True when only the work budget decided the result, so the same
        inputs and options give it bit for bit on any machine of the same
        kind, busy or quiet; False when the wall-clock safety net
        (``time_limit``) fired at any point of the search.
    """

    embedding: FloatArray
    SERIAL_FIELDS = _KEYS
    bracket: Bracket
    tol: float
    objective: str
    margin: float
    solver: str
    status: str
    n_iter: int
    n_starts: int
    seconds: float
    slack: float
    kind: str
    bounds: dict[str, float]
    loss: str = "triplet"
    thresholds: dict[str, float] = field(default_factory=dict)
    budget: dict[str, int] = field(default_factory=dict)
    reproducible: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy (the embedding as nested lists)."""
        out = {k: getattr(self, k) for k in _KEYS}
        out["embedding"] = np.asarray(self.embedding).tolist()
        out["bounds"] = dict(self.bounds)
        out["thresholds"] = dict(self.thresholds)
        out["budget"] = dict(self.budget)
        return out

    def __repr__(self) -> str:
        loss = "" if self.loss == "triplet" else f"loss={self.loss!r}, "
        return (
            f"IdealResult({loss}objective={self.objective!r}, margin={self.margin!r}, "
            f"value={self.value:.6g}, lower={self.lower:.6g}, rel_gap={self.rel_gap:.2e}, "
            f"certified={self.certified}, kind={self.kind!r}, solver={self.solver!r}, "
            f"status={self.status!r}, embedding=<array {np.shape(self.embedding)}>)"
        )
