"""The migration operations (issue 22, items 3 and 4): generate and validate a plan,
execute it on chosen instances, try it first (the dry run), undo it; and
:class:`Migrations`, their face on :class:`bpm.Engine` (``engine.migration``). What a
migration does to one instance: :mod:`bpm.engine.migration`; docs/migration.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from bpm.engine.activity_tree import build_tree
from bpm.engine.batches import MAX_ITEMS as BATCH_MAX_ITEMS
from bpm.engine.batches import Batch, Batches
from bpm.engine.core import EngineCore
from bpm.engine.migration import (
    EVENT,
    MAX_SYNC_INSTANCES,
    OPERATION_TYPE,
    InstanceReport,
    MigrationError,
    MigrationResult,
    UndoResult,
    Wait,
    _Migrator,
    snapshot,
)
from bpm.engine.migration_batch import MIGRATION, plan_params
from bpm.engine.migration_plan import (
    MigrationPlan,
    MigrationPlanError,
    PlanReport,
    check_plan,
    generate,
)
from bpm.engine.oplog import CURRENT_BATCH
from bpm.engine.unit import Unit, unit_of_work
from bpm.errors import BpmError, InvalidOperation, NotFound
from bpm.kinds import KINDS
from bpm.model.process import ProcessModel
from bpm.runtime.records import ProcessDefinition, Subscription, Timer
from bpm.runtime.states import SubscriptionState, TimerState
from bpm.runtime.work import InstanceWork, new_id
from bpm.store import activity_tree as tree_store
from bpm.store import definitions as defs_store
from bpm.store import history as history_store
from bpm.store import migration as store
from bpm.store import operation_log as oplog
from bpm.store.migration import InstanceSelection

# -- plans ---------------------------------------------------------------------------------


def _definitions(
    core: EngineCore, conn: Connection, plan: MigrationPlan
) -> tuple[ProcessModel, ProcessModel, ProcessDefinition]:
    """The source and target models and the target definition; InvalidOperation naming
    what is wrong with the pair (unknown, the same, two process keys)."""
    found: list[ProcessDefinition] = []
    for role, def_id in (
        ("source", plan.source_definition_id),
        ("target", plan.target_definition_id),
    ):
        if not def_id:
            raise InvalidOperation(f"the {role} process definition id is required")
        d = defs_store.by_id(conn, def_id)
        if d is None:
            raise InvalidOperation(f"{role} process definition with id '{def_id}' does not exist")
        found.append(d)
    source, target = found
    if source.key != target.key:
        raise InvalidOperation(
            f"source process definition '{source.id}' (key '{source.key}') and target "
            f"'{target.id}' (key '{target.key}') are versions of different processes; a "
            "migration moves instances between versions of one process"
        )
    return core.model(conn, source.id), core.model(conn, target.id), target


def generate_plan(
    core: EngineCore,
    source_definition_id: str,
    target_definition_id: str,
    *,
    update_event_triggers: bool = False,
    variables: Mapping[str, Any] | None = None,
) -> MigrationPlan:
    """Camunda's ``/migration/generate``: map the activities with the same id and kind."""
    probe = MigrationPlan(source_definition_id, target_definition_id)
    with core.db.connect() as conn:
        source, target, _ = _definitions(core, conn, probe)
    return generate(
        source,
        target,
        source_definition_id,
        target_definition_id,
        update_event_triggers=update_event_triggers,
        variables=variables,
    )


def validate_plan(core: EngineCore, plan: MigrationPlan) -> PlanReport:
    """Camunda's ``/migration/validate`` of a plan alone: the report (empty: usable)."""
    with core.db.connect() as conn:
        source, target, _ = _definitions(core, conn, plan)
    return check_plan(plan, source, target)


def _checked(
    core: EngineCore, conn: Connection, plan: MigrationPlan
) -> tuple[ProcessModel, ProcessModel, ProcessDefinition]:
    source, target, tdef = _definitions(core, conn, plan)
    report = check_plan(plan, source, target)
    if not report.ok:
        raise MigrationPlanError(f"the migration plan is not valid: {report.summary()}", report)
    return source, target, tdef


# -- operations ---------------------------------------------------------------------------


def _annotation(annotation: str | None) -> str | None:
    if annotation is not None and len(annotation) > 4000:
        raise InvalidOperation("the annotation is over 4000 characters")
    return annotation


def _log(
    unit: Unit,
    operation_id: str,
    moved: Sequence[tuple[str, str]],
    tdef: ProcessDefinition,
    *,
    by: str,
    annotation: str | None,
    summary: bool = True,
) -> None:
    """Camunda's entries of a migration: ``processDefinitionId`` per instance (from its
    source to the target), ``nrOfInstances`` and ``async`` once."""

    def entry(
        instance_id: str | None, prop: str, org: str | None, new: str
    ) -> oplog.OperationLogEntry:
        return oplog.OperationLogEntry(
            id=new_id(),
            operation_id=operation_id,
            operation_type=OPERATION_TYPE,
            entity_type="ProcessInstance",
            category="Operator",
            at=unit.now,
            user_id=by,
            instance_id=instance_id,
            definition_id=tdef.id,
            definition_key=tdef.key,
            property=prop,
            org_value=org,
            new_value=new,
            annotation=annotation,
            batch_id=CURRENT_BATCH.get(),
        )

    entries = [entry(iid, "processDefinitionId", src, tdef.id) for iid, src in moved]
    if summary:
        entries.append(entry(None, "nrOfInstances", None, str(len(moved))))
        entries.append(entry(None, "async", None, "false"))
    oplog.append(unit.conn, entries)


def chosen(
    conn: Connection,
    instance_ids: Sequence[str] | None,
    query: InstanceSelection | None,
    *,
    limit: int = MAX_SYNC_INSTANCES,
) -> list[str]:
    """The instances a migration takes: the ids given, plus those the query chooses."""
    ids = list(dict.fromkeys(instance_ids or ()))
    if query is not None:
        ids += [i for i in store.choose(conn, query, limit + 1) if i not in ids]
    if not ids:
        raise InvalidOperation(
            "no process instance chosen: give processInstanceIds or a processInstanceQuery "
            "that matches running instances"
        )
    if len(ids) > limit:
        raise InvalidOperation(
            f"over {limit} process instances chosen; give at most {limit} (a synchronous "
            "migration or dry run takes up to 1000: migrate more as a batch, executeAsync)"
        )
    return ids


def execute(
    core: EngineCore,
    plan: MigrationPlan,
    instance_ids: Sequence[str] | None = None,
    query: InstanceSelection | None = None,
    *,
    skip_custom_listeners: bool = False,
    skip_io_mappings: bool = False,
    by: str | None = None,
    annotation: str | None = None,
    now: datetime | None = None,
    operation_id: str | None = None,
    summary: bool = True,
) -> MigrationResult:
    """Migrate every chosen instance in one transaction, or none: :class:`MigrationPlanError`
    (a bad plan) or :class:`MigrationError` (an instance that cannot migrate), nothing
    changed. ``skip_custom_listeners`` and ``skip_io_mappings`` are accepted: a migration
    runs no listener and no mapping. ``operation_id``: the id undo takes (a batch's items
    share the batch's); ``summary``: write the ``nrOfInstances`` and ``async`` entries
    (a batch's creation writes its own)."""
    del skip_custom_listeners, skip_io_mappings  # nothing a migration does runs them
    annotation = _annotation(annotation)
    who = by or "python"
    operation_id = operation_id or new_id()
    with unit_of_work(core, now) as unit:
        source, target, tdef = _checked(core, unit.conn, plan)
        ids = chosen(unit.conn, instance_ids, query)
        works = unit.lock(ids)
        failed: list[InstanceReport] = []
        moved: list[tuple[str, str]] = []
        for iid in ids:
            work = works.get(iid)
            if work is None:
                failed.append(
                    InstanceReport(iid, False, (f"process instance {iid} does not exist",))
                )
                continue
            mig = _Migrator(unit, work, plan, source, target, tdef)
            mig.load()
            problems = mig.check()
            if problems:
                failed.append(InstanceReport(iid, False, tuple(problems)))
                continue
            moved.append((iid, work.instance.definition_id))
            try:
                mig.apply(by=who, annotation=annotation, operation_id=operation_id, undo_of=None)
            except BpmError as exc:
                failed.append(InstanceReport(iid, False, (str(exc),)))
        if failed:
            first = failed[0]
            raise MigrationError(
                f"{len(failed)} of {len(ids)} process instances cannot migrate; nothing was "
                f"migrated (instance {first.instance_id}: {'; '.join(first.failures)})",
                failed,
            )
        _log(unit, operation_id, moved, tdef, by=who, annotation=annotation, summary=summary)
    return MigrationResult(operation_id, tuple(ids))


class _RolledBack(Exception):
    """Ends a dry run's transaction (rolled back) carrying its report."""

    def __init__(self, report: InstanceReport) -> None:
        super().__init__(report.instance_id)
        self.report = report


def dry_run(
    core: EngineCore,
    plan: MigrationPlan,
    instance_ids: Sequence[str] | None = None,
    query: InstanceSelection | None = None,
    *,
    now: datetime | None = None,
) -> tuple[PlanReport, tuple[InstanceReport, ...]]:
    """Run the plan on each chosen instance in a transaction of its own that is rolled back
    (nothing changes): the plan's report, and per instance whether it can migrate, the
    failures that stop it, or the activities its tokens would stand at and what it would
    wait for afterwards."""
    with core.db.connect() as conn:
        source, target, tdef = _definitions(core, conn, plan)
        ids = chosen(conn, instance_ids, query)
    report = check_plan(plan, source, target)
    if not report.ok:
        why = ("the migration plan is not valid (see its instruction reports)",)
        return report, tuple(InstanceReport(i, False, why) for i in ids)
    at = core.now(now)
    out: list[InstanceReport] = []
    for iid in ids:
        try:
            with core.tx() as conn:
                unit = Unit(core, conn, at)
                work = unit.lock([iid]).get(iid)
                if work is None:
                    raise _RolledBack(
                        InstanceReport(iid, False, (f"process instance {iid} does not exist",))
                    )
                mig = _Migrator(unit, work, plan, source, target, tdef)
                mig.load()
                problems = mig.check()
                if problems:
                    raise _RolledBack(InstanceReport(iid, False, tuple(problems)))
                try:
                    mig.apply(by="dry run", annotation=None, operation_id="dry-run", undo_of=None)
                    unit.flush()
                except BpmError as exc:
                    raise _RolledBack(InstanceReport(iid, False, (str(exc),))) from exc
                raise _RolledBack(_after(conn, iid, target))
        except _RolledBack as done:
            out.append(done.report)
    return report, tuple(out)


def _after(conn: Connection, instance_id: str, target: ProcessModel) -> InstanceReport:
    """Where a migrated instance stands, read back in its (still open) transaction."""
    state = tree_store.live_state(conn, instance_id)
    assert state is not None
    tree = build_tree(
        state.instance, target, state.tokens, state.scopes, state.incidents, KINDS.activity_type
    )
    activities = [x.activity_id for x in tree.walk() if x.parent_activity_instance_id is not None]
    activities += [t.activity_id for t in tree.transitions()]
    waits: list[Wait] = []
    for tok in state.tokens:
        if tok.blocked_kind is not None and tok.blocked_id is not None:
            waits.append(Wait(tok.node_id, tok.blocked_kind.value, tok.blocked_id))
    return InstanceReport(
        instance_id,
        True,
        (),
        tuple(sorted(set(activities))),
        tuple(sorted(waits, key=lambda x: (x.activity_id, x.kind, x.id))),
    )


def undo(
    core: EngineCore,
    operation_id: str,
    *,
    by: str | None = None,
    annotation: str | None = None,
    now: datetime | None = None,
) -> UndoResult:
    """Move the instances migration ``operation_id`` moved back to their old version,
    those that did not advance since (their tokens stand where the migration left them);
    the others are refused, each with the reason. :class:`NotFound` when no migration has
    that id."""
    annotation = _annotation(annotation)
    with core.db.connect() as conn:
        ids = store.migrated_by(conn, operation_id, OPERATION_TYPE)
    if not ids:
        raise NotFound(f"no migration with operation id {operation_id} in the operation log")
    who = by or "python"
    new_op = new_id()
    refused: dict[str, str] = {}
    undone: list[str] = []
    with unit_of_work(core, now) as unit:
        works = unit.lock(ids)
        moved: list[tuple[str, str]] = []
        tdef: ProcessDefinition | None = None
        for iid in ids:
            work = works.get(iid)
            if work is None:
                refused[iid] = "it no longer exists"
                continue
            event = next(
                (
                    e
                    for e in reversed(history_store.events_of(unit.conn, iid))
                    if e.type == EVENT and e.payload.get("operation") == operation_id
                ),
                None,
            )
            if event is None:
                refused[iid] = "its migration snapshot is gone from the history (purged)"
                continue
            payload = event.payload
            if work.instance.ended:
                refused[iid] = f"it is {work.instance.state.value}"
                continue
            if work.instance.definition_id != payload["target"]:
                refused[iid] = (
                    f"it runs '{work.instance.definition_id}' now, not '{payload['target']}' "
                    "(migrated again since)"
                )
                continue
            if snapshot(work) != payload["tokens"]:
                refused[iid] = "it advanced since the migration (its tokens moved)"
                continue
            back = MigrationPlan.from_camunda(
                {
                    "sourceProcessDefinitionId": payload["source"],
                    "targetProcessDefinitionId": payload["target"],
                    "instructions": payload["instructions"],
                }
            ).inverted()
            back = replace(
                back,
                instructions=tuple(
                    replace(i, update_event_trigger=False) for i in back.instructions
                ),
            )
            try:
                source, target, tdef = _checked(core, unit.conn, back)
            except BpmError as exc:
                refused[iid] = f"the way back is not a valid plan: {exc}"
                continue
            mig = _Migrator(unit, work, back, source, target, tdef)
            mig.load()
            problems = mig.check()
            if problems:
                refused[iid] = "; ".join(problems)
                continue
            mig.apply(by=who, annotation=annotation, operation_id=new_op, undo_of=operation_id)
            _restore(work, payload)
            undone.append(iid)
            moved.append((iid, payload["target"]))
        if moved and tdef is not None:
            _log(
                unit,
                new_op,
                moved,
                tdef,
                by=who,
                annotation=annotation or f"undo of {operation_id}",
            )
    return UndoResult(new_op, tuple(undone), refused)


def _restore(work: InstanceWork, payload: Mapping[str, Any]) -> None:
    """Give the timers re-planned and the waits renamed by the migration their old due
    time and name back."""
    for timer_id, due in (payload.get("replanned") or {}).items():
        timer = work.item_if_loaded(Timer, timer_id)
        if timer is not None and timer.state is TimerState.PENDING:
            work.item_changes[Timer].put(
                timer_id, replace(timer, fire_at=datetime.fromisoformat(due))
            )
    for sub_id, name in (payload.get("renamed") or {}).items():
        sub = work.item_if_loaded(Subscription, sub_id)
        if sub is not None and sub.state is SubscriptionState.OPEN:
            work.item_changes[Subscription].put(sub_id, replace(sub, name=name))


#: Instances one migration batch may take (a batch's own bound).
BATCH_LIMIT = BATCH_MAX_ITEMS


class Migrations:
    """``engine.migration``: Camunda's ``runtimeService.createMigrationPlan`` and
    ``newMigration`` in one object. Every method is one operation on the store."""

    def __init__(self, core: EngineCore, batches: Batches) -> None:
        self.core = core
        self.batches = batches

    def generate(
        self,
        source_definition_id: str,
        target_definition_id: str,
        *,
        update_event_triggers: bool = False,
        variables: Mapping[str, Any] | None = None,
    ) -> MigrationPlan:
        """A plan mapping every activity with the same id and kind (``/migration/generate``)."""
        return generate_plan(
            self.core,
            source_definition_id,
            target_definition_id,
            update_event_triggers=update_event_triggers,
            variables=variables,
        )

    def validate(self, plan: MigrationPlan) -> PlanReport:
        """The plan's report: a failure per instruction and variable (empty: usable)."""
        return validate_plan(self.core, plan)

    def dry_run(
        self,
        plan: MigrationPlan,
        instance_ids: Sequence[str] | None = None,
        query: InstanceSelection | None = None,
        *,
        now: datetime | None = None,
    ) -> tuple[PlanReport, tuple[InstanceReport, ...]]:
        """Try the plan on each instance in a transaction rolled back (see :func:`dry_run`)."""
        return dry_run(self.core, plan, instance_ids, query, now=now)

    def execute(
        self,
        plan: MigrationPlan,
        instance_ids: Sequence[str] | None = None,
        query: InstanceSelection | None = None,
        *,
        skip_custom_listeners: bool = False,
        skip_io_mappings: bool = False,
        by: str | None = None,
        annotation: str | None = None,
        now: datetime | None = None,
        operation_id: str | None = None,
        summary: bool = True,
    ) -> MigrationResult:
        """Migrate every chosen instance in one transaction, or none (see :func:`execute`)."""
        return execute(
            self.core,
            plan,
            instance_ids,
            query,
            skip_custom_listeners=skip_custom_listeners,
            skip_io_mappings=skip_io_mappings,
            by=by,
            annotation=annotation,
            now=now,
            operation_id=operation_id,
            summary=summary,
        )

    def execute_async(
        self,
        plan: MigrationPlan,
        instance_ids: Sequence[str] | None = None,
        query: InstanceSelection | None = None,
        *,
        by: str | None = None,
        annotation: str | None = None,
        chunk_size: int | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """Migrate the chosen instances as a batch (``/migration/executeAsync``): the plan
        is checked now (:class:`MigrationPlanError`, nothing created); the workers then
        migrate the instances chunk by chunk, each one alone (one that cannot migrate is a
        failed item with its reason). ``undo(batch.id)`` moves them back."""
        with self.core.db.connect() as conn:
            _checked(self.core, conn, plan)
            ids = chosen(conn, instance_ids, query, limit=BATCH_LIMIT)
        return self.batches.create(
            MIGRATION,
            ids,
            plan_params(plan),
            chunk_size=chunk_size,
            by=by,
            annotation=_annotation(annotation),
            now=now,
        )

    def undo(
        self,
        operation_id: str,
        *,
        by: str | None = None,
        annotation: str | None = None,
        now: datetime | None = None,
    ) -> UndoResult:
        """Move back the instances of migration ``operation_id`` that did not advance."""
        return undo(self.core, operation_id, by=by, annotation=annotation, now=now)
