"""The expensive batch stages: ``ideal`` (d_iso / d_haus brackets, c, statements 1-4), ``points``.

Every run here is tiny (a handful of N = 5 configurations): the ``ideal``
stage costs about 0.2 s per configuration.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from isoapprox.batch import (
    IDEAL,
    IDEAL_COLUMNS,
    BatchConfig,
    Column,
    Grid,
    IdealSettings,
    Stage,
    best_rows,
    generate,
    ideal_quantities,
    ideal_stage,
    run_batch,
    save_best,
)
from isoapprox.batch.expensive import NO_TIME_LIMIT, collapse_quantities, solve_pair
from isoapprox.batch.table import iter_cells
from isoapprox.exceptions import InvalidInputError, IsoapproxError, NoTripletError
from isoapprox.ideal import SolverOptions, resolve_budget
from isoapprox.losses import is_triplet_separated
from isoapprox.metrics import hausdorff_like, isometric_error

from . import ideal_reference as iref

# rounding allowance of a float64 comparison of two distances of size ~scale
# (the stage's certified brackets are re-scored in float64, not exact)
BRACKET_RTOL = 1e-9

GRID = Grid(n_points=(5,), dims=(2,), classes=(2,), layouts=("balanced",),
            margins=(0.5,), distributions=("gaussian", "collapsed"), repetitions=3)


def _config(**kw):
    base = dict(grid=GRID, seed=3, stages=("cheap", "ideal"), chunk_size=3)
    base.update(kw)
    return BatchConfig(**base)


def _bytes(res) -> bytes:
    return Path(res.results).read_bytes()


def _rows(res, config):
    rows = []
    for _, data in iter_cells(res.results, config.columns(), config.format):
        n = len(data["config"])
        rows.extend({k: v[i] for k, v in data.items()} for i in range(n))
    return rows


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    out = tmp_path_factory.mktemp("ideal") / "run"
    return run_batch(_config(), out, jobs=1)


# --- brackets -------------------------------------------------------------


def test_rows_have_every_column_and_no_error(baseline):
    cfg = _config()
    rows = _rows(baseline, cfg)
    assert len(rows) == GRID.n_configurations == 6
    for r in rows:
        assert r["ideal_error"] == ""
        for c in IDEAL_COLUMNS:
            assert c.name in r


def test_brackets_are_ordered_and_c_is_at_least_half(baseline):
    rows = _rows(baseline, _config())
    for r in rows:
        tol = BRACKET_RTOL * max(r["diameter"], r["margin"])
        for q in ("d_iso", "d_haus", "theta", "d_iso_collapsed_ts", "d_star"):
            assert r[f"{q}_lower"] - tol <= r[q] <= r[f"{q}_upper"] + tol, q
        assert r["c_lower"] <= r["c"] * (1 + BRACKET_RTOL)
        assert r["c"] <= r["c_upper"] * (1 + BRACKET_RTOL)
        # statement 1 at the haus-nearest point: c >= 1/2, and the brackets prove it
        assert r["holds_s2_half"] == 1.0 and r["proven_s2_half"] == 1.0
        assert r["holds_s3_lower"] == 1.0 and r["proven_s3_lower"] == 1.0
        assert r["holds_s1_pointwise"] == 1.0 and r["holds_s1_isometry"] == 1.0
        assert r["c_lower"] == pytest.approx(r["d_haus_lower"] / r["d_iso_upper"], rel=1e-15)
        # the loss column agrees with the cheap stage's
        assert r["loss"] == r["batch_hard_max"]
        # two classes: D*(2, n, alpha) = alpha and d_iso(collapsed, F_TS) = alpha
        assert r["d_iso_collapsed_ts"] == pytest.approx(0.5, rel=1e-6)
        assert r["holds_s4_equal"] == 1.0


@pytest.mark.parametrize("seed", [0, 1])
def test_lower_ends_hold_against_an_independent_search(seed):
    """No feasible embedding found independently beats a certified lower bound."""
    rng = np.random.default_rng(100 + seed)
    X, y = generate("gaussian", 5, 2, 2, "balanced", [seed], seed=9)
    E, codes = X[0], y[0]
    q = ideal_quantities(E, codes, 0.5, rng=seed)
    scale = max(q["loss"], 0.5)
    for which in ("iso", "haus"):
        best = iref.independent_search(E, codes, 0.5, which, rng, n_random=150, n_polish=3)
        lower = q[f"d_{which}_lower"]
        assert lower <= best + BRACKET_RTOL * scale, which
        # the incumbent is no worse than the independent search (small slack:
        # the independent polish is a smoothed SLSQP, not a certificate)
        assert q[f"d_{which}"] <= best * (1 + 1e-6) + BRACKET_RTOL * scale, which


def test_solve_pair_incumbents_are_feasible_and_rescored():
    X, y = generate("collapsed", 6, 2, 3, "random", [0], seed=1)
    E, codes = X[0], y[0]
    r = solve_pair(E, codes, 1.0, rng=0)
    iso, haus = r.iso, r.haus
    for res, rescore in ((iso, isometric_error(E, iso.embedding)),
                         (haus, hausdorff_like(E, haus.embedding, mode="pointwise"))):
        assert is_triplet_separated(res.embedding, codes, margin=1.0, atol=0.0)
        assert res.value == res.upper == pytest.approx(rescore, rel=1e-12)
        assert res.lower <= res.upper


def test_separated_configuration_has_zero_distances_and_undefined_c():
    E = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.1, 0.0]])
    codes = np.array([0, 0, 1, 1])
    q = ideal_quantities(E, codes, 1.0, rng=0)
    assert q["d_iso"] == q["d_haus"] == 0.0
    assert math.isnan(q["c"])
    assert q["holds_s2_half"] is None and q["proven_s2_half"] is None


def test_collapse_quantities_depend_on_class_sizes_only():
    a = collapse_quantities(np.array([0, 0, 1, 1, 1]), 2, 1.0)
    b = collapse_quantities(np.array([1, 0, 1, 0, 1]), 2, 1.0)
    assert a == b
    assert a["loss_collapsed"] == 1.0
    assert a["d_star_lower"] <= 1.0 <= a["d_star_upper"] * (1 + BRACKET_RTOL)
    # three classes of >= 2 points in the plane: D* = alpha (an equilateral triangle)
    c = collapse_quantities(np.array([0, 0, 1, 1, 2, 2]), 2, 1.0)
    assert c["p_separated"] == 3
    assert c["d_iso_collapsed_ts_lower"] <= 1.0 + BRACKET_RTOL
    assert c["d_iso_collapsed_ts_upper"] >= 1.0 - BRACKET_RTOL
    # margin 0: the collapsed embedding is itself in F_TS
    z = collapse_quantities(np.array([0, 0, 1, 1]), 2, 0.0)
    assert z["d_iso_collapsed_ts"] == 0.0 and z["p_separated"] == 0


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_row_does_not_depend_on_what_the_process_solved_before(n_classes):
    """The cached convex programs of isoapprox.ideal keep solver state between solves."""
    from isoapprox.ideal import _ccp, _relax

    X, y = generate("gaussian", 5, 2, n_classes, "balanced", [0, 1, 2], seed=5, margin=0.5)

    def row(b):
        return ideal_quantities(X[b], y[b], 0.5, rng=b)

    _relax._CACHE.clear()
    _ccp._CACHE.clear()
    first = row(0)  # compiled afresh
    row(1)
    after_1 = row(0)
    row(2)
    row(1)
    after_2 = row(0)
    assert after_1 == first and after_2 == first


def test_forget_solver_state_keeps_programs_and_drops_unknown_objects():
    from isoapprox.ideal import _relax
    from isoapprox.ideal._session import forget_solver_state

    X, y = generate("gaussian", 5, 2, 2, "balanced", [0], seed=5, margin=0.5)
    _relax._CACHE.clear()
    ideal_quantities(X[0], y[0], 0.5, rng=0)
    kept = dict(_relax._CACHE)
    assert kept
    for obj in kept.values():  # solver state, as after a solve
        obj.problem._solver_cache["CLARABEL"] = object()

    class Opaque:  # a cached object without a cvxpy problem
        pass

    _relax._CACHE[("test-opaque",)] = Opaque()
    forget_solver_state()
    assert ("test-opaque",) not in _relax._CACHE
    for key, obj in kept.items():
        assert _relax._CACHE[key] is obj and obj.problem._solver_cache == {}


# --- engine: determinism, Dask, resume -------------------------------------


def test_chunking_does_not_change_rows(tmp_path, baseline):
    res = run_batch(_config(chunk_size=1), tmp_path / "c1", jobs=1)
    assert _bytes(res) == _bytes(baseline)


def test_dask_local_cluster_matches_in_process(tmp_path, baseline):
    distributed = pytest.importorskip("distributed")
    # two threads in one process: the stage's solver lock keeps them apart
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            res = run_batch(_config(chunk_size=2), tmp_path / "dask", client=client)
    assert _bytes(res) == _bytes(baseline)
    run = json.loads((tmp_path / "dask" / "run.json").read_text())
    stage = [s for s in run["config"]["stages"] if s["name"] == "ideal"][0]
    assert dict(stage["params"]) == {"effort": "default", "max_iter": 200, "n_starts": 24,
                                     "seed": 0, "solver": "auto", "tol": 1e-4}
    assert run["config"]["seed"] == 3 and "provenance" in run


FAIL_CHUNKS: set[int] = set()


def _fail_after_ideal(X, codes, margin, prev):
    if FAIL_CHUNKS & set(prev["config"].astype(int).tolist()):
        raise RuntimeError("injected interruption")
    return {"after_ideal": np.isfinite(prev["c"])}


AFTER = Stage("test_after_ideal", "vector", _fail_after_ideal,
              (Column("after_ideal", "bool", "c is finite"),), requires=("c",))


def test_resume_after_interruption_gives_the_same_file(tmp_path):
    cfg = _config(stages=("cheap", "ideal", AFTER))
    clean = run_batch(cfg, tmp_path / "clean", jobs=1)
    FAIL_CHUNKS.add(4)  # the second chunk fails after its ideal stage ran
    try:
        with pytest.raises(RuntimeError, match="injected interruption"):
            run_batch(cfg, tmp_path / "crash", jobs=1)
    finally:
        FAIL_CHUNKS.clear()
    assert not (tmp_path / "crash" / "results.csv").exists()
    res = run_batch(cfg, tmp_path / "crash", jobs=1)
    assert res.reused == 1 and res.computed == 1
    assert _bytes(res) == _bytes(clean)


def test_settings_enter_the_fingerprint(tmp_path, baseline):
    other = ideal_stage(settings=IdealSettings(n_starts=8))
    assert other.signature() != IDEAL.signature()
    with pytest.raises(IsoapproxError, match="holds a run of another configuration"):
        run_batch(_config(stages=("cheap", other)), baseline.out, jobs=1)


def test_settings_fingerprint_is_the_fields_only():
    # a resume of a run recorded before SolverOptions must still match its fingerprint
    sig = IDEAL.signature()
    assert sig["params"] == [["effort", "default"], ["max_iter", 200], ["n_starts", 24],
                             ["seed", 0], ["solver", "auto"], ["tol", 0.0001]]
    assert ideal_stage("ideal_q", settings=IdealSettings(effort="quick", n_starts=None)
                       ).signature()["params"][1:3] == [["max_iter", 100], ["n_starts", 4]]


def test_settings_build_the_solver_options_of_their_theory_options():
    s = IdealSettings(tol=1e-3, effort="quick", n_starts=3, max_iter=7, solver="scipy", seed=4)
    th = s.theory_options()
    assert (th.tol, th.effort, th.n_starts, th.max_iter, th.solver, th.time_limit,
            th.haus_max_points) == (1e-3, "quick", 3, 7, "scipy", NO_TIME_LIMIT, None)
    for objective in ("iso", "haus"):
        opts = s.solver_options(objective)
        assert isinstance(opts, SolverOptions)
        assert opts == th.solver_options(objective)
        assert opts.objective == objective and not opts.warn_uncertified
        assert opts.budget == resolve_budget("quick", n_starts=3, max_iter=7)
        assert (opts.tol, opts.solver, opts.time_limit) == (1e-3, "scipy", NO_TIME_LIMIT)


def test_collapse_quantities_need_a_triplet():
    with pytest.raises(NoTripletError, match="at least two points for a triplet"):
        collapse_quantities(np.array([0, 1, 2]), 2, 1.0)


# --- points stage, best rows ------------------------------------------------


def test_points_stage_round_trips_and_best_rows(tmp_path):
    cfg = _config(stages=("cheap", "ideal", "points"))
    res = run_batch(cfg, tmp_path / "p", jobs=1)
    best = best_rows(res.results, cfg, "c_lower", k=2)
    assert len(best) == 2 and best[0]["c_lower"] >= best[1]["c_lower"]
    for row in best:
        cell = GRID.cells[row["cell"]]
        X, y = generate(cell.distribution, 5, 2, 2, "balanced", [row["rep"]], seed=3)
        assert np.array_equal(np.array(row["points"]), X[0])  # exact
        assert row["labels"] == y[0].tolist()
    path = save_best(tmp_path / "p", cfg, "c_lower", k=2)
    doc = json.loads(path.read_text())
    assert doc["experiment"] == "batch_best" and len(doc["records"]) == 2
    assert doc["records"][0]["points"] == best[0]["points"]


# --- errors ---------------------------------------------------------------


def test_errors(tmp_path, baseline):
    with pytest.raises(InvalidInputError, match="n_starts"):
        IdealSettings(n_starts=0)
    with pytest.raises(InvalidInputError, match="tol"):
        IdealSettings(tol=-1.0)
    with pytest.raises(InvalidInputError, match="solver"):
        IdealSettings(solver="gurobi")
    cfg = _config()
    with pytest.raises(InvalidInputError, match="numeric column"):
        best_rows(baseline.results, cfg, "d_iso_kind")
    with pytest.raises(InvalidInputError, match="numeric column"):
        best_rows(baseline.results, cfg, "no_such_column")
    with pytest.raises(InvalidInputError, match="must hold a finished run"):
        save_best(tmp_path / "empty", cfg, "c_lower")
    with pytest.raises(InvalidInputError, match="already registered"):
        from isoapprox.batch import register_stage

        register_stage(ideal_stage())


def test_cli_ideal_stage_and_save_best(tmp_path, capsys):
    from isoapprox.cli import main

    out = tmp_path / "cli"
    rc = main(["batch", "--out", str(out), "--n-points", "5", "--classes", "2",
               "--margins", "0.5", "--repetitions", "2", "--stages", "cheap", "ideal",
               "--workers", "0", "-q", "--save-best", "c", "--save-best-count", "1"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "2 rows" in text and "best 1 by c" in text
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["chunk_size"] == 32  # the default with a per-configuration stage
    doc = json.loads((out / "best_c.json").read_text())
    assert len(doc["records"]) == 1 and len(doc["records"][0]["points"]) == 5
