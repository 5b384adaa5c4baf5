"""One clock for every decision about time: the database's (DESIGN section 12).

Lease expiries, timer due times and reclaim decisions are compared by several processes on
several hosts. If each used its own wall clock, a host whose clock runs ten minutes ahead
would reclaim live leases and fire timers early. So the engine asks the database what time
it is. Asking costs a round trip, which a worker would otherwise pay on every step; the
clock therefore reads the database at most once per ``resync`` (10 s by default) and in
between advances that reading with this process's monotonic clock, which drifts by
microseconds per second and never jumps when someone sets the host's time. A decision made
with it is off from the database's ``clock_timestamp()`` by at most half a round trip
(plus the monotonic drift since the last reading, well under a millisecond).

SQLite lives in this process: its clock is the host's, and :func:`utcnow` is used.
Tests inject ``now=`` (or a clock of their own) and move time without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from bpm.store import dialect


def utcnow() -> datetime:
    """The host's wall clock (UTC): the clock of SQLite, and of tests that want it."""
    return datetime.now(UTC)


class DatabaseClock:
    """``clock()`` is the database's time, read at most once per ``resync`` seconds."""

    def __init__(
        self,
        db: Engine,
        *,
        resync: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.resync = resync
        self.readings = 0  # round trips made to read the database's clock
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._base: tuple[datetime, float] | None = None

    def __call__(self) -> datetime:
        mark = self._monotonic()
        base = self._base
        if base is None or mark - base[1] >= self.resync:
            base = self.read()
        return base[0] + timedelta(seconds=mark - base[1])

    def read(self) -> tuple[datetime, float]:
        """Ask the database now; returns (its time, our monotonic time at that moment)."""
        with self._lock:
            before = self._monotonic()
            with self.db.connect() as conn:
                at = dialect.server_now(conn)
            after = self._monotonic()
            # The server read its clock somewhere within the round trip: take the middle.
            self._base = (at, (before + after) / 2)
            self.readings += 1
            return self._base


def clock_for(db: Engine) -> Callable[[], datetime]:
    """The clock decisions are made with: the database's, or the host's for SQLite."""
    if db.dialect.name == "postgresql":
        return DatabaseClock(db)
    return utcnow
