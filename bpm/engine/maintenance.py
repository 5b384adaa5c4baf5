"""The engine's upkeep on threads of its own: lost leases taken back, lost publishes sent
again, old history purged.

These jobs used to be Celery periodic tasks, sent by beat to the workers' queue. Behind a
backlog there they waited their turn, and beat's ``expires`` dropped each tick the
workers did not reach in time: with 300 instances queued, a dead worker's lease was taken
back 182 s after it had run out (72 of 76 ticks discarded). The reclaimer is what gets a
dead worker's step running again, so nothing the workers do may delay it.

So the beat process runs them itself, as it runs the timer waiter
(:mod:`bpm.engine.waiter`): one thread per job, each asleep until its next run, each
reading and writing the database directly. A queue backlog cannot delay them, a slow
purge cannot delay the reclaimer, and there is nothing more to deploy: beat must run
anyway (it fires the timers). A dedicated queue would need a consumer of its own that an
operator must remember to start, and that could itself be busy.

Two beats run every job twice, and nothing is done twice: a lease or a lock is taken
back only after it is checked again under its instance's lock (so the second reclaimer
finds it taken back, or held by the next attempt, and leaves it); the stale Ready steps
to publish again are read with ``SKIP LOCKED`` and marked published in the same
transaction; the purge deletes in batches that skip each other's rows.

:class:`Maintenance` is the runner; :func:`upkeep_jobs` the engine's jobs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bpm.engine import Engine

log = logging.getLogger("bpm.maintenance")

# A sweep stops after this many full batches; its next run carries on. Keeps a run short.
MAX_BATCHES = 20
RECLAIM_BATCH = 100
REDISPATCH_BATCH = 500


@dataclass(frozen=True)
class Job:
    """``run()`` every ``every``; returns how much it did (0: nothing to do)."""

    name: str
    every: timedelta
    run: Callable[[], int]
    done: str = "did {n}"  # the log line when it did something ("took back {n} leases")


def sweep(step: Callable[..., int], batch: int) -> int:
    """Call ``step(limit=batch)`` until a batch comes back short (or MAX_BATCHES ran)."""
    total = 0
    for _ in range(MAX_BATCHES):
        count = step(limit=batch)
        total += count
        if count < batch:
            break
    return total


def upkeep_jobs(
    engine: Engine,
    *,
    reclaim: timedelta | None = timedelta(seconds=5),
    redispatch: timedelta | None = timedelta(seconds=5),
    purge: timedelta | None = timedelta(hours=1),
    retention: timedelta | None = timedelta(days=30),
    batches: timedelta | None = timedelta(seconds=5),
) -> list[Job]:
    """The engine's upkeep, each job at its interval (None: not run): expired leases and
    external-task locks taken back (``reclaim``), stale Ready steps published again
    (``redispatch``), ended instances older than ``retention`` purged (``purge``), batch
    chunks whose message was lost or whose worker died published again (``batches``)."""
    jobs = []
    if reclaim is not None:

        def take_back() -> int:
            return sweep(engine.reclaim_expired_leases, RECLAIM_BATCH) + sweep(
                engine.reclaim_expired_external_locks, RECLAIM_BATCH
            )

        jobs.append(Job("reclaim", reclaim, take_back, "took back {n} expired leases and locks"))
    if redispatch is not None:

        def publish_again() -> int:
            return sweep(engine.redispatch_stale_ready, REDISPATCH_BATCH)

        jobs.append(Job("redispatch", redispatch, publish_again, "published {n} stale steps"))
    if batches is not None:

        def publish_chunks() -> int:
            return sweep(engine.batches.redispatch_stalled, REDISPATCH_BATCH)

        jobs.append(Job("batches", batches, publish_chunks, "published {n} stalled batch chunks"))
    if purge is not None and retention is not None:
        keep = retention

        def purge_history() -> int:
            return engine.purge_history(keep)

        jobs.append(Job("purge", purge, purge_history, "purged {n} ended instances"))
    return jobs


class Maintenance:
    """Runs each :class:`Job` on a daemon thread of its own, every ``job.every``."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.jobs = tuple(jobs)
        self.runs: dict[str, int] = {job.name: 0 for job in self.jobs}  # completed runs
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for job in self.jobs:
            thread = threading.Thread(
                target=self._loop, args=(job,), name=f"bpm-{job.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        if self.jobs:
            log.info(
                "maintenance started: %s",
                ", ".join(f"{j.name} every {j.every.total_seconds():g}s" for j in self.jobs),
            )

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every job (a run in progress finishes first) and wait for the threads."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()

    def run_once(self, job: Job) -> int:
        """One run of ``job``: how much it did; 0 (logged) when it failed."""
        try:
            done = job.run()
        except Exception as exc:  # the database is away: the next run tries again
            log.warning("maintenance job %s failed (%s); next run in %s", job.name, exc, job.every)
            return 0
        self.runs[job.name] += 1
        if done:
            log.info("%s: %s", job.name, job.done.format(n=done))
        else:
            log.debug("%s: nothing to do", job.name)
        return done

    def _loop(self, job: Job) -> None:
        interval = job.every.total_seconds()
        while not self._stop.is_set():
            started = time.monotonic()
            self.run_once(job)
            # From the start of the run: a run that took longer than the interval is
            # followed by the next at once, never by a backlog of runs.
            self._stop.wait(max(0.0, interval - (time.monotonic() - started)))
