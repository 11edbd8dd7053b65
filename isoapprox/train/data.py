"""Data sets, class-disjoint splits and P x K batch sampling.

See docs/dev/train_design.md ("isoapprox.train.data: notes").
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._lazy import sklearn_load_digits
from .._typing import FloatArray, IntArray, RNGLike
from .._validation import as_labels, as_rng, check_int, check_positive
from ..exceptions import InvalidInputError, MissingDependencyError

__all__ = [
    "DATASETS",
    "DataSplit",
    "Dataset",
    "MissingDependencyError",
    "PKSampler",
    "class_disjoint_split",
    "gaussian_clusters",
    "load_digits",
    "resolve_pk",
]

logger = logging.getLogger(__name__)

DATASETS = ("digits", "gaussian")
DIGITS_TRAIN_CLASSES = (0, 1, 2, 3, 4, 5)


@dataclass(frozen=True, eq=False)
class Dataset:
    """Labelled points.

    Attributes
    ----------
    X : ndarray of shape (N, d)
        Inputs (float64).
    y : ndarray of shape (N,)
        Integer class labels.
    name : str
        Where the data came from.
    """

    X: FloatArray
    y: IntArray
    name: str

    def __len__(self) -> int:
        return int(self.X.shape[0])

    @property
    def classes(self) -> np.ndarray:
        """The distinct labels, sorted."""
        return np.unique(self.y)


@dataclass(frozen=True, eq=False)
class DataSplit:
    """A class-disjoint train/test split, standardised with training statistics.

    Attributes
    ----------
    train, test : Dataset
    mean, scale : ndarray of shape (d,)
        The standardisation ``(x - mean) / scale`` applied to both parts.
    """

    train: Dataset
    test: Dataset
    mean: FloatArray
    scale: FloatArray


def gaussian_clusters(
    n_classes: int,
    per_class: int,
    dim: int,
    *,
    separation: float = 2.0,
    noise: float = 1.0,
    rng: RNGLike = None,
) -> Dataset:
    """Gaussian class clusters in ``R^dim``.

    Parameters
    ----------
    n_classes : int
        Number of classes (labels ``0 .. n_classes - 1``).
    per_class : int
        Samples per class.
    dim : int
        Input dimension ``d``.
    separation : float, default 2.0
        Scale of the class means (see docs/dev/train_design.md).
    noise : float, default 1.0
        Within-class spread.
    rng : None, int or Generator
        Source of the means and samples.

    Returns
    -------
    Dataset
        Rows ordered class by class.

    Examples
    --------
    >>> ds = gaussian_clusters(3, 4, 5, rng=0)
    >>> ds.X.shape, ds.y.tolist()
    ((12, 5), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    """
    n_classes = check_int(n_classes, "n_classes", minimum=1)
    per_class = check_int(per_class, "per_class", minimum=1)
    dim = check_int(dim, "dim", minimum=1)
    separation = check_positive(separation, "separation")
    noise = check_positive(noise, "noise")
    gen = as_rng(rng)
    means = gen.normal(0.0, separation / np.sqrt(dim), size=(n_classes, dim))
    y = np.repeat(np.arange(n_classes, dtype=np.int64), per_class)
    X = means[y] + gen.normal(0.0, noise / np.sqrt(dim), size=(y.size, dim))
    return Dataset(X, y, f"gaussian(P={n_classes}, per_class={per_class}, d={dim})")


def load_digits() -> Dataset:
    """scikit-learn's digits (1,797 x 64, classes 0-9), raw pixel values 0-16.

    Raises
    ------
    MissingDependencyError
        If scikit-learn is not installed.
    """
    bunch = sklearn_load_digits()()
    return Dataset(
        np.asarray(bunch.data, dtype=np.float64),
        np.asarray(bunch.target, dtype=np.int64),
        "digits",
    )


def class_disjoint_split(
    data: Dataset,
    train_classes: Sequence[int],
    test_classes: Sequence[int] | None = None,
    *,
    standardize: bool = True,
) -> DataSplit:
    """Split by class: training classes and held-out test classes.

    Parameters
    ----------
    data : Dataset
    train_classes : sequence of int
        Labels used for training.
    test_classes : sequence of int, optional
        Labels held out; default: every other label.
    standardize : bool, default True
        Standardise each feature with the training split's mean and
        standard deviation (features constant on the training split keep
        scale 1).

    Returns
    -------
    DataSplit

    Raises
    ------
    InvalidInputError
        If a class is unknown, a class is in both parts, or either part is
        empty.
    """
    labels = set(np.unique(data.y).tolist())
    train = tuple(int(c) for c in train_classes)
    test = (
        tuple(sorted(labels - set(train)))
        if test_classes is None
        else tuple(int(c) for c in test_classes)
    )
    for name, part in (("train_classes", train), ("test_classes", test)):
        unknown = sorted(set(part) - labels)
        if unknown:
            raise InvalidInputError(
                f"`{name}` must be labels of the data set {sorted(labels)}; got "
                "unknown "
                f"{unknown}"
            )
        if not part:
            raise InvalidInputError(f"`{name}` must name at least one class; got none")
    both = sorted(set(train) & set(test))
    if both:
        raise InvalidInputError(
            f"`train_classes` and `test_classes` must be disjoint; got {both} in both"
        )
    tr = np.isin(data.y, train)
    te = np.isin(data.y, test)
    Xtr, Xte = data.X[tr], data.X[te]
    d = data.X.shape[1]
    mean, scale = np.zeros(d), np.ones(d)
    if standardize:
        mean = Xtr.mean(axis=0)
        sd = Xtr.std(axis=0)
        scale = np.where(sd > 0.0, sd, 1.0)
        Xtr = (Xtr - mean) / scale
        Xte = (Xte - mean) / scale
    return DataSplit(
        Dataset(
            np.ascontiguousarray(Xtr), data.y[tr], f"{data.name}[train {list(train)}]"
        ),
        Dataset(
            np.ascontiguousarray(Xte), data.y[te], f"{data.name}[test {list(test)}]"
        ),
        mean,
        scale,
    )


def resolve_pk(
    batch_size: int, class_sizes: Sequence[int], samples_per_class: int | str = "auto"
) -> tuple[int, int]:
    """Classes per batch ``P`` and samples per class ``K`` for a batch size.

    Parameters
    ----------
    batch_size : int
        ``N = P K``, at least 4 (two classes of two).
    class_sizes : sequence of int
        Number of samples of each class available.
    samples_per_class : int or "auto"
        ``K``.  ``"auto"`` takes the smallest divisor ``K`` of ``N`` with
        ``K >= min(4, N / 2)`` for which ``P = N / K`` classes of at least
        ``K`` samples exist: ``K = 4`` as in most P x K set-ups wherever the
        classes allow it, larger ``K`` when there are too few classes
        (digits: ``N = 512`` on 6 training classes gives ``P = 4, K = 128``).

    Returns
    -------
    (P, K) : tuple of int

    Raises
    ------
    InvalidInputError
        If no ``P >= 2, K >= 2`` with ``P K = N`` fits the classes.

    Examples
    --------
    >>> resolve_pk(512, [180] * 6), resolve_pk(128, [20] * 64), resolve_pk(4, [9, 9])
    ((4, 128), (32, 4), (2, 2))
    """
    N = check_int(batch_size, "batch_size", minimum=4)
    sizes = np.asarray(class_sizes, dtype=np.int64)
    if isinstance(samples_per_class, str):
        if samples_per_class != "auto":
            raise InvalidInputError(
                f"`samples_per_class` must be a positive integer or 'auto'; got "
                f"{samples_per_class!r}"
            )
        for K in range(max(2, min(4, N // 2)), N // 2 + 1):
            if N % K == 0 and int(np.sum(sizes >= K)) >= N // K:
                return N // K, K
        raise InvalidInputError(
            f"`batch_size` {N} cannot be split into P >= 2 classes of K >= 2 "
            "samples from "
            f"classes of sizes {sorted(sizes.tolist(), reverse=True)[:12]}"
            f"{' ...' if sizes.size > 12 else ''}"
        )
    K = check_int(samples_per_class, "samples_per_class", minimum=2)
    if N % K:
        raise InvalidInputError(
            f"`batch_size` must be a multiple of `samples_per_class` K = {K}; got {N}"
        )
    P = N // K
    if P < 2:
        raise InvalidInputError(
            "`batch_size` / `samples_per_class` must give P >= 2 classes per "
            "batch; got "
            f"{N} / {K} = {P}"
        )
    eligible = int(np.sum(sizes >= K))
    if eligible < P:
        raise InvalidInputError(
            f"a batch of P = {P} classes with K = {K} samples needs {P} classes of "
            "at least "
            f"{K} samples; got {eligible} (of {sizes.size} classes)"
        )
    return P, K


class PKSampler:
    """Seeded P x K batch sampler (see docs/dev/train_design.md).

    Parameters
    ----------
    y : array_like of shape (M,)
        Labels of the pool.
    P : int
        Classes per batch (``>= 1``).
    K : int
        Samples per class (``>= 1``).
    rng : None, int or Generator
        The only source of randomness.

    Raises
    ------
    InvalidInputError
        If fewer than ``P`` classes have at least ``K`` samples.

    Examples
    --------
    >>> y = np.array([0, 0, 1, 1, 1, 2, 2])
    >>> idx = PKSampler(y, 2, 2, rng=0).sample()
    >>> sorted(np.bincount(y[idx], minlength=3).tolist()), len(set(idx.tolist()))
    ([0, 2, 2], 4)
    """

    def __init__(self, y, P: int, K: int, *, rng: RNGLike = None) -> None:
        y = np.asarray(y)
        codes, classes = as_labels(y, None, "y")
        self.P = check_int(P, "P", minimum=1)
        self.K = check_int(K, "K", minimum=1)
        self.classes = classes
        members = [np.flatnonzero(codes == c) for c in range(classes.size)]
        self._members = [m for m in members if m.size >= self.K]
        self.eligible = np.array(
            [c for c, m in enumerate(members) if m.size >= self.K], dtype=np.int64
        )
        excluded = classes.size - self.eligible.size
        if self.eligible.size < self.P:
            raise InvalidInputError(
                f"P x K sampling needs P = {self.P} classes with at least K = {self.K} "
                f"samples; got {self.eligible.size} such classes (of {classes.size})"
            )
        if excluded:
            logger.warning(
                "P x K sampler: %d of %d classes have fewer than K = %d samples "
                "and are never drawn",
                excluded,
                classes.size,
                self.K,
            )
        self.rng = as_rng(rng)

    @property
    def batch_size(self) -> int:
        """``P * K``."""
        return self.P * self.K

    def sample(self) -> IntArray:
        """Indices of one batch (class-major: ``K`` of the first class, ...)."""
        chosen = self.rng.choice(self.eligible.size, size=self.P, replace=False)
        out = np.empty(self.P * self.K, dtype=np.int64)
        for k, c in enumerate(chosen):
            m = self._members[c]
            out[k * self.K : (k + 1) * self.K] = m[
                self.rng.choice(m.size, size=self.K, replace=False)
            ]
        return out
