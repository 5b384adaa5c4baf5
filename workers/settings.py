"""The worker settings now live in :mod:`bpm.contrib.celery.settings` (kept for imports)."""

from __future__ import annotations

from bpm.contrib.celery.settings import (
    DEFAULT_BROKER_URL,
    DEFAULT_DATABASE_URL,
    DEFAULT_QUEUE,
    WorkerSettings,
    env_number,
    port_of,
)

__all__ = [
    "DEFAULT_BROKER_URL",
    "DEFAULT_DATABASE_URL",
    "DEFAULT_QUEUE",
    "WorkerSettings",
    "env_number",
    "port_of",
]
