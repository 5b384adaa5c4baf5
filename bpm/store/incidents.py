"""Incident queries, and the persisted final error of a step (``step_failed``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, select

from bpm.store import tables as t

OPEN = "open"


@dataclass(frozen=True)
class Incident:
    """A step that needs an operator: its token is ``failed`` until the incident is retried.

    ``state`` is ``open``, ``resolved`` (retried) or ``deleted`` (its token was ended, e.g.
    the instance was terminated or a timeout interrupted the task).
    """

    id: str
    instance_id: str
    token_id: str
    node_id: str
    type: str
    state: str
    created_at: datetime
    message: str | None = None
    details: str | None = None
    external_task_id: str | None = None
    resolved_at: datetime | None = None


def incident_from_row(r: Row[Any] | Any) -> Incident:
    m = r._mapping
    return Incident(
        id=m["id"],
        instance_id=m["instance_id"],
        token_id=m["token_id"],
        node_id=m["node_id"],
        type=m["type"],
        state=m["state"],
        created_at=m["created_at"],
        message=m["message"],
        details=m["details"],
        external_task_id=m["external_task_id"],
        resolved_at=m["resolved_at"],
    )


def get(conn: Connection, incident_id: str) -> Incident | None:
    row = conn.execute(select(t.incident).where(t.incident.c.id == incident_id)).first()
    return incident_from_row(row) if row else None


def list_incidents(
    conn: Connection,
    *,
    instance_id: str | None = None,
    state: str | None = OPEN,
    limit: int | None = None,
) -> list[Incident]:
    """Incidents, oldest first; open ones only unless ``state`` says otherwise."""
    q = select(t.incident).order_by(t.incident.c.created_at, t.incident.c.id)
    if instance_id is not None:
        q = q.where(t.incident.c.instance_id == instance_id)
    if state is not None:
        q = q.where(t.incident.c.state == state)
    if limit is not None:
        q = q.limit(limit)
    return [incident_from_row(r) for r in conn.execute(q)]


def final_error(conn: Connection, instance_id: str, node_id: str) -> str | None:
    """The error of the last ``step_failed`` of ``node_id``, unless it was retried since."""
    h = t.history_event
    row = conn.execute(
        select(h.c.type, h.c.payload)
        .where(
            h.c.instance_id == instance_id,
            h.c.node_id == node_id,
            h.c.type.in_(("step_failed", "incident_retried")),
        )
        .order_by(h.c.seq.desc())
        .limit(1)
    ).first()
    if row is None or row.type != "step_failed":
        return None
    error = (row.payload or {}).get("error")
    return str(error) if error is not None else None
