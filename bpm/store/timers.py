"""Timer queries: the due scan (SKIP LOCKED), marking fired, the next wake-up, listings.

Only timers of *active* instances are due: a suspended instance keeps its timers pending
until it is resumed, and they fire on the first poll after that.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, literal, select, union_all

from bpm.runtime.records import Timer
from bpm.runtime.states import RUNNING_INSTANCE_STATES, TimerState
from bpm.store import tables as t
from bpm.store.rows import record_of

# literals: the claim runs pipelined, where a list parameter cannot be expanded
_RUNNING = [literal(s.value) for s in RUNNING_INSTANCE_STATES]
PENDING = TimerState.PENDING.value


def timer_from_row(r: Any) -> Timer:
    return record_of(Timer, r._mapping)


def _due(now: datetime) -> Any:
    # The instance state is read by a scalar subquery, not a join: the planner cannot turn
    # it into a hash join that scans every instance, so each due timer costs one primary-key
    # lookup however many instances (and far-future timers) there are.
    instance_state = (
        select(t.process_instance.c.state)
        .where(t.process_instance.c.id == t.timer.c.instance_id)
        .scalar_subquery()
    )
    return select(t.timer).where(
        t.timer.c.state == PENDING,
        t.timer.c.fire_at <= now,
        instance_state.in_(_RUNNING),
    )


def claim_due(
    conn: Connection, now: datetime, limit: int, exclude: Sequence[str] = ()
) -> list[Timer]:
    """Due pending timers of active instances, oldest first, row-locked with SKIP LOCKED.

    Rows another poller holds are skipped, so concurrent pollers split the work. The scan
    walks the partial index ``ix_timer_due`` and stops at ``now``: pending timers due later
    cost nothing. (SQLite ignores the row lock; its writers are serialized at BEGIN.)
    """
    q = _due(now)
    if exclude:
        q = q.where(t.timer.c.id.not_in(list(exclude)))
    q = q.order_by(t.timer.c.fire_at).limit(limit).with_for_update(skip_locked=True, of=t.timer)
    return [timer_from_row(r) for r in conn.execute(q)]


def due_before(conn: Connection, until: datetime, limit: int) -> list[datetime]:
    """Due times up to ``until`` of pending timers and of timer start events, earliest first.

    One statement, two index range scans (``ix_timer_due``, ``ix_timer_schedule_due``):
    however many are due later, this reads only these."""
    ts = t.timer_schedule
    timers = (
        select(t.timer.c.fire_at.label("due"))
        .where(t.timer.c.state == PENDING, t.timer.c.fire_at <= until)
        .order_by(t.timer.c.fire_at)
        .limit(limit)
        .subquery()
    )
    starts = (
        select(ts.c.next_due.label("due"))
        .where(ts.c.state == "active", ts.c.next_due <= until)
        .order_by(ts.c.next_due)
        .limit(limit)
        .subquery()
    )
    both = union_all(select(timers.c.due), select(starts.c.due)).subquery()
    q = select(both.c.due).order_by(both.c.due).limit(limit)
    return sorted(_aware(d) for d in conn.execute(q).scalars())


def _aware(value: datetime) -> datetime:
    # a UNION loses the column type on SQLite: its values come back naive (UTC)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def next_wakeup(conn: Connection) -> datetime | None:
    """The earliest ``fire_at`` of a pending timer of an active instance, or None."""
    q = (
        select(t.timer.c.fire_at)
        .join(t.process_instance, t.process_instance.c.id == t.timer.c.instance_id)
        .where(
            t.timer.c.state == PENDING,
            t.process_instance.c.state.in_(_RUNNING),
        )
        .order_by(t.timer.c.fire_at)
        .limit(1)
    )
    value: datetime | None = conn.execute(q).scalar_one_or_none()
    return value


def list_timers(
    conn: Connection,
    *,
    instance_id: str | None = None,
    state: str | None = PENDING,
    limit: int | None = None,
) -> list[Timer]:
    """Timers, earliest first, optionally of one instance and in one state."""
    q = select(t.timer).order_by(t.timer.c.fire_at, t.timer.c.id)
    if instance_id is not None:
        q = q.where(t.timer.c.instance_id == instance_id)
    if state is not None:
        q = q.where(t.timer.c.state == state)
    if limit is not None:
        q = q.limit(limit)
    return [timer_from_row(r) for r in conn.execute(q)]
