"""The Celery app: ``celery -A workers.app worker`` and ``celery -A workers.app beat``.

Configuration comes from the environment (see :mod:`workers.settings` and
``docs/celery.md``). Every process gets one lazily created :class:`bpm.Engine` whose
dispatcher publishes through this app, so tokens a worker creates are published too.
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from bpm import Engine
from workers.dispatch import CeleryDispatcher
from workers.settings import WorkerSettings

log = logging.getLogger("bpm.workers")

settings = WorkerSettings.from_env()

app = Celery("bpm", broker=settings.broker_url)
app.conf.update(
    # DESIGN section 9. A message is acknowledged only after run_token returned, and a
    # message whose worker process died is requeued: the database lease, not the broker,
    # decides whether the redelivered message may still run anything.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    # One message at a time per process: a long handler must not hold others hostage.
    worker_prefetch_multiplier=1,
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    # run_token's outcome lives in the database; a result backend would be pure overhead.
    task_ignore_result=True,
    task_default_queue=settings.queue,
    broker_connection_retry_on_startup=True,
    # Publishing happens after a commit; do not let a broken broker block a worker forever.
    broker_connection_timeout=4.0,
    timezone="UTC",
    enable_utc=True,
)

_engine: Engine | None = None
_engine_lock = threading.Lock()


def load_handlers(modules: tuple[str, ...] = settings.handler_modules) -> None:
    """Import the modules named in ``BPM_HANDLERS`` so their handlers register.

    Done when this module is imported, i.e. at worker and beat start: a typo fails the
    start instead of the first task. Beat needs them too, for handlers' retry policies.
    """
    for name in modules:
        importlib.import_module(name)


def get_engine() -> Engine:
    """This process's engine (created on first use, after any fork)."""
    global _engine
    if _engine is None:
        with _engine_lock:
            if _engine is None:
                _engine = Engine(
                    settings.database_url,
                    dispatcher=CeleryDispatcher(app, queue=settings.queue),
                )
    return _engine


@worker_process_init.connect
def _fresh_pool_in_child(**_: Any) -> None:
    """A forked child must not share the parent's database connections."""
    if _engine is not None:
        _engine.dispose()


load_handlers()

# Register the tasks last: they import ``app`` and ``get_engine`` from here.
import beat.tasks  # noqa: E402, F401
import workers.tasks  # noqa: E402, F401
from beat.schedule import beat_schedule  # noqa: E402

app.conf.beat_schedule = beat_schedule()

__all__ = ["app", "get_engine", "load_handlers", "settings"]
