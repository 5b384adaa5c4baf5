"""A worker cut off from the database hands its messages to the others, slowly.

When one worker cannot reach PostgreSQL (a network partition) while the others can, it
would take message after message and fail each one at once (a refused connection fails in
microseconds): the healthy workers would get few messages, and a sweep tick or the only
message of a step could land on the cut-off worker every time. So a task that fails on the
database connection first waits :data:`BACKOFF` seconds, leaving the queue to the others,
and a step's message is published again (a Celery retry) so that another worker takes it.
The database row still decides: a message published twice runs the step once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from celery import Task
from sqlalchemy.exc import DBAPIError

from bpm.engine.execution import connection_trouble

log = logging.getLogger("bpm.workers")

BACKOFF = 1.0
"""Seconds a task that could not reach the database holds its worker before it fails."""


@contextmanager
def backing_off(task: Task, *, publish_again: bool) -> Iterator[None]:  # type: ignore[type-arg]
    """Run the task's body; on a database connection error, wait, then fail the task
    (``publish_again``: a Celery retry, the same message on the queue again)."""
    try:
        yield
    except DBAPIError as exc:
        if not connection_trouble(exc):
            raise
        log.warning(
            "%s: the database is out of reach (%s); leaving the queue to other workers for %.1fs",
            task.name,
            exc.orig or exc,
            BACKOFF,
        )
        time.sleep(BACKOFF)
        if publish_again:
            raise task.retry(exc=exc, countdown=0, max_retries=None) from exc
        raise
