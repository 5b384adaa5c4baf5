"""A clock that stands still until a test moves it: the engine's ``clock=`` in the kit.

Every decision the engine makes about time (when a timer is due, when a lease runs out, when
a retry may run) asks its clock; the kit's engine is given this one, so a test moves time
with :meth:`VirtualClock.set` (or :meth:`bpm.testing.BpmTest.advance`, which also fires what
fell due on the way) and never sleeps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bpm.timeexpr import TimerError, parse_duration

__all__ = ["VirtualClock", "as_delta"]


def as_delta(duration: str | timedelta | float, *, relative_to: datetime) -> timedelta:
    """``"P3D"`` (ISO 8601), a ``timedelta`` or seconds, as a non-negative timedelta."""
    if isinstance(duration, timedelta):
        delta = duration
    elif isinstance(duration, int | float):
        delta = timedelta(seconds=duration)
    elif isinstance(duration, str):
        try:
            delta = parse_duration(duration, relative_to=relative_to)
        except TimerError as exc:
            raise ValueError(str(exc)) from None
    else:
        raise TypeError(
            f"a duration is an ISO 8601 text ('P3D'), a timedelta or seconds, not {duration!r}"
        )
    if delta < timedelta(0):
        raise ValueError(f"time only moves forward: {duration!r} is negative")
    return delta


class VirtualClock:
    """``clock()`` is the time the test set; it moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _aware(start) if start is not None else datetime.now(UTC)

    def __call__(self) -> datetime:
        return self._now

    @property
    def now(self) -> datetime:
        return self._now

    def set(self, at: datetime) -> None:
        """Move to ``at`` (timezone-aware; never backwards: timers already fired stay so)."""
        at = _aware(at)
        if at < self._now:
            raise ValueError(f"time only moves forward: {at.isoformat()} is before {self._now}")
        self._now = at

    def advance(self, duration: str | timedelta | float) -> datetime:
        """Move forward by ``duration`` without firing anything; returns the new time."""
        self._now = self._now + as_delta(duration, relative_to=self._now)
        return self._now


def _aware(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ValueError(f"{at.isoformat()} has no time zone: give a UTC time (tzinfo=UTC)")
    return at.astimezone(UTC)
