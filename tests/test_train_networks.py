"""Networks and optimisers: analytic backward passes against central differences,
initialisation, determinism, optimisers on a quadratic."""

from __future__ import annotations

import numpy as np
import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.train import MLP, SGD, Adam, EmbeddingTable, make_optimizer
from isoapprox.train.networks import l2_normalize, l2_normalize_backward

from . import train_reference as ref

#: central-difference step (see test_train_losses.py for the balance).
FD_STEP = 1e-6
#: worst entry, relative to max(1, max|g|): rounding eps |f| / h with
#: |f| = |sum R * out| <= ~30 here (measured below 1e-9).
GRAD_MAX_TOL = 1e-7
#: average entry.
GRAD_MEAN_TOL = 1e-8


def _check(res_grad, G, crossed):
    assert not crossed, f"stencil crosses a ReLU kink at {crossed[:3]}"
    err_max, err_mean = ref.grad_errors(res_grad, G)
    assert err_max <= GRAD_MAX_TOL and err_mean <= GRAD_MEAN_TOL, (err_max, err_mean)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("sizes", [(5, 7, 3), (4, 6, 5, 2), (3, 2)])
def test_mlp_parameter_and_input_gradients(rng, activation, normalize, sizes):
    net = MLP(sizes, activation=activation, normalize=normalize, rng=rng)
    X = rng.normal(size=(6, sizes[0]))
    R = rng.normal(size=(6, sizes[-1]))
    out, cache = net.forward(X)
    grads = net.backward(R, cache)

    def pattern(c):
        return tuple((z > 0).tobytes() for z in c["pre"])

    for k, p in enumerate(net.params):

        def f(P, k=k):
            old = net.params[k].copy()
            net.params[k][...] = P
            o, c = net.forward(X)
            net.params[k][...] = old
            return float(np.sum(R * o)), pattern(c)

        G, crossed = ref.central_gradient(f, p, FD_STEP)
        _check(grads[k], G, crossed)

    def fx(Xp):
        o, c = net.forward(Xp)
        return float(np.sum(R * o)), pattern(c)

    G, crossed = ref.central_gradient(fx, X, FD_STEP)
    _check(net.input_gradient(R, cache), G, crossed)


@pytest.mark.parametrize("normalize", [False, True])
def test_table_gradient_with_repeated_rows(rng, normalize):
    t = EmbeddingTable(5, 3, normalize=normalize, rng=rng)
    idx = np.array([0, 3, 3, 1])
    R = rng.normal(size=(4, 3))
    out, cache = t.forward(idx)
    (g,) = t.backward(R, cache)

    def f(W):
        old = t.params[0].copy()
        t.params[0][...] = W
        o = t(idx)
        t.params[0][...] = old
        return float(np.sum(R * o)), 0

    G, crossed = ref.central_gradient(f, t.params[0], FD_STEP)
    _check(g, G, crossed)
    assert np.all(g[[2, 4]] == 0.0)


def test_l2_normalize_backward_including_clamped_rows(rng):
    X = rng.normal(size=(4, 3))
    X[2] = 1e-14  # below eps = 1e-12: the clamped (linear) branch
    R = rng.normal(size=(4, 3))
    U, r = l2_normalize(X)
    assert np.allclose(np.linalg.norm(U[[0, 1, 3]], axis=1), 1.0, rtol=1e-15, atol=0)

    def f(Xp):
        Up, rp = l2_normalize(Xp)
        return float(np.sum(R * Up)), tuple(rp <= 1e-12)

    # a step of 1e-18 keeps the clamped row below eps; the others are smooth
    G, crossed = ref.central_gradient(f, X, 1e-18)
    assert not crossed
    dX = l2_normalize_backward(R, U, r)
    np.testing.assert_allclose(dX[2], R[2] / 1e-12, rtol=1e-12)
    # the clamped branch is linear: differences of 1e-18 are exact to rounding
    np.testing.assert_allclose(G[2], dX[2], rtol=1e-6)
    G2, _ = ref.central_gradient(f, X, FD_STEP)
    _check(dX[[0, 1, 3]], G2[[0, 1, 3]], [])


def test_zero_row_normalises_to_zero():
    U, _ = l2_normalize(np.zeros((2, 3)))
    assert np.all(U == 0.0)


def test_init_is_deterministic_and_scaled():
    a, b = MLP((64, 64, 32), rng=3), MLP((64, 64, 32), rng=3)
    assert all(np.array_equal(p, q) for p, q in zip(a.params, b.params, strict=True))
    big = MLP((400, 300, 8), activation="relu", rng=0)
    # He init for ReLU layers: std sqrt(2 / fan_in); LeCun for the last layer
    assert np.std(big.params[0]) == pytest.approx(np.sqrt(2 / 400), rel=0.02)
    assert np.std(big.params[2]) == pytest.approx(np.sqrt(1 / 300), rel=0.05)
    assert a.n_params == 64 * 64 + 64 + 64 * 32 + 32


def test_network_errors():
    with pytest.raises(InvalidInputError, match="`sizes` must list"):
        MLP((4,))
    with pytest.raises(InvalidInputError, match="`activation` must be one of"):
        MLP((4, 2), activation="sigmoid")
    with pytest.raises(InvalidInputError, match="`sizes` must be >= 1"):
        MLP((4, 0, 2))
    with pytest.raises(InvalidInputError, match="`init_scale` must be > 0"):
        EmbeddingTable(3, 2, init_scale=0.0)


# --- optimisers ---------------------------------------------------------------


def _quadratic(rng, n=6, cond=10.0):
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = Q @ np.diag(np.linspace(1.0, cond, n)) @ Q.T
    return A, rng.normal(size=n)


def _run(opt_factory, A, x0, steps):
    p = [x0.copy()]
    opt = opt_factory(p)
    for _ in range(steps):
        opt.step([A @ p[0]])
    return p[0]


def test_sgd_matches_hand_computation():
    p = [np.array([1.0, -2.0])]
    opt = SGD(p, lr=0.1, momentum=0.5, weight_decay=0.01)
    g = np.array([0.3, 0.4])
    opt.step([g])
    v1 = g + 0.01 * np.array([1.0, -2.0])
    x1 = np.array([1.0, -2.0]) - 0.1 * v1
    np.testing.assert_allclose(p[0], x1, rtol=1e-15)
    opt.step([g])
    v2 = 0.5 * v1 + g + 0.01 * x1
    np.testing.assert_allclose(p[0], x1 - 0.1 * v2, rtol=1e-15)


def test_sgd_momentum_converges_faster_on_quadratic(rng):
    A, x0 = _quadratic(rng)
    plain = _run(lambda p: SGD(p, lr=0.1), A, x0, 60)
    heavy = _run(lambda p: SGD(p, lr=0.1, momentum=0.6), A, x0, 60)
    nest = _run(lambda p: SGD(p, lr=0.1, momentum=0.6, nesterov=True), A, x0, 60)
    assert np.linalg.norm(heavy) < np.linalg.norm(plain) < np.linalg.norm(x0)
    assert np.linalg.norm(nest) < 1e-3 * np.linalg.norm(x0)


def test_sgd_diverges_beyond_stability_limit(rng):
    A, x0 = _quadratic(rng, cond=10.0)
    assert np.linalg.norm(_run(lambda p: SGD(p, lr=0.25), A, x0, 50)) > np.linalg.norm(
        x0
    )


def test_adam_converges_and_first_step_is_lr_sign(rng):
    A, x0 = _quadratic(rng)
    p = [x0.copy()]
    opt = Adam(p, lr=0.01)
    g = A @ x0
    opt.step([g])
    np.testing.assert_allclose(p[0], x0 - 0.01 * g / (np.abs(g) + 1e-8), rtol=1e-12)
    final = _run(lambda p: Adam(p, lr=0.05), A, x0, 2000)
    assert np.linalg.norm(final) < 1e-3 * np.linalg.norm(x0)


@pytest.mark.parametrize("cls", [SGD, Adam])
def test_weight_decay_alone_shrinks_geometrically(cls):
    p = [np.array([2.0, -4.0])]
    opt = cls(p, lr=0.1, weight_decay=0.5)
    for _ in range(3):
        opt.step([np.zeros(2)])
    np.testing.assert_allclose(p[0], np.array([2.0, -4.0]) * 0.95**3, rtol=1e-12)


def test_optimizer_errors():
    p = [np.zeros(2)]
    with pytest.raises(InvalidInputError, match="`lr` must be > 0"):
        SGD(p, lr=0.0)
    with pytest.raises(InvalidInputError, match="`momentum` must be < 1"):
        SGD(p, lr=0.1, momentum=1.0)
    with pytest.raises(InvalidInputError, match="`betas` must lie in"):
        Adam(p, betas=(0.9, 1.0))
    with pytest.raises(InvalidInputError, match="one array per parameter"):
        SGD(p, lr=0.1).step([])
    with pytest.raises(InvalidInputError, match="must have the shape"):
        Adam(p).step([np.zeros(3)])
    with pytest.raises(InvalidInputError, match="`optimizer` must be one of"):
        make_optimizer("rmsprop", p, lr=0.1)
