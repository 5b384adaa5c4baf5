"""Queries behind Camunda's ``/history/...`` reads, on the engine's own tables (no second
log): instances from ``process_instance``, incidents from ``incident``, activity instances
from the token events of ``history`` rows.

Each list is one statement with a LIMIT that walks an index in its order:
``ix_process_instance_created`` / ``ix_process_instance_key_created`` (start time),
``ix_process_instance_ended`` (end time), ``ix_incident_created``, and the primary key or
``ix_history_by_instance`` of ``history``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, false, func, select

from bpm.runtime.records import Incident, Instance, UserTask
from bpm.runtime.states import FINAL_INSTANCE_STATES, IncidentState, InstanceState
from bpm.store import tables as t
from bpm.store.rows import record_of
from bpm.store.task_queries import tenant_condition

pi = t.process_instance
pd = t.process_definition
inc = t.incident
h = t.history

#: Camunda sort keys of historic instances (each backed by an index).
INSTANCE_SORTS: dict[str, Any] = {
    "startTime": pi.c.created_at,
    "endTime": pi.c.ended_at,
    "instanceId": pi.c.id,
}
#: Camunda sort keys of historic incidents.
INCIDENT_SORTS: dict[str, Any] = {
    "createTime": inc.c.created_at,
    "incidentId": inc.c.id,
    "endTime": inc.c.resolved_at,
    "processInstanceId": inc.c.instance_id,
}


@dataclass(frozen=True)
class InstanceQuery:
    """Which instances ``/history/process-instance`` lists (every field given: AND)."""

    instance_ids: tuple[str, ...] | None = None
    definition_id: str | None = None
    definition_keys: tuple[str, ...] | None = None
    definition_keys_not: tuple[str, ...] | None = None
    business_key: str | None = None
    business_keys: tuple[str, ...] | None = None
    business_key_like: str | None = None
    states: tuple[InstanceState, ...] | None = None
    started_before: datetime | None = None
    started_after: datetime | None = None
    finished_before: datetime | None = None
    finished_after: datetime | None = None
    with_incidents: bool | None = None
    # the tenants of the instance's definition; ``without_tenant``: also definitions of none
    tenant_ids: tuple[str, ...] | None = None
    without_tenant: bool = False
    sorting: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class InstanceRow:
    instance: Instance
    definition_name: str | None
    definition_version: int
    tenant_id: str | None = None  # the process definition's (its deployment's)


def _in(column: Any, values: tuple[Any, ...] | None) -> list[ColumnElement[bool]]:
    if values is None:
        return []
    return [column.in_(values) if values else false()]


def _instance_conditions(q: InstanceQuery) -> list[ColumnElement[bool]]:
    cond = _in(pi.c.id, q.instance_ids) + _in(pi.c.definition_key, q.definition_keys)
    cond += _in(pi.c.business_key, q.business_keys)
    if q.states is not None:
        cond += _in(pi.c.state, tuple(s.value for s in q.states))
        if q.states and all(s in FINAL_INSTANCE_STATES for s in q.states):
            # said outright, so that an end-time order walks ix_process_instance_ended
            # from its first finished instance instead of past every running one
            cond.append(pi.c.ended_at.is_not(None))
    if q.definition_keys_not:
        cond.append(pi.c.definition_key.not_in(q.definition_keys_not))
    for column, value in (
        (pi.c.definition_id, q.definition_id),
        (pi.c.business_key, q.business_key),
    ):
        if value is not None:
            cond.append(column == value)
    if q.business_key_like is not None:
        cond.append(pi.c.business_key.like(q.business_key_like))
    if q.started_after is not None:
        cond.append(pi.c.created_at > q.started_after)
    if q.started_before is not None:
        cond.append(pi.c.created_at < q.started_before)
    if q.finished_after is not None:
        cond.append(pi.c.ended_at > q.finished_after)
    if q.finished_before is not None:
        cond.append(pi.c.ended_at < q.finished_before)
    if q.with_incidents:
        # driven by the open incidents (a small set, ix_incident_open)
        cond.append(pi.c.id.in_(select(inc.c.instance_id).where(inc.c.state == "open")))
    tenants = tenant_condition(pi.c.definition_id, q.tenant_ids, q.without_tenant)
    if tenants is not None:
        cond.append(tenants)
    return cond


def list_instances(
    conn: Connection, q: InstanceQuery, *, offset: int, limit: int
) -> list[InstanceRow]:
    """A page of instances in ``q.sorting`` order (default: by start time), ties by id.

    Their ``variables`` are not read (empty): lists never return them."""
    order: list[Any] = []
    for key, ascending in q.sorting or (("startTime", True),):
        column = INSTANCE_SORTS[key]
        order.append(column.asc() if ascending else column.desc())
    order.append(pi.c.id)
    # never the variables: a page of 1,000 instances must not read 1,000 JSON documents
    columns = [c for c in pi.c if c.name != "variables"]
    stmt = (
        select(
            *columns,
            pd.c.name.label("definition_name"),
            pd.c.version.label("definition_version"),
            pd.c.tenant_id.label("definition_tenant_id"),
        )
        .join(pd, pd.c.id == pi.c.definition_id)
        .where(*_instance_conditions(q))
        .order_by(*order)
        .offset(offset)
        .limit(limit)
    )
    return [
        InstanceRow(
            record_of(Instance, r._mapping, variables={}),
            r.definition_name,
            r.definition_version,
            r.definition_tenant_id,
        )
        for r in conn.execute(stmt)
    ]


def count_instances(conn: Connection, q: InstanceQuery) -> int:
    stmt = select(func.count()).select_from(pi).where(*_instance_conditions(q))
    return int(conn.execute(stmt).scalar_one())


def last_events(conn: Connection, instance_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The events of the last history row of each instance (how a terminated one ended)."""
    if not instance_ids:
        return {}
    last = select(func.max(h.c.seq)).where(h.c.instance_id.in_(list(instance_ids)))
    stmt = select(h.c.instance_id, h.c.events).where(h.c.seq.in_(last.group_by(h.c.instance_id)))
    return {r.instance_id: list(r.events) for r in conn.execute(stmt)}


# -- incidents ------------------------------------------------------------------------------


@dataclass(frozen=True)
class IncidentQuery:
    """Which incidents ``/history/incident`` lists (every field given: AND)."""

    incident_id: str | None = None
    instance_ids: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    node_id: str | None = None
    states: tuple[IncidentState, ...] | None = None
    definition_id: str | None = None
    definition_keys: tuple[str, ...] | None = None
    message_like: str | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    sorting: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class IncidentRow:
    incident: Incident
    definition_id: str
    definition_key: str


def _incident_conditions(q: IncidentQuery) -> list[ColumnElement[bool]]:
    cond = _in(inc.c.instance_id, q.instance_ids) + _in(inc.c.type, q.types)
    cond += _in(pi.c.definition_key, q.definition_keys)
    if q.states is not None:
        cond += _in(inc.c.state, tuple(s.value for s in q.states))
    for column, value in (
        (inc.c.id, q.incident_id),
        (inc.c.node_id, q.node_id),
        (pi.c.definition_id, q.definition_id),
    ):
        if value is not None:
            cond.append(column == value)
    if q.message_like is not None:
        cond.append(inc.c.message.like(q.message_like))
    if q.created_after is not None:
        cond.append(inc.c.created_at > q.created_after)
    if q.created_before is not None:
        cond.append(inc.c.created_at < q.created_before)
    return cond


def list_incidents(
    conn: Connection, q: IncidentQuery, *, offset: int, limit: int
) -> list[IncidentRow]:
    """A page of incidents of every state, oldest first (or ``q.sorting``)."""
    order: list[Any] = []
    for key, ascending in q.sorting or (("createTime", True),):
        column = INCIDENT_SORTS[key]
        order.append(column.asc() if ascending else column.desc())
    order.append(inc.c.id)
    stmt = (
        select(inc, pi.c.definition_id, pi.c.definition_key)
        .join(pi, pi.c.id == inc.c.instance_id)
        .where(*_incident_conditions(q))
        .order_by(*order)
        .offset(offset)
        .limit(limit)
    )
    return [
        IncidentRow(record_of(Incident, r._mapping), r.definition_id, r.definition_key)
        for r in conn.execute(stmt)
    ]


def count_incidents(conn: Connection, q: IncidentQuery) -> int:
    """How many incidents match (``incident`` alone unless a filter reads the instance)."""
    by_definition = q.definition_id is not None or q.definition_keys is not None
    source = inc.join(pi, pi.c.id == inc.c.instance_id) if by_definition else inc
    stmt = select(func.count()).select_from(source).where(*_incident_conditions(q))
    return int(conn.execute(stmt).scalar_one())


# -- history rows (activity instances) ------------------------------------------------------


@dataclass(frozen=True)
class HistoryRow:
    seq: int
    instance_id: str
    at: datetime
    events: list[dict[str, Any]]


def history_rows(
    conn: Connection,
    *,
    instance_ids: Sequence[str] | None,
    after: int | None,
    descending: bool,
    limit: int,
) -> list[HistoryRow]:
    """Up to ``limit`` history rows past ``after`` (a seq) in seq order: the primary key,
    or ``ix_history_by_instance`` for given instances."""
    stmt = select(h.c.seq, h.c.instance_id, h.c.at, h.c.events)
    if instance_ids is not None:
        stmt = stmt.where(h.c.instance_id.in_(list(instance_ids)) if instance_ids else false())
    if after is not None:
        stmt = stmt.where(h.c.seq < after if descending else h.c.seq > after)
    stmt = stmt.order_by(h.c.seq.desc() if descending else h.c.seq).limit(limit)
    return [HistoryRow(r.seq, r.instance_id, r.at, list(r.events)) for r in conn.execute(stmt)]


def rows_from(conn: Connection, instance_ids: Sequence[str], first_seq: int) -> list[HistoryRow]:
    """Every history row of the instances from ``first_seq`` on (where their activities
    end), in order (``ix_history_by_instance``)."""
    if not instance_ids:
        return []
    stmt = (
        select(h.c.seq, h.c.instance_id, h.c.at, h.c.events)
        .where(h.c.instance_id.in_(list(instance_ids)), h.c.seq >= first_seq)
        .order_by(h.c.seq)
    )
    return [HistoryRow(r.seq, r.instance_id, r.at, list(r.events)) for r in conn.execute(stmt)]


def instances_by_id(conn: Connection, instance_ids: Sequence[str]) -> dict[str, Instance]:
    """Instances (without tokens) by id, one primary-key lookup each."""
    if not instance_ids:
        return {}
    stmt = select(pi).where(pi.c.id.in_(list(instance_ids)))
    return {r.id: record_of(Instance, r._mapping) for r in conn.execute(stmt)}


def user_tasks_of(conn: Connection, instance_ids: Sequence[str]) -> list[UserTask]:
    """Every user task of the instances (``ix_user_task_instance``), one statement."""
    if not instance_ids:
        return []
    ut = t.user_task
    stmt = select(ut).where(ut.c.instance_id.in_(list(instance_ids)))
    return [record_of(UserTask, r._mapping) for r in conn.execute(stmt)]
