"""The offline builder of the D* table (tools/build_dstar_table.py): its optimiser's pieces."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from isoapprox.packing import d_star
from isoapprox.packing.constructions import certified_ratio, construct, construction_names

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def builder():
    spec = importlib.util.spec_from_file_location("build_dstar_table",
                                                  ROOT / "tools" / "build_dstar_table.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _best_layout(P, n):
    """The construction with the least certified ratio for (P, n)."""
    layouts = [X for X in (construct(m, P, n) for m in construction_names(P, n)) if X is not None]
    return min(layouts, key=certified_ratio)


def _best_construction(P, n):
    return certified_ratio(_best_layout(P, n))


def test_start_counts_are_fixed_and_bounded(builder):
    counts = {(P, n): builder.n_multistart(P, n) for P in range(3, 65) for n in range(2, 17)}
    assert all(builder.MS_MIN <= k <= builder.MS_MAX for k in counts.values())
    assert counts[12, 3] == builder.MS_MAX and counts[64, 8] == builder.MS_MIN
    # more points or more dimensions never get more starts
    assert all(counts[P, n] >= counts[P + 1, n] for P in range(3, 64) for n in range(2, 17))
    assert all(counts[P, n] >= counts[P, n + 1] for P in range(3, 65) for n in range(2, 16))


def test_polish_rounds_never_return_a_worse_layout(builder):
    rng = np.random.default_rng(5)
    for P, n in [(9, 2), (12, 3), (16, 4)]:
        good = _best_layout(P, n)
        for X in (rng.normal(size=(P, n)), good + 0.05 * rng.normal(size=good.shape)):
            before = certified_ratio(builder._normalise(X))
            for win in (builder.MS_WIN, builder.WIN):
                r, Y = builder._polish_rounds(X, win)
                assert Y.shape == (P, n) and np.all(np.isfinite(Y))
                assert r == certified_ratio(Y) <= before
        assert r < before  # a perturbed construction is not a local optimum


#: the layout stage's ratios at (12, 3) and (24, 3), the best so far that the
#: multistart stage is given in the build (the table's layouts before it)
LAYOUT_STAGE = {(12, 3): 1.9256504, (24, 3): 2.6881609}


@pytest.mark.parametrize("P, n, known", [
    (12, 3, 1.9021131),
    pytest.param(24, 3, 2.645, marks=pytest.mark.slow),  # 40 starts of 24 points, 5-12 s
])
def test_multistart_beats_the_layout_stage_and_is_certified(builder, P, n, known):
    """(12, 3): the regular icosahedron (ratio 2 sin(2 pi/5) = 1.90211...), which
    the multistart stage finds from random starts (from every nearby best so
    far, under the Haswell and SkylakeX kernels); (24, 3): 2.627 to 2.637 was
    measured for nearby best-so-far values and kernels (the local optima
    differ); asserted: below 2.645, 1.6 % below the layout stage's."""
    best = LAYOUT_STAGE[P, n]
    assert best < _best_construction(P, n)
    r, X32 = builder.multistart(P, n, best, max(d_star(P, n).lower, 1.0))
    assert X32.dtype == np.float32 and X32.shape == (P, n)
    # the ratio it reports is that of the float32 coordinates it returns
    assert r == certified_ratio(X32.astype(np.float64))
    assert d_star(P, n).lower <= r < best
    assert r <= known * (1 + 1e-4)
    if P == 12:
        assert r == pytest.approx(2.0 * math.sin(2.0 * math.pi / 5.0), rel=1e-5)


def _npz(tmp_path, **arrays):
    np.savez(tmp_path / "dstar_layouts.npz", **arrays)
    return tmp_path


def test_keep_better_takes_only_shipped_layouts_that_beat_the_build(builder, tmp_path):
    square = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.float32)  # ratio sqrt 2
    line = np.array([[0, 0], [1, 0], [2, 0], [3, 0]], dtype=np.float32)  # ratio 3
    line3 = np.c_[line, np.zeros(4, np.float32)]
    shipped = builder.read_shipped(_npz(tmp_path, P4_n2=square, P4_n3=line3))
    assert set(shipped) == {(4, 2), (4, 3)}
    result = {"own": {(4, 2): (2.0, "grid"), (4, 3): (1.0, "simplex")}, "layouts": {}}
    taken = builder.keep_better(result, shipped)
    assert taken == [(4, 2)]
    assert result["own"] == {(4, 2): (certified_ratio(square.astype(float)), "layout"),
                             (4, 3): (1.0, "simplex")}
    assert set(result["layouts"]) == {(4, 2)}
    # on its own output it changes nothing
    assert builder.keep_better(result, shipped) == []
    assert builder.read_shipped(tmp_path / "none") == {}


@pytest.mark.parametrize("arrays, match", [
    ({"P4n2": np.zeros((4, 2))}, "not named 'P<P>_n<n>'"),
    ({"P4_n2": np.zeros((3, 2))}, "should be 4 x 2 finite coordinates, got shape \\(3, 2\\)"),
    ({"P2_n1": np.array([[0.0], [np.nan]])}, "should be 2 x 1 finite"),
])
def test_read_shipped_refuses_a_corrupt_table(builder, tmp_path, arrays, match):
    with pytest.raises(ValueError, match=match):
        builder.read_shipped(_npz(tmp_path, **arrays))
