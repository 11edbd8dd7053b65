#!/usr/bin/env python
"""Build the linear-programming certificates of ``D*(P, 2, 1)`` (the plane).

For each ``P`` a certificate is ``f(r) = a0 + sum_k mu_k J_0(rho_k r)`` with
``a0 > 0``, ``mu >= 0``, ``f(0) / a0 < P`` and ``f <= 0`` on ``[1, D]``: it
proves that ``P`` unit-separated points of the plane have diameter ``> D``
(:func:`isoapprox.packing.bounds.verify_planar_lp` states and checks it).
Here ``f`` comes from a linear program (HiGHS through ``scipy.optimize.linprog``):
maximise ``a0`` with ``a0 + sum mu = 1`` and ``f(r) <= -eta`` on a grid of
``[1, D]``, over ``mu`` on a grid of frequencies ``rho``; ``D`` is the largest
value of a bisection whose certificate passes the check.  Writes
``isoapprox/packing/data/dstar_planar_lp.json``.

Deterministic (fixed grids, no randomness; HiGHS is run single-threaded).
Only the check decides what is shipped, so a different LP answer on another
machine gives a different certificate, never a wrong one.

Run from the repository root::

    python tools/build_planar_lp.py          # P = 5..24, about 2 minutes on one core
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linprog
from scipy.special import j0

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isoapprox.packing.bounds import (  # noqa: E402
    PLANAR_EXACT,
    PLANAR_LP_FILE,
    oler_lower,
    verify_planar_lp,
)

#: frequencies of the LP (``J_0(rho r)``, ``0 < rho <= RHO_MAX``)
RHO = np.linspace(0.1, 30.0, 300)
#: LP grid on ``[1, D]``
LP_ROWS = 3000
#: the LP asks ``f <= -ETA`` on its grid (room for the check's allowances); the
#: check's grid step makes its interpolation allowance ``ETA / 4``
ETA = 1e-5
#: bisection steps on ``D``
STEPS = 24


def certificate(P: int, D: float) -> dict | None:
    """An LP certificate for ``(P, D)`` that passes the check, or ``None``."""
    r = np.linspace(1.0, D, LP_ROWS)
    A = np.hstack([np.ones((LP_ROWS, 1)), j0(np.multiply.outer(r, RHO))])
    c = np.zeros(1 + RHO.size)
    c[0] = -1.0
    res = linprog(c, A_ub=A, b_ub=np.full(LP_ROWS, -ETA), A_eq=np.ones((1, 1 + RHO.size)),
                  b_eq=[1.0], bounds=[(None, None)] + [(0.0, None)] * RHO.size,
                  method="highs", options={"presolve": True})
    if res.status != 0 or not res.x[0] > 0.0:
        return None
    a0 = float(res.x[0])
    keep = res.x[1:] > 1e-12
    rho = [float(v) for v in RHO[keep]]
    mu = [float(v) for v in res.x[1:][keep]]
    curv = 0.5 * float(np.dot(mu, np.square(rho)))  # >= max |f''|
    step = float(np.sqrt(2.0 * ETA / max(curv, 1e-300)))  # curv step^2 / 8 = ETA / 4
    if not verify_planar_lp(P, D, rho, mu, a0, step):
        return None
    return {"P": P, "D": float(D), "a0": a0, "rho": rho, "mu": mu, "step": step,
            "count": (a0 + sum(mu)) / a0}


def best(P: int) -> dict | None:
    """The certificate of the largest ``D`` the bisection reaches."""
    lo, hi = 1.0, 1.2 * (oler_lower(P) + 1.0)
    found = None
    for _ in range(STEPS):
        mid = 0.5 * (lo + hi)
        cert = certificate(P, mid)
        if cert is None:
            hi = mid
        else:
            lo, found = mid, cert
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p-max", type=int, default=24, help="largest P (default 24)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    certs = []
    for P in range(5, args.p_max + 1):
        cert = best(P)
        if cert is None:
            print(f"P = {P}: no certificate", file=sys.stderr)
            continue
        note = f" (exact value {PLANAR_EXACT[P]:.6f})" if P in PLANAR_EXACT else ""
        print(f"P = {P}: D* > {cert['D']:.6f}, Oler {oler_lower(P):.6f}{note}, "
              f"{len(cert['mu'])} frequencies", flush=True)
        certs.append(cert)
    doc = {
        "description": "linear-programming certificates of D*(P, 2, 1) > D "
                       "(isoapprox.packing.bounds.verify_planar_lp); built by "
                       "tools/build_planar_lp.py",
        "build_seconds": round(time.perf_counter() - t0, 1),
        "lp": {"rho": [float(RHO[0]), float(RHO[-1]), int(RHO.size)], "rows": LP_ROWS,
               "eta": ETA, "steps": STEPS},
        "certificates": certs,
    }
    tmp = PLANAR_LP_FILE.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    tmp.replace(PLANAR_LP_FILE)
    print(f"wrote {PLANAR_LP_FILE.relative_to(ROOT)} in {doc['build_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
