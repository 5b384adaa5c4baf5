"""The :class:`Engine` facade: one method per public operation, one transaction each."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine as SAEngine

from bpm.dispatch import Dispatcher, NullDispatcher
from bpm.engine import definitions as _defs
from bpm.engine import execution as _exec
from bpm.engine import incidents as _incidents
from bpm.engine import instances as _inst
from bpm.engine import retention as _retention
from bpm.engine import timers as _timers
from bpm.engine.config import EngineConfig
from bpm.engine.core import EngineCore, Stats, utcnow
from bpm.engine.incidents import Incident
from bpm.engine.timers import Timer
from bpm.handlers import HandlerRegistry
from bpm.handlers import registry as default_registry
from bpm.model.process import ProcessModel
from bpm.runtime.records import HistoryEvent, Instance, ProcessDefinition, UserTask
from bpm.store import db as _db
from bpm.store import migrate as _migrate

__all__ = ["Engine", "EngineConfig", "Incident", "Timer"]


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
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        cfg = config or EngineConfig.from_env()
        self.url = url
        self.core = EngineCore(
            db=_db.connect(url, pool_size=cfg.pool_size),
            config=cfg,
            dispatcher=dispatcher or NullDispatcher(),
            registry=registry or default_registry,
            clock=clock,
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

    def upgrade(self) -> None:
        """Create or upgrade the schema (the same as ``bpm db upgrade``)."""
        _migrate.upgrade(self.core.db)

    def dispose(self) -> None:
        """Close pooled connections (call in a forked child before first use)."""
        self.core.db.dispose(close=False)

    def close(self) -> None:
        self.core.db.dispose()

    # -- definitions ----------------------------------------------------------------------
    def deploy(
        self, source: Any, *, name: str | None = None, resource: str | None = None
    ) -> ProcessDefinition:
        """Deploy a .bpmn path, BPMN XML text, a builder ``Process`` or a ``ProcessModel``."""
        return _defs.deploy(self.core, source, name=name, resource=resource)

    def definition(self, key: str) -> ProcessDefinition:
        return _defs.latest(self.core, key)

    def definitions(self, key: str | None = None) -> list[ProcessDefinition]:
        return _defs.definitions(self.core, key)

    def model(self, definition_id: str) -> ProcessModel:
        return _defs.model_of(self.core, definition_id)

    # -- instances ------------------------------------------------------------------------
    def start(
        self,
        key: str,
        variables: dict[str, Any] | None = None,
        *,
        business_key: str | None = None,
        idempotency_key: str | None = None,
        now: datetime | None = None,
    ) -> Instance:
        """Start the latest version of process ``key``."""
        return _inst.start(
            self.core,
            key,
            variables,
            business_key=business_key,
            idempotency_key=idempotency_key,
            now=now,
        )

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

    def history(self, instance_id: str) -> list[HistoryEvent]:
        """Every event of an instance in order: its token trail."""
        return _inst.history(self.core, instance_id)

    def terminate(
        self,
        instance_id: str,
        *,
        reason: str = "terminated by operator",
        now: datetime | None = None,
    ) -> Instance:
        return _inst.terminate(self.core, instance_id, reason=reason, now=now)

    def suspend(self, instance_id: str, *, now: datetime | None = None) -> Instance:
        return _inst.suspend(self.core, instance_id, now=now)

    def resume(self, instance_id: str, *, now: datetime | None = None) -> Instance:
        return _inst.resume(self.core, instance_id, now=now)

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

    def complete_user_task(
        self, task_id: str, variables: dict[str, Any] | None = None, *, now: datetime | None = None
    ) -> None:
        _inst.complete_user_task(self.core, task_id, variables, now=now)

    # -- inline execution -----------------------------------------------------------------
    def run_token(
        self, token_id: str, *, worker_id: str | None = None, now: datetime | None = None
    ) -> int:
        """Claim, run and finish a Ready inline step (and the inline steps after it)."""
        return _exec.run_token(self.core, token_id, worker_id=worker_id, now=now)

    def reclaim_expired_leases(self, *, now: datetime | None = None, limit: int = 100) -> int:
        return _exec.reclaim_expired_leases(self.core, now=now, limit=limit)

    def redispatch_stale_ready(self, *, now: datetime | None = None, limit: int = 500) -> int:
        return _exec.redispatch_stale_ready(self.core, now=now, limit=limit)

    # -- timers ---------------------------------------------------------------------------
    def fire_due_timers(self, now: datetime | None = None, limit: int = 500) -> int:
        """Fire up to ``limit`` timers due at ``now``; each is marked fired and applied in
        the same transaction, and concurrent pollers never fire one twice. Returns how
        many fired. Celery beat and ``bpm timers`` call this."""
        return _timers.fire_due_timers(self.core, now=now, limit=limit)

    def next_wakeup(self) -> datetime | None:
        """The earliest due time of a pending timer (of an active instance), or None."""
        return _timers.next_wakeup(self.core)

    def timers(self, instance_id: str | None = None, *, state: str | None = "pending",
               limit: int | None = None) -> list[Timer]:
        """Timers, earliest first: pending ones unless ``state`` is fired/cancelled/None."""
        return _timers.timers(self.core, instance_id, state=state, limit=limit)

    # -- incidents ------------------------------------------------------------------------
    def incidents(self, instance_id: str | None = None, *, state: str | None = "open",
                  limit: int | None = None) -> list[Incident]:
        """Open incidents (of one instance, or all), oldest first."""
        return _incidents.incidents(self.core, instance_id, state=state, limit=limit)

    def retry_incident(self, incident_id: str, *, now: datetime | None = None) -> Incident:
        """Run an incident's failed step again with a fresh set of attempts."""
        return _incidents.retry_incident(self.core, incident_id, now=now)

    def step_failed(self, instance_id: str, node_id: str) -> str | None:
        """The persisted final error of step ``node_id`` (attempts used up), or None."""
        return _incidents.step_failed(self.core, instance_id, node_id)

    # -- retention ------------------------------------------------------------------------
    def purge_history(self, older_than: timedelta, now: datetime | None = None) -> int:
        """Delete instances that ended more than ``older_than`` ago, with their tokens and
        history; returns how many instances were deleted. Live instances are kept."""
        return _retention.purge_history(self.core, older_than, now=now)
