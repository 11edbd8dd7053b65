"""The public surface: names, import cost, global state."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import isoapprox
from isoapprox.exceptions import IsoapproxError

SPEC_NAMES = [
    "pairwise_distances", "diameter", "triplet_loss", "batch_hard_loss",
    "is_triplet_separated", "isometric_error", "hausdorff_like",
]


def test_all_names_resolve_and_spec_names_exist():
    for name in isoapprox.__all__:
        assert hasattr(isoapprox, name), name
    for name in SPEC_NAMES:
        assert name in isoapprox.__all__


def test_exceptions_derive_from_base():
    for name in isoapprox.__all__:
        obj = getattr(isoapprox, name)
        if isinstance(obj, type) and issubclass(obj, Warning):
            assert issubclass(obj, UserWarning), name
        elif isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, IsoapproxError), name


def test_import_does_not_load_matplotlib_or_cvxpy():
    code = "import sys, isoapprox; print('matplotlib' in sys.modules, 'cvxpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_scalars_are_python_floats(rng):
    E = rng.normal(size=(6, 2))
    y = [0, 0, 1, 1, 2, 2]
    for value in (
        isoapprox.diameter(E),
        isoapprox.batch_hard_loss(E, y),
        isoapprox.triplet_loss(E, y),
        isoapprox.isometric_error(E, E[::-1]),
        isoapprox.hausdorff_like(E, E[::-1]),
    ):
        assert type(value) is float


def test_public_functions_leave_global_random_state_alone(rng):
    state = np.random.get_state()[1].copy()  # noqa: NPY002 (checks the legacy global state is untouched)
    E = rng.normal(size=(8, 3))
    isoapprox.min_enclosing_ball(E)
    isoapprox.separation_report(E, [0, 0, 1, 1, 2, 2, 3, 3])
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002 (checks the legacy global state is untouched)
