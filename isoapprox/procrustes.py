"""Minimax (sup-norm) Procrustes: the best isometry under the max norm.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.procrustes``.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize

from ._blas import single_threaded_blas
from ._scaling import pow2_scaled_pair
from ._typing import ArrayLike, FloatArray, RNGLike
from ._validation import (
    as_points,
    as_rng,
    check_int,
    check_nonnegative,
    check_positive,
    check_same_shape,
)
from .bracket import Bracket, Bracketed
from .exceptions import ConvergenceWarning
from .geometry import ball_bracket, dense_distances, frank_wolfe_step
from .kernels import distances as KD
from .kernels import meb as KM
from .kernels import planar as KP

__all__ = ["ProcrustesResult", "minimax_procrustes"]

_EPS = float(np.finfo(float).eps)
#: initial number of equal angle intervals per family in the planar search
_M0 = 16


@dataclass(frozen=True)
class ProcrustesResult(Bracketed):
    """Best isometry ``x -> Q x + b`` under the max norm, with a certified bracket.

    Attributes
    ----------
    Q : ndarray of shape (n, n)
        Orthogonal matrix (``det = -1`` for a reflection).
    b : ndarray of shape (n,)
        Translation.
    bracket : Bracket
        ``value``, ``lower``, ``upper`` and ``certified`` below (both ends'
        source: ``method``), read by the attributes below.
    value : float
        ``max_k ||Q E1_k + b - E2_k||``, re-scored in float64 for the
        returned ``(Q, b)``; equal to ``upper``.
    lower, upper, gap : float
        Proven bounds ``lower <= min_{Q, b} max_k ||Q E1_k + b - E2_k|| <=
        upper`` and ``gap = upper - lower``.
    certified : bool
        ``gap <= max(rtol * scale, atol)`` with ``scale = max(R(E1), R(E2))``
        (for ``n >= 3`` a proven lower bound of it within 0.1 %, so never a
        looser target).
    reflection : bool
        ``det(Q) < 0``.
    n_iter : int
        Objective evaluations (planar search), or Riemannian trial steps plus
        SLSQP iterations (``n >= 3``).
    method : str
        ``"trivial"`` (``N = 1``, or both centred clouds single points),
        ``"exact-1d"``, ``"branch-and-bound-2d"`` or ``"kabsch-riemannian"``
        (``n >= 3``).
    """

    Q: FloatArray
    b: FloatArray
    SERIAL_FIELDS = ("Q", "b", "value", "lower", "upper", "gap", "certified", "reflection",
                     "n_iter", "method")
    bracket: Bracket
    reflection: bool
    n_iter: int
    method: str

    @classmethod
    def trivial(cls, b: np.ndarray) -> ProcrustesResult:
        """The exact translation ``x -> x + b`` (``Q = I``, value 0)."""
        return cls(np.eye(b.shape[0]), b, Bracket(0.0, 0.0, 0.0, True, "trivial", "trivial"),
                   False, 0, "trivial")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _meb_nd(X: np.ndarray):
    """MEB of the small point sets of inner loops (any dimension).

    :func:`isoapprox.geometry.ball_bracket` with a rounding allowance on the
    lower bound.  Returns ``(center, radius, lower, support, weights)``;
    ``radius`` is attained by ``center`` and ``lower`` is a dual value, both
    proven; ``weights`` on ``support`` certify ``lower``.
    """
    center, lo, _, (support, weights), _ = ball_bracket(X)
    radius, _ = KD.farthest_from(X, center)
    Y = X - X.mean(axis=0)
    lower = max(min(lo - 64 * _EPS * _absmax(Y), float(radius)), 0.0)
    return center, float(radius), lower, support, weights


def _meb(X: np.ndarray) -> tuple[np.ndarray, float, float]:
    """MEB centre, radius (attained) and a proven lower bound of the radius."""
    if X.shape[1] == 2:
        order = np.arange(X.shape[0])
        sup = np.empty(3, dtype=np.int64)
        w = np.empty(3)
        cx, cy, r = KM.meb_2d(X, order, sup, w)
        c = np.array([cx, cy])
        idx = sup[sup >= 0]
        ww = w[: len(idx)]
        cw = ww @ X[idx]
        g = float(ww @ np.sum((X[idx] - cw) ** 2, axis=1))
        lo = min(max(np.sqrt(g) - 64 * _EPS * _absmax(X), 0.0), r)
        return c, float(r), float(lo)
    if X.shape[1] == 1:
        lo_, hi_ = float(X.min()), float(X.max())
        c = np.array([0.5 * (lo_ + hi_)])
        r = float(np.max(np.abs(X[:, 0] - c[0])))
        return c, r, max(0.5 * (hi_ - lo_) * (1 - 4 * _EPS), 0.0)
    c, r, lo, _, _ = _meb_nd(X)
    return c, r, lo


#: relative accuracy of the MEB radii that set the tolerance when n >= 3, and
#: the Frank-Wolfe iterations per working-set round that reach it
_SCALE_RTOL = 1e-3
_SCALE_FW_ITER = 10_000


def _scale_radius(X: np.ndarray) -> float:
    """``R(X)`` for ``n <= 2``; for ``n >= 3`` a proven lower bound within about ``_SCALE_RTOL``.

    Only the tolerance depends on it, and a smaller scale only tightens it.
    Frank-Wolfe on the MEB dual over a working set grown by the farthest
    point (the coarse phase of :func:`isoapprox.geometry.ball_bracket`,
    without its exact polish: the circumcentre of hundreds of support
    points on a sphere in R^512 costs seconds).  The dual value
    ``sum_k u_k ||y_k - ybar_u||^2 <= R^2`` holds for any weights ``u``.
    """
    N = X.shape[0]
    if X.shape[1] <= 2:
        return _meb(X)[1]
    Y = np.ascontiguousarray(X - X.mean(axis=0))
    _, i = KD.farthest_from(Y, Y[0])
    _, j = KD.farthest_from(Y, Y[i])
    idx = np.unique(np.array([i, j], dtype=np.int64))
    u = np.full(len(idx), 1.0 / len(idx))
    lo = 0.0
    for _ in range(N):  # each round adds one point to the working set
        c, _ = KM.meb_dual_fw(Y, idx, u, _SCALE_FW_ITER, _SCALE_RTOL)
        r_out, far = KD.farthest_from(Y, c)
        w = u / u.sum()
        diff = Y[idx] - w @ Y[idx]
        lo = float(np.sqrt(max(float(w @ np.einsum("ij,ij->i", diff, diff)), 0.0)))
        if r_out <= lo * (1.0 + _SCALE_RTOL) or np.any(idx == far):
            break
        idx = np.append(idx, far)
        u = np.append(u, 0.0)
    return max(lo - 64 * _EPS * _absmax(Y), 0.0)


def _absmax(*arrays: np.ndarray) -> float:
    return max((float(np.max(np.abs(a))) for a in arrays if a.size), default=0.0)


def _rescore(X1: np.ndarray, X2: np.ndarray, Q: np.ndarray, b: np.ndarray) -> float:
    R = X1 @ Q.T + b - X2
    return float(np.sqrt(np.max(np.einsum("ij,ij->i", R, R))))


def _triangle_radii(D: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """MEB radii of the triangles ``idx`` (T, 3) given a distance matrix.

    Obtuse or right triangles: half the longest side; acute ones: the
    circumradius ``abc / (4 area)`` with Kahan's stable Heron formula.
    """
    s = np.sort(
        np.stack([D[idx[:, 0], idx[:, 1]], D[idx[:, 0], idx[:, 2]], D[idx[:, 1], idx[:, 2]]], 1),
        axis=1,
    )
    c, b, a = s[:, 0], s[:, 1], s[:, 2]  # a >= b >= c
    half = 0.5 * a
    obtuse = a * a >= b * b + c * c
    prod = (a + (b + c)) * (c - (a - b)) * (c + (a - b)) * (a + (b - c))
    area4 = np.sqrt(np.maximum(prod, 0.0))  # = 4 * area
    with np.errstate(divide="ignore", invalid="ignore"):
        circ = a * b * c / area4
    return np.where(obtuse | ~(area4 > 0.0), half, circ)


def _subset_lower_bound(X1: np.ndarray, X2: np.ndarray, max_points: int = 40) -> float:
    """``max |R(E1_S) - R(E2_S)|`` over pairs and triples ``S`` (proven lower bound).

    Pairs give ``isometric_error / 2``; triples (only when ``N <= max_points``;
    beyond, pairs only, by the fused kernel) can be larger.  Each radius is
    computed to a few ulps; the allowance is subtracted.
    """
    N = X1.shape[0]
    if N > max_points:
        value, _, _ = KD.isometric_error_kernel(X1, X2)  # fused, O(N) memory
        slack = 64 * _EPS * 2 * (_absmax(X1) + _absmax(X2))
        return max(0.5 * float(value) - slack, 0.0)
    D1 = dense_distances(X1)
    D2 = dense_distances(X2)
    iu = np.triu_indices(N, 1)
    best = 0.5 * float(np.max(np.abs(D1[iu] - D2[iu]))) if N >= 2 else 0.0
    if N >= 3:
        idx = np.array(list(combinations(range(N), 3)), dtype=np.int64)
        r1 = _triangle_radii(D1, idx)
        r2 = _triangle_radii(D2, idx)
        best = max(best, float(np.max(np.abs(r1 - r2))))
    slack = 64 * _EPS * (_absmax(D1) + _absmax(D2))
    return max(best - slack, 0.0)


def _dual_value(a: np.ndarray, e: np.ndarray, w: np.ndarray):
    """``Phi(w) = K_w - 2 ||M_w||_*`` and the minimising ``Q`` (over O(n)).

    ``Phi(w) <= min_Q r(Q)^2`` for every ``w`` on the simplex (weak duality
    of the MEB, then the minimum of a linear function of ``Q`` over O(n)).
    Returns ``(Phi, allowance, Q)``.  Only the points with ``w > 0`` enter
    ``K_w`` and ``M_w``: ``O(s n^2 + n^3)`` for ``s`` of them.
    """
    sup = np.flatnonzero(w > 0.0)
    ws = w[sup]
    a_s, e_s = a[sup], e[sup]
    u = e_s - ws @ e_s
    v = a_s - ws @ a_s
    K = float(ws @ (np.einsum("ij,ij->i", u, u) + np.einsum("ij,ij->i", v, v)))
    M = (v * ws[:, None]).T @ u
    U, S, Vt = np.linalg.svd(M)
    nuc = float(S.sum())
    Q = Vt.T @ U.T
    allow = 64 * _EPS * a.shape[1] * (K + 2 * nuc)
    return K - 2 * nuc, allow, Q


def _simplex(w: np.ndarray) -> np.ndarray:
    w = np.maximum(np.asarray(w, dtype=float), 0.0)
    s = w.sum()
    if not (s > 0) or not np.isfinite(s):
        return np.full(len(w), 1.0 / len(w))
    return w / s


class _BudgetSpent(Exception):
    """Raised inside the SLSQP objective when the dual's evaluations are spent."""


def _dual_lower_bound(
    a: np.ndarray,
    e: np.ndarray,
    starts: list[np.ndarray],
    target: float = np.inf,
    max_evals: int = 400,
) -> tuple[float, np.ndarray]:
    """Maximise the concave dual ``Phi`` over the simplex from the given starts.

    Frank-Wolfe (step ``2 / (t + 2)``, at most 40 steps) from each start,
    an SLSQP polish over at most 60 weights, then Frank-Wolfe from the best
    weights; stops as soon as the bound reaches ``target``, and after
    ``max_evals`` evaluations of ``Phi`` in all (each ``O(s n^2 + n^3)`` on
    the support ``s`` of the weights, plus ``O(N n^2)`` for a Frank-Wolfe
    step; the starts get at most an equal share each).  Every
    weight vector evaluated on the simplex is a valid certificate; the best
    ``sqrt(Phi - allowance)`` is returned with its weights.
    """
    N = a.shape[0]
    n_fw = min(40, max(1, (max_evals - len(starts)) // (len(starts) + 1)))
    best_val = -np.inf
    best_w = np.full(N, 1.0 / N)
    evals = 0

    def score(w):
        nonlocal evals
        evals += 1
        phi, allow, Q = _dual_value(a, e, w)
        return phi - allow, Q

    goal = target * abs(target)

    def frank_wolfe(w, t0, steps):
        """Frank-Wolfe steps ``2 / (t + 3)``, ``t = t0, t0 + 1, ...``, from ``w``."""
        nonlocal best_val, best_w
        for t in range(t0, t0 + steps):
            if evals >= max_evals or best_val >= goal:
                return
            val, Q = score(w)
            if val > best_val:
                best_val, best_w = val, w.copy()
            p = e - a @ Q.T
            pb = w @ p
            grad = np.einsum("ij,ij->i", p - pb, p - pb)
            w = frank_wolfe_step(w, grad, t)

    for w0 in starts:
        w = _simplex(w0)
        val, _ = score(w)
        if val > best_val:
            best_val, best_w = val, w
    if best_val >= goal:
        return float(np.sqrt(max(best_val, 0.0))), best_w
    for w0 in starts:
        frank_wolfe(_simplex(w0), 0, n_fw)
    if evals >= max_evals or best_val >= goal:
        return float(np.sqrt(max(best_val, 0.0))), best_w
    # SLSQP polish of the best weights (smooth where singular values are
    # simple), over the points that carry weight or lie farthest from the
    # weighted centre (at most 60 variables)
    _, _, Q = _dual_value(a, e, best_w)
    p = e - a @ Q.T
    far = np.argsort(-np.einsum("ij,ij->i", p - best_w @ p, p - best_w @ p), kind="stable")
    keep = np.union1d(np.flatnonzero(best_w > 0.0), far[: 2 * a.shape[1] + 2])
    if len(keep) > 60:
        keep = keep[np.argsort(-best_w[keep], kind="stable")[:60]]
    ak, ek = a[keep], e[keep]
    seen = {"x": None}

    def f(v):
        nonlocal evals
        if evals >= max_evals:
            raise _BudgetSpent
        evals += 1
        v = np.maximum(v, 0.0)
        seen["x"] = v
        phi, _, Qv = _dual_value(ak, ek, v)
        pv = ek - ak @ Qv.T
        g = np.einsum("ij,ij->i", pv, pv) - 2 * pv @ (v @ pv)
        return -phi, -g

    x = None
    try:
        res = minimize(
            f,
            _simplex(best_w[keep]),
            jac=True,
            method="SLSQP",
            bounds=[(0.0, 1.0)] * len(keep),
            constraints=[
                {"type": "eq", "fun": lambda v: np.sum(v) - 1.0, "jac": lambda v: np.ones_like(v)}
            ],
            options={"maxiter": 200, "ftol": 1e-16},
        )
        x = res.x
    except _BudgetSpent:
        x = seen["x"]
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - defensive
        x = None
    if x is not None:
        w = np.zeros(N)
        w[keep] = _simplex(x)
        val, _ = score(w)
        if val > best_val:
            best_val, best_w = val, w
    # what is left of the budget: small Frank-Wolfe steps from the best weights
    # (they reach points that the polish's 60 variables leave out)
    frank_wolfe(best_w.copy(), n_fw, max_evals - evals)
    return float(np.sqrt(max(best_val, 0.0))), best_w


# ---------------------------------------------------------------------------
# the three dimension regimes
# ---------------------------------------------------------------------------


def _solve_1d(X1, X2):
    def fit(sgn):  # the best translation for Q = [sgn]: radius, sign, centre
        p = X2[:, 0] - sgn * X1[:, 0]
        lo, hi = float(p.min()), float(p.max())
        return 0.5 * (hi - lo), sgn, 0.5 * (lo + hi)

    r, sgn, c = min(fit(1.0), fit(-1.0), key=lambda t: t[0])  # ties: the rotation
    return np.array([[sgn]]), np.array([c]), max(r * (1 - 4 * _EPS), 0.0), 2, "exact-1d", True


def _solve_2d(X1, X2, tol, max_iter):
    c1, _, _ = _meb(X1)
    c2 = X2.mean(axis=0)
    A = np.ascontiguousarray(X1 - c1)
    E = np.ascontiguousarray(X2 - c2)
    AF = A.copy()
    AF[:, 1] = -AF[:, 1]
    L = float(np.max(np.sqrt(np.einsum("ij,ij->i", A, A)))) * (1.0 + 1e-12)
    fam, phi, cx, cy, upper, lower, n_eval, conv = KP.minimax_angle_search(
        A, AF, E, L, tol, max_iter, _M0
    )
    c, s = np.cos(phi), np.sin(phi)
    Q = np.array([[c, -s], [s, c]])
    if fam == 1:
        Q = Q @ np.diag([1.0, -1.0])
    b = np.array([cx, cy]) + c2 - Q @ c1
    return Q, b, float(lower), int(n_eval), "branch-and-bound-2d", bool(conv)


# ---------------------------------------------------------------------------
# n >= 3: reduction to the span of the data
# ---------------------------------------------------------------------------
#
# Claim.  Let a_k, e_k be the centred rows, A = span(a), E = span(e),
# r1 = dim A, r2 = dim E, and W any subspace with A + E <= W and
# dim W >= min(r1 + r2, n).  Then the minimum over (Q, b) in O(n) x R^n
# equals the minimum over the Q that map W onto itself and fix its
# orthogonal complement, with b in W: the problem is the same problem in
# dim W coordinates.
#
# Proof.  One direction is trivial (those Q are orthogonal).  Conversely take
# any (Q, b) and write P for the orthogonal projection onto the complement
# E' of E.  F = W n E' has dim F = dim W - r2 >= min(r1, n - r2), and
# P Q(A) is a subspace of E' of dimension <= min(r1, n - r2), so some
# orthogonal R that fixes E pointwise (and acts inside E') maps P Q(A) into F.
# Then R Q a_k = (component in E) + R P Q a_k lies in E + F = W, and since
# R e_k = e_k, ||R Q a_k + R b - e_k|| = ||Q a_k + b - e_k||: the value does
# not change.  Split R b = b_W + b_perp along W and its complement; every
# R Q a_k - e_k lies in W, so ||R Q a_k + b_W - e_k|| <= ||R Q a_k + R b - e_k||
# and dropping b_perp does not increase the value.  Finally R Q restricted to
# A is a linear isometry from A into W, and A <= W; it extends to an
# orthogonal map Q_W of W (complete orthonormal bases of A and of R Q(A) to
# bases of W), and Q' = Q_W + (identity on the complement of W) satisfies
# Q' a_k = R Q a_k.  So (Q', b_W) is no worse than (Q, b).  QED.
#
# W = A + E itself is not enough when A and E intersect: the optimum may tilt
# part of A out of A + E (into F), so W is padded to dim min(r1 + r2, n).
#
# The claim is what makes the reduced search lose nothing; the bracket does
# not rely on it.  The upper bound is the re-scored value of the lifted
# (Q, b) on the original points.  The lower bounds are the subset bound, on
# the original points, and the dual value Phi(w) = K_w - 2 ||M_w||_*, which
# depends on the points only through weighted inner products: computed from
# the stored coordinates alpha = a B, eps = e B it is Phi of the points
# B~ alpha_k, B~ eps_k of R^n (B~ the orthonormal polar factor of B, which
# is orthonormal only to rounding), hence a lower bound of their optimum over
# all of O(n).  Those points lie within
#     rho = max_k ||a_k - B alpha_k|| + ||B^T B - I||_F max_k ||alpha_k||
# (and the same for e) of a_k, e_k (the cut singular values included), and
# the optimum is 1-Lipschitz in such displacements, so the dual bound minus
# rho_a + rho_e is a lower bound of the original problem.

#: singular values below this fraction of the largest are cut (their share of
#: the data is measured and subtracted from the lower bound, see above)
_RANK_RTOL = 1e-12


def _basis(X: np.ndarray) -> np.ndarray:
    """Orthonormal basis (columns) of the numerical row space of ``X``."""
    _, s, Vt = np.linalg.svd(X, full_matrices=False)
    if not s.size or not s[0] > 0.0:
        return np.zeros((X.shape[1], 0))
    return Vt[: int(np.count_nonzero(s > _RANK_RTOL * s[0]))].T


def _reduce(a: np.ndarray, e: np.ndarray):
    """Coordinates of the centred points in a subspace that loses nothing.

    Returns ``(B, alpha, eps, slack)``: ``B`` of shape ``(n, d)`` with
    ``d = min(r1 + r2, n)`` (``None`` when ``d = n``: no reduction, the
    coordinates are the points themselves), ``alpha = a B``, ``eps = e B``
    and ``slack = rho_a + rho_e`` (see the proof above).  ``O(N n min(N, n))``.
    """
    N, n = a.shape
    Ba = _basis(a)
    r1 = Ba.shape[1]
    r2 = _basis(e).shape[1]
    d = min(r1 + r2, n)
    if d == n:
        return None, a, e, 0.0
    e_perp = e - (e @ Ba) @ Ba.T
    Be = _basis(e_perp)
    B0 = np.hstack([Ba, Be])
    if B0.shape[1] < d:  # pad with directions orthogonal to both spans
        Qc, _ = np.linalg.qr(B0, mode="complete")
        B0 = np.hstack([B0, Qc[:, B0.shape[1] : d]])
    B = np.linalg.qr(B0[:, :d])[0]
    alpha = a @ B
    eps = e @ B
    orth = float(np.linalg.norm(B.T @ B - np.eye(d)))

    def rho(x, y):
        res = x - y @ B.T
        off = float(np.sqrt(np.max(np.einsum("ij,ij->i", res, res))))
        big = float(np.sqrt(np.max(np.einsum("ij,ij->i", y, y))))
        # the residual is computed to a few ulps of the coordinates
        return off + orth * big + 16 * _EPS * n * (_absmax(x) + big)

    return B, alpha, eps, rho(a, alpha) + rho(e, eps)


def _lift(B: np.ndarray | None, Q: np.ndarray) -> np.ndarray:
    """``B Q B^T + (I - B B^T)``: the reduced rotation acting on R^n."""
    if B is None:
        return Q
    n = B.shape[0]
    out = np.eye(n) - B @ B.T
    out += (B @ Q) @ B.T
    return out


# ---------------------------------------------------------------------------
# n >= 3: the Riemannian prox-Newton refinement
# ---------------------------------------------------------------------------
#
# Notation (reduced coordinates, d = dim W): points alpha_k, targets eps_k,
# residuals r_k = Q alpha_k + beta - eps_k, phi_k = ||r_k||^2, f = max phi_k.
# A step moves Q -> Q cay(S) (S skew, cay(S) = (I - S/2)^-1 (I + S/2)) and
# beta -> beta + delta.  To first order
#     phi_k -> phi_k + 2 x_k . (S (alpha_k - m) + delta'')   with x_k = Q^T r_k,
# delta'' = Q^T delta + S m, and m the multiplier-weighted mean of alpha.
# Each step minimises the model
#     max_{k in working set} (phi_k + g_k . z) + z^T H z / (2 mu)
# through its dual, a QP over the simplex of working-set weights lambda with
# the Gram matrix g_a^T H^-1 g_b (size m x m).  H is the Hessian of the
# Lagrangian sum_k lambda_k phi_k at the previous multipliers: in the
# eigenbasis of Z = C - sym(Y), C = sum lambda (alpha - m)(alpha - m)^T,
# Y = sum lambda (alpha - m) x^T, it is diagonal, 2 (z_i + z_j) on the
# entry (i, j) of S (the second-order terms of the residuals and of the
# Cayley map) and 2 on delta''.  z is replaced by max(|z|, floor), which
# changes nothing near an isometry (Z ~ C is positive there) and keeps H
# positive definite for clouds far from isometric.  Its inverse
# 1 / (z_i + z_j) is written as a short exponential sum (trapezoidal rule
# for 1/x = int exp(t - x e^t) dt, step 2: within 7 %, at most 7 terms),
# which makes the Gram matrix a sum of p Hadamard products of m x m matrices:
# O(p m^2 d) instead of O(m^2 d^2), and never a d^2 x d^2 matrix.  The QP
# is solved exactly by block principal pivoting (Cholesky solves on its
# support, warm-started from the previous multipliers).  mu <= 1 is adapted
# by the ratio of actual to predicted decrease (a trust region); mu = 1 is a
# Newton step.  Near an isometry the iteration converges quadratically (10
# to 20 steps on 2000 x 128 and 500 x 512 clouds); where |z| replaces z it
# converges linearly.  The working set is the m points of largest phi_k,
# m about 5/4 of the multipliers' support (at most _WORKING_MAX), doubled
# when a point outside it breaks a step.  The final multipliers lambda are
# also the dual starts for the lower bound.

#: step of the trapezoidal rule in log-space for the inverse metric
_QUAD_STEP = 2.0
#: smallest metric eigenvalue relative to the largest (and to the data's scale)
_METRIC_FLOOR = 1e-3
#: the working set of points in the step's QP: at least this many points ...
_WORKING_MIN = 16
#: ... and at most this many (the QP's Gram matrix is m x m)
_WORKING_MAX = 1536
#: Riemannian trial steps per start (max_iter lowers it) ...
_STEPS = 300
#: ... and multiply-adds per least-squares start, and per random start
_START_WORK = 10**11
_RANDOM_START_WORK = _START_WORK // 10
#: pivots of one QP solve (each a dense solve of the support's size)
_QP_PIVOTS = 30
#: reduced dimension up to which the SLSQP polish on n (n - 1) / 2 + n + 1
#: variables follows the Riemannian refinement
_POLISH_MAX_DIM = 8
#: Phi evaluations of the dual search (each O(N d^2 + d^3)) ...
_DUAL_EVALS = 1000
#: ... and a work cap for it, in multiply-adds
_DUAL_WORK = 4e9


def _metric(al: np.ndarray, R: np.ndarray, Q: np.ndarray, lam: np.ndarray, z_ref: float):
    """Eigenbasis ``U``, weighted mean ``m`` and the exponential sum of the metric.

    Returns ``(U, m, c, Uq)``: the inverse metric on the entry ``(i, j)`` of
    ``S`` (in the basis ``U``) is ``sum_t c_t Uq[t, i] Uq[t, j]``.
    """
    sup = np.flatnonzero(lam > 0.0)
    lw = lam[sup] / lam[sup].sum()
    m = lw @ al[sup]
    ac = al[sup] - m
    Xs = R[sup] @ Q
    acw = ac * lw[:, None]
    Z = acw.T @ ac - 0.5 * (acw.T @ Xs + Xs.T @ acw)
    z, U = np.linalg.eigh(0.5 * (Z + Z.T))
    # |z|: where Z is indefinite (clouds far from isometric) the Hessian is
    # replaced by a positive one; the floor keeps the ratio <= 1 / floor, so
    # the exponential sum has at most 7 terms
    top = max(float(np.max(np.abs(z))), z_ref)
    nu = _METRIC_FLOOR * (top if top > 0.0 else 1.0)  # top = 0: alpha = 0, S is idle
    zt = np.maximum(np.abs(z), nu)
    lo, hi = 2.0 * float(zt.min()), 2.0 * float(zt.max())
    taus = np.arange(np.log(1.0 / hi) - 3.0, np.log(1.0 / lo) + 2.0 + _QUAD_STEP, _QUAD_STEP)
    s = np.exp(taus)
    return U, m, _QUAD_STEP * s, np.exp(-np.outer(s, zt))


def _gram(XA: np.ndarray, Xp: np.ndarray, Ap: np.ndarray, c: np.ndarray, Uq: np.ndarray):
    """``g_a^T H^-1 g_b`` for the working set (see the notes above).

    Per term of the exponential sum: ``(X D X^T) o (A D A^T) - P o P^T`` with
    ``P = X D A^T``; the two symmetric products go to SYRK (``Y @ Y.T``).
    About ``2 p m^2 d`` multiply-adds.
    """
    G = 2.0 * (XA @ XA.T)
    for t in range(len(c)):
        h = np.sqrt(Uq[t])
        Xh = Xp * h
        Ah = Ap * h
        P = (Xh * h) @ Ap.T
        G += (2.0 * c[t]) * ((Xh @ Xh.T) * (Ah @ Ah.T) - P * P.T)
    return G


def _simplex_qp(G: np.ndarray, mu: float, phi: np.ndarray, lam0: np.ndarray, max_piv: int):
    """``min mu/2 l^T G l - phi . l`` over the simplex by block principal pivoting.

    Starts from the support of ``lam0``; each pivot is one Cholesky solve on
    the current support (``k^3 / 3`` multiply-adds for ``k`` points).
    Returns a point of the simplex (optimal when the pivoting finished
    within ``max_piv``) and the multiply-adds spent.
    """
    m = len(phi)
    scale = float(np.max(np.abs(phi))) + mu * float(np.max(np.diag(G))) + 1e-300
    # the ridge makes the support's system definite when G is singular there
    # (more points than the rank of the gradients); it changes the QP's
    # solution by a negligible amount, and any point of the simplex is a
    # valid step anyway
    ridge = 1e-10 * scale
    tol = 1e-12 * scale
    P = lam0 > 0.0
    if not P.any():
        P[int(np.argmax(phi))] = True
    best_ninf, backup = m + 1, 3
    lam = lam0
    work = 0
    for _ in range(max_piv):
        idx = np.flatnonzero(P)
        k = len(idx)
        H = mu * G[np.ix_(idx, idx)]
        H[np.arange(k), np.arange(k)] += ridge
        work += k**3 // 3 + 2 * m * m
        x = None
        try:
            fac = cho_factor(H)
            piv = np.abs(np.diag(fac[0]))
            if piv.min() ** 2 > 1e-8 * piv.max() ** 2:  # well conditioned
                xy = cho_solve(fac, np.column_stack([phi[idx], np.ones(k)]))
                nu = (xy[:, 0].sum() - 1.0) / xy[:, 1].sum()
                x = xy[:, 0] - nu * xy[:, 1]
        except np.linalg.LinAlgError:
            pass
        if x is None:  # the bordered KKT system, least squares
            K = np.zeros((k + 1, k + 1))
            K[:k, :k] = H
            K[:k, k] = K[k, :k] = 1.0
            sol = np.linalg.lstsq(K, np.append(phi[idx], 1.0), rcond=None)[0]
            x, nu = sol[:k], sol[k]
        if not (np.all(np.isfinite(x)) and np.isfinite(nu)):
            break
        lam = np.zeros(m)
        lam[idx] = x
        # KKT: the gradient mu G l - phi equals -nu on the support, >= -nu off it
        y = mu * (G @ lam) - phi + nu
        bad = (P & (lam < 0.0)) | (~P & (y < -tol))
        ninf = int(np.count_nonzero(bad))
        if ninf == 0:
            return _simplex(lam), work
        if ninf < best_ninf:
            best_ninf, backup = ninf, 3
            P = P ^ bad
        elif backup > 0:
            backup -= 1
            P = P ^ bad
        else:
            j = int(np.flatnonzero(bad)[-1])
            P[j] = not P[j]
        if not P.any():
            P[int(np.argmax(phi))] = True
    if not np.all(np.isfinite(lam)):
        lam = np.zeros(m)
        lam[int(np.argmax(phi))] = 1.0
    return _simplex(lam), work


def _step(XA, Xp, Ap, lam, mu, U, m, Kt, Q):
    """The step ``z = -mu H^-1 sum_k lam_k g_k`` as ``(S, delta)``.

    ``S`` is skew (``Q -> Q cay(S)``), ``delta`` moves ``beta``; to first
    order ``phi_k`` changes by ``-mu (G lam)_k`` with ``G`` from
    :func:`_gram`.
    """
    s = np.flatnonzero(lam > 0.0)
    ls = lam[s]
    T = (Xp[s] * ls[:, None]).T @ Ap[s]
    S = U @ (-mu * Kt * (T - T.T)) @ U.T
    return S, Q @ (-mu * (ls @ XA[s]) - S @ m)


def _cayley(Q: np.ndarray, S: np.ndarray) -> np.ndarray:
    d = S.shape[0]
    I = np.eye(d)
    return Q @ np.linalg.solve(I - 0.5 * S, I + 0.5 * S)


def _polar(Q: np.ndarray) -> np.ndarray:
    U, _, Vt = np.linalg.svd(Q)
    return U @ Vt


def _refine_riemannian(al, ep, Q, beta, lam, max_steps, max_work, stop_f, tol):
    """Prox-Newton steps on O(d) x R^d from ``(Q, beta)`` (see the notes above).

    ``lam``: initial multipliers (the MEB weights of the start).  Stops after
    ``max_steps`` trial steps or once ``max_work`` multiply-adds are spent
    (counted from the sizes of the products each step forms: the residuals
    ``N d^2``, the metric ``10 d^3``, the Gram matrix ``(2 p + 1) m^2 d``,
    the QP's Cholesky solves ``k^3 / 3``, the step and retraction ``7 d^3``), at a
    stationary point (a predicted decrease of ``r = sqrt(f)`` below
    ``1e-3 tol``, or of ``f`` below 1e-14 relative), or when
    ``f <= stop_f``.  Returns ``(Q, beta, lam, steps)`` with ``Q``
    re-orthogonalised.
    """
    N, d = al.shape
    R = al @ Q.T + beta - ep
    phi = np.einsum("ij,ij->i", R, R)
    f = float(phi.max())
    z_ref = float(np.sum((al - al.mean(axis=0)) ** 2)) / (N * d)
    cap = min(N, _WORKING_MAX)
    m_work = min(cap, max(_WORKING_MIN, 2 * d + 2))
    lam = _simplex(lam)
    mu = 0.5
    steps = 0
    work = N * d * d
    fresh = True

    def done():
        return steps >= max_steps or work >= max_work

    while not done() and f > stop_f:
        m_work = min(cap, max(m_work, (5 * int(np.count_nonzero(lam))) // 4 + 32))
        if m_work >= N:
            A = np.arange(N)
        else:
            A = np.sort(np.argpartition(-phi, m_work - 1)[:m_work])
        if fresh:
            U, mm, c, Uq = _metric(al, R, Q, lam, z_ref)
            Kt = (Uq.T * c) @ Uq
            work += 10 * d**3 + 2 * int(np.count_nonzero(lam)) * d * d
        XA = R[A] @ Q
        Xp = XA @ U
        Ap = (al[A] - mm) @ U
        G = _gram(XA, Xp, Ap, c, Uq)
        work += (2 * len(c) + 1) * m_work * m_work * d + 3 * m_work * d * d
        phiA = phi[A] - f
        l0 = lam[A]
        fresh = False
        while not done():
            steps += 1
            lamA, w_qp = _simplex_qp(G, mu, phiA, l0, _QP_PIVOTS)
            pred = -float(np.max(phiA - mu * (G @ lamA)))
            work += w_qp + m_work * m_work
            if not pred > max(1e-14 * f, 2e-3 * tol * np.sqrt(f)):
                return _polar(Q), beta, lam, steps
            S, delta = _step(XA, Xp, Ap, lamA, mu, U, mm, Kt, Q)
            Qn = _cayley(Q, S)
            bn = beta + delta
            Rn = al @ Qn.T + bn - ep
            phin = np.einsum("ij,ij->i", Rn, Rn)
            fn = float(phin.max())
            work += int(np.count_nonzero(lamA)) * d * d + 7 * d**3 + N * d * d
            rho = (f - fn) / pred if np.isfinite(fn) else -np.inf
            if rho >= 0.1:  # accept; a trust-region update of mu
                if rho > 0.75:
                    mu = min(2.0 * mu, 1.0)
                elif rho < 0.25:
                    mu *= 0.5
                Q, beta, R, phi, f = Qn, bn, Rn, phin, fn
                lam = np.zeros(N)
                lam[A] = lamA
                fresh = True
                break
            mu *= 0.25
            l0 = lamA
            if mu < 1e-12:
                return _polar(Q), beta, lam, steps
            if m_work < cap and not np.any(A == int(np.argmax(phin))):
                m_work = min(cap, 2 * m_work)
                break  # rebuild the working set with the point that broke the model
    return _polar(Q), beta, lam, steps


# ---------------------------------------------------------------------------
# n >= 3: the small-dimension SLSQP polish (the former solver)
# ---------------------------------------------------------------------------


def _cayley_parts(S: np.ndarray):
    n = S.shape[0]
    I = np.eye(n)
    A = np.linalg.inv(I - S)
    return A, A @ (I + S)


def _refine_slsqp(a, e, Q0, max_iter):
    """SLSQP on the epigraph problem from ``Q0``; returns (Q, multipliers, nit).

    ``n (n - 1) / 2 + n + 1`` variables and a dense ``N x`` that Jacobian:
    only for ``n <= _POLISH_MAX_DIM``.
    """
    N, n = a.shape
    iu = np.triu_indices(n, 1)
    m = len(iu[0])
    p0 = e - a @ Q0.T
    c0, r0, _ = _meb(p0)
    z0 = np.concatenate([np.zeros(m), c0, [r0]])

    def chart(z):
        """``A = (I - S)^-1`` at the skew ``S`` of ``z``, ``Q = Q0 cay(S)`` and the
        residuals ``a Q^T + b - e``."""
        S = np.zeros((n, n))
        S[iu] = z[:m]
        A, C = _cayley_parts(S - S.T)
        Q = Q0 @ C
        return A, Q, a @ Q.T + z[m : m + n] - e

    def cons(z):
        _, _, r = chart(z)
        return z[-1] * z[-1] - np.einsum("ij,ij->i", r, r)

    def cons_jac(z):
        A, _, r = chart(z)
        G = Q0 @ A
        W = A @ a.T  # (n, N)
        RG = r @ G  # (N, n)
        i, j = iu
        dS = -4.0 * (RG[:, i] * W[j, :].T - RG[:, j] * W[i, :].T)
        J = np.empty((N, m + n + 1))
        J[:, :m] = dS
        J[:, m : m + n] = -2.0 * r
        J[:, -1] = 2.0 * z[-1]
        return J

    grad = np.zeros(m + n + 1)
    grad[-1] = 1.0
    bounds = [(None, None)] * (m + n) + [(0.0, None)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            res = minimize(
                lambda z: z[-1],
                z0,
                jac=lambda z: grad,
                method="SLSQP",
                bounds=bounds,
                constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
                options={"maxiter": min(max_iter, 500), "ftol": 1e-15},
            )
        except (np.linalg.LinAlgError, ValueError):
            # a runaway trial step (I - S numerically singular, or not
            # finite): no polish from this start
            return Q0, None, 0
    if not np.all(np.isfinite(res.x)):
        return Q0, None, int(res.nit)
    Q = _polar(chart(res.x)[1])  # re-orthogonalise (Cayley is orthogonal in exact arithmetic)
    mult = getattr(res, "multipliers", None)
    mult = None if mult is None else np.asarray(mult, dtype=float).ravel()
    if mult is not None and mult.shape[0] != N:
        mult = None
    return Q, mult, int(res.nit)


def _random_orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    Z = rng.normal(size=(n, n))
    Q, R = np.linalg.qr(Z)
    return Q * np.sign(np.diag(R))


def _kabsch(a: np.ndarray, e: np.ndarray) -> list[np.ndarray]:
    """Least-squares rotations: the best ``Q`` in O(n), and the best with the other sign of det."""
    U, _, Vt = np.linalg.svd(a.T @ e)
    D = np.ones(a.shape[1])
    D[-1] = -1.0
    return [Vt.T @ U.T, (Vt.T * D) @ U.T]


def _solve_nd(X1, X2, tol, rng, n_starts, max_iter):
    """``n >= 3``: reduce, refine from the Kabsch and random starts, bound from below.

    Returns ``(Q, b, lower, n_iter, method, converged)`` like the other
    regimes; ``lower`` is proven, the caller re-scores ``(Q, b)``.
    """
    N, n = X1.shape
    m1 = X1.mean(axis=0)
    m2 = X2.mean(axis=0)
    B, al, ep, slack = _reduce(X1 - m1, X2 - m2)
    d = al.shape[1]
    if d == 0:  # both centred clouds are single points
        return np.eye(n), m2 - m1, 0.0, 0, "trivial", True
    steps = min(max_iter, _STEPS)
    n_iter = 0
    state = {"r": np.inf, "c": None, "Q": None, "w": None}

    def keep(Q, c, r, w):
        if r < state["r"]:
            state.update(r=r, c=c, Q=Q, w=w)

    def start(Q):
        """The MEB of the residuals: the best translation for ``Q`` and its dual weights."""
        c, r, _, sup, w = _meb_nd(ep - al @ Q.T)
        ww = np.zeros(N)
        ww[sup] = w
        keep(Q, c, r, ww)
        return Q, c, ww, r

    def polish(Q, r):
        """SLSQP from ``Q``, re-anchoring the Cayley chart while it helps (d <= 8)."""
        nonlocal n_iter
        mults = []
        for _ in range(3):
            Qn, mult, nit = _refine_slsqp(al, ep, Q, max_iter)
            n_iter += nit
            if mult is not None and np.sum(np.maximum(mult, 0.0)) > 0:
                mults.append(mult)
            _, _, _, rn = start(Qn)
            if not rn < r - tol:
                break
            Q, r = Qn, rn
        return mults

    def refine(Q, c, w, r, work=_START_WORK):
        """Riemannian refinement (and for small d the SLSQP polish from the start
        and from its result); returns the multipliers found."""
        nonlocal n_iter
        small = d <= _POLISH_MAX_DIM
        mults = polish(Q, r) if small else []
        stop = (lower + 0.5 * tol) ** 2  # the bracket closes there
        Q, c, lam, it = _refine_riemannian(al, ep, Q, c, w, steps, work, stop, tol)
        n_iter += it
        r = _rescore(al, ep, Q, c)
        keep(Q, c, r, lam)
        mults.append(lam)
        if small:
            mults += polish(Q, r)
        return mults

    lower = _subset_lower_bound(X1, X2)
    starts = [start(Q0) for Q0 in _kabsch(al, ep)]
    if state["r"] - lower <= tol:
        return _finish(B, state, m1, m2, lower, n_iter, True)
    mults = []
    for s0 in starts:
        if state["r"] - lower <= tol:
            break
        new = refine(*s0)
        mults += new
        # the dual at the multipliers of a converged refinement often closes the bracket
        lower = max(lower, _dual_lower_bound(al, ep, new, max_evals=len(new))[0] - slack)
    evals = int(min(_DUAL_EVALS, max(8, _DUAL_WORK // (N * d * d + 10 * d**3))))

    def dual(starts):
        """Raise ``lower`` by the dual from ``starts`` (up to the incumbent); its weights."""
        nonlocal lower
        lo_dual, w = _dual_lower_bound(al, ep, starts, state["r"] + slack - tol, max_evals=evals)
        lower = max(lower, lo_dual - slack)
        return w

    w_best = dual([state["w"]] + mults)
    for _ in range(n_starts):
        if state["r"] - lower <= tol:
            break
        r_before = state["r"]
        new = refine(*start(_random_orthogonal(rng, d)), work=_RANDOM_START_WORK)
        if state["r"] < r_before:
            w_best = dual([state["w"], w_best] + new)
    return _finish(B, state, m1, m2, lower, n_iter, True)


def _finish(B, state, m1, m2, lower, n_iter, conv):
    """Lift the reduced solution to R^n: ``Q = B Q_d B^T + (I - B B^T)``, ``b``."""
    Q = _lift(B, state["Q"])
    c = state["c"] if B is None else B @ state["c"]
    return Q, c + m2 - Q @ m1, lower, n_iter, "kabsch-riemannian", conv


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def minimax_procrustes(
    E1: ArrayLike,
    E2: ArrayLike,
    *,
    rtol: float = 1e-9,
    atol: float = 0.0,
    rng: RNGLike = None,
    max_iter: int = 20_000,
    n_starts: int = 4,
) -> ProcrustesResult:
    """Best isometry under the max norm (minimax Procrustes), with a bracket.

    Solves ``min over Q in O(n), b of max_k ||Q E1_k + b - E2_k||``
    (reflections allowed): the ``isometry`` mode of
    :func:`isoapprox.metrics.hausdorff_like`.

    Parameters
    ----------
    E1, E2 : array_like of shape (N, n)
        Two embeddings of the same ``N >= 1`` points.
    rtol : float, default 1e-9
        Requested gap relative to ``scale = max(R(E1), R(E2))`` (MEB radii).
    atol : float, default 0.0
        Requested absolute gap (in the units of ``E1``); the target is
        ``max(rtol * scale, atol)``.
    rng : None, int, SeedSequence or numpy Generator, optional
        Seeds the random orthogonal starts used when ``n >= 3``.  ``None``
        means the fixed seed 0, so results are reproducible; ``n <= 2`` uses
        no randomness.
    max_iter : int, default 20000
        ``n = 2``: cap on objective evaluations of the planar search beyond
        its initial grid of 34 angles.  ``n >= 3``: cap on the Riemannian
        trial steps per start (at most 300) and on the iterations of each
        SLSQP polish (at most 500; only when the reduced dimension is at
        most 8).
    n_starts : int, default 4
        ``n >= 3``: Haar-random orthogonal starts (in the reduced dimension)
        tried after the two least-squares starts while the bracket is open.

    Returns
    -------
    ProcrustesResult
        ``Q``, ``b``, the re-scored ``value`` (= ``upper``), ``lower``,
        ``gap``, ``certified`` and the method used.

    Raises
    ------
    InvalidInputError
        If ``E1`` or ``E2`` is not a finite 2-D array, if their shapes
        differ, or if an option is out of range.
    TypeError
        For non-numeric arrays or options of the wrong kind.

    Warns
    -----
    ConvergenceWarning
        When the planar search (``n = 2``) stops at ``max_iter`` before its
        gap reaches the tolerance; the result is still a valid bracket.  For
        ``n >= 3`` an open bracket is the normal outcome and is reported by
        ``certified=False`` without a warning.

    Notes
    -----
    For ``n >= 3`` the centred points are first written in an orthonormal
    basis of a subspace of dimension ``d = min(rank E1 + rank E2, n)`` that
    contains both clouds, which loses nothing (proof in the source); the
    search runs in ``O(d)``: the least-squares (Kabsch) rotations with both
    signs of the determinant, refined by prox-Newton steps on the
    orthogonal group; when ``d <= 8`` SLSQP also runs from each start and
    from its refinement (the former solver, cheap at that size).  Every budget counts
    work, never time, so the result is bit-identical on a busy or an idle
    machine: per start at most ``min(max_iter, 300)`` trial steps and
    ``1e11`` multiply-adds (``1e10`` for a random start), counted from the
    sizes of the products formed; the Lagrangian dual is evaluated at most
    ``min(1000, max(8, 4e9 / (N d^2 + 10 d^3)))`` times.  Each step costs
    ``O(N d^2 + p m^2 d + k^3 + d^3)`` for a working set of ``m <= 1536``
    points, ``k <= m`` of them in the QP's support and ``p <= 7`` terms of
    the metric; memory is ``O(N n + m^2 + n^2)``.  More in docs/dev/kernels_design.md,
    ``isoapprox.procrustes.minimax_procrustes``.

    Examples
    --------
    >>> E1 = [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]
    >>> E2 = [[5.0, 5.0], [5.0, 6.0], [3.0, 5.0]]  # rotated by 90 degrees, moved
    >>> res = minimax_procrustes(E1, E2)
    >>> res.value < 1e-12, res.certified, res.reflection
    (True, True, False)
    """
    X1 = as_points(E1, "E1")
    X2 = as_points(E2, "E2")
    check_same_shape(X1, X2, ("E1", "E2"))
    rtol = check_positive(rtol, "rtol")
    atol = check_nonnegative(atol, "atol")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    n_starts = check_int(n_starts, "n_starts", minimum=0)
    gen = as_rng(0 if rng is None else rng)
    return compute_minimax_procrustes(X1, X2, rtol, atol, max_iter, n_starts, gen, stacklevel=3)


def compute_minimax_procrustes(X1: np.ndarray, X2: np.ndarray, rtol: float = 1e-9,
                               atol: float = 0.0, max_iter: int = 20_000, n_starts: int = 4,
                               gen: np.random.Generator | None = None,
                               stacklevel: int = 2) -> ProcrustesResult:
    """:func:`minimax_procrustes` without its checks, for callers that validated
    (float64 arrays of the same shape, options in range; ``gen`` None: seed 0)."""
    gen = as_rng(0) if gen is None else gen
    N, n = X1.shape
    Y1, Y2, s = pow2_scaled_pair(X1, X2)
    if N == 1:
        return ProcrustesResult.trivial((X2[0] - X1[0]).copy())
    # n >= 3: one BLAS thread throughout (scale, solve, re-score), so the
    # result is bit-identical whatever the thread settings and the load
    with single_threaded_blas() if n >= 3 else contextlib.nullcontext():
        scale = max(_scale_radius(Y1), _scale_radius(Y2))
        tol = max(rtol * scale, atol * s)
        if n == 1:
            Q, b, lower, n_iter, method, conv = _solve_1d(Y1, Y2)
        elif n == 2:
            Q, b, lower, n_iter, method, conv = _solve_2d(Y1, Y2, tol, max_iter)
        else:
            Q, b, lower, n_iter, method, conv = _solve_nd(Y1, Y2, tol, gen, n_starts, max_iter)
        value = _rescore(Y1, Y2, Q, b)
    # the solvers work on centred copies; centring moves each point by a few
    # ulps of the raw coordinates, which moves the optimum by at most as much
    centring = 8 * _EPS * (_absmax(Y1) + _absmax(Y2))
    lower = min(max(float(lower) - centring, 0.0), value)
    gap = value - lower
    if not conv:
        warnings.warn(
            f"minimax_procrustes: the planar search stopped at max_iter={max_iter} "
            f"evaluations with gap {gap / s:.3g} > tolerance {tol / s:.3g}; the "
            "bracket [lower, upper] is still valid",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )
    return ProcrustesResult(
        Q=Q,
        b=b / s,
        bracket=Bracket(value / s, lower / s, value / s, gap <= tol, method, method),
        reflection=bool(np.linalg.det(Q) < 0),
        n_iter=int(n_iter),
        method=method,
    )
