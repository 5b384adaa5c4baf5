"""FEEL builtins: temporal conversion and calendar functions, and range relations
(DMN 1.5 §10.3.4.1, 10.3.4.8-10)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from bpm.feel import temporal
from bpm.feel.library import builtin, integer, text
from bpm.feel.runtime import Run
from bpm.feel.values import Range, YearsMonths, compare, equal

_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip


def _is_date(value: Any) -> bool:
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


@builtin("date", "from", "year, month, day")
def _date(*args: Any) -> dt.date | None:
    if len(args) == 3:
        parts = [integer(a) for a in args]
        if any(p is None for p in parts):
            return None
        return temporal.make_date(*parts)  # type: ignore[arg-type]
    (source,) = args
    if isinstance(source, dt.datetime):
        return source.date()
    if _is_date(source):
        return source  # type: ignore[no-any-return]
    return temporal.parse_date(text(source))


@builtin("time", "from", "hour, minute, second, offset?")
def _time(*args: Any) -> dt.time | None:
    if len(args) in (3, 4):
        hour, minute = integer(args[0]), integer(args[1])
        second = args[2]
        if hour is None or minute is None or not isinstance(second, Decimal):
            return None
        whole = int(second)
        micro = int((second - whole) * 1_000_000)
        tz: dt.tzinfo | None = None
        if len(args) == 4 and args[3] is not None:
            if not isinstance(args[3], dt.timedelta):
                return None
            tz = dt.timezone(args[3])
        return dt.time(hour, minute, whole, micro, tzinfo=tz)
    (source,) = args
    if isinstance(source, dt.datetime):
        return source.timetz()
    if _is_date(source):
        return dt.time(0, 0, 0, tzinfo=dt.UTC)
    if isinstance(source, dt.time):
        return source
    return temporal.parse_time(text(source))


@builtin("date and time", "from", "date, time")
def _date_and_time(*args: Any) -> dt.datetime | None:
    if len(args) == 2:
        day, clock = args
        if not isinstance(day, dt.date) or not isinstance(clock, dt.time):
            return None
        if isinstance(day, dt.datetime):
            day = day.date()
        return dt.datetime.combine(day, clock)
    (source,) = args
    if isinstance(source, dt.datetime):
        return source
    if _is_date(source):
        return dt.datetime(source.year, source.month, source.day)
    return temporal.parse_date_time(text(source))


@builtin("duration", "from")
def _duration(source: Any) -> Any:
    if isinstance(source, dt.timedelta | YearsMonths):
        return source
    return temporal.parse_duration(text(source))


@builtin("years and months duration", "from, to")
def _years_and_months(start: Any, end: Any) -> YearsMonths | None:
    if not isinstance(start, dt.date) or not isinstance(end, dt.date):
        return None
    return temporal.months_between(start, end)


@builtin("day of year", "date")
def _day_of_year(value: Any) -> Decimal | None:
    return Decimal(value.timetuple().tm_yday) if isinstance(value, dt.date) else None


@builtin("day of week", "date")
def _day_of_week(value: Any) -> str | None:
    return _DAYS[value.weekday()] if isinstance(value, dt.date) else None


@builtin("month of year", "date")
def _month_of_year(value: Any) -> str | None:
    return _MONTHS[value.month - 1] if isinstance(value, dt.date) else None


@builtin("week of year", "date")
def _week_of_year(value: Any) -> Decimal | None:
    return Decimal(value.isocalendar()[1]) if isinstance(value, dt.date) else None


@builtin("now", needs_run=True)
def _now(run: Run) -> dt.datetime:
    """The evaluation's clock (an engine operation passes its own), else the system's."""
    return run.now or dt.datetime.now(dt.UTC)


@builtin("today", needs_run=True)
def _today(run: Run) -> dt.date:
    return (run.now or dt.datetime.now(dt.UTC)).date()


# --- ranges (DMN 1.5 §10.3.4.10): each takes points or ranges --------------------------


def _lt(a: Any, b: Any) -> bool:
    order = compare(a, b)
    if order is None:
        raise TypeError("not comparable")
    return order < 0


def _eq(a: Any, b: Any) -> bool:
    same = equal(a, b)
    if same is None:
        raise TypeError("not comparable")
    return same


def _le(a: Any, b: Any) -> bool:
    return _lt(a, b) or _eq(a, b)


def _valid(*values: Any) -> None:
    for value in values:
        if value is None:
            raise TypeError("null")
        if isinstance(value, Range) and value.start is None and value.end is None:
            raise TypeError("empty range")


@builtin("before", "point1, point2", "point, range", "range, point", "range1, range2")
def _before(a: Any, b: Any) -> bool:
    _valid(a, b)
    if isinstance(a, Range) and isinstance(b, Range):
        return _lt(a.end, b.start) or (
            _eq(a.end, b.start) and not (a.end_included and b.start_included)
        )
    if isinstance(a, Range):
        return _lt(a.end, b) or (_eq(a.end, b) and not a.end_included)
    if isinstance(b, Range):
        return _lt(a, b.start) or (_eq(a, b.start) and not b.start_included)
    return _lt(a, b)


@builtin("after", "point1, point2", "point, range", "range, point", "range1, range2")
def _after(a: Any, b: Any) -> bool:
    _valid(a, b)
    if isinstance(a, Range) and isinstance(b, Range):
        return _lt(b.end, a.start) or (
            _eq(a.start, b.end) and not (a.start_included and b.end_included)
        )
    if isinstance(a, Range):
        return _lt(b, a.start) or (_eq(a.start, b) and not a.start_included)
    if isinstance(b, Range):
        return _lt(b.end, a) or (_eq(a, b.end) and not b.end_included)
    return _lt(b, a)


@builtin("meets", "range1, range2")
def _meets(a: Any, b: Any) -> bool:
    _ranges(a, b)
    return a.end_included and b.start_included and _eq(a.end, b.start)


@builtin("met by", "range1, range2")
def _met_by(a: Any, b: Any) -> bool:
    _ranges(a, b)
    return a.start_included and b.end_included and _eq(a.start, b.end)


def _ranges(*values: Any) -> None:
    _valid(*values)
    if not all(isinstance(v, Range) for v in values):
        raise TypeError("not a range")


@builtin("overlaps", "range1, range2")
def _overlaps(a: Any, b: Any) -> bool:
    _ranges(a, b)
    ends_after_start = _lt(b.start, a.end) or (
        _eq(a.end, b.start) and a.end_included and b.start_included
    )
    starts_before_end = _lt(a.start, b.end) or (
        _eq(a.start, b.end) and a.start_included and b.end_included
    )
    return ends_after_start and starts_before_end


@builtin("overlaps before", "range1, range2")
def _overlaps_before(a: Any, b: Any) -> bool:
    _ranges(a, b)
    starts_first = _lt(a.start, b.start) or (
        _eq(a.start, b.start) and a.start_included and not b.start_included
    )
    reaches_in = _lt(b.start, a.end) or (
        _eq(a.end, b.start) and a.end_included and b.start_included
    )
    ends_first = _lt(a.end, b.end) or (_eq(a.end, b.end) and (not a.end_included or b.end_included))
    return starts_first and reaches_in and ends_first


@builtin("overlaps after", "range1, range2")
def _overlaps_after(a: Any, b: Any) -> bool:
    return bool(_overlaps_before(b, a))


@builtin("finishes", "point, range", "range1, range2")
def _finishes(a: Any, b: Any) -> bool:
    _valid(a, b)
    if not isinstance(b, Range):
        raise TypeError("not a range")
    if not isinstance(a, Range):
        return b.end_included and _eq(a, b.end)
    return (
        a.end_included == b.end_included
        and _eq(a.end, b.end)
        and (
            _lt(b.start, a.start)
            or (_eq(a.start, b.start) and (not a.start_included or b.start_included))
        )
    )


@builtin("finished by", "range, point", "range1, range2")
def _finished_by(a: Any, b: Any) -> bool:
    return bool(_finishes(b, a))


@builtin("includes", "range, point", "range1, range2")
def _includes(a: Any, b: Any) -> bool:
    _valid(a, b)
    if not isinstance(a, Range):
        raise TypeError("not a range")
    if not isinstance(b, Range):
        inside = a.contains(b)
        if inside is None:
            raise TypeError("not comparable")
        return inside
    starts = _lt(a.start, b.start) or (
        _eq(a.start, b.start) and (a.start_included or not b.start_included)
    )
    ends = _lt(b.end, a.end) or (_eq(a.end, b.end) and (a.end_included or not b.end_included))
    return starts and ends


@builtin("during", "point, range", "range1, range2")
def _during(a: Any, b: Any) -> bool:
    return bool(_includes(b, a))


@builtin("starts", "point, range", "range1, range2")
def _starts(a: Any, b: Any) -> bool:
    _valid(a, b)
    if not isinstance(b, Range):
        raise TypeError("not a range")
    if not isinstance(a, Range):
        return b.start_included and _eq(a, b.start)
    return (
        a.start_included == b.start_included
        and _eq(a.start, b.start)
        and (_lt(a.end, b.end) or (_eq(a.end, b.end) and (not a.end_included or b.end_included)))
    )


@builtin("started by", "range, point", "range1, range2")
def _started_by(a: Any, b: Any) -> bool:
    return bool(_starts(b, a))


@builtin("coincides", "point1, point2", "range1, range2")
def _coincides(a: Any, b: Any) -> bool:
    _valid(a, b)
    if isinstance(a, Range) and isinstance(b, Range):
        return (
            _eq(a.start, b.start)
            and _eq(a.end, b.end)
            and a.start_included == b.start_included
            and a.end_included == b.end_included
        )
    if isinstance(a, Range) or isinstance(b, Range):
        raise TypeError("a point and a range")
    return _eq(a, b)
