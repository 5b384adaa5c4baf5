"""Synchronous continuation: move tokens through every node that does not wait.

A :class:`Walker` moves Ready tokens through gateways and events within one transaction,
until each one rests at a wait state (an inline task to dispatch, a user or external task,
a timer, a join, a scope or a called instance) or ends. What a token does at each kind of
node is in :mod:`bpm.runtime.behaviours`; scopes (sub-processes, multi-instance, variable
mappings) in :mod:`bpm.runtime.scopes`. When no token can move any more, scopes left
without tokens complete (which may move the tokens waiting for them), and so on until
nothing changes.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime import (
    calls,
    compensation,
    inclusive,
    listening,
    messages,
    scopes,
    task_events,
    timers,
    variables,
)
from bpm.runtime.hooks import Behaviour, Decider, Hooks, Relatives
from bpm.runtime.records import ExternalTask, Incident, Timer, Token, UserTask
from bpm.runtime.states import (
    LIVE_TOKEN_STATES,
    SUBSCRIBED,
    BlockKind,
    IncidentState,
    InstanceState,
    TaskState,
    TimerState,
    TokenState,
    UserTaskState,
)
from bpm.runtime.work import InstanceWork

RUNAWAY_INCIDENT = "runawayLoop"
"""Incident type of a token stopped by the step bound of one transaction."""

DEFAULT_MAX_STEPS = 50_000
"""Nodes one transaction may move tokens through before it stops them (see
:attr:`bpm.engine.config.EngineConfig.max_steps_per_transaction`)."""


class Walker:
    """Continuation of one instance inside one transaction. ``relatives``: the other
    instances of its call tree (the unit of work); without, call activities fail.
    ``decider``: the deployed decisions (the unit of work); without, decision tasks fail."""

    def __init__(
        self,
        work: InstanceWork,
        model: ProcessModel,
        behaviours: Mapping[type, Behaviour],
        relatives: Relatives | None = None,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        decider: Decider | None = None,
        hooks: Hooks,
    ) -> None:
        self.work = work
        self.decider = decider
        self.hooks = hooks  # the mechanisms reached through the registry (runtime/hooks.py)
        self.model = model
        self.behaviours = behaviours  # node kind -> what a token does there
        self.relatives = relatives
        self._queue: deque[str] = deque()
        self._running = False
        # A loop of nodes that never wait would keep the transaction (and the instance
        # lock) for ever: past ``max_steps`` nodes the tokens stop with an incident.
        self.max_steps = max_steps
        self._visits: Counter[str] = Counter()
        self._steps = 0
        # Tokens whose node's listeners ran in this transaction: they enter the node now.
        self.listened: set[str] = set()
        # True while every token is ended (terminate): a task cancelled then runs no
        # delete listeners (the instance ends with it)
        self.terminating = False
        # Tokens whose node's end listeners ran in this transaction: they leave it now.
        self.ended: set[str] = set()
        # The process's end listeners ran: the instance may complete.
        self.process_ended = False

    def begin(self, start_node_id: str) -> Token:
        """A new instance's first token (and its event sub-processes' listeners), walked."""
        first = self.work.create_token(start_node_id, scope_id=None, parent_id=None)
        if listening.process_listeners(self.model, "start"):
            first = self.work.set_listening(
                first.id, listening.encode(listening.Pending(process="start"))
            )
        if self.model.scoped:
            self.hooks.arm(self, None, None)
        self.run([first.id])
        return first

    def run(self, token_ids: Iterable[str] = ()) -> None:
        """Advance the given Ready tokens (and every token they create) to rest. A call
        while the walker runs (a called instance completing at once) only queues them."""
        self._queue.extend(token_ids)
        if self._running:
            return
        self._running = True
        try:
            while True:
                while self._queue:
                    tok = self.work.token(self._queue.popleft())
                    if tok.state is not TokenState.READY:
                        continue
                    node = self.model.node(tok.node_id)
                    if self._over_budget(tok):
                        continue
                    if node.listens_to_task and task_events.listened_task(self, tok) is not None:
                        # its task is open: the task's queued listeners run on a worker
                        # (a retried incident of a task listener step comes here)
                        self.work.to_dispatch.append(tok.id)
                        continue
                    listens = self.model.listens and tok.id not in self.listened
                    if listens and self._listen_first(tok, node):
                        continue
                    if self.model.scoped:
                        entered = scopes.enter(self, tok, node)
                        if entered is None:
                            continue
                        tok = entered
                    self.behaviours[type(node)](self, tok, node)
                if not (self.model.scoped and scopes.settle(self)):
                    break
        finally:
            self._running = False
        self.settle_instance()

    def _listen_first(self, tok: Token, node: n.Node) -> bool:
        """Leave ``tok`` Ready for a worker to run the listeners due before it enters
        ``node`` (:mod:`bpm.runtime.listening`), published after commit as an inline step
        is; False when there are none (or the node's own step runs them)."""
        state = listening.pending(tok)
        if state.phase == listening.LAST:  # walked again (an incident retried): as it was
            self.work.to_dispatch.append(tok.id)
            return True
        # a multi-instance body: its inner instances run the element's listeners
        body = getattr(node, "loop", None) is not None and not self.is_inner(tok)
        if node.runs_listeners and not body:
            return False  # the inline task's step runs the flow's take listeners too
        start = bool(node.listens_first) and not body
        take = listening.take_listeners(self.model, state.via)
        if not (start or take or state.process == "start"):
            return False
        self.work.set_listening(
            tok.id, listening.encode(replace(state, phase=listening.FIRST, start=start))
        )
        self.work.to_dispatch.append(tok.id)
        return True

    def listen_last(
        self,
        tok: Token,
        flows: Iterable[n.Flow] | None = None,
        *,
        scope_id: str | None = None,
        keep_scope: bool = True,
        again: bool = False,
    ) -> bool:
        """Leave the token at ``tok``'s node Ready for a worker to run the node's end
        listeners before it leaves (along ``flows``, as :meth:`leave` would); False when
        there are none, or they ran. ``again``: afterwards the node's behaviour runs again
        (an end event, which leaves by no flow)."""
        node = self.model.node(tok.node_id)
        if tok.id in self.ended or not node.listens_last:
            return False
        if getattr(node, "loop", None) is not None and not self.is_inner(tok):
            return False  # a multi-instance body: its inner instances ran them
        state = listening.Pending(
            phase=listening.LAST,
            flows=None if flows is None else tuple(f.id for f in flows),
            scope_id=scope_id,
            keep_scope=keep_scope,
            again=again,
        )
        self._park_last(tok, state)
        return True

    def _park_last(self, tok: Token, state: listening.Pending) -> None:
        w = self.work
        tok = w.token(tok.id)
        if tok.state is TokenState.COMPLETED:
            # a join completed the arrivals: a token of its own runs the listeners, in
            # the scope the next tokens go to
            scope = tok.scope_id if state.keep_scope else state.scope_id
            tok = w.create_token(tok.node_id, scope_id=scope, parent_id=tok.id)
            if not state.keep_scope:
                state = replace(state, keep_scope=True)
        elif tok.state is TokenState.WAITING:
            # a task, sub-process or call that was leaving: what it waited for is done
            tok = w.transition(tok.id, TokenState.READY)
        w.set_listening(tok.id, listening.encode(state))
        w.to_dispatch.append(tok.id)

    def _over_budget(self, tok: Token) -> bool:
        """Count one step at ``tok``'s node; past the bound, fail the token with an
        incident naming the nodes it kept going round (True: do not move it)."""
        self._visits[tok.node_id] += 1
        self._steps += 1
        if self._steps <= self.max_steps:
            return False
        loop = ", ".join(f"'{node}' ({times}x)" for node, times in self._visits.most_common(4))
        self.fail_token(
            tok,
            f"runaway loop: more than {self.max_steps} steps in one transaction without a "
            f"wait, through {loop}; add a wait state (a task, timer or message) or a condition "
            "that leaves the loop, then retry or cancel the instance",
            incident_type=RUNAWAY_INCIDENT,
        )
        return True

    # -- variables ------------------------------------------------------------------------
    def variables(self, tok: Token) -> dict[str, Any]:
        """The variables ``tok`` sees: the instance's and its scopes' (innermost wins)."""
        if tok.scope_id is None or not self.model.scoped:
            return self.work.instance.variables
        return variables.visible(self.work, tok.scope_id)

    def write_variables(self, tok: Token, updates: Any, *, local: bool = False) -> None:
        """Write variables from ``tok`` (see :mod:`bpm.runtime.variables`)."""
        if tok.scope_id is None or not self.model.scoped:
            self.work.merge_variables(updates, source=tok.node_id, token_id=tok.id)
            return
        variables.write(
            self.work,
            self.model,
            tok.scope_id,
            updates,
            source=tok.node_id,
            token_id=tok.id,
            local=local,
        )

    def outer_scope(self, tok: Token) -> str | None:
        """The scope ``tok``'s node sits in (outside its activity's own variables)."""
        if tok.scope_id is None or not self.model.scoped:
            return tok.scope_id
        return scopes.outer_scope_id(self.work, tok)

    # -- moving on ------------------------------------------------------------------------
    def leave(
        self,
        tok: Token,
        flows: Iterable[n.Flow] | None = None,
        *,
        scope_id: str | None = None,
        keep_scope: bool = True,
    ) -> list[Token]:
        """Complete ``tok`` and put a new Ready token on each flow (all outgoing by default).

        Leaving an activity with its own scope applies its output mappings first; an
        inner instance of a multi-instance activity follows no flow (the body does). A
        node with end listeners (that no inline step ran) waits for a worker to run them
        first: nothing is returned then (:meth:`listen_last`)."""
        if self.model.listens and self.listen_last(
            tok, flows, scope_id=scope_id, keep_scope=keep_scope
        ):
            return []
        scope = tok.scope_id if keep_scope else scope_id
        follow = True
        if keep_scope and self.model.scoped:
            ok, scope, follow = scopes.leaving(self, tok)
            if not ok:
                return []
        if flows is None and follow and tok.node_id in self.model.branching:
            # An activity with conditional or default flows: evaluated once its outputs
            # are written, in the scope the next tokens run in; none taken is an incident
            # on the activity, as at an exclusive gateway.
            seen = (
                variables.visible(self.work, scope)
                if scope is not None and self.model.scoped
                else self.work.instance.variables
            )
            node = self.model.node(tok.node_id)
            default = node.default_flow if isinstance(node, n.Activity) else None
            where = f"activity {tok.node_id}"
            taken = inclusive.take(self.model.outgoing[tok.node_id], default, seen, where)
            if isinstance(taken, str):
                tok = self.work.token(tok.id)
                if tok.state is TokenState.WAITING:  # a user task, sub-process or call
                    tok = self.work.transition(tok.id, TokenState.READY)
                self.fail_token(tok, taken)
                return []
            flows = taken
        if tok.state is not TokenState.COMPLETED:
            before = tok
            tok = self.work.transition(tok.id, TokenState.COMPLETED)
            if before.node_id in self.model.compensable:
                compensation.remember(self, before)
        self.cancel_boundaries(tok)
        if not follow:
            return []
        chosen = self.model.outgoing[tok.node_id] if flows is None else tuple(flows)
        out = []
        for flow in chosen:
            new = self.work.create_token(flow.target, scope_id=scope, parent_id=tok.id)
            target = self.model.nodes.get(flow.target) if self.model.listens else None
            if flow.listeners or (target is not None and target.listens_first):
                # the flow it came by: its take listeners, and a join's arrival, later
                via = listening.Pending(via=flow.id)
                new = self.work.set_listening(new.id, listening.encode(via))
            out.append(new)
            self._queue.append(new.id)
        return out

    def continue_tokens(self, tokens: Iterable[Token]) -> None:
        self._queue.extend(t.id for t in tokens)

    def cancel_boundaries(self, tok: Token) -> None:
        """Cancel the pending boundary timers and the open message and signal waits of
        boundary events of an activity its token left."""
        if tok.node_id not in self.model.boundaries or self.is_inner(tok):
            return
        for timer in self.work.items_of(Timer, tok.id):
            if timer.kind == "timeout" and timer.state is TimerState.PENDING:
                self.work.move(timer, TimerState.CANCELLED)
        if messages.has_event_boundaries(self, tok.node_id):
            messages.cancel_of_token(self, tok, boundaries_only=True)

    def stop_token(self, tok: Token, target: TokenState = TokenState.TERMINATED, **kw: Any) -> None:
        """End a live token and cancel whatever it waits on (task, timer, incident)."""
        w = self.work
        self.cancel_wait(tok)
        if tok.state is TokenState.CREATED:
            tok = w.transition(tok.id, TokenState.READY)
        self.cancel_boundaries(tok)
        w.transition(tok.id, target, **kw)
        if self.model.scoped:
            scopes.stopped(self, tok)

    def cancel_wait(self, tok: Token) -> None:
        """Cancel what a token waits on (user or external task, timer, a scope and
        everything in it, a called instance) and its incidents."""
        w = self.work
        if tok.blocked_kind is BlockKind.SCOPE and tok.blocked_id:
            scopes.terminate(self, tok.blocked_id, f"{tok.node_id} ended")
        elif tok.blocked_kind is BlockKind.CALL_ACTIVITY and tok.blocked_id:
            calls.terminate_child(
                self, tok.blocked_id, f"its caller's token at {tok.node_id} ended"
            )
        if tok.blocked_kind is BlockKind.USER_TASK and tok.blocked_id:
            task = w.item(UserTask, tok.blocked_id)
            if task is not None and task.state is UserTaskState.OPEN:
                task = w.move(task, UserTaskState.CANCELLED, completed_at=w.now)
                task_events.cancelled(self, tok, task)
            task_events.closed(self, tok)
        elif tok.state in (TokenState.READY, TokenState.EXECUTING, TokenState.FAILED):
            task_events.cancel_listened(self, tok)  # an open task whose listeners run
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
        elif tok.blocked_kind in SUBSCRIBED and tok.blocked_id:
            messages.cancel(self, tok.blocked_id)
        elif tok.blocked_kind is BlockKind.EVENT_GATEWAY:
            messages.cancel_of_token(self, tok)
            for pending in w.items_of(Timer, tok.id):
                if pending.state is TimerState.PENDING:
                    w.move(pending, TimerState.CANCELLED)
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
        self.terminating = True
        try:
            for tok in self.work.live_tokens():
                current = self.work.tokens[tok.id]  # ending a scope ends the tokens inside it
                if current.id != except_token and current.state in LIVE_TOKEN_STATES:
                    self.stop_token(current, payload={"reason": reason})
        finally:
            self.terminating = False
        self.work.to_dispatch.clear()

    def settle_instance(self) -> None:
        """Complete the instance when no live token is left (event sub-process listeners
        end with it); a called instance hands its results to its caller."""
        w = self.work
        if w.instance.state not in (InstanceState.ACTIVE, InstanceState.SUSPENDED):
            return
        live = w.live_tokens()
        if self.model.scoped:
            if any(not scopes.is_listener(self, t) for t in live):
                return
            self.hooks.disarm(self, None)
        elif live:
            return
        if not self.process_ended and self._listen_process_end():
            return
        w.set_state(InstanceState.COMPLETED)
        if w.instance.parent_id is not None:
            calls.child_completed(self)

    def _listen_process_end(self) -> bool:
        """The process's end listeners run on a worker before the instance completes: a
        token at the node the last token ended at waits for one (False: none to run)."""
        if not listening.process_listeners(self.model, "end"):
            return False
        ended = [t for t in self.work.tokens.values() if t.state is TokenState.COMPLETED]
        if not ended:
            return False  # nothing ended in this transaction: completed some other way
        last = max(ended, key=lambda t: t.updated_at)
        tok = self.work.create_token(last.node_id, scope_id=None, parent_id=last.id)
        state = listening.Pending(phase=listening.LAST, process="end", flows=())
        self.work.set_listening(tok.id, listening.encode(state))
        self.work.to_dispatch.append(tok.id)
        return True

    def fail_token(self, tok: Token, error: str, *, incident_type: str = "failedGateway") -> None:
        """A node could not proceed (no gateway flow matched, a timer could not be set, the
        output mapping of a completed user or external task failed)."""
        if tok.state is TokenState.WAITING:  # a task, sub-process or call that was leaving
            tok = self.work.transition(tok.id, TokenState.READY)
        if tok.state is TokenState.READY:
            tok = self.work.transition(tok.id, TokenState.EXECUTING, attempt=tok.attempt + 1)
        self.work.transition(tok.id, TokenState.FAILED, error=error)
        self.work.open_incident(tok, incident_type, error)

    def enter_activity(self, tok: Token) -> bool:
        """Schedule the activity's boundary timers; False when that failed the token. (An
        inner instance of a multi-instance activity has none: they are the body's.)"""
        if tok.node_id not in self.model.boundaries or self.is_inner(tok):
            return True
        timers.schedule_boundaries(self, tok)
        if self.work.token(tok.id).state is TokenState.READY:
            messages.subscribe_boundaries(self, tok)
        return self.work.token(tok.id).state is TokenState.READY

    def is_inner(self, tok: Token) -> bool:
        """Whether ``tok`` runs one inner instance of a multi-instance activity."""
        if tok.scope_id is None or not self.model.scoped:
            return False
        return scopes.is_inner(self.work, tok)
