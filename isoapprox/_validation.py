"""The one place where user input is checked.

Design notes: docs/dev/kernels_design.md, section ``isoapprox._validation``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .exceptions import InvalidInputError, NoTripletError


def _describe(value: Any) -> str:
    """Short, safe description of a received value for error messages."""
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def as_array(x: Any, name: str, shape: str, *, labels: bool = False) -> np.ndarray:
    """``x`` as an array of real numbers (``labels``: class labels) with the
    dimensions of ``shape`` (``"(N,)"``: 1-D, ``"(N, n)"``: 2-D, ``"(B, N, n)"``: 3-D).

    Raises
    ------
    TypeError
        If ``x`` is None, a string or a dict, or its dtype is not real numeric
        (``labels``: nor text; an object array's labels must be of one kind).
    InvalidInputError
        If ``x`` has another number of dimensions.
    """
    if labels:
        what, kinds = "a 1-D array of class labels", "biufUS"
        typed = "hold integer or string class labels"
    else:
        what, kinds = f"a numeric array of shape {shape}", "biuf"
        typed = f"be a real numeric array of shape {shape}"
    if x is None or isinstance(x, (str, bytes, dict)):
        raise TypeError(f"`{name}` must be {what}; got {_describe(x)}")
    arr = np.asarray(x)
    if labels and arr.dtype == object:
        arr = _from_objects(arr, name)
    if arr.dtype.kind not in kinds:
        raise TypeError(f"`{name}` must {typed}; got dtype {arr.dtype}")
    ndim = shape.count(" ") + 1
    if arr.ndim != ndim:
        raise InvalidInputError(
            f"`{name}` must be a {ndim}-D array of shape {shape}; got shape {arr.shape}"
        )
    return arr


def as_points(
    X: Any,
    name: str = "E",
    *,
    min_points: int = 1,
    n_dims: int | None = None,
) -> np.ndarray:
    """Coerce ``X`` to a finite float64 C-contiguous array of shape (N, n).

    Parameters
    ----------
    X : array_like of shape (N, n)
        Points, one per row.  Integer and float32 input is converted to
        float64 (all arithmetic in isoapprox is float64).
    name : str
        Argument name used in error messages.
    min_points : int
        Least number of rows accepted.
    n_dims : int, optional
        Required number of columns.

    Returns
    -------
    ndarray of shape (N, n), dtype float64
        A C-contiguous array; the caller's array when it already is one
        (kernels never write to it).

    Raises
    ------
    TypeError
        If ``X`` is not numeric (strings, objects, complex numbers, None).
    InvalidInputError
        If ``X`` is not 2-D, has too few rows, no columns, the wrong number
        of columns, or non-finite values.
    """
    arr = as_array(X, name, "(N, n)")
    if arr.shape[1] == 0:
        raise InvalidInputError(
            f"`{name}` must have at least one column (embedding dimension n >= 1); "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] < min_points:
        raise InvalidInputError(
            f"`{name}` must hold at least {min_points} point(s) (rows); got shape {arr.shape}"
        )
    if n_dims is not None and arr.shape[1] != n_dims:
        raise InvalidInputError(
            f"`{name}` must have {n_dims} column(s); got shape {arr.shape}"
        )
    out = np.ascontiguousarray(arr, dtype=np.float64)
    finite = np.isfinite(out)
    if not finite.all():
        bad = np.argwhere(~finite)
        i, j = (int(v) for v in bad[0])
        raise InvalidInputError(
            f"`{name}` must contain only finite values; got {len(bad)} non-finite "
            f"value(s), the first at [{i}, {j}] = {float(out[i, j])!r}"
        )
    return out


def as_labels(y: Any, n_points: int | None, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Coerce class labels to dense integer codes.

    Parameters
    ----------
    y : array_like of shape (N,)
        Class labels: integers, strings, booleans, or floats with integral
        values; an object array (a pandas column of class names) when all
        its elements are of one such kind.
    n_points : int or None
        Required length N (the number of embedded points); ``None`` accepts
        any length.
    name : str
        Argument name used in error messages.

    Returns
    -------
    codes : ndarray of shape (N,), dtype int64
        ``codes[k]`` in ``0 .. P-1`` is the index of ``y[k]`` in ``classes``.
    classes : ndarray of shape (P,)
        The distinct labels, sorted.

    Raises
    ------
    TypeError
        If ``y`` is not an array of scalar labels, or is an object array
        whose elements are of different kinds (``'cat'`` and ``3``).
    InvalidInputError
        If ``y`` is not 1-D, has the wrong length, or holds non-integral or
        non-finite floats.
    """
    arr = as_array(y, name, "(N,)", labels=True)
    if n_points is not None and arr.shape[0] != n_points:
        raise InvalidInputError(
            f"`{name}` must have one label per point, length {n_points}; got length "
            f"{arr.shape[0]}"
        )
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise InvalidInputError(f"`{name}` must contain only finite labels; got NaN or inf")
        if not np.all(arr == np.round(arr)):
            k = int(np.argmax(arr != np.round(arr)))
            raise InvalidInputError(
                f"`{name}` holds float labels that are not integral; got {name}[{k}] = {arr[k]!r}"
            )
    classes, codes = np.unique(arr, return_inverse=True)
    return np.ascontiguousarray(codes.reshape(-1), dtype=np.int64), classes


#: kinds of label an object array may hold, all elements of one kind
_OBJECT_LABEL_KINDS = ((str, "str"), (bytes, "bytes"), (bool, "bool"),
                       (numbers.Integral, "int"), (numbers.Real, "float"))


def _label_kind(value: Any) -> str | None:
    for kind, word in _OBJECT_LABEL_KINDS:
        if isinstance(value, kind):
            return word
    return None


def _from_objects(arr: np.ndarray, name: str) -> np.ndarray:
    """The labels of an object array (a pandas column of class names) as a typed array.

    Every element must be of one kind: all ``str`` (class names), all
    ``bytes``, all ``bool``, all integers, or all real numbers.
    """
    flat = arr.reshape(-1)
    if flat.size == 0:
        return flat.astype(np.int64).reshape(arr.shape)
    kinds = [_label_kind(v) for v in flat]
    if None in kinds:
        k = kinds.index(None)
        raise TypeError(
            f"`{name}` must hold integer or string class labels; got {name}[{k}] = "
            f"{_describe(flat[k])}"
        )
    first = kinds[0]
    other = next((k for k, kind in enumerate(kinds) if kind != first), None)
    if other is not None:
        raise TypeError(
            f"`{name}` must hold labels of one kind (all strings or all integers); got "
            f"{first} at {name}[0] = {flat[0]!r} and {kinds[other]} at {name}[{other}] = "
            f"{flat[other]!r}"
        )
    typed = {"str": np.str_, "bytes": np.bytes_, "bool": np.bool_, "int": None,
             "float": np.float64}[first]
    if typed is None:  # Python ints of any size: int64 when they fit, else text
        try:
            return np.array(flat.tolist(), dtype=np.int64).reshape(arr.shape)
        except OverflowError:
            typed = np.str_
    return np.array(flat.tolist(), dtype=typed).reshape(arr.shape)


def class_counts(codes: np.ndarray) -> np.ndarray:
    """Number of points in each class of dense codes ``0 .. P-1``."""
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.bincount(codes).astype(np.int64)


def require_triplets(codes: np.ndarray, name: str = "y") -> None:
    """Raise :class:`NoTripletError` unless the labels admit a triplet.

    A triplet ``(a, p, m)`` needs a class with at least two points (anchor and
    positive) and at least one point of another class (negative).
    """
    counts = class_counts(codes)
    if counts.size < 2:
        raise NoTripletError(
            f"`{name}` must contain at least two classes for a triplet (a, p, m); "
            f"got one class only ({int(counts.sum())} point(s))"
        )
    if counts.max() < 2:
        raise NoTripletError(
            f"`{name}` must contain a class with at least two points for a triplet "
            f"(a, p, m); got {counts.size} classes, all singletons"
        )


def check_same_shape(A: np.ndarray, B: np.ndarray, names: tuple[str, str]) -> None:
    """Raise unless two validated point arrays have the same shape."""
    if A.shape != B.shape:
        raise InvalidInputError(
            f"`{names[0]}` and `{names[1]}` must have the same shape (one row per point "
            f"of the same batch); got {A.shape} and {B.shape}"
        )


def _as_real(value: Any, name: str, rule: str = "",
             ok: Callable[[float], bool] | None = None) -> float:
    """``value`` as a finite float; with ``ok``, one for which it holds (else the
    error says the ``rule``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {_describe(value)}")
    try:
        out = float(value)
    except OverflowError:  # a Python int (or Fraction) beyond the float64 range
        raise InvalidInputError(
            f"`{name}` must be a finite float64 number (magnitude below 1.8e308); got "
            f"{type(value).__name__} with {len(str(abs(int(value))))} digits"
        ) from None
    if not np.isfinite(out):
        raise InvalidInputError(f"`{name}` must be finite; got {out!r}")
    if ok is not None and not ok(out):
        raise InvalidInputError(f"`{name}` must {rule}; got {out!r}")
    return out


def check_margin(margin: Any, name: str = "margin") -> float:
    """Validate a margin ``alpha >= 0`` and return it as a float."""
    return check_nonnegative(margin, name)


#: least and largest magnitude accepted by :func:`check_magnitudes`
#: (``2**-900 ~ 1.2e-271`` and ``2**900 ~ 8.5e270``): 2**120 away from the
#: subnormal range and from overflow, room enough for every product of a
#: scale with a tolerance (down to ``1e-30``) and for every derived length
#: (sums over up to ``10**30`` points) to stay a normal float64 number
MAGNITUDE_MIN = 2.0**-900
MAGNITUDE_MAX = 2.0**900


def check_magnitudes(values: dict[str, Any], *, what: str) -> None:
    """Raise unless the largest magnitude of ``values`` is 0 or in ``[2**-900, 2**900]``.

    For computations whose results (embeddings, distances, certified bounds)
    must be normal float64 numbers in the caller's units: an input beyond
    about ``1e270`` could give an answer beyond the largest float64, one
    below ``1e-271`` answers in the subnormal range, where rounding is no
    longer relative.  All arguments are measured together, since the result
    scales with all of them; the message names each one's magnitude.

    Parameters
    ----------
    values : dict
        Argument name to a validated finite array or number.
    what : str
        The computation, for the message.
    """
    mags = {name: float(np.max(np.abs(v))) if np.size(v) else 0.0 for name, v in values.items()}
    m = max(mags.values(), default=0.0)
    if m == 0.0 or MAGNITUDE_MIN <= m <= MAGNITUDE_MAX:
        return
    got = ", ".join(f"max |{name}| = {v!r}" for name, v in mags.items())
    quoted = [f"`{name}`" for name in mags]
    names = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
    raise InvalidInputError(
        f"{names} must have magnitudes between 2**-900 (~{MAGNITUDE_MIN:.3g}) and 2**900 "
        f"(~{MAGNITUDE_MAX:.3g}) (or all be 0) for {what}, whose embedding, distances and "
        f"bounds must be normal float64 numbers; got {got}; rescale them by a common factor "
        f"(the distances scale with it)"
    )


def check_nonnegative(value: Any, name: str) -> float:
    """Validate a finite real number ``>= 0``."""
    return _as_real(value, name, "be >= 0", lambda v: v >= 0.0)


def check_positive(value: Any, name: str) -> float:
    """Validate a finite real number ``> 0``."""
    return _as_real(value, name, "be > 0", lambda v: v > 0.0)


def check_probability(value: Any, name: str) -> float:
    """Validate a real number in ``[0, 1]``."""
    return _as_real(value, name, "lie in [0, 1]", lambda v: 0.0 <= v <= 1.0)


def check_quantiles(q: Any, name: str = "quantiles") -> np.ndarray:
    """Quantile level(s) in ``[0, 1]`` as a float64 array (0-D or 1-D)."""
    try:
        arr = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be real numbers in [0, 1]; got {q!r}") from None
    if arr.ndim > 1:
        raise InvalidInputError(
            f"`{name}` must be a number or a 1-D sequence; got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise InvalidInputError(f"`{name}` must lie in [0, 1]; got {arr.tolist()}")
    return arr


def check_int(value: Any, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Validate an integer within optional bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {_describe(value)}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise InvalidInputError(f"`{name}` must be >= {minimum}; got {out}")
    if maximum is not None and out > maximum:
        raise InvalidInputError(f"`{name}` must be <= {maximum}; got {out}")
    return out


def check_bool(value: Any, name: str) -> bool:
    """Validate a flag (``bool`` or ``numpy.bool_``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True or False; got {_describe(value)}")
    return bool(value)


def check_instance(value: Any, cls: type, name: str) -> Any:
    """Validate that ``value`` is a ``cls`` (an options or configuration object)."""
    if not isinstance(value, cls):
        raise TypeError(f"`{name}` must be a {cls.__name__}; got {type(value).__name__}")
    return value


def check_option(value: Any, name: str, options: Iterable[str]) -> str:
    """Validate a string option against the valid choices (listed in the error)."""
    opts = tuple(options)
    listed = ", ".join(repr(o) for o in opts)
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be one of {listed}; got {_describe(value)}")
    if value not in opts:
        raise InvalidInputError(f"`{name}` must be one of {listed}; got {value!r}")
    return value


def as_rng(rng: Any, name: str = "rng") -> np.random.Generator:
    """Normalise ``None | int | SeedSequence | Generator`` to a Generator.

    Never touches numpy's global random state.
    """
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, numbers.Integral):
        raise TypeError(
            f"`{name}` must be None, an int seed, a SeedSequence or a numpy Generator; "
            f"got {_describe(rng)}"
        )
    if int(rng) < 0:
        raise InvalidInputError(f"`{name}` must be a non-negative seed; got {int(rng)}")
    return np.random.default_rng(int(rng))
