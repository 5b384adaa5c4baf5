"""What the database holds right now, for gauges: the inline backlog, external tasks by
topic and state, open incidents. Global values, read by ONE process (the API's
``/metrics``), never summed across processes; three bounded queries on one connection."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from bpm.engine.core import EngineCore
from bpm.store import cockpit as cockpit_store
from bpm.store import metrics as store
from bpm.store.cockpit import TopicCount
from bpm.store.metrics import Backlog

__all__ = ["Backlog", "Gauges", "IncidentCount", "TopicCount", "read"]


@dataclass(frozen=True)
class IncidentCount:
    """Open incidents of one node of one process (every version)."""

    definition_key: str
    node_id: str
    count: int


@dataclass(frozen=True)
class Gauges:
    at: datetime
    backlog: tuple[Backlog, ...]
    topics: tuple[TopicCount, ...]
    incidents: tuple[IncidentCount, ...]


def read(core: EngineCore, now: datetime | None = None) -> Gauges:
    at = core.now(now)
    with core.db.connect() as conn:
        backlog = store.ready_backlog(conn)
        topics = cockpit_store.external_tasks_by_topic(conn, at, limit=1000)
        groups = cockpit_store.incident_groups(conn, limit=5000)
    incidents: dict[tuple[str, str], int] = defaultdict(int)
    for g in groups:  # one group per definition version: sum the versions of a key
        incidents[(g.definition_key, g.node_id)] += g.count
    return Gauges(
        at=at,
        backlog=tuple(backlog),
        topics=tuple(topics),
        incidents=tuple(IncidentCount(k, node, n) for (k, node), n in sorted(incidents.items())),
    )
