"""Proven lower bounds of ``D*(P, n, 1)``: closed formulas, checked certificates
and branch-and-bound proofs; and of what they stand on or share with the
enclosing radius of :func:`isoapprox.packing.unit_radius_lower`: the largest
inner product of ``m`` unit vectors (spherical codes) and the radius bounds
from directions and shells about the centre.

``D*(P, n, 1)`` is the least diameter ``D`` of ``P`` points of ``R^n`` whose
pairwise distances are all ``>= 1`` (unit separation).  Every ``*_lower``
function here returns a lower bound of it, or ``0.0`` where its argument
does not apply: a closed formula with its proof in the docstring; for
:func:`lp_lower` and :func:`bnb_lower`, the largest value proven by the
shipped certificates and branch-and-bound proofs (``isoapprox/packing/data``),
which are produced and verified by ``tools/packing_proofs.py`` and the
tests, not when they are read.  None checks its arguments (``P >= 1`` and
``n >= 1`` are integers) and none applies a rounding allowance:
:func:`unit_lower_candidates` lists them and
:func:`isoapprox.packing.d_star` takes the largest, lowered by
:data:`isoapprox.tolerances.DSTAR_RTOL`.

Two facts are used throughout.

*Jung's theorem* (Jung 1901): a set of diameter ``D`` in ``R^n`` lies in a
closed ball of radius ``R <= D sqrt(n / (2 (n + 1)))``, so a lower bound on
the radius ``R`` of the least ball holding the points gives
``D >= R sqrt(2 (n + 1) / n)``.

*Centred vectors.*  Let ``c`` be that ball's centre and ``a_i = x_i - c``,
``|a_i| <= R``.  For ``i != j``,
``<a_i, a_j> = (|a_i|^2 + |a_j|^2 - |x_i - x_j|^2) / 2 <= (2 R^2 - 1) / 2``.

Examples
--------
>>> round(oler_lower(16), 4)          # 16 unit-separated points in the plane
3.2921
>>> round(obtuse_lower(5, 3), 6)      # sqrt(4 / 3)
1.154701
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np

from ..tolerances import DSTAR_RTOL

__all__ = [
    "PLANAR_EXACT",
    "PLANAR_EXACT_SOURCE",
    "BNB_FILE",
    "blichfeldt_lower",
    "exact_unit",
    "bnb_claims",
    "bnb_lower",
    "gram_rank_lower",
    "obtuse_lower",
    "oler_lower",
    "lp_certificates",
    "lp_lower",
    "spherical_code_lower",
    "sum_of_squares_lower",
    "KISSING_NUMBERS",
    "KISSING_SOURCES",
    "code_radius_lower",
    "degree3_certificate",
    "degree3_inner_lower",
    "delsarte2_inner",
    "inner_product_candidates",
    "inner_product_lower",
    "shell_radius",
    "shell_radius_lower",
    "unit_lower_candidates",
    "volume_lower",
]

#: exact planar values for unit separation, ``P = 2..8`` (theorems)
PLANAR_EXACT = {
    2: 1.0,
    3: 1.0,
    4: math.sqrt(2.0),
    5: (1.0 + math.sqrt(5.0)) / 2.0,
    6: 2.0 * math.sin(math.radians(72.0)),
    7: 2.0,
    8: 1.0 / (2.0 * math.sin(math.pi / 14.0)),
}
#: where each exact planar value is proven
PLANAR_EXACT_SOURCE = {
    2: "exact: regular simplex",
    3: "exact: regular simplex",
    **{P: "theorem: Bateman & Erdos 1951 (exact planar value)" for P in range(4, 8)},
    8: "theorem: Bezdek & Fodor 1999 (exact planar value)",
}


def _jung(R: float, n: int) -> float:
    """Least diameter of a set whose least enclosing ball has radius ``>= R`` (Jung)."""
    return R * math.sqrt(2.0 * (n + 1) / n)


def obtuse_lower(P: int, n: int) -> float:
    """``sqrt((n + 1) / n)`` for ``P >= n + 2``: pairwise obtuse vectors, then Jung.

    Proof.  If ``R^2 < 1/2`` the centred vectors satisfy ``<a_i, a_j> <=
    (2 R^2 - 1) / 2 < 0`` for ``i != j``, and none is zero (a point at ``c``
    would be ``>= 1 > R`` from the others).  At most ``n + 1`` nonzero
    vectors of ``R^n`` are pairwise at obtuse angles (a classical lemma;
    e.g. Rankin 1955), so ``P >= n + 2`` forces ``R >= 1 / sqrt 2`` and, by
    Jung, ``D >= sqrt((n + 1) / n)``.

    Examples
    --------
    >>> obtuse_lower(4, 2) == math.sqrt(1.5), obtuse_lower(3, 2)
    (True, 0.0)
    """
    if P < n + 2:
        return 0.0
    return _jung(1.0 / math.sqrt(2.0), n)


def spherical_code_lower(P: int, n: int) -> float:
    """Delsarte's degree-2 bound on the directions, then Jung (``P > 2 n``, ``n >= 2``).

    Proof.  If ``R >= 1`` then ``D >= sqrt(2 (n + 1) / n)``, above the value
    returned (which is ``< sqrt((n + 1) / (n - 1))``).  Let ``R < 1``.  Every
    ``|a_i| >= 1 - R > 0`` (else two points would be closer than 1), and
    with ``u_i = a_i / |a_i|``, ``s_i = |a_i|``:
    ``<u_i, u_j> <= f(s_i, s_j) = (s_i^2 + s_j^2 - 1) / (2 s_i s_j)``.  As
    ``df/ds_i = (s_i^2 - s_j^2 + 1) / (2 s_i^2 s_j) >= 0`` for
    ``s_i, s_j <= R <= 1``, ``<u_i, u_j> <= mu = 1 - 1 / (2 R^2)``.

    For unit vectors with all ``t_ij = <u_i, u_j> <= mu`` (``i != j``) and
    ``mu < 1 / n``, take ``g(t) = (t + 1)(t - mu) = t^2 + (1 - mu) t - mu``,
    ``<= 0`` on ``[-1, mu]``.  Then ``sum_ij t_ij^2 = |U U^T|_F^2 >= P^2 / n``
    (``U U^T`` is ``n x n`` with trace ``P``; Cauchy-Schwarz on its
    eigenvalues) and ``sum_ij t_ij = |sum_i u_i|^2 >= 0``, so
    ``P^2 (1/n - mu) <= sum_ij g(t_ij) <= P g(1) = 2 P (1 - mu)``:
    ``P <= 2 n (1 - mu) / (1 - n mu)`` (Delsarte, Goethals & Seidel 1977,
    the degree-2 linear-programming bound).  Solved for ``mu``:
    ``mu >= mu_P = (P - 2 n) / (n (P - 2))`` (also when ``mu >= 1/n``, as
    ``mu_P < 1/n``).  Hence ``R^2 >= 1 / (2 (1 - mu_P))`` and, by Jung,
    ``D >= sqrt((n + 1) / (n (1 - mu_P)))``.

    Examples
    --------
    >>> round(spherical_code_lower(7, 3), 6)   # mu_P = 1/15
    1.195229
    """
    if n < 2 or P <= 2 * n:
        return 0.0
    return math.sqrt((n + 1) / (n * (1.0 - delsarte2_inner(P, n))))


def delsarte2_inner(m: int, n: int) -> float:
    """``mu_m = (m - 2 n) / (n (m - 2))``, Delsarte's degree-2 bound: ``m > 2 n``
    unit vectors of ``R^n`` have two with inner product ``>= mu_m`` (proof in
    :func:`spherical_code_lower`); ``0.0`` for ``m <= 2 n``.

    Examples
    --------
    >>> delsarte2_inner(7, 3)
    0.06666666666666667
    """
    if m <= 2 * n:
        return 0.0
    return (m - 2 * n) / (n * (m - 2.0))


def gram_rank_lower(P: int, n: int) -> float:
    """The rank of the Gram matrix against the squared distances (``P >= n + 2``).

    ``D^2 >= 1 + 2 ((P - n - 1) + sqrt((n + 1)(P - 1)(P - n - 1))) / (n P)``.

    Proof.  Let the ``P`` points have pairwise distances ``d_ij`` in
    ``[1, t]`` (``i != j``), ``w = t^2 - 1``, and write the matrix of squared
    distances as ``11^T - I + E`` with ``E`` symmetric, ``E_ii = 0`` and
    ``e_ij = d_ij^2 - 1`` in ``[0, w]``.  With the centring projection
    ``J = I - 11^T / P`` the Gram matrix of the centred points is
    ``G = -J (11^T - I + E) J / 2 = (J - J E J) / 2``: positive semidefinite
    of rank ``<= n``, so ``tr(G)^2 <= n |G|_F^2`` (Cauchy-Schwarz on its
    ``<= n`` nonzero eigenvalues).  Let ``u = 1^T E 1 / P`` (``0 <= u <=
    (P - 1) w``).  As ``E_ii = 0``, ``tr(J E) = -u``, so ``tr G = (P - 1 +
    u) / 2`` and ``4 |G|_F^2 = P - 1 + 2 u + |J E J|_F^2``, where
    ``|J E J|_F^2 = |E|_F^2 - 2 |E 1|^2 / P + (1^T E 1)^2 / P^2 <= |E|_F^2 -
    u^2`` (``|E 1|^2 >= (1^T E 1)^2 / P``) and ``|E|_F^2 = sum e_ij^2 <= w
    sum e_ij = w P u``.  Hence some ``u >= 0`` has
    ``phi(u) = n (P - 1 + (2 + w P) u - u^2) - (P - 1 + u)^2 >= 0``.
    ``phi`` is a concave quadratic with ``phi(0) = (P - 1)(n + 1 - P) < 0``
    for ``P >= n + 2``; with ``b = n (2 + w P) - 2 (P - 1)`` it decreases
    on ``u >= 0`` if ``b <= 0``, and otherwise its largest value is
    ``phi(0) + b^2 / (4 (n + 1))``.  So ``b >= 2 sqrt((n + 1)(P - 1)(P - n
    - 1))``, i.e. ``w >= 2 ((P - n - 1) + sqrt((n + 1)(P - 1)(P - n - 1))) /
    (n P)``; a layout of diameter ``D`` has ``t = D``.

    Equality needs every ``e_ij`` in ``{0, w}``, equal row sums of ``E`` and
    ``n`` equal nonzero eigenvalues of ``G``.  The square (``P = 4``, ``n =
    2``), the ten points ``e_i + e_j`` of ``R^5`` (in a 4-flat: ``P = 10``,
    ``n = 4``) and the sixteen even-weight points of ``{0, 1}^5`` (``P = 16``,
    ``n = 5``) attain it, all at ``sqrt 2``, so there the bound is exact; the
    octahedron (``sqrt 2``, bound ``1.387``) does not.

    Examples
    --------
    >>> round(gram_rank_lower(4, 2) ** 2, 12), round(gram_rank_lower(10, 4) ** 2, 12)
    (2.0, 2.0)
    >>> gram_rank_lower(4, 3)
    0.0
    """
    if P < n + 2:
        return 0.0
    q = P - n - 1.0
    w = 2.0 * (q + math.sqrt((n + 1.0) * (P - 1.0) * q)) / (n * float(P))
    return math.sqrt(1.0 + w)


def sum_of_squares_lower(P: int, n: int) -> float:
    """``sqrt((P - 1)(n + 1) / (P n))``: the sum of squared distances, then Jung.

    Proof.  With ``c`` the least enclosing ball's centre and ``m`` the
    centroid, ``sum_{i<j} |x_i - x_j|^2 = P sum_i |x_i - m|^2 <= P sum_i
    |x_i - c|^2 <= P^2 R^2``; each of the ``P (P - 1) / 2`` terms is
    ``>= 1``, so ``R^2 >= (P - 1) / (2 P)``.  Since ``(P - 1) / (2 P) <
    1/2``, this never exceeds :func:`obtuse_lower` for ``P >= n + 2`` and
    stays below 1 (the separation itself) for ``P <= n + 1``: it is listed
    for completeness and never decides the table.

    Examples
    --------
    >>> sum_of_squares_lower(2, 1)
    1.0
    """
    if P < 2:
        return 0.0
    return math.sqrt((P - 1) * (n + 1) / (P * float(n)))


def volume_lower(P: int, n: int) -> float:
    """``sqrt((n + 1) / (2 n)) (P^(1/n) - 1)``: disjoint balls in a ball, then Jung.

    Proof.  The balls of radius ``1/2`` about the points are disjoint and lie
    in the ball of radius ``R + 1/2`` about ``c``: ``P <= (2 R + 1)^n``.

    Examples
    --------
    >>> round(volume_lower(1000, 2), 6)
    26.520102
    """
    if P < 2:
        return 0.0
    return _jung(0.5 * (P ** (1.0 / n) - 1.0), n)


def blichfeldt_lower(P: int, n: int) -> float:
    """Blichfeldt's finite packing bound, then Jung.

    ``P <= ((n + 2) / 2) (sqrt 2 R + 1)^n``, so
    ``D >= sqrt((n + 1) / n) ((2 P / (n + 2))^(1/n) - 1)``.

    Proof (Blichfeldt 1929, finite form).  Scale to separation 2 (radius
    ``2 R``).  Let ``rho(x) = (2 - |x|^2)_+``.  For any ``x`` let ``I`` be the
    ``k`` indices with ``|x - x_i|^2 < 2`` and ``y_i = x_i - x``.  The identity
    ``sum_{i,j in I} |y_i - y_j|^2 = 2 k sum_I |y_i|^2 - 2 |sum_I y_i|^2``
    with every ``|y_i - y_j|^2 >= 4`` (``i != j``) gives
    ``4 k (k - 1) <= 2 k sum_I |y_i|^2``, so
    ``sum_i rho(x - x_i) = 2 k - sum_I |y_i|^2 <= 2``.  Integrate over the
    ball ``B`` of radius ``2 R + sqrt 2`` about the centre, which holds the
    support of each ``rho(. - x_i)``: ``P int rho <= 2 vol(B)``, and
    ``int rho = V_n 2^(n/2) 4 / (n + 2)`` (``V_n`` the unit ball's volume), so
    ``P <= ((n + 2) / 2) ((2 R + sqrt 2) / sqrt 2)^n``.

    Examples
    --------
    >>> blichfeldt_lower(4, 2) < volume_lower(4, 2)   # the plane: volume is better
    True
    >>> blichfeldt_lower(10**6, 8) > volume_lower(10**6, 8)
    True
    """
    base = 2.0 * P / (n + 2.0)
    if base <= 1.0:
        return 0.0
    return math.sqrt((n + 1) / float(n)) * (base ** (1.0 / n) - 1.0)


def oler_lower(P: int) -> float:
    """Planar bound: the root of ``(pi / (2 sqrt 3)) D^2 + (pi / 2) D + 1 = P``.

    Proof.  Oler's inequality (Oler 1961; Folkman & Graham 1969): ``P``
    points with mutual distances ``>= 1`` in a compact convex set ``K`` of
    the plane satisfy ``P <= (2 / sqrt 3) area(K) + perimeter(K) / 2 + 1``.
    Take ``K`` the convex hull of the points, of diameter ``D``: the
    isodiametric inequality gives ``area <= pi D^2 / 4`` and Rosenthal &
    Szasz (Barbier: constant width maximises the perimeter) ``perimeter <=
    pi D``.  The left-hand side increases with ``D``.

    Examples
    --------
    >>> round(oler_lower(2), 6)  # weaker than the separation itself
    0.495098
    """
    if P < 2:
        return 0.0
    a = math.pi / (2.0 * math.sqrt(3.0))
    b = math.pi / 2.0
    c = P - 1.0
    # the positive root of a D^2 + b D - c = 0, in the cancellation-free form
    return 2.0 * c / (b + math.sqrt(b * b + 4.0 * a * c))


#: where the certificates of :func:`lp_lower` are shipped
LP_FILE = Path(__file__).resolve().parent / "data" / "dstar_lp.json"


def lp_certificates() -> dict[tuple[int, int], float]:
    """``{(P, n): D}``: the shipped linear-programming proofs of ``D*(P, n, 1) > D``.

    The certificates (``isoapprox/packing/data/dstar_lp.json``) are built
    offline by ``tools/build_lp_certificates.py`` and verified by
    ``tools/packing_proofs.py`` (``verify_lp``; the tests verify every one),
    not when the file is read.
    """
    return _shipped_proofs(LP_FILE, "certificates")


@functools.lru_cache(maxsize=2)
def _shipped_proofs(path: Path, key: str) -> dict[tuple[int, int], float]:
    """``{(P, n): D}`` of the proofs of ``D*(P, n, 1) > D`` listed under ``key`` in the
    JSON file ``path`` (the largest ``D`` of each ``(P, n)``)."""
    out: dict[tuple[int, int], float] = {}
    for c in json.loads(path.read_text(encoding="utf-8"))[key]:
        P, n, D = int(c["P"]), int(c["n"]), float(c["D"])
        out[P, n] = max(D, out.get((P, n), 0.0))
    return out


def _monotone_max(proofs: dict[tuple[int, int], float], P: int, n: int) -> float:
    """The largest ``D`` of ``proofs`` at ``(P', n')`` with ``P' <= P`` and ``n' >= n``
    (``D*`` is non-decreasing in ``P`` and non-increasing in ``n``), ``0.0`` if none."""
    return max((D for (p, q), D in proofs.items() if p <= P and q >= n), default=0.0)


def lp_lower(P: int, n: int) -> float:
    """Lower bound from the shipped linear-programming certificates.

    The largest certified ``D`` over the certificates of ``(P', n')`` with
    ``P' <= P`` and ``n' >= n`` (``D*`` is non-decreasing in ``P`` and
    non-increasing in ``n``), ``0.0`` if there is none (:func:`lp_certificates`).

    Examples
    --------
    >>> 2.32 < lp_lower(9, 2) < 2.33
    True
    """
    return _monotone_max(lp_certificates(), P, n)


def exact_unit(P: int, n: int) -> tuple[float, str] | None:
    """The closed form of ``D*(P, n, 1)`` and its source where one is known
    (``P <= 1``, ``n = 1``, the simplex ``P <= n + 1``, the planar theorems),
    else ``None``."""
    if P <= 1:
        return 0.0, "exact: a single point"
    if n == 1:
        return float(P - 1), "exact: equally spaced points on a line"
    if P <= n + 1:
        return 1.0, "exact: regular simplex"
    if n == 2 and P in PLANAR_EXACT:
        return PLANAR_EXACT[P], PLANAR_EXACT_SOURCE[P]
    return None


def unit_lower_candidates(P: int, n: int, *, with_bnb: bool = True) -> list[tuple[float, str]]:
    """Every lower bound of ``D*(P, n, 1)`` that applies at ``(P, n)``, with its source.

    Closed forms (``P <= n + 1``, ``n = 1``, the planar theorems) are not
    listed: :func:`isoapprox.packing.d_star` handles them as exact values.
    ``with_bnb=False`` leaves out the branch-and-bound claims (what those
    claims stand on, :func:`bnb_claims`).

    Examples
    --------
    >>> [s for _, s in unit_lower_candidates(7, 3)][:2]
    ['margin', 'obtuse vectors (at most n + 1) + Jung']
    """
    out = [(1.0 if P >= 2 else 0.0, "margin")]
    out.append((obtuse_lower(P, n), "obtuse vectors (at most n + 1) + Jung"))
    out.append((spherical_code_lower(P, n), "Delsarte degree-2 bound on directions + Jung"))
    out.append((gram_rank_lower(P, n), "rank of the Gram matrix on the squared distances"))
    out.append((sum_of_squares_lower(P, n), "sum of squares + Jung"))
    out.append((volume_lower(P, n), "volume packing + Jung"))
    out.append((blichfeldt_lower(P, n), "Blichfeldt 1929 finite packing + Jung"))
    if n == 2:
        out.append((oler_lower(P), "Oler 1961 + isodiametric + Rosenthal-Szasz"))
    if n >= 2:
        out.append((lp_lower(P, n), "linear programming (certificate in dstar_lp.json)"))
    if with_bnb and n >= 2:
        out.append((bnb_lower(P, n), "branch-and-bound proof (dstar_bnb.json)"))
    return out


# ----------------------------------------------------------------------
# branch-and-bound proofs (produced and checked by tools/packing_proofs.py)
# ----------------------------------------------------------------------

#: where the claims of :func:`bnb_lower` are shipped
BNB_FILE = Path(__file__).resolve().parent / "data" / "dstar_bnb.json"


def bnb_claims() -> dict[tuple[int, int], float]:
    """``{(P, n): D}``: the shipped branch-and-bound proofs of ``D*(P, n, 1) > D``.

    Each was found by ``prove_diameter_above`` of ``tools/packing_proofs.py``
    (run by ``tools/prove_dstar_bnb.py``, its node count recorded) given
    ``D*(P, n, 1) >= base``.  Checked there and by the tests, not when the
    file is read: each claim's premise (its ``base`` is at most the library's
    bound without these claims, and ``D > base``), and the search again.
    """
    return _shipped_proofs(BNB_FILE, "claims")


def bnb_lower(P: int, n: int) -> float:
    """Lower bound from the shipped branch-and-bound proofs.

    The largest ``D`` over the claims of ``(P', n')`` with ``P' <= P`` and
    ``n' >= n``, ``0.0`` if there is none (:func:`bnb_claims`).

    Examples
    --------
    >>> 2.5 < bnb_lower(9, 2) < 2.5693   # the best layout known: 2.56924
    True
    """
    return _monotone_max(bnb_claims(), P, n)


# ----------------------------------------------------------------------
# directions: the largest inner product of m unit vectors
# ----------------------------------------------------------------------

#: kissing numbers known exactly: more than ``KISSING_NUMBERS[n]`` unit vectors
#: of ``R^n`` have two less than 60 degrees apart
KISSING_NUMBERS = {1: 2, 2: 6, 3: 12, 4: 24, 8: 240, 24: 196560}
#: where each kissing number is proven
KISSING_SOURCES = {
    1: "the line", 2: "the hexagon",
    3: "Schutte & van der Waerden 1953", 4: "Musin 2008",
    8: "Levenshtein 1979; Odlyzko & Sloane 1979",
    24: "Levenshtein 1979; Odlyzko & Sloane 1979",
}
#: allowance for the float64 evaluation of a closed-form inner product bound
#: (a cosine, a cotangent: a few ulps of numbers of size <= 10)
_INNER_ATOL = 1e-12


def degree3_certificate(m: int, n: int, s: float, b: float) -> bool:
    """Whether ``f(t) = (t - s)(t + b)^2`` proves that ``m`` unit vectors of
    ``R^n`` (``n >= 2``) cannot have all their inner products ``<= s``.

    Proof (the linear-programming bound of Delsarte, Goethals & Seidel 1977,
    degree 3).  The Gegenbauer polynomials of ``S^(n-1)``, normalised to 1
    at 1, ``G_1 = t``, ``G_2 = (n t^2 - 1) / (n - 1)``, ``G_3 = ((n + 2)
    t^3 - 3 t) / (n - 1)``, are positive definite: ``sum_(i,j) G_k(<u_i,
    u_j>) >= 0`` for any unit vectors.  Expanded,
    ``f = (n - 1) / (n + 2) G_3 + (2 b - s)(n - 1) / n G_2 + (3 / (n + 2) +
    b^2 - 2 b s) G_1 + ((2 b - s) / n - s b^2)``.  If these coefficients are
    ``>= 0`` and the constant ``f_0 > 0``, then ``sum_(i,j) f(t_ij) >= f_0
    m^2``; if also every ``t_ij <= s`` (``i != j``), where ``f <= 0``, the
    left side is ``<= m f(1)``, so ``m <= f(1) / f_0 = (1 - s)(1 + b)^2 /
    f_0``.  The certificate holds when that is ``< m``: then some ``t_ij >
    s``.  Checked exactly on the float64 values of ``s`` and ``b``: with
    ``s = s_n / s_d`` and ``b = b_n / b_d`` (``s_d, b_d > 0``), each
    condition multiplied by a positive denominator (``b_d s_d``, ``(n + 2)
    b_d^2 s_d``, ``n b_d^2 s_d``) is one in integers.

    Examples
    --------
    >>> degree3_certificate(13, 3, 0.40, 1.4 / 2.2)   # 13 directions in R^3
    True
    >>> degree3_certificate(12, 3, 0.45, 1.45 / 2.35)  # the icosahedron: 0.4472
    False
    """
    if n < 2 or not (math.isfinite(s) and math.isfinite(b)):
        return False
    m, n = int(m), int(n)  # Python integers: a numpy int64 would overflow below
    sn, sd = float(s).as_integer_ratio()
    bn, bd = float(b).as_integer_ratio()
    c = 2 * bn * sd - sn * bd  # (2 b - s) b_d s_d
    f1 = 3 * bd * bd * sd + (n + 2) * bn * (bn * sd - 2 * sn * bd)  # f_1 (n + 2) b_d^2 s_d
    f0 = c * bd - n * sn * bn * bn  # f_0 n b_d^2 s_d
    # (1 - s)(1 + b)^2 < m f_0, times n b_d^2 s_d
    return c >= 0 and f1 >= 0 and f0 > 0 and n * (sd - sn) * (bd + bn) ** 2 < m * f0


def _degree3_b(s: float, n: int) -> list[float]:
    """Candidate ``b`` for :func:`degree3_certificate`: the minimiser of ``f(1) /
    f_0``, ``(1 + s) / (1 + n s)``, and the roots of ``f_1 = 0`` around it."""
    out = []
    if 1.0 + n * s > 0.0:
        out.append((1.0 + s) / (1.0 + n * s))
    disc = s * s - 3.0 / (n + 2.0)
    if disc >= 0.0:
        out += [s + math.sqrt(disc), s - math.sqrt(disc)]
    return out


def degree3_inner_lower(m: int, n: int) -> float:
    """The largest ``s`` (bisection, 60 steps) for which :func:`degree3_certificate`
    proves that ``m`` unit vectors of ``R^n`` have two with inner product ``> s``;
    ``-1.0`` where none is found (``n < 2``, ``m <= 2``, or no certificate at
    ``s = 0``)."""
    if n < 2 or m <= 2:
        return -1.0

    def proves(s: float) -> bool:
        return any(degree3_certificate(m, n, s, b) for b in _degree3_b(s, n))

    lo, hi = 0.0, 1.0
    if not proves(lo):
        return -1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if proves(mid):
            lo = mid
        else:
            hi = mid
    return lo


def inner_product_candidates(m: int, n: int) -> list[tuple[float, str]]:
    """Lower bounds of the largest inner product among ``m >= 2`` unit vectors of
    ``R^n`` (some pair has ``<u_i, u_j>`` at least this), with their sources.

    - ``m <= n + 1``: ``-1 / (m - 1)`` (``|sum u_i|^2 >= 0``); ``m >= n + 2``:
      ``0`` (at most ``n + 1`` vectors are pairwise obtuse; Rankin 1955);
    - ``m > 2 n``: ``(m - 2 n) / (n (m - 2))`` (Delsarte's degree-2 bound, proof
      in :func:`spherical_code_lower`); the degree-3 bound
      (:func:`degree3_inner_lower`);
    - the line (``m >= 3``): ``1``; the plane: ``cos(2 pi / m)`` (the ``m``
      angular gaps sum to ``2 pi``); ``R^3`` (``m >= 3``): Fejes Toth's bound
      (1943) ``(cot^2 w - 1) / 2`` with ``w = m pi / (6 (m - 2))``;
    - ``m > KISSING_NUMBERS[n]``: ``1/2`` (two vectors less than 60 degrees
      apart).

    The closed forms computed in float64 are lowered by ``1e-12``.

    Examples
    --------
    >>> round(max(inner_product_candidates(12, 3))[0], 6)   # the icosahedron
    0.447214
    """
    out = [(-1.0 / (m - 1), "sum of the vectors")]
    if m >= n + 2:
        out.append((0.0, "obtuse vectors (at most n + 1)"))
    if m > 2 * n:
        out.append((delsarte2_inner(m, n) - _INNER_ATOL, "Delsarte degree 2"))
    if n == 1 and m >= 3:
        out.append((1.0, "the line"))
    if n == 2:
        out.append((math.cos(2.0 * math.pi / m) - _INNER_ATOL, "angular gaps in the plane"))
    if n == 3 and m >= 3:
        c = 1.0 / math.tan(m * math.pi / (6.0 * (m - 2)))
        out.append((0.5 * (c * c - 1.0) - _INNER_ATOL, "Fejes Toth 1943"))
    if n in KISSING_NUMBERS and m > KISSING_NUMBERS[n]:
        out.append((0.5, f"kissing number ({KISSING_SOURCES[n]})"))
    if n >= 2 and m > 2:
        out.append((degree3_inner_lower(m, n), "Delsarte degree 3"))
    return out


@functools.lru_cache(maxsize=4096)
def inner_product_lower(m: int, n: int) -> float:
    """The largest of :func:`inner_product_candidates` (``-inf`` for ``m <= 1``)."""
    if m <= 1:
        return -math.inf
    return max(v for v, _ in inner_product_candidates(m, n))


# ----------------------------------------------------------------------
# the least enclosing radius of unit-separated points
# ----------------------------------------------------------------------


def code_radius_lower(P: int, n: int) -> float:
    """``min(1, 1 / sqrt(2 (1 - mu)))`` with ``mu`` :func:`inner_product_lower` of
    ``(P, n)``: a lower bound of the least radius of a ball holding ``P >= 2``
    points of ``R^n`` at pairwise distances ``>= 1``.

    Proof.  If the radius ``R < 1``, the directions ``u_i`` of the points from
    the centre satisfy ``<u_i, u_j> <= 1 - 1 / (2 R^2)``
    (:func:`spherical_code_lower`), which is ``>= mu``.

    Examples
    --------
    >>> round(code_radius_lower(4, 3), 6), code_radius_lower(14, 3)
    (0.612372, 1.0)
    """
    if P < 2:
        return 0.0
    mu = inner_product_lower(P, n)
    if mu >= 0.5:
        return 1.0
    return 1.0 / math.sqrt(2.0 * (1.0 - mu))


def shell_radius(sigma: float, mu: float) -> float:
    """The least ``R >= sigma`` with ``F(sigma, R) >= mu`` (see :func:`shell_radius_lower`).

    ``F(sigma, R) = max(g(sigma, sigma), g(sigma, R), g(R, R))``, ``g(s, t) =
    (s^2 + t^2 - 1) / (2 s t)``; it increases with ``R >= sigma``, so the
    answer is ``sigma`` when ``g(sigma, sigma) >= mu`` and otherwise the
    least of the solutions of ``g(R, R) = mu`` (``R = 1 / sqrt(2 (1 -
    mu))``) and ``g(sigma, R) = mu`` (the larger root of ``R^2 - 2 sigma mu
    R + sigma^2 - 1 = 0``, which is negative at ``R = sigma``).

    Examples
    --------
    >>> round(shell_radius(0.5, 1.0), 12)   # points on a line beyond radius 1/2: 3/2
    1.5
    """
    if 1.0 - 0.5 / (sigma * sigma) >= mu:
        return sigma
    ra = math.inf if mu >= 1.0 else 1.0 / math.sqrt(2.0 * (1.0 - mu))
    # the discriminant is lowered by more than its rounding (a few ulps of
    # max(1, sigma^2)), so that its square root never exceeds the exact one
    disc = 1.0 - sigma * sigma * (1.0 - mu * mu) - 1e-14 * max(1.0, sigma * sigma)
    rb = sigma * mu + math.sqrt(max(disc, 0.0))
    return max(sigma, min(ra, rb))


def shell_radius_lower(P: int, n: int, inner: np.ndarray, *, grid: int = 8) -> float:
    """A lower bound of the least radius of a ball holding ``P`` points of
    ``R^n`` at pairwise distances ``>= 1``, given lower bounds ``inner[j]`` of
    that radius for ``j < P`` points (``inner[0] = inner[1] = 0``).  A
    shorter ``inner`` stands for its last value repeated (the radius does not
    decrease with the count), which proves less.

    Proof.  Let the points lie in a closed ball of radius ``R`` about ``c``,
    ``a_i = x_i - c``, ``s_i = |a_i|``, ``u_i = a_i / s_i``; from ``|a_i -
    a_j| >= 1``, ``<u_i, u_j> <= g(s_i, s_j) = (s_i^2 + s_j^2 - 1) / (2 s_i
    s_j)``.  Take any ``sigma > 0`` and ``J = max{j < P: inner[j] < sigma}``:
    ``j`` points in the open ball of radius ``sigma`` about ``c`` have a
    least ball of radius ``< sigma``, so at most ``J`` points have ``s_i <
    sigma``.  If ``P - J >= 2``, the others have ``s_i`` in ``[sigma, R]``
    and pairwise ``<u_i, u_j> <= F(sigma, R)``, the largest value of ``g`` on
    ``[sigma, R]^2``: ``dg/ds`` has the sign of ``s^2 - t^2 + 1``, so in
    each argument ``g`` decreases then increases and its largest value is at
    a corner, ``g(sigma, sigma)``, ``g(sigma, R)`` or ``g(R, R)``.  Hence
    ``F(sigma, R) >= mu(P - J)`` (:func:`inner_product_lower`) and ``R >=``
    :func:`shell_radius` ``(sigma, mu(P - J))``.  The ``sigma`` tried:
    ``grid`` points of each interval ``(inner[J], inner[J + 1]]`` (its right
    end included), over which ``J`` is constant when ``inner`` is
    non-decreasing.  The result is lowered by ``DSTAR_RTOL``.

    Examples
    --------
    >>> round(shell_radius_lower(16, 3, np.array([0.0, 0.0, 0.5])), 4)  # Fejes Toth, m = 15
    1.0534
    """
    # r*(j) does not decrease with j, so the running maximum bounds it too; the
    # repeated last value of a short ``inner`` adds no interval (r[J + 1] ==
    # r[J] from its end on), so only len(inner) counts are looked at: the work
    # and memory are O(len(inner)) for any P, not O(P)
    r = np.maximum.accumulate(np.asarray(inner, dtype=np.float64)[:P])
    best = 0.0
    frac = np.arange(1, grid + 1) / grid
    for J in range(1, min(P, len(r)) - 1):
        lo, hi = float(r[J]), float(r[J + 1])
        if not hi > lo:
            continue
        mu = inner_product_lower(P - J, n)
        for f in frac:
            # every sigma in (r[J], r[J + 1]] has J(sigma) = J
            sigma = min(lo + (hi - lo) * float(f), hi)
            best = max(best, shell_radius(sigma, mu))
    return best * (1.0 - DSTAR_RTOL)
