"""Subcommands of the ``isoapprox`` command line (one module each)."""
