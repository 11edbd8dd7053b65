"""Property: any command line is refused in one line before any work, or reaches the work.

Hypothesis draws a subcommand and up to five of its options (from the
parser itself, so a new option is fuzzed without touching this file) with
values from a list of hostile ones: negative, huge, NaN, empty, text where
a number goes, paths outside the folder, existing files of the wrong kind.
The work each command would start (the toy, the sweep, the batch engine,
building figures, the theory section) is replaced by a sentinel, so every
example is bounded; ``diagnose`` runs for real on an 8-point file.  What
must hold for every draw:

- either the sentinel is reached (the arguments passed validation), or
- the exit status is 2 (a user's mistake), 4 (the system refused a path),
  0 or 3 (``diagnose`` ran; 3 when ``--fail-on`` matched), with exactly one
  line on stderr for 2 and 4, no traceback, and, for 2 and 4, nothing left
  behind outside the working folder (an output named ``../outside`` is not
  created by a refused run).

The scheduler options (``--scheduler``, ``--workers``) are left out: they
start or connect to a cluster before any check could fail.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import isoapprox.commands.batch as cmd_batch
import isoapprox.commands.toy as cmd_toy
import isoapprox.diagnostics as diagnostics_pkg
import isoapprox.plotting.registry as registry
import isoapprox.train as train_pkg
from isoapprox.cli import build_parser, main

from .conftest import examples

pytestmark = pytest.mark.property

#: options that start or reach a cluster before any argument could be refused
SKIP = {"--scheduler", "--workers", "--help", "-h", "--version"}

#: hostile values (files named here exist in the working folder)
VALUES = [
    "0", "-1", "1", "2", "3", "0.5", "-0.5", "1e308", "1e400", "-1e400", "nan", "inf",
    "-inf", "99999999999999999999", "x", "", " ", "1,2", "0,1,nope", "..", "../outside",
    "/proc/no-such-dir/f", "a.json", "r.npz", "out", "good.npz", "bad.csv", "afile",
    "figs", "quick", "default", "all", "any", "NAME=1", "partial_collapse=0.5",
]


class ReachedWork(BaseException):
    """Raised where a command would start its work (not an Exception: nothing swallows it)."""


def _reached(*args, **kwargs):
    raise ReachedWork


def _options(parser: argparse.ArgumentParser, command: str) -> list[argparse.Action]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions
            if a.option_strings and not set(a.option_strings) & SKIP]


PARSER = build_parser()
COMMANDS = ("toy", "diagnose", "train", "batch", "figures")


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(COMMANDS))
    actions = _options(PARSER, command)
    argv = [command]
    if command in ("diagnose", "figures"):
        argv.append(draw(st.sampled_from(["good.npz", "bad.csv", "afile", "missing.npz",
                                          "r.json", "good.npz"])))
    for action in draw(st.lists(st.sampled_from(actions), max_size=5)):
        argv.append(draw(st.sampled_from(action.option_strings)))
        if action.nargs == 0:
            continue
        argv.append(draw(st.one_of(st.sampled_from(VALUES),
                                   st.text(min_size=0, max_size=6))))
    return argv


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    work = d / "work"
    work.mkdir()
    rng = np.random.default_rng(0)
    np.savez(work / "good.npz", embeddings=rng.normal(size=(8, 2)),
             labels=[0, 0, 1, 1, 2, 2, 3, 3])
    (work / "bad.csv").write_bytes(bytes(range(128, 256)) * 4)
    (work / "afile").write_text("not a folder\n")
    (work / "r.json").write_text('{"experiment": "nothing"}\n')
    return d


def _tree(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*") if "work" not in p.parts[len(d.parts):][:1]}


@settings(max_examples=examples(400), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(argv=command_lines())
def test_any_command_line_is_one_line_or_reaches_the_work(argv, folder, monkeypatch):
    before = _tree(folder)
    err = io.StringIO()
    out = io.StringIO()
    cwd = os.getcwd()
    with monkeypatch.context() as m:
        m.setattr(cmd_toy, "run_toy", _reached)
        m.setattr(cmd_batch, "run_batch", _reached)
        m.setattr(train_pkg, "run_sweep", _reached)
        m.setattr(registry, "build_figures", _reached)
        m.setattr(diagnostics_pkg, "diagnose_theory", _reached)
        m.setattr(diagnostics_pkg, "diagnose_batches", _reached)
        os.chdir(folder / "work")
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                status = main(argv + ["-q"])
        except ReachedWork:
            event(f"{argv[0]}: reached the work")
            return
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            status = exc.code
        finally:
            os.chdir(cwd)
    text = err.getvalue()
    event(f"{argv[0]}: status {status}")
    assert "Traceback" not in text, (argv, text)
    assert status in (0, 2, 3, 4), (argv, status, text)
    if status in (2, 4):
        lines = [line for line in text.splitlines() if line.strip()]
        assert len(lines) == 1, (argv, text)
        assert lines[0].startswith(f"isoapprox {argv[0]}: error:"), (argv, text)
        # a refused run leaves nothing behind, wherever its outputs pointed
        assert _tree(folder) == before, argv
