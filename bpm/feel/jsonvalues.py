"""FEEL values as JSON, for process variables and the decision history.

Numbers become ``int`` when whole (within 64 bits) and ``float`` otherwise (JSON has no
decimals: a decision's 34-digit result is rounded to a double here); dates, times and
durations become their ISO 8601 text; ranges and functions their FEEL text.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from bpm.feel import temporal
from bpm.feel.builtins_text import to_string
from bpm.feel.values import YearsMonths

_INT64 = 2**63


def to_json(value: Any) -> Any:
    """A FEEL value as plain JSON (see the module docstring)."""
    if value is None or isinstance(value, bool | str | int | float):
        return value
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value() and abs(value) < _INT64:
            return int(value)
        return float(value)
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, dt.datetime):
        return temporal.format_date_time(value)
    if isinstance(value, dt.date):
        return temporal.format_date(value)
    if isinstance(value, dt.time):
        return temporal.format_time(value)
    if isinstance(value, dt.timedelta):
        return temporal.format_duration(value)
    if isinstance(value, YearsMonths):
        return str(value)
    return to_string(value)
