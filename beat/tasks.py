"""The beat tasks. Each is thin, idempotent and safe to run twice at once.

Beat schedules only the optional timer sweeps among them (:mod:`beat.schedule`): the
upkeep (reclaim, re-publish, purge) runs on beat's own threads (:mod:`beat.maintenance`),
where a backlog on the workers' queue cannot delay it. The upkeep tasks stay, to be run
once by hand (``celery -A workers.app call bpm.reclaim_expired_locks``).

Safety under concurrency comes from the engine: every operation re-checks its rows under the
instance lock (or skips rows another sweeper holds with ``SKIP LOCKED``), so two copies of a
task split or repeat work without applying anything twice.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

from celery import Task, shared_task

from beat.maintenance import retention
from workers.runtime import engine_for
from workers.unreachable import backing_off

# Stop a sweep after this many full batches; the next tick carries on. Keeps a task short.
MAX_BATCHES = 20
RECLAIM_BATCH = 100
TIMER_BATCH = 500
TIMER_START_BATCH = 100
REDISPATCH_BATCH = 500


def sweep(step: Callable[..., int], batch: int, task: Task | None = None) -> int:  # type: ignore[type-arg]
    """Call ``step(limit=batch)`` until a batch comes back short (or MAX_BATCHES ran).

    ``task``: a worker that cannot reach the database leaves the next ticks to the others
    (:mod:`workers.unreachable`); the tick itself is not repeated, the next one comes."""
    total = 0
    with backing_off(task, publish_again=False) if task else nullcontext():
        for _ in range(MAX_BATCHES):
            count = step(limit=batch)
            total += count
            if count < batch:
                break
    return total


@shared_task(name="bpm.fire_due_timers", bind=True)
def fire_due_timers(self: Task) -> int:  # type: ignore[type-arg]
    """Fire every due timer (claimed with SKIP LOCKED, fired and applied in one
    transaction per batch); returns how many fired. Two beats at once fire each once."""
    return sweep(engine_for(self.app).fire_due_timers, TIMER_BATCH, self)


@shared_task(name="bpm.fire_timer_starts", bind=True)
def fire_timer_starts(self: Task) -> int:  # type: ignore[type-arg]
    """Start an instance for every due timer start event (each schedule locked with SKIP
    LOCKED, each due time recorded under a unique key); returns how many started. Two
    beats at once start each due time once. (The beat's timer waiter does this on time;
    this task is the optional sweep.)"""
    return sweep(engine_for(self.app).fire_due_schedules, TIMER_START_BATCH, self)


@shared_task(name="bpm.redispatch_stale_ready", bind=True)
def redispatch_stale_ready(self: Task) -> int:  # type: ignore[type-arg]
    """Publish again Ready steps whose publish was lost; returns how many."""
    return sweep(engine_for(self.app).redispatch_stale_ready, REDISPATCH_BATCH, self)


@shared_task(name="bpm.reclaim_expired_locks", bind=True)
def reclaim_expired_locks(self: Task) -> dict[str, int]:  # type: ignore[type-arg]
    """Expired leases become failed attempts ("worker lost"); counts by kind of lock."""
    engine = engine_for(self.app)
    return {
        "token_leases": sweep(engine.reclaim_expired_leases, RECLAIM_BATCH, self),
        # expired external-task locks go back to ready and wake pollers
        "external_task_locks": sweep(engine.reclaim_expired_external_locks, RECLAIM_BATCH, self),
    }


@shared_task(name="bpm.purge_history", bind=True)
def purge_history(self: Task) -> int:  # type: ignore[type-arg]
    """Delete ended instances (and their history) older than the retention; returns how many."""
    keep = retention()
    if keep is None:
        return 0
    return engine_for(self.app).purge_history(keep)
