"""Timer queries: the due scan (SKIP LOCKED), marking fired, the next wake-up, listings.

Only timers of *active* instances are due: a suspended instance keeps its timers pending
until it is resumed, and they fire on the first poll after that.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from bpm.runtime.records import Timer
from bpm.runtime.states import InstanceState, TimerState
from bpm.store import tables as t
from bpm.store.rows import record_of

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
        instance_state == InstanceState.ACTIVE.value,
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
    """Due times of pending timers up to ``until``, earliest first (an index range scan of
    ``ix_timer_due``: however many timers are pending later, this reads only these)."""
    q = (
        select(t.timer.c.fire_at)
        .where(t.timer.c.state == PENDING, t.timer.c.fire_at <= until)
        .order_by(t.timer.c.fire_at)
        .limit(limit)
    )
    return list(conn.execute(q).scalars())


def next_wakeup(conn: Connection) -> datetime | None:
    """The earliest ``fire_at`` of a pending timer of an active instance, or None."""
    q = (
        select(t.timer.c.fire_at)
        .join(t.process_instance, t.process_instance.c.id == t.timer.c.instance_id)
        .where(
            t.timer.c.state == PENDING,
            t.process_instance.c.state == InstanceState.ACTIVE.value,
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
