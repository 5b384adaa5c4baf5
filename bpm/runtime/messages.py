"""Messages and signals in the token model: waits, what a delivery does, and the
event-based gateway.

A wait is a :class:`~bpm.runtime.records.Subscription` (a work item, ``open ->
consumed / cancelled``) of the token that waits:

* a catch event or receive task: the token waits ``blocked_by = message|signal``;
* a boundary event: the activity's token owns one per message or signal boundary;
* an event-based gateway: the gateway's token waits ``blocked_by = event_gateway`` and
  owns one subscription per message/signal event after it (``node_id`` is that event)
  and one timer (kind ``event_gateway``) per timer event after it; the first event
  wins and the others are cancelled in the same transaction;
* an event sub-process's message or signal start: a *listener* token, as for timers
  (:mod:`bpm.runtime.eventsub`).

The engine finds subscriptions with set-based SQL, locks their instances and calls
:func:`deliver`, which re-checks the subscription under the lock: a subscription is
consumed at most once. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from bpm.errors import BpmError
from bpm.expressions import compile_expression
from bpm.model import nodes as n
from bpm.runtime import scopes
from bpm.runtime.records import Subscription, Timer, Token
from bpm.runtime.states import (
    LIVE_TOKEN_STATES,
    BlockKind,
    SubscriptionState,
    TimerState,
    TokenState,
)
from bpm.runtime.timers import TIMER_INCIDENT, fire_time
from bpm.runtime.usertasks import expand_text
from bpm.runtime.work import new_id
from bpm.timeexpr import TimerError

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

T = TokenState
S = SubscriptionState

#: Incident type of a correlation key that could not be evaluated when a wait opened.
MESSAGE_INCIDENT = "failedMessageSubscription"
#: Timer kind of a timer event after an event-based gateway.
GATEWAY_TIMER = "event_gateway"

_BLOCK = {
    n.EventKind.MESSAGE: BlockKind.MESSAGE,
    n.EventKind.SIGNAL: BlockKind.SIGNAL,
    n.EventKind.CONDITIONAL: BlockKind.CONDITION,
}


def key_text(value: Any) -> str:
    """A correlation key value as stored and compared: text as is, anything else as JSON
    (so ``42`` from CEL and ``42`` from a caller match)."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


# -- opening waits ------------------------------------------------------------------------


def subscribe(walker: Walk, tok: Token, node_id: str, ref: n.EventRef) -> Subscription | None:
    """A new open subscription of ``tok``; None (and the token failed with an incident)
    when its correlation key cannot be evaluated."""
    w = walker.work
    name = ref.name
    if "${" in name or "#{" in name:  # ``name-${foo}``: Camunda evaluates it when it opens
        try:
            name = expand_text(name, walker.variables(tok))
        except BpmError as exc:
            walker.fail_token(
                tok, f"{ref.kind.value} name of '{node_id}': {exc}", incident_type=MESSAGE_INCIDENT
            )
            return None
    key: str | None = None
    if ref.correlation_key is not None:
        try:
            key = key_text(compile_expression(ref.correlation_key).evaluate(walker.variables(tok)))
        except BpmError as exc:
            walker.fail_token(
                tok, f"correlation key of '{node_id}': {exc}", incident_type=MESSAGE_INCIDENT
            )
            return None
    return w.add(
        Subscription(
            id=new_id(),
            instance_id=w.instance.id,
            token_id=tok.id,
            node_id=node_id,
            kind=ref.kind.value,
            name=name,
            state=S.OPEN,
            created_at=w.now,
            correlation_key=key,
            definition_id=w.instance.definition_id,
        )
    )


def _wait(walker: Walk, tok: Token, node_id: str, ref: n.EventRef) -> None:
    sub = subscribe(walker, tok, node_id, ref)
    if sub is None:
        return
    payload: dict[str, Any] = {ref.kind.value: sub.name}
    if sub.correlation_key is not None:
        payload["correlation_key"] = sub.correlation_key
    walker.work.transition(tok.id, T.WAITING, blocked=(_BLOCK[ref.kind], sub.id), payload=payload)


def catch_event(walker: Walk, tok: Token, node: n.CatchEvent) -> None:
    """Wait for the message or signal."""
    _wait(walker, tok, node.id, node.event)


def receive_task(walker: Walk, tok: Token, node: n.ReceiveTask) -> None:
    """An activity (it may have boundary events) that waits for its message."""
    if not walker.enter_activity(tok):
        return
    _wait(walker, tok, node.id, node.event)


def listen(walker: Walk, listener: Token, trigger: n.StartEvent) -> None:
    """A listener of an event sub-process's message or signal start waits for it."""
    assert trigger.event is not None
    _wait(walker, listener, trigger.id, trigger.event)


def subscribe_boundaries(walker: Walk, tok: Token, only: Collection[str] | None = None) -> None:
    """When an activity is entered: a subscription per message or signal boundary event
    (``only``: of those boundary events, for a migration that adds them, whatever the
    token's state)."""
    for b in walker.model.boundaries.get(tok.node_id, ()):
        if b.event is None or (only is not None and b.id not in only):
            continue
        if only is None and walker.work.token(tok.id).state is not T.READY:
            continue
        sub = subscribe(walker, tok, b.id, b.event)
        if sub is not None:
            walker.work.record(
                "subscription_opened",
                token_id=tok.id,
                node_id=b.id,
                payload={"subscription": sub.id, b.event.kind.value: sub.name},
            )


def has_event_boundaries(walker: Walk, node_id: str) -> bool:
    return any(b.event is not None for b in walker.model.boundaries.get(node_id, ()))


def cancel_of_token(walker: Walk, tok: Token, *, boundaries_only: bool = False) -> None:
    """Cancel the open subscriptions ``tok`` owns (only those of boundary events)."""
    w = walker.work
    for sub in w.items_of(Subscription, tok.id):
        if sub.state is not S.OPEN:
            continue
        owner = walker.model.nodes.get(sub.node_id)
        if boundaries_only and (owner is None or owner.host is None):
            continue
        w.move(sub, S.CANCELLED)


def cancel(walker: Walk, sub_id: str) -> None:
    """Cancel one open subscription (the token that waited for it ended)."""
    w = walker.work
    sub = w.item(Subscription, sub_id)
    if sub is not None and sub.state is S.OPEN:
        w.move(sub, S.CANCELLED)


# -- the event-based gateway --------------------------------------------------------------


def event_gateway(walker: Walk, tok: Token, node: n.EventBasedGateway) -> None:
    """Open every wait of the race; a timer already due wins at once."""
    w = walker.work
    due: list[tuple[Any, str]] = []
    planned: list[tuple[str, Any]] = []
    for flow in walker.model.outgoing[node.id]:
        target = walker.model.node(flow.target)
        spec = n.timer_of(target)
        if spec is not None:
            try:
                planned.append((target.id, fire_time(spec, walker.variables(tok), w.now)))
            except TimerError as exc:
                walker.fail_token(
                    tok, f"timer of '{target.id}': {exc}", incident_type=TIMER_INCIDENT
                )
                return
    for flow in walker.model.outgoing[node.id]:
        target = walker.model.node(flow.target)
        if not isinstance(target, n.CatchEvent | n.ReceiveTask):
            continue
        if subscribe(walker, tok, target.id, target.event) is None:
            cancel_of_token(walker, tok)
            return
    for target_id, fire_at in planned:
        timer = w.add_timer(tok, target_id, GATEWAY_TIMER, fire_at, record=fire_at > w.now)
        if fire_at <= w.now:
            due.append((fire_at, timer.id))
    w.transition(tok.id, T.WAITING, blocked=(BlockKind.EVENT_GATEWAY, tok.id))
    if due:
        first = w.item_if_loaded(Timer, min(due)[1])
        assert first is not None
        w.move(first, TimerState.FIRED, fired_at=w.now, payload={"at_once": True})
        gateway_won(walker, w.token(tok.id), first.node_id, {})


def gateway_won(walker: Walk, tok: Token, target_id: str, variables: dict[str, Any]) -> None:
    """The event ``target_id`` after the gateway came first: cancel the other waits, and
    pass the token through the event that won."""
    w = walker.work
    cancel_of_token(walker, tok)
    for timer in w.items_of(Timer, tok.id):
        if timer.kind == GATEWAY_TIMER and timer.state is TimerState.PENDING:
            w.move(timer, TimerState.CANCELLED)
    tok = w.transition(tok.id, T.READY, payload={"won": target_id})
    flows = [f for f in walker.model.outgoing[tok.node_id] if f.target == target_id]
    (event_tok,) = walker.leave(tok, flows[:1])
    if variables:
        walker.write_variables(event_tok, variables)
    walker.leave(event_tok)  # the event happened: its node is passed at once


def gateway_timer_waits(walker: Walk, tok: Token, timer: Timer) -> bool:
    """Whether a due timer of an event-based gateway still races (its timer hook)."""
    return gateway_waits(tok)


def gateway_timer_fired(walker: Walk, tok: Token, timer: Timer) -> None:
    """A timer after an event-based gateway fired first: it wins the race."""
    gateway_won(walker, tok, timer.node_id, {})


def gateway_waits(tok: Token | None) -> bool:
    return (
        tok is not None and tok.state is T.WAITING and tok.blocked_kind is BlockKind.EVENT_GATEWAY
    )


# -- delivery -----------------------------------------------------------------------------


def applies(walker: Walk, sub: Subscription) -> Token | None:
    """The live token an open subscription still belongs to (None: it is stale)."""
    tok = walker.work.tokens.get(sub.token_id)
    if sub.state is not S.OPEN or tok is None or tok.state not in LIVE_TOKEN_STATES:
        return None
    node = walker.model.nodes.get(sub.node_id)
    if tok.blocked_id == sub.id and tok.state is T.WAITING:
        return tok  # a catch event, a receive task, a listener
    if gateway_waits(tok):
        return tok
    if node is not None and node.host == tok.node_id:
        return tok
    return None


def deliver(walker: Walk, sub_id: str, variables: dict[str, Any]) -> bool:
    """Deliver a message or signal to the subscription ``sub_id`` of this instance: False
    when it is no longer open (consumed or cancelled by a transaction that held the lock
    before) or its token no longer waits (then it is cancelled). Call :meth:`Walk.run`
    afterwards."""
    w = walker.work
    sub = w.item(Subscription, sub_id)
    if sub is None or sub.state is not S.OPEN:
        return False
    tok = applies(walker, sub)
    if tok is None:
        w.move(sub, S.CANCELLED, payload={"stale": True})
        return False
    w.move(sub, S.CONSUMED, consumed_at=w.now, payload={sub.kind: sub.name})
    node = walker.model.node(sub.node_id)
    if gateway_waits(tok) and tok.node_id != sub.node_id:
        gateway_won(walker, tok, sub.node_id, variables)
    elif (boundary := walker.model.boundary_events.get(sub.node_id)) is not None:
        _boundary(walker, tok, boundary, variables)
    elif isinstance(node, n.StartEvent):
        _listener(walker, tok, node, variables)
    else:
        tok = w.transition(tok.id, T.READY, payload={sub.kind: sub.name})
        if variables:
            walker.write_variables(tok, variables)
        walker.leave(tok)
    return True


def _boundary(walker: Walk, tok: Token, node: n.BoundaryEvent, variables: dict[str, Any]) -> None:
    w = walker.work
    assert node.event is not None
    if node.cancel_activity:
        walker.stop_token(tok, payload={"boundary": node.id})
        w.to_dispatch[:] = [x for x in w.to_dispatch if x != tok.id]
    else:
        subscribe(walker, tok, node.id, node.event)  # a non-interrupting one listens on
    new = w.create_token(node.id, scope_id=walker.outer_scope(tok), parent_id=tok.id)
    if variables:
        walker.write_variables(new, variables)
    walker.continue_tokens([new])


def _listener(walker: Walk, tok: Token, trigger: n.StartEvent, variables: dict[str, Any]) -> None:
    w = walker.work
    region = tok.scope_id
    if variables:
        walker.write_variables(tok, variables)
    if trigger.interrupting:
        w.transition(tok.id, T.COMPLETED, payload={"triggered": True})
        scopes.stop_inside(walker, region, f"event sub-process {trigger.container} started")
    else:
        w.transition(tok.id, T.READY)
        listen(walker, w.token(tok.id), trigger)  # and waits for the next one
    walker.hooks.start_event_subprocess(walker, trigger, region, parent_token=tok.id)


def signal_throw(walker: Walk, tok: Token, node: n.SignalThrow) -> None:
    """Catch it in this instance now, broadcast it to the others after commit (they are
    locked by their own transactions), and move on unless a catch here ended the thrower.

    Camunda 7 delivers a thrown signal to every subscription at once, its own instance's
    included: left to the broadcast after commit, an event sub-process or boundary event of
    the thrower's own instance would find it moved on or ended."""
    w = walker.work
    signal = node.signal
    if "${" in signal or "#{" in signal:  # ``alert-${x}``: evaluated when it is thrown
        try:
            signal = expand_text(signal, walker.variables(tok))
        except BpmError as exc:
            walker.fail_token(
                tok, f"signal name of '{node.id}': {exc}", incident_type=MESSAGE_INCIDENT
            )
            return
    w.record("signal_thrown", token_id=tok.id, node_id=node.id, payload={"signal": signal})
    w.signals.append((signal, {}, w.instance.id))
    own = sorted(
        (
            sub
            for t in list(w.live_tokens())
            for sub in w.items_of(Subscription, t.id)
            if sub.kind == n.EventKind.SIGNAL.value and sub.name == signal and sub.state is S.OPEN
        ),
        key=lambda sub: (sub.created_at, sub.id),
    )
    for sub in own:
        deliver(walker, sub.id, {})
    tok = w.token(tok.id)
    if tok.state in LIVE_TOKEN_STATES:
        walker.leave(tok)
