"""Point-cloud geometry: distances, diameter, minimum enclosing ball, single linkage.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.geometry``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from ._scaling import pow2_scaled
from ._typing import ArrayLike, FloatArray
from ._validation import as_points, check_int, check_positive
from .kernels import distances as K
from .kernels import stats as KS
from .kernels.meb import meb_dual_fw

__all__ = [
    "MERGE_DIAMETER_RATIO",
    "MERGE_MARGIN_RATIO",
    "BallResult",
    "class_owners",
    "diameter",
    "farthest_pair",
    "merge_height",
    "min_enclosing_ball",
    "pairwise_distances",
    "single_linkage",
]

#: merge height of merged classes: ``MERGE_MARGIN_RATIO x margin`` (below the
#: margin, two classes joined at the height are a certain violation) ...
MERGE_MARGIN_RATIO = 0.5
#: ... or, at margin 0 or for a large embedding, ``MERGE_DIAMETER_RATIO x diameter``
MERGE_DIAMETER_RATIO = 0.01


# --- sweep helpers shared by the package ------------------------------------


def n_chunks(units: int) -> int:
    """Parallel work split of a sweep (results never depend on it)."""
    return max(1, min(int(units), 2 * numba.get_num_threads()))


def n_units(N: int) -> int:
    """Work units of a pair sweep over ``N`` points."""
    nb = (N + KS.RB - 1) // KS.RB
    return (nb + 1) // 2


def scaled(X: np.ndarray, *extra: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Exactly rescaled copy (power of two), its transpose, and the factor."""
    Xs, s = pow2_scaled(X, lengths=extra)
    return Xs, np.ascontiguousarray(Xs.T), s


def frank_wolfe_step(w: np.ndarray, g: np.ndarray, t: int) -> np.ndarray:
    """Weights ``w`` moved by ``2 / (t + 3)`` towards the vertex of the simplex
    where the gradient ``g`` is largest (the first on ties), as a new array."""
    gam = 2.0 / (t + 3.0)
    w = (1 - gam) * w
    w[int(np.argmax(g))] += gam
    return w


def warn_overflow(value: float, func: str, quantity: str, *, stacklevel: int = 3) -> float:
    """``value``, after a ``RuntimeWarning`` if it is infinite (a result beyond float64).

    Distances and losses are computed on exactly rescaled copies
    (:mod:`isoapprox._scaling`), so a finite input gives an infinite result
    only when the true result exceeds the largest float64 (``~1.8e308``).
    The result stays ``inf`` (the honest float64 answer, as numpy's) and is
    reported the way numpy reports an overflow: a ``RuntimeWarning`` whose
    message starts with ``"overflow encountered in"``, so that one warning
    filter treats both alike.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_overflow(math.inf, "diameter", "the diameter of `E`", stacklevel=2)
    inf
    >>> str(caught[0].message)[:39]
    'overflow encountered in diameter: the d'
    """
    if math.isinf(value):
        warnings.warn(
            f"overflow encountered in {func}: {quantity} exceeds the largest float64 "
            f"(~1.8e308) and is returned as {value}; rescale the inputs by a common factor "
            "(the result scales with it)",
            RuntimeWarning, stacklevel=stacklevel,
        )
    return value


# --- merged classes: single linkage at a height --------------------------------


def merge_height(
    margin: float,
    diam: float,
    *,
    margin_ratio: float = MERGE_MARGIN_RATIO,
    diameter_ratio: float = MERGE_DIAMETER_RATIO,
) -> float:
    """The merge height ``max(margin_ratio x margin, diameter_ratio x diameter)``.

    Examples
    --------
    >>> merge_height(0.2, 12.0), merge_height(0.0, 12.0)
    (0.12, 0.12)
    """
    return max(margin_ratio * margin, diameter_ratio * diam)


def single_linkage(E: np.ndarray, height: float) -> np.ndarray:
    """Components of the graph ``d(i, j) <= height`` of validated float64 points.

    ``labels[i]`` is the least index of ``i``'s component (one half sweep,
    :func:`isoapprox.kernels.stats.threshold_components`, on an exactly
    rescaled copy).

    Examples
    --------
    >>> single_linkage(np.array([[0.0], [0.5], [3.0]]), 1.0).tolist()
    [0, 0, 2]
    """
    Xs, XT, s = scaled(E, height)
    return KS.threshold_components(Xs, XT, height * s, n_chunks(n_units(E.shape[0])))


def class_owners(labels: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """For each class, the component (a label of ``labels``' dense numbering,
    ``np.unique``'s order) holding more than half of its points; -1 if none.

    Examples
    --------
    >>> class_owners(np.array([0, 0, 0, 3]), np.array([0, 0, 1, 1]), 2).tolist()
    [0, -1]
    """
    _, comp = np.unique(labels, return_inverse=True)
    sizes = np.bincount(codes, minlength=n_classes)
    key, count = np.unique(comp * n_classes + codes, return_counts=True)
    kc, kk = key // n_classes, key % n_classes
    major = count * 2 > sizes[kk]
    owner = np.full(n_classes, -1, dtype=np.int64)
    owner[kk[major]] = kc[major]
    return owner


def dense_distances(X: np.ndarray) -> np.ndarray:
    """``||X_i - X_j||`` of every pair of a few validated rows, by direct
    differences through an ``(N, N, n)`` temporary (numpy; the sweeps of
    :func:`pairwise_distances` are for larger ``N``)."""
    diff = X[:, None, :] - X[None, :, :]
    return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))


def pairwise_distances(E: ArrayLike) -> FloatArray:
    """Euclidean distance matrix of the rows of ``E``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Points, one per row.

    Returns
    -------
    ndarray of shape (N, N)
        ``D[i, j] = ||E_i - E_j||``, exactly symmetric with a zero diagonal,
        computed by direct differences (no ``|x|^2 - 2 x.y + |y|^2``
        cancellation).

    Notes: docs/dev/kernels_design.md, ``isoapprox.geometry.pairwise_distances``.

    Examples
    --------
    >>> pairwise_distances([[0.0, 0.0], [3.0, 4.0]])
    array([[0., 5.],
           [5., 0.]])
    """
    Y, s = pow2_scaled(as_points(E, "E"))
    D = K.pairwise_distances_kernel(Y)
    return D / s if s != 1.0 else D  # no second N x N array at unit scale


def farthest_pair(E: ArrayLike) -> tuple[float, int, int]:
    """Diameter of the rows of ``E`` together with a pair attaining it.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Points, one per row (at least two).

    Returns
    -------
    diameter : float
        ``inf``, with a ``RuntimeWarning``, when the diameter exceeds the
        largest float64 (see :func:`diameter`).
    i, j : int
        Row indices with ``i < j`` and ``||E_i - E_j|| == diameter`` (the
        lexicographically first such pair).
    """
    value, i, j = compute_farthest_pair(as_points(E, "E", min_points=2))
    return warn_overflow(value, "farthest_pair", "the diameter of `E`"), i, j


#: from this many points on, the diameter first prunes the points that cannot
#: be in a diametral pair (:func:`_diameter_candidates`)
PRUNE_MIN_POINTS = 512
#: the pruning is used when it keeps at most this share of the points
PRUNE_MAX_SHARE = 0.5
#: relative allowance of the pruning test for the rounding of its bounds
_PRUNE_RTOL = 1e-12
#: farthest-point sweeps of the pruning from its most outlying points
_PRUNE_SWEEPS = 8


def _diameter_candidates(Y: np.ndarray) -> np.ndarray | None:
    """Indices (ascending) of the points that may be in a diametral pair, or None.

    Farthest-point sweeps (two from the first point, then one from each of the
    ``_PRUNE_SWEEPS`` points farthest from the first pair's midpoint) give a
    lower bound ``L <= diam`` (the distance of a pair); with ``m`` the
    midpoint of that pair and ``R = max ||y - m||``,
    no point farther than ``||x - m|| + R`` from ``x`` exists, so a point with
    ``||x - m|| + R < L`` is in no pair of length ``diam``.  Every pair
    attaining the diameter is among the others (so the exact sweep over them
    returns the same value and, their order kept, the same first pair).
    None when they are more than ``PRUNE_MAX_SHARE`` of the points.
    """
    N = Y.shape[0]
    _, b = K.farthest_from(Y, Y[0])
    L, c = K.farthest_from(Y, Y[b])
    if not L > 0.0:
        return None
    m = 0.5 * (Y[b] + Y[c])
    r = np.sqrt(np.einsum("ij,ij->i", Y - m, Y - m))
    # sweeps from the points farthest from m raise L (two sweeps can stop at a
    # pair well below the diameter); the bound is then centred on the best pair
    best = (L, b, c)
    for x in np.argpartition(r, -_PRUNE_SWEEPS)[-_PRUNE_SWEEPS:]:
        d, y = K.farthest_from(Y, Y[x])
        if d > best[0]:
            best = (d, int(x), int(y))
    if best[0] > L:
        L, b, c = best
        m = 0.5 * (Y[b] + Y[c])
        r = np.sqrt(np.einsum("ij,ij->i", Y - m, Y - m))
    ub = (r + r.max()) * (1.0 + _PRUNE_RTOL)
    cand = np.flatnonzero(ub >= L)
    if cand.size > PRUNE_MAX_SHARE * N:
        return None
    return cand


def compute_farthest_pair(X: np.ndarray) -> tuple[float, int, int]:
    """:func:`farthest_pair` without its checks, for callers that validated
    (finite float64 points, at least two)."""
    Y, s = pow2_scaled(X)
    if Y.shape[0] >= PRUNE_MIN_POINTS:
        cand = _diameter_candidates(Y)
        if cand is not None:
            value, i, j = K.diameter_kernel(np.ascontiguousarray(Y[cand]))
            return float(value / s), int(cand[i]), int(cand[j])
    value, i, j = K.diameter_kernel(Y)
    return float(value / s), int(i), int(j)


def diameter(E: ArrayLike) -> float:
    """Largest pairwise distance ``max_{i<j} ||E_i - E_j||``.

    Parameters
    ----------
    E : array_like of shape (N, n)
        Points, ``N >= 2``.

    Returns
    -------
    float
        The diameter; ``0.0`` when every point coincides.  Memory is
        ``O(N n)``: no distance matrix is built (blocked, vectorised
        kernel, each pair once; it runs on ``N = 65,536`` points in
        ``R^128``).  From 512 points on, farthest-point sweeps first
        prune the points that cannot be in a diametral pair, and the
        exact sweep runs over the rest when they are at most half
        (a Gaussian cloud of 10**6 points in the plane: 0.08 s).  As
        accurate at every scale (the points are rescaled by a power of
        two: ``diameter(2^k E) == 2^k diameter(E)``); a
        diameter beyond the largest float64 (``~1.8e308``, e.g. of points at
        ``+-1e308``) is ``inf``, with a ``RuntimeWarning`` ``"overflow
        encountered in diameter: ..."``.

    Examples
    --------
    >>> diameter([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    2.23606797749979
    """
    value = compute_farthest_pair(as_points(E, "E", min_points=2))[0]
    return warn_overflow(value, "diameter", "the diameter of `E`")


@dataclass(frozen=True)
class BallResult:
    """Minimum enclosing ball of a point set, with a certified bracket.

    Attributes
    ----------
    center : ndarray of shape (n,)
        Centre of the returned ball.
    radius : float
        ``max_k ||E_k - center||``, the radius of the returned ball; an
        upper bound on the minimum radius ``R(E)``.
    lower : float
        A proven lower bound on ``R(E)`` (a dual value of the MEB problem).
    support : ndarray of int
        Indices of the points that carry dual weight (on the sphere).
    n_iter : int
        Frank-Wolfe iterations used.
    """

    center: FloatArray
    radius: float
    lower: float
    support: np.ndarray
    n_iter: int

    @property
    def gap(self) -> float:
        """``radius - lower`` (>= 0)."""
        return self.radius - self.lower


def _dual_radius(Y: np.ndarray, idx: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
    """``sqrt(max(Phi(w), 0))``, the lower bound of the radius of the dual weights ``w``,
    with ``Phi(w) = sum_i w_i |y_i - c|^2`` and ``c = sum_i w_i y_i`` (no cancellation),
    and ``c``."""
    P = Y[idx]
    c = w @ P
    diff = P - c
    phi = float(w @ np.einsum("ij,ij->i", diff, diff))
    return float(np.sqrt(max(phi, 0.0))), c


def _polish(Y: np.ndarray, idx: np.ndarray, u: np.ndarray):
    """Exact circumcentre of the support points, dropping any with negative weight."""
    sup = idx[u > 0.0]
    for _ in range(len(sup)):
        if len(sup) == 1:
            return sup, np.ones(1)
        P = Y[sup]
        A = P[1:] - P[0]
        M = A @ A.T
        b = 0.5 * np.einsum("ij,ij->i", A, A)
        lam, *_ = np.linalg.lstsq(M, b, rcond=None)
        w = np.concatenate([[1.0 - lam.sum()], lam])
        if np.all(w >= 0.0):
            return sup, w
        sup = np.delete(sup, int(np.argmin(w)))
    return None


def ball_bracket(X: np.ndarray, rtol: float = 1e-12, max_iter: int = 100_000):
    """Minimum enclosing ball of validated float64 rows ``X`` (the one driver).

    Frank-Wolfe with away steps (:func:`~isoapprox.kernels.meb.meb_dual_fw`)
    on a working set grown by the farthest violator, then the exact
    circumcentre of the support, then (if the bracket is still wider than
    ``rtol``) a fine Frank-Wolfe run.  Used by :func:`min_enclosing_ball` and
    the minimax Procrustes inner loops.

    Returns
    -------
    center : ndarray (n,)
        Centre of the best ball found, in the coordinates of ``X``.
    lower : float
        Proven lower bound of the radius (a dual value; no rounding allowance).
    support : ndarray of int
        Points carrying weight in the solution that gave ``center``.
    cert : tuple of ndarray
        ``(indices, weights)``: the dual weights of the best lower bound found
        together with a centre no worse than before (a warm start for duals).
    n_iter : int
        Frank-Wolfe iterations.
    """
    N = X.shape[0]
    shift = X.mean(axis=0)
    Y = np.ascontiguousarray(X - shift)
    _, a = K.farthest_from(Y, Y[0])
    _, b = K.farthest_from(Y, Y[a])
    idx = np.unique(np.array([a, b], dtype=np.int64))
    u = np.full(len(idx), 1.0 / len(idx))
    # coarse Frank-Wolfe while the working set grows; the exact polish below
    # closes the bracket, and a fine Frank-Wolfe run is the fallback
    eps = max(rtol, 1e-7)
    total_iter = 0
    while True:
        c, it = meb_dual_fw(Y, idx, u, max_iter, eps)
        total_iter += int(it)
        r_out, far = K.farthest_from(Y, c)
        r_in, _ = _dual_radius(Y, idx, u)
        if far in idx or r_out <= r_in * (1.0 + eps) or len(idx) >= N:
            break
        idx = np.append(idx, far)
        u = np.append(u, 0.0)
    keep = u > 0.0
    best_c, best_up, best_lo = c, float(r_out), r_in
    support = cert_idx = idx[keep]
    cert_w = u[keep]
    pol = _polish(Y, idx, u)
    if pol is not None:
        sup, w = pol
        lo_w, c_w = _dual_radius(Y, sup, w)
        up_w, _ = K.farthest_from(Y, c_w)
        if lo_w > best_lo and up_w <= best_up:
            cert_idx, cert_w = sup, np.asarray(w)
        best_lo = max(best_lo, lo_w)
        if up_w <= best_up:
            best_c, best_up, support = c_w, float(up_w), sup
    if best_up - best_lo > rtol * best_up:
        c, it = meb_dual_fw(Y, idx, u, max_iter, max(rtol * 1e-2, 1e-15))
        total_iter += int(it)
        r_out, _ = K.farthest_from(Y, c)
        best_lo = max(best_lo, _dual_radius(Y, idx, u)[0])
        if r_out < best_up:
            keep = u > 0.0
            best_c, best_up = c, float(r_out)
            support = cert_idx = idx[keep]
            cert_w = u[keep]
    return best_c + shift, best_lo, support, (cert_idx, cert_w), total_iter


def min_enclosing_ball(E: ArrayLike, *, rtol: float = 1e-12, max_iter: int = 100_000) -> BallResult:
    """Minimum enclosing ball (smallest ball containing every row of ``E``).

    Parameters
    ----------
    E : array_like of shape (N, n)
        Points, ``N >= 1``.
    rtol : float, default 1e-12
        Requested relative gap ``(radius - lower) / radius``.
    max_iter : int, default 100000
        Cap on Frank-Wolfe iterations per working set.

    Returns
    -------
    BallResult
        Centre, radius (upper bound), proven lower bound and support.

    Notes: docs/dev/kernels_design.md, ``isoapprox.geometry.min_enclosing_ball``.

    References
    ----------
    E. A. Yildirim, "Two algorithms for the minimum enclosing ball problem",
    SIAM J. Optim. 19(3), 2008. doi:10.1137/070690419

    Examples
    --------
    >>> ball = min_enclosing_ball([[0.0, 0.0], [2.0, 0.0], [1.0, 0.5]])
    >>> round(ball.radius, 12), ball.center.round(12).tolist()
    (1.0, [1.0, 0.0])
    """
    return compute_min_enclosing_ball(as_points(E, "E"), check_positive(rtol, "rtol"),
                               check_int(max_iter, "max_iter", minimum=1))


def compute_min_enclosing_ball(X: np.ndarray, rtol: float = 1e-12,
                               max_iter: int = 100_000) -> BallResult:
    """:func:`min_enclosing_ball` without its checks, for callers that validated."""
    if X.shape[0] == 1:
        return BallResult(X[0].copy(), 0.0, 0.0, np.array([0]), 0)
    Xs, s = pow2_scaled(X)
    c, lo, support, _, n_iter = ball_bracket(Xs, rtol, max_iter)
    center = c / s
    # re-score the returned centre (exactly rescaled: center * s is exact, and
    # the squares stay in range for coordinates near 1e300 or 1e-300)
    radius_s, _ = K.farthest_from(Xs, center * s)
    radius = radius_s / s
    lower = min(lo / s, float(radius))
    return BallResult(center, float(radius), float(lower), np.sort(support), n_iter)
