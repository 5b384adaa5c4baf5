"""The engine's upkeep in a Celery beat process (:mod:`bpm.engine.maintenance`).

When the beat of an installed app starts, threads start in it that take back expired
leases and external-task locks (``BPM_BEAT_RECLAIM_SECONDS``, default 5), publish again
Ready steps whose message was lost (``BPM_BEAT_REDISPATCH_SECONDS``, default 5) and purge
ended instances older than the retention (``BPM_BEAT_PURGE_SECONDS``, default 3600;
``BPM_HISTORY_RETENTION_DAYS``, default 30) and publish again batch chunks whose message
was lost or whose worker died (``BPM_BEAT_BATCH_SECONDS``, default 5); 0 turns a job off.
They run in beat, as the timer waiter does (:mod:`.waiter`), not as tasks on the workers'
queue, so a backlog there cannot delay them; two beats do nothing twice (see the engine module).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from celery.signals import beat_init

from bpm.contrib.celery.beat_tasks import retention
from bpm.contrib.celery.runtime import Installation
from bpm.contrib.celery.settings import env_number
from bpm.engine.maintenance import Maintenance, upkeep_jobs

_running: list[Maintenance] = []


def every(
    env: str, default_seconds: float, source: Mapping[str, str] | None = None
) -> timedelta | None:
    """``$env`` seconds (``default_seconds`` when unset) as an interval; None when 0."""
    seconds = env_number(env, default_seconds, source)
    return timedelta(seconds=seconds) if seconds > 0 else None


def intervals(source: Mapping[str, str] | None = None) -> dict[str, timedelta | None]:
    """The settings of :func:`bpm.engine.maintenance.upkeep_jobs` from the environment
    (``source``: another mapping than ``os.environ``)."""
    return {
        "reclaim": every("BPM_BEAT_RECLAIM_SECONDS", 5.0, source),
        "redispatch": every("BPM_BEAT_REDISPATCH_SECONDS", 5.0, source),
        "purge": every("BPM_BEAT_PURGE_SECONDS", 3600.0, source),
        "retention": retention(source),
        "batches": every("BPM_BEAT_BATCH_SECONDS", 5.0, source),
    }


def start_with_beat(installation: Installation) -> None:
    """Start the upkeep threads in every beat process of ``installation.app``."""

    def start_upkeep(sender: Any = None, **_: Any) -> None:
        if sender is None or getattr(sender, "app", None) is not installation.app:
            return
        upkeep = Maintenance(upkeep_jobs(installation.engine(), **intervals()))
        upkeep.start()
        _running.append(upkeep)

    beat_init.connect(
        start_upkeep, weak=False, dispatch_uid=f"bpm-maintenance-{id(installation.app)}"
    )
