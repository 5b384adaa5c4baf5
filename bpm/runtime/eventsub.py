"""Event sub-processes: started by their start event inside the scope they are drawn in.

A timer start is armed when the scope is entered: a *listener* token waits at the start
event for a timer of kind ``event_start``. When it fires, an interrupting event
sub-process first ends everything else in the scope (tokens, nested scopes, other
listeners); a non-interrupting one runs beside it, as often as its timer fires (a cycle
re-arms it). An error start has no listener: a thrown error finds it in the model
(:mod:`bpm.runtime.throwing`). Listeners end when their scope completes.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bpm.errors import BpmError
from bpm.model import nodes as n
from bpm.runtime import scopes
from bpm.runtime.messages import listen
from bpm.runtime.records import Scope, Timer, Token
from bpm.runtime.states import BlockKind, ScopeKind, ScopeState, TokenState
from bpm.runtime.timers import TIMER_INCIDENT, cron_spec, cycle_of, fire_time
from bpm.runtime.variables import evaluate, visible, write
from bpm.timeexpr import TimerError, next_cron

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

EVENT_START = "event_start"
"""Timer kind of an event sub-process's timer start."""


def arm(
    walker: Walk, container: str | None, scope_id: str | None, only: Collection[str] | None = None
) -> None:
    """A listener for each event sub-process drawn in ``container`` that a timer, a
    message or a signal starts (``only``: of those event sub-processes, for a migration
    that adds them)."""
    for esp in walker.model.event_subprocesses(container):
        if only is not None and esp.id not in only:
            continue
        trigger = walker.model.trigger_of(esp.id)
        if trigger is not None and trigger.event is not None:
            listen(
                walker,
                walker.work.create_token(trigger.id, scope_id=scope_id, parent_id=None),
                trigger,
            )
            continue
        if trigger is None or trigger.timer is None:
            continue
        listener = walker.work.create_token(trigger.id, scope_id=scope_id, parent_id=None)
        _schedule(walker, listener, trigger, first=True)


def _schedule(walker: Walk, listener: Token, trigger: n.StartEvent, *, first: bool) -> None:
    work = walker.work
    assert trigger.timer is not None
    seen = visible(work, listener.scope_id)
    try:
        fire_at = fire_time(trigger.timer, seen, work.now)
        repeat_left: int | None = None
        interval_ms: int | None = None
        cyclic = trigger.timer.kind is n.TimerKind.CYCLE and not trigger.interrupting
        # A cron repeats by its own rule (the next match, when this one fires).
        if cyclic and cron_spec(trigger.timer, seen) is None:
            repeat, interval = cycle_of(trigger.timer, seen)
            interval_ms = int(interval / timedelta(milliseconds=1))
            repeat_left = None if repeat is None else repeat - 1
    except TimerError as exc:
        walker.fail_token(
            listener, f"timer of start event '{trigger.id}': {exc}", incident_type=TIMER_INCIDENT
        )
        return
    timer = work.add_timer(
        listener,
        trigger.id,
        EVENT_START,
        fire_at,
        repeat_left=repeat_left,
        interval_ms=interval_ms,
    )
    work.transition(
        listener.id,
        TokenState.WAITING,
        blocked=(BlockKind.TIMER, timer.id),
    )


def fire(walker: Walk, listener: Token, timer: Timer) -> None:
    """The timer of an event sub-process's start fired (it is marked fired already)."""
    work = walker.work
    trigger = walker.model.event_start(timer.node_id)
    assert trigger is not None
    region = listener.scope_id
    if trigger.interrupting:
        work.transition(listener.id, TokenState.COMPLETED, payload={"timer": timer.id})
        scopes.stop_inside(walker, region, f"event sub-process {trigger.container} started")
    elif timer.interval_ms is not None and (timer.repeat_left is None or timer.repeat_left > 0):
        # The listener keeps waiting, for the next occurrence (from the due time: no drift).
        nxt = timer.fire_at + timedelta(milliseconds=timer.interval_ms)
        left = None if timer.repeat_left is None else timer.repeat_left - 1
        following = work.add_timer(
            listener, trigger.id, EVENT_START, nxt, repeat_left=left, interval_ms=timer.interval_ms
        )
        work.transition(listener.id, TokenState.READY)
        work.transition(
            listener.id,
            TokenState.WAITING,
            blocked=(BlockKind.TIMER, following.id),
        )
    elif (following_at := _next_cron(walker, listener, trigger, timer)) is not None:
        # A cron: the listener waits for the next match, for as long as the scope runs.
        following = work.add_timer(listener, trigger.id, EVENT_START, following_at)
        work.transition(listener.id, TokenState.READY)
        work.transition(
            listener.id,
            TokenState.WAITING,
            blocked=(BlockKind.TIMER, following.id),
        )
    else:
        work.transition(listener.id, TokenState.COMPLETED, payload={"timer": timer.id})
    start(walker, trigger, region, parent_token=listener.id)


def _next_cron(
    walker: Walk, listener: Token, trigger: n.StartEvent, timer: Timer
) -> datetime | None:
    """The next match of a non-interrupting cron start's cycle, None when it has none (or
    its timer is no cron)."""
    if trigger.timer is None or trigger.timer.kind is not n.TimerKind.CYCLE:
        return None
    try:
        cron = cron_spec(trigger.timer, visible(walker.work, listener.scope_id))
        return None if cron is None else next_cron(cron, max(timer.fire_at, walker.work.now))
    except TimerError:
        return None  # it fired once; a cron with no later match ends here


def start(
    walker: Walk, trigger: n.StartEvent, region: str | None, *, parent_token: str | None
) -> None:
    """Run the event sub-process of ``trigger`` in ``region``: its scope and a token at
    its start event."""
    assert trigger.container is not None
    esp = walker.model.node(trigger.container)
    inputs: dict[str, Any] = {}
    failed: BpmError | None = None
    if isinstance(esp, n.Activity) and esp.inputs:
        try:
            inputs = evaluate(esp.inputs, visible(walker.work, region))
        except BpmError as exc:
            failed = exc
    scope = scopes.open_scope(
        walker.work,
        ScopeKind.EVENT_SUBPROCESS,
        trigger.container,
        parent_id=region,
        token_id=None,
        variables=inputs,
    )
    token = walker.work.create_token(trigger.id, scope_id=scope.id, parent_id=parent_token)
    if failed is not None:  # the start event's token carries the incident
        scopes.fail_mapping(walker, token, failed, "input mapping")
        return
    walker.continue_tokens([token])
    arm(walker, trigger.container, scope.id)


def complete(walker: Walk, scope: Scope) -> None:
    """An event sub-process with no token left: its outputs go to the enclosing scope."""
    work = walker.work
    node = walker.model.node(scope.node_id)
    if isinstance(node, n.Activity) and node.outputs:
        try:
            values = evaluate(node.outputs, visible(work, scope.id))
            write(work, walker.model, scope.parent_id, values, source=node.id)
        except BpmError as exc:
            work.record(
                "output_mapping_failed",
                node_id=node.id,
                payload={"scope": scope.id, "error": str(exc)},
            )
    scopes.close(work, scope, ScopeState.COMPLETED)


def disarm(walker: Walk, scope_id: str | None) -> None:
    """Stop the listeners of a scope that is completing (their timers are cancelled)."""
    for tok in list(walker.work.tokens.values()):
        if tok.scope_id == scope_id and scopes.is_listener(walker, tok):
            walker.stop_token(tok, TokenState.COMPLETED, payload={"scope_completed": True})


def timer_still_waits(walker: Walk, tok: Token, timer: Timer) -> bool:
    """Whether a due timer start still has its listener (the timer hook)."""
    return still_listening(walker, timer)


def still_listening(walker: Walk, timer: Timer) -> bool:
    tok = walker.work.tokens.get(timer.token_id)
    return (
        tok is not None
        and tok.state is TokenState.WAITING
        and tok.blocked_kind is BlockKind.TIMER
        and tok.blocked_id == timer.id
    )
