"""The engine of a worker (or beat) process, made on first use from its app's settings.

Tasks reach it through their own app (``self.app``), so no task module imports
:mod:`workers.app`. A forked pool child gets a fresh connection pool.
"""

from __future__ import annotations

import threading
from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from bpm import Engine
from bpm.contrib.celery import CeleryPublisher
from workers.settings import WorkerSettings

_engines: dict[int, Engine] = {}
_lock = threading.Lock()


def settings_of(app: Celery) -> WorkerSettings:
    found = getattr(app, "bpm_settings", None)
    return found if isinstance(found, WorkerSettings) else WorkerSettings.from_env()


def engine_for(app: Celery) -> Engine:
    """This process's engine for ``app`` (created on first use, after any fork)."""
    engine = _engines.get(id(app))
    if engine is None:
        with _lock:
            engine = _engines.get(id(app))
            if engine is None:
                settings = settings_of(app)
                engine = Engine(
                    settings.database_url,
                    dispatcher=CeleryPublisher.shared(settings.broker_url, queue=settings.queue),
                )
                _engines[id(app)] = engine
    return engine


@worker_process_init.connect
def _fresh_pool_in_child(**_: Any) -> None:
    """A forked child must not share the parent's database connections."""
    for engine in _engines.values():
        engine.dispose()
