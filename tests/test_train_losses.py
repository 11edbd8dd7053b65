"""Losses with gradients (isoapprox.losses): forward equality with the loss values,
gradient checks, subgradients at zero distance, the selectively contrastive and
semi-hard rules, the registry."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import isoapprox as ia
from isoapprox import losses as TL
from isoapprox.exceptions import InvalidInputError, NoTripletError

from . import train_reference as ref
from .conftest import examples
from .reference import batch_hard_loss as ref_batch_hard

# --- tolerances -----------------------------------------------------------
#: central-difference step: truncation error h^2 |f'''| / 6 ~ 1e-12 and
#: rounding error eps |f| / h ~ 1e-10 for |f| <= 100 balance near h = 1e-6.
FD_STEP = 1e-6
#: worst entry, relative to max(1, max|g|): rounding error of f, eps |f| / h
#: ~ 2e-10 |f| with |f| up to ~50 for sum reductions (measured: <= 1.5e-9).
GRAD_MAX_TOL = 1e-7
#: average entry: most entries see only the rounding error (measured <= 5e-10).
GRAD_MEAN_TOL = 1e-8
#: same float64 formula summed in another order (loop references).
REF_RTOL = 1e-12

ALL_LOSSES = tuple(TL.LOSSES)


def _cloud(rng, N=12, n=3, P=3):
    y = np.repeat(np.arange(P), N // P)
    return rng.normal(size=(N, n)), y


def _signature(res: TL.LossResult):
    parts = []
    for k in sorted(res.selection):
        if k in ("s_ap", "s_an"):
            continue
        v = res.selection[k]
        parts.append((k, np.asarray(v).tobytes() if isinstance(v, np.ndarray) else v))
    return tuple(parts)


def _options(name, reduction, margin=0.3):
    opts = {"reduction": reduction}
    if "margin" in TL.LOSSES[name].options:
        opts["margin"] = margin
    if name == "margin":
        opts["beta"] = 1.2
    if name == "contrastive":
        opts["pos_margin"] = 0.4
    return opts


def _reductions(name):
    return (
        ("sum", "mean") if name == "selectively_contrastive"
        else ("sum", "mean", "max", "mean_nonzero")
    )


CASES = [(name, r) for name in ALL_LOSSES for r in _reductions(name)]


# --- forward equality with the package ------------------------------------


@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_mean_nonzero_forward_equals_package(rng, margin):
    """pytorch-metric-learning's default reducer: the core triplet losses have it too."""
    E, y = _cloud(rng, N=15, n=4, P=3)
    for grad_fn, core in ((TL.batch_hard_loss_grad, ia.batch_hard_loss),
                          (TL.all_triplet_loss_grad, ia.triplet_loss)):
        assert grad_fn(E, y, margin=margin, reduction="mean_nonzero").value == core(
            E, y, margin=margin, reduction="mean_nonzero")


@pytest.mark.parametrize("name", ["batch_hard", "all_triplet", "semi_hard", "contrastive",
                                  "margin"])
def test_mean_nonzero_is_the_sum_over_the_active_terms(rng, name):
    E, y = _cloud(rng, N=15, n=4, P=3)
    E[y == 2] += 4.0  # one class apart: the terms of its anchors are zero
    total = TL.loss_and_grad(name, E, y, **_options(name, "sum", margin=0.5))
    mean = TL.loss_and_grad(name, E, y, **_options(name, "mean", margin=0.5))
    nonzero = TL.loss_and_grad(name, E, y, **_options(name, "mean_nonzero", margin=0.5))
    # a case where the two means differ: some terms are zero, some are not
    assert 0 < total.n_active < total.n_terms
    assert nonzero.n_active == total.n_active
    assert nonzero.value == pytest.approx(total.value / total.n_active, rel=1e-14)
    assert nonzero.value > mean.value
    np.testing.assert_allclose(nonzero.grad, total.grad / total.n_active, rtol=1e-13,
                               atol=1e-15 * np.abs(total.grad).max())


def test_mean_nonzero_of_a_separated_batch_is_zero():
    E = np.array([[0.0], [0.1], [5.0], [5.1]])
    res = TL.batch_hard_loss_grad(E, [0, 0, 1, 1], margin=0.5, reduction="mean_nonzero")
    assert res.value == 0.0 and res.n_active == 0 and not res.grad.any()


@pytest.mark.parametrize("reduction", ["sum", "mean", "max"])
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_forward_equals_package(rng, reduction, margin):
    E, y = _cloud(rng, N=15, n=4, P=3)
    assert TL.batch_hard_loss_grad(
        E, y, margin=margin, reduction=reduction
    ).value == ia.batch_hard_loss(E, y, margin=margin, reduction=reduction)
    assert TL.all_triplet_loss_grad(
        E, y, margin=margin, reduction=reduction
    ).value == ia.triplet_loss(E, y, margin=margin, reduction=reduction)
    assert TL.contrastive_loss_grad(
        E, y, margin=margin + 1.0, pos_margin=0.5, reduction=reduction
    ).value == ia.contrastive_loss(
        E, y, margin=margin + 1.0, pos_margin=0.5, reduction=reduction
    )
    assert TL.margin_loss_grad(
        E, y, margin=margin, beta=1.5, reduction=reduction
    ).value == ia.margin_loss(E, y, margin=margin, beta=1.5, reduction=reduction)


@pytest.mark.parametrize("reduction", ["sum", "mean", "max"])
def test_batch_hard_matches_loops_and_soft_variant(rng, reduction):
    E, y = _cloud(rng, N=10, n=2, P=2)
    hard = TL.batch_hard_loss_grad(E, y, margin=0.2, reduction=reduction)
    assert hard.value == pytest.approx(
        ref_batch_hard(E, y, 0.2, reduction), rel=REF_RTOL
    )
    soft = TL.batch_hard_loss_grad(E, y, margin=0.2, reduction=reduction, soft=True)
    D = ref.pairwise(E)
    terms = []
    for a in range(len(y)):
        pos = [D[a, p] for p in range(len(y)) if p != a and y[p] == y[a]]
        neg = [D[a, m] for m in range(len(y)) if y[m] != y[a]]
        terms.append(ref.softplus(max(pos) - min(neg) + 0.2))
    assert soft.value == pytest.approx(ref.reduce(terms, reduction), rel=REF_RTOL)


def test_soft_margin_collapse_value_is_ln2():
    E = np.zeros((6, 3))
    res = TL.batch_hard_loss_grad(E, [0, 0, 1, 1, 2, 2], margin=0.0, soft=True)
    assert res.value == pytest.approx(math.log(2.0), rel=1e-15)


@pytest.mark.parametrize("reduction", ["sum", "mean", "max"])
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_semi_hard_matches_loops(rng, reduction, margin):
    E, y = _cloud(rng, N=12, n=3, P=3)
    res = TL.semi_hard_loss_grad(E, y, margin=margin, reduction=reduction)
    value, chosen = ref.semi_hard(E, y, margin, reduction)
    assert res.value == pytest.approx(value, rel=REF_RTOL, abs=1e-15)
    got = list(
        zip(
            res.selection["anchor"].tolist(),
            res.selection["positive"].tolist(),
            res.selection["negative"].tolist(),
            strict=True,
        )
    )
    assert got == chosen


def test_semi_hard_fallback_is_farthest_negative():
    # anchor 0's positive is far; every negative is closer -> fallback
    E = np.array([[0.0], [10.0], [1.0], [2.0]])
    res = TL.semi_hard_loss_grad(E, [0, 0, 1, 1], margin=0.1, reduction="sum")
    sel = res.selection
    k = int(np.flatnonzero((sel["anchor"] == 0) & (sel["positive"] == 1))[0])
    assert sel["fallback"][k] and sel["negative"][k] == 3
    assert res.value == pytest.approx(ref.semi_hard(E, [0, 0, 1, 1], 0.1, "sum")[0])


@pytest.mark.parametrize("positive", ["easy", "hard"])
@pytest.mark.parametrize("threshold", [None, 0.5])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_selectively_contrastive_matches_loops(rng, positive, threshold, reduction):
    E, y = _cloud(rng, N=12, n=3, P=3)
    res = TL.selectively_contrastive_loss_grad(
        E,
        y,
        lam=0.7,
        temperature=0.2,
        positive=positive,
        hard_threshold=threshold,
        reduction=reduction,
    )
    want = ref.selectively_contrastive(E, y, 0.7, 0.2, positive, threshold, reduction)
    assert res.value == pytest.approx(want, rel=REF_RTOL)


# --- gradient checks --------------------------------------------------------


@pytest.mark.parametrize("name,reduction", CASES)
def test_gradient_matches_central_differences(rng, name, reduction):
    E, y = _cloud(rng, N=12, n=3, P=3)
    opts = _options(name, reduction)
    res = TL.loss_and_grad(name, E, y, **opts)

    def f(X):
        r = TL.loss_and_grad(name, X, y, **opts)
        return r.value, _signature(r)

    G, crossed = ref.central_gradient(f, E, FD_STEP)
    assert not crossed, f"finite-difference stencil crosses a kink at {crossed[:3]}"
    assert res.n_active > 0, "the check must exercise active terms"
    err_max, err_mean = ref.grad_errors(res.grad, G)
    assert err_max <= GRAD_MAX_TOL, (err_max, err_mean)
    assert err_mean <= GRAD_MEAN_TOL, (err_max, err_mean)


def test_gradient_check_detects_a_wrong_gradient(rng):
    """The check above can fail: a gradient off by 1% is caught."""
    E, y = _cloud(rng)
    res = TL.batch_hard_loss_grad(E, y, margin=0.3, reduction="sum")
    G, _ = ref.central_gradient(
        lambda X: (TL.batch_hard_loss_grad(X, y, margin=0.3, reduction="sum").value, 0),
        E,
        FD_STEP,
    )
    assert ref.grad_errors(1.01 * res.grad, G)[0] > GRAD_MAX_TOL


@pytest.mark.parametrize("name", ["batch_hard", "all_triplet", "semi_hard"])
def test_triplet_gradients_translation_invariant(rng, name):
    """Distances do not change under translation, so the gradient sums to 0."""
    E, y = _cloud(rng)
    res = TL.loss_and_grad(name, E, y, margin=0.3)
    np.testing.assert_allclose(res.grad.sum(axis=0), 0.0, atol=1e-12)


# --- zero distances, collapse and kinks ------------------------------------


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_zero_distance_gives_finite_gradient(name):
    E = np.array(
        [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [2.0, 1.0]]
    )
    y = [0, 0, 1, 1, 2, 2]
    res = TL.loss_and_grad(name, E, y)
    assert np.all(np.isfinite(res.grad)) and math.isfinite(res.value)


@pytest.mark.parametrize(
    "name",
    [
        "batch_hard",
        "batch_hard_soft",
        "all_triplet",
        "semi_hard",
        "contrastive",
        "margin",
    ],
)
def test_collapsed_embedding_is_stationary(name):
    """All points equal: every distance is 0 and the minimum-norm subgradient is 0."""
    E = np.full((6, 3), 0.7)
    res = TL.loss_and_grad(name, E, [0, 0, 1, 1, 2, 2])
    assert np.all(res.grad == 0.0)


def test_collapsed_batch_hard_loss_equals_margin():
    E = np.zeros((6, 2))
    for r in ("mean", "max"):
        value = TL.batch_hard_loss_grad(
            E, [0, 0, 1, 1, 2, 2], margin=0.4, reduction=r
        ).value
        assert value == ia.batch_hard_loss(
            E, [0, 0, 1, 1, 2, 2], margin=0.4, reduction=r
        )
        assert value == pytest.approx(0.4, rel=1e-15)  # the mean of six 0.4s rounds


def test_hinge_at_kink_is_inactive():
    # d(a,p) = 1, d(a,m) = 1.5, margin 0.5: the term is exactly 0 -> inactive
    E = np.array([[0.0], [1.0], [1.5], [3.0]])
    res = TL.batch_hard_loss_grad(E, [0, 0, 1, 1], margin=0.5, reduction="sum")
    assert res.value >= 0.0
    a0 = int(np.flatnonzero(res.selection["anchor"] == 0)[0])
    assert not res.selection["active"][a0]


# --- selectively contrastive semantics -------------------------------------


def test_sc_hard_triplets_only_push_negatives():
    """Both anchors of class 0 have a negative more similar than their positive:
    the loss is lam (S_02 + S_12) and nothing pulls 0 and 1 together."""
    t = np.deg2rad(10.0)
    u0, u1, u2 = (
        np.array([1.0, 0.0]),
        np.array([0.0, 1.0]),
        np.array([np.cos(t), np.sin(t)]),
    )
    E = np.array([u0, u1, u2])
    res = TL.selectively_contrastive_loss_grad(E, [0, 0, 1], lam=0.7, reduction="sum")
    assert res.selection["hard"].tolist() == [True, True]
    assert res.value == pytest.approx(0.7 * (u0 @ u2 + u1 @ u2), rel=1e-15)

    def tangent(u, v):  # gradient of u.v / |u| w.r.t. u at |u| = 1
        return v - u * (u @ v)

    want = 0.7 * np.array([tangent(u0, u2), tangent(u1, u2), tangent(u2, u0 + u1)])
    np.testing.assert_allclose(res.grad, want, rtol=1e-12, atol=1e-15)
    # a small step along -grad lowers the summed anchor-negative similarity
    U2 = ref.normalise_rows(E - 1e-3 * res.grad)
    assert U2[0] @ U2[2] + U2[1] @ U2[2] < u0 @ u2 + u1 @ u2


def test_sc_easy_triplet_pulls_positive():
    """The same anchor with an easy triplet gets the NCA gradient, which pulls
    the positive in (the contrast to the hard case above)."""
    E = np.array([[1.0, 0.0], [np.cos(0.1), np.sin(0.1)], [0.0, 1.0]])
    res = TL.selectively_contrastive_loss_grad(E, [0, 0, 1], reduction="sum")
    assert not np.any(res.selection["hard"])
    U2 = ref.normalise_rows(E - 1e-3 * res.grad)
    assert U2[0] @ U2[1] > E[0] @ E[1]


def test_sc_lambda_zero_silences_hard_triplets():
    t = np.deg2rad(10.0)
    E = np.array([[1.0, 0.0], [0.0, 1.0], [np.cos(t), np.sin(t)]])
    res = TL.selectively_contrastive_loss_grad(E, [0, 0, 1], lam=0.0)
    assert res.value == 0.0 and np.all(res.grad == 0.0) and res.n_active == 0


@pytest.mark.parametrize("positive", ["easy", "hard"])
def test_sc_mining_matches_batch_hard_kernel(rng, positive):
    """On the sphere the most similar negative is the nearest one: the indices
    are those of isoapprox.kernels.losses.batch_hard_terms on the normalised rows."""
    from isoapprox.kernels import losses as KL
    from isoapprox.train.networks import l2_normalize

    E, y = _cloud(rng, N=24, n=4, P=4)
    res = TL.selectively_contrastive_loss_grad(E, y, positive=positive)
    U, _ = l2_normalize(E)
    hp, hn, pi, ni = KL.batch_hard_terms(U, y, 0.0)
    assert res.selection["negative"].tolist() == ni.tolist()
    if positive == "hard":
        assert res.selection["positive"].tolist() == pi.tolist()
    S = U @ U.T
    for a, p in zip(res.selection["anchor"], res.selection["positive"], strict=True):
        others = [S[a, q] for q in range(24) if q != a and y[q] == y[a]]
        assert S[a, p] == (max(others) if positive == "easy" else min(others))


def test_sc_is_scale_invariant(rng):
    E, y = _cloud(rng)
    a = TL.selectively_contrastive_loss_grad(E, y)
    b = TL.selectively_contrastive_loss_grad(3.0 * E, y)
    assert b.value == pytest.approx(a.value, rel=1e-12)
    np.testing.assert_allclose(3.0 * b.grad, a.grad, rtol=1e-9, atol=1e-12)


# --- errors -------------------------------------------------------------------


def test_errors():
    E = np.zeros((4, 2))
    with pytest.raises(InvalidInputError, match="`loss` must be one of"):
        TL.loss_and_grad("nope", E, [0, 0, 1, 1])
    with pytest.raises(InvalidInputError, match="takes the options"):
        TL.loss_and_grad("batch_hard", E, [0, 0, 1, 1], beta=1.0)
    with pytest.raises(
        InvalidInputError, match="`reduction` must be one of 'sum', 'mean'"
    ):
        TL.selectively_contrastive_loss_grad(E, [0, 0, 1, 1], reduction="max")
    with pytest.raises(InvalidInputError, match="`hard_threshold` must lie in"):
        TL.selectively_contrastive_loss_grad(E, [0, 0, 1, 1], hard_threshold=2.0)
    with pytest.raises(TypeError, match="`hard_threshold` must be None or a real"):
        TL.selectively_contrastive_loss_grad(E, [0, 0, 1, 1], hard_threshold="x")
    with pytest.raises(InvalidInputError, match="`temperature` must be > 0"):
        TL.selectively_contrastive_loss_grad(E, [0, 0, 1, 1], temperature=0.0)
    with pytest.raises(InvalidInputError, match="`margin` must be >= 0"):
        TL.batch_hard_loss_grad(E, [0, 0, 1, 1], margin=-1.0)
    with pytest.raises(NoTripletError):
        TL.semi_hard_loss_grad(E, [0, 1, 2, 3])
    with pytest.raises(InvalidInputError, match="`E` must contain only finite"):
        TL.contrastive_loss_grad([[0.0], [np.nan]], [0, 1])


@pytest.mark.parametrize("positive", ["easy", "hard"])
def test_sphere_mining_equals_full_matrix_argmin_with_ties(rng, positive):
    # duplicated rows force distance ties: the first index must win, as an
    # argmin/argmax over the full direct-difference distance matrix gives
    from isoapprox.losses import l2_normalize
    from isoapprox.losses.gradients import _mine_on_sphere

    base = rng.normal(size=(6, 3))
    E = base[[0, 1, 1, 2, 3, 3, 4, 5, 5, 0]]
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3])
    U, _ = l2_normalize(E)
    pi, ni = _mine_on_sphere(U, y, positive)
    N = len(y)
    D = np.array([[np.sqrt(np.sum((U[i] - U[j]) ** 2)) for j in range(N)] for i in range(N)])
    for a in range(N):
        pos = [b for b in range(N) if b != a and y[b] == y[a]]
        neg = [b for b in range(N) if y[b] != y[a]]
        if not pos:
            assert pi[a] == -1
        else:
            key = D[a, pos] if positive == "easy" else -D[a, pos]
            assert pi[a] == pos[int(np.argmin(key))]
        assert ni[a] == neg[int(np.argmin(D[a, neg]))]


# --- every scale: exact where the result fits in float64 ---------------------------


_FEW_BITS = st.integers(-64, 64).map(lambda j: j / 64.0)
#: the hinge losses: (name, options at unit scale); every length option scales with E
HOMOGENEOUS = {
    "batch_hard": {"margin": 0.5},
    "all_triplet": {"margin": 0.5},
    "semi_hard": {"margin": 0.5},
    "contrastive": {"margin": 0.75, "pos_margin": 0.25},
    "margin": {"margin": 0.25, "beta": 0.75},
}
_LENGTHS = ("margin", "pos_margin", "beta")


def test_training_losses_are_exact_for_huge_points():
    # was: 0.0 (the squared distances overflowed) instead of about 1.2e160
    E = np.array([[0.5, 0.25], [1.0, 0.0], [0.25, 0.75], [1.5, 1.0]])
    y = np.array([0, 0, 1, 1])
    for c in (1e160, 1e-160, 2.0**1000, 2.0**-1000):
        bh = TL.batch_hard_loss_grad(E * c, y, margin=0.5)
        assert bh.value == ia.batch_hard_loss(E * c, y, margin=0.5) > 0.0
        assert bh.value == pytest.approx(TL.batch_hard_loss_grad(E, y, margin=0.5 / c).value * c,
                                         rel=1e-15)
        tr = TL.all_triplet_loss_grad(E * c, y, margin=0.5)
        assert tr.value == ia.triplet_loss(E * c, y, margin=0.5) > 0.0
    unit = TL.batch_hard_loss_grad(E, y, margin=0.5)
    huge = TL.batch_hard_loss_grad(E * 1e160, y, margin=0.5 * 1e160)
    assert huge.value == pytest.approx(unit.value * 1e160, rel=1e-15)
    np.testing.assert_allclose(huge.grad, unit.grad, rtol=1e-15, atol=0.0)


@pytest.mark.property
@settings(deadline=None, max_examples=examples(40))
@given(st.lists(st.tuples(_FEW_BITS, _FEW_BITS), min_size=4, max_size=7),
       st.integers(-1060, 1015), st.sampled_from(("sum", "mean", "max")))
@example(rows=[(0.0, 0.0), (1.0, 0.0), (0.25, 0.75), (-1.0, 0.5)], k=-1060, reduction="sum")
@example(rows=[(0.0, 0.0), (1.0, 0.0), (0.25, 0.75), (-1.0, 0.5)], k=531, reduction="mean")
@example(rows=[(0.0, 0.0), (1.0, 0.0), (0.25, 0.75), (-1.0, 0.5)], k=1015, reduction="max")
def test_hinge_losses_are_equivariant_under_powers_of_two(rows, k, reduction):
    """``L(2^k E, 2^k lengths) == 2^k L(E, lengths)`` correctly rounded, same gradient.

    The same property as the core losses' (tests/test_extreme_scales.py):
    seven-bit coordinates stay exact down to ``2**-1068``, and power-of-two
    scaling commutes with every float64 operation of the kernels.
    """
    E = np.array(rows)
    y = np.arange(len(rows)) % 2
    c = 2.0**k
    assert np.array_equal(E * c / c, E)
    for name, opts in HOMOGENEOUS.items():
        scaled = {key: v * c if key in _LENGTHS else v for key, v in opts.items()}
        unit = TL.loss_and_grad(name, E, y, reduction=reduction, **opts)
        far = TL.loss_and_grad(name, E * c, y, reduction=reduction, **scaled)
        assert far.value == unit.value * c, name
        np.testing.assert_array_equal(far.grad, unit.grad, err_msg=name)


@pytest.mark.property
@settings(deadline=None, max_examples=examples(30))
@given(st.lists(st.tuples(_FEW_BITS, _FEW_BITS), min_size=4, max_size=7),
       st.integers(-30, 1020))
@example(rows=[(0.5, 0.0), (1.0, 0.25), (0.25, 0.75), (-1.0, 0.5)], k=1020)
def test_selectively_contrastive_is_invariant_under_powers_of_two(rows, k):
    """On the sphere: the value does not change, the gradient scales by ``2^-k``.

    Rows whose squared norm overflows (``k`` above about 511) are normalised
    on a copy scaled by their own power of two; rows stay above the
    normalisation's ``eps = 1e-12`` for ``k >= -30``.
    """
    E = np.array(rows)
    assume(np.all(np.any(E != 0.0, axis=1)))
    y = np.arange(len(rows)) % 2
    c = 2.0**k
    for reduction in ("sum", "mean"):
        unit = TL.selectively_contrastive_loss_grad(E, y, reduction=reduction)
        far = TL.selectively_contrastive_loss_grad(E * c, y, reduction=reduction)
        assert far.value == unit.value
        np.testing.assert_array_equal(far.grad, unit.grad / c)


def test_soft_batch_hard_is_exact_for_huge_points():
    # softplus is not homogeneous: its argument is taken in the caller's units
    E = np.array([[0.5, 0.25], [1.0, 0.0], [0.25, 0.75], [1.5, 1.0]])
    y = np.array([0, 0, 1, 1])
    for c in (2.0**600, 2.0**-600, 1e300):
        res = TL.batch_hard_loss_grad(E * c, y, margin=0.5 * c, soft=True)
        hp = ia.hardest_pairs(E * c, y)
        z = hp.hardest_positive - hp.hardest_negative + 0.5 * c
        assert res.value == pytest.approx(np.mean(np.logaddexp(0.0, z)), rel=1e-15)
        assert np.all(np.isfinite(res.grad))


def test_training_loss_beyond_float64_is_inf_with_a_warning():
    # was: inf without a word; a value that fits stays silent
    E = np.array([[-1.7e308], [1.7e308], [-1.7e308], [1.7e308]])
    y = [0, 0, 1, 1]
    with pytest.warns(RuntimeWarning, match=r"overflow encountered in batch_hard: the loss "
                                             r"exceeds the largest float64"):
        res = TL.batch_hard_loss_grad(E, y, margin=0.5)
    assert res.value == math.inf and np.all(np.isfinite(res.grad))
    with pytest.warns(RuntimeWarning, match=r"overflow encountered in contrastive"):
        assert TL.contrastive_loss_grad(E, y, reduction="max").value == math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the mean over 8 triplets, 4 of them 3.4e308, is 1.7e308: it fits
        assert TL.all_triplet_loss_grad(E, y, margin=0.5).value == 1.7e308
        # the trainer's internal functions stay silent (it checks finiteness itself)
        X = np.ascontiguousarray(E)
        assert TL.LOSSES["batch_hard"].fn(X, np.array(y), margin=0.5).value == math.inf


def test_registry_is_one_and_the_former_homes_re_export_it():
    # one registry: the training harness, its former module and the command read it
    from isoapprox import train
    from isoapprox.commands import train as cmd
    from isoapprox.ideal._pairs import PAIR_LOSSES
    from isoapprox.train import losses as former
    from isoapprox.train import networks

    assert former.LOSSES is train.LOSSES is TL.LOSSES
    assert former.loss_and_grad is train.loss_and_grad is TL.loss_and_grad
    assert train.l2_normalize is TL.l2_normalize
    assert networks.l2_normalize(np.eye(2))[0].tobytes() == TL.l2_normalize(np.eye(2))[0].tobytes()
    help_text = dict((a[0], a[4]) for a in cmd._AXES)["--loss"]
    assert help_text == ", ".join(TL.LOSSES)
    # the zero-loss sets of ideal are of the pair losses, under their own name
    assert PAIR_LOSSES == ("contrastive", "margin")
    assert set(PAIR_LOSSES) <= set(TL.LOSSES) - set(TL.TRIPLET_LOSSES)
    for name, spec in TL.LOSSES.items():
        assert spec.fn is spec[0] and spec.triplet is spec[1] and spec.options is spec[2]
        assert "reduction" in spec.options and spec.help
        assert set(spec.reductions) <= set(TL.TRIPLET_REDUCTIONS)
        assert spec.triplet == (name in TL.TRIPLET_LOSSES)
