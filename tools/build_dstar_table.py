#!/usr/bin/env python
"""Build the shipped table of ``D*(P, n, 1)`` for ``P <= 64``, ``n <= 16``.

Writes ``isoapprox/packing/data/dstar_table.json`` (every entry's bracket and
sources), ``isoapprox/packing/data/dstar_layouts.npz`` (the optimised layouts
that beat every explicit construction: float32 coordinates, int16 multiples of
``LAYOUT_INT_STEP`` for ``P n > MS_MAX_VARS``) and the table
section of ``docs/dstar.md`` (between its ``<!-- table -->`` markers).

Deterministic: every start comes from a construction or from a generator
seeded by ``(P, n, k)``, and every budget is an iteration count.  After the
build, a layout of the table on disk is kept wherever it beats the fresh
build's entry (``--fresh`` skips that), so a rebuild never makes the table
worse and rebuilding its own output changes nothing.  The upper
end of an entry is the *certified ratio* of its layout (largest over least
pairwise distance, float64, rounded up by ``DSTAR_RTOL``), recomputed from
the stored coordinates; the lower end is
:func:`isoapprox.packing.unit_lower_bound` (formulas with proofs).

Run from the repository root::

    python tools/build_dstar_table.py            # about 75 minutes on one core
    python tools/build_dstar_table.py --jobs 2   # the penalty stage on 2 processes first
    python tools/build_dstar_table.py --quick    # constructions only, seconds
    python tools/build_dstar_table.py --penalty-only --jobs 2   # that stage alone, on the
                                                 # table on disk (1415 s, 2-core machine)

(The build without the penalty stage took 2338 s; the stage is about 38
minutes of one core, by its cost model :func:`n_penalty`.)

Timing of the shipped data: see docs/dev/dstar_design.md ("How the table is built").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isoapprox._blas import single_threaded_blas  # noqa: E402
from isoapprox.packing import DSTAR_N_MAX, DSTAR_P_MAX, LAYOUT_INT_STEP, table_entries  # noqa: E402
from isoapprox.packing._dstar import layout_key as _layout_key  # noqa: E402
from isoapprox.packing._dstar import load_layout as _load_layout  # noqa: E402
from isoapprox.packing._dstar import parse_layout_key as _parse_layout_key  # noqa: E402
from isoapprox.packing._search import ball_start as _ball_start  # noqa: E402
from isoapprox.packing._search import slsqp as _slsqp  # noqa: E402
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


#: SLSQP polish on the near-active pairs, for P * n up to this
POLISH_MAX_VARS = 60
#: the polish keeps the pairs within this share of the distance range of either end
WIN = 0.3
#: the multistart stage: the penalty's target diameter against the best so far
MS_TARGET = 0.985
#: ... its window of near-active pairs (narrow: fast; the best gets a wide one)
MS_WIN = 0.1
#: ... starts per entry: about MS_SECONDS of the model below, within these counts
MS_SECONDS, MS_MIN, MS_MAX = 4.0, 3, 40
#: ... and only for P * n up to this (SLSQP's dense subproblems grow as (P n)^3)
MS_MAX_VARS = 200
#: the penalty stage (alone beyond MS_MAX_VARS): targets per start (each PEN_DELTA
#: below the best so far, halved when one fails) and L-BFGS iterations per target
PEN_STEPS, PEN_ITERS, PEN_DELTA = 12, 3000, 0.04
#: ... starts per entry: about PEN_SECONDS of the model below, within these counts
PEN_SECONDS, PEN_MIN, PEN_MAX = 4.0, 2, 6
#: ... for n >= PEN_MIN_DIM (in R^2 and R^3 the SLSQP stages found better layouts
#: at every (P, n) tried but one, (64, 2), by 2e-4)
PEN_MIN_DIM = 4


def n_random(P: int) -> int:
    """Random starts per entry of the layout optimiser (besides the structured ones)."""
    return 6 if P <= 16 else (2 if P <= 32 else 1)


def n_multistart(P: int, n: int) -> int:
    """Random starts of the multistart stage for ``(P, n)``: a fixed count.

    ``0.08 (P / 24)^2.7 (n / 3)^1.8`` s is a fit of one start's time on
    this machine (0.08 s at ``(24, 3)``, 0.5 s at ``(48, 3)``, 0.6 s at
    ``(32, 6)``); only the count, never a clock, decides the work.
    """
    per = 0.08 * (P / 24) ** 2.7 * (n / 3) ** 1.8
    return max(MS_MIN, min(MS_MAX, int(MS_SECONDS / per)))


def n_penalty(P: int, n: int) -> int:
    """Random starts of the penalty stage for ``(P, n)``: a fixed count.

    ``1.6 (P / 64)^2.2 (n / 4)^0.76`` s is a fit of one start's time on this
    machine (1.6 s at ``(64, 4)``, 4.6 s at ``(64, 16)``, 0.7 s at ``(32,
    8)``); only the count, never a clock, decides the work.
    """
    per = 1.6 * (P / 64) ** 2.2 * (n / 4) ** 0.76
    return max(PEN_MIN, min(PEN_MAX, int(PEN_SECONDS / per)))


# ---------------------------------------------------------------------------
# the offline optimiser
# ---------------------------------------------------------------------------


def _normalise(X: np.ndarray) -> np.ndarray:
    X = X - X.mean(axis=0)
    iu, ju = np.triu_indices(X.shape[0], 1)
    d = X[iu] - X[ju]
    # coincident points give inf/nan coordinates, whose certified ratio is inf
    with np.errstate(divide="ignore", invalid="ignore"):
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


def _polish(X: np.ndarray, win: float = WIN, max_rounds: int = 6) -> np.ndarray:
    """SLSQP on ``min s`` with an active set of pairs, from the pairs near either end.

    The pairs first kept are those within ``win`` of the distance range from
    the least (rows ``|x_i - x_j|^2 >= 1``) or the largest distance (rows
    ``|x_i - x_j|^2 <= s``).  A pair the answer violates joins the set and
    the problem is solved again from ``X`` (at most ``max_rounds`` times), so
    the answer is a local optimum of the whole problem, or ``X``.  Each solve
    is the library's (``isoapprox.packing._search.slsqp`` with the active pairs).
    The caller recomputes the ratio on all pairs in any case.
    """
    P, n = X.shape
    X = _normalise(X)
    if not np.all(np.isfinite(X)):
        return X
    iu, ju = np.triu_indices(P, 1)
    d2 = np.sum((X[iu] - X[ju]) ** 2, axis=1)
    s0 = float(d2.max())
    # the least and the largest pair always (with every distance equal, or s0
    # rounded below 1, the windows alone are empty)
    lo = (d2 < 1.0 + win * (s0 - 1.0)) | (d2 == d2.min())
    hi = (d2 > s0 - win * (s0 - 1.0)) | (d2 == s0)
    for _ in range(max_rounds):
        Y = _slsqp(X, maxiter=300, ftol=1e-15, lo_pairs=(iu[lo], ju[lo]),
                   hi_pairs=(iu[hi], ju[hi]))
        e2 = np.sum((Y[iu] - Y[ju]) ** 2, axis=1)
        s = float(e2[hi].max())
        new_lo = ~lo & (e2 < 1.0 - 1e-9)
        new_hi = ~hi & (e2 > s + 1e-9)
        if not (new_lo.any() or new_hi.any()):
            return Y
        lo |= new_lo
        hi |= new_hi
    return X


def _polish_rounds(X: np.ndarray, win: float, rounds: int = 4) -> tuple[float, np.ndarray]:
    """Polish ``X`` until a round no longer lowers its certified ratio."""
    X = _normalise(X)
    hi = certified_ratio(X)
    for _ in range(rounds):
        Y = _normalise(_polish(X, win))
        r = certified_ratio(Y)
        if not r < hi * (1.0 - 1e-12):
            break
        X, hi = Y, r
    return hi, X


def multistart(P: int, n: int, best: float, lower: float) -> tuple[float, np.ndarray | None]:
    """Best certified ratio from :func:`n_multistart` random starts, or ``(inf, None)``.

    Each start (uniform in a ball, seeded by ``(P, n, 1000 + k)``) goes to
    the squared penalty at the target diameter ``MS_TARGET * best`` (not
    below ``lower``) with L-BFGS, then to rounds of the narrow polish; the
    best layout gets rounds of the wide one.
    """
    target = max(MS_TARGET * best, lower)
    f = _penalty(target * target, P, n)
    out, out_X = math.inf, None
    for k in range(n_multistart(P, n)):
        Z = _ball_start(np.random.default_rng([P, n, 1000 + k]), P, n)
        res = minimize(f, Z.ravel(), jac=True, method="L-BFGS-B",
                       options={"maxiter": 2000, "gtol": 1e-12, "ftol": 1e-16})
        X = res.x.reshape(P, n)
        if not np.all(np.isfinite(X)):
            continue
        r, X = _polish_rounds(X, MS_WIN)
        if r < out:
            out, out_X = r, X
    if out_X is None:
        return math.inf, None
    _, X = _polish_rounds(out_X, WIN)
    return _stored_ratio(X)


def descend(X: np.ndarray, lower: float, *, ref: float = math.inf, steps: int = PEN_STEPS,
            delta: float = PEN_DELTA, iters: int = PEN_ITERS, maxfun: int = 15000,
            gtol: float = 1e-12) -> tuple[float, np.ndarray]:
    """Lower the certified ratio of ``X`` by L-BFGS on the squared penalty.

    At most ``steps`` targets: each ``delta`` below the smaller of ``ref``
    and the best ratio so far (never below ``lower``), ``delta`` halved
    when a target does not lower the ratio, and the descent over once
    ``delta`` falls below ``1e-5``; ``iters``, ``maxfun`` and ``gtol`` go to
    L-BFGS.  Returns the
    best ratio and its (normalised) layout, ``X`` itself when nothing
    helps.  The defaults are the penalty stage's; :func:`optimise` passes
    its own.
    """
    P, n = X.shape
    X = _normalise(X)
    hi = certified_ratio(X)
    opts = {"maxiter": iters, "maxfun": maxfun, "gtol": gtol, "ftol": 1e-16}
    for _ in range(steps):
        t = max(min(hi, ref) * (1.0 - delta), lower)
        res = minimize(_penalty(t * t, P, n), X.ravel(), jac=True, method="L-BFGS-B",
                       options=opts)
        Y = _normalise(res.x.reshape(P, n))
        r = certified_ratio(Y)
        if r < hi:
            X, hi = Y, r
        else:
            delta *= 0.5
        if delta < 1e-5:
            break
    return hi, X


def penalty_stage(P: int, n: int) -> tuple[float, np.ndarray | None]:
    """Best certified ratio of :func:`n_penalty` random starts, or ``(inf, None)``.

    Each start (uniform in a ball, seeded by ``(P, n, 2000 + k)``) goes down
    :func:`descend` from the best construction's ratio; no SLSQP (beyond
    ``MS_MAX_VARS`` its dense subproblems are too slow, and below it the
    multistart stage has them).  A function of ``(P, n)`` alone, so entries
    can be computed in any order, in parallel.
    """
    ref, _ = best_construction(P, n)
    lower = max(lower_of(P, n), 1.0)
    out, out_X = math.inf, None
    for k in range(n_penalty(P, n)):
        Z = _ball_start(np.random.default_rng([P, n, 2000 + k]), P, n)
        r, X = descend(Z, lower, ref=ref)
        if r < out and np.all(np.isfinite(X)):
            out, out_X = r, X
    if out_X is None:
        return math.inf, None
    return _stored_ratio(out_X)


def store_layout(X: np.ndarray) -> np.ndarray:
    """The form a layout is stored in (after :func:`_normalise`): for ``P n >
    MS_MAX_VARS`` the nearest multiples of ``LAYOUT_INT_STEP`` as ``int16``
    (when they fit), else ``float32``.

    The large layouts come from the penalty stage, whose optima are looser
    than this rounding by far (it moved their ratios by -5e-5 to +1.6e-4,
    +5.7e-5 at the median), and ``int16`` keeps the shipped data under 1 MB.
    A layout read from the table on disk keeps the form it has.
    """
    P, n = X.shape
    X = _normalise(X)
    if P * n > MS_MAX_VARS:
        q = np.round(X / LAYOUT_INT_STEP)
        if np.all(np.abs(q) <= np.iinfo(np.int16).max):
            return q.astype(np.int16)
    return X.astype(np.float32)


def _stored_ratio(X: np.ndarray) -> tuple[float, np.ndarray]:
    """Certified ratio of the coordinates that will be stored, and their stored form."""
    A = store_layout(X)
    return certified_ratio(_load_layout(A)), A


def optimise(P: int, n: int, starts: list[np.ndarray], lower: float) -> tuple[float, np.ndarray]:
    """Best certified ratio found from the starts (bisection on the squared diameter)."""
    best, best_X = math.inf, None
    for X0 in starts:
        hi, X = descend(X0, lower, steps=STEPS, delta=0.05, iters=LBFGS_ITERS,
                        maxfun=2 * LBFGS_ITERS, gtol=1e-14)
        if P * n <= POLISH_MAX_VARS:
            for Y in (_polish(X), _slsqp(X0, maxiter=300, ftol=1e-13)):
                r = certified_ratio(_normalise(Y))
                if r < hi:
                    X, hi = Y, r
        r, X32 = _stored_ratio(X)
        if r < best:
            best, best_X = r, X32
    return best, best_X


def _starts(P: int, n: int, layouts: dict, best_cons: np.ndarray) -> list[np.ndarray]:
    out = [best_cons]
    if (P - 1, n) in layouts:  # one point more, at the centre
        X = _normalise(_load_layout(layouts[P - 1, n]))
        out.append(np.vstack([X, 0.3 * np.ones((1, n))]))
    if n >= 2 and (P, n - 1) in layouts:
        X = _normalise(_load_layout(layouts[P, n - 1]))
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


def should_multistart(P: int, n: int, quick: bool) -> bool:
    """The multistart stage: where the optimiser runs, and for ``4 <= n <= 8`` at every ``P``,
    for ``P n <= MS_MAX_VARS``."""
    if quick or P <= n + 1 or n == 1 or P * n > MS_MAX_VARS:
        return False
    return should_optimise(P, n, quick) or 4 <= n <= 8


def should_penalty(P: int, n: int, quick: bool) -> bool:
    """The penalty stage: every entry of ``n >= PEN_MIN_DIM`` but the simplices
    (alone beyond the multistart stage's size, ``P n > MS_MAX_VARS``)."""
    return not quick and n >= PEN_MIN_DIM and P > n + 1


def lower_of(P: int, n: int) -> float:
    return max(v for v, _ in unit_lower_candidates(P, n))


def _penalty_entry(key: tuple[int, int]) -> tuple[tuple[int, int], float, np.ndarray | None]:
    with single_threaded_blas():
        return key, *penalty_stage(*key)


def run_penalty_stage(quick: bool, jobs: int = 1, max_vars: int | None = None) -> dict:
    """``{(P, n): (ratio, layout)}`` of :func:`penalty_stage` over its entries
    (those with ``P n <= max_vars`` when given), in ``jobs`` processes (each
    entry is a function of ``(P, n)`` alone)."""
    keys = [(P, n) for n in range(1, DSTAR_N_MAX + 1) for P in range(2, DSTAR_P_MAX + 1)
            if should_penalty(P, n, quick) and (max_vars is None or P * n <= max_vars)]
    t0 = time.perf_counter()
    out = {}
    with contextlib.ExitStack() as stack:
        if jobs > 1:
            pool = stack.enter_context(multiprocessing.get_context("spawn").Pool(jobs))
            results = pool.imap(_penalty_entry, keys)
        else:
            results = map(_penalty_entry, keys)
        for (P, n), r, X in results:
            out[P, n] = (r, X)
            print(f"penalty P={P:2d} n={n:2d} ratio={r:.6f} "
                  f"({time.perf_counter() - t0:6.1f} s, {len(out)}/{len(keys)})", flush=True)
    return out


def build(quick: bool, penalty: dict | None = None) -> dict:
    """The table from scratch; ``penalty``: the penalty stage's results, computed
    beforehand (:func:`run_penalty_stage`), else computed here entry by entry."""
    t0 = time.perf_counter()
    own: dict[tuple[int, int], tuple[float, str]] = {}  # (ratio, construction) per entry
    layouts: dict[tuple[int, int], np.ndarray] = {}
    for n in range(1, DSTAR_N_MAX + 1):
        for P in range(2, DSTAR_P_MAX + 1):
            r, name = best_construction(P, n)
            # the best of smaller dimensions, padded: a start for the optimiser
            prev = min([own[P, m] for m in range(1, n)] + [(r, name)])
            r_opt, X = math.inf, None
            if should_optimise(P, n, quick):
                base = construct(name, P, n)
                starts = _starts(P, n, layouts, base)
                r_opt, X = optimise(P, n, starts, lower_of(P, n))
            if should_multistart(P, n, quick):
                r_ms, X_ms = multistart(P, n, min(r, prev[0], r_opt), lower_of(P, n))
                if r_ms < r_opt:
                    r_opt, X = r_ms, X_ms
            if should_penalty(P, n, quick):
                r_pen, X_pen = penalty[P, n] if penalty is not None else penalty_stage(P, n)
                if r_pen < r_opt:
                    r_opt, X = r_pen, X_pen
            if r_opt < min(r, prev[0]) * (1.0 - KEEP_RTOL):
                layouts[P, n] = X
                r, name = r_opt, "layout"
            own[P, n] = (r, name)
            print(f"P={P:2d} n={n:2d} ratio={r:.6f} {name:16s} "
                  f"({time.perf_counter() - t0:6.1f} s)", flush=True)
    return {"own": own, "layouts": layouts, "seconds": time.perf_counter() - t0}


def read_shipped(data: Path = DATA) -> dict[tuple[int, int], np.ndarray]:
    """The optimised layouts of the table now on disk (empty if there is none).

    Raises ``ValueError`` naming the file and the entry if a key is not
    ``P<P>_n<n>`` or its array is not ``(P, n)`` finite ``float32`` or
    ``int16`` numbers: a corrupt table is never merged into a new one.
    """
    path = data / "dstar_layouts.npz"
    if not path.exists():
        return {}
    out = {}
    with np.load(path) as z:
        for key in z.files:
            try:
                P, n = _parse_layout_key(key)
            except ValueError:
                raise ValueError(f"{path}: entry {key!r} is not named 'P<P>_n<n>'") from None
            X = z[key]
            if X.shape != (P, n) or not np.all(np.isfinite(X)):
                raise ValueError(f"{path}: entry {key!r} should be {P} x {n} finite "
                                 f"coordinates, got shape {X.shape}")
            if X.dtype not in (np.float32, np.int16):
                raise ValueError(f"{path}: entry {key!r} should be float32 or int16 "
                                 f"coordinates, got dtype {X.dtype}")
            out[P, n] = X
    return out


def keep_better(result: dict, shipped: dict[tuple[int, int], np.ndarray]) -> list[tuple[int, int]]:
    """Where a shipped layout beats the fresh build's entry, take it (the table never worsens).

    Applied after the whole build, so the build itself depends on nothing but
    ``(P, n)``; the output is the per-entry best of the fresh build and the
    previous table, and running the builder on its own output changes nothing.
    Returns the entries taken from the shipped table.
    """
    found = {key: (certified_ratio(_load_layout(X)), X) for key, X in shipped.items()}
    return take_better(result, found, 0.0)


def take_better(result: dict, found: dict, rtol: float = KEEP_RTOL) -> list[tuple[int, int]]:
    """Take each layout of ``found`` (``{(P, n): (ratio, layout)}``) whose ratio is
    below the entry's by more than ``rtol`` (relative); returns the entries taken."""
    own, layouts = result["own"], result["layouts"]
    taken = []
    for (P, n), (r, X) in sorted(found.items()):
        if (P, n) not in own or X is None:
            continue
        if r < own[P, n][0] * (1.0 - rtol):
            own[P, n] = (r, "layout")
            layouts[P, n] = X
            taken.append((P, n))
    return taken


def read_table(data: Path = DATA) -> dict:
    """The table on disk as a build's result (``own``, ``layouts``, ``seconds``);
    its layouts stay in the form they are stored in."""
    doc = json.loads((data / "dstar_table.json").read_text(encoding="utf-8"))
    own = {(e["P"], e["n"]): (float(e["ratio"]), e["construction"]) for e in doc["entries"]}
    shipped = read_shipped(data)
    missing = sorted(k for k, (_, name) in own.items() if name == "layout" and k not in shipped)
    if missing:
        raise ValueError(f"{data / 'dstar_layouts.npz'}: no layout for the entries {missing} "
                         f"that {data / 'dstar_table.json'} says have one")
    return {"own": own, "layouts": shipped, "seconds": float(doc["build_seconds"]),
            **{k: doc[k] for k in ("penalty_only_seconds",) if k in doc}}


def write(result: dict) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    own, layouts = result["own"], result["layouts"]
    entries = []
    for (P, n), (r, name) in sorted(own.items()):
        entries.append({"P": P, "n": n, "ratio": r, "construction": name})
    np.savez_compressed(DATA / "dstar_layouts.npz",
                        **{_layout_key(P, n): X for (P, n), X in sorted(layouts.items())})
    doc = {
        "description": "D*(P, n, 1) for P <= 64, n <= 16: per entry the certified ratio "
                       "of its own best layout (construction name, or 'layout' for an "
                       "optimised one in dstar_layouts.npz); isoapprox.packing.d_star "
                       "propagates these over P and n and adds the proven lower bounds. "
                       "Written by tools/build_dstar_table.py.",
        "P_max": DSTAR_P_MAX, "n_max": DSTAR_N_MAX,
        "build_seconds": round(result["seconds"], 1),
        **({"penalty_only_seconds": round(result["penalty_only_seconds"], 1)}
           if "penalty_only_seconds" in result else {}),
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
    ap.add_argument("--fresh", action="store_true",
                    help="do not keep the shipped layouts that beat the fresh build")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes for the penalty stage (default 1; the result is the same)")
    ap.add_argument("--penalty-only", action="store_true",
                    help="run only the penalty stage, on the table on disk: an entry takes "
                         "the stage's layout where it is better")
    ap.add_argument("--max-vars", type=int, default=None,
                    help="with --penalty-only: only the entries with P n up to this")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be a positive integer, got {args.jobs}")
    if args.max_vars is not None and not (args.penalty_only and args.max_vars >= 1):
        ap.error(f"--max-vars needs --penalty-only and a positive integer, got {args.max_vars}")
    if args.penalty_only and (args.quick or args.fresh or args.doc_only):
        ap.error("--penalty-only works on the table on disk: it takes neither --quick, "
                 "--fresh nor --doc-only")
    if args.doc_only:
        write_doc()
        return 0
    if args.penalty_only:
        result = read_table()
        t0 = time.perf_counter()
        taken = take_better(result, run_penalty_stage(False, args.jobs, args.max_vars))
        # the time of every --penalty-only run on this table, added up
        result["penalty_only_seconds"] = (result.get("penalty_only_seconds", 0.0)
                                          + time.perf_counter() - t0)
        print(f"the penalty stage lowered {len(taken)} entries", flush=True)
    else:
        shipped = {} if args.fresh else read_shipped()
        penalty = None if args.jobs == 1 else run_penalty_stage(args.quick, args.jobs)
        with single_threaded_blas():  # BLAS threads only slow these small problems down
            result = build(args.quick, penalty)
        taken = keep_better(result, shipped)
        print(f"kept {len(taken)} shipped layouts that beat the fresh build", flush=True)
    write(result)
    # the doc reads the table just written, in a fresh process
    return subprocess.run([sys.executable, __file__, "--doc-only"], check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
