#!/usr/bin/env python
"""Build the shipped table of ``D*(P, n, 1)`` for ``P <= 64``, ``n <= 16``.

Writes ``isoapprox/packing/data/dstar_table.json`` (every entry's bracket and
sources), ``isoapprox/packing/data/dstar_layouts.npz`` (the optimised layouts
that beat every explicit construction, float32 coordinates) and the table
section of ``docs/dstar.md`` (between its ``<!-- table -->`` markers).

Deterministic: every start comes from a construction or from a generator
seeded by ``(P, n, k)``, and every budget is an iteration count.  The upper
end of an entry is the *certified ratio* of its layout (largest over least
pairwise distance, float64, rounded up by ``DSTAR_RTOL``), recomputed from
the stored float32 coordinates; the lower end is
:func:`isoapprox.packing.unit_lower_bound` (formulas with proofs).

Run from the repository root::

    python tools/build_dstar_table.py            # about 12 minutes (733 s), shared 2-core machine
    python tools/build_dstar_table.py --quick    # constructions only, seconds

Timing of the shipped data: see docs/dstar.md ("How the table is built").
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isoapprox._blas import single_threaded_blas  # noqa: E402
from isoapprox.packing import DSTAR_N_MAX, DSTAR_P_MAX, _slsqp, table_entries  # noqa: E402
from isoapprox.packing.bounds import unit_lower_candidates  # noqa: E402
from isoapprox.packing.constructions import (  # noqa: E402
    certified_ratio,
    construct,
    construction_names,
)

DATA = ROOT / "isoapprox" / "packing" / "data"
DOC = ROOT / "docs" / "dstar.md"

#: an optimised layout is kept only if it beats the constructions by this much
KEEP_RTOL = 1e-6
#: the optimiser's budget: bisection steps and L-BFGS iterations per step
STEPS, LBFGS_ITERS = 10, 300


def n_random(P: int) -> int:
    """Random starts per entry (besides the structured ones)."""
    return 6 if P <= 16 else (2 if P <= 32 else 1)
#: SLSQP polish on the near-active pairs, for P * n up to this
POLISH_MAX_VARS = 60


# ---------------------------------------------------------------------------
# the offline optimiser
# ---------------------------------------------------------------------------


def _normalise(X: np.ndarray) -> np.ndarray:
    X = X - X.mean(axis=0)
    iu, ju = np.triu_indices(X.shape[0], 1)
    d = X[iu] - X[ju]
    return X / math.sqrt(float(np.min(np.sum(d * d, axis=1))))


def _penalty(T: float, P: int, n: int):
    """``sum_{i<j} (1 - d_ij^2)_+^2 + (d_ij^2 - T)_+^2`` and its gradient (full matrices)."""
    off = ~np.eye(P, dtype=bool)

    def f(z):
        X = z.reshape(P, n)
        diff = X[:, None, :] - X[None, :, :]
        d2 = np.einsum("ijk,ijk->ij", diff, diff)
        a = np.where(off, np.maximum(1.0 - d2, 0.0), 0.0)
        b = np.maximum(d2 - T, 0.0)
        W = 4.0 * (b - a)  # d/dx_i of the pair terms, both orders counted once
        G = W.sum(axis=1)[:, None] * X - W @ X
        return 0.5 * float(np.sum(a * a) + np.sum(b * b)), G.ravel()

    return f


def _feasible_at(X: np.ndarray, T: float) -> np.ndarray:
    f = _penalty(T, *X.shape)
    res = minimize(f, X.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": LBFGS_ITERS, "maxfun": 2 * LBFGS_ITERS,
                            "gtol": 1e-14, "ftol": 1e-16})
    return res.x.reshape(X.shape)


def _polish(X: np.ndarray) -> np.ndarray:
    """SLSQP on ``min s`` over the pairs near the least and the largest distance."""
    P, n = X.shape
    X = _normalise(X)
    iu, ju = np.triu_indices(P, 1)
    d2 = np.sum((X[iu] - X[ju]) ** 2, axis=1)
    s0 = float(d2.max())
    lo = d2 < 1.0 + 0.3 * (s0 - 1.0)
    hi = d2 > s0 - 0.3 * (s0 - 1.0)
    il, jl, ih, jh = iu[lo], ju[lo], iu[hi], ju[hi]

    def cons(z):
        Y = z[:-1].reshape(P, n)
        a = np.sum((Y[il] - Y[jl]) ** 2, axis=1) - 1.0
        b = z[-1] - np.sum((Y[ih] - Y[jh]) ** 2, axis=1)
        return np.concatenate([a, b])

    def jac(z):
        Y = z[:-1].reshape(P, n)
        J = np.zeros((len(il) + len(ih), P * n + 1))
        dl = 2.0 * (Y[il] - Y[jl])
        dh = 2.0 * (Y[ih] - Y[jh])
        r = np.arange(len(il))
        for k in range(n):
            J[r, il * n + k] += dl[:, k]
            J[r, jl * n + k] -= dl[:, k]
        r2 = len(il) + np.arange(len(ih))
        for k in range(n):
            J[r2, ih * n + k] -= dh[:, k]
            J[r2, jh * n + k] += dh[:, k]
        J[r2, -1] = 1.0
        return J

    z0 = np.concatenate([X.ravel(), [s0]])
    grad = np.zeros_like(z0)
    grad[-1] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(lambda z: z[-1], z0, jac=lambda z: grad, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": cons, "jac": jac}],
                       options={"maxiter": 300, "ftol": 1e-15})
    Y = res.x[:-1].reshape(P, n)
    return Y if np.all(np.isfinite(Y)) else X


def _ratio32(X: np.ndarray) -> tuple[float, np.ndarray]:
    """Certified ratio of the float32 coordinates that will be stored."""
    X32 = _normalise(X).astype(np.float32)
    return certified_ratio(X32.astype(np.float64)), X32


def optimise(P: int, n: int, starts: list[np.ndarray], lower: float) -> tuple[float, np.ndarray]:
    """Best certified ratio found from the starts (bisection on the squared diameter)."""
    best, best_X = math.inf, None
    for X0 in starts:
        X = _normalise(X0)
        hi = certified_ratio(X)
        delta = 0.05
        for _ in range(STEPS):
            t = max(hi * (1.0 - delta), lower)
            Y = _normalise(_feasible_at(X, t * t))
            r = certified_ratio(Y)
            if r < hi:
                X, hi = Y, r
            else:
                delta *= 0.5
            if delta < 1e-5:
                break
        if P * n <= POLISH_MAX_VARS:
            for Y in (_polish(X), _slsqp(X0, maxiter=300, ftol=1e-13)):
                if certified_ratio(_normalise(Y)) < hi:
                    X, hi = Y, certified_ratio(_normalise(Y))
        r, X32 = _ratio32(X)
        if r < best:
            best, best_X = r, X32
    return best, best_X


def _starts(P: int, n: int, layouts: dict, best_cons: np.ndarray) -> list[np.ndarray]:
    out = [best_cons]
    if (P - 1, n) in layouts:  # one point more, at the centre
        X = _normalise(layouts[P - 1, n].astype(float))
        out.append(np.vstack([X, 0.3 * np.ones((1, n))]))
    if n >= 2 and (P, n - 1) in layouts:
        X = _normalise(layouts[P, n - 1].astype(float))
        out.append(np.c_[X, np.zeros(P)])
    k_rand = n_random(P)
    for k in range(k_rand):
        rng = np.random.default_rng([P, n, k])
        Z = rng.normal(size=(P, n))
        out.append(Z * (0.5 * P ** (1.0 / n) + 0.5) / np.linalg.norm(Z, axis=1).max())
    # a little noise breaks the symmetry of the structured starts
    rng = np.random.default_rng([P, n, 99])
    return [S + 1e-3 * rng.normal(size=S.shape) if i < len(out) - k_rand else S
            for i, S in enumerate(out)]


# ---------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------


def best_construction(P: int, n: int) -> tuple[float, str]:
    best = (math.inf, "")
    for name in construction_names(P, n):
        X = construct(name, P, n)
        if X is not None:
            best = min(best, (certified_ratio(X), name))
    return best


def should_optimise(P: int, n: int, quick: bool) -> bool:
    if quick or P <= n + 1 or n == 1 or (n == 2 and P <= 8):
        return False
    return n <= 3 or (n <= 8 and P <= 40) or P <= 24


def build(quick: bool) -> dict:
    t0 = time.perf_counter()
    own: dict[tuple[int, int], tuple[float, str]] = {}  # (ratio, construction) per entry
    layouts: dict[tuple[int, int], np.ndarray] = {}
    for n in range(1, DSTAR_N_MAX + 1):
        for P in range(2, DSTAR_P_MAX + 1):
            r, name = best_construction(P, n)
            # the best of smaller dimensions, padded: a start for the optimiser
            prev = min([own[P, m] for m in range(1, n)] + [(r, name)])
            if should_optimise(P, n, quick):
                base = construct(name, P, n)
                starts = _starts(P, n, layouts, base)
                lower = max(v for v, _ in unit_lower_candidates(P, n))
                r_opt, X = optimise(P, n, starts, lower)
                if r_opt < min(r, prev[0]) * (1.0 - KEEP_RTOL):
                    layouts[P, n] = X
                    r, name = r_opt, "layout"
            own[P, n] = (r, name)
            print(f"P={P:2d} n={n:2d} ratio={r:.6f} {name:16s} "
                  f"({time.perf_counter() - t0:6.1f} s)", flush=True)
    return {"own": own, "layouts": layouts, "seconds": time.perf_counter() - t0}


def write(result: dict) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    own, layouts = result["own"], result["layouts"]
    entries = []
    for (P, n), (r, name) in sorted(own.items()):
        entries.append({"P": P, "n": n, "ratio": r, "construction": name})
    np.savez_compressed(DATA / "dstar_layouts.npz",
                        **{f"P{P}_n{n}": X for (P, n), X in sorted(layouts.items())})
    doc = {
        "description": "D*(P, n, 1) for P <= 64, n <= 16: per entry the certified ratio "
                       "of its own best layout (construction name, or 'layout' for an "
                       "optimised one in dstar_layouts.npz); isoapprox.packing.d_star "
                       "propagates these over P and n and adds the proven lower bounds. "
                       "Written by tools/build_dstar_table.py.",
        "P_max": DSTAR_P_MAX, "n_max": DSTAR_N_MAX,
        "build_seconds": round(result["seconds"], 1),
        "entries": entries,
    }
    (DATA / "dstar_table.json").write_text(json.dumps(doc, indent=0) + "\n", encoding="utf-8")


def write_doc() -> None:
    """The readable table of docs/dstar.md, from the installed table (after a reload)."""
    rows = table_entries()
    lines = []
    for n in (2, 3, 4, 8, 16):
        lines.append(f"\n**n = {n}**\n")
        lines.append("| P | lower | upper | lower source | upper source |")
        lines.append("|---|---|---|---|---|")
        for P in (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 24, 32, 40, 48, 50, 56, 64):
            e = rows[P, n]
            lo, up = f"{e.lower:.6f}", f"{e.upper:.6f}"
            if e.exact:
                up = "exact"
            lines.append(f"| {P} | {lo} | {up} | {e.lower_source} | {e.upper_source} |")
    text = DOC.read_text(encoding="utf-8")
    a, b = "<!-- table -->", "<!-- /table -->"
    i, j = text.index(a) + len(a), text.index(b)
    DOC.write_text(text[:i] + "\n" + "\n".join(lines) + "\n\n" + text[j:], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="constructions only (no optimiser)")
    ap.add_argument("--doc-only", action="store_true", help="only rewrite docs/dstar.md")
    args = ap.parse_args(argv)
    if args.doc_only:
        write_doc()
        return 0
    with single_threaded_blas():  # BLAS threads only slow these small problems down
        write(build(args.quick))
    # the doc reads the table just written, in a fresh process
    return subprocess.run([sys.executable, __file__, "--doc-only"], check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
