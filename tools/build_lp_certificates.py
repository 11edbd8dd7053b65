#!/usr/bin/env python
"""Build the linear-programming certificates of ``D*(P, n, 1)``.

A certificate is ``f(r) = a0 + sum_k mu_k Omega_n(rho_k r)``
(``sphere_kernel`` of ``tools/packing_proofs.py``; ``J_0`` in the plane) with
``a0 > 0``, ``mu >= 0``, ``f(0) / a0 < P`` and ``f <= 0`` on ``[1, D]``: it
proves that ``P`` unit-separated points of ``R^n`` have diameter ``> D``
(``verify_lp`` of ``tools/packing_proofs.py`` states and checks it).  Here ``f``
comes from a linear program (HiGHS through ``scipy.optimize.linprog``):
maximise ``a0`` with ``a0 + sum mu = 1`` and ``f(r) <= -eta`` on a grid of
``[1, D]``, over ``mu`` on a grid of frequencies ``rho``; ``D`` is the largest
value of a bisection whose certificate passes the check.  Writes
``isoapprox/packing/data/dstar_lp.json``.

Entries: the plane for ``P = 5..24`` (``P <= 8`` only as a check of the
machinery against the exact values), and ``n = 3..8`` with ``n + 2 <= P <=
64`` where the LP beats the other lower bounds of the table (one LP decides).

Deterministic (fixed grids, no randomness).  Only the check decides what is
shipped, so a different LP answer on another machine gives a different
certificate, never a wrong one.

Run from the repository root::

    python tools/build_lp_certificates.py   # about an hour on one core (3439 s, shared machine)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isoapprox.io import atomic_write_text  # noqa: E402
from isoapprox.packing.bounds import LP_FILE, PLANAR_EXACT, unit_lower_candidates  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
from packing_proofs import lp_curvature, sphere_kernel, verify_lp  # noqa: E402

#: frequencies of the LP (``Omega_n(rho r)``, ``0 < rho <= 30``)
RHO = np.linspace(0.1, 30.0, 300)
#: LP grid on ``[1, D]``
LP_ROWS = 2000
#: the LP asks ``f <= -ETA`` on its grid (room for the check's allowances); the
#: check's grid step makes its interpolation allowance ``ETA / 4``
ETA = 1e-5
#: bisection steps on ``D``
STEPS = 18


def certificate(P: int, n: int, D: float) -> dict | None:
    """An LP certificate for ``(P, n, D)`` that passes the check, or ``None``."""
    r = np.linspace(1.0, D, LP_ROWS)
    A = np.hstack([np.ones((LP_ROWS, 1)), sphere_kernel(n, np.multiply.outer(r, RHO))])
    c = np.zeros(1 + RHO.size)
    c[0] = -1.0
    res = linprog(c, A_ub=A, b_ub=np.full(LP_ROWS, -ETA), A_eq=np.ones((1, 1 + RHO.size)),
                  b_eq=[1.0], bounds=[(None, None)] + [(0.0, None)] * RHO.size,
                  method="highs")
    if res.status != 0 or not res.x[0] > 0.0:
        return None
    a0 = float(res.x[0])
    keep = res.x[1:] > 1e-12
    rho = [float(v) for v in RHO[keep]]
    mu = [float(v) for v in res.x[1:][keep]]
    curv = lp_curvature(n, rho, mu)  # >= max |f''|
    step = float(np.sqrt(2.0 * ETA / max(curv, 1e-300)))  # curv step^2 / 8 = ETA / 4
    if not verify_lp(P, n, D, rho, mu, a0, step):
        return None
    return {"P": P, "n": n, "D": float(D), "a0": a0, "rho": rho, "mu": mu, "step": step,
            "count": (a0 + sum(mu)) / a0}


def others(P: int, n: int) -> float:
    """The largest lower bound of ``(P, n)`` besides the LP certificates."""
    return max(v for v, src in unit_lower_candidates(P, n) if "linear programming" not in src)


def best(P: int, n: int, lo: float, hi: float) -> dict | None:
    """The certificate of the largest ``D`` in ``(lo, hi)`` the bisection reaches."""
    found = None
    for _ in range(STEPS):
        mid = 0.5 * (lo + hi)
        cert = certificate(P, n, mid)
        if cert is None:
            hi = mid
        else:
            lo, found = mid, cert
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-max", type=int, default=8, help="largest dimension (default 8)")
    ap.add_argument("--p-max", type=int, default=64, help="largest P for n >= 3 (default 64)")
    args = ap.parse_args(argv)
    from isoapprox.packing import d_star

    t0 = time.perf_counter()
    certs = []
    jobs = [(P, 2) for P in range(5, 25)]
    jobs += [(P, n) for n in range(3, args.n_max + 1) for P in range(n + 2, args.p_max + 1)]
    for P, n in jobs:
        base, upper = others(P, n), d_star(P, n).upper
        if n == 2:
            cert = best(P, n, 1.0, upper)
        elif certificate(P, n, base * (1.0 + 1e-3)) is None:
            continue  # the LP does not beat the other bounds here
        else:
            cert = best(P, n, base, upper)
        if cert is None:
            continue
        note = f" (exact value {PLANAR_EXACT[P]:.6f})" if n == 2 and P in PLANAR_EXACT else ""
        print(f"P = {P}, n = {n}: D* > {cert['D']:.6f}, other bounds {base:.6f}, upper "
              f"{upper:.6f}{note}, {len(cert['mu'])} frequencies "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        certs.append(cert)
    doc = {
        "description": "linear-programming certificates of D*(P, n, 1) > D "
                       "(tools/packing_proofs.py: verify_lp); built by "
                       "tools/build_lp_certificates.py",
        "build_seconds": round(time.perf_counter() - t0, 1),
        "lp": {"rho": [float(RHO[0]), float(RHO[-1]), int(RHO.size)], "rows": LP_ROWS,
               "eta": ETA, "steps": STEPS},
        "certificates": certs,
    }
    atomic_write_text(LP_FILE, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {LP_FILE.relative_to(ROOT)} in {doc['build_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
