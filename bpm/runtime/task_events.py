"""The events of an open user task whose listeners run on a worker (``assignment``,
``update``, ``complete``, ``timeout``; the user task's ``end`` execution listeners run with
``complete``).

Listeners never run where the event happens (an API call, the timer poller): the event is
queued on the task (``UserTask.listening``, oldest first) and the task's token, waiting on the
task, becomes Ready for a worker, as an inline step is (:mod:`bpm.engine.task_listeners` runs
and finishes it). The task stays open meanwhile; a ``complete`` queued this way is done by
the worker's finish, after its listeners, so that a failing one leaves the task open with
nothing of the completion written. A ``timeout`` listener's timer is armed when the task is
created (timer kind ``task_timeout:<listener index>``) and cancelled with the task.
"""

from __future__ import annotations

from typing import Any

from bpm.errors import InvalidOperation
from bpm.model import nodes as n
from bpm.runtime.hooks import TimerHooks, Walk
from bpm.runtime.records import Timer, Token, UserTask
from bpm.runtime.states import BlockKind, TimerState, TokenState, UserTaskState
from bpm.runtime.timers import TIMER_INCIDENT, fire_time
from bpm.timeexpr import TimerError

__all__ = [
    "TIMEOUT_TIMER",
    "TIMER_HOOKS",
    "arm",
    "assigned",
    "cancel_listened",
    "cancelled",
    "check_open_for_change",
    "closed",
    "completes_on_worker",
    "deleting_task",
    "listened_task",
    "listeners_of",
    "open_task",
    "queue",
    "runs_delete_of",
    "told",
    "updated",
]

TIMEOUT_TIMER = "task_timeout"
"""The kind of a timeout task listener's timer, before ``:<index of the listener>``."""


def listeners_of(node: n.Node, entry: dict[str, Any]) -> tuple[n.Listener, ...]:
    """The listeners one queued event runs, in document order: a ``complete`` runs the
    complete task listeners, then the ``end`` execution listeners; a ``timeout`` the one
    listener whose timer fired."""
    event = entry["event"]
    listeners = node.listens_to_task
    if event == "timeout":
        index = entry.get("listener")
        every = getattr(node, "listeners", ())
        return (every[index],) if isinstance(index, int) and 0 <= index < len(every) else ()
    chosen = tuple(x for x in listeners if x.kind == "task" and x.event == event)
    if event in ("complete", "delete"):  # the execution ends either way
        chosen += tuple(x for x in listeners if x.kind == "execution" and x.event == "end")
    return chosen


def completes_on_worker(node: n.Node, task: UserTask) -> bool:
    """Whether completing ``task`` waits for a worker: listeners run first, or earlier
    events' listeners are still queued (they run first, in order)."""
    return bool(task.listening) or bool(listeners_of(node, {"event": "complete"}))


def check_open_for_change(task: UserTask) -> None:
    """:class:`InvalidOperation` when the task is being completed (its complete queued)."""
    if any(e.get("event") == "complete" for e in task.listening):
        raise InvalidOperation(
            f"user task {task.id} is being completed: its complete listeners run on a "
            "worker, after which it is gone"
        )


def queue(walker: Walk, task: UserTask, event: str, **data: Any) -> UserTask:
    """Queue ``event`` on ``task`` (``data`` goes with it: a completion's variables, the
    timeout listener's index) and make its token Ready for a worker if it waits on the
    task (a token already Ready or Executing for earlier events takes it next)."""
    w = walker.work
    seq = max((int(e.get("seq", 0)) for e in task.listening), default=0) + 1
    entry = {"event": event, "seq": seq, **data}
    task = w.change(
        task,
        event="task_listeners_queued",
        payload={"event": event, "seq": seq},
        listening=(*task.listening, entry),
    )
    tok = w.tokens.get(task.token_id)
    if (
        tok is not None
        and tok.state is TokenState.WAITING
        and tok.blocked_kind is BlockKind.USER_TASK
        and tok.blocked_id == task.id
    ):
        w.transition(tok.id, TokenState.READY, payload={"task_event": event})
        w.to_dispatch.append(tok.id)
    return task


def told(walker: Walk, task: UserTask, event: str, **data: Any) -> UserTask:
    """An event happened to ``task`` (an ``assignment``, an ``update``): queue it when the
    task's node listens to it."""
    node = walker.model.node(task.node_id)
    if listeners_of(node, {"event": event, **data}):
        return queue(walker, task, event, **data)
    return task


def assigned(walker: Walk, task: UserTask, was: str | None) -> UserTask:
    """The assignee of ``task`` changed (a claim, an unclaim, a new assignee): its
    ``update`` and then its ``assignment`` listeners run, as in Camunda 7."""
    task = told(walker, task, "update", fields=["assignee"])
    return told(walker, task, "assignment", user=task.assignee, was=was)


def updated(walker: Walk, task: UserTask, fields: list[str], was: str | None) -> UserTask:
    """Fields of ``task`` changed (``PUT /task/{id}``): ``update`` listeners, then
    ``assignment`` ones when the assignee is among them."""
    task = told(walker, task, "update", fields=sorted(fields))
    if "assignee" in fields:
        task = told(walker, task, "assignment", user=task.assignee, was=was)
    return task


def arm(walker: Walk, tok: Token, node: n.UserTask) -> bool:
    """Arm the timers of ``node``'s timeout listeners for the token entering it; False
    when one cannot be computed (the token failed with a timer incident)."""
    planned = []
    for index, listener in enumerate(node.listeners):
        if listener.kind != "task" or listener.event != "timeout" or listener.timer is None:
            continue
        try:
            planned.append(
                (index, fire_time(listener.timer, walker.variables(tok), walker.work.now))
            )
        except TimerError as exc:
            walker.fail_token(
                tok,
                f"timer of the {listener.label} of '{node.id}': {exc}",
                incident_type=TIMER_INCIDENT,
            )
            return False
    for index, fire_at in planned:
        walker.work.add_timer(tok, node.id, f"{TIMEOUT_TIMER}:{index}", fire_at)
    return True


def closed(walker: Walk, tok: Token) -> None:
    """The task of ``tok`` is completed or cancelled: its timeout listeners' timers are."""
    node = walker.model.nodes.get(tok.node_id)
    if node is None or not any(x.event == "timeout" for x in node.listens_to_task):
        return  # nothing armed: no read of the token's timers
    for timer in walker.work.items_of(Timer, tok.id):
        if timer.kind.startswith(TIMEOUT_TIMER) and timer.state is TimerState.PENDING:
            walker.work.move(timer, TimerState.CANCELLED)


def cancel_listened(walker: Walk, tok: Token) -> None:
    """``tok`` is stopped while it runs (or waits to run, or failed running) its task's
    listeners: the open task is cancelled with it."""
    node = walker.model.nodes.get(tok.node_id)
    if node is None or not node.listens_to_task:
        return
    task = open_task(walker, tok)
    if task is not None:
        task = walker.work.move(
            task, UserTaskState.CANCELLED, completed_at=walker.work.now, listening=()
        )
        closed(walker, tok)
        cancelled(walker, tok, task)


def cancelled(walker: Walk, tok: Token, task: UserTask) -> None:
    """``task`` was cancelled with its token (an interrupting boundary event, a
    modification, an event sub-process): its ``delete`` listeners (and the user task's
    ``end`` execution listeners) run on a worker, in a token of their own at the user task
    (child of the ended one, in no scope: the instance does not complete before they ran).
    Not when every token ends (a termination): the instance ends with the task."""
    node = walker.model.nodes.get(task.node_id)
    if walker.terminating or node is None or not listeners_of(node, {"event": "delete"}):
        return
    w = walker.work
    runner = w.create_token(node.id, scope_id=None, parent_id=tok.id)
    seq = max((int(e.get("seq", 0)) for e in task.listening), default=0) + 1
    w.change(
        task,
        event="task_listeners_queued",
        payload={"event": "delete", "seq": seq, "token": runner.id},
        listening=({"event": "delete", "seq": seq, "token": runner.id},),
    )
    w.to_dispatch.append(runner.id)  # created Ready


def deleting_task(walker: Walk, tok: Token) -> UserTask | None:
    """The cancelled task whose delete listeners ``tok`` runs, if it is such a token."""
    if tok.parent_id is None:
        return None
    for task in walker.work.items_of(UserTask, tok.parent_id):
        if task.state is UserTaskState.CANCELLED and runs_delete_of(task, tok.id):
            return task
    return None


def runs_delete_of(task: UserTask, token_id: str) -> bool:
    """Whether ``token_id`` is the token running ``task``'s delete listeners."""
    return any(e.get("event") == "delete" and e.get("token") == token_id for e in task.listening)


def listened_task(walker: Walk, tok: Token) -> UserTask | None:
    """The task whose queued listeners a Ready token at a user task runs: its open task,
    or the cancelled one whose delete listeners it runs."""
    return open_task(walker, tok) or deleting_task(walker, tok)


def open_task(walker: Walk, tok: Token) -> UserTask | None:
    """The open user task of ``tok`` (read once per token and transaction)."""
    for task in walker.work.items_of(UserTask, tok.id):
        if task.state is UserTaskState.OPEN:
            return task
    return None


def _still_waits(walker: Walk, tok: Token, timer: Timer) -> bool:
    return open_task(walker, tok) is not None


def _fire(walker: Walk, tok: Token, timer: Timer) -> None:
    task = open_task(walker, tok)
    if task is not None:
        index = int(timer.kind.partition(":")[2] or -1)
        queue(walker, task, "timeout", listener=index, timer=timer.id)


TIMER_HOOKS = TimerHooks(_still_waits, _fire)
"""What a timeout listener's timer does when due (the registry hands it to the walker)."""
