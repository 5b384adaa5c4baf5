"""A durable Celery canvas: ``from bpm.canvas import chord`` instead of ``from celery import
chord`` (see ``docs/celery.md``). The implementation is Celery's adapter,
:mod:`bpm.contrib.celery.canvas`; this module only gives it its short name."""

from __future__ import annotations

from bpm.contrib.celery.canvas import (
    CanvasError,
    CanvasFailed,
    DurableResult,
    chain,
    chord,
    chunks,
    durable,
    group,
    map,
    starmap,
)

__all__ = [
    "CanvasError",
    "CanvasFailed",
    "DurableResult",
    "chain",
    "chord",
    "chunks",
    "durable",
    "group",
    "map",
    "starmap",
]
