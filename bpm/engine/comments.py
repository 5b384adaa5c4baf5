"""Comments on user tasks: one short transaction each (a comment changes no token)."""

from __future__ import annotations

import uuid
from datetime import datetime

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation
from bpm.store import comments as store
from bpm.store.comments import TaskComment

MAX_MESSAGE = 4000


def add_comment(
    core: EngineCore,
    task_id: str,
    instance_id: str | None,
    user_id: str | None,
    message: str,
    *,
    now: datetime | None = None,
) -> TaskComment:
    """Record ``message`` on the task; :class:`InvalidOperation` for an empty or too long
    one (nothing is written)."""
    if not message or not message.strip():
        raise InvalidOperation("message is required: a comment needs text")
    if len(message) > MAX_MESSAGE:
        raise InvalidOperation(f"message must have at most {MAX_MESSAGE} characters")
    if "\0" in message:
        raise InvalidOperation("message must not contain NUL")
    comment = TaskComment(uuid.uuid4().hex, task_id, instance_id, user_id, message, core.now(now))
    with core.tx() as conn:
        store.add(conn, comment)
    return comment


def comments(core: EngineCore, task_id: str) -> list[TaskComment]:
    with core.tx() as conn:
        return store.of_task(conn, task_id)
