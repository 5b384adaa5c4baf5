"""When a timer start event starts instances: its due times, from the spec in the model.

* ``timeDate`` ``2026-12-01T09:00:00Z``: once, at that time (at the next beat if past);
* ``timeDuration`` ``PT1H``: once, that long after the definition was deployed;
* ``timeCycle`` ``R/PT1H``, ``R5/PT10M``: every interval from deployment, forever or
  ``n`` times; ``R5/2026-12-01T09:00:00Z/P1D`` starts at the given date;
* ``timeCycle`` cron (``0 0 9 * * ?``, see :mod:`bpm.cron`): every match, forever.

A schedule that fell behind (beat was down) fires once for the missed due time and then
continues with the first due time after now: no burst of catch-up instances.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from bpm.cron import Cron, CronError, looks_like_cron, parse_cron
from bpm.model.nodes import TimerKind, TimerSpec
from bpm.timeexpr import TimerError, feel_timer_value, is_feel, parse_date, parse_duration

__all__ = ["Recurrence", "recurrence"]

# A JUEL expression that is one string literal (``${'2036-11-14T11:12:22'}``): Camunda
# evaluates it with no execution, so it needs no instance either.
_LITERAL = re.compile(r"""^[$#]\{\s*(?:'(?P<single>[^']*)'|"(?P<double>[^"]*)")\s*\}$""")
_CYCLE = re.compile(r"^R(?P<repeat>\d*)/(?:(?P<start>[^/P][^/]*)/)?(?P<interval>P[^/]+)$")


@dataclass(frozen=True)
class Recurrence:
    """The due times of one timer start event."""

    spec: TimerSpec
    at: datetime | None = None  # a date: once
    delay: timedelta | None = None  # a duration: once, after deployment
    start: datetime | None = None  # an ISO cycle's explicit start
    interval: timedelta | None = None
    repeat: int | None = None  # occurrences of an ISO cycle; None = forever
    cron: Cron | None = None

    def first_due(self, deployed_at: datetime) -> datetime | None:
        """The first due time of a schedule created at ``deployed_at``."""
        if self.at is not None:
            return self.at
        if self.delay is not None:
            return deployed_at + self.delay
        if self.cron is not None:
            return self.cron.next_after(deployed_at)
        assert self.interval is not None
        return self.start if self.start is not None else deployed_at + self.interval

    def next_due(self, due: datetime, fired: int, now: datetime) -> datetime | None:
        """The due time after ``due``, the ``fired``-th occurrence, skipping those that
        are already past at ``now``; None when the schedule is over."""
        if self.at is not None or self.delay is not None:
            return None
        if self.cron is not None:
            return self.cron.next_after(max(due, now))
        assert self.interval is not None
        if self.repeat is not None and fired >= self.repeat:
            return None
        following = due + self.interval
        if following <= now:  # skip the missed occurrences, keep the alignment
            missed = (now - following) // self.interval + 1
            following += self.interval * missed
        return following


def recurrence(spec: TimerSpec, *, sunday_zero: bool = False) -> Recurrence:
    """Read the spec of a timer start event, or raise :class:`TimerError` saying why."""
    text = spec.expression.strip()
    if is_feel(text):  # Zeebe evaluates a timer start's FEEL at deploy, with no variables
        text = feel_timer_value(spec, {})
    literal = _LITERAL.match(text)
    if literal is not None:
        text = (literal["single"] if literal["single"] is not None else literal["double"]).strip()
    if "${" in text or "#{" in text or text.startswith("="):
        raise TimerError(
            f"timer start '{text}' reads an expression, but no instance (and no variable) "
            "exists before it fires: write a literal date, duration or cycle"
        )
    if spec.kind is TimerKind.DATE:
        return Recurrence(spec, at=parse_date(text))
    if spec.kind is TimerKind.DURATION:
        return Recurrence(spec, delay=parse_duration(text))
    if looks_like_cron(text):
        try:
            return Recurrence(spec, cron=parse_cron(text, sunday_zero=sunday_zero))
        except CronError as exc:
            raise TimerError(str(exc)) from exc
    match = _CYCLE.match(text)
    if match is None:
        raise TimerError(
            f"'{text}' is not a supported cycle: write R/PT1H (forever), R5/PT10M (5 times), "
            "R5/2026-12-01T09:00:00Z/P1D (from a date), or a cron such as 0 0 9 * * ?"
        )
    repeat = int(match["repeat"]) if match["repeat"] else None
    if repeat is not None and repeat < 1:
        raise TimerError(f"cycle '{text}' repeats {repeat} times: use R1 or more")
    interval = parse_duration(match["interval"])
    if interval <= timedelta(0):
        raise TimerError(f"cycle '{text}' has a zero interval: use a positive duration")
    start = parse_date(match["start"]) if match["start"] else None
    return Recurrence(spec, start=start, interval=interval, repeat=repeat)


@dataclass(frozen=True)
class Schedule:
    """The stored schedule of one timer start event of one definition version.

    ``state``: ``active`` (beat fires it), ``paused`` (its definition is suspended),
    ``ended`` (no due time is left), ``replaced`` (a newer version took over).
    """

    id: str
    definition_id: str
    definition_key: str
    node_id: str
    kind: str
    expression: str
    state: str
    next_due: datetime | None
    fired_count: int
    created_at: datetime
    updated_at: datetime
