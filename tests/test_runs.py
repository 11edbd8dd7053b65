"""The run protocol (isoapprox.runs): the overwrite/resume policy, the journal, executors."""

from __future__ import annotations

import errno
import os

import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.io import write_results
from isoapprox.runs import (
    RunJournal,
    claim_output,
    config_key,
    executor,
    finished_units,
    journal_path,
    lock_path,
    output_lock,
    prepare_output,
    read_jsonl,
    run_units,
)

CONFIG = config_key({"steps": 3, "sizes": (1, 2)})


def _write(path, config=CONFIG):
    write_results(path, experiment="exp", config=config, records=[{"a": 1}])


def test_config_key_is_the_json_form():
    assert CONFIG == {"steps": 3, "sizes": [1, 2]}
    assert journal_path("x/r.json").name == "r.journal.partial"


def test_policy(tmp_path):
    out = tmp_path / "r.json"
    assert prepare_output(out, experiment="exp", config=CONFIG) is None  # nothing there
    _write(out)
    with pytest.raises(InvalidInputError, match="exists; pass --overwrite"):
        prepare_output(out, experiment="exp", config=CONFIG)
    assert prepare_output(out, experiment="exp", config=CONFIG, reuse=True)["records"] == [
        {"a": 1}]
    with pytest.raises(InvalidInputError, match="another configuration"):
        prepare_output(out, experiment="exp", config={"steps": 4}, reuse=True)
    assert prepare_output(out, experiment="exp", config={"steps": 4}, resume=True) is None
    assert out.exists()  # --resume keeps the results until they are rewritten
    journal_path(out).write_text("{}\n")
    assert prepare_output(out, experiment="exp", config={"steps": 4}, overwrite=True) is None
    assert not out.exists() and not out.with_suffix(".csv").exists()
    assert not journal_path(out).exists()
    out.write_text("not json")
    with pytest.raises(InvalidInputError, match="cannot be read"):
        prepare_output(out, experiment="exp", config=CONFIG)
    with pytest.raises(InvalidInputError, match="must name a .json file"):
        prepare_output(tmp_path / "r.txt", experiment="exp", config=CONFIG)
    (tmp_path / "d.json").mkdir()
    with pytest.raises(InvalidInputError, match="names a folder"):
        prepare_output(tmp_path / "d.json", experiment="exp", config=CONFIG)


def test_journal_resumes_and_refuses_another_header(tmp_path):
    path = tmp_path / "j.partial"
    j = RunJournal(path, experiment="exp", config=CONFIG)
    j.add([0, 1], {"x": 1.5})
    j.add("cell", {"y": (1, 2)})
    again = RunJournal(path, experiment="exp", config=CONFIG)
    assert again.done == {(0, 1): {"x": 1.5}, "cell": {"y": [1, 2]}} == j.done
    assert finished_units(path) == {(0, 1), "cell"}
    # a line cut short by a crash is dropped
    path.write_bytes(path.read_bytes()[:-5])
    assert RunJournal(path, experiment="exp", config=CONFIG).done == {(0, 1): {"x": 1.5}}
    with pytest.raises(InvalidInputError, match="written for another configuration"):
        RunJournal(path, experiment="exp", config={"steps": 4})
    # the message names the settings that differ, and the other experiment found
    with pytest.raises(InvalidInputError, match=r"steps: journal .*, this run 4"):
        RunJournal(path, experiment="exp", config={**CONFIG, "steps": 4})
    with pytest.raises(InvalidInputError, match=r"not a journal of a other run \(found: exp\)"):
        RunJournal(path, experiment="other", config=CONFIG)
    with pytest.raises(InvalidInputError, match="not a journal of a other run"):
        RunJournal(path, experiment="other", config=CONFIG)
    j.remove()
    assert not path.exists() and finished_units(path) == set()


def test_journal_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "j.jsonl"
    j = RunJournal(path, experiment="exp", config=CONFIG)
    j.add(0, {"v": 1.5})
    j.add(1, {"v": 2.5})
    with path.open("a") as fh:
        fh.write('{"unit": 2, "result": {"v": 3')  # crash mid-write
    j2 = RunJournal(path, experiment="exp", config=CONFIG)
    assert j2.done == {0: {"v": 1.5}, 1: {"v": 2.5}}
    j2.add(2, {"v": 3.5})
    assert [r.get("unit") for r in read_jsonl(path)] == [None, 0, 1, 2]


def test_journal_rejects_corruption_in_the_middle(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"a": 1}\nGARBAGE\n{"a": 2}\n')
    with pytest.raises(InvalidInputError, match="line 2 is corrupt"):
        read_jsonl(path)
    with pytest.raises(InvalidInputError, match="line 2 is corrupt"):
        RunJournal(path, experiment="exp", config=CONFIG)


def _square(x):
    return x * x


@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_executors_run_every_unit(jobs):
    got = []
    n = run_units(_square, range(7), executor(jobs), got.append)
    assert n == 7 and sorted(got) == [x * x for x in range(7)]


def test_none_is_a_task_like_any_other():
    """The end of the task stream is not mistaken for a task that is ``None``."""
    got = []
    n = run_units(_is_none, [None, 1, None], executor(1), got.append)
    assert n == 3 and sorted(got) == [False, True, True]


def _is_none(x):
    return x is None


def test_a_failing_unit_stops_the_run_and_keeps_what_finished():
    got = []

    def fail_at_3(x):
        if x == 3:
            raise RuntimeError("unit 3")
        return x

    with pytest.raises(RuntimeError, match="unit 3"):
        run_units(fail_at_3, range(6), executor(1), got.append)
    assert got == [0, 1, 2]


def test_executor_arguments():
    with pytest.raises(InvalidInputError, match="`jobs` must be an integer >= 1"):
        executor(0)


def test_dask_executor_matches_in_process():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        got = []
        run_units(_square, range(5), executor(client=client), got.append)
    assert sorted(got) == [0, 1, 4, 9, 16]


# ---------------------------------------------------------------------------
# outputs: lock and cleanup (the command-line side: tests/test_cli_contract.py)
# ---------------------------------------------------------------------------


def test_output_lock_is_exclusive_shared_when_nested_and_removed(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    out = tmp_path / "r.json"
    with output_lock(out) as lock:
        assert lock == lock_path(out) == tmp_path / ".r.json.lock"
        assert lock.read_text().strip() == str(os.getpid())
        with output_lock(out):  # nested in one process: shared
            pass
        assert lock.exists()
        # another open file description is refused while the lock is held
        fd = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert list(tmp_path.iterdir()) == []


def test_claim_output_removes_only_what_the_run_created(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    out = tmp_path / "a" / "b" / "r.json"
    with pytest.raises(RuntimeError), claim_output(out, files=[out.with_suffix(".csv")]):
        out.write_text("{}")
        out.with_suffix(".csv").write_text("x")
        raise RuntimeError("failed after writing")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]
    # an existing file is never deleted, even if the run rewrote it
    out = tmp_path / "mine.txt"
    with pytest.raises(RuntimeError), claim_output(out):
        raise RuntimeError
    assert out.read_text() == "keep"


def test_claim_output_keeps_a_journal_with_finished_work(tmp_path):
    out = tmp_path / "r.json"
    journal = journal_path(out)
    with pytest.raises(KeyboardInterrupt), claim_output(out, files=[journal], journal=journal):
        RunJournal(journal, experiment="exp", config=CONFIG)
        raise KeyboardInterrupt
    assert not journal.exists()  # a header only: nothing to resume
    with pytest.raises(KeyboardInterrupt), claim_output(out, files=[journal], journal=journal):
        RunJournal(journal, experiment="exp", config=CONFIG).add("u1", 1.0)
        raise KeyboardInterrupt
    assert finished_units(journal) == {"u1"}  # finished work: kept for the resume


def test_claim_output_of_a_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "old.csv").write_text("x")
    with pytest.raises(OSError), claim_output(out, folder=True, files=["*.csv", "parts"]):
        (out / "new.csv").write_text("y")
        (out / "parts").mkdir()
        (out / "parts" / "c0").write_text("z")
        (out / "another-program.log").write_text("not ours")
        raise OSError("disk full")
    # an existing folder: only what the run writes goes (others may write there too)
    assert sorted(p.name for p in out.iterdir()) == ["another-program.log", "old.csv"]
    new = tmp_path / "new"
    with pytest.raises(OSError), claim_output(new / "figs", folder=True):
        (new / "figs" / "a.png").write_text("y")
        raise OSError("disk full")
    assert not new.exists()  # a folder the run created goes whole
    with pytest.raises(InvalidInputError, match="is a file, not a folder"), \
            claim_output(out / "old.csv", folder=True):
        pass
    with pytest.raises(InvalidInputError, match="cannot be created: .* is a file"), \
            claim_output(out / "old.csv" / "sub", folder=True):
        pass


def test_claim_output_refuses_links_and_leaves_nothing_when_the_disk_is_full(tmp_path,
                                                                            monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "run"
    out.mkdir()
    (out / "parts").symlink_to(victim)
    with pytest.raises(InvalidInputError, match="/run/parts' is a symbolic link"), \
            claim_output(out, folder=True, files=["parts"]):
        pass
    with claim_output(out, folder=True, files=["*.csv"]):  # a link the run does not write
        pass
    (tmp_path / "r.json").symlink_to(victim)
    with pytest.raises(InvalidInputError, match="r.json' is a symbolic link"), \
            claim_output(tmp_path / "r.json"):
        pass

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)  # the pid cannot be written into the lock
    new = tmp_path / "a" / "b"
    with pytest.raises(OSError) as exc, claim_output(new / "r.json"):
        pass
    assert (exc.value.errno, exc.value.filename) == (errno.ENOSPC, str(new / ".r.json.lock"))
    assert sorted(os.listdir(tmp_path)) == ["r.json", "run", "victim"]
    assert victim.read_text() == "keep"
