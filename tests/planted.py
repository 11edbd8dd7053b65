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


def partial(rng, *, P=64, K=8, n=16, merged=24, spread=0.01, dtype=np.float32):
    """Classes ``0 .. merged-1`` squeezed into one tiny blob, the others healthy and apart.

    The defaults are the issue's file (a PyTorch user's batch): 512 points in
    R^16, 64 classes, 24 of them (37.5% of the points) in a blob of diameter
    ~0.1, float32; margin 0.2 gives a batch-hard loss of ~0.088 with ~13.7% of
    the triplets active, and a median pair distance of ~12.6.
    """
    y = np.repeat(np.arange(P), K)
    centres = 2.5 * rng.normal(size=(P, n))
    E = centres[y] + 0.3 * rng.normal(size=(P * K, n))
    blob = y < merged
    E[blob] = centres[0] + spread * rng.normal(size=(int(blob.sum()), n))
    return E.astype(dtype), y
