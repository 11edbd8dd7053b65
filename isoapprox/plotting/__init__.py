"""Figures built from result records (matplotlib through :func:`isoapprox._lazy.matplotlib`).

Design notes: docs/dev/kernels_design.md, section ``isoapprox.plotting``.
"""

from __future__ import annotations

__all__: list[str] = []
