"""The timer waiter of a Celery beat process (:class:`bpm.engine.waiter.TimerWaiter`).

Beat stays the driver of time: when the beat of an installed app starts (``celery -A
yourapp beat``, whatever its scheduler: the default file one or django-celery-beat's
``DatabaseScheduler``), a waiter thread starts in it and fires each timer when it is due
(``BPM_BEAT_TIMER_SECONDS`` is its look-ahead tick, default 1 s; 0 turns it off). Two beats
run two waiters; neither fires a timer the other fired.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery.signals import beat_init

from bpm.contrib.celery.runtime import Installation
from bpm.contrib.celery.settings import env_number
from bpm.engine.waiter import TimerWaiter

_waiters: list[TimerWaiter] = []


def start_with_beat(installation: Installation) -> None:
    """Start a waiter in every beat process of ``installation.app``."""

    def start_waiter(sender: Any = None, **_: Any) -> None:
        if sender is None or getattr(sender, "app", None) is not installation.app:
            return
        seconds = env_number("BPM_BEAT_TIMER_SECONDS", 1.0)
        if seconds == 0:
            return
        waiter = TimerWaiter(installation.engine(), tick=timedelta(seconds=seconds))
        waiter.start()
        _waiters.append(waiter)

    beat_init.connect(
        start_waiter, weak=False, dispatch_uid=f"bpm-timer-waiter-{id(installation.app)}"
    )
