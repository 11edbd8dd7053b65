"""Losses with gradients: forward equality with isoapprox.losses, gradient checks,
subgradients at zero distance, the selectively contrastive and semi-hard rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

import isoapprox as ia
from isoapprox.exceptions import InvalidInputError, NoTripletError
from isoapprox.train import losses as TL

from . import train_reference as ref
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
    if "margin" in TL.LOSSES[name][2]:
        opts["margin"] = margin
    if name == "margin":
        opts["beta"] = 1.2
    if name == "contrastive":
        opts["pos_margin"] = 0.4
    return opts


def _reductions(name):
    return (
        ("sum", "mean") if name == "selectively_contrastive" else ("sum", "mean", "max")
    )


CASES = [(name, r) for name in ALL_LOSSES for r in _reductions(name)]


# --- forward equality with the package ------------------------------------


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
    from isoapprox.train.losses import _mine_on_sphere
    from isoapprox.train.networks import l2_normalize

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
