"""Queries on deployed decisions, their requirements graphs and the decision history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, func, insert, select, tuple_

from bpm.runtime.records import (
    DecisionDefinition,
    DecisionInstance,
    DecisionRequirementsDefinition,
)
from bpm.store import tables as t
from bpm.store.rows import record_of, values_of

dd = t.decision_definition
drd = t.decision_requirements_definition
di = t.decision_instance

#: Camunda sort keys -> columns.
DEFINITION_SORTS: dict[str, Any] = {
    "id": dd.c.id,
    "key": dd.c.key,
    "name": dd.c.name,
    "version": dd.c.version,
    "deploymentId": dd.c.deployment_id,
    "decisionRequirementsDefinitionKey": dd.c.drd_key,
    "tenantId": dd.c.tenant_id,
    "versionTag": dd.c.version_tag,
}
DRD_SORTS: dict[str, Any] = {
    "id": drd.c.id,
    "key": drd.c.key,
    "name": drd.c.name,
    "version": drd.c.version,
    "deploymentId": drd.c.deployment_id,
    "tenantId": drd.c.tenant_id,
}
INSTANCE_SORTS: dict[str, Any] = {"evaluationTime": di.c.evaluated_at, "tenantId": di.c.tenant_id}


@dataclass(frozen=True)
class DefinitionQuery:
    """Which decision (or requirements) definitions to list; every field given must match."""

    id: str | None = None
    ids: tuple[str, ...] | None = None
    key: str | None = None
    key_like: str | None = None
    name: str | None = None
    name_like: str | None = None
    version: int | None = None
    latest: bool = False
    deployment_id: str | None = None
    drd_id: str | None = None
    drd_key: str | None = None
    resource: str | None = None
    tenant_ids: tuple[str, ...] | None = None
    sorting: tuple[tuple[str, bool], ...] = ()
    first: int = 0
    limit: int | None = None


def _definition_filter(table: Any, q: DefinitionQuery) -> list[ColumnElement[bool]]:
    cond: list[ColumnElement[bool]] = []
    for column, value in (
        (table.c.id, q.id),
        (table.c.key, q.key),
        (table.c.name, q.name),
        (table.c.version, q.version),
        (table.c.deployment_id, q.deployment_id),
        (table.c.resource, q.resource),
    ):
        if value is not None:
            cond.append(column == value)
    if q.ids is not None:
        cond.append(table.c.id.in_(q.ids))
    if q.key_like is not None:
        cond.append(table.c.key.like(q.key_like))
    if q.name_like is not None:
        cond.append(table.c.name.like(q.name_like))
    if q.tenant_ids is not None:
        cond.append(table.c.tenant_id.in_(q.tenant_ids))
    if table is dd:
        if q.drd_id is not None:
            cond.append(dd.c.drd_id == q.drd_id)
        if q.drd_key is not None:
            cond.append(dd.c.drd_key == q.drd_key)
    if q.latest:
        newest = select(table.c.key, func.max(table.c.version)).group_by(table.c.key)
        cond.append(tuple_(table.c.key, table.c.version).in_(newest))
    return cond


def _page(
    query: Select[Any], q: DefinitionQuery | InstanceQuery, sorts: dict[str, Any]
) -> Select[Any]:
    order = [sorts[k].asc() if up else sorts[k].desc() for k, up in q.sorting]
    tiebreak = next(iter(sorts.values()))
    query = query.order_by(*order, tiebreak)
    if q.first:
        query = query.offset(q.first)
    if q.limit is not None:
        query = query.limit(q.limit)
    return query


def definitions(conn: Connection, q: DefinitionQuery) -> list[DecisionDefinition]:
    query = _page(select(dd).where(*_definition_filter(dd, q)), q, DEFINITION_SORTS)
    return [record_of(DecisionDefinition, row) for row in conn.execute(query).mappings()]


def count_definitions(conn: Connection, q: DefinitionQuery) -> int:
    query = select(func.count()).select_from(dd).where(*_definition_filter(dd, q))
    return int(conn.execute(query).scalar_one())


def requirements(conn: Connection, q: DefinitionQuery) -> list[DecisionRequirementsDefinition]:
    query = _page(select(drd).where(*_definition_filter(drd, q)), q, DRD_SORTS)
    return [
        record_of(DecisionRequirementsDefinition, row) for row in conn.execute(query).mappings()
    ]


def count_requirements(conn: Connection, q: DefinitionQuery) -> int:
    query = select(func.count()).select_from(drd).where(*_definition_filter(drd, q))
    return int(conn.execute(query).scalar_one())


def latest(conn: Connection, key: str) -> DecisionDefinition | None:
    row = (
        conn.execute(select(dd).where(dd.c.key == key).order_by(dd.c.version.desc()).limit(1))
        .mappings()
        .first()
    )
    return record_of(DecisionDefinition, row) if row else None


def latest_requirements(conn: Connection, key: str) -> DecisionRequirementsDefinition | None:
    query = select(drd).where(drd.c.key == key).order_by(drd.c.version.desc()).limit(1)
    row = conn.execute(query).mappings().first()
    return record_of(DecisionRequirementsDefinition, row) if row else None


def next_version(conn: Connection, table: Any, key: str) -> int:
    found = conn.execute(select(func.max(table.c.version)).where(table.c.key == key)).scalar()
    return int(found or 0) + 1


def insert_requirements(conn: Connection, record: DecisionRequirementsDefinition) -> None:
    conn.execute(insert(drd).values(**values_of(record)))


def insert_definition(conn: Connection, record: DecisionDefinition) -> None:
    conn.execute(insert(dd).values(**values_of(record)))


# --- history ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InstanceQuery:
    """Which decision instances to list (Camunda's ``/history/decision-instance``)."""

    id: str | None = None
    ids: tuple[str, ...] | None = None
    definition_id: str | None = None
    definition_key: str | None = None
    definition_keys: tuple[str, ...] | None = None
    definition_name: str | None = None
    process_instance_id: str | None = None
    process_definition_id: str | None = None
    process_definition_key: str | None = None
    activity_ids: tuple[str, ...] | None = None
    root_id: str | None = None
    roots_only: bool = False
    drd_id: str | None = None
    drd_key: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    tenant_ids: tuple[str, ...] | None = None
    sorting: tuple[tuple[str, bool], ...] = ()
    first: int = 0
    limit: int | None = None


def _instance_filter(q: InstanceQuery) -> list[ColumnElement[bool]]:
    cond: list[ColumnElement[bool]] = []
    for column, value in (
        (di.c.id, q.id),
        (di.c.definition_id, q.definition_id),
        (di.c.definition_key, q.definition_key),
        (di.c.definition_name, q.definition_name),
        (di.c.process_instance_id, q.process_instance_id),
        (di.c.process_definition_id, q.process_definition_id),
        (di.c.process_definition_key, q.process_definition_key),
        (di.c.root_id, q.root_id),
        (di.c.drd_id, q.drd_id),
        (di.c.drd_key, q.drd_key),
    ):
        if value is not None:
            cond.append(column == value)
    for column, values in (
        (di.c.id, q.ids),
        (di.c.definition_key, q.definition_keys),
        (di.c.activity_id, q.activity_ids),
        (di.c.tenant_id, q.tenant_ids),
    ):
        if values is not None:
            cond.append(column.in_(values))
    if q.roots_only:
        cond.append(di.c.root_id.is_(None))
    if q.after is not None:
        cond.append(di.c.evaluated_at > q.after)
    if q.before is not None:
        cond.append(di.c.evaluated_at < q.before)
    return cond


def insert_instances(conn: Connection, records: Sequence[DecisionInstance]) -> None:
    if records:
        conn.execute(insert(di), [values_of(r) for r in records])


def instances(conn: Connection, q: InstanceQuery) -> list[DecisionInstance]:
    query = _page(select(di).where(*_instance_filter(q)), q, INSTANCE_SORTS)
    return [record_of(DecisionInstance, row) for row in conn.execute(query).mappings()]


def count_instances(conn: Connection, q: InstanceQuery) -> int:
    query = select(func.count()).select_from(di).where(*_instance_filter(q))
    return int(conn.execute(query).scalar_one())
