"""No worker outlives a command killed with SIGKILL (issue 34, item 9).

Each command with ``--jobs``/``--workers`` is started in a session of its
own; as soon as its workers exist (while they are still importing: the
hardest moment, before their initializer runs) or once they work, the
command is killed with SIGKILL, and 1 s later none of its former children
(the workers and multiprocessing's resource tracker) may be alive.  A
zombie counts as dead: it has exited and waits only for its new parent's
``wait``.  Linux only (reads ``/proc``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

#: seconds within which every former child must be gone
GRACE_S = 1.0

BATCH = ["batch", "--n-points", "8", "--classes", "2", "--repetitions", "100000",
         "--chunk-size", "4", "--stages", "cheap", "--out", "o", "-q"]
TRAIN = ["train", "--dataset", "gaussian", "--set", "n_classes=12", "--set",
         "n_train_classes=8", "--set", "per_class=8", "--set", "input_dim=5", "--hidden", "8",
         "--steps", "20000", "--log-every", "100", "--batch-size", "8", "--seeds", "0", "1",
         "2", "3", "--no-estimate", "-q", "--out", "t.json"]
TOY = ["toy", "--smoke", "--steps", "300", "--n-random", "2000", "--no-figures", "-q",
       "--out", "toy.json"]

COMMANDS = {
    "batch --jobs 2": [*BATCH, "--jobs", "2"],
    "batch --workers 2": [*BATCH, "--workers", "2"],
    "train --jobs 2": [*TRAIN, "--jobs", "2"],
    "toy --jobs 2": [*TOY, "--jobs", "2"],
}


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _descendants(pid: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            kids.setdefault(int(st[1]), []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _kill_when(cmd: list[str], cwd: Path, ready) -> tuple[set[int], list[int]]:
    """Start ``isoapprox CMD``, SIGKILL it once ``ready(family)``; its former children
    and those still alive ``GRACE_S`` later."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "isoapprox", *cmd], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    family: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            family |= _descendants(proc.pid)
            if ready(family):
                break
            assert proc.poll() is None, "the command ended before its workers started"
            time.sleep(0.005)
        else:
            pytest.fail(f"no workers within 60 s: {family}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(GRACE_S)
        return family, [p for p in family if _alive(p)]
    finally:  # whatever the outcome, nothing this test started survives it
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for p in family:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def _workers_and_tracker(family: set[int]) -> bool:
    return len(family) >= 3


@pytest.mark.parametrize("command", list(COMMANDS))
def test_starting_workers_die_with_a_killed_parent(tmp_path, command):
    """Killed while its workers import (before their initializer): the hard case."""
    family, alive = _kill_when(COMMANDS[command], tmp_path, _workers_and_tracker)
    assert len(family) >= 3, family  # two workers and the resource tracker
    assert alive == [], f"alive {GRACE_S} s after the parent's SIGKILL: {alive} of {family}"


def test_working_workers_die_with_a_killed_parent(tmp_path):
    """Killed while its workers compute (after a few chunks are journalled)."""
    journal = tmp_path / "o" / "journal.jsonl"

    def working(family: set[int]) -> bool:
        return (len(family) >= 3 and journal.exists()
                and journal.read_bytes().count(b"\n") >= 4)

    family, alive = _kill_when(COMMANDS["batch --jobs 2"], tmp_path, working)
    assert alive == [], f"alive {GRACE_S} s after the parent's SIGKILL: {alive} of {family}"


def test_a_dask_client_leaves_no_process_behind(tmp_path):
    """``--scheduler``: the workers are the cluster's; the command's own children die."""
    distributed = pytest.importorskip("distributed")
    journal = tmp_path / "o" / "journal.jsonl"

    def working(family: set[int]) -> bool:
        return journal.exists() and journal.read_bytes().count(b"\n") >= 3

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        cmd = [*BATCH, "--scheduler", cluster.scheduler_address]
        family, alive = _kill_when(cmd, tmp_path, working)
    assert alive == [], f"alive {GRACE_S} s after the parent's SIGKILL: {alive} of {family}"
