"""The engine's tasks, registered on an installed app: ``bpm.run_token`` and the sweeps.

Only these tasks get what the engine needs: late acks and a requeue when the worker process
dies (``acks_late``, ``reject_on_worker_lost``), JSON, no result, and the engine's queue
(through the app's ``task_routes``: :class:`EngineRoutes` comes first there, the app's own
routes follow for every other task). The app's other tasks keep their own settings. Each
task is thin: the engine (through the app's
:class:`~bpm.contrib.celery.runtime.Installation`) decides everything, so a duplicated or
redelivered message does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import Celery, Task

from bpm import tracing
from bpm.contrib.celery import beat_tasks
from bpm.contrib.celery.publisher import RUN_BATCH_CHUNK, RUN_TOKEN
from bpm.contrib.celery.runtime import Installation
from bpm.contrib.celery.unreachable import backing_off

ENGINE_TASK_OPTIONS: dict[str, Any] = {
    "bind": True,
    # A message is acknowledged only after the task returned, and a message whose worker
    # process died is requeued: the database lease, not the broker, decides whether the
    # redelivered message may still run anything.
    "acks_late": True,
    "reject_on_worker_lost": True,
    "serializer": "json",
    # outcomes live in the database; a result backend would be overhead
    "ignore_result": True,
    # on this app only: a shared task would be added to every app of the process
    "shared": False,
}


@dataclass(frozen=True)
class EngineRoutes:
    """A router of ``task_routes``: the engine's tasks (``names``) go to ``queue``; for any
    other task it says nothing, so the app's own routes decide.

    It stands first among the app's routes: a route of the app that matches every task
    (``{"*": ...}``) does not move the engine's tasks. An explicit ``queue=`` of a call
    (``apply_async(queue=...)``) still wins, as with any Celery route."""

    queue: str
    names: frozenset[str]

    def __call__(
        self,
        name: str,
        args: Any = None,
        kwargs: Any = None,
        options: Any = None,
        task: Any = None,
        **_: Any,
    ) -> dict[str, str] | None:
        return {"queue": self.queue} if name in self.names else None


def route(app: Celery, queue: str, names: frozenset[str]) -> EngineRoutes:
    """Put an :class:`EngineRoutes` first in ``app``'s ``task_routes``, keeping the app's own
    routes (a mapping, a router, a list of them) after it. Celery deprecates the ``queue``
    task attribute (5.7 warns, 6.0 ignores it): routes are its way to name a queue."""
    router = EngineRoutes(queue, names)
    current = app.conf.task_routes
    if current is None:
        rest: list[Any] = []
    elif isinstance(current, list | tuple):
        rest = [r for r in current if not isinstance(r, EngineRoutes)]
    else:
        rest = [current]
    app.conf.task_routes = [router, *rest]
    return router


def register(installation: Installation) -> dict[str, Task]:  # type: ignore[type-arg]
    """Register the engine's tasks on ``installation.app``, routed to the engine's queue;
    returns them by name."""
    app: Celery = installation.app
    options = dict(ENGINE_TASK_OPTIONS)
    tasks: dict[str, Task] = {}  # type: ignore[type-arg]

    def add(name: str, fn: Callable[..., Any]) -> None:
        decorate: Callable[[Callable[..., Any]], Task] = app.task(name=name, **options)  # type: ignore[type-arg]
        tasks[name] = decorate(fn)

    def run_token(self: Task, token_id: str) -> int:  # type: ignore[type-arg]
        """Claim, run and finish ``token_id``; returns how many steps ran (0: claim lost).

        A worker that cannot reach the database puts the message back for another
        worker (:mod:`bpm.contrib.celery.unreachable`)."""
        with backing_off(self, publish_again=True):
            tracer = tracing.tracer()
            if tracer is None:
                return installation.engine().run_token(token_id)
            # the publisher's trace context (W3C headers of the message): the step's parent
            with tracer.resume(tracer.extract(message_headers(self.request))):
                return installation.engine().run_token(token_id)

    add(RUN_TOKEN, run_token)

    def run_batch_chunk(self: Task, chunk_id: str) -> int:  # type: ignore[type-arg]
        """Claim and apply one batch chunk in one transaction; returns how many items it
        applied (0: not ours to run: done, held under a live lease, its batch suspended
        or deleted). A redelivered or duplicated message therefore does nothing; a chunk
        whose worker died is published again by beat once its lease expired."""
        with backing_off(self, publish_again=False):
            return installation.engine().batches.run_chunk(chunk_id)

    add(RUN_BATCH_CHUNK, run_batch_chunk)
    for name, sweep in beat_tasks.SWEEPS.items():
        add(name, _sweep_task(installation, sweep))
    route(app, installation.queue, frozenset(tasks))
    return tasks


def _sweep_task(installation: Installation, sweep: Callable[..., Any]) -> Callable[..., Any]:
    def task(self: Task) -> Any:  # type: ignore[type-arg]
        return sweep(installation.engine(), self)

    task.__doc__ = sweep.__doc__
    task.__name__ = sweep.__name__
    return task


def message_headers(request: Any) -> dict[str, object]:
    """The trace headers of the message a task runs for: Celery keeps a message's own
    headers among the request's attributes (and, from some callers, under ``headers``)."""
    found: dict[str, object] = {}
    nested = getattr(request, "headers", None)
    if isinstance(nested, dict):
        found.update(nested)
    for name in ("traceparent", "tracestate"):
        value = getattr(request, name, None)
        if isinstance(value, str):
            found[name] = value
    return found
