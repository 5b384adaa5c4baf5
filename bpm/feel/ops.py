"""FEEL's arithmetic and properties (DMN 1.5 §10.3.2.3, tables 57-61).

Every operator gives null for operands it does not define (``"a" + 1``, ``date - 1``), and
for a result the decimal128 format cannot hold (``1 / 0``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, DecimalException
from typing import Any

from bpm.feel import temporal
from bpm.feel.values import DECIMAL, UNBOUNDED, Range, YearsMonths, kind, time_offset

_ZERO = dt.timedelta(0)


def _num(value: Any) -> bool:
    return isinstance(value, Decimal)


def _dt(value: Any) -> bool:
    return isinstance(value, dt.datetime)


def _date(value: Any) -> bool:
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


def add(a: Any, b: Any) -> Any:
    try:
        if _num(a) and _num(b):
            return DECIMAL.add(a, b)
        if isinstance(a, str) and isinstance(b, str):
            return a + b
        if isinstance(a, dt.timedelta) and isinstance(b, dt.timedelta):
            return a + b
        if isinstance(a, YearsMonths) and isinstance(b, YearsMonths):
            return YearsMonths(a.months + b.months)
        if isinstance(a, dt.timedelta | YearsMonths) and not isinstance(
            b, dt.timedelta | YearsMonths
        ):
            a, b = b, a
        if isinstance(b, YearsMonths) and isinstance(a, dt.date):
            return temporal.add_months(a, b.months)
        if isinstance(b, dt.timedelta):
            if _dt(a):
                return a + b
            if _date(a):
                # A date plus a duration is the date of (midnight + duration).
                return (dt.datetime(a.year, a.month, a.day) + b).date()
            if isinstance(a, dt.time):
                moved = dt.datetime.combine(dt.date(2000, 1, 1), a) + b
                return moved.timetz()
    except (OverflowError, DecimalException, ValueError):
        return None
    return None


def sub(a: Any, b: Any) -> Any:
    try:
        if _num(a) and _num(b):
            return DECIMAL.subtract(a, b)
        if isinstance(b, dt.timedelta | YearsMonths) and not isinstance(
            a, dt.timedelta | YearsMonths
        ):
            return add(a, neg(b)) if isinstance(a, dt.date | dt.time) else None
        if isinstance(a, dt.timedelta) and isinstance(b, dt.timedelta):
            return a - b
        if isinstance(a, YearsMonths) and isinstance(b, YearsMonths):
            return YearsMonths(a.months - b.months)
        if _dt(a) and _dt(b):
            if (a.tzinfo is None) != (b.tzinfo is None):
                return None
            return a - b
        if _date(a) and _date(b):
            return a - b
        if (_dt(a) and _date(b)) or (_date(a) and _dt(b)):
            # A date counts as its midnight UTC (DMN 1.5 §10.3.2.3.6).
            x = a if _dt(a) else dt.datetime(a.year, a.month, a.day, tzinfo=dt.UTC)
            y = b if _dt(b) else dt.datetime(b.year, b.month, b.day, tzinfo=dt.UTC)
            if (x.tzinfo is None) != (y.tzinfo is None):
                return None
            return x - y
        if isinstance(a, dt.time) and isinstance(b, dt.time) and not _dt(a) and not _dt(b):
            if (a.tzinfo is None) != (b.tzinfo is None):
                return None
            day = dt.date(2000, 1, 1)
            x = dt.datetime.combine(day, a.replace(tzinfo=None)) - (time_offset(a) or _ZERO)
            y = dt.datetime.combine(day, b.replace(tzinfo=None)) - (time_offset(b) or _ZERO)
            return x - y
    except (OverflowError, DecimalException, ValueError):
        return None
    return None


def mul(a: Any, b: Any) -> Any:
    try:
        if _num(a) and _num(b):
            return DECIMAL.multiply(a, b)
        if _num(a) and not _num(b):
            a, b = b, a
        if _num(b):
            if isinstance(a, dt.timedelta):
                return temporal.seconds_duration(DECIMAL.multiply(temporal.duration_seconds(a), b))
            if isinstance(a, YearsMonths):
                return YearsMonths(int(DECIMAL.multiply(Decimal(a.months), b)))
    except (OverflowError, DecimalException, ValueError):
        return None
    return None


def div(a: Any, b: Any) -> Any:
    try:
        if _num(a) and _num(b):
            return DECIMAL.divide(a, b)
        if isinstance(a, dt.timedelta) and _num(b):
            return temporal.seconds_duration(DECIMAL.divide(temporal.duration_seconds(a), b))
        if isinstance(a, YearsMonths) and _num(b):
            return YearsMonths(int(DECIMAL.divide(Decimal(a.months), b)))
        if isinstance(a, dt.timedelta) and isinstance(b, dt.timedelta):
            return DECIMAL.divide(temporal.duration_seconds(a), temporal.duration_seconds(b))
        if isinstance(a, YearsMonths) and isinstance(b, YearsMonths):
            return DECIMAL.divide(Decimal(a.months), Decimal(b.months))
    except (OverflowError, DecimalException, ValueError):
        return None
    return None


def power(a: Any, b: Any) -> Any:
    if not (_num(a) and _num(b)):
        return None
    try:
        if b == b.to_integral_value():
            return DECIMAL.power(a, int(b)) if abs(b) < 10**9 else None
        return DECIMAL.power(a, b)
    except (OverflowError, DecimalException, ValueError):
        return None


def neg(a: Any) -> Any:
    if _num(a):
        return DECIMAL.minus(a)
    if isinstance(a, dt.timedelta):
        return -a
    if isinstance(a, YearsMonths):
        return YearsMonths(-a.months)
    return None


# --- properties --------------------------------------------------------------------------


def prop(value: Any, name: str) -> Any:
    """``value.name`` for a date, time, duration or range (``date.year``, ``r.start``)."""
    if isinstance(value, dt.date):
        if name in ("year", "month", "day"):
            return Decimal(getattr(value, name))
        if name == "weekday":
            return Decimal(value.isoweekday())
    if isinstance(value, dt.datetime | dt.time):
        if name in ("hour", "minute", "second"):
            return Decimal(getattr(value, name))
        if name == "time offset":
            offset = value.utcoffset() if _dt(value) else time_offset(value)  # type: ignore[arg-type]
            return offset
        if name == "timezone":
            tz = value.tzinfo
            key = getattr(tz, "key", None)
            return key
    if isinstance(value, dt.timedelta):
        total = int(abs(value).total_seconds())
        sign = -1 if value < _ZERO else 1
        parts = {
            "days": total // 86400,
            "hours": total % 86400 // 3600,
            "minutes": total % 3600 // 60,
            "seconds": total % 60,
        }
        if name in parts:
            return Decimal(sign * parts[name])
    if isinstance(value, YearsMonths):
        sign = -1 if value.months < 0 else 1
        if name == "years":
            return Decimal(sign * (abs(value.months) // 12))
        if name == "months":
            return Decimal(sign * (abs(value.months) % 12))
    if isinstance(value, Range):
        if name in ("start", "end"):
            end = value.start if name == "start" else value.end
            return None if end is UNBOUNDED else end
        return {
            "start": value.start,
            "end": value.end,
            "start included": value.start_included,
            "end included": value.end_included,
        }.get(name)
    return None


def describe(value: Any) -> str:
    return kind(value)
