"""Compensation: undoing completed activities, newest first (BPMN compensation, the saga).

**Remembering.** When an activity with a compensation handler completes (or a sub-process
with one inside), the walker adds a :class:`~bpm.runtime.records.Compensable` record in
the same transaction: its place in the instance's completion order (``seq``), the region
(sub-process) it completed in, and the local variables it saw. Only completed activities
are remembered, so only they are ever compensated.

**A run.** Throwing compensation opens a scope of kind ``compensation`` (a *run*) that
takes the records it compensates (``queued``) and starts their handlers one at a time,
newest first. A handler is a token at the handler node: a normal step with its own retry
policy and lease (one out of retries opens an incident and the run waits for the
operator's retry). When the run's scope is empty again (its handler ended),
:func:`advance` (called by :func:`bpm.runtime.scopes.settle`) marks the record
``compensated`` and starts the next; with none left the run completes and the token that
threw moves on. A completed sub-process without a handler of its own is compensated by its
compensation event sub-process if it has one, else by a nested run over the activities it
completed inside. Every record is compensated at most once (its state says so).

**Who throws.** A compensation throw event, intermediate or end, compensates the completed
activities of its region (or the one ``activityRef`` names) and waits for them. The saga
(:func:`compensate_instance`): a step out of retries whose failure action is
``compensate`` ends every live token (the running ones are cancelled first), and the
instance is ``compensating`` until the handlers of everything it completed have run, then
``compensated``. A compensation end event of the process itself (no ``activityRef``), as
an interrupting timeout or error path reaches it, does the same to the instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bpm.model import nodes as n
from bpm.runtime import scopes
from bpm.runtime import variables as v
from bpm.runtime.records import Compensable, Scope, Token
from bpm.runtime.states import (
    BlockKind,
    CompensableState,
    InstanceState,
    ScopeKind,
    ScopeState,
    TokenState,
)
from bpm.runtime.work import InstanceWork, new_id

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

__all__ = [
    "advance",
    "compensate_instance",
    "compensate_region",
    "end_event",
    "records",
    "remember",
    "throw_event",
]

_REGIONS = frozenset({ScopeKind.SUBPROCESS, ScopeKind.EVENT_SUBPROCESS})
# Scopes whose local variables a handler sees again (a multi-instance body's collected
# outputs are left out: they are the body's, not one activity's).
_SNAPSHOT = frozenset(
    {ScopeKind.ACTIVITY, ScopeKind.INNER_INSTANCE, ScopeKind.SUBPROCESS, ScopeKind.EVENT_SUBPROCESS}
)
_OPEN = (CompensableState.QUEUED, CompensableState.RUNNING)


# -- records ------------------------------------------------------------------------------


def records(work: InstanceWork) -> list[Compensable]:
    """The instance's records not compensated yet (loaded once), in completion order."""
    changes = work.item_changes[Compensable]
    if not work.compensables_loaded:
        work.compensables_loaded = True
        if work.loader is not None:
            for found in work.loader.compensables(work.instance.id):
                changes.records.setdefault(found.id, found)
    current: list[Compensable] = list(changes.records.values())
    return sorted(current, key=lambda r: r.seq)


def _next_seq(work: InstanceWork) -> int:
    if work.compensable_seq is None:
        loader = work.loader
        work.compensable_seq = loader.last_compensable_seq(work.instance.id) if loader else 0
    work.compensable_seq += 1
    return work.compensable_seq


def _region(work: InstanceWork, scope_id: str | None) -> Scope | None:
    """The sub-process (or event sub-process) a scope is in; None: the process."""
    for scope in v.chain(work, scope_id):
        if scope.kind in _REGIONS:
            return scope
    return None


def _snapshot(work: InstanceWork, scope_id: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scope in reversed(v.chain(work, scope_id)):  # outermost first: the innermost wins
        if scope.kind in _SNAPSHOT:
            out.update(scope.variables)
    return out


def remember(walker: Walk, tok: Token) -> None:
    """``tok`` (as it was before it completed) completed a compensable activity: add its
    record. A multi-instance activity is remembered once per inner instance."""
    work = walker.work
    node = walker.model.node(tok.node_id)
    if isinstance(node, n.Activity) and node.loop is not None and not walker.is_inner(tok):
        return  # the body: its inner instances were remembered one by one
    handler = walker.model.compensation_handlers.get(node.id)
    inner = tok.blocked_id if handler is None and isinstance(node, n.SubProcess) else None
    if handler is None and inner is None:
        return
    region = _region(work, tok.scope_id)
    work.add(
        Compensable(
            id=new_id(),
            instance_id=work.instance.id,
            token_id=tok.id,
            node_id=node.id,
            seq=_next_seq(work),
            state=CompensableState.RECORDED,
            created_at=work.now,
            handler_node=handler,
            scope_id=region.id if region else None,
            inner_scope_id=inner,
            variables=_snapshot(work, tok.scope_id),
        )
    )


# -- throwing -----------------------------------------------------------------------------


def _target_region(walker: Walk, tok: Token) -> str | None:
    """The region whose activities a throw at ``tok`` compensates: its own; inside a
    compensation event sub-process, the sub-process being compensated."""
    work = walker.work
    region = _region(work, tok.scope_id)
    if region is None:
        return None
    trigger = walker.model.trigger_of(region.node_id)
    if region.kind is ScopeKind.EVENT_SUBPROCESS and trigger and trigger.compensation_start:
        run = work.scope(region.parent_id or "")
        for r in records(work):
            running = r.state is CompensableState.RUNNING
            if run and running and r.run_id == run.parent_id and r.node_id == run.node_id:
                return r.inner_scope_id
    return region.id


def _throw(walker: Walk, tok: Token, activity_ref: str | None, *, instance: bool) -> bool:
    """Compensate for ``tok``; False when there is nothing to compensate."""
    work = walker.work
    target = _target_region(walker, tok)
    chosen = [
        r
        for r in records(work)
        if r.state is CompensableState.RECORDED
        and r.scope_id == target
        and (activity_ref is None or r.node_id == activity_ref)
    ]
    work.record(
        "compensation_thrown",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={"activity": activity_ref, "activities": [r.node_id for r in reversed(chosen)]},
    )
    if instance and work.instance.state in (InstanceState.ACTIVE, InstanceState.SUSPENDED):
        work.set_state(InstanceState.COMPENSATING, node=tok.node_id)
    if not chosen:
        return False
    run = _open_run(walker, tok.node_id, tok.scope_id, tok.id, chosen)
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.SCOPE, run.id))
    _start_next(walker, run)
    return True


def compensate_region(walker: Walk, tok: Token, region_id: str) -> bool:
    """Compensate every completed activity of region ``region_id`` (a sub-process scope,
    possibly ended already: a cancelled transaction's), newest first, ``tok`` waiting until
    that is done and then moving on; False when there is nothing to compensate (``tok``
    is left as it was). A run that was going on inside the region and ended with it gives
    its records back, so they are compensated with the others."""
    work = walker.work
    chosen = []
    for r in records(work):
        if r.scope_id != region_id:
            continue
        if r.state in _OPEN:
            run = work.scope(r.run_id or "")
            if run is not None and run.state is ScopeState.ACTIVE:
                continue
            r = work.move(r, CompensableState.RECORDED, payload={"reason": "run ended"})
        if r.state is CompensableState.RECORDED:
            chosen.append(r)
    work.record(
        "compensation_thrown",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={"region": region_id, "activities": [r.node_id for r in reversed(chosen)]},
    )
    if not chosen:
        return False
    run = _open_run(walker, tok.node_id, tok.scope_id, tok.id, chosen)
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.SCOPE, run.id))
    _start_next(walker, run)
    return True


def throw_event(walker: Walk, tok: Token, node: n.CompensationThrowEvent) -> None:
    """An intermediate compensation throw event: compensate, wait, then move on."""
    if not _throw(walker, tok, node.activity_ref, instance=False):
        walker.leave(tok)


def end_event(walker: Walk, tok: Token, node: n.EndEvent) -> None:
    """A compensation end event: compensate, wait, then end the path. At the top of the
    process without ``activityRef`` it compensates the instance (see the module doc)."""
    whole = node.activity_ref is None and _region(walker.work, tok.scope_id) is None
    if not _throw(walker, tok, node.activity_ref, instance=whole):
        walker.leave(tok)
        if whole:
            _instance_done(walker)


def compensate_instance(walker: Walk, node_id: str, reason: str) -> None:
    """The saga: the instance (whose live tokens the caller ended) becomes
    ``compensating`` and every completed activity that a completed sub-process does not
    cover is compensated, newest first; then it is ``compensated``."""
    work = walker.work
    work.set_state(InstanceState.COMPENSATING, node=node_id, reason=reason)
    chosen = []
    for r in records(work):
        if r.state in _OPEN:
            run = work.scope(r.run_id or "")
            if run is not None and run.state is ScopeState.ACTIVE:
                continue  # a run still going (it was just ended with its tokens)
            r = work.move(r, CompensableState.RECORDED, payload={"reason": "run ended"})
        if r.state is not CompensableState.RECORDED:
            continue
        scope = work.scope(r.scope_id) if r.scope_id else None
        # A completed sub-process compensates what it completed inside (its own record).
        if scope is None or scope.state is not ScopeState.COMPLETED:
            chosen.append(r)
    work.record(
        "compensation_thrown",
        node_id=node_id,
        payload={"instance": True, "activities": [r.node_id for r in reversed(chosen)]},
    )
    if not chosen:
        _instance_done(walker)
        return
    run = _open_run(walker, node_id, None, None, chosen)
    _start_next(walker, run)


# -- a run ----------------------------------------------------------------------------------


def _open_run(
    walker: Walk,
    node_id: str,
    parent_id: str | None,
    token_id: str | None,
    chosen: list[Compensable],
) -> Scope:
    work = walker.work
    run = scopes.open_scope(
        work, ScopeKind.COMPENSATION, node_id, parent_id=parent_id, token_id=token_id
    )
    for r in chosen:
        work.move(r, CompensableState.QUEUED, payload={"run": run.id}, run_id=run.id)
    return run


def advance(walker: Walk, run: Scope) -> None:
    """A run with no token left inside: the handler that ran is done (its record is
    compensated); start the next one, or complete the run."""
    work = walker.work
    for r in records(work):
        if r.run_id == run.id and r.state is CompensableState.RUNNING:
            work.move(
                r,
                CompensableState.COMPENSATED,
                payload={"activity": r.node_id, "handler": r.handler_node},
                compensated_at=work.now,
            )
    _start_next(walker, run)


def _start_next(walker: Walk, run: Scope) -> None:
    work = walker.work
    queued = [r for r in records(work) if r.run_id == run.id and r.state is CompensableState.QUEUED]
    if not queued:
        _finish(walker, run)
        return
    r = queued[-1]  # the newest
    if r.handler_node is not None:
        tok = work.create_token(r.handler_node, scope_id=run.id, parent_id=r.token_id)
        if r.variables:  # the handler sees the local variables its activity saw
            own = scopes.open_scope(
                work,
                ScopeKind.ACTIVITY,
                r.handler_node,
                parent_id=run.id,
                token_id=tok.id,
                variables=r.variables,
            )
            tok = work.rescope(tok.id, own.id)
        work.move(
            r,
            CompensableState.RUNNING,
            payload={"activity": r.node_id, "handler": r.handler_node},
            handler_token_id=tok.id,
        )
        walker.continue_tokens([tok])
        return
    # A sub-process without a handler: its compensation event sub-process, or a nested
    # run over what it completed inside.
    nested = scopes.open_scope(
        work, ScopeKind.COMPENSATION, r.node_id, parent_id=run.id, token_id=None
    )
    work.move(r, CompensableState.RUNNING, payload={"activity": r.node_id, "run": nested.id})
    trigger = walker.model.compensation_start_in(r.node_id)
    if trigger is not None:
        walker.hooks.start_event_subprocess(walker, trigger, nested.id, parent_token=r.token_id)
        return
    inner = [
        x
        for x in records(work)
        if x.state is CompensableState.RECORDED and x.scope_id == r.inner_scope_id
    ]
    for x in inner:
        work.move(x, CompensableState.QUEUED, payload={"run": nested.id}, run_id=nested.id)
    _start_next(walker, nested)


def _finish(walker: Walk, run: Scope) -> None:
    work = walker.work
    scopes.close(work, run, ScopeState.COMPLETED)
    opener = work.tokens.get(run.token_id or "")
    if (
        opener is not None
        and opener.state is TokenState.WAITING
        and opener.blocked_kind is BlockKind.SCOPE
        and opener.blocked_id == run.id
    ):
        walker.leave(opener)
    if work.instance.state is InstanceState.COMPENSATING and not any(
        s.kind is ScopeKind.COMPENSATION and s.state is ScopeState.ACTIVE
        for s in work.scope_changes.records.values()
    ):
        _instance_done(walker)


def _instance_done(walker: Walk) -> None:
    """The instance's compensation is over: ``compensated`` when no path is left, else
    (a compensation end event while other paths still run) ``active`` again."""
    work = walker.work
    if work.instance.state is not InstanceState.COMPENSATING:
        return
    scoped = walker.model.scoped
    live = [t for t in work.live_tokens() if not (scoped and scopes.is_listener(walker, t))]
    if live:
        work.set_state(InstanceState.ACTIVE)
        return
    if scoped:
        walker.hooks.disarm(walker, None)
    work.set_state(InstanceState.COMPENSATED)
