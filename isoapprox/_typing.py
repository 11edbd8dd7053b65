"""Type aliases shared by the public API."""

from __future__ import annotations

from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
RNGLike = Union[None, int, np.random.Generator, np.random.SeedSequence]

__all__ = ["ArrayLike", "FloatArray", "IntArray", "RNGLike"]
