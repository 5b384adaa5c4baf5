"""The engine and Celery: publishing steps, and the engine inside a Celery app of yours.

* :func:`install` attaches the engine to an existing Celery app (its tasks, beat entries
  and the timer waiter; see :mod:`bpm.contrib.celery.install`). The app in ``workers/``
  of the repository is one made this way.
* :class:`CeleryPublisher` publishes Ready steps from any process that changes instances
  (:mod:`bpm.contrib.celery.publisher`).
"""

from __future__ import annotations

from bpm.contrib.celery.install import install, load_handlers
from bpm.contrib.celery.publisher import (
    DEFAULT_QUEUE,
    EXIT_FLUSH_SECONDS,
    RUN_TOKEN,
    CeleryPublisher,
    PublishStats,
)
from bpm.contrib.celery.runtime import Installation, engine_for
from bpm.contrib.celery.settings import WorkerSettings

__all__ = [
    "DEFAULT_QUEUE",
    "EXIT_FLUSH_SECONDS",
    "RUN_TOKEN",
    "CeleryPublisher",
    "Installation",
    "PublishStats",
    "WorkerSettings",
    "engine_for",
    "install",
    "load_handlers",
]
