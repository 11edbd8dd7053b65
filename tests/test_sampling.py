"""The one P x K sampler (isoapprox.sampling) and the draws of its four callers.

The references below are the four samplers as they were before they shared
:func:`isoapprox.sampling.pk_draw` (training's ``PKSampler``, the theory
callbacks' ``sub_batch``, diagnose's ``theory_subsample`` and its batches,
``sample_batches``), kept verbatim:
the draws are recorded in committed results, so every seed must give the same
indices as they do.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isoapprox.diagnostics import theory_subsample
from isoapprox.diagnostics.report import sample_batches
from isoapprox.exceptions import InvalidInputError
from isoapprox.sampling import PKSampler, class_members, pk_draw, pk_sample
from isoapprox.train import PKSampler as TrainPKSampler
from isoapprox.train.bounds import sub_batch
from isoapprox.train.data import PKSampler as DataPKSampler

# --- the references (the pre-refactor algorithms) -------------------------------------


def _codes(y):
    return np.unique(np.asarray(y), return_inverse=True)[1].ravel()


def ref_pk_batches(y, P, K, seed, n):
    codes = _codes(y)
    members = [np.flatnonzero(codes == c) for c in range(codes.max() + 1)]
    members = [m for m in members if m.size >= K]
    gen = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        chosen = gen.choice(len(members), size=P, replace=False)
        b = np.empty(P * K, dtype=np.int64)
        for k, c in enumerate(chosen):
            m = members[c]
            b[k * K:(k + 1) * K] = m[gen.choice(m.size, size=K, replace=False)]
        out.append(b)
    return out


def ref_sub_batch(y, max_points, per_class, seed):
    codes = _codes(y)
    N = codes.shape[0]
    if N <= max_points:
        return np.arange(N)
    gen = np.random.default_rng(seed)
    counts = np.bincount(codes)
    eligible = np.flatnonzero(counts >= 2)
    k = int(min(per_class, max_points // 2, counts[eligible].min()))
    p = int(min(eligible.size, max_points // k))
    if p < 2:
        return None  # sub_batch refuses: no two classes of two or more
    chosen = gen.choice(eligible, size=p, replace=False)
    out = [gen.choice(np.flatnonzero(codes == c), size=k, replace=False) for c in chosen]
    return np.sort(np.concatenate(out))


def ref_theory_subsample(y, max_points, seed):
    codes = _codes(y)
    N = codes.shape[0]
    if N <= max_points:
        return np.arange(N)
    gen = np.random.default_rng(seed)
    counts = np.bincount(codes)
    multi = gen.permutation(np.flatnonzero(counts >= 2))
    single = gen.permutation(np.flatnonzero(counts == 1))
    order = np.concatenate([multi, single]).astype(np.int64)
    n_cls = max(2, min(len(order), max_points // 4))
    per = max_points // n_cls
    rows = []
    for c in np.sort(order[:n_cls]):
        members = np.flatnonzero(codes == c)
        rows.append(gen.choice(members, size=min(per, members.size), replace=False))
    return np.sort(np.concatenate(rows))


def ref_sample_batches(codes, batch_size, per_class, n_batches, rng):
    counts = np.bincount(codes)
    P = batch_size // per_class
    eligible = np.flatnonzero(counts >= per_class)
    members = [np.flatnonzero(codes == c) for c in range(len(counts))]
    for _ in range(n_batches):
        chosen = rng.choice(eligible, size=P, replace=False)
        yield np.concatenate(
            [rng.choice(members[c], size=per_class, replace=False) for c in np.sort(chosen)]
        )


# --- strategies ---------------------------------------------------------------------

sizes_st = st.lists(st.integers(1, 12), min_size=1, max_size=14)


@st.composite
def pools(draw, min_classes=1):
    """Shuffled labels of random class sizes, as integers or strings."""
    sizes = draw(sizes_st.filter(lambda s: len(s) >= min_classes))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(sizes)), sizes)[gen.permutation(sum(sizes))]
    if draw(st.booleans()):
        names = np.array([f"class-{c}" for c in gen.permutation(len(sizes))])
        y = names[y]
    return y


def _check_batch(y, idx, P, K, *, small):
    """The P x K properties of one batch of pool ``y``."""
    assert idx.dtype == np.int64
    assert len(set(idx.tolist())) == idx.size  # no member twice
    labels, counts = np.unique(y[idx], return_counts=True)
    assert labels.size == P
    total = dict(zip(*np.unique(y, return_counts=True), strict=True))
    for lab, c in zip(labels, counts, strict=True):
        assert c == (K if small == "exclude" else min(K, total[lab]))
        if small == "exclude":
            assert total[lab] >= K


# --- properties of the sampler ----------------------------------------------------------


@given(pools(), st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**31 - 1),
       st.sampled_from(["choice", "sorted_choice", "permutation"]),
       st.sampled_from(["exclude", "all"]), st.booleans())
def test_pk_sample_draws_p_classes_of_k_distinct_members(y, P, K, seed, draw, small, sort):
    sizes = np.unique(y, return_counts=True)[1]
    candidates = int(np.sum(sizes >= K)) if small == "exclude" else sizes.size
    if candidates < P:
        with pytest.raises(InvalidInputError, match=f"needs P = {P} classes"):
            pk_sample(y, P, K, rng=seed, draw=draw, small=small, sort=sort)
        return
    idx = pk_sample(y, P, K, rng=seed, draw=draw, small=small, sort=sort)
    _check_batch(y, idx, P, K, small=small)
    if sort:
        assert np.all(np.diff(idx) > 0)
    else:  # class-major: each class's members in one run
        runs = np.flatnonzero(y[idx][1:] != y[idx][:-1]).size + 1
        assert runs == P
    again = pk_sample(y, P, K, rng=np.random.default_rng(seed), draw=draw, small=small,
                      sort=sort)
    assert np.array_equal(idx, again)  # seeded: an int seed and its generator agree


@given(pools(min_classes=2), st.integers(0, 2**31 - 1))
def test_pk_sampler_batches_are_those_of_the_old_sampler(y, seed):
    P, K = 2, int(np.sort(np.unique(y, return_counts=True)[1])[-2])
    s = PKSampler(y, P, K, rng=seed)
    batches = [s.sample() for _ in range(6)]
    for b, r in zip(batches, ref_pk_batches(y, P, K, seed, 6), strict=True):
        assert np.array_equal(b, r)
        _check_batch(y, b, P, K, small="exclude")


@given(pools(min_classes=2), st.integers(4, 40), st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_sub_batch_draws_are_those_of_the_old_sub_batch(y, max_points, per_class, seed):
    counts = np.unique(y, return_counts=True)[1]
    if not np.any(counts >= 2):
        return  # no triplet: sub_batch refuses (tests/test_train_bounds.py)
    want = ref_sub_batch(y, max_points, per_class, seed)
    if want is None:
        with pytest.raises(InvalidInputError, match="two classes of two or more"):
            sub_batch(y, max_points=max_points, per_class=per_class, rng=seed)
        return
    got = sub_batch(y, max_points=max_points, per_class=per_class, rng=seed)
    assert np.array_equal(got, want)


@given(pools(), st.integers(3, 60), st.integers(0, 2**31 - 1))
def test_theory_subsample_is_the_permutation_draw(y, max_points, seed):
    want = ref_theory_subsample(y, max_points, seed)
    assert np.array_equal(theory_subsample(y, max_points, rng=seed), want)
    if y.size <= max_points:
        return
    # what diagnose's theory_subsample becomes: a call of the one sampler
    codes = _codes(y)
    members = class_members(codes)
    n_cls = max(2, min(len(members), max_points // 4))
    got = pk_draw(members, n_cls, max_points // n_cls, np.random.default_rng(seed),
                  draw="permutation", sort=True)
    assert np.array_equal(got, want)


@given(pools(min_classes=2), st.integers(1, 4), st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_diagnose_batches_are_those_of_the_old_sampler(y, P, K, seed):
    codes = _codes(y)
    if np.sum(np.bincount(codes) >= K) < P:
        with pytest.raises(InvalidInputError, match=f"needs {P} classes"):
            next(sample_batches(codes, P * K, K, 3, np.random.default_rng(seed)))
        return
    got = list(sample_batches(codes, P * K, K, 3, np.random.default_rng(seed)))
    want = list(ref_sample_batches(codes, P * K, K, 3, np.random.default_rng(seed)))
    assert len(got) == 3
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
        _check_batch(codes, g, P, K, small="exclude")


# --- examples and errors --------------------------------------------------------------


def test_one_home():
    assert TrainPKSampler is PKSampler and DataPKSampler is PKSampler


def test_class_members_groups_increasing_indices():
    y = np.array([2, 0, 2, 1, 0, 2])
    assert [m.tolist() for m in class_members(y)] == [[1, 4], [3], [0, 2, 5]]
    assert all(m.dtype == np.int64 for m in class_members(y))


def test_small_classes_give_all_their_members_or_are_never_drawn():
    y = np.array(["a"] * 5 + ["b"] + ["c"] * 2)
    for seed in range(20):
        idx = pk_sample(y, 3, 3, rng=seed, small="all")
        assert sorted(y[idx].tolist()) == ["a"] * 3 + ["b"] + ["c"] * 2
    with pytest.raises(InvalidInputError, match=r"needs P = 2 classes with at least K = 3 "
                                                r"samples; got 1 such classes \(of 3\)"):
        pk_sample(y, 2, 3, rng=0)


def test_permutation_draw_prefers_classes_of_two_or_more():
    y = np.array([0, 1, 2, 2, 3, 3, 4])  # classes 2 and 3 have two members
    for seed in range(20):
        assert sorted(set(y[pk_sample(y, 2, 2, rng=seed, draw="permutation",
                                      small="all")].tolist())) == [2, 3]


def test_pk_sample_errors_name_the_argument():
    y = [0, 0, 1, 1]
    with pytest.raises(InvalidInputError, match="`P` must be >= 1; got 0"):
        pk_sample(y, 0, 2)
    with pytest.raises(InvalidInputError, match="`K` must be >= 1; got 0"):
        pk_sample(y, 2, 0)
    with pytest.raises(InvalidInputError, match="`draw` must be one of 'choice', "
                                                "'sorted_choice', 'permutation'; got 'shuffle'"):
        pk_sample(y, 2, 2, draw="shuffle")
    with pytest.raises(InvalidInputError, match="`small` must be one of"):
        pk_sample(y, 2, 2, small="drop")
    with pytest.raises(TypeError, match="`sort` must be True or False"):
        pk_sample(y, 2, 2, sort=1)
    with pytest.raises(TypeError, match="`y` must be a 1-D array of class labels"):
        pk_sample("ab", 2, 2)
