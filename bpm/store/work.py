"""Loading an instance under its lock, and writing back an InstanceWork in one go."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, and_, bindparam, insert, select, update

from bpm.errors import NotFound
from bpm.runtime.records import ForkScope, Instance, Token
from bpm.runtime.states import LIVE_TOKEN_STATES
from bpm.runtime.work import InstanceWork
from bpm.store import tables as t
from bpm.store.rows import (
    event_values,
    instance_from_row,
    scope_from_row,
    token_from_row,
    token_values,
)

_TABLES: dict[str, Table] = {
    "timer": t.timer,
    "external_task": t.external_task,
    "user_task": t.user_task,
    "incident": t.incident,
    "token": t.token,
}
_LIVE = [s.value for s in LIVE_TOKEN_STATES]


def lock_instance(conn: Connection, instance_id: str) -> Instance:
    """``SELECT ... FOR UPDATE`` of the instance row: always the first lock a change takes."""
    row = conn.execute(
        select(t.process_instance).where(t.process_instance.c.id == instance_id).with_for_update()
    ).first()
    if row is None:
        raise NotFound(f"process instance {instance_id} does not exist")
    return instance_from_row(row)


def load_work(
    conn: Connection, instance_id: str, now: datetime, *, max_variable_bytes: int
) -> InstanceWork:
    """Lock the instance, then load its live tokens (fork scopes load on first use).

    Two statements on purpose: under READ COMMITTED the token query takes its snapshot after
    the lock is granted, so it sees every token the previous lock holder committed.
    """
    if conn.dialect.name == "postgresql":
        from bpm.store.pipeline import lock_and_load

        inst, tokens = lock_and_load(conn, instance_id)
    else:
        inst = lock_instance(conn, instance_id)
        rows = conn.execute(
            select(t.token).where(t.token.c.instance_id == instance_id, t.token.c.state.in_(_LIVE))
        ).all()
        tokens = [token_from_row(r) for r in rows]

    return work_from(conn, inst, tokens, now, max_variable_bytes=max_variable_bytes)


def work_from(
    conn: Connection,
    inst: Instance,
    tokens: list[Token],
    now: datetime,
    *,
    max_variable_bytes: int,
) -> InstanceWork:
    """The change set of an instance whose row this transaction has locked."""

    def load_scope(scope_id: str) -> ForkScope | None:
        row = conn.execute(
            select(t.fork_scope).where(
                t.fork_scope.c.id == scope_id, t.fork_scope.c.instance_id == inst.id
            )
        ).first()
        return scope_from_row(row) if row else None

    return InstanceWork(
        instance=inst,
        tokens={tok.id: tok for tok in tokens},
        scopes={},
        now=now,
        max_variable_bytes=max_variable_bytes,
        scope_loader=load_scope,
    )


def new_work(instance: Instance, now: datetime, *, max_variable_bytes: int) -> InstanceWork:
    """Work on an instance this transaction creates (it is inserted by :func:`flush_work`)."""
    return InstanceWork(
        instance=instance,
        tokens={},
        scopes={},
        now=now,
        max_variable_bytes=max_variable_bytes,
        instance_new=True,
    )


def instance_values(inst: Instance) -> dict[str, Any]:
    return {
        "id": inst.id,
        "definition_id": inst.definition_id,
        "definition_key": inst.definition_key,
        "business_key": inst.business_key,
        "state": inst.state.value,
        "variables": inst.variables,
        "idempotency_key": inst.idempotency_key,
        "created_at": inst.created_at,
        "updated_at": inst.updated_at,
        "ended_at": inst.ended_at,
    }


def flush_work(conn: Connection, work: InstanceWork) -> None:
    """Write every change of ``work``; the caller commits.

    On PostgreSQL every statement goes out in one pipeline (one round trip); see
    :mod:`bpm.store.pipeline`. This generic path serves SQLite.
    """
    if conn.dialect.name == "postgresql":
        from bpm.store.pipeline import flush_work_pipelined

        flush_work_pipelined(conn, work)
        return
    inst = work.instance
    if work.instance_new:
        conn.execute(insert(t.process_instance).values(**instance_values(inst)))
    elif work.instance_dirty:
        conn.execute(
            update(t.process_instance)
            .where(t.process_instance.c.id == inst.id)
            .values(
                state=inst.state.value,
                variables=inst.variables,
                updated_at=work.now,
                ended_at=inst.ended_at,
            )
        )
    if work.new_scopes:
        conn.execute(
            insert(t.fork_scope),
            [
                {
                    "id": s.id,
                    "instance_id": s.instance_id,
                    "parent_id": s.parent_id,
                    "fork_node_id": s.fork_node_id,
                    "expected": s.expected,
                    "created_at": s.created_at,
                }
                for s in (work.scopes[i] for i in work.new_scopes)
            ],
        )
    for sid in work.dirty_scopes:
        conn.execute(
            update(t.fork_scope)
            .where(t.fork_scope.c.id == sid)
            .values(expected=work.scopes[sid].expected)
        )
    if work.new_tokens:
        conn.execute(insert(t.token), [token_values(work.tokens[i]) for i in work.new_tokens])
    if work.dirty_tokens:
        rows = []
        for tid in work.dirty_tokens:
            v = token_values(work.tokens[tid])
            v["b_id"] = v.pop("id")
            for k in ("instance_id", "node_id", "created_at", "scope_id", "parent_id"):
                v.pop(k)
            rows.append(v)
        conn.execute(
            update(t.token)
            .where(t.token.c.id == bindparam("b_id"))
            .values({k: bindparam(k) for k in rows[0] if k != "b_id"}),
            rows,
        )
    by_table: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in work.rows:
        by_table[row.table].append(row.values)
    for name, values in by_table.items():
        _insert_rows(conn, _TABLES[name], values)
    for up in work.updates:
        table = _TABLES[up.table]
        conn.execute(
            update(table)
            .where(and_(*(table.c[k] == v for k, v in up.where.items())))
            .values(**up.values)
        )
    if work.events:
        conn.execute(insert(t.history_event), [event_values(e) for e in work.events])
    # work.notify is not used here: NOTIFY exists only on PostgreSQL, whose flush is the
    # pipelined one (bpm.store.pipeline); SQLite long polls fall back to short sleeps.


def _insert_rows(conn: Connection, table: Table, values: list[dict[str, Any]]) -> None:
    # executemany needs the same keys in every row
    keys = sorted({k for v in values for k in v})
    conn.execute(insert(table), [{k: v.get(k) for k in keys} for v in values])
