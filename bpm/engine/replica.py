"""Reads that scale out: history, cockpit lists and counts served by a read replica.

With ``BPM_DATABASE_READ_URL`` (:attr:`EngineConfig.read_url`) set to a streaming replica
of the engine's database, the reads that only show data (``/history/*``, the cockpit's
lists and counts, the decision history) go there, and the primary keeps its CPU for the
transactions. Never a read that decides a transition: every engine operation reads its
instance under the instance lock, on the primary, in its own transaction.

A replica is behind the primary by its replication lag. Each read on it first asks the
replica how far behind it is (one statement on the same connection, no table read): when it
is further behind than :attr:`EngineConfig.read_max_lag` (``BPM_DATABASE_READ_MAX_LAG``,
seconds), or cannot say, or cannot be reached, the read goes to the primary instead, so a
page is never older than that bound. :meth:`ReadReplica.age` is what a page may say about
how old its data is (the REST API's ``X-Bpm-Data-Age`` header).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

log = logging.getLogger("bpm.engine")

# 0 when every WAL record received is replayed (the replica is as new as what reached
# it) or the database is no replica at all; else the time since the last transaction it
# replayed committed on the primary. NULL (no replay yet): unknown.
LAG_SQL = text(
    "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0"
    " WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0"
    " ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END"
)


@dataclass
class ReplicaStats:
    """Where reads went (for tests and metrics)."""

    replica_reads: int = 0
    # too far behind, unknown lag, or unreachable: read on the primary instead
    primary_fallbacks: int = 0


class ReadReplica:
    """The read replica of one engine (see the module docstring)."""

    def __init__(self, db: Engine, max_lag: timedelta) -> None:
        if max_lag < timedelta(0):
            raise ValueError(f"the replica's maximum lag cannot be negative, got {max_lag}")
        self.db = db
        self.max_lag = max_lag
        self.stats = ReplicaStats()
        self._lock = threading.Lock()

    def _lag(self, conn: Connection) -> float | None:
        if conn.dialect.name != "postgresql":
            return 0.0  # a copy of an embedded database has no replication to lag
        value = conn.execute(LAG_SQL).scalar()
        return None if value is None else max(0.0, float(value))

    def _usable(self, conn: Connection) -> float | None:
        """The replica's lag when a read may use it, else None."""
        lag = self._lag(conn)
        if lag is None or lag > self.max_lag.total_seconds():
            return None
        return lag

    @contextmanager
    def connect(self) -> Iterator[Connection | None]:
        """A connection to the replica, or None when this read belongs on the primary."""
        try:
            conn = self.db.connect()
        except DBAPIError:
            log.warning("the read replica cannot be reached; reading on the primary")
            self._count(replica=False)
            yield None
            return
        with conn:
            try:
                lag = self._usable(conn)
            except DBAPIError:
                log.warning("the read replica did not say its lag; reading on the primary")
                lag = None
            self._count(replica=lag is not None)
            yield conn if lag is not None else None

    def age(self) -> float | None:
        """Seconds the replica is behind, when reads use it now; None: reads go to the
        primary (too far behind, lag unknown, unreachable)."""
        try:
            with self.db.connect() as conn:
                return self._usable(conn)
        except DBAPIError:
            return None

    def _count(self, *, replica: bool) -> None:
        with self._lock:
            if replica:
                self.stats.replica_reads += 1
            else:
                self.stats.primary_fallbacks += 1

    def close(self) -> None:
        self.db.dispose()
