"""The branch-and-bound proofs of lower bounds of D*(P, n, 1)."""

from __future__ import annotations

import doctest
import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from isoapprox import InvalidInputError
from isoapprox.packing import d_star
from isoapprox.packing.bounds import BNB_FILE, PLANAR_EXACT, bnb_claims, bnb_lower
from isoapprox.packing.constructions import min_max_distance
from isoapprox.tolerances import DSTAR_RTOL

from .conftest import examples

#: the proofs are produced and checked offline: tools/packing_proofs.py
TOOLS = Path(__file__).resolve().parents[1] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
PP = importlib.import_module("packing_proofs")
prove_diameter_above, PROOF_MAX_SIZE = PP.prove_diameter_above, PP.PROOF_MAX_SIZE


def _claims() -> list[dict]:
    return json.loads(BNB_FILE.read_text(encoding="utf-8"))["claims"]


# --- the search against what is known ------------------------------------------


@pytest.mark.parametrize("P", [5, 6, 7, 8])
def test_proves_below_the_exact_planar_values_and_never_above(P):
    """Below the theorems' values (2 % under) the search proves; just above
    them, where the optimal layouts exist, it must end at a near solution."""
    exact = PLANAR_EXACT[P]
    r = prove_diameter_above(P, 2, 0.98 * exact, base=1.0)
    assert r.proved and r.boxes is None and r.nodes > 1
    r = prove_diameter_above(P, 2, exact * (1 + 1e-6), base=1.0)
    assert r.status == "near solution" and not r.proved
    lo, hi = r.boxes
    assert np.all(hi - lo < 1e-3)
    # the boxes' centres meet the constraints up to the boxes' size
    dmin, dmax = min_max_distance(0.5 * (lo + hi))
    assert dmin > 1 - 2e-3 and dmax < exact * (1 + 1e-6) + 2e-3


@settings(max_examples=examples(25), deadline=None)
@given(P=st.integers(3, 7), n=st.integers(2, 3), seed=st.integers(0, 2**32 - 1))
def test_never_excludes_a_real_configuration(P, n, seed):
    """Brute force: any actual point set is a counterexample to a false proof.
    Random points scaled to unit separation, ``D`` their diameter: never proved."""
    X = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(P, n))
    dmin, dmax = min_max_distance(X)
    assume(dmin > 0.05 * dmax)  # too spread out for a quick search: not the point here
    D = dmax / dmin
    r = prove_diameter_above(P, n, D * (1 + 1e-9), base=1.0, max_nodes=200_000)
    assert r.status in ("near solution", "node budget")


def test_three_dimensions():
    # above the rank-of-Gram bound 1.4470 of (7, 3)
    r = prove_diameter_above(7, 3, 1.47)
    assert r.proved and r.base == pytest.approx(1.447009, abs=1e-6)
    # the bipyramid layout of (5, 3) has diameter 1.3093: never excluded
    up = d_star(5, 3).upper
    assert prove_diameter_above(5, 3, up * (1 + 1e-6), base=1.0).status == "near solution"


def test_budget_and_determinism():
    r = prove_diameter_above(9, 2, 2.56, max_nodes=10)
    assert r.status == "node budget" and r.nodes == 10 and not r.proved
    a = prove_diameter_above(8, 2, 2.2, base=1.0)
    b = prove_diameter_above(8, 2, 2.2, base=1.0)
    assert a.proved and a.nodes == b.nodes


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(P=1, n=2, D=2.0), "`P`"),
        (dict(P=5, n=0, D=2.0), "`n`"),
        (dict(P=5, n=9, D=2.0), "`n`"),
        (dict(P=PROOF_MAX_SIZE // 2 + 1, n=2, D=2.0), "`P` times `n`"),
        (dict(P=9.0, n=2, D=2.5), "`P`"),
        (dict(P=9, n=2, D=2.0), "`D`"),          # below the proven base 2.328
        (dict(P=9, n=2, D=float("nan")), "`D`"),
        (dict(P=9, n=2, D=2.5, base=-1.0), "`base`"),
        (dict(P=9, n=2, D=2.5, max_nodes=0), "`max_nodes`"),
        (dict(P=9, n=2, D=2.5, min_width=0.0), "`min_width`"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises((InvalidInputError, TypeError), match=name):
        prove_diameter_above(**kwargs)


# --- the shipped claims ------------------------------------------------------


def test_shipped_claims_are_used_and_close_the_planar_gaps():
    claims = bnb_claims()
    assert {(9, 2), (10, 2), (11, 2)} <= set(claims)
    for c in _claims():
        P, n = c["P"], c["n"]
        assert c["base"] <= PP.bnb_base(P, n) < c["D"] < d_star(P, n).upper
        assert bnb_lower(P, n) >= c["D"]
        e = d_star(P, n)
        assert e.lower == pytest.approx(c["D"] * (1 - DSTAR_RTOL), rel=1e-15)
        assert "branch-and-bound" in e.lower_source
    # the goal: every planar entry up to P = 16 within 10 %
    for P in range(2, 17):
        e = d_star(P, 2)
        assert e.upper <= 1.10 * e.lower, (P, e.lower, e.upper)
    # P = 9 is within 0.1 % of the best layout known (2.56924)
    assert d_star(9, 2).upper < 1.001 * d_star(9, 2).lower


def test_every_shipped_claim_stands_on_a_proven_base():
    """The premise of each claim (``D*(P, n, 1) >= base`` from the library's other
    bounds, and ``D > base``) holds as the library is: checked offline, not when
    the file is read."""
    assert PP.check_bnb_premises() == []


def test_a_claim_whose_base_is_not_proven_is_reported():
    doc = {"claims": [
        {"P": 12, "n": 2, "D": 2.8, "base": 2.79, "nodes": 1, "seconds": 0.0},  # base too high
        {"P": 13, "n": 2, "D": 2.0, "base": 2.0, "nodes": 1, "seconds": 0.0},   # D not > base
        {"P": 9, "n": 2, "D": 2.5, "base": 1.0, "nodes": 1, "seconds": 0.0},    # holds
    ]}
    assert PP.check_bnb_premises(doc) == [
        "P = 12, n = 2, D = 2.8: base 2.79 not proven",
        "P = 13, n = 2, D = 2.0: base 2.0 not proven",
    ]


def test_the_offline_check_passes_on_the_shipped_files(capsys):
    assert PP.main([]) == 0
    out = capsys.readouterr().out
    assert "0 rejected" in out and "0 without their premise" in out and "FAILED" not in out


def test_the_examples_of_the_offline_proofs_hold():
    """The tools module is not collected by --doctest-modules: run its examples here."""
    res = doctest.testmod(PP, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted >= 2


def _prove_again(c: dict, min_width: float):
    r = prove_diameter_above(c["P"], c["n"], c["D"], base=c["base"],
                             max_nodes=c["nodes"] + 1, min_width=min_width)
    assert r.proved and r.nodes == c["nodes"], (c, r.status, r.nodes)


def test_the_cheapest_shipped_claim_is_proved_again():
    doc = json.loads(BNB_FILE.read_text(encoding="utf-8"))
    c = min(doc["claims"], key=lambda c: c["nodes"])
    assert c["nodes"] < 5_000_000
    _prove_again(c, doc["min_width"])


@pytest.mark.slow
def test_every_shipped_claim_is_proved_again():
    doc = json.loads(BNB_FILE.read_text(encoding="utf-8"))
    for c in doc["claims"]:
        _prove_again(c, doc["min_width"])


def test_a_claim_bounds_more_points_and_fewer_dimensions_only():
    """A claim of (P, 2) bounds (P', 2) for P' >= P (and the line), never P' < P
    or R^3."""
    claims = bnb_claims()
    assert bnb_lower(8, 2) == 0.0
    assert bnb_lower(9, 2) == claims[9, 2]
    assert bnb_lower(12, 2) == max(claims.values()) == claims[11, 2]
    assert bnb_lower(64, 2) == claims[11, 2]
    assert bnb_lower(9, 1) == claims[9, 2]
    assert bnb_lower(9, 3) == 0.0  # a planar proof says nothing of R^3


# --- the offline tool -------------------------------------------------------


def _tool():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "prove_dstar_bnb.py"
    spec = importlib.util.spec_from_file_location("prove_dstar_bnb", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv", [["--P", "9", "3"], ["--max-nodes", "0"], ["--steps", "0"]])
def test_tool_refuses_bad_arguments_before_any_work(argv, capsys):
    with pytest.raises(SystemExit) as e:
        _tool().main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"{argv[0]} must be >= " in err and "Traceback" not in err


def test_tool_bisection_and_check(capsys):
    tool = _tool()
    # P = 7 in the plane is exact: nothing to prove above it
    assert tool.best_claim(7, 2, max_nodes=10**5, steps=3) is None
    # one bisection step at P = 9: the midpoint of [LP bound, best layout], floored
    c = tool.best_claim(9, 2, max_nodes=10**6, steps=1)
    assert c is not None and c["D"] == 2.4487 and c["base"] == PP.bnb_base(9, 2)
    doc = {"min_width": tool.MIN_WIDTH, "claims": [c]}
    assert tool.check(doc) == 0
    doc["claims"] = [dict(c, nodes=c["nodes"] + 1)]
    assert tool.check(doc) == 1
    assert "MISMATCH" in capsys.readouterr().out
