"""Configuration generators: seeded, reproducible alone, independent of chunking."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isoapprox.batch import (
    GeneratorOptions,
    class_sizes,
    config_generator,
    generate,
    layout_codes,
)
from isoapprox.batch.generators import DISTRIBUTIONS, LAYOUTS, cell_words
from isoapprox.exceptions import InvalidInputError

SAMPLERS = [d for d in DISTRIBUTIONS if d != "adversarial"]


@pytest.mark.parametrize("dist", SAMPLERS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_any_configuration_regenerates_alone(dist, layout):
    X, y = generate(dist, 7, 3, 3, layout, np.arange(10), seed=42)
    # the same repetitions in another order, split differently
    Xa, ya = generate(dist, 7, 3, 3, layout, [9, 4, 7], seed=42)
    Xb, yb = generate(dist, 7, 3, 3, layout, [0, 1, 2, 3, 5, 6, 8], seed=42)
    np.testing.assert_array_equal(Xa, X[[9, 4, 7]])
    np.testing.assert_array_equal(ya, y[[9, 4, 7]])
    np.testing.assert_array_equal(Xb, X[[0, 1, 2, 3, 5, 6, 8]])
    np.testing.assert_array_equal(yb, y[[0, 1, 2, 3, 5, 6, 8]])
    for r in (0, 6):
        X1, y1 = generate(dist, 7, 3, 3, layout, [r], seed=42)
        np.testing.assert_array_equal(X1[0], X[r])


def test_seed_and_cell_change_the_draws():
    X, _ = generate("gaussian", 6, 2, 2, "balanced", [0, 1], seed=1)
    X2, _ = generate("gaussian", 6, 2, 2, "balanced", [0, 1], seed=2)
    X3, _ = generate("ball", 6, 2, 2, "balanced", [0, 1], seed=1)
    assert not np.array_equal(X, X2) and not np.array_equal(X[0], X3[0])
    assert not np.array_equal(X[0], X[1])


def test_gaussian_is_numpy_philox_box_muller():
    # configuration r of a cell is reproducible with numpy alone
    seed, r = 1234, 17
    words = cell_words("gaussian", 5, 2, 2, "balanced")
    u = config_generator(seed, words, r).random(10)
    rad = np.sqrt(-2.0 * np.log(1.0 - u[0::2]))
    z = np.empty(10)
    z[0::2] = rad * np.cos(2 * np.pi * u[1::2])
    z[1::2] = rad * np.sin(2 * np.pi * u[1::2])
    X, y = generate("gaussian", 5, 2, 2, "balanced", [r], seed=seed)
    np.testing.assert_allclose(X[0], z.reshape(5, 2), rtol=4e-16, atol=0)
    assert y[0].tolist() == [0, 0, 0, 1, 1]


def test_distribution_shapes():
    opts = GeneratorOptions(spread=0.01, collapse_scale=1e-6)
    reps = np.arange(200)
    S, _ = generate("sphere", 5, 3, 2, "balanced", reps, seed=0)
    np.testing.assert_allclose(np.linalg.norm(S, axis=2), 1.0, rtol=1e-15)
    B, _ = generate("ball", 5, 3, 2, "balanced", reps, seed=0)
    norms = np.linalg.norm(B, axis=2)
    assert norms.max() < 1.0 and norms.min() >= 0.0
    # uniform in the 3-ball: P(|x| <= 1/2) = 1/8
    assert abs(np.mean(norms <= 0.5) - 0.125) < 0.03
    C, _ = generate("collapsed", 5, 3, 2, "balanced", reps, seed=0, options=opts)
    spread = np.ptp(C, axis=1).max()
    assert spread < 1e-4 and np.abs(C).max() > 1e-2  # tiny cloud away from the origin
    K, y = generate("clustered", 6, 2, 3, "balanced", reps, seed=0, options=opts)
    for b in range(5):
        for c in range(3):
            pts = K[b, y[b] == c]
            assert np.ptp(pts, axis=0).max() < 0.1


def test_margin_does_not_change_sampled_points():
    X0, _ = generate("clustered", 6, 2, 3, "random", [3], seed=5, margin=0.0)
    X1, _ = generate("clustered", 6, 2, 3, "random", [3], seed=5, margin=2.0)
    np.testing.assert_array_equal(X0, X1)


def test_fixed_layouts():
    assert class_sizes(10, 3, "balanced").tolist() == [4, 3, 3]
    assert class_sizes(12, 4, "balanced").tolist() == [3, 3, 3, 3]
    assert class_sizes(12, 3, "unbalanced").tolist() == [6, 4, 2]
    assert class_sizes(5, 4, "unbalanced").tolist() == [2, 1, 1, 1]
    # 36 extra points in proportion 8:4:2:1 = 19.2, 9.6, 4.8, 2.4; largest remainders
    assert class_sizes(40, 4, "unbalanced", ratio=0.5).tolist() == [20, 11, 6, 3]
    assert layout_codes(5, 2, "balanced").tolist() == [0, 0, 0, 1, 1]


@given(N=st.integers(3, 40), data=st.data())
def test_layouts_always_have_every_class_and_a_triplet(N, data):
    P = data.draw(st.integers(2, N - 1))
    for layout in LAYOUTS:
        _, y = generate("gaussian", N, 1, P, layout, np.arange(6), seed=N * 100 + P)
        for row in y:
            counts = np.bincount(row, minlength=P)
            assert len(counts) == P and counts.min() >= 1 and counts.max() >= 2
        if layout != "random":
            sizes = class_sizes(N, P, layout)
            assert sizes.sum() == N and sizes.min() >= 1
            assert np.all(np.diff(sizes) <= 0)


def test_random_layout_varies_and_is_shuffled():
    _, y = generate("gaussian", 9, 2, 3, "random", np.arange(50), seed=0)
    assert len({tuple(r) for r in y}) > 40
    assert not all(r[0] == 0 for r in y)


def test_adversarial_is_deterministic_and_better_than_its_start():
    opts = GeneratorOptions(search_budget=96)
    X, y = generate("adversarial", 5, 2, 2, "balanced", [0, 1, 2], seed=3, options=opts)
    X2, _ = generate("adversarial", 5, 2, 2, "balanced", [2], seed=3, options=opts)
    np.testing.assert_array_equal(X2[0], X[2])
    from isoapprox.batch.adversarial import OBJECTIVES

    start, _ = generate("gaussian", 5, 2, 2, "balanced", [0, 1, 2], seed=3)
    f = OBJECTIVES["meb_ratio"]
    assert np.all(f(X, y, 0.0) >= f(start, y, 0.0))


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        (("gaussian", 5, 2, 5, "balanced", [0]), {}, InvalidInputError, "at most n_points - 1 = 4"),
        (("gaussian", 5, 2, 1, "balanced", [0]), {}, InvalidInputError, "`n_classes` must be >= 2"),
        (
            ("uniform", 5, 2, 2, "balanced", [0]),
            {},
            InvalidInputError,
            "`distribution` must be one of",
        ),
        (("gaussian", 5, 2, 2, "sorted", [0]), {}, InvalidInputError, "`layout` must be one of"),
        (("gaussian", 5, 0, 2, "balanced", [0]), {}, InvalidInputError, "`dim` must be >= 1"),
        (
            ("gaussian", 5, 2, 2, "balanced", [-1]),
            {},
            InvalidInputError,
            r"`reps` must lie in \[0, 2\*\*32\)",
        ),
        (
            ("gaussian", 5, 2, 2, "balanced", [0.5]),
            {},
            InvalidInputError,
            "`reps` must be a 1-D array",
        ),
        (
            ("gaussian", 5, 2, 2, "balanced", [0]),
            {"seed": -3},
            InvalidInputError,
            "`seed` must be >= 0",
        ),
        (
            ("gaussian", 5, 2, 2, "balanced", [0]),
            {"margin": -1.0},
            InvalidInputError,
            "`margin` must be >= 0",
        ),
    ],
)
def test_generate_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        generate(*args, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"spread": 0.0}, "`spread` must be > 0"),
        ({"collapse_scale": -1.0}, "`collapse_scale` must be > 0"),
        ({"unbalanced_ratio": 1.0}, r"`unbalanced_ratio` must lie in \(0, 1\)"),
        ({"objective": "nope"}, "`objective` must be one of .* or module:attribute"),
        ({"search_budget": 0}, "`search_budget` must be >= 1"),
    ],
)
def test_options_errors(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        GeneratorOptions(**kwargs)
