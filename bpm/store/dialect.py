"""The one seam between PostgreSQL and SQLite: every difference the store must know about.

Everything else is the same SQLAlchemy Core statement on both. (Row locks need no seam:
SQLAlchemy renders ``FOR UPDATE [SKIP LOCKED]`` on PostgreSQL and nothing on SQLite, whose
writers are serialized at ``BEGIN IMMEDIATE`` instead; see :mod:`bpm.store.db`.)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql as pg_sql
from psycopg.rows import dict_row
from sqlalchemy import (
    ColumnElement,
    Connection,
    Dialect,
    Numeric,
    String,
    and_,
    case,
    cast,
    exists,
    func,
    literal,
    select,
    text,
    type_coerce,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import DBAPIError


def is_postgres(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


@contextmanager
def pipelined(conn: Connection) -> Iterator[None]:
    """Send the statements of the block without waiting for each answer (PostgreSQL).

    psycopg's pipeline mode: statements whose rows nobody reads (the writes of a flush)
    go out together and their answers come back in one round trip, when the block ends.
    The statements are the same; only their execution differs. A failure surfaces at the
    end of the block, as the SQLAlchemy error the statement would have raised."""
    if not is_postgres(conn):
        yield
        return
    driver: Any = conn.connection.driver_connection
    try:
        with driver.pipeline():
            yield
    except psycopg.Error as exc:
        raise DBAPIError.instance("(pipelined statements)", None, exc, psycopg.Error) from exc


_COMMIT = b"COMMIT"
_TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK


def commit_pipelined(conn: Connection) -> None:
    """Inside :func:`pipelined`: end the transaction with the statements before it, in the
    same round trip (PostgreSQL; nothing elsewhere). A statement of the block that fails
    aborts the pipeline, the COMMIT with it: the transaction then rolls back as before.
    The caller's transaction object commits afterwards without a round trip (psycopg
    sees the session idle). Only for a transaction the caller began itself and is about
    to commit anyway (never a savepoint, never a lent transaction)."""
    if is_postgres(conn):
        driver: Any = conn.connection.driver_connection
        driver.execute(_COMMIT, prepare=False)


def run_many(
    conn: Connection, statements: Sequence[tuple[Any, Mapping[str, Any]]]
) -> list[list[dict[str, Any]]]:
    """The rows of each statement, in order (none for one that returns no rows).

    On PostgreSQL every statement goes out at once and the answers come back in ONE round
    trip (psycopg's pipeline mode; with the transaction's BEGIN when they come first). The
    statements are run in order by the server, each with its own snapshot, so a statement
    after a ``FOR UPDATE`` sees what the previous lock holder committed. A statement must
    not need a list parameter expanded (write ``col.in_([literal(v), ...])`` for constants).
    """
    if not is_postgres(conn):
        out = []
        for stmt, params in statements:
            result = conn.execute(stmt, dict(params))
            out.append([dict(r._mapping) for r in result] if result.returns_rows else [])
        return out
    driver: Any = conn.connection.driver_connection
    cursors = []
    try:
        with driver.pipeline():
            for stmt, params in statements:
                sql, bind = _compiled(conn.dialect, stmt)
                cur = driver.cursor(row_factory=dict_row)
                cur.execute(sql, bind(params))
                cursors.append(cur)
        # the result's status, not cur.description (which builds a Column per column
        # each time it is read): does the statement return rows?
        return [
            [_utc(row) for row in cur.fetchall()]
            if cur.pgresult is not None and cur.pgresult.status == _TUPLES_OK
            else []
            for cur in cursors
        ]
    except psycopg.Error as exc:
        raise DBAPIError.instance("(pipelined statements)", None, exc, psycopg.Error) from exc


_Bind = Any  # Callable[[Mapping[str, Any]], dict[str, Any]]
_compiled_lock = threading.Lock()
_compiled_cache: dict[int, tuple[Any, str, _Bind]] = {}


def _compiled(dialect: Dialect, stmt: Any) -> tuple[str, _Bind]:
    """A statement compiled once (statements are module-level constants) for psycopg."""
    found = _compiled_cache.get(id(stmt))
    if found is None or found[0] is not stmt:
        compiled: Any = stmt.compile(dialect=dialect)
        if "POSTCOMPILE" in compiled.string:
            raise ValueError("a pipelined statement cannot expand a list parameter")
        processors = dict(getattr(compiled, "_bind_processors", {}) or {})

        def bind(params: Mapping[str, Any], compiled: Any = compiled) -> dict[str, Any]:
            values: dict[str, Any] = compiled.construct_params(dict(params))
            for name, process in processors.items():
                if name in values and values[name] is not None:
                    values[name] = process(values[name])
            return values

        found = (stmt, compiled.string, bind)
        with _compiled_lock:
            _compiled_cache[id(stmt)] = found
    return found[1], found[2]


def _utc(row: dict[str, Any]) -> dict[str, Any]:
    # psycopg gives timestamptz in the session's time zone; the engine works in UTC
    for key, value in row.items():
        if isinstance(value, datetime) and value.tzinfo is not None:
            row[key] = value.astimezone(UTC)
    return row


_ASYNC_COMMIT = text("SET LOCAL synchronous_commit TO OFF")


def asynchronous_commit_statement(conn: Connection) -> list[tuple[Any, dict[str, Any]]]:
    """The statement (for :func:`run_many`) that lets this transaction commit without
    waiting for its WAL to reach the disk; none on SQLite.

    Only for a transaction whose loss in a crash is harmless (a claim: the step is then
    simply still Ready); the next durable commit of the session flushes it anyway."""
    return [(_ASYNC_COMMIT, {})] if is_postgres(conn) else []


def insert_unless_present(
    conn: Connection, table: Any, values: Mapping[str, Any], *, key: Sequence[str]
) -> bool:
    """Insert a row unless one with the same ``key`` (a unique index) is there already;
    True when this statement inserted it. Races are decided by the unique index."""
    flavour: Any = postgresql if is_postgres(conn) else sqlite
    stmt = (
        flavour.insert(table)
        .values(dict(values))
        .on_conflict_do_nothing(index_elements=list(key))
        .returning(table.c[key[0]])  # rowcount is not reliable for this statement
    )
    return conn.execute(stmt).first() is not None


def json_member_equals(
    conn: Connection, document: ColumnElement[Any], name: str, value: Any
) -> ColumnElement[bool]:
    """``document[name] == value`` for a JSON object column."""
    if is_postgres(conn):
        member: ColumnElement[Any] = document.op("->")(literal(name))
        matched: ColumnElement[bool] = member == cast(literal(json.dumps(value)), JSONB)
        return matched
    path = '$."' + name.replace('"', '""') + '"'
    extracted: ColumnElement[Any] = func.json_extract(document, path)
    wanted = json.dumps(value) if isinstance(value, (dict, list)) else value
    same: ColumnElement[bool] = extracted == wanted
    return same


def _sqlite_path(name: str) -> str:
    return '$."' + name.replace('"', '""') + '"'


def json_array_contains(
    conn: Connection, array: ColumnElement[Any], value: str
) -> ColumnElement[bool]:
    """``value`` is an element of the JSON array column ``array`` (NULL: no)."""
    if is_postgres(conn):
        found: ColumnElement[bool] = array.op("@>")(cast(literal(json.dumps([value])), JSONB))
        return found
    each = func.json_each(array).table_valued("value")
    hit: ColumnElement[bool] = exists().where(each.c.value == value)
    return hit


def json_array_length(conn: Connection, array: ColumnElement[Any]) -> ColumnElement[int]:
    """The length of the JSON array column ``array`` (0 for NULL)."""
    fn = func.jsonb_array_length if is_postgres(conn) else func.json_array_length
    length: ColumnElement[int] = func.coalesce(fn(array), 0)
    return length


def json_has_key(conn: Connection, document: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """The JSON object column ``document`` has a member ``name``."""
    if is_postgres(conn):
        has: ColumnElement[bool] = document.op("?")(literal(name))
        return has
    typed: ColumnElement[bool] = func.json_type(document, _sqlite_path(name)).is_not(None)
    return typed


def json_member_compare(
    conn: Connection, document: ColumnElement[Any], name: str, operator: str, value: Any
) -> ColumnElement[bool]:
    """``document[name] <operator> value``: ``eq``, ``neq``, ``gt``, ``gteq``, ``lt``,
    ``lteq`` (numbers compare as numbers, anything else as text) and ``like``."""
    if operator == "eq":
        return json_member_equals(conn, document, name, value)
    if operator == "neq":
        return and_(
            json_has_key(conn, document, name), ~json_member_equals(conn, document, name, value)
        )
    if is_postgres(conn):
        text_value: ColumnElement[Any] = type_coerce(document.op("->>")(literal(name)), String)
        kind: ColumnElement[Any] = func.jsonb_typeof(document.op("->")(literal(name)))
    else:
        text_value = type_coerce(func.json_extract(document, _sqlite_path(name)), String)
        kind = func.json_type(document, _sqlite_path(name))
    if operator == "like":
        liked: ColumnElement[bool] = and_(kind.in_(_TEXT_KINDS), text_value.like(str(value)))
        return liked
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    kinds: tuple[str, ...] = _NUMBER_KINDS if numeric else _TEXT_KINDS
    left: ColumnElement[Any] = text_value
    if numeric and is_postgres(conn):
        # CASE, not AND: PostgreSQL may cast before it checks the kind
        left = case((kind == "number", cast(text_value, Numeric)), else_=None)
    if not numeric:
        value = str(value)
    compare = {"gt": left > value, "gteq": left >= value, "lt": left < value, "lteq": left <= value}
    return and_(kind.in_(kinds), compare[operator])


def json_entries(conn: Connection, document: ColumnElement[Any]) -> Any:
    """The members of a JSON object column as a table ``(key, value, kind)`` to join
    after the column's table (PostgreSQL: ``jsonb_each``, SQLite: ``json_each``); read
    ``value`` back with :func:`entry_value`."""
    if is_postgres(conn):
        each = func.jsonb_each(document).table_valued("key", "value", joins_implicitly=True)
        return each
    return func.json_each(document).table_valued("key", "value", "type", joins_implicitly=True)


def entry_value(conn: Connection, value: Any, kind: str | None) -> Any:
    """The Python value of a :func:`json_entries` row's ``value`` (``kind``: SQLite's type)."""
    if is_postgres(conn) or kind is None:
        return value
    if kind in ("object", "array"):
        return json.loads(value)
    if kind in ("true", "false"):
        return kind == "true"
    return value


_TEXT_KINDS = ("string", "text")  # jsonb_typeof / json_type names of a string
_NUMBER_KINDS = ("number", "integer", "real")


def notify(conn: Connection, channel: str, payloads: Iterable[str]) -> None:
    """``pg_notify`` each payload on ``channel``, delivered when the transaction commits.

    SQLite has no listeners: the embedded mode's long polls fall back to short sleeps."""
    if not is_postgres(conn):
        return
    driver: Any = conn.connection.driver_connection
    for payload in sorted(set(payloads)):
        # NOTIFY returns no rows, so it can go out in a pipeline with the other writes.
        stmt = pg_sql.SQL("NOTIFY {}, {}").format(
            pg_sql.Identifier(channel), pg_sql.Literal(payload)
        )
        conn.exec_driver_sql(stmt.as_string(driver))


def listen_sql(channel: str) -> str:
    """The LISTEN statement a long-poll hub runs on its own PostgreSQL connection."""
    return f'LISTEN "{channel}"'


def server_now(conn: Connection) -> datetime:
    """The database server's own clock (``clock_timestamp()``: not the transaction's start),
    in UTC. PostgreSQL only: the embedded mode keeps the host's clock."""
    found: datetime = conn.execute(select(func.clock_timestamp())).scalar_one()
    at = found if found.tzinfo is not None else found.replace(tzinfo=UTC)
    return at.astimezone(UTC)
