"""Task listeners of an open user task, run by a worker: the events queued on the task
(:mod:`bpm.runtime.task_events`: ``assignment``, ``update``, ``complete``, ``timeout``) in
one step of the task's token, claimed as an inline step is.

The claim sees a Ready token at a user task whose task is open and has events queued:
the step is :func:`task_listener_step` (a stand-in service task of the user task's id) with
the task as it was claimed. :func:`run_task_listeners` runs, outside any transaction, the
listeners of each queued event in order, each with the step's
:class:`~bpm.handlers.TaskContext` (``ctx.task`` the task, ``ctx.properties["bpm:listenerEvent"]``
the event, ``ctx.variables`` as the previous listener left them; a ``complete`` adds the
completion's variables first, as Camunda sets them before its complete listeners). What they
return is written when the step finishes, with what they set on the task
(``ctx.set_assignee``, ``ctx.update_task``); :func:`finish_task_listeners` then completes
the task (a ``complete`` ran), or lets the token wait on the task again (or run the events
queued meanwhile).

A listener that raises fails the attempt: nothing of it is written, the task stays open, the
step's retry policy decides (Zeebe's ``retries``, else 3 attempts) and the last failure is an
incident on the user task; retrying the incident runs the queued events again. So a
failing ``complete`` listener fails the completion, as in Camunda, except that the API call
that asked for it has already returned (listeners never run in the API process): the
completion is done, or not, by the worker. ``ctx.deny(reason)`` in a ``complete`` listener
denies the completion (Zeebe's ``deny``): the task stays open, nothing of that completion is
written, no incident.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from bpm.errors import BpmnError, CompletionDenied, StepFailed
from bpm.handlers import LISTENER_STEP, TASK_FIELDS, HandlerRegistry, TaskContext
from bpm.model import nodes as n
from bpm.retry import RetryPolicy
from bpm.runtime import task_events
from bpm.runtime.failure import IMMEDIATE
from bpm.runtime.records import Token, UserTask
from bpm.runtime.states import BlockKind, TokenState, UserTaskState
from bpm.runtime.walker import Walker
from bpm.scripts import run_step

__all__ = [
    "TaskListened",
    "finish_task_listeners",
    "run_task_listeners",
    "task_listener_step",
    "task_view",
]

EVENT_PROPERTY = "bpm:listenerEvent"
TASK_VARIABLE = "task"
"""The name a Python task listener script sees the task by (a dict; what it changes in
``task["assignee"]``... applies to the task, and ``task`` is not written as a variable)."""

MAX_TEXT = 255


@dataclass(frozen=True)
class TaskListened:
    """What a task listener step did: the last queued event it handled (``seq``), the task
    fields its listeners set, whether a ``complete`` ran (``completed``) or was denied
    (``denied``: the reason)."""

    seq: int = 0
    changes: Mapping[str, Any] = field(default_factory=dict)
    completed: bool = False
    denied: str | None = None
    events: tuple[str, ...] = ()


class TaskListenerFailed(Exception):
    """A task listener raised, or set something a task cannot hold."""


def listened_by(tasks: list[UserTask], tok: Token) -> UserTask | None:
    """Of the tasks read for claimed steps, the one whose listeners ``tok`` runs: its open
    task, or the cancelled task of its parent whose delete listeners it runs (the task with
    only that event queued)."""
    for task in tasks:
        if task.token_id == tok.id and task.state is UserTaskState.OPEN:
            return task
    for task in tasks:
        if (
            task.token_id == tok.parent_id
            and task.state is UserTaskState.CANCELLED
            and task_events.runs_delete_of(task, tok.id)
        ):
            return _deleting(task, tok)
    return None


def _deleting(task: UserTask, tok: Token) -> UserTask:
    return replace(
        task,
        listening=tuple(e for e in task.listening if e.get("token") == tok.id),
    )


def task_listener_step(node: n.Node, task: UserTask) -> n.ServiceTask:
    """The inline step a worker claims to run the listeners of ``task``'s queued events:
    a stand-in service task of the user task's id (handler ``bpm:listeners``, which does
    nothing) whose retry policy is the fewest Zeebe ``retries`` among them, if any."""
    listeners = tuple(x for entry in task.listening for x in task_events.listeners_of(node, entry))
    counts = [x.retries for x in listeners if x.retries is not None]
    return n.ServiceTask(
        node.id,
        node.name,
        node.line,
        handler=LISTENER_STEP,
        listeners=listeners,
        retry=RetryPolicy(max_attempts=min(counts)) if counts else None,
    )


def task_view(task: UserTask, event: str) -> dict[str, Any]:
    """The task as a listener sees it (JSON values)."""
    return {
        "id": task.id,
        "event": event,
        "name": task.name,
        "assignee": task.assignee,
        "owner": task.owner,
        "description": task.description,
        "priority": task.priority,
        "candidate_groups": list(task.candidate_groups),
        "candidate_users": list(task.candidate_users),
        "due_at": task.due_at.isoformat() if isinstance(task.due_at, datetime) else None,
        "created_at": task.created_at.isoformat(),
    }


def _checked(changes: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if name not in TASK_FIELDS:
            raise TaskListenerFailed(f"{where} cannot set the task's {name}")
        if name == "priority":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TaskListenerFailed(f"{where} set the priority to {value!r}: an integer")
            if not -(2**31) <= value < 2**31:
                raise TaskListenerFailed(f"{where} set the priority out of 32-bit range")
        elif value is not None:
            if not isinstance(value, str):
                raise TaskListenerFailed(f"{where} set the task's {name} to {value!r}: text")
            limit = 4000 if name == "description" else MAX_TEXT
            if len(value) > limit:
                raise TaskListenerFailed(
                    f"{where} set the task's {name} longer than {limit} characters"
                )
        out[name] = value
    return out


def _call(
    registry: HandlerRegistry,
    listener: n.Listener,
    ctx: TaskContext,
    view: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run one listener: (variables to set, task fields to set)."""
    where = f"the {listener.label} of '{ctx.node_id}'"
    try:
        if listener.script is not None:
            updates = run_step(where, listener.script, {**ctx.variables, TASK_VARIABLE: view})
            seen = updates.pop(TASK_VARIABLE, view)
            if not isinstance(seen, Mapping):
                raise TaskListenerFailed(f"{where} set task to {seen!r}: keep it a dict")
            changed = {k: seen.get(k) for k in TASK_FIELDS if seen.get(k) != view.get(k)}
            return updates, _checked(changed, where)
        listening = replace(
            ctx,
            properties={**ctx.properties, EVENT_PROPERTY: listener.event},
            task=view,
            task_changes={},
        )
        spec = registry.get(listener.handler or "")
        result = spec.fn(listening)
        if result is not None and not isinstance(result, Mapping):
            raise TypeError(
                f"variables must be a JSON object (a dict), not {type(result).__name__}"
            )
        return dict(result or {}), _checked(listening.task_changes, where)
    except (BpmnError, StepFailed, CompletionDenied, TaskListenerFailed):
        raise
    except Exception as exc:
        raise TaskListenerFailed(f"{where} failed: {type(exc).__name__}: {exc}") from exc


def run_task_listeners(
    registry: HandlerRegistry, node: n.Node, task: UserTask, ctx: TaskContext
) -> tuple[dict[str, Any], tuple[str, ...], TaskListened]:
    """Run the listeners of ``task``'s queued events, oldest first, up to and including a
    ``complete``; returns the variables to set, the labels of the listeners that ran and
    what the step did to the task. Raises what a listener raised (the attempt fails)."""
    updates: dict[str, Any] = {}
    ran: list[str] = []
    changes: dict[str, Any] = {}
    variables = dict(ctx.variables)
    last = 0
    events: list[str] = []
    for entry in task.listening:
        event = str(entry["event"])
        # A complete sees the completion's variables first; they are the completion's own.
        given = dict(entry.get("variables") or {}) if event == "complete" else {}
        these: dict[str, Any] = dict(given)
        mine: dict[str, Any] = {}
        seen = {**variables, **given}
        try:
            for listener in task_events.listeners_of(node, entry):
                view = task_view(replace(task, **{**changes, **mine}), event)
                if event == "assignment":  # the assignee this event set, as it happened
                    view["assignee"] = entry.get("user")
                out, task_set = _call(registry, listener, replace(ctx, variables=dict(seen)), view)
                these.update(out)
                seen.update(out)
                mine.update(task_set)
                ran.append(listener.label)
        except CompletionDenied as exc:
            if event != "complete":
                raise TaskListenerFailed(
                    f"a {event} listener of '{ctx.node_id}' denied: only a complete "
                    "listener may deny the completion"
                ) from None
            last = int(entry["seq"])
            events.append("complete denied")
            return (
                updates,
                tuple(ran),
                TaskListened(last, changes, False, exc.reason, tuple(events)),
            )
        updates.update(these)
        variables.update(these)
        changes.update(mine)
        last = int(entry["seq"])
        events.append(event)
        if event == "complete":
            return updates, tuple(ran), TaskListened(last, changes, True, None, tuple(events))
    return updates, tuple(ran), TaskListened(last, changes, False, None, tuple(events))


def finish_task_listeners(walker: Walker, tok: Token, task_id: str, did: TaskListened) -> None:
    """The listeners ran and their variables are written (this transaction): apply their
    task changes, drop the events handled, then complete the task and move the token on
    (a ``complete`` ran), or make it run the events queued meanwhile, or wait on the task."""
    work = walker.work
    task = work.item(UserTask, task_id)
    assert task is not None  # the token held the lease: its task is as it left it
    if task.state is UserTaskState.CANCELLED:  # its delete listeners ran: the token ends
        work.change(
            task,
            event="task_listeners_done",
            payload={"events": list(did.events)},
            listening=tuple(e for e in task.listening if e.get("token") != tok.id),
        )
        work.transition(tok.id, TokenState.COMPLETED)
        return
    left = tuple(e for e in task.listening if int(e.get("seq", 0)) > did.seq)
    if did.changes:
        changed = {k: v for k, v in did.changes.items() if getattr(task, k) != v}
        if changed:
            task = work.change(
                task,
                event="user_task_updated",
                payload={"fields": sorted(changed), "by": "listener", "events": list(did.events)},
                **changed,
            )
    if did.denied is not None:
        work.record(
            "user_task_completion_denied",
            token_id=tok.id,
            node_id=tok.node_id,
            payload={"user_task": task.id, "reason": did.denied},
        )
    if did.completed:
        work.move(task, UserTaskState.COMPLETED, completed_at=work.now, listening=())
        task_events.closed(walker, tok)
        walker.leave(tok)
        return
    task = work.change(
        task, event="task_listeners_done", payload={"events": list(did.events)}, listening=left
    )
    if left:
        # Executing -> Waiting -> Ready keeps to the transition table (as giving a step back)
        work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE))
        work.transition(tok.id, TokenState.READY)
        work.to_dispatch.append(tok.id)
    else:
        work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.USER_TASK, task.id))
