"""FEEL values in Python, and the three relations every operator is built on.

The mapping is fixed (issue 24): number ``Decimal``, string ``str``, boolean ``bool``, date
``datetime.date``, time ``datetime.time``, date and time ``datetime.datetime``, days and time
duration ``datetime.timedelta``, years and months duration :class:`YearsMonths`, list
``list``, context ``dict``, null ``None``; ranges are :class:`Range` and functions
:class:`Function`. ``datetime`` is a subclass of ``date`` in Python, so every test here asks
for ``datetime`` first.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

# IEEE 754 decimal128: 34 significant digits, half-even, the exponent range of the format.
# The traps turn a result FEEL calls null (1/0, an overflow) into an exception we catch.
DECIMAL = decimal.Context(
    prec=34,
    rounding=decimal.ROUND_HALF_EVEN,
    Emax=6144,
    Emin=-6143,
    traps=[decimal.DivisionByZero, decimal.InvalidOperation, decimal.Overflow],
)


@dataclass(frozen=True, order=True)
class YearsMonths:
    """A FEEL years and months duration: a whole, signed number of months."""

    months: int

    @property
    def years(self) -> int:
        return int(self.months / 12)

    def __str__(self) -> str:
        sign = "-" if self.months < 0 else ""
        years, months = divmod(abs(self.months), 12)
        if years and months:
            return f"{sign}P{years}Y{months}M"
        if years:
            return f"{sign}P{years}Y"
        return f"{sign}P{months}M"


class _Unbounded:
    """The open end of a range written as a unary test (``< 10``): no start at all, which
    is not the same as a start that is null (``(null..10)`` contains nothing)."""

    _instance: _Unbounded | None = None

    def __new__(cls) -> _Unbounded:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNBOUNDED"


UNBOUNDED: Any = _Unbounded()


@dataclass(frozen=True)
class Range:
    """A FEEL range (interval). An end is a value, null, or :data:`UNBOUNDED` (``< 10``)."""

    start: Any
    end: Any
    start_included: bool
    end_included: bool

    def contains(self, value: Any) -> bool | None:
        """Whether ``value`` lies in the range; None when it cannot be compared."""
        if value is None or self.start is None or self.end is None:
            return None
        if self.start is not UNBOUNDED:
            low = compare(self.start, value)
            if low is None:
                return None
            if low > 0 or (low == 0 and not self.start_included):
                return False
        if self.end is not UNBOUNDED:
            high = compare(value, self.end)
            if high is None:
                return None
            if high > 0 or (high == 0 and not self.end_included):
                return False
        return True


@dataclass(frozen=True)
class TestValue:
    """``(= x)`` or ``(!= x)`` used as a value: a test, not a range (``(=10) = [10..10]``
    is false)."""

    op: str
    value: Any


@dataclass(frozen=True)
class Function:
    """A FEEL function value: a user function, a builtin, or a DMN invocable.

    ``call(run, args)`` takes the evaluation's budget (a ``bpm.feel.runtime.Run``) and
    positional arguments; a call by name is first mapped onto positions by ``named``
    (default: by ``params``), which gives None when the names do not fit.
    """

    name: str
    params: tuple[str, ...]
    call: Callable[[Any, list[Any]], Any] = field(compare=False)
    param_types: tuple[Any, ...] | None = field(default=None, compare=False)
    variadic: bool = False
    result_type: Any = field(default=None, compare=False)
    named: Callable[[dict[str, Any]], list[Any] | None] | None = field(default=None, compare=False)

    def by_name(self, args: dict[str, Any]) -> list[Any] | None:
        """Named arguments as positional ones; None when a name is unknown."""
        if self.named is not None:
            return self.named(args)
        if any(name not in self.params for name in args):
            return None
        return [args.get(name) for name in self.params]

    def __repr__(self) -> str:
        return f"function {self.name}({', '.join(self.params)})"


def is_number(value: Any) -> bool:
    return isinstance(value, Decimal)


def kind(value: Any) -> str:
    """The FEEL type name of a value (``date and time``, ``list``, ...)."""
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Decimal):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dt.datetime):
        return "date and time"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, dt.time):
        return "time"
    if isinstance(value, dt.timedelta):
        return "days and time duration"
    if isinstance(value, YearsMonths):
        return "years and months duration"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "context"
    if isinstance(value, Range):
        return "range"
    if isinstance(value, Function):
        return "function"
    return type(value).__name__


# --- time values -----------------------------------------------------------------------

_EPOCH = dt.date(1970, 1, 1)


def time_offset(value: dt.time) -> dt.timedelta | None:
    """A time's UTC offset; a named zone is read on 1970-01-01 (a time has no date)."""
    if value.tzinfo is None:
        return None
    offset = value.tzinfo.utcoffset(dt.datetime.combine(_EPOCH, value.replace(tzinfo=None)))
    return offset


def time_seconds(value: dt.time) -> tuple[Decimal, bool]:
    """Seconds since midnight UTC (or local when no zone), and whether a zone was given."""
    micro = (value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000
    total = Decimal(micro + value.microsecond) / Decimal(1_000_000)
    offset = time_offset(value)
    if offset is None:
        return total, False
    return (total - Decimal(int(offset.total_seconds()))) % 86400, True


def instant(value: dt.datetime) -> dt.datetime:
    """A date and time as a comparable instant; a local one is read as UTC (DMN 10.3.2.3.5)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


# --- the relations ---------------------------------------------------------------------


def equal(a: Any, b: Any) -> bool | None:
    """FEEL ``=``: null equals only null; values of different types are not comparable."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else None
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        return _all_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        return _all_equal([a[k] for k in a], [b[k] for k in a])
    if isinstance(a, Range) and isinstance(b, Range):
        return (
            a.start_included == b.start_included
            and a.end_included == b.end_included
            and equal(a.start, b.start) is not False
            and equal(a.end, b.end) is not False
        )
    if isinstance(a, Function | TestValue) or isinstance(b, Function | TestValue):
        return a is b or a == b
    order = compare(a, b)
    if order is None:
        return None
    return order == 0


def _all_equal(a: Sequence[Any], b: Sequence[Any]) -> bool | None:
    for x, y in zip(a, b, strict=True):
        same = equal(x, y)
        if same is not True:
            return same
    return True


def compare(a: Any, b: Any) -> int | None:
    """-1, 0 or 1 for two comparable FEEL values of one type; None otherwise."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return None
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return (a > b) - (a < b)
    if isinstance(a, str) and isinstance(b, str):
        return (a > b) - (a < b)
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        x, y = instant(a), instant(b)
        return (x > y) - (x < y)
    if isinstance(a, dt.datetime) or isinstance(b, dt.datetime):
        return None
    if isinstance(a, dt.date) and isinstance(b, dt.date):
        return (a > b) - (a < b)
    if isinstance(a, dt.time) and isinstance(b, dt.time):
        (p, zp), (q, zq) = time_seconds(a), time_seconds(b)
        if zp != zq:
            return None
        return (p > q) - (p < q)
    if isinstance(a, dt.timedelta) and isinstance(b, dt.timedelta):
        return (a > b) - (a < b)
    if isinstance(a, YearsMonths) and isinstance(b, YearsMonths):
        return (a.months > b.months) - (a.months < b.months)
    return None


def to_feel(value: Any) -> Any:
    """A Python value given from outside (variables, test data) as a FEEL value.

    ``int`` and ``float`` become ``Decimal``; tuples become lists; mappings become dicts
    with string keys. Values FEEL already knows are returned unchanged.
    """
    if value is None or isinstance(value, bool | str | Decimal):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return DECIMAL.create_decimal(repr(value))
    if isinstance(value, list | tuple):
        return [to_feel(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_feel(v) for k, v in value.items()}
    return value
