"""Long sweeps: watched runs give the same numbers, show progress and stop on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import isoapprox as ia
from isoapprox import _progress
from isoapprox._progress import new_control
from isoapprox.diagnostics.statistics import _anchor_sweep
from isoapprox.kernels import distances as KD
from isoapprox.kernels import losses as KL
from isoapprox.kernels import stats as KS


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    # large enough for the parallel paths (serial_work is False)
    X = rng.normal(size=(2600, 6))
    codes = rng.integers(0, 12, size=X.shape[0]).astype(np.int64)
    return X, codes


def _results(X, codes):
    st = ia.collapse_statistics(X, codes, margin=0.3)
    return (
        KL.batch_hard_terms(X, codes, 0.0),
        KD.diameter_kernel(X),
        KD.isometric_error_kernel(X, 1.5 * X[::-1].copy()),
        _anchor_sweep(X, codes, 0.3, 0.0)[3:],
        st.to_dict() if hasattr(st, "to_dict") else repr(st),
    )


def _same(a, b):
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b, strict=True):
            _same(u, v)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


def test_watched_sweeps_return_the_same_numbers(data, monkeypatch):
    X, codes = data
    direct = _results(X, codes)
    monkeypatch.setattr(_progress, "WATCH_MIN_WORK", 0.0)
    watched = _results(X, codes)
    _same(direct, watched)
    with ia.show_progress():
        shown = _results(X, codes)
    _same(direct, shown)


def test_a_bar_is_drawn_only_when_asked(data, monkeypatch, capsys):
    X, codes = data
    monkeypatch.setattr(_progress, "WATCH_MIN_WORK", 0.0)
    KL.batch_hard_terms(X, codes, 0.0)
    assert "batch-hard sweep" not in capsys.readouterr().err
    assert not _progress.progress_enabled()
    with ia.show_progress():
        assert _progress.progress_enabled()
        KL.batch_hard_terms(X, codes, 0.0)
        with ia.show_progress(False):
            assert not _progress.progress_enabled()
    assert "batch-hard sweep" in capsys.readouterr().err
    assert not _progress.progress_enabled()


def _sweeps(X, codes):
    """Every watched kernel as ``(name, call(ctl), n_slots, units)``."""
    N = X.shape[0]
    XT = np.ascontiguousarray(X.T)
    nb = (N + KS.RB - 1) // KS.RB
    half = (nb + 1) // 2
    ch = 3
    members = np.argsort(codes, kind="stable").astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(np.bincount(codes)))).astype(np.int64)
    bs, M = KD.partition(N)
    T = M * (M + 1) // 2
    mask = np.ones(4, dtype=np.bool_)
    offsets = np.zeros(ch + 1, dtype=np.int64)
    return [
        ("pair_sweep", lambda c: KS._pair_sweep(X, XT, 0.0, -1.0, 1.0, 1, -1.0, ch, c), ch, half),
        ("pair_collect", lambda c: KS._pair_collect(X, XT, 0.0, -1.0, 1.0, 4, mask, offsets, 0, c),
         ch, half),
        ("uniformity_blocks", lambda c: KS._uniformity_blocks(X, XT, 2.0, ch, c), ch, half),
        ("anchor_pass", lambda c: KS._anchor_pass(X, XT, codes, members, starts, 0.1, 0.0, ch, c),
         ch, nb),
        ("nearest_other", lambda c: KS._nearest_other(X, XT, ch, c), ch, nb),
        ("batch_hard", lambda c: KL._bh_parallel(X, codes, bs, c), T, T),
        ("diameter", lambda c: KD._diam_parallel(X, bs, c), (M + 1) // 2, N),
        ("isometric", lambda c: KD._iso_parallel(X, X, bs, c), (M + 1) // 2, N),
    ]


def test_every_watched_kernel_counts_its_units_and_obeys_the_stop_flag(data):
    X, codes = data
    for name, call, n_slots, units in _sweeps(X, codes):
        ctl = new_control(n_slots)
        call(ctl)
        assert ctl[0] == 0 and ctl[1:].sum() == units, name
        ctl = new_control(n_slots)
        ctl[0] = 1
        call(ctl)
        assert ctl[1:].sum() == 0, name


SPIN = textwrap.dedent(
    """
    import os, signal, sys, threading
    import numpy as np
    from numba import njit
    from isoapprox._progress import run_kernel

    @njit(nogil=True)
    def spin(x, ctl):
        # never ends unless the stop flag is set: the test hangs if the
        # interrupt does not reach the kernel
        s = 0.0
        while ctl[0] == 0:
            s += x
            ctl[1] = 1
        return s

    spin(1.0, np.ones(2, dtype=np.int64))  # compile before the clock starts
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    try:
        run_kernel(spin, (1.0,), n_slots=1, units=1, work=1e30, desc="spin")
    except KeyboardInterrupt:
        print("STOPPED")
        sys.exit(0)
    print("RETURNED")
    """
)


def _as_from_a_terminal() -> None:
    # a pytest-xdist worker ignores SIGINT, and an ignored signal stays ignored
    # across exec: the child starts with the default disposition, as from a shell,
    # so that Python installs its KeyboardInterrupt handler
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_a_watched_kernel():
    out = subprocess.run([sys.executable, "-c", SPIN], capture_output=True, text=True,
                         timeout=120, preexec_fn=_as_from_a_terminal)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "STOPPED"


def test_kernel_errors_reach_the_caller(monkeypatch):
    def broken(x, ctl):
        raise ValueError(f"bad {x}")

    with pytest.raises(ValueError, match="bad 3"):
        _progress.run_kernel(broken, (3,), n_slots=1, units=1, work=1e30, desc="broken")
