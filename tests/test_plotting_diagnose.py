"""Diagnosis figures drawn from report data only: view, histogram, files."""

from __future__ import annotations

import numpy as np
import pytest

from isoapprox.diagnostics import diagnose, embedding_view
from isoapprox.exceptions import InvalidInputError
from isoapprox.plotting.diagnose import (
    diagnose_figures,
    plot_distance_histogram,
    plot_embedding_view,
)

from . import planted


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _legend(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def _report(rng, *, theory=True):
    E, y = planted.collapsed(rng, P=6, K=3, n=2)
    rep = diagnose(E, y)
    rep["file"] = "planted.npz"
    rep["data"]["margin"] = 0.2
    G = E + rng.normal(size=E.shape)
    rep["view"] = embedding_view(E, y, ideal=G if theory else None)
    if theory:
        rep["theory"] = {"d_iso": 0.38, "d_iso_lower": 0.3, "d_iso_upper": 0.38,
                         "d_haus": 0.2, "d_haus_lower": 0.2, "d_haus_upper": 0.2,
                         "kind": "class-collapsed", "d_star": 0.3804}
    return rep


def test_view_with_and_without_the_ideal(rng):
    rep = _report(rng)
    fig = plot_embedding_view(rep["view"], title="t")
    ax = fig.axes[0]
    # one filled and one hollow scatter per class, plus the displacement segments
    assert len(ax.collections) == 6 * 2 + 1
    assert "nearest ideal f* (moved onto E)" in _legend(fig)
    # the counts title the legend below the axes (never over the points)
    assert fig.axes[0].get_legend().get_title().get_text().startswith(
        "6 classes (hue and marker); 18 points")
    rep = _report(rng, theory=False)
    fig = plot_embedding_view(rep["view"])
    assert len(fig.axes[0].collections) == 6 and _legend(fig) == ["embedding E"]


def test_histogram_marks_and_off_scale_note():
    dist = {"histogram_counts": [3, 0, 2], "histogram_edges": [1e-4, 2e-4, 3e-4, 4e-4],
            "quantiles": {"0.5": 2.5e-4}, "n_pairs": 5, "max": 4e-4}
    fig = plot_distance_histogram(dist, margin=0.2, d_star=0.38)
    note = " ".join(_texts(fig))
    assert "off scale to the right" in note and "margin = 0.2" in note
    assert "D*(P, n, margin) = 0.38" in note
    assert _legend(fig) == ["pair distances", "median = 0.00025"]
    dist2 = dict(dist, histogram_edges=[0.0, 0.1, 0.2, 0.3], max=0.3)
    fig = plot_distance_histogram(dist2, margin=0.2, d_star=0.2)
    assert "margin = D*(P, n, margin) = 0.2" in _legend(fig) and not _texts(fig)
    # every distance equal: one bar of visible width
    fig = plot_distance_histogram({"histogram_counts": [6], "histogram_edges": [0.0, 0.0],
                                   "quantiles": {}, "n_pairs": 6, "max": 0.0})
    assert len(fig.axes[0].patches) == 1


def test_diagnose_figures_are_deterministic(tmp_path, rng):
    rep = _report(rng)
    a = diagnose_figures(rep, tmp_path / "a")
    b = diagnose_figures(rep, tmp_path / "b")
    assert [p.name for p in a] == ["diagnose_view.png", "diagnose_view.pdf", "diagnose_view.json",
                                   "diagnose_distances.png", "diagnose_distances.pdf",
                                   "diagnose_distances.json"]
    for p, q in zip(a, b, strict=True):
        assert p.read_bytes() == q.read_bytes(), p.name
    del rep["view"]
    assert [p.name for p in diagnose_figures(rep, tmp_path / "c")][0] == "diagnose_distances.png"
    with pytest.raises(InvalidInputError, match="must hold statistics.distances with a histogram"):
        diagnose_figures({"data": {}}, tmp_path / "d")


def test_plotting_module_computes_nothing():
    import inspect

    import isoapprox.plotting.diagnose as mod

    src = inspect.getsource(mod)
    for name in ("pairwise_distances", "nearest_ideal", "linalg", "svd", "diameter("):
        assert name not in src, name
    assert np is not None
