"""The :class:`Engine` facade: one method per public operation, one transaction each."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine as SAEngine

from bpm.dispatch import Dispatcher, default_dispatcher
from bpm.engine import activity_tree as _tree
from bpm.engine import comments as _comments
from bpm.engine import conditions as _conditions
from bpm.engine import definitions as _defs
from bpm.engine import deployment_admin as _dep_admin
from bpm.engine import deployments as _deployments
from bpm.engine import execution as _exec
from bpm.engine import external_reports as _reports
from bpm.engine import external_tasks as _ext
from bpm.engine import gauges as _gauges
from bpm.engine import incidents as _incidents
from bpm.engine import instances as _inst
from bpm.engine import messages as _messages
from bpm.engine import modification as _modification
from bpm.engine import reclaim as _reclaim
from bpm.engine import retention as _retention
from bpm.engine import schedules as _schedules
from bpm.engine import signals as _signals
from bpm.engine import steering as _steering
from bpm.engine import timers as _timers
from bpm.engine import user_tasks as _user_tasks
from bpm.engine import worker_bindings as _bindings
from bpm.engine.activity_tree import ActivityInstance, TransitionInstance
from bpm.engine.batch_operations import OperationBatches
from bpm.engine.clock import clock_for
from bpm.engine.cockpit import Cockpit
from bpm.engine.config import EngineConfig
from bpm.engine.core import EngineCore, Stats
from bpm.engine.decisions import Decisions
from bpm.engine.deployment_admin import DeploymentQuery
from bpm.engine.deployments import Deployment
from bpm.engine.external_reports import Completion
from bpm.engine.filters import Filters
from bpm.engine.gauges import Gauges
from bpm.engine.messages import Correlation, Message
from bpm.engine.migration_ops import Migrations
from bpm.engine.modification import Instruction
from bpm.engine.queries import Queries
from bpm.engine.replica import ReadReplica
from bpm.engine.signals import SignalResult
from bpm.engine.transactions import TransactionSource
from bpm.engine.user_tasks import TaskChanges
from bpm.errors import BpmError, InvalidOperation
from bpm.handlers import HandlerRegistry
from bpm.handlers import registry as default_registry
from bpm.model.process import ProcessModel
from bpm.recurrence import Schedule
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.records import (
    DeploymentRecord,
    DeploymentResource,
    ExternalTask,
    HistoryEvent,
    Incident,
    Instance,
    ProcessDefinition,
    Timer,
    UserTask,
)
from bpm.store import db as _db
from bpm.store import migrate as _migrate
from bpm.store import operation_log as _oplog
from bpm.store.comments import TaskComment
from bpm.store.id_prefix import TABLES, ids_with_prefix
from bpm.store.operation_log import OperationLogEntry, OperationLogQuery

__all__ = [
    "ActivityInstance",
    "Completion",
    "Correlation",
    "Deployment",
    "DeploymentQuery",
    "DeploymentRecord",
    "DeploymentResource",
    "Engine",
    "EngineConfig",
    "ExternalTask",
    "FetchRequest",
    "Incident",
    "Message",
    "Schedule",
    "SignalResult",
    "TaskChanges",
    "Timer",
    "TopicRequest",
    "TransitionInstance",
]


class Engine:
    """A BPM engine on one database.

    >>> engine = Engine("sqlite:///bpm.db")
    >>> engine.upgrade()
    >>> engine.deploy("order.bpmn")
    >>> inst = engine.start("order", variables={"amount": 120})
    """

    def __init__(
        self,
        url: str,
        *,
        config: EngineConfig | None = None,
        dispatcher: Dispatcher | None = None,
        registry: HandlerRegistry | None = None,
        clock: Callable[[], datetime] | None = None,
        transactions: TransactionSource | None = None,
    ) -> None:
        """``transactions``: lend the engine a framework's transactions (Django, Flask)
        instead of its own; see :mod:`bpm.engine.transactions`. ``dispatcher``: where new
        Ready steps go after commit; by default the broker of ``config.broker_url``
        (``BPM_BROKER_URL``), see :func:`bpm.dispatch.default_dispatcher`. ``clock``:
        what time it is for every decision; by default the database's clock
        (:mod:`bpm.engine.clock`)."""
        cfg = config or EngineConfig.from_env()
        self.url = url
        db = _db.connect(url, pool_size=cfg.pool_size)
        replica = None
        if cfg.read_url is not None:
            replica = ReadReplica(
                _db.connect(cfg.read_url, pool_size=cfg.pool_size), cfg.read_max_lag
            )
        self.core = EngineCore(
            db=db,
            config=cfg,
            dispatcher=dispatcher or default_dispatcher(cfg.broker_url, cfg.queue),
            registry=registry or default_registry,
            clock=clock or clock_for(db),
            transactions=transactions,
            after_unit=[_signals.after_unit],
            replica=replica,
        )

    # -- plumbing -------------------------------------------------------------------------
    @property
    def db(self) -> SAEngine:
        return self.core.db

    @property
    def config(self) -> EngineConfig:
        return self.core.config

    @property
    def stats(self) -> Stats:
        return self.core.stats

    @property
    def dispatcher(self) -> Dispatcher:
        return self.core.dispatcher

    @dispatcher.setter
    def dispatcher(self, value: Dispatcher) -> None:
        self.core.dispatcher = value

    @property
    def decisions(self) -> Decisions:
        """Deployed DMN decisions: definitions, evaluation, the decision history."""
        return Decisions(self.core)

    @property
    def batches(self) -> OperationBatches:
        """Batches: one operator action on many instances or tasks, applied in chunks by
        the workers (``/batch``; :mod:`bpm.engine.batches`, ``docs/batches.md``)."""
        return OperationBatches(self.core, Engine._bound)

    @classmethod
    def _bound(cls, core: EngineCore) -> Engine:
        """An engine facade over ``core`` (a batch chunk's: its own transactions)."""
        engine = cls.__new__(cls)
        engine.url = ""
        engine.core = core
        return engine

    @property
    def filters(self) -> Filters:
        """Saved task filters (Camunda's ``/filter``)."""
        return Filters(self.core)

    @property
    def queries(self) -> Queries:
        """The reads of the Camunda REST surface: tasks, variables, history pages."""
        return Queries(self.core)

    @property
    def history_queries(self) -> Queries:
        """:attr:`queries` whose every read goes to the read replica when one is
        configured (``BPM_DATABASE_READ_URL``): what ``/history/*`` serves."""
        return Queries(self.core, replica=True)

    def read_age(self) -> float | None:
        """How many seconds behind the primary a read of the replica would be now; None
        without a replica, or when such reads go to the primary (too far behind, lag
        unknown, unreachable): their data is then current."""
        if self.core.replica is None:
            return None
        return self.core.replica.age()

    @property
    def cockpit(self) -> Cockpit:
        """The cockpit's read-only views (counts, pages of instances, queues, workers)."""
        return Cockpit(self.core)

    def gauges(self, *, now: datetime | None = None) -> Gauges:
        """What the database holds right now for the metrics gauges: the Ready backlog,
        external tasks by topic and state, open incidents (three bounded queries)."""
        return _gauges.read(self.core, now)

    def upgrade(self) -> None:
        """Create or upgrade the schema (the same as ``bpm db upgrade``)."""
        _migrate.upgrade(self.core.db)

    def dispose(self) -> None:
        """Close pooled connections (call in a forked child before first use)."""
        self.core.db.dispose(close=False)

    def close(self) -> None:
        """Stop this engine's lease-keeper thread (waiting for a beat in flight), then
        close its pooled connections. Steps still running keep no lease alive after it.
        A dispatcher passed in is the caller's to close."""
        self.core.leases.stop()
        self.core.db.dispose()
        if self.core.replica is not None:
            self.core.replica.close()

    # -- definitions ----------------------------------------------------------------------
    def deploy(
        self, source: Any, *, name: str | None = None, resource: str | None = None
    ) -> ProcessDefinition:
        """Deploy a .bpmn path, BPMN XML text, a builder ``Process`` or a ``ProcessModel``.

        Every executable process of the file is deployed; this returns the definition of
        the first one (document order). :meth:`create_deployment` returns them all, with
        the warnings."""
        return _defs.deploy(self.core, source, name=name, resource=resource)

    def create_deployment(
        self,
        *sources: Any,
        name: str | None = None,
        source: str | None = None,
        tenant_id: str | None = None,
        duplicate_filtering: bool = False,
        changed_only: bool = False,
    ) -> Deployment:
        """Deploy every resource of every source in one transaction (all or nothing).

        A source is what :meth:`deploy` takes, or a ``(resource name, source)`` pair: BPMN
        files become definitions, every other file (``.form``, ``.dmn``...) is kept as a
        resource. ``source`` and ``tenant_id`` are labels (Camunda's deployment source and
        tenant); ``duplicate_filtering`` and ``changed_only`` are Camunda's filters
        (:mod:`bpm.engine.deployments`). The :class:`Deployment` lists each definition,
        the resources and every warning."""
        return _deployments.create_deployment(
            self.core,
            sources,
            name=name,
            source=source,
            tenant_id=tenant_id,
            duplicate_filtering=duplicate_filtering,
            changed_only=changed_only,
        )

    def deployments(
        self, query: DeploymentQuery | None = None, *, offset: int = 0, limit: int = 100
    ) -> list[DeploymentRecord]:
        """A page of deployments matching ``query`` (oldest first unless sorted)."""
        return _dep_admin.deployments(
            self.core, query or DeploymentQuery(), offset=offset, limit=limit
        )

    def count_deployments(self, query: DeploymentQuery | None = None) -> int:
        return _dep_admin.count_deployments(self.core, query or DeploymentQuery())

    def deployment(self, deployment_id: str) -> DeploymentRecord:
        """One deployment; :class:`NotFound` when there is none with this id."""
        return _dep_admin.deployment(self.core, deployment_id)

    def deployment_definitions(self, deployment_id: str) -> list[ProcessDefinition]:
        """The process definitions a deployment created."""
        return _dep_admin.deployment_definitions(self.core, deployment_id)

    def deployment_resources(self, deployment_id: str) -> list[DeploymentResource]:
        """A deployment's resources (names and checksums, without their bytes)."""
        return _dep_admin.resources(self.core, deployment_id)

    def deployment_resource(self, deployment_id: str, resource_id: str) -> DeploymentResource:
        """One resource of a deployment, with its bytes."""
        return _dep_admin.resource(self.core, deployment_id, resource_id)

    def deployment_resource_named(self, deployment_id: str, name: str) -> DeploymentResource | None:
        """The resource called ``name`` in a deployment, with its bytes (None: none)."""
        return _dep_admin.resource_named(self.core, deployment_id, name)

    def delete_deployment(self, deployment_id: str, *, cascade: bool = False) -> None:
        """Delete a deployment, its resources and definitions; refused while its
        definitions have instances, unless ``cascade`` (then they are terminated and
        deleted with their history)."""
        _dep_admin.delete_deployment(self.core, deployment_id, cascade=cascade)

    def suspend_definition(self, key: str) -> list[ProcessDefinition]:
        """Suspend every version of ``key``: no new instances, timer starts paused."""
        return _defs.set_suspended(self.core, key, True)

    def activate_definition(self, key: str) -> list[ProcessDefinition]:
        """Undo :meth:`suspend_definition`; paused timer starts resume (a due time missed
        while suspended fires once)."""
        return _defs.set_suspended(self.core, key, False)

    def definition(self, key: str) -> ProcessDefinition:
        return _defs.latest(self.core, key)

    def definition_by_id(self, definition_id: str) -> ProcessDefinition | None:
        """One version of a process by its id (None: no such definition)."""
        return _defs.by_id(self.core, definition_id)

    def definition_source(self, definition_id: str) -> str | None:
        """The BPMN XML of a definition ('' for builder models; None: no such one)."""
        return _defs.source_of(self.core, definition_id)

    def definitions(self, key: str | None = None) -> list[ProcessDefinition]:
        return _defs.definitions(self.core, key)

    def model(self, definition_id: str) -> ProcessModel:
        return _defs.model_of(self.core, definition_id)

    # -- instances ------------------------------------------------------------------------
    def start_definition(
        self,
        definition_id: str,
        variables: dict[str, Any] | None = None,
        *,
        business_key: str | None = None,
        now: datetime | None = None,
        start_event: str | None = None,
    ) -> Instance:
        """Start this version of a process (not necessarily the latest)."""
        return _inst.start_definition(
            self.core,
            definition_id,
            variables,
            business_key=business_key,
            now=now,
            start_event=start_event,
        )

    def start(
        self,
        key: str,
        variables: dict[str, Any] | None = None,
        *,
        business_key: str | None = None,
        idempotency_key: str | None = None,
        now: datetime | None = None,
        start_event: str | None = None,
    ) -> Instance:
        """Start the latest version of process ``key`` at its none start event, or at
        ``start_event`` (the id of another start event of the process)."""
        return _inst.start(
            self.core,
            key,
            variables,
            business_key=business_key,
            idempotency_key=idempotency_key,
            now=now,
            start_event=start_event,
        )

    # -- messages and signals -----------------------------------------------------------------
    def correlate(
        self,
        name: str,
        variables: dict[str, Any] | None = None,
        *,
        business_key: str | None = None,
        correlation_key: Any = None,
        correlation_keys: dict[str, Any] | None = None,
        instance_id: str | None = None,
        all: bool = False,
        ttl: timedelta | float | None = None,
        now: datetime | None = None,
    ) -> list[Correlation]:
        """Deliver message ``name`` to the instance waiting for it (its catch event,
        receive task, boundary event or event sub-process), or start an instance at a
        message start event. Narrow the match with ``business_key``, ``correlation_key``
        (the value a wait's correlation key had when it opened), ``correlation_keys``
        (process variables that must be equal) or ``instance_id``; ``variables`` are
        written to the instance. ``all=True`` delivers to every match (else several
        matching instances are an error). No match raises
        :class:`~bpm.errors.MessageCorrelationError`, unless ``ttl`` is given: then the
        message is kept until the first matching wait opens within ``ttl``."""
        return _messages.correlate(
            self.core,
            name,
            variables,
            business_key=business_key,
            correlation_key=correlation_key,
            correlation_keys=correlation_keys,
            instance_id=instance_id,
            all=all,
            ttl=ttl,
            now=now,
        )

    def correlate_many(
        self, messages: Sequence[Message], *, now: datetime | None = None
    ) -> list[list[Correlation] | BpmError]:
        """Correlate several messages in ONE transaction (group commit): per message, in
        order, what :meth:`correlate` would have returned, or the error that refused it
        (nothing of a refused message is applied; the others commit). The messages are
        delivered in the order given; one that a wait opened by an earlier message of the
        batch could take is correlated after the batch commits, so each message sees what
        it would have seen one call at a time."""
        return _messages.correlate_many(self.core, messages, now=now)

    def evaluate_conditions(
        self,
        variables: dict[str, Any] | None = None,
        *,
        business_key: str | None = None,
        definition_id: str | None = None,
        now: datetime | None = None,
    ) -> list[Instance]:
        """Start an instance at every conditional start event (of the latest version of
        each process, or of ``definition_id``) whose condition holds over ``variables``,
        which the instances start with (Camunda's ``evaluateStartConditions``,
        ``POST /condition``); the instances started."""
        return _conditions.evaluate_start_conditions(
            self.core, variables, business_key=business_key, definition_id=definition_id, now=now
        )

    def signal(
        self, name: str, variables: dict[str, Any] | None = None, *, now: datetime | None = None
    ) -> SignalResult:
        """Broadcast signal ``name`` to every waiting signal catch, boundary and event
        sub-process start, and start an instance at every signal start event."""
        return _signals.signal(self.core, name, variables, now=now)

    def get_instance(self, instance_id: str) -> Instance:
        return _inst.get(self.core, instance_id)

    def instances(
        self,
        state: str | None = None,
        *,
        definition_key: str | None = None,
        business_key: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Instance]:
        """Instances, newest first."""
        return _inst.instances(
            self.core,
            state=state,
            definition_key=definition_key,
            business_key=business_key,
            limit=limit,
            offset=offset,
        )

    def activity_instances(self, instance_id: str) -> ActivityInstance:
        """Where an instance stands, as Camunda's activity instance tree: the instance at
        the root, an activity instance per activity a token is in (sub-processes and
        multi-instance bodies nest theirs), a transition instance per step waiting for a
        worker. Ids are stable while their token lives (see :mod:`bpm.engine.activity_tree`).
        """
        return _tree.activity_instances(self.core, instance_id)

    def modify(
        self,
        instance_id: str,
        instructions: Sequence[Instruction],
        *,
        skip_io_mappings: bool = False,
        annotation: str | None = None,
        by: str | None = None,
        now: datetime | None = None,
    ) -> Instance:
        """Start and cancel activities of a running instance in one transaction (Camunda's
        modification): ``instructions`` are :class:`~bpm.engine.modification.StartBefore`,
        ``StartAfter``, ``StartTransition`` and ``Cancel``, applied in order. A bad one raises
        :class:`~bpm.engine.modification.ModificationError` and nothing changes. Recorded in
        the trail with ``by`` (default ``python``) and ``annotation``; see
        :mod:`bpm.engine.modification` and ``docs/modification.md``.
        """
        return _modification.modify(
            self.core,
            instance_id,
            instructions,
            skip_io_mappings=skip_io_mappings,
            annotation=annotation,
            by=by,
            now=now,
        )

    @property
    def migration(self) -> Migrations:
        """Process instance migration (Camunda's migration API): ``generate``, ``validate``,
        ``dry_run``, ``execute`` and ``undo``; see :mod:`bpm.engine.migration_ops` and
        ``docs/migration.md``."""
        return Migrations(self.core, self.batches)

    def operation_log(
        self, query: OperationLogQuery | None = None, *, offset: int = 0, limit: int | None = None
    ) -> list[OperationLogEntry]:
        """What operators did, oldest first: Camunda's user operation log, each entry
        with its author and annotation (:mod:`bpm.engine.oplog`)."""
        with self.core.db.connect() as conn:
            return _oplog.entries(conn, query or OperationLogQuery(), offset=offset, limit=limit)

    def count_operation_log(self, query: OperationLogQuery | None = None) -> int:
        with self.core.db.connect() as conn:
            return _oplog.count(conn, query or OperationLogQuery())

    def history(self, instance_id: str) -> list[HistoryEvent]:
        """Every event of an instance in order: its token trail."""
        return _inst.history(self.core, instance_id)

    def terminate(
        self,
        instance_id: str,
        *,
        reason: str = "terminated by operator",
        by: str | None = None,
        annotation: str | None = None,
        now: datetime | None = None,
    ) -> Instance:
        """End an instance and everything it called (an operator's action: written to the
        operation log with ``by``, default ``python``, and ``annotation``)."""
        return _inst.terminate(
            self.core, instance_id, reason=reason, by=by, annotation=annotation, now=now
        )

    def suspend(
        self,
        instance_id: str,
        *,
        by: str | None = None,
        annotation: str | None = None,
        now: datetime | None = None,
    ) -> Instance:
        """Stop handing out work for this instance (in the operation log with ``by``)."""
        return _inst.suspend(self.core, instance_id, by=by, annotation=annotation, now=now)

    def resume(
        self,
        instance_id: str,
        *,
        by: str | None = None,
        annotation: str | None = None,
        now: datetime | None = None,
    ) -> Instance:
        """Activate a suspended instance (in the operation log with ``by``)."""
        return _inst.resume(self.core, instance_id, by=by, annotation=annotation, now=now)

    def set_variables(
        self,
        instance_id: str,
        variables: dict[str, Any],
        *,
        by: str | None = None,
        now: datetime | None = None,
    ) -> Instance:
        """Merge ``variables`` into a running instance (an operator's edit; ``by`` is
        recorded in the ``variables_updated`` event)."""
        return _steering.set_variables(self.core, instance_id, variables, by=by, now=now)

    def modify_variables(
        self,
        instance_id: str,
        modifications: dict[str, Any] | None,
        deletions: Sequence[str] = (),
        *,
        by: str | None = None,
        now: datetime | None = None,
    ) -> Instance:
        """Set and delete variables of a running instance in one transaction (a name both
        set and deleted ends deleted); recorded as ``variables_updated`` /
        ``variables_deleted``."""
        return _steering.modify_variables(
            self.core, instance_id, modifications, deletions, by=by, now=now
        )

    # -- user tasks -----------------------------------------------------------------------
    def user_tasks(
        self,
        instance_id: str | None = None,
        *,
        state: str | None = "open",
        node_id: str | None = None,
        assignee: str | None = None,
    ) -> list[UserTask]:
        return _inst.user_tasks(
            self.core, instance_id=instance_id, state=state, node_id=node_id, assignee=assignee
        )

    def claim_user_task(
        self, task_id: str, user_id: str, *, now: datetime | None = None
    ) -> UserTask:
        """Assign an open user task to ``user_id`` (refused if another user has it)."""
        return _inst.claim_user_task(self.core, task_id, user_id, now=now)

    def unclaim_user_task(self, task_id: str, *, now: datetime | None = None) -> None:
        _inst.unclaim_user_task(self.core, task_id, now=now)

    def complete_user_task(
        self, task_id: str, variables: dict[str, Any] | None = None, *, now: datetime | None = None
    ) -> Instance:
        """Complete an open user task; returns its instance as the completion left it. A
        task with ``complete`` task listeners (or events whose listeners are still queued)
        is completed by a worker after them (:mod:`bpm.engine.task_listeners`): the
        completion is queued and the instance returned as it was."""
        return _inst.complete_user_task(self.core, task_id, variables, now=now)

    def update_user_task(
        self,
        task_id: str,
        changes: TaskChanges,
        *,
        by: str | None = None,
        now: datetime | None = None,
    ) -> UserTask:
        """Replace an open task's name, description, assignee, owner, dates and priority."""
        return _user_tasks.update_user_task(self.core, task_id, changes, by=by, now=now)

    def set_user_task_assignee(
        self, task_id: str, user_id: str | None, *, now: datetime | None = None
    ) -> UserTask:
        """Assign an open task to ``user_id`` whoever has it (None: nobody)."""
        return _user_tasks.set_assignee(self.core, task_id, user_id, now=now)

    def comment_user_task(
        self,
        task_id: str,
        message: str,
        *,
        user_id: str | None = None,
        instance_id: str | None = None,
        now: datetime | None = None,
    ) -> TaskComment:
        """Add a comment to a task (kept after the task ends)."""
        return _comments.add_comment(self.core, task_id, instance_id, user_id, message, now=now)

    def user_task_comments(self, task_id: str) -> list[TaskComment]:
        """A task's comments, oldest first."""
        return _comments.comments(self.core, task_id)

    # -- inline execution -----------------------------------------------------------------
    def run_token(
        self, token_id: str, *, worker_id: str | None = None, now: datetime | None = None
    ) -> int:
        """Claim, run and finish a Ready inline step (and the inline steps after it)."""
        return _exec.run_token(self.core, token_id, worker_id=worker_id, now=now)

    def reclaim_expired_leases(self, *, now: datetime | None = None, limit: int = 100) -> int:
        return _reclaim.reclaim_expired_leases(self.core, now=now, limit=limit)

    def redispatch_stale_ready(self, *, now: datetime | None = None, limit: int = 500) -> int:
        return _exec.redispatch_stale_ready(self.core, now=now, limit=limit)

    # -- timers ---------------------------------------------------------------------------
    def fire_due_timers(self, now: datetime | None = None, limit: int = 500) -> int:
        """Fire up to ``limit`` timers due at ``now``; each is marked fired and applied in
        the same transaction, and concurrent pollers never fire one twice. Returns how
        many fired. Celery beat and ``bpm timers`` call this."""
        return _timers.fire_due_timers(self.core, now=now, limit=limit)

    def fire_timer_now(
        self, timer_id: str, *, by: str | None = None, now: datetime | None = None
    ) -> Timer:
        """Make a pending timer due now (the next poll fires it); recorded as
        ``timer_due_now``."""
        return _steering.fire_timer_now(self.core, timer_id, by=by, now=now)

    def fire_due_schedules(self, now: datetime | None = None, limit: int = 100) -> int:
        """Start an instance for every timer start event due at ``now``; each due time
        starts exactly one instance, however many pollers run. Returns how many started."""
        return _schedules.fire_due_schedules(self.core, now=now, limit=limit)

    def schedules(
        self, key: str | None = None, *, include_inactive: bool = False
    ) -> list[Schedule]:
        """Schedules of timer start events (active and paused; all with include_inactive)."""
        return _schedules.schedules(self.core, key, include_inactive=include_inactive)

    def schedule_fires(self, schedule_id: str) -> list[tuple[datetime, str]]:
        """(due time, instance id) of every instance a schedule started, in due order."""
        return _schedules.fired(self.core, schedule_id)

    def next_wakeup(self) -> datetime | None:
        """The earliest due time of a pending timer (of an active instance), or None."""
        return _timers.next_wakeup(self.core)

    def timers(
        self,
        instance_id: str | None = None,
        *,
        state: str | None = "pending",
        limit: int | None = None,
    ) -> list[Timer]:
        """Timers, earliest first: pending ones unless ``state`` is fired/cancelled/None."""
        return _timers.timers(self.core, instance_id, state=state, limit=limit)

    # -- incidents ------------------------------------------------------------------------
    def ids_with_prefix(self, kind: str, prefix: str, *, limit: int = 10) -> list[str]:
        """Up to ``limit`` ids of ``kind`` (``instance``, ``task`` or ``incident``) that start
        with ``prefix``, in id order: how the CLI takes a short id as git does."""
        if kind not in TABLES:
            raise InvalidOperation(f"unknown id kind '{kind}'; use {', '.join(TABLES)}")
        with self.db.connect() as conn:
            return ids_with_prefix(conn, kind, prefix, limit)

    def incidents(
        self,
        instance_id: str | None = None,
        *,
        state: str | None = "open",
        limit: int | None = None,
    ) -> list[Incident]:
        """Open incidents (of one instance, or all), oldest first."""
        return _incidents.incidents(self.core, instance_id, state=state, limit=limit)

    def retry_incident(
        self, incident_id: str, *, by: str | None = None, now: datetime | None = None
    ) -> Incident:
        """Run an incident's failed step again with a fresh set of attempts (in the
        operation log with ``by``)."""
        return _incidents.retry_incident(self.core, incident_id, by=by, now=now)

    def step_failed(self, instance_id: str, node_id: str) -> str | None:
        """The persisted final error of step ``node_id`` (attempts used up), or None."""
        return _incidents.step_failed(self.core, instance_id, node_id)

    # -- retention ------------------------------------------------------------------------
    def purge_history(self, older_than: timedelta, now: datetime | None = None) -> int:
        """Delete instances that ended more than ``older_than`` ago, with their tokens and
        history; returns how many instances were deleted. Live instances are kept."""
        return _retention.purge_history(self.core, older_than, now=now)

    # -- external tasks -------------------------------------------------------------------
    def fetch_and_lock(
        self, request: FetchRequest, *, now: datetime | None = None
    ) -> list[ExternalTask]:
        """Lock up to ``request.max_tasks`` free external tasks of its topics (one statement)."""
        return _ext.fetch_and_lock(self.core, request, now=now)

    def complete_external_task(
        self,
        task_id: str,
        worker_id: str,
        variables: dict[str, Any] | None = None,
        local_variables: dict[str, Any] | None = None,
        *,
        topics: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Complete a task ``worker_id`` holds; repeating one's own complete is a no-op.

        ``topics``: the caller may only touch tasks of these topics (``Forbidden``)."""
        _reports.complete(
            self.core, task_id, worker_id, variables, local_variables, topics=topics, now=now
        )

    def complete_external_tasks(
        self, completions: Sequence[Completion], *, now: datetime | None = None
    ) -> list[BpmError | None]:
        """Several completes in one transaction; per completion None or the error that
        refused it (nothing of a refused one is applied, the others commit)."""
        return _reports.complete_many(self.core, completions, now=now)

    def fail_external_task(
        self,
        task_id: str,
        worker_id: str,
        error_message: str | None,
        error_details: str | None = None,
        *,
        retries: int | None = None,
        retry_timeout_ms: int | None = None,
        error_code: str | None = None,
        topics: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Report a failed attempt (Camunda retries semantics, or the model's RetryPolicy)."""
        _reports.handle_failure(
            self.core,
            task_id,
            worker_id,
            error_message,
            error_details,
            retries,
            retry_timeout_ms,
            error_code=error_code,
            topics=topics,
            now=now,
        )

    def external_task_bpmn_error(
        self,
        task_id: str,
        worker_id: str,
        error_code: str,
        error_message: str | None = None,
        variables: dict[str, Any] | None = None,
        *,
        topics: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Throw a BPMN error to the nearest catcher around the task (else the failure
        action of its retry policy: an incident by default)."""
        _reports.handle_bpmn_error(
            self.core,
            task_id,
            worker_id,
            error_code,
            error_message,
            variables,
            topics=topics,
            now=now,
        )

    def extend_external_task_lock(
        self,
        task_id: str,
        worker_id: str,
        new_duration_ms: int,
        *,
        topics: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Heartbeat: the live lock of ``worker_id`` now expires ``new_duration_ms`` from now."""
        _ext.extend_lock(self.core, task_id, worker_id, new_duration_ms, topics=topics, now=now)

    def lock_external_task(
        self,
        task_id: str,
        worker_id: str,
        lock_duration_ms: int,
        *,
        topics: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Lock one free task by id."""
        _ext.lock(self.core, task_id, worker_id, lock_duration_ms, topics=topics, now=now)

    def unlock_external_task(
        self,
        task_id: str,
        *,
        topics: Collection[str] | None = None,
        may_release: Callable[[str], bool] | None = None,
        by: str | None = None,
        record: bool = True,
        now: datetime | None = None,
    ) -> None:
        """Give a locked task back at once (in the operation log with ``by``; not with
        ``record=False``: the API giving back tasks it locked but could not hand over).

        ``may_release``: whether the caller may end a live lock held by that worker id
        (``Forbidden`` otherwise); None: anyone may."""
        _ext.unlock(
            self.core, task_id, topics=topics, may_release=may_release, by=by, record=record,
            now=now,
        )  # fmt: skip

    def set_external_task_retries(
        self,
        task_id: str,
        retries: int,
        *,
        topics: Collection[str] | None = None,
        may_release: Callable[[str], bool] | None = None,
        by: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """Set retries left; > 0 resolves the task's incident, 0 opens one (in the
        operation log with ``by``).

        ``may_release``: as for :meth:`unlock_external_task`, for a task under a live lock."""
        _ext.set_retries(
            self.core, task_id, retries, topics=topics, may_release=may_release, by=by, now=now
        )

    def reclaim_expired_external_locks(
        self, *, now: datetime | None = None, limit: int = 100
    ) -> int:
        """Expired external-task locks count as failed attempts (ready again, or an
        incident when none is left); returns how many."""
        return _ext.reclaim_expired_external_locks(self.core, now=now, limit=limit)

    def start_traces(self, instance_ids: Collection[str]) -> dict[str, dict[str, str]]:
        """The W3C trace headers each instance's start recorded (traced starts only), by
        instance id: the trace an external task's handler joins (``bpmTrace``)."""
        return _ext.start_traces(self.core, instance_ids)

    def external_task(self, task_id: str) -> ExternalTask:
        """An open external task (ready, locked, or failed with an incident)."""
        return _ext.get(self.core, task_id)

    def external_tasks(
        self,
        *,
        topic: str | None = None,
        worker_id: str | None = None,
        instance_id: str | None = None,
        locked: bool | None = None,
        retries_left: bool | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ExternalTask]:
        """Open external tasks matching every given filter, oldest first."""
        return _ext.query(
            self.core,
            topic=topic,
            worker_id=worker_id,
            instance_id=instance_id,
            locked=locked,
            retries_left=retries_left,
            offset=offset,
            limit=limit,
        )

    def count_external_tasks(
        self,
        *,
        topic: str | None = None,
        worker_id: str | None = None,
        instance_id: str | None = None,
        locked: bool | None = None,
        retries_left: bool | None = None,
    ) -> int:
        return _ext.count(
            self.core,
            topic=topic,
            worker_id=worker_id,
            instance_id=instance_id,
            locked=locked,
            retries_left=retries_left,
        )

    def bind_worker(self, worker_id: str, key_id: str, *, now: datetime | None = None) -> str:
        """Bind a worker id to an API key unless another key owns it; returns the owner."""
        return _bindings.bind_worker(self.core, worker_id, key_id, now=now)

    def next_external_task_free_at(self, topics: list[str]) -> datetime | None:
        """When a task of ``topics`` next becomes fetchable by time alone (lock, retry)."""
        return _ext.next_free_at(self.core, topics)
