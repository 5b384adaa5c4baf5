"""Queries on external tasks: fetch-and-lock, lock changes, the reclaimer, NOTIFY, reads.

Fetch-and-lock is ONE statement on PostgreSQL: ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE
SKIP LOCKED LIMIT n) RETURNING``. Two workers racing for one task cannot both get it; a lock
whose expiry has passed is free even before the reclaimer has run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    case,
    cast,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from bpm.errors import NotFound
from bpm.runtime.external import (
    NOTIFY_CHANNEL,
    OPEN_STATES,
    ExternalTask,
    FetchRequest,
    TaskState,
    TopicRequest,
)
from bpm.runtime.states import InstanceState
from bpm.runtime.work import InstanceWork
from bpm.store import tables as t

et = t.external_task
pi = t.process_instance


def task_from_row(r: Any, variables: dict[str, Any] | None = None) -> ExternalTask:
    return task_from_mapping(r._mapping, variables)


def task_from_mapping(m: Any, variables: dict[str, Any] | None = None) -> ExternalTask:
    return ExternalTask(
        id=m["id"],
        instance_id=m["instance_id"],
        token_id=m["token_id"],
        definition_id=m["definition_id"],
        definition_key=m["definition_key"],
        business_key=m["business_key"],
        node_id=m["node_id"],
        topic=m["topic"],
        state=TaskState(m["state"]),
        priority=int(m["priority"]),
        lock_owner=m["lock_owner"],
        lock_expires_at=m["lock_expires_at"],
        retries=m["retries"],
        retry_at=m["retry_at"],
        attempt=m["attempt"],
        error_message=m["error_message"],
        error_details=m["error_details"],
        finished_by=m["finished_by"],
        finish_kind=m["finish_kind"],
        properties=dict(m["properties"] or {}),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        variables=variables,
        suspended=m.get("instance_state") == InstanceState.SUSPENDED.value,
    )


def _is_pg(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _variable_equals(conn: Connection, name: str, value: Any) -> ColumnElement[bool]:
    if _is_pg(conn):
        element: ColumnElement[Any] = pi.c.variables.op("->")(literal(name))
        matched: ColumnElement[bool] = element == cast(literal(json.dumps(value)), JSONB)
        return matched
    path = '$."' + name.replace('"', '""') + '"'
    extracted: ColumnElement[Any] = func.json_extract(pi.c.variables, path)
    wanted = json.dumps(value) if isinstance(value, (dict, list)) else value
    same: ColumnElement[bool] = extracted == wanted
    return same


def _topic_condition(conn: Connection, tp: TopicRequest) -> ColumnElement[bool]:
    conds: list[ColumnElement[bool]] = [et.c.topic == tp.topic]
    if tp.business_key is not None:
        conds.append(et.c.business_key == tp.business_key)
    if tp.process_definition_key is not None:
        conds.append(et.c.definition_key == tp.process_definition_key)
    if tp.process_definition_id is not None:
        conds.append(et.c.definition_id == tp.process_definition_id)
    if tp.process_variables:
        conds.append(or_(*(_variable_equals(conn, k, v) for k, v in tp.process_variables.items())))
    return and_(*conds)


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
            .join(pi, pi.c.id == et.c.instance_id)
            .where(state, retries_left, pi.c.state == InstanceState.ACTIVE.value, topics)
            .order_by(*_order(req, et.c.priority, et.c.created_at, et.c.id))
            .limit(req.max_tasks)
        )
        return q.with_for_update(of=et, skip_locked=True) if _is_pg(conn) else q

    # Two index-friendly branches instead of one OR (which forces a scan of the table):
    # ready tasks (partial index on state = 'ready') and expired locks (state = 'locked').
    ready = branch(et.c.state == TaskState.READY.value)
    expired = branch(and_(et.c.state == TaskState.LOCKED.value, et.c.lock_expires_at < now))
    if _is_pg(conn):
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
        "lock_expires_at": expiry,
        "updated_at": now,
    }
    if _is_pg(conn):
        ids_sub: Any = candidates
    else:  # SQLite serializes writers (BEGIN IMMEDIATE): select, then update
        ids_sub = [r.id for r in conn.execute(ready)] + [r.id for r in conn.execute(expired)]
        if not ids_sub:
            return []
    rows = conn.execute(
        update(et)
        .where(et.c.id.in_(ids_sub), et.c.instance_id == pi.c.id)
        .values(values)
        .returning(*et.c, pi.c.variables.label("instance_variables"))
    ).all()
    if not rows:
        return []
    conn.execute(
        insert(t.history_event),
        [
            {
                "instance_id": r.instance_id,
                "token_id": r.token_id,
                "node_id": r.node_id,
                "type": "external_task_locked",
                "from_state": None,
                "to_state": None,
                "payload": {
                    "task": r.id,
                    "worker": req.worker_id,
                    "until": r.lock_expires_at.isoformat(),
                },
                "at": now,
            }
            for r in rows
        ],
    )
    tasks = [task_from_row(r, dict(r.instance_variables or {})) for r in rows]
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
    if for_update and _is_pg(conn):
        q = q.with_for_update(of=et)
    row = conn.execute(q).first()
    return task_from_row(row) if row else None


def instance_of(conn: Connection, task_id: str) -> str | None:
    """The instance id of a task (to take the instance lock first)."""
    value = conn.execute(select(et.c.instance_id).where(et.c.id == task_id)).scalar_one_or_none()
    return str(value) if value is not None else None


def finish_locked(
    conn: Connection, task_id: str, worker_id: str, now: datetime, **values: Any
) -> ExternalTask | None:
    """Check and finish in one statement: only a task locked by ``worker_id`` changes."""
    row = conn.execute(
        update(et)
        .where(
            et.c.id == task_id,
            et.c.state == TaskState.LOCKED.value,
            et.c.lock_owner == worker_id,
        )
        .values(
            lock_owner=None, lock_expires_at=None, finished_by=worker_id, updated_at=now, **values
        )
        .returning(*et.c)
    ).first()
    return task_from_row(row) if row else None


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


def lock(conn: Connection, task_id: str, worker_id: str, until: datetime, now: datetime) -> bool:
    """Lock one task for ``worker_id`` if it is free or already held by that worker."""
    active = (
        select(pi.c.id)
        .where(pi.c.id == et.c.instance_id, pi.c.state == InstanceState.ACTIVE.value)
        .exists()
    )
    res = conn.execute(
        update(et)
        .where(
            et.c.id == task_id,
            or_(
                _free(now),
                and_(et.c.state == TaskState.LOCKED.value, et.c.lock_owner == worker_id),
            ),
            active,
        )
        .values(
            state=TaskState.LOCKED.value,
            lock_owner=worker_id,
            lock_expires_at=until,
            updated_at=now,
        )
    )
    return res.rowcount == 1


def unlock(conn: Connection, task_id: str, now: datetime) -> ExternalTask | None:
    """Give a locked task back (ready); returns it, or None when it was not locked."""
    row = conn.execute(
        update(et)
        .where(et.c.id == task_id, et.c.state == TaskState.LOCKED.value)
        .values(state=TaskState.READY.value, lock_owner=None, lock_expires_at=None, updated_at=now)
        .returning(*et.c)
    ).first()
    return task_from_row(row) if row else None


def reclaim_expired(conn: Connection, now: datetime, limit: int) -> list[tuple[ExternalTask, str]]:
    """Expired locks back to ready; returns each task with the owner whose lock expired."""
    if _is_pg(conn):
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
        task = unlock(conn, tid, now)
        if task is not None:
            out.append((task, owner))
    return out


def record_events(conn: Connection, events: Sequence[dict[str, Any]]) -> None:
    """Append history events that move no token (lock changes)."""
    if events:
        conn.execute(insert(t.history_event), list(events))


def notify_topics(conn: Connection, topics: Iterable[str]) -> None:
    """``pg_notify`` each topic on the external-task channel (delivered at commit)."""
    if not _is_pg(conn):
        return
    for topic in sorted(set(topics)):
        conn.execute(select(func.pg_notify(NOTIFY_CHANNEL, topic)))


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
    at = min(found)
    if at.tzinfo is None:  # SQLite aggregates lose the column type
        from datetime import UTC

        at = at.replace(tzinfo=UTC)
    return at  # type: ignore[no-any-return]


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


def open_incident_ids(conn: Connection, task_id: str) -> list[str]:
    q = select(t.incident.c.id).where(
        t.incident.c.external_task_id == task_id, t.incident.c.state == "open"
    )
    return [r.id for r in conn.execute(q)]


def listen_sql(channel: str) -> str:
    """The LISTEN statement the API's long-poll hub runs on its own connection."""
    return f'LISTEN "{channel}"'


def lock_and_finish(
    conn: Connection,
    task_id: str,
    worker_id: str,
    now: datetime,
    *,
    max_variable_bytes: int,
    **values: Any,
) -> tuple[InstanceWork, ExternalTask | None]:
    """Lock the task's instance (first, as every token change does), load its work, and
    finish the task if ``worker_id`` holds it (else the task part is None).

    Raises NotFound when the task does not exist. One round trip on PostgreSQL.
    """
    from bpm.store.work import load_work, work_from

    if _is_pg(conn):
        from bpm.store.pipeline import lock_load_and_finish_task

        inst, tokens, row = lock_load_and_finish_task(conn, task_id, worker_id, now, values)
        if inst is None:
            raise NotFound(f"External task with id {task_id} does not exist")
        work = work_from(conn, inst, tokens, now, max_variable_bytes=max_variable_bytes)
        return work, (task_from_mapping(row) if row else None)
    instance_id = instance_of(conn, task_id)
    if instance_id is None:
        raise NotFound(f"External task with id {task_id} does not exist")
    work = load_work(conn, instance_id, now, max_variable_bytes=max_variable_bytes)
    return work, finish_locked(conn, task_id, worker_id, now, **values)
