"""Scopes in the token model: entering, leaving, completing and interrupting them.

A scope (:class:`~bpm.runtime.records.Scope`) is a region of an instance with its own
tokens and local variables. Entering one creates its row and puts tokens inside; it
completes when no token is left inside (checked by :func:`settle` at the end of every
walk, under the instance lock); interrupting it ends everything inside in the same
transaction: tokens (and through them their timers, tasks and incidents), the scopes
nested in it, and the instances its call activities started.

Which token waits for a scope: the token at a sub-process or multi-instance activity
waits ``Waiting(scope)``; a token at an activity with variable mappings moves *into* the
activity's own scope (kind ``activity``) while it runs there. An event sub-process's
start event waits as a *listener* token (a timer) in the scope it belongs to; listeners
do not keep a scope from completing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bpm.errors import BpmError
from bpm.model import nodes as n
from bpm.runtime import variables as v
from bpm.runtime.records import Scope, Token
from bpm.runtime.states import (
    LIVE_TOKEN_STATES,
    SUBSCRIBED,
    BlockKind,
    ScopeKind,
    ScopeState,
    TokenState,
)
from bpm.runtime.work import InstanceWork, new_id

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

MAPPING_INCIDENT = "failedMapping"
"""Incident type of an input or output mapping that could not be evaluated or stored."""

_REGIONS = frozenset(
    {
        ScopeKind.SUBPROCESS,
        ScopeKind.EVENT_SUBPROCESS,
        ScopeKind.INNER_INSTANCE,
        ScopeKind.MULTI_INSTANCE,
    }
)


# -- where a token is -------------------------------------------------------------------


def own_scope(work: InstanceWork, tok: Token) -> Scope | None:
    """The activity scope ``tok`` runs in, if its activity has variable mappings."""
    scope = work.scope(tok.scope_id) if tok.scope_id else None
    if scope is not None and scope.kind is ScopeKind.ACTIVITY and scope.token_id == tok.id:
        return scope
    return None


def outer_scope_id(work: InstanceWork, tok: Token) -> str | None:
    """The scope the token's node sits in (outside the activity's own scope)."""
    own = own_scope(work, tok)
    return own.parent_id if own is not None else tok.scope_id


def is_inner(work: InstanceWork, tok: Token) -> bool:
    """Whether ``tok`` runs one inner instance of a multi-instance activity (its
    boundary events and outgoing flows belong to the body, not to it)."""
    scope_id = outer_scope_id(work, tok)
    scope = work.scope(scope_id) if scope_id else None
    return (
        scope is not None
        and scope.kind is ScopeKind.INNER_INSTANCE
        and scope.node_id == tok.node_id
    )


def region_of(work: InstanceWork, scope_id: str | None) -> Scope | None:
    """The nearest scope that is a region of its own (not a fork, not an activity's
    variables): None is the process."""
    for scope in v.chain(work, scope_id):
        if scope.kind in _REGIONS:
            return scope
    return None


def inside(work: InstanceWork, tok: Token, scope_id: str) -> bool:
    """Whether ``tok`` is somewhere inside ``scope_id``."""
    return any(s.id == scope_id for s in v.chain(work, tok.scope_id))


_LISTENS = frozenset({BlockKind.TIMER, *SUBSCRIBED})


def is_listener(walker: Walk, tok: Token) -> bool:
    """A token that waits at an event sub-process's start event for its timer, message or
    signal."""
    if tok.state is not TokenState.WAITING or tok.blocked_kind not in _LISTENS:
        return False
    return walker.model.event_start(tok.node_id) is not None


# -- opening and closing ----------------------------------------------------------------


def open_scope(
    work: InstanceWork,
    kind: ScopeKind,
    node_id: str,
    *,
    parent_id: str | None,
    token_id: str | None,
    variables: dict[str, Any] | None = None,
    **extra: Any,
) -> Scope:
    """A new active scope, and its ``scope_entered`` event."""
    scope = work.add(
        Scope(
            id=new_id(),
            instance_id=work.instance.id,
            kind=kind,
            node_id=node_id,
            state=ScopeState.ACTIVE,
            created_at=work.now,
            parent_id=parent_id,
            token_id=token_id,
            variables=dict(variables or {}),
            **extra,
        )
    )
    payload: dict[str, Any] = {"scope": scope.id, "kind": kind.value}
    if parent_id is not None:
        payload["parent"] = parent_id
    if scope.loop_counter is not None:
        payload["loop_counter"] = scope.loop_counter
    if scope.variables:
        payload["names"] = sorted(scope.variables)
    work.record("scope_entered", token_id=token_id, node_id=node_id, payload=payload)
    return scope


def close(work: InstanceWork, scope: Scope, state: ScopeState, **payload: Any) -> None:
    """Move an active scope to ``completed`` or ``terminated`` (a no-op if it ended)."""
    current = work.scope(scope.id) or scope
    if current.state is ScopeState.ACTIVE:
        work.move(current, state, payload=payload, ended_at=work.now)


def fail_mapping(walker: Walk, tok: Token, exc: BpmError, what: str) -> None:
    """A mapping could not be evaluated or stored: the token gets an incident."""
    walker.fail_token(tok, f"{what} of '{tok.node_id}': {exc}", incident_type=MAPPING_INCIDENT)


def open_activity(walker: Walk, tok: Token, node: n.Activity) -> Token | None:
    """Enter the activity's own scope with its input mappings as local variables (None:
    a mapping failed and the token has an incident)."""
    work = walker.work
    try:
        inputs = v.evaluate(node.inputs, v.visible(work, tok.scope_id))
    except BpmError as exc:
        fail_mapping(walker, tok, exc, "input mapping")
        return None
    scope = open_scope(
        work,
        ScopeKind.ACTIVITY,
        node.id,
        parent_id=tok.scope_id,
        token_id=tok.id,
        variables=inputs,
    )
    return work.rescope(tok.id, scope.id)


def leaving(walker: Walk, tok: Token) -> tuple[bool, str | None, bool]:
    """What leaving an activity means for its scopes: ``(ok, scope of the next tokens,
    follow the outgoing flows)``. Applies the activity's output mappings and closes its
    own scope; an inner instance of a multi-instance activity does not follow the flows
    (its scope completes; the body decides). Not ok: an output mapping failed (the token
    has an incident)."""
    work = walker.work
    scope_id = tok.scope_id
    own = own_scope(work, tok)
    if own is not None:
        node = walker.model.node(tok.node_id)
        outputs = node.outputs if isinstance(node, n.Activity) else ()
        try:
            values = v.evaluate(outputs, v.visible(work, own.id))
            v.write(work, walker.model, own.parent_id, values, source=tok.node_id, token_id=tok.id)
        except BpmError as exc:
            fail_mapping(walker, tok, exc, "output mapping")
            return False, None, False
        close(work, own, ScopeState.COMPLETED)
        scope_id = own.parent_id
    return True, scope_id, not is_inner(work, tok)


# -- sub-processes ----------------------------------------------------------------------


def open_sub_process(
    work: InstanceWork, tok: Token, node: n.SubProcess, inputs: dict[str, Any]
) -> Scope:
    """The scope of sub-process ``node`` entered by ``tok`` (``inputs`` its local
    variables), ``tok`` waiting until it completes; the tokens at its start events and the
    listeners of its event sub-processes are the caller's to add."""
    scope = open_scope(
        work,
        ScopeKind.SUBPROCESS,
        node.id,
        parent_id=tok.scope_id,
        token_id=tok.id,
        variables=inputs,
    )
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.SCOPE, scope.id))
    return scope


def sub_process(walker: Walk, tok: Token, node: n.SubProcess) -> None:
    """Enter an embedded sub-process: its scope (inputs as local variables), a token at
    each of its start events, listeners for its event sub-processes; the token at the
    sub-process waits until the scope completes."""
    if not walker.enter_activity(tok):
        return
    work = walker.work
    try:
        inputs = v.evaluate(node.inputs, v.visible(work, tok.scope_id))
    except BpmError as exc:
        fail_mapping(walker, tok, exc, "input mapping")
        return
    scope = open_sub_process(work, tok, node, inputs)
    for start in walker.model.starts_in(node.id):
        walker.continue_tokens([work.create_token(start.id, scope_id=scope.id, parent_id=tok.id)])
    walker.hooks.arm(walker, node.id, scope.id)


def complete_sub_process(walker: Walk, scope: Scope) -> None:
    """A sub-process with no token left inside: outputs, then its token moves on."""
    work = walker.work
    node = walker.model.node(scope.node_id)
    outputs = node.outputs if isinstance(node, n.Activity) else ()
    opener = work.tokens.get(scope.token_id or "")
    waiting = (
        opener is not None
        and opener.state is TokenState.WAITING
        and opener.blocked_kind is BlockKind.SCOPE
        and opener.blocked_id == scope.id
    )
    if waiting and opener is not None and outputs:
        try:
            values = v.evaluate(outputs, v.visible(work, scope.id))
            v.write(work, walker.model, opener.scope_id, values, source=node.id, token_id=opener.id)
        except BpmError as exc:
            close(work, scope, ScopeState.COMPLETED)
            walker.work.transition(opener.id, TokenState.READY)
            fail_mapping(walker, work.token(opener.id), exc, "output mapping")
            return
    close(work, scope, ScopeState.COMPLETED)
    if waiting and opener is not None:
        walker.leave(opener)


# -- interrupting -----------------------------------------------------------------------


def terminate(walker: Walk, scope_id: str, reason: str) -> None:
    """End everything inside a scope and the scope itself (and every scope in it)."""
    work = walker.work
    scope = work.scope(scope_id)
    if scope is None or scope.state is not ScopeState.ACTIVE:
        return
    stop_inside(walker, scope_id, reason)
    close(work, scope, ScopeState.TERMINATED, reason=reason)


def stop_inside(walker: Walk, scope_id: str | None, reason: str) -> None:
    """Stop every live token inside ``scope_id`` (None: the whole instance) and end every
    scope nested in it."""
    work = walker.work
    for tok in list(work.tokens.values()):
        current = work.tokens[tok.id]
        if current.state not in LIVE_TOKEN_STATES:
            continue
        if scope_id is None or inside(work, current, scope_id):
            walker.stop_token(current, payload={"reason": reason})
    for nested in list(work.scope_changes.records.values()):
        if nested.state is not ScopeState.ACTIVE or nested.id == scope_id or nested.is_fork:
            continue
        if scope_id is None or any(s.id == scope_id for s in v.chain(work, nested.parent_id)):
            close(work, nested, ScopeState.TERMINATED, reason=reason)


def stopped(walker: Walk, tok: Token) -> None:
    """A token was stopped: the activity scope it ran in ends with it."""
    own = own_scope(walker.work, tok)
    if own is not None:
        close(walker.work, own, ScopeState.TERMINATED)


# -- completing -------------------------------------------------------------------------


def settle(walker: Walk) -> bool:
    """Fire one inclusive join nothing can reach any more, or complete one scope that no
    token is left in (the innermost first); True when it did (the walk then goes on:
    completing a scope moves the token that waited for it)."""
    if walker.hooks.release_joins(walker):
        return True
    work = walker.work
    occupied: set[str] = set()
    for tok in work.tokens.values():
        if tok.state not in LIVE_TOKEN_STATES or is_listener(walker, tok):
            continue
        scope_id = tok.scope_id
        while scope_id is not None and scope_id not in occupied:
            occupied.add(scope_id)
            found = work.scope(scope_id)
            scope_id = found.parent_id if found else None
    empty = [
        s
        for s in work.scope_changes.records.values()
        if s.state is ScopeState.ACTIVE
        and s.id not in occupied
        and s.kind not in (ScopeKind.FORK, ScopeKind.MULTI_INSTANCE)
    ]
    if not empty:
        return False
    scope = max(empty, key=lambda s: len(v.chain(work, s.id)))
    walker.hooks.disarm(walker, scope.id)
    settler = walker.hooks.settlers.get(scope.kind)
    if scope.kind is ScopeKind.SUBPROCESS:
        complete_sub_process(walker, scope)
    elif settler is not None:  # inner instances, event sub-processes, compensation runs
        settler(walker, scope)
    else:
        opener = work.tokens.get(scope.token_id or "")
        ended = opener is not None and opener.state is TokenState.TERMINATED
        close(work, scope, ScopeState.TERMINATED if ended else ScopeState.COMPLETED)
    return True


# -- entering ---------------------------------------------------------------------------


def enter(walker: Walk, tok: Token, node: n.Node) -> Token | None:
    """Scopes a Ready token opens before its node's behaviour runs: a multi-instance
    body (the body takes over: None), or the activity's own scope for its mappings (the
    token moves into it). None too when a mapping failed (the token has an incident)."""
    if not isinstance(node, n.Activity):
        return tok
    work = walker.work
    if node.loop is not None and not is_inner(work, tok):
        walker.hooks.start_loop(walker, tok, node)
        return None
    # A node that holds nodes (a sub-process) has its scope already: its mappings go there
    if node.has_mappings and not node.holds_nodes and own_scope(work, tok) is None:
        return open_activity(walker, tok, node)
    return tok
