"""The periodic sweeps beat sends. Each is thin, idempotent and safe to run twice at once.

Safety under concurrency comes from the engine: every operation re-checks its rows under the
instance lock (or skips rows another sweeper holds with ``SKIP LOCKED``), so two copies of a
sweep split or repeat work without applying anything twice.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

from celery import Task

from bpm.contrib.celery.settings import env_number
from bpm.contrib.celery.unreachable import backing_off
from bpm.engine import Engine

# Stop a sweep after this many full batches; the next tick carries on. Keeps a task short.
MAX_BATCHES = 20
RECLAIM_BATCH = 100
TIMER_BATCH = 500
TIMER_START_BATCH = 100
REDISPATCH_BATCH = 500


def sweep(step: Callable[..., int], batch: int, task: Task | None = None) -> int:  # type: ignore[type-arg]
    """Call ``step(limit=batch)`` until a batch comes back short (or MAX_BATCHES ran).

    ``task``: a worker that cannot reach the database leaves the next ticks to the others
    (:mod:`bpm.contrib.celery.unreachable`); the tick itself is not repeated, the next one
    comes."""
    total = 0
    with backing_off(task, publish_again=False) if task else nullcontext():
        for _ in range(MAX_BATCHES):
            count = step(limit=batch)
            total += count
            if count < batch:
                break
    return total


def fire_due_timers(engine: Engine, task: Task | None = None) -> int:  # type: ignore[type-arg]
    """Fire every due timer (claimed with SKIP LOCKED, fired and applied in one
    transaction per batch); returns how many fired. Two beats at once fire each once."""
    return sweep(engine.fire_due_timers, TIMER_BATCH, task)


def fire_timer_starts(engine: Engine, task: Task | None = None) -> int:  # type: ignore[type-arg]
    """Start an instance for every due timer start event (each schedule locked with SKIP
    LOCKED, each due time recorded under a unique key); returns how many started. Two
    beats at once start each due time once. (The beat's timer waiter does this on time;
    this task is the optional sweep.)"""
    return sweep(engine.fire_due_schedules, TIMER_START_BATCH, task)


def redispatch_stale_ready(engine: Engine, task: Task | None = None) -> int:  # type: ignore[type-arg]
    """Publish again Ready steps whose publish was lost; returns how many."""
    return sweep(engine.redispatch_stale_ready, REDISPATCH_BATCH, task)


def reclaim_expired_locks(engine: Engine, task: Task | None = None) -> dict[str, int]:  # type: ignore[type-arg]
    """Expired leases become failed attempts ("worker lost"); counts by kind of lock."""
    return {
        "token_leases": sweep(engine.reclaim_expired_leases, RECLAIM_BATCH, task),
        # expired external-task locks go back to ready and wake pollers
        "external_task_locks": sweep(engine.reclaim_expired_external_locks, RECLAIM_BATCH, task),
    }


def retention() -> timedelta | None:
    """``BPM_HISTORY_RETENTION_DAYS`` (default 30) as a timedelta; None when 0 (keep all)."""
    days = env_number("BPM_HISTORY_RETENTION_DAYS", 30.0)
    return timedelta(days=days) if days > 0 else None


def purge_history(engine: Engine, task: Task | None = None) -> int:  # type: ignore[type-arg]
    """Delete ended instances (and their history) older than the retention; returns how many."""
    keep = retention()
    if keep is None:
        return 0
    return engine.purge_history(keep)


SWEEPS: dict[str, Callable[..., Any]] = {
    "bpm.fire_due_timers": fire_due_timers,
    "bpm.fire_timer_starts": fire_timer_starts,
    "bpm.redispatch_stale_ready": redispatch_stale_ready,
    "bpm.reclaim_expired_locks": reclaim_expired_locks,
    "bpm.purge_history": purge_history,
}
"""The sweeps by task name (the names of the beat schedule in :mod:`.schedule`)."""
