"""Keeping the leases of running steps alive: the heartbeat of a worker process.

The lease of a step is short (30 s by default) so that the step of a worker that died runs
again soon. A handler that runs longer keeps its lease because a background thread extends
it, for every step the process holds, every third of the lease: two heartbeats may be
lost before anyone may take the step. Only a live process beats, so a killed worker's
lease simply runs out.

One thread per process (per engine) beats for all the threads that run steps; holding a
step is two dictionary operations, so a quick step pays nothing for it. The keeper also
knows until when each held lease is surely ours (the monotonic time of the last
successful claim or extension, plus the lease): a finish that cannot reach the database
retries until then and no longer (:func:`bpm.engine.execution.finish_retrying`).

The thread holds the keeper, and through it the engine (its pool, model cache, registry):
:meth:`LeaseKeeper.stop` (``Engine.close``) ends and joins it, so a closed engine can be
collected. A stopped keeper starts no thread again: steps held after it cannot be beaten.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import Engine

from bpm.engine.config import EngineConfig
from bpm.store import tokens as token_store

log = logging.getLogger("bpm.leases")

# Never beat more often than this, whatever the lease (a lease of 1 s beats every 0.33 s).
MIN_INTERVAL = 0.05


@dataclass
class Held:
    """A step whose lease this process holds."""

    owner: str
    attempt: int
    lease: timedelta
    until: float  # monotonic time until which the lease is surely ours


class Keeps(Protocol):
    """What the keeper needs of its engine (an :class:`bpm.engine.core.EngineCore`, which
    holds the keeper: named by what it offers, so this module does not import it)."""

    db: Engine
    config: EngineConfig

    def now(self) -> datetime: ...


class LeaseKeeper:
    """Extends the leases of the steps held by this process (see the module docstring)."""

    def __init__(self, core: Keeps) -> None:
        self.core = core
        self.beats = 0  # successful heartbeats (each one statement for every held step)
        self.lost = 0  # leases found lost at a heartbeat
        self._held: dict[str, Held] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._pace = float("inf")  # the interval the thread currently beats at
        self._last_beat = 0.0
        self._stopped = threading.Event()

    # -- what is held ---------------------------------------------------------------------
    def hold(self, steps: Iterable[tuple[str, str, int, timedelta]], since: float) -> None:
        """Hold ``(token id, owner, attempt, lease)`` each, taken at monotonic ``since``."""
        shortest = None
        with self._lock:
            for token_id, owner, attempt, lease in steps:
                until = since + lease.total_seconds()
                self._held[token_id] = Held(owner, attempt, lease, until)
                seconds = lease.total_seconds()
                shortest = seconds if shortest is None else min(shortest, seconds)
            sooner = shortest is not None and shortest / 3 < self._pace
        if sooner:  # a shorter lease than the thread sleeps for: it must beat sooner
            self._wake.set()
        self._ensure_running()

    def extended(self, token_id: str, lease: timedelta, since: float) -> None:
        """A handler extended its lease to ``lease`` (``ctx.extend_lease``): beat with that
        duration from now on, so a heartbeat never shortens it."""
        with self._lock:
            found = self._held.get(token_id)
            if found is not None:
                found.lease = lease
                found.until = since + lease.total_seconds()

    def release(self, token_ids: Iterable[str]) -> None:
        with self._lock:
            for token_id in token_ids:
                self._held.pop(token_id, None)

    def held(self) -> dict[str, Held]:
        with self._lock:
            return dict(self._held)

    def surely_ours_until(self, token_ids: Sequence[str]) -> float:
        """The monotonic time the first of these leases may run out (0: none is held)."""
        with self._lock:
            found = [self._held[i].until for i in token_ids if i in self._held]
        return min(found) if found else 0.0

    # -- the beat -------------------------------------------------------------------------
    def beat(self) -> int:
        """Extend every held lease now; returns how many were still ours."""
        held = self.held()
        if not held:
            return 0
        since = time.monotonic()
        now = self.core.now()
        leases = [(tid, h.owner, h.attempt, now + h.lease) for tid, h in held.items()]
        # Its own connection and transaction, never the worker's (which may be lent to a
        # framework, or in the middle of a finish).
        with self.core.db.begin() as conn:
            kept = token_store.extend_leases(conn, leases, now, only_longer=True)
        self.beats += 1
        with self._lock:
            for tid, h in held.items():
                if self._held.get(tid) is h:
                    h.until = since + h.lease.total_seconds()
        if kept < len(leases):
            self._forget_lost(held)
        return kept

    def _forget_lost(self, held: dict[str, Held]) -> None:
        """Some leases were no longer ours: say which, and stop extending them."""
        with self.core.db.connect() as conn:
            still = token_store.leases_held(
                conn, [(tid, h.owner, h.attempt) for tid, h in held.items()]
            )
        with self._lock:
            for tid, h in held.items():
                if tid not in still and self._held.get(tid) is h:
                    del self._held[tid]
                    self.lost += 1
                    log.warning(
                        "the lease of step %s attempt %d is no longer ours (it expired or "
                        "the step was taken back); its result will be dropped",
                        tid,
                        h.attempt,
                    )

    @property
    def pace(self) -> float:
        """Seconds between the beats the thread makes now (inf before it runs)."""
        with self._lock:
            return self._pace

    def interval(self) -> float:
        with self._lock:
            leases = [h.lease.total_seconds() for h in self._held.values()]
        shortest = min(leases) if leases else self.core.config.default_lease.total_seconds()
        return max(MIN_INTERVAL, shortest / 3)

    # -- the thread -----------------------------------------------------------------------
    def stop(self, timeout: float = 10.0) -> None:
        """End the thread and wait for it (a beat in flight finishes first); idempotent."""
        self._stopped.set()
        self._wake.set()
        with self._lock:
            thread, mine = self._thread, self._pid == os.getpid()
            self._thread = None
        if thread is not None and mine and thread is not threading.current_thread():
            thread.join(timeout)

    def _ensure_running(self) -> None:
        if self._stopped.is_set():
            return
        pid = os.getpid()
        thread = self._thread
        if thread is not None and thread.is_alive() and self._pid == pid:
            return
        with self._lock:
            if self._stopped.is_set():
                return
            # A forked child inherits the keeper but not its thread: start one of its own.
            if self._thread is not None and self._thread.is_alive() and self._pid == pid:
                return
            self._pid = pid
            self._thread = threading.Thread(target=self._run, name="bpm-lease-keeper", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            pace = self.interval()
            with self._lock:
                self._pace = pace
            due = self._last_beat + pace
            left = due - time.monotonic()
            if left > 0:
                # Woken early when a step with a shorter lease is held: work out again
                # when the next beat is due (at once, if it is overdue for that lease).
                self._wake.wait(left)
                self._wake.clear()
                if self._stopped.is_set():
                    return
                if time.monotonic() < self._last_beat + self.interval():
                    continue
            self._last_beat = time.monotonic()
            try:
                self.beat()
            except Exception as exc:  # the database is away: the next beat tries again
                log.warning("cannot extend the leases of running steps: %s", exc)
