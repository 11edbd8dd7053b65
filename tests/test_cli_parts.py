"""The shared pieces of the command line and of io that issue 36 folded into one place.

Each is checked against an obviously-correct spelling of what it replaced.
"""

from __future__ import annotations

import csv
import importlib
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import io
from isoapprox.cli import COMMANDS, build_parser
from isoapprox.commands.common import file_name
from isoapprox.commands.diagnose import _column
from isoapprox.commands.train import _yes_no
from isoapprox.exceptions import InvalidInputError


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_module_declares_its_parts(name):
    """cli.build_parser makes each subcommand from its module's parts."""
    mod = importlib.import_module(f"isoapprox.commands.{COMMANDS[name][0]}")
    assert isinstance(mod.DESCRIPTION, str) and mod.DESCRIPTION
    assert isinstance(mod.EPILOG, str) and mod.EPILOG
    assert callable(mod.add_arguments) and callable(mod.run)
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[name]
    assert sub.get_default("func") is mod.run
    assert sub.epilog == mod.EPILOG


@settings(deadline=None, max_examples=200)
@given(st.text(max_size=40))
def test_file_name_keeps_safe_characters_and_replaces_the_rest(text):
    expected = "".join(c if c.isalnum() or c in "-_" else "_" for c in text)
    got = file_name(text)
    assert got == expected
    assert len(got) == len(text)
    assert file_name(got) == got


@pytest.mark.parametrize(("text", "value"), [("3", 3), ("0", 0), ("-1", -1), ("x0", "x0"),
                                             ("label", "label"), ("", ""), ("1.5", "1.5")])
def test_column_option_is_a_position_or_a_name(text, value):
    got = _column(text)
    assert got == value and type(got) is type(value)


def test_column_options_are_parsed_once():
    args = build_parser().parse_args(["diagnose", "e.csv", "--label-col", "2",
                                      "--index-col", "id"])
    assert args.label_column == 2 and args.index_col == "id"
    args = build_parser().parse_args(["diagnose", "e.csv"])
    assert args.label_column is None and args.index_col is None


def _span_brute(values):
    ints = sorted(values)
    if not ints or ints != list(range(ints[0], ints[0] + len(ints))):
        return None
    return ints[0], ints[-1]


@settings(deadline=None, max_examples=200)
@given(st.lists(st.integers(-50, 50), max_size=12), st.sampled_from(["{}", " {} ", "+{}"]))
def test_integer_span_of_text_cells_is_that_of_the_integers(values, form):
    cells = [form.format(v) if v >= 0 or form != "+{}" else str(v) for v in values]
    assert io._integer_span(cells) == _span_brute(values)
    assert io._integer_span(np.asarray(values, dtype=np.int64)) == _span_brute(values)


@pytest.mark.parametrize("cells", [["0", "1", "x"], ["0", "1.0", "2"], ["0", "1e0", "2"],
                                   ["0", "", "2"]])
def test_integer_span_refuses_cells_not_written_as_integers(cells):
    assert io._integer_span(cells) is None


def test_load_embeddings_forwards_every_option(tmp_path):
    path = tmp_path / "t.csv"
    rows = [[i, 0.5 * i, -1.0 * i, i % 2] for i in range(6)]
    path.write_text("idx,a,b,cls\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    E, y = io.load_embeddings(path, index_col=0, label_column="cls")
    full = io.read_embeddings(path, index_col=0, label_column="cls")
    assert E.tobytes() == full.embeddings.tobytes() and np.array_equal(y, full.labels)
    assert E.shape == (6, 2)
    with pytest.raises(TypeError):
        io.load_embeddings(path, no_such_option=1)


def test_write_csv_columns_are_the_union_in_first_seen_order(tmp_path):
    records = [{"b": 1, "a": [1, 2]}, {"c": {"k": 1.5}, "a": None}, {"d": np.float64(2.0)}]
    path = io.write_csv(tmp_path / "r.csv", records)
    with open(path, newline="") as fh:
        got = list(csv.reader(fh))
    assert got[0] == ["b", "a", "c", "d"]
    assert got[1] == ["1", json.dumps([1, 2]), "", ""]
    assert got[2] == ["", "", json.dumps({"k": 1.5}), ""]
    assert got[3] == ["", "", "", "2.0"]


def test_write_results_extra_fields_follow_the_fixed_ones(tmp_path):
    path = io.write_results(tmp_path / "r.json", experiment="x", config={}, records=[],
                            extra={"z": np.arange(2), "a": float("nan")}, csv_path=False)
    doc = json.loads(path.read_text())
    assert list(doc)[-2:] == ["z", "a"] and doc["z"] == [0, 1] and doc["a"] is None


@pytest.mark.parametrize(("given_", "expected"), [
    (["yes", "No", "TRUE", "false", "1", "0", "On", "off"],
     [True, False, True, False, True, False, True, False]),
    ([], []),
])
def test_normalize_spellings(given_, expected):
    assert _yes_no(given_) == expected


def test_normalize_refuses_other_words():
    with pytest.raises(InvalidInputError, match=r"--normalize takes yes or no; got 'maybe'"):
        _yes_no(["yes", "maybe"])
