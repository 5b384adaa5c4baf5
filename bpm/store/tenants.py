"""Tenants (names only) and their members: users and groups (migration 0014)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, RowMapping, delete, func, or_, select, update

from bpm.identity.values import Tenant
from bpm.store import dialect
from bpm.store import tables as t

tn = t.identity_tenant
tm = t.identity_tenant_member

TENANT_SORTS: dict[str, Any] = {"id": tn.c.id, "name": tn.c.name}


@dataclass(frozen=True)
class TenantQuery:
    """Which tenants to list; every field given must match (AND). ``user_member`` with
    ``member_groups``: tenants the user belongs to directly or through one of those groups
    (Camunda's ``includingGroupsOfUser``)."""

    ids: tuple[str, ...] | None = None
    name: str | None = None
    name_like: str | None = None
    user_member: str | None = None
    member_groups: tuple[str, ...] = ()
    group_member: str | None = None
    sorting: tuple[tuple[str, bool], ...] = ()


def _tenant(row: RowMapping) -> Tenant:
    return Tenant(row["id"], row["name"])


def insert(conn: Connection, tenant: Tenant) -> bool:
    """False when a tenant with this id exists (the primary key decides a race)."""
    return dialect.insert_unless_present(
        conn, tn, {"id": tenant.id, "name": tenant.name}, key=["id"]
    )


def one(conn: Connection, tenant_id: str) -> Tenant | None:
    row = conn.execute(select(tn).where(tn.c.id == tenant_id)).mappings().first()
    return None if row is None else _tenant(row)


def rename(conn: Connection, tenant: Tenant) -> bool:
    return (
        conn.execute(update(tn).where(tn.c.id == tenant.id).values(name=tenant.name)).rowcount == 1
    )


def remove(conn: Connection, tenant_id: str) -> bool:
    # SQLite does not enforce ON DELETE CASCADE: the members go in the same transaction
    conn.execute(delete(tm).where(tm.c.tenant_id == tenant_id))
    return conn.execute(delete(tn).where(tn.c.id == tenant_id)).rowcount == 1


def add_member(conn: Connection, tenant_id: str, kind: str, member_id: str) -> None:
    values = {"tenant_id": tenant_id, "kind": kind, "member_id": member_id}
    dialect.insert_unless_present(conn, tm, values, key=["tenant_id", "kind", "member_id"])


def remove_member(conn: Connection, tenant_id: str, kind: str, member_id: str) -> None:
    conn.execute(
        delete(tm).where(
            tm.c.tenant_id == tenant_id, tm.c.kind == kind, tm.c.member_id == member_id
        )
    )


def _members(kind: str, ids: tuple[str, ...]) -> Any:
    return select(tm.c.tenant_id).where(tm.c.kind == kind, tm.c.member_id.in_(ids))


def _where(q: TenantQuery) -> list[ColumnElement[bool]]:
    out: list[ColumnElement[bool]] = []
    if q.ids is not None:
        out.append(tn.c.id.in_(q.ids))
    if q.name is not None:
        out.append(tn.c.name == q.name)
    if q.name_like is not None:
        out.append(tn.c.name.like(q.name_like))
    if q.user_member is not None:
        direct = tn.c.id.in_(_members("user", (q.user_member,)))
        out.append(
            or_(direct, tn.c.id.in_(_members("group", q.member_groups)))
            if q.member_groups
            else direct
        )
    if q.group_member is not None:
        out.append(tn.c.id.in_(_members("group", (q.group_member,))))
    return out


def find(
    conn: Connection, q: TenantQuery, *, offset: int = 0, limit: int | None = None
) -> list[Tenant]:
    order = [TENANT_SORTS[k].asc() if up else TENANT_SORTS[k].desc() for k, up in q.sorting]
    stmt = select(tn).where(*_where(q)).order_by(*order, tn.c.id).offset(offset)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [_tenant(r) for r in conn.execute(stmt).mappings()]


def count(conn: Connection, q: TenantQuery) -> int:
    return int(conn.execute(select(func.count()).select_from(tn).where(*_where(q))).scalar() or 0)
