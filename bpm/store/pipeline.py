"""The PostgreSQL hot path: each engine transaction in as few round trips as possible.

A finish used to cost about ten round trips (BEGIN, lock, token query, one per write,
COMMIT). With psycopg's pipeline mode the BEGIN, the instance lock and the token query go
out together, and every write of the flush goes out together: a finish is three round
trips (load, flush, COMMIT). The statements are the same as on the generic path; they run
in the caller's SQLAlchemy transaction, on its connection.

Pipelining the lock and the token query is safe: PostgreSQL runs them one after the other,
and under READ COMMITTED the token query takes its snapshot only when the lock has been
granted, so it sees everything the previous lock holder committed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from sqlalchemy import JSON, Connection, Table
from sqlalchemy.exc import DBAPIError

from bpm.errors import NotFound
from bpm.runtime.records import Instance, Token
from bpm.runtime.states import LIVE_TOKEN_STATES
from bpm.runtime.work import InstanceWork
from bpm.store import tables as t
from bpm.store.rows import event_values, instance_from_mapping, token_from_mapping, token_values

_LIVE = [s.value for s in LIVE_TOKEN_STATES]
_TABLES: dict[str, Table] = {table.name: table for table in t.metadata.sorted_tables}

_LOCK_INSTANCE = "SELECT * FROM process_instance WHERE id = %s FOR UPDATE"
_LIVE_TOKENS = "SELECT * FROM token WHERE instance_id = %s AND state = ANY(%s)"
_UPDATE_INSTANCE = (
    "UPDATE process_instance SET state = %(state)s, variables = %(variables)s, "
    "updated_at = %(updated_at)s, ended_at = %(ended_at)s WHERE id = %(id)s"
)
_TOKEN_UPDATE_COLUMNS = (
    "state", "blocked_kind", "blocked_id", "attempt", "lease_owner", "lease_expires_at",
    "error", "updated_at",
)  # fmt: skip
_UPDATE_SCOPE = "UPDATE fork_scope SET expected = %(expected)s WHERE id = %(id)s"

# Many rows, one statement: the rows travel as one array per column and unnest() turns
# them back into rows. One fixed statement text (prepared once) whatever the row count.
_TOKEN_COLUMNS = (
    ("id", "text"), ("instance_id", "text"), ("node_id", "text"), ("state", "text"),
    ("blocked_kind", "text"), ("blocked_id", "text"), ("scope_id", "text"),
    ("parent_id", "text"), ("attempt", "int4"), ("lease_owner", "text"),
    ("lease_expires_at", "timestamptz"), ("error", "text"), ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
)  # fmt: skip
_EVENT_COLUMNS = (
    ("instance_id", "text"), ("token_id", "text"), ("node_id", "text"), ("type", "text"),
    ("from_state", "text"), ("to_state", "text"), ("payload", "jsonb"), ("at", "timestamptz"),
)  # fmt: skip


def _unnest(columns: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"%s::{sqltype}[]" for _, sqltype in columns)


_INSERT_TOKENS = (
    f"INSERT INTO token ({', '.join(c for c, _ in _TOKEN_COLUMNS)}) "
    f"SELECT * FROM unnest({_unnest(_TOKEN_COLUMNS)})"
)
_UPDATED = tuple(c for c in _TOKEN_COLUMNS if c[0] == "id" or c[0] in _TOKEN_UPDATE_COLUMNS)
_UPDATE_TOKENS = (
    "UPDATE token SET "
    + ", ".join(f"{c} = v.{c}" for c in _TOKEN_UPDATE_COLUMNS)
    + f" FROM unnest({_unnest(_UPDATED)}) AS v({', '.join(c for c, _ in _UPDATED)})"
    " WHERE token.id = v.id"
)
_INSERT_EVENTS = (
    f"INSERT INTO history_event ({', '.join(c for c, _ in _EVENT_COLUMNS)}) "
    f"SELECT * FROM unnest({_unnest(_EVENT_COLUMNS)})"
)


def _columns(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> list[list[Any]]:
    return [[row[name] for row in rows] for name, _ in columns]


_NOTIFY = "SELECT pg_notify(%s, %s)"


@contextmanager
def _translated(what: str) -> Iterator[None]:
    """Raise driver errors as SQLAlchemy's (IntegrityError etc.), as the generic path does."""
    try:
        yield
    except psycopg.Error as exc:
        raise DBAPIError.instance(what, None, exc, psycopg.Error) from exc


def driver(conn: Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under an SQLAlchemy connection (same transaction)."""
    raw: Any = conn.connection.driver_connection
    if not isinstance(raw, psycopg.Connection):
        raise TypeError("the PostgreSQL fast path needs the psycopg 3 driver")
    return raw


@cache
def _json_columns(table_name: str) -> frozenset[str]:
    table = _TABLES[table_name]
    return frozenset(c.name for c in table.columns if isinstance(c.type, JSON))


@cache
def _insert_sql(table_name: str, columns: tuple[str, ...]) -> str:
    cols = ", ".join(columns)
    values = ", ".join(f"%({c})s" for c in columns)
    return f"INSERT INTO {table_name} ({cols}) VALUES ({values})"


def _adapt(table_name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    json_cols = _json_columns(table_name)
    return {k: (Jsonb(v) if k in json_cols and v is not None else v) for k, v in row.items()}


def lock_and_load(conn: Connection, instance_id: str) -> tuple[Instance, list[Token]]:
    """``SELECT ... FOR UPDATE`` of the instance and its live tokens, in one round trip."""
    pg = driver(conn)
    with _translated("lock and load an instance"), pg.pipeline():
        inst_cur = pg.cursor(row_factory=dict_row)
        inst_cur.execute(_LOCK_INSTANCE, (instance_id,))
        tok_cur = pg.cursor(row_factory=dict_row)
        tok_cur.execute(_LIVE_TOKENS, (instance_id, _LIVE))
    row = inst_cur.fetchone()
    if row is None:
        raise NotFound(f"process instance {instance_id} does not exist")
    return instance_from_mapping(row), [token_from_mapping(r) for r in tok_cur.fetchall()]


def _executemany(cur: psycopg.Cursor[Any], sql: str, rows: list[dict[str, Any]]) -> None:
    if len(rows) == 1:
        cur.execute(sql, rows[0])
    elif rows:
        cur.executemany(sql, rows)


def flush_work_pipelined(conn: Connection, work: InstanceWork) -> None:
    """Every write of ``work`` in one pipeline. Errors surface here; the caller rolls back."""
    pg = driver(conn)
    inst = work.instance
    with _translated("flush an instance's changes"), pg.pipeline(), pg.cursor() as cur:
        if work.instance_new:
            from bpm.store.work import instance_values

            values = instance_values(inst)
            _executemany(
                cur,
                _insert_sql("process_instance", tuple(values)),
                [_adapt("process_instance", values)],
            )
        elif work.instance_dirty:
            cur.execute(
                _UPDATE_INSTANCE,
                {
                    "id": inst.id,
                    "state": inst.state.value,
                    "variables": Jsonb(inst.variables),
                    "updated_at": work.now,
                    "ended_at": inst.ended_at,
                },
            )
        if work.new_scopes:
            scopes = [
                {
                    "id": s.id,
                    "instance_id": s.instance_id,
                    "parent_id": s.parent_id,
                    "fork_node_id": s.fork_node_id,
                    "expected": s.expected,
                    "created_at": s.created_at,
                }
                for s in (work.scopes[i] for i in work.new_scopes)
            ]
            _executemany(cur, _insert_sql("fork_scope", tuple(scopes[0])), scopes)
        _executemany(
            cur,
            _UPDATE_SCOPE,
            [{"id": sid, "expected": work.scopes[sid].expected} for sid in work.dirty_scopes],
        )
        if work.new_tokens:
            tokens = [token_values(work.tokens[i]) for i in work.new_tokens]
            cur.execute(_INSERT_TOKENS, _columns(tokens, _TOKEN_COLUMNS))
        if work.dirty_tokens:
            changed = [token_values(work.tokens[i]) for i in work.dirty_tokens]
            cur.execute(_UPDATE_TOKENS, _columns(changed, _UPDATED))
        by_table: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for new in work.rows:
            by_table[new.table].append(new.values)
        for name, rows in by_table.items():
            columns = tuple(sorted({k for r in rows for k in r}))
            _executemany(
                cur,
                _insert_sql(name, columns),
                [_adapt(name, {c: r.get(c) for c in columns}) for r in rows],
            )
        for up in work.updates:
            sets = ", ".join(f"{k} = %(s_{k})s" for k in up.values)
            where = " AND ".join(f"{k} = %(w_{k})s" for k in up.where)
            params = {f"s_{k}": v for k, v in _adapt(up.table, up.values).items()}
            params.update({f"w_{k}": v for k, v in up.where.items()})
            cur.execute(f"UPDATE {up.table} SET {sets} WHERE {where}", params)
        if work.events:
            events = [_adapt("history_event", event_values(e)) for e in work.events]
            cur.execute(_INSERT_EVENTS, _columns(events, _EVENT_COLUMNS))
        for channel, payload in _notifications(work.notify):
            cur.execute(_NOTIFY, (channel, payload))


def _notifications(topics: Iterable[str]) -> list[tuple[str, str]]:
    if not topics:
        return []
    from bpm.runtime.external import NOTIFY_CHANNEL

    return [(NOTIFY_CHANNEL, topic) for topic in sorted(set(topics))]


# The claim as one statement: take the lease, record the transition, read what the handler
# needs. Its commit is asynchronous on purpose: losing a claim in a database crash only
# means the step was never claimed (the sweeper publishes it again), and the durable commit
# of the step's finish flushes the claim's WAL record before anything depends on it.
_CLAIM = """
WITH claimed AS (
    UPDATE token SET state = 'executing', attempt = attempt + 1, lease_owner = %(owner)s,
           lease_expires_at = %(until)s, updated_at = %(now)s
    WHERE id = %(token)s AND state = 'ready'
      AND EXISTS (SELECT 1 FROM process_instance p
                  WHERE p.id = token.instance_id AND p.state = 'active')
    RETURNING *
), event AS (
    INSERT INTO history_event (instance_id, token_id, node_id, type, from_state, to_state,
                               payload, at)
    SELECT instance_id, id, node_id, 'token_executing', 'ready', 'executing',
           jsonb_build_object('attempt', attempt, 'worker', %(owner)s::text), %(now)s
    FROM claimed
)
SELECT claimed.*, p.variables AS instance_variables, p.definition_id AS instance_definition,
       p.business_key AS instance_business_key
FROM claimed JOIN process_instance p ON p.id = claimed.instance_id
"""


def claim_pipelined(
    conn: Connection, token_id: str, owner: str, lease_expires_at: Any, now: Any
) -> tuple[Token, dict[str, Any], str, str | None] | None:
    """The PostgreSQL claim in one round trip (with the BEGIN); see ``store.tokens.claim``."""
    pg = driver(conn)
    with _translated("claim a token"), pg.pipeline():
        pg.execute("SET LOCAL synchronous_commit TO OFF")
        cur = pg.cursor(row_factory=dict_row)
        cur.execute(
            _CLAIM, {"token": token_id, "owner": owner, "until": lease_expires_at, "now": now}
        )
    row = cur.fetchone()
    if row is None:
        return None
    return (
        token_from_mapping(row),
        dict(row["instance_variables"] or {}),
        row["instance_definition"],
        row["instance_business_key"],
    )


# Completing an external task: lock its instance (found through the task), load the live
# tokens, and take the task from its lock owner, all in one round trip. The conditional
# UPDATE runs after the lock is granted; when it changes nothing the caller classifies why.
_LOCK_BY_TASK = (
    "SELECT * FROM process_instance"
    " WHERE id = (SELECT instance_id FROM external_task WHERE id = %s) FOR UPDATE"
)
_LIVE_TOKENS_BY_TASK = (
    "SELECT * FROM token WHERE instance_id ="
    " (SELECT instance_id FROM external_task WHERE id = %s) AND state = ANY(%s)"
)


def lock_load_and_finish_task(
    conn: Connection, task_id: str, worker_id: str, now: Any, values: Mapping[str, Any]
) -> tuple[Instance | None, list[Token], dict[str, Any] | None]:
    """(instance, live tokens, the finished task row or None when not ours to finish)."""
    sets = ", ".join(f"{k} = %(v_{k})s" for k in sorted(values))
    finish = (
        "UPDATE external_task SET lock_owner = NULL, lock_expires_at = NULL,"
        f" finished_by = %(worker)s, updated_at = %(now)s, {sets}"
        " WHERE id = %(id)s AND state = 'locked' AND lock_owner = %(worker)s RETURNING *"
    )
    params = {"id": task_id, "worker": worker_id, "now": now}
    params.update({f"v_{k}": v for k, v in values.items()})
    pg = driver(conn)
    with _translated("lock and finish an external task"), pg.pipeline():
        inst_cur = pg.cursor(row_factory=dict_row)
        inst_cur.execute(_LOCK_BY_TASK, (task_id,))
        tok_cur = pg.cursor(row_factory=dict_row)
        tok_cur.execute(_LIVE_TOKENS_BY_TASK, (task_id, _LIVE))
        task_cur = pg.cursor(row_factory=dict_row)
        task_cur.execute(finish, params)
    row = inst_cur.fetchone()
    tokens = [token_from_mapping(r) for r in tok_cur.fetchall()]
    return (instance_from_mapping(row) if row else None), tokens, task_cur.fetchone()
