#!/usr/bin/env python
"""The proofs behind the lower end of the ``D*`` table: checked here, not at run time.

The library (:mod:`isoapprox.packing`) reads the proven bounds stored in
``isoapprox/packing/data`` and the closed formulas of
:mod:`isoapprox.packing.bounds`; it neither produces nor re-verifies a proof.
This module is where the proofs are produced and checked:

- the linear-programming certificates of ``dstar_lp.json``:
  :func:`sphere_kernel`, :func:`lp_curvature` and :func:`verify_lp`, which
  states and checks the proof of each (built by
  ``tools/build_lp_certificates.py``);
- the branch-and-bound proofs of ``dstar_bnb.json``: the search kernels
  (:func:`separation_search`, numba, over
  :func:`isoapprox.kernels.bnb.pair_cut`),
  :func:`prove_diameter_above` and :class:`DiameterProof`, and
  :func:`bnb_base`, the premise each claim stands on (found by
  ``tools/prove_dstar_bnb.py``).

The tests import this module (``tests/test_dstar.py``,
``tests/test_dstar_bnb.py``, ``tests/test_bnb.py``): every shipped
certificate is verified and every claim's premise checked in the default
run, the cheapest claim proved again, every claim in the ``slow`` run; so
CI checks every proof the table uses.  Provenance: docs/dev/dstar_design.md.

Run from the repository root::

    python tools/packing_proofs.py            # verify every LP certificate and
                                              # every claim's premise (seconds)
    python tools/packing_proofs.py --reprove  # also prove every branch-and-bound
                                              # claim again (minutes)
    python tools/build_lp_certificates.py     # regenerate dstar_lp.json (an hour)
    python tools/prove_dstar_bnb.py           # regenerate dstar_bnb.json (20 minutes)

Exit status 0 when every proof holds, 1 otherwise (each failure printed).
Deterministic: the same answers on every machine (no randomness, no BLAS in
the search, no threads, no fastmath).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit
from scipy.special import gamma as _gamma
from scipy.special import j0 as _j0
from scipy.special import jv as _jv

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from isoapprox._validation import check_int, check_positive  # noqa: E402
from isoapprox.exceptions import InvalidInputError  # noqa: E402
from isoapprox.kernels import JIT  # noqa: E402
from isoapprox.kernels.bnb import _widest, pair_cut  # noqa: E402
from isoapprox.packing.bounds import (  # noqa: E402
    BNB_FILE,
    LP_FILE,
    exact_unit,
    unit_lower_candidates,
)
from isoapprox.tolerances import BNB_RTOL, DSTAR_RTOL  # noqa: E402

__all__ = [
    "DiameterProof",
    "PROOF_MAX_SIZE",
    "bnb_base",
    "check_bnb_premises",
    "check_lp",
    "lp_curvature",
    "main",
    "prove_diameter_above",
    "separation_search",
    "sphere_kernel",
    "verify_lp",
]

# ----------------------------------------------------------------------
# linear-programming certificates (dstar_lp.json)
# ----------------------------------------------------------------------

#: allowance for the float64 evaluation of ``f`` (relative to ``f(0)``): far above
#: the rounding of a sum of at most a few hundred terms of size ``<= f(0)``
_LP_EVAL_RTOL = 1e-9
#: the certified ``f(0) / a0`` must stay below ``P`` by this relative margin
_LP_COUNT_RTOL = 1e-9


def sphere_kernel(n: int, x) -> np.ndarray:
    """``Omega_n(x) = Gamma(n/2) (2/x)^(n/2 - 1) J_(n/2 - 1)(x)``, ``Omega_n(0) = 1``.

    The mean of ``cos(x u_1)`` over unit vectors ``u`` of ``R^n``: so
    ``y -> Omega_n(rho |y|)`` is positive definite on ``R^n`` (the Fourier
    transform of the uniform measure on the sphere of radius ``rho``), and
    ``|Omega_n''| <= mean(u_1^2) = 1/n``.  ``J_0`` in the plane,
    ``sin(x) / x`` in ``R^3``; float64, ``x >= 0``.

    Examples
    --------
    >>> float(sphere_kernel(3, np.pi)) < 1e-16, float(sphere_kernel(2, 0.0))
    (True, 1.0)
    """
    x = np.asarray(x, dtype=np.float64)
    if n == 2:
        return _j0(x)
    if n == 3:
        return np.sinc(x / np.pi)
    nu = 0.5 * n - 1.0
    out = np.ones_like(x)
    pos = x > 0.0
    xp = x[pos]
    out[pos] = _gamma(0.5 * n) * (2.0 / xp) ** nu * _jv(nu, xp)
    return out


def lp_curvature(n: int, rho, mu) -> float:
    """``M = sum_k mu_k rho_k^2 / n``, a bound of ``|f''|`` for a certificate of
    :func:`verify_lp` (``|Omega_n''| <= 1/n``, :func:`sphere_kernel`); its
    check allows ``M step^2 / 8`` between grid points.

    Examples
    --------
    >>> lp_curvature(2, [1.0, 2.0], [0.5, 0.25])
    0.75
    """
    return float(np.dot(np.asarray(mu, dtype=np.float64),
                        np.square(np.asarray(rho, dtype=np.float64)))) / n


def verify_lp(P: int, n: int, D: float, rho, mu, a0: float, step: float) -> bool:
    """Whether ``(rho, mu, a0)`` proves that no ``P`` points of ``R^n`` with
    pairwise distances ``>= 1`` have diameter ``<= D`` (so ``D*(P, n, 1) > D``).

    The certificate is ``f(r) = a0 + sum_k mu_k Omega_n(rho_k r)``
    (:func:`sphere_kernel`) with ``a0 > 0``, ``mu_k >= 0``, ``rho_k > 0``; it
    proves the claim when ``f(0) / a0 < P`` and ``f <= 0`` on ``[1, D]``.

    Proof (the linear-programming bound of Delsarte, Goethals & Seidel, in
    ``R^n``).  ``y -> Omega_n(rho |y|)`` is positive definite, so for any
    points ``sum_{i,j} Omega_n(rho |x_i - x_j|) >= 0`` and hence
    ``sum_{i,j} f(|x_i - x_j|) >= a0 P^2``.  If every distance ``i != j``
    lies in ``[1, D]``, the left side is ``<= P f(0)``: ``P <= f(0) / a0``.

    Checked in float64 with allowances: ``f`` is evaluated on the grid
    ``1, 1 + step, ...`` below ``D``, and at ``D``.  As ``|Omega_n''| <=
    1/n``, ``|f''| <= M = sum_k mu_k rho_k^2 / n`` and between two grid
    points ``f`` exceeds the larger of its two values by at most ``M step^2 /
    8`` (the error of linear interpolation).  The evaluation error is
    allowed ``1e-9 f(0)`` and the count ``f(0) / a0`` must be below ``P (1 -
    1e-9)``.  Pure and deterministic; evaluated in blocks (memory
    ``O(len(rho))`` per row).
    """
    rho = np.asarray(rho, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    vals = (D, a0, step)
    if rho.shape != mu.shape or rho.ndim != 1 or not all(math.isfinite(v) for v in vals):
        return False
    if not (n >= 2 and D > 1.0 and a0 > 0.0 and step > 0.0) or not np.all(np.isfinite(rho)):
        return False
    if not (np.all(rho > 0.0) and np.all(mu >= 0.0) and np.all(np.isfinite(mu))):
        return False
    f0 = a0 + float(np.sum(mu))
    if not f0 / a0 < P * (1.0 - _LP_COUNT_RTOL):
        return False
    m = math.ceil((D - 1.0) / step)
    if m > 10**7:
        return False
    slack = lp_curvature(n, rho, mu) * step * step / 8.0 + _LP_EVAL_RTOL * f0
    for lo in range(0, m + 1, 4096):
        # the grid 1, 1 + step, ... below D, then D itself (no spacing above step)
        r = 1.0 + step * np.arange(lo, min(m, lo + 4096), dtype=np.float64)
        if lo + 4096 > m:
            r = np.append(r, D)
        if float(np.max(a0 + sphere_kernel(n, np.multiply.outer(r, rho)) @ mu)) + slack > 0.0:
            return False
    return True


# ----------------------------------------------------------------------
# branch and bound (dstar_bnb.json): are there P points with every
# pairwise distance in [1, D]?
# ----------------------------------------------------------------------


@njit(**JIT)
def _separation_contract(lo, hi, D, free0, rtol, gap_lo, gap_hi):
    """Tighten the boxes by ``1 <= |x_i - x_j| <= D`` (:func:`isoapprox.kernels.bnb.pair_cut`, every
    ordered pair) and the order of the points ``free0..P-1`` on the first axis
    (``x_(k)0 <= x_(k+1)0``), at most four rounds; ``False`` when a box
    empties or a pair of boxes cannot meet the constraints."""
    P = lo.shape[0]
    for _ in range(4):
        changed = False
        for i in range(P):
            for j in range(P):
                if i == j:
                    continue
                code = pair_cut(lo, hi, i, j, 1.0, D, rtol, gap_lo, gap_hi)
                if code < 0:
                    return False
                if code > 0:
                    changed = True
        for k in range(free0, P - 1):
            if lo[k + 1, 0] < lo[k, 0]:
                lo[k + 1, 0] = lo[k, 0]
                changed = True
        for k in range(P - 2, free0 - 1, -1):
            if hi[k, 0] > hi[k + 1, 0]:
                hi[k, 0] = hi[k + 1, 0]
                changed = True
        for k in range(free0, P):
            if lo[k, 0] > hi[k, 0]:
                return False
        if not changed:
            return True
    return True


@njit(**JIT)
def separation_search(lo0, hi0, D, free0, min_width, max_nodes, rtol, out_lo, out_hi):
    """Depth-first search for ``P`` points in the boxes ``[lo0, hi0]`` (shape
    ``(P, n)``) with every pairwise distance in ``[1, D]`` and the points
    ``free0..P-1`` ordered on the first axis.

    A node is a box per point: it is contracted (:func:`_separation_contract`)
    and dropped when that proves it empty, else its widest coordinate is
    halved (ties to the first point and axis; the lower half is searched
    first).  Deterministic: the same arguments give the same nodes on every
    machine (no BLAS, no threads, no fastmath).

    Returns ``(status, nodes)``: ``status`` 0 when no node is left (the boxes
    hold no such points: a proof), 1 when a node's boxes are all narrower
    than ``min_width`` (or cannot be halved in float64) and pass every test
    (copied to ``out_lo`` / ``out_hi``: points near a solution, not a
    proof of anything), 2 when ``max_nodes`` nodes were contracted, 3 when
    the stack is full (never at the depths of float64 halvings).
    """
    P, n = lo0.shape
    cap = 64 * P * n + 8
    st_lo = np.empty((cap, P, n))
    st_hi = np.empty((cap, P, n))
    gap_lo = np.empty(n)
    gap_hi = np.empty(n)
    lo = np.empty((P, n))
    hi = np.empty((P, n))
    st_lo[0] = lo0
    st_hi[0] = hi0
    top = 1
    nodes = 0
    while top > 0:
        if nodes >= max_nodes:
            return 2, nodes
        top -= 1
        lo[:, :] = st_lo[top]
        hi[:, :] = st_hi[top]
        nodes += 1
        if not _separation_contract(lo, hi, D, free0, rtol, gap_lo, gap_hi):
            continue
        width, bk, ba = _widest(lo, hi)
        if width < min_width or not (lo[bk, ba] < 0.5 * (lo[bk, ba] + hi[bk, ba]) < hi[bk, ba]):
            out_lo[:, :] = lo
            out_hi[:, :] = hi
            return 1, nodes
        if top + 2 > cap:
            return 3, nodes
        mid = 0.5 * (lo[bk, ba] + hi[bk, ba])
        st_lo[top] = lo
        st_hi[top] = hi
        st_lo[top, bk, ba] = mid
        top += 1
        st_lo[top] = lo
        st_hi[top] = hi
        st_hi[top, bk, ba] = mid
        top += 1
    return 0, nodes


_PROOF_STATUS = ("proved", "near solution", "node budget", "stack full")

#: the most coordinates ``P n`` of :func:`prove_diameter_above`: its fixed stack
#: holds ``64 P n + 8`` nodes of ``P n`` coordinates (about 17 MB at this size;
#: the search stops being useful far below it, at ``P = 12`` in the plane)
PROOF_MAX_SIZE = 128


@dataclasses.dataclass(frozen=True)
class DiameterProof:
    """What :func:`prove_diameter_above` found.

    Attributes
    ----------
    P, n, D, base : the question: are there ``P`` points of ``R^n``, pairwise
        distances in ``[1, D]``, whose diameter is ``>= base``?
    status : str
        ``"proved"`` (there are none: with ``D*(P, n, 1) >= base``, ``D*(P, n,
        1) > D``); ``"near solution"`` (boxes narrower than ``min_width`` pass
        every test: ``D`` is at or near ``D*``, nothing is proven);
        ``"node budget"`` (``max_nodes`` spent); ``"stack full"``.
    nodes : int
        Nodes contracted (the same on every machine).
    seconds : float
    boxes : numpy.ndarray or None
        ``(2, P, n)`` lower and upper corners of the boxes of the
        ``"near solution"`` node, else ``None``.
    """

    P: int
    n: int
    D: float
    base: float
    status: str
    nodes: int
    seconds: float
    boxes: np.ndarray | None = None

    @property
    def proved(self) -> bool:
        return self.status == "proved"


def bnb_base(P: int, n: int) -> float:
    """The library's proven lower bound of ``D*(P, n, 1)`` from everything
    but the branch-and-bound claims, lowered by ``DSTAR_RTOL``: the premise
    the claims stand on (the default ``base`` of
    :func:`prove_diameter_above`; a shipped claim holds only if its
    ``base`` is at most this: :func:`check_bnb_premises`)."""
    ex = exact_unit(P, n)
    if ex is not None:
        v = ex[0]
    else:
        v = max(v for v, _ in unit_lower_candidates(P, n, with_bnb=False))
    return v * (1.0 - DSTAR_RTOL)


def prove_diameter_above(P: int, n: int, D: float, *, base: float | None = None,
                         max_nodes: int = 10**8, min_width: float = 1e-3) -> DiameterProof:
    """Try to prove ``D*(P, n, 1) > D`` by a spatial branch-and-bound.

    The question: are there ``P`` points of ``R^n`` with every pairwise
    distance in ``[1, D]``?  Put a diametral pair at ``x_0 = 0`` and ``x_1 =
    (s, 0, ..., 0)``, ``s`` the diameter, so ``base <= s <= D`` when ``base``
    is a proven lower bound of ``D*``; label the other points by their first
    coordinate (``x_2 <= x_3 <= ...``), rotate about the first axis so that
    ``x_(2+q)`` has coordinates ``q + 2, ...`` equal to 0 and coordinate ``q +
    1`` ``>= 0`` (``q = 0..n-2``; a reflection in the plane).  Every other
    point lies in ``[base - D, D] x [-D, D]^(n-1)``.  The search
    (:func:`separation_search`) halves boxes, each
    point in its own box, and drops a node when contracting the boxes by the
    distance constraints and the order empties one (the rules and their
    rounding allowance, :data:`isoapprox.tolerances.BNB_RTOL`, are in the
    kernel's docstring).  No node left is a proof: no such points, so every
    set of ``P`` unit-separated points, whose diameter is ``>= base``, has
    diameter ``> D``.

    Parameters
    ----------
    P, n : int
        ``P >= 2`` points in ``R^n``, ``1 <= n <= 8``, ``P n <=
        PROOF_MAX_SIZE`` (refused before any work: the search's stack grows as
        ``(P n)^2``).
    D : float
        The diameter to exclude, ``> base``.
    base : float, optional
        A proven lower bound of ``D*(P, n, 1)``; the answer holds only if it
        is one.  Default: the library's bound without the branch-and-bound
        claims (formulas, exact values and the linear-programming
        certificates).
    max_nodes : int
        Budget of contracted nodes.
    min_width : float
        A node whose boxes are all narrower than this and pass every test
        ends the search with ``"near solution"``.

    Examples
    --------
    >>> prove_diameter_above(7, 2, 1.95, base=1.0).status        # D*(7, 2, 1) = 2
    'proved'
    >>> prove_diameter_above(7, 2, 2.0 + 1e-6, base=1.0).status   # hexagon and centre
    'near solution'
    """
    P = check_int(P, "P", minimum=2)
    n = check_int(n, "n", minimum=1, maximum=8)
    if P * n > PROOF_MAX_SIZE:
        raise InvalidInputError(f"`P` times `n` must be <= {PROOF_MAX_SIZE} (the search's "
                                f"stack grows as (P n)^2); got P = {P}, n = {n}")
    D = check_positive(D, "D")
    if base is None:
        base = bnb_base(P, n)
    base = check_positive(base, "base")
    if not D > base:
        raise InvalidInputError(f"`D` must be > base = {base!r}; got {D!r}")
    max_nodes = check_int(max_nodes, "max_nodes", minimum=1)
    min_width = check_positive(min_width, "min_width")

    lo = np.zeros((P, n))
    hi = np.zeros((P, n))
    lo[1, 0], hi[1, 0] = base, D
    lo[2:, 0], hi[2:, 0] = base - D, D
    lo[2:, 1:], hi[2:, 1:] = -D, D
    for q in range(min(n - 1, P - 2)):
        lo[2 + q, q + 2:] = hi[2 + q, q + 2:] = 0.0
        lo[2 + q, q + 1] = 0.0
    out_lo, out_hi = np.empty((P, n)), np.empty((P, n))
    t0 = time.perf_counter()
    code, nodes = separation_search(lo, hi, float(D), 2, float(min_width), int(max_nodes),
                                    BNB_RTOL, out_lo, out_hi)
    boxes = np.stack([out_lo, out_hi]) if code == 1 else None
    return DiameterProof(P, n, float(D), float(base), _PROOF_STATUS[code], int(nodes),
                         time.perf_counter() - t0, boxes)


# ----------------------------------------------------------------------
# checking the shipped files
# ----------------------------------------------------------------------


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def check_lp(doc: dict | None = None) -> list[str]:
    """The certificates of ``doc`` (default: the shipped ``dstar_lp.json``) that
    :func:`verify_lp` does not accept, each as ``"P = .., n = .., D = .."``
    (none for the shipped file: tested)."""
    doc = _read(LP_FILE) if doc is None else doc
    return [f"P = {c['P']}, n = {c['n']}, D = {c['D']}" for c in doc["certificates"]
            if not verify_lp(c["P"], c["n"], c["D"], c["rho"], c["mu"], c["a0"], c["step"])]


def check_bnb_premises(doc: dict | None = None) -> list[str]:
    """The claims of ``doc`` (default: the shipped ``dstar_bnb.json``) whose
    premise does not hold in the library as it is: ``D > base`` and ``base <=``
    :func:`bnb_base` ``(P, n)`` (a claim proves ``D* > D`` only given ``D* >=
    base``).  Cheap; the search itself is repeated by ``--reprove``."""
    doc = _read(BNB_FILE) if doc is None else doc
    bad = []
    for c in doc["claims"]:
        P, n, D, base = int(c["P"]), int(c["n"]), float(c["D"]), float(c["base"])
        if not (D > base and base <= bnb_base(P, n)):
            bad.append(f"P = {P}, n = {n}, D = {D}: base {base} not proven")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--reprove", action="store_true",
                    help="also prove every branch-and-bound claim again and compare its "
                         "node count (tools/prove_dstar_bnb.py --check; minutes)")
    args = ap.parse_args(argv)
    bad = check_lp()
    print(f"{LP_FILE.name}: {len(_read(LP_FILE)['certificates'])} certificates, "
          f"{len(bad)} rejected", flush=True)
    premises = check_bnb_premises()
    print(f"{BNB_FILE.name}: {len(_read(BNB_FILE)['claims'])} claims, "
          f"{len(premises)} without their premise", flush=True)
    for line in bad + premises:
        print(f"  FAILED {line}")
    status = 1 if bad or premises else 0
    if args.reprove:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from prove_dstar_bnb import check

        status = max(status, check(_read(BNB_FILE)))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
