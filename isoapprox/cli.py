"""The ``isoapprox`` command line: one program, one subcommand per job.

Each subcommand lives in :mod:`isoapprox.commands` as a module with
``DESCRIPTION`` (filled to 78 columns unless ``FILL_DESCRIPTION = False``),
``EPILOG`` (printed as written), ``add_arguments(parser)`` and ``run(args)``;
:func:`build_parser` makes the subcommand's parser and adds ``-v``/``-q``.

Exit statuses: 0 success; 2 a user's mistake (bad file, bad value: one
line on stderr, never the usage, never a traceback); 3 ``diagnose
--fail-on`` found what it was asked to fail on; 4 a failure of the system
(disk full, permission denied, a file removed during the run: one line
naming the path); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); an
internal failure keeps its traceback (:mod:`isoapprox.commands.common`, the
one place that formats errors).  Long sweeps show progress bars on stderr
unless ``--quiet`` (:func:`isoapprox.show_progress`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import textwrap
from collections.abc import Sequence

from ._progress import show_progress
from ._version import __version__
from .commands.common import CommandParser, SubcommandParser, guarded

__all__ = ["build_parser", "main"]

#: subcommand name -> (module in isoapprox.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "toy": ("toy", "start here: a 5-point toy in the plane, sequential collapse, the "
                   "constant c; results and figures"),
    "diagnose": ("diagnose", "collapse diagnosis of an embedding file: statistics, "
                             "signatures, verdict"),
    "train": ("train", "train numpy networks with triplet losses; resumable collapse sweeps"),
    "batch": ("batch", "evaluate the bounds over a grid of random configurations (local or Dask)"),
    "figures": ("figures", "rebuild figures from results files (nothing is recomputed)"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = CommandParser(
        prog="isoapprox",
        description=(
            "Numerical geometry of isometric approximation for deep metric learning: "
            "triplet losses with hard negative mining, distances to the "
            "triplet-separated set, collapse diagnosis."
        ),
    )
    parser.add_argument("--version", action="version", version=f"isoapprox {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                parser_class=SubcommandParser)
    sub.required = True
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(f".commands.{module}", __package__)
        description = mod.DESCRIPTION
        if getattr(mod, "FILL_DESCRIPTION", True):
            description = textwrap.fill(description, width=78)
        p = sub.add_parser(name, help=help_text, description=description, epilog=mod.EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
        p.add_argument("-v", "--verbose", action="count", default=0,
                       help="more log output (repeat for debug)")
        p.add_argument("-q", "--quiet", action="store_true",
                       help="only warnings and errors; no progress bars")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.quiet else (logging.DEBUG if args.verbose > 1 else logging.INFO)
    # the chosen level is isoapprox's own; other libraries' loggers (e.g. fontTools,
    # which logs every font subset of a PDF at INFO) stay at WARNING
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    logging.getLogger("isoapprox").setLevel(level)
    with show_progress(not args.quiet):
        return guarded(f"isoapprox {args.command}", args.func, args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
