"""Queries on users, groups, memberships and tenants (the built-in identity tables).

Passwords arrive here already hashed (:mod:`bpm.identity.passwords`); nothing in this
module sees one. Deleting a user or a group deletes its memberships in the same
statement batch (SQLite does not enforce the foreign keys' ``ON DELETE CASCADE``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, RowMapping, delete, func, select, update

from bpm.identity.values import Group, GroupQuery, Tenant, User, UserQuery
from bpm.store import dialect
from bpm.store import tables as t

u = t.identity_user
g = t.identity_group
m = t.identity_membership
tn = t.identity_tenant

USER_SORTS: dict[str, Any] = {
    "userId": u.c.id,
    "firstName": u.c.first_name,
    "lastName": u.c.last_name,
    "email": u.c.email,
}
GROUP_SORTS: dict[str, Any] = {"id": g.c.id, "name": g.c.name, "type": g.c.type}


def _user(row: RowMapping) -> User:
    return User(row["id"], row["first_name"], row["last_name"], row["email"])


def _group(row: RowMapping) -> Group:
    return Group(row["id"], row["name"], row["type"])


def insert_user(conn: Connection, user: User, password_hash: str | None, now: datetime) -> bool:
    """Add a user; False when one with this id exists (the primary key decides a race)."""
    values = {
        "id": user.id,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "password_hash": password_hash,
        "created_at": now,
    }
    return dialect.insert_unless_present(conn, u, values, key=["id"])


def user(conn: Connection, user_id: str) -> User | None:
    row = conn.execute(select(u).where(u.c.id == user_id)).mappings().first()
    return None if row is None else _user(row)


def password_hash(conn: Connection, user_id: str) -> str | None:
    """The stored hash, or None for a user without a password or no such user."""
    found = conn.execute(select(u.c.password_hash).where(u.c.id == user_id)).scalar()
    return None if found is None else str(found)


def update_profile(conn: Connection, user: User) -> bool:
    """Replace first name, last name and e-mail; False when there is no such user."""
    done = conn.execute(
        update(u)
        .where(u.c.id == user.id)
        .values(first_name=user.first_name, last_name=user.last_name, email=user.email)
    )
    return done.rowcount == 1


def set_password_hash(conn: Connection, user_id: str, hashed: str) -> bool:
    done = conn.execute(update(u).where(u.c.id == user_id).values(password_hash=hashed))
    return done.rowcount == 1


def delete_user(conn: Connection, user_id: str) -> bool:
    conn.execute(delete(m).where(m.c.user_id == user_id))
    return conn.execute(delete(u).where(u.c.id == user_id)).rowcount == 1


def _like(column: Any, pattern: str) -> ColumnElement[bool]:
    result: ColumnElement[bool] = column.like(pattern)
    return result


def _user_conditions(q: UserQuery) -> list[ColumnElement[bool]]:
    cond: list[ColumnElement[bool]] = []
    if q.ids is not None:
        cond.append(u.c.id.in_(q.ids))
    for column, value, like in (
        (u.c.first_name, q.first_name, q.first_name_like),
        (u.c.last_name, q.last_name, q.last_name_like),
        (u.c.email, q.email, q.email_like),
    ):
        if value is not None:
            cond.append(column == value)
        if like is not None:
            cond.append(_like(column, like))
    if q.member_of_group is not None:
        members = select(m.c.user_id).where(m.c.group_id == q.member_of_group)
        cond.append(u.c.id.in_(members))
    return cond


def _ordered(
    stmt: Any, sorts: dict[str, Any], sorting: Sequence[tuple[str, bool]], key: Any
) -> Any:
    for name, ascending in sorting:
        column = sorts[name]
        stmt = stmt.order_by(column.asc() if ascending else column.desc())
    return stmt.order_by(key)


def users(
    conn: Connection, q: UserQuery, *, offset: int = 0, limit: int | None = None
) -> list[User]:
    stmt = _ordered(select(u).where(*_user_conditions(q)), USER_SORTS, q.sorting, u.c.id)
    rows = conn.execute(stmt.offset(offset).limit(limit)).mappings()
    return [_user(r) for r in rows]


def count_users(conn: Connection, q: UserQuery) -> int:
    stmt = select(func.count()).select_from(u).where(*_user_conditions(q))
    return int(conn.execute(stmt).scalar_one())


def insert_group(conn: Connection, group: Group) -> bool:
    values = {"id": group.id, "name": group.name, "type": group.type}
    return dialect.insert_unless_present(conn, g, values, key=["id"])


def group(conn: Connection, group_id: str) -> Group | None:
    row = conn.execute(select(g).where(g.c.id == group_id)).mappings().first()
    return None if row is None else _group(row)


def update_group(conn: Connection, group: Group) -> bool:
    done = conn.execute(
        update(g).where(g.c.id == group.id).values(name=group.name, type=group.type)
    )
    return done.rowcount == 1


def delete_group(conn: Connection, group_id: str) -> bool:
    conn.execute(delete(m).where(m.c.group_id == group_id))
    return conn.execute(delete(g).where(g.c.id == group_id)).rowcount == 1


def _group_conditions(q: GroupQuery) -> list[ColumnElement[bool]]:
    cond: list[ColumnElement[bool]] = []
    if q.ids is not None:
        cond.append(g.c.id.in_(q.ids))
    if q.name is not None:
        cond.append(g.c.name == q.name)
    if q.name_like is not None:
        cond.append(_like(g.c.name, q.name_like))
    if q.type is not None:
        cond.append(g.c.type == q.type)
    if q.member is not None:
        cond.append(g.c.id.in_(select(m.c.group_id).where(m.c.user_id == q.member)))
    return cond


def groups(
    conn: Connection, q: GroupQuery, *, offset: int = 0, limit: int | None = None
) -> list[Group]:
    stmt = _ordered(select(g).where(*_group_conditions(q)), GROUP_SORTS, q.sorting, g.c.id)
    rows = conn.execute(stmt.offset(offset).limit(limit)).mappings()
    return [_group(r) for r in rows]


def count_groups(conn: Connection, q: GroupQuery) -> int:
    stmt = select(func.count()).select_from(g).where(*_group_conditions(q))
    return int(conn.execute(stmt).scalar_one())


def add_member(conn: Connection, group_id: str, user_id: str) -> None:
    """Idempotent: a membership that exists stays as it is."""
    values = {"user_id": user_id, "group_id": group_id}
    dialect.insert_unless_present(conn, m, values, key=["user_id", "group_id"])


def remove_member(conn: Connection, group_id: str, user_id: str) -> None:
    conn.execute(delete(m).where(m.c.group_id == group_id, m.c.user_id == user_id))


def group_ids_of(conn: Connection, user_id: str) -> frozenset[str]:
    rows = conn.execute(select(m.c.group_id).where(m.c.user_id == user_id)).scalars()
    return frozenset(str(x) for x in rows)


def insert_tenant(conn: Connection, tenant: Tenant) -> bool:
    return dialect.insert_unless_present(
        conn, tn, {"id": tenant.id, "name": tenant.name}, key=["id"]
    )


def tenants(conn: Connection) -> list[Tenant]:
    rows = conn.execute(select(tn).order_by(tn.c.id)).mappings()
    return [Tenant(r["id"], r["name"]) for r in rows]
