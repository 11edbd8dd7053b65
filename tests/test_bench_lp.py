"""benchmarks/bench_lp.py records the search's node LPs (it spies on a name of
:mod:`isoapprox.ideal._sector`; a rename there must not leave it measuring
nothing)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from isoapprox.ideal import _sector

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_lp.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_lp", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_lp_records_node_lps_and_restores_the_search(monkeypatch):
    bench = _load()
    original = _sector.certified_lp
    monkeypatch.setattr(bench, "SEARCHES", 1)
    monkeypatch.setattr(bench, "LPS_PER_SEARCH", 12)
    lps = bench.record_lps()
    assert _sector.certified_lp is original
    # node LPs were recorded (a search of each objective, 12 LPs each at most
    # plus a node's cut rounds; none when the spy watches a name no longer used)
    assert len(lps) >= 2
    for c, A, b, xl, xh in lps:
        assert A.shape == (b.size, c.size) and xl.shape == xh.shape == c.shape
        assert np.all(xl <= xh)
