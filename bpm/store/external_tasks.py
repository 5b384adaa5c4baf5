"""Queries on external tasks: fetch-and-lock, lock changes, the reclaimer, NOTIFY, reads.

Fetch-and-lock is ONE statement on PostgreSQL: ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE
SKIP LOCKED LIMIT n) RETURNING``. Two workers racing for one task cannot both get it; a lock
whose expiry has passed is free even before the reclaimer has run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    case,
    exists,
    func,
    literal,
    or_,
    select,
    update,
)

from bpm.runtime.external import NOTIFY_CHANNEL, FetchRequest, TopicRequest
from bpm.runtime.records import ExternalTask, HistoryEvent
from bpm.runtime.states import OPEN_TASK_STATES, RUNNING_INSTANCE_STATES, InstanceState, TaskState
from bpm.store import dialect
from bpm.store import tables as t
from bpm.store.rows import record_of

# literals: the claim runs pipelined, where a list parameter cannot be expanded
_RUNNING = [literal(s.value) for s in RUNNING_INSTANCE_STATES]
et = t.external_task
pi = t.process_instance
OPEN_STATES = [s.value for s in OPEN_TASK_STATES]
# Built once: an alias's column collection costs more to build than the rest of a fetch.
_OWNER = pi.alias("owner")
_INACTIVE = pi.alias("inactive")


def task_from_row(r: Any, variables: dict[str, Any] | None = None) -> ExternalTask:
    m = r._mapping
    suspended = m.get("instance_state") == InstanceState.SUSPENDED.value
    return record_of(ExternalTask, m, variables=variables, suspended=suspended)


def task_event(task: ExternalTask, type_: str, at: datetime, **payload: Any) -> HistoryEvent:
    """The history event of a change a set-based statement made to ``task``."""
    return HistoryEvent(
        instance_id=task.instance_id,
        type=type_,
        at=at,
        token_id=task.token_id,
        node_id=task.node_id,
        payload={"task": task.id, **payload},
    )


def _topic_condition(conn: Connection, tp: TopicRequest) -> ColumnElement[bool]:
    conds: list[ColumnElement[bool]] = [et.c.topic == tp.topic]
    if tp.business_key is not None:
        conds.append(et.c.business_key == tp.business_key)
    if tp.process_definition_key is not None:
        conds.append(et.c.definition_key == tp.process_definition_key)
    if tp.process_definition_id is not None:
        conds.append(et.c.definition_id == tp.process_definition_id)
    if tp.process_variables:
        owner = _OWNER
        matches = or_(
            *(
                dialect.json_member_equals(conn, owner.c.variables, k, v)
                for k, v in tp.process_variables.items()
            )
        )
        conds.append(exists().where(owner.c.id == et.c.instance_id, matches).correlate(et))
    return and_(*conds)


def _instance_active() -> ColumnElement[bool]:
    """The task's instance is running (active or compensating), written so that the
    instance can only be found by its primary key: as a join, a planner without
    statistics (a table just filled, before autovacuum has analysed it) nested-looped over
    every active instance for every task, and one fetch took a second with 2,000 tasks
    waiting."""
    other = _INACTIVE
    return ~exists().where(
        other.c.id == et.c.instance_id, other.c.state.not_in(_RUNNING)
    ).correlate(et)


def _free(now: datetime) -> ColumnElement[bool]:
    """Fetchable: ready (retry time reached) or locked with an expired lock, retries left."""
    return and_(
        or_(
            et.c.state == TaskState.READY.value,
            and_(et.c.state == TaskState.LOCKED.value, et.c.lock_expires_at < now),
        ),
        or_(et.c.retries.is_(None), et.c.retries > 0),
        or_(et.c.retry_at.is_(None), et.c.retry_at <= now),
    )


def _order(req: FetchRequest, priority: Any, created: Any, id_: Any) -> list[Any]:
    order: list[Any] = [priority.desc()] if req.use_priority else []
    for field_name, ascending in req.sorting or (("createTime", True),):
        if field_name == "createTime":
            order.append(created.asc() if ascending else created.desc())
    order.append(id_)
    return order


def fetch_and_lock(conn: Connection, req: FetchRequest, now: datetime) -> list[ExternalTask]:
    """Lock up to ``req.max_tasks`` free tasks for ``req.worker_id``; returns them in order.

    Each returned task carries all its instance variables; the caller filters by name.
    """
    if not req.topics or req.max_tasks <= 0:
        return []
    topics = or_(*(_topic_condition(conn, tp) for tp in req.topics))
    retries_left = and_(
        or_(et.c.retries.is_(None), et.c.retries > 0),
        or_(et.c.retry_at.is_(None), et.c.retry_at <= now),
    )

    def branch(state: ColumnElement[bool]) -> Any:
        """Free tasks of one kind, in fetch order, locked with SKIP LOCKED."""
        q = (
            select(et.c.id, et.c.priority, et.c.created_at)
            .where(state, retries_left, _instance_active(), topics)
            .order_by(*_order(req, et.c.priority, et.c.created_at, et.c.id))
            .limit(req.max_tasks)
        )
        return q.with_for_update(of=et, skip_locked=True) if dialect.is_postgres(conn) else q

    # Two index-friendly branches instead of one OR (which forces a scan of the table):
    # ready tasks (partial index on state = 'ready') and expired locks (state = 'locked').
    ready = branch(et.c.state == TaskState.READY.value)
    expired = branch(and_(et.c.state == TaskState.LOCKED.value, et.c.lock_expires_at < now))
    if dialect.is_postgres(conn):
        ready_cte, expired_cte = ready.cte("ready_free"), expired.cte("expired_free")
        both = ready_cte.select().union_all(expired_cte.select()).subquery("free")
        candidates: Any = (
            select(both.c.id)
            .order_by(*_order(req, both.c.priority, both.c.created_at, both.c.id))
            .limit(req.max_tasks)
            .correlate(None)
        )
    durations: dict[str, int] = {}
    for tp in req.topics:
        durations.setdefault(tp.topic, tp.lock_duration_ms)
    whens = [
        (et.c.topic == topic, literal(now + timedelta(milliseconds=ms), t.UTCDateTime))
        for topic, ms in durations.items()
    ]
    first = now + timedelta(milliseconds=next(iter(durations.values())))
    expiry = case(*whens, else_=literal(first, t.UTCDateTime)) if len(whens) > 1 else whens[0][1]
    values = {
        "state": TaskState.LOCKED.value,
        "lock_owner": req.worker_id,
        "worker_id": req.worker_id,
        "lock_expires_at": expiry,
        "updated_at": now,
    }
    if dialect.is_postgres(conn):
        ids_sub: Any = candidates
    else:  # SQLite serializes writers (BEGIN IMMEDIATE): select, then update
        ids_sub = [r.id for r in conn.execute(ready)] + [r.id for r in conn.execute(expired)]
        if not ids_sub:
            return []
    rows = conn.execute(
        update(et).where(et.c.id.in_(ids_sub)).values(values).returning(*et.c)
    ).all()
    if not rows:
        return []
    # The variables in a second statement: SQLite's RETURNING cannot read another table.
    owners = sorted({r.instance_id for r in rows})
    variables = dict(conn.execute(select(pi.c.id, pi.c.variables).where(pi.c.id.in_(owners))).all())
    tasks = [task_from_row(r, dict(variables.get(r.instance_id) or {})) for r in rows]
    rank = {tid: i for i, tid in enumerate(_ordered_ids(tasks, req))}
    return sorted(tasks, key=lambda x: rank[x.id])


def _ordered_ids(tasks: list[ExternalTask], req: FetchRequest) -> list[str]:
    """RETURNING has no order: sort the locked rows as the candidate query did."""
    out = sorted(tasks, key=lambda x: x.id)
    for field_name, ascending in reversed(req.sorting or (("createTime", True),)):
        if field_name == "createTime":
            out.sort(key=lambda x: x.created_at, reverse=not ascending)
    if req.use_priority:
        out.sort(key=lambda x: x.priority, reverse=True)
    return [x.id for x in out]


def get(conn: Connection, task_id: str, *, for_update: bool = False) -> ExternalTask | None:
    q = (
        select(*et.c, pi.c.state.label("instance_state"))
        .join(pi, pi.c.id == et.c.instance_id)
        .where(et.c.id == task_id)
    )
    if for_update and dialect.is_postgres(conn):
        q = q.with_for_update(of=et)
    row = conn.execute(q).first()
    return task_from_row(row) if row else None


def tasks(conn: Connection, task_ids: Sequence[str]) -> dict[str, ExternalTask]:
    """The tasks ``task_ids`` (those that exist), in one statement."""
    if not task_ids:
        return {}
    q = select(et).where(et.c.id.in_(sorted(set(task_ids))))
    return {r.id: task_from_row(r) for r in conn.execute(q)}


def instance_of(conn: Connection, task_id: str) -> str | None:
    """The instance id of a task (to take the instance lock first)."""
    value = conn.execute(select(et.c.instance_id).where(et.c.id == task_id)).scalar_one_or_none()
    return str(value) if value is not None else None


def extend_lock(
    conn: Connection, task_id: str, worker_id: str, until: datetime, now: datetime
) -> bool:
    """Move the expiry of a live lock held by ``worker_id``; False if it is not held."""
    res = conn.execute(
        update(et)
        .where(
            et.c.id == task_id,
            et.c.state == TaskState.LOCKED.value,
            et.c.lock_owner == worker_id,
            et.c.lock_expires_at >= now,
        )
        .values(lock_expires_at=until, updated_at=now)
    )
    return res.rowcount == 1


def _unlock(conn: Connection, task_id: str, now: datetime) -> ExternalTask | None:
    row = conn.execute(
        update(et)
        .where(et.c.id == task_id, et.c.state == TaskState.LOCKED.value)
        .values(state=TaskState.READY.value, lock_owner=None, lock_expires_at=None, updated_at=now)
        .returning(*et.c)
    ).first()
    return task_from_row(row) if row else None


def reclaim_expired(conn: Connection, now: datetime, limit: int) -> list[tuple[ExternalTask, str]]:
    """Expired locks back to ready; returns each task with the owner whose lock expired."""
    if dialect.is_postgres(conn):
        sub = (
            select(et.c.id, et.c.lock_owner)
            .where(et.c.state == TaskState.LOCKED.value, et.c.lock_expires_at < now)
            .order_by(et.c.lock_expires_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
            .subquery()
        )
        rows = conn.execute(
            update(et)
            .where(et.c.id == sub.c.id)
            .values(
                state=TaskState.READY.value, lock_owner=None, lock_expires_at=None, updated_at=now
            )
            .returning(*et.c, sub.c.lock_owner.label("old_owner"))
        ).all()
        return [(task_from_row(r), r.old_owner) for r in rows]
    expired = conn.execute(
        select(et.c.id, et.c.lock_owner)
        .where(et.c.state == TaskState.LOCKED.value, et.c.lock_expires_at < now)
        .order_by(et.c.lock_expires_at)
        .limit(limit)
    ).all()
    out = []
    for tid, owner in expired:
        task = _unlock(conn, tid, now)
        if task is not None:
            out.append((task, owner))
    return out


def notify_topics(conn: Connection, topics: Iterable[str]) -> None:
    """Wake the long polls waiting for these topics (delivered at commit)."""
    dialect.notify(conn, NOTIFY_CHANNEL, topics)


def next_free_at(conn: Connection, topics: Sequence[str], now: datetime) -> datetime | None:
    """When the next task of ``topics`` becomes free: a lock expiry or a retry time."""
    lock_q = select(func.min(et.c.lock_expires_at)).where(
        et.c.state == TaskState.LOCKED.value, et.c.topic.in_(topics)
    )
    retry_q = select(func.min(et.c.retry_at)).where(
        et.c.state == TaskState.READY.value, et.c.topic.in_(topics), et.c.retry_at > now
    )
    a = conn.execute(lock_q).scalar_one_or_none()
    b = conn.execute(retry_q).scalar_one_or_none()
    found = [x for x in (a, b) if x is not None]
    if not found:
        return None
    at: datetime = min(found)
    if at.tzinfo is None:  # SQLite aggregates lose the column type
        at = at.replace(tzinfo=UTC)
    return at


def _filtered(
    topic: str | None,
    worker_id: str | None,
    instance_id: str | None,
    locked: bool | None,
    retries_left: bool | None,
    now: datetime,
    task_ids: Sequence[str] | None = None,
) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = [et.c.state.in_(OPEN_STATES)]
    if topic is not None:
        conds.append(et.c.topic == topic)
    if worker_id is not None:
        conds.append(et.c.lock_owner == worker_id)
    if instance_id is not None:
        conds.append(et.c.instance_id == instance_id)
    if task_ids is not None:
        conds.append(et.c.id.in_(task_ids))
    live_lock = and_(et.c.state == TaskState.LOCKED.value, et.c.lock_expires_at >= now)
    if locked is True:
        conds.append(live_lock)
    elif locked is False:
        conds.append(~live_lock)
    if retries_left is True:
        conds.append(or_(et.c.retries.is_(None), et.c.retries > 0))
    elif retries_left is False:
        conds.append(et.c.retries == 0)
    return conds


def query(
    conn: Connection,
    *,
    now: datetime,
    topic: str | None = None,
    worker_id: str | None = None,
    instance_id: str | None = None,
    locked: bool | None = None,
    retries_left: bool | None = None,
    task_ids: Sequence[str] | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[ExternalTask]:
    """Open tasks (ready, locked, failed), oldest first."""
    q = (
        select(*et.c, pi.c.state.label("instance_state"))
        .join(pi, pi.c.id == et.c.instance_id)
        .where(*_filtered(topic, worker_id, instance_id, locked, retries_left, now, task_ids))
        .order_by(et.c.created_at, et.c.id)
    )
    if offset:
        q = q.offset(offset)
    if limit is not None:
        q = q.limit(limit)
    return [task_from_row(r) for r in conn.execute(q)]


def count(
    conn: Connection,
    *,
    now: datetime,
    topic: str | None = None,
    worker_id: str | None = None,
    instance_id: str | None = None,
    locked: bool | None = None,
    retries_left: bool | None = None,
) -> int:
    q = (
        select(func.count())
        .select_from(et)
        .where(*_filtered(topic, worker_id, instance_id, locked, retries_left, now))
    )
    return int(conn.execute(q).scalar_one())
