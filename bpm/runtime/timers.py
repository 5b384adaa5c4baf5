"""Timers in the token model: catch events, boundary timers, and what a fired timer does.

A timer is a persisted row and a reason to wait (DESIGN section 7). This module only
changes an :class:`~bpm.runtime.work.InstanceWork` in memory; the engine's poller
(:mod:`bpm.engine.timers`) finds due rows, locks their instances and calls :func:`apply`.

Kinds of timer rows:

``delay`` / ``date``
    an intermediate timer catch event; the token waits with ``blocked_by = timer``.
``timeout``
    a boundary timer event; ``token_id`` is the activity's token, ``node_id`` the boundary.
``retry_backoff``
    the wait before the next attempt of a failed inline step (see :mod:`bpm.runtime.failure`).
``event_start``
    the timer start of an event sub-process (see :mod:`bpm.runtime.eventsub`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bpm.cron import Cron
from bpm.model import nodes as n
from bpm.runtime.records import Timer, Token
from bpm.runtime.states import BlockKind, TimerState, TokenState
from bpm.runtime.work import InstanceWork
from bpm.timeexpr import (
    TimerError,
    cron_of,
    feel_timer_value,
    is_feel,
    next_cron,
    parse_cycle,
    resolve,
    variable_name,
)

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

log = logging.getLogger("bpm.timers")

T = TokenState

DELAY = "delay"
DATE = "date"
TIMEOUT = "timeout"
RETRY_BACKOFF = "retry_backoff"
EVENT_START = "event_start"
EVENT_GATEWAY = "event_gateway"
KINDS = (DELAY, DATE, TIMEOUT, RETRY_BACKOFF, EVENT_START, EVENT_GATEWAY)

#: Incident type of a timer whose expression could not be used at run time
#: (e.g. ``${deadline}`` is not set); ``retry_incident`` enters the node again.
TIMER_INCIDENT = "failedTimer"


def cycle_of(spec: n.TimerSpec, variables: dict[str, Any]) -> tuple[int | None, timedelta]:
    """``(occurrences, interval)`` of a cycle spec; a ``${var}`` (or ``=FEEL``) must hold
    (give) the cycle text."""
    if is_feel(spec.expression):
        return parse_cycle(feel_timer_value(spec, variables))
    name = variable_name(spec.expression)
    text: Any = spec.expression if name is None else variables.get(name)
    if not isinstance(text, str):
        raise TimerError(
            f"variable '{name}' holds {text!r}; a cycle timer needs text like R3/PT10M"
        )
    return parse_cycle(text)


def cron_spec(spec: n.TimerSpec, variables: dict[str, Any]) -> Cron | None:
    """The cron of a cycle spec written as one (literal or in a ``${var}``), else None."""
    name = variable_name(spec.expression)
    text: Any = spec.expression if name is None else variables.get(name)
    return cron_of(text) if isinstance(text, str) else None


def fire_time(spec: n.TimerSpec, variables: dict[str, Any], now: datetime) -> datetime:
    return resolve(spec, variables, now)


# -- intermediate timer catch event -------------------------------------------------------


def catch_event(walker: Walk, tok: Token, node: n.TimerCatchEvent) -> None:
    """Wait until the timer is due; a date already past (or ``PT0S``) fires at once."""
    w = walker.work
    if node.timer is None:  # validation rejects this; be explicit if a model slips through
        walker.fail_token(
            tok, f"timer event '{node.id}' has no timer definition", incident_type=TIMER_INCIDENT
        )
        return
    try:
        fire_at = fire_time(node.timer, walker.variables(tok), w.now)
    except TimerError as exc:
        walker.fail_token(tok, f"timer of '{node.id}': {exc}", incident_type=TIMER_INCIDENT)
        return
    kind = DATE if node.timer.kind is n.TimerKind.DATE else DELAY
    timer = w.add_timer(tok, node.id, kind, fire_at, record=fire_at > w.now)
    if fire_at <= w.now:
        w.move(
            timer,
            TimerState.FIRED,
            fired_at=w.now,
            payload={"kind": kind, "due": fire_at.isoformat(), "at_once": True},
        )
        walker.leave(tok)
        return
    w.transition(tok.id, T.WAITING, blocked=(BlockKind.TIMER, timer.id))


# -- boundary timers ----------------------------------------------------------------------


def schedule_boundaries(walker: Walk, tok: Token, only: Collection[str] | None = None) -> None:
    """When an activity is entered: one ``timeout`` timer per timer boundary event
    (``only``: of those boundary events, for a migration that adds them).

    Every fire time is resolved before any row is written: if one cannot be (a ``${var}``
    that is not set), the token fails with an incident and no timer is left behind.
    """
    boundaries = [
        b
        for b in walker.model.boundaries.get(tok.node_id, ())
        if b.timer is not None and (only is None or b.id in only)
    ]
    if not boundaries:
        return
    w = walker.work
    seen = walker.variables(tok)
    planned: list[tuple[n.BoundaryEvent, datetime, int | None, int | None]] = []
    for b in boundaries:
        assert b.timer is not None
        try:
            fire_at = fire_time(b.timer, seen, w.now)
            repeat_left: int | None = None
            interval_ms: int | None = None
            if (
                b.timer.kind is n.TimerKind.CYCLE
                and not b.cancel_activity
                and cron_spec(b.timer, seen) is None  # a cron repeats by its own rule
            ):
                repeat, interval = cycle_of(b.timer, seen)
                interval_ms = int(interval / timedelta(milliseconds=1))
                repeat_left = None if repeat is None else repeat - 1
        except TimerError as exc:
            walker.fail_token(
                tok, f"timer of boundary event '{b.id}': {exc}", incident_type=TIMER_INCIDENT
            )
            return
        planned.append((b, fire_at, repeat_left, interval_ms))
    for b, fire_at, repeat_left, interval_ms in planned:
        _schedule_timeout(w, tok, b, fire_at, repeat_left, interval_ms)


def _schedule_timeout(
    w: InstanceWork,
    tok: Token,
    boundary: n.BoundaryEvent,
    fire_at: datetime,
    repeat_left: int | None,
    interval_ms: int | None,
) -> Timer:
    """A pending ``timeout`` timer of a boundary event, and its ``timer_scheduled`` event."""
    return w.add_timer(
        tok,
        boundary.id,
        TIMEOUT,
        fire_at,
        payload={"interrupting": boundary.cancel_activity},
        repeat_left=repeat_left,
        interval_ms=interval_ms,
    )


# -- firing -------------------------------------------------------------------------------


def still_applies(walker: Walk, timer: Timer) -> bool:
    """Whether the token a due timer belongs to still waits for it (else it is stale)."""
    tok = walker.work.tokens.get(timer.token_id)
    if tok is None or tok.state not in (T.CREATED, T.READY, T.EXECUTING, T.WAITING, T.FAILED):
        return False
    if timer.kind in (DELAY, DATE):
        return (
            tok.state is T.WAITING
            and tok.blocked_kind is BlockKind.TIMER
            and tok.blocked_id == timer.id
        )
    if timer.kind == RETRY_BACKOFF:
        return (
            tok.state is T.WAITING
            and tok.blocked_kind is BlockKind.RETRY_BACKOFF
            and tok.blocked_id == timer.id
        )
    if timer.kind == TIMEOUT:
        node = walker.model.nodes.get(timer.node_id)
        return node is not None and node.host == tok.node_id
    # event sub-process starts, gateways, task timeouts (``task_timeout:<listener>``)
    hook = walker.hooks.timers.get(timer.kind.partition(":")[0])
    return hook is not None and hook.still_waits(walker, tok, timer)


def apply(walker: Walk, timer: Timer) -> Timer | None:
    """Fire a due timer (``pending -> fired``) and do what it means for its instance.

    Returns the next occurrence of a cycle (a new pending timer), so a poller catching up
    can fire it in due order in the same transaction. Call :meth:`Walk.run` afterwards
    to continue the tokens it made Ready.
    """
    w = walker.work
    tok = w.token(timer.token_id)
    w.move(
        timer,
        TimerState.FIRED,
        fired_at=w.now,
        payload={"kind": timer.kind, "due": timer.fire_at.isoformat()},
    )
    if timer.kind in (DELAY, DATE):
        tok = w.transition(tok.id, T.READY, payload={"timer": timer.id})
        walker.leave(tok)
    elif timer.kind == RETRY_BACKOFF:
        w.transition(tok.id, T.READY, payload={"timer": timer.id})
        w.to_dispatch.append(tok.id)
    elif timer.kind == TIMEOUT:
        return _boundary_fired(walker, tok, timer)
    elif timer.kind.partition(":")[0] in walker.hooks.timers:  # see still_applies
        walker.hooks.timers[timer.kind.partition(":")[0]].fire(walker, tok, timer)
    else:  # pragma: no cover - rows are written only by this package
        raise ValueError(f"timer {timer.id} has unknown kind {timer.kind!r}")
    return None


def _boundary_fired(walker: Walk, tok: Token, timer: Timer) -> Timer | None:
    w = walker.work
    node = walker.model.boundary_events[timer.node_id]
    following: Timer | None = None
    if node.cancel_activity:
        # Cancels a user/external task and the token's other timers; an Executing inline
        # attempt becomes Terminated, so its late finish no longer matches and is dropped.
        walker.stop_token(tok, payload={"timeout": node.id, "timer": timer.id})
        w.to_dispatch[:] = [x for x in w.to_dispatch if x != tok.id]
    elif timer.interval_ms is not None and (timer.repeat_left is None or timer.repeat_left > 0):
        # From the previous due time, not from now: reminders do not drift.
        nxt = timer.fire_at + timedelta(milliseconds=timer.interval_ms)
        left = None if timer.repeat_left is None else timer.repeat_left - 1
        following = _schedule_timeout(w, tok, node, nxt, left, timer.interval_ms)
    elif node.timer is not None and node.timer.kind is n.TimerKind.CYCLE:
        try:
            cron = cron_spec(node.timer, walker.variables(tok))
            if cron is not None:  # every match, for as long as the activity runs
                nxt = next_cron(cron, max(timer.fire_at, w.now))
                following = _schedule_timeout(w, tok, node, nxt, None, None)
        except TimerError as exc:
            log.warning("cron boundary timer %s of %s: %s", node.id, tok.id, exc)
    new = w.create_token(node.id, scope_id=walker.outer_scope(tok), parent_id=tok.id)
    walker.continue_tokens([new])
    return following
