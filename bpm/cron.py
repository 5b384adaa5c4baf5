"""Cron cycles of timer start events, as Camunda 7 (Quartz) and Camunda 8 (Spring) write them.

Six or seven fields, seconds first: ``sec min hour day-of-month month day-of-week [year]``,
e.g. ``0 0/15 9-17 ? * MON-FRI``. Each field takes ``*``, ``?``, numbers, names
(``JAN``-``DEC``, ``SUN``-``SAT``), ranges ``a-b``, steps ``a/n`` and ``a-b/n``, and lists
``a,b``; the day of month also takes ``L`` (its last day). Restrict either the day of month
or the day of week, not both. Day-of-week numbers count from Sunday = 1 (Quartz) unless the
caller says ``sunday_zero`` (Spring, Zeebe: Sunday = 0 or 7). Macros ``@yearly``,
``@monthly``, ``@weekly``, ``@daily`` and ``@hourly`` are accepted. Times are UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from bpm.errors import BpmError

__all__ = ["Cron", "CronError", "looks_like_cron", "parse_cron"]

_MONTHS = {
    m: i
    for i, m in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1
    )
}
_DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}  # SUN = 0
_MACROS = {
    "@yearly": "0 0 0 1 1 ?",
    "@annually": "0 0 0 1 1 ?",
    "@monthly": "0 0 0 1 * ?",
    "@weekly": "0 0 0 ? * SUN",
    "@daily": "0 0 0 * * ?",
    "@midnight": "0 0 0 * * ?",
    "@hourly": "0 0 * * * ?",
}
_SEARCH_DAYS = 366 * 8  # leap-day and one-year schedules need a few years to find a match


class CronError(BpmError):
    """A cron expression this engine cannot read; the message shows the accepted form."""


def looks_like_cron(text: str) -> bool:
    """True for text shaped like a cron expression (fields separated by spaces, or a macro)."""
    stripped = text.strip()
    return stripped.lower() in _MACROS or len(stripped.split()) in (6, 7)


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression; :meth:`next_after` is the next fire time."""

    source: str
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int] | None  # day of month; None = any
    last_day: bool
    months: frozenset[int]
    weekdays: frozenset[int] | None  # 0 = Sunday; None = any
    years: frozenset[int] | None

    def _day_matches(self, day: date) -> bool:
        if self.years is not None and day.year not in self.years:
            return False
        if day.month not in self.months:
            return False
        if self.last_day:
            return (day + timedelta(days=1)).month != day.month
        if self.days is not None and day.day not in self.days:
            return False
        return self.weekdays is None or (day.isoweekday() % 7) in self.weekdays

    def _first_time(self, not_before: time) -> time | None:
        for hour in self.hours:
            if hour < not_before.hour:
                continue
            for minute in self.minutes:
                if hour == not_before.hour and minute < not_before.minute:
                    continue
                for second in self.seconds:
                    candidate = time(hour, minute, second)
                    if candidate >= not_before:
                        return candidate
        return None

    def next_after(self, moment: datetime) -> datetime | None:
        """The first fire time strictly after ``moment`` (UTC), or None if there is none."""
        start = moment.astimezone(UTC).replace(microsecond=0, tzinfo=None) + timedelta(seconds=1)
        day = start.date()
        for offset in range(_SEARCH_DAYS):
            current = day + timedelta(days=offset)
            if self.years is not None and current.year > max(self.years):
                return None
            if not self._day_matches(current):
                continue
            found = self._first_time(start.time() if offset == 0 else time(0))
            if found is not None:
                return datetime.combine(current, found, tzinfo=UTC)
        return None


def _value(text: str, names: dict[str, int], field: str, source: str) -> int:
    upper = text.upper()
    if upper in names:
        return names[upper]
    if not text.isdigit():
        if re.search(r"[LW#]", upper):
            raise CronError(
                f"cron '{source}': '{text}' in the {field} field is not supported (of L, W "
                "and #, only L alone, the last day of the month, is): list the values instead"
            )
        raise CronError(f"cron '{source}': '{text}' is not a valid {field} value")
    return int(text)


def _field(
    text: str, low: int, high: int, field: str, source: str, names: dict[str, int] | None = None
) -> frozenset[int] | None:
    """The values of one field; None for ``*`` or ``?`` (any)."""
    if text in ("*", "?"):
        return None
    out: set[int] = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, _, step_text = part.partition("/")
            if not step_text.isdigit() or int(step_text) < 1:
                raise CronError(f"cron '{source}': step '/{step_text}' must be a number >= 1")
            step = int(step_text)
        if part in ("*", "?", ""):
            first, last = low, high
        elif "-" in part:
            a, _, b = part.partition("-")
            first = _value(a, names or {}, field, source)
            last = _value(b, names or {}, field, source)
        else:
            first = _value(part, names or {}, field, source)
            last = high if step > 1 else first
        if not (low <= first <= high and low <= last <= high) or first > last:
            raise CronError(
                f"cron '{source}': '{part}' is out of range for the {field} field ({low}-{high})"
            )
        out.update(range(first, last + 1, step))
    return frozenset(out)


def parse_cron(text: str, *, sunday_zero: bool = False) -> Cron:
    """Read a Quartz/Spring cron expression, or raise :class:`CronError` saying why."""
    source = text.strip()
    fields = _MACROS.get(source.lower(), source).split()
    if len(fields) not in (6, 7):
        raise CronError(
            f"cron '{source}' has {len(fields)} fields: write six or seven, seconds first, "
            "e.g. 0 0 9 * * ? (every day at 09:00 UTC) or 0 0/15 * ? * MON-FRI"
        )
    sec, minute, hour, dom, month, dow = fields[:6]
    year = fields[6] if len(fields) == 7 else "*"
    last_day = dom.upper() == "L"
    days = None if last_day else _field(dom, 1, 31, "day-of-month", source)
    if sunday_zero:
        weekdays = _field(dow, 0, 7, "day-of-week", source, _DAYS)
        if weekdays is not None:
            weekdays = frozenset(d % 7 for d in weekdays)
    else:
        quartz_names = {k: v + 1 for k, v in _DAYS.items()}
        weekdays = _field(dow, 1, 7, "day-of-week", source, quartz_names)
        if weekdays is not None:
            weekdays = frozenset(d - 1 for d in weekdays)
    if (days is not None or last_day) and weekdays is not None:
        raise CronError(
            f"cron '{source}' restricts both the day of month and the day of week: write ? "
            "in one of them"
        )
    cron = Cron(
        source=source,
        seconds=tuple(sorted(_field(sec, 0, 59, "seconds", source) or range(60))),
        minutes=tuple(sorted(_field(minute, 0, 59, "minutes", source) or range(60))),
        hours=tuple(sorted(_field(hour, 0, 23, "hours", source) or range(24))),
        days=days,
        last_day=last_day,
        months=_field(month, 1, 12, "month", source, _MONTHS) or frozenset(range(1, 13)),
        weekdays=weekdays,
        years=_field(year, 1970, 2199, "year", source),
    )
    return cron
