"""The toy's claims hold on every machine: its scenarios keep their outcomes under
perturbations of the size by which machines differ.

Gradient descent at a large learning rate turns last-bit differences (the BLAS
kernel OpenBLAS picks, numpy's SIMD ``tanh``) into other trajectories: merge
steps move by hundreds.  These tests rerun the default scenarios with the
initial weights and inputs moved by 1e-12 (relative), and with the network's
matrix products summed in another order, and assert what the README and the
figures claim: each outcome, with a wide margin to its threshold, that the
collapse is sequential, the order in which the clusters merge, and the set of
figures.  CI runs this file again under other OpenBLAS kernels (``.ci/kernels``), all
but the drawing of the figures.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from isoapprox import evaluate_theory, toy
from isoapprox.commands import toy_report
from isoapprox.train.networks import MLP

# .ci/kernels reruns every test here but the figures' (marked one by one): drawing
# and titling figures from a run's results does not depend on the BLAS kernel; the
# run's outcomes, which the titles name, are rerun (test_whole_run_keeps_its_outcomes)
reproducibility = pytest.mark.reproducibility

#: what the README claims of the default scenarios
OUTCOMES = {"collapse": "collapsed", "separate": "separated", "margin0": "collapsed"}
#: the clusters after each merge of the sequential collapse (points numbered from 0)
COLLAPSE_ORDER = [[[0, 3]], [[0, 3, 4]], [[0, 1, 3, 4]], [[0, 1, 2, 3, 4]]]
#: a collapsed run ends at least this factor below the collapse threshold
#: (``collapse_rtol``): measured 1e-8..7e-6 (collapse) and 2e-6..1.5e-5 (margin0)
#: against 1e-3
COLLAPSE_MARGIN = 30.0
#: a separated run reaches zero loss by this fraction of its steps
SEPARATION_BY = 0.25
#: a separated run's diameter grows at least this factor (measured 3.3..4.5)
SEPARATION_GROWTH = 2.0
#: the margin-1 collapse ends with c this close to the floor 1/2 (measured 0.500 to
#: 8 digits in every variant of tools/toy_variants.py)
C_FLOOR_ATOL = 1e-3


def _reversed_matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` summed over the inner index in reverse order, one term at a time."""
    out = np.zeros((A.shape[0], B.shape[1]))
    for j in range(A.shape[1] - 1, -1, -1):
        out += A[:, j, None] * B[None, j, :]
    return out


#: (perturbation, seed, matrix product): the unperturbed run, four perturbed
#: ones and one with another summation order
VARIANTS = [(0.0, 0, "blas"), (1e-12, 1, "blas"), (1e-12, 2, "blas"), (1e-12, 3, "blas"),
            (1e-12, 4, "blas"), (0.0, 0, "reversed")]


def _train(monkeypatch, variant):
    eps, seed, product = variant
    if product == "reversed":
        monkeypatch.setattr(MLP, "_matmul", staticmethod(_reversed_matmul))
    cfg = toy.ToyConfig(perturbation=eps, perturbation_seed=seed)
    return cfg, {sc.name: toy.analyse_training(cfg, sc, toy.train_scenario(cfg, sc))
                 for sc in cfg.scenarios}


@reproducibility
def test_reversed_matmul_is_a_matrix_product_with_other_rounding():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(5, 16)), rng.normal(size=(16, 2))
    np.testing.assert_allclose(_reversed_matmul(A, B), A @ B, rtol=1e-13, atol=1e-13)
    # it is another summation order, not the same kernel
    assert any(not np.array_equal(_reversed_matmul(A, B), A @ B)
               for A, B in ((rng.normal(size=(5, 16)), rng.normal(size=(16, 2)))
                            for _ in range(20)))


@reproducibility
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v[2]}-eps{v[0]:g}-seed{v[1]}")
def test_default_scenarios_keep_their_outcomes(monkeypatch, variant):
    cfg, runs = _train(monkeypatch, variant)
    assert {name: r["outcome"] for name, r in runs.items()} == OUTCOMES
    for name, r in runs.items():
        assert not r["diverged"], name
        if r["outcome"] == "collapsed":
            # far below the threshold, not just under it
            assert r["final_diameter_ratio"] <= cfg.collapse_rtol / COLLAPSE_MARGIN, name
        else:
            assert r["zero_loss_step"] is not None
            assert r["zero_loss_step"] <= SEPARATION_BY * cfg.steps, name
            assert r["final_diameter_ratio"] >= SEPARATION_GROWTH, name
    col = runs["collapse"]
    assert col["sequential"]
    assert [k for _, k in col["events"]] == [4, 3, 2, 1]
    assert col["merge_order"] == COLLAPSE_ORDER
    # the README: c ends at the floor 1/2 (certified bracket around it)
    sc = cfg.scenarios[0]
    assert sc.name == "collapse"
    end = evaluate_theory(col["embeddings"][col["last"]], sc.labels, margin=sc.margin)
    assert end.c_lower <= end.c <= end.c_upper
    assert abs(end.c - 0.5) <= C_FLOOR_ATOL


@reproducibility
def test_the_perturbations_do_move_the_trajectory(monkeypatch):
    """The variants are not the same run: the merge steps move (so the test above
    shows robustness, not bit-reproducibility)."""
    steps = set()
    for variant in VARIANTS[:3]:
        with monkeypatch.context() as m:
            _, runs = _train(m, variant)
        steps.add(tuple(s for s, _ in runs["collapse"]["events"]))
    assert len(steps) > 1


#: the whole runs of the figure tests (evaluations included, few steps evaluated): one
#: per variant and process, shared by the test of outcomes and the test of figures
_WHOLE_RUNS: dict = {}


def _whole_run(variant):
    if variant not in _WHOLE_RUNS:
        eps, seed, product = variant
        with pytest.MonkeyPatch.context() as m:
            if product == "reversed":
                m.setattr(MLP, "_matmul", staticmethod(_reversed_matmul))
            cfg = toy.ToyConfig(perturbation=eps, perturbation_seed=seed, n_logged=3,
                                n_history=30, n_random=2, n_starts=4)
            _WHOLE_RUNS[variant] = (cfg, toy.run_toy(cfg))
    return _WHOLE_RUNS[variant]


# the other summation order is a 30 s run: slow (the default run keeps the perturbed one;
# .ci/kernels, which selects by the reproducibility marker, both)
FIGURE_VARIANTS = [VARIANTS[1], pytest.param(VARIANTS[-1], marks=pytest.mark.slow)]


def _variant_id(v):
    return f"{v[2]}-eps{v[0]:g}-seed{v[1]}"


@reproducibility
@pytest.mark.parametrize("variant", FIGURE_VARIANTS, ids=_variant_id)
def test_whole_run_keeps_its_outcomes(variant):
    """The whole run under a perturbation: the same outcomes, the same example
    scenario, and the outcome each figure's title names."""
    from isoapprox.plotting import toy as ptoy

    _, res = _whole_run(variant)
    assert {s["name"]: s["outcome"] for s in res["scenarios"]} == OUTCOMES
    assert res["figures"]["example_scenario"] == "collapse"
    assert ptoy.outcome_phrase(res["scenarios"][0]) == "sequential collapse"


@pytest.mark.parametrize("variant", FIGURE_VARIANTS, ids=_variant_id)
def test_every_figure_is_drawn_and_titled_with_the_outcome(tmp_path, variant):
    """The same run's results written and drawn: the same set of figures, each
    title naming its run's outcome."""
    from isoapprox.io import read_results
    from isoapprox.plotting import toy as ptoy

    cfg, res = _whole_run(variant)
    path = toy_report.write_toy_results(tmp_path / "toy.json", cfg, res)
    doc = read_results(path)
    written = ptoy.toy_figures(doc, tmp_path / "figs", path)
    names = {p.stem for p in written}
    assert names == {"toy_system", "toy_iso_example", "toy_constant",
                     *(f"toy_curves_{n}" for n in OUTCOMES),
                     *(f"toy_collapse_{n}" for n in OUTCOMES)}
    for s in doc["scenarios"]:
        phrase = ptoy.outcome_phrase(s)
        for plot in (ptoy.plot_curves, ptoy.plot_collapse):
            fig = plot(doc, s["name"])
            title = fig._suptitle.get_text()  # Figure.get_suptitle needs matplotlib >= 3.8
            plt.close(fig)
            assert phrase in title
    assert ptoy.outcome_phrase(doc["scenarios"][0]) == "sequential collapse"


@reproducibility
def test_the_docs_example_of_the_constant_prints_what_it_shows():
    """docs/toy.md, "Check the constant yourself": a doctest, run under every kernel."""
    import doctest
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "toy.md").read_text()
    block = re.search(r"<!-- c-example -->\s*```python\n(.+?)\n```", text, re.S)
    assert block, "docs/toy.md has no block after <!-- c-example -->"
    lines = block.group(1).splitlines()
    assert sum(line.startswith((">>>", "...")) for line in lines) <= 10
    test = doctest.DocTestParser().get_doctest(block.group(1), {}, "toy-c", "docs/toy.md", 0)
    result = doctest.DocTestRunner().run(test)
    assert result.attempted >= 6 and result.failed == 0
