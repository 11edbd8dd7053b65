"""Figures built from result records (matplotlib through :func:`isoapprox._lazy.matplotlib`).

Plotting functions take records (dicts read from result files by
:func:`isoapprox.io.read_results`) and return a matplotlib ``Figure``; they
compute no metric and choose no data.  :func:`isoapprox.plotting.registry.build_figures`
turns result files into PNG and PDF files, dispatching on each file's
``experiment`` field, so that ``isoapprox figures RESULTS... --out DIR``
rebuilds every figure without rerunning anything.

Modules
-------
``_style``
    Colours, sizes and deterministic saving.
``registry``
    Which figures each experiment's results produce (a plain mapping).
"""

from __future__ import annotations

__all__: list[str] = []
