"""Comments on user tasks (``/task/{id}/comment``), kept after the task ends."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select

from bpm.store import tables as t

c = t.task_comment


@dataclass(frozen=True)
class TaskComment:
    """One comment: who wrote what, when, on which task (and its instance)."""

    id: str
    task_id: str
    instance_id: str | None
    user_id: str | None
    message: str
    created_at: datetime


def add(conn: Connection, comment: TaskComment) -> None:
    conn.execute(
        insert(c).values(
            id=comment.id,
            task_id=comment.task_id,
            instance_id=comment.instance_id,
            user_id=comment.user_id,
            message=comment.message,
            created_at=comment.created_at,
        )
    )


def of_task(conn: Connection, task_id: str, *, limit: int = 1000) -> list[TaskComment]:
    """Oldest first."""
    rows = conn.execute(
        select(c).where(c.c.task_id == task_id).order_by(c.c.created_at, c.c.id).limit(limit)
    ).mappings()
    return [
        TaskComment(
            r["id"], r["task_id"], r["instance_id"], r["user_id"], r["message"], r["created_at"]
        )
        for r in rows
    ]
