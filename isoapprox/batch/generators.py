"""Seeded random configurations for batch evaluation.

See docs/dev/batch_design.md ("isoapprox.batch.generators: notes").
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from .._typing import FloatArray, IntArray
from .._validation import check_int, check_nonnegative, check_option, check_positive
from ..exceptions import InvalidInputError
from ..kernels import batch as BK
from .adversarial import adversarial_search, get_objective

__all__ = [
    "DISTRIBUTIONS",
    "LAYOUTS",
    "GeneratorOptions",
    "cell_words",
    "class_sizes",
    "config_generator",
    "generate",
    "layout_codes",
    "seed_words",
    "validate_cell",
]

#: the point distributions of the random configurations
DISTRIBUTIONS = ("gaussian", "ball", "sphere", "clustered", "collapsed", "adversarial")
#: how labels are assigned to the points (class sizes)
LAYOUTS = ("balanced", "unbalanced", "random")

#: spawn-key word of the adversarial search stream (distinct from the point stream)
SEARCH_WORD = 0x5EA4C4


@dataclass(frozen=True)
class GeneratorOptions:
    """Parameters of the distributions, shared by every cell of a run.

    Attributes
    ----------
    spread : float, default 0.25
        Within-class standard deviation of ``clustered`` (centres have 1).
    collapse_scale : float, default 1e-3
        Standard deviation around the single centre of ``collapsed``.
    unbalanced_ratio : float, default 0.5
        Ratio ``q`` of the geometric class sizes of ``unbalanced``.
    objective : str, default "meb_ratio"
        The objective the ``adversarial`` search maximises: a name in
        :data:`isoapprox.batch.adversarial.OBJECTIVES` or
        ``"module:attribute"`` (importable by every worker).
    search_budget : int, default 512
        Objective evaluations per adversarial configuration.
    search_population : int, default 16
        Candidates per generation of the search.
    search_restarts : int, default 2
        Independent restarts of the search (the budget is shared).
    """

    spread: float = 0.25
    collapse_scale: float = 1e-3
    unbalanced_ratio: float = 0.5
    objective: str = "meb_ratio"
    search_budget: int = 512
    search_population: int = 16
    search_restarts: int = 2

    def __post_init__(self) -> None:
        check_positive(self.spread, "spread")
        check_positive(self.collapse_scale, "collapse_scale")
        q = check_positive(self.unbalanced_ratio, "unbalanced_ratio")
        if q >= 1.0:
            raise InvalidInputError(f"`unbalanced_ratio` must lie in (0, 1); got {q!r}")
        check_int(self.search_budget, "search_budget", minimum=1)
        check_int(self.search_population, "search_population", minimum=1)
        check_int(self.search_restarts, "search_restarts", minimum=1)
        get_objective(self.objective)

    def to_dict(self) -> dict:
        """Plain dict (for result files)."""
        return asdict(self)


def validate_cell(distribution: str, n_points: int, dim: int, n_classes: int,
                  layout: str) -> None:
    """Raise :class:`InvalidInputError` unless the cell's configurations have a triplet."""
    check_option(distribution, "distribution", DISTRIBUTIONS)
    check_option(layout, "layout", LAYOUTS)
    check_int(n_points, "n_points", minimum=3)
    check_int(dim, "dim", minimum=1)
    P = check_int(n_classes, "n_classes", minimum=2)
    if P > n_points - 1:
        raise InvalidInputError(
            f"`n_classes` must be at most n_points - 1 = {n_points - 1} so that some class "
            f"has two points (a triplet exists); got {P} classes for {n_points} points"
        )


def class_sizes(n_points: int, n_classes: int, layout: str, *, ratio: float = 0.5) -> IntArray:
    """Class sizes of a fixed layout (``balanced`` or ``unbalanced``).

    Examples
    --------
    >>> class_sizes(10, 3, "balanced").tolist()
    [4, 3, 3]
    >>> class_sizes(12, 3, "unbalanced").tolist()
    [6, 4, 2]
    """
    check_option(layout, "layout", ("balanced", "unbalanced"))
    N = check_int(n_points, "n_points", minimum=1)
    P = check_int(n_classes, "n_classes", minimum=1, maximum=N)
    if layout == "balanced":
        sizes = np.full(P, N // P, dtype=np.int64)
        sizes[: N % P] += 1
        return sizes
    rest = N - P
    w = ratio ** np.arange(P, dtype=np.float64)
    exact = rest * w / w.sum()
    extra = np.floor(exact).astype(np.int64)
    left = rest - int(extra.sum())
    order = sorted(range(P), key=lambda k: (-(exact[k] - extra[k]), k))
    for k in order[:left]:
        extra[k] += 1
    return 1 + extra


def layout_codes(n_points: int, n_classes: int, layout: str, *, ratio: float = 0.5) -> IntArray:
    """Labels ``(N,)`` of a fixed layout, classes in blocks (class 0 first)."""
    sizes = class_sizes(n_points, n_classes, layout, ratio=ratio)
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


def cell_words(distribution: str, n_points: int, dim: int, n_classes: int,
               layout: str) -> tuple[int, int]:
    """Two 32-bit words naming a cell's generation parameters (BLAKE2b).

    Examples
    --------
    >>> cell_words("gaussian", 5, 2, 2, "balanced") == cell_words("gaussian", 5, 2, 2, "balanced")
    True
    """
    text = f"isoapprox.batch/v1|{distribution}|{int(n_points)}|{int(dim)}|{int(n_classes)}|{layout}"
    h = hashlib.blake2b(text.encode("ascii"), digest_size=8).digest()
    return int.from_bytes(h[:4], "little"), int.from_bytes(h[4:], "little")


def config_generator(seed: int, words: tuple[int, int], rep: int,
                     *extra: int) -> np.random.Generator:
    """numpy Generator on ``Philox(SeedSequence(seed, spawn_key=(*words, rep, *extra)))``.

    With no ``extra`` this is the stream the points of configuration ``rep``
    are drawn from (:meth:`~numpy.random.Generator.random`); ``extra`` words
    give independent streams for the adversarial search and for
    per-configuration stages.
    """
    ss = np.random.SeedSequence(int(seed), spawn_key=(*words, int(rep), *extra))
    return np.random.Generator(np.random.Philox(ss))


def seed_words(seed: int) -> np.ndarray:
    """The 32-bit words ``SeedSequence`` reads from a root seed (little-endian; ``[0]`` for 0).

    Examples
    --------
    >>> seed_words(2**32 + 5).tolist()
    [5, 1]
    """
    seed = int(seed)
    words = [seed & 0xFFFFFFFF]
    seed >>= 32
    while seed:
        words.append(seed & 0xFFFFFFFF)
        seed >>= 32
    return np.array(words, dtype=np.uint64)


def _check_reps(reps: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(reps)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InvalidInputError(
            f"`reps` must be a 1-D array of repetition indices; got {arr.dtype} array of "
            f"shape {arr.shape}"
        )
    if arr.size and (arr.min() < 0 or arr.max() >= 2**32):
        raise InvalidInputError(
            f"`reps` must lie in [0, 2**32); got values in [{arr.min()}, {arr.max()}]"
        )
    return arr.astype(np.uint64)


def generate(
    distribution: str,
    n_points: int,
    dim: int,
    n_classes: int,
    layout: str,
    reps: Sequence[int] | np.ndarray,
    *,
    seed: int = 0,
    margin: float = 0.0,
    options: GeneratorOptions | None = None,
) -> tuple[FloatArray, IntArray]:
    """Configurations ``reps`` of one grid cell.

    Parameters
    ----------
    distribution : str
        One of :data:`DISTRIBUTIONS`.
    n_points, dim, n_classes : int
        ``N``, ``n`` and ``P`` (``2 <= P <= N - 1``).
    layout : str
        One of :data:`LAYOUTS`.
    reps : sequence of int
        Repetition indices (each in ``[0, 2**32)``), in any order.
    seed : int, default 0
        Root seed.
    margin : float, default 0.0
        Only used by ``adversarial`` (objectives may depend on the margin).
    options : GeneratorOptions, optional
        Distribution parameters.

    Returns
    -------
    X : ndarray of shape (B, N, n)
    codes : ndarray of shape (B, N), int64
        Labels ``0 .. P-1``.

    Examples
    --------
    >>> X, y = generate("gaussian", 5, 2, 2, "balanced", [0, 1], seed=7)
    >>> X.shape, y.tolist()
    ((2, 5, 2), [[0, 0, 0, 1, 1], [0, 0, 0, 1, 1]])
    >>> X1, _ = generate("gaussian", 5, 2, 2, "balanced", [1], seed=7)
    >>> bool((X1[0] == X[1]).all())
    True
    """
    validate_cell(distribution, n_points, dim, n_classes, layout)
    options = options or GeneratorOptions()
    margin = check_nonnegative(margin, "margin")
    r = _check_reps(reps)
    seed = check_int(seed, "seed", minimum=0)
    w0, w1 = cell_words(distribution, n_points, dim, n_classes, layout)
    B = r.shape[0]
    X = np.empty((B, n_points, dim))
    codes = np.empty((B, n_points), dtype=np.int64)
    random_layout = layout == "random"
    base = (np.zeros(n_points, dtype=np.int64) if random_layout
            else layout_codes(n_points, n_classes, layout, ratio=options.unbalanced_ratio))
    code = BK.DISTRIBUTION_CODES[distribution if distribution != "adversarial" else "gaussian"]
    n_u = BK.uniform_count(code, n_points, dim, n_classes, random_layout)
    U = np.empty((B, n_u))
    spawn = np.empty((B, 3), dtype=np.uint64)
    spawn[:, 0] = w0
    spawn[:, 1] = w1
    spawn[:, 2] = r
    BK.philox_uniforms(seed_words(seed), spawn, U)  # config_generator(seed, (w0, w1), r[b])
    BK.generate_kernel(U, code, n_classes, random_layout, base, float(options.spread),
                       float(options.collapse_scale), X, codes)
    if distribution == "adversarial":
        objective = get_objective(options.objective)
        for b in range(B):
            rng = config_generator(seed, (w0, w1), int(r[b]), SEARCH_WORD)
            res = adversarial_search(
                objective, codes[b], dim=dim, margin=margin, budget=options.search_budget,
                population=options.search_population, restarts=options.search_restarts,
                rng=rng, init=X[b],
            )
            X[b] = res.best[0]
    return X, codes
