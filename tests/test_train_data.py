"""Data sets, class-disjoint splits, P x K sampling and evaluation metrics."""

from __future__ import annotations

import logging
import random
import socket
import sys
import urllib.request

import numpy as np
import pytest

from isoapprox.exceptions import InvalidInputError
from isoapprox.train import (
    MissingDependencyError,
    PKSampler,
    TrainConfig,
    Trainer,
    class_disjoint_split,
    embedding_stats,
    gaussian_clusters,
    load_digits,
    recall_at_k,
    resolve_pk,
    triplet_diagram,
)
from isoapprox.train import data as train_data
from isoapprox.train.data import load_mnist1d

from . import train_reference as ref
from .reference import pairwise

# --- P x K sampler ------------------------------------------------------------


def _labels():
    # class sizes 6, 5, 4, 3, 2
    return np.repeat(np.arange(5), [6, 5, 4, 3, 2])


def test_sampler_balance_and_no_duplicates():
    y = _labels()
    s = PKSampler(y, 3, 3, rng=0)
    for _ in range(200):
        idx = s.sample()
        assert idx.size == 9 and np.unique(idx).size == 9
        counts = np.bincount(y[idx], minlength=5)
        assert sorted(counts[counts > 0].tolist()) == [3, 3, 3]
        # class-major order
        assert np.all(y[idx].reshape(3, 3) == y[idx].reshape(3, 3)[:, :1])


def test_sampler_is_deterministic_and_seed_dependent():
    y = _labels()
    a = [PKSampler(y, 2, 2, rng=7).sample() for _ in range(1)]
    s1, s2, s3 = (
        PKSampler(y, 2, 2, rng=7),
        PKSampler(y, 2, 2, rng=7),
        PKSampler(y, 2, 2, rng=8),
    )
    b1 = [s1.sample() for _ in range(20)]
    b2 = [s2.sample() for _ in range(20)]
    b3 = [s3.sample() for _ in range(20)]
    assert all(np.array_equal(u, v) for u, v in zip(b1, b2, strict=True))
    assert np.array_equal(a[0], b1[0])
    assert not all(np.array_equal(u, v) for u, v in zip(b1, b3, strict=True))


def test_sampler_covers_eligible_classes_and_skips_small_ones(caplog):
    y = _labels()
    with caplog.at_level(logging.WARNING):
        s = PKSampler(y, 2, 4, rng=1)
    assert "fewer than K = 4 samples" in caplog.text
    seen = set()
    for _ in range(100):
        seen |= set(y[s.sample()].tolist())
    assert seen == {0, 1, 2}  # classes 3 (3 samples) and 4 (2) are never drawn


def test_sampler_errors():
    with pytest.raises(
        InvalidInputError, match="needs P = 4 classes with at least K = 4"
    ):
        PKSampler(_labels(), 4, 4)
    with pytest.raises(InvalidInputError, match="`P` must be >= 1"):
        PKSampler(_labels(), 0, 3)


def test_resolve_pk():
    assert resolve_pk(4, [2, 2]) == (2, 2)
    assert resolve_pk(8, [9] * 3) == (2, 4)
    assert resolve_pk(16, [180] * 6) == (4, 4)
    assert resolve_pk(512, [180] * 6) == (4, 128)
    assert resolve_pk(128, [40] * 64) == (32, 4)
    assert resolve_pk(512, [40] * 256) == (128, 4)
    assert resolve_pk(12, [9] * 6, 3) == (4, 3)
    with pytest.raises(InvalidInputError, match="cannot be split into P >= 2 classes"):
        resolve_pk(64, [3, 3])
    with pytest.raises(InvalidInputError, match="multiple of `samples_per_class`"):
        resolve_pk(10, [9] * 6, 4)
    with pytest.raises(InvalidInputError, match="P >= 2 classes per batch"):
        resolve_pk(8, [9] * 6, 8)
    with pytest.raises(InvalidInputError, match="needs 4 classes of at least 4"):
        resolve_pk(16, [9, 9, 3, 3], 4)
    with pytest.raises(InvalidInputError, match="`batch_size` must be >= 4"):
        resolve_pk(2, [9, 9])
    with pytest.raises(InvalidInputError, match="positive integer or 'auto'"):
        resolve_pk(8, [9, 9], "many")


# --- data sets ---------------------------------------------------------------


def test_gaussian_clusters_deterministic_and_scaled():
    a = gaussian_clusters(50, 40, 200, separation=2.0, noise=1.0, rng=5)
    b = gaussian_clusters(50, 40, 200, separation=2.0, noise=1.0, rng=5)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    # within-class distance about noise * sqrt(2), independent of d
    X0 = a.X[a.y == 0]
    d = np.linalg.norm(X0[0] - X0[1:], axis=1)
    assert np.mean(d) == pytest.approx(np.sqrt(2.0), rel=0.1)


def test_class_disjoint_split_standardises_with_train_stats():
    ds = gaussian_clusters(6, 20, 4, rng=0)
    sp = class_disjoint_split(ds, [0, 1, 2, 3])
    assert set(sp.train.y.tolist()) == {0, 1, 2, 3} and set(sp.test.y.tolist()) == {
        4,
        5,
    }
    np.testing.assert_allclose(sp.train.X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(sp.train.X.std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(
        sp.test.X, (ds.X[ds.y >= 4] - sp.mean) / sp.scale, rtol=1e-15
    )


def test_split_errors():
    ds = gaussian_clusters(3, 4, 2, rng=0)
    with pytest.raises(InvalidInputError, match="unknown \\[7\\]"):
        class_disjoint_split(ds, [0, 7])
    with pytest.raises(InvalidInputError, match="must be disjoint; got \\[1\\]"):
        class_disjoint_split(ds, [0, 1], [1, 2])
    with pytest.raises(
        InvalidInputError, match="`test_classes` must name at least one"
    ):
        class_disjoint_split(ds, [0, 1, 2])


def test_digits_split_and_constant_features():
    ds = load_digits()
    assert ds.X.shape == (1797, 64) and set(ds.y.tolist()) == set(range(10))
    sp = class_disjoint_split(ds, range(6))
    assert len(sp.train) + len(sp.test) == 1797
    assert np.all(np.isfinite(sp.train.X)) and np.all(
        sp.scale > 0
    )  # pixel 0 is constant


def test_missing_scikit_learn_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(
        MissingDependencyError, match=r"pip install 'isoapprox\[data\]'"
    ):
        load_digits()


# --- MNIST-1D (generated offline by the mnist1d package) -------------------------


def test_mnist1d_shapes_classes_and_determinism():
    pytest.importorskip("mnist1d")
    a = load_mnist1d(per_class=30, rng=3)
    assert a.X.shape == (300, 40) and a.X.dtype == np.float64 and a.y.dtype == np.int64
    assert np.bincount(a.y).tolist() == [30] * 10
    assert np.all(np.isfinite(a.X))
    b = load_mnist1d(per_class=30, rng=3)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and a.name == b.name
    c = load_mnist1d(per_class=30, rng=4)
    assert not np.array_equal(a.X, c.X)
    # the returned arrays are the caller's: writing them leaves the cache intact
    a.X[0, 0] = 1e6
    assert load_mnist1d(per_class=30, rng=3).X[0, 0] == b.X[0, 0]
    # a class is the mean template plus noise: its signals are nearer their class mean
    means = np.stack([b.X[b.y == k].mean(axis=0) for k in range(10)])
    d = np.linalg.norm(b.X[:, None, :] - means[None, :, :], axis=2)
    assert np.mean(np.argmin(d, axis=1) == b.y) > 0.3  # chance is 0.1


def test_mnist1d_leaves_global_random_state_alone():
    pytest.importorskip("mnist1d")
    train_data._mnist1d.cache_clear()
    # the legacy global state is what mnist1d's make_dataset reseeds
    np.random.seed(123)  # noqa: NPY002
    random.seed(123)
    expected_np, expected_py = np.random.get_state()[1].copy(), random.getstate()  # noqa: NPY002
    load_mnist1d(per_class=5, rng=11)
    assert np.array_equal(np.random.get_state()[1], expected_np)  # noqa: NPY002
    assert random.getstate() == expected_py


def test_mnist1d_generates_without_network(monkeypatch):
    pytest.importorskip("mnist1d")
    train_data._mnist1d.cache_clear()  # generate, not read from the cache

    def refuse(*args, **kwargs):
        raise AssertionError("network access")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    ds = load_mnist1d(per_class=10, rng=12)
    assert ds.X.shape == (100, 40)


def test_mnist1d_split_of_the_harness():
    pytest.importorskip("mnist1d")
    cfg = TrainConfig(dataset="mnist1d", batch_size=32, embedding_dim=4, steps=2,
                      log_every=1)
    t1, t2 = Trainer(cfg, seed=5), Trainer(cfg, seed=5)
    sp = t1.split
    assert sp.train.X.shape == (4000, 40) and sp.test.X.shape == (1000, 40)
    assert set(sp.train.y.tolist()) == set(range(8))
    assert set(sp.test.y.tolist()) == {8, 9}
    np.testing.assert_allclose(sp.train.X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(sp.train.X.std(axis=0), 1.0, rtol=1e-12)
    assert sp.train.name.startswith("mnist1d(")
    assert np.array_equal(sp.train.X, t2.split.train.X)  # the run's seed fixes the data
    assert not np.array_equal(sp.train.X, Trainer(cfg, seed=6).split.train.X)
    assert (t1.P, t1.K) == (8, 4)


def test_mnist1d_training_run():
    pytest.importorskip("mnist1d")
    cfg = TrainConfig(dataset="mnist1d", batch_size=16, embedding_dim=4, hidden=(8,),
                      steps=20, log_every=10, recall_ks=(1,))
    r1 = Trainer(cfg, seed=0).run()
    r2 = Trainer(cfg, seed=0).run()
    assert r1.steps_done == 20 and not r1.diverged
    assert repr(r1.history) == repr(r2.history)  # NaN-safe: the same numbers
    assert 0.0 <= r1.final["eval_recall_at_1"] <= 1.0


def test_missing_mnist1d_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "mnist1d.data", None)
    train_data._mnist1d.cache_clear()
    with pytest.raises(
        MissingDependencyError, match=r"pip install 'isoapprox\[mnist1d\]'"
    ):
        load_mnist1d(rng=0)
    with pytest.raises(InvalidInputError, match="per_class"):
        load_mnist1d(per_class=0)


# --- evaluation -----------------------------------------------------------------


@pytest.mark.parametrize("ties", [False, True])
def test_recall_matches_bruteforce(rng, ties):
    E = rng.normal(size=(30, 3))
    if ties:
        E = np.round(E)  # many equal distances
    y = rng.integers(0, 4, size=30)
    got = recall_at_k(E, y, ks=(1, 2, 4, 8, 100))
    for k, v in got.items():
        assert v == ref.recall_at_k(E, y, k)


def test_recall_of_collapsed_embedding_follows_index_order():
    # every distance ties: each query's first neighbour is the lowest other index,
    # so only query 3 (neighbour 0, same class) is a hit
    E = np.zeros((4, 2))
    assert recall_at_k(E, [0, 1, 1, 0], ks=(1,)) == {1: 0.25}


def test_embedding_stats_and_diagram_against_loops(rng):
    E = rng.normal(size=(9, 3))
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    st = embedding_stats(E)
    D = pairwise(E)
    iu = np.triu_indices(9, 1)
    assert st.diameter == pytest.approx(D.max(), rel=1e-15)
    assert st.median_distance == pytest.approx(np.median(D[iu]), rel=1e-15)
    t = triplet_diagram(E, y)
    U = ref.normalise_rows(E)
    for k, a in enumerate(t.anchor):
        pos = [U[a] @ U[p] for p in range(9) if p != a and y[p] == y[a]]
        neg = [U[a] @ U[m] for m in range(9) if y[m] != y[a]]
        assert t.s_ap[k] == pytest.approx(min(pos), abs=1e-15)
        assert t.s_ap_easy[k] == pytest.approx(max(pos), abs=1e-15)
        assert t.s_an[k] == pytest.approx(max(neg), abs=1e-15)
        assert t.d_ap[k] == pytest.approx(
            max(D[a, p] for p in range(9) if p != a and y[p] == y[a]), rel=1e-15
        )
    assert t.hard_fraction == np.mean(t.s_an > t.s_ap)
    assert set(t.to_dict()) >= {"s_ap", "s_an", "hard_fraction"}
    small = t.to_dict(max_anchors=5, digits=3)
    assert small["n_anchors"] == 9 and small["anchor"] == [0, 2, 4, 6, 8]
    assert small["s_an"] == [float(f"{v:.3g}") for v in t.s_an[[0, 2, 4, 6, 8]]]
    assert small["hard_fraction"] == t.hard_fraction
