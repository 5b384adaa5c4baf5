"""The task list's page and assets (``/tasklist``, served by ``bpm api`` and ``bpm dev``)."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
