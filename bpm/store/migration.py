"""The reads process instance migration needs (:mod:`bpm.engine.migration`): every active
scope of an instance (a migration moves all of them, not only those on a token's chain),
the instances a query chooses, and the instances an executed migration moved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select

from bpm.runtime.changes import Item
from bpm.runtime.records import Scope
from bpm.runtime.states import InstanceState, ScopeState
from bpm.store import tables as t
from bpm.store.rows import record_of, table_of

pi = t.process_instance


@dataclass(frozen=True)
class InstanceSelection:
    """Camunda's ``processInstanceQuery`` of a migration (every field given: AND); only
    running instances (active or suspended) are chosen."""

    instance_ids: tuple[str, ...] | None = None
    definition_id: str | None = None
    definition_key: str | None = None
    business_key: str | None = None
    active: bool = False
    suspended: bool = False


def active_scopes(conn: Connection, instance_id: str) -> list[Scope]:
    """Every active scope of one instance (forks too), oldest first."""
    sc = t.scope
    rows = conn.execute(
        select(sc)
        .where(sc.c.instance_id == instance_id, sc.c.state == ScopeState.ACTIVE.value)
        .order_by(sc.c.created_at, sc.c.id)
    )
    return [record_of(Scope, r._mapping) for r in rows]


def items_of_tokens(
    conn: Connection, kind: type[Item], instance_id: str, token_ids: Sequence[str]
) -> list[Item]:
    """Every record of ``kind`` (any state) of the instance's ``token_ids``, in one query."""
    if not token_ids:
        return []
    table = table_of(kind)
    rows = conn.execute(
        select(table).where(
            table.c.instance_id == instance_id, table.c.token_id.in_(list(token_ids))
        )
    )
    return [record_of(kind, r._mapping) for r in rows]


def choose(conn: Connection, q: InstanceSelection, limit: int) -> list[str]:
    """The ids of the running instances ``q`` chooses, in id order, at most ``limit``."""
    states = [InstanceState.ACTIVE.value, InstanceState.SUSPENDED.value]
    if q.active and not q.suspended:
        states = [InstanceState.ACTIVE.value]
    elif q.suspended and not q.active:
        states = [InstanceState.SUSPENDED.value]
    stmt = select(pi.c.id).where(pi.c.state.in_(states))
    if q.instance_ids is not None:
        stmt = stmt.where(pi.c.id.in_(list(q.instance_ids)))
    for column, value in (
        (pi.c.definition_id, q.definition_id),
        (pi.c.definition_key, q.definition_key),
        (pi.c.business_key, q.business_key),
    ):
        if value is not None:
            stmt = stmt.where(column == value)
    return [r[0] for r in conn.execute(stmt.order_by(pi.c.id).limit(limit))]


def migrated_by(conn: Connection, operation_id: str, operation_type: str) -> list[str]:
    """The instances one migration (its operation id in the operation log) moved."""
    ol = t.operation_log
    rows = conn.execute(
        select(ol.c.instance_id)
        .where(
            ol.c.operation_id == operation_id,
            ol.c.operation_type == operation_type,
            ol.c.instance_id.is_not(None),
        )
        .order_by(ol.c.instance_id)
    )
    return sorted({r[0] for r in rows})


def existing(conn: Connection, instance_ids: Sequence[str]) -> set[str]:
    """Which of ``instance_ids`` exist."""
    if not instance_ids:
        return set()
    rows = conn.execute(select(pi.c.id).where(pi.c.id.in_(list(instance_ids))))
    return {r[0] for r in rows}
