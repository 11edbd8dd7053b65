"""Type aliases shared by the public API."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
RNGLike = int | np.random.Generator | np.random.SeedSequence | None

__all__ = ["ArrayLike", "FloatArray", "IntArray", "RNGLike"]
