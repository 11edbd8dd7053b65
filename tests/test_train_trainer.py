"""The training loop: determinism, logging, the callback hook, divergence, learning."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import isoapprox as ia
from isoapprox.exceptions import InvalidInputError
from isoapprox.train import TrainConfig, Trainer, train

TINY = TrainConfig(
    dataset="gaussian",
    n_classes=12,
    n_train_classes=8,
    per_class=10,
    input_dim=6,
    hidden=(12,),
    embedding_dim=3,
    batch_size=16,
    steps=30,
    log_every=10,
    recall_ks=(1, 4),
)


def _strip(history):
    return [{k: v for k, v in rec.items()} for rec in history]


def test_same_seed_same_run_and_threads_do_not_matter():
    a = train(TINY, seed=3)
    b = train(TINY, seed=3, threads=None)
    assert _strip(a.history) == _strip(b.history)
    assert np.array_equal(a.eval_E, b.eval_E)
    c = train(TINY, seed=4)
    assert _strip(a.history) != _strip(c.history)


def test_log_interval_changes_no_trained_number():
    a = train(TINY, seed=1)
    b = train(dataclasses.replace(TINY, log_every=5), seed=1)
    assert np.array_equal(a.eval_E, b.eval_E)
    by_step = {r["step"]: r for r in b.history}
    for rec in a.history:
        assert rec == by_step[rec["step"]] | {"loss_avg": rec["loss_avg"]}


def test_history_fields_and_steps():
    r = train(TINY, seed=0)
    assert [h["step"] for h in r.history] == [0, 10, 20, 30]
    rec = r.final
    for key in (
        "loss",
        "loss_avg",
        "active_fraction",
        "grad_norm",
        "batch_diameter",
        "batch_median_distance",
        "batch_hard_max",
        "batch_hard_mean",
        "batch_hard_active_fraction",
        "eval_diameter",
        "eval_median_distance",
        "eval_mean_norm",
        "eval_recall_at_1",
        "eval_recall_at_4",
    ):
        assert np.isfinite(rec[key]), key
    assert rec["epoch"] == pytest.approx(30 * 16 / 80)
    assert (r.P, r.K) == (4, 4) and r.steps_done == 30 and not r.diverged
    s = r.summary()
    assert s["final_eval_diameter"] == rec["eval_diameter"]
    assert s["initial_eval_diameter"] == r.initial["eval_diameter"]
    assert set(r.diagrams) == {"heldout_initial", "heldout_final", "train_final"}


def test_eval_set_is_the_held_out_classes():
    tr = Trainer(TINY, seed=0)
    assert set(tr.split.test.y.tolist()) == {8, 9, 10, 11}
    assert tr.eval_inputs.shape == (40, 6)


def test_callback_sees_the_logged_batch():
    seen = []

    def hook(state):
        value = ia.batch_hard_loss(
            state.batch_E, state.batch_y, margin=state.config.margin, reduction="max"
        )
        assert value == state.record["batch_hard_max"]
        assert state.loss.value == state.record["loss"]
        assert state.eval_E.shape == (40, 3)
        seen.append(state.step)
        return {"my_quantity": float(state.step)}

    r = train(TINY, seed=0, callbacks=[hook])
    assert seen == [0, 10, 20, 30]
    assert [h["my_quantity"] for h in r.history] == [0.0, 10.0, 20.0, 30.0]


def test_callback_errors_propagate_and_clashes_are_refused():
    def clash(state):
        return {"loss": 1.0}

    with pytest.raises(InvalidInputError, match="already logged"):
        train(TINY, seed=0, callbacks=[clash])

    def boom(state):
        if state.step == 10:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        train(TINY, seed=0, callbacks=[boom])


def test_divergence_is_reported_not_raised(caplog):
    """A non-finite loss stops the run cleanly: flagged, logged, no exception."""
    tr = Trainer(dataclasses.replace(TINY, steps=40), seed=0)
    calls = []
    inner = tr.loss_fn

    def flaky(E, y, **kw):
        calls.append(1)
        res = inner(E, y, **kw)
        if len(calls) > 7:
            return dataclasses.replace(res, value=float("nan"))
        return res

    tr.loss_fn = flaky
    r = tr.run()
    assert r.diverged and r.steps_done == 7 and r.final.get("diverged") is True
    assert "diverged at step 7" in caplog.text


def test_huge_learning_rate_overflows_to_divergence():
    cfg = dataclasses.replace(
        TINY,
        lr=1e8,
        momentum=0.0,
        activation="relu",
        hidden=(32, 32, 32),
        steps=200,
        log_every=100,
    )
    r = train(cfg, seed=0)
    assert r.diverged and r.steps_done < 200


def test_training_separates_gaussian_classes():
    cfg = dataclasses.replace(TINY, steps=300, log_every=100, lr=0.02)
    r = train(cfg, seed=2)
    assert r.final["batch_hard_mean"] < 0.5 * r.initial["batch_hard_mean"]
    assert r.final["loss_avg"] < r.initial["loss"]


@pytest.mark.parametrize(
    "loss",
    [
        "batch_hard_soft",
        "all_triplet",
        "semi_hard",
        "selectively_contrastive",
        "contrastive",
        "margin",
    ],
)
def test_every_loss_trains(loss):
    cfg = dataclasses.replace(
        TINY,
        loss=loss,
        normalize=loss == "selectively_contrastive",
        margin=0.5,
        steps=12,
        log_every=6,
    )
    r = train(cfg, seed=0)
    assert not r.diverged and np.isfinite(r.final["loss"])


def test_free_table_and_adam():
    cfg = dataclasses.replace(
        TINY, model="table", optimizer="adam", lr=0.01, normalize=True, eval_size=24
    )
    tr = Trainer(cfg, seed=0)
    assert tr.eval_inputs.dtype.kind == "i" and tr.eval_inputs.size == 24
    r = tr.run()
    assert r.n_params == 80 * 3 and not r.diverged


def test_digits_cell_runs():
    cfg = TrainConfig(
        batch_size=16, embedding_dim=4, steps=5, log_every=5, eval_size=200
    )
    r = train(cfg, seed=0)
    assert (r.P, r.K) == (4, 4) and r.eval_E.shape == (200, 4)


def test_config_errors():
    with pytest.raises(InvalidInputError, match="`dataset` must be one of"):
        TrainConfig(dataset="mnist")
    with pytest.raises(InvalidInputError, match="`batch_size` must be >= 4"):
        TrainConfig(batch_size=2)
    with pytest.raises(
        InvalidInputError, match="`reduction` must be one of 'sum', 'mean'"
    ):
        TrainConfig(loss="selectively_contrastive", reduction="max")
    with pytest.raises(
        InvalidInputError, match="`n_train_classes` must be < `n_classes`"
    ):
        TrainConfig(dataset="gaussian", n_classes=10, n_train_classes=10)
    with pytest.raises(InvalidInputError, match="no field"):
        TrainConfig.from_dict({"nope": 1})
    with pytest.raises(InvalidInputError, match="cannot be split"):
        Trainer(dataclasses.replace(TINY, batch_size=512), seed=0)
    with pytest.raises(TypeError, match="`seed` must be"):
        Trainer(TINY, seed=-1)
    assert TrainConfig.from_dict(TINY.to_dict()) == TINY
