"""The kernels from a cold and from a warm numba cache agree with brute force.

numba invalidates its on-disk cache per source file, so a cached kernel that
calls a jitted function of another file (the cross-file calls listed in
:mod:`isoapprox.kernels`) could run stale code.  Each run below uses its own
``NUMBA_CACHE_DIR``: the first compiles every kernel from source, the second
loads them all from that cache, and both must match the brute-force twins.
The cold run starts with a solve under a short time limit, which must not
depend on how long compilation takes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHECKS = textwrap.dedent(
    """
    import itertools, sys
    import numpy as np
    import isoapprox as ia
    from isoapprox.kernels import (batch, distances, ideal, losses, meb, planar, retrieval,
                                   stats, train)

    # first, a solve whose kernels compile inside it (10-30 s): work budgets end
    # the search, and its 2 s safety net does not fire, since the solver clock
    # stops while numba holds its compiler (and while cvxpy is first imported),
    # so a cold cache gives the answer a warm one gives (the README's toy)
    T = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.2], [0.6, 1.0], [2.0, 0.5]])
    res = ia.nearest_ideal(T, [0, 0, 1, 1, 2], margin=0.0, time_limit=2.0, warn_uncertified=False)
    assert res.certified and round(res.value, 6) == 0.230742, (res.status, res.value)
    assert res.reproducible, "the safety net counted compilation"

    rng = np.random.default_rng(3)
    X = rng.normal(size=(23, 3))
    Y = X + 0.1 * rng.normal(size=X.shape)
    codes = rng.integers(0, 3, size=23)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    DY = np.sqrt(((Y[:, None] - Y[None]) ** 2).sum(-1))
    iu = np.triu_indices(23, 1)
    same = codes[:, None] == codes[None]
    off = ~np.eye(23, dtype=bool)

    def close(a, b):
        assert np.allclose(a, b, rtol=1e-13, atol=1e-13), (a, b)

    # distances (tile engine, dist)
    close(distances.pairwise_distances_kernel(X), D)
    close(distances.diameter_kernel(X)[0], D[iu].max())
    close(distances.isometric_error_kernel(X, Y)[0], np.abs(D - DY)[iu].max())
    close(distances.farthest_from(X, X[0])[0], D[0].max())
    close(distances.pointwise_kernel(X, Y)[0], np.linalg.norm(X - Y, axis=1).max())
    # losses (cross-file: dist, tile engine)
    hp, hn, _, _ = losses.batch_hard_terms(X, codes, 0.0)
    close(hp, np.where(same & off, D, -np.inf).max(1))
    close(hn, np.where(~same, D, np.inf).min(1))
    want = [sum(1 for p in range(23) for m in range(23) if p != a and codes[p] == codes[a]
                and codes[m] != codes[a] and D[a, p] + 0.5 - D[a, m] > 0.0) for a in range(23)]
    assert losses.separation_counts(X, codes, 0.5, 0.0).tolist() == want
    close(losses.triplet_loss_kernel(X, codes, 0.5)[2], want)
    # stats (cross-file: tile engine)
    best, _ = stats.nearest_other(X, np.ascontiguousarray(X.T), 2)
    close(best, np.where(off, D, np.inf).min(1))
    # single linkage cut at 0.6: the least index of each component, by propagation
    L = np.arange(23)
    for _ in range(23):
        L = np.where(D <= 0.6, L[None], 23).min(1)
    lab = stats.threshold_components(X, np.ascontiguousarray(X.T), 0.6, 2)
    assert lab.tolist() == L.tolist(), (lab, L)
    # the anchor sweep (cross-file: rows_dist)
    members = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[members], np.arange(4))
    ap = stats.anchor_pass(X, np.ascontiguousarray(X.T), codes, members, starts, 0.0, 0.0, 2)
    close(ap[0], np.where(same & off, D, -np.inf).max(1))
    close(ap[1], np.where(~same, D, np.inf).min(1))
    # the alignment sums (cross-file: sq_dist), one group after the other
    order = np.argsort(codes, kind="stable")
    Z, zc = X[order], codes[order]
    ends = np.searchsorted(zc, zc, side="right")
    DZ = D[np.ix_(order, order)]
    for alpha in (1.0, 2.0, 0.5):
        close(stats.alignment_rows(Z, ends, alpha),
              [sum(DZ[i, j] ** alpha for j in range(i + 1, ends[i])) for i in range(23)])
    # retrieval (cross-file: sq_dist): hit at 1 and R-precision, no ties here
    sizes = np.bincount(codes)
    queries = np.flatnonzero(sizes[codes] >= 2)
    hit, rp, _ = retrieval.loo_retrieval(X, codes, sizes, queries)
    for k, q in enumerate(queries):
        near = [j for j in np.argsort(D[q], kind="stable") if j != q]
        R = sizes[codes[q]] - 1
        assert hit[k] == float(codes[near[0]] == codes[q]), (q, hit[k])
        close(rp[k], np.mean(codes[near[:R]] == codes[q]))
    # ideal (cross-file: dist, isometric error, pointwise)
    close(ideal.iso_value(X, Y), np.abs(D - DY)[iu].max())
    close(ideal.haus_value(X, Y), np.linalg.norm(X - Y, axis=1).max())
    close(ideal.class_diameters(X, codes, 3)[3], D[iu].max())
    # train (cross-file: dist)
    S = np.ones((23, 23))
    G = train.pair_grad_kernel(X, S)
    with np.errstate(invalid="ignore", divide="ignore"):
        W = np.where(off, 1.0 / D, 0.0)
    close(G, (W[:, :, None] * (X[:, None] - X[None])).sum(1))
    # meb and planar (cross-file: meb_2d)
    P = np.ascontiguousarray(X[:, :2])
    diam_p = np.sqrt(((P[:, None] - P[None]) ** 2).sum(-1)).max()
    cx, cy, r = meb.meb_2d(P, np.arange(23), np.empty(3, dtype=np.int64), np.empty(3))
    close(r, np.linalg.norm(P - [cx, cy], axis=1).max())
    # the smallest circle through two or three of the points that holds them all
    best = np.inf
    pairs_triples = itertools.chain(*(itertools.combinations(range(23), k) for k in (2, 3)))
    for S in pairs_triples:
        Q = P[list(S)]
        if len(S) == 2:
            c = Q.mean(0)
        else:
            A = 2 * (Q[1:] - Q[0])
            if abs(np.linalg.det(A)) < 1e-12:
                continue
            c = np.linalg.solve(A, (Q[1:] ** 2).sum(1) - (Q[0] ** 2).sum())
        rad = np.linalg.norm(P - c, axis=1).max()
        if rad <= np.linalg.norm(Q - c, axis=1).max() * (1 + 1e-9):
            best = min(best, rad)
    assert abs(r - best) <= 1e-9 * best, (r, best)
    hull = planar.hull_2d(P, np.lexsort((P[:, 1], P[:, 0])))
    width, _ = planar.min_width_2d(P, hull)
    close(planar.thickness_2d(P, diam_p) * diam_p, width)
    # batch (cross-file: meb, planar, dist)
    F, I = batch.cheap_kernel(P[None], codes[None], 0.0)
    close(F[0, 5], r)
    close(F[0, 3], diam_p)
    # the dispatched kernels (diameter_kernel, batch_hard_terms: Python functions that
    # choose the serial or the parallel one) by the serial ones they ran here
    kernels = (distances._diam_serial, losses._bh_serial, batch.cheap_kernel,
               stats.alignment_rows, retrieval.loo_retrieval)
    hits = sum(sum(f.stats.cache_hits.values()) for f in kernels)
    print("CACHE_HITS", hits)
    """
)


def _run(cache: Path) -> int:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", CHECKS], env=env, capture_output=True, text=True, timeout=1200
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return int(out.stdout.split("CACHE_HITS")[-1])


def test_kernels_match_brute_force_from_cold_and_warm_cache(tmp_path):
    assert _run(tmp_path) == 0  # cold: everything compiled from source
    names = {p.name.split("-")[0] for p in tmp_path.rglob("*.nbi")}  # ... written to this cache,
    # a serial twin under its own name (else it shares the parallel kernel's entry)
    assert "distances._farthest_from_par_serial" in names
    assert _run(tmp_path) > 0  # warm: loaded from that cache, same answers


WARM_UP = textwrap.dedent(
    """
    import numpy as np
    from numba.core.registry import CPUDispatcher
    import isoapprox.kernels as K
    from isoapprox import toy

    def signatures():
        import sys
        out = {}
        for name, mod in list(sys.modules.items()):
            if not name.startswith("isoapprox.kernels."):
                continue
            for attr, f in vars(mod).items():
                if isinstance(f, CPUDispatcher):
                    out[f"{name}.{attr}"] = len(f.signatures)
        return out

    cfg = toy.ToyConfig()
    toy._warm_up(cfg)
    before = signatures()
    opts = cfg.theory_options()
    for i in range(6):  # every label layout and margin of the random toys
        E, lay, margin = toy._random_embedding(cfg, i)
        toy.evaluate_embedding(E, lay, margin=margin, rng=np.random.default_rng(i), options=opts)
    sc = cfg.scenarios[0]
    rng = np.random.default_rng(1)
    for E in (1e-3 * rng.normal(size=(5, 2)),  # nearly collapsed, as a trajectory's end
              np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [3.0, 0.0], [3.1, 0.1]])):
        toy.evaluate_embedding(E, sc.labels, margin=sc.margin, rng=rng, options=opts)
    after = signatures()
    new = sorted(k for k in after if after[k] > before.get(k, 0))
    print("NEW", new)
    """
)


def test_the_toy_warm_up_reaches_every_kernel_its_evaluations_use():
    # issue 35: the toy compiles (or loads) its kernels in the parent before the worker
    # processes start, so that they load every one from the cache instead of each
    # compiling the same ones (the planar search that the "quick" effort skips, 20 s)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", WARM_UP], env=env, capture_output=True,
                         text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.split("NEW")[-1].strip() == "[]", out.stdout
