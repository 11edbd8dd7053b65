#!/usr/bin/env python
"""Benchmark: minimax Procrustes in the plane, thickness, and D*.

Compares, in one run and as ratios of medians:

1. ``isoapprox.minimax_procrustes`` (certified branch and bound over the
   angle, ``rtol = 1e-9``) against the plain method of the reconstruction
   (section 7.2, item 9): a 720-step angle grid for rotations and
   reflections, the exact minimum enclosing circle at each angle (the same
   numba circle, so only the search differs), then a bounded scalar
   refinement around the best grid angle.  The baseline gives no bound, and
   can stop in a wrong basin; the table reports how far its value lies above
   the certified one.  Toys: N in {5, 8, 12} points in R^2, pairs of
   independent Gaussian clouds and noisy isometric copies.
2. ``isoapprox.thickness`` in the plane against brute force over all point
   pairs (the least width is flush with an edge, i.e. normal to a pair);
   and in R^3 (difference body) against the face/edge-pair brute force.
3. ``isoapprox.min_separated_diameter`` for the planar table P = 4..8: the
   first (uncached) call and a repeated (cached) call.

Every timing is the median over the instances, after one warm-up call per
function (which also excludes JIT compilation).

Usage::

    python benchmarks/bench_geometry.py           # a few seconds to a minute
    python benchmarks/bench_geometry.py --quick   # smoke run
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np
from scipy.optimize import minimize_scalar

import isoapprox as ia
from isoapprox.kernels import meb as KG


def _rot(phi: float, refl: bool) -> np.ndarray:
    Q = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    return Q @ np.diag([1.0, -1.0]) if refl else Q


def _radius(E1, E2, phi, refl) -> float:
    P = np.ascontiguousarray(E2 - E1 @ _rot(phi, refl).T)
    return KG.meb_2d(P, np.arange(len(P)), np.empty(3, dtype=np.int64), np.empty(3))[2]


def baseline_procrustes(E1, E2, steps: int = 720) -> float:
    """Grid over the angle (both families) + bounded refinement; no certificate."""
    best = (math.inf, 0.0, False)
    h = 2 * math.pi / steps
    for refl in (False, True):
        for phi in np.arange(steps) * h:
            r = _radius(E1, E2, phi, refl)
            if r < best[0]:
                best = (r, phi, refl)
    _, phi, refl = best
    res = minimize_scalar(lambda t: _radius(E1, E2, t, refl), bounds=(phi - h, phi + h),
                          method="bounded", options={"xatol": 1e-12})
    return min(best[0], float(res.fun))


def _time(f, *args) -> tuple[float, object]:
    t = time.perf_counter()
    out = f(*args)
    return time.perf_counter() - t, out


def bench_procrustes(n_inst: int) -> None:
    print("1. minimax Procrustes in R^2 (medians over instances)")
    print(f"{'N':>3} {'kind':>6} {'isoapprox ms':>13} {'baseline ms':>12} {'ratio':>7} "
          f"{'certified':>9} {'max(baseline - value)/scale':>28}")
    rng = np.random.default_rng(0)
    E = rng.normal(size=(5, 2))
    ia.minimax_procrustes(E, E[::-1])
    baseline_procrustes(E, E[::-1], steps=8)
    for N in (5, 8, 12):
        for kind in ("random", "near"):
            t_ia, t_bl, cert, excess = [], [], 0, 0.0
            for _ in range(n_inst):
                E1 = rng.normal(size=(N, 2))
                if kind == "random":
                    E2 = rng.normal(size=(N, 2))
                else:
                    E2 = E1 @ _rot(rng.uniform(0, 2 * math.pi), rng.random() < 0.5).T
                    E2 = E2 + 0.05 * rng.normal(size=(N, 2))
                dt, res = _time(ia.minimax_procrustes, E1, E2)
                db, val = _time(baseline_procrustes, E1, E2)
                t_ia.append(dt)
                t_bl.append(db)
                cert += res.certified
                scale = max(ia.min_enclosing_ball(E1).radius, ia.min_enclosing_ball(E2).radius)
                excess = max(excess, (val - res.value) / scale)
            a, b = np.median(t_ia) * 1e3, np.median(t_bl) * 1e3
            print(f"{N:>3} {kind:>6} {a:>13.3f} {b:>12.2f} {b / a:>7.1f} "
                  f"{cert:>4}/{n_inst:<4} {excess:>28.2e}")


def _brute_width_2d(X) -> float:
    best = math.inf
    for i, j in itertools.combinations(range(len(X)), 2):
        d = X[j] - X[i]
        e = np.array([-d[1], d[0]]) / np.hypot(*d)
        p = X @ e
        best = min(best, p.max() - p.min())
    return best


def _brute_width_3d(X) -> float:
    pairs = [X[j] - X[i] for i, j in itertools.combinations(range(len(X)), 2)]
    best = math.inf
    for u, v in itertools.combinations(pairs, 2):
        c = np.cross(u, v)
        nc = np.linalg.norm(c)
        if nc > 1e-12:
            p = X @ (c / nc)
            best = min(best, p.max() - p.min())
    return best


def bench_thickness(n_inst: int) -> None:
    print("\n2. thickness (medians over instances)")
    print(f"{'n':>2} {'N':>4} {'isoapprox ms':>13} {'brute ms':>10} {'ratio':>7} "
          f"{'max |diff|':>11}")
    rng = np.random.default_rng(1)
    ia.thickness(rng.normal(size=(6, 2)))
    ia.thickness(rng.normal(size=(6, 3)))
    for n, N, brute in ((2, 12, _brute_width_2d), (2, 100, _brute_width_2d),
                        (3, 8, _brute_width_3d), (3, 14, _brute_width_3d)):
        t_ia, t_bf, diff = [], [], 0.0
        for _ in range(n_inst):
            X = rng.normal(size=(N, n))
            dt, th = _time(ia.thickness, X)
            db, w = _time(brute, X)
            t_ia.append(dt)
            t_bf.append(db)
            diff = max(diff, abs(th - w / ia.diameter(X)))
        a, b = np.median(t_ia) * 1e3, np.median(t_bf) * 1e3
        print(f"{n:>2} {N:>4} {a:>13.3f} {b:>10.2f} {b / a:>7.1f} {diff:>11.1e}")


def bench_packing() -> None:
    print("\n3. D*(P, 2, 1): first call (optimiser) and a cached repeat")
    print(f"{'P':>2} {'value':>12} {'theorem':>12} {'first s':>8} {'cached ms':>10}")
    from isoapprox.packing._search import unit_packing as _unit_packing
    from isoapprox.packing.bounds import PLANAR_EXACT as _PLANAR

    _unit_packing.cache_clear()
    for P in range(4, 9):
        t1, r = _time(ia.min_separated_diameter, P, 2)
        t2, _ = _time(ia.min_separated_diameter, P, 2)
        print(f"{P:>2} {r.value:>12.9f} {_PLANAR[P]:>12.9f} {t1:>8.2f} {t2 * 1e3:>10.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few instances (smoke run)")
    args = ap.parse_args()
    n_inst = 5 if args.quick else 40
    bench_procrustes(n_inst)
    bench_thickness(max(3, n_inst // 4))
    bench_packing()


if __name__ == "__main__":
    main()
