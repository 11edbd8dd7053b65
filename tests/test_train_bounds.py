"""Theory quantities of training batches and the bound cross-check (isoapprox.train.bounds).

The brackets are checked against independent feasible points of the
triplet-separated set (class-collapsed layouts scaled to the margin) and
against the batch-hard loss recomputed by the foundation's public wrapper;
the callbacks are checked inside short training runs (seconds).
"""

from __future__ import annotations

import numpy as np
import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.losses import batch_hard_loss, is_triplet_separated
from isoapprox.metrics import hausdorff_like, isometric_error
from isoapprox.packing import packing_distance_bound
from isoapprox.train import TrainConfig, train
from isoapprox.train.bounds import (
    STATEMENTS,
    CrossCheckCallback,
    TheoryCallback,
    batch_theory,
    crosscheck_rows,
    crosscheck_summary,
    curve_rows,
    sub_batch,
)

#: float64 re-scoring of solver output: a few ulps of distances of order 1
RESCORE_TOL = 1e-9

TINY = dict(
    dataset="gaussian",
    n_classes=12,
    n_train_classes=8,
    per_class=8,
    input_dim=5,
    hidden=(8,),
    embedding_dim=2,
    batch_size=8,
    steps=20,
    log_every=5,
    margin=0.2,
    lr=0.05,
)


def _feasible_points(E, codes, margin, rng, count=6):
    """Triplet-separated embeddings: every class collapsed to one point, the
    points random (or on a line), scaled so that distinct classes are
    ``margin`` apart at least."""
    P, n = int(codes.max()) + 1, E.shape[1]
    out = []
    for k in range(count):
        if k == 0:
            centres = np.zeros((P, n))
            centres[:, 0] = margin * np.arange(P)
        else:
            centres = rng.normal(size=(P, n))
            d = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
            centres *= margin / d[np.triu_indices(P, 1)].min()
        F = centres[codes] + E.mean(axis=0)
        assert is_triplet_separated(F, codes, margin=margin * (1 - 1e-9))
        out.append(F)
    return out


def _check_brackets(t, E, codes, margin, rng):
    """Every bracket of a BatchTheory holds, against independent quantities."""
    assert t.d_iso_lower <= t.d_iso + RESCORE_TOL
    assert t.d_iso <= t.d_iso_upper + RESCORE_TOL
    assert t.d_haus_lower <= t.d_haus + RESCORE_TOL
    assert t.d_haus <= t.d_haus_upper + RESCORE_TOL
    # the loss of the evaluated batch, recomputed by the public wrapper
    if not t.subsampled:
        L = batch_hard_loss(E, codes, margin=margin, reduction="max")
        assert t.loss_max == pytest.approx(L, rel=1e-12, abs=1e-15)
        # the certified lower bounds are lower bounds: no feasible point beats them
        for F in _feasible_points(E, codes, margin, rng):
            assert t.d_iso_lower <= isometric_error(E, F) + RESCORE_TOL
            assert t.d_haus_lower <= hausdorff_like(E, F, mode="pointwise") + RESCORE_TOL
    # statement 3 (L/2 <= d_iso) and Lemma (d_iso <= 2 d_haus) within the brackets
    assert t.loss_max / 2 <= t.d_iso_upper + RESCORE_TOL
    assert t.d_iso_lower <= 2 * t.d_haus_upper + RESCORE_TOL
    assert t.fstar_slack >= -RESCORE_TOL
    assert t.d_star_lower <= t.d_star <= t.d_star_upper
    assert t.full_curve <= t.d_star_upper + RESCORE_TOL


# ---------------------------------------------------------------------------
# sub_batch
# ---------------------------------------------------------------------------


def test_sub_batch_layout_and_determinism():
    y = np.repeat(np.arange(8), 5)
    a = sub_batch(y, max_points=12, rng=3)
    b = sub_batch(y, max_points=12, rng=3)
    np.testing.assert_array_equal(a, b)
    counts = np.bincount(y[a])
    counts = counts[counts > 0]
    # K' = min(4, 12 // 2, 5) = 4, P' = min(8, 12 // 4) = 3
    assert counts.tolist() == [4, 4, 4]
    assert np.all(np.diff(a) > 0)


def test_sub_batch_per_class_two_gives_more_classes():
    y = np.repeat(np.arange(10), 4)
    idx = sub_batch(y, max_points=12, per_class=2, rng=0)
    assert np.bincount(y[idx])[np.bincount(y[idx]) > 0].tolist() == [2] * 6


def test_config_per_class_reaches_the_callbacks():
    cfg = TrainConfig(**{**TINY, "batch_size": 16}, theory_every=20, theory_max_points=8,
                      theory_per_class=2)
    r = train(cfg, seed=1)
    last = r.history[-1]
    assert (last["theory_sub_P"], last["theory_sub_K"], last["theory_points"]) == (4, 2, 8)
    with pytest.raises(InvalidInputError, match="theory_per_class"):
        TrainConfig(**TINY, theory_per_class=1)


def test_sub_batch_small_batch_is_whole():
    y = [0, 0, 1, 1, 2]
    np.testing.assert_array_equal(sub_batch(y, max_points=8, rng=0), np.arange(5))


def test_sub_batch_errors():
    with pytest.raises(InvalidInputError, match="max_points"):
        sub_batch([0, 0, 1, 1], max_points=3)
    with pytest.raises(InvalidInputError, match="per_class"):
        sub_batch([0, 0, 1, 1], per_class=1)
    # one class with two or more members among many singletons: no P' >= 2
    y = np.r_[np.zeros(4, int), np.arange(1, 10)]
    with pytest.raises(InvalidInputError, match="two classes of two or more"):
        sub_batch(y, max_points=4, rng=0)


# ---------------------------------------------------------------------------
# batch_theory
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_theory_brackets_on_random_batches(seed):
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(3), 3)
    E = rng.normal(size=(9, 2)) * 0.5 + 0.3 * codes[:, None]
    t = batch_theory(E, codes, margin=0.3, rng=seed, n_starts=3)
    assert not t.subsampled and t.points == 9 and (t.sub_P, t.sub_K) == (3, 3)
    _check_brackets(t, E, codes, 0.3, rng)
    assert set(t.checks) <= set(STATEMENTS)
    # theorems never certified false
    for key, chk in t.checks.items():
        if STATEMENTS[key][2] == "theorem":
            assert chk.holds is not False, (key, chk)


def test_batch_theory_separated_batch_is_zero():
    codes = np.repeat(np.arange(3), 2)
    centres = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
    E = centres[codes] + 0.01 * np.random.default_rng(0).normal(size=(6, 2))
    t = batch_theory(E, codes, margin=0.5, rng=0)
    assert t.d_iso == 0.0 and t.d_haus == 0.0 and t.loss_max == 0.0
    # statements 1 and 2 are void on a separated batch; 3 and 4 are evaluated
    assert "1_pointwise" not in t.checks and "2_half" not in t.checks
    assert {"3_lower", "3_upper", "4_collapse", "4_diameter", "4_curve"} <= set(t.checks)
    for key in ("3_lower", "3_upper", "4_diameter", "4_curve"):
        assert t.checks[key].holds is True, key
    # 4_collapse compares two brackets of a computed equality: at most undetermined
    assert t.checks["4_collapse"].holds is not False


def test_near_collapse_beyond_n_plus_one_classes_certifies_statement_4():
    """Six classes collapsed to (almost) one point in R^2: the loss is about the
    margin, but every ideal embedding has diameter D*(6, 2, alpha) = 2 sin 72 deg
    alpha, so d_iso is about D* > L: the conditional d_iso <= L is certified false."""
    alpha = 0.2
    codes = np.repeat(np.arange(6), 2)
    E = 1e-6 * np.random.default_rng(0).normal(size=(12, 2))
    t = batch_theory(E, codes, margin=alpha, rng=0, n_starts=3)
    d_star = 2 * np.sin(np.radians(72)) * alpha
    assert t.loss_max == pytest.approx(alpha, abs=1e-5)
    assert t.d_iso_lower_source in ("packing", "sub_batch_packing")
    assert t.d_iso_lower >= (d_star - t.diameter) * (1 - 1e-9)
    assert t.d_iso_lower <= t.d_iso <= t.d_iso_upper
    assert t.d_iso_upper - t.d_iso_lower < 1e-3 * d_star
    assert t.d_haus_lower >= t.d_iso_lower / 2
    assert t.checks["3_upper"].holds is False
    assert t.checks["3_lower"].holds is True
    rng = np.random.default_rng(1)
    _check_brackets(t, E, codes, alpha, rng)


def test_packing_distance_bound_against_feasible_points():
    rng = np.random.default_rng(3)
    for trial in range(20):
        P, n = int(rng.integers(2, 7)), int(rng.integers(1, 4))
        codes = np.r_[np.repeat(np.arange(P), 2), P]  # one singleton class
        E = rng.normal(size=(codes.size, n)) * rng.uniform(0.01, 1.0)
        diam = float(np.max(np.linalg.norm(E[:, None] - E[None], axis=-1)))
        bound = packing_distance_bound(codes, n, 0.5, diam)
        for F in _feasible_points(E, codes, 0.5, rng, count=4):
            assert bound <= isometric_error(E, F) + RESCORE_TOL, trial
    # no bound without a margin, or when the batch is wider than D*
    assert packing_distance_bound(np.array([0, 0, 1, 1]), 2, 0.0, 0.0) == 0.0
    assert packing_distance_bound(np.array([0, 0, 1, 1]), 2, 1.0, 5.0) == 0.0


def test_batch_theory_sub_batch_is_a_lower_bound():
    """Restricting an ideal embedding to a sub-batch keeps it ideal, so the
    sub-batch's distances cannot exceed the whole batch's."""
    rng = np.random.default_rng(7)
    codes = np.repeat(np.arange(4), 3)
    E = rng.normal(size=(12, 2))
    full = batch_theory(E, codes, margin=0.4, rng=1, max_points=12, checks=False)
    sub = batch_theory(E, codes, margin=0.4, rng=1, max_points=6, checks=False)
    assert sub.subsampled and not full.subsampled and sub.points == 6
    assert sub.d_iso_lower <= full.d_iso_upper + RESCORE_TOL
    assert sub.d_haus_lower <= full.d_haus_upper + RESCORE_TOL
    # whole-batch fields agree between the two
    assert sub.full_diameter == full.full_diameter
    assert sub.full_loss_max == full.full_loss_max
    assert sub.loss_max <= full.loss_max + RESCORE_TOL


def test_batch_theory_is_deterministic_under_its_seed():
    rng = np.random.default_rng(4)
    codes = np.repeat(np.arange(4), 4)
    E = rng.normal(size=(16, 3))
    a = batch_theory(E, codes, margin=0.2, rng=5, max_points=8, checks=False)
    b = batch_theory(E, codes, margin=0.2, rng=5, max_points=8, checks=False)
    ra, rb = a.record(), b.record()
    ra = {k: v for k, v in ra.items() if not k.endswith("_status")}
    rb = {k: v for k, v in rb.items() if not k.endswith("_status")}
    assert ra.keys() == rb.keys()
    for k in ra:
        va, vb = ra[k], rb[k]
        assert va == vb or (isinstance(va, float) and np.isnan(va) and np.isnan(vb)), k


def test_batch_theory_errors():
    with pytest.raises(InvalidInputError, match="n_starts"):
        batch_theory(np.zeros((4, 2)), [0, 0, 1, 1], margin=0.1, n_starts=0)
    with pytest.raises(InvalidInputError, match="margin"):
        batch_theory(np.zeros((4, 2)), [0, 0, 1, 1], margin=-1.0)
    with pytest.raises(InvalidInputError):
        batch_theory(np.zeros((4, 2)), [0, 1, 2, 3], margin=0.1)  # no triplet


def test_callback_arguments_are_checked():
    with pytest.raises(InvalidInputError, match="every"):
        TheoryCallback(0)
    with pytest.raises(InvalidInputError, match="n_batches"):
        CrossCheckCallback(0)
    with pytest.raises(InvalidInputError, match="max_points"):
        TheoryCallback(5, max_points=2)


# ---------------------------------------------------------------------------
# inside training
# ---------------------------------------------------------------------------


class _Keep:
    """A callback keeping each logged batch (to re-check the theory fields)."""

    def __init__(self):
        self.batches = {}

    def __call__(self, state):
        self.batches[state.step] = (np.array(state.batch_E), np.array(state.batch_y))


def test_theory_callback_records_land_in_the_log_and_brackets_hold():
    keep = _Keep()
    cfg = TrainConfig(**TINY, theory_every=10)
    r = train(cfg, seed=11, callbacks=[keep])
    steps = [h["step"] for h in r.history]
    assert steps == [0, 5, 10, 15, 20]
    with_theory = [h["step"] for h in r.history if "theory_d_iso" in h]
    assert with_theory == [0, 10, 20]
    rng = np.random.default_rng(0)
    for h in r.history:
        if "theory_d_iso" not in h:
            assert not any(k.startswith("theory_") for k in h)
            continue
        E, y = keep.batches[h["step"]]
        codes = np.unique(y, return_inverse=True)[1]
        assert h["theory_N"] == 8 and h["theory_dim"] == 2 and not h["theory_subsampled"]
        assert h["theory_full_diameter"] == pytest.approx(
            np.max(np.linalg.norm(E[:, None] - E[None], axis=-1)), rel=1e-12)

        class T:  # the record as attributes, for _check_brackets
            pass

        t = T()
        for k, v in h.items():
            if k.startswith("theory_"):
                setattr(t, k[len("theory_"):], v)
        _check_brackets(t, E, codes, cfg.margin, rng)
    # the final summary carries the last evaluation
    assert r.summary()["final_theory_d_iso"] == r.history[-1]["theory_d_iso"]


def test_theory_callbacks_change_no_trained_number():
    plain = train(TrainConfig(**TINY), seed=3)
    with_theory = train(TrainConfig(**TINY, theory_every=10, crosscheck_batches=1), seed=3)
    fields = ("loss", "eval_diameter", "eval_median_distance", "batch_hard_active_fraction")
    for a, b in zip(plain.history, with_theory.history, strict=True):
        for f in fields:
            if f in a:
                assert a[f] == b[f], f
    np.testing.assert_array_equal(plain.eval_E, with_theory.eval_E)


def test_theory_every_must_be_a_multiple_of_log_every():
    with pytest.raises(InvalidInputError, match="multiple of `log_every`"):
        TrainConfig(**TINY, theory_every=7)
    with pytest.raises(InvalidInputError, match="crosscheck_batches"):
        TrainConfig(**TINY, crosscheck_batches=-1)


def test_crosscheck_lands_in_the_last_record_and_tables():
    cfg = TrainConfig(**{**TINY, "batch_size": 12}, crosscheck_batches=2,
                      theory_max_points=8, theory_n_starts=2)
    r = train(cfg, seed=5)
    assert all("crosscheck" not in h for h in r.history[:-1])
    last = r.history[-1]
    batches = last["crosscheck"]
    assert len(batches) == last["crosscheck_batches"] == 2
    n_checks = sum(len(b["checks"]) for b in batches)
    assert n_checks == (last["crosscheck_true"] + last["crosscheck_false"]
                        + last["crosscheck_undetermined"])
    for b in batches:
        assert b["points"] <= 8
        keys = [c["key"] for c in b["checks"]]
        assert keys == [k for k in STATEMENTS if k in keys]  # STATEMENTS order
        for c in b["checks"]:
            if STATEMENTS[c["key"]][2] == "theorem":
                assert c["holds"] is not False, c
            assert c["slack"] == pytest.approx(c["rhs"] - c["lhs"], abs=1e-12)
    s = r.summary()
    assert s["final_crosscheck_batches"] == 2
    assert "final_crosscheck" not in s  # the nested list stays in the history

    # tables from a results-like document
    rec = {**s, "cell_id": "c0", "dataset": cfg.dataset, "loss": cfg.loss,
           "normalize": cfg.normalize, "batch_size": cfg.batch_size,
           "embedding_dim": cfg.embedding_dim, "margin": cfg.margin, "replicate": 0,
           "P": r.P, "K": r.K}
    doc = {"records": [rec], "histories": {"c0": r.history}}
    rows = crosscheck_rows(doc)
    assert len(rows) == n_checks
    assert {row["setup"] for row in rows} == {"batch_hard"}
    summ = crosscheck_summary(rows)
    assert sum(x["n"] for x in summ) == n_checks
    assert [x["statement"] for x in summ] == [k for k in STATEMENTS
                                               if any(rw["statement"] == k for rw in rows)]
    for x in summ:
        assert x["true"] + x["false"] + x["undetermined"] == x["n"]
        assert x["rel_slack_min"] <= x["rel_slack_median"] <= x["rel_slack_max"]
    cr = curve_rows([rec])
    assert len(cr) == 1 and cr[0]["curve"] <= cr[0]["d_star_estimate"] + RESCORE_TOL
    assert cr[0]["below_curve"] == (rec["final_eval_diameter"] < cr[0]["curve"])
    # a document without cross-check contributes no rows
    assert crosscheck_rows({"records": [rec], "histories": {}}) == []
