"""The engine inside your own Celery app: ``install(app, settings_or_engine)``.

``install`` adds to an existing app only what the engine needs, and only to the engine's
own tasks; the app keeps its broker, serializer, routes, queues and beat schedule:

* the tasks ``bpm.run_token`` and the sweeps (``bpm.*``), with late acks and a requeue on a
  lost worker process on those tasks alone (the app's tasks keep early acks), JSON and no
  result, on the engine's queue (``queue``, ``bpm`` by default);
* in the app's beat, whatever its scheduler (django-celery-beat's ``DatabaseScheduler``
  too): the timer waiter thread and the upkeep threads (reclaim, re-publish, purge:
  :mod:`bpm.contrib.celery.maintenance`), and the optional timer sweeps' entries in the
  app's beat schedule when ``BPM_BEAT_TIMER_SWEEP_SECONDS`` asks for them;
* the engine's queue among the queues of a worker started without ``-Q`` (a worker started
  with ``-Q`` consumes what ``-Q`` names: add the queue there, or run a worker of its own
  with ``-Q bpm``);
* the app's tasks as handlers: a service task with ``bpm:celeryTask="NAME"`` (builder
  ``task=``) runs the task NAME inline (:mod:`bpm.contrib.celery.handlers`);
* the handler modules of ``BPM_HANDLERS`` imported at start, metrics and JSON logs when
  the settings ask for them, and OpenTelemetry traces when the ``OTEL_*`` variables ask
  for an exporter (:mod:`bpm.contrib.otel`).

Steps are published through the app's own broker, as JSON: a worker of an app whose
``accept_content`` leaves JSON out logs an error with the fix when it starts.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import replace
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup

from bpm.contrib.celery import maintenance, metrics, schedule, tasks, waiter
from bpm.contrib.celery.canvas_run import resolve_canvas
from bpm.contrib.celery.handlers import resolve_tasks
from bpm.contrib.celery.runtime import Installation, attach
from bpm.contrib.celery.settings import WorkerSettings
from bpm.contrib.otel_env import trace_from_env
from bpm.engine import Engine
from bpm.errors import ConfigurationError
from bpm.handlers import registry as default_registry

log = logging.getLogger("bpm.celery")


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


def install(
    app: Celery,
    engine_or_settings: Engine | WorkerSettings | str | None = None,
    queue: str | None = None,
    *,
    beat: bool = True,
    consume: bool = True,
) -> Installation:
    """Attach the engine to ``app`` (see the module docstring); returns the installation.

    ``engine_or_settings``: an :class:`~bpm.Engine` to use as is, a
    :class:`~bpm.contrib.celery.settings.WorkerSettings`, a database URL, or None (the
    settings from ``BPM_*`` environment variables). ``queue``: the engine's queue (default
    the settings' ``BPM_QUEUE``, else ``bpm``). ``beat=False`` leaves the beat schedule,
    beat's timer waiter and its upkeep threads alone; ``consume=False`` leaves the
    worker's queues alone.
    Installing twice on one app is refused.
    """
    if getattr(app, "bpm_installation", None) is not None:
        raise ConfigurationError(
            f"the engine is already installed on the Celery app {app.main!r}: call install() once"
        )
    given: Engine | None = None
    if isinstance(engine_or_settings, Engine):
        given = engine_or_settings
        settings = WorkerSettings.from_env()
        default_queue = given.config.queue
    elif isinstance(engine_or_settings, WorkerSettings):
        settings = engine_or_settings
        default_queue = settings.queue
    elif isinstance(engine_or_settings, str):
        settings = replace(WorkerSettings.from_env(), database_url=engine_or_settings)
        default_queue = settings.queue
    elif engine_or_settings is None:
        settings = WorkerSettings.from_env()
        default_queue = settings.queue
    else:
        raise ConfigurationError(
            "install(app, ...) takes an Engine, a WorkerSettings or a database URL, not "
            f"{type(engine_or_settings).__name__}"
        )
    chosen = (queue or default_queue).strip()
    if not chosen:
        raise ConfigurationError("install(app, queue=...) needs a queue name")
    metrics.prepare(settings)  # before the handlers: they may import prometheus-client
    trace_from_env("bpm-worker")  # OTEL_EXPORTER_OTLP_ENDPOINT...: spans of each step
    load_handlers(settings.handler_modules)
    installation = Installation(app, chosen, settings, given)
    attach(installation)
    # bpm:celeryTask / task=: the app's tasks run as handlers (bpm.contrib.celery.handlers)
    registries = [default_registry]
    if given is not None and given.core.registry is not default_registry:
        registries.append(given.core.registry)
    for registry in registries:
        resolve_tasks(app, registry)
        resolve_canvas(app, registry)  # the steps of bpm.canvas canvases
    tasks.register(installation)
    if beat:
        for name, entry in schedule.beat_schedule().items():
            app.add_periodic_task(
                entry["schedule"],
                app.signature(entry["task"]),
                name=name,
                **{**entry["options"], "queue": chosen},
            )
        waiter.start_with_beat(installation)
        maintenance.start_with_beat(installation)
    _check_worker_on_start(installation, consume=consume)
    return installation


def _check_worker_on_start(installation: Installation, *, consume: bool) -> None:
    """When a worker of the app starts: say so if the app does not accept JSON, and
    consume the engine's queue if the worker was not limited with ``-Q``."""

    def after_setup(sender: Any = None, instance: Any = None, **_: Any) -> None:
        app = getattr(instance, "app", None)
        if app is not installation.app:
            return
        accepted = {str(c).lower() for c in (app.conf.accept_content or ())}
        if not accepted & {"json", "application/json"}:
            log.error(
                "the Celery app %r accepts %s only: the engine's messages are JSON and "
                "will be refused; add 'json' to accept_content",
                app.main,
                sorted(accepted),
            )
        if consume:
            queues = app.amqp.queues
            # No -Q: the worker consumes every queue of the app ("_consume_from" is None);
            # with -Q it consumes what -Q names, and the user decides.
            if getattr(queues, "_consume_from", None) is None:
                # the app's own declaration of the queue if it has one, else the one Celery
                # makes for a missing queue (what the publisher sends to)
                queues.select_add(queues[installation.queue])
                log.info("consuming the engine's queue %r too", installation.queue)

    celeryd_after_setup.connect(
        after_setup, weak=False, dispatch_uid=f"bpm-worker-setup-{id(installation.app)}"
    )
