"""The ready-made Celery app: ``celery -A workers.app worker`` and ``celery -A workers.app beat``.

It is nothing but a Celery app with the engine installed (:func:`bpm.contrib.celery.install`):
:func:`create_app` builds it from one :class:`~bpm.contrib.celery.WorkerSettings` value (read
from the environment by default, see ``docs/celery.md``), with the settings a fleet that runs
only the engine wants (one message at a time per process). Your own app can do the same in
two lines instead: ``install(app, settings)``. This package lives in the repository (and the
Docker image), not in the wheel: the wheel ships ``bpm`` alone.
"""

from __future__ import annotations

from celery import Celery

from bpm.contrib.celery import WorkerSettings, install, load_handlers


def create_app(settings: WorkerSettings | None = None) -> Celery:
    """A Celery app that runs only the engine (DESIGN section 9)."""
    settings = settings or WorkerSettings.from_env()
    app = Celery("bpm", broker=settings.broker_url)
    app.conf.update(
        # One message at a time per process: a long handler must not hold others hostage.
        # (A worker-wide setting, so install() leaves it to the app.)
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        task_default_queue=settings.queue,
        broker_connection_retry_on_startup=True,
        # Publishing happens after a commit; a broken broker must not block a worker.
        broker_connection_timeout=4.0,
        timezone="UTC",
        enable_utc=True,
    )
    install(app, settings)
    return app


app = create_app()

__all__ = ["app", "create_app", "load_handlers"]
