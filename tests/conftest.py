"""Shared fixtures, tolerances and hypothesis profiles.

Tolerances live here, each with its reason.  Every comparison passes both a
relative and an absolute tolerance (``atol`` scaled by the input's size).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# --- tolerances -----------------------------------------------------------
#: kernel vs brute-force reference: the same float64 maths in another order.
KERNEL_RTOL = 1e-12
KERNEL_ATOL = 1e-12  # times max(1, max |input|)
#: invariance under random rigid motions: rounding of Q @ X (a few ulps of
#: every coordinate, amplified by at most sqrt(n)).
MOTION_RTOL = 1e-9
MOTION_ATOL = 1e-9  # times max(1, max |input|)
#: a certified bracket may be violated by solver/rounding noise at this level
#: only (relative to the scale of the instance).
BRACKET_RTOL = 1e-9

# --- hypothesis profiles --------------------------------------------------
# Chosen by the environment variable HYPOTHESIS_PROFILE:
#   ci        (the default, what CI runs): a fixed number of examples, drawn
#             the same way on every run and machine (derandomize; no example
#             database), so that a failure reproduces anywhere;
#   dev       random draws, the example database on: exploring;
#   thorough  THOROUGH_FACTOR times the default run's examples, random draws:
#             HYPOTHESIS_PROFILE=thorough pytest -m property
# deadline=None: the first call of a numba kernel compiles (seconds), and
# timing deadlines give false failures on a loaded 2-core CI machine.
#: examples of a property test that sets no count of its own, in the default run
DEFAULT_EXAMPLES = 60
#: how many times more examples the thorough profile runs
THOROUGH_FACTOR = 10
_QUIET = {"deadline": None,
          "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("ci", max_examples=DEFAULT_EXAMPLES, derandomize=True,
                          database=None, **_QUIET)
settings.register_profile("dev", max_examples=DEFAULT_EXAMPLES, **_QUIET)
settings.register_profile("thorough", max_examples=THOROUGH_FACTOR * DEFAULT_EXAMPLES,
                          **_QUIET)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """``max_examples`` for a property test that runs ``n`` examples by default.

    An expensive property test bounds its examples with
    ``@settings(max_examples=examples(n))``; the thorough profile then runs
    ``THOROUGH_FACTOR * n`` of them (an explicit count would override the profile).
    """
    return THOROUGH_FACTOR * n if PROFILE == "thorough" else n


def pytest_collection_modifyitems(config, items):
    """Mark every hypothesis test ``property`` (``-m property`` selects them all)."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A fresh generator per test, seeded from the test's name (stable, independent)."""
    import hashlib

    seed = int(hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:8], 16)
    return np.random.default_rng(seed)


def scale_of(*arrays) -> float:
    """``max(1, max |a|)`` over the arrays: the scale of absolute tolerances."""
    m = 1.0
    for a in arrays:
        a = np.asarray(a, dtype=float)
        if a.size:
            m = max(m, float(np.max(np.abs(a))))
    return m


def random_orthogonal(
    rng: np.random.Generator, n: int, *, reflect: bool | None = None
) -> np.ndarray:
    """Haar-random orthogonal matrix (QR with sign fix); optionally force det sign."""
    A = rng.normal(size=(n, n))
    Q, R = np.linalg.qr(A)
    Q = Q * np.sign(np.diag(R))
    if reflect is not None:
        want = -1.0 if reflect else 1.0
        if np.sign(np.linalg.det(Q)) != want:
            Q[:, 0] = -Q[:, 0]
    return Q


def labelled_cloud(
    rng: np.random.Generator, n_points: int, dim: int, n_classes: int, *, scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Random points with labels admitting a triplet (class 0 has >= 2 points)."""
    y = rng.integers(0, n_classes, size=n_points)
    y[0] = 0
    y[1] = 0
    y[2] = 1 if n_classes > 1 else 0
    return scale * rng.normal(size=(n_points, dim)), y
