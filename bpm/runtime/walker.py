"""Synchronous continuation: move tokens through every node that does not wait.

A :class:`Walker` moves Ready tokens through gateways and events within one transaction,
until each one rests at a wait state (an inline task to dispatch, a user or external task,
a timer, a join) or ends. What a token does at each kind of node is in
:mod:`bpm.runtime.behaviours`, a table the walker is given.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.records import ExternalTask, Incident, Timer, Token, UserTask
from bpm.runtime.states import (
    BlockKind,
    IncidentState,
    InstanceState,
    TaskState,
    TimerState,
    TokenState,
    UserTaskState,
)
from bpm.runtime.work import InstanceWork

Behaviour = Callable[["Walker", Token, Any], None]


class Walker:
    """Continuation of one instance inside one transaction."""

    def __init__(
        self, work: InstanceWork, model: ProcessModel, behaviours: Mapping[type, Behaviour]
    ) -> None:
        self.work = work
        self.model = model
        self.behaviours = behaviours  # node kind -> what a token does there
        self._queue: deque[str] = deque()

    def run(self, token_ids: Iterable[str] = ()) -> None:
        """Advance the given Ready tokens (and every token they create) to rest."""
        self._queue.extend(token_ids)
        while self._queue:
            tok = self.work.token(self._queue.popleft())
            if tok.state is not TokenState.READY:
                continue
            node = self.model.node(tok.node_id)
            self.behaviours[type(node)](self, tok, node)
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
        if tok.state is not TokenState.COMPLETED:
            tok = self.work.transition(tok.id, TokenState.COMPLETED)
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
        """Cancel the pending boundary timers of an activity its token left."""
        if tok.node_id not in self.model.boundaries:
            return
        for timer in self.work.items_of(Timer, tok.id):
            if timer.kind == "timeout" and timer.state is TimerState.PENDING:
                self.work.move(timer, TimerState.CANCELLED)

    def stop_token(self, tok: Token, target: TokenState = TokenState.TERMINATED, **kw: Any) -> None:
        """End a live token and cancel whatever it waits on (task, timer, incident)."""
        w = self.work
        self.cancel_wait(tok)
        if tok.state is TokenState.CREATED:
            tok = w.transition(tok.id, TokenState.READY)
        self.cancel_boundaries(tok)
        w.transition(tok.id, target, **kw)

    def cancel_wait(self, tok: Token) -> None:
        """Cancel what a token waits on (user or external task, timer) and its incidents."""
        w = self.work
        if tok.blocked_kind is BlockKind.USER_TASK and tok.blocked_id:
            task = w.item(UserTask, tok.blocked_id)
            if task is not None and task.state is UserTaskState.OPEN:
                w.move(task, UserTaskState.CANCELLED, completed_at=w.now)
        elif tok.blocked_kind is BlockKind.EXTERNAL_TASK and tok.blocked_id:
            ext = w.item(ExternalTask, tok.blocked_id)
            if ext is not None and ext.state not in (TaskState.COMPLETED, TaskState.CANCELLED):
                w.move(
                    ext,
                    TaskState.CANCELLED,
                    lock_owner=None,
                    lock_expires_at=None,
                    updated_at=w.now,
                )
        elif tok.blocked_kind in (BlockKind.TIMER, BlockKind.RETRY_BACKOFF) and tok.blocked_id:
            timer = w.item(Timer, tok.blocked_id)
            if timer is not None and timer.state is TimerState.PENDING:
                w.move(timer, TimerState.CANCELLED)
        # a failed step, or an external task out of retries, has an incident: it goes too
        if tok.state is TokenState.FAILED or tok.blocked_kind is BlockKind.EXTERNAL_TASK:
            for incident in w.items_of(Incident, tok.id):
                if incident.state is IncidentState.OPEN:
                    w.move(incident, IncidentState.DELETED, resolved_at=w.now)

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
        if tok.state is TokenState.READY:
            tok = self.work.transition(tok.id, TokenState.EXECUTING, attempt=tok.attempt + 1)
        self.work.transition(tok.id, TokenState.FAILED, error=error)
        self.work.open_incident(tok, incident_type, error)
