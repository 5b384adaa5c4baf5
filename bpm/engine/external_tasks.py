"""External tasks: fetch-and-lock, complete, failure, BPMN errors, locks, retries, queries.

Every write that moves a token loads the instance under its lock first (``core.load``), then
re-reads the task row, checks the lock owner, changes tokens through :class:`Flow` and flushes,
all in ONE transaction. Complete, failure and BPMN error are idempotent for the worker that
made them: a repeat answers OK and changes nothing (``finished_by`` / ``finish_kind``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation, LeaseLost, NotFound
from bpm.model import nodes as n
from bpm.retry import FailureAction, RetryPolicy
from bpm.runtime.advance import Flow
from bpm.runtime.external import ExternalTask, FetchRequest, FinishKind, TaskState
from bpm.runtime.failure import catching_boundary, take_error_boundary
from bpm.runtime.records import Token
from bpm.runtime.states import BlockKind, InstanceState, TokenState
from bpm.runtime.work import InstanceWork, check_variables
from bpm.store import external_tasks as store

log = logging.getLogger("bpm.external_tasks")

MAX_LOCK_MS = 365 * 24 * 3600 * 1000


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
    with core.tx() as conn:
        tasks = store.fetch_and_lock(conn, req, at)
    wanted = {tp.topic: tp.variables for tp in req.topics}
    out = []
    for task in tasks:
        names = wanted.get(task.topic)
        if names is not None and task.variables is not None:
            task = _with_variables(task, {k: v for k, v in task.variables.items() if k in names})
        out.append(task)
    return out


def _with_variables(task: ExternalTask, variables: dict[str, Any]) -> ExternalTask:
    from dataclasses import replace

    return replace(task, variables=variables)


def next_free_at(
    core: EngineCore, topics: Sequence[str], *, now: datetime | None = None
) -> datetime | None:
    """When a task of ``topics`` next becomes fetchable by time alone (lock expiry, retry)."""
    at = core.now(now)
    with core.db.connect() as conn:
        return store.next_free_at(conn, list(topics), at)


# -- loading a task for a write -------------------------------------------------------------


def _load(
    core: EngineCore, conn: Connection, task_id: str, at: datetime
) -> tuple[InstanceWork, ExternalTask]:
    """Instance lock first, then the task row (re-read under the lock)."""
    first = store.get(conn, task_id)
    if first is None:
        raise not_found(task_id)
    work = core.load(conn, first.instance_id, at)
    task = store.get(conn, task_id, for_update=True)
    if task is None:
        raise not_found(task_id)
    return work, task


def _repeated(task: ExternalTask, worker_id: str, kind: FinishKind) -> bool:
    """The same worker repeating a report it already made (its response was lost)."""
    return (
        task.state is not TaskState.LOCKED
        and task.finished_by == worker_id
        and task.finish_kind == kind.value
    )


def _check_owner(task: ExternalTask, worker_id: str, verb: str) -> None:
    if task.state in (TaskState.COMPLETED, TaskState.CANCELLED):
        raise not_found(task.id)
    owner = task.lock_owner if task.state is TaskState.LOCKED else None
    if owner != worker_id:
        raise LeaseLost(
            f"External Task {task.id} cannot be {verb} by worker '{worker_id}'. "
            f"It is locked by worker '{owner if owner is not None else 'null'}'."
        )


def _waiting_token(work: InstanceWork, task: ExternalTask) -> Token:
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


def _finish_row(
    work: InstanceWork,
    task: ExternalTask,
    worker_id: str,
    kind: FinishKind,
    state: TaskState,
    **values: Any,
) -> None:
    work.update_rows(
        "external_task",
        {"id": task.id},
        state=state.value,
        lock_owner=None,
        lock_expires_at=None,
        finished_by=worker_id,
        finish_kind=kind.value,
        updated_at=work.now,
        **values,
    )


# -- complete, failure, bpmn error ----------------------------------------------------------


def complete(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    variables: dict[str, Any] | None = None,
    local_variables: dict[str, Any] | None = None,
    *,
    now: datetime | None = None,
) -> None:
    """Complete a task locked by ``worker_id``: merge variables and move the token on.

    Local variables have no scope of their own here: they are merged like ``variables``.
    """
    at = core.now(now)
    updates = {
        **check_variables(local_variables, core.config.max_variable_bytes),
        **check_variables(variables, core.config.max_variable_bytes),
    }
    with core.tx() as conn:
        # the instance lock first, then check the lock owner and mark the task completed
        work, task = store.lock_and_finish(
            conn,
            task_id,
            worker_id,
            at,
            max_variable_bytes=core.config.max_variable_bytes,
            state=TaskState.COMPLETED.value,
            finish_kind=FinishKind.COMPLETE.value,
        )
        if task is None:
            current = store.get(conn, task_id)
            if current is None:
                raise not_found(task_id)
            if _repeated(current, worker_id, FinishKind.COMPLETE):
                return
            _check_owner(current, worker_id, "completed")
            raise not_found(task_id)
        tok = _waiting_token(work, task)
        model = core.model(conn, work.instance.definition_id)
        work.merge_variables(updates, source=task.node_id, token_id=task.token_id)
        work.record(
            "external_task_completed",
            token_id=tok.id,
            node_id=tok.node_id,
            payload={"task": task.id, "worker": worker_id},
        )
        flow = Flow(work, model)
        flow.leave(tok)
        flow.run(())
        core.flush(conn, work)
    core.dispatch(work.to_dispatch)


def _policy(
    core: EngineCore, conn: Connection, work: InstanceWork, task: ExternalTask
) -> RetryPolicy | None:
    node = core.model(conn, work.instance.definition_id).node(task.node_id)
    if isinstance(node, n.ServiceTask) and isinstance(node.retry, RetryPolicy):
        return node.retry
    return None


def handle_failure(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    error_message: str | None,
    error_details: str | None = None,
    retries: int | None = None,
    retry_timeout_ms: int | None = None,
    *,
    now: datetime | None = None,
) -> None:
    """A worker reports that its attempt failed.

    With ``retries`` (Camunda semantics) the task gets that many retries left and is not
    fetchable for ``retry_timeout_ms``; 0 retries opens a ``failedExternalTask`` incident.
    Without ``retries``, the model's RetryPolicy decides when there is one; otherwise
    missing retries count as 0, as in Camunda.
    """
    if retries is not None and retries < 0:
        raise InvalidOperation("retries cannot be negative")
    if retry_timeout_ms is not None and retry_timeout_ms < 0:
        raise InvalidOperation("retryTimeout cannot be negative")
    at = core.now(now)
    with core.tx() as conn:
        work, task = _load(core, conn, task_id, at)
        if _repeated(task, worker_id, FinishKind.FAILURE):
            return
        _check_owner(task, worker_id, "failed")
        tok = _waiting_token(work, task)
        model = core.model(conn, work.instance.definition_id)
        flow = Flow(work, model)
        attempt = task.attempt + 1
        message = error_message or "external task failed"
        policy = _policy(core, conn, work, task) if retries is None else None
        work.record(
            "attempt_failed",
            token_id=tok.id,
            node_id=tok.node_id,
            payload={
                "task": task.id,
                "worker": worker_id,
                "attempt": attempt,
                "error": message,
                "details": error_details,
            },
        )
        fields: dict[str, Any] = {
            "error_message": message,
            "error_details": error_details,
            "attempt": attempt,
        }
        if policy is not None:
            if policy.has_attempt_after(attempt):
                delay = policy.delay(attempt, work.instance.id, task.node_id)
                _retry_later(work, task, worker_id, policy.max_attempts - attempt, delay, fields)
            else:
                _policy_exhausted(
                    flow, work, task, tok, policy, worker_id, message, error_details, fields
                )
        else:
            left = retries if retries is not None else 0
            if left > 0:
                _retry_later(
                    work,
                    task,
                    worker_id,
                    left,
                    timedelta(milliseconds=retry_timeout_ms or 0),
                    fields,
                )
            else:
                _open_incident(work, task, tok, worker_id, message, error_details, fields)
        flow.run(())
        core.flush(conn, work)
    core.dispatch(work.to_dispatch)


def _retry_later(
    work: InstanceWork,
    task: ExternalTask,
    worker_id: str,
    retries: int,
    delay: timedelta,
    fields: dict[str, Any],
) -> None:
    retry_at = work.now + delay if delay > timedelta(0) else None
    _finish_row(
        work,
        task,
        worker_id,
        FinishKind.FAILURE,
        TaskState.READY,
        retries=retries,
        retry_at=retry_at,
        **fields,
    )
    work.record(
        "external_task_retry",
        token_id=task.token_id,
        node_id=task.node_id,
        payload={
            "task": task.id,
            "retries": retries,
            "retry_at": retry_at.isoformat() if retry_at else None,
        },
    )
    work.notify.add(task.topic)


def _open_incident(
    work: InstanceWork,
    task: ExternalTask,
    tok: Token,
    worker_id: str,
    message: str,
    details: str | None,
    fields: dict[str, Any],
) -> None:
    """No retries left: the task stays (not fetchable), its token waits, an incident opens."""
    _finish_row(
        work,
        task,
        worker_id,
        FinishKind.FAILURE,
        TaskState.FAILED,
        retries=0,
        retry_at=None,
        **fields,
    )
    work.open_incident(
        tok, "failedExternalTask", message, details=details, external_task_id=task.id
    )


def _policy_exhausted(
    flow: Flow,
    work: InstanceWork,
    task: ExternalTask,
    tok: Token,
    policy: RetryPolicy,
    worker_id: str,
    message: str,
    details: str | None,
    fields: dict[str, Any],
) -> None:
    """The model's policy has no attempt left: error boundary, failed instance, or incident."""
    work.record(
        "step_failed",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={"error": message, "details": details, "attempts": fields["attempt"]},
    )
    boundary = catching_boundary(flow, tok.node_id, None)
    if boundary is not None:
        take_error_boundary(flow, tok, boundary, message, None)
        _finish_row(
            work, task, worker_id, FinishKind.FAILURE, TaskState.CANCELLED, retries=0, **fields
        )
        return
    if policy.on_exhausted is FailureAction.FAIL:
        flow.terminate_all(f"external task {task.node_id} failed")
        work.set_state(InstanceState.FAILED, node=task.node_id, error=message)
        _finish_row(
            work, task, worker_id, FinishKind.FAILURE, TaskState.FAILED, retries=0, **fields
        )
        return
    _open_incident(work, task, tok, worker_id, message, details, fields)


def handle_bpmn_error(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    error_code: str,
    error_message: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
    now: datetime | None = None,
) -> None:
    """A business error: to the matching error boundary event, else the activity just ends.

    As in Camunda, an uncaught BPMN error ends the token at the activity without following
    its outgoing flows.
    """
    if not error_code:
        raise InvalidOperation("errorCode is required")
    at = core.now(now)
    updates = check_variables(variables, core.config.max_variable_bytes)
    with core.tx() as conn:
        work, task = _load(core, conn, task_id, at)
        if _repeated(task, worker_id, FinishKind.BPMN_ERROR):
            return
        _check_owner(task, worker_id, "reported with a BPMN error")
        tok = _waiting_token(work, task)
        model = core.model(conn, work.instance.definition_id)
        flow = Flow(work, model)
        work.merge_variables(updates, source=task.node_id, token_id=task.token_id)
        boundary = catching_boundary(flow, tok.node_id, error_code)
        work.record(
            "external_task_bpmn_error",
            token_id=tok.id,
            node_id=tok.node_id,
            payload={
                "task": task.id,
                "worker": worker_id,
                "error_code": error_code,
                "message": error_message,
                "caught_by": boundary.id if boundary else None,
            },
        )
        if boundary is not None:
            take_error_boundary(flow, tok, boundary, error_message or error_code, error_code)
        else:
            flow.cancel_boundaries(tok)
            work.transition(
                tok.id, TokenState.COMPLETED, payload={"bpmn_error": error_code, "uncaught": True}
            )
        _finish_row(
            work,
            task,
            worker_id,
            FinishKind.BPMN_ERROR,
            TaskState.COMPLETED,
            error_message=error_message,
        )
        flow.run(())
        core.flush(conn, work)
    core.dispatch(work.to_dispatch)


# -- locks ----------------------------------------------------------------------------------


def _explain_lock_refusal(
    task: ExternalTask | None, task_id: str, worker_id: str, verb: str, at: datetime
) -> Exception:
    if task is None or task.state in (TaskState.COMPLETED, TaskState.CANCELLED):
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
    now: datetime | None = None,
) -> None:
    """Set the lock expiry to now + ``new_duration_ms`` (the lock must be live and ours)."""
    _check_duration(new_duration_ms, "newDuration")
    if not worker_id:
        raise InvalidOperation("workerId is required")
    at = core.now(now)
    with core.tx() as conn:
        if store.extend_lock(
            conn, task_id, worker_id, at + timedelta(milliseconds=new_duration_ms), at
        ):
            return
        raise _explain_lock_refusal(store.get(conn, task_id), task_id, worker_id, "extended", at)


def lock(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    lock_duration_ms: int,
    *,
    now: datetime | None = None,
) -> None:
    """Lock one task by id for ``worker_id`` (free, or already held by the same worker)."""
    _check_duration(lock_duration_ms, "lockDuration")
    if not worker_id:
        raise InvalidOperation("workerId is required")
    at = core.now(now)
    with core.tx() as conn:
        if store.lock(conn, task_id, worker_id, at + timedelta(milliseconds=lock_duration_ms), at):
            task = store.get(conn, task_id)
            assert task is not None
            store.record_events(
                conn, [_lock_event(task, "external_task_locked", {"worker": worker_id}, at)]
            )
            return
        task = store.get(conn, task_id)
        if task is not None and task.suspended:
            raise InvalidOperation(f"External task {task_id} belongs to a suspended instance")
        raise _explain_lock_refusal(task, task_id, worker_id, "locked", at)


def unlock(core: EngineCore, task_id: str, *, now: datetime | None = None) -> None:
    """Give a locked task back to ready at once (anyone may unlock, as in Camunda)."""
    at = core.now(now)
    with core.tx() as conn:
        task = store.unlock(conn, task_id, at)
        if task is None:
            current = store.get(conn, task_id)
            if current is None or current.state in (TaskState.COMPLETED, TaskState.CANCELLED):
                raise not_found(task_id)
            return
        store.record_events(conn, [_lock_event(task, "external_task_unlocked", {}, at)])
        store.notify_topics(conn, [task.topic])


def _lock_event(
    task: ExternalTask, type_: str, payload: dict[str, Any], at: datetime
) -> dict[str, Any]:
    return {
        "instance_id": task.instance_id,
        "token_id": task.token_id,
        "node_id": task.node_id,
        "type": type_,
        "from_state": None,
        "to_state": None,
        "payload": {"task": task.id, **payload},
        "at": at,
    }


def set_retries(
    core: EngineCore, task_id: str, retries: int, *, now: datetime | None = None
) -> None:
    """Set the retries left; > 0 resolves a ``failedExternalTask`` incident, 0 opens one."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidOperation("retries must be an integer >= 0")
    at = core.now(now)
    with core.tx() as conn:
        work, task = _load(core, conn, task_id, at)
        if task.state in (TaskState.COMPLETED, TaskState.CANCELLED):
            raise not_found(task_id)
        tok = work.tokens.get(task.token_id)
        if retries > 0:
            values: dict[str, Any] = {"retries": retries, "updated_at": at}
            if task.state is TaskState.FAILED:
                values.update(state=TaskState.READY.value, retry_at=None)
                for incident_id in store.open_incident_ids(conn, task_id):
                    work.update_rows(
                        "incident", {"id": incident_id}, state="resolved", resolved_at=at
                    )
                    work.record(
                        "incident_resolved",
                        token_id=task.token_id,
                        node_id=task.node_id,
                        payload={"incident": incident_id, "task": task.id},
                    )
            work.update_rows("external_task", {"id": task.id}, **values)
            work.notify.add(task.topic)
        elif task.state is not TaskState.FAILED and tok is not None:
            _open_incident(
                work,
                task,
                tok,
                task.finished_by or "operator",
                task.error_message or "retries set to 0",
                task.error_details,
                {"attempt": task.attempt},
            )
        work.record(
            "external_task_retries_set",
            token_id=task.token_id,
            node_id=task.node_id,
            payload={"task": task.id, "retries": retries},
        )
        core.flush(conn, work)


def reclaim_expired_external_locks(
    core: EngineCore, *, now: datetime | None = None, limit: int = 100
) -> int:
    """Return expired locks to ready (a history event each) and wake long pollers."""
    at = core.now(now)
    with core.tx() as conn:
        reclaimed = store.reclaim_expired(conn, at, limit)
        store.record_events(
            conn,
            [
                _lock_event(task, "external_task_lock_expired", {"worker": owner}, at)
                for task, owner in reclaimed
            ],
        )
        store.notify_topics(conn, [task.topic for task, _ in reclaimed])
    return len(reclaimed)


# -- queries --------------------------------------------------------------------------------


def get(core: EngineCore, task_id: str) -> ExternalTask:
    """An open task (ready, locked, or failed with an incident)."""
    with core.db.connect() as conn:
        task = store.get(conn, task_id)
    if task is None or task.state in (TaskState.COMPLETED, TaskState.CANCELLED):
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
