"""Queries of variables as Camunda's ``/variable-instance`` and
``/history/variable-instance`` list them: one row per (instance, variable name).

Variables are one JSON document per instance; a page is ONE statement that walks the
instances in start order (``ix_process_instance_created``), expands each document
(``jsonb_each`` / ``json_each``) and stops at the LIMIT.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, false, func, select, true

from bpm.runtime.states import InstanceState
from bpm.store import dialect
from bpm.store import tables as t

pi = t.process_instance
RUNNING = (
    InstanceState.ACTIVE.value,
    InstanceState.SUSPENDED.value,
    InstanceState.COMPENSATING.value,
)
#: Camunda sort keys of variable instances.
VARIABLE_SORTS = ("variableName", "instanceId", "processInstanceId", "activityInstanceId")


@dataclass(frozen=True)
class VariableQuery:
    """Which variables to list; every field given must match (AND). ``values``: (name,
    operator, value) conditions, operators as in :func:`bpm.store.dialect.json_member_compare`."""

    running_only: bool = True
    instance_ids: tuple[str, ...] | None = None
    names: tuple[str, ...] | None = None
    name_like: str | None = None
    definition_id: str | None = None
    definition_keys: tuple[str, ...] | None = None
    values: tuple[tuple[str, str, Any], ...] = ()
    sorting: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class VariableRow:
    """One variable of one instance, with its Camunda type when the instance kept one."""

    instance_id: str
    definition_id: str
    definition_key: str
    name: str
    value: Any
    type_name: str | None
    instance_state: InstanceState
    created_at: datetime
    ended_at: datetime | None


def _from(conn: Connection, q: VariableQuery, stmt: Select[Any], each: Any) -> Select[Any]:
    """``stmt`` over the instances joined to their variables, with ``q``'s conditions."""
    cond: list[ColumnElement[bool]] = []
    if q.running_only:
        cond.append(pi.c.state.in_(RUNNING))
    if q.instance_ids is not None:
        cond.append(pi.c.id.in_(q.instance_ids) if q.instance_ids else false())
    if q.definition_keys is not None:
        cond.append(pi.c.definition_key.in_(q.definition_keys) if q.definition_keys else false())
    if q.definition_id is not None:
        cond.append(pi.c.definition_id == q.definition_id)
    if q.names is not None:
        cond.append(each.c.key.in_(q.names) if q.names else false())
    if q.name_like is not None:
        cond.append(each.c.key.like(q.name_like))
    for name, operator, value in q.values:
        cond.append(each.c.key == name)
        cond.append(dialect.json_member_compare(conn, pi.c.variables, name, operator, value))
    return stmt.select_from(pi).join(each, true()).where(*cond)


def list_variables(
    conn: Connection, q: VariableQuery, *, offset: int, limit: int
) -> list[VariableRow]:
    """A page of variables: by instance start time, then name (or ``q.sorting``)."""
    pg = dialect.is_postgres(conn)

    def columns(each: Any) -> list[Any]:
        out = [
            pi.c.id,
            pi.c.definition_id,
            pi.c.definition_key,
            pi.c.state,
            pi.c.created_at,
            pi.c.ended_at,
            pi.c.variable_types,
            each.c.key.label("name"),
            each.c.value.label("value"),
        ]
        if not pg:
            out.append(each.c.type.label("kind"))
        return out

    each = dialect.json_entries(conn, pi.c.variables)
    stmt = _from(conn, q, select(*columns(each)), each)
    order: list[Any] = []
    for key, ascending in q.sorting:
        column = each.c.key if key == "variableName" else pi.c.id
        order.append(column.asc() if ascending else column.desc())
    order += [pi.c.created_at, pi.c.id, each.c.key]
    rows = conn.execute(stmt.order_by(*order).offset(offset).limit(limit))
    return [
        VariableRow(
            instance_id=r.id,
            definition_id=r.definition_id,
            definition_key=r.definition_key,
            name=r.name,
            value=dialect.entry_value(conn, r.value, None if pg else r.kind),
            type_name=(r.variable_types or {}).get(r.name),
            instance_state=InstanceState(r.state),
            created_at=r.created_at,
            ended_at=r.ended_at,
        )
        for r in rows
    ]


def count_variables(conn: Connection, q: VariableQuery) -> int:
    each = dialect.json_entries(conn, pi.c.variables)
    stmt = _from(conn, q, select(func.count()), each)
    return int(conn.execute(stmt).scalar_one())
