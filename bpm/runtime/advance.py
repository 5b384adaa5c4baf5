"""Synchronous continuation: move tokens through every node that does not wait.

A :class:`Flow` walks Ready tokens through gateways and events within one transaction,
until each one rests at a wait state (an inline task to dispatch, a user or external task,
a timer, a join) or ends. Node kinds plug in through :data:`BEHAVIOURS`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from bpm.expressions import ExpressionError, compile_condition
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.records import Token
from bpm.runtime.states import BlockKind, InstanceState, TokenState
from bpm.runtime.usertasks import user_task_fields
from bpm.runtime.work import InstanceWork

Behaviour = Callable[["Flow", Token, Any], None]
BEHAVIOURS: dict[type[n.Node], Behaviour] = {}
# Called when a token enters an activity that can have boundary events (timers register here).
ACTIVITY_ENTERED: list[Callable[[Flow, Token], None]] = []

T = TokenState


def behaviour(kind: type[n.Node]) -> Callable[[Behaviour], Behaviour]:
    """Register what a token arriving at a node of ``kind`` does."""

    def register(fn: Behaviour) -> Behaviour:
        BEHAVIOURS[kind] = fn
        return fn

    return register


class Flow:
    """Continuation of one instance inside one transaction."""

    def __init__(self, work: InstanceWork, model: ProcessModel) -> None:
        self.work = work
        self.model = model
        self._queue: deque[str] = deque()

    def run(self, token_ids: Iterable[str]) -> None:
        """Advance the given Ready tokens (and every token they create) to rest."""
        self._queue.extend(token_ids)
        while self._queue:
            tok = self.work.token(self._queue.popleft())
            if tok.state is not T.READY:
                continue
            node = self.model.node(tok.node_id)
            BEHAVIOURS[type(node)](self, tok, node)
        self.settle_instance()

    # -- moving on ------------------------------------------------------------------------
    def leave(
        self,
        tok: Token,
        flows: Iterable[n.Flow] | None = None,
        *,
        scope_id: str | None = None,
        keep_scope: bool = True,
    ) -> list[Token]:
        """Complete ``tok`` and put a new Ready token on each flow (all outgoing by default)."""
        if tok.state is not T.COMPLETED:
            tok = self.work.transition(tok.id, T.COMPLETED)
        self.cancel_boundaries(tok)
        chosen = self.model.outgoing[tok.node_id] if flows is None else tuple(flows)
        scope = tok.scope_id if keep_scope else scope_id
        out = []
        for flow in chosen:
            new = self.work.create_token(flow.target, scope_id=scope, parent_id=tok.id)
            out.append(new)
            self._queue.append(new.id)
        return out

    def continue_tokens(self, tokens: Iterable[Token]) -> None:
        self._queue.extend(t.id for t in tokens)

    def cancel_boundaries(self, tok: Token) -> None:
        if tok.node_id in self.model.boundaries:
            self.work.update_rows(
                "timer", {"token_id": tok.id, "state": "pending"}, state="cancelled"
            )

    def stop_token(self, tok: Token, target: TokenState = T.TERMINATED, **kw: Any) -> None:
        """End a live token and cancel whatever it waits on (task, timer)."""
        if tok.blocked_kind is BlockKind.USER_TASK and tok.blocked_id:
            self.work.update_rows(
                "user_task",
                {"id": tok.blocked_id, "state": "open"},
                state="cancelled",
                completed_at=self.work.now,
            )
        elif tok.blocked_kind is BlockKind.EXTERNAL_TASK and tok.blocked_id:
            self.work.update_rows(
                "external_task",
                {"id": tok.blocked_id},
                state="cancelled",
                lock_owner=None,
                lock_expires_at=None,
                updated_at=self.work.now,
            )
            self.work.update_rows(  # a task out of retries has an incident; it goes too
                "incident",
                {"external_task_id": tok.blocked_id, "state": "open"},
                state="deleted",
                resolved_at=self.work.now,
            )
        elif tok.blocked_kind in (BlockKind.TIMER, BlockKind.RETRY_BACKOFF) and tok.blocked_id:
            self.work.update_rows(
                "timer", {"id": tok.blocked_id, "state": "pending"}, state="cancelled"
            )
        if tok.state is T.FAILED:  # its incident has nothing left to retry
            self.work.update_rows(
                "incident",
                {"token_id": tok.id, "state": "open"},
                state="deleted",
                resolved_at=self.work.now,
            )
        if tok.state is T.CREATED:
            tok = self.work.transition(tok.id, T.READY)
        self.cancel_boundaries(tok)
        self.work.transition(tok.id, target, **kw)

    def terminate_all(self, reason: str, *, except_token: str | None = None) -> None:
        for tok in self.work.live_tokens():
            if tok.id != except_token:
                self.stop_token(tok, payload={"reason": reason})
        self.work.to_dispatch.clear()

    def settle_instance(self) -> None:
        """Complete the instance when no live token is left."""
        if self.work.instance.state in (InstanceState.ACTIVE, InstanceState.SUSPENDED) and (
            not self.work.live_tokens()
        ):
            self.work.set_state(InstanceState.COMPLETED)

    def fail_token(self, tok: Token, error: str, *, incident_type: str = "failedGateway") -> None:
        """A node could not proceed (no gateway flow matched, a timer could not be set)."""
        if tok.state is T.READY:
            tok = self.work.transition(tok.id, T.EXECUTING, attempt=tok.attempt + 1)
        self.work.transition(tok.id, T.FAILED, error=error)
        self.work.open_incident(tok, incident_type, error)


# -- behaviours of the first wave ---------------------------------------------------------


@behaviour(n.StartEvent)
def _start(flow: Flow, tok: Token, node: n.StartEvent) -> None:
    flow.leave(tok)


@behaviour(n.BoundaryEvent)
def _boundary(flow: Flow, tok: Token, node: n.BoundaryEvent) -> None:
    # A token is only ever created here when the boundary event has been triggered.
    flow.leave(tok)


@behaviour(n.EndEvent)
def _end(flow: Flow, tok: Token, node: n.EndEvent) -> None:
    flow.work.transition(tok.id, T.COMPLETED)
    if node.kind is n.EndKind.TERMINATE:
        flow.terminate_all(f"terminate end event {node.id}")
        flow.work.set_state(InstanceState.TERMINATED, by=node.id)
    elif node.kind is n.EndKind.ERROR:
        flow.work.record(
            "error_end", token_id=tok.id, node_id=node.id, payload={"error_code": node.error_code}
        )


def enter_activity(flow: Flow, tok: Token) -> bool:
    """Run the ACTIVITY_ENTERED hooks; False when one of them failed the token."""
    for hook in ACTIVITY_ENTERED:
        hook(flow, tok)
    return flow.work.token(tok.id).state is T.READY


@behaviour(n.ServiceTask)
def _service(flow: Flow, tok: Token, node: n.ServiceTask) -> None:
    if not enter_activity(flow, tok):
        return
    if node.is_external:
        w = flow.work
        task_id = w.add_row(
            "external_task",
            instance_id=tok.instance_id,
            token_id=tok.id,
            definition_id=w.instance.definition_id,
            definition_key=w.instance.definition_key,
            business_key=w.instance.business_key,
            node_id=node.id,
            topic=node.topic,
            state="ready",
            priority=node.priority,
            properties=dict(node.properties),
            retries=None,
            attempt=0,
            created_at=w.now,
            updated_at=w.now,
        )
        w.notify.add(str(node.topic))
        w.transition(tok.id, T.WAITING, blocked=(BlockKind.EXTERNAL_TASK, task_id))
    else:
        # Stays Ready: a worker claims it. Published after commit.
        flow.work.to_dispatch.append(tok.id)


@behaviour(n.UserTask)
def _user(flow: Flow, tok: Token, node: n.UserTask) -> None:
    if not enter_activity(flow, tok):
        return
    w = flow.work
    task_id = w.add_row(
        "user_task",
        instance_id=tok.instance_id,
        token_id=tok.id,
        node_id=node.id,
        state="open",
        created_at=w.now,
        **user_task_fields(node, w.instance.variables, w.now),  # name, assignee, form...
    )
    w.transition(tok.id, T.WAITING, blocked=(BlockKind.USER_TASK, task_id))


@behaviour(n.ExclusiveGateway)
def _exclusive(flow: Flow, tok: Token, node: n.ExclusiveGateway) -> None:
    outgoing = flow.model.outgoing[node.id]
    if len(outgoing) == 1 and outgoing[0].condition is None:
        flow.leave(tok, outgoing)
        return
    variables = flow.work.instance.variables
    default = None
    for f in outgoing:
        if f.id == node.default_flow:
            default = f
            continue
        if f.condition is None:  # taken, as Camunda does (flows are tried in order)
            flow.leave(tok, [f])
            return
        try:
            matched = compile_condition(f.condition).evaluate(variables)
        except ExpressionError as exc:
            flow.fail_token(tok, f"gateway {node.id}, flow {f.id}: {exc}")
            return
        if matched:
            flow.leave(tok, [f])
            return
    if default is not None:
        flow.leave(tok, [default])
        return
    flow.fail_token(tok, f"gateway {node.id}: no condition matched and there is no default flow")


@behaviour(n.ParallelGateway)
def _parallel(flow: Flow, tok: Token, node: n.ParallelGateway) -> None:
    w = flow.work
    incoming = len(flow.model.incoming[node.id])
    if incoming > 1:
        scope_key = tok.scope_id or "root"
        w.transition(tok.id, T.WAITING, blocked=(BlockKind.JOIN, scope_key))
        arrived = [
            t
            for t in w.tokens.values()
            if t.state is T.WAITING
            and t.node_id == node.id
            and t.blocked_kind is BlockKind.JOIN
            and t.scope_id == tok.scope_id
        ]
        if len(arrived) < incoming:
            return
        arrived = arrived[:incoming]
        for t in arrived:
            w.transition(t.id, T.COMPLETED, payload={"joined": True})
        scope_id = tok.scope_id
        if scope_id is not None and w.scope(scope_id) is not None:
            scope = w.shrink_scope(scope_id, incoming - 1)
            if scope.expected <= 1:
                scope_id = scope.parent_id
        w.record(
            "join_fired",
            token_id=tok.id,
            node_id=node.id,
            payload={"tokens": [t.id for t in arrived], "scope": tok.scope_id},
        )
        tok = w.token(tok.id)
        outgoing = flow.model.outgoing[node.id]
        if len(outgoing) > 1:
            _fork(flow, tok, node, scope_id)
        else:
            flow.leave(tok, scope_id=scope_id, keep_scope=False)
        return
    _fork(flow, tok, node, tok.scope_id)


def _fork(flow: Flow, tok: Token, node: n.ParallelGateway, outer: str | None) -> None:
    outgoing = flow.model.outgoing[node.id]
    if len(outgoing) <= 1:
        flow.leave(tok, scope_id=outer, keep_scope=False)
        return
    scope = flow.work.open_scope(node.id, len(outgoing), outer)
    flow.leave(tok, scope_id=scope.id, keep_scope=False)
