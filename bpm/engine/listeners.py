"""Execution listeners, run by the worker in a step's attempt.

A step with listeners runs: the ``take`` listeners of the flow its token came by, its ``start``
listeners, in order; its handler (or Python script); its ``end`` listeners. A node whose own work
no worker runs (a user or external task, an event, a gateway, a sub-process...) gets a step of its
own (:mod:`bpm.runtime.listening` says which): before a token enters it, for the flow's ``take``
listeners, the process's and its ``start`` listeners (a user task's ``create`` listeners too), then
:func:`enter_after_listeners` in the finishing transaction; before the token leaves, for its
``end`` listeners (the process's before the instance completes), then
:func:`leave_after_listeners`. Each gets
the step's :class:`~bpm.handlers.TaskContext` with the variables as the previous one left them
(``ctx.properties["bpm:listenerEvent"]`` says which event) and returns variables to set, as a
handler does; they are written with the handler's when the step finishes, so a listener that fails
fails the whole attempt: nothing of it is written, the step's retry policy decides (the same attempt
count rule as any handler: a lost worker, a redelivered message), and when no attempt is left the
incident is on the element, naming the listener.

Nothing here runs in a transaction, and nothing in the API process: listeners are part of
the inline step a worker claimed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from bpm.errors import BpmnError, StepFailed
from bpm.handlers import LISTENER_STEP, HandlerRegistry, TaskContext
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.retry import RetryPolicy
from bpm.runtime import listening
from bpm.runtime.failure import IMMEDIATE
from bpm.runtime.records import Token
from bpm.runtime.states import BlockKind, TokenState
from bpm.runtime.walker import Walker
from bpm.scripts import run_step

__all__ = [
    "EVENT_PROPERTY",
    "ListenerFailed",
    "enter_after_listeners",
    "finish_listener_step",
    "leave_after_listeners",
    "listener_step",
    "run_with_listeners",
    "step_of",
]

EVENT_PROPERTY = "bpm:listenerEvent"
"""The property a listener's context carries: ``start`` or ``end``."""


class ListenerFailed(Exception):
    """A listener raised: the step's attempt fails with the listener named."""


def _as_updates(result: Any) -> dict[str, Any]:
    if result is None:
        return {}
    if not isinstance(result, Mapping):
        raise TypeError(f"variables must be a JSON object (a dict), not {type(result).__name__}")
    return dict(result)


def _call(
    registry: HandlerRegistry, listener: n.Listener, ctx: TaskContext, flow: str | None
) -> dict[str, Any]:
    listens = replace(
        ctx, properties={**ctx.properties, EVENT_PROPERTY: listener.event}, script=listener.script
    )
    # a take listener belongs to the flow the token came by; the others to the node
    owner = f"flow '{flow}'" if listener.event == "take" and flow else f"'{ctx.node_id}'"
    try:
        if listener.script is not None:
            return run_step(f"the {listener.label} of {owner}", listener.script, ctx.variables)
        spec = registry.get(listener.handler or "")
        return _as_updates(spec.fn(listens))
    except (BpmnError, StepFailed):
        raise  # a BPMN error is thrown at the step; a StepFailed says what comes next
    except Exception as exc:
        raise ListenerFailed(
            f"the {listener.label} of {owner} failed: {type(exc).__name__}: {exc}"
        ) from exc


def run_with_listeners(
    registry: HandlerRegistry,
    node: n.Activity,
    ctx: TaskContext,
    work: Callable[[TaskContext], Any],
    *,
    flow: str | None = None,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Run ``node``'s take listeners (those of ``flow``, the flow its token came by) and
    start listeners, ``work`` (the handler) and its end listeners; returns the variables to
    set and the labels of the listeners that ran, in order."""
    updates: dict[str, Any] = {}
    ran: list[str] = []
    current = ctx
    for phase in (("take", "start", "create"), None, ("end",)):
        if phase is None:
            changed = _as_updates(work(current))
        else:
            changed = {}
            for listener in (x for x in node.listeners if x.event in phase):
                changed.update(_call(registry, listener, current, flow))
                ran.append(listener.label)
                current = replace(current, variables={**current.variables, **changed})
        updates.update(changed)
        current = replace(current, variables={**current.variables, **changed})
    return updates, tuple(ran)


def listener_step(node: n.Node, listeners: tuple[n.Listener, ...] | None = None) -> n.ServiceTask:
    """The inline step a worker claims to run ``listeners`` (by default the start listeners
    of ``node``: a node whose own work no worker runs): a stand-in service task of the
    node's id whose handler (``bpm:listeners``) does nothing. Its retry policy: the fewest
    Zeebe ``retries`` among them, else an external task's own, else the default."""
    chosen = node.listens_first if listeners is None else listeners
    counts = [x.retries for x in chosen if x.retries is not None]
    retry: RetryPolicy | None = getattr(node, "retry", None)
    return n.ServiceTask(
        node.id,
        node.name,
        node.line,
        handler=LISTENER_STEP,
        listeners=chosen,
        retry=RetryPolicy(max_attempts=min(counts)) if counts else retry,
    )


def step_of(model: ProcessModel, node: n.Node, tok: Token) -> n.ServiceTask | None:
    """What a worker runs for the Ready token ``tok`` at ``node``: a listener step, the
    inline task (with the take listeners of the flow its token came by first), or None
    (nothing a worker runs)."""
    state = listening.pending(tok)
    listeners = listening.listeners_of_step(model, node, state)
    if listeners is not None:
        return listener_step(node, listeners)
    task = n.inline_task(node)
    if task is not None and task.runs_listeners:
        take = listening.take_listeners(model, state.via)
        return replace(task, listeners=take + task.listeners) if take else task
    if task is None and node.listens_first:
        return listener_step(node)  # stored before token.listening said which (0019)
    return None


def enter_after_listeners(walker: Walker, tok: Token) -> None:
    """The listeners of ``tok``'s node ran (their variables are written): the token enters
    the node now, in the finishing transaction (Executing -> Waiting -> Ready keeps to the
    transition table, as giving a step back does)."""
    work = walker.work
    via = listening.pending(tok).via  # kept: a parallel join reads the flow it came by
    work.set_listening(tok.id, listening.encode(listening.Pending(via=via)))
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE))
    # attempts count per step: the token's next step (its end listeners) starts afresh
    ready = work.transition(tok.id, TokenState.READY, attempt=0)
    walker.listened.add(ready.id)
    walker.run([ready.id])


def leave_after_listeners(walker: Walker, tok: Token) -> None:
    """The end listeners of ``tok``'s node (or the process's) ran: the token leaves the
    node along the flows chosen before, in the finishing transaction (an end event's
    behaviour runs again; the process's end listeners let the instance complete)."""
    work = walker.work
    state = listening.pending(tok)
    work.set_listening(tok.id, None)
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE))
    ready = work.transition(tok.id, TokenState.READY, attempt=0)
    walker.ended.add(ready.id)
    if state.process == "end":
        walker.process_ended = True
        work.transition(ready.id, TokenState.COMPLETED)
        walker.settle_instance()
        return
    if state.again:  # an end event: its behaviour runs now (its start listeners ran)
        walker.listened.add(ready.id)
        walker.run([ready.id])
        return
    flows = None
    if state.flows is not None:
        by_id = {f.id: f for f in walker.model.outgoing[ready.node_id]}
        flows = [by_id[f] for f in state.flows if f in by_id]
    walker.leave(ready, flows, scope_id=state.scope_id, keep_scope=state.keep_scope)
    walker.run()


def finish_listener_step(walker: Walker, tok: Token) -> None:
    """The listeners of a listener step ran: the token goes on (enters or leaves)."""
    if listening.pending(tok).phase == listening.LAST:
        leave_after_listeners(walker, tok)
    else:
        enter_after_listeners(walker, tok)
