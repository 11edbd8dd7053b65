"""Count the lines of code of a Python package, by file and in total.

A line of code is a line that holds part of a Python token other than a
comment or a docstring, and is not blank.  So blank lines, lines holding only
a comment and the lines of docstrings do not count; a line of code with a
comment after it does, and so does every non-blank line of a string that
spans lines in code (a literal, not a docstring).  A docstring is a string
standing alone as a statement: the first statement of a module, class or
function, and the attribute docstrings Sphinx reads (a string below an
assignment); such a statement does nothing when the code runs.

Usage::

    python tools/count_loc.py isoapprox          # per file, then the total
    python tools/count_loc.py isoapprox --total  # the total only

The files are every ``*.py`` below the given folders (or the given files),
in sorted order; paths are shown relative to the current folder where they
can be.  The goal of issue 36 (isoapprox/ at most 19,500 lines of code) is
measured with this script.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from pathlib import Path

#: tokens that are never code: layout, and comments
_NOT_CODE = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                       tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER})


def _docstring_spans(tree: ast.AST) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions, as (row, column), of every docstring statement."""
    spans = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            spans.append(((node.lineno, node.col_offset),
                          (node.end_lineno, node.end_col_offset)))
    return spans


def count_lines(source: str) -> int:
    """The number of lines of code in the Python source ``source``.

    Raises
    ------
    SyntaxError
        When ``source`` is not valid Python.
    """
    spans = _docstring_spans(ast.parse(source))
    starts = {start for start, _ in spans}
    ends = {start: end for start, end in spans}
    lines = source.splitlines()
    code_rows: set[int] = set()
    skip_until = None  # end of the docstring statement being skipped
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if skip_until is not None:
            if tok.start < skip_until:
                continue
            skip_until = None
        if tok.start in starts:  # a docstring statement: skip its tokens
            skip_until = ends[tok.start]
            continue
        if tok.type in _NOT_CODE:
            continue
        for row in range(tok.start[0], tok.end[0] + 1):
            if row <= len(lines) and lines[row - 1].strip():
                code_rows.add(row)
    return len(code_rows)


def python_files(paths: list[Path]) -> list[Path]:
    """Every ``*.py`` file below ``paths`` (folders) or in them (files), sorted."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(p.rglob("*.py")))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return files


def count_files(files: list[Path]) -> dict[Path, int]:
    """Lines of code per file, in the order given."""
    return {f: count_lines(f.read_text(encoding="utf-8")) for f in files}


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Lines of code (non-blank, non-comment, non-docstring) of a "
                    "package, by file and in total.")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="a package folder (every *.py below it) or a Python file")
    parser.add_argument("--total", action="store_true", help="print the total only")
    args = parser.parse_args(argv)
    try:
        counts = count_files(python_files(args.paths))
    except (FileNotFoundError, SyntaxError, UnicodeDecodeError) as exc:
        parser.error(str(exc))
    total = sum(counts.values())
    if not args.total:
        width = max(len(f"{total:,}"), 5)
        for f, n in counts.items():
            print(f"{n:>{width},}  {_shown(f)}")
        print(f"{total:>{width},}  total ({len(counts)} files)")
    else:
        print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
