"""Benchmarks, runnable from the command line; see ``bench/README.md``."""

from __future__ import annotations
