"""The timer waiter of a Celery beat process (:class:`bpm.engine.waiter.TimerWaiter`).

Beat stays the driver of time: when ``celery -A workers.app beat`` starts, a waiter thread
starts in it and fires each timer when it is due (``BPM_BEAT_TIMER_SECONDS`` is its
look-ahead tick, default 1 s; 0 turns it off). Two beats run two waiters; neither fires a
timer the other fired.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery.signals import beat_init

from bpm.engine.waiter import TimerWaiter
from workers.runtime import engine_for
from workers.settings import env_number

_waiters: list[TimerWaiter] = []


@beat_init.connect
def start_waiter(sender: Any = None, **_: Any) -> None:
    seconds = env_number("BPM_BEAT_TIMER_SECONDS", 1.0)
    if seconds == 0 or sender is None:
        return
    waiter = TimerWaiter(engine_for(sender.app), tick=timedelta(seconds=seconds))
    waiter.start()
    _waiters.append(waiter)
