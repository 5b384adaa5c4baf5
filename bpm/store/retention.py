"""Retention queries: find ended instances past a cutoff and delete them with their rows."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, Table, delete, select

from bpm.runtime.states import FINAL_INSTANCE_STATES
from bpm.store import tables as t

_FINAL = [s.value for s in FINAL_INSTANCE_STATES]

# Rows that belong to an instance, children first. The timer table has no index on
# instance_id, so timers are found through their tokens (ix_timer_token) instead.
_CHILDREN: tuple[Table, ...] = (
    t.history, t.incident, t.user_task, t.external_task, t.compensable, t.scope,
)  # fmt: skip


def lock_ended_before(conn: Connection, cutoff: datetime, limit: int) -> list[str]:
    """Lock up to ``limit`` instances that ended before ``cutoff``, oldest first.

    ``SKIP LOCKED``: two purges running at once take disjoint batches instead of waiting on
    (or deleting under) each other. The lock is on the instance row, the first lock every
    change of an instance takes (DESIGN section 5).
    """
    pi = t.process_instance
    q = (
        select(pi.c.id)
        .where(pi.c.state.in_(_FINAL), pi.c.ended_at.is_not(None), pi.c.ended_at < cutoff)
        .order_by(pi.c.ended_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [r.id for r in conn.execute(q)]


def delete_instances(conn: Connection, instance_ids: list[str]) -> int:
    """Delete the instances and every row of theirs; returns how many instances went."""
    if not instance_ids:
        return 0
    token_ids = select(t.token.c.id).where(t.token.c.instance_id.in_(instance_ids))
    conn.execute(delete(t.timer).where(t.timer.c.token_id.in_(token_ids)))
    for table in _CHILDREN:
        conn.execute(delete(table).where(table.c.instance_id.in_(instance_ids)))
    conn.execute(delete(t.token).where(t.token.c.instance_id.in_(instance_ids)))
    decided = t.decision_instance  # the decisions its business rule tasks evaluated
    conn.execute(delete(decided).where(decided.c.process_instance_id.in_(instance_ids)))
    res = conn.execute(delete(t.process_instance).where(t.process_instance.c.id.in_(instance_ids)))
    return int(res.rowcount)


def delete_everything(conn: Connection) -> None:
    """Delete every row of every table, children first (the test kit's fresh database on a
    PostgreSQL it was given: emptying is faster than migrating again)."""
    for table in reversed(t.metadata.sorted_tables):
        conn.execute(delete(table))
