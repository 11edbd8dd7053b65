"""The one home of the package's lazy imports.

Design notes: docs/dev/kernels_design.md, section ``isoapprox._lazy``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .exceptions import IsoapproxError, MissingDependencyError

__all__ = [
    "axes_divider", "cvxpy", "distributed", "highspy", "matplotlib", "pyarrow",
    "mnist1d_data", "sklearn_load_digits", "threadpool_controller",
]

_MPL_SUBMODULES = ("pyplot", "lines", "patches", "collections", "colors", "ticker")


@functools.cache
def cvxpy() -> ModuleType:
    """``cvxpy``, imported on first call."""
    return importlib.import_module("cvxpy")


@functools.cache
def highspy() -> ModuleType:
    """``highspy`` (HiGHS), imported on first call (0.1 s; only the searches by
    linear programmes of :mod:`isoapprox.ideal` need it:
    :mod:`isoapprox.ideal._sector`, :mod:`isoapprox.ideal._line`)."""
    return importlib.import_module("highspy")


@functools.cache
def matplotlib() -> ModuleType:
    """``matplotlib`` on the Agg backend with its figure submodules loaded.

    Use ``mpl = matplotlib(); mpl.pyplot.subplots(...)``,
    ``mpl.lines.Line2D``, ``mpl.patches.Patch`` and so on.

    Raises
    ------
    ImportError
        With an installation hint when matplotlib is missing.
    """
    try:
        mpl = importlib.import_module("matplotlib")
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency
        raise ImportError("isoapprox.plotting needs matplotlib: pip install matplotlib") from exc
    mpl.use("Agg", force=False)
    for name in _MPL_SUBMODULES:
        importlib.import_module(f"matplotlib.{name}")
    return mpl


@functools.cache
def threadpool_controller() -> Any:
    """A cached ``threadpoolctl.ThreadpoolController`` (building one scans the
    loaded libraries: ~10 ms, more than many of the solves it wraps)."""
    importlib.import_module("scipy.linalg")  # load scipy's BLAS before the scan
    return importlib.import_module("threadpoolctl").ThreadpoolController()


def _optional(module: str, needs: str, extra: str) -> ModuleType:
    """``module`` of the optional extra ``isoapprox[extra]``; ``needs`` begins the message."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"{needs}, which is not installed; "
            f"install the optional extra with: pip install 'isoapprox[{extra}]'"
        ) from None


def sklearn_load_digits() -> Callable[..., Any]:
    """``sklearn.datasets.load_digits``.

    Raises
    ------
    MissingDependencyError
        If scikit-learn is not installed.
    """
    return _optional("sklearn.datasets", "the digits data set needs scikit-learn",
                     "data").load_digits


def mnist1d_data() -> ModuleType:
    """``mnist1d.data`` (the optional extra ``isoapprox[mnist1d]``), imported on first call.

    Raises
    ------
    MissingDependencyError
        If the mnist1d package is not installed.
    """
    return _optional("mnist1d.data", "the mnist1d data set needs the mnist1d package", "mnist1d")


def distributed() -> ModuleType:
    """``dask.distributed`` (the optional extra ``isoapprox[dask]``), imported on first call.

    Raises
    ------
    IsoapproxError
        With an installation hint when it is missing.
    """
    try:
        return importlib.import_module("distributed")
    except ImportError:
        raise IsoapproxError(
            "running on a Dask cluster needs dask.distributed, which is not installed; "
            "install it with: pip install 'isoapprox[dask]'") from None


def pyarrow() -> ModuleType:
    """``pyarrow`` with ``pyarrow.parquet`` loaded (the optional extra
    ``isoapprox[parquet]``: reading ``.parquet`` embedding files).

    Raises
    ------
    ImportError
        If pyarrow is not installed (the caller names the file and the extra).
    """
    pa = importlib.import_module("pyarrow")
    importlib.import_module("pyarrow.parquet")
    return pa


def axes_divider(ax: Any) -> Any:
    """``mpl_toolkits.axes_grid1.make_axes_locatable(ax)`` (matplotlib's toolkit)."""
    matplotlib()
    return importlib.import_module("mpl_toolkits.axes_grid1").make_axes_locatable(ax)
