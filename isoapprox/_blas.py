"""Thread limits: small dense linear algebra on one BLAS thread, numba on few threads.

Design notes: docs/dev/kernels_design.md, section ``isoapprox._blas``.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator
from typing import Any

import numba

from ._lazy import threadpool_controller

try:  # numpy's record of the SIMD extensions it dispatches to (not public API)
    from numpy._core._multiarray_umath import __cpu_dispatch__ as _CPU_DISPATCH
    from numpy._core._multiarray_umath import __cpu_features__ as _CPU_FEATURES
except ImportError:  # pragma: no cover - numpy < 2
    try:
        from numpy.core._multiarray_umath import __cpu_dispatch__ as _CPU_DISPATCH
        from numpy.core._multiarray_umath import __cpu_features__ as _CPU_FEATURES
    except ImportError:
        _CPU_DISPATCH, _CPU_FEATURES = None, {}

__all__ = ["blas_info", "numba_threads", "quiet_threads", "single_threaded_blas"]


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS/LAPACK to one thread inside the ``with`` block (if possible)."""
    try:
        ctl = threadpool_controller()
    except ImportError:  # pragma: no cover - optional
        yield
        return
    with ctl.limit(limits=1, user_api="blas"):
        yield


@contextlib.contextmanager
def numba_threads(n: int | None) -> Iterator[None]:
    """Numba's parallel kernels on ``min(n, NUMBA_NUM_THREADS)`` threads inside the block.

    ``None`` leaves the setting alone.  Results do not depend on it: every
    parallel kernel of the package reduces in a fixed order.
    """
    if n is None:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


@contextlib.contextmanager
def quiet_threads() -> Iterator[None]:
    """One numba thread and one BLAS thread: thread wake-ups dominate tiny problems."""
    with numba_threads(1), single_threaded_blas():
        yield


#: CPU features that change which BLAS kernel and which SIMD paths run
_CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl",
              "avx512_bf16", "amx_tile", "neon", "asimd", "sve")


def _cpu() -> dict[str, Any]:
    """The processor's model and the features that steer kernel choice (Linux; best effort)."""
    info: dict[str, Any] = {"machine": platform.machine(), "model": None, "features": None}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:  # not Linux: what the platform module knows
        info["model"] = platform.processor() or None
        return info
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and info["model"] is None:
            info["model"] = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    info["features"] = [f for f in _CPU_FLAGS if f in flags]
    return info


def blas_info() -> dict[str, Any]:
    """What decides the last bits of linear algebra here: BLAS, its kernel, SIMD, CPU.

    Returns
    -------
    dict
        ``libraries``: each BLAS/OpenMP library threadpoolctl finds (API,
        implementation, version, kernel ``architecture``, threads);
        ``openblas_coretype``: the environment's ``OPENBLAS_CORETYPE`` (it
        forces OpenBLAS's kernel) or ``None``; ``numpy_simd``: the SIMD
        extensions numpy dispatches to on this CPU (less any disabled by
        ``NPY_DISABLE_CPU_FEATURES``); ``cpu``: model and the relevant CPU
        features.
    """
    out: dict[str, Any] = {
        "libraries": [],
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE") or None,
        "npy_disable_cpu_features": os.environ.get("NPY_DISABLE_CPU_FEATURES") or None,
        "numpy_simd": None,
        "cpu": _cpu(),
    }
    try:
        for lib in threadpool_controller().info():
            out["libraries"].append({k: lib.get(k) for k in (
                "user_api", "internal_api", "prefix", "version", "architecture", "threading_layer",
                "num_threads")})
    except Exception:  # pragma: no cover - threadpoolctl is a dependency
        pass
    if _CPU_DISPATCH is not None:
        out["numpy_simd"] = [f for f in _CPU_DISPATCH if _CPU_FEATURES.get(f)]
    return out
