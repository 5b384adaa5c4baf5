"""External tasks: fetch-and-lock, locks, retries, queries, and the checks every write
shares (what workers report is :mod:`bpm.engine.external_reports`).

Every write that changes a task goes through the unit of work: the task's instance is
locked and loaded first, then the task is read under that lock and the caller's right to
it checked (a key limited to topics). Fetch-and-lock and the reclaimer are single
set-based statements.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from bpm.engine import oplog
from bpm.engine.core import EngineCore
from bpm.engine.unit import Unit, unit_of_work
from bpm.errors import Forbidden, InvalidOperation, LeaseLost, NotFound
from bpm.retry import RetryPolicy
from bpm.runtime.external import FetchRequest, FinishKind
from bpm.runtime.failure import Failure, fail_external
from bpm.runtime.records import ExternalTask, Incident, Token
from bpm.runtime.states import (
    RUNNING_INSTANCE_STATES,
    BlockKind,
    IncidentState,
    InstanceState,
    TaskState,
    TokenState,
)
from bpm.runtime.variables import overlay
from bpm.runtime.work import InstanceWork
from bpm.store import external_tasks as store
from bpm.store import history as history_store
from bpm.store import tokens as token_store
from bpm.store.work import scope_chains

log = logging.getLogger("bpm.external_tasks")

MAX_LOCK_MS = 365 * 24 * 3600 * 1000
_CLOSED = (TaskState.COMPLETED, TaskState.CANCELLED)


EXPIRED_PER_FETCH = 32
"""At least this many lost locks of its topics are counted before a fetch takes tasks."""


def not_found(task_id: str) -> NotFound:
    return NotFound(f"External task with id {task_id} does not exist")


def _check_duration(ms: Any, what: str) -> int:
    if isinstance(ms, bool) or not isinstance(ms, int):
        raise InvalidOperation(f"{what} must be an integer number of milliseconds")
    if ms <= 0:
        raise InvalidOperation(f"{what} must be greater than 0, got {ms}")
    if ms > MAX_LOCK_MS:
        raise InvalidOperation(f"{what} must be at most {MAX_LOCK_MS} ms (a year)")
    return ms


def check_topic(task: ExternalTask, topics: Collection[str] | None) -> None:
    """:class:`Forbidden` unless ``topics`` (a credential's limit; None: any) has the task's."""
    if topics is not None and task.topic not in topics:
        raise Forbidden(f"may not work on topic '{task.topic}' (external task {task.id})")


# -- fetch and lock ------------------------------------------------------------------------


def fetch_and_lock(
    core: EngineCore, req: FetchRequest, *, now: datetime | None = None
) -> list[ExternalTask]:
    """Lock up to ``req.max_tasks`` free tasks of the requested topics for the worker.

    Returned tasks carry the instance variables (only the requested names, when given).
    """
    if not req.worker_id:
        raise InvalidOperation("workerId is required")
    if req.max_tasks < 0:
        raise InvalidOperation("maxTasks cannot be negative")
    for tp in req.topics:
        if not tp.topic:
            raise InvalidOperation("every topic needs a topicName")
        _check_duration(tp.lock_duration_ms, f"lockDuration of topic '{tp.topic}'")
    at = core.now(now)
    if req.max_tasks > 0 and req.topics:
        # Locks of these topics that ran out are failed attempts: count them first (each
        # is then ready, or an incident), so a fetch never takes a lost lock uncounted.
        # More than maxTasks of them: the fetch then chooses among all by priority and
        # age, not among the few that happened to be counted.
        limit = max(req.max_tasks, EXPIRED_PER_FETCH)
        with core.db.connect() as conn:
            expired = store.expired_locks(conn, at, limit, [tp.topic for tp in req.topics])
        for task_id in expired:
            expire_lock(core, task_id, at)
    with core.tx() as conn:
        tasks = _scope_views(core, conn, store.fetch_and_lock(conn, req, at))
        history_store.append(
            conn,
            [
                history_store.row(
                    task.instance_id,
                    at,
                    [
                        store.task_event(
                            task,
                            "external_task_locked",
                            at,
                            worker=req.worker_id,
                            until=task.lock_expires_at.isoformat()
                            if task.lock_expires_at
                            else None,
                        )
                    ],
                )
                for task in tasks
            ],
        )
    wanted = {tp.topic: tp.variables for tp in req.topics}
    out = []
    for task in tasks:
        names = wanted.get(task.topic)
        if names is not None and task.variables is not None:
            task = replace(task, variables={k: v for k, v in task.variables.items() if k in names})
        out.append(task)
    return out


def _scope_views(
    core: EngineCore, conn: Connection, tasks: list[ExternalTask]
) -> list[ExternalTask]:
    """Tasks inside scopes see their scopes' local variables too (one read each for all)."""
    scoped = [
        x
        for x in tasks
        if x.variables is not None and core.model(conn, x.definition_id).sees_scopes(x.node_id)
    ]
    if not scoped:
        return tasks
    scope_of = token_store.scope_ids(conn, [x.token_id for x in scoped])
    chains = scope_chains(
        conn, {s for s in scope_of.values() if s}, {x.instance_id for x in scoped}
    )
    views = {x.id: overlay(x.variables or {}, chains, scope_of.get(x.token_id)) for x in scoped}
    return [replace(x, variables=views[x.id]) if x.id in views else x for x in tasks]


def next_free_at(
    core: EngineCore, topics: Sequence[str], *, now: datetime | None = None
) -> datetime | None:
    """When a task of ``topics`` next becomes fetchable by time alone (lock expiry, retry)."""
    at = core.now(now)
    with core.db.connect() as conn:
        return store.next_free_at(conn, list(topics), at)


def start_traces(core: EngineCore, instance_ids: Collection[str]) -> dict[str, dict[str, str]]:
    """The trace headers (W3C ``traceparent``/``tracestate``) each instance's start
    recorded in its ``instance_started`` event, by instance id; instances started without
    a tracer are left out. One indexed read per instance."""
    out: dict[str, dict[str, str]] = {}
    with core.db.connect() as conn:
        for instance_id in dict.fromkeys(instance_ids):
            headers = history_store.started_trace(conn, instance_id)
            if headers:
                out[instance_id] = headers
    return out


# -- loading a task for a write -------------------------------------------------------------


def open_task(
    unit: Unit, task_id: str, topics: Collection[str] | None
) -> tuple[InstanceWork, ExternalTask]:
    """Lock the task's instance, then read the task under that lock and check the caller."""
    work = unit.work_of(ExternalTask, task_id)
    if work is None:
        raise not_found(task_id)
    task = work.item(ExternalTask, task_id)
    if task is None:
        raise not_found(task_id)
    check_topic(task, topics)
    return work, task


def repeated(task: ExternalTask, worker_id: str, kind: FinishKind) -> bool:
    """The same worker repeating a report it already made (its response was lost)."""
    return (
        task.state is not TaskState.LOCKED
        and task.finished_by == worker_id
        and task.finish_kind == kind.value
    )


def check_owner(task: ExternalTask, worker_id: str, verb: str, at: datetime) -> None:
    """:class:`LeaseLost` unless ``worker_id`` holds a live lock on the task at ``at``.

    The lease is the only judge: a lock that expired before ``at`` (the database clock at
    the call) is lost, whether or not the reclaimer or a fetch counted it yet, so a late
    report is refused every time, the same way as after another worker took the task."""
    if task.state in _CLOSED:
        raise not_found(task.id)
    owner = task.lock_owner if task.state is TaskState.LOCKED else None
    if owner != worker_id:
        raise LeaseLost(
            f"External Task {task.id} cannot be {verb} by worker '{worker_id}'. "
            f"It is locked by worker '{owner if owner is not None else 'null'}'."
        )
    if not task.is_locked(at):
        expired = task.lock_expires_at.isoformat() if task.lock_expires_at else "unknown"
        raise LeaseLost(
            f"External Task {task.id} cannot be {verb} by worker '{worker_id}'. "
            f"Its lock expired at {expired}; fetch the task again."
        )


def waiting_token(work: InstanceWork, task: ExternalTask) -> Token:
    tok = work.tokens.get(task.token_id)
    if (
        tok is None
        or tok.state is not TokenState.WAITING
        or tok.blocked_kind is not BlockKind.EXTERNAL_TASK
        or tok.blocked_id != task.id
    ):
        raise not_found(task.id)
    if work.instance.state is InstanceState.SUSPENDED:
        raise InvalidOperation(
            f"External task {task.id} belongs to suspended instance {work.instance.id}; "
            "resume the instance first"
        )
    if work.instance.ended:
        raise not_found(task.id)
    return tok


def finished(worker_id: str, kind: FinishKind, now: datetime) -> dict[str, Any]:
    return {
        "lock_owner": None,
        "lock_expires_at": None,
        "finished_by": worker_id,
        "finish_kind": kind.value,
        "updated_at": now,
    }


# -- locks ----------------------------------------------------------------------------------


def _explain_lock_refusal(
    task: ExternalTask | None, task_id: str, worker_id: str, verb: str
) -> Exception:
    if task is None or task.state in _CLOSED:
        return not_found(task_id)
    if task.state is TaskState.LOCKED and task.lock_owner == worker_id:
        return LeaseLost("Cannot extend a lock that expired")
    owner = task.lock_owner if task.state is TaskState.LOCKED else None
    if task.state is TaskState.FAILED:
        return InvalidOperation(f"External task {task_id} has no retries left")
    return LeaseLost(
        f"External Task {task_id} cannot be {verb} by worker '{worker_id}'. "
        f"It is locked by worker '{owner if owner is not None else 'null'}'."
    )


def extend_lock(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    new_duration_ms: int,
    *,
    topics: Collection[str] | None = None,
    now: datetime | None = None,
) -> None:
    """Heartbeat: a live lock held by ``worker_id`` now expires ``new_duration_ms`` from now.

    Not a state change: one conditional UPDATE, no instance lock and no history event."""
    _check_duration(new_duration_ms, "newDuration")
    if not worker_id:
        raise InvalidOperation("workerId is required")
    at = core.now(now)
    with core.tx() as conn:
        task = store.get(conn, task_id)
        if task is not None:
            check_topic(task, topics)
        if store.extend_lock(
            conn, task_id, worker_id, at + timedelta(milliseconds=new_duration_ms), at
        ):
            return
        raise _explain_lock_refusal(store.get(conn, task_id), task_id, worker_id, "extended")


def lock(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    lock_duration_ms: int,
    *,
    topics: Collection[str] | None = None,
    now: datetime | None = None,
) -> None:
    """Lock one task by id for ``worker_id`` (free, or already held by the same worker)."""
    _check_duration(lock_duration_ms, "lockDuration")
    if not worker_id:
        raise InvalidOperation("workerId is required")
    with unit_of_work(core, now) as unit:
        work, task = open_task(unit, task_id, topics)
        at = unit.now
        free = task.state is TaskState.READY and (task.retry_at is None or task.retry_at <= at)
        expired = task.state is TaskState.LOCKED and not task.is_locked(at)
        mine = task.state is TaskState.LOCKED and task.lock_owner == worker_id
        if work.instance.state not in RUNNING_INSTANCE_STATES:
            if work.instance.state is InstanceState.SUSPENDED:
                raise InvalidOperation(f"External task {task_id} belongs to a suspended instance")
            raise not_found(task_id)
        if not (free or expired or mine) or (task.retries is not None and task.retries <= 0):
            raise _explain_lock_refusal(task, task_id, worker_id, "locked")
        until = at + timedelta(milliseconds=lock_duration_ms)
        work.move(
            task,
            TaskState.LOCKED,
            payload={"worker": worker_id, "until": until.isoformat()},
            lock_owner=worker_id,
            worker_id=worker_id,
            lock_expires_at=until,
            updated_at=at,
        )


def check_release(
    task: ExternalTask, may_release: Callable[[str], bool] | None, verb: str, at: datetime
) -> None:
    """:class:`Forbidden` when the task is under a live lock whose holder ``may_release``
    does not allow (None: anyone may): a caller other than the holder (or an operator)
    cannot take a working worker's task away, or set its retries to 0 under it."""
    if may_release is None or not task.is_locked(at) or task.lock_owner is None:
        return
    if not may_release(task.lock_owner):
        until = task.lock_expires_at.isoformat() if task.lock_expires_at else "?"
        raise Forbidden(
            f"may not {verb} external task {task.id}: it is locked by worker "
            f"'{task.lock_owner}' until {until}; only that worker's owner or an operator may"
        )


def unlock(
    core: EngineCore,
    task_id: str,
    *,
    topics: Collection[str] | None = None,
    may_release: Callable[[str], bool] | None = None,
    by: str | None = None,
    record: bool = True,
    now: datetime | None = None,
) -> None:
    """Give a locked task back to ready at once (as in Camunda; a live lock only when
    ``may_release`` allows its holder, see :func:`check_release`); written to the
    operation log (``Unlock``) with ``by``."""
    with unit_of_work(core, now) as unit:
        work, task = open_task(unit, task_id, topics)
        if task.state in _CLOSED:
            raise not_found(task_id)
        check_release(task, may_release, "unlock", unit.now)
        if record:
            oplog.write(unit.conn, unit.now, "Unlock", "ExternalTask", by=by,
                        instance=work.instance,
                        changes=(("externalTaskId", None, task.id),))  # fmt: skip
        if task.state is not TaskState.LOCKED:
            if task.worker_id is not None:  # a failed attempt's worker, kept until now
                work.change(task, event="external_task_unlocked", worker_id=None)
            return
        work.move(
            task,
            TaskState.READY,
            event="external_task_unlocked",
            lock_owner=None,
            worker_id=None,  # only an unlock forgets the worker (as Camunda)
            lock_expires_at=None,
            updated_at=unit.now,
        )
        work.notify.add(task.topic)


def set_retries(
    core: EngineCore,
    task_id: str,
    retries: int,
    *,
    topics: Collection[str] | None = None,
    may_release: Callable[[str], bool] | None = None,
    by: str | None = None,
    now: datetime | None = None,
) -> None:
    """Set the retries left; > 0 resolves a ``failedExternalTask`` incident, 0 opens one
    (of a task under a live lock only when ``may_release`` allows its holder); written to
    the operation log (``SetExternalTaskRetries``) with ``by``."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidOperation("retries must be an integer >= 0")
    with unit_of_work(core, now) as unit:
        work, task = open_task(unit, task_id, topics)
        if task.state in _CLOSED:
            raise not_found(task_id)
        check_release(task, may_release, "set the retries of", unit.now)
        oplog.write(unit.conn, unit.now, "SetExternalTaskRetries", "ExternalTask", by=by,
                    instance=work.instance,
                    changes=(("retries", None if task.retries is None else str(task.retries),
                              str(retries)), ("externalTaskId", None, task.id)))  # fmt: skip
        tok = work.tokens.get(task.token_id)
        at = unit.now
        if retries > 0:
            for incident in work.items_of(Incident, task.token_id):
                if incident.external_task_id == task.id and incident.state is IncidentState.OPEN:
                    work.move(incident, IncidentState.RESOLVED, resolved_at=at)
            if task.state is TaskState.FAILED:
                work.move(task, TaskState.READY, retries=retries, retry_at=None, updated_at=at)
            else:
                work.change(
                    task,
                    event="external_task_retries_set",
                    payload={"retries": retries},
                    retries=retries,
                    updated_at=at,
                )
            work.notify.add(task.topic)
        elif task.state is not TaskState.FAILED and tok is not None:
            work.move(
                task, TaskState.FAILED, retries=0, lock_owner=None, lock_expires_at=None,
                updated_at=at,
            )  # fmt: skip
            work.open_incident(
                tok,
                "failedExternalTask",
                task.error_message or "retries set to 0",
                details=task.error_details,
                external_task_id=task.id,
            )


def reclaim_expired_external_locks(
    core: EngineCore, *, now: datetime | None = None, limit: int = 100
) -> int:
    """Expired locks count as failed attempts (the worker is lost); returns how many."""
    at = core.now(now)
    with core.db.connect() as conn:
        expired = store.expired_locks(conn, at, limit)
    return sum(expire_lock(core, task_id, at) for task_id in expired)


def expire_lock(core: EngineCore, task_id: str, at: datetime) -> bool:
    """The lock of ``task_id`` ran out before ``at``: a failed attempt ("worker lost").

    Retries left (the worker's count, minus one), else the model's RetryPolicy, else the
    default policy (3 attempts) decide whether the task is fetchable again or ends in an
    incident: a task that kills its worker every time does not loop for ever. History
    gets ``external_task_lock_expired``, then the failed attempt. Returns whether the
    lock was still expired under the instance lock (a completion may have come first).
    """
    with unit_of_work(core, at) as unit:
        work = unit.work_of(ExternalTask, task_id)
        task = work.item(ExternalTask, task_id) if work is not None else None
        if work is None or task is None:
            return False
        if task.state is not TaskState.LOCKED or task.is_locked(at):
            return False
        owner = task.lock_owner or "unknown"
        work.record(
            "external_task_lock_expired",
            token_id=task.token_id,
            node_id=task.node_id,
            payload={
                "task": task.id,
                "worker": owner,
                "lock_expires_at": (
                    task.lock_expires_at.isoformat() if task.lock_expires_at else None
                ),
            },
        )
        tok = work.tokens.get(task.token_id)
        if tok is None or work.instance.state is not InstanceState.ACTIVE:
            # Nothing runs in a suspended instance: only the lock is let go.
            work.move(task, TaskState.READY, lock_owner=None, lock_expires_at=None, updated_at=at)
            work.notify.add(task.topic)
            return True
        walker = unit.walker(work)
        node = walker.model.node(task.node_id)
        model_policy = getattr(node, "retry", None)
        retries = task.retries - 1 if task.retries is not None else None
        fail_external(
            walker,
            task,
            tok,
            Failure(error=f"worker lost: lock of {owner} expired", failed_at=at),
            worker_id=owner,
            policy=(
                model_policy if isinstance(model_policy, RetryPolicy) else RetryPolicy.default()
            ),
            retries=max(retries, 0) if retries is not None else None,
            lock_expired=True,
        )
        walker.run()
    log.warning(
        "the lock of external task %s (worker %s) expired: a failed attempt", task_id, owner
    )
    return True


# -- queries --------------------------------------------------------------------------------


def get(core: EngineCore, task_id: str) -> ExternalTask:
    """An open task (ready, locked, or failed with an incident)."""
    with core.db.connect() as conn:
        task = store.get(conn, task_id)
    if task is None or task.state in _CLOSED:
        raise not_found(task_id)
    return task


def query(
    core: EngineCore,
    *,
    topic: str | None = None,
    worker_id: str | None = None,
    instance_id: str | None = None,
    locked: bool | None = None,
    retries_left: bool | None = None,
    task_ids: Sequence[str] | None = None,
    offset: int = 0,
    limit: int | None = None,
    now: datetime | None = None,
) -> list[ExternalTask]:
    """Open tasks matching every given filter, oldest first."""
    at = core.now(now)
    with core.db.connect() as conn:
        return store.query(
            conn,
            now=at,
            topic=topic,
            worker_id=worker_id,
            instance_id=instance_id,
            locked=locked,
            retries_left=retries_left,
            task_ids=task_ids,
            offset=offset,
            limit=limit,
        )


def count(
    core: EngineCore,
    *,
    topic: str | None = None,
    worker_id: str | None = None,
    instance_id: str | None = None,
    locked: bool | None = None,
    retries_left: bool | None = None,
    now: datetime | None = None,
) -> int:
    at = core.now(now)
    with core.db.connect() as conn:
        return store.count(
            conn,
            now=at,
            topic=topic,
            worker_id=worker_id,
            instance_id=instance_id,
            locked=locked,
            retries_left=retries_left,
        )
