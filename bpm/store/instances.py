"""Read queries on instances, their tokens and user tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from bpm.runtime.records import Instance, Scope, Token, UserTask
from bpm.runtime.states import ScopeKind
from bpm.store import tables as t
from bpm.store.rows import record_of

pi = t.process_instance


def get(conn: Connection, instance_id: str, *, with_tokens: bool = True) -> Instance | None:
    """An instance; with its tokens, scopes (not forks) and called instances unless
    ``with_tokens`` is False."""
    row = conn.execute(select(pi).where(pi.c.id == instance_id)).first()
    if row is None:
        return None
    if not with_tokens:
        return record_of(Instance, row._mapping)
    sc = t.scope
    scopes = conn.execute(
        select(sc)
        .where(sc.c.instance_id == instance_id, sc.c.kind != ScopeKind.FORK.value)
        .order_by(sc.c.created_at, sc.c.loop_counter, sc.c.id)
    )
    children = conn.execute(
        select(pi.c.id).where(pi.c.parent_id == instance_id).order_by(pi.c.created_at, pi.c.id)
    )
    return record_of(
        Instance,
        row._mapping,
        tokens=tokens_of(conn, instance_id),
        scopes=tuple(record_of(Scope, r._mapping) for r in scopes),
        children=tuple(r.id for r in children),
    )


def called_tree(instance_id: str) -> Any:
    """A select of ``instance_id`` and every instance it called, directly or not."""
    tree = select(pi.c.id).where(pi.c.id == instance_id).cte("tree", recursive=True)
    tree = tree.union_all(select(pi.c.id).join(tree, pi.c.parent_id == tree.c.id))
    return select(tree.c.id)


def by_idempotency_key(conn: Connection, key: str) -> Instance | None:
    row = conn.execute(select(pi).where(pi.c.idempotency_key == key)).first()
    return record_of(Instance, row._mapping) if row else None


def tokens_of(conn: Connection, instance_id: str) -> tuple[Token, ...]:
    rows = conn.execute(
        select(t.token)
        .where(t.token.c.instance_id == instance_id)
        .order_by(t.token.c.created_at, t.token.c.id)
    )
    return tuple(record_of(Token, r._mapping) for r in rows)


def list_instances(
    conn: Connection,
    *,
    state: str | None = None,
    definition_key: str | None = None,
    business_key: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[Instance]:
    q = select(pi).order_by(pi.c.created_at.desc(), pi.c.id.desc())
    if state is not None:
        q = q.where(pi.c.state == state)
    if definition_key is not None:
        q = q.where(pi.c.definition_key == definition_key)
    if business_key is not None:
        q = q.where(pi.c.business_key == business_key)
    if offset:
        q = q.offset(offset)
    if limit is not None:
        q = q.limit(limit)
    return [record_of(Instance, r._mapping) for r in conn.execute(q)]


def user_tasks(
    conn: Connection,
    *,
    instance_id: str | None = None,
    state: str | None = "open",
    node_id: str | None = None,
    assignee: str | None = None,
) -> list[UserTask]:
    ut = t.user_task
    q = select(ut).order_by(ut.c.created_at, ut.c.id)
    if instance_id is not None:
        q = q.where(ut.c.instance_id == instance_id)
    if state is not None:
        q = q.where(ut.c.state == state)
    if node_id is not None:
        q = q.where(ut.c.node_id == node_id)
    if assignee is not None:
        q = q.where(ut.c.assignee == assignee)
    return [record_of(UserTask, r._mapping) for r in conn.execute(q)]


def listened_tasks_of(conn: Connection, tokens: Sequence[tuple[str, str]]) -> list[UserTask]:
    """The open or cancelled user tasks of ``(instance id, token id)`` pairs (one statement,
    on ``ix_user_task_instance``): the tasks whose listeners claimed steps may run."""
    if not tokens:
        return []
    ut = t.user_task
    stmt = select(ut).where(
        ut.c.instance_id.in_(sorted({i for i, _ in tokens})),
        ut.c.token_id.in_(sorted({tok for _, tok in tokens})),
        ut.c.state.in_(("open", "cancelled")),
    )
    return [record_of(UserTask, r._mapping) for r in conn.execute(stmt)]


def user_task(conn: Connection, task_id: str) -> UserTask | None:
    row = conn.execute(select(t.user_task).where(t.user_task.c.id == task_id)).first()
    return record_of(UserTask, row._mapping) if row else None
