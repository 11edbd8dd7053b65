"""Figure saving: deterministic bytes, sidecar with source hashes."""

from __future__ import annotations

import json
import logging

import pytest

from isoapprox._lazy import matplotlib
from isoapprox.exceptions import InvalidInputError
from isoapprox.plotting._style import QUIET_LOGGERS, save_figure, style_context


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


def test_saving_a_pdf_logs_no_font_subsetting(tmp_path, caplog):
    # the PDF backend subsets fonts through fontTools, which logs every table
    # at INFO/DEBUG: a script at logging level DEBUG must not print them
    caplog.set_level(logging.DEBUG)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
    save_figure(_figure(), tmp_path, "quiet", formats=("pdf",))
    noisy = [r for r in caplog.records if r.name.split(".")[0] == "fontTools"
             or r.name.startswith("matplotlib.font_manager")]
    assert not noisy, [f"{r.name}: {r.getMessage()}" for r in noisy[:5]]
    # the levels are given back
    assert all(logging.getLogger(n).level == logging.NOTSET for n in QUIET_LOGGERS)


def test_without_the_guard_fonttools_would_log(tmp_path, caplog):
    # the check above would catch the noise: plain savefig at DEBUG logs fontTools records
    caplog.set_level(logging.DEBUG)
    fig = _figure()
    with style_context():  # TrueType fonts: subset by fontTools
        fig.savefig(tmp_path / "noisy.pdf")
    matplotlib().pyplot.close(fig)
    assert any(r.name.startswith("fontTools") for r in caplog.records)
