"""Shifts this process's wall clock by ``FAULTS_CLOCK_SHIFT_SECONDS`` (test use only).

Put this folder on ``PYTHONPATH`` of one process: Python imports ``sitecustomize`` at
start-up, before any other module, so ``time.time()`` and ``datetime.now()`` run ahead
(positive) or behind (negative) for everything in that process, Celery and the engine
alike, as on a host whose clock is off. ``time.monotonic()`` is left alone: it is not a
wall clock. The engine knows nothing of this file.
"""

from __future__ import annotations

import datetime as _dt
import os
import time as _time

_SHIFT = float(os.environ.get("FAULTS_CLOCK_SHIFT_SECONDS", "0") or 0)

if _SHIFT:
    _real_time = _time.time
    _real_time_ns = _time.time_ns
    _delta = _dt.timedelta(seconds=_SHIFT)
    _RealDatetime = _dt.datetime

    def _time_shifted() -> float:
        return _real_time() + _SHIFT

    def _time_ns_shifted() -> int:
        return _real_time_ns() + int(_SHIFT * 1e9)

    class _ShiftedDatetime(_dt.datetime):
        @classmethod
        def now(cls, tz: _dt.tzinfo | None = None) -> _ShiftedDatetime:
            real = _RealDatetime.now(tz) + _delta
            return cls.combine(real.date(), real.timetz())

        @classmethod
        def utcnow(cls) -> _ShiftedDatetime:
            real = _RealDatetime.now(_dt.UTC).replace(tzinfo=None) + _delta
            return cls.combine(real.date(), real.time())

        @classmethod
        def today(cls) -> _ShiftedDatetime:
            return cls.now()

    _time.time = _time_shifted
    _time.time_ns = _time_ns_shifted
    _dt.datetime = _ShiftedDatetime  # type: ignore[misc]
