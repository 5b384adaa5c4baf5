"""Execution listeners of inline steps, run by the worker in the step's attempt.

A step with listeners runs: its ``start`` listeners, in order; its handler (or Python script); its
``end`` listeners. A node whose own work no worker runs (a user task, an event) gets a step of its
own for its ``start`` listeners (a user task's ``create`` listeners too) before a token enters it:
:func:`listener_step`, then :func:`enter_after_listeners` in the finishing transaction. Each gets
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
from bpm.runtime.failure import IMMEDIATE
from bpm.runtime.records import Token
from bpm.runtime.states import BlockKind, TokenState
from bpm.runtime.walker import Walker
from bpm.scripts import run_step

__all__ = [
    "EVENT_PROPERTY",
    "ListenerFailed",
    "enter_after_listeners",
    "listener_step",
    "run_with_listeners",
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


def _call(registry: HandlerRegistry, listener: n.Listener, ctx: TaskContext) -> dict[str, Any]:
    listening = replace(
        ctx, properties={**ctx.properties, EVENT_PROPERTY: listener.event}, script=listener.script
    )
    try:
        if listener.script is not None:
            return run_step(
                f"the {listener.label} of '{ctx.node_id}'", listener.script, ctx.variables
            )
        spec = registry.get(listener.handler or "")
        return _as_updates(spec.fn(listening))
    except (BpmnError, StepFailed):
        raise  # a BPMN error is thrown at the step; a StepFailed says what comes next
    except Exception as exc:
        raise ListenerFailed(
            f"the {listener.label} of '{ctx.node_id}' failed: {type(exc).__name__}: {exc}"
        ) from exc


def run_with_listeners(
    registry: HandlerRegistry,
    node: n.Activity,
    ctx: TaskContext,
    work: Callable[[TaskContext], Any],
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Run ``node``'s start listeners, ``work`` (the handler) and its end listeners; returns
    the variables to set and the labels of the listeners that ran, in order."""
    updates: dict[str, Any] = {}
    ran: list[str] = []
    current = ctx
    for phase in (("start", "create"), None, ("end",)):
        if phase is None:
            changed = _as_updates(work(current))
        else:
            changed = {}
            for listener in (x for x in node.listeners if x.event in phase):
                changed.update(_call(registry, listener, current))
                ran.append(listener.label)
                current = replace(current, variables={**current.variables, **changed})
        updates.update(changed)
        current = replace(current, variables={**current.variables, **changed})
    return updates, tuple(ran)


def listener_step(node: n.Node) -> n.ServiceTask:
    """The inline step a worker claims to run the listeners of ``node`` (a user task, an
    event: a node whose own work no worker runs) before a token enters it: a stand-in
    service task of the node's id whose handler (``bpm:listeners``) does nothing."""
    return n.ServiceTask(
        node.id, node.name, node.line, handler=LISTENER_STEP, listeners=node.listens_first
    )


def enter_after_listeners(walker: Walker, tok: Token) -> None:
    """The listeners of ``tok``'s node ran (their variables are written): the token enters
    the node now, in the finishing transaction (Executing -> Waiting -> Ready keeps to the
    transition table, as giving a step back does)."""
    work = walker.work
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE))
    ready = work.transition(tok.id, TokenState.READY)
    walker.listened.add(ready.id)
    walker.run([ready.id])
