"""Every query of messages and signals: open waits found by name and key, the start
events of the latest versions, and the buffer of messages published with a time to live.

Waits are found without locks (set-based, one statement); the engine then locks their
instances and re-checks each wait under the lock (:mod:`bpm.engine.messages`). A buffered
message is consumed by one conditional UPDATE (``WHERE consumed_at IS NULL``), which
PostgreSQL re-checks after a concurrent consumer commits: at most once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, and_, delete, insert, null, or_, select, update

from bpm.runtime.states import InstanceState, SubscriptionState
from bpm.store import tables as t

es = t.event_subscription
pi = t.process_instance
mb = t.message_buffer
OPEN = SubscriptionState.OPEN.value


@dataclass(frozen=True)
class Waiting:
    """An open wait of an active instance, and that instance's variables."""

    subscription_id: str
    instance_id: str
    node_id: str
    variables: Mapping[str, Any]


@dataclass(frozen=True)
class StartEvent:
    """A message or signal start event of the latest version of a process."""

    definition_id: str
    node_id: str


@dataclass(frozen=True)
class Buffered:
    """A message published with a time to live, not consumed yet."""

    id: str
    name: str
    business_key: str | None
    correlation_key: str | None
    instance_id: str | None
    match_variables: Mapping[str, Any] | None
    variables: dict[str, Any]


@dataclass(frozen=True)
class WaitQuery:
    """Which open waits one message looks for (see :func:`waiting`)."""

    name: str
    business_key: str | None = None
    instance_id: str | None = None
    correlation_key: str | None = None


def _waits(kind: str, query: WaitQuery) -> Select[Any]:
    q = (
        select(es.c.id, es.c.instance_id, es.c.node_id, pi.c.variables, es.c.created_at)
        .join(pi, pi.c.id == es.c.instance_id)
        .where(
            es.c.kind == kind,
            es.c.name == query.name,
            es.c.state == OPEN,
            pi.c.state == InstanceState.ACTIVE.value,
        )
    )
    if query.business_key is not None:
        q = q.where(pi.c.business_key == query.business_key)
    if query.instance_id is not None:
        q = q.where(es.c.instance_id == query.instance_id)
    if query.correlation_key is not None:
        key = query.correlation_key
        q = q.where(or_(es.c.correlation_key == key, es.c.correlation_key.is_(None)))
    else:
        q = q.where(es.c.correlation_key.is_(None))
    return q


def waiting_many(
    conn: Connection, kind: str, queries: Sequence[WaitQuery], *, with_variables: bool = True
) -> list[list[Waiting]]:
    """:func:`waiting` for several messages: one statement per message name (the waits of
    every key asked, and those without a key; narrowed by business key or instance when
    every message of the name gives one), shared out in memory. Per query, its waits
    oldest first; without ``with_variables``, the instances' variables are not read
    (``Waiting.variables`` is empty)."""
    out: list[list[Waiting]] = [[] for _ in queries]
    variables = pi.c.variables if with_variables else null().label("variables")
    by_name: dict[str, list[int]] = {}
    for i, query in enumerate(queries):
        by_name.setdefault(query.name, []).append(i)
    for name, members in by_name.items():
        asked = [queries[i] for i in members]
        keys = sorted({k for q in asked if (k := q.correlation_key) is not None})
        q = (
            select(
                es.c.id,
                es.c.instance_id,
                es.c.node_id,
                es.c.correlation_key,
                pi.c.business_key,
                variables,
            )
            .join(pi, pi.c.id == es.c.instance_id)
            .where(
                es.c.kind == kind,
                es.c.name == name,
                es.c.state == OPEN,
                pi.c.state == InstanceState.ACTIVE.value,
            )
            .order_by(es.c.created_at, es.c.id)
        )
        keyless = es.c.correlation_key.is_(None)
        q = q.where(or_(es.c.correlation_key.in_(keys), keyless) if keys else keyless)
        if all(x.business_key is not None for x in asked):
            q = q.where(pi.c.business_key.in_(sorted({str(x.business_key) for x in asked})))
        if all(x.instance_id is not None for x in asked):
            q = q.where(es.c.instance_id.in_(sorted({str(x.instance_id) for x in asked})))
        rows = list(conn.execute(q))
        for i in members:
            wanted = queries[i]
            out[i] = [
                Waiting(r.id, r.instance_id, r.node_id, r.variables or {})
                for r in rows
                if (r.correlation_key is None or r.correlation_key == wanted.correlation_key)
                and (wanted.business_key is None or r.business_key == wanted.business_key)
                and (wanted.instance_id is None or r.instance_id == wanted.instance_id)
            ]
    return out


def waiting(
    conn: Connection,
    kind: str,
    name: str,
    *,
    business_key: str | None = None,
    instance_id: str | None = None,
    correlation_key: str | None = None,
    limit: int | None = None,
) -> list[Waiting]:
    """Open waits for ``name`` of active instances, oldest first. A wait with a
    correlation key matches only that key; without one, any (or no) key."""
    query = WaitQuery(name, business_key, instance_id, correlation_key)
    q = _waits(kind, query).order_by(es.c.created_at, es.c.id)
    if limit is not None:
        q = q.limit(limit)
    return [Waiting(r.id, r.instance_id, r.node_id, r.variables or {}) for r in conn.execute(q)]


def start_events(conn: Connection, kind: str, name: str | None) -> list[StartEvent]:
    """The message (or signal) start events called ``name`` of the latest versions
    (``name`` None: every one of ``kind``, as conditional starts are all evaluated)."""
    q = (
        select(es.c.definition_id, es.c.node_id)
        .where(es.c.instance_id.is_(None), es.c.kind == kind)
        .where(es.c.state == OPEN)
        .order_by(es.c.definition_id, es.c.node_id)
    )
    if name is not None:
        q = q.where(es.c.name == name)
    return [StartEvent(r.definition_id, r.node_id) for r in conn.execute(q)]


def _start_id(definition_id: str, node_id: str) -> str:
    """The row id of a start event's subscription: readable when it fits the column (64),
    else a name-based UUID of the same text (a long process key or event id overflowed it on
    PostgreSQL)."""
    text = f"{definition_id}#{node_id}"
    return text if len(text) <= 64 else str(uuid.uuid5(uuid.NAMESPACE_URL, text))


def replace_starts(
    conn: Connection,
    key: str,
    definition_id: str,
    events: Iterable[tuple[str, str, str]],
    now: datetime,
) -> None:
    """A new version of ``key`` takes over its message and signal start events
    (``events``: (node id, kind, name))."""
    older = select(t.process_definition.c.id).where(t.process_definition.c.key == key)
    conn.execute(delete(es).where(es.c.instance_id.is_(None), es.c.definition_id.in_(older)))
    rows = [
        {
            "id": _start_id(definition_id, node_id),
            "instance_id": None,
            "token_id": None,
            "node_id": node_id,
            "kind": kind,
            "name": name,
            "state": OPEN,
            "correlation_key": None,
            "definition_id": definition_id,
            "created_at": now,
            "consumed_at": None,
        }
        for node_id, kind, name in events
    ]
    if rows:
        conn.execute(insert(es), rows)


def buffer(conn: Connection, message: Buffered, now: datetime, expires_at: datetime) -> None:
    conn.execute(
        insert(mb).values(
            id=message.id,
            name=message.name,
            business_key=message.business_key,
            correlation_key=message.correlation_key,
            instance_id=message.instance_id,
            match_variables=dict(message.match_variables) if message.match_variables else None,
            variables=message.variables,
            created_at=now,
            expires_at=expires_at,
        )
    )


def live_buffered(conn: Connection, names: Iterable[str], now: datetime) -> list[Buffered]:
    """Messages called one of ``names`` that are not consumed and not expired, oldest
    first (not locked: :func:`consume` decides)."""
    wanted = sorted(set(names))
    if not wanted:
        return []
    q = (
        select(mb)
        .where(mb.c.name.in_(wanted), mb.c.consumed_at.is_(None), mb.c.expires_at > now)
        .order_by(mb.c.created_at, mb.c.id)
    )
    return [
        Buffered(
            r.id,
            r.name,
            r.business_key,
            r.correlation_key,
            r.instance_id,
            r.match_variables,
            r.variables or {},
        )
        for r in conn.execute(q)
    ]


def consume(conn: Connection, message_id: str, instance_id: str, now: datetime) -> bool:
    """Take a buffered message for ``instance_id``; False when someone else took it (or
    it expired) first."""
    done = conn.execute(
        update(mb)
        .where(and_(mb.c.id == message_id, mb.c.consumed_at.is_(None), mb.c.expires_at > now))
        .values(consumed_at=now, consumed_by=instance_id)
    )
    return bool(done.rowcount)


def buffered(conn: Connection, *, name: str | None = None) -> list[dict[str, Any]]:
    """Every buffered message (for tests and operators), oldest first."""
    q = select(mb).order_by(mb.c.created_at, mb.c.id)
    if name is not None:
        q = q.where(mb.c.name == name)
    return [dict(r._mapping) for r in conn.execute(q)]
