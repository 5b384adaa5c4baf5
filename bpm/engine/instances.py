"""Starting instances, reading them, and operator actions on whole instances."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation, NotFound
from bpm.runtime.advance import Flow
from bpm.runtime.records import HistoryEvent, Instance, ProcessDefinition, UserTask
from bpm.runtime.states import BlockKind, InstanceState, TokenState
from bpm.runtime.work import InstanceWork, check_variables
from bpm.store import definitions as defs_store
from bpm.store import instances as store
from bpm.store import work as work_store


def start(
    core: EngineCore,
    key: str,
    variables: dict[str, Any] | None = None,
    *,
    business_key: str | None = None,
    idempotency_key: str | None = None,
    now: datetime | None = None,
    start_event: str | None = None,
) -> Instance:
    """Start the latest version of ``key``; a repeated ``idempotency_key`` returns the first.

    ``start_event`` names the start event (default: the none start event)."""
    clean = check_variables(variables, core.config.max_variable_bytes)
    at = core.now(now)
    try:
        with core.tx() as conn:
            if idempotency_key is not None:
                existing = store.by_idempotency_key(conn, idempotency_key)
                if existing is not None:
                    return existing
            definition = defs_store.latest(conn, key)
            if definition is None:
                raise NotFound(f"no process definition with key '{key}' is deployed")
            work = begin_instance(
                core,
                conn,
                definition,
                clean,
                at,
                business_key=business_key,
                idempotency_key=idempotency_key,
                start_event=start_event,
            )
            core.flush(conn, work)
    except IntegrityError:
        if idempotency_key is None:
            raise
        with core.db.connect() as conn:  # a concurrent start with the same key won
            existing = store.by_idempotency_key(conn, idempotency_key)
        if existing is None:
            raise
        return existing
    core.dispatch(work.to_dispatch)
    return work.instance


def begin_instance(
    core: EngineCore,
    conn: Connection,
    definition: ProcessDefinition,
    variables: dict[str, Any],
    at: datetime,
    *,
    business_key: str | None = None,
    idempotency_key: str | None = None,
    start_event: str | None = None,
) -> InstanceWork:
    """A new instance of ``definition`` advanced to its first wait states, not yet
    flushed (the caller flushes it in its transaction and dispatches after commit)."""
    if definition.suspended:
        raise InvalidOperation(
            f"process definition '{definition.key}' is suspended: activate it to start instances"
        )
    model = core.model(conn, definition.id)
    first_node = model.initial_start(start_event)
    inst = Instance(
        id=str(uuid.uuid4()),
        definition_id=definition.id,
        definition_key=definition.key,
        state=InstanceState.ACTIVE,
        variables=variables,
        created_at=at,
        updated_at=at,
        business_key=business_key,
        idempotency_key=idempotency_key,
    )
    work = work_store.new_work(inst, at, max_variable_bytes=core.config.max_variable_bytes)
    payload: dict[str, Any] = {
        "definition": definition.id,
        "business_key": business_key,
        "variables": sorted(variables),
    }
    if len(model.start_events) > 1:
        payload["start_event"] = first_node.id
    work.record("instance_started", payload=payload)
    first = work.create_token(first_node.id, scope_id=None, parent_id=None)
    Flow(work, model).run([first.id])
    return work


def get(core: EngineCore, instance_id: str) -> Instance:
    with core.db.connect() as conn:
        inst = store.get(conn, instance_id)
    if inst is None:
        raise NotFound(f"process instance {instance_id} does not exist")
    return inst


def history(core: EngineCore, instance_id: str) -> list[HistoryEvent]:
    with core.db.connect() as conn:
        if store.get(conn, instance_id, with_tokens=False) is None:
            raise NotFound(f"process instance {instance_id} does not exist")
        return store.history(conn, instance_id)


def user_tasks(
    core: EngineCore,
    *,
    instance_id: str | None = None,
    state: str | None = "open",
    node_id: str | None = None,
    assignee: str | None = None,
) -> list[UserTask]:
    with core.db.connect() as conn:
        rows = store.user_tasks(
            conn, instance_id=instance_id, state=state, node_id=node_id, assignee=assignee
        )
    return [UserTask.from_mapping(r) for r in rows]


def complete_user_task(
    core: EngineCore,
    task_id: str,
    variables: dict[str, Any] | None = None,
    *,
    now: datetime | None = None,
) -> None:
    """Complete an open user task: merge ``variables`` and move its token on."""
    check_variables(variables, core.config.max_variable_bytes)
    at = core.now(now)
    with core.tx() as conn:
        row = store.user_task(conn, task_id)
        if row is None:
            raise NotFound(f"user task {task_id} does not exist")
        work = core.load(conn, row["instance_id"], at)
        if row["state"] != "open" or work.instance.ended:
            raise NotFound(f"user task {task_id} is {row['state']}, not open")
        tok = work.tokens.get(row["token_id"])
        if tok is None or tok.blocked_kind is not BlockKind.USER_TASK:
            raise InvalidOperation(f"user task {task_id} is no longer waiting")
        if work.instance.state is InstanceState.SUSPENDED:
            raise InvalidOperation(
                f"instance {work.instance.id} is suspended; resume it before completing tasks"
            )
        model = core.model(conn, work.instance.definition_id)
        work.merge_variables(variables, source=tok.node_id, token_id=tok.id)
        work.update_rows("user_task", {"id": task_id}, state="completed", completed_at=at)
        work.record(
            "user_task_completed", token_id=tok.id, node_id=tok.node_id, payload={"task": task_id}
        )
        flow = Flow(work, model)
        flow.leave(tok)
        flow.run(())
        core.flush(conn, work)
    core.dispatch(work.to_dispatch)


def claim_user_task(core: EngineCore, task_id: str, user_id: str) -> UserTask:
    """Assign an open user task to ``user_id`` unless someone else has it already."""
    if not user_id:
        raise InvalidOperation("a user id is needed to claim a task")
    with core.tx() as conn:
        if not store.set_user_task_assignee(conn, task_id, user_id, only_if_free_for=user_id):
            row = store.user_task(conn, task_id)
            if row is None or row["state"] != "open":
                raise NotFound(f"user task {task_id} does not exist or is not open")
            raise InvalidOperation(
                f"Cannot claim task '{task_id}': task is already claimed by someone else."
            )
        row = store.user_task(conn, task_id)
    assert row is not None
    return UserTask.from_mapping(row)


def unclaim_user_task(core: EngineCore, task_id: str) -> None:
    """Remove the assignee of an open user task."""
    with core.tx() as conn:
        if not store.set_user_task_assignee(conn, task_id, None, only_if_free_for=None):
            raise NotFound(f"user task {task_id} does not exist or is not open")


def terminate(
    core: EngineCore,
    instance_id: str,
    *,
    reason: str = "terminated by operator",
    now: datetime | None = None,
) -> Instance:
    at = core.now(now)
    with core.tx() as conn:
        work = core.load(conn, instance_id, at)
        if work.instance.ended:
            raise InvalidOperation(f"instance {instance_id} is already {work.instance.state.value}")
        model = core.model(conn, work.instance.definition_id)
        Flow(work, model).terminate_all(reason)
        work.set_state(InstanceState.TERMINATED, reason=reason)
        core.flush(conn, work)
    return work.instance


def suspend(core: EngineCore, instance_id: str, *, now: datetime | None = None) -> Instance:
    """Stop handing out work for this instance (steps in flight may still finish)."""
    at = core.now(now)
    with core.tx() as conn:
        work = core.load(conn, instance_id, at)
        if work.instance.state is not InstanceState.ACTIVE:
            raise InvalidOperation(
                f"instance {instance_id} is {work.instance.state.value}; only an active "
                "instance can be suspended"
            )
        work.set_state(InstanceState.SUSPENDED)
        core.flush(conn, work)
    return work.instance


def resume(core: EngineCore, instance_id: str, *, now: datetime | None = None) -> Instance:
    at = core.now(now)
    with core.tx() as conn:
        work = core.load(conn, instance_id, at)
        if work.instance.state is not InstanceState.SUSPENDED:
            raise InvalidOperation(
                f"instance {instance_id} is {work.instance.state.value}, not suspended"
            )
        work.set_state(InstanceState.ACTIVE)
        ready = [t.id for t in work.live_tokens() if t.state is TokenState.READY]
        core.flush(conn, work)
    core.dispatch(ready)
    return work.instance


def instances(
    core: EngineCore,
    *,
    state: str | None = None,
    definition_key: str | None = None,
    business_key: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[Instance]:
    if state is not None:
        try:
            InstanceState(state)
        except ValueError:
            names = ", ".join(s.value for s in InstanceState)
            raise InvalidOperation(
                f"unknown instance state '{state}'; use one of {names}"
            ) from None
    with core.db.connect() as conn:
        return store.list_instances(
            conn,
            state=state,
            definition_key=definition_key,
            business_key=business_key,
            limit=limit,
            offset=offset,
        )
