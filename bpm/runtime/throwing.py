"""BPMN errors and escalations: found by the nearest catcher around the thrower, across
scopes and calls.

An error or escalation (a code) thrown at a token is caught, nearest first, by: a boundary
event of its kind on the token's own activity; an event sub-process of its kind in the
scope around it; a boundary event of that scope's activity (a sub-process, or a
multi-instance body); and so on outwards to the process; then, in a called instance, at
the call activity of its caller. A catcher with the code wins over a catch-all (no code)
of the same place. An interrupting boundary event ends its activity (and everything inside
it); an interrupting event sub-process ends the rest of its scope. Errors always
interrupt; an escalation catcher may not (``cancelActivity="false"``,
``isInterrupting="false"``): its path then runs beside the activity. What nobody catches
is left to the thrower: an error end event ends its path like a none end event, a failed
step takes its retry policy's failure action, an escalation is only recorded.

A failure without a code (a step out of attempts) is caught only by its own activity's
error boundary events, as before scopes existed: it is a technical failure, not a BPMN
error, and an incident is the place for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, cast

from bpm.errors import BpmError
from bpm.model import nodes as n
from bpm.runtime import scopes
from bpm.runtime import variables as v
from bpm.runtime.calls import pass_outputs, waiting_caller
from bpm.runtime.records import Token
from bpm.runtime.states import ScopeKind

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

__all__ = ["Catcher", "EventKind", "catching_boundary", "find", "throw"]


class EventKind(StrEnum):
    """What is thrown: the catchers of one kind never catch the other."""

    ERROR = "error"
    ESCALATION = "escalation"


@dataclass(frozen=True)
class Catcher:
    """Where an error or escalation is caught: a boundary event of ``token``'s activity,
    or the start event of an event sub-process in ``region`` (None: the process)."""

    walker: Walk
    token: Token
    boundary: n.BoundaryEvent | None = None
    start: n.StartEvent | None = None
    region: str | None = None

    @property
    def node(self) -> n.BoundaryEvent | n.StartEvent:
        """The catching event."""
        found = self.boundary or self.start
        assert found is not None
        return found

    @property
    def interrupting(self) -> bool:
        if self.boundary is not None:
            return self.boundary.cancel_activity
        return self.start is None or self.start.interrupting


def _boundary_code(b: n.BoundaryEvent, kind: EventKind) -> tuple[bool, str | None]:
    """Whether ``b`` catches ``kind`` at all, and which code (None: every code)."""
    if kind is EventKind.ERROR:
        return b.is_error, b.error_code
    return b.escalation, b.escalation_code


def catching_boundary(
    walker: Walk, node_id: str, error_code: str | None, kind: EventKind = EventKind.ERROR
) -> n.BoundaryEvent | None:
    """The boundary event of ``node_id`` that catches ``error_code`` (an error, or an
    escalation), if any."""
    catch_all = None
    for b in walker.model.boundaries.get(node_id, ()):
        catches, code = _boundary_code(b, kind)
        if not catches:
            continue
        if code is None:
            catch_all = catch_all or b
        elif error_code is not None and code == error_code:
            return b
    return catch_all


def _start_code(trigger: n.StartEvent, kind: EventKind) -> tuple[bool, str | None]:
    if kind is EventKind.ERROR:
        return trigger.error_start, trigger.error_code
    return trigger.escalation_start, trigger.escalation_code


def _event_start(
    walker: Walk, container: str | None, code: str, kind: EventKind, skip: str | None = None
) -> n.StartEvent | None:
    """The start event of an event sub-process of ``container`` that catches ``code`` (one
    with the code wins over a catch-all), but not of ``skip`` (the one it came from)."""
    catch_all = None
    for esp in walker.model.event_subprocesses(container):
        if esp.id == skip:
            continue
        trigger = walker.model.trigger_of(esp.id)
        if trigger is None:
            continue
        catches, wanted = _start_code(trigger, kind)
        if not catches:
            continue
        if wanted == code:
            return trigger
        if wanted is None:
            catch_all = catch_all or trigger
    return catch_all


def _own_boundary(walker: Walk, tok: Token, code: str | None, kind: EventKind) -> Catcher | None:
    """A boundary event of the token's activity; an inner instance's are the body's."""
    work = walker.work
    if scopes.is_inner(work, tok):
        inner = work.scope(scopes.outer_scope_id(work, tok) or "")
        body = work.scope(inner.parent_id or "") if inner else None
        opener = work.tokens.get(body.token_id or "") if body else None
        if opener is None:
            return None
        tok = opener
    found = catching_boundary(walker, tok.node_id, code, kind)
    return Catcher(walker, tok, boundary=found) if found else None


def find(
    walker: Walk, tok: Token, code: str | None, kind: EventKind = EventKind.ERROR
) -> Catcher | None:
    """The nearest catcher of ``code`` thrown at ``tok`` (see the module docstring)."""
    found = _own_boundary(walker, tok, code, kind)
    if found is not None or code is None:
        return found
    work = walker.work
    scope_id = scopes.outer_scope_id(work, tok)
    # Leaving an event sub-process, that one is passed over (it would catch its own error
    # for ever); the other event sub-processes of its parent scope may catch it, as in
    # Camunda 7 (EscalationEventSubprocessTest.testThrowEscalationEventToEventSubprocess).
    leaving: str | None = None
    while True:
        region = scopes.region_of(work, scope_id)
        if region is None or region.kind in (ScopeKind.SUBPROCESS, ScopeKind.EVENT_SUBPROCESS):
            container = region.node_id if region else None
            start = _event_start(walker, container, code, kind, skip=leaving)
            if start is not None:
                return Catcher(walker, tok, start=start, region=region.id if region else None)
        leaving = None
        if region is None:
            break
        if region.kind in (ScopeKind.SUBPROCESS, ScopeKind.MULTI_INSTANCE):
            opener = work.tokens.get(region.token_id or "")
            if opener is None:
                break
            found = _own_boundary(walker, opener, code, kind)
            if found is not None:
                return found
            scope_id = scopes.outer_scope_id(work, opener)
        else:
            leaving = region.node_id if region.kind is ScopeKind.EVENT_SUBPROCESS else None
            scope_id = region.parent_id
    inst = work.instance
    if inst.parent_id is None or walker.relatives is None:
        return None
    caller = walker.relatives.walker_of(inst.parent_id)
    call = waiting_caller(caller, inst.id, inst.parent_token_id) if caller else None
    if caller is None or call is None:
        return None
    return find(caller, call, code, kind)


def throw(
    walker: Walk,
    tok: Token,
    code: str | None,
    message: str,
    kind: EventKind = EventKind.ERROR,
) -> Catcher | None:
    """Throw ``code`` at ``tok``; the catcher, or None when nothing catches it (the
    caller decides what that means)."""
    catcher = find(walker, tok, code, kind)
    if catcher is None:
        if kind is EventKind.ESCALATION:  # not caught: it still passed every caller
            _outputs_on_the_way(walker, None)
        return None
    at = catcher.walker
    if at is not walker:
        _outputs_on_the_way(walker, at)
    values = caught_values(catcher.node, tok, code, message, kind)
    if catcher.boundary is not None:
        take_boundary(at, catcher.token, catcher.boundary, values, message)
    else:
        assert catcher.start is not None
        if values:
            v.write(at.work, at.model, catcher.region, values, source=catcher.start.id)
        if catcher.start.interrupting:
            reason = f"{kind.value} {code} caught by {catcher.start.container}"
            scopes.stop_inside(at, catcher.region, reason)
        at.hooks.start_event_subprocess(
            at, catcher.start, catcher.region, parent_token=catcher.token.id
        )
    if at is not walker:
        at.run()
    return catcher


def _outputs_on_the_way(thrower: Walk, catcher: Walk | None) -> None:
    """An error or escalation caught in a calling instance (``catcher``; None: an
    escalation nobody catches, which goes up to the root): each call activity it passes on
    the way up passes its child's outputs first (``camunda:out``), as Camunda 7 does (its
    ``OutputVariablesPropagator``), so the catcher's path sees them. A mapping that fails
    passes nothing (the event is still caught)."""
    cur: Walk | None = thrower
    while cur is not None and cur is not catcher and cur.relatives is not None:
        inst = cur.work.instance
        caller = cur.relatives.walker_of(inst.parent_id) if inst.parent_id else None
        call = waiting_caller(caller, inst.id, inst.parent_token_id) if caller else None
        if caller is None or call is None:
            return
        # a token waiting for a called instance is at a call activity
        node = cast(n.CallActivity, caller.model.node(call.node_id))
        with suppress(BpmError):
            pass_outputs(caller, call, node, cur.work.instance.variables)
        cur = caller


def caught_values(
    catcher: n.BoundaryEvent | n.StartEvent,
    tok: Token,
    code: str | None,
    message: str,
    kind: EventKind,
) -> dict[str, Any]:
    """The variables a caught error or escalation sets: for an error ``error_message``,
    ``error_code`` and ``error_node``; and the catcher's own code and message variables
    (``camunda:errorCodeVariable``, ``errorMessageVariable``, ``escalationCodeVariable``)."""
    values: dict[str, Any] = {}
    if kind is EventKind.ERROR:
        values = {"error_message": message, "error_code": code, "error_node": tok.node_id}
    if catcher.code_variable:
        values[catcher.code_variable] = code
    if catcher.message_variable:
        values[catcher.message_variable] = message
    return values


def take_boundary(
    walker: Walk,
    tok: Token,
    boundary: n.BoundaryEvent,
    values: Mapping[str, Any],
    error: str,
) -> None:
    """Continue on the boundary's path with ``values`` written where the activity sits;
    an interrupting boundary ends the activity first, a non-interrupting one leaves it
    running."""
    w = walker.work
    outer = scopes.outer_scope_id(w, tok)
    if values:
        v.write(w, walker.model, outer, values, source=boundary.id, token_id=tok.id)
    if boundary.cancel_activity:
        walker.stop_token(w.token(tok.id), payload={"caught_by": boundary.id, "error": error})
        w.to_dispatch[:] = [x for x in w.to_dispatch if x != tok.id]
    new = w.create_token(boundary.id, scope_id=outer, parent_id=tok.id)
    walker.continue_tokens([new])


def take_error_boundary(
    walker: Walk,
    tok: Token,
    boundary: n.BoundaryEvent,
    error: str,
    error_code: str | None,
    values: Mapping[str, Any] | None = None,
) -> None:
    """Interrupt the activity and continue on the boundary's path with the error recorded
    (``error_message``, ``error_code``, ``error_node`` and the boundary's own variables)."""
    found = caught_values(boundary, tok, error_code, error, EventKind.ERROR)
    take_boundary(walker, tok, boundary, values or found, error)
