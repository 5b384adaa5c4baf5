"""Engine operations in the transaction of a Flask-SQLAlchemy session.

:class:`SessionTransactions` is the :class:`~bpm.engine.transactions.TransactionSource` of
``BPM(app, db=db)``: each engine operation runs in ``db.session.begin_nested()`` (a
savepoint of the session's transaction, on the session's connection), so an instance
commits with ``db.session.commit()`` and disappears with a rollback. Work that waits for
the commit (publishing new steps, the ``process_completed`` signal) runs right after the
session's outermost commit, and is dropped when the session's transaction ends otherwise
(rollback, or the request ends without a commit).

The session's engine must be PostgreSQL through psycopg 3 (``postgresql+psycopg://``):
the engine's PostgreSQL path talks to the psycopg 3 connection directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, event
from sqlalchemy.orm import Session, SessionTransaction

from bpm.errors import ConfigurationError

_PENDING = "bpm.after_commit"


def check_engine(url: Any) -> None:
    """Raise :class:`ConfigurationError` unless ``url`` is PostgreSQL through psycopg 3."""
    if url.get_backend_name() != "postgresql" or url.get_driver_name() != "psycopg":
        raise ConfigurationError(
            f"BPM(app, db=db) shares the session's transactions only on PostgreSQL through "
            f"psycopg 3; SQLALCHEMY_DATABASE_URI uses {url.drivername!r}: write "
            "postgresql+psycopg://..., or give BPM(app) without db= (own transactions)"
        )


class SessionTransactions:
    """Engine transactions = savepoints in the current Flask-SQLAlchemy session."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def _session(self) -> Session:
        session: Session = self.db.session()
        return session

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        session = self._session()
        with session.begin_nested():
            yield session.connection()

    def after_commit(self, fn: Callable[[], None]) -> None:
        session = self._session()
        if not session.in_transaction():
            fn()  # nothing left open: the savepoint's transaction has committed already
            return
        pending: list[Callable[[], None]] = session.info.setdefault(_PENDING, [])
        pending.append(fn)


@event.listens_for(Session, "after_commit")
def _run_pending(session: Session) -> None:
    for fn in session.info.pop(_PENDING, ()):
        fn()


@event.listens_for(Session, "after_transaction_end")
def _drop_pending(session: Session, transaction: SessionTransaction) -> None:
    # The outermost transaction ended without after_commit having taken the work: it
    # rolled back (or was closed), so nothing it did may be published.
    if transaction.parent is None and not transaction.nested:
        session.info.pop(_PENDING, None)
