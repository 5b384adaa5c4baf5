"""The one seam between PostgreSQL and SQLite: every difference the store must know about.

Everything else is the same SQLAlchemy Core statement on both. (Row locks need no seam:
SQLAlchemy renders ``FOR UPDATE [SKIP LOCKED]`` on PostgreSQL and nothing on SQLite, whose
writers are serialized at ``BEGIN IMMEDIATE`` instead; see :mod:`bpm.store.db`.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import ColumnElement, Connection, cast, func, literal
from sqlalchemy.dialects.postgresql import JSONB


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
    import psycopg
    from sqlalchemy.exc import DBAPIError

    driver: Any = conn.connection.driver_connection
    try:
        with driver.pipeline():
            yield
    except psycopg.Error as exc:
        raise DBAPIError.instance("(pipelined statements)", None, exc, psycopg.Error) from exc


def asynchronous_commit(conn: Connection) -> None:
    """Let this transaction commit without waiting for its WAL to reach the disk.

    Only for a transaction whose loss in a crash is harmless (a claim: the step is then
    simply still Ready); the next durable commit of the session flushes it anyway."""
    if is_postgres(conn):
        conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")


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


def notify(conn: Connection, channel: str, payloads: Iterable[str]) -> None:
    """``pg_notify`` each payload on ``channel``, delivered when the transaction commits.

    SQLite has no listeners: the embedded mode's long polls fall back to short sleeps."""
    if not is_postgres(conn):
        return
    from psycopg import sql

    driver: Any = conn.connection.driver_connection
    for payload in sorted(set(payloads)):
        # NOTIFY returns no rows, so it can go out in a pipeline with the other writes.
        stmt = sql.SQL("NOTIFY {}, {}").format(sql.Identifier(channel), sql.Literal(payload))
        conn.exec_driver_sql(stmt.as_string(driver))


def listen_sql(channel: str) -> str:
    """The LISTEN statement a long-poll hub runs on its own PostgreSQL connection."""
    return f'LISTEN "{channel}"'
