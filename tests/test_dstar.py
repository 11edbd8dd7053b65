"""D*(P, n, margin) as a pure function: the table, its proofs and its constructions."""

from __future__ import annotations

import importlib
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isoapprox import InvalidInputError
from isoapprox.packing import (
    DSTAR_N_MAX,
    DSTAR_P_MAX,
    LAYOUT_INT_STEP,
    DStar,
    d_star,
    d_star_witness,
    table_entries,
)
from isoapprox.packing._dstar import layout_key, load_layout, parse_layout_key
from isoapprox.packing.bounds import (
    blichfeldt_lower,
    gram_rank_lower,
    lp_certificates,
    lp_lower,
    obtuse_lower,
    oler_lower,
    spherical_code_lower,
    sum_of_squares_lower,
    unit_lower_candidates,
    volume_lower,
)
from isoapprox.packing.constructions import (
    certified_ratio,
    construct,
    family_ratio,
    min_max_distance,
)
from isoapprox.tolerances import DSTAR_RTOL

from .conftest import examples
from .reference import pairwise

#: the offline proofs (tools/packing_proofs.py): sphere_kernel, verify_lp, check_lp
TOOLS = Path(__file__).resolve().parents[1] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
PP = importlib.import_module("packing_proofs")
sphere_kernel, verify_lp = PP.sphere_kernel, PP.verify_lp

DATA = __import__("pathlib").Path(__import__("isoapprox").packing.__file__).parent / "data"

#: SPEC's planar table (margin 1), written out independently
PLANAR = {2: 1.0, 3: 1.0, 4: math.sqrt(2), 5: (1 + math.sqrt(5)) / 2,
          6: 2 * math.sin(math.radians(72)), 7: 2.0, 8: 1 / (2 * math.sin(math.pi / 14))}

TABLE = [(P, n) for n in range(1, DSTAR_N_MAX + 1) for P in range(1, DSTAR_P_MAX + 1)]
#: a grid beyond the table (P > 64 or n > 16), for the formulas and the families
BEYOND = [(P, n) for P in (2, 5, 17, 33, 64, 65, 70, 100, 1000, 10**5)
          for n in (1, 2, 3, 8, 15, 16, 17, 20, 40)]


def _json():
    return json.loads((DATA / "dstar_table.json").read_text(encoding="utf-8"))


# --- the record ------------------------------------------------------------------


def test_record_and_key_numbers():
    r = d_star(16, 2, 0.2)
    assert isinstance(r, DStar) and r.in_table and not r.exact
    # the planar LP certificate proves D >= 3.3137, above Oler's 3.2921
    assert r.lower == pytest.approx(0.2 * lp_lower(16, 2), rel=1e-11)
    assert r.lower > 0.2 * oler_lower(16) == pytest.approx(0.2 * 3.292083164, rel=1e-9)
    assert r.upper <= 0.7182 and r.value == r.upper
    assert "linear programming" in r.lower_source
    r = d_star(50, 16, 0.2)
    assert 0.2 < r.lower <= r.upper <= 0.2 * math.sqrt(2) * (1 + 2 * DSTAR_RTOL)
    r = d_star(64, 2)
    assert 7.5 < r.lower <= r.upper < 8.1


@pytest.mark.parametrize("P,n", [(1, 1), (1, 5), (2, 1), (2, 7), (4, 3), (17, 16), (40, 39),
                                 (100, 99)])
def test_simplex_and_single_point_exact(P, n):
    for m in (1.0, 0.2, 7.5):
        r = d_star(P, n, m)
        want = 0.0 if P == 1 else (m * (P - 1) if n == 1 else m)
        assert r.exact and r.lower == r.upper == want


@pytest.mark.parametrize("P", range(2, 30))
def test_line_is_exact(P):
    r = d_star(P, 1, 0.5)
    assert r.exact and r.lower == r.upper == 0.5 * (P - 1)


@pytest.mark.parametrize("P", sorted(PLANAR))
def test_planar_exact_values(P):
    r = d_star(P, 2)
    assert r.exact and r.lower == r.upper == pytest.approx(PLANAR[P], rel=1e-15)
    X = d_star_witness(P, 2)
    lo, hi = min_max_distance(X)
    assert lo >= 1.0 and hi == pytest.approx(PLANAR[P], rel=1e-12)
    assert not d_star(9, 2).exact and d_star(9, 2).lower >= PLANAR[8]


@pytest.mark.parametrize("margin", [0.0, 1e-150, 1e-7, 0.2, 3.5, 1e150])
def test_homogeneous_in_margin(margin):
    for P, n in [(5, 2), (16, 2), (50, 16), (64, 3), (1000, 3), (40, 20)]:
        u, r = d_star(P, n), d_star(P, n, margin)
        assert r.lower == margin * u.lower and r.upper == margin * u.upper
        assert r.margin == margin
    assert d_star(16, 2, 0.0).lower == d_star(16, 2, 0.0).upper == 0.0


def test_deterministic_and_independent_of_any_rng():
    a = d_star(37, 5, 0.3)
    np.random.default_rng(5).normal(size=10)
    b = d_star(37, 5, 0.3)
    assert a == b
    np.testing.assert_array_equal(d_star_witness(37, 5, 0.3), d_star_witness(37, 5, 0.3))
    assert d_star(37, 5) is not None and d_star(37, 5) == d_star(37, 5, 1.0)


# --- the table: monotone, consistent, documented -----------------------------------


def test_table_is_monotone_and_bracketed():
    t = table_entries()
    assert len(t) == DSTAR_P_MAX * DSTAR_N_MAX
    for P, n in TABLE:
        e = t[P, n]
        assert 0.0 <= e.lower <= e.upper, (P, n)
        if P > 1:
            assert e.lower >= t[P - 1, n].lower and e.upper >= t[P - 1, n].upper, (P, n)
        if n > 1:
            assert e.lower <= t[P, n - 1].lower and e.upper <= t[P, n - 1].upper, (P, n)
        assert e.exact == (P <= n + 1 or n == 1 or (n == 2 and P <= 8)), (P, n)


def test_beyond_the_table_is_monotone_and_bracketed():
    Ps = sorted({P for P, _ in BEYOND})
    ns = sorted({n for _, n in BEYOND})
    for P, n in BEYOND:
        r = d_star(P, n)
        assert 0.0 <= r.lower <= r.upper, (P, n)
        assert r.in_table == (P <= 64 and n <= 16)
    for a, b in itertools.pairwise(Ps):
        for n in ns:
            assert d_star(a, n).lower <= d_star(b, n).lower, (a, b, n)
            assert d_star(a, n).upper <= d_star(b, n).upper, (a, b, n)
    for P in Ps:
        for a, b in itertools.pairwise(ns):
            assert d_star(P, a).lower >= d_star(P, b).lower, (P, a, b)
            assert d_star(P, a).upper >= d_star(P, b).upper, (P, a, b)


def test_json_records_what_d_star_returns():
    doc = _json()
    assert doc["P_max"] == DSTAR_P_MAX and doc["n_max"] == DSTAR_N_MAX
    entries = {(e["P"], e["n"]): e for e in doc["entries"]}
    assert set(entries) == {(P, n) for P, n in TABLE if P >= 2}
    for (P, n), e in entries.items():
        # the entry's own layout bounds the propagated upper end
        assert d_star(P, n).upper <= e["ratio"] or d_star(P, n).exact, (P, n)


def test_every_stored_layout_and_construction_reverified():
    """Each entry's own ratio is recomputed from its coordinates (float32 layouts in
    float64), and every witness of d_star is feasible with diameter <= its upper end."""
    doc = _json()
    with np.load(DATA / "dstar_layouts.npz") as z:
        layouts = {k: np.asarray(z[k], dtype=np.float64) for k in z.files}
    n_layouts = 0
    for e in doc["entries"]:
        P, n, name = e["P"], e["n"], e["construction"]
        if name == "layout":
            X = layouts[f"P{P}_n{n}"]
            n_layouts += 1
        else:
            X = construct(name, P, n)
        assert X.shape == (P, n)
        assert certified_ratio(X) <= e["ratio"], (P, n, name)
        assert certified_ratio(X) >= e["ratio"] * (1 - 1e-12), (P, n, name)
    assert n_layouts == len(layouts)
    for P, n in TABLE:
        X = d_star_witness(P, n)
        r = d_star(P, n)
        lo, hi = min_max_distance(X)
        if P > 1:
            assert lo >= 1.0, (P, n)
            assert hi <= r.upper * (1 + 1e-12), (P, n)


def test_witnesses_against_a_plain_loop():
    for P, n, m in [(16, 2, 0.2), (20, 3, 1.0), (9, 4, 2.5), (64, 16, 0.2), (70, 3, 1.0)]:
        X = d_star_witness(P, n, m)
        D = pairwise(X)[np.triu_indices(P, 1)]
        assert X.shape == (P, n) and D.min() >= m
        assert D.max() <= d_star(P, n, m).upper * (1 + 1e-12)


def test_a_nan_or_infinite_layout_never_certifies_a_ratio():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert certified_ratio(X) == pytest.approx(math.sqrt(2), rel=2e-12)
    for bad in (math.nan, math.inf):
        Y = X.copy()
        Y[1, 0] = bad
        assert certified_ratio(Y) == math.inf
    Y = X.copy()
    Y[1, 0] = math.nan
    assert all(math.isnan(v) for v in min_max_distance(Y))
    Y[:, 0] = math.inf  # inf - inf: no distance at all
    assert all(math.isnan(v) for v in min_max_distance(Y))


def test_stored_layouts_load_exactly():
    """float32 coordinates as they are, int16 ones times LAYOUT_INT_STEP (a power
    of two, so exactly); any other dtype is refused, naming it."""
    X = np.array([[0.1, -2.5], [3.0, 1e-3]], dtype=np.float32)
    Y = load_layout(X)
    assert Y.dtype == np.float64 and np.array_equal(Y, X.astype(np.float64))
    Q = np.array([[-32768, 0], [1, 32767]], dtype=np.int16)
    Z = load_layout(Q)
    assert math.log2(LAYOUT_INT_STEP) == int(math.log2(LAYOUT_INT_STEP))
    h = LAYOUT_INT_STEP
    assert Z.tolist() == [[-32768 * h, 0.0], [h, 32767 * h]]
    with pytest.raises(ValueError, match="float32 or int16 coordinates, got dtype float64"):
        load_layout(X.astype(np.float64))


def test_layout_names_round_trip_and_bad_ones_are_refused():
    """One format for the layouts' names in dstar_layouts.npz (the library reads
    it, the builder writes and reads it)."""
    for P, n in ((4, 2), (64, 16), (10, 1)):
        assert parse_layout_key(layout_key(P, n)) == (P, n)
    for bad in ("P4n2", "P4_n2_", "p4_n2", "P_n2", "P4_n-2", "xP4_n2"):
        with pytest.raises(ValueError, match=f"layout entry '{bad}' is not named"):
            parse_layout_key(bad)
    with np.load(DATA / "dstar_layouts.npz") as z:
        assert all(layout_key(*parse_layout_key(k)) == k for k in z.files)


def test_data_files_are_small():
    total = sum(p.stat().st_size for p in DATA.iterdir())
    assert total < 1_000_000


# --- the lower-bound formulas ---------------------------------------------------


def test_oler_spot_values():
    a, b = math.pi / (2 * math.sqrt(3)), math.pi / 2
    for P in (2, 9, 16, 64, 1000):
        D = oler_lower(P)
        assert a * D * D + b * D + 1 == pytest.approx(P, rel=1e-12)
    assert oler_lower(16) == pytest.approx(3.292083164, rel=1e-9)


def test_volume_and_blichfeldt_solve_their_inequalities():
    for P, n in [(1000, 2), (200, 3), (10**4, 4), (10**6, 8), (10**9, 16)]:
        # D = volume_lower solves P = (2R + 1)^n with R = D sqrt(n / (2 (n + 1)))
        R = volume_lower(P, n) * math.sqrt(n / (2 * (n + 1)))
        assert (2 * R + 1) ** n == pytest.approx(P, rel=1e-9)
        R = blichfeldt_lower(P, n) * math.sqrt(n / (2 * (n + 1)))
        assert (n + 2) / 2 * (math.sqrt(2) * R + 1) ** n == pytest.approx(P, rel=1e-9)


def test_blichfeldt_lemma_brute_force():
    """sum_i (2 - |x - x_i|^2)_+ <= 2 for points pairwise >= 2 apart (any x)."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 5):
        pts = []
        while len(pts) < 40:
            c = rng.uniform(-3, 3, size=n)
            if all(np.linalg.norm(c - p) >= 2 for p in pts):
                pts.append(c)
            if rng.uniform() < 0.01:
                break
        X = np.array(pts)
        for x in rng.uniform(-3, 3, size=(2000, n)):
            assert np.sum(np.maximum(2 - np.sum((X - x) ** 2, axis=1), 0)) <= 2 + 1e-12


def test_delsarte_degree_two_brute_force():
    """P unit vectors with all inner products <= mu < 1/n: P <= 2 n (1 - mu) / (1 - n mu)."""
    rng = np.random.default_rng(1)
    for n in (2, 3, 4, 6):
        for P in range(2, 4 * n):
            for _ in range(30):
                U = rng.normal(size=(P, n))
                U /= np.linalg.norm(U, axis=1)[:, None]
                G = U @ U.T
                mu = np.max(G[~np.eye(P, dtype=bool)])
                if mu < 1 / n:
                    assert P <= 2 * n * (1 - mu) / (1 - n * mu) + 1e-9
    # the cross-polytope (mu = 0) is extremal: 2n points
    assert spherical_code_lower(2 * 3, 3) == 0.0 < spherical_code_lower(7, 3)


def _gram_phi(X):
    """``(u, w, phi(u))`` of the proof of gram_rank_lower, for a layout scaled to separation 1."""
    D2 = pairwise(X) ** 2
    P = len(X)
    off = ~np.eye(P, dtype=bool)
    D2 = D2 / D2[off].min()
    E = np.where(off, D2 - 1.0, 0.0)
    w, u = E.max(), E.sum() / P
    n = X.shape[1]
    return u, w, n * (P - 1 + (2 + w * P) * u - u * u) - (P - 1 + u) ** 2


def test_gram_rank_brute_force():
    """The proof's inequality holds on random layouts, and the bound is below their ratio."""
    rng = np.random.default_rng(2)
    for n in (2, 3, 4, 8):
        for P in range(n + 2, 3 * n + 4):
            for _ in range(20):
                X = rng.normal(size=(P, n)) * rng.uniform(0.2, 2.0, size=n)
                u, w, phi = _gram_phi(X)
                assert 0.0 <= u <= (P - 1) * w * (1 + 1e-12)
                assert phi >= -1e-9 * (P * P + n * P * (u + 1) * (w + 1))
                lo, hi = min_max_distance(X)
                assert gram_rank_lower(P, n) <= hi / lo * (1 + 1e-12)


def test_gram_rank_exact_on_two_distance_layouts():
    """Attained (sqrt 2) by the square, C(5, 2) in a 4-flat and the half-cube in R^5."""
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    pairs = np.array([np.eye(5)[i] + np.eye(5)[j] for i, j in itertools.combinations(range(5), 2)])
    flat = (pairs - pairs.mean(axis=0)) @ np.linalg.svd(pairs - pairs.mean(axis=0))[2][:4].T
    half = np.array([b for b in itertools.product((0.0, 1.0), repeat=5) if sum(b) % 2 == 0])
    for X in (square, flat, half):
        P, n = X.shape
        lo, hi = min_max_distance(X)
        assert hi / lo == pytest.approx(math.sqrt(2), rel=1e-12)
        assert gram_rank_lower(P, n) == pytest.approx(math.sqrt(2), rel=1e-14)
        assert d_star(P, n).lower <= math.sqrt(2) <= d_star(P, n).upper
        assert d_star(P, n).upper / d_star(P, n).lower - 1 < 3 * DSTAR_RTOL
        assert abs(_gram_phi(X)[2]) < 1e-9
    # the octahedron (sqrt 2) is above it
    assert gram_rank_lower(6, 3) == pytest.approx(1.387425887, rel=1e-9)
    assert gram_rank_lower(5, 3) == pytest.approx(math.sqrt(5 / 3), rel=1e-14)
    assert gram_rank_lower(4, 3) == 0.0


def _lp_file():
    return json.loads((DATA / "dstar_lp.json").read_text(encoding="utf-8"))["certificates"]


def test_lp_certificates_verify_and_stay_below_the_truth():
    """Every shipped certificate passes the check; below the exact planar values (P <= 8)
    and the table's layouts; f <= 0 at 5000 random points of [1, D] (off the grid)."""
    certs = _lp_file()
    assert PP.check_lp() == []  # verify_lp accepts every certificate the library reads
    assert sorted(lp_certificates()) == sorted((c["P"], c["n"]) for c in certs)
    assert {(9, 2), (10, 2), (11, 2), (16, 2), (16, 3)} <= set(lp_certificates())
    rng = np.random.default_rng(3)
    for c in certs:
        P, n, D = c["P"], c["n"], c["D"]
        assert lp_certificates()[P, n] == D
        assert D < (PLANAR[P] if n == 2 and P in PLANAR else d_star(P, n).upper)
        rho, mu = np.array(c["rho"]), np.array(c["mu"])
        assert (c["a0"] + mu.sum()) / c["a0"] < P
        r = rng.uniform(1.0, D, size=5000)
        assert np.all(c["a0"] + sphere_kernel(n, np.multiply.outer(r, rho)) @ mu < 0.0), (P, n)
    # the planar certificate of P = 9 beats D*(8); the branch-and-bound claim beats it
    # (tests/test_dstar_bnb.py)
    assert lp_lower(9, 2) >= 2.32 and d_star(9, 2).lower > lp_lower(9, 2)


def test_lp_check_refuses_what_it_cannot_prove():
    for key in ((9, 2), (16, 3)):
        c = next(c for c in _lp_file() if (c["P"], c["n"]) == key)
        args = dict(P=c["P"], n=c["n"], D=c["D"], rho=c["rho"], mu=c["mu"], a0=c["a0"],
                    step=c["step"])
        assert verify_lp(**args)
        assert not verify_lp(**{**args, "D": c["D"] * 1.05})  # f > 0 somewhere
        assert not verify_lp(**{**args, "P": c["P"] - 1})  # count f(0)/a0 >= P - 1
        assert not verify_lp(**{**args, "n": c["n"] - 1})  # another kernel
        assert not verify_lp(**{**args, "step": c["step"] * 100})  # allowance too wide
        assert not verify_lp(**{**args, "mu": [-m for m in c["mu"]]})
        assert not verify_lp(**{**args, "a0": -c["a0"]})
        assert not verify_lp(**{**args, "rho": c["rho"][:-1]})
        assert not verify_lp(**{**args, "D": float("nan")})
    # the offline check names a certificate that does not prove its claim
    c = next(c for c in _lp_file() if (c["P"], c["n"]) == (9, 2))
    bad = {"certificates": [c, dict(c, D=c["D"] * 1.05), dict(c, P=c["P"] - 1)]}
    assert PP.check_lp(bad) == [f"P = 9, n = 2, D = {c['D'] * 1.05}", f"P = 8, n = 2, D = {c['D']}"]


def test_sphere_kernel_closed_forms_and_positive_definite():
    """Omega_n: J_0, sin x / x, 2 J_1(x) / x; |Omega_n''| <= 1/n; sum_ij Omega_n(rho d_ij) >= 0
    on random point sets (brute force): the facts the LP bound rests on."""
    from scipy.special import j0, j1

    x = np.linspace(0.0, 60.0, 6001)
    assert np.allclose(sphere_kernel(2, x), j0(x), rtol=0, atol=1e-15)
    assert np.allclose(sphere_kernel(3, x[1:]), np.sin(x[1:]) / x[1:], rtol=0, atol=1e-15)
    assert np.allclose(sphere_kernel(4, x[1:]), 2 * j1(x[1:]) / x[1:], rtol=0, atol=1e-14)
    # the sphere average: mean of cos(x u_1) over uniform unit vectors u
    rng = np.random.default_rng(5)
    for n in (2, 3, 5, 8):
        u = rng.normal(size=(200000, n))
        u1 = u[:, 0] / np.linalg.norm(u, axis=1)
        for xv in (0.5, 2.0, 7.0):
            assert float(sphere_kernel(n, np.array([xv]))[0]) == pytest.approx(
                np.mean(np.cos(xv * u1)), abs=5e-3)
        h = x[1] - x[0]
        f = sphere_kernel(n, x)
        second = (f[2:] - 2 * f[1:-1] + f[:-2]) / (h * h)
        assert np.max(np.abs(second)) <= 1.0 / n + 1e-6
    for _ in range(100):
        n = int(rng.integers(2, 6))
        X = rng.uniform(-3, 3, size=(int(rng.integers(2, 15)), n))
        d = pairwise(X)
        for rho in (0.3, 1.0, 2.4, 7.0, 29.0):
            assert np.sum(sphere_kernel(n, rho * d)) >= -1e-9


def test_lp_lower_is_monotone():
    for n in (2, 3, 4, 8):
        vals = [lp_lower(P, n) for P in range(1, 80)]
        assert all(b >= a for a, b in itertools.pairwise(vals))
        assert vals[0] == 0.0
    for P in (9, 16, 40, 64):
        vals = [lp_lower(P, n) for n in range(2, 12)]
        assert all(b <= a for a, b in itertools.pairwise(vals))


def test_formula_bounds_below_explicit_layouts():
    """Each formula is below the certified ratio of every construction of the table."""
    for P, n in [(7, 3), (16, 2), (30, 3), (64, 2), (64, 8), (50, 16), (9, 8)]:
        best = d_star(P, n).upper
        for v, src in unit_lower_candidates(P, n):
            assert v <= best, (P, n, src)


@pytest.mark.parametrize("f", [obtuse_lower, spherical_code_lower, gram_rank_lower,
                               sum_of_squares_lower, volume_lower, blichfeldt_lower])
def test_formulas_are_monotone(f):
    """Non-decreasing in P, non-increasing in n >= 2 (d_star beyond the table relies on it)."""
    for n in range(2, 40):
        vals = [f(P, n) for P in range(1, 300)]
        assert all(b >= a for a, b in itertools.pairwise(vals)), n
    for P in range(1, 300):
        vals = [f(P, n) for n in range(2, 40)]
        assert all(b <= a * (1 + 1e-15) for a, b in itertools.pairwise(vals)), P


def test_sum_of_squares_never_decides():
    for P, n in TABLE:
        if P >= n + 2 and n >= 2:
            assert sum_of_squares_lower(P, n) < obtuse_lower(P, n)


def test_family_ratios_match_their_points():
    for P, n in [(10, 4), (64, 2), (65, 2), (70, 3), (50, 17), (6, 3), (100, 5)]:
        r, name = family_ratio(P, n)
        X = construct(name, P, n)
        assert X.shape == (P, n)
        assert certified_ratio(X) <= r * (1 + 1e-12), (P, n, name)


# --- errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        ((0, 2), InvalidInputError, r"`P` must be >= 1; got 0"),
        ((3, 0), InvalidInputError, r"`n` must be >= 1; got 0"),
        ((3.0, 2), TypeError, r"`P` must be an integer; got 3.0"),
        ((3, 2, -0.1), InvalidInputError, r"`margin` must be >= 0; got -0.1"),
        ((3, 2, float("nan")), InvalidInputError, r"`margin` must be finite"),
    ],
)
def test_errors(args, exc, match):
    with pytest.raises(exc, match=match):
        d_star(*args)
    with pytest.raises(exc, match=match):
        d_star_witness(*args)


@pytest.mark.property
@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 200), st.integers(1, 24), st.floats(0.01, 100.0))
def test_properties(P, n, margin):
    r = d_star(P, n, margin)
    assert 0.0 <= r.lower <= r.upper
    if P >= 2:
        assert r.lower >= margin * (1 - 1e-15)
    assert d_star(P + 1, n, margin).lower >= r.lower
    assert d_star(P, n + 1, margin).upper <= r.upper
