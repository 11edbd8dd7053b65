"""Figures say what they draw: every legend entry told apart, every shading and stacking
named, every label of a zoomed view true to the distances (tests/figure_check.py).

Each check is run on every figure the registered builders draw, and on a
figure with the defect it catches (issue 37: a zoom labelled '1,2,3,4,5' over
three dots; 'shaded: certified brackets' over a band of bounds; stacked bars
never called stacked; legend entries of one colour).
"""

from __future__ import annotations

import numpy as np
import pytest

from isoapprox._lazy import matplotlib
from isoapprox.batch import BatchConfig, Grid, run_batch
from isoapprox.batch.summary import collapse_share_rows, run_records
from isoapprox.exceptions import InvalidInputError
from isoapprox.io import read_results
from isoapprox.plotting import survey as psurvey
from isoapprox.plotting import toy as ptoy
from isoapprox.plotting._style import class_style, group_colors, style_context
from isoapprox.plotting.registry import build_figures, results_path

from .figure_check import (
    all_problems,
    legend_problems,
    meaning_problems,
    saved_problems,
    shading_problems,
    stacked_problems,
    zoom_label_problems,
)
from .test_plotting_quality import DRAWERS, SOURCES


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib().pyplot.close("all")


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory):
    """A small batch run with the default stages: two (N, n) groups, margin 0.5."""
    out = tmp_path_factory.mktemp("batch") / "run"
    config = BatchConfig(Grid(n_points=(4, 5), dims=(1, 2), margins=(0.5,), repetitions=3),
                         stages=("cheap", "ideal", "points"), chunk_size=3)
    run_batch(config, out, jobs=1, progress=False)
    return out


def _batch_drawn(path):
    doc = read_results(results_path(path))
    recs = run_records(doc, results_path(path), psurvey.BATCH_FIELDS)
    return [("batch_c_theta", psurvey.c_theta_scatter(recs)),
            ("batch_loss_iso", psurvey.loss_iso_scatter(recs)),
            ("batch_c_hist", psurvey.c_bracket_histogram(recs)),
            ("batch_collapse_share", psurvey.collapse_share_plot(collapse_share_rows(recs)))]


@pytest.mark.parametrize("experiment", sorted(SOURCES))
def test_registered_figures_say_what_they_draw(experiment):
    problems = meaning_problems(DRAWERS[experiment](read_results(SOURCES[experiment])))
    assert not problems, "\n".join(problems)


def test_batch_run_figures_are_legible_and_say_what_they_draw(batch_run):
    problems = all_problems(_batch_drawn(batch_run)) + meaning_problems(_batch_drawn(batch_run))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("given", ["folder", "summary.json", "results.csv"])
def test_figures_of_a_batch_run(batch_run, tmp_path, given):
    path = batch_run if given == "folder" else batch_run / given
    written = build_figures([path], tmp_path)
    names = sorted({p.stem for p in written if p.suffix == ".png"})
    assert names == ["batch_c_hist", "batch_c_theta", "batch_collapse_share", "batch_loss_iso"]
    assert not saved_problems(written)


def test_batch_records_carry_the_brackets(batch_run):
    recs = run_records(read_results(batch_run / "summary.json"), batch_run / "summary.json",
                       psurvey.BATCH_FIELDS)
    assert len(recs) == 4 * 3
    ok = [r for r in recs if r["c"] is not None]
    assert ok and all(r["c_lower"] <= r["c"] <= r["c_upper"] * (1 + 1e-12) for r in ok)
    rows = collapse_share_rows(recs)
    assert [r["N_over_n"] for r in rows] == [2.0, 2.5, 4.0, 5.0]
    assert all(r["configurations"] == 3 for r in rows)


def test_batch_figures_refuse_a_cheap_run_and_a_changed_table(tmp_path):
    out = tmp_path / "cheap"
    run_batch(BatchConfig(Grid(repetitions=4), stages=("cheap",)), out, jobs=1, progress=False)
    with pytest.raises(InvalidInputError, match=r"has no column 'loss'.*stage 'ideal'"):
        build_figures([out], tmp_path / "f")
    out2 = tmp_path / "ideal"
    run_batch(BatchConfig(Grid(repetitions=2), stages=("cheap", "ideal")), out2, jobs=1,
              progress=False)
    with (out2 / "results.csv").open("a") as fh:
        fh.write("\n")
    with pytest.raises(InvalidInputError, match=r"SHA-256 differs"):
        build_figures([out2], tmp_path / "g")


# --- (a) the zoomed views of the collapse figure --------------------------------------------


def _snapshots(doc, name):
    sc = ptoy._scenario(doc, name)
    return [np.asarray(ptoy._row_at(doc, name, s)["embedding"]) for s in sc["snapshot_steps"]]


@pytest.mark.parametrize("scenario", ["collapse", "separate", "margin0"])
def test_zoom_labels_name_the_merged_points_drawn_as_one_dot(scenario):
    doc = read_results(SOURCES["toy"])
    fig = ptoy.plot_collapse(doc, scenario)
    thr = ptoy._scenario(doc, scenario)["merge_threshold"]
    problems = zoom_label_problems(fig, _snapshots(doc, scenario), thr,
                                   dot_pt2=ptoy._ZOOM_DOT, name=scenario)
    assert not problems, "\n".join(problems)


def test_the_last_merge_of_the_collapse_is_labelled_by_its_dots():
    # issue 37: '1,2,3,4,5' over three dots; all five are merged at the threshold
    doc = read_results(SOURCES["toy"])
    fig = ptoy.plot_collapse(doc, "collapse")
    last = [ax for ax in fig.axes if ax.get_gid() == "zoom"][-1]
    labels = sorted(t.get_text() for t in last.texts if t.get_gid() == "zoom-label")
    merged = [t.get_text() for t in last.texts if t.get_gid() == "zoom-merged"]
    assert labels == ["1,4,5", "2", "3"]
    assert merged[0].endswith("merged: {1,2,3,4,5}")


def test_zoom_check_catches_a_label_of_every_merged_point(monkeypatch):
    doc = read_results(SOURCES["toy"])
    monkeypatch.setattr(ptoy, "drawn_groups", lambda ax, E, merged, dot: merged)
    fig = ptoy.plot_collapse(doc, "collapse")
    thr = ptoy._scenario(doc, "collapse")["merge_threshold"]
    problems = zoom_label_problems(fig, _snapshots(doc, "collapse"), thr,
                                   dot_pt2=ptoy._ZOOM_DOT)
    assert any("'1,2,3,4,5' names dots drawn apart" in p for p in problems), problems


def test_merged_groups():
    E = np.array([[0.0, 0.0], [0.05, 0.0], [0.1, 0.0], [1.0, 0.0]])
    assert ptoy.merged_groups(E, 0.06) == [[0, 1, 2], [3]]  # a chain
    assert ptoy.merged_groups(E, 0.01) == [[0], [1], [2], [3]]
    assert ptoy.merged_groups(E[:1], 0.1) == [[0]]


# --- (b) shadings, (c) stacked bars, (d) legend colours ------------------------------------


def _fig():
    plt = matplotlib().pyplot
    with style_context():
        fig, ax = plt.subplots(figsize=(3, 2))
    return fig, ax


def test_shading_check_catches_unnamed_and_invisible_shadings():
    fig, ax = _fig()
    x = np.linspace(0, 1, 20)
    ax.plot(x, x, label="curve")
    ax.fill_between(x, 0.5 * x, 0.8 * x, alpha=0.2, label="band")  # named, visible
    ax.fill_between(x, x - 1e-6, x + 1e-6, alpha=0.3)  # unnamed
    ax.fill_between(x, x - 1e-6, x + 1e-6, alpha=0.3, label="bracket")  # named, invisible
    ax.set_title("shaded: certified brackets")
    ax.legend()
    problems = shading_problems(fig)
    assert any("a shading has no legend entry" in p for p in problems)
    assert any("'bracket' is too thin to see" in p for p in problems)
    fig2, ax2 = _fig()
    ax2.fill_between(x, x - 1e-6, x + 1e-6, label="bracket: narrower than the line")
    ax2.fill_between(x, 0.5 * x, 0.8 * x, label="shaded: band")
    ax2.legend()
    assert shading_problems(fig2) == []


def test_the_curves_name_their_shading():
    doc = read_results(SOURCES["toy"])
    fig = ptoy.plot_curves(doc, "collapse")
    a2 = fig.axes[1]
    entries = [t.get_text() for t in a2.get_legend().get_texts()]
    assert any(e.startswith("shaded: $\\frac{1}{2}d_{iso}$ to $c\\,d_{iso}$") for e in entries)
    # the brackets are certified to 1e-4 or better: narrower than the lines, said in the title
    assert "certified brackets: within the line" in a2.get_title()
    assert shading_problems(fig) == []


def test_stacked_check():
    fig, ax = _fig()
    ax.hist([[1, 2, 2, 3], [2, 3, 3]], bins=3, stacked=True)
    assert stacked_problems(fig)
    ax.set_ylabel("count (stacked by margin)")
    assert stacked_problems(fig) == []
    fig2, ax2 = _fig()
    ax2.hist([1, 2, 2, 3], bins=3)
    assert stacked_problems(fig2) == []


def test_toy_constant_says_its_bars_are_stacked():
    fig = ptoy.plot_constant(read_results(SOURCES["toy"]))
    assert "stacked by margin" in fig.axes[0].get_ylabel()
    assert stacked_problems(fig) == []


def test_legend_check_catches_groups_of_one_colour(monkeypatch):
    recs = read_results(SOURCES["bounds_survey"])["records"]
    assert legend_problems(psurvey.c_theta_scatter(recs)) == []
    # the palette before issue 37: seven hues, then the same hues with other shapes
    monkeypatch.setattr(psurvey, "group_colors",
                        lambda k: [class_style(i)[0] for i in range(k)])
    problems = legend_problems(psurvey.c_theta_scatter(recs))
    assert any("look alike" in p for p in problems), problems


def test_legend_check_allows_a_shape_key_in_grey():
    fig, ax = _fig()
    ax.plot([0], [0], "o", color="k", label="digits")
    ax.plot([1], [1], "s", color="k", label="gaussian")
    ax.plot([0, 1], [0, 1], color="k", ls="--", label="bound")
    ax.legend()
    assert legend_problems(fig) == []


@pytest.mark.parametrize("k", [1, 7, 10, 11, 20, 21, 40])
def test_group_colors_are_distinct(k):
    cols = group_colors(k)
    assert len(cols) == k and len(set(cols)) == k


def test_figures_command_draws_a_batch_folder(batch_run, tmp_path, capsys):
    from isoapprox.cli import main

    assert main(["figures", str(batch_run), "--out", str(tmp_path / "f")]) == 0
    out = capsys.readouterr().out
    assert f"{batch_run / 'summary.json'}: 8 file(s)" in out
    assert (tmp_path / "f" / "batch_c_theta.pdf").exists()
    (tmp_path / "empty").mkdir()
    assert main(["figures", str(tmp_path / "empty")]) == 2
    assert "neither a results file nor the output folder of `isoapprox batch`" in \
        capsys.readouterr().err
