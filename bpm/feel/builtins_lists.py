"""FEEL builtins: numeric and list functions (DMN 1.5 §10.3.4.5-7)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from decimal import (
    ROUND_CEILING,
    ROUND_DOWN,
    ROUND_FLOOR,
    ROUND_HALF_DOWN,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    ROUND_UP,
    Decimal,
)
from typing import Any

from bpm.feel.library import builtin, integer, items_of, number, whole
from bpm.feel.runtime import Run
from bpm.feel.values import DECIMAL, Function, compare, equal

# --- numbers -------------------------------------------------------------------------------


def _scaled(value: Any, scale: Any, rounding: str) -> Decimal | None:
    places = whole(scale)
    if places is None or not -6111 <= places <= 6176:
        return None
    n = number(value)
    exponent = n.as_tuple().exponent
    if isinstance(exponent, int) and exponent >= -places:
        return n  # already within the scale: nothing to round
    return n.quantize(Decimal(1).scaleb(-places), rounding=rounding, context=DECIMAL)


@builtin("decimal", "n, scale")
def _decimal(n: Any, scale: Any) -> Decimal | None:
    return _scaled(n, scale, ROUND_HALF_EVEN)


@builtin("floor", "n, scale?")
def _floor(n: Any, scale: Any = Decimal(0)) -> Decimal | None:
    return _scaled(n, scale, ROUND_FLOOR)


@builtin("ceiling", "n, scale?")
def _ceiling(n: Any, scale: Any = Decimal(0)) -> Decimal | None:
    return _scaled(n, scale, ROUND_CEILING)


@builtin("round up", "n, scale?")
def _round_up(n: Any, scale: Any = Decimal(0)) -> Decimal | None:
    return _scaled(n, scale, ROUND_UP)


@builtin("round down", "n, scale?")
def _round_down(n: Any, scale: Any = Decimal(0)) -> Decimal | None:
    return _scaled(n, scale, ROUND_DOWN)


@builtin("round half up", "n, scale?")
def _round_half_up(n: Any, scale: Any = Decimal(0)) -> Decimal | None:
    return _scaled(n, scale, ROUND_HALF_UP)


@builtin("round half down", "n, scale?")
def _round_half_down(n: Any, scale: Any = Decimal(0)) -> Decimal | None:
    return _scaled(n, scale, ROUND_HALF_DOWN)


@builtin("abs", "n")
def _abs(n: Any) -> Any:
    if isinstance(n, Decimal):
        return abs(n)
    from_duration = getattr(n, "months", None)
    if from_duration is not None:
        return type(n)(abs(from_duration))
    if hasattr(n, "total_seconds"):
        return abs(n)
    return None


@builtin("modulo", "dividend, divisor")
def _modulo(dividend: Any, divisor: Any) -> Decimal | None:
    a, b = number(dividend), number(divisor)
    if b == 0:
        return None
    quotient = DECIMAL.divide(a, b).to_integral_value(rounding=ROUND_FLOOR)
    return DECIMAL.subtract(a, DECIMAL.multiply(b, quotient))


@builtin("sqrt", "number")
def _sqrt(n: Any) -> Decimal | None:
    value = number(n)
    return None if value < 0 else DECIMAL.sqrt(value)


@builtin("log", "number")
def _log(n: Any) -> Decimal | None:
    value = number(n)
    return None if value <= 0 else DECIMAL.ln(value)


@builtin("exp", "number")
def _exp(n: Any) -> Decimal:
    return DECIMAL.exp(number(n))


@builtin("odd", "number")
def _odd(n: Any) -> bool | None:
    value = integer(number(n))
    return None if value is None else value % 2 == 1


@builtin("even", "number")
def _even(n: Any) -> bool | None:
    value = integer(number(n))
    return None if value is None else value % 2 == 0


# --- list aggregates -----------------------------------------------------------------------


def _numbers(args: tuple[Any, ...]) -> list[Decimal] | None:
    items = items_of(args)
    if items is None or not all(isinstance(i, Decimal) for i in items):
        return None
    return items


@builtin("list contains", "list, element")
def _list_contains(items: Any, element: Any) -> bool | None:
    if not isinstance(items, list):
        return None
    return any(equal(i, element) is True for i in items)


@builtin("count", "list", variadic=True)
def _count(*args: Any) -> Decimal | None:
    items = items_of(args)
    return None if items is None else Decimal(len(items))


def _extreme(args: tuple[Any, ...], sign: int) -> Any:
    items = items_of(args)
    if not items:
        return None
    best = items[0]
    for item in items[1:]:
        order = compare(item, best)
        if order is None:
            return None
        if order == sign:
            best = item
    if len(items) == 1 and compare(best, best) is None:
        return None
    return best


@builtin("min", "list", variadic=True)
def _min(*args: Any) -> Any:
    return _extreme(args, -1)


@builtin("max", "list", variadic=True)
def _max(*args: Any) -> Any:
    return _extreme(args, 1)


@builtin("sum", "list", variadic=True)
def _sum(*args: Any) -> Decimal | None:
    items = _numbers(args)
    if not items:
        return None
    total = Decimal(0)
    for item in items:
        total = DECIMAL.add(total, item)
    return total


@builtin("product", "list", variadic=True)
def _product(*args: Any) -> Decimal | None:
    items = _numbers(args)
    if not items:
        return None
    total = Decimal(1)
    for item in items:
        total = DECIMAL.multiply(total, item)
    return total


@builtin("mean", "list", variadic=True)
def _mean(*args: Any) -> Decimal | None:
    items = _numbers(args)
    if not items:
        return None
    return DECIMAL.divide(_sum(*args), Decimal(len(items)))


@builtin("median", "list", variadic=True)
def _median(*args: Any) -> Decimal | None:
    items = _numbers(args)
    if not items:
        return None
    ordered = sorted(items)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return DECIMAL.divide(DECIMAL.add(ordered[middle - 1], ordered[middle]), Decimal(2))


@builtin("stddev", "list", variadic=True)
def _stddev(*args: Any) -> Decimal | None:
    items = _numbers(args)
    if not items or len(items) < 2:
        return None
    mean = DECIMAL.divide(sum(items, Decimal(0)), Decimal(len(items)))
    squares = sum((DECIMAL.power(DECIMAL.subtract(i, mean), 2) for i in items), Decimal(0))
    return DECIMAL.sqrt(DECIMAL.divide(squares, Decimal(len(items) - 1)))


@builtin("mode", "list", variadic=True)
def _mode(*args: Any) -> list[Decimal] | None:
    items = _numbers(args)
    if items is None:
        return None
    counts: dict[Decimal, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    if not counts:
        return []
    most = max(counts.values())
    return sorted(k for k, v in counts.items() if v == most)


def _booleans(args: tuple[Any, ...]) -> list[Any] | None:
    items = items_of(args)
    if items is None:
        return None
    return items


@builtin("all", "list", variadic=True)
def _all(*args: Any) -> bool | None:
    items = _booleans(args)
    if items is None:
        return None
    if any(i is False for i in items):
        return False
    return True if all(i is True for i in items) else None


@builtin("any", "list", variadic=True)
def _any(*args: Any) -> bool | None:
    items = _booleans(args)
    if items is None:
        return None
    if any(i is True for i in items):
        return True
    return False if all(i is False for i in items) else None


# --- list construction ---------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    """A list argument; another value is its singleton list (DMN 1.5 §10.3.2.9.4)."""
    if isinstance(value, list):
        return value
    if value is None:
        raise TypeError("null is not a list")
    return [value]


def _position(items: list[Any], position: Any) -> int:
    """A 1-based (negative: from the end) position as a Python index, else ValueError."""
    n = whole(position)
    if n is None or n == 0 or abs(n) > len(items):
        raise ValueError("position out of range")
    return n - 1 if n > 0 else len(items) + n


@builtin("sublist", "list, start position, length?")
def _sublist(items: Any, start: Any, length: Any = None) -> list[Any]:
    seq = _list(items)
    begin = _position(seq, start)
    if length is None:
        return seq[begin:]
    count = whole(length)
    if count is None or count < 0 or begin + count > len(seq):
        raise ValueError("length out of range")
    return seq[begin : begin + count]


@builtin("append", "list, item", needs_run=True, variadic=True)
def _append(run: Run, items: Any, *new: Any) -> list[Any]:
    result = [*_list(items), *new]
    run.check_items(len(result))
    return result


@builtin("concatenate", "list", needs_run=True, variadic=True)
def _concatenate(run: Run, *lists: Any) -> list[Any]:
    result: list[Any] = []
    for part in lists:
        result.extend(_list(part))
        run.check_items(len(result))
    return result


@builtin("insert before", "list, position, newItem")
def _insert_before(items: Any, position: Any, new: Any) -> list[Any]:
    items = _list(items)
    at = _position(items, position)
    return [*items[:at], new, *items[at:]]


@builtin("remove", "list, position")
def _remove(items: Any, position: Any) -> list[Any]:
    items = _list(items)
    at = _position(items, position)
    return [*items[:at], *items[at + 1 :]]


@builtin("reverse", "list")
def _reverse(items: Any) -> list[Any]:
    return list(reversed(_list(items)))


@builtin("index of", "list, match")
def _index_of(items: Any, match: Any) -> list[Decimal]:
    return [Decimal(i + 1) for i, item in enumerate(_list(items)) if equal(item, match) is True]


def _distinct(items: list[Any]) -> list[Any]:
    result: list[Any] = []
    for item in items:
        if not any(equal(item, seen) is True for seen in result):
            result.append(item)
    return result


@builtin("union", "list", needs_run=True, variadic=True)
def _union(run: Run, *lists: Any) -> list[Any]:
    return _distinct(_concatenate(run, *lists))


@builtin("distinct values", "list")
def _distinct_values(items: Any) -> list[Any]:
    return _distinct(_list(items))


@builtin("flatten", "list", needs_run=True)
def _flatten(run: Run, items: Any) -> list[Any]:
    result: list[Any] = []

    def walk(value: list[Any]) -> None:
        for item in value:
            if isinstance(item, list):
                walk(item)
            else:
                result.append(item)
                run.check_items(len(result))

    walk(_list(items))
    return result


@builtin("sort", "list, precedes?", needs_run=True)
def _sort(run: Run, items: Any, precedes: Any = None) -> list[Any] | None:
    items = _list(items)
    if precedes is None:
        if any(compare(items[0], i) is None for i in items) if items else False:
            return None
        return sorted(items, key=functools.cmp_to_key(lambda a, b: compare(a, b) or 0))
    if not isinstance(precedes, Function):
        return None
    order: Callable[[Any, Any], int] = lambda a, b: (  # noqa: E731
        -1 if precedes.call(run, [a, b]) is True else 1
    )
    return sorted(items, key=functools.cmp_to_key(order))


@builtin("list replace", "list, position, newItem", "list, match, newItem", needs_run=True)
def _list_replace(run: Run, items: Any, where: Any, new: Any) -> list[Any] | None:
    items = _list(items)
    if isinstance(where, Function):
        if len(where.params) != 2 and not where.variadic:
            return None
        return [new if where.call(run, [item, new]) is True else item for item in items]
    at = _position(items, where)
    return [*items[:at], new, *items[at + 1 :]]
