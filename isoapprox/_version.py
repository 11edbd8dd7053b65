"""The installed version of isoapprox (one home, importable from every layer)."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("isoapprox")
except metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"
