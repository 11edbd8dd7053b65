"""Planted embeddings with a known collapse state (shared by the diagnosis tests)."""

from __future__ import annotations

import numpy as np


def healthy(rng, *, P=6, K=8, n=16):
    """Well-separated classes with a real within-class spread."""
    y = np.repeat(np.arange(P), K)
    centres = 6.0 * rng.normal(size=(P, n))
    return centres[y] + rng.normal(size=(P * K, n)), y


def collapsed(rng, *, P=6, K=8, n=16, spread=1e-6):
    """Every point at one location (plus a tiny spread)."""
    y = np.repeat(np.arange(P), K)
    c = rng.normal(size=n)
    return c + spread * rng.normal(size=(P * K, n)), y


def class_collapsed(rng, *, P=6, K=8, n=16, spread=1e-6):
    """Each class at one point, classes apart."""
    y = np.repeat(np.arange(P), K)
    centres = 6.0 * rng.normal(size=(P, n))
    return centres[y] + spread * rng.normal(size=(P * K, n)), y


def dimensional(rng, *, P=16, K=6, n=64):
    """Classes spread and apart, but everything in a 2-D plane of R^n."""
    y = np.repeat(np.arange(P), K)
    B = np.linalg.qr(rng.normal(size=(n, 2)))[0].T  # 2 orthonormal rows
    centres = 6.0 * rng.normal(size=(P, 2))
    return (centres[y] + 0.5 * rng.normal(size=(P * K, 2))) @ B, y


CASES = {
    "healthy": healthy,
    "collapsed": collapsed,
    "class_collapsed": class_collapsed,
    "dimensional": dimensional,
}
