"""The pair family: zero-loss sets of the contrastive and margin losses.

Notation
--------
``E`` (N, n), labels with dense codes, ``D_ij = ||E_i - E_j||``.  A pair
``i < j`` is *positive* when ``y_i = y_j`` and *negative* otherwise.  Both
pair losses of :mod:`isoapprox.losses` have per-pair hinge terms
``[d_pos - u]_+`` and ``[l - d_neg]_+``, and their zero-loss sets are

    F(u, l) = { G (N, n) : d_G(i, j) <= u (positive), d_G(i, j) >= l (negative) }

- contrastive loss, ``margin = alpha``, ``pos_margin = tau``:
  ``F_C(alpha, tau) = F(tau, alpha)``;
- margin loss (Wu et al. 2017), ``margin = alpha``, ``beta``:
  ``F_M(alpha, beta) = F(beta - alpha, beta + alpha)`` (the two thresholds
  computed in float64 exactly as :func:`isoapprox.margin_loss` does), empty
  when ``beta < alpha`` and a positive pair exists.

``L_max = max over pairs of the hinge term`` is the max-reduced loss.

Proven lower bounds (``G`` any member of ``F``)
-----------------------------------------------
``loss`` (objective ``"iso"``): ``d_iso(E, F) >= L_max``, factor 1.
    A violated positive pair has ``D_ij = u + v`` and ``d_G(i, j) <= u``,
    so ``|D_ij - d_G(i, j)| >= v``; a violated negative pair has
    ``D_ij = l - v`` and ``d_G(i, j) >= l``, the same.  Unlike the triplet
    case (factor 2, because two distances ``d_ap`` and ``d_am`` share one
    violation), each pair constraint involves a single distance.
``half_loss`` (objective ``"haus"``): ``d_haus(E, F) >= L_max / 2``.
    ``|d_G(i, j) - D_ij| <= ||G_i - E_i|| + ||G_j - E_j||``.  It is the exact
    value of the single-pair sub-problem (move both ends by ``v / 2`` along
    their line).
``packing`` (both objectives, ``l > 0``).
    For a set ``S`` of ``k`` points with pairwise different labels, ``G_S``
    is ``l``-separated in ``R^n``, so ``diam(G_S) >= D*(k, n, l)`` and
    ``d_iso(E, F) >= D*_lower(k, n, l) - diam(E_S)``
    (:func:`isoapprox.packing.packing_lower_bound`).  For ``"haus"``,
    ``G_S`` lies in the ball of radius ``R(E_S) + delta`` about the centre
    of the least ball of ``E_S``, and ``k`` ``l``-separated points need a
    ball of radius at least ``l * max(sqrt((k - 1) / (2 k)),
    1/sqrt 2 if k >= n + 2, (k^(1/n) - 1) / 2, (k - 1) / 2 if n = 1)``
    (sum of squared distances about the centroid; pairwise obtuse vectors;
    volume; the line), and ``D*_lower / 2``; hence
    ``d_haus(E, F) >= R_lower(k) - R(E_S)``.  The sets ``S`` are grown
    greedily (each step adds the point of a new class that least increases
    the diameter) from many seeds.  This is the bound that sees the
    dimension: at collapse with ``P > n + 1`` classes it gives ``D*``.
``class_balls`` (objective ``"haus"``).
    Let ``m_X``, ``R_X`` be the centre and radius of the least ball of class
    ``X`` in ``E``, and ``rho_X = j_n u`` with ``j_n = sqrt(n / (2 (n + 1)))``
    (Jung: a set of diameter ``<= u`` lies in a ball of radius ``j_n u``;
    ``rho_X = 0`` for a singleton class).  If ``G`` is within ``delta`` of
    ``E`` pointwise, the least-ball centre ``g_X`` of ``G_X`` is within
    ``rho_X + delta`` of every point of ``E_X``, and for any point ``c``,
    ``max_{s in X} |c - s|^2 >= R_X^2 + |c - m_X|^2`` (``m_X`` is a convex
    combination of the support points, all at distance ``R_X``).  Hence
    ``rho_X + delta >= R_X`` (the class must fit) and
    ``|g_X - m_X| <= h_X = sqrt((rho_X + delta)^2 - R_X^2)`` (on the line,
    ``n = 1``, the intersection of the intervals gives the sharper
    ``h_X = rho_X + delta - R_X``).  The same
    identity applied to the support weights of ``G_A`` and ``G_B`` bounds
    the closest negative pair:
    ``l^2 <= min d_G(i, j)^2 <= |g_A - g_B|^2 + rho_A^2 + rho_B^2``, so
    ``l^2 <= (|m_A - m_B| + h_A + h_B)^2 + rho_A^2 + rho_B^2``.  The least
    ``delta`` satisfying both (monotone; bisection keeps the largest proven
    infeasible value) bounds ``d_haus`` from below.  The centres and radii
    come from :func:`isoapprox.min_enclosing_ball` with its certified
    bracket ``[R_lo, r]``: ``R_lo`` replaces ``R_X`` and the distance from
    the computed centre to the exact one is at most ``sqrt(r^2 - R_lo^2)``.
    It reduces to ``half_loss`` for two singletons, gives ``R_X`` for a
    class that must collapse (``u = 0``), and helps most when ``u`` is small
    and classes have several points.
``sdp`` / ``shor_sdp``: the convex relaxations of :mod:`._relax` with
    ``q_pos <= u^2`` and ``q_neg >= l^2``.

What does *not* help: the metric relaxation.  Every 3-point sub-problem,
and the LP over all metrics, has value exactly ``L_max``.  Proof: at level
``s >= L_max`` each pair may take any value in an interval
``[lo_ij, hi_ij]`` (positives ``[max(0, D - s), min(u, D + s)]``, negatives
``[max(l, D - s), D + s]``), and a metric within such intervals exists iff
``lo_e <= `` the ``hi``-shortest path between the ends of every pair ``e``
(the shortest-path metric of ``hi`` is then one).  Two consecutive
same-class steps of a path can be replaced by one without making it
longer, so a shortest path alternates between classes and has at most one
more positive step than negative steps; capped positives (``hi = u``) have
``u >= D - s``, uncapped steps ``hi = D + s``, so the path is at least
``sum D - s >= D_e - s``, and every negative step has ``hi = D + s >= l``.
So the only obstruction beyond ``L_max`` is Euclidean realisability in
``R^n`` (and the bounds above that see it).

Upper bounds (feasible points)
------------------------------
The class-collapsed layout (class centres spread until ``>= l`` apart; the
class minimum-enclosing-ball centres for ``"haus"`` when ``l = 0``), the
fully collapsed layout when ``l = 0``, clipped layouts (each class shrunk
about its mean to diameter ``<= u``, centres spread by a growing factor),
and the shared local solvers with rows 5 and 6 of
:mod:`isoapprox.kernels.ideal`; every point is re-scored and checked
feasible in float64 by the caller.  With ``u = 0`` every class with two or
more points is merged into one point in every program.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._scaling import pow2_scale
from ..geometry import min_enclosing_ball
from ..kernels import ideal as K
from ..losses import contrastive_report, margin_loss_report
from ..packing import packing_lower_bound
from ._problem import PairBounds, Problem
from ._starts import class_means, smacof, spread_centres

__all__ = [
    "LOSSES",
    "PairSpec",
    "class_ball_bound",
    "clipped_layouts",
    "pair_packing_bound",
    "pair_slack",
    "pair_target_start",
    "radius_lower",
    "repair_pairs",
]

LOSSES = ("contrastive", "margin")

#: greedy transversals are grown from at most this many seeds
PACKING_MAX_SEEDS = 256
#: spreading factors of the class centres in the clipped layouts
CLIP_SPREAD = (1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


@dataclass(frozen=True)
class PairSpec:
    """Which pair loss, its parameters, and the bounds of its zero set (caller units)."""

    loss: str
    margin: float
    pos_margin: float
    beta: float
    bounds: PairBounds

    def thresholds(self) -> dict[str, float]:
        """The loss parameters and the bounds ``upper`` (u) and ``lower`` (l)."""
        out = {"margin": self.margin}
        if self.loss == "contrastive":
            out["pos_margin"] = self.pos_margin
        else:
            out["beta"] = self.beta
        out["upper"] = self.bounds.upper
        out["lower"] = self.bounds.lower
        return out

    def loss_max(self, E: np.ndarray, codes: np.ndarray) -> float:
        """``L_max``, the max-reduced loss, by the public loss functions."""
        if self.loss == "contrastive":
            rep = contrastive_report(E, codes, margin=self.margin, pos_margin=self.pos_margin,
                                     reduction="max")
        else:
            rep = margin_loss_report(E, codes, margin=self.margin, beta=self.beta,
                                     reduction="max")
        return rep.worst


def pair_slack(G: np.ndarray, codes: np.ndarray, pairs: PairBounds) -> float:
    """Worst slack ``min(u - d_pos, d_neg - l)`` in ``G``'s units (float64).

    Negatives count only when ``l > 0``; ``inf`` when no pair constrains.
    The points and bounds are scaled by a power of two first (exact), so
    extreme magnitudes neither overflow nor underflow.
    """
    s = pow2_scale(G, np.array([pairs.upper, pairs.lower]))
    sp, sn = K.pair_slack(G * s if s != 1.0 else G, codes, pairs.upper * s, pairs.lower * s)
    v = sp if pairs.lower <= 0.0 else min(sp, sn)
    return float(v) / s


def repair_pairs(G: np.ndarray, codes: np.ndarray, pairs: PairBounds, n_classes: int,
                 snap) -> np.ndarray | None:
    """Make a nearly feasible ``G`` feasible in float64, or return None.

    Near-collapsed classes are snapped to their means (``snap``); classes
    whose diameter exceeds ``u`` are shrunk about their means; when a
    negative pair is closer than ``l`` the whole layout is scaled about its
    centroid.  Three alternating rounds.
    """
    u, l = pairs.upper, pairs.lower
    for _ in range(3):
        G = snap(G)
        if pair_slack(G, codes, pairs) >= 0.0:
            return G
        s = pow2_scale(G, np.array([u, l]))
        sp, sn = K.pair_slack(G * s, codes, u * s, l * s)
        if sp < 0.0:
            diams = K.class_diameters(G * s, codes, n_classes)[:-1] / s
            G = G.copy()
            for c in np.flatnonzero(diams > u):
                idx = np.flatnonzero(codes == c)
                m = G[idx].mean(axis=0)
                G[idx] = m + (G[idx] - m) * (u / diams[c] * (1.0 - 1e-12))
        elif l > 0.0 and sn < 0.0:
            dmin = (sn / s) + l
            if dmin <= 0.0:
                return None
            c = G.mean(axis=0)
            G = c + (G - c) * (l / dmin * (1.0 + 1e-12))
    G = snap(G)
    return G if pair_slack(G, codes, pairs) >= 0.0 else None


# ----------------------------------------------------------------------
# constructions and starts (normalised units)
# ----------------------------------------------------------------------


def pair_target_start(prob: Problem) -> np.ndarray:
    """SMACOF realisation of the clipped table (``min(D, u)``, ``max(D, l)``)."""
    E = prob.E
    diff = E[:, None, :] - E[None, :, :]
    D = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    same = prob.codes[:, None] == prob.codes[None, :]
    T = np.where(same, np.minimum(D, prob.pairs.upper), np.maximum(D, prob.pairs.lower))
    np.fill_diagonal(T, 0.0)
    return smacof(T, E.copy())


def clipped_layouts(prob: Problem, rng: np.random.Generator) -> list[np.ndarray]:
    """Classes shrunk about their means to diameter ``<= u``, centres spread.

    Returns candidates for the spreading factors in ``CLIP_SPREAD`` (the
    caller checks feasibility); empty when ``u = 0`` (the class-collapsed
    layout covers it).
    """
    u = prob.pairs.upper
    if u <= 0.0:
        return []
    codes = prob.codes
    P = int(codes.max()) + 1
    diams = K.class_diameters(prob.E, codes, P)[:-1]
    lam = np.where(diams > u, u / np.where(diams > 0.0, diams, 1.0) * (1.0 - 1e-9), 1.0)
    M = class_means(prob)
    C = spread_centres(M, prob.pairs.lower, rng)
    c0 = C.mean(axis=0)
    R = lam[codes, None] * (prob.E - M[codes])
    return [c0 + f * (C - c0)[codes] + R for f in CLIP_SPREAD]


# ----------------------------------------------------------------------
# the packing bound
# ----------------------------------------------------------------------


def radius_lower(k: int, n: int, lower: float) -> float:
    """Proven lower bound on the least enclosing radius of ``k`` ``l``-separated points in ``R^n``.

    The largest of the candidates listed under ``packing`` in the module docstring.
    """
    if k <= 1 or lower <= 0.0:
        return 0.0
    cands = [math.sqrt((k - 1) / (2.0 * k)), 0.5 * (k ** (1.0 / n) - 1.0),
             0.5 * packing_lower_bound(k, n, margin=1.0)]
    if k >= n + 2:
        cands.append(1.0 / math.sqrt(2.0))
    if n == 1:
        cands.append(0.5 * (k - 1))
    return lower * max(cands)


def _greedy_transversals(D: np.ndarray, codes: np.ndarray, P: int, kmin: int
                         ) -> dict[int, tuple[float, np.ndarray]]:
    """For each size ``k >= kmin``, the least-diameter greedy transversal found."""
    N = D.shape[0]
    if N <= PACKING_MAX_SEEDS:
        seeds = np.arange(N)
    else:
        seeds = np.unique(np.linspace(0, N - 1, PACKING_MAX_SEEDS).astype(np.int64))
    best: dict[int, tuple[float, np.ndarray]] = {}
    for seed in seeds:
        used = np.zeros(P, dtype=bool)
        used[codes[seed]] = True
        reach = D[seed].copy()
        members = [int(seed)]
        diam = 0.0
        for k in range(2, P + 1):
            cand = ~used[codes]
            r = np.where(cand, reach, np.inf)
            j = int(np.argmin(r))
            diam = max(diam, float(r[j]))
            members.append(j)
            used[codes[j]] = True
            reach = np.maximum(reach, D[j])
            if k >= kmin and (k not in best or diam < best[k][0]):
                best[k] = (diam, np.array(members))
    return best


def pair_packing_bound(prob: Problem) -> float:
    """The packing bound (normalised units; 0 when it does not apply)."""
    l = prob.pairs.lower
    codes = prob.codes
    P = int(codes.max()) + 1
    n = prob.n
    kmin = n + 2 if prob.objective == "iso" else 3
    if l <= 0.0 or P < kmin:
        return 0.0
    E = prob.E
    N = prob.N
    D = np.zeros((N, N))
    D[prob.I, prob.J] = prob.D
    D[prob.J, prob.I] = prob.D
    best = 0.0
    for k, (diam, S) in _greedy_transversals(D, codes, P, kmin).items():
        d_low = packing_lower_bound(k, n, margin=l)
        if prob.objective == "iso":
            best = max(best, d_low - diam)
            continue
        ball = min_enclosing_ball(E[S])
        # an enclosing radius, recomputed: an upper bound on R(E_S)
        r_up = float(np.max(np.sqrt(np.sum((E[S] - ball.center) ** 2, axis=1))))
        best = max(best, radius_lower(k, n, l) - r_up, 0.5 * (d_low - diam))
    return max(best, 0.0)


# ----------------------------------------------------------------------
# the class-ball bound (haus)
# ----------------------------------------------------------------------


def _class_balls(prob: Problem):
    """Per class: computed centre, certified ``R_lo``, centre error bound, ``rho``."""
    codes = prob.codes
    P = int(codes.max()) + 1
    n = prob.n
    jung = math.sqrt(n / (2.0 * (n + 1)))
    out = []
    for c in range(P):
        X = prob.E[codes == c]
        ball = min_enclosing_ball(X)
        r_up = float(np.max(np.sqrt(np.sum((X - ball.center) ** 2, axis=1))))
        r_lo = max(float(ball.lower), 0.0)
        err = math.sqrt(max(r_up * r_up - r_lo * r_lo, 0.0))
        rho = jung * prob.pairs.upper if X.shape[0] > 1 else 0.0
        out.append((ball.center, r_lo, err, rho))
    return out


def _ball_reach(delta: float, r_lo: float, err: float, rho: float, line: bool) -> float:
    """Largest ``|g_X - m~_X|``, or ``-1`` when the class cannot fit within ``delta``."""
    a = rho + delta
    if a < r_lo:
        return -1.0
    if line:
        return a - r_lo + err
    return math.sqrt(a * a - r_lo * r_lo) + err


def _pair_infeasible(delta: float, A: tuple, B: tuple, dm: float, l2: float,
                     line: bool) -> bool:
    """Whether classes ``A``, ``B`` provably cannot be ``l`` apart within ``delta``."""
    ha = _ball_reach(delta, A[1], A[2], A[3], line)
    hb = _ball_reach(delta, B[1], B[2], B[3], line)
    if ha < 0.0 or hb < 0.0:
        return True
    return (dm + ha + hb) ** 2 + A[3] ** 2 + B[3] ** 2 < l2


def class_ball_bound(prob: Problem, upper: float) -> float:
    """The class-ball bound on ``d_haus`` (normalised units; see the module docstring).

    ``upper`` (a feasible value) caps the bisection.
    """
    l = prob.pairs.lower
    balls = _class_balls(prob)
    best = 0.0
    for r_lo, _, rho in ((b[1], b[2], b[3]) for b in balls):
        best = max(best, r_lo - rho)
    if l <= 0.0 or len(balls) < 2 or not upper > best:
        return max(best, 0.0)
    l2 = l * l
    line = prob.n == 1
    for a in range(len(balls)):
        for b in range(a + 1, len(balls)):
            A, B = balls[a], balls[b]
            dm = float(np.sqrt(np.sum((A[0] - B[0]) ** 2)))
            lo, hi = best, upper
            if not _pair_infeasible(lo, A, B, dm, l2, line):
                continue
            if _pair_infeasible(hi, A, B, dm, l2, line):  # pragma: no cover - feasible value
                continue
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                if _pair_infeasible(mid, A, B, dm, l2, line):
                    lo = mid
                else:
                    hi = mid
                if hi - lo <= 1e-13 * hi:
                    break
            best = max(best, lo)
    return max(best, 0.0)
