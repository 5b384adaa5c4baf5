"""FEEL dates, times, date-times and both kinds of duration: parsing, printing, arithmetic.

Strings follow XML Schema (DMN 10.3.2.3): ``2012-12-24``, ``23:59:00.5+01:00``,
``2012-12-24T23:59:00@Europe/Paris``, ``P1DT2H``, ``-P1Y2M``. A text that is not one of
these gives None, which the callers turn into FEEL null.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bpm.feel.values import DECIMAL, YearsMonths

_DATE = r"(?P<year>-?(?:[1-9]\d{4,8}|\d{4}))-(?P<month>\d\d)-(?P<day>\d\d)"
_TIME = (
    r"(?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)(?P<fraction>\.\d+)?"
    r"(?P<zone>Z|[+-]\d\d:\d\d(?::\d\d)?|@[A-Za-z][A-Za-z0-9_/+\-]*)?"
)
DATE_RE = re.compile(f"^{_DATE}$")
TIME_RE = re.compile(f"^{_TIME}$")
DATE_TIME_RE = re.compile(f"^{_DATE}T{_TIME}$")
DURATION_RE = re.compile(
    r"^(?P<sign>-)?P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d*)?)S)?)?$"
)


def zone(text: str | None) -> dt.tzinfo | bool | None:
    """A zone suffix as tzinfo; None when absent; False when it names no zone."""
    if text is None:
        return None
    if text == "Z":
        return dt.UTC
    if text.startswith("@"):
        try:
            return ZoneInfo(text[1:])
        except (ZoneInfoNotFoundError, ValueError):
            return False
    sign = -1 if text[0] == "-" else 1
    parts = [int(p) for p in text[1:].split(":")]
    offset = dt.timedelta(
        hours=parts[0], minutes=parts[1], seconds=parts[2] if len(parts) > 2 else 0
    )
    if offset > dt.timedelta(hours=18):
        return False
    return dt.timezone(sign * offset)


def make_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except (ValueError, OverflowError):
        return None


def parse_date(text: str) -> dt.date | None:
    match = DATE_RE.match(text)
    if not match:
        return None
    return make_date(int(match["year"]), int(match["month"]), int(match["day"]))


def _time_of(match: re.Match[str]) -> dt.time | None:
    hour, minute, second = int(match["hour"]), int(match["minute"]), int(match["second"])
    micro = int((match["fraction"] or ".0")[1:7].ljust(6, "0"))
    tz = zone(match["zone"])
    if tz is False or hour > 23 or minute > 59 or second > 59:
        return None
    return dt.time(hour, minute, second, micro, tzinfo=tz)  # type: ignore[arg-type]


def parse_time(text: str) -> dt.time | None:
    match = TIME_RE.match(text)
    return _time_of(match) if match else None


def parse_date_time(text: str) -> dt.datetime | None:
    """A date and time; a bare date reads as its midnight (DMN ``date and time(from)``)."""
    match = DATE_TIME_RE.match(text)
    if not match:
        day = parse_date(text)
        return dt.datetime(day.year, day.month, day.day) if day else None
    day = make_date(int(match["year"]), int(match["month"]), int(match["day"]))
    if day is None:
        return None
    if match["hour"] == "24" and match["minute"] == "00" and match["second"] == "00":
        # 24:00:00 is the midnight that ends the day (XML Schema dateTime).
        if match["fraction"] and int(match["fraction"][1:] or 0):
            return None
        tz = zone(match["zone"])
        if tz is False:
            return None
        return dt.datetime.combine(day, dt.time(tzinfo=tz)) + dt.timedelta(days=1)  # type: ignore[arg-type]
    clock = _time_of(match)
    if clock is None:
        return None
    return dt.datetime.combine(day, clock)


def parse_duration(text: str) -> dt.timedelta | YearsMonths | None:
    match = DURATION_RE.match(text)
    if not match or text.endswith("T") or text in ("P", "-P"):
        return None
    sign = -1 if match["sign"] else 1
    years, months = match["years"], match["months"]
    clock = [match[k] for k in ("days", "hours", "minutes", "seconds")]
    if (years or months) and any(clock):
        # XML Schema allows mixing, FEEL has no such value: keep the larger units' total
        # only when the rest is zero, else the duration has no FEEL type.
        if any(Decimal(c) for c in clock if c):
            return None
        clock = [None] * 4
    if years or months:
        return YearsMonths(sign * (int(years or 0) * 12 + int(months or 0)))
    days, hours, minutes, seconds = (Decimal(c or 0) for c in clock)
    try:
        return sign * dt.timedelta(
            days=int(days), hours=int(hours), minutes=int(minutes), seconds=float(seconds)
        )
    except OverflowError:
        return None


def parse_temporal(text: str) -> Any:
    """An ``@"..."`` literal: whichever of the four kinds the text is; None otherwise."""
    if text.lstrip("-").startswith("P"):
        return parse_duration(text)
    if DATE_TIME_RE.match(text):
        return parse_date_time(text)
    if DATE_RE.match(text):
        return parse_date(text)
    return parse_time(text)


# --- printing ----------------------------------------------------------------------------


def _zone_text(tz: dt.tzinfo | None, at: dt.datetime | None) -> str:
    if tz is None:
        return ""
    if isinstance(tz, ZoneInfo):
        return f"@{tz.key}"
    offset = tz.utcoffset(at)
    if offset is None:
        return ""
    if not offset:
        return "Z"
    sign = "-" if offset < dt.timedelta(0) else "+"
    seconds = int(abs(offset).total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02}:{minutes:02}" + (f":{secs:02}" if secs else "")


def format_time(value: dt.time) -> str:
    text = f"{value.hour:02}:{value.minute:02}:{value.second:02}"
    if value.microsecond:
        text += f".{value.microsecond:06}".rstrip("0")
    return text + _zone_text(value.tzinfo, None)


def format_date(value: dt.date) -> str:
    year = f"{value.year:04}"
    return f"{year}-{value.month:02}-{value.day:02}"


def format_date_time(value: dt.datetime) -> str:
    clock = format_time(value.timetz().replace(tzinfo=None))
    return f"{format_date(value)}T{clock}{_zone_text(value.tzinfo, value)}"


def format_duration(value: dt.timedelta) -> str:
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    days, seconds, micro = value.days, value.seconds, value.microseconds
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{sign}P" + (f"{days}D" if days else "")
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if secs or micro:
        clock += f"{secs}" + (f".{micro:06}".rstrip("0") if micro else "") + "S"
    if clock:
        text += "T" + clock
    return text if (days or clock) else "PT0S"


# --- arithmetic --------------------------------------------------------------------------


def add_months(value: dt.date, months: int) -> dt.date | None:
    """A date or date-time moved by whole months; a day past the month's end is clamped."""
    total = value.year * 12 + (value.month - 1) + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        return None
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def months_between(a: dt.date, b: dt.date) -> YearsMonths:
    """Whole months from ``a`` to ``b`` (``years and months duration(from, to)``)."""
    # Only the dates count: a time of day never takes a month away (DMN 1.5 §10.3.4.2).
    months = (b.year - a.year) * 12 + (b.month - a.month)
    if months > 0 and b.day < a.day:
        months -= 1
    elif months < 0 and b.day > a.day:
        months += 1
    return YearsMonths(months)


def duration_seconds(value: dt.timedelta) -> Decimal:
    micro = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    return DECIMAL.divide(Decimal(micro), Decimal(1_000_000))


def seconds_duration(seconds: Decimal) -> dt.timedelta | None:
    """Seconds (a FEEL number) as a days and time duration, to the microsecond."""
    try:
        micro = int(DECIMAL.multiply(seconds, Decimal(1_000_000)).to_integral_value())
        return dt.timedelta(microseconds=micro)
    except (OverflowError, ArithmeticError):
        return None
