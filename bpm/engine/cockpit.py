"""What the cockpit reads: definitions with counts, pages of instances, one instance with
everything that holds it up, open incidents by node, queues and workers.

Reads only, each on one connection and bounded (see :mod:`bpm.store.cockpit`). History
comes through :func:`bpm.engine.instances.history`, never from the table itself.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bpm.engine import definitions as _defs
from bpm.engine import external_tasks as _ext
from bpm.engine import incidents as _incidents
from bpm.engine import instances as _inst
from bpm.engine import timers as _timers
from bpm.engine.core import EngineCore
from bpm.errors import NotFound
from bpm.kinds import diagram_xml
from bpm.runtime.records import (
    ExternalTask,
    HistoryEvent,
    Incident,
    Instance,
    ProcessDefinition,
    Timer,
    UserTask,
)
from bpm.store import cockpit as store
from bpm.store import definitions as defs_store
from bpm.store.cockpit import (
    IncidentGroup,
    InstanceFilter,
    NodeCount,
    PageCursor,
    TopicCount,
    WorkerSeen,
)

__all__ = [
    "DefinitionSummary",
    "IncidentGroup",
    "InstanceFilter",
    "InstancePage",
    "InstanceView",
    "PageCursor",
    "WorkOverview",
]

MAX_TRAIL = 2000


@dataclass(frozen=True)
class DefinitionSummary:
    definition: ProcessDefinition
    counts: dict[str, int]
    open_incidents: int = 0


@dataclass(frozen=True)
class InstancePage:
    instances: tuple[Instance, ...]
    open_incidents: dict[str, int]
    next_cursor: PageCursor | None


@dataclass(frozen=True)
class InstanceView:
    """One instance and every row that says why its tokens are where they are."""

    instance: Instance
    definition: ProcessDefinition | None
    timers: tuple[Timer, ...]
    external_tasks: tuple[ExternalTask, ...]
    user_tasks: tuple[UserTask, ...]
    incidents: tuple[Incident, ...]
    # Call activities are not built yet (DESIGN section 3, second wave): no instance has a
    # parent or children today; the fields are here so the cockpit shows them when they are.
    parent_id: str | None = None
    child_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkOverview:
    at: datetime
    ready_by_node: tuple[NodeCount, ...]
    executing_by_node: tuple[NodeCount, ...]
    topics: tuple[TopicCount, ...]
    timers_due_next_minute: int
    timers_due: tuple[Timer, ...]
    workers: tuple[WorkerSeen, ...]
    celery_workers: tuple[str, ...] = field(default=())


class Cockpit:
    """The cockpit's reads on one engine (``engine.cockpit``)."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    # -- definitions ----------------------------------------------------------------------
    def definitions(self, limit: int = 500) -> list[DefinitionSummary]:
        """Every deployed version (newest key versions first) with instance counts."""
        defs = _defs.definitions(self.core)
        with self.core.read() as conn:
            counts = store.instance_counts(conn)
            groups = store.incident_groups(conn, limit=5000)
        by_def: dict[str, dict[str, int]] = defaultdict(dict)
        for c in counts:
            by_def[c.definition_id][c.state] = c.count
        incidents: dict[str, int] = defaultdict(int)
        for g in groups:
            incidents[g.definition_id] += g.count
        defs.sort(key=lambda d: (d.key, -d.version))
        return [
            DefinitionSummary(d, dict(by_def.get(d.id, {})), incidents.get(d.id, 0))
            for d in defs[:limit]
        ]

    def definition(self, definition_id: str) -> ProcessDefinition:
        with self.core.db.connect() as conn:
            found = defs_store.by_id(conn, definition_id)
        if found is None:
            raise NotFound(f"process definition {definition_id} does not exist")
        return found

    def definition_summary(
        self, definition_id: str
    ) -> tuple[DefinitionSummary, list[IncidentGroup]]:
        """One definition with its instance counts, and its open incidents by node."""
        d = self.definition(definition_id)
        with self.core.read() as conn:
            counts = store.instance_counts(conn, definition_id=d.id)
            groups = store.incident_groups(conn, definition_id=d.id)
        summary = DefinitionSummary(
            d, {c.state: c.count for c in counts}, sum(g.count for g in groups)
        )
        return summary, groups

    def incident_groups(self, definition_id: str | None = None) -> list[IncidentGroup]:
        with self.core.read() as conn:
            return store.incident_groups(conn, definition_id=definition_id)

    def open_incidents_of(self, definition_id: str, node_id: str, limit: int) -> list[str]:
        """Ids of the open incidents of one node of one definition, oldest first."""
        with self.core.db.connect() as conn:
            return store.open_incidents_of_group(conn, definition_id, node_id, limit)

    def diagram_xml(self, definition_id: str) -> str:
        """BPMN XML to draw: the deployed file when it has diagram information for every
        node, else the model laid out automatically (builder models, hand-written XML)."""
        model = _defs.model_of(self.core, definition_id)
        with self.core.db.connect() as conn:
            source = store.definition_source(conn, definition_id)
        return diagram_xml(model, source or "")

    # -- instances ------------------------------------------------------------------------
    def instances(
        self, f: InstanceFilter, *, limit: int = 50, cursor: PageCursor | None = None
    ) -> InstancePage:
        """A page of instances, newest first; ``next_cursor`` is None on the last page."""
        limit = max(1, min(limit, store.MAX_PAGE - 1))
        with self.core.read() as conn:
            def_ids: list[str] | None = None
            if f.definition_id is not None:
                def_ids = [f.definition_id]
            elif f.definition_key is not None:
                def_ids = store.definition_ids_of(conn, f.definition_key)
            found = store.list_instances(
                conn, f, definition_ids=def_ids, limit=limit + 1, cursor=cursor
            )
            page = found[:limit]
            incidents = store.open_incident_counts(conn, [i.id for i in page])
        nxt = None
        if len(found) > limit:
            nxt = PageCursor(page[-1].created_at, page[-1].id)
        return InstancePage(tuple(page), incidents, nxt)

    def instance(self, instance_id: str) -> InstanceView:
        inst = _inst.get(self.core, instance_id)
        try:
            definition = self.definition(inst.definition_id)
        except NotFound:
            definition = None
        return InstanceView(
            instance=inst,
            definition=definition,
            timers=tuple(_timers.timers(self.core, instance_id, state="pending", limit=500)),
            external_tasks=tuple(_ext.query(self.core, instance_id=instance_id, limit=500)),
            user_tasks=tuple(_inst.user_tasks(self.core, instance_id=instance_id)),
            incidents=tuple(_incidents.incidents(self.core, instance_id, limit=500)),
        )

    def trail(
        self, instance_id: str, *, after_seq: int | None = None, limit: int = 500
    ) -> list[HistoryEvent]:
        """History events of an instance in order, after ``after_seq`` (for polling)."""
        limit = max(1, min(limit, MAX_TRAIL))
        events = _inst.history(self.core, instance_id)
        if after_seq is not None:
            events = [e for e in events if e.seq is not None and e.seq > after_seq]
        return events[:limit]

    # -- work -----------------------------------------------------------------------------
    def work(self, *, now: datetime | None = None) -> WorkOverview:
        at = self.core.now(now)
        soon = at + timedelta(minutes=1)
        with self.core.read() as conn:
            ready = store.ready_tokens_by_node(conn)
            executing = store.executing_tokens_by_node(conn)
            topics = store.external_tasks_by_topic(conn, at)
            due = store.count_timers_due(conn, soon)
            workers = store.workers_seen(conn)
            first_due = store.timers_due(conn, soon, limit=50)
        return WorkOverview(
            at=at,
            ready_by_node=tuple(ready),
            executing_by_node=tuple(executing),
            topics=tuple(topics),
            timers_due_next_minute=due,
            timers_due=tuple(first_due),
            workers=tuple(workers),
        )
