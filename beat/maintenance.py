"""The engine's upkeep in the Celery beat process (:mod:`bpm.engine.maintenance`).

When ``celery -A workers.app beat`` starts, threads start in it that take back expired
leases and external-task locks (``BPM_BEAT_RECLAIM_SECONDS``, default 5), publish again
Ready steps whose message was lost (``BPM_BEAT_REDISPATCH_SECONDS``, default 5) and purge
ended instances older than the retention (``BPM_BEAT_PURGE_SECONDS``, default 3600;
``BPM_HISTORY_RETENTION_DAYS``, default 30). 0 turns a job off. They run in beat, not as
tasks on the workers' queue, so a backlog there cannot delay them; two beats do nothing
twice (see the engine module).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from celery.signals import beat_init

from bpm.engine.maintenance import Maintenance, upkeep_jobs
from workers.runtime import engine_for
from workers.settings import env_number

_running: list[Maintenance] = []


def every(
    env: str, default_seconds: float, source: Mapping[str, str] | None = None
) -> timedelta | None:
    """``$env`` seconds (``default_seconds`` when unset) as an interval; None when 0."""
    seconds = env_number(env, default_seconds, source)
    return timedelta(seconds=seconds) if seconds > 0 else None


def retention(source: Mapping[str, str] | None = None) -> timedelta | None:
    """``BPM_HISTORY_RETENTION_DAYS`` (default 30) as a timedelta; None when 0 (keep all)."""
    days = env_number("BPM_HISTORY_RETENTION_DAYS", 30.0, source)
    return timedelta(days=days) if days > 0 else None


def intervals(source: Mapping[str, str] | None = None) -> dict[str, timedelta | None]:
    """The upkeep settings of :func:`bpm.engine.maintenance.upkeep_jobs` from the env."""
    return {
        "reclaim": every("BPM_BEAT_RECLAIM_SECONDS", 5.0, source),
        "redispatch": every("BPM_BEAT_REDISPATCH_SECONDS", 5.0, source),
        "purge": every("BPM_BEAT_PURGE_SECONDS", 3600.0, source),
        "retention": retention(source),
    }


@beat_init.connect
def start_maintenance(sender: Any = None, **_: Any) -> None:
    if sender is None:
        return
    upkeep = Maintenance(upkeep_jobs(engine_for(sender.app), **intervals()))
    upkeep.start()
    _running.append(upkeep)
