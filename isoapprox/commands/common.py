"""What every command shares: one-line errors and the flags of long runs.

Design notes: docs/performance.md, section ``isoapprox.commands.common``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ..exceptions import InvalidInputError, IsoapproxError

__all__ = ["USER_ERRORS", "add_run_arguments", "check_jobs", "error_exit", "guarded",
           "one_line_errors"]

#: exceptions that are a user's mistake: one line, exit status 2
USER_ERRORS = (IsoapproxError, FileNotFoundError, FileExistsError, IsADirectoryError,
               PermissionError)


def error_exit(prog: str, message: str) -> NoReturn:
    """Print ``PROG: error: MESSAGE`` on stderr and exit with status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make ``parser`` report a bad command line in one line (no usage dump)."""

    def error(message: str) -> NoReturn:
        error_exit(parser.prog, message)

    parser.error = error  # type: ignore[method-assign]
    return parser


def guarded(prog: str, func: Callable[..., Any], *args: Any) -> int:
    """``func(*args)``'s exit status; a user's mistake is one line and status 2."""
    try:
        return int(func(*args) or 0)
    except USER_ERRORS as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


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
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on the Dask cluster at ADDRESS (tcp://host:8786; needs "
                        "isoapprox[dask]); only this process writes files")
    g.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the Dask scheduler (default 10)")
    return g


def check_jobs(jobs: int) -> int:
    """``--jobs`` validated (>= 1)."""
    if jobs < 1:
        raise InvalidInputError(f"--jobs must be >= 1; got {jobs}")
    return jobs
