"""The reductions of the triplet losses, ``mean_nonzero`` above all, against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import isoapprox as ia
from isoapprox.exceptions import InvalidInputError
from isoapprox.losses import TRIPLET_REDUCTIONS

from . import reference as ref
from .conftest import KERNEL_ATOL, KERNEL_RTOL, labelled_cloud, scale_of


def brute(terms, reduction):
    """The reductions by their definitions (pytorch-metric-learning's
    ``AvgNonZeroReducer`` for ``mean_nonzero``: 0 when no term is positive)."""
    if reduction == "mean_nonzero":
        pos = [t for t in terms if t > 0.0]
        return math.fsum(pos) / len(pos) if pos else 0.0
    return ref.reduce(terms, reduction)


def assert_close(actual, expected, *inputs):
    np.testing.assert_allclose(
        actual, expected, rtol=KERNEL_RTOL, atol=KERNEL_ATOL * scale_of(*inputs)
    )


@pytest.mark.parametrize("n_points,dim,n_classes", [(3, 1, 2), (7, 2, 3), (12, 3, 4), (40, 4, 10)])
@pytest.mark.parametrize("margin", [0.0, 0.3, 2.0])
@pytest.mark.parametrize("reduction", TRIPLET_REDUCTIONS)
def test_reductions_match_bruteforce(rng, n_points, dim, n_classes, margin, reduction):
    E, y = labelled_cloud(rng, n_points, dim, n_classes)
    assert_close(ia.batch_hard_loss(E, y, margin=margin, reduction=reduction),
                 brute(ref.batch_hard_terms(E, y, margin), reduction), E)
    assert_close(ia.triplet_loss(E, y, margin=margin, reduction=reduction),
                 brute(ref.triplet_terms(E, y, margin), reduction), E)


@pytest.mark.parametrize("sizes", [(40, 25, 25), (60, 3)])
@pytest.mark.parametrize("margin", [0.3, 1.0])
def test_mean_nonzero_with_many_positives(rng, sizes, margin):
    # more than 16 positives: the kernel's sorted search and its active count
    y = np.repeat(np.arange(len(sizes)), sizes)
    E = rng.normal(size=(len(y), 3)) + 0.5 * rng.normal(size=(len(sizes), 3))[y]
    assert_close(ia.triplet_loss(E, y, margin=margin, reduction="mean_nonzero"),
                 brute(ref.triplet_terms(E, y, margin), "mean_nonzero"), E)


def test_mean_nonzero_known_answers():
    y = np.repeat(np.arange(4), 4)
    collapsed = np.zeros((16, 3))
    for f in (ia.batch_hard_loss, ia.triplet_loss):
        # every term is the margin at collapse: all reductions but sum give it
        # (a sum of 192 terms 0.2: rounding)
        assert f(collapsed, y, margin=0.2, reduction="mean_nonzero") == pytest.approx(0.2, 1e-14)
        assert f(collapsed, y, margin=0.2, reduction="mean") == pytest.approx(0.2, 1e-14)
        # no positive term: 0 as pytorch-metric-learning's reducer, not 0 / 0
        assert f(collapsed, y, margin=0.0, reduction="mean_nonzero") == 0.0
        separated = 10.0 * np.eye(4)[y]
        assert f(separated, y, margin=1.0, reduction="mean_nonzero") == 0.0
    # one anchor of four active: mean 1/4 of mean_nonzero
    E, y2 = [[0.0], [1.0], [3.0], [5.0]], [0, 0, 1, 1]
    assert ia.batch_hard_loss(E, y2, margin=0.5, reduction="mean_nonzero") == 0.5
    assert ia.batch_hard_loss(E, y2, margin=0.5, reduction="mean") == 0.125


def test_mean_nonzero_exact_at_extreme_scales():
    # the power-of-two rescaling keeps every reduction exact, tiny and huge
    y = np.repeat(np.arange(3), 3)
    E = np.random.default_rng(3).normal(size=(9, 2))
    for r in TRIPLET_REDUCTIONS:
        for f in (ia.batch_hard_loss, ia.triplet_loss):
            base = f(E, y, margin=0.5, reduction=r)
            for c in (2.0**-600, 2.0**600):
                assert f(c * E, y, margin=c * 0.5, reduction=r) == c * base


def test_unknown_reduction_lists_the_valid_ones():
    with pytest.raises(InvalidInputError, match="mean_nonzero"):
        ia.batch_hard_loss([[0.0], [1.0], [2.0]], [0, 0, 1], reduction="avg")
    with pytest.raises(InvalidInputError, match="mean_nonzero"):
        ia.triplet_loss([[0.0], [1.0], [2.0]], [0, 0, 1], reduction="avg")


@st.composite
def clouds(draw):
    n_points = draw(st.integers(3, 14))
    dim = draw(st.integers(1, 4))
    n_classes = draw(st.integers(2, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    E, y = labelled_cloud(np.random.default_rng(seed), n_points, dim, n_classes,
                          scale=draw(st.floats(0.01, 100.0)))
    return E, y


@pytest.mark.property
@given(clouds(), st.floats(0.0, 2.0), st.sampled_from(TRIPLET_REDUCTIONS))
def test_reductions_property(data, margin, reduction):
    E, y = data
    for f, terms in ((ia.batch_hard_loss, ref.batch_hard_terms),
                     (ia.triplet_loss, ref.triplet_terms)):
        got = f(E, y, margin=margin, reduction=reduction)
        assert_close(got, brute(terms(E, y, margin), reduction), E, [margin])
    # orderings: mean <= mean_nonzero <= max, for both losses
    for f in (ia.batch_hard_loss, ia.triplet_loss):
        mean, nz, mx = (f(E, y, margin=margin, reduction=r)
                        for r in ("mean", "mean_nonzero", "max"))
        tol = 1e-12 * scale_of(E, [margin])
        assert mean <= nz + tol and nz <= mx + tol
