"""Extreme scales: subnormal, near-overflow and mixed magnitudes, extreme margins.

Every public function either answers (exactly rescaled by powers of two,
with results beyond the float64 range reported as ``inf``/``0`` and never
certified) or refuses with :class:`InvalidInputError` before any work.
"""

from __future__ import annotations

import inspect
import math
import time

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import isoapprox as ia
from isoapprox._scaling import pow2_scale
from isoapprox._validation import MAGNITUDE_MAX, MAGNITUDE_MIN
from isoapprox.exceptions import InvalidInputError
from isoapprox.packing import WITNESS_P_MAX
from isoapprox.packing.constructions import min_max_distance

from .conftest import examples

FLOAT_MAX = float(np.finfo(np.float64).max)
TINY = 2.0**-1074

BASE = np.array([[0.5, 0.25], [1.0, 0.0], [0.25, 0.75], [1.5, 1.0]])
Y = np.array([0, 0, 1, 1])

# (E, margin): each beyond some float64 limit
CASES = {
    "subnormal": (BASE * 1e-310, 0.0),
    "tiny": (BASE * 1e-300, 0.0),
    "huge": (BASE * 1e300, 0.0),
    "overflow": (np.array([[0.0, 0.0], [1e308, 0.0], [-1e308, 0.0], [5e307, 1e308]]), 0.0),
    "mixed": (np.array([[1e-300, 0.0], [3e-300, 1e-300], [1e300, 0.0], [0.0, -1e300]]), 0.0),
    "margin_huge": (BASE, 1e308),
    "margin_subnormal": (BASE, 1e-310),
    "margin_relative": (BASE * 1e-300, 1e300),
}

FAST = {"effort": "quick", "n_starts": 2, "warn_uncertified": False, "rng": 0}
THEORY = ia.TheoryOptions(effort="quick", n_starts=2)


def _other(E):
    return E[::-1].copy()


CALLS = {
    "pairwise_distances": lambda E, a: ia.pairwise_distances(E),
    "diameter": lambda E, a: ia.diameter(E),
    "farthest_pair": lambda E, a: ia.farthest_pair(E),
    "min_enclosing_ball": lambda E, a: ia.min_enclosing_ball(E),
    "thickness": lambda E, a: ia.thickness(E),
    "thickness_report": lambda E, a: ia.thickness_report(E, rng=0),
    "effective_rank": lambda E, a: ia.effective_rank(E),
    "rankme": lambda E, a: ia.rankme(E),
    "std_of_l2_normalized": lambda E, a: ia.std_of_l2_normalized(E),
    "uniformity": lambda E, a: ia.uniformity(E),
    "distance_quantiles": lambda E, a: ia.distance_quantiles(E, [0.0, 0.5, 1.0]),
    "distance_summary": lambda E, a: ia.distance_summary(E),
    "isometric_error": lambda E, a: ia.isometric_error(E, _other(E)),
    "isometric_error_report": lambda E, a: ia.isometric_error_report(E, _other(E)),
    "hausdorff_like": lambda E, a: ia.hausdorff_like(E, _other(E), mode="isometry"),
    "hausdorff_distance": lambda E, a: ia.hausdorff_distance(E, _other(E)[:3]),
    "check_iso_haus": lambda E, a: ia.check_iso_haus(E, _other(E)),
    "minimax_procrustes": lambda E, a: ia.minimax_procrustes(E, _other(E), rng=0),
    "triplet_loss": lambda E, a: ia.triplet_loss(E, Y, margin=a),
    "batch_hard_loss": lambda E, a: ia.batch_hard_loss(E, Y, margin=a, reduction="max"),
    "is_triplet_separated": lambda E, a: ia.is_triplet_separated(E, Y, margin=a),
    "separation_report": lambda E, a: ia.separation_report(E, Y, margin=a),
    "hardest_pairs": lambda E, a: ia.hardest_pairs(E, Y),
    "contrastive_loss": lambda E, a: ia.contrastive_loss(E, Y, margin=a, pos_margin=a),
    "contrastive_report": lambda E, a: ia.contrastive_report(E, Y, margin=a),
    "margin_loss": lambda E, a: ia.margin_loss(E, Y, margin=a, beta=a),
    "margin_loss_report": lambda E, a: ia.margin_loss_report(E, Y, margin=a, beta=a),
    "active_triplet_fraction": lambda E, a: ia.active_triplet_fraction(E, Y, margin=a),
    "alignment": lambda E, a: ia.alignment(E, Y),
    "retrieval_metrics": lambda E, a: ia.retrieval_metrics(E, Y),
    "class_spread": lambda E, a: ia.class_spread(E, Y, margin=a),
    "collapse_statistics": lambda E, a: ia.collapse_statistics(E, Y, margin=a),
    "quick_statistics": lambda E, a: ia.quick_statistics(E, Y, margin=a),
    "detect_signatures": lambda E, a: ia.detect_signatures(ia.quick_statistics(E, Y, margin=a)),
    "diagnose": lambda E, a: ia.diagnose(E, Y, options=ia.DiagnoseOptions(margin=a)),
    "diagnose_batches": lambda E, a: ia.diagnose_batches(
        E, Y, batch_size=4, samples_per_class=2, n_batches=2, rng=0,
        options=ia.DiagnoseOptions(margin=a), theory_batches=0),
    "CollapseMonitor": lambda E, a: ia.CollapseMonitor(margin=a, theory_every=0,
                                                       warn=()).update(0, E, Y),
    "nearest_ideal": lambda E, a: ia.nearest_ideal(E, Y, margin=a, **FAST),
    "nearest_ideal@haus": lambda E, a: ia.nearest_ideal(E, Y, margin=a, objective="haus",
                                                        **FAST),
    "nearest_zero_loss": lambda E, a: ia.nearest_zero_loss(E, Y, margin=a, **FAST),
    "nearest_zero_loss@margin": lambda E, a: ia.nearest_zero_loss(E, Y, loss="margin",
                                                                  margin=a, beta=a, **FAST),
    "check_loss_iso": lambda E, a: ia.check_loss_iso(E, Y, margin=a, rng=0),
    "check_pair_loss": lambda E, a: ia.check_pair_loss(E, Y, margin=a, rng=0),
    "empirical_constant": lambda E, a: ia.empirical_constant(
        E, Y, margin=a, iso=ia.nearest_ideal(E, Y, margin=a, **FAST),
        haus=ia.nearest_ideal(E, Y, margin=a, objective="haus", **FAST)),
    "evaluate_theory": lambda E, a: ia.evaluate_theory(E, Y, margin=a, options=THEORY, rng=0),
    "diagnose_theory": lambda E, a: ia.diagnose_theory(E, Y, margin=a, options=THEORY),
}

MARGIN_CALLS = {
    "d_star": lambda a: ia.d_star(9, 2, a),
    "d_star_witness": lambda a: ia.d_star_witness(9, 2, a),
    "lower_bound_curve": lambda a: ia.lower_bound_curve([2, 9, 100], 2, margin=a),
    "packing_lower_bound": lambda a: ia.packing_lower_bound(100, 2, margin=a),
    "min_separated_diameter": lambda a: ia.min_separated_diameter(6, 2, margin=a, rng=0),
    "suggest_layout": lambda a: ia.suggest_layout(9, 2, margin=a),
    "check_collapse": lambda a: ia.check_collapse([0, 0, 1, 1, 2, 3], 1, margin=a, rng=0),
}
MARGINS = {"1e308": 1e308, "1e300": 1e300, "1e-300": 1e-300, "1e-310": 1e-310}

#: public names the sweep does not call with points or margins, and why
NOT_SWEPT = {
    "read_history": "reads a file",
    "separated_class_count": "labels only",
    "show_progress": "a context manager of no numbers (tests/test_progress.py)",
}


def _public_functions() -> set[str]:
    names = set()
    for name in ia.__all__:
        obj = getattr(ia, name)
        if inspect.isfunction(obj):
            names.add(name)
    return names | {"CollapseMonitor"}


def test_sweep_covers_every_public_function():
    swept = {name.partition("@")[0] for name in CALLS}
    swept |= set(MARGIN_CALLS) | set(NOT_SWEPT)
    assert _public_functions() <= swept, sorted(_public_functions() - swept)


def _dishonest(result, path: str = "result", depth: int = 0) -> list[str]:
    """Places where a result claims a certificate (or exactness) from non-finite numbers."""
    found: list[str] = []
    if depth > 4 or result is None:
        return found
    if isinstance(result, dict):
        for k, v in result.items():
            found += _dishonest(v, f"{path}[{k!r}]", depth + 1)
        return found
    if isinstance(result, (tuple, list)):
        for i, v in enumerate(result):
            found += _dishonest(v, f"{path}[{i}]", depth + 1)
        return found
    fields = getattr(result, "__dataclass_fields__", None)
    if fields is None:
        return found
    values = {k: getattr(result, k) for k in fields}
    if values.get("certified") is True or values.get("exact") is True:
        for k in ("value", "lower", "upper", "gap", "rel_gap"):
            v = values.get(k)
            if isinstance(v, float) and not math.isfinite(v):
                found.append(f"{path}: certified or exact with {k} = {v}")
    if isinstance(values.get("embedding"), np.ndarray) and values.get("certified") is True:
        if not np.all(np.isfinite(values["embedding"])):
            found.append(f"{path}: certified with a non-finite embedding")
    for k, v in values.items():
        if isinstance(v, (dict, tuple, list)) or hasattr(v, "__dataclass_fields__"):
            found += _dishonest(v, f"{path}.{k}", depth + 1)
    return found


#: numpy's own warnings when a true result exceeds the float64 range (it is
#: then reported as inf; a summary's std over such values is nan)
_OVERFLOW_WARNINGS = (
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
)


@_OVERFLOW_WARNINGS[0]
@_OVERFLOW_WARNINGS[1]
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", sorted(CALLS))
def test_extreme_inputs_answer_honestly_or_refuse(name, case):
    E, margin = CASES[case]
    try:
        result = CALLS[name](E, margin)
    except InvalidInputError:
        return
    assert not _dishonest(result), _dishonest(result)


@_OVERFLOW_WARNINGS[0]
@_OVERFLOW_WARNINGS[1]
@pytest.mark.parametrize("margin", sorted(MARGINS))
@pytest.mark.parametrize("name", sorted(MARGIN_CALLS))
def test_extreme_margins_answer_honestly_or_refuse(name, margin):
    try:
        result = MARGIN_CALLS[name](MARGINS[margin])
    except InvalidInputError:
        return
    assert not _dishonest(result), _dishonest(result)


# --- the power-of-two rescaling ---------------------------------------------


@pytest.mark.parametrize("m", [TINY, 1e-320, 1e-310, 2.0**-1022, 1e-300, 1e-31, 1.0, 3e40,
                               1e300, 1e308, FLOAT_MAX])
def test_pow2_scale_is_finite_and_brings_the_maximum_to_unit_size(m):
    s = pow2_scale(np.array([m, -m / 3]))
    assert math.isfinite(s) and s > 0.0
    assert math.frexp(s)[0] == 0.5  # a power of two
    assert 2.0**-51 <= m * s < 2.0**100


def test_subnormal_points_diameter_and_losses_are_exact():
    # was: OverflowError from math.ldexp in pow2_scale
    assert ia.diameter([[0.0, 0.0], [1e-310, 0.0]]) == 1e-310
    E = np.array([[0.0], [1e-310], [3e-310], [4e-310]])
    assert ia.triplet_loss(E, [0, 0, 1, 1]) == 0.0
    # anchor 1: d(1, 0) - d(1, 2) + margin = x1 - (x2 - x1) + x2 = 2 x1, exactly
    assert ia.triplet_loss(E, [0, 0, 1, 1], margin=E[2, 0], reduction="max") == 2 * E[1, 0]
    np.testing.assert_array_equal(ia.pairwise_distances(E)[0], E[:, 0])
    assert ia.diameter([[0.0], [TINY]]) == TINY


@_OVERFLOW_WARNINGS[0]
def test_results_beyond_float64_are_inf_not_nan():
    E = CASES["overflow"][0]
    assert ia.diameter(E) == math.inf  # the true diameter is 2e308
    D = ia.pairwise_distances(E)
    assert D[0, 1] == 1e308 and D[1, 2] == math.inf
    summary = ia.distance_summary(E)
    assert summary.max == math.inf
    assert not np.isnan(summary.histogram_edges).any()
    assert not np.isnan(summary.quantiles).any()


_FEW_BITS = st.integers(-64, 64).map(lambda j: j / 64.0)


@pytest.mark.property
@settings(deadline=None, max_examples=examples(60))
@given(st.lists(st.tuples(_FEW_BITS, _FEW_BITS), min_size=4, max_size=7),
       st.integers(-1060, 1015), st.integers(0, 64).map(lambda j: j / 64.0))
@example(rows=[(0.0, 0.0), (1.0, 0.0), (0.25, 0.75), (-1.0, 0.5)], k=-1060, margin=0.5)
@example(rows=[(0.0, 0.0), (1.0, 0.0), (0.25, 0.75), (-1.0, 0.5)], k=-1030, margin=0.0)
@example(rows=[(0.0, 0.0), (1.0, 0.0), (0.25, 0.75), (-1.0, 0.5)], k=1015, margin=1.0)
def test_distances_and_losses_are_equivariant_under_powers_of_two(rows, k, margin):
    """``f(2^k E, 2^k margin) == 2^k f(E, margin)``, correctly rounded, over the whole range.

    Coordinates of seven bits stay exact down to ``2**-1068``; power-of-two
    scaling commutes with every float64 operation of the kernels, so the
    only rounding is the final one into the subnormal range (or overflow to
    ``inf``), the same on both sides.
    """
    E = np.array(rows)
    y = np.arange(len(rows)) % 2
    c = 2.0**k
    Ec, mc = E * c, margin * c
    assert np.array_equal(Ec / c, E)  # the scaled input is exact
    assert ia.diameter(Ec) == ia.diameter(E) * c
    np.testing.assert_array_equal(ia.pairwise_distances(Ec), ia.pairwise_distances(E) * c)
    F = E[::-1].copy()
    assert ia.isometric_error(Ec, F * c) == ia.isometric_error(E, F) * c
    assert ia.hausdorff_like(Ec, F * c) == ia.hausdorff_like(E, F) * c
    for red in ("sum", "max"):
        assert ia.triplet_loss(Ec, y, margin=mc, reduction=red) == (
            ia.triplet_loss(E, y, margin=margin, reduction=red) * c)
        assert ia.batch_hard_loss(Ec, y, margin=mc, reduction=red) == (
            ia.batch_hard_loss(E, y, margin=margin, reduction=red) * c)
        assert ia.contrastive_loss(Ec, y, margin=mc, reduction=red) == (
            ia.contrastive_loss(E, y, margin=margin, reduction=red) * c)
    assert ia.is_triplet_separated(Ec, y, margin=mc, atol=0.0) == ia.is_triplet_separated(
        E, y, margin=margin, atol=0.0)


# --- the nearest-ideal family -------------------------------------------------


def test_nearest_ideal_refuses_overflowing_input_instead_of_a_false_certificate():
    # was: certified=True, rel_gap=0.0, kind='collapsed' from inf arithmetic
    E = [[0.0], [1e308], [-1e308], [5e307]]
    with pytest.raises(InvalidInputError, match=r"`E` and `margin` must have magnitudes "
                                                r"between 2\*\*-900 .* got max \|E\| = 1e\+308"):
        ia.nearest_ideal(E, [0, 0, 1, 1], warn_uncertified=False)


@pytest.mark.parametrize("call", [
    lambda: ia.nearest_ideal([[0.0], [1e308], [3e307], [5e307]], [0, 0, 1, 1]),
    lambda: ia.nearest_ideal([[0.0], [1.0], [3.0], [5.0]], [0, 0, 1, 1], margin=1e308),
    lambda: ia.nearest_zero_loss([[0.0], [1e-300], [3e-300]], [0, 0, 1]),
    lambda: ia.nearest_zero_loss([[0.0], [1.0], [3.0]], [0, 0, 1], loss="margin", beta=1e300),
    lambda: ia.check_loss_iso([[0.0], [1e308], [3e307], [5e307]], [0, 0, 1, 1]),
    lambda: ia.empirical_constant([[0.0], [1.0], [3.0], [5.0]], [0, 0, 1, 1], margin=1e308),
    lambda: ia.evaluate_theory([[0.0], [1e308], [3e307], [5e307]], [0, 0, 1, 1]),
    lambda: ia.diagnose_theory([[0.0], [1.0], [3.0], [5.0]], [0, 0, 1, 1], margin=1e308),
    lambda: ia.check_collapse([0, 0, 1, 1], 1, margin=1e308),
], ids=["near-overflow", "margin-1e308", "tiny-pairs", "beta",
        "check_loss_iso", "empirical_constant", "evaluate_theory", "diagnose_theory",
        "check_collapse"])
def test_nearest_ideal_family_refuses_extreme_magnitudes_before_any_work(call):
    # was: OverflowError from _problem._pow2_near (math.ldexp) near 1e308
    t0 = time.perf_counter()
    with pytest.raises(InvalidInputError, match=r"must have magnitudes between 2\*\*-900"):
        call()
    assert time.perf_counter() - t0 < 30.0  # generous: refused before the search


def test_magnitude_bounds_are_the_documented_powers_of_two():
    assert MAGNITUDE_MIN == 2.0**-900 and MAGNITUDE_MAX == 2.0**900


@pytest.mark.parametrize("k", [-880, 880])
def test_nearest_ideal_is_equivariant_at_the_ends_of_its_range(k):
    E = np.array([[0.0], [1.0], [0.25], [1.5]])
    y = [0, 0, 1, 1]
    c = 2.0**k
    opts = {"rng": 0, "warn_uncertified": False}
    unit = ia.nearest_ideal(E, y, margin=0.5, **opts)
    far = ia.nearest_ideal(E * c, y, margin=0.5 * c, **opts)
    assert unit.certified and far.certified
    assert far.value == pytest.approx(unit.value * c, rel=1e-9)
    assert far.lower == pytest.approx(unit.lower * c, rel=1e-9)
    assert far.kind == unit.kind
    assert np.all(np.isfinite(far.embedding)) and far.slack >= 0.0


# --- D* beyond float64 and huge P -----------------------------------------------


def test_d_star_beyond_float64_is_an_honest_bracket():
    exact = ia.d_star(4, 2, 1e300)
    assert exact.exact and exact.upper == pytest.approx(math.sqrt(2) * 1e300)
    big = ia.d_star(4, 2, 1.5e308)  # sqrt(2) * 1.5e308 exceeds the float64 range
    assert big.upper == math.inf and not big.exact
    assert big.lower == FLOAT_MAX
    far = ia.d_star(10**6, 2, 1e308)
    assert far.upper == math.inf and far.lower == FLOAT_MAX and not far.exact


def test_witness_beyond_float64_is_refused():
    with pytest.raises(InvalidInputError, match=r"`margin` must be <= 6\.3558.*e\+307 for a "
                                                r"layout of P = 4 points in R\^2.*got 1e\+308"):
        ia.d_star_witness(4, 2, 1e308)
    with pytest.raises(InvalidInputError, match=r"`margin` must be <="):
        ia.min_separated_diameter(4, 2, margin=1e308)


@pytest.mark.parametrize("P", [10**5, 10**6])
def test_min_separated_diameter_refuses_huge_P_before_allocating(P):
    # was: MemoryError (931 GiB for 10**6) and 28 s for 10**5
    t0 = time.perf_counter()
    with pytest.raises(InvalidInputError, match=rf"`P` must be <= {WITNESS_P_MAX} for a layout "
                                                rf".*got P = {P} \(n = 2\).*d_star"):
        ia.min_separated_diameter(P, 2)
    with pytest.raises(InvalidInputError, match=r"`P` must be <="):
        ia.d_star_witness(P, 2)
    assert time.perf_counter() - t0 < 5.0
    r = ia.d_star(P, 2)  # the bracket alone is cheap for any P
    assert 0.0 < r.lower <= r.upper < math.inf


def test_witness_of_too_many_coordinates_is_refused():
    with pytest.raises(InvalidInputError, match=r"`P` \* `n` must be <= 16777216 .* got P = 3, "
                                                r"n = 100000000"):
        ia.d_star_witness(3, 10**8)
    assert ia.d_star(3, 10**8).exact


def test_witness_of_a_large_planar_patch_is_built():
    # was: "could not scale a configuration to margin 1.0" after 7 s (the
    # ulp-sized bumps could not absorb the rounding of a 1000-point patch)
    r = ia.min_separated_diameter(1000, 2, margin=0.5)
    assert r.points.shape == (1000, 2)
    assert r.lower <= r.value < math.inf
    dmin, dmax = min_max_distance(r.points)
    assert dmin >= 0.5 and r.value <= dmax


# --- statistics and balls -----------------------------------------------------


def test_statistics_of_tiny_points_keep_their_distances_with_the_default_atol():
    # was: diameter and class gaps 0.0 (atol = 1e-9 set the scale and the
    # squares of differences near 1e-300 underflowed)
    c = 2.0**-1000
    unit = ia.quick_statistics(BASE, Y)
    tiny = ia.quick_statistics(BASE * c, Y)
    assert tiny.diameter == unit.diameter * c > 0.0
    np.testing.assert_array_equal(tiny.class_gap, unit.class_gap * c)
    np.testing.assert_array_equal(tiny.class_diameter, unit.class_diameter * c)
    full = ia.collapse_statistics(BASE * c, Y)
    assert full.distances.max == ia.collapse_statistics(BASE, Y).distances.max * c


def test_ball_and_batch_summaries_of_huge_points_are_finite():
    # was: meb_radius inf (the re-scoring squared coordinates near 1e300) and
    # a nan std in diagnose_batches' summary
    c = 2.0**990
    ball = ia.min_enclosing_ball(BASE * c)
    assert ball.radius == pytest.approx(ia.min_enclosing_ball(BASE).radius * c, rel=1e-12)
    assert ball.lower <= ball.radius < math.inf
    r = ia.diagnose_batches(BASE * 1e300, Y, batch_size=4, samples_per_class=2, n_batches=2,
                            rng=0)
    for key in ("diameter", "meb_radius", "rms_norm"):
        assert all(math.isfinite(v) for v in r["statistics"][key].values()), key
