"""The pair family: zero-loss sets of the contrastive and margin losses.

Design notes: docs/dev/zero_loss_design.md, section ``isoapprox.ideal._pairs``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import squareform

from .._scaling import pow2_scaled
from ..geometry import min_enclosing_ball
from ..kernels import ideal as K
from ..losses import contrastive_report, margin_loss_report
from ..packing import packing_lower_bound, radius_lower_bound
from ._problem import PairBounds, Problem
from ._starts import class_means, spread_centres, table_start

__all__ = [
    "PAIR_LOSSES",
    "PairSpec",
    "class_ball_bound",
    "clipped_layouts",
    "greedy_transversals",
    "pair_packing_bound",
    "pair_slack",
    "pair_target_start",
    "repair_pairs",
]

#: the pair losses whose zero-loss sets :func:`~isoapprox.ideal.nearest_zero_loss` reaches
#: (not the training losses of :data:`isoapprox.losses.LOSSES`)
PAIR_LOSSES = ("contrastive", "margin")

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
        return {**self.parameters(), "upper": self.bounds.upper, "lower": self.bounds.lower}

    def parameters(self) -> dict[str, float]:
        """The loss's parameters by argument name (``margin`` and ``pos_margin`` or ``beta``)."""
        if self.loss == "contrastive":
            return {"margin": self.margin, "pos_margin": self.pos_margin}
        return {"margin": self.margin, "beta": self.beta}

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
    Gs, s = pow2_scaled(G, np.array([pairs.upper, pairs.lower]))
    sp, sn = K.pair_slack(Gs, codes, pairs.upper * s, pairs.lower * s)
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
        Gs, s = pow2_scaled(G, np.array([u, l]))
        sp, sn = K.pair_slack(Gs, codes, u * s, l * s)
        if sp < 0.0:
            diams = K.class_diameters(Gs, codes, n_classes)[:-1] / s
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
    u, l = prob.pairs.upper, prob.pairs.lower
    return table_start(prob, lambda D: np.minimum(D, u), lambda D: np.maximum(D, l))


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


def greedy_transversals(D: np.ndarray, codes: np.ndarray, P: int, kmin: int
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
    best = 0.0
    for k, (diam, S) in greedy_transversals(squareform(prob.D), codes, P, kmin).items():
        d_low = packing_lower_bound(k, n, margin=l)
        if prob.objective == "iso":
            best = max(best, d_low - diam)
            continue
        # re-scored from its centre: an upper bound on R(E_S)
        r_up = min_enclosing_ball(E[S]).radius
        best = max(best, radius_lower_bound(k, n, margin=l) - r_up, 0.5 * (d_low - diam))
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
    """The class-ball bound on ``d_haus`` (normalised units; see docs/dev/zero_loss_design.md).

    ``upper`` (a feasible value) caps the bisection.
    """
    l = prob.pairs.lower
    balls = _class_balls(prob)
    best = max([0.0] + [r_lo - rho for _, r_lo, _, rho in balls])
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
