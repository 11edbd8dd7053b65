"""Lower bounds of the nearest-ideal problem: formulas and validity.

Every bound is checked against an independent computation (``linprog`` for
the LPs) and against feasible values found without the package's solvers: a
proven lower bound may never exceed the objective at a separated embedding.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import batch_hard_loss, d_star, nearest_ideal
from isoapprox.ideal._bounds import metric_lp_bound, three_point_bound
from isoapprox.ideal._problem import Problem
from isoapprox.kernels import ideal as K

from . import ideal_reference as iref
from . import reference as ref
from .conftest import BRACKET_RTOL, examples, labelled_cloud

#: the 3-point closed form and linprog (HiGHS, dual feasibility 1e-7 on the
#: scaled LP) agree to this.
LP_ATOL = 1e-7

LAYOUTS = [(0, 0, 1, 1, 2), (0, 0, 0, 1, 1), (0, 0, 1, 1, 1), (0, 0, 1)]


@given(
    D=st.lists(st.floats(0.0, 5.0), min_size=3, max_size=3),
    alpha=st.sampled_from([0.0, 0.3, 1.0, 2.5]),
)
@settings(max_examples=examples(80))
def test_three_point_closed_form_matches_linprog(D, alpha):
    # any non-negative table (also non-metric ones): the formula is the LP's value
    Dx, Du, Dv = D
    assert K._three_point_level(Dx, Du, Dv, alpha) == pytest.approx(
        iref.three_point_lp(Dx, Du, Dv, alpha), abs=LP_ATOL)


@pytest.mark.parametrize("alpha", [0.0, 0.8])
def test_three_point_kernel_is_max_over_triples(rng, alpha):
    E, y = labelled_cloud(rng, 7, 2, 3)
    D = ref.pairwise(E)
    best = 0.0
    for i in range(7):
        for j in range(i + 1, 7):
            if y[i] != y[j]:
                continue
            for k in range(7):
                if y[k] != y[i]:
                    best = max(best, iref.three_point_lp(D[i, j], D[i, k], D[j, k], alpha))
    v, i, j, k = K.three_point_bounds(E, y, alpha)
    assert max(v, 0.0) == pytest.approx(best, abs=LP_ATOL)
    assert y[i] == y[j] != y[k]


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.5])
def test_three_point_dominates_half_loss(rng, alpha):
    for _ in range(10):
        E, y = labelled_cloud(rng, 6, 2, 3)
        prob = Problem.build(E, y, alpha, "iso", ref.diameter(E))
        tp, _ = three_point_bound(prob)
        half = batch_hard_loss(E, y, margin=alpha, reduction="max") / 2
        assert tp * prob.scale >= half * (1 - BRACKET_RTOL)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_metric_lp_certificate(rng, alpha):
    """The dual-certified value is a lower bound of the LP and close to it."""
    for _ in range(4):
        E, y = labelled_cloud(rng, 5, 2, 3)
        prob = Problem.build(E, y, alpha, "iso", ref.diameter(E))
        lp = iref.metric_lp_all_triplets(E, y, alpha)
        cert = metric_lp_bound(prob, 10.0) * prob.scale
        assert cert <= lp + 1e-12 * prob.scale
        assert cert >= lp - 1e-7 * prob.scale
        tp, _ = three_point_bound(prob)
        assert cert >= tp * prob.scale - 1e-7 * prob.scale


def _bounds_iso(E, y, alpha):
    prob = Problem.build(E, y, alpha, "iso", ref.diameter(E))
    out = {
        "half_loss": batch_hard_loss(E, y, margin=alpha, reduction="max") / 2,
        "three_point": three_point_bound(prob)[0] * prob.scale,
        "metric_lp": metric_lp_bound(prob, 10.0 * max(ref.diameter(E), alpha) / prob.scale)
        * prob.scale,
    }
    return prob, out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_iso_bounds_never_exceed_feasible_values(rng, layout, alpha):
    y = np.array(layout)
    for _ in range(2):
        E = rng.normal(size=(len(y), 2))
        _, bounds = _bounds_iso(E, y, alpha)
        best = iref.independent_search(E, y, alpha, "iso", rng, n_random=200, n_polish=4)
        scale = max(ref.diameter(E), alpha)
        for name, v in bounds.items():
            assert v <= best + BRACKET_RTOL * scale, name


@pytest.mark.solver
@pytest.mark.parametrize("layout", LAYOUTS[:3])
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_sdp_bounds_never_exceed_feasible_values(rng, layout, alpha):
    from isoapprox.ideal._relax import gram_sdp_bound, shor_sdp_bound

    y = np.array(layout)
    E = rng.normal(size=(len(y), 2))
    scale = max(ref.diameter(E), alpha)
    prob, bounds = _bounds_iso(E, y, alpha)
    best = iref.independent_search(E, y, alpha, "iso", rng, n_random=200, n_polish=4)
    lo = max(bounds.values()) / prob.scale
    v = gram_sdp_bound(prob, lo, best / prob.scale)
    if v is not None:
        assert v * prob.scale <= best + BRACKET_RTOL * scale
    probh = Problem.build(E, y, alpha, "haus", ref.diameter(E))
    besth = iref.independent_search(E, y, alpha, "haus", rng, n_random=200, n_polish=4)
    vh = shor_sdp_bound(probh, besth / probh.scale)
    assert vh is not None
    assert vh * probh.scale <= besth + BRACKET_RTOL * scale
    # the haus bound from the iso bounds: d_iso(E, G) <= 2 max_k |E_k - G_k|
    assert max(bounds.values()) / 2 <= besth + BRACKET_RTOL * scale


def _haus_triplet_grid(a, p, m, alpha, rng, n=100_000):
    """delta* of one triplet by bisection on a dense sample of the disk (plane)."""
    ell = ref.dist(a, p) - ref.dist(a, m) + alpha

    def reach(delta):
        r = delta * np.sqrt(rng.uniform(0, 1, n))
        th = rng.uniform(0, 2 * np.pi, n)
        X = a + np.c_[r * np.cos(th), r * np.sin(th)]
        ph = np.linspace(0, 2 * np.pi, 50_000)
        X = np.vstack([X, a + delta * np.c_[np.cos(ph), np.sin(ph)]])
        h = (np.linalg.norm(X - m, axis=1) + delta
             - np.maximum(np.linalg.norm(X - p, axis=1) - delta, 0.0))
        return h.max() >= alpha

    lo, hi = ell / 4, ell / 2
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if reach(mid) else (mid, hi)
    return hi


def test_haus_triplet_level_matches_dense_search(rng):
    """The certified value never exceeds delta* and agrees with it to the grid."""
    done = 0
    while done < 4:
        a, p, m = rng.normal(size=(3, 2))
        alpha = float(rng.choice([0.0, 0.5, 1.0]))
        if ref.dist(a, p) - ref.dist(a, m) + alpha <= 0:
            continue
        done += 1
        lb = K.haus_triplet_level(a, p, m, alpha)
        grid = _haus_triplet_grid(a, p, m, alpha, rng)
        assert lb <= grid + 1e-9
        assert lb >= grid - 1e-3 * grid  # the sample resolves delta* to ~1e-4


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_haus_triplet_bound_below_feasible_values(rng, alpha):
    for layout in LAYOUTS:
        y = np.array(layout)
        E = rng.normal(size=(len(y), 2))
        prob = Problem.build(E, y, alpha, "haus", ref.diameter(E))
        v = K.haus_triplet_bound(prob.E, prob.codes, prob.alpha, 0.0) * prob.scale
        best = iref.independent_search(E, y, alpha, "haus", rng, n_random=200, n_polish=4)
        assert v <= best + BRACKET_RTOL * max(ref.diameter(E), alpha)


def test_nearest_ideal_applies_the_packing_bound_on_a_collapsed_batch():
    """16 classes of 4 points within 1e-3 of the origin in R^2, margin 0.2: any
    ideal embedding holds 16 points pairwise >= 0.2 apart, so d_iso >= D*(16, 2,
    0.2) - diam(E) ~ 0.519, where the solver's own bounds stay near the margin."""
    from isoapprox import nearest_ideal, packing_lower_bound

    gen = np.random.default_rng(3)
    y = np.repeat(np.arange(16), 4)
    E = gen.uniform(-5e-4, 5e-4, size=(64, 2))
    diam = ref.diameter(E)
    expected = packing_lower_bound(16, 2, margin=0.2) - diam
    iso = nearest_ideal(E, y, margin=0.2, objective="iso", rng=0, solver="scipy", n_starts=2,
                        time_limit=2.0, warn_uncertified=False)
    # the representatives bound (isoapprox.ideal._subbatch) is at least as large
    assert iso.lower >= iso.bounds["packing"] >= 0.5
    assert iso.lower_source in ("packing", "sub_batch_packing")
    assert iso.bounds["packing"] <= expected <= iso.bounds["packing"] * (1 + 1e-11)
    assert iso.lower <= iso.value
    haus = nearest_ideal(E, y, margin=0.2, objective="haus", rng=0, solver="scipy",
                         n_starts=2, time_limit=2.0, warn_uncertified=False)
    assert haus.bounds["packing_half"] == iso.bounds["packing"] / 2
    assert haus.lower >= haus.bounds["packing_half"]
    assert haus.lower_source in ("packing_half", "sub_batch_packing")


@pytest.mark.parametrize("layout", [(0, 0, 1, 1, 2, 2, 3, 3), (0, 0, 1, 1, 2, 3, 4)])
def test_packing_distance_bound_below_feasible_values(rng, layout):
    """A proven bound: below d_iso(E, G) for feasible G found without the package's solvers."""
    from isoapprox.packing import packing_distance_bound

    y = np.array(layout)
    for scale in (1e-3, 0.1):
        E = scale * rng.normal(size=(len(y), 2))
        v = packing_distance_bound(y, 2, 1.0, ref.diameter(E))
        best = iref.independent_search(E, y, 1.0, "iso", rng, n_random=100, n_polish=2)
        assert 0.0 < v <= best


@pytest.mark.parametrize("n, P", [(2, 16), (3, 12)])
def test_collapse_regime_upper_end_from_the_d_star_layout(n, P):
    """Classes collapsed onto a D*(P', n, margin) layout are triplet-separated, so
    d_iso(E, F_TS) <= max(diam(E), D*_upper): the construction gives that upper end
    where local solves from E stall above it (0.7205 against 0.7180 for 16 classes
    of two points in the plane), and the bracket straddles [D*_lower - diam(E), D*_upper]."""
    E = 1e-3 * np.random.default_rng(0).normal(size=(2 * P, n))
    y = np.arange(2 * P) % P
    res = nearest_ideal(E, y, margin=0.2, rng=0, solver="scipy", n_starts=2,
                        warn_uncertified=False)
    ds = d_star(P, n, 0.2)
    diam = ref.diameter(E)
    assert res.value <= max(ds.upper, diam) * (1 + 1e-9)
    assert res.lower >= ds.lower - diam - 1e-9
    assert ref.worst_slack(res.embedding, y, 0.2) >= 0.0
    assert ref.isometric_error(E, res.embedding) == pytest.approx(res.value, rel=1e-12)


def test_partial_collapse_upper_end_from_the_merged_groups_layout():
    # classes 0..9 squeezed into one blob, the other 20 apart.  Spreading only
    # the merged classes onto a D* layout is an ideal embedding that moves each
    # pair by at most about the layout's and the blob's diameters.  A safety
    # net that fires at once lets only the constructions run (as it would on a
    # slow machine at N = 120): without this construction the upper end was 17.3
    from . import planted

    E, y = planted.partial(np.random.default_rng(2), P=30, K=4, n=8, merged=10,
                           dtype=np.float64)
    margin = 0.2
    res = nearest_ideal(E, y, margin=margin, objective="iso", n_starts=1, time_limit=1e-9,
                        warn_uncertified=False)
    assert not res.reproducible
    blob = np.ptp(E[y < 10], axis=0).max() * 2.0  # >= the blob's diameter
    bound = d_star(10, 8, margin).upper + blob
    assert res.solver == "construction" and res.upper <= bound, (res.upper, bound)
    # the loss is a faithful proxy here: d_iso <= L, proven by the upper end
    assert res.upper < batch_hard_loss(E, y, margin=margin, reduction="max")
