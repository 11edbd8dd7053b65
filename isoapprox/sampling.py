"""The one P x K sampler: ``P`` classes, up to ``K`` members of each, seeded.

Training batches (:class:`PKSampler`, re-exported by ``isoapprox.train``), the
sub-batch the theory callbacks evaluate (``train.bounds.sub_batch``), the
subsample of diagnose's theory section (``diagnostics.theory_subsample``) and
diagnose's training-like batches (``diagnostics.report.sample_batches``) all
draw through :func:`pk_draw`; they differ only in its options.  The draws are
part of the recorded results: a given seed gives the same indices on every
machine (numpy ``Generator`` streams only).
"""

from __future__ import annotations

import logging

import numpy as np

from ._typing import ArrayLike, IntArray, RNGLike
from ._validation import as_labels, as_rng, check_bool, check_int, check_option
from .exceptions import InvalidInputError

__all__ = ["DRAWS", "SMALL", "PKSampler", "class_members", "pk_draw", "pk_sample"]

logger = logging.getLogger(__name__)

#: how the classes are drawn (see :func:`pk_sample`)
DRAWS = ("choice", "sorted_choice", "permutation")
#: what happens with classes of fewer than ``K`` members (see :func:`pk_sample`)
SMALL = ("exclude", "all")


def class_members(codes: np.ndarray) -> list[IntArray]:
    """Increasing indices of each class of dense codes ``0 .. P-1`` (checked input).

    Examples
    --------
    >>> [m.tolist() for m in class_members(np.array([1, 0, 1, 2]))]
    [[1], [0, 2], [3]]
    """
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes))[:-1] if codes.size else []
    return [m.astype(np.int64, copy=False) for m in np.split(order, bounds)]


def pk_draw(
    members: list[IntArray],
    P: int,
    K: int,
    gen: np.random.Generator,
    *,
    draw: str = "choice",
    sort: bool = False,
) -> IntArray:
    """:func:`pk_sample` without its checks, for callers that validated.

    ``members`` are the candidate classes (each non-empty, in increasing
    class order); ``P`` is at most their number for the choice draws.  A
    class of fewer than ``K`` members gives all of them.
    """
    if draw != "permutation":
        chosen = gen.choice(len(members), size=P, replace=False)
        if draw == "sorted_choice":
            chosen = np.sort(chosen)
    else:
        sizes = np.array([m.size for m in members], dtype=np.int64)
        multi = gen.permutation(np.flatnonzero(sizes >= 2))
        single = gen.permutation(np.flatnonzero(sizes == 1))
        chosen = np.sort(np.concatenate([multi, single])[:P])
    rows = [members[c][gen.choice(members[c].size, size=min(K, members[c].size),
                                  replace=False)] for c in chosen]
    out = np.concatenate(rows)
    return np.sort(out) if sort else out


def _candidates(codes: np.ndarray, n_classes: int, P: int, K: int,
                small: str) -> list[IntArray]:
    """The classes :func:`pk_draw` may draw; raises when fewer than ``P``."""
    members = class_members(codes)
    if small == "exclude":
        members = [m for m in members if m.size >= K]
    if len(members) < P:
        raise InvalidInputError(
            f"P x K sampling needs P = {P} classes with at least K = {K} "
            f"samples; got {len(members)} such classes (of {n_classes})"
        )
    return members


def pk_sample(
    y: ArrayLike,
    P: int,
    K: int,
    *,
    rng: RNGLike = None,
    draw: str = "choice",
    small: str = "exclude",
    sort: bool = False,
) -> IntArray:
    """Indices of one seeded P x K batch: ``K`` members of each of ``P`` classes.

    Parameters
    ----------
    y : array_like of shape (N,)
        Labels of the pool (integers or strings).
    P : int
        Classes drawn (``>= 1``).
    K : int
        Members drawn of each class, without replacement (``>= 1``).
    rng : None, int or Generator
        The only source of randomness.
    draw : {"choice", "sorted_choice", "permutation"}, default "choice"
        How the classes are drawn.  ``"choice"`` (training batches and the
        theory callbacks' sub-batches): ``Generator.choice`` of ``P``
        candidate classes, visited in the order drawn; ``"sorted_choice"``
        (diagnose's batches): the same classes, visited in increasing class
        order.  ``"permutation"``
        (diagnose's theory subsample): the candidates of two or more members
        shuffled, then those of one member shuffled, the first ``P`` taken
        and visited in increasing class order.  Each class's members are then
        drawn by ``Generator.choice``.
    small : {"exclude", "all"}, default "exclude"
        Classes of fewer than ``K`` members: ``"exclude"`` never draws them;
        ``"all"`` may draw them and then takes all their members.
    sort : bool, default False
        Return the indices increasing; else class-major (the members of the
        first class visited, then the next, ...).

    Returns
    -------
    ndarray of int64
        Distinct indices into ``y``: ``P K`` of them unless ``small="all"``
        drew a class of fewer than ``K`` members.

    Raises
    ------
    InvalidInputError
        If fewer than ``P`` classes may be drawn (with ``small="exclude"``,
        fewer than ``P`` classes of at least ``K`` members), or an option is
        unknown.

    Examples
    --------
    >>> y = np.array(["a", "a", "b", "b", "b", "c"])
    >>> idx = pk_sample(y, 2, 2, rng=0, sort=True)
    >>> sorted(y[idx].tolist()), len(set(idx.tolist()))
    (['a', 'a', 'b', 'b'], 4)
    >>> pk_sample(y, 3, 2, rng=0, small="all", sort=True).size
    5
    """
    codes, classes = as_labels(y, None, "y")
    P = check_int(P, "P", minimum=1)
    K = check_int(K, "K", minimum=1)
    draw = check_option(draw, "draw", DRAWS)
    small = check_option(small, "small", SMALL)
    sort = check_bool(sort, "sort")
    members = _candidates(codes, classes.size, P, K, small)
    return pk_draw(members, P, K, as_rng(rng), draw=draw, sort=sort)


class PKSampler:
    """Seeded P x K batch sampler of the training loop (see docs/dev/train_design.md).

    Repeated :func:`pk_sample` draws (``draw="choice"``, ``small="exclude"``,
    class-major) from one generator, with the pool's classes grouped once.

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

    Attributes
    ----------
    classes : ndarray
        The distinct labels, sorted.
    eligible : ndarray of int64
        Codes (positions in ``classes``) of the classes of at least ``K``
        samples, the only ones drawn.
    rng : Generator

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
        codes, classes = as_labels(np.asarray(y), None, "y")
        self.P = check_int(P, "P", minimum=1)
        self.K = check_int(K, "K", minimum=1)
        self.classes = classes
        self._members = _candidates(codes, classes.size, self.P, self.K, "exclude")
        self.eligible = np.flatnonzero(np.bincount(codes) >= self.K).astype(np.int64)
        excluded = classes.size - self.eligible.size
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
        return pk_draw(self._members, self.P, self.K, self.rng)
