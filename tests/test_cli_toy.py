"""``isoapprox toy`` and ``isoapprox figures``: help, a small run end to end,
its results file, figures rebuilt byte for byte from it, reuse, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoapprox.cli import main
from isoapprox.io import read_results

# .ci/kernels reruns the tests marked `reproducibility` (trajectories, outcomes,
# solver results) under other BLAS kernels and SIMD paths; help, user errors and
# figures redrawn from a results file (the figures of the run itself are rerun) are not.

#: one scenario (the collapse, 3000 steps so that it does collapse), few
#: evaluated steps (--smoke), two random toys, serial
SMALL = ["--smoke", "--scenario", "collapse", "--steps", "3000", "--n-random", "2",
         "--jobs", "1", "-q"]
#: every figure of a run with a collapsing scenario
FIGURES = ("toy_system", "toy_iso_example", "toy_curves_collapse", "toy_collapse_collapse",
           "toy_constant")
#: a PNG or PDF figure below this size is blank or broken
MIN_FIGURE_BYTES = 8_000


def _exit_code(argv):
    """``main``'s return value, or the status of the SystemExit argparse raises."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    results, figs = root / "toy.json", root / "figs"
    argv = ["toy", *SMALL, "--out", str(results), "--figures", str(figs)]
    assert main(argv) == 0
    return results, figs


def _one_error_line(capsys, *needles):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err
    return err


@pytest.mark.parametrize("command,flags", [
    ("toy", ("--figures", "--out", "--seed", "--margin", "--steps", "--n-random",
             "--jobs", "--scenario", "--smoke", "--no-figures", "--overwrite", "resuming")),
    ("figures", ("--out", "--list", "RESULTS")),
])
def test_help(capsys, command, flags):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for f in flags:
        assert f in out, f


@pytest.mark.reproducibility
def test_results_file_contents(small_run):
    results, _ = small_run
    doc = read_results(results)
    assert doc["experiment"] == "toy"
    cfg = doc["config"]
    assert cfg["steps"] == 3000 and cfg["n_random"] == 2 and cfg["seed"] == 0
    assert [s["name"] for s in cfg["scenarios"]] == ["collapse"]
    assert doc["seed"] == 0 and doc["jobs"] == 1
    assert doc["provenance"]["numpy"] == np.__version__
    assert {"isoapprox", "python", "platform", "git_commit"} <= set(doc["provenance"])
    # what decides a trajectory's last bits: BLAS and its kernel, numpy's SIMD, the CPU
    blas = doc["provenance"]["blas"]
    assert any(lib["internal_api"] == "openblas" and lib["architecture"]
               for lib in blas["libraries"])
    assert isinstance(blas["numpy_simd"], list) and blas["cpu"]["machine"]
    assert "openblas_coretype" in blas
    traj = [r for r in doc["records"] if r["part"] == "trajectory"]
    rand = [r for r in doc["records"] if r["part"] == "random"]
    assert len(rand) == 2 and traj[-1]["step"] == 3000
    (sc,) = doc["scenarios"]
    assert sc["outcome"] == "collapsed" and sc["sequential"]
    assert [k for _, k in sc["merge_events"]] == [4, 3, 2, 1]
    # the constant is measured and bracketed; near the collapse it tends to 1/2
    for r in doc["records"]:
        if r["c"] is not None:
            assert r["c_lower"] <= r["c"] <= r["c_upper"]
    assert traj[-1]["c_lower"] <= 0.5 + 0.01
    assert results.with_suffix(".csv").stat().st_size > 0
    assert not results.with_suffix(".journal.partial").exists()


@pytest.mark.reproducibility
def test_every_figure_is_written(small_run):
    _, figs = small_run
    for name in FIGURES:
        for ext in ("png", "pdf"):
            path = figs / f"{name}.{ext}"
            assert path.stat().st_size > MIN_FIGURE_BYTES, path
        side = json.loads((figs / f"{name}.json").read_text())
        assert side["sources"]


@pytest.mark.reproducibility
def test_figures_have_the_expected_panels(small_run):
    from isoapprox.plotting import toy as ptoy

    doc = read_results(small_run[0])

    def panels(fig):
        return [ax for ax in fig.axes if ax.get_visible() and ax.axison]

    assert len(panels(ptoy.plot_toy_system(doc))) == 4
    assert len(panels(ptoy.plot_iso_example(doc))) >= 1
    assert len(panels(ptoy.plot_curves(doc, "collapse"))) == 5
    snaps = len(doc["scenarios"][0]["snapshot_steps"])
    assert len(panels(ptoy.plot_collapse(doc, "collapse"))) == 2 * snaps + 1
    assert len(panels(ptoy.plot_constant(doc))) >= 2


def test_figures_command_rebuilds_identical_files(small_run, tmp_path, capsys):
    """Drawn by two worker processes, the same bytes as the run's (one process)."""
    results, figs = small_run
    out = tmp_path / "again"
    assert main(["figures", str(results), "--out", str(out), "--jobs", "2", "-q"]) == 0
    assert "10 file(s)" in capsys.readouterr().out
    for name in FIGURES:
        for ext in ("png", "pdf"):
            assert (out / f"{name}.{ext}").read_bytes() == (figs / f"{name}.{ext}").read_bytes(), \
                f"{name}.{ext}"


def test_same_configuration_is_reused(small_run, capsys):
    results, _ = small_run
    before = results.read_bytes()
    assert main(["toy", *SMALL, "--out", str(results), "--no-figures"]) == 0
    assert "reused" in capsys.readouterr().out
    assert results.read_bytes() == before


def test_another_configuration_needs_overwrite(small_run, tmp_path, capsys):
    results, _ = small_run
    copy = tmp_path / "toy.json"
    copy.write_bytes(results.read_bytes())
    argv = ["toy", *SMALL[:-1], "--seed", "1", "--out", str(copy), "--no-figures", "-q"]
    assert _exit_code(argv) == 2
    _one_error_line(capsys, "isoapprox toy: error:", "another configuration", "--overwrite")


# not rerun under other kernels (resumption does not depend on them: tests/test_toy.py)
def test_interrupted_run_resumes(tmp_path, caplog):
    """A journal left by an interrupted run is picked up; it is removed at the end."""
    from isoapprox import toy
    from isoapprox.runs import journal_path

    results = tmp_path / "r.json"
    argv = ["toy", "--smoke", "--scenario", "separate", "--steps", "5", "--n-random", "1",
            "--jobs", "1", "--no-figures", "--out", str(results)]
    assert main([*argv, "-q"]) == 0
    full = read_results(results)
    # replay: the journal of the same configuration holding two evaluations
    cfg = toy.SMOKE.replace(scenarios=(toy.SMOKE.scenarios[1],), steps=5, n_random=1)
    j = journal_path(results)
    toy.run_toy(cfg, journal=j)
    lines = j.read_text().splitlines()
    j.write_text("\n".join(lines[:3]) + "\n")
    results.unlink()
    with caplog.at_level("INFO", logger="isoapprox.toy"):
        assert main([*argv, "-q"]) == 0
    assert "2 of 6 evaluations resumed" in caplog.text
    assert not j.exists()
    again = read_results(results)
    assert len(again["records"]) == len(full["records"])
    assert [r["d_iso"] for r in again["records"]] == pytest.approx(
        [r["d_iso"] for r in full["records"]], rel=1e-9)


@pytest.mark.parametrize("extra,needles", [
    (["--out", "x.txt"], ["--out must name a .json file"]),
    (["--steps", "0"], ["--steps must be >= 1; got 0"]),
    (["--n-random", "-1"], ["--n-random must be >= 0"]),
    (["--margin", "0"], ["--margin must be > 0"]),
    (["--seed", "-2"], ["--seed must be >= 0"]),
    (["--jobs", "0"], ["--jobs must be >= 1; got 0"]),
    (["--scenario", "nope"], ["--scenario must be one of collapse, separate, margin0; got 'nope'"]),
    (["--steps", "many"], ["argument --steps: invalid int value"]),
    (["--perturbation", "0.5"], ["--perturbation must be a relative size in [0, 0.01); got 0.5"]),
    (["--perturbation", "nan"], ["--perturbation must be a relative size"]),
    (["--perturbation-seed", "-1"], ["--perturbation-seed must be >= 0; got -1"]),
])
def test_toy_user_errors(tmp_path, capsys, extra, needles):
    argv = ["toy", "--smoke", "--no-figures", "--out", str(tmp_path / "r.json"), *extra]
    assert _exit_code(argv) == 2
    _one_error_line(capsys, *needles)
    assert not (tmp_path / "r.json").exists()


def test_toy_out_dir_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert _exit_code(["toy", "--smoke", "--figures", str(f),
                       "--out", str(tmp_path / "r.json")]) == 2
    _one_error_line(capsys, "--figures is a file")


def test_figures_user_errors(tmp_path, capsys):
    assert _exit_code(["figures"]) == 2
    _one_error_line(capsys, "give at least one results file")
    assert _exit_code(["figures", str(tmp_path / "missing.json")]) == 2
    _one_error_line(capsys, "results file not found")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert _exit_code(["figures", str(bad)]) == 2
    _one_error_line(capsys, "is not valid JSON")
    other = tmp_path / "other.json"
    from isoapprox.io import write_results

    write_results(other, experiment="nothing-to-draw", config={}, records=[])
    assert _exit_code(["figures", str(other), "--out", str(tmp_path / "o")]) == 2
    _one_error_line(capsys, "no figures are defined for experiment 'nothing-to-draw'")
    assert _exit_code(["figures", str(other), "--jobs", "0"]) == 2
    _one_error_line(capsys, "--jobs must be >= 1; got 0")
    assert _exit_code(["figures", "--list"]) == 0
    assert "toy" in capsys.readouterr().out.split()


def test_help_names_the_default_scenarios(capsys):
    """The help text describes the scenarios the toy really runs (it once lagged behind)."""
    from isoapprox.toy import DEFAULT_SCENARIOS

    with pytest.raises(SystemExit):
        main(["toy", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for sc in DEFAULT_SCENARIOS:
        assert f"{sc.name} {sc.description}" in out
        assert f"learning rate {sc.lr:g}" in out
