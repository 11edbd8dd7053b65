"""Figure saving: deterministic bytes, sidecar with source hashes."""

from __future__ import annotations

import json

import pytest

from isoapprox._lazy import matplotlib
from isoapprox.exceptions import InvalidInputError
from isoapprox.plotting._style import save_figure, style_context


def _figure():
    plt = matplotlib().pyplot
    with style_context():
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot([0, 1, 2], [1, 0, 2], label="x")
        ax.legend()
    return fig


def test_save_figure_is_deterministic_and_records_sources(tmp_path):
    src = tmp_path / "r.json"
    src.write_text('{"a": 1}')
    files1 = save_figure(_figure(), tmp_path / "a", "demo", sources=[src], description="d")
    files2 = save_figure(_figure(), tmp_path / "b", "demo", sources=[src], description="d")
    assert [p.name for p in files1] == ["demo.png", "demo.pdf", "demo.json"]
    for p1, p2 in zip(files1, files2, strict=True):
        assert p1.read_bytes() == p2.read_bytes(), p1.name
    side = json.loads(files1[-1].read_text())
    assert side["sources"][0]["sha256"] == __import__("hashlib").sha256(b'{"a": 1}').hexdigest()
    assert files1[0].stat().st_size > 1000


def test_save_figure_errors(tmp_path):
    with pytest.raises(InvalidInputError, match=r"`name` must use letters, digits"):
        save_figure(_figure(), tmp_path, "bad name")
    with pytest.raises(
        InvalidInputError, match=r"`formats` must hold 'png', 'pdf' or 'svg'; got 'jpg'"
    ):
        save_figure(_figure(), tmp_path, "x", formats=("jpg",))
