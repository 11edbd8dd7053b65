"""The batch engine: determinism across chunkings/executors, resumability, stages."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from isoapprox.batch import (
    BatchConfig,
    Column,
    GeneratorOptions,
    Grid,
    Stage,
    cheap_quantities,
    evaluate_chunk,
    generate,
    get_stage,
    plan,
    register_stage,
    run_batch,
    summarise,
)
from isoapprox.batch.stages import STAGES, resolve_stages
from isoapprox.batch.table import iter_cells
from isoapprox.exceptions import InvalidInputError, IsoapproxError, SolverError

ROOT = Path(__file__).resolve().parent.parent

# --- test stages (module level: worker processes import them by name) -------

FAIL_AT: set[tuple[int, int]] = set()  # (cell, rep) that make the stage fail


def _flaky(X, codes, margin, prev):
    here = set(
        zip(prev["cell"].astype(int).tolist(), prev["rep"].astype(int).tolist(), strict=True)
    )
    if FAIL_AT & here:
        raise RuntimeError("injected failure")
    return {"flaky_ok": np.ones(len(X), dtype=bool)}


FLAKY = Stage("test_flaky", "vector", _flaky, (Column("flaky_ok", "bool", "always true"),))


def _solverish(E, codes, margin, prev, rng):
    if int(prev["rep"]) % 5 == 3:
        raise SolverError("did not converge,\n  status max_iter", solver="test", status="max_iter")
    return {
        "noisy_ratio": prev["meb_radius"] / prev["diameter"] + 1e-3 * rng.random(),
        "noisy_tag": 'ok, "quoted"',
    }


SOLVERISH = Stage(
    "test_solverish",
    "config",
    _solverish,
    (Column("noisy_ratio", "float", "R / diam + noise"), Column("noisy_tag", "str", "text")),
    requires=("meb_radius", "diameter"),
    headline=("noisy_ratio",),
)

GRID = Grid(
    n_points=(5, 7),
    dims=(2, 3),
    classes=(3,),
    layouts=("balanced", "random"),
    margins=(0.0, 0.5),
    distributions=("gaussian", "clustered"),
    repetitions=23,
)


def _config(**kw):
    base = dict(grid=GRID, seed=7, stages=("cheap", SOLVERISH), chunk_size=12)
    base.update(kw)
    return BatchConfig(**base)


def _bytes(res):
    return Path(res.results).read_bytes()


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """An uninterrupted in-process run of the standard configuration."""
    out = tmp_path_factory.mktemp("baseline")
    return run_batch(_config(), out / "run", jobs=1)


# --- determinism ----------------------------------------------------------


def test_baseline_shape(baseline):
    cfg = _config()
    assert baseline.n_rows == len(GRID.cells) * 23 == cfg.grid.n_configurations
    assert baseline.computed == cfg.n_chunks and baseline.reused == 0
    lines = _bytes(baseline).decode().splitlines()
    assert lines[0] == ",".join(c.name for c in cfg.columns())
    assert len(lines) == 1 + baseline.n_rows
    assert not (baseline.out / "parts").exists()
    rows = [r for r in lines[1:]]
    assert [int(r.split(",", 1)[0]) for r in rows] == list(range(baseline.n_rows))


def test_chunk_size_does_not_change_rows(tmp_path, baseline):
    res = run_batch(_config(chunk_size=5), tmp_path / "c5", jobs=1)
    assert _bytes(res) == _bytes(baseline)
    res = run_batch(_config(chunk_size=1000), tmp_path / "c1000", jobs=1)
    assert _bytes(res) == _bytes(baseline)


def test_rerun_is_identical(tmp_path, baseline):
    res = run_batch(_config(), tmp_path / "again", jobs=1)
    assert _bytes(res) == _bytes(baseline)


def test_local_process_pool_matches_in_process(tmp_path, baseline):
    res = run_batch(_config(chunk_size=100), tmp_path / "pool", jobs=2)
    assert _bytes(res) == _bytes(baseline)


def test_dask_local_cluster_matches_local(tmp_path, baseline):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            res = run_batch(_config(chunk_size=100), tmp_path / "dask", client=client)
        assert _bytes(res) == _bytes(baseline)
        # by address: the engine opens and closes its own client
        res2 = run_batch(
            _config(chunk_size=100), tmp_path / "dask2", scheduler=cluster.scheduler_address
        )
        assert _bytes(res2) == _bytes(baseline)


def test_rows_regenerate_alone(baseline):
    cfg = _config()
    cols = cfg.columns()
    cells = dict(iter_cells(baseline.results, cols, "csv"))
    for c in (0, 5, len(GRID.cells) - 1):
        data = cells[c]
        cell = GRID.cells[c]
        rep = int(data["rep"][11])
        X, y = generate(
            cell.distribution, cell.n_points, cell.dim, cell.n_classes, cell.layout, [rep], seed=7
        )
        q = cheap_quantities(X, y, margin=cell.margin)
        for name in ("batch_hard_max", "triplet_mean", "diameter", "meb_radius"):
            assert data[name][11] == q[name][0]  # repr round-trips exactly


# --- resumability ---------------------------------------------------------


def test_resume_after_injected_failure(tmp_path):
    cfg = _config(stages=("cheap", FLAKY, SOLVERISH))
    clean = run_batch(cfg, tmp_path / "clean", jobs=1)
    FAIL_AT.add((0, 14))  # the second chunk (of the first cell) fails
    try:
        with pytest.raises(RuntimeError, match="injected failure"):
            run_batch(cfg, tmp_path / "crash", jobs=1)
    finally:
        FAIL_AT.clear()
    journal = [
        json.loads(s) for s in (tmp_path / "crash" / "journal.jsonl").read_text().splitlines()
    ]
    assert journal[0]["kind"] == "header"
    assert [r["unit"] for r in journal[1:]] == [0]
    assert not (tmp_path / "crash" / "results.csv").exists()
    res = run_batch(cfg, tmp_path / "crash", jobs=1)
    assert res.reused == 1 and res.computed == cfg.n_chunks - 1
    assert _bytes(res) == _bytes(clean)
    # a finished run is not recomputed
    again = run_batch(cfg, tmp_path / "crash", jobs=1)
    assert again.computed == 0 and _bytes(again) == _bytes(clean)


def test_corrupt_part_is_recomputed(tmp_path):
    cfg = _config(stages=("cheap", FLAKY))
    clean = run_batch(cfg, tmp_path / "clean", jobs=1)
    FAIL_AT.add((1, 0))  # the third chunk (first of the second cell) fails
    try:
        with pytest.raises(RuntimeError):
            run_batch(cfg, tmp_path / "crash", jobs=1)
    finally:
        FAIL_AT.clear()
    part = tmp_path / "crash" / "parts" / "chunk-00000001.csv"
    part.write_bytes(part.read_bytes().replace(b"True", b"Fals", 1))
    res = run_batch(cfg, tmp_path / "crash", jobs=1)
    assert res.reused == 1 and res.computed == cfg.n_chunks - 1
    assert _bytes(res) == _bytes(clean)


def _journal_chunks(path: Path) -> int:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return 0
    return text.count('"unit": ') - text.count('"unit": "complete"')


def test_resume_after_killed_process(tmp_path):
    args = [
        sys.executable,
        "-m",
        "isoapprox",
        "batch",
        "--out",
        str(tmp_path / "killed"),
        "--n-points",
        "6",
        "--classes",
        "2",
        "3",
        "--repetitions",
        "400",
        "--chunk-size",
        "20",
        "--stages",
        "cheap",
        "reference",
        "--jobs",
        "1",
        "-q",
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        args,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    journal = tmp_path / "killed" / "journal.jsonl"
    deadline = time.monotonic() + 120
    while _journal_chunks(journal) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    done_before = _journal_chunks(journal)
    assert 3 <= done_before < 40
    cfg = BatchConfig(
        Grid(n_points=(6,), classes=(2, 3), repetitions=400),
        seed=0,
        stages=("cheap", "reference"),
        chunk_size=20,
    )
    resumed = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"reused {done_before}" in resumed.stdout
    clean = run_batch(cfg, tmp_path / "clean", jobs=1)
    assert (tmp_path / "killed" / "results.csv").read_bytes() == _bytes(clean)


def test_other_configuration_in_folder_is_refused(tmp_path):
    run_batch(_config(stages=("cheap",)), tmp_path / "o", jobs=1)
    with pytest.raises(IsoapproxError, match="holds a run of another configuration"):
        run_batch(_config(stages=("cheap",), seed=8), tmp_path / "o", jobs=1)
    res = run_batch(_config(stages=("cheap",), seed=8), tmp_path / "o", jobs=1, overwrite=True)
    assert res.computed == res.n_chunks
    (tmp_path / "o" / "run.json").unlink()
    with pytest.raises(IsoapproxError, match="holds a journal without run.json"):
        run_batch(_config(stages=("cheap",)), tmp_path / "o", jobs=1)
    (tmp_path / "f").write_text("x")
    with pytest.raises(IsoapproxError, match="must be a folder"):
        run_batch(_config(stages=("cheap",)), tmp_path / "f", jobs=1)


# --- stages and results ---------------------------------------------------


def test_config_stage_errors_are_recorded_not_fatal(baseline):
    cfg = _config()
    for _, data in iter_cells(baseline.results, cfg.columns(), "csv"):
        bad = data["rep"] % 5 == 3
        err = data["test_solverish_error"]
        assert all(e.startswith("SolverError: did not converge, status max_iter") for e in err[bad])
        assert all(e == "" for e in err[~bad])
        assert np.all(np.isnan(data["noisy_ratio"][bad]))
        ratio = data["meb_radius"] / data["diameter"]
        noise = data["noisy_ratio"][~bad] - ratio[~bad]
        assert np.all((noise >= 0) & (noise < 1e-3))
        assert all(t == 'ok, "quoted"' for t in data["noisy_tag"][~bad])
    rec = baseline.summary[0]
    assert rec["test_solverish_error_count"] == sum(1 for r in range(23) if r % 5 == 3)
    assert rec["noisy_ratio_missing"] == rec["test_solverish_error_count"]


def _same_records(a, b):
    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        for k in ra:
            va, vb = ra[k], rb[k]
            if isinstance(va, float) and np.isnan(va):
                assert isinstance(vb, float) and np.isnan(vb), k
            else:
                assert va == vb, k


def test_summary_from_values_equals_summary_from_the_table(tmp_path, baseline):
    _same_records(summarise(baseline.results, _config()), baseline.summary)
    res = run_batch(_config(), tmp_path / "s", jobs=1)
    (tmp_path / "s" / "summary.json").unlink()  # finished run, no summary: parse the table
    again = run_batch(_config(), tmp_path / "s", jobs=1)
    assert again.computed == 0
    _same_records(again.summary, res.summary)
    third = run_batch(_config(), tmp_path / "s", jobs=1)  # reuses summary.json
    _same_records(third.summary, again.summary)


def test_summary_matches_the_rows(baseline):
    cfg = _config()
    cells = dict(iter_cells(baseline.results, cfg.columns(), "csv"))
    for rec in baseline.summary:
        data = cells[rec["cell"]]
        assert rec["count"] == 23
        for q in ("diameter", "batch_hard_max", "collapse_ratio"):
            v = data[q]
            assert rec[f"{q}_median"] == pytest.approx(np.median(v), rel=1e-15)
            assert rec[f"{q}_min"] == v.min() and rec[f"{q}_max"] == v.max()
        assert rec["share_many_classes"] == float(np.mean(data["many_classes"]))
        assert rec["share_holds_jung"] == 1.0 and rec["share_holds_s1_collapsed"] == 1.0
        if rec["dim"] == 3:
            assert rec["thickness_missing"] == 23
    doc = json.loads(baseline.summary_path.read_text())
    assert doc["experiment"] == "batch" and doc["seed"] == 7
    assert doc["provenance"]["numpy"] and doc["results_sha256"]
    assert baseline.summary_path.with_suffix(".csv").exists()
    run_doc = json.loads((baseline.out / "run.json").read_text())
    assert run_doc["fingerprint"] == cfg.fingerprint() and run_doc["provenance"]["numba"]


def test_jsonl_has_the_same_values(tmp_path, baseline):
    res = run_batch(_config(format="jsonl"), tmp_path / "j", jobs=1)
    cols = _config().columns()
    a = dict(iter_cells(baseline.results, cols, "csv"))
    b = dict(iter_cells(res.results, cols, "jsonl"))
    assert a.keys() == b.keys()
    for c in a:
        for col in cols:
            if col.dtype == "str":
                assert list(a[c][col.name]) == list(b[c][col.name])
            else:
                np.testing.assert_array_equal(a[c][col.name], b[c][col.name])
    first = json.loads(res.results.read_text().splitlines()[3])
    assert first["noisy_ratio"] is None and first["test_solverish_error"].startswith("SolverError")


def test_reference_stage_agrees_with_cheap(tmp_path):
    grid = Grid(
        n_points=(5, 9),
        dims=(1, 2, 4),
        classes=(2, 4),
        margins=(0.0, 1.0),
        distributions=("gaussian", "collapsed"),
        repetitions=6,
    )
    cfg = BatchConfig(grid, seed=3, stages=("cheap", "reference"), chunk_size=6)
    res = run_batch(cfg, tmp_path / "ref", jobs=1)
    for _, d in iter_cells(res.results, cfg.columns(), "csv"):
        scale = np.maximum(1.0, d["diameter"])
        for name in (
            "batch_hard_max",
            "batch_hard_mean",
            "triplet_mean",
            "diameter",
            "d_iso_collapsed",
        ):
            np.testing.assert_allclose(
                d[name], d["ref_" + name], rtol=1e-12, atol=1e-12 * scale.max()
            )
        np.testing.assert_array_equal(d["separated"], d["ref_separated"])
        assert np.all(d["meb_radius_lower"] <= d["ref_meb_radius"] * (1 + 1e-12))
        assert np.all(d["ref_meb_radius_lower"] <= d["meb_radius"] * (1 + 1e-12))


def test_adversarial_cells_run(tmp_path):
    grid = Grid(n_points=(5,), distributions=("adversarial", "gaussian"), repetitions=8)
    cfg = BatchConfig(
        grid, stages=("cheap",), chunk_size=3, options=GeneratorOptions(search_budget=48)
    )
    res = run_batch(cfg, tmp_path / "adv", jobs=1)
    adv, gau = res.summary
    assert adv["distribution"] == "adversarial"
    assert adv["collapse_ratio_median"] >= gau["collapse_ratio_median"]


def _bad_keys(X, codes, margin, prev):
    return {"wrong": np.zeros(len(X))}


def test_stage_contract_errors(tmp_path):
    bad = Stage("test_bad_keys", "vector", _bad_keys, (Column("right", "float"),))
    cfg = BatchConfig(Grid(repetitions=3), stages=("cheap", bad))
    with pytest.raises(
        IsoapproxError,
        match=(
            r"must return exactly its columns \['right'\]; "
            r"missing \['right'\], unexpected \['wrong'\]"
        ),
    ):
        evaluate_chunk(plan(cfg)[0])
    with pytest.raises(
        InvalidInputError, match="unknown stage 'nope'; registered stages are 'cheap'"
    ):
        BatchConfig(stages=("nope",))
    with pytest.raises(
        InvalidInputError, match="requires column 'meb_radius', which no earlier stage"
    ):
        BatchConfig(stages=(SOLVERISH, "cheap"))
    with pytest.raises(InvalidInputError, match="is listed twice"):
        resolve_stages(("cheap", "cheap"))
    dup = Stage("test_dup", "vector", _bad_keys, (Column("diameter", "float"),))
    with pytest.raises(InvalidInputError, match="column 'diameter' is already produced"):
        resolve_stages(("cheap", dup))
    with pytest.raises(InvalidInputError, match="kind must be one of"):
        Stage("x", "scalar", _bad_keys, (Column("a", "float"),))
    with pytest.raises(InvalidInputError, match="dtype must be one of"):
        Column("a", "complex")
    with pytest.raises(InvalidInputError, match="headline column 'b' is not one of its columns"):
        Stage("x", "vector", _bad_keys, (Column("a", "float"),), headline=("b",))
    with pytest.raises(InvalidInputError, match="already registered"):
        register_stage(Stage("cheap", "vector", _bad_keys, (Column("a", "float"),)))
    assert get_stage("tests.test_batch_engine:FLAKY") is FLAKY
    with pytest.raises(InvalidInputError, match="must be a Stage"):
        get_stage("tests.test_batch_engine:_flaky")
    with pytest.raises(InvalidInputError, match="cannot import module"):
        get_stage("no_such_module_xyz:STAGE")
    assert set(STAGES) >= {"cheap", "reference"}


def test_grid_errors():
    with pytest.raises(
        InvalidInputError,
        match=r"grid cell \(gaussian N=5 n=2 P=5 balanced alpha=0\): `n_classes` must be at most",
    ):
        Grid(n_points=(5,), classes=(5,))
    g = Grid(n_points=(5, 6), classes=(5,), skip_invalid=True)
    assert len(g.cells) == 1 and g.skipped == ("gaussian N=5 n=2 P=5 balanced alpha=0",)
    with pytest.raises(InvalidInputError, match="no valid cell"):
        Grid(n_points=(5,), classes=(7,), skip_invalid=True)
    with pytest.raises(InvalidInputError, match="must not repeat values"):
        Grid(dims=(2, 2))
    with pytest.raises(InvalidInputError, match="`margins` must be >= 0"):
        Grid(margins=(-1.0,))
    with pytest.raises(InvalidInputError, match="`distributions` must be one of"):
        Grid(distributions=("uniform",))
    with pytest.raises(InvalidInputError, match="`format` must be one of"):
        BatchConfig(format="parquet")
    with pytest.raises(IsoapproxError, match="`jobs` must be an integer >= 1"):
        run_batch(BatchConfig(Grid(repetitions=2)), "unused", jobs=0)


def test_config_round_trip():
    cfg = _config(stages=("cheap", "reference"), format="jsonl")
    again = BatchConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again.fingerprint() == cfg.fingerprint()
    assert _config(seed=8).fingerprint() != cfg.fingerprint()


# --- Dask availability ----------------------------------------------------


def test_missing_dask_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(IsoapproxError, match=r"pip install 'isoapprox\[dask\]'"):
        run_batch(BatchConfig(Grid(repetitions=2)), tmp_path / "x", scheduler="tcp://127.0.0.1:1")


def test_unreachable_scheduler(tmp_path):
    pytest.importorskip("distributed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        IsoapproxError,
        match=rf"could not connect to the Dask scheduler at 'tcp://127.0.0.1:{port}' within 1 s",
    ):
        run_batch(
            BatchConfig(Grid(repetitions=2)),
            tmp_path / "x",
            scheduler=f"tcp://127.0.0.1:{port}",
            connect_timeout=1.0,
        )
