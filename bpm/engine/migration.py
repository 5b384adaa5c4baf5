"""Process instance migration (issue 22, items 3 and 4): move running instances to another
version of their process, Camunda 7's ``/migration/execute``, plus a dry run per instance
and an undo.

A migration applies a :class:`~bpm.engine.migration_plan.MigrationPlan` to each chosen
instance under its lock. Every work item keeps its id and moves to the target version:
tokens (waits, joins, transition instances), scopes (sub-processes, multi-instance bodies
and inner instances, forks with their join counts, event sub-processes), timers (planned
again from the target's definition when the instruction says ``updateEventTrigger``),
message and signal waits (the target's name with ``updateEventTrigger``), external tasks
(their lock and worker untouched: the worker completes with the lock it holds), user tasks,
incidents and the compensation log. Boundary events and event sub-processes the target
adds to an active activity or scope are armed; those the plan does not map are removed.

An instance migrates only if every activity where something of it stands is mapped:
otherwise it fails, naming the activity (an activity the target removed with a token on
it). :func:`execute` moves every chosen instance in one transaction or none
(:class:`MigrationError` with a report per instance that cannot move); :func:`dry_run` runs
the plan on each instance in a transaction that is rolled back, and reports where its
tokens and waits would stand. Each executed migration writes, per instance, one
``instance_migrated`` history event holding what undo needs (the plan and the tokens
afterwards: the *snapshot*) and one ``Migrate`` entry of the operation log with its author
and annotation; :func:`undo` moves the instances that did not advance since back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bpm.engine.activity_tree import MULTI_INSTANCE_BODY, is_listener
from bpm.engine.migration_plan import (
    MigrationPlan,
)
from bpm.engine.unit import Unit
from bpm.errors import InvalidOperation
from bpm.kinds import KINDS
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime import compensation, eventsub, messages, timers
from bpm.runtime.records import (
    ExternalTask,
    Incident,
    ProcessDefinition,
    Scope,
    Subscription,
    Timer,
    Token,
    UserTask,
)
from bpm.runtime.states import (
    LIVE_TOKEN_STATES,
    CompensableState,
    IncidentState,
    InstanceState,
    ScopeKind,
    ScopeState,
    SubscriptionState,
    TaskState,
    TimerState,
    UserTaskState,
)
from bpm.runtime.walker import Walker
from bpm.runtime.work import InstanceWork
from bpm.store import migration as store
from bpm.timeexpr import TimerError

#: Camunda's ``operationType`` of a migration in the operation log.
OPERATION_TYPE = "Migrate"
#: The history event of a migrated instance (it holds the undo snapshot).
EVENT = "instance_migrated"
#: Instances one synchronous migration (or dry run) may take; more: a batch.
MAX_SYNC_INSTANCES = 1000
#: The reason removed listeners carry in the trail.
REASON = "removed by migration"

_REGIONS = (
    ScopeKind.SUBPROCESS,
    ScopeKind.EVENT_SUBPROCESS,
    ScopeKind.MULTI_INSTANCE,
    ScopeKind.INNER_INSTANCE,
    ScopeKind.ACTIVITY,
)


class MigrationError(InvalidOperation):
    """Some chosen instances cannot migrate (Camunda's
    ``MigratingProcessInstanceValidationException``); nothing was changed. :attr:`reports`
    has one entry per instance that cannot, with its failures."""

    def __init__(self, message: str, reports: Sequence[InstanceReport]) -> None:
        super().__init__(message)
        self.reports = tuple(reports)


@dataclass(frozen=True)
class Wait:
    """Something an instance waits for after the migration (dry run): a user or external
    task, a timer, a message or signal wait, at ``activity_id``."""

    activity_id: str
    kind: str
    id: str


@dataclass(frozen=True)
class InstanceReport:
    """What the plan does (or would do) to one instance: whether it can migrate, the
    failures that stop it, and (dry run) the activities its tokens would stand at and what
    it would wait for."""

    instance_id: str
    can_migrate: bool
    failures: tuple[str, ...] = ()
    activities: tuple[str, ...] = ()
    waits: tuple[Wait, ...] = ()


@dataclass(frozen=True)
class MigrationResult:
    """An executed migration: its operation id (``bpm migrate --undo`` takes it) and the
    instances it moved."""

    operation_id: str
    instance_ids: tuple[str, ...]


@dataclass(frozen=True)
class UndoResult:
    """An undo: its own operation id, the instances moved back, and those refused with
    the reason (advanced since, ended, migrated again)."""

    operation_id: str
    undone: tuple[str, ...]
    refused: Mapping[str, str] = field(default_factory=dict)


# -- one instance ----------------------------------------------------------------------------


class _Migrator:
    """One instance being migrated, inside a unit of work (under its lock)."""

    def __init__(
        self,
        unit: Unit,
        work: InstanceWork,
        plan: MigrationPlan,
        source: ProcessModel,
        target: ProcessModel,
        target_definition: ProcessDefinition,
    ) -> None:
        self.unit, self.work, self.plan = unit, work, plan
        self.source, self.target, self.tdef = source, target, target_definition
        self.map = {i.source: i for i in plan.instructions}
        self.targets = {i.target for i in plan.instructions}
        self.replanned: dict[str, str] = {}  # timer id -> its fire time before
        self.renamed: dict[str, str] = {}  # subscription id -> its name before

    def _walker(self, model: ProcessModel) -> Walker:
        cfg = self.unit.core.config
        return Walker(
            self.work,
            model,
            KINDS.behaviours,
            self.unit,
            max_steps=cfg.max_steps_per_transaction,
            decider=self.unit,
            hooks=KINDS.hooks,
        )

    # -- reading everything that moves ------------------------------------------------------
    def load(self) -> None:
        w = self.work
        for scope in store.active_scopes(self.unit.conn, w.instance.id):
            w.adopt(scope)
        # one query per kind for every live token (not one per token and kind)
        tokens = [t.id for t in self.live()]
        conn, iid = self.unit.conn, w.instance.id
        w.adopt_of_tokens(Timer, store.items_of_tokens(conn, Timer, iid, tokens), tokens)
        w.adopt_of_tokens(
            Subscription, store.items_of_tokens(conn, Subscription, iid, tokens), tokens
        )
        w.adopt_of_tokens(
            ExternalTask, store.items_of_tokens(conn, ExternalTask, iid, tokens), tokens
        )
        w.adopt_of_tokens(UserTask, store.items_of_tokens(conn, UserTask, iid, tokens), tokens)
        w.adopt_of_tokens(Incident, store.items_of_tokens(conn, Incident, iid, tokens), tokens)
        compensation.records(w)

    def live(self) -> list[Token]:
        return [t for t in self.work.tokens.values() if t.state in LIVE_TOKEN_STATES]

    def _items(self, kind: type[Any]) -> list[Any]:
        return list(self.work.item_changes[kind].records.values())

    def scopes(self) -> list[Scope]:
        return [s for s in self._items(Scope) if s.state is ScopeState.ACTIVE]

    def timers(self) -> list[Timer]:
        return [x for x in self._items(Timer) if x.state is TimerState.PENDING]

    def subscriptions(self) -> list[Subscription]:
        return [x for x in self._items(Subscription) if x.state is SubscriptionState.OPEN]

    def is_boundary(self, node_id: str) -> bool:
        node = self.source.nodes.get(node_id)
        return node is not None and node.host is not None

    # -- can it migrate? -------------------------------------------------------------------
    def check(self) -> list[str]:
        inst = self.work.instance
        if inst.state not in (InstanceState.ACTIVE, InstanceState.SUSPENDED):
            return [
                f"process instance {inst.id} is {inst.state.value}; only a running one migrates"
            ]
        if inst.definition_id != self.plan.source_definition_id:
            return [
                f"process instance {inst.id} runs definition '{inst.definition_id}', not the "
                f"plan's source '{self.plan.source_definition_id}'"
            ]
        unmapped: dict[str, str] = {}
        listeners = {t.id for t in self.live() if is_listener(self.source, t)}
        for tok in self.live():
            if tok.id not in listeners and tok.node_id not in self.map:
                unmapped.setdefault(tok.node_id, "a token")
        for scope in self.scopes():
            if scope.kind in _REGIONS and scope.node_id not in self.map:
                unmapped.setdefault(scope.node_id, "an active scope")
        waits: list[Timer | Subscription] = [*self.timers(), *self.subscriptions()]
        for item in waits:
            if item.token_id in listeners or self.is_boundary(item.node_id):
                continue
            if item.node_id not in self.map:
                unmapped.setdefault(item.node_id, "a wait")
        failures = []
        for comp in compensation.records(self.work):
            if comp.state is CompensableState.COMPENSATED:
                continue
            if comp.node_id not in self.map:
                unmapped.setdefault(comp.node_id, "a completed run to compensate")
            elif comp.handler_node and not self.target.compensation_handlers.get(
                self.map[comp.node_id].target
            ):
                failures.append(
                    f"activity '{comp.node_id}' completed and can be compensated, but its "
                    f"target '{self.map[comp.node_id].target}' has no compensation handler"
                )
        for activity, what in sorted(unmapped.items()):
            shown = activity.removesuffix(MULTI_INSTANCE_BODY)
            if shown in self.target.nodes:
                failures.append(
                    f"activity '{shown}' has {what} but no instruction maps it: add one "
                    f"(generate maps activities with the same id and kind)"
                )
            else:
                failures.append(
                    f"activity '{shown}' has {what} but does not exist in the target "
                    f"definition '{self.plan.target_definition_id}': map it to an activity "
                    "of the target, or move the token first (modification)"
                )
        return failures

    # -- moving it ---------------------------------------------------------------------------
    def apply(
        self, *, by: str, annotation: str | None, operation_id: str, undo_of: str | None
    ) -> None:
        w, m = self.work, self.map
        old = self._walker(self.source)
        for tok in self.live():  # listeners of event sub-processes the plan drops
            if is_listener(self.source, tok) and tok.node_id not in m:
                old.stop_token(w.tokens[tok.id], payload={"reason": REASON})
        for timer in self.timers():  # waits of boundary events the plan drops
            if self.is_boundary(timer.node_id) and timer.node_id not in m:
                w.move(timer, TimerState.CANCELLED)
        for sub in self.subscriptions():
            if self.is_boundary(sub.node_id) and sub.node_id not in m:
                w.move(sub, SubscriptionState.CANCELLED)
        variables = dict(w.instance.variables)
        for tok in self.live():
            if tok.node_id in m:
                w.token_changes.put(tok.id, replace(tok, node_id=m[tok.node_id].target))
        for scope in self.scopes():
            if scope.node_id in m:
                w.scope_changes.put(scope.id, replace(scope, node_id=m[scope.node_id].target))
        for timer in self.timers():
            ins = m.get(timer.node_id)
            if ins is None:
                continue
            fire_at = timer.fire_at
            spec = n.timer_of(self.target.nodes.get(ins.target))
            if ins.update_event_trigger and spec is not None:
                try:
                    fire_at = timers.fire_time(spec, variables, w.now)
                except TimerError as exc:
                    raise InvalidOperation(f"timer of '{ins.target}': {exc}") from exc
                self.replanned[timer.id] = timer.fire_at.isoformat()
            w.item_changes[Timer].put(timer.id, replace(timer, node_id=ins.target, fire_at=fire_at))
        for sub in self.subscriptions():
            ins = m.get(sub.node_id)
            if ins is None:
                continue
            name = sub.name
            ref = getattr(self.target.nodes.get(ins.target), "event", None)
            if ins.update_event_trigger and isinstance(ref, n.EventRef) and ref.name != name:
                self.renamed[sub.id] = name
                name = ref.name
            w.item_changes[Subscription].put(
                sub.id, replace(sub, node_id=ins.target, name=name, definition_id=self.tdef.id)
            )
        for task in self._items(ExternalTask):
            if task.state not in (TaskState.COMPLETED, TaskState.CANCELLED) and task.node_id in m:
                w.item_changes[ExternalTask].put(
                    task.id,
                    replace(
                        task,
                        node_id=m[task.node_id].target,
                        definition_id=self.tdef.id,
                        definition_key=self.tdef.key,
                    ),
                )
        for ut in self._items(UserTask):
            if ut.state is UserTaskState.OPEN and ut.node_id in m:
                w.item_changes[UserTask].put(ut.id, replace(ut, node_id=m[ut.node_id].target))
        for inc in self._items(Incident):
            if inc.state is IncidentState.OPEN and inc.node_id in m:
                w.item_changes[Incident].put(inc.id, replace(inc, node_id=m[inc.node_id].target))
        for comp in compensation.records(w):
            if comp.state is not CompensableState.COMPENSATED and comp.node_id in m:
                new = m[comp.node_id].target
                handler = self.target.compensation_handlers.get(new) if comp.handler_node else None
                w.item_changes[type(comp)].put(
                    comp.id, replace(comp, node_id=new, handler_node=handler)
                )
        source_id = w.instance.definition_id
        w.instance = replace(w.instance, definition_id=self.tdef.id, definition_key=self.tdef.key)
        w.instance_dirty = True
        self._arm_new(self._walker(self.target))
        if self.plan.variables:
            w.merge_variables(dict(self.plan.variables), source=None)
        w.record(
            EVENT,
            payload={
                "by": by,
                "annotation": annotation,
                "operation": operation_id,
                **({"undo_of": undo_of} if undo_of else {}),
                "source": source_id,
                "target": self.tdef.id,
                "instructions": [i.to_camunda() for i in self.plan.instructions],
                "replanned": self.replanned,
                "renamed": self.renamed,
                "tokens": snapshot(w),
            },
        )

    def _arm_new(self, walker: Walker) -> None:
        """Arm the boundary events and event sub-processes the target adds to what is
        active (no instruction maps anything to them)."""
        w = self.work
        for tok in self.live():
            if is_listener(self.target, tok) or walker.is_inner(tok):
                continue
            added = [
                b.id
                for b in self.target.boundaries.get(tok.node_id, ())
                if b.id not in self.targets
            ]
            if added:
                timers.schedule_boundaries(walker, tok, only=added)
                messages.subscribe_boundaries(walker, w.tokens[tok.id], only=added)
        regions: list[tuple[str | None, str | None]] = [(None, None)]
        regions += [
            (s.node_id, s.id)
            for s in self.scopes()
            if s.kind in (ScopeKind.SUBPROCESS, ScopeKind.INNER_INSTANCE)
            and s.node_id in self.target.nodes
            and bool(self.target.event_subprocesses(s.node_id))
        ]
        for container, scope_id in regions:
            added = [
                esp.id
                for esp in self.target.event_subprocesses(container)
                if esp.id not in self.targets
                and (trigger := self.target.trigger_of(esp.id)) is not None
                and trigger.id not in self.targets
            ]
            if added:
                eventsub.arm(walker, container, scope_id, only=added)


def snapshot(work: InstanceWork) -> list[list[str | None]]:
    """Where the instance's live tokens stand: what undo compares to tell whether it
    advanced since (sorted, so two reads of the same state are equal)."""
    return sorted(
        [
            t.id,
            t.node_id,
            t.state.value,
            t.blocked_kind.value if t.blocked_kind else None,
            t.blocked_id,
        ]
        for t in work.tokens.values()
        if t.state in LIVE_TOKEN_STATES
    )
