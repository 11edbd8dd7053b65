"""Figure saving: deterministic bytes, sidecar with source hashes."""

from __future__ import annotations

import json
import logging
import multiprocessing

import pytest

from isoapprox._lazy import matplotlib
from isoapprox.exceptions import InvalidInputError
from isoapprox.plotting._style import (
    QUIET_LOGGERS,
    FigureTask,
    save_figure,
    save_figures,
    style_context,
)


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


def _blank_plot():
    return matplotlib().pyplot.figure(figsize=(1, 1))


def _failing_plot():
    raise InvalidInputError("figure data: no records to draw")


def test_figure_task_refuses_what_a_worker_could_not_draw():
    def nested():
        return _blank_plot()

    for plot in (lambda: _blank_plot(), nested):
        with pytest.raises(InvalidInputError, match="'f1': `plot` must be a module-level"):
            FigureTask("f1", plot)
    with pytest.raises(InvalidInputError, match="letters, digits"):
        FigureTask("f 1", _blank_plot)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_figure_that_fails_fails_the_call_with_its_message(tmp_path, jobs):
    """In this process or in a worker: the figure's own error reaches the caller
    (the command line prints it as one line), and no worker is left running."""
    tasks = [FigureTask("blank", _blank_plot), FigureTask("broken", _failing_plot)]
    with pytest.raises(InvalidInputError, match="figure data: no records to draw"):
        save_figures(tasks, tmp_path, jobs=jobs)
    assert not (tmp_path / "broken.png").exists()
    # the pool is shut down without waiting (its workers exit in the background): each
    # worker ends on its own, none is left running
    for child in multiprocessing.active_children():
        child.join(timeout=60)
    assert multiprocessing.active_children() == []


def test_save_figures_hashes_each_source_once(tmp_path, monkeypatch):
    import isoapprox.plotting._style as style

    src = tmp_path / "r.json"
    src.write_text("{}")
    calls = []
    real = style.file_sha256
    monkeypatch.setattr(style, "file_sha256", lambda *a, **k: calls.append(a) or real(*a, **k))
    tasks = [FigureTask(f"f{i}", _blank_plot) for i in range(3)]
    save_figures(tasks, tmp_path / "out", sources=[src])
    assert len(calls) == 1
    sides = [json.loads((tmp_path / "out" / f"f{i}.json").read_text()) for i in range(3)]
    assert all(s["sources"] == sides[0]["sources"] != [] for s in sides)
