"""Read queries on instances, tokens, history and user tasks."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, or_, select, update

from bpm.runtime.records import HistoryEvent, Instance, Token
from bpm.store import tables as t
from bpm.store.rows import event_from_row, instance_from_row, token_from_row


def get(conn: Connection, instance_id: str, *, with_tokens: bool = True) -> Instance | None:
    row = conn.execute(
        select(t.process_instance).where(t.process_instance.c.id == instance_id)
    ).first()
    if row is None:
        return None
    return instance_from_row(row, tokens_of(conn, instance_id) if with_tokens else ())


def by_idempotency_key(conn: Connection, key: str) -> Instance | None:
    row = conn.execute(
        select(t.process_instance).where(t.process_instance.c.idempotency_key == key)
    ).first()
    return instance_from_row(row) if row else None


def tokens_of(conn: Connection, instance_id: str) -> tuple[Token, ...]:
    rows = conn.execute(
        select(t.token)
        .where(t.token.c.instance_id == instance_id)
        .order_by(t.token.c.created_at, t.token.c.id)
    )
    return tuple(token_from_row(r) for r in rows)


def list_instances(
    conn: Connection,
    *,
    state: str | None = None,
    definition_key: str | None = None,
    business_key: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[Instance]:
    q = select(t.process_instance).order_by(
        t.process_instance.c.created_at.desc(), t.process_instance.c.id.desc()
    )
    if state is not None:
        q = q.where(t.process_instance.c.state == state)
    if definition_key is not None:
        q = q.where(t.process_instance.c.definition_key == definition_key)
    if business_key is not None:
        q = q.where(t.process_instance.c.business_key == business_key)
    if offset:
        q = q.offset(offset)
    if limit is not None:
        q = q.limit(limit)
    return [instance_from_row(r) for r in conn.execute(q)]


def history(conn: Connection, instance_id: str) -> list[HistoryEvent]:
    rows = conn.execute(
        select(t.history_event)
        .where(t.history_event.c.instance_id == instance_id)
        .order_by(t.history_event.c.seq)
    )
    return [event_from_row(r) for r in rows]


def user_tasks(
    conn: Connection,
    *,
    instance_id: str | None = None,
    state: str | None = "open",
    node_id: str | None = None,
    assignee: str | None = None,
) -> list[dict[str, Any]]:
    q = select(t.user_task).order_by(t.user_task.c.created_at, t.user_task.c.id)
    if instance_id is not None:
        q = q.where(t.user_task.c.instance_id == instance_id)
    if state is not None:
        q = q.where(t.user_task.c.state == state)
    if node_id is not None:
        q = q.where(t.user_task.c.node_id == node_id)
    if assignee is not None:
        q = q.where(t.user_task.c.assignee == assignee)
    return [dict(r._mapping) for r in conn.execute(q)]


def user_task(conn: Connection, task_id: str) -> dict[str, Any] | None:
    row = conn.execute(select(t.user_task).where(t.user_task.c.id == task_id)).first()
    return dict(row._mapping) if row else None


def set_user_task_assignee(
    conn: Connection, task_id: str, user_id: str | None, *, only_if_free_for: str | None
) -> bool:
    """Set the assignee of an open user task; with ``only_if_free_for``, only when the task
    is unassigned or already that user's. Returns whether the task changed."""
    q = update(t.user_task).where(t.user_task.c.id == task_id, t.user_task.c.state == "open")
    if only_if_free_for is not None:
        q = q.where(
            or_(t.user_task.c.assignee.is_(None), t.user_task.c.assignee == only_if_free_for)
        )
    return conn.execute(q.values(assignee=user_id)).rowcount == 1
