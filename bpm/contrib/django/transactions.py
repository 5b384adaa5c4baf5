"""Engine operations inside Django's own transactions, on Django's PostgreSQL connection.

:class:`DjangoTransactions` is the :class:`~bpm.engine.transactions.TransactionSource` of
the Django adapter. Each engine operation runs in ``transaction.atomic(using=alias)``: a
savepoint when a view's ``atomic()`` block is open (so the instance commits or rolls back
with the view's rows), its own transaction otherwise. Work that waits for the commit
(publishing new steps, the ``process_completed`` signal) goes to ``transaction.on_commit``:
it runs after the outermost commit and never after a rollback.

The engine's SQL runs on the very psycopg connection Django holds, through an SQLAlchemy
engine whose pool lends that connection instead of opening one, and whose dialect leaves
BEGIN, COMMIT, ROLLBACK and closing to Django. Django must use PostgreSQL through psycopg 3
(``django.db.backends.postgresql`` with the ``psycopg`` package installed, not psycopg2):
the engine's PostgreSQL path talks to the psycopg 3 connection directly (pipeline mode).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.types.datetime import TimestamptzLoader
from psycopg.types.json import JsonbLoader, JsonLoader
from sqlalchemy import Connection, create_engine
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.pool import NullPool

from bpm.errors import ConfigurationError

_DIALECT = "bpm_django_lent"


class LentConnectionDialect(PGDialect_psycopg):
    """psycopg 3 on a connection Django owns: Django begins, commits, rolls back, closes."""

    supports_statement_cache = True

    def on_connect(self) -> None:
        return None  # the connection is Django's and already set up; add no handlers to it

    def do_begin(self, dbapi_connection: Any) -> None:
        return None

    def do_commit(self, dbapi_connection: Any) -> None:
        return None

    def do_rollback(self, dbapi_connection: Any) -> None:
        return None

    def do_close(self, dbapi_connection: Any) -> None:
        return None

    def do_terminate(self, dbapi_connection: Any) -> None:
        return None


registry.register(f"postgresql.{_DIALECT}", __name__, "LentConnectionDialect")


class EngineCursor(psycopg.Cursor[Any]):
    """A server-side-binding cursor that reads JSON and timestamps as the engine expects.

    Django's connection reads ``jsonb`` as text and timestamps in its own time zone
    setting; these loaders apply to the engine's cursors only, so Django's ORM keeps its own.
    """

    def __init__(self, connection: psycopg.Connection[Any], *, row_factory: Any = None) -> None:
        super().__init__(connection, row_factory=row_factory)
        self.adapters.register_loader("jsonb", JsonbLoader)
        self.adapters.register_loader("json", JsonLoader)
        self.adapters.register_loader("timestamptz", TimestamptzLoader)


def check_backend(alias: str) -> None:
    """Raise :class:`ConfigurationError` unless ``alias`` is PostgreSQL through psycopg 3."""
    from django.db import connections

    conn = connections[alias]
    if conn.vendor != "postgresql":
        raise ConfigurationError(
            f"DATABASES[{alias!r}] is {conn.vendor}; sharing Django's transactions needs "
            "PostgreSQL (ENGINE 'django.db.backends.postgresql'), or set "
            "BPM['SHARE_TRANSACTIONS'] = False and BPM['DATABASE_URL']"
        )
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if not is_psycopg3:
        raise ConfigurationError(
            "Django uses psycopg2; the engine needs psycopg 3 on Django's connection: "
            "pip install 'psycopg[binary]' and uninstall psycopg2, or set "
            "BPM['SHARE_TRANSACTIONS'] = False"
        )


class DjangoTransactions:
    """Engine transactions = Django transactions on the database ``alias``."""

    def __init__(self, alias: str = "default") -> None:
        check_backend(alias)
        self.alias = alias
        self._lent = create_engine(
            f"postgresql+{_DIALECT}://", creator=self._django_connection, poolclass=NullPool
        )

    def _django_connection(self) -> psycopg.Connection[Any]:
        from django.db import connections

        conn = connections[self.alias]
        conn.ensure_connection()
        raw: psycopg.Connection[Any] = conn.connection
        return raw

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        from django.db import transaction

        with transaction.atomic(using=self.alias):
            raw = self._django_connection()
            previous = raw.cursor_factory
            raw.cursor_factory = EngineCursor
            try:
                with self._lent.connect() as conn:
                    yield conn
            finally:
                raw.cursor_factory = previous

    def after_commit(self, fn: Callable[[], None]) -> None:
        from django.db import transaction

        # Outside an atomic block Django runs fn at once: the operation has committed.
        transaction.on_commit(fn, using=self.alias)

    def close(self) -> None:
        self._lent.dispose()
