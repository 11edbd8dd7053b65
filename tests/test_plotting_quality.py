"""Every figure at print quality, checked through matplotlib's renderer (tests/figure_check.py).

Each registered figure is drawn from result files (the committed ones of
``experiments/results/``; the diagnosis and monitor figures from small
reports and logs): fonts of at least 8 pt at the printed size, no text over
another text, a marker or a curve, PNG at 200 dpi or more with a PDF beside it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from isoapprox import MonitorHistory
from isoapprox._lazy import matplotlib
from isoapprox.diagnostics import diagnose, embedding_view
from isoapprox.io import read_results
from isoapprox.plotting import diagnose as pdiag
from isoapprox.plotting import monitor as pmon
from isoapprox.plotting import survey as psurvey
from isoapprox.plotting import sweep as psweep
from isoapprox.plotting import toy as ptoy
from isoapprox.plotting.registry import FIGURE_BUILDERS, build_figures

from . import planted
from .figure_check import all_problems, figure_problems, saved_problems

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
#: the committed result files, one per registered experiment
SOURCES = {
    "bounds_survey": RESULTS / "bounds_survey.json",
    "collapse_share": RESULTS / "collapse_share.json",
    "collapse_sweep": RESULTS / "collapse_sweep_bounded_compact.json",
    "toy": RESULTS / "toy_reference.json",
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib().pyplot.close("all")


def test_every_registered_experiment_has_a_committed_result_file():
    # a batch run's figures are drawn from a fresh run (tests/test_plotting_meaning.py)
    assert set(SOURCES) | {"batch"} == set(FIGURE_BUILDERS)
    for p in SOURCES.values():
        assert p.exists(), p


def _toy_figures(doc):
    figs = [("toy_system", ptoy.plot_toy_system(doc)),
            ("toy_iso_example", ptoy.plot_iso_example(doc))]
    for s in doc["scenarios"]:
        figs.append((f"toy_curves_{s['name']}", ptoy.plot_curves(doc, s["name"])))
        figs.append((f"toy_collapse_{s['name']}", ptoy.plot_collapse(doc, s["name"])))
    figs.append(("toy_constant", ptoy.plot_constant(doc)))
    return figs


def _sweep_figures(doc):
    summary, curve = doc.get("summary") or [], doc.get("curve_summary") or []
    return [
        ("sweep_diameter", psweep.plot_diameter_vs_batch(summary, curve)),
        ("sweep_median", psweep.plot_diameter_vs_batch(summary, (), field="median_distance")),
        ("sweep_collapse_trend", psweep.plot_collapse_trend(doc["trend"])),
        ("sweep_lower_bound", psweep.plot_lower_bound_curve(doc["lower_bound_curves"], curve)),
        ("sweep_crosscheck", psweep.plot_crosscheck(doc["crosscheck_slacks"],
                                                    doc.get("crosscheck_summary") or [],
                                                    doc.get("statements"))),
        ("sweep_triplet_diagram", psweep.plot_triplet_diagram(psweep._diagram_panels(doc))),
    ]


def _survey_figures(doc):
    recs = doc["records"]
    return [("survey_c_hist", psurvey.c_bracket_histogram(recs)),
            ("survey_loss_iso", psurvey.loss_iso_scatter(recs)),
            ("survey_c_theta", psurvey.c_theta_scatter(recs))]


DRAWERS = {
    "toy": _toy_figures,
    "collapse_sweep": _sweep_figures,
    "bounds_survey": _survey_figures,
    "collapse_share": lambda doc: [("survey_collapse_share",
                                    psurvey.collapse_share_plot(doc["records"]))],
}


@pytest.mark.parametrize("experiment", sorted(SOURCES))
def test_registered_figures_are_legible(experiment):
    figs = DRAWERS[experiment](read_results(SOURCES[experiment]))
    problems = all_problems(figs)
    assert not problems, "\n".join(problems)


def test_triplet_diagram_is_legible():
    panel = {"s_ap": [0.9, 0.5, -0.2, 0.1], "s_an": [-0.5, 0.6, 0.3, -0.8],
             "hard_fraction": 0.5, "n_anchors": 4}
    fig = psweep.plot_triplet_diagram([{"title": "batch-hard (raw)\ndigits, N = 32, n = 2",
                                        "early": panel, "late": panel}] * 2)
    problems = all_problems([("sweep_triplet_diagram", fig)])
    assert not problems, "\n".join(problems)


def test_saved_files_are_print_resolution_with_a_pdf_beside(tmp_path):
    # one builder is enough: every figure goes through the same save_figure
    written = build_figures([SOURCES["collapse_share"]], tmp_path)
    pngs = [p for p in written if p.suffix == ".png"]
    assert pngs
    problems = saved_problems(pngs)
    assert not problems, "\n".join(problems)


# --- diagnosis and monitor figures ----------------------------------------------------------


def _report(rng, P, K=3, n=4, merged=0):
    """A collapse report of ``P`` classes; the first ``merged`` classes share one centre."""
    E, y = planted.collapsed(rng, P=P, K=K, n=n)
    centres = 3.0 * rng.normal(size=(P, n))
    centres[:merged] = centres[0]
    E = centres[y] + 0.01 * rng.normal(size=E.shape)
    rep = diagnose(E, y)
    rep["file"] = "planted.npz"
    rep["data"]["margin"] = 0.2
    rep["view"] = embedding_view(E, y, ideal=E + 0.5 * rng.normal(size=E.shape))
    rep["theory"] = {"d_iso": 0.38, "d_iso_lower": 0.3, "d_iso_upper": 0.38,
                     "d_haus": 0.2, "d_haus_lower": 0.2, "d_haus_upper": 0.2,
                     "kind": "class-collapsed", "d_star": 0.3804}
    return rep


@pytest.mark.parametrize("P,merged", [(6, 0), (50, 0), (50, 6)])
def test_diagnose_figures_are_legible(rng, tmp_path, P, merged):
    rep = _report(rng, P, merged=merged)
    written = pdiag.diagnose_figures(rep, tmp_path)
    assert not saved_problems(written)
    fig = pdiag.plot_embedding_view(rep["view"], title="t",
                                     merging=rep["classes"].get("merging"))
    problems = figure_problems(fig, name="diagnose_view")
    assert not problems, "\n".join(problems)


def test_history_figure_is_legible(tmp_path):
    recs = [{"kind": "header", "format": "isoapprox-monitor", "format_version": 1,
             "config": {"margin": 0.2}}]
    for k, step in enumerate(range(0, 200, 10)):
        d = 2.0 * 0.97 ** step
        recs.append({"kind": "update", "step": step, "call": k, "loss": 0.2 + d / 10,
                     "stats": {"diameter": d, "batch_hard_mean": 0.2 + d / 20,
                               "batch_hard_max": 0.2 + d / 10, "max_class_diameter": d / 3,
                               "min_class_gap": d / 5, "active_fraction": 1 - d / 2,
                               "violated_fraction": 0.5 - d / 4,
                               "collapsed_share": min(1.0, step / 150)},
                     "signatures": {"all_distances_small": step >= 120,
                                    "stuck_at_margin": step >= 100}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = MonitorHistory.from_records(recs)
    fig = pmon.plot_history(h)
    problems = figure_problems(fig, name="history")
    assert not problems, "\n".join(problems)
    assert not saved_problems(pmon.history_figures(h, tmp_path))
