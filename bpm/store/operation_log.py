"""The operation log (Camunda's user operation log): what operators did, who, and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, func, insert, select

from bpm.store import tables as t
from bpm.store.rows import record_of

ol = t.operation_log


@dataclass(frozen=True)
class OperationLogEntry:
    """One change of one operator action (``operation_id`` groups the changes of one)."""

    id: str
    operation_id: str
    operation_type: str
    entity_type: str
    category: str
    at: datetime
    user_id: str | None = None
    instance_id: str | None = None
    definition_id: str | None = None
    definition_key: str | None = None
    property: str | None = None
    org_value: str | None = None
    new_value: str | None = None
    annotation: str | None = None
    batch_id: str | None = None


@dataclass(frozen=True)
class OperationLogQuery:
    """Filters of ``/history/user-operation`` (None: any)."""

    instance_id: str | None = None
    definition_id: str | None = None
    definition_key: str | None = None
    operation_type: str | None = None
    entity_type: str | None = None
    user_id: str | None = None
    category: str | None = None
    batch_id: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    ascending: bool = True


def append(conn: Connection, entries: Sequence[OperationLogEntry]) -> None:
    """Write entries (in the operation's own transaction)."""
    if entries:
        conn.execute(
            insert(ol),
            [{c.name: getattr(e, c.name) for c in ol.columns} for e in entries],
        )


def _where(q: OperationLogQuery) -> list[ColumnElement[bool]]:
    out: list[ColumnElement[bool]] = []
    for column, value in (
        (ol.c.instance_id, q.instance_id),
        (ol.c.definition_id, q.definition_id),
        (ol.c.definition_key, q.definition_key),
        (ol.c.operation_type, q.operation_type),
        (ol.c.entity_type, q.entity_type),
        (ol.c.user_id, q.user_id),
        (ol.c.category, q.category),
        (ol.c.batch_id, q.batch_id),
    ):
        if value is not None:
            out.append(column == value)
    if q.after is not None:
        out.append(ol.c.at >= q.after)
    if q.before is not None:
        out.append(ol.c.at <= q.before)
    return out


def entries(
    conn: Connection, q: OperationLogQuery, *, offset: int = 0, limit: int | None = None
) -> list[OperationLogEntry]:
    """Entries by time (then id), paged in SQL."""
    order = (ol.c.at, ol.c.id) if q.ascending else (ol.c.at.desc(), ol.c.id.desc())
    stmt = select(ol).where(*_where(q)).order_by(*order).offset(offset)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [record_of(OperationLogEntry, r._mapping) for r in conn.execute(stmt)]


def count(conn: Connection, q: OperationLogQuery) -> int:
    return int(conn.execute(select(func.count()).select_from(ol).where(*_where(q))).scalar() or 0)
