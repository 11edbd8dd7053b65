"""Nothing is written outside an output, and the system's failures are one line (issue 34).

Symbolic links planted in or as an output are refused before any work and
never written through (the lock, a temporary, ``parts/``, the journal, a
results file, the output folder itself); every file is created under a new
random name with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and renamed into place.
A failure of the system (disk full, read-only, a file removed during the
run) is one line naming the path, exit status 4; the run leaves no
temporary, lock or folder it made, and a journal with finished work that a
rerun resumes from.

The tests on a real full disk mount a 1 MiB tmpfs: they run as root only
(and skip where ``mount`` is refused); the others simulate the failure.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isoapprox import io
from isoapprox.batch import BatchConfig, Grid, engine, run_batch
from isoapprox.cli import main
from isoapprox.commands.common import SYSTEM_ERROR_STATUS, guarded, system_failure
from isoapprox.exceptions import InvalidInputError
from isoapprox.io import atomic_write_text, atomic_writer, write_results
from isoapprox.runs import RunJournal, append_jsonl, claim_output, output_lock

BATCH = ["batch", "--n-points", "5", "--classes", "2", "--repetitions", "12", "--chunk-size",
         "4", "--jobs", "1", "--stages", "cheap", "-q"]

#: a tiny training run (a few seconds)
TRAIN = ["train", "--dataset", "gaussian", "--set", "n_classes=12", "--set",
         "n_train_classes=8", "--set", "per_class=8", "--set", "input_dim=5", "--hidden", "8",
         "--steps", "10", "--log-every", "5", "--batch-size", "8", "--no-estimate", "-q"]

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32",
                                reason="POSIX file semantics")


def _run(argv: list[str], capsys) -> tuple[int, list[str]]:
    """The exit status and the lines on stderr of ``isoapprox ARGV``."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    return code, capsys.readouterr().err.strip().splitlines()


def _stdout(argv: list[str], capsys) -> str:
    """The standard output of ``isoapprox ARGV``, which must succeed."""
    assert main(argv) == 0
    return capsys.readouterr().out


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim"
    v.write_text("keep\n")
    return v


# ---------------------------------------------------------------------------
# nothing written through a link (defects 1, 2, 3)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [
    ".isoapprox.lock",   # defect 1: the pid was written into the victim
    ".results.csv.tmp",  # defect 2: the victim received the whole table
    "journal.jsonl", "run.json", "results.csv", "summary.json", ".summary.json.tmp",
])
def test_batch_refuses_a_planted_link_and_writes_nothing_through_it(tmp_path, capsys, victim,
                                                                    entry):
    out = tmp_path / "o"
    out.mkdir()
    (out / entry).symlink_to(Path("..") / victim.name)
    code, err = _run([*BATCH, "--out", str(out)], capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("isoapprox batch: error: --out: ")
    assert f"{str(out / entry)!r} is a symbolic link (to '../victim')" in err[0]
    assert victim.read_text() == "keep\n"
    assert _tree(tmp_path) == ["o", f"o/{entry}", "victim"]  # nothing new, the link untouched


def test_batch_writes_no_chunk_through_a_linked_parts_folder(tmp_path, capsys):
    """Defect 3: ``parts -> ../elsewhere`` received the chunk files."""
    out, elsewhere = tmp_path / "o", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "parts").symlink_to(Path("..") / "elsewhere")
    code, err = _run([*BATCH, "--out", str(out), "--keep-parts"], capsys)
    assert code == 2 and len(err) == 1, err
    assert f"{str(out / 'parts')!r} is a symbolic link" in err[0]
    assert list(elsewhere.iterdir()) == []
    # the library refuses it the same way
    config = BatchConfig(grid=Grid(n_points=(5,), classes=(2,), repetitions=4), chunk_size=4)
    with pytest.raises(InvalidInputError, match="/o/parts' is a symbolic link"):
        run_batch(config, out, jobs=1)
    assert list(elsewhere.iterdir()) == []


def test_a_linked_output_folder_is_refused(tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "o").symlink_to("real")
    code, err = _run([*BATCH, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and len(err) == 1 and "is a symbolic link (to 'real')" in err[0], err
    assert list(real.iterdir()) == []


@pytest.mark.parametrize(("cmd", "entry"), [
    ("toy", ".toy.json.lock"), ("toy", "toy.json"), ("toy", "toy.csv"),
    ("toy", "toy.journal.partial"), ("toy", "figs"), ("toy", "figs/.isoapprox.lock"),
    ("train", ".t.json.lock"), ("train", "t.journal.partial"), ("train", "t.csv"),
    ("figures", "figs"), ("figures", "figs/.isoapprox.lock"),
    ("diagnose", "plot"), ("diagnose", "plot/.isoapprox.lock"), ("diagnose", ".r.json.lock"),
])
def test_every_command_refuses_links_before_any_work(tmp_path, monkeypatch, capsys, victim,
                                                     cmd, entry):
    monkeypatch.chdir(tmp_path)
    inputs = tmp_path / "in"
    inputs.mkdir()
    rng = np.random.default_rng(0)
    np.savez(inputs / "e.npz", embeddings=rng.normal(size=(8, 2)), labels=[0, 0, 1, 1] * 2)
    write_results(inputs / "toy.json", experiment="toy", config={}, records=[])
    argv = {
        "toy": ["toy", "--smoke", "--out", "toy.json", "--figures", "figs", "-q"],
        "train": [*TRAIN, "--out", "t.json"],
        "figures": ["figures", str(inputs / "toy.json"), "--out", "figs"],
        "diagnose": ["diagnose", str(inputs / "e.npz"), "--no-theory", "--plot", "plot",
                     "--json", "r.json", "-q"],
    }[cmd]
    link = tmp_path / entry
    link.parent.mkdir(exist_ok=True)
    target = victim if entry.endswith((".lock", ".json", ".csv", ".partial")) else inputs
    link.symlink_to(os.path.relpath(target, link.parent))
    before = _tree(tmp_path)
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1, err
    assert f"{entry!r} is a symbolic link" in err[0], err
    assert victim.read_text() == "keep\n"
    assert _tree(tmp_path) == before


def test_a_hard_linked_lock_is_refused(tmp_path, capsys, victim):
    out = tmp_path / "o"
    out.mkdir()
    os.link(victim, out / ".isoapprox.lock")
    code, err = _run([*BATCH, "--out", str(out)], capsys)
    assert code == 2 and len(err) == 1 and "a file with 2 names (a hard link)" in err[0], err
    assert victim.read_text() == "keep\n"


def test_the_library_writers_follow_no_link(tmp_path, monkeypatch, victim):
    # a link at the target is replaced by the file, not written through
    target = tmp_path / "r.json"
    target.symlink_to(victim)
    atomic_write_text(target, "new\n")
    assert not target.is_symlink() and target.read_text() == "new\n"
    assert victim.read_text() == "keep\n"
    # a link planted at the next temporary name is skipped, not followed
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(io.secrets, "token_hex", lambda n: next(names))
    planted = tmp_path / ".r.json.aaaa.tmp"
    planted.symlink_to(victim)
    with atomic_writer(target) as fh:
        fh.write(b"newer\n")
    assert target.read_text() == "newer\n" and victim.read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.json.aaaa.tmp", "r.json",
                                                           "victim"]
    # a journal and a lock refuse a link
    journal = tmp_path / "j.jsonl"
    journal.symlink_to(victim)
    with pytest.raises(OSError) as exc:
        RunJournal(journal, experiment="x", config={})
    assert exc.value.errno == errno.ELOOP
    (tmp_path / ".out.json.lock").symlink_to(victim)
    with pytest.raises(InvalidInputError, match="'.*\\.out\\.json\\.lock' is a symbolic link"):
        with output_lock(tmp_path / "out.json"):
            pass
    assert victim.read_text() == "keep\n"


# ---------------------------------------------------------------------------
# failures of the system: one line, status 4, nothing half-written
# ---------------------------------------------------------------------------


def test_a_system_failure_is_one_line_with_status_4(capsys):
    def full():
        raise OSError(errno.ENOSPC, "No space left on device", "out/r.json")

    def missing():
        raise FileNotFoundError("embedding file not found: e.npz")  # the user's mistake

    def bug():
        raise OSError("not from the system")

    assert SYSTEM_ERROR_STATUS == 4
    assert guarded("isoapprox toy", full) == 4
    assert capsys.readouterr().err == (
        "isoapprox toy: error: No space left on device (ENOSPC): 'out/r.json'\n")
    assert guarded("isoapprox toy", missing) == 2
    assert capsys.readouterr().err == "isoapprox toy: error: embedding file not found: e.npz\n"
    with pytest.raises(OSError, match="not from the system"):
        guarded("isoapprox toy", bug)
    assert system_failure(OSError(errno.ENOSPC, "No space left on device"))  # names no file
    assert not system_failure(OSError(errno.EBADF, "Bad file descriptor"))


def test_a_failed_write_names_the_file_and_leaves_it_as_it_was(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    atomic_write_text(target, "old")

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io.os, "fsync", fsync)
    with pytest.raises(OSError) as exc:
        atomic_write_text(target, "new")
    assert (exc.value.errno, exc.value.filename) == (errno.ENOSPC, str(target))
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temporary
    # a caller's own error keeps the file it names
    with pytest.raises(FileNotFoundError) as exc, atomic_writer(target) as fh:
        fh.write((tmp_path / "nope").read_bytes())
    assert exc.value.filename == str(tmp_path / "nope")


def test_a_journal_line_the_system_fails_is_cut_back_off(tmp_path, monkeypatch):
    journal = tmp_path / "j.jsonl"
    append_jsonl(journal, {"unit": 1})
    before = journal.read_bytes()
    ino = journal.stat().st_ino
    real_write = os.write

    def half_then_full(fd, data):
        if os.fstat(fd).st_ino != ino:
            return real_write(fd, data)
        if len(data) > 4:
            return real_write(fd, bytes(data[:4]))  # a short write: the disk filled up
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError) as exc:
        append_jsonl(journal, {"unit": 2, "result": "x" * 100})
    monkeypatch.undo()
    assert (exc.value.errno, exc.value.filename) == (errno.ENOSPC, str(journal))
    assert journal.read_bytes() == before
    # a journal that vanished during a run is not recreated without its header
    rj = RunJournal(tmp_path / "r.jsonl", experiment="x", config={})
    rj.path.unlink()
    with pytest.raises(FileNotFoundError):
        rj.add("u", 1)
    assert not rj.path.exists()


def _batch(out: Path) -> list[str]:
    return [*BATCH, "--repetitions", "40", "--out", str(out)]


def test_disk_full_mid_run_is_one_line_and_the_run_resumes(tmp_path, monkeypatch, capsys):
    """Simulated: the 9th fsync of a file fails (run.json, the journal's header and
    chunks 0 and 1 are written: three files each, the values, the rows, a journal line)."""
    out = tmp_path / "o"
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync(fd):
        if stat.S_ISREG(os.fstat(fd).st_mode):
            calls["n"] += 1
            if calls["n"] == 9:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    code, err = _run(_batch(out), capsys)
    monkeypatch.undo()
    assert code == 4 and err == ["isoapprox batch: error: No space left on device (ENOSPC): "
                                 f"'{out}/parts/chunk-00000002.npy'"], err
    left = _tree(out)
    assert left == ["journal.jsonl", "parts", "parts/chunk-00000000.csv",
                    "parts/chunk-00000000.npy", "parts/chunk-00000001.csv",
                    "parts/chunk-00000001.npy", "run.json"]
    assert "chunks computed 8, reused 2" in _stdout(_batch(out), capsys)
    clean = tmp_path / "clean"
    _stdout(_batch(clean), capsys)
    assert (out / "results.csv").read_bytes() == (clean / "results.csv").read_bytes()


def test_a_file_removed_during_the_run_is_one_line_and_the_run_resumes(tmp_path, monkeypatch,
                                                                       capsys):
    out = tmp_path / "o"
    drive = engine._drive

    def drive_then_lose_a_part(*args, **kwargs):
        n = drive(*args, **kwargs)
        (out / "parts" / "chunk-00000001.csv").unlink()
        return n

    monkeypatch.setattr(engine, "_drive", drive_then_lose_a_part)
    code, err = _run(_batch(out), capsys)
    monkeypatch.undo()
    assert code == 4 and len(err) == 1, err
    assert err[0] == ("isoapprox batch: error: No such file or directory (ENOENT): "
                      f"'{out}/parts/chunk-00000001.csv'")
    assert (out / "journal.jsonl").exists() and not (out / ".isoapprox.lock").exists()
    assert "chunks computed 1, reused 9" in _stdout(_batch(out), capsys)
    clean = tmp_path / "clean"
    _stdout(_batch(clean), capsys)
    assert (out / "results.csv").read_bytes() == (clean / "results.csv").read_bytes()


# ---------------------------------------------------------------------------
# on a real full disk (root: a 1 MiB tmpfs)
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(where: Path, options: str = "size=1m"):
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(disk: Path, leave_kib: int) -> Path:
    """Fill ``disk`` up to ``leave_kib`` KiB free; the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        st = os.statvfs(disk)
        left = max(0, st.f_bavail * st.f_frsize - leave_kib * 1024)
        block = b"\0" * 4096
        with contextlib.suppress(OSError):
            while left > 0 or leave_kib == 0:  # until ENOSPC when nothing is to be left
                left -= os.write(fd, block[:left] if 0 < left < 4096 else block)
    finally:
        os.close(fd)
    return filler


@pytest.fixture
def inputs(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    rng = np.random.default_rng(0)
    np.savez(d / "e.npz", embeddings=rng.normal(size=(12, 3)), labels=[0, 0, 0, 1, 1, 1] * 2)
    write_results(d / "toy.json", experiment="toy", config={}, records=[])
    return d


WRITERS = {
    "batch": [*BATCH, "--out", "o"],
    "toy": ["toy", "--smoke", "--out", "toy.json", "--figures", "figs", "-q"],
    "train": [*TRAIN, "--out", "t.json"],
    "figures": ["figures", "{IN}/toy.json", "--out", "figs"],
    "diagnose --out": ["diagnose", "{IN}/e.npz", "--margin", "0.2", "--out", "ideal.npz", "-q"],
    "diagnose --json": ["diagnose", "{IN}/e.npz", "--no-theory", "--json", "r.json", "-q"],
    "diagnose --plot": ["diagnose", "{IN}/e.npz", "--no-theory", "--plot", "plot", "-q"],
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch,
                                                                    capsys, inputs, writer):
    """Defect 4: each exited 1 with an ENOSPC traceback; ``diagnose --plot`` left
    ``plot/`` and its lock behind."""
    with _tmpfs(tmp_path / "disk") as disk:
        _fill(disk, 0)
        monkeypatch.chdir(disk)
        argv = [a.replace("{IN}", str(inputs)) for a in WRITERS[writer]]
        code, err = _run(argv, capsys)
        assert code == 4 and len(err) == 1, err
        assert err[0].startswith(f"isoapprox {writer.split()[0]}: error: No space left on "
                                 "device (ENOSPC): '"), err
        assert _tree(disk) == ["filler"]


@pytest.mark.parametrize(("writer", "free_kib"), [("batch", 8), ("diagnose --plot", 40),
                                                  ("diagnose --json", 4)])
def test_a_disk_that_fills_during_the_run_leaves_nothing(tmp_path, monkeypatch, capsys,
                                                         inputs, writer, free_kib):
    with _tmpfs(tmp_path / "disk") as disk:
        _fill(disk, free_kib)
        monkeypatch.chdir(disk)
        argv = [a.replace("{IN}", str(inputs)) for a in WRITERS[writer]]
        code, err = _run(argv, capsys)
        assert code == 4 and len(err) == 1, err
        assert "No space left on device (ENOSPC)" in err[0], err
        assert _tree(disk) == ["filler"]


def test_a_batch_run_stopped_by_a_full_disk_resumes_once_there_is_room(tmp_path, monkeypatch,
                                                                       capsys):
    with _tmpfs(tmp_path / "disk") as disk:
        filler = _fill(disk, 160)
        argv = [*BATCH, "--repetitions", "400", "--chunk-size", "20", "--out", "o"]
        monkeypatch.chdir(disk)
        code, err = _run(argv, capsys)
        assert code == 4 and len(err) == 1 and "No space left on device" in err[0], err
        left = _tree(disk / "o")
        assert "journal.jsonl" in left and "results.csv" not in left
        assert not [n for n in left if n.endswith((".tmp", ".lock"))], left
        filler.unlink()
        assert _run(argv, capsys)[0] == 0
        monkeypatch.chdir(tmp_path)
        assert _run([*argv[:-1], "clean"], capsys)[0] == 0
        assert (disk / "o" / "results.csv").read_bytes() == (tmp_path / "clean" /
                                                              "results.csv").read_bytes()


def test_a_read_only_file_system_is_one_line(tmp_path, monkeypatch, capsys):
    with _tmpfs(tmp_path / "disk", "size=1m,ro") as disk:
        monkeypatch.chdir(disk)
        code, err = _run([*BATCH, "--out", "o"], capsys)
        assert code == 4 and err == ["isoapprox batch: error: Read-only file system (EROFS): "
                                     "'o'"], err
        with pytest.raises(OSError) as exc, claim_output(disk / "r.json"):
            pass
        assert exc.value.errno == errno.EROFS
