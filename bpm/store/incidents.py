"""Incident queries."""

from __future__ import annotations

from sqlalchemy import Connection, select

from bpm.runtime.records import Incident
from bpm.store import tables as t
from bpm.store.instances import called_tree
from bpm.store.rows import record_of

i = t.incident


def get(conn: Connection, incident_id: str) -> Incident | None:
    row = conn.execute(select(i).where(i.c.id == incident_id)).first()
    return record_of(Incident, row._mapping) if row else None


def list_incidents(
    conn: Connection,
    *,
    instance_id: str | None = None,
    state: str | None = "open",
    limit: int | None = None,
    called: bool = True,
) -> list[Incident]:
    """Incidents, oldest first; open ones only unless ``state`` says otherwise. Those of
    an instance include those of the instances it called (``called``), each naming its
    own instance."""
    q = select(i).order_by(i.c.created_at, i.c.id)
    if instance_id is not None and called:
        q = q.where(i.c.instance_id.in_(called_tree(instance_id)))
    elif instance_id is not None:
        q = q.where(i.c.instance_id == instance_id)
    if state is not None:
        q = q.where(i.c.state == state)
    if limit is not None:
        q = q.limit(limit)
    return [record_of(Incident, r._mapping) for r in conn.execute(q)]
