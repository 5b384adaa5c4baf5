"""The beat schedule: one :class:`Periodic` per task, each interval overridable from the env.

To add a periodic task, define it in :mod:`bpm.contrib.celery.beat_tasks` (one entry of its
``SWEEPS``) and add one line to :data:`PERIODIC`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bpm.contrib.celery.settings import env_number


@dataclass(frozen=True)
class Periodic:
    """A task run every ``default_seconds`` (or ``$env`` seconds; 0 disables it)."""

    task: str
    env: str
    default_seconds: float


# Timers are fired on time by the waiter thread of the beat process (beat/waiter.py); a
# periodic sweep as well is off by default (BPM_BEAT_TIMER_SWEEP_SECONDS > 0 turns it on).
PERIODIC: tuple[Periodic, ...] = (
    Periodic("bpm.fire_due_timers", "BPM_BEAT_TIMER_SWEEP_SECONDS", 0.0),
    Periodic("bpm.fire_timer_starts", "BPM_BEAT_TIMER_SWEEP_SECONDS", 0.0),
    Periodic("bpm.redispatch_stale_ready", "BPM_BEAT_REDISPATCH_SECONDS", 5.0),
    Periodic("bpm.reclaim_expired_locks", "BPM_BEAT_RECLAIM_SECONDS", 5.0),
    Periodic("bpm.purge_history", "BPM_BEAT_PURGE_SECONDS", 3600.0),
)


def beat_schedule(env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The ``beat_schedule`` setting for :data:`PERIODIC` under the current environment."""
    schedule: dict[str, dict[str, Any]] = {}
    for entry in PERIODIC:
        seconds = env_number(entry.env, entry.default_seconds, env)
        if seconds == 0:
            continue
        schedule[entry.task] = {
            "task": entry.task,
            "schedule": timedelta(seconds=seconds),
            # When workers are down, beat keeps sending; a tick older than its interval is
            # superseded by the next one, so let the broker drop it instead of a backlog.
            "options": {"expires": max(seconds, 1.0)},
        }
    return schedule
