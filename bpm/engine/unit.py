"""The unit of work: every engine operation that changes instances goes through it.

    with unit_of_work(core, now) as unit:
        work = unit.work(instance_id)        # lock the instance row, load its live tokens
        ...                                  # change it: InstanceWork / Walker, pure
    # flushed and committed here; then the Ready inline steps are published

It owns the order of things: the instance locks first (several instances: in one
statement, in a fixed order), then the reads, the runtime's decisions in memory, one write
per table, the commit, and only after the commit the publishing of Ready steps. An
exception anywhere before the commit rolls everything back and publishes nothing.

Call trees, and why a transaction may lock more of one later
------------------------------------------------------------

Instances started by call activities form a tree. Every lock statement also locks the
*root* of the tree of each instance it locks (the row names its root; roots come first in
the lock order, then ids), so every transaction that changes any instance of a tree holds
its root: the root's row lock is the tree's mutex. Hence a transaction that holds a root
may lock further instances of that tree at any time (:meth:`Unit.walker_of`: a child
completing continues its caller; terminating a caller terminates its children, three
levels down or more): nobody else can hold them without holding the root, so it never
waits for a transaction that waits for it. Instances of *other* trees are never locked
later: that would break the order. A timer poller that skips busy rows takes roots first
and then only members of the trees it got (:func:`bpm.store.work.lock_instances`), so it
never holds a member without its root either.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from bpm.engine.core import EngineCore
from bpm.engine.decision_history import Caller
from bpm.engine.decisions import DecisionCall, Evaluated, prepare_call, record_call
from bpm.engine.mailbox import deliver_buffered
from bpm.errors import BpmError, NotFound
from bpm.events import ended_by
from bpm.expressions_feel import CLOCK as FEEL_CLOCK
from bpm.kinds import KINDS
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.changes import Item
from bpm.runtime.hooks import Decided, Walk
from bpm.runtime.records import Instance, ProcessDefinition, Token
from bpm.runtime.states import InstanceState
from bpm.runtime.walker import Walker
from bpm.runtime.work import InstanceWork
from bpm.store import definitions as defs_store
from bpm.store import work as work_store
from bpm.tracing import TraceContext


class Unit:
    """One transaction on one or more instances (see the module docstring)."""

    def __init__(self, core: EngineCore, conn: Connection, now: datetime) -> None:
        self.core = core
        self.conn = conn
        self.now = now
        self.works: dict[str, InstanceWork] = {}
        self.dispatch_after: list[str] = []
        # With a tracer: the trace context of the span that changed an instance (a step, an
        # external task's complete), which the steps it made Ready are published with.
        self.traces: dict[str, TraceContext] = {}
        # ... except for these steps (by token id): a retried step's next attempt keeps the
        # parent of the attempt that failed, so a step's attempts are siblings.
        self.token_traces: dict[str, TraceContext] = {}
        self._locked = False
        self._walkers: dict[str, Walker] = {}
        self._roots: set[str] = set()  # call trees whose root this transaction holds
        # The names of each instance's variables as read (or started with): what a later
        # write creates or updates (conditional events' camunda:variableEvents).
        self.names_before: dict[str, frozenset[str]] = {}

    @property
    def max_depth(self) -> int:
        return self.core.config.max_call_depth

    def _limits(self, work: InstanceWork) -> InstanceWork:
        """The configured bounds on what a write may add to an instance's variables."""
        work.max_update_bytes = self.core.config.max_update_bytes
        work.max_instance_variable_bytes = self.core.config.max_instance_variable_bytes
        work.history_values = self.core.config.history_values
        return work

    def _adopt(self, found: dict[str, InstanceWork]) -> None:
        """Keep what was locked (a member whose root is not held would be left unused)."""
        for work in found.values():
            self._limits(work)
            self.names_before.setdefault(work.instance.id, frozenset(work.instance.variables))
            if work.instance.root_id is None:
                self._roots.add(work.instance.id)
        for iid, work in found.items():
            if work.instance.tree_root in self._roots:
                self.works[iid] = work

    def lock(
        self, instance_ids: Sequence[str], *, skip_locked: bool = False
    ) -> dict[str, InstanceWork]:
        """Lock and load the instances (and their trees' roots), all in one go (a second
        call would break the lock order). Missing instances (and with ``skip_locked``
        busy ones) are missing from the result."""
        if self._locked:
            raise RuntimeError("a unit of work locks its instances once, all together")
        self._locked = True
        found, _ = work_store.load(
            self.conn,
            instance_ids,
            self.now,
            max_variable_bytes=self.core.config.max_variable_bytes,
            skip_locked=skip_locked,
        )
        self._adopt(found)
        return {i: self.works[i] for i in instance_ids if i in self.works}

    def drop(self, instance_id: str) -> None:
        """Forget the in-memory changes of one instance (nothing of it is written)."""
        self.works.pop(instance_id, None)
        self._walkers.pop(instance_id, None)

    def work_of(self, kind: type[Item], item_id: str) -> InstanceWork | None:
        """Lock and load the instance that a work item (an external or user task, an
        incident) belongs to, found through the item in the same statement; None when the
        item does not exist."""
        if self._locked:
            raise RuntimeError("a unit of work locks its instances once, all together")
        self._locked = True
        found, owner = work_store.load(
            self.conn,
            (),
            self.now,
            max_variable_bytes=self.core.config.max_variable_bytes,
            owner_of=(kind, item_id),
        )
        self._adopt(found)
        return self.works.get(owner) if owner else None

    def works_of(self, kind: type[Item], item_ids: Sequence[str]) -> dict[str, InstanceWork]:
        """Lock and load the instances that the work items ``item_ids`` belong to, found
        through the items in the same statements, each item adopted by its instance's
        change set (one round trip for a whole batch). Returns the change set of each item
        found, by item id."""
        if self._locked:
            raise RuntimeError("a unit of work locks its instances once, all together")
        self._locked = True
        found, owner_of = work_store.load_through(
            self.conn,
            kind,
            item_ids,
            self.now,
            max_variable_bytes=self.core.config.max_variable_bytes,
        )
        self._adopt(found)
        return {i: self.works[o] for i, o in owner_of.items() if o in self.works}

    def work(self, instance_id: str) -> InstanceWork:
        """Lock and load one instance; :class:`NotFound` when it does not exist."""
        found = self.lock([instance_id]).get(instance_id)
        if found is None:
            raise NotFound(f"process instance {instance_id} does not exist")
        return found

    def new(self, instance: Instance) -> InstanceWork:
        """The change set of an instance this transaction creates."""
        work = InstanceWork(
            instance=instance,
            tokens={},
            now=self.now,
            instance_new=True,
            max_variable_bytes=self.core.config.max_variable_bytes,
        )
        self._limits(work)
        self.works[instance.id] = work
        self.names_before[instance.id] = frozenset(instance.variables)
        if instance.root_id is None:
            self._roots.add(instance.id)
        return work

    def model(self, definition_id: str) -> ProcessModel:
        return self.core.model(self.conn, definition_id)

    def walker(self, work: InstanceWork) -> Walker:
        """The walker of an instance of this unit (one per instance, so a called instance
        that completes continues the walk its caller is in)."""
        found = self._walkers.get(work.instance.id)
        if found is None or found.work is not work:
            found = Walker(
                work,
                self.model(work.instance.definition_id),
                KINDS.behaviours,
                self,
                max_steps=self.core.config.max_steps_per_transaction,
                decider=self,
                hooks=KINDS.hooks,
            )
            self._walkers[work.instance.id] = found
        return found

    # -- relatives: the other instances of a call tree (bpm.runtime.calls.Relatives) -------
    def walker_of(self, instance_id: str) -> Walker | None:
        """An instance of a call tree this unit holds the root of, locked and loaded on
        first use (see the module docstring); None when it does not exist."""
        work = self.works.get(instance_id)
        if work is None:
            found, _ = work_store.load(
                self.conn,
                [instance_id],
                self.now,
                max_variable_bytes=self.core.config.max_variable_bytes,
            )
            work = found.get(instance_id)
            if work is None:
                return None
            self._limits(work)
            if work.instance.tree_root not in self._roots:
                raise RuntimeError(
                    f"instance {instance_id} is not in a call tree this transaction holds"
                )
            for iid, other in found.items():
                self.works.setdefault(iid, other)
                self.names_before.setdefault(iid, frozenset(other.instance.variables))
            work = self.works[instance_id]
        return self.walker(work)

    def called_definition(
        self, node: n.CallActivity, key: str, caller_definition_id: str
    ) -> ProcessDefinition | None:
        if node.binding is n.CallBinding.DEPLOYMENT:
            caller = defs_store.by_id(self.conn, caller_definition_id)
            deployment = caller.deployment_id if caller else None
            return defs_store.in_deployment(self.conn, key, deployment)
        if node.binding is n.CallBinding.VERSION:
            return defs_store.by_version(self.conn, key, int(node.version or 0))
        if node.binding is n.CallBinding.VERSION_TAG:
            tagged = defs_store.by_version_tag(self.conn, key, node.version or "")
            if len(tagged) > 1:
                # as Camunda 7: a tag two versions carry names no one process to call
                raise BpmError(
                    f"versions {tagged[1].version} and {tagged[0].version} of '{key}' both "
                    f"have version tag '{node.version}': deploy one tag once"
                )
            return tagged[0] if tagged else None
        return defs_store.latest(self.conn, key)

    def start_child(
        self,
        definition: ProcessDefinition,
        caller: Walk,
        token: Token,
        child_id: str,
        variables: dict[str, Any],
        business_key: str | None,
    ) -> Walker:
        parent = caller.work.instance
        child = Instance(
            id=child_id,
            definition_id=definition.id,
            definition_key=definition.key,
            state=InstanceState.ACTIVE,
            variables=variables,
            created_at=self.now,
            updated_at=self.now,
            business_key=business_key,
            parent_id=parent.id,
            parent_token_id=token.id,
            root_id=parent.tree_root,
            call_depth=parent.call_depth + 1,
        )
        work = self.new(child)
        walker = self.walker(work)
        work.record(
            "instance_started",
            token_id=token.id,
            payload={
                "definition": definition.id,
                "business_key": business_key,
                "variables": sorted(variables),
                "called_by": {"instance": parent.id, "token": token.id, "node": token.node_id},
            },
        )
        walker.begin(walker.model.initial_start().id)
        return walker

    # -- decisions: what business rule tasks evaluate (bpm.runtime.decisions.Decider) -----
    def decide(
        self,
        walker: Walk,
        tok: Token,
        node: n.DecisionTask,
        key: str,
        variables: Mapping[str, Any],
    ) -> Decided:
        inst = walker.work.instance
        deployment_id: str | None = None
        if node.binding is n.CallBinding.DEPLOYMENT:
            own = defs_store.by_id(self.conn, inst.definition_id)
            deployment_id = own.deployment_id if own is not None else None
        call = DecisionCall(
            key,
            binding=node.binding.value,
            version=int(node.version or 0) if node.binding is n.CallBinding.VERSION else None,
            version_tag=node.version if node.binding is n.CallBinding.VERSION_TAG else None,
            result_variable=node.result_variable,
            map_result=node.map_result,
        )
        caller = Caller(
            process_definition_id=inst.definition_id,
            process_definition_key=inst.definition_key,
            process_instance_id=inst.id,
            activity_id=node.id,
        )
        updates, done = prepare_call(self.conn, call, variables, self.now, caller, deployment_id)
        definition = done.definition
        payload = {
            "decision": definition.key,
            "definition": definition.id,
            "version": definition.version,
            "decision_instance": done.rows[0].id,
            "result_variable": node.result_variable,
        }
        return Decided(updates, payload, (done,))

    def record(self, decided: Decided) -> None:
        for done in decided.history:
            assert isinstance(done, Evaluated)
            record_call(self.conn, done)

    def flush(self, *, commit: bool = False) -> None:
        """Write every change; ``commit``: and end the transaction in the same round trip
        (only the unit's own, outermost transaction)."""
        # Waits opened in this transaction take the buffered messages meant for them first.
        deliver_buffered(self.conn, list(self.works.values()), self.walker, self.now)
        settle = KINDS.hooks.settle_unit
        if settle is not None:  # conditional events: the waits opened, the variables changed
            settle(lambda: list(self.works.values()), self.walker, self.names_before)
        work_store.flush(self.conn, [w for w in self.works.values() if w.changed], commit=commit)

    @property
    def ready(self) -> list[str]:
        """Ready inline steps to publish after the commit."""
        out = list(self.dispatch_after)
        for work in self.works.values():
            out.extend(work.to_dispatch)
        return out

    def ready_by_trace(self) -> list[tuple[list[str], TraceContext | None]]:
        """:attr:`ready`, grouped by the trace context to publish them with (None: the
        current one)."""
        plain = list(self.dispatch_after)
        traced: list[tuple[list[str], TraceContext | None]] = []
        for instance_id, work in self.works.items():
            trace = self.traces.get(instance_id)
            own = [t for t in work.to_dispatch if t in self.token_traces]
            for token_id in own:
                traced.append(([token_id], self.token_traces[token_id]))
            rest = [t for t in work.to_dispatch if t not in self.token_traces]
            if trace is None:
                plain.extend(rest)
            elif rest:
                traced.append((rest, trace))
        return [(plain, None), *traced]


@contextmanager
def unit_of_work(core: EngineCore, now: datetime | None = None) -> Iterator[Unit]:
    """One engine operation: lock, load, change, flush, commit, then publish."""
    at = core.now(now)
    clock = FEEL_CLOCK.set(at)  # FEEL's now() in this operation's expressions
    try:
        with core.tx() as conn:
            unit = Unit(core, conn, at)
            yield unit
            # the writes and the COMMIT go in one round trip when the transaction is the
            # engine's own (the block's exit then commits nothing more)
            unit.flush(commit=core.owns_transaction(conn))
    finally:
        FEEL_CLOCK.reset(clock)
    if core.listeners:
        core.announce_ended([e for w in unit.works.values() if (e := ended_by(w)) is not None])
    if unit.traces or unit.token_traces:
        for ids, trace in unit.ready_by_trace():
            core.dispatch(ids, trace)
    else:
        core.dispatch(unit.ready)
    if core.after_unit:
        works = list(unit.works.values())
        for hook in core.after_unit:
            hook(core, works)
