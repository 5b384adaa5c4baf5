"""Read-only queries of the cockpit: counts, filtered pages of instances, queues, workers.

Every query here is bounded: lists take a ``LIMIT`` and walk an index in the order they
return, counts read partial indexes of small working sets (ready tokens, locked tasks,
pending timers, open incidents) or, for instances, an index-only scan of
``ix_process_instance_definition_state_created``. None of them reads ``history_event``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, and_, func, literal, or_, select, true, tuple_, union_all

from bpm.runtime.records import Instance, Timer
from bpm.runtime.states import InstanceState
from bpm.store import tables as t
from bpm.store.rows import record_of
from bpm.store.timers import timer_from_row

MAX_PAGE = 500
# Above this many (definition, state) pairs the instance list lets the planner sort instead
# of merging one index walk per pair.
MAX_BRANCHES = 60


@dataclass(frozen=True)
class InstanceFilter:
    """Which instances a page shows; every field given must match (AND)."""

    definition_key: str | None = None
    definition_id: str | None = None
    states: tuple[InstanceState, ...] = ()
    business_key: str | None = None
    started_after: datetime | None = None
    started_before: datetime | None = None
    has_incident: bool | None = None
    instance_id: str | None = None


@dataclass(frozen=True)
class PageCursor:
    """Where the next page starts: instances strictly older than (created_at, id)."""

    created_at: datetime
    id: str


@dataclass(frozen=True)
class StateCount:
    definition_id: str
    state: str
    count: int


@dataclass(frozen=True)
class IncidentGroup:
    """Open incidents of one node of one definition."""

    definition_id: str
    definition_key: str
    node_id: str
    count: int
    oldest: datetime


@dataclass(frozen=True)
class NodeCount:
    node_id: str
    count: int
    oldest: datetime | None = None


@dataclass(frozen=True)
class TopicCount:
    """Open external tasks of a topic: ready now, locked (lock live), locked but expired."""

    topic: str
    ready: int = 0
    locked: int = 0
    expired: int = 0


@dataclass(frozen=True)
class WorkerSeen:
    """A lock owner that holds work right now (an inline worker or an external worker)."""

    name: str
    kind: str  # "inline" (token leases) or "external" (external-task locks)
    holding: int
    lock_expires_at: datetime | None
    topics: tuple[str, ...] = ()


def instance_counts(
    conn: Connection, *, definition_id: str | None = None, limit: int = 5000
) -> list[StateCount]:
    """Instances by definition and state, zero counts left out.

    One index-only count per (definition, state) pair on the cockpit index, instead of a
    scan of the whole table; the cost still grows with the number of instances counted.
    """
    pi, pd = t.process_instance, t.process_definition
    defs = select(pd.c.id).order_by(pd.c.id).limit(max(1, limit // len(InstanceState)))
    if definition_id is not None:
        defs = defs.where(pd.c.id == definition_id)
    defs_q = defs.subquery("d")
    states = union_all(*(select(literal(s.value).label("state")) for s in InstanceState)).subquery(
        "s"
    )
    n = (
        select(func.count())
        .where(pi.c.definition_id == defs_q.c.id, pi.c.state == states.c.state)
        .scalar_subquery()
    )
    q = select(defs_q.c.id, states.c.state, n.label("n")).select_from(defs_q.join(states, true()))
    return [StateCount(r.id, r.state, int(r.n)) for r in conn.execute(q) if r.n]


def definition_ids_of(conn: Connection, key: str) -> list[str]:
    pd = t.process_definition
    q = select(pd.c.id).where(pd.c.key == key).order_by(pd.c.version.desc()).limit(1000)
    return list(conn.execute(q).scalars())


def _instance_conditions(f: InstanceFilter) -> list[Any]:
    pi = t.process_instance
    cond: list[Any] = []
    if f.definition_key is not None:
        cond.append(pi.c.definition_key == f.definition_key)
    if f.business_key is not None:
        cond.append(pi.c.business_key == f.business_key)
    if f.started_after is not None:
        cond.append(pi.c.created_at >= f.started_after)
    if f.started_before is not None:
        cond.append(pi.c.created_at < f.started_before)
    if f.instance_id is not None:
        cond.append(pi.c.id == f.instance_id)
    if f.has_incident is not None:
        # Driven from the open incidents (a small set, ix_incident_open): a semi-join on
        # them, never a probe per instance.
        with_incident = select(t.incident.c.instance_id).where(t.incident.c.state == "open")
        cond.append(pi.c.id.in_(with_incident) if f.has_incident else pi.c.id.not_in(with_incident))
    return cond


def _older_than(cursor: PageCursor | None) -> list[Any]:
    if cursor is None:
        return []
    pi = t.process_instance
    return [tuple_(pi.c.created_at, pi.c.id) < tuple_(cursor.created_at, cursor.id)]


def list_instances(
    conn: Connection,
    f: InstanceFilter,
    *,
    definition_ids: list[str] | None,
    limit: int,
    cursor: PageCursor | None = None,
) -> list[Instance]:
    """A page of instances, newest first (tokens not loaded).

    One statement: a UNION ALL of one ``ORDER BY created_at DESC LIMIT n`` branch per
    (definition, state) pair, each an index walk of ``(definition_id, state, created_at)``
    or ``(state, created_at)`` that stops after ``n`` rows, merged and cut to ``n``. So a
    page costs about ``n`` rows per branch however many instances there are.
    ``definition_ids``: the versions to show (None: every definition).
    """
    pi = t.process_instance
    limit = max(1, min(limit, MAX_PAGE))
    states = [s.value for s in f.states] or [s.value for s in InstanceState]
    defs: list[str | None] = list(definition_ids) if definition_ids is not None else [None]
    if definition_ids is not None and not definition_ids:
        return []
    base = _instance_conditions(f) + _older_than(cursor)
    order = (pi.c.created_at.desc(), pi.c.id.desc())
    if f.has_incident and conn.dialect.name == "postgresql":
        rest = _instance_conditions(replace(f, has_incident=None)) + _older_than(cursor)
        return _with_open_incidents(conn, rest, states, definition_ids, limit)
    if f.has_incident or len(states) * len(defs) > MAX_BRANCHES:
        q: Select[Any] = select(pi).where(*base, pi.c.state.in_(states))
        if definition_ids is not None:
            q = q.where(pi.c.definition_id.in_(definition_ids))
        return [
            record_of(Instance, r._mapping) for r in conn.execute(q.order_by(*order).limit(limit))
        ]
    branches = []
    for def_id in defs:
        for state in states:
            cond = [*base, pi.c.state == state]
            if def_id is not None:
                cond.append(pi.c.definition_id == def_id)
            branches.append(select(pi).where(and_(*cond)).order_by(*order).limit(limit))
    if len(branches) == 1:
        return [record_of(Instance, r._mapping) for r in conn.execute(branches[0])]
    # Each branch is a subquery of its own: SQLite allows no LIMIT in a bare UNION branch.
    merged = union_all(*(select(b.subquery()) for b in branches)).subquery("page")
    q = select(merged).order_by(merged.c.created_at.desc(), merged.c.id.desc()).limit(limit)
    return [record_of(Instance, r._mapping) for r in conn.execute(q)]


def _with_open_incidents(
    conn: Connection,
    base: list[Any],
    states: list[str],
    definition_ids: list[str] | None,
    limit: int,
) -> list[Instance]:
    """Instances with an open incident: the open incidents (a small set) drive the query,
    one primary-key lookup each through a LATERAL subquery the planner cannot turn into
    a hash join over every instance."""
    pi, inc = t.process_instance, t.incident
    open_ids = select(inc.c.instance_id).where(inc.c.state == "open").distinct().subquery("o")
    cond = [pi.c.id == open_ids.c.instance_id, pi.c.state.in_(states), *base]
    if definition_ids is not None:
        cond.append(pi.c.definition_id.in_(definition_ids))
    one = select(pi).where(*cond).limit(1).lateral("i")
    q = (
        select(one)
        .select_from(open_ids.join(one, true()))
        .order_by(one.c.created_at.desc(), one.c.id.desc())
        .limit(limit)
    )
    return [record_of(Instance, r._mapping) for r in conn.execute(q)]


def open_incident_counts(conn: Connection, instance_ids: list[str]) -> dict[str, int]:
    """Open incidents per instance, for a page of instances (ix_incident_instance)."""
    if not instance_ids:
        return {}
    inc = t.incident
    q = (
        select(inc.c.instance_id, func.count().label("n"))
        .where(inc.c.instance_id.in_(instance_ids), inc.c.state == "open")
        .group_by(inc.c.instance_id)
    )
    return {r.instance_id: int(r.n) for r in conn.execute(q)}


def incident_groups(
    conn: Connection, *, definition_id: str | None = None, limit: int = 500
) -> list[IncidentGroup]:
    """Open incidents grouped by definition and node, biggest groups first.

    The definition of each incident's instance is a scalar subquery (one primary-key
    lookup per open incident), not a join the planner could run as a scan of every
    instance."""
    inc, pi, pd = t.incident, t.process_instance, t.process_definition
    def_of = select(pi.c.definition_id).where(pi.c.id == inc.c.instance_id).scalar_subquery()
    grouped = (
        select(
            def_of.label("definition_id"),
            inc.c.node_id,
            func.count().label("n"),
            func.min(inc.c.created_at).label("oldest"),
        )
        .where(inc.c.state == "open")
        .group_by(def_of, inc.c.node_id)
        .subquery("g")
    )
    q = (
        select(grouped, pd.c.key)
        .join(pd, pd.c.id == grouped.c.definition_id)
        .order_by(grouped.c.n.desc(), grouped.c.definition_id, grouped.c.node_id)
        .limit(limit)
    )
    if definition_id is not None:
        q = q.where(grouped.c.definition_id == definition_id)
    return [
        IncidentGroup(r.definition_id, r.key, r.node_id, int(r.n), r.oldest)
        for r in conn.execute(q)
    ]


def open_incidents_of_group(
    conn: Connection, definition_id: str, node_id: str, limit: int
) -> list[str]:
    """Ids of the open incidents of one node of one definition, oldest first."""
    inc, pi = t.incident, t.process_instance
    q = (
        select(inc.c.id)
        .select_from(inc.join(pi, pi.c.id == inc.c.instance_id))
        .where(inc.c.state == "open", inc.c.node_id == node_id, pi.c.definition_id == definition_id)
        .order_by(inc.c.created_at, inc.c.id)
        .limit(limit)
    )
    return list(conn.execute(q).scalars())


def ready_tokens_by_node(conn: Connection, limit: int = 200) -> list[NodeCount]:
    """Ready tokens (the inline queue) per node, from the partial index ``ix_token_ready``."""
    tok = t.token
    q = (
        select(tok.c.node_id, func.count().label("n"), func.min(tok.c.updated_at).label("oldest"))
        .where(tok.c.state == "ready")
        .group_by(tok.c.node_id)
        .order_by(func.count().desc(), tok.c.node_id)
        .limit(limit)
    )
    return [NodeCount(r.node_id, int(r.n), r.oldest) for r in conn.execute(q)]


def executing_tokens_by_node(conn: Connection, limit: int = 200) -> list[NodeCount]:
    """Tokens running a handler right now, per node (partial index ``ix_token_lease``)."""
    tok = t.token
    q = (
        select(tok.c.node_id, func.count().label("n"), func.min(tok.c.updated_at).label("oldest"))
        .where(tok.c.state == "executing")
        .group_by(tok.c.node_id)
        .order_by(func.count().desc(), tok.c.node_id)
        .limit(limit)
    )
    return [NodeCount(r.node_id, int(r.n), r.oldest) for r in conn.execute(q)]


def external_tasks_by_topic(conn: Connection, now: datetime, limit: int = 200) -> list[TopicCount]:
    """Ready, locked and expired-lock external tasks per topic (the two partial indexes)."""
    et = t.external_task
    expired = and_(et.c.state == "locked", et.c.lock_expires_at < now)
    q = (
        select(
            et.c.topic,
            func.count().filter(et.c.state == "ready").label("ready"),
            func.count()
            .filter(and_(et.c.state == "locked", et.c.lock_expires_at >= now))
            .label("locked"),
            func.count().filter(expired).label("expired"),
        )
        .where(or_(et.c.state == "ready", et.c.state == "locked"))
        .group_by(et.c.topic)
        .order_by(et.c.topic)
        .limit(limit)
    )
    return [
        TopicCount(r.topic, int(r.ready), int(r.locked), int(r.expired)) for r in conn.execute(q)
    ]


def count_timers_due(conn: Connection, until: datetime) -> int:
    """Pending timers due by ``until`` (a range of the partial index ``ix_timer_due``)."""
    q = select(func.count()).where(t.timer.c.state == "pending", t.timer.c.fire_at <= until)
    return int(conn.execute(q).scalar_one())


def timers_due(conn: Connection, until: datetime, limit: int = 50) -> list[Timer]:
    """The first pending timers due by ``until``, earliest first (``ix_timer_due``)."""
    q = (
        select(t.timer)
        .where(t.timer.c.state == "pending", t.timer.c.fire_at <= until)
        .order_by(t.timer.c.fire_at)
        .limit(limit)
    )
    return [timer_from_row(r) for r in conn.execute(q)]


def workers_seen(conn: Connection, limit: int = 200) -> list[WorkerSeen]:
    """Owners of live token leases and external-task locks, busiest first."""
    tok, et = t.token, t.external_task
    inline = (
        select(
            tok.c.lease_owner.label("name"),
            func.count().label("n"),
            func.max(tok.c.lease_expires_at).label("until"),
        )
        .where(tok.c.state == "executing", tok.c.lease_owner.is_not(None))
        .group_by(tok.c.lease_owner)
        .order_by(func.count().desc())
        .limit(limit)
    )
    external = (
        select(
            et.c.lock_owner.label("name"),
            et.c.topic,
            func.count().label("n"),
            func.max(et.c.lock_expires_at).label("until"),
        )
        .where(et.c.state == "locked", et.c.lock_owner.is_not(None))
        .group_by(et.c.lock_owner, et.c.topic)
        .order_by(func.count().desc())
        .limit(limit)
    )
    out = [WorkerSeen(r.name, "inline", int(r.n), r.until) for r in conn.execute(inline)]
    merged: dict[str, tuple[int, datetime | None, list[str]]] = {}
    for r in conn.execute(external):
        held, until, topics = merged.get(r.name, (0, None, []))
        topics.append(r.topic)
        latest = r.until if until is None or (r.until is not None and r.until > until) else until
        merged[r.name] = (held + int(r.n), latest, topics)
    for name, (held, until, topics) in merged.items():
        out.append(WorkerSeen(name, "external", held, until, tuple(sorted(topics))))
    return out


def definition_source(conn: Connection, definition_id: str) -> str | None:
    """The deployed BPMN text of a definition ('' for builder deploys), None if unknown."""
    value: str | None = conn.execute(
        select(t.process_definition.c.source).where(t.process_definition.c.id == definition_id)
    ).scalar_one_or_none()
    return value


def timer_by_id(conn: Connection, timer_id: str) -> Timer | None:
    row = conn.execute(select(t.timer).where(t.timer.c.id == timer_id)).first()
    return timer_from_row(row) if row else None
