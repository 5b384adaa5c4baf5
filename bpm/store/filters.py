"""Saved task filters (Camunda's ``/filter``): a named task query and its owner."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, RowMapping, delete, func, insert, select, update

from bpm.store import tables as t

f = t.task_filter

#: Camunda's sort keys of ``/filter``.
FILTER_SORTS: dict[str, Any] = {
    "filterId": f.c.id,
    "resourceType": f.c.resource_type,
    "name": f.c.name,
    "owner": f.c.owner,
}


@dataclass(frozen=True)
class SavedFilter:
    """One filter: ``query`` is the task query as Camunda's JSON names it."""

    id: str
    resource_type: str
    name: str
    owner: str | None
    query: dict[str, Any]
    properties: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class FilterQuery:
    """Which filters to list; every field given must match (AND). ``visible_to``: only
    the filters this user owns (None: every filter, for administrators)."""

    id: str | None = None
    resource_type: str | None = None
    name: str | None = None
    name_like: str | None = None
    owner: str | None = None
    visible_to: str | None = None
    sorting: tuple[tuple[str, bool], ...] = ()


def _filter(row: RowMapping) -> SavedFilter:
    return SavedFilter(
        row["id"],
        row["resource_type"],
        row["name"],
        row["owner"],
        dict(row["query"] or {}),
        dict(row["properties"] or {}),
        row["created_at"],
    )


def add(conn: Connection, saved: SavedFilter) -> None:
    conn.execute(
        insert(f).values(
            id=saved.id,
            resource_type=saved.resource_type,
            name=saved.name,
            owner=saved.owner,
            query=saved.query,
            properties=saved.properties,
            created_at=saved.created_at,
        )
    )


def one(conn: Connection, filter_id: str) -> SavedFilter | None:
    row = conn.execute(select(f).where(f.c.id == filter_id)).mappings().first()
    return None if row is None else _filter(row)


def replace(conn: Connection, saved: SavedFilter) -> bool:
    """Replace name, owner, query and properties; False when there is no such filter."""
    done = conn.execute(
        update(f)
        .where(f.c.id == saved.id)
        .values(
            resource_type=saved.resource_type,
            name=saved.name,
            owner=saved.owner,
            query=saved.query,
            properties=saved.properties,
        )
    )
    return done.rowcount == 1


def remove(conn: Connection, filter_id: str) -> bool:
    return conn.execute(delete(f).where(f.c.id == filter_id)).rowcount == 1


def _where(q: FilterQuery) -> list[ColumnElement[bool]]:
    out: list[ColumnElement[bool]] = []
    if q.id is not None:
        out.append(f.c.id == q.id)
    if q.resource_type is not None:
        out.append(f.c.resource_type == q.resource_type)
    if q.name is not None:
        out.append(f.c.name == q.name)
    if q.name_like is not None:
        out.append(f.c.name.like(q.name_like))
    if q.owner is not None:
        out.append(f.c.owner == q.owner)
    if q.visible_to is not None:
        out.append(f.c.owner == q.visible_to)
    return out


def find(
    conn: Connection, q: FilterQuery, *, offset: int = 0, limit: int | None = None
) -> list[SavedFilter]:
    order = [FILTER_SORTS[k].asc() if up else FILTER_SORTS[k].desc() for k, up in q.sorting]
    stmt = select(f).where(*_where(q)).order_by(*order, f.c.created_at, f.c.id).offset(offset)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [_filter(r) for r in conn.execute(stmt).mappings()]


def count(conn: Connection, q: FilterQuery) -> int:
    return int(conn.execute(select(func.count()).select_from(f).where(*_where(q))).scalar() or 0)
