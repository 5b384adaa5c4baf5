"""Queries on the schedules of timer start events and the due times that fired."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, insert, select, update

from bpm.recurrence import Schedule
from bpm.store import dialect
from bpm.store import tables as t

ACTIVE, PAUSED, ENDED, REPLACED = "active", "paused", "ended", "replaced"
_s = t.timer_schedule.c


def _schedule(m: Any) -> Schedule:
    return Schedule(
        id=m["id"],
        definition_id=m["definition_id"],
        definition_key=m["definition_key"],
        node_id=m["node_id"],
        kind=m["kind"],
        expression=m["expression"],
        state=m["state"],
        next_due=m["next_due"],
        fired_count=m["fired_count"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


def replace_for_key(conn: Connection, key: str, now: datetime) -> None:
    """Retire every live schedule of ``key``: a new version is taking over."""
    conn.execute(
        update(t.timer_schedule)
        .where(_s.definition_key == key, _s.state.in_((ACTIVE, PAUSED)))
        .values(state=REPLACED, updated_at=now)
    )


def insert_schedules(conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
    values = list(rows)
    if values:
        conn.execute(insert(t.timer_schedule), values)


def due(conn: Connection, now: datetime, limit: int) -> list[Schedule]:
    """Active schedules due at ``now``, earliest first (not locked: see :func:`lock_due`)."""
    q = (
        select(t.timer_schedule)
        .where(_s.state == ACTIVE, _s.next_due <= now)
        .order_by(_s.next_due, _s.id)
        .limit(limit)
    )
    return [_schedule(r._mapping) for r in conn.execute(q)]


def lock_due(conn: Connection, schedule_id: str, now: datetime) -> Schedule | None:
    """The schedule, locked, if it is still active and due; on PostgreSQL None when
    another poller holds it (``FOR UPDATE SKIP LOCKED``): two beats split the work."""
    q = (
        select(t.timer_schedule)
        .where(_s.id == schedule_id, _s.state == ACTIVE, _s.next_due <= now)
        .with_for_update(skip_locked=True)  # rendered on PostgreSQL; SQLite serializes writers
    )
    row = conn.execute(q).first()
    return _schedule(row._mapping) if row is not None else None


def record_fire(
    conn: Connection, schedule_id: str, due_at: datetime, instance_id: str, now: datetime
) -> bool:
    """Claim the due time ``due_at`` of a schedule; False if it already fired (the unique
    key on schedule and due time refuses a second start, whatever the pollers do)."""
    return dialect.insert_unless_present(
        conn,
        t.schedule_fire,
        {"schedule_id": schedule_id, "due_at": due_at, "instance_id": instance_id, "fired_at": now},
        key=("schedule_id", "due_at"),
    )


def advance(
    conn: Connection, schedule_id: str, next_due: datetime | None, fired: int, now: datetime
) -> None:
    """Move a schedule to its next due time (ended when there is none)."""
    conn.execute(
        update(t.timer_schedule)
        .where(_s.id == schedule_id)
        .values(
            next_due=next_due,
            fired_count=fired,
            state=ACTIVE if next_due is not None else ENDED,
            updated_at=now,
        )
    )


def set_state_for_key(
    conn: Connection, key: str, from_state: str, to_state: str, now: datetime
) -> int:
    """Pause or resume the live schedules of ``key``; returns how many changed."""
    result = conn.execute(
        update(t.timer_schedule)
        .where(and_(_s.definition_key == key, _s.state == from_state))
        .values(state=to_state, updated_at=now)
    )
    return int(result.rowcount or 0)


def list_schedules(
    conn: Connection, *, key: str | None = None, states: Iterable[str] | None = None
) -> list[Schedule]:
    q = select(t.timer_schedule).order_by(_s.definition_key, _s.created_at, _s.node_id)
    if key is not None:
        q = q.where(_s.definition_key == key)
    if states is not None:
        q = q.where(_s.state.in_(list(states)))
    return [_schedule(r._mapping) for r in conn.execute(q)]


def fires(conn: Connection, schedule_id: str) -> list[tuple[datetime, str]]:
    """(due time, instance id) of every start of a schedule, in due order."""
    rows = conn.execute(
        select(t.schedule_fire.c.due_at, t.schedule_fire.c.instance_id)
        .where(t.schedule_fire.c.schedule_id == schedule_id)
        .order_by(t.schedule_fire.c.due_at)
    )
    return [(r.due_at, r.instance_id) for r in rows]
