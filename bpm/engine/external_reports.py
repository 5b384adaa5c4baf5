"""External tasks, what workers report: complete (one or several in one transaction),
failure and BPMN error.

Each report is one unit of work: the task's instance is locked and loaded first, the task
read under that lock, the caller's right to it checked (a key limited to topics), the lock
owner checked, then the task and its token change together. A report is idempotent for
the worker that made it: a repeat answers OK and changes nothing (``finished_by`` /
``finish_kind``). Every check comes before any change, so a refusal changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bpm.engine.core import EngineCore
from bpm.engine.external_tasks import (
    check_owner,
    check_topic,
    finished,
    not_found,
    open_task,
    repeated,
    waiting_token,
)
from bpm.engine.unit import Unit, unit_of_work
from bpm.errors import BpmError, InvalidOperation
from bpm.model import nodes as n
from bpm.retry import FailureAction, RetryPolicy
from bpm.runtime.external import FinishKind
from bpm.runtime.failure import Failure, exhausted, fail_external
from bpm.runtime.records import ExternalTask
from bpm.runtime.states import TaskState
from bpm.runtime.throwing import find, throw
from bpm.runtime.work import InstanceWork, check_variables
from bpm.tracing import TraceContext


@dataclass(frozen=True)
class Completion:
    """A worker's complete of one task (see :func:`complete`)."""

    task_id: str
    worker_id: str
    variables: dict[str, Any] | None = None
    local_variables: dict[str, Any] | None = None
    topics: Collection[str] | None = None
    # with a tracer: the context (the REST call's span) to publish the next steps with
    trace: TraceContext | None = None


def complete(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    variables: dict[str, Any] | None = None,
    local_variables: dict[str, Any] | None = None,
    *,
    topics: Collection[str] | None = None,
    now: datetime | None = None,
) -> None:
    """Complete a task locked by ``worker_id``: merge variables and move the token on.

    Local variables have no scope of their own here: they are merged like ``variables``.
    ``topics``: the caller may only touch tasks of these topics (None: any).
    """
    done = Completion(task_id, worker_id, variables, local_variables, topics)
    updates = _updates(core, done)
    with unit_of_work(core, now) as unit:
        work, task = open_task(unit, task_id, topics)
        _complete(unit, work, task, done, updates)


def complete_many(
    core: EngineCore, completions: Sequence[Completion], *, now: datetime | None = None
) -> list[BpmError | None]:
    """Several completes in ONE transaction (the API commits completes that arrive
    together this way): the instances are locked together in id order and every task is
    read in one statement. Returns, per completion, None or the error it alone raised
    (nothing of a refused completion is applied); the others commit.
    """
    results: list[BpmError | None] = [None] * len(completions)
    updates: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for i, done in enumerate(completions):
        try:
            updates.append(_updates(core, done))
        except BpmError as exc:
            results[i] = exc
            updates.append(({}, {}))
    wanted = [i for i, r in enumerate(results) if r is None]
    if not wanted:
        return results
    with unit_of_work(core, now) as unit:
        # the tasks' instances locked (found through the tasks: an instance never
        # changes), then the tasks read under those locks, each adopted by its instance's
        # change set: one round trip for the batch
        owner_of = unit.works_of(ExternalTask, [completions[i].task_id for i in wanted])
        for i in wanted:
            done = completions[i]
            try:
                work = owner_of.get(done.task_id)
                # the task as this batch left it (an earlier completion may have changed it)
                task = work.item_if_loaded(ExternalTask, done.task_id) if work else None
                if work is None or task is None:
                    raise not_found(done.task_id)
                check_topic(task, done.topics)
                _complete(unit, work, task, done, updates[i])
            except BpmError as exc:  # refused before it changed anything (see _complete)
                results[i] = exc
    return results


def _updates(core: EngineCore, done: Completion) -> tuple[dict[str, Any], dict[str, Any]]:
    """(variables, local variables), checked before anything is locked."""
    cfg = core.config
    return (
        check_variables(done.variables, cfg.max_variable_bytes, cfg.max_update_bytes),
        check_variables(done.local_variables, cfg.max_variable_bytes, cfg.max_update_bytes),
    )


def _complete(
    unit: Unit,
    work: InstanceWork,
    task: ExternalTask,
    done: Completion,
    updates: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Every check first (a refusal changes nothing), then the completion: ``variables``
    go where the task's scope says (the nearest scope that has each, else the instance),
    local variables into the scope the task runs in."""
    if repeated(task, done.worker_id, FinishKind.COMPLETE):
        return
    check_owner(task, done.worker_id, "completed", unit.now)
    if done.trace is not None:
        unit.traces[work.instance.id] = done.trace
    tok = waiting_token(work, task)
    walker = unit.walker(work)
    variables, local = updates
    walker.write_variables(tok, local, local=True)
    walker.write_variables(tok, variables)
    work.move(
        task,
        TaskState.COMPLETED,
        payload={"worker": done.worker_id},
        **finished(done.worker_id, FinishKind.COMPLETE, unit.now),
    )
    walker.leave(tok)
    walker.run()


def _policy(unit: Unit, work: InstanceWork, task: ExternalTask) -> RetryPolicy | None:
    node = unit.model(work.instance.definition_id).node(task.node_id)
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
    error_code: str | None = None,
    topics: Collection[str] | None = None,
    now: datetime | None = None,
) -> None:
    """A worker reports that its attempt failed (see :func:`bpm.runtime.failure.fail_external`
    for what the retries count and the model's RetryPolicy decide)."""
    if retries is not None and retries < 0:
        raise InvalidOperation("retries cannot be negative")
    if retry_timeout_ms is not None and retry_timeout_ms < 0:
        raise InvalidOperation("retryTimeout cannot be negative")
    with unit_of_work(core, now) as unit:
        work, task = open_task(unit, task_id, topics)
        if repeated(task, worker_id, FinishKind.FAILURE):
            return
        check_owner(task, worker_id, "failed", unit.now)
        tok = waiting_token(work, task)
        walker = unit.walker(work)
        fail_external(
            walker,
            task,
            tok,
            Failure(
                error=error_message or "external task failed",
                failed_at=unit.now,
                details=error_details,
                error_code=error_code,
            ),
            worker_id=worker_id,
            policy=_policy(unit, work, task),
            retries=retries,
            retry_timeout=(
                timedelta(milliseconds=retry_timeout_ms) if retry_timeout_ms is not None else None
            ),
        )
        walker.run()


def handle_bpmn_error(
    core: EngineCore,
    task_id: str,
    worker_id: str,
    error_code: str,
    error_message: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
    topics: Collection[str] | None = None,
    now: datetime | None = None,
) -> None:
    """A business error, thrown at the task: caught by the nearest matching error
    boundary event or error event sub-process around it (in a called instance, also
    around its call activity: :mod:`bpm.runtime.throwing`), with ``variables`` written
    first and ``error_message`` set.

    Nothing catches it: the task's retry policy's failure action, as when a step runs out
    of attempts (an incident by default; retrying the incident gives the task to a worker
    again). Camunda 7 ends the activity silently there, which hides the mistake.
    """
    if not error_code:
        raise InvalidOperation("errorCode is required")
    cfg = core.config
    updates = check_variables(variables, cfg.max_variable_bytes, cfg.max_update_bytes)
    with unit_of_work(core, now) as unit:
        work, task = open_task(unit, task_id, topics)
        if repeated(task, worker_id, FinishKind.BPMN_ERROR):
            return
        check_owner(task, worker_id, "reported with a BPMN error", unit.now)
        tok = waiting_token(work, task)
        walker = unit.walker(work)
        walker.write_variables(tok, updates)
        catcher = find(walker, tok, error_code)
        message = error_message or error_code
        work.move(
            task,
            TaskState.COMPLETED if catcher is not None else TaskState.FAILED,
            event="external_task_bpmn_error",
            payload={
                "worker": worker_id,
                "error_code": error_code,
                "message": error_message,
                "caught_by": catcher.node.id if catcher else None,
            },
            error_message=error_message,
            **finished(worker_id, FinishKind.BPMN_ERROR, unit.now),
            **({} if catcher is not None else {"retries": 0, "retry_at": None}),
        )
        if catcher is not None:
            throw(walker, work.token(tok.id), error_code, message)
        else:
            policy = _policy(unit, work, task)
            exhausted(
                walker,
                work.token(tok.id),
                policy.on_exhausted if policy is not None else FailureAction.INCIDENT,
                Failure(
                    error=message,
                    failed_at=unit.now,
                    details=f"BPMN error {error_code} was not caught by any error boundary "
                    "or event sub-process",
                    error_code=error_code,
                ),
                attempts=task.attempt + 1,
                external_task_id=task.id,
            )
        walker.run()
