"""Loading instances under their locks, and writing back every change of a transaction.

One statement per kind of change, whatever the number of instances: a batch of steps
finished together writes its tokens in one INSERT and one UPDATE, its history in one
INSERT, and so on. Column lists come from the table definitions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from functools import cache
from typing import Any, TypeVar

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Connection,
    String,
    Table,
    and_,
    any_,
    bindparam,
    func,
    insert,
    literal,
    or_,
    select,
    union_all,
    update,
)

from bpm.runtime.changes import Item
from bpm.runtime.external import NOTIFY_CHANNEL as EXTERNAL_TASK_CHANNEL
from bpm.runtime.records import Compensable, Instance, Scope, Timer, Token
from bpm.runtime.states import LIVE_TOKEN_STATES, CompensableState, TimerState
from bpm.runtime.work import InstanceWork
from bpm.store import dialect, history
from bpm.store import tables as t
from bpm.store.rows import record_of, table_of, values_of

R = TypeVar("R")

TIMER_CHANNEL = "bpm_timer"
# A new timer due sooner than this wakes the timer waiters (their look-ahead is a tick).
TIMER_HORIZON = timedelta(seconds=5)

_LIVE = [s.value for s in LIVE_TOKEN_STATES]
pi = t.process_instance
# Inserts go parents first (foreign keys); the metadata knows the order.
_PARENTS_FIRST = tuple(t.metadata.sorted_tables)


# The lock order of instance rows: a call tree's root before its members, then by id.
_LOCK_ORDER = (pi.c.call_depth, pi.c.id)


def lock_instances(
    conn: Connection, instance_ids: Sequence[str], *, skip_locked: bool = False
) -> dict[str, Instance]:
    """``SELECT ... FOR UPDATE`` of the instance rows and of the roots of their call trees,
    roots first, then in id order: the first lock every change of an instance takes.
    Always in the same order, so two transactions that lock several instances cannot
    deadlock. ``skip_locked``: never wait, leave out the instances another transaction
    holds (for a caller that already holds other row locks)."""
    ids = sorted(set(instance_ids))
    if not ids:
        return {}
    roots = select(pi.c.root_id).where(pi.c.id.in_(ids), pi.c.root_id.is_not(None))
    if not skip_locked:
        # One id list (the instances, then their roots): the lock is index lookups only.
        wanted = union_all(select(pi.c.id).where(pi.c.id.in_(ids)), roots)
        q = select(pi).where(pi.c.id.in_(wanted)).order_by(*_LOCK_ORDER).with_for_update()
        return {r.id: record_of(Instance, r._mapping) for r in conn.execute(q)}
    # Skipping busy rows, a member could be taken without its root, and two such
    # transactions could then wait for each other's members. So: roots (and instances
    # outside call trees) first, skipping busy ones; then the members of the trees taken,
    # which nobody can hold without their root.
    alone = select(pi.c.id).where(pi.c.id.in_(ids), pi.c.root_id.is_(None))
    q = (
        select(pi)
        .where(pi.c.id.in_(union_all(alone, roots)))
        .order_by(*_LOCK_ORDER)
        .with_for_update(skip_locked=True)
    )
    got = {r.id: record_of(Instance, r._mapping) for r in conn.execute(q)}
    members = [i for i in ids if i not in got]
    if members and got:
        q = (
            select(pi)
            .where(pi.c.id.in_(members), pi.c.root_id.in_(sorted(got)))
            .order_by(*_LOCK_ORDER)
            .with_for_update()
        )
        got.update({r.id: record_of(Instance, r._mapping) for r in conn.execute(q)})
    return got


_LIVE_STATES = [literal(s.value) for s in LIVE_TOKEN_STATES]
_ONE: dict[Any, tuple[Any, Any, Any, Any]] = {}


def _one(kind: type[Any] | None) -> tuple[Any, Any, Any, Any]:
    """The statements that load one instance (and its call tree's root) under their locks:
    (lock, live tokens, the chains of their scopes, the work item), each with the one
    parameter ``key``: the instance id, or the id of a work item of ``kind`` the instance
    is found through (an item's instance and an instance's root never change, so finding
    them needs no lock). Built once per kind."""
    if kind in _ONE:
        return _ONE[kind]
    item = None
    owner: Any = bindparam("key")
    if kind is not None:
        table = table_of(kind)
        owner = select(table.c.instance_id).where(table.c.id == bindparam("key")).scalar_subquery()
        item = select(table).where(table.c.id == bindparam("key"))
    root = select(pi.c.root_id).where(pi.c.id == owner).scalar_subquery()
    lock = (
        select(pi, (pi.c.id == owner).label("is_owner"))
        .where(or_(pi.c.id == owner, pi.c.id == root))
        .order_by(*_LOCK_ORDER)
        .with_for_update(of=pi)
    )
    live = and_(
        or_(t.token.c.instance_id == owner, t.token.c.instance_id == root),
        t.token.c.state.in_(_LIVE_STATES),
    )
    sc = t.scope
    mine = or_(sc.c.instance_id == owner, sc.c.instance_id == root)
    chain = _with_parents(sc.c.id.in_(select(t.token.c.scope_id).where(live)), mine)
    _ONE[kind] = (lock, select(t.token).where(live), select(chain), item)
    return _ONE[kind]


def _load_one(
    conn: Connection, key: str, kind: type[Any] | None
) -> tuple[dict[str, Instance], str | None, list[Token], list[Scope], Any]:
    """Lock one instance (and its call tree's root) and read the live tokens, the chains of
    their scopes and (``kind``) the work item ``key``: ONE round trip on PostgreSQL. The
    reads run after the locks are granted, so they see everything the previous lock holder
    committed. Returns (locked instances, the owner's id or None, tokens, scopes, item)."""
    lock, tokens, scopes, item = _one(kind)
    params = {"key": key}
    statements = [(lock, params), (tokens, params), (scopes, params)]
    if item is not None:
        statements.append((item, params))
    rows = dialect.run_many(conn, statements)
    instances = {r["id"]: record_of(Instance, r) for r in rows[0]}
    owner = next((r["id"] for r in rows[0] if r["is_owner"]), None)
    found = record_of(kind, rows[3][0]) if kind is not None and rows[3] else None
    return (
        instances,
        owner,
        [record_of(Token, r) for r in rows[1]],
        [record_of(Scope, r) for r in rows[2]],
        found,
    )


_THROUGH: dict[tuple[type[Any], str], tuple[Any, Any, Any, Any]] = {}


def _among_keys(conn: Connection, column: Any) -> ColumnElement[bool]:
    """``column`` is one of the parameter ``keys`` (a list): an array parameter on
    PostgreSQL (the statement is compiled once, whatever the number of keys), an expanding
    IN on SQLite."""
    if dialect.is_postgres(conn):
        matched: ColumnElement[bool] = column == any_(bindparam("keys", type_=ARRAY(String)))
        return matched
    expanded: ColumnElement[bool] = column.in_(bindparam("keys", expanding=True))
    return expanded


def _through(conn: Connection, kind: type[Any]) -> tuple[Any, Any, Any, Any]:
    """The statements that lock and load the instances that the work items ``keys`` (a
    list parameter) of ``kind`` belong to, with their call trees' roots: (lock, live
    tokens, the chains of their scopes, the items). Built once per kind and dialect."""
    cache_key = (kind, conn.dialect.name)
    found = _THROUGH.get(cache_key)
    if found is not None:
        return found
    table = table_of(kind)
    owners = select(table.c.instance_id).where(_among_keys(conn, table.c.id))
    roots = select(pi.c.root_id).where(pi.c.id.in_(owners), pi.c.root_id.is_not(None))
    # One id list (the owners, then their roots): the lock is index lookups only.
    wanted = union_all(owners, roots)
    lock = select(pi).where(pi.c.id.in_(wanted)).order_by(*_LOCK_ORDER).with_for_update(of=pi)
    live = and_(t.token.c.instance_id.in_(wanted), t.token.c.state.in_(_LIVE_STATES))
    sc = t.scope
    chain = _with_parents(
        sc.c.id.in_(select(t.token.c.scope_id).where(live)), sc.c.instance_id.in_(wanted)
    )
    items = select(table).where(_among_keys(conn, table.c.id))
    found = (lock, select(t.token).where(live), select(chain), items)
    _THROUGH[cache_key] = found
    return found


def load_through(
    conn: Connection,
    kind: type[Item],
    item_ids: Sequence[str],
    now: datetime,
    *,
    max_variable_bytes: int,
) -> tuple[dict[str, InstanceWork], dict[str, str]]:
    """Lock the instances that the work items ``item_ids`` of ``kind`` belong to (and
    their call trees' roots, in the lock order of :func:`lock_instances`), and load their
    live tokens, scopes and those items: ONE round trip on PostgreSQL, whatever the number
    of items (an item's instance never changes, so finding it needs no lock; the reads
    run after the locks are granted, so they see what the previous lock holder
    committed). Returns the change sets by instance id, each item adopted by its own, and
    the instance id of each item found."""
    keys = sorted(set(item_ids))
    if not keys:
        return {}, {}
    lock, tokens, scopes, items = _through(conn, kind)
    params = {"keys": keys}
    rows = dialect.run_many(
        conn, [(lock, params), (tokens, params), (scopes, params), (items, params)]
    )
    loader = StoreLoader(conn)
    works: dict[str, InstanceWork] = {}
    for r in rows[0]:
        inst = record_of(Instance, r)
        works[inst.id] = InstanceWork(
            instance=inst, tokens={}, now=now, loader=loader, max_variable_bytes=max_variable_bytes
        )
    for r in rows[1]:
        tok = record_of(Token, r)
        if tok.instance_id in works:
            works[tok.instance_id].tokens[tok.id] = tok
    for r in rows[2]:
        scope = record_of(Scope, r)
        if scope.instance_id in works:
            works[scope.instance_id].scope_changes.records[scope.id] = scope
    owner_of: dict[str, str] = {}
    for r in rows[3]:
        item = record_of(kind, r)
        work = works.get(item.instance_id)
        if work is not None:
            work.adopt(item)
            owner_of[item.id] = item.instance_id
    return works, owner_of


def live_tokens(conn: Connection, instance_ids: Sequence[str]) -> dict[str, list[Token]]:
    """The live tokens of the instances. A separate statement from the lock on purpose:
    under READ COMMITTED it takes its snapshot after the locks were granted, so it sees
    every token the previous lock holder committed."""
    out: dict[str, list[Token]] = {i: [] for i in instance_ids}
    if not instance_ids:
        return out
    q = select(t.token).where(t.token.c.instance_id.in_(list(instance_ids)))
    for r in conn.execute(q.where(t.token.c.state.in_(_LIVE))):
        tok = record_of(Token, r._mapping)
        out[tok.instance_id].append(tok)
    return out


class StoreLoader:
    """Reads the records an instance's transaction needs on first use (under its lock)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def scope(self, scope_id: str) -> Scope | None:
        r = self.conn.execute(select(t.scope).where(t.scope.c.id == scope_id)).first()
        return record_of(Scope, r._mapping) if r else None

    def items(self, kind: type[Item], instance_id: str, *, token_id: str) -> list[Item]:
        table = table_of(kind)
        q = select(table).where(table.c.token_id == token_id, table.c.instance_id == instance_id)
        return [record_of(kind, r._mapping) for r in self.conn.execute(q)]

    def item(self, kind: type[Item], item_id: str) -> Item | None:
        table = table_of(kind)
        r = self.conn.execute(select(table).where(table.c.id == item_id)).first()
        return record_of(kind, r._mapping) if r else None

    def compensables(self, instance_id: str) -> list[Compensable]:
        c = t.compensable
        q = (
            select(c)
            .where(c.c.instance_id == instance_id, c.c.state != CompensableState.COMPENSATED)
            .order_by(c.c.seq)
        )
        return [record_of(Compensable, r._mapping) for r in self.conn.execute(q)]

    def last_compensable_seq(self, instance_id: str) -> int:
        c = t.compensable
        q = select(func.max(c.c.seq)).where(c.c.instance_id == instance_id)
        return int(self.conn.execute(q).scalar() or 0)


def items_by_id(conn: Connection, kind: type[Item], ids: Sequence[str]) -> list[Item]:
    """The records ``ids`` of ``kind`` in one statement (read them under their instances'
    locks and adopt them: a batch needs no read per record)."""
    if not ids:
        return []
    table = table_of(kind)
    q = select(table).where(table.c.id.in_(sorted(set(ids))))
    return [record_of(kind, r._mapping) for r in conn.execute(q)]


def load(
    conn: Connection,
    instance_ids: Sequence[str],
    now: datetime,
    *,
    max_variable_bytes: int,
    skip_locked: bool = False,
    owner_of: tuple[type[Item], str] | None = None,
) -> tuple[dict[str, InstanceWork], str | None]:
    """Lock the instances (and their call trees' roots, see :func:`lock_instances`) and
    load their live tokens and scopes: one change set each. Instances that do not exist
    (or, with ``skip_locked``, are busy) are missing. ``owner_of=(kind, id)``: instead,
    lock the instance that work item belongs to; its id is returned second."""
    owner: str | None = None
    item = None
    if owner_of is not None or (len(set(instance_ids)) == 1 and not skip_locked):
        kind, key = owner_of if owner_of is not None else (None, instance_ids[0])
        instances, owner, live, scope_list, item = _load_one(conn, key, kind)
        if kind is None:
            owner = key if key in instances else None
        tokens: dict[str, list[Token]] = {i: [] for i in instances}
        for tok in live:
            tokens[tok.instance_id].append(tok)
        scopes = {x.id: x for x in scope_list}
    else:
        instances = lock_instances(conn, instance_ids, skip_locked=skip_locked)
        tokens = live_tokens(conn, list(instances))
        scopes = scope_chains(
            conn, {s for ts in tokens.values() for x in ts if (s := x.scope_id)}, set(instances)
        )
    loader = StoreLoader(conn)
    works = {}
    for iid, inst in instances.items():
        work = InstanceWork(
            instance=inst,
            tokens={tok.id: tok for tok in tokens[iid]},
            now=now,
            loader=loader,
            max_variable_bytes=max_variable_bytes,
        )
        for scope in scopes.values():
            if scope.instance_id == iid:
                work.scope_changes.records[scope.id] = scope
        if item is not None and item.instance_id == iid:
            work.adopt(item)
        works[iid] = work
    return works, owner


def _with_parents(seed: Any, instances: Any) -> Any:
    """The scopes ``seed`` selects and every scope around them (a recursive CTE), read
    among the scopes of ``instances`` only (a scope's parent is of its own instance).

    Without that bound PostgreSQL's planner hashed the whole scope table, every scope of
    every instance that ever ran, for each load and claim of a step in a scope: the cost
    grew with the table. Bounded, both parts are lookups in the instance index."""
    sc = t.scope
    chain = select(sc).where(instances, seed).cte("chain", recursive=True)
    return chain.union(select(sc).join(chain, sc.c.id == chain.c.parent_id).where(instances))


def scope_chains(conn: Connection, scope_ids: set[str], instance_ids: set[str]) -> dict[str, Scope]:
    """The scopes of the live tokens and every scope around them, in one statement:
    joins need their fork's state, scopes their parents' variables and counters.
    ``instance_ids``: the instances the scopes belong to (the tokens' instances)."""
    if not scope_ids:
        return {}
    sc = t.scope
    chain = _with_parents(
        sc.c.id.in_(sorted(scope_ids)), sc.c.instance_id.in_(sorted(instance_ids))
    )
    return {r.id: record_of(Scope, r._mapping) for r in conn.execute(select(chain))}


@cache
def _update_by_id(table: Table) -> Any:
    """``UPDATE table SET <every other column> WHERE id = :_id``, built once per table."""
    columns = [c.name for c in table.columns if c.name != "id"]
    return (
        update(table)
        .where(table.c.id == bindparam("_id"))
        .values({name: bindparam(name, type_=table.c[name].type) for name in columns})
    )


def _updates(records: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for record in records:
        values = values_of(record)
        values["_id"] = values.pop("id")
        out.append(values)
    return out


def flush(conn: Connection, works: Sequence[InstanceWork], *, commit: bool = False) -> None:
    """Write every change of ``works``: one statement per table and kind of change.

    ``commit``: end the transaction with the writes, in their round trip (PostgreSQL; see
    :func:`bpm.store.dialect.commit_pipelined`)."""
    inserts: dict[Table, list[dict[str, Any]]] = defaultdict(list)
    updates: dict[Table, list[dict[str, Any]]] = defaultdict(list)
    history_rows = []
    topics: set[str] = set()
    soon: set[str] = set()  # timers due before a waiter's next look (see TimerWaiter)
    for work in works:
        if work.instance_new:
            inserts[pi].append(values_of(work.instance))
        elif work.instance_dirty:
            updates[pi].extend(_updates([replace(work.instance, updated_at=work.now)]))
        new_tokens, dirty_tokens = work.tokens_written()
        inserts[t.token].extend(values_of(x) for x in new_tokens)
        updates[t.token].extend(_updates(dirty_tokens))
        for kind, new, dirty in work.items_written():
            if kind is Timer:
                soon |= {
                    x.fire_at.isoformat()
                    for x in new
                    if x.state is TimerState.PENDING and x.fire_at - work.now < TIMER_HORIZON
                }
            table = table_of(kind)
            inserts[table].extend(values_of(x) for x in new)
            updates[table].extend(_updates(dirty))
        if work.events:
            history_rows.append(history.row(work.instance.id, work.now, work.events))
        topics |= work.notify
    with dialect.pipelined(conn):  # nothing below reads an answer: one round trip
        for table in _PARENTS_FIRST:
            if inserts.get(table):
                conn.execute(insert(table).inline(), inserts[table])
        for table in _PARENTS_FIRST:
            if updates.get(table):
                conn.execute(_update_by_id(table), updates[table])
        history.append(conn, history_rows)
        if topics:
            dialect.notify(conn, EXTERNAL_TASK_CHANNEL, topics)
        if soon:
            dialect.notify(conn, TIMER_CHANNEL, [min(soon)])
        if commit:
            dialect.commit_pipelined(conn)
