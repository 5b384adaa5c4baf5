"""Starting instances, reading them, and operator actions on whole instances."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError

from bpm import tracing
from bpm.engine import oplog
from bpm.engine.core import EngineCore
from bpm.engine.unit import Unit, unit_of_work
from bpm.errors import InvalidOperation, NotFound
from bpm.runtime import task_events
from bpm.runtime.calls import terminated_by_operator
from bpm.runtime.records import HistoryEvent, Instance, ProcessDefinition, UserTask
from bpm.runtime.states import (
    LIVE_TOKEN_STATES,
    BlockKind,
    InstanceState,
    TokenState,
    UserTaskState,
)
from bpm.runtime.variable_types import split
from bpm.runtime.work import InstanceWork, check_variables, claim_event
from bpm.store import definitions as defs_store
from bpm.store import history as history_store
from bpm.store import instances as store
from bpm.tracing import AttributeValue


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

    ``start_event`` names the start event (default: the none start event). With a tracer,
    in a span ``bpm.start`` (see :mod:`bpm.tracing`)."""
    if tracing.tracer() is None:
        return _start(core, key, variables, business_key, idempotency_key, now, start_event)
    with tracing.span("bpm.start", _start_attributes(key, business_key)) as span:
        inst = _start(core, key, variables, business_key, idempotency_key, now, start_event)
        if span is not None:
            span.set_attribute("bpm.instance_id", inst.id)
        return inst


def _start_attributes(process: str, business_key: str | None) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {"bpm.process": process}
    if business_key is not None:
        attributes["bpm.business_key"] = business_key
    return attributes


def _start(
    core: EngineCore,
    key: str,
    variables: dict[str, Any] | None,
    business_key: str | None,
    idempotency_key: str | None,
    now: datetime | None,
    start_event: str | None,
) -> Instance:
    cfg = core.config
    clean = check_variables(
        variables,
        cfg.max_variable_bytes,
        min(cfg.max_update_bytes, cfg.max_instance_variable_bytes),
    )
    try:
        with unit_of_work(core, now) as unit:
            if idempotency_key is not None:
                existing = store.by_idempotency_key(unit.conn, idempotency_key)
                if existing is not None:
                    return existing
            definition = defs_store.latest(unit.conn, key)
            if definition is None:
                raise NotFound(f"no process definition with key '{key}' is deployed")
            work = begin_instance(
                unit,
                definition,
                clean,
                business_key=business_key,
                idempotency_key=idempotency_key,
                start_event=start_event,
            )
    except IntegrityError:
        if idempotency_key is None:
            raise
        with core.db.connect() as conn:  # a concurrent start with the same key won
            existing = store.by_idempotency_key(conn, idempotency_key)
        if existing is None:
            raise
        return existing
    return work.instance


def start_definition(
    core: EngineCore,
    definition_id: str,
    variables: dict[str, Any] | None = None,
    *,
    business_key: str | None = None,
    now: datetime | None = None,
    start_event: str | None = None,
) -> Instance:
    """Start this version of a process (Camunda's ``/process-definition/{id}/start``)."""
    if tracing.tracer() is not None:
        attributes = {**_start_attributes("", business_key), "bpm.definition_id": definition_id}
        with tracing.span("bpm.start", attributes) as span:
            inst = _start_definition(core, definition_id, variables, business_key, now, start_event)
            if span is not None:
                span.set_attribute("bpm.instance_id", inst.id)
                span.set_attribute("bpm.process", inst.definition_key)
            return inst
    return _start_definition(core, definition_id, variables, business_key, now, start_event)


def _start_definition(
    core: EngineCore,
    definition_id: str,
    variables: dict[str, Any] | None,
    business_key: str | None,
    now: datetime | None,
    start_event: str | None,
) -> Instance:
    cfg = core.config
    clean = check_variables(
        variables,
        cfg.max_variable_bytes,
        min(cfg.max_update_bytes, cfg.max_instance_variable_bytes),
    )
    with unit_of_work(core, now) as unit:
        definition = defs_store.by_id(unit.conn, definition_id)
        if definition is None:
            raise NotFound(f"no process definition with id '{definition_id}' is deployed")
        work = begin_instance(
            unit, definition, clean, business_key=business_key, start_event=start_event
        )
    return work.instance


def begin_instance(
    unit: Unit,
    definition: ProcessDefinition,
    variables: dict[str, Any],
    *,
    business_key: str | None = None,
    idempotency_key: str | None = None,
    start_event: str | None = None,
) -> InstanceWork:
    """A new instance of ``definition`` in ``unit``, advanced to its first wait states
    (written when the unit of work ends)."""
    if definition.suspended:
        raise InvalidOperation(
            f"process definition '{definition.key}' is suspended: activate it to start instances"
        )
    model = unit.model(definition.id)
    first_node = model.initial_start(start_event)
    at = unit.now
    plain, types = split(variables)
    inst = Instance(
        id=str(uuid.uuid4()),
        definition_id=definition.id,
        definition_key=definition.key,
        state=InstanceState.ACTIVE,
        variables=plain,
        variable_types=types,
        created_at=at,
        updated_at=at,
        business_key=business_key,
        idempotency_key=idempotency_key,
    )
    work = unit.new(inst)
    payload: dict[str, Any] = {
        "definition": definition.id,
        "business_key": business_key,
        "variables": sorted(variables),
    }
    if len(model.start_events) > 1:
        payload["start_event"] = first_node.id
    if work.history_values:
        payload["values"] = plain
    tracer = tracing.tracer()
    if tracer is not None:
        # the start's trace (W3C headers), for the steps whose message brings none: after
        # a retry's backoff, a timer, a publish the sweeper made again (bpm.engine.traced)
        headers = tracer.inject(tracer.current())
        if headers:
            payload["trace"] = headers
    work.record("instance_started", payload=payload)
    unit.walker(work).begin(first_node.id)
    return work


def get(core: EngineCore, instance_id: str) -> Instance:
    with core.db.connect() as conn:
        inst = store.get(conn, instance_id)
    if inst is None:
        raise NotFound(f"process instance {instance_id} does not exist")
    return inst


def history(core: EngineCore, instance_id: str) -> list[HistoryEvent]:
    """The stored events, then the claim of each step still executing (a claim is stored
    with its attempt's outcome)."""
    with core.db.connect() as conn:
        inst = store.get(conn, instance_id)
        if inst is None:
            raise NotFound(f"process instance {instance_id} does not exist")
        events = history_store.events_of(conn, instance_id)
    running = [claim_event(t) for t in inst.tokens if t.state is TokenState.EXECUTING]
    return events + [replace(e, seq=len(events) + i) for i, e in enumerate(running, start=1)]


def user_tasks(
    core: EngineCore,
    *,
    instance_id: str | None = None,
    state: str | None = "open",
    node_id: str | None = None,
    assignee: str | None = None,
) -> list[UserTask]:
    with core.db.connect() as conn:
        return store.user_tasks(
            conn, instance_id=instance_id, state=state, node_id=node_id, assignee=assignee
        )


def complete_user_task(
    core: EngineCore,
    task_id: str,
    variables: dict[str, Any] | None = None,
    *,
    now: datetime | None = None,
) -> Instance:
    """Complete an open user task: merge ``variables`` and move its token on; returns the
    instance as this transaction left it."""
    check_variables(variables, core.config.max_variable_bytes, core.config.max_update_bytes)
    with unit_of_work(core, now) as unit:
        work = unit.work_of(UserTask, task_id)
        task = work.item(UserTask, task_id) if work else None  # read under the lock
        if work is None or task is None:
            raise NotFound(f"user task {task_id} does not exist")
        if task.state is not UserTaskState.OPEN or work.instance.ended:
            raise NotFound(f"user task {task_id} is {task.state.value}, not open")
        tok = work.tokens.get(task.token_id)
        walker = unit.walker(work)
        node = walker.model.node(task.node_id)
        # A task whose listeners run (or are queued) has its token Ready, Executing or Failed
        queued = bool(task.listening) and tok is not None and tok.state in LIVE_TOKEN_STATES
        if tok is None or (tok.blocked_kind is not BlockKind.USER_TASK and not queued):
            raise InvalidOperation(f"user task {task_id} is no longer waiting")
        if work.instance.state is InstanceState.SUSPENDED:
            raise InvalidOperation(
                f"instance {work.instance.id} is suspended; resume it before completing tasks"
            )
        if node.listens_to_task and task_events.completes_on_worker(node, task):
            # Its listeners run on a worker, which completes it (bpm.engine.task_listeners)
            task_events.check_open_for_change(task)
            task_events.queue(walker, task, "complete", variables=dict(variables or {}))
            return work.instance
        walker.write_variables(tok, variables)
        work.move(task, UserTaskState.COMPLETED, completed_at=unit.now)
        task_events.closed(walker, tok)
        walker.leave(tok)
        walker.run()
    return work.instance


def _assign(
    core: EngineCore, task_id: str, user_id: str | None, *, claim: bool, now: datetime | None
) -> UserTask:
    with unit_of_work(core, now) as unit:
        work = unit.work_of(UserTask, task_id)
        task = work.item(UserTask, task_id) if work else None
        if work is None or task is None or task.state is not UserTaskState.OPEN:
            raise NotFound(f"user task {task_id} does not exist or is not open")
        if claim and task.assignee not in (None, user_id):
            raise InvalidOperation(
                f"Cannot claim task '{task_id}': task is already claimed by someone else."
            )
        task_events.check_open_for_change(task)
        if task.assignee != user_id:
            was = task.assignee
            task = work.change(
                task,
                event="user_task_claimed" if user_id else "user_task_unclaimed",
                payload={"user": user_id} if user_id else {},
                assignee=user_id,
            )
            task = task_events.assigned(unit.walker(work), task, was)
    return task


def claim_user_task(
    core: EngineCore, task_id: str, user_id: str, *, now: datetime | None = None
) -> UserTask:
    """Assign an open user task to ``user_id`` unless someone else has it already."""
    if not user_id:
        raise InvalidOperation("a user id is needed to claim a task")
    return _assign(core, task_id, user_id, claim=True, now=now)


def unclaim_user_task(core: EngineCore, task_id: str, *, now: datetime | None = None) -> None:
    """Remove the assignee of an open user task."""
    _assign(core, task_id, None, claim=False, now=now)


def terminate(
    core: EngineCore,
    instance_id: str,
    *,
    reason: str = "terminated by operator",
    by: str | None = None,
    annotation: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """End an instance and everything it called; a called instance's caller gets an
    incident at its call activity (retry it to call again, or terminate the caller).
    Written to the operation log (``Delete``) with ``by`` and ``annotation``."""
    with unit_of_work(core, now) as unit:
        work = unit.work(instance_id)
        if work.instance.ended:
            raise InvalidOperation(f"instance {instance_id} is already {work.instance.state.value}")
        oplog.write(unit.conn, unit.now, "Delete", "ProcessInstance", by=by,
                    instance=work.instance, annotation=annotation,
                    changes=(("deleteReason", None, reason),))  # fmt: skip
        walker = unit.walker(work)
        walker.terminate_all(reason)
        work.set_state(InstanceState.TERMINATED, reason=reason)
        if work.instance.parent_id is not None:
            terminated_by_operator(walker, reason)
    return work.instance


def suspend(
    core: EngineCore,
    instance_id: str,
    *,
    by: str | None = None,
    annotation: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """Stop handing out work for this instance (steps in flight may still finish);
    written to the operation log (``Suspend``) with ``by``."""
    with unit_of_work(core, now) as unit:
        work = unit.work(instance_id)
        if work.instance.state is not InstanceState.ACTIVE:
            raise InvalidOperation(
                f"instance {instance_id} is {work.instance.state.value}; only an active "
                "instance can be suspended"
            )
        work.set_state(InstanceState.SUSPENDED)
        oplog.write(unit.conn, unit.now, "Suspend", "ProcessInstance", by=by,
                    instance=work.instance, annotation=annotation,
                    changes=(("suspensionState", None, "suspended"),))  # fmt: skip
    return work.instance


def resume(
    core: EngineCore,
    instance_id: str,
    *,
    by: str | None = None,
    annotation: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """Activate a suspended instance; written to the operation log (``Activate``)."""
    with unit_of_work(core, now) as unit:
        work = unit.work(instance_id)
        if work.instance.state is not InstanceState.SUSPENDED:
            raise InvalidOperation(
                f"instance {instance_id} is {work.instance.state.value}, not suspended"
            )
        work.set_state(InstanceState.ACTIVE)
        oplog.write(unit.conn, unit.now, "Activate", "ProcessInstance", by=by,
                    instance=work.instance, annotation=annotation,
                    changes=(("suspensionState", None, "active"),))  # fmt: skip
        work.to_dispatch.extend(t.id for t in work.live_tokens() if t.state is TokenState.READY)
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
