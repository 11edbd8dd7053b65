"""The adversarial search beats plain random sampling on the same budget."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoapprox.batch import (
    OBJECTIVES,
    GeneratorOptions,
    adversarial_search,
    generate,
    register_objective,
)
from isoapprox.batch.adversarial import _Looped
from isoapprox.exceptions import InvalidInputError

CODES = np.array([0, 0, 0, 1, 1])


@pytest.mark.parametrize(
    ("objective", "dim", "budget", "upper"),
    [
        # thickness of 5 planar points: random sets stay well below the
        # regular pentagon's 0.951
        ("thickness", 2, 1500, 1.0),
        # R / diam <= sqrt(n / (2 (n + 1))) (Jung), attained by a regular simplex
        ("meb_ratio", 2, 1500, math.sqrt(2 / 6)),
        ("meb_ratio", 3, 1500, math.sqrt(3 / 8)),
    ],
)
def test_search_beats_random_sampling_on_the_same_budget(objective, dim, budget, upper):
    f = OBJECTIVES[objective]
    X, y = generate("gaussian", 5, dim, 2, "balanced", np.arange(budget), seed=11)
    best_random = float(np.nanmax(f(X, y, 0.0)))
    res = adversarial_search(objective, CODES, dim=dim, budget=budget, rng=11)
    assert res.n_evaluations == budget
    assert res.values[0] > best_random
    assert res.values[0] <= upper + 1e-12
    # re-scored: the returned configuration really has the reported value
    assert res.values[0] == f(res.best[:1], CODES[None], 0.0)[0]


def test_search_is_deterministic_and_monotone():
    a = adversarial_search("loss_ratio", CODES, dim=2, budget=200, rng=3, keep=4)
    b = adversarial_search(
        "loss_ratio", CODES, dim=2, budget=200, rng=np.random.default_rng(3), keep=4
    )
    np.testing.assert_array_equal(a.best, b.best)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.best.shape == (4, 5, 2) and np.all(np.diff(a.values) <= 0)
    assert np.all(np.diff(a.history) >= 0)
    c = adversarial_search("loss_ratio", CODES, dim=2, budget=200, rng=4)
    assert not np.array_equal(a.best[0], c.best[0])


def test_search_is_no_worse_than_its_start(rng):
    init = rng.normal(size=(5, 2))
    f0 = OBJECTIVES["meb_ratio"](init[None], CODES[None], 0.0)[0]
    res = adversarial_search("meb_ratio", CODES, dim=2, budget=40, rng=0, init=init)
    assert res.values[0] >= f0


def _centre_distance(E, codes, margin):
    """Largest distance from the origin (a per-configuration objective)."""
    return float(np.max(np.linalg.norm(E, axis=1)))


def test_register_per_configuration_objective():
    register_objective("test_centre_distance", _centre_distance, vectorized=False, replace=True)
    try:
        assert isinstance(OBJECTIVES["test_centre_distance"], _Looped)
        res = adversarial_search("test_centre_distance", CODES, dim=2, budget=120, rng=1)
        start = adversarial_search(
            "test_centre_distance", CODES, dim=2, budget=1, restarts=1, rng=1
        )
        assert res.values[0] > start.values[0]
        with pytest.raises(InvalidInputError, match="already a registered objective"):
            register_objective("test_centre_distance", _centre_distance)
    finally:
        OBJECTIVES.pop("test_centre_distance", None)


def farthest_from_origin(X, codes, margin):
    """A vectorised objective importable as tests.test_batch_adversarial:farthest_from_origin."""
    return np.linalg.norm(X, axis=2).max(axis=1)


def test_objective_by_module_attribute_in_a_grid():
    opts = GeneratorOptions(
        objective="tests.test_batch_adversarial:farthest_from_origin", search_budget=40
    )
    X, _ = generate("adversarial", 5, 2, 2, "balanced", [0, 1], seed=2, options=opts)
    start, _ = generate("gaussian", 5, 2, 2, "balanced", [0, 1], seed=2)
    assert np.all(farthest_from_origin(X, None, 0.0) > farthest_from_origin(start, None, 0.0))
    with pytest.raises(InvalidInputError, match="must be callable"):
        GeneratorOptions(objective="tests.test_batch_adversarial:CODES")
    with pytest.raises(InvalidInputError, match="cannot import module"):
        GeneratorOptions(objective="no_such_module_xyz:f")


def test_non_finite_values_never_win():
    def nan_for_most(X, codes, margin):
        v = np.full(X.shape[0], np.nan)
        v[0] = -5.0
        return v

    res = adversarial_search(nan_for_most, CODES, dim=2, budget=30, rng=0)
    assert res.values[0] == -5.0


def test_errors():
    with pytest.raises(InvalidInputError, match="`objective` must be one of"):
        adversarial_search("nope", CODES, dim=2)
    with pytest.raises(TypeError, match="`objective` must be callable"):
        adversarial_search(3, CODES, dim=2)
    with pytest.raises(InvalidInputError, match=r"`init` must be a finite array of shape \(5, 2\)"):
        adversarial_search("meb_ratio", CODES, dim=2, init=np.zeros((4, 2)))
    with pytest.raises(InvalidInputError, match="`budget` must be >= 1"):
        adversarial_search("meb_ratio", CODES, dim=2, budget=0)
    with pytest.raises(InvalidInputError, match="exact only in dimension n <= 2"):
        adversarial_search("thickness", CODES, dim=3, budget=4)
    with pytest.raises(InvalidInputError, match=r"one value per configuration, shape \(1,\)"):
        adversarial_search(lambda X, c, m: np.zeros(7), CODES, dim=2, budget=3)
