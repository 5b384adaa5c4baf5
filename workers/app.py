"""The Celery app: ``celery -A workers.app worker`` and ``celery -A workers.app beat``.

:func:`create_app` builds it from one :class:`~workers.settings.WorkerSettings` value (read
from the environment by default, see ``docs/celery.md``); the task modules are loaded by
Celery through ``include=`` and never import this module, so nothing imports in a circle.
The handler modules named in ``BPM_HANDLERS`` are imported here, at start: a module that
does not import stops the worker (and beat) with the reason, instead of failing the first
step that needs it. Metrics (``BPM_METRICS_PORT``) and JSON logs (``BPM_LOG_FORMAT``) are
set up just before (:mod:`workers.metrics`).
"""

from __future__ import annotations

import importlib

from celery import Celery

import beat.maintenance  # starts the upkeep threads when beat starts
import beat.waiter  # noqa: F401  (starts the timer waiter when beat starts)
from beat.schedule import beat_schedule
from bpm.errors import ConfigurationError
from workers import metrics
from workers.settings import WorkerSettings

TASK_MODULES = ("workers.tasks", "beat.tasks")


def load_handlers(modules: tuple[str, ...]) -> None:
    """Import the modules that register handlers; a failure says which and why."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise ConfigurationError(
                f"BPM_HANDLERS: cannot import handler module {name!r} "
                f"({type(exc).__name__}: {exc}); fix it or remove it from BPM_HANDLERS"
            ) from exc


def create_app(settings: WorkerSettings | None = None) -> Celery:
    """A Celery app configured for the engine (DESIGN section 9)."""
    settings = settings or WorkerSettings.from_env()
    metrics.prepare(settings)  # before the handlers: they may import prometheus-client
    load_handlers(settings.handler_modules)
    app = Celery("bpm", broker=settings.broker_url, include=list(TASK_MODULES))
    app.conf.update(
        # A message is acknowledged only after run_token returned, and a message whose
        # worker process died is requeued: the database lease, not the broker, decides
        # whether the redelivered message may still run anything.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # One message at a time per process: a long handler must not hold others hostage.
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        # run_token's outcome lives in the database; a result backend would be overhead.
        task_ignore_result=True,
        task_default_queue=settings.queue,
        broker_connection_retry_on_startup=True,
        # Publishing happens after a commit; a broken broker must not block a worker.
        broker_connection_timeout=4.0,
        timezone="UTC",
        enable_utc=True,
        beat_schedule=beat_schedule(),
    )
    app.bpm_settings = settings  # type: ignore[attr-defined]  # read by workers.runtime
    return app


app = create_app()

__all__ = ["app", "create_app", "load_handlers"]
