"""The offline builder of the D* table (tools/build_dstar_table.py): its optimiser's pieces."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from isoapprox.packing import LAYOUT_INT_STEP, d_star
from isoapprox.packing._dstar import load_layout
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


def _start_counts(count, least, most):
    """``count(P, n)`` over the table, each within ``[least, most]``; more points
    or more dimensions never get more starts."""
    counts = {(P, n): count(P, n) for P in range(3, 65) for n in range(2, 17)}
    assert all(least <= k <= most for k in counts.values())
    assert all(counts[P, n] >= counts[P + 1, n] for P in range(3, 64) for n in range(2, 17))
    assert all(counts[P, n] >= counts[P, n + 1] for P in range(3, 65) for n in range(2, 16))
    return counts


def test_start_counts_are_fixed_and_bounded(builder):
    counts = _start_counts(builder.n_multistart, builder.MS_MIN, builder.MS_MAX)
    assert counts[12, 3] == builder.MS_MAX and counts[64, 8] == builder.MS_MIN


def test_penalty_stage_counts_and_domain(builder):
    """The penalty stage runs at every entry of n >= 4 but the simplices (alone
    where the multistart stage stops, P n above its size), with a fixed count of
    starts that never grows with P or n."""
    keys = [(P, n) for P in range(2, 65) for n in range(1, 17)]
    for P, n in keys:
        pen = builder.should_penalty(P, n, False)
        assert pen == (n >= 4 and P > n + 1)
        if P * n > builder.MS_MAX_VARS and P > n + 1 and n >= 2:
            assert pen and not builder.should_multistart(P, n, False)
        assert not builder.should_penalty(P, n, True)  # --quick: constructions only
    counts = _start_counts(builder.n_penalty, builder.PEN_MIN, builder.PEN_MAX)
    assert counts[64, 16] == builder.PEN_MIN and counts[20, 11] == builder.PEN_MAX


def test_descend_never_returns_a_worse_layout(builder):
    rng = np.random.default_rng(8)
    for P, n in [(14, 3), (12, 6)]:
        for k, X in enumerate((rng.normal(size=(P, n)), _best_layout(P, n))):
            before = certified_ratio(builder._normalise(X))
            ref = _best_construction(P, n)
            r, Y = builder.descend(X, max(d_star(P, n).lower, 1.0), ref=ref)
            assert Y.shape == (P, n) and np.all(np.isfinite(Y))
            assert r == certified_ratio(Y) <= before
            assert r >= d_star(P, n).lower
            if k == 0:  # a random start comes down to near the constructions
                assert r < min(0.5 * before, 1.1 * ref)


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


def test_polish_keeps_equal_distance_layouts(builder):
    """Every distance equal (two points, a unit triangle, a regular tetrahedron):
    the largest pair is always in the active set, and the answer is a
    unit-ratio layout (it failed on an empty set of largest pairs)."""
    pair = np.array([[0.0, 0.0], [2.0, 0.0]])
    tri = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])
    tetra = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
    for X in (pair, tri, tetra):
        Y = builder._polish(X)
        assert Y.shape == X.shape and np.all(np.isfinite(Y))
        assert certified_ratio(builder._normalise(Y)) == pytest.approx(1.0, abs=1e-6)


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


def test_penalty_stage_beats_the_constructions_and_is_certified(builder):
    """(25, 11), P n = 275 beyond the multistart stage: the best construction
    has ratio sqrt 2; the penalty stage's six starts reached 1.2697 in the
    build of the shipped table (asserted: below 1.34, 5 % under sqrt 2)."""
    P, n = 25, 11
    assert builder.should_penalty(P, n, False) and builder.n_penalty(P, n) == builder.PEN_MAX
    ref = _best_construction(P, n)
    assert ref == pytest.approx(math.sqrt(2.0), rel=1e-9)
    r, A = builder.penalty_stage(P, n)
    # stored as int16 multiples of LAYOUT_INT_STEP (P n > MS_MAX_VARS), and the
    # ratio it reports is that of the stored numbers
    assert A.dtype == np.int16 and A.shape == (P, n)
    assert r == certified_ratio(load_layout(A))
    assert d_star(P, n).lower <= r < 0.95 * ref


def test_store_layout_by_size(builder):
    """float32 up to MS_MAX_VARS coordinates; beyond, the nearest multiples of
    LAYOUT_INT_STEP as int16 (within half a step of the normalised layout),
    and float32 again when they would not fit."""
    rng = np.random.default_rng(3)
    small = rng.normal(size=(20, 10))  # P n = 200
    A = builder.store_layout(small)
    assert A.dtype == np.float32
    assert np.array_equal(A, builder._normalise(small).astype(np.float32))
    big = rng.normal(size=(21, 10))
    A = builder.store_layout(big)
    assert A.dtype == np.int16
    err = np.abs(load_layout(A) - builder._normalise(big))
    assert err.max() <= 0.5 * LAYOUT_INT_STEP * (1 + 1e-9)
    r, B = builder._stored_ratio(big)
    assert np.array_equal(A, B) and r == certified_ratio(load_layout(A))
    line = np.c_[np.arange(60.0), np.zeros((60, 4))]  # coordinates up to 29.5: no int16
    assert builder.store_layout(line).dtype == np.float32


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
    ({"P4_n2": np.zeros((4, 2))}, "should be float32 or int16 coordinates, got dtype float64"),
])
def test_read_shipped_refuses_a_corrupt_table(builder, tmp_path, arrays, match):
    with pytest.raises(ValueError, match=match):
        builder.read_shipped(_npz(tmp_path, **arrays))


def test_read_table_and_take_better(builder, tmp_path):
    """The table on disk read back as a build's result (what --penalty-only
    starts from); a stage's layout is taken only where it is better by more
    than KEEP_RTOL."""
    square = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.float32)
    doc = {"build_seconds": 12.5, "entries": [
        {"P": 4, "n": 2, "ratio": float(np.sqrt(2.0)), "construction": "layout"},
        {"P": 5, "n": 2, "ratio": 1.7, "construction": "polygon"}]}
    (tmp_path / "dstar_table.json").write_text(json.dumps(doc), encoding="utf-8")
    _npz(tmp_path, P4_n2=square)
    result = builder.read_table(tmp_path)
    assert result["own"] == {(4, 2): (float(np.sqrt(2.0)), "layout"), (5, 2): (1.7, "polygon")}
    assert set(result["layouts"]) == {(4, 2)} and result["seconds"] == 12.5
    pentagon = np.array([[np.cos(t), np.sin(t)] for t in 2 * np.pi * np.arange(5) / 5])
    r5, stored = builder._stored_ratio(pentagon)
    found = {(5, 2): (r5, stored), (4, 2): (np.sqrt(2.0) * (1 - 1e-9), square)}
    assert builder.take_better(result, found) == [(5, 2)]  # 1e-9 is within KEEP_RTOL
    assert result["own"][5, 2] == (r5, "layout")
    assert result["layouts"][5, 2] is stored and stored.dtype == np.float32
    # an entry said to have a layout that the npz lacks: refused, naming it
    doc["entries"].append({"P": 6, "n": 2, "ratio": 2.0, "construction": "layout"})
    (tmp_path / "dstar_table.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"no layout for the entries \[\(6, 2\)\]"):
        builder.read_table(tmp_path)


@pytest.mark.parametrize("argv, message", [
    (["--jobs", "0"], "--jobs must be a positive integer, got 0"),
    (["--max-vars", "200"], "--max-vars needs --penalty-only and a positive integer, got 200"),
    (["--penalty-only", "--max-vars", "0"], "a positive integer, got 0"),
    (["--penalty-only", "--quick"], "--penalty-only works on the table on disk"),
    (["--penalty-only", "--fresh"], "--penalty-only works on the table on disk"),
])
def test_command_line_refuses_bad_combinations(builder, capsys, argv, message):
    """A user's mistake: one line on stderr, exit 2, before anything is read or written."""
    with pytest.raises(SystemExit) as exc:
        builder.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
