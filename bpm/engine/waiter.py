"""Firing timers on time with one query per idle second: the timer waiter.

Each tick (a second by default) the waiter asks the store for the due times of the timers
(and timer start events) due before the next tick: ONE indexed range query, however many
are pending later. It sleeps until the earliest and fires what is due, and so on.
A transaction that creates a timer due sooner than that (a retry backoff, a short delay)
notifies the waiters (PostgreSQL ``NOTIFY``), which look again at once. Firing itself is
:meth:`Engine.fire_due_timers`: ``SKIP LOCKED`` and the re-check under the instance lock, so
two waiters (two beats), or a waiter and a poller, never fire one timer twice.

Celery beat runs one in a thread (:mod:`bpm.contrib.celery.waiter`), ``bpm timers`` runs one in the
foreground.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import psycopg

from bpm.store import dialect
from bpm.store import timers as store
from bpm.store.db import libpq_dsn
from bpm.store.work import TIMER_CHANNEL

if TYPE_CHECKING:
    from bpm.engine import Engine

log = logging.getLogger("bpm.timers")

LOOKAHEAD_LIMIT = 2000


class TimerWaiter:
    """Sleeps until each timer is due, then fires it (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        *,
        tick: timedelta = timedelta(seconds=1),
        batch: int = 500,
        on_fired: Callable[[int], None] | None = None,
    ) -> None:
        self.engine = engine
        self.tick = tick
        self.batch = batch
        self.on_fired = on_fired
        self.queries = 0  # look-ahead queries made (the idle cost)
        self._stop = threading.Event()
        self._woken = threading.Event()
        self._thread: threading.Thread | None = None
        self._listener: threading.Thread | None = None

    # -- running --------------------------------------------------------------------------
    def start(self) -> None:
        """Run in background threads (daemon): the waiter, and a listener on PostgreSQL."""
        self._thread = threading.Thread(target=self.run, name="bpm-timer-waiter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._woken.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def run(self) -> None:
        """Until :meth:`stop`: look ahead each tick, sleep until each due time, fire."""
        log.info("timer waiter started (look-ahead tick %ss)", self.tick.total_seconds())
        if libpq_dsn(self.engine.db) is not None:
            self._listener = threading.Thread(
                target=self._listen, name="bpm-timer-listener", daemon=True
            )
            self._listener.start()
        while not self._stop.is_set():
            try:
                self._one_tick()
            except Exception:  # the database went away: try again next tick
                log.exception("the timer waiter failed; retrying in %s", self.tick)
                self._stop.wait(self.tick.total_seconds())

    def _one_tick(self) -> None:
        """One look-ahead, then sleep until each due time of the tick and fire. An idle tick
        is that one query: nothing else reads the database when nothing is due."""
        core = self.engine.core
        end = core.now() + self.tick
        due = self._look_ahead(end)  # also what is overdue (missed while stopped, busy)
        while not self._stop.is_set():
            now = core.now()
            if self._woken.is_set():  # a timer due sooner was created: look again
                self._woken.clear()
                due = self._look_ahead(end)
            if due and due[0] <= now:
                self._fire()
                due = [d for d in due if d > now]
            if now >= end:
                return
            nxt = min(due[0], end) if due else end
            self._woken.wait(max(0.0, (nxt - now).total_seconds()))

    def _look_ahead(self, until: datetime) -> list[datetime]:
        self.queries += 1
        with self.engine.db.connect() as conn:
            return store.due_before(conn, until, LOOKAHEAD_LIMIT)

    def _fire(self) -> None:
        total = 0
        while True:
            fired = self.engine.fire_due_timers(limit=self.batch)
            total += fired
            if fired < self.batch:
                break
        total += self.engine.fire_due_schedules()  # timer start events
        if total:
            log.info("fired %d timers", total)
            if self.on_fired is not None:
                self.on_fired(total)

    # -- wake-ups -------------------------------------------------------------------------
    def _listen(self) -> None:
        dsn = libpq_dsn(self.engine.db) or ""
        while not self._stop.is_set():
            try:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(dialect.listen_sql(TIMER_CHANNEL).encode())
                    self._woken.set()  # anything created while we were not listening
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            self._woken.set()
            except Exception:
                log.warning("timer listener lost its connection; reconnecting", exc_info=True)
                self._stop.wait(1.0)
