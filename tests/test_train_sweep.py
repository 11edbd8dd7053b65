"""Sweeps: grids, per-cell seeds, resuming after an interruption, parallel cells."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.io import read_results
from isoapprox.runs import finished_units
from isoapprox.train import (
    TrainConfig,
    cell_seed,
    estimate_runtime,
    expand_grid,
    run_cell,
    run_sweep,
    write_sweep_results,
)

BASE = TrainConfig(
    dataset="gaussian",
    n_classes=12,
    n_train_classes=8,
    per_class=8,
    input_dim=5,
    hidden=(8,),
    embedding_dim=2,
    batch_size=8,
    steps=12,
    log_every=6,
    recall_ks=(1,),
)
GRID = {"batch_size": [8, 16], "embedding_dim": [2, 4]}
VARIANTS = [{}, {"loss": "selectively_contrastive", "normalize": True}]


def _cells():
    return expand_grid(BASE, GRID, variants=VARIANTS, replicates=[0, 1])


def _strip(entries):
    """Everything except the wall-clock timing."""
    out = []
    for e in entries:
        e = json.loads(json.dumps(e))
        e["summary"].pop("seconds")
        out.append(e)
    return out


class Interrupt(Exception):
    pass


def test_expand_grid_order_variants_and_dedupe():
    cells = _cells()
    assert len(cells) == 2 * 2 * 2 * 2
    first = cells[0].config
    assert (first.batch_size, first.embedding_dim, first.loss) == (8, 2, "batch_hard")
    assert [c.replicate for c in cells[:2]] == [0, 1]
    assert (
        cells[2].config.loss == "selectively_contrastive" and cells[2].config.normalize
    )
    assert len({c.cell_id for c in cells}) == len(cells)
    dup = expand_grid(BASE, {"batch_size": [8, 8]})
    assert len(dup) == 1


def test_expand_grid_errors():
    with pytest.raises(InvalidInputError, match="not a TrainConfig field"):
        expand_grid(BASE, {"batch": [8]})
    with pytest.raises(InvalidInputError, match="must list at least one value"):
        expand_grid(BASE, {"batch_size": []})
    with pytest.raises(InvalidInputError, match="`batch_size` must be >= 4"):
        expand_grid(BASE, {"batch_size": [2]})


def test_seeds_depend_on_root_and_replicate_only():
    a, b = cell_seed(5, 1), cell_seed(5, 1)
    assert a.generate_state(4).tolist() == b.generate_state(4).tolist()
    assert a.generate_state(4).tolist() != cell_seed(5, 2).generate_state(4).tolist()
    assert a.generate_state(4).tolist() != cell_seed(6, 1).generate_state(4).tolist()


def test_cell_results_do_not_depend_on_order():
    cells = _cells()[:6]
    fwd = run_sweep(cells, root_seed=3)
    rev = run_sweep(cells[::-1], root_seed=3)
    assert _strip(fwd.entries) == _strip(rev.entries[::-1])
    alone = run_cell(cells[4], 3)
    assert _strip([alone]) == _strip([fwd.entries[4]])


def test_interrupted_sweep_resumes_to_identical_results(tmp_path):
    cells = _cells()
    full = run_sweep(cells, root_seed=7)

    def stop_after_5(entry, n_done):
        if n_done == 5:
            raise Interrupt

    journal = tmp_path / "j.jsonl"
    with pytest.raises(Interrupt):
        run_sweep(cells, root_seed=7, journal=journal, on_cell_done=stop_after_5)
    assert len(finished_units(journal)) == 5
    computed = []
    resumed = run_sweep(
        cells,
        root_seed=7,
        journal=journal,
        on_cell_done=lambda e, n: computed.append(e["cell_id"]),
    )
    assert (resumed.n_resumed, resumed.n_computed) == (5, len(cells) - 5)
    assert len(computed) == len(cells) - 5  # finished cells were not recomputed
    assert _strip(resumed.entries) == _strip(full.entries)
    again = run_sweep(cells, root_seed=7, journal=journal)
    assert again.n_computed == 0 and _strip(again.entries) == _strip(full.entries)


def test_torn_journal_line_loses_only_that_cell(tmp_path):
    cells = _cells()[:3]
    journal = tmp_path / "j.jsonl"
    full = run_sweep(cells, root_seed=1, journal=journal)
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) - 40])  # crash in the middle of the last write
    resumed = run_sweep(cells, root_seed=1, journal=journal)
    assert (resumed.n_resumed, resumed.n_computed) == (2, 1)
    assert _strip(resumed.entries) == _strip(full.entries)


def test_journal_with_another_root_seed_is_refused(tmp_path):
    cells = _cells()[:1]
    journal = tmp_path / "j.jsonl"
    run_sweep(cells, root_seed=1, journal=journal)
    with pytest.raises(
        InvalidInputError, match="written for another configuration"
    ):
        run_sweep(cells, root_seed=2, journal=journal)


@pytest.mark.slow
def test_parallel_cells_match_serial():
    """Spawned workers start slowly (~10 s on a loaded 2-core machine): slow."""
    cells = _cells()[:4]
    serial = run_sweep(cells, root_seed=11)
    parallel = run_sweep(cells, root_seed=11, jobs=2)
    assert _strip(parallel.entries) == _strip(serial.entries)


def test_dask_cells_match_serial(tmp_path):
    """A sweep runs on a Dask cluster like the batch evaluation does, with the same entries."""
    distributed = pytest.importorskip("distributed")
    cells = _cells()[:3]
    serial = run_sweep(cells, root_seed=5)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        dask = run_sweep(cells, root_seed=5, client=client, journal=tmp_path / "j.jsonl")
    assert _strip(dask.entries) == _strip(serial.entries)
    assert len(finished_units(tmp_path / "j.jsonl")) == 3


def test_write_and_read_results(tmp_path):
    cells = _cells()[:2]
    res = run_sweep(cells, root_seed=0)
    path = write_sweep_results(
        tmp_path / "r.json", res, experiment="t", config={"grid": GRID}, root_seed=0
    )
    doc = read_results(path)
    assert [r["cell_id"] for r in doc["records"]] == [c.cell_id for c in cells]
    assert set(doc["histories"]) == {c.cell_id for c in cells}
    diag = doc["triplet_diagrams"][cells[0].cell_id]["heldout_final"]
    assert len(diag["s_ap"]) == len(diag["s_an"]) > 0
    assert doc["seed"]["root_seed"] == 0 and doc["provenance"]["numpy"]
    assert (tmp_path / "r.csv").read_text().startswith("cell_id,")


def test_estimate_runtime_is_positive_and_skips_done():
    cells = _cells()[:4]
    est = estimate_runtime(cells, probe_steps=2)
    assert est.seconds > 0 and all(t > 0 for t in est.per_cell)
    est2 = estimate_runtime(cells, probe_steps=2, skip={cells[0].cell_id}, jobs=2)
    assert est2.per_cell[0] == 0.0 and est2.wall_seconds >= max(est2.per_cell)


@pytest.mark.slow
def test_killed_command_resumes_to_identical_results(tmp_path):
    """SIGKILL the command line mid-sweep, rerun it, compare with a clean run."""
    args = [
        sys.executable,
        "-m",
        "isoapprox",
        "train",
        "-q",
        "--no-estimate",
        "--dataset",
        "gaussian",
        "--set",
        "n_classes=12",
        "--set",
        "n_train_classes=8",
        "--set",
        "per_class=8",
        "--set",
        "input_dim=5",
        "--hidden",
        "8",
        "--batch-size",
        "8",
        "16",
        "--dim",
        "2",
        "4",
        "--seeds",
        "0",
        "1",
        "--steps",
        "400",
        "--log-every",
        "100",
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    ref = tmp_path / "ref.json"
    subprocess.run(args + ["--out", str(ref)], check=True, env=env, capture_output=True)
    out = tmp_path / "run.json"
    journal = out.with_suffix(".journal.partial")
    proc = subprocess.Popen(
        args + ["--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_bytes().count(b"\n") >= 3:  # header + 2 cells
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_before = len(finished_units(journal))
    assert 2 <= n_before < 8 and not out.exists()
    subprocess.run(args + ["--out", str(out)], check=True, env=env, capture_output=True)
    a, b = read_results(ref), read_results(out)
    for doc in (a, b):
        for r in doc["records"]:
            r.pop("seconds")
    assert a["records"] == b["records"] and a["histories"] == b["histories"]
    assert a["triplet_diagrams"] == b["triplet_diagrams"]
