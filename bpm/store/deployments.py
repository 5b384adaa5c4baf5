"""Queries on deployments and their resources (every file a deployment was given).

A resource is kept as its bytes and a SHA-256 of them; duplicate filtering compares
checksums, never the bytes. Reading a deployment's resources leaves the bytes out unless
one resource is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, delete, false, func, insert, or_, select

from bpm.runtime.records import DeploymentRecord, DeploymentResource, ProcessDefinition
from bpm.runtime.states import FINAL_INSTANCE_STATES
from bpm.store import tables as t
from bpm.store.rows import definition_from_row, record_of

d = t.deployment
r = t.deployment_resource
pd = t.process_definition
pi = t.process_instance

#: Camunda sort keys of ``/deployment`` -> columns.
DEPLOYMENT_SORTS: dict[str, Any] = {
    "id": d.c.id,
    "name": d.c.name,
    "deploymentTime": d.c.created_at,
    "tenantId": d.c.tenant_id,
}
_RESOURCE_META = [c for c in r.c if c.name != "data"]


@dataclass(frozen=True)
class DeploymentQuery:
    """Which deployments to list; every field given must match (AND)."""

    id: str | None = None
    name: str | None = None
    name_like: str | None = None
    source: str | None = None
    without_source: bool = False
    tenant_ids: tuple[str, ...] | None = None
    without_tenant: bool = False
    include_without_tenant: bool = False
    after: datetime | None = None
    before: datetime | None = None
    # (Camunda sort key, ascending); the key must be in DEPLOYMENT_SORTS
    sorting: tuple[tuple[str, bool], ...] = ()


def _same(column: Any, value: str | None) -> ColumnElement[bool]:
    result: ColumnElement[bool] = column.is_(None) if value is None else column == value
    return result


def _conditions(q: DeploymentQuery) -> list[ColumnElement[bool]]:
    cond: list[ColumnElement[bool]] = []
    simple = ((d.c.id, q.id), (d.c.name, q.name), (d.c.source, q.source))
    cond += [column == value for column, value in simple if value is not None]
    if q.name_like is not None:
        cond.append(d.c.name.like(q.name_like))
    if q.without_source:
        cond.append(d.c.source.is_(None))
    if q.tenant_ids is not None:
        tenants: ColumnElement[bool] = d.c.tenant_id.in_(q.tenant_ids) if q.tenant_ids else false()
        if q.include_without_tenant:
            tenants = or_(tenants, d.c.tenant_id.is_(None))
        cond.append(tenants)
    if q.without_tenant:
        cond.append(d.c.tenant_id.is_(None))
    if q.after is not None:
        cond.append(d.c.created_at > q.after)
    if q.before is not None:
        cond.append(d.c.created_at < q.before)
    return cond


def list_deployments(
    conn: Connection, q: DeploymentQuery, *, offset: int, limit: int
) -> list[DeploymentRecord]:
    """A page of deployments in ``q.sorting`` order (default: oldest first)."""
    order: list[Any] = []
    for key, ascending in q.sorting or (("deploymentTime", True),):
        column = DEPLOYMENT_SORTS[key]
        order.append(column.asc() if ascending else column.desc())
    order.append(d.c.id)
    stmt = select(d).where(*_conditions(q)).order_by(*order).offset(offset).limit(limit)
    return [record_of(DeploymentRecord, row._mapping) for row in conn.execute(stmt)]


def count_deployments(conn: Connection, q: DeploymentQuery) -> int:
    stmt = select(func.count()).select_from(d).where(*_conditions(q))
    return int(conn.execute(stmt).scalar_one())


def get(conn: Connection, deployment_id: str) -> DeploymentRecord | None:
    row = conn.execute(select(d).where(d.c.id == deployment_id)).first()
    return record_of(DeploymentRecord, row._mapping) if row else None


def insert_deployment(conn: Connection, record: DeploymentRecord) -> None:
    conn.execute(
        insert(d).values(
            id=record.id,
            name=record.name,
            source=record.source,
            tenant_id=record.tenant_id,
            created_at=record.created_at,
        )
    )


def insert_resources(conn: Connection, resources: Sequence[DeploymentResource]) -> None:
    if resources:
        conn.execute(
            insert(r),
            [
                {
                    "id": x.id,
                    "deployment_id": x.deployment_id,
                    "name": x.name,
                    "data": x.data,
                    "checksum": x.checksum,
                }
                for x in resources
            ],
        )


def resources_of(conn: Connection, deployment_id: str) -> list[DeploymentResource]:
    """The resources of a deployment, by name, without their bytes."""
    stmt = select(*_RESOURCE_META).where(r.c.deployment_id == deployment_id).order_by(r.c.name)
    return [record_of(DeploymentResource, row._mapping) for row in conn.execute(stmt)]


def resource(conn: Connection, deployment_id: str, resource_id: str) -> DeploymentResource | None:
    """One resource with its bytes."""
    row = conn.execute(
        select(r).where(r.c.deployment_id == deployment_id, r.c.id == resource_id)
    ).first()
    return record_of(DeploymentResource, row._mapping) if row else None


def resource_named(conn: Connection, deployment_id: str, name: str) -> DeploymentResource | None:
    """The resource called ``name`` in a deployment, with its bytes."""
    row = conn.execute(
        select(r).where(r.c.deployment_id == deployment_id, r.c.name == name)
    ).first()
    return record_of(DeploymentResource, row._mapping) if row else None


def _same_origin(name: str | None, source: str | None, tenant_id: str | None) -> list[Any]:
    return [_same(d.c.name, name), _same(d.c.source, source), _same(d.c.tenant_id, tenant_id)]


def latest_checksums(
    conn: Connection,
    names: Iterable[str],
    *,
    deployment_name: str | None,
    source: str | None,
    tenant_id: str | None,
) -> dict[str, str]:
    """For each resource name, the checksum of its newest version among the deployments
    with this name, source and tenant (Camunda's duplicate filter compares with these)."""
    wanted = list(names)
    if not wanted:
        return {}
    stmt = (
        select(r.c.name, r.c.checksum)
        .join(d, d.c.id == r.c.deployment_id)
        .where(r.c.name.in_(wanted), *_same_origin(deployment_name, source, tenant_id))
        .order_by(d.c.created_at.desc(), d.c.id.desc())
    )
    out: dict[str, str] = {}
    for name, checksum in conn.execute(stmt):
        out.setdefault(name, checksum)
    return out


def latest_deployment(
    conn: Connection, *, name: str | None, source: str | None, tenant_id: str | None
) -> DeploymentRecord | None:
    """The newest deployment with this name, source and tenant."""
    stmt = (
        select(d)
        .where(*_same_origin(name, source, tenant_id))
        .order_by(d.c.created_at.desc(), d.c.id.desc())
        .limit(1)
    )
    row = conn.execute(stmt).first()
    return record_of(DeploymentRecord, row._mapping) if row else None


def definitions_of(conn: Connection, deployment_id: str) -> list[ProcessDefinition]:
    stmt = (
        select(*[c for c in pd.c if c.name not in ("source", "model")])
        .where(pd.c.deployment_id == deployment_id)
        .order_by(pd.c.key)
    )
    return [definition_from_row(row) for row in conn.execute(stmt)]


def instances_of(conn: Connection, definition_ids: Sequence[str], *, running: bool) -> list[str]:
    """Ids of the instances of these definitions: running ones, or ended ones."""
    if not definition_ids:
        return []
    final = [s.value for s in FINAL_INSTANCE_STATES]
    state = pi.c.state.not_in(final) if running else pi.c.state.in_(final)
    stmt = select(pi.c.id).where(pi.c.definition_id.in_(definition_ids), state)
    return [row.id for row in conn.execute(stmt)]


def delete_deployment(conn: Connection, deployment_id: str, definition_ids: Sequence[str]) -> None:
    """Delete a deployment, its resources, its definitions and what they scheduled (their
    instances must be gone already)."""
    if definition_ids:
        sched = t.timer_schedule
        schedules = select(sched.c.id).where(sched.c.definition_id.in_(definition_ids))
        conn.execute(delete(t.schedule_fire).where(t.schedule_fire.c.schedule_id.in_(schedules)))
        conn.execute(delete(sched).where(sched.c.definition_id.in_(definition_ids)))
        es = t.event_subscription
        conn.execute(
            delete(es).where(es.c.instance_id.is_(None), es.c.definition_id.in_(definition_ids))
        )
        conn.execute(delete(pd).where(pd.c.id.in_(definition_ids)))
    for decisions in (t.decision_definition, t.decision_requirements_definition):
        conn.execute(delete(decisions).where(decisions.c.deployment_id == deployment_id))
    conn.execute(delete(r).where(r.c.deployment_id == deployment_id))
    conn.execute(delete(d).where(d.c.id == deployment_id))
