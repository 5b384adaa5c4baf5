"""The FEEL semantics compiled code shares: relations, tests, paths, calls and iteration."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from bpm.feel import ops, types
from bpm.feel.runtime import MISSING, Env, Run
from bpm.feel.values import Function, Range, TestValue, compare, equal


def and3(a: Any, b: Any) -> bool | None:
    if a is False or b is False:
        return False
    return True if a is True and b is True else None


def relation(op: str, a: Any, b: Any) -> bool | None:
    """``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` with FEEL's null and type rules."""
    if op == "EQ":
        return equal(a, b)
    if op == "NE":
        same = equal(a, b)
        return None if same is None else not same
    order = compare(a, b)
    if order is None:
        return None
    if op == "LT":
        return order < 0
    if op == "LE":
        return order <= 0
    if op == "GT":
        return order > 0
    return order >= 0


def test_value(value: Any, target: Any) -> bool | None:
    """Whether ``value`` matches a test expression's value (DMN 1.5 §10.3.2.9.5)."""
    if isinstance(target, Range):
        return target.contains(value)
    if isinstance(target, TestValue):
        return relation(target.op, value, target.value)
    if isinstance(target, list):
        if equal(value, target) is True:
            return True
        return any(
            (t.contains(value) if isinstance(t, Range) else equal(value, t)) is True for t in target
        )
    if isinstance(target, bool) and not isinstance(value, bool):
        return target
    if isinstance(target, Function):
        result = target.call(Run(), [value])
        return result if isinstance(result, bool) else None
    return equal(value, target)


def select(value: Any, name: str) -> Any:
    """``value.name``: a context entry, a property, or the path mapped over a list."""
    if isinstance(value, dict):
        return value.get(name)
    if isinstance(value, list):
        return [select(v, name) for v in value]
    return ops.prop(value, name)


def index(items: list[Any], position: Decimal) -> Any:
    """``list[n]``: 1-based, negative from the end, null out of range."""
    if position != position.to_integral_value():
        return None
    n = int(position)
    if n > 0 and n <= len(items):
        return items[n - 1]
    if n < 0 and -n <= len(items):
        return items[n]
    return None


def invoke(run: Run, fn: Any, args: list[Any] | dict[str, Any]) -> Any:
    """Call a FEEL function value; anything else, or arguments that do not fit, give null."""
    if not isinstance(fn, Function):
        return None
    if isinstance(args, dict):
        positional = fn.by_name(args)
        if positional is None:
            return None
        return fn.call(run, positional)
    return fn.call(run, args)


def item_scope(env: Env, item: Any) -> Env:
    scope = env.child({"item": item})
    if isinstance(item, dict):
        return scope.child(item)
    return scope


def iterable(run: Run, value: Any) -> Iterable[Any] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return value
    if isinstance(value, Range):
        low = value.start
        high = value.end
        if not value.start_included:
            low = ops.add(low, Decimal(1)) if isinstance(low, Decimal) else None
        if not value.end_included:
            high = ops.sub(high, Decimal(1)) if isinstance(high, Decimal) else None
        return steps(run, low, high)
    return [value]


def steps(run: Run, low: Any, high: Any) -> Iterable[Any] | None:
    """``a..b`` in ``for``: whole numbers or days, up or down, both ends included. Lazy:
    the loop body spends a step per item, so a huge range costs only what is used."""
    if isinstance(low, Decimal) and isinstance(high, Decimal):
        if low != low.to_integral_value() or high != high.to_integral_value():
            return None
        a, b = int(low), int(high)
        step = 1 if b >= a else -1
        return (Decimal(i) for i in range(a, b + step, step))
    if isinstance(low, dt.date) and isinstance(high, dt.date):
        if isinstance(low, dt.datetime) or isinstance(high, dt.datetime):
            return None
        days = (high - low).days
        step = 1 if days >= 0 else -1
        return (low + dt.timedelta(days=i) for i in range(0, days + step, step))
    return None


def conform(value: Any, kind: types.FeelType) -> Any:
    """An argument for a typed parameter, with DMN's singleton-list conversions."""
    if value is None or kind.accepts(value):
        return value
    if isinstance(value, list) and len(value) == 1 and kind.accepts(value[0]):
        return value[0]
    if isinstance(kind, types.ListOf) and kind.accepts([value]):
        return [value]
    return MISSING
