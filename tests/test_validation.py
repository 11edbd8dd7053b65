"""The validation layer: one test per error branch, each matching its message."""

from __future__ import annotations

import numpy as np
import pytest

from isoapprox import _validation as V
from isoapprox.exceptions import InvalidInputError, NoTripletError


def test_as_points_accepts_and_converts():
    out = V.as_points([[1, 2], [3, 4]])
    assert out.dtype == np.float64 and out.flags.c_contiguous
    src = np.asfortranarray(np.ones((3, 2)))
    assert V.as_points(src).flags.c_contiguous
    same = np.ones((2, 2))
    assert V.as_points(same) is same  # no copy when nothing to convert; never written
    assert V.as_points(np.ones((2, 2), dtype=np.float32)).dtype == np.float64
    assert V.as_points(np.array([[True, False]])).dtype == np.float64


@pytest.mark.parametrize(
    "value,exc,pattern",
    [
        (None, TypeError, r"`E` must be a numeric array of shape \(N, n\); got None"),
        ("x", TypeError, r"`E` must be a numeric array"),
        (np.array([["a"]]), TypeError, r"real numeric array of shape \(N, n\); got dtype <U1"),
        (np.array([[1j]]), TypeError, r"got dtype complex128"),
        (np.array([[object()]]), TypeError, r"got dtype object"),
        (np.zeros(3), InvalidInputError, r"2-D array of shape \(N, n\); got shape \(3,\)"),
        (np.zeros((2, 2, 2)), InvalidInputError, r"got shape \(2, 2, 2\)"),
        (np.zeros((3, 0)), InvalidInputError, r"at least one column"),
        (np.array([[np.nan, 0.0]]), InvalidInputError, r"first at \[0, 0\] = nan"),
        (np.array([[0.0, -np.inf]]), InvalidInputError, r"first at \[0, 1\] = -inf"),
    ],
)
def test_as_points_errors(value, exc, pattern):
    with pytest.raises(exc, match=pattern):
        V.as_points(value)


@pytest.mark.parametrize(
    "value,exc,pattern",
    [
        (None, TypeError, r"`X` must be a numeric array of shape \(B, N, n\); got None"),
        ({"a": 1}, TypeError, r"`X` must be a numeric array of shape \(B, N, n\); got \{"),
        (np.array([[["a"]]]), TypeError,
         r"`X` must be a real numeric array of shape \(B, N, n\); got dtype <U1"),
        (np.zeros((2, 2)), InvalidInputError,
         r"`X` must be a 3-D array of shape \(B, N, n\); got shape \(2, 2\)"),
    ],
)
def test_as_array_errors_name_the_shape(value, exc, pattern):
    with pytest.raises(exc, match=pattern):
        V.as_array(value, "X", "(B, N, n)")


def test_as_array_keeps_the_values():
    x = np.arange(8).reshape(2, 2, 2)
    assert V.as_array(x, "X", "(B, N, n)") is x  # no conversion: the caller converts
    labels = V.as_array(np.array(["a", "b"], dtype=object), "y", "(N,)", labels=True)
    assert labels.dtype.kind == "U" and labels.tolist() == ["a", "b"]


def test_as_points_row_and_column_requirements():
    with pytest.raises(
        InvalidInputError, match=r"`Z` must hold at least 3 point\(s\) \(rows\); got shape \(2, 1\)"
    ):
        V.as_points(np.zeros((2, 1)), "Z", min_points=3)
    with pytest.raises(InvalidInputError, match=r"`Z` must have 4 column\(s\); got shape \(2, 1\)"):
        V.as_points(np.zeros((2, 1)), "Z", n_dims=4)


def test_as_labels():
    codes, classes = V.as_labels(["b", "a", "b"], 3)
    assert codes.tolist() == [1, 0, 1] and classes.tolist() == ["a", "b"]
    codes, _ = V.as_labels(np.array([7.0, 7.0, -2.0]), 3)
    assert codes.tolist() == [1, 1, 0]
    with pytest.raises(TypeError, match=r"`y` must be a 1-D array of class labels; got None"):
        V.as_labels(None, 3)
    with pytest.raises(TypeError, match=r"integer or string class labels; got dtype complex128"):
        V.as_labels(np.array([1j, 2j]), 2)
    with pytest.raises(
        InvalidInputError, match=r"`y` must be a 1-D array of shape \(N,\); got shape \(2, 2\)"
    ):
        V.as_labels(np.zeros((2, 2)), 4)
    with pytest.raises(InvalidInputError, match=r"finite labels; got NaN or inf"):
        V.as_labels([1.0, np.nan], 2)


def test_require_triplets():
    V.require_triplets(np.array([0, 0, 1]))
    with pytest.raises(NoTripletError, match="one class only"):
        V.require_triplets(np.array([0, 0, 0]))
    with pytest.raises(NoTripletError, match="all singletons"):
        V.require_triplets(np.array([0, 1, 2]))
    assert issubclass(NoTripletError, InvalidInputError)


def test_scalar_checks():
    assert V.check_margin(0) == 0.0
    assert V.check_positive(2, "t") == 2.0
    assert V.check_probability(0.5, "p") == 0.5
    assert V.check_int(np.int64(3), "k", minimum=1) == 3
    with pytest.raises(TypeError, match=r"`margin` must be a real number; got True"):
        V.check_margin(True)
    with pytest.raises(InvalidInputError, match=r"`margin` must be finite; got inf"):
        V.check_margin(float("inf"))
    with pytest.raises(InvalidInputError, match=r"`t` must be > 0; got 0.0"):
        V.check_positive(0.0, "t")
    with pytest.raises(InvalidInputError, match=r"`t` must be >= 0; got -1.0"):
        V.check_nonnegative(-1, "t")
    with pytest.raises(InvalidInputError, match=r"`p` must lie in \[0, 1\]; got 1.5"):
        V.check_probability(1.5, "p")
    with pytest.raises(TypeError, match=r"`k` must be an integer; got 2.5"):
        V.check_int(2.5, "k")
    with pytest.raises(InvalidInputError, match=r"`k` must be >= 1; got 0"):
        V.check_int(0, "k", minimum=1)
    with pytest.raises(InvalidInputError, match=r"`k` must be <= 5; got 6"):
        V.check_int(6, "k", maximum=5)


def test_check_option():
    assert V.check_option("a", "opt", ("a", "b")) == "a"
    with pytest.raises(InvalidInputError, match=r"`opt` must be one of 'a', 'b'; got 'c'"):
        V.check_option("c", "opt", ("a", "b"))
    with pytest.raises(TypeError, match=r"`opt` must be one of 'a', 'b'; got 3 \(int\)"):
        V.check_option(3, "opt", ("a", "b"))


def test_as_rng_never_touches_global_state():
    state = np.random.get_state()[1].copy()  # noqa: NPY002 (checks the legacy global state is untouched)
    g = V.as_rng(5)
    assert isinstance(g, np.random.Generator)
    assert V.as_rng(5).random() == np.random.default_rng(5).random()
    same = np.random.default_rng(1)
    assert isinstance(V.as_rng(same), np.random.Generator)
    V.as_rng(None).random()
    V.as_rng(np.random.SeedSequence(3)).random()
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002 (checks the legacy global state is untouched)
    with pytest.raises(TypeError, match=r"`rng` must be None, an int seed"):
        V.as_rng(1.5)
    with pytest.raises(InvalidInputError, match=r"`rng` must be a non-negative seed; got -1"):
        V.as_rng(-1)


def test_check_same_shape():
    with pytest.raises(InvalidInputError, match=r"`A` and `B` must have the same shape"):
        V.check_same_shape(np.zeros((2, 2)), np.zeros((2, 3)), ("A", "B"))


def test_as_labels_any_length():
    """``n_points=None`` takes labels of any length, and still checks their shape."""
    codes, classes = V.as_labels(["b", "a", "b"], None)
    assert codes.tolist() == [1, 0, 1] and classes.tolist() == ["a", "b"]
    with pytest.raises(InvalidInputError, match=r"1-D array of shape \(N,\); got shape \(2, 2\)"):
        V.as_labels([[0, 1], [1, 0]], None)
    with pytest.raises(InvalidInputError, match="one label per point, length 4; got length 3"):
        V.as_labels([0, 1, 1], 4)


@pytest.mark.parametrize("value", [10**400, -(10**309), 2**1024])
def test_reals_beyond_float64_are_refused_naming_the_argument(value):
    """A Python int beyond the float64 range: one clear error, no OverflowError."""
    with pytest.raises(InvalidInputError, match=r"`margin` must be a finite float64 number"):
        V.check_margin(value)
    with pytest.raises(InvalidInputError, match=r"`tol` must be a finite float64 number"):
        V.check_positive(value, "tol")
    import isoapprox as ia

    with pytest.raises(InvalidInputError, match=r"`margin` must be a finite"):
        ia.batch_hard_loss([[0.0], [1.0], [3.0]], [0, 0, 1], margin=value)


def test_check_instance_returns_the_value_or_names_the_argument_and_both_types():
    class Options:
        pass

    class Narrower(Options):
        pass

    opts = Narrower()
    assert V.check_instance(opts, Options, "options") is opts
    with pytest.raises(TypeError, match=r"^`options` must be a Options; got dict$"):
        V.check_instance({"effort": "quick"}, Options, "options")
    with pytest.raises(TypeError, match=r"^`config` must be a Narrower; got Options$"):
        V.check_instance(Options(), Narrower, "config")
