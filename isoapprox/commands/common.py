"""What every command shares: one-line errors, option types and the flags of long runs.

Design notes: docs/dev/kernels_design.md, section ``isoapprox.commands.common``;
the behaviour every command promises: docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..exceptions import InvalidInputError, IsoapproxError
from ..runs import SYSTEM_REFUSALS, claim_output

__all__ = ["SYSTEM_ERROR_STATUS", "USER_ERRORS", "USER_ERROR_STATUS", "CommandParser",
           "SubcommandParser", "add_run_arguments", "bounded_int", "check_jobs",
           "claim_outputs", "error_exit", "file_name", "guarded", "positive_float",
           "system_failure"]

#: exceptions that are a user's mistake: one line, exit status 2
USER_ERRORS = (IsoapproxError, FileNotFoundError, FileExistsError, IsADirectoryError,
               PermissionError)

#: exit status of a user's mistake (an option, an input file, an output path)
USER_ERROR_STATUS = 2

#: exit status when the system fails the run (:func:`system_failure`: disk full,
#: permission denied, a read-only file system, a file removed underneath it)
SYSTEM_ERROR_STATUS = 4


def one_line(message: object) -> str:
    r"""``message`` as one printable line: line breaks and control characters escaped.

    A value a user typed is echoed in the error that refuses it; a control
    character in it (a record separator, a carriage return) must not break
    the one line or move the terminal's cursor.

    Examples
    --------
    >>> print(one_line("got 'a\x1eb'\nnext"))
    got 'a\x1eb'\nnext
    """
    text = str(message)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def print_error(prog: str, message: object) -> None:
    """``PROG: error: MESSAGE`` on stderr, as one line (:func:`one_line`)."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)


def error_exit(prog: str, message: str) -> NoReturn:
    """Print ``PROG: error: MESSAGE`` on stderr and exit with status 2."""
    print_error(prog, message)
    raise SystemExit(2)


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``PROG: error: MESSAGE``, status 2.

    argparse prints the whole usage before its message; a user who mistyped
    one value gets the one line that names it instead (``--help`` still shows
    the usage).  Subparsers made by :meth:`add_subparsers` are of the class
    given there (:class:`SubcommandParser` in :mod:`isoapprox.cli`).

    Examples
    --------
    >>> p = CommandParser(prog="demo")
    >>> _ = p.add_argument("--n", type=int)
    >>> p.parse_args(["--n", "3"]).n
    3
    """

    def error(self, message: str) -> NoReturn:
        error_exit(self.prog, message)


class SubcommandParser(CommandParser):
    """A subcommand's parser: an unknown argument is its own error, not the program's.

    argparse hands a subcommand's unrecognised arguments up to the top-level
    parser, whose message would name ``isoapprox`` instead of the subcommand.
    """

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None):
        ns, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras


def bounded_int(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer in ``[minimum, maximum]`` (either end optional).

    Examples
    --------
    >>> bounded_int(2, 128)("8")
    8
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if minimum is not None and maximum is not None and not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be in {minimum} ... {maximum}; got {value}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}; got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}; got {value}")
        return value

    parse.__name__ = "int"  # argparse names the type in its messages
    return parse


def positive_float(text: str) -> float:
    """An argparse ``type``: a finite number > 0.

    Examples
    --------
    >>> positive_float("2.5")
    2.5
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0; got {text}")
    return value


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered as an interrupt so that a run cleans up as after Ctrl-C."""


def _terminate(signum: int, frame: Any) -> NoReturn:
    raise Terminated


@contextlib.contextmanager
def _sigterm_interrupts() -> Any:
    """While inside, SIGTERM raises :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def system_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the operating system failing a file operation, not a mistake.

    That is an ``OSError`` raised by the system (it carries an ``errno``)
    about a named file, or a refusal of the system about none
    (:data:`isoapprox.runs.SYSTEM_REFUSALS`, a write on a full disk).  An
    ``OSError`` raised by isoapprox itself to name a user's mistake ("file
    not found: ...") has no ``errno``.

    Examples
    --------
    >>> import errno
    >>> system_failure(OSError(errno.ENOSPC, "No space left on device", "out/r.json"))
    True
    >>> system_failure(FileNotFoundError("embedding file not found: e.npz"))
    False
    """
    return (isinstance(exc, OSError) and exc.errno is not None
            and (exc.filename is not None or exc.errno in SYSTEM_REFUSALS))


def _system_message(exc: OSError) -> str:
    """``STRERROR (ENAME): 'PATH'`` (and ``-> 'PATH2'`` for a rename)."""
    text = exc.strerror or os.strerror(exc.errno)
    name = errno.errorcode.get(exc.errno)
    if name:
        text += f" ({name})"
    if exc.filename is not None:
        text += f": {os.fsdecode(exc.filename)!r}"
    if exc.filename2 is not None:
        text += f" -> {os.fsdecode(exc.filename2)!r}"
    return text


def guarded(prog: str, func: Callable[..., Any], *args: Any) -> int:
    """``func(*args)``'s exit status; a user's mistake is one line and status 2.

    A failure of the system (:func:`system_failure`: disk full, permission
    denied, a read-only file system, a file removed during the run) is one
    line naming the path and the error, and status 4.  Either way the run
    has removed what it created (a journal with finished work stays for a
    resume).  Ctrl-C (status 130) and SIGTERM (status 143) interrupt the
    run through the same path, so either one cleans up what the run created
    and releases its output lock.
    """
    try:
        with _sigterm_interrupts():
            return int(func(*args) or 0)
    except KeyboardInterrupt as exc:
        return _interrupted(prog, exc)
    except BrokenPipeError:
        # the reader of stdout went away (`isoapprox ... | head`): stop quietly,
        # as a command killed by SIGPIPE does (status 141); the run's cleanup ran
        _silence_stdout()
        return 128 + int(signal.SIGPIPE)
    except Exception as exc:
        if system_failure(exc):
            print_error(prog, _system_message(exc))
            return SYSTEM_ERROR_STATUS
        if isinstance(exc, USER_ERRORS):
            print_error(prog, exc)
            return USER_ERROR_STATUS
        # a signal's exception raised inside a C callback (numba's unpickling of
        # a cached function, for one) reaches us wrapped in a SystemError
        interrupt = _interrupt_in_chain(exc)
        if interrupt is None:
            raise
        return _interrupted(prog, interrupt)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (tests)
        pass


def _interrupted(prog: str, exc: KeyboardInterrupt) -> int:
    if isinstance(exc, Terminated):
        print(f"{prog}: terminated", file=sys.stderr)
        return 128 + int(signal.SIGTERM)
    print(f"{prog}: interrupted", file=sys.stderr)
    return 130


def _interrupt_in_chain(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt among ``exc``'s causes and contexts, or None."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt):
            return e
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
    return None


def file_name(text: str) -> str:
    """``text`` as a safe file name: letters, digits, ``-`` and ``_``; ``_`` for the rest."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def add_run_arguments(parser: argparse.ArgumentParser, *, out: Path | None, out_help: str,
                      jobs: int | None, jobs_help: str) -> argparse._ArgumentGroup:
    """Add ``--out``, ``--overwrite``, ``--resume``, ``--jobs``, ``--scheduler``."""
    g = parser.add_argument_group("run (see docs/cli.md, 'Long runs')")
    g.add_argument("--out", type=Path, default=out, metavar="PATH", help=out_help)
    g.add_argument("--overwrite", action="store_true",
                   help="discard existing results and the journal; start afresh")
    g.add_argument("--resume", action="store_true",
                   help="run even though results exist, reusing the journal's finished "
                        "units (an interrupted run of the same configuration is always "
                        "resumed)")
    g.add_argument("--jobs", type=int, default=jobs, metavar="N", help=jobs_help)
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on the Dask cluster at ADDRESS (tcp://host:8786; needs "
                        "isoapprox[dask]); only this process writes files")
    g.add_argument("--connect-timeout", type=positive_float, default=10.0, metavar="S",
                   help="seconds to wait for the Dask scheduler (default 10)")
    return g


def check_jobs(jobs: int | None) -> int:
    """``--jobs`` validated (>= 1); ``None`` (not given) is 2, or 1 on a one-core machine."""
    if jobs is None:
        return min(2, os.cpu_count() or 1)
    if jobs < 1:
        raise InvalidInputError(f"--jobs must be >= 1; got {jobs}")
    return jobs


def claim_outputs(claims: contextlib.ExitStack, *, files: dict[str, Path | None] | None = None,
                  folders: dict[str, Path | None] | None = None) -> None:
    """Check, create and lock every output (:func:`isoapprox.runs.claim_output`) on ``claims``."""
    for flag, path in (files or {}).items():
        if path is not None:
            claims.enter_context(claim_output(path, flag=flag))
    for flag, path in (folders or {}).items():
        if path is not None:
            claims.enter_context(claim_output(path, folder=True, flag=flag))
