"""tools/count_loc.py: the lines of code of a planted package, counted by hand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: a file whose lines of code are known: each line that counts ends in "# LOC"
#: (a comment after code does not stop a line from counting), or is one of
#: UNMARKED (lines that cannot carry the mark: inside a string literal of code,
#: or ending in a backslash)
PLANTED = '''\
"""A module docstring,
spanning lines.

# not a comment: docstring text
"""

import os  # LOC
# a comment alone

X = 1  # LOC
"""An attribute docstring."""

TEXT = """a string in code
spans lines, the blank one below does not count

and ends here"""  # LOC


class A:  # LOC
    """A class docstring."""

    def f(self, a,  # LOC
          b):  # LOC
        \'\'\'A function docstring
        in single quotes.\'\'\'
        return (a +  # LOC
                b)  # LOC

    async def g(self):  # LOC
        "one-line docstring"; y = "# not a comment"  # LOC
        return y  # LOC


def h():  # LOC
    x = "not a docstring"  # LOC
    return x \\
        + os.sep  # LOC
'''
UNMARKED = 3  # "a string in code" and "spans lines, ..." in TEXT; "return x \\"


@pytest.fixture(scope="module")
def count_loc():
    spec = importlib.util.spec_from_file_location("count_loc", ROOT / "tools" / "count_loc.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_planted_file_is_counted_line_by_line(count_loc):
    marked = sum(line.endswith("# LOC") for line in PLANTED.splitlines())
    assert marked == 14
    assert count_loc.count_lines(PLANTED) == marked + UNMARKED


def test_edge_cases(count_loc):
    assert count_loc.count_lines("") == 0
    assert count_loc.count_lines("# only a comment\n\n") == 0
    assert count_loc.count_lines('"""only a docstring"""\n') == 0
    assert count_loc.count_lines("x = 1") == 1  # no newline at the end
    assert count_loc.count_lines('def f():\n    """doc"""\n') == 1
    with pytest.raises(SyntaxError):
        count_loc.count_lines("def f(:\n")


def test_command_line_by_file_and_total(count_loc, tmp_path, capsys, monkeypatch):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Package."""\n')
    (pkg / "a.py").write_text(PLANTED)
    (pkg / "sub" / "b.py").write_text("x = 1\n\n# c\ny = 2\n")
    (pkg / "notes.txt").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert count_loc.main(["pkg"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split() for line in out] == [
        ["0", "pkg/__init__.py"], ["17", "pkg/a.py"], ["2", "pkg/sub/b.py"],
        ["19", "total", "(3", "files)"]]
    assert count_loc.main(["pkg", "--total"]) == 0
    assert capsys.readouterr().out == "19\n"


def test_command_line_refuses_a_missing_path(count_loc, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        count_loc.main([str(tmp_path / "missing")])
    assert exc.value.code == 2
    assert "no such file or folder" in capsys.readouterr().err
