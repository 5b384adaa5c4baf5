"""The e2e fixtures (real Celery worker and beat processes), shared with ``tests/e2e``."""

from __future__ import annotations

from tests.e2e.conftest import (  # noqa: F401  (fixtures, re-exported for this directory)
    celery_engine,
    publisher,
    queue,
    rds,
    silent_engine,
    start_beat_process,
    start_workers,
    tag,
    worker_env,
)
