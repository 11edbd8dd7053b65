"""Blocked large-batch kernels against exact references.

The blocked kernels of :mod:`isoapprox.kernels.distances` and
:mod:`isoapprox.kernels.losses` promise *bitwise* the values of the scalar
direct-difference loop (``s += (x_k - y_k)**2`` in feature order, then
``sqrt``), and arg-max / arg-min with ties broken towards the smallest index.
:func:`seq_distances` below computes the same sums in the same order with
numpy (one vectorised pass per feature), so the comparisons here are exact
equalities, not tolerances; it is itself checked against the loop references
of ``tests/reference.py``.

Block-boundary cases: sizes one below / at / one above the micro-tile
(``TA = 8`` rows, ``TJ = 64`` columns), the block size, the 256-row sweeps,
the serial/parallel threshold, and schedules with odd block counts; the
serial and parallel drivers, and one vs. two threads, must agree bitwise.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isoapprox._progress import new_control
from isoapprox.geometry import diameter, farthest_pair
from isoapprox.kernels import distances as KD
from isoapprox.kernels import losses as KL
from isoapprox.losses import (
    batch_hard_loss,
    hardest_pairs,
    is_triplet_separated,
    separation_report,
)
from isoapprox.metrics import isometric_error, isometric_error_report

from . import reference as ref
from .conftest import KERNEL_ATOL, KERNEL_RTOL, scale_of


def bs_tasks(X, bs):
    """The tasks of the parallel batch-hard kernel at block size ``bs`` (its control slots)."""
    M = (X.shape[0] + bs - 1) // bs
    return M * (M + 1) // 2

ROOT = Path(__file__).resolve().parents[1]

#: near-duplicates far from the origin: the direct difference of two close
#: coordinates is exact (Sterbenz), so the distance keeps ~1e-15 relative
#: precision; the dot-product expansion would lose about 1e12 / 1e-10 of it.
NEAR_DUP_RTOL = 1e-12


# ---------------------------------------------------------------------------
# exact references
# ---------------------------------------------------------------------------


def seq_distances(X1: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
    """``sqrt(sum_k (X1[i, k] - X2[j, k])**2)``, summed in feature order.

    The same operations in the same order as the kernels: bitwise equal.
    """
    X1 = np.asarray(X1, dtype=float)
    X2 = X1 if X2 is None else np.asarray(X2, dtype=float)
    S = np.zeros((X1.shape[0], X2.shape[0]))
    for k in range(X1.shape[1]):
        t = X1[:, k][:, None] - X2[:, k][None, :]
        S += t * t
    return np.sqrt(S)


def exact_batch_hard(X, codes):
    D = seq_distances(X)
    N = len(X)
    same = codes[:, None] == codes[None, :]
    np.fill_diagonal(same, False)
    diff = codes[:, None] != codes[None, :]
    Dp = np.where(same, D, -np.inf)
    Dn = np.where(diff, D, np.inf)
    hpi = np.argmax(Dp, axis=1)  # first occurrence = smallest index
    hni = np.argmin(Dn, axis=1)
    hp = Dp[np.arange(N), hpi]
    hn = Dn[np.arange(N), hni]
    hpi = np.where(same.any(axis=1), hpi, -1)
    hni = np.where(diff.any(axis=1), hni, -1)
    return hp, hn, hpi, hni


def exact_triangle_argmax(E: np.ndarray, init: float):
    """Largest strictly-upper-triangular entry above ``init`` and its first (i, j)."""
    N = len(E)
    iu = np.triu_indices(N, 1)
    vals = E[iu]
    if vals.size == 0 or not (vals.max() > init):
        return init, 0, (1 if N > 1 or init < 0 else 0)
    k = int(np.argmax(vals))  # row-major order: lexicographically first
    return float(vals[k]), int(iu[0][k]), int(iu[1][k])


def exact_diameter(X):
    return exact_triangle_argmax(seq_distances(X), 0.0)


def exact_isometric(X1, X2):
    return exact_triangle_argmax(np.abs(seq_distances(X1) - seq_distances(X2)), -1.0)


def exact_violations(X, codes, margin, atol):
    D = seq_distances(X)
    out = np.zeros(len(X), dtype=np.int64)
    for a in range(len(X)):
        pos = (codes == codes[a]) & (np.arange(len(X)) != a)
        neg = codes != codes[a]
        t = D[a, pos] + margin
        out[a] = int(np.sum((t[:, None] - D[a, neg][None, :]) > atol))
    return out


def assert_bh_equal(got, want):
    for g, w, name in zip(got, want, ("hp", "hn", "hp_idx", "hn_idx"), strict=True):
        np.testing.assert_array_equal(g, w, err_msg=name)


def unit_rows(rng, N, n):
    X = rng.normal(size=(N, n))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def group_labels(N, K=4):
    return np.arange(N, dtype=np.int64) // K


@pytest.fixture
def threads():
    """Restore numba's thread count after a test changes it."""
    before = numba.get_num_threads()
    yield numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(before)


# ---------------------------------------------------------------------------
# the exact reference itself
# ---------------------------------------------------------------------------


def test_seq_distances_matches_loop_reference(rng):
    X = rng.normal(size=(9, 5)) * 3.0
    D = seq_distances(X)
    np.testing.assert_array_equal(D, ref.pairwise(X))


# ---------------------------------------------------------------------------
# batch-hard mining
# ---------------------------------------------------------------------------

# sizes around TA = 8, TJ = 64, the minimal block 64, N_BLOCKS * 64 = 1024
BH_SIZES = [2, 3, 7, 8, 9, 63, 64, 65, 127, 129, 257, 1023, 1025]


@pytest.mark.parametrize("N", BH_SIZES)
def test_batch_hard_exact_across_boundaries(rng, N):
    n = int(rng.integers(1, 20))
    X = rng.normal(size=(N, n))
    codes = rng.integers(0, max(2, N // 4), size=N).astype(np.int64)
    assert_bh_equal(KL.batch_hard_terms(X, codes, 0.0), exact_batch_hard(X, codes))


# blocks of 8..700 points: partial micro-tiles, one-block schedules, and
# blocks longer than the 256-row sweeps (_SUB) inside a block
@pytest.mark.parametrize(
    "N, bs",
    [
        (200, 8),
        (200, 13),
        (200, 64),
        (200, 199),
        (200, 201),
        (513, 64),
        (513, 100),
        (130, 65),
        (700, 300),
        (600, 600),
    ],
)
def test_batch_hard_serial_and_parallel_schedules_agree(rng, N, bs):
    X = rng.normal(size=(N, 6))
    codes = rng.integers(0, 30, size=N).astype(np.int64)
    want = exact_batch_hard(X, codes)
    assert_bh_equal(KL._bh_serial(X, codes, bs), want)
    assert_bh_equal(KL._bh_parallel(X, codes, bs, new_control(bs_tasks(X, bs))), want)


def test_batch_hard_independent_of_thread_count(rng, threads):
    N = 1100  # above SERIAL_WORK at n = 16
    assert N * N * (16 + 8) > KD.SERIAL_WORK
    X = rng.normal(size=(N, 16))
    codes = group_labels(N, 4)[rng.permutation(N)]
    results = []
    for t in sorted({1, threads}):
        numba.set_num_threads(t)
        results.append(KL.batch_hard_terms(X, codes, 0.0))
    for r in results[1:]:
        assert_bh_equal(r, results[0])
    assert_bh_equal(results[0], exact_batch_hard(X, codes))


def test_batch_hard_duplicates_and_ties_take_smallest_index(rng):
    # integer lattice: many exactly equal distances; plus exact duplicate rows
    N = 300
    X = rng.integers(-2, 3, size=(N, 3)).astype(float)
    X[50:60] = X[7]
    codes = rng.integers(0, 5, size=N).astype(np.int64)
    got = KL.batch_hard_terms(X, codes, 0.0)
    assert_bh_equal(got, exact_batch_hard(X, codes))
    # ties really occur: some anchor has several negatives at its minimum distance
    D = seq_distances(X)
    a = 7
    neg = codes != codes[a]
    assert np.sum(D[a, neg] == got[1][a]) > 1


def test_batch_hard_all_points_equal():
    N = 150
    X = np.full((N, 4), 0.3)
    codes = group_labels(N, 5)
    hp, hn, hpi, hni = KL.batch_hard_terms(X, codes, 0.0)
    assert np.all(hp == 0.0) and np.all(hn == 0.0)
    first_pos = np.where(
        np.arange(N) % 5 == 0, np.arange(N) + 1, (np.arange(N) // 5) * 5
    )
    np.testing.assert_array_equal(hpi, first_pos)
    np.testing.assert_array_equal(hni, np.where(codes == 0, 5, 0))


def test_batch_hard_near_duplicates_far_from_origin(rng):
    N, n = 260, 8
    X = 1e6 + 1e-5 * rng.normal(size=(N, n))
    codes = group_labels(N, 4)
    got = KL.batch_hard_terms(X, codes, 0.0)
    assert_bh_equal(got, exact_batch_hard(X, codes))
    # and the values are accurate, not just reproducible: compare with exact
    # rational arithmetic on a few anchors
    from fractions import Fraction

    for a in (0, 101, 259):
        m = int(got[3][a])
        true = math.sqrt(
            sum(
                (Fraction(u) - Fraction(v)) ** 2
                for u, v in zip(X[a], X[m], strict=True)
            )
        )
        assert abs(got[1][a] - true) <= NEAR_DUP_RTOL * true


def test_batch_hard_one_dimension_and_extreme_scales(rng):
    N = 140
    codes = group_labels(N, 3)
    for scale in (1e-150, 1.0, 1e150):
        X = scale * rng.normal(size=(N, 1))
        got = hardest_pairs(X, codes)
        # scaling by a power of two is exact, so the reference on the
        # rescaled points, scaled back, is bitwise the answer
        p2 = 2.0 ** -round(math.log2(scale))
        hp, hn, hpi, hni = exact_batch_hard(X * p2, codes)
        np.testing.assert_array_equal(got.positive_index, hpi)
        np.testing.assert_array_equal(got.negative_index, hni)
        np.testing.assert_array_equal(got.hardest_positive, hp / p2)
        np.testing.assert_array_equal(got.hardest_negative, hn / p2)


def test_batch_hard_loss_wrapper_matches_brute_force(rng):
    N = 48  # the loop reference is slow; the kernel is exact at any N above
    X, y = rng.normal(size=(N, 5)), group_labels(N, 4)
    for reduction in ("mean", "sum", "max"):
        got = batch_hard_loss(X, y, margin=0.2, reduction=reduction)
        want = ref.batch_hard_loss(X, y, 0.2, reduction)
        assert got == pytest.approx(
            want, rel=KERNEL_RTOL, abs=KERNEL_ATOL * scale_of(X)
        )


@given(
    N=st.integers(2, 90),
    n=st.integers(1, 4),
    n_classes=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    dup=st.booleans(),
)
def test_batch_hard_property_serial_parallel_exact(N, n, n_classes, seed, dup):
    r = np.random.default_rng(seed)
    X = r.integers(-3, 4, size=(N, n)).astype(float) if dup else r.normal(size=(N, n))
    codes = r.integers(0, n_classes, size=N).astype(np.int64)
    want = exact_batch_hard(X, codes)
    assert_bh_equal(KL._bh_serial(X, codes, 16), want)
    assert_bh_equal(KL._bh_parallel(X, codes, 16, new_control(bs_tasks(X, 16))), want)


# ---------------------------------------------------------------------------
# diameter and isometric error (triangular kernels)
# ---------------------------------------------------------------------------

TRI_SIZES = [2, 3, 9, 63, 64, 65, 129, 1023, 1025]


@pytest.mark.parametrize("N", TRI_SIZES)
def test_diameter_exact_across_boundaries(rng, N):
    X = rng.normal(size=(N, int(rng.integers(1, 12))))
    assert KD.diameter_kernel(X) == exact_diameter(X)


@pytest.mark.parametrize("N", TRI_SIZES)
def test_isometric_error_exact_across_boundaries(rng, N):
    n = int(rng.integers(1, 12))
    X1 = rng.normal(size=(N, n))
    X2 = X1 + 0.01 * rng.normal(size=(N, n))
    assert KD.isometric_error_kernel(X1, X2) == exact_isometric(X1, X2)


@pytest.mark.parametrize(
    "N, bs",
    [
        (150, 8),
        (150, 13),
        (150, 64),
        (150, 149),
        (150, 151),
        (600, 64),
        (600, 77),
        (700, 300),
        (600, 600),
    ],
)
def test_triangular_serial_and_parallel_schedules_agree(rng, N, bs):
    X1 = rng.normal(size=(N, 5))
    X2 = rng.normal(size=(N, 5))
    want_d = exact_diameter(X1)
    want_i = exact_isometric(X1, X2)
    for best, arg in (KD._diam_serial(X1, len(X1), new_control(1)),
                      KD._diam_parallel(X1, bs, new_control(len(X1)))):
        assert KD.argmax_rows(best, arg, 0.0, 0, 1) == want_d
    for best, arg in (KD._iso_serial(X1, X2, len(X1), new_control(1)),
                      KD._iso_parallel(X1, X2, bs, new_control(len(X1)))):
        assert KD.argmax_rows(best, arg, -1.0, 0, 1) == want_i


def test_triangular_independent_of_thread_count(rng, threads):
    N = 1100
    X1 = rng.normal(size=(N, 16))
    X2 = X1 @ np.linalg.qr(rng.normal(size=(16, 16)))[0]
    results = []
    for t in sorted({1, threads}):
        numba.set_num_threads(t)
        results.append((KD.diameter_kernel(X1), KD.isometric_error_kernel(X1, X2)))
    assert all(r == results[0] for r in results)
    assert results[0][1] == exact_isometric(X1, X2)


def test_diameter_ties_duplicates_and_all_equal(rng):
    # a lattice with many pairs at the maximal distance: the first one wins
    X = rng.integers(0, 2, size=(200, 3)).astype(float)
    assert KD.diameter_kernel(X) == exact_diameter(X)
    assert KD.diameter_kernel(np.full((130, 3), -2.5)) == (0.0, 0, 1)


def test_isometric_error_of_equal_and_isometric_inputs(rng):
    X = rng.normal(size=(700, 9)) * 1e3
    assert isometric_error(X, X) == 0.0
    assert isometric_error(X, X + 5.0) == exact_isometric(X, X + 5.0)[0]
    # a reflection about a coordinate plane is exact in floating point
    R = X.copy()
    R[:, 2] = -R[:, 2]
    assert isometric_error(X, R) == 0.0


def test_near_duplicates_far_from_origin_triangular(rng):
    N, n = 200, 6
    X1 = 1e6 + 1e-5 * rng.normal(size=(N, n))
    X2 = 1e6 + 1e-5 * rng.normal(size=(N, n))
    assert KD.diameter_kernel(X1) == exact_diameter(X1)
    assert KD.isometric_error_kernel(X1, X2) == exact_isometric(X1, X2)
    value, i, j = KD.diameter_kernel(X1)
    from fractions import Fraction

    true = math.sqrt(
        sum((Fraction(u) - Fraction(v)) ** 2 for u, v in zip(X1[i], X1[j], strict=True))
    )
    assert abs(value - true) <= NEAR_DUP_RTOL * true


def test_triangular_wrappers_extreme_scales_and_report(rng):
    X1 = rng.normal(size=(80, 1))
    X2 = rng.normal(size=(80, 1))
    for scale in (1e-150, 1e150):
        d, i, j = farthest_pair(scale * X1)
        want = exact_diameter(X1)
        assert (i, j) == want[1:]
        assert d == pytest.approx(want[0] * scale, rel=KERNEL_RTOL)
        assert isometric_error(scale * X1, scale * X2) == pytest.approx(
            exact_isometric(X1, X2)[0] * scale, rel=KERNEL_RTOL
        )
    assert diameter(X1) == pytest.approx(ref.diameter(X1), rel=KERNEL_RTOL)
    rep = isometric_error_report(X1, X2)
    assert rep.value == abs(rep.d1 - rep.d2)
    assert rep.value == pytest.approx(ref.isometric_error(X1, X2), rel=KERNEL_RTOL)


# ---------------------------------------------------------------------------
# separation counts
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "N, n_classes",
    [(2, 1), (9, 2), (65, 3), (200, 2), (200, 60), (257, 4), (300, 150)],
)
def test_separation_counts_exact(rng, N, n_classes):
    # 2 classes of ~100 points use the sorting route (> _SEP_LINEAR positives),
    # many small classes the vectorised linear route
    X = rng.normal(size=(N, 3))
    codes = rng.integers(0, n_classes, size=N).astype(np.int64)
    for margin, atol in ((0.0, 1e-9), (0.3, 0.0), (0.5, 0.1)):
        want = exact_violations(X, codes, margin, atol)
        np.testing.assert_array_equal(KL.separation_counts(X, codes, margin, atol), want)
        np.testing.assert_array_equal(KL._sep_serial(X, codes, margin, atol), want)
        np.testing.assert_array_equal(KL._sep_parallel(X, codes, margin, atol), want)


def test_separation_counts_at_the_threshold_exactly():
    # lattice points: d_ap + margin - d_am lands exactly on atol for many triplets
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [6.0]] * 12)
    codes = (np.arange(len(X)) % 3).astype(np.int64)
    for margin, atol in ((1.0, 0.0), (1.0, 1.0), (0.0, 2.0), (2.0, 1.0)):
        want = exact_violations(X, codes, margin, atol)
        np.testing.assert_array_equal(KL.separation_counts(X, codes, margin, atol), want)


def test_separation_report_matches_brute_force(rng):
    X = rng.normal(size=(40, 3))
    y = group_labels(40, 4)
    rep = separation_report(X, y, margin=0.1, atol=1e-9)
    assert rep.n_violated == ref.n_violated(X, y, 0.1, 1e-9)
    assert rep.worst_slack == pytest.approx(
        ref.worst_slack(X, y, 0.1), rel=KERNEL_RTOL, abs=KERNEL_ATOL
    )
    assert is_triplet_separated(X, y, margin=0.1) == (rep.n_violated == 0)


# ---------------------------------------------------------------------------
# memory: never an N x N matrix
# ---------------------------------------------------------------------------

_MEMORY_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from isoapprox.kernels import distances as KD
    from isoapprox.kernels import losses as KL

    def hwm_kib():
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])

    N, n = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, n))
    codes = np.arange(N, dtype=np.int64) // 4
    small = rng.normal(size=(1100, n))
    # compile (or load from cache) every kernel and start the thread pool on
    # an input large enough for the parallel path
    KL.batch_hard_terms(small, codes[:1100], 0.0)
    KL.separation_counts(small, codes[:1100], 0.0, 1e-9)
    KD.diameter_kernel(small)
    KD.isometric_error_kernel(small, small)
    base = hwm_kib()
    KL.batch_hard_terms(X, codes, 0.0)
    KL.separation_counts(X, codes, 0.0, 1e-9)
    KD.diameter_kernel(X)
    KD.isometric_error_kernel(X, X)
    print(hwm_kib() - base)
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_peak_memory_is_linear_in_n_points():
    # N x N float64 would be 512 MiB; X itself is 0.5 MiB.  The kernels may
    # use O(N n) (a transposed copy) plus 32 x N per separation task.
    N, n = 8192, 8
    env = dict(
        os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT, str(N), str(n)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    growth_kib = int(out.stdout.strip().splitlines()[-1])
    budget_kib = (8 * N * N // 1024) // 16  # 1/16 of one N x N matrix: 32 MiB
    assert growth_kib < budget_kib, f"peak RSS grew by {growth_kib} KiB"


# ---------------------------------------------------------------------------
# the full-size batch (slow): N = 65,536 points in R^128
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_full_size_batch_65536_by_128():
    rng = np.random.default_rng(2024)
    N, n = 65_536, 128
    X = unit_rows(rng, N, n)
    y = group_labels(N, 4)
    hp, hn, hpi, hni = KL.batch_hard_terms(X, y, 0.0)
    # spot-check whole rows exactly for a sample of anchors
    for a in rng.choice(N, size=24, replace=False):
        d = seq_distances(X[a : a + 1], X)[0]
        same = y == y[a]
        same[a] = False
        assert hpi[a] == int(np.argmax(np.where(same, d, -np.inf)))
        assert hni[a] == int(np.argmin(np.where(y != y[a], d, np.inf)))
        assert hp[a] == d[hpi[a]] and hn[a] == d[hni[a]]
    loss = batch_hard_loss(X, y, margin=0.1, reduction="mean")
    terms = np.maximum(hp - hn + 0.1, 0.0)
    assert loss == pytest.approx(float(np.mean(terms)), rel=1e-12)
    assert is_triplet_separated(X, y) == bool(np.all(hp <= hn + 1e-9))
    # plant a unique farthest pair
    Z = X.copy()
    Z[123] *= 3.0
    Z[40_000] = -Z[123]
    value, i, j = KD.diameter_kernel(Z)
    assert (i, j) == (123, 40_000) and value == seq_distances(
        Z[123:124], Z[40_000:40_001]
    )[0, 0]
    # isometric error to a translated copy is exact up to translation rounding
    assert isometric_error(X, X) == 0.0
