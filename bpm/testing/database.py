"""The kit's databases: a fresh in-memory SQLite per test, copied from one migrated once per
process (migrating takes longer than a test should), or a PostgreSQL database the test run
was given, migrated once and emptied before each test."""

from __future__ import annotations

import sqlite3
import threading

from sqlalchemy import Engine as SAEngine

from bpm.store import db as bpm_db
from bpm.store import migrate, retention

__all__ = ["IN_MEMORY", "copy_template", "empty"]

IN_MEMORY = "sqlite://"

_lock = threading.Lock()
_template: SAEngine | None = None
_migrated: set[str] = set()


def _template_connection() -> sqlite3.Connection:
    global _template
    with _lock:
        if _template is None:
            eng = bpm_db.connect(IN_MEMORY)  # one connection (StaticPool): the database
            migrate.upgrade(eng)
            _template = eng
        raw = _template.raw_connection().driver_connection
    assert isinstance(raw, sqlite3.Connection)
    return raw


def copy_template(target: SAEngine) -> None:
    """Fill the in-memory database of ``target`` with a migrated, empty schema."""
    source = _template_connection()
    with target.connect() as conn:
        raw = conn.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        with _lock:
            source.backup(raw)


def empty(target: SAEngine) -> None:
    """Migrate ``target`` (once per process and URL) and delete every row of every table."""
    url = target.url.render_as_string(hide_password=True)
    with _lock:
        if url not in _migrated:
            migrate.upgrade(target)
            _migrated.add(url)
    with target.begin() as conn:
        retention.delete_everything(conn)
