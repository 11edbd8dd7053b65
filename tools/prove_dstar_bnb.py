#!/usr/bin/env python
"""Prove lower bounds of the planar ``D*(P, 2, 1)`` by branch and bound.

For each ``P`` a bisection between the library's bound without these proofs
(``base``: formulas, exact values, the linear-programming certificates) and
the table's upper end asks ``prove_diameter_above`` (``tools/packing_proofs.py``)
to exclude every diameter ``<= D`` (``D`` rounded down to 4 decimals), with a
budget of nodes per attempt; the largest ``D`` proven is a claim.  Writes
``isoapprox/packing/data/dstar_bnb.json`` (atomically), each claim with its
``base``, node count and time; ``--check`` proves the shipped claims again
and compares the node counts (the search is deterministic).

Deterministic: the same claims on every machine (no randomness, no BLAS).

Run from the repository root::

    python tools/prove_dstar_bnb.py            # P = 9, 10, 11 (about 20 minutes)
    python tools/prove_dstar_bnb.py --check    # prove the shipped claims again
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402
import numpy  # noqa: E402

import isoapprox  # noqa: E402
from isoapprox.io import atomic_write_text  # noqa: E402
from isoapprox.packing import d_star  # noqa: E402
from isoapprox.packing.bounds import BNB_FILE  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
from packing_proofs import bnb_base, prove_diameter_above  # noqa: E402

#: a node whose boxes are all narrower than this ends an attempt ("near solution")
MIN_WIDTH = 1e-3


def _floor4(x: float) -> float:
    return math.floor(x * 1e4) / 1e4


def best_claim(P: int, n: int, max_nodes: int, steps: int) -> dict | None:
    """The claim of the largest ``D`` the bisection proves, or ``None``."""
    base = bnb_base(P, n)
    lo, hi = base, d_star(P, n).upper
    found = None
    for _ in range(steps):
        D = _floor4(0.5 * (lo + hi))
        if not D > lo:
            break
        r = prove_diameter_above(P, n, D, base=base, max_nodes=max_nodes, min_width=MIN_WIDTH)
        print(f"  P = {P}, n = {n}: D = {D:.4f} {r.status} ({r.nodes} nodes, "
              f"{r.seconds:.1f} s)", file=sys.stderr, flush=True)
        if r.proved:
            lo = D
            found = {"P": P, "n": n, "D": D, "base": base, "nodes": r.nodes,
                     "seconds": round(r.seconds, 1)}
        else:
            hi = D
    return found


def _versions() -> dict:
    return {"isoapprox": isoapprox.__version__, "numba": numba.__version__,
            "numpy": numpy.__version__, "python": sys.version.split()[0]}


def check(doc: dict) -> int:
    """Prove every shipped claim again; 1 if one fails or its node count differs."""
    bad = 0
    for c in doc["claims"]:
        r = prove_diameter_above(c["P"], c["n"], c["D"], base=c["base"],
                                 max_nodes=c["nodes"] + 1, min_width=doc["min_width"])
        ok = r.proved and r.nodes == c["nodes"]
        bad += not ok
        print(f"P = {c['P']}, n = {c['n']}: D* > {c['D']}: {r.status}, {r.nodes} nodes "
              f"(shipped {c['nodes']}), {r.seconds:.1f} s{'' if ok else '  MISMATCH'}",
              flush=True)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[9, 10, 11],
                    help="numbers of points, in the plane (default 9 10 11)")
    ap.add_argument("--max-nodes", type=int, default=30_000_000,
                    help="node budget of one attempt (default 3e7, about 1.5 minutes)")
    ap.add_argument("--steps", type=int, default=10, help="bisection steps (default 10)")
    ap.add_argument("--check", action="store_true",
                    help="prove the shipped claims again and compare node counts")
    args = ap.parse_args(argv)
    if args.check:
        return check(json.loads(BNB_FILE.read_text(encoding="utf-8")))
    if any(P < 4 for P in args.P):
        ap.error(f"--P must be >= 4 (below, D* is a theorem's value); got {args.P}")
    if args.max_nodes < 1:
        ap.error(f"--max-nodes must be >= 1; got {args.max_nodes}")
    if args.steps < 1:
        ap.error(f"--steps must be >= 1; got {args.steps}")
    t0 = time.perf_counter()
    claims = []
    for P in args.P:
        claim = best_claim(P, 2, args.max_nodes, args.steps)
        if claim is not None:
            print(f"P = {P}: D* > {claim['D']} (base {claim['base']:.6f}, "
                  f"{claim['nodes']} nodes)", flush=True)
            claims.append(claim)
    doc = {
        "description": "branch-and-bound proofs of D*(P, n, 1) > D given D*(P, n, 1) >= base "
                       "(tools/packing_proofs.py: prove_diameter_above); built by "
                       "tools/prove_dstar_bnb.py",
        "versions": _versions(),
        "min_width": MIN_WIDTH,
        "max_nodes": args.max_nodes,
        "build_seconds": round(time.perf_counter() - t0, 1),
        "claims": claims,
    }
    atomic_write_text(BNB_FILE, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {BNB_FILE.relative_to(ROOT)} in {doc['build_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
