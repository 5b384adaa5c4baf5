"""BPMN errors: found by the nearest catcher around the thrower, across scopes and calls.

An error (a code) thrown at a token is caught, nearest first, by: an error boundary event
of the token's own activity; an error event sub-process of the scope around it; an error
boundary event of that scope's activity (a sub-process, or a multi-instance body); and so
on outwards to the process; then, in a called instance, at the call activity of its
caller. A boundary event interrupts its activity (and everything inside it); an event
sub-process interrupts the rest of its scope. An error nobody catches is left to the
thrower (an error end event then ends its path like a none end event).

A failure without a code (a step out of attempts) is caught only by its own activity's
error boundary events, as before scopes existed: it is a technical failure, not a BPMN
error, and an incident is the place for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bpm.model import nodes as n
from bpm.runtime import scopes
from bpm.runtime import variables as v
from bpm.runtime.calls import waiting_caller
from bpm.runtime.records import Token
from bpm.runtime.states import ScopeKind

if TYPE_CHECKING:
    from bpm.runtime.walker import Walker

__all__ = ["Catcher", "catching_boundary", "find", "throw"]


@dataclass(frozen=True)
class Catcher:
    """Where an error is caught: a boundary event of ``token``'s activity, or the error
    start event of an event sub-process in ``region`` (None: the process)."""

    walker: Walker
    token: Token
    boundary: n.BoundaryEvent | None = None
    start: n.StartEvent | None = None
    region: str | None = None


def catching_boundary(
    walker: Walker, node_id: str, error_code: str | None
) -> n.BoundaryEvent | None:
    """The error boundary event of ``node_id`` that catches ``error_code``, if any."""
    catch_all = None
    for b in walker.model.boundaries.get(node_id, ()):
        if not b.is_error:
            continue
        if b.error_code is None:
            catch_all = catch_all or b
        elif error_code is not None and b.error_code == error_code:
            return b
    return catch_all


def _error_start(walker: Walker, container: str | None, code: str) -> n.StartEvent | None:
    catch_all = None
    for esp in walker.model.event_subprocesses(container):
        trigger = walker.model.trigger_of(esp.id)
        if trigger is None or not trigger.error_start:
            continue
        if trigger.error_code == code:
            return trigger
        if trigger.error_code is None:
            catch_all = catch_all or trigger
    return catch_all


def _own_boundary(walker: Walker, tok: Token, code: str | None) -> Catcher | None:
    """A boundary event of the token's activity; an inner instance's are the body's."""
    work = walker.work
    if scopes.is_inner(work, tok):
        inner = work.scope(scopes.outer_scope_id(work, tok) or "")
        body = work.scope(inner.parent_id or "") if inner else None
        opener = work.tokens.get(body.token_id or "") if body else None
        if opener is None:
            return None
        tok = opener
    found = catching_boundary(walker, tok.node_id, code)
    return Catcher(walker, tok, boundary=found) if found else None


def find(walker: Walker, tok: Token, code: str | None) -> Catcher | None:
    """The nearest catcher of ``code`` thrown at ``tok`` (see the module docstring)."""
    found = _own_boundary(walker, tok, code)
    if found is not None or code is None:
        return found
    work = walker.work
    scope_id = scopes.outer_scope_id(work, tok)
    while True:
        region = scopes.region_of(work, scope_id)
        if region is None or region.kind in (ScopeKind.SUBPROCESS, ScopeKind.EVENT_SUBPROCESS):
            start = _error_start(walker, region.node_id if region else None, code)
            if start is not None:
                return Catcher(walker, tok, start=start, region=region.id if region else None)
        if region is None:
            break
        if region.kind in (ScopeKind.SUBPROCESS, ScopeKind.MULTI_INSTANCE):
            opener = work.tokens.get(region.token_id or "")
            if opener is None:
                break
            found = _own_boundary(walker, opener, code)
            if found is not None:
                return found
            scope_id = scopes.outer_scope_id(work, opener)
        else:
            scope_id = region.parent_id
    inst = work.instance
    if inst.parent_id is None or walker.relatives is None:
        return None
    caller = walker.relatives.walker_of(inst.parent_id)
    call = waiting_caller(caller, inst.id, inst.parent_token_id) if caller else None
    if caller is None or call is None:
        return None
    return find(caller, call, code)


def throw(walker: Walker, tok: Token, code: str | None, message: str) -> bool:
    """Throw ``code`` at ``tok``; False when nothing catches it (the caller decides)."""
    catcher = find(walker, tok, code)
    if catcher is None:
        return False
    at = catcher.walker
    error = {"error_message": message, "error_code": code, "error_node": tok.node_id}
    if catcher.boundary is not None:
        take_error_boundary(at, catcher.token, catcher.boundary, message, code, error)
    else:
        assert catcher.start is not None
        v.write(at.work, at.model, catcher.region, error, source=catcher.start.id)
        scopes.stop_inside(at, catcher.region, f"error {code} caught by {catcher.start.container}")
        from bpm.runtime.eventsub import start

        start(at, catcher.start, catcher.region, parent_token=catcher.token.id)
    if at is not walker:
        at.run()
    return True


def take_error_boundary(
    walker: Walker,
    tok: Token,
    boundary: n.BoundaryEvent,
    error: str,
    error_code: str | None,
    values: Mapping[str, Any] | None = None,
) -> None:
    """Interrupt the activity and continue on the boundary's path with the error recorded
    (``error_message``, ``error_code``, ``error_node``)."""
    w = walker.work
    outer = scopes.outer_scope_id(w, tok)
    v.write(
        w,
        walker.model,
        outer,
        values or {"error_message": error, "error_code": error_code, "error_node": tok.node_id},
        source=boundary.id,
        token_id=tok.id,
    )
    walker.stop_token(w.token(tok.id), payload={"caught_by": boundary.id, "error": error})
    new = w.create_token(boundary.id, scope_id=outer, parent_id=tok.id)
    walker.continue_tokens([new])
