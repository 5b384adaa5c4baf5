"""``python -m bpm`` is the ``bpm`` command."""

from __future__ import annotations

from bpm.cli import main

main()
