"""Connecting to the database: PostgreSQL (psycopg 3) or SQLite for the embedded mode."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from bpm.errors import ConfigurationError


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` and use psycopg 3 for them."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def connect(url: str, *, pool_size: int = 5, echo: bool = False) -> Engine:
    """An SQLAlchemy engine for ``url`` set up for this engine's transactions."""
    url = normalize_url(url)
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ConfigurationError(
            f"not a database URL: {url!r}; use postgresql+psycopg://user@host/db "
            "or sqlite:///path.db"
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            # An in-memory database lives in its connection: every thread must use that
            # one connection, or each would see an empty database of its own; and one
            # thread at a time, as transactions cannot interleave on it. The test kit
            # (bpm.testing) runs everything in the test's thread, without lease keeper.
            eng = create_engine(
                url,
                echo=echo,
                poolclass=StaticPool,
                connect_args={"timeout": 30, "check_same_thread": False},
            )
        else:
            eng = create_engine(url, echo=echo, connect_args={"timeout": 30})
        _serialize_sqlite_writers(eng)
        return eng
    if parsed.get_backend_name() != "postgresql":
        raise ConfigurationError(
            f"unsupported database {parsed.get_backend_name()!r}: use PostgreSQL or SQLite"
        )
    # libpq waits for ever for a host that does not answer; a request, a finish or a beat
    # tick must fail soon instead and try again (the URL's own connect_timeout wins).
    connect_args = {} if "connect_timeout" in parsed.query else {"connect_timeout": 5}
    return create_engine(
        url,
        echo=echo,
        pool_size=pool_size,
        max_overflow=pool_size * 2,
        pool_pre_ping=True,
        connect_args=connect_args,
    )


def _serialize_sqlite_writers(eng: Engine) -> None:
    """SQLite has no row locks: take the write lock at BEGIN so transactions serialize."""

    @event.listens_for(eng, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # let SQLAlchemy's "begin" event issue BEGIN
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(eng, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def is_sqlite(eng: Engine) -> bool:
    return eng.dialect.name == "sqlite"


def libpq_dsn(eng: Engine) -> str | None:
    """The plain libpq connection string of a PostgreSQL engine (for a LISTEN connection of
    its own), or None for SQLite."""
    if eng.dialect.name != "postgresql":
        return None
    return eng.url.set(drivername="postgresql").render_as_string(hide_password=False)
