"""numba kernels of isoapprox, one module per concept.

Design notes: docs/performance.md, section ``isoapprox.kernels``.
"""

#: the one set of numba options of every kernel
JIT = dict(cache=True, fastmath=False, nogil=True)
