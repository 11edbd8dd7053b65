"""numba kernels of isoapprox, one module per concept.

Arrays in, arrays out: no validation, no I/O, no randomness (the public
wrappers in :mod:`isoapprox.geometry`, :mod:`isoapprox.losses`,
:mod:`isoapprox.metrics`, ... check their inputs and call these).

=================  ==========================================================
module             concept
=================  ==========================================================
``distances``      the distance helper ``dist``, the one tile engine, pairwise
                   distances, farthest point, diameter, isometric error,
                   pointwise and classwise distances
``losses``         triplet / pair hinge sums, batch-hard mining, separation
``meb``            minimum enclosing ball: exact planar Welzl, Frank-Wolfe dual
``planar``         convex hull, width and thickness, minimax angle search
``stats``          the collapse-statistics sweeps of :mod:`isoapprox.diagnostics`
``ideal``          the nearest-ideal solvers' rows, values and bounds
``train``          the training harness's gradients and mining
``batch``          many configurations per call (the batch engine)
=================  ==========================================================

Every kernel works in float64, computes distances by direct differences
``sqrt(sum_k (x_k - y_k)**2)`` (never the dot-product expansion) and is
compiled with :data:`JIT`: ``cache=True`` (fast start-up) and
``fastmath=False`` (max/min/NaN semantics matter everywhere, and the sums
must not be reassociated).  Index outputs use ``-1`` for "none"; ties go to
the smallest index.

numba's on-disk cache is invalidated per source file only, so a cached
kernel that calls a jitted function of *another* file can go stale when that
file changes.  The only such calls go to the primitives of ``distances``
(``dist``, the tile engine), ``meb`` and ``planar``; each module docstring
lists its own, and ``tests/test_kernels_cache.py`` runs the kernels against
brute force from a cold and from a warm cache.  After editing one of those
primitives or :data:`JIT` (neither is part of a dependent kernel's cache
key), clear ``isoapprox/kernels/__pycache__``.
"""

#: the one set of numba options of every kernel
JIT = dict(cache=True, fastmath=False, nogil=True)
