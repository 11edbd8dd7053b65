"""What every subcommand promises (docs/cli.md, 'What every command promises').

A user's mistake is one line on stderr, ``isoapprox CMD: error: ...``, and
exit status 2 (no usage dump, no traceback), found before any work and
leaving nothing behind; an output is written by one run at a time; a
failed run removes what it created; local workers die with their parent.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from isoapprox.cli import main
from isoapprox.commands.common import Terminated, guarded
from isoapprox.io import write_results

ROOT = Path(__file__).resolve().parent.parent

#: a directory that cannot be created on Linux, even by root
NO_DIR = "/proc/isoapprox-no-such-dir"

#: a tiny training configuration (the training cases fail before training)
TRAIN = ["--dataset", "gaussian", "--set", "n_classes=12", "--set", "n_train_classes=8",
         "--set", "per_class=8", "--set", "input_dim=5", "--hidden", "8", "--steps", "10",
         "--log-every", "5", "--no-estimate", "-q"]


@pytest.fixture
def inputs(tmp_path_factory):
    """Input files, in a folder of their own."""
    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    np.savez(d / "good.npz", embeddings=rng.normal(size=(8, 2)), labels=[0, 0, 1, 1, 2, 2, 3, 3])
    (d / "binary.csv").write_bytes(bytes(range(128, 256)) * 8)
    (d / "afile").write_text("not a folder\n")
    write_results(d / "toy.json", experiment="toy", config={}, records=[])
    return d


# (subcommand, bad input, message): {IN} is the inputs folder
MATRIX = [
    ("toy", ["--steps", "0"], "--steps must be >= 1; got 0"),
    ("toy", ["--steps", "x"], "argument --steps: invalid int value: 'x'"),
    ("toy", ["--seed", "-1"], "--seed must be >= 0; got -1"),
    ("toy", ["--margin", "0"], "--margin must be > 0"),
    ("toy", ["--n-random", "-1"], "--n-random must be >= 0; got -1"),
    ("toy", ["--scenario", "nope"], "--scenario must be one of"),
    ("toy", ["--perturbation", "1"], "--perturbation must be a relative size"),
    ("toy", ["--jobs", "0"], "--jobs must be >= 1; got 0"),
    ("toy", ["--connect-timeout", "-1"], "--connect-timeout: must be a finite number > 0"),
    ("toy", ["--out", "r.txt"], "--out must name a .json file"),
    ("toy", ["--out", "{IN}/afile/r.json"], "cannot be created"),
    ("toy", ["--figures", "{IN}/afile"], "--figures is a file, not a folder"),
    ("toy", ["--figures", NO_DIR], f"--figures '{NO_DIR}' cannot be created"),
    ("toy", ["--bogus"], "unrecognized arguments: --bogus"),
    ("batch", [], "`--out DIR` is required"),
    ("batch", ["--n-points", "0"], "argument --n-points: must be >= 1; got 0"),
    ("batch", ["--margins", "abc"], "argument --margins: invalid float value: 'abc'"),
    ("batch", ["--margins", "-1"], "`margins` must be >= 0"),
    ("batch", ["--chunk-size", "-3"], "argument --chunk-size: must be >= 0; got -3"),
    ("batch", ["--format", "parquet"], "argument --format: invalid choice: 'parquet'"),
    ("batch", ["--layouts", "sorted"], "argument --layouts: invalid choice: 'sorted'"),
    ("batch", ["--workers", "-1"], "argument --workers: must be >= 0; got -1"),
    ("batch", ["--repetitions", "0"], "argument --repetitions: must be >= 1; got 0"),
    ("batch", ["--seed", "-1"], "argument --seed: must be >= 0; got -1"),
    ("batch", ["--spread", "0"], "`spread` must be > 0"),
    ("batch", ["--objective", "nope"], "`objective` must be one of"),
    ("batch", ["--stages", "nope"], "unknown stage 'nope'"),
    ("batch", ["--n-points", "5", "--classes", "5"], "`n_classes` must be at most"),
    ("batch", ["--connect-timeout", "nan"], "--connect-timeout: must be a finite number > 0"),
    ("batch", ["--save-best", "nonexistent_column"],
     "`--save-best` must be a numeric column of the run; got 'nonexistent_column'"),
    ("batch", ["--out", "{IN}/afile"], "--out is a file, not a folder"),
    ("batch", ["--out", NO_DIR], f"--out '{NO_DIR}' cannot be created"),
    ("batch", ["--bogus"], "unrecognized arguments: --bogus"),
    ("train", ["--dim", "1"], "argument --dim: must be in 2 ... 128; got 1"),
    ("train", ["--dim", "129"], "argument --dim: must be in 2 ... 128; got 129"),
    ("train", ["--batch-size", "513"], "argument --batch-size: must be in 4 ... 512; got 513"),
    ("train", ["--batch-size", "3"], "argument --batch-size: must be in 4 ... 512; got 3"),
    ("train", ["--set", "embedding_dim=1"],
     "--set embedding_dim (as --dim): must be in 2 ... 128; got 1"),
    ("train", ["--set", "batch_size=1024"],
     "--set batch_size (as --batch-size): must be in 4 ... 512; got 1024"),
    ("train", ["--jobs", "0"], "--jobs must be >= 1; got 0"),
    ("train", ["--root-seed", "-1"], "--root-seed must be >= 0; got -1"),
    ("train", ["--connect-timeout", "0"], "--connect-timeout: must be a finite number > 0"),
    ("train", ["--normalize", "maybe"], "--normalize takes yes or no"),
    ("train", ["--out", "r.txt"], "--out must name a .json file"),
    ("train", ["--out", f"{NO_DIR}/r.json"], "cannot be created"),
    ("train", ["--bogus"], "unrecognized arguments: --bogus"),
    ("diagnose", ["{IN}/binary.csv", "--no-theory"], "is not a CSV text file"),
    ("diagnose", ["{IN}/missing.npz"], "embedding file not found"),
    ("diagnose", ["--bogus"], "unrecognized arguments: --bogus"),
    ("diagnose", ["{IN}/good.npz", "--quantiles", ""], "`--quantiles` must be comma-separated"),
    ("diagnose", ["{IN}/good.npz", "--quantiles", "2"], "`quantiles` must lie in [0, 1]"),
    ("diagnose", ["{IN}/good.npz", "--n-batches", "0"], "argument --n-batches: must be >= 1"),
    ("diagnose", ["{IN}/good.npz", "--samples-per-class", "1"],
     "argument --samples-per-class: must be >= 2"),
    ("diagnose", ["{IN}/good.npz", "--theory-batches", "-1"],
     "`--theory-batches` must be >= 0; got -1"),
    ("diagnose", ["{IN}/good.npz", "--margin", "-1"], "`margin` must be >= 0"),
    ("diagnose", ["{IN}/good.npz", "--out", "i.txt"], "`--out` must name a .npz file"),
    ("diagnose", ["{IN}/good.npz", "--out", f"{NO_DIR}/i.npz"], "--out"),
    ("diagnose", ["{IN}/good.npz", "--json", f"{NO_DIR}/r.json"], "--json"),
    ("diagnose", ["{IN}/good.npz", "--plot", NO_DIR], f"--plot '{NO_DIR}' cannot be created"),
    ("diagnose", ["--history", "{IN}/binary.csv"], "is not a text file"),
    ("figures", [], "give at least one results file"),
    ("figures", ["{IN}/good.npz"], "is not a results file: not UTF-8 text"),
    ("figures", ["{IN}/binary.csv"], "is not a results file: not UTF-8 text"),
    ("figures", ["{IN}/missing.json"], "results file not found"),
    ("figures", ["{IN}/toy.json", "--out", NO_DIR], f"--out '{NO_DIR}' cannot be created"),
    ("figures", ["--bogus"], "unrecognized arguments: --bogus"),
]


def _argv(cmd: str, bad: list[str], inputs: Path) -> list[str]:
    bad = [a.replace("{IN}", str(inputs)) for a in bad]
    if cmd == "batch" and bad and "--out" not in bad:
        bad = [*bad, "--out", "run"]
    if cmd == "train":
        bad = [*TRAIN, *bad]
    return [cmd, *bad]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(("cmd", "bad", "message"), MATRIX,
                         ids=[f"{c}:{' '.join(b) or '-'}" for c, b, _ in MATRIX])
def test_user_error_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, capsys, inputs,
                                                   cmd, bad, message):
    if NO_DIR in " ".join(bad) and not sys.platform.startswith("linux"):
        pytest.skip("needs /proc")
    monkeypatch.chdir(tmp_path)
    before = _tree(inputs)
    try:
        code = main(_argv(cmd, bad, inputs))
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"isoapprox {cmd}: error: "), err
    assert message in lines[0], err
    assert "Traceback" not in err and "usage:" not in err
    # found before any work, and nothing left behind
    assert _tree(tmp_path) == [] and _tree(inputs) == before


def test_one_line_from_a_real_process(inputs, tmp_path):
    """The same through ``python -m isoapprox`` (the logging and exit wiring)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "isoapprox", "diagnose",
                           str(inputs / "binary.csv"), "--no-theory"],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a CSV text file" in lines[0], proc.stderr


# ---------------------------------------------------------------------------
# one writer per output
# ---------------------------------------------------------------------------

_HOLD = """
import sys
from isoapprox.runs import output_lock
with output_lock(sys.argv[1], folder=sys.argv[2] == "folder"):
    print("locked", flush=True)
    sys.stdin.read()
"""


class _Holder:
    """Another process that holds an output's lock until closed."""

    def __init__(self, out: Path, folder: bool) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(out),
                                      "folder" if folder else "file"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        assert self.proc.stdout.readline().strip() == "locked"

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.mark.parametrize("cmd", ["batch", "train"])
def test_a_second_writer_is_refused(tmp_path, capsys, cmd):
    if cmd == "batch":
        out = tmp_path / "run"
        out.mkdir()
        argv = ["batch", "--out", str(out), "--repetitions", "4", "--jobs", "1", "-q"]
    else:
        out = tmp_path / "r.json"
        argv = ["train", *TRAIN, "--out", str(out)]
    holder = _Holder(out, folder=cmd == "batch")
    try:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert re.fullmatch(rf"isoapprox {cmd}: error: --out '.*' is in use by another "
                            rf"isoapprox run \(pid {holder.proc.pid}\); wait for it to finish "
                            r"or choose another --out", err[0]), err
    finally:
        holder.close()
    # the other writer's files are untouched, and the lock went with it
    assert sorted(p.name for p in tmp_path.rglob("*")) == (["run"] if cmd == "batch" else [])


def test_a_stale_lock_file_does_not_block(tmp_path, capsys):
    """A run killed with SIGKILL leaves its lock file; the lock itself died with it."""
    out = tmp_path / "run"
    out.mkdir()
    (out / ".isoapprox.lock").write_text("999999\n")
    assert main(["batch", "--out", str(out), "--repetitions", "4", "--jobs", "1", "-q"]) == 0
    assert not (out / ".isoapprox.lock").exists()
    assert (out / "results.csv").exists()


# ---------------------------------------------------------------------------
# a failed run leaves nothing new
# ---------------------------------------------------------------------------


def test_failed_scheduler_connection_leaves_nothing(tmp_path, capsys):
    pytest.importorskip("distributed")
    out = tmp_path / "new" / "run"
    code = main(["batch", "--out", str(out), "--repetitions", "2", "-q",
                 "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "0.5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "could not connect" in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_failed_run_keeps_the_users_files(tmp_path, capsys):
    """Cleanup removes only what the run created."""
    pytest.importorskip("distributed")
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    code = main(["batch", "--out", str(out), "--repetitions", "2", "-q",
                 "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "0.5"])
    assert code == 2
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


# ---------------------------------------------------------------------------
# help texts
# ---------------------------------------------------------------------------


def _help(capsys, cmd: str) -> str:
    with pytest.raises(SystemExit):
        main([cmd, "--help"])
    return capsys.readouterr().out


def test_batch_help_examples_are_clean_commands(capsys):
    text = _help(capsys, "batch")
    examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(examples) >= 6
    for line in examples:
        assert "  " not in line.strip(), line  # no runs of stray spaces inside a command
    for line in examples[:-1]:
        if line.rstrip().endswith("\\"):
            assert line.endswith(" \\"), line


def test_toy_help_gives_the_readme_time(capsys):
    text = " ".join(_help(capsys, "toy").split())
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "minute" not in text
    seconds = re.search(r"about (\d+) s", text).group(1)
    assert f"about {seconds} s" in readme


# ---------------------------------------------------------------------------
# workers die with their parent
# ---------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _descendants(pid: int) -> set[int]:
    kids, out, todo = _children(), set(), [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_and_resource_tracker_die_with_a_killed_parent(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "isoapprox", "batch", "--out", str(out), "--workers", "2",
         "--repetitions", "100000", "--chunk-size", "8", "--stages", "cheap", "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    family: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        journal = out / "journal.jsonl"
        # a finished chunk: both workers are up and past their initializer
        while time.monotonic() < deadline:
            if journal.exists() and journal.read_text().count("\n") >= 3:
                break
            assert proc.poll() is None, "the batch run ended early"
            time.sleep(0.2)
        else:
            pytest.fail("no chunk finished in time")
        family = _descendants(proc.pid)
        assert len(family) >= 3, family  # two workers and the resource tracker
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in family):
            time.sleep(0.2)
        assert not [p for p in family if _alive(p)]
    finally:  # whatever the outcome, nothing this test started survives it
        family |= _descendants(proc.pid) if proc.poll() is None else set()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for p in family:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def _batch_args(out: Path) -> list[str]:
    return [sys.executable, "-m", "isoapprox", "batch", "--out", str(out), "--n-points", "6",
            "--classes", "2", "3", "--repetitions", "400", "--chunk-size", "20", "--stages",
            "cheap", "reference", "--workers", "0", "-q"]


def test_sigterm_cleans_up_like_an_interrupt_and_the_run_resumes(tmp_path):
    """SIGTERM (a scheduler's or `kill`'s default) ends a run with status 143 and one
    line, its lock released and no half-written file; the journal resumes."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_batch_args(out), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count("\n") >= 3:
            break
        assert proc.poll() is None, "the batch run ended early"
        time.sleep(0.01)
    else:
        proc.kill()
        pytest.fail("no chunk finished in time")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip().splitlines() == ["isoapprox batch: terminated"]
    left = sorted(p.name for p in out.iterdir())
    assert not [n for n in left if n.endswith((".lock", ".tmp"))], left
    assert "results.csv" not in left and journal.exists()
    resumed = subprocess.run(_batch_args(out)[:-1], capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert "reused" in resumed.stdout
    clean = subprocess.run(_batch_args(tmp_path / "clean"), capture_output=True, text=True,
                           env=env)
    assert clean.returncode == 0, clean.stderr
    assert (out / "results.csv").read_bytes() == (tmp_path / "clean" / "results.csv").read_bytes()


@pytest.mark.parametrize(("interrupt", "status", "word"),
                         [(Terminated(), 143, "terminated"),
                          (KeyboardInterrupt(), 130, "interrupted")])
def test_an_interrupt_wrapped_by_a_c_callback_still_ends_the_run_cleanly(
        interrupt, status, word, capsys):
    """A signal's exception raised inside a C callback (numba unpickling a cached
    function when SIGTERM lands) arrives as a SystemError chained to it: still
    status 143 / 130 and one line, not a traceback; anything else propagates."""

    def wrapped():
        try:
            raise interrupt
        except KeyboardInterrupt as exc:
            raise SystemError("returned a result with an exception set") from exc

    assert guarded("isoapprox batch", wrapped) == status
    assert capsys.readouterr().err == f"isoapprox batch: {word}\n"

    def other():
        raise SystemError("unrelated")

    with pytest.raises(SystemError, match="unrelated"):
        guarded("isoapprox batch", other)


def test_a_closed_stdout_is_no_traceback():
    """``isoapprox diagnose FILE | head -0``: the reader leaves before the report is
    written; the command stops quietly (status 141 as after SIGPIPE, or 0 when the
    report fit in the pipe before the reader left), never with a traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "isoapprox", "diagnose", str(ROOT / "examples" / "collapsed.npz"),
         "--margin", "0.2", "--no-theory", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=300) in (0, 141)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
