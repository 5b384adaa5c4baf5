"""FEEL types: ``instance of``, typed function parameters, and DMN item definitions.

A type answers one question, ``accepts(value)``. Null is an instance of no type but
``Null`` (DMN 1.5 §10.3.2.9.1), though a context entry or list item may be null.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bpm.feel.values import Function, Range, YearsMonths


class FeelType:
    """Base of every FEEL type."""

    name: str

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def instance(self, value: Any) -> bool:
        """``value instance of T``: the type's shape, without allowed-value constraints."""
        return self.accepts(value)

    def conforms_to(self, other: FeelType) -> bool:
        """Whether every value of this type is a value of ``other`` (for function types)."""
        if isinstance(other, Simple) and other.name == "Any":
            return True
        return self == other


def _is_date(v: Any) -> bool:
    return isinstance(v, dt.date) and not isinstance(v, dt.datetime)


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "Any": lambda v: v is not None,
    "Null": lambda v: v is None,
    "number": lambda v: isinstance(v, Decimal),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "date": _is_date,
    "time": lambda v: isinstance(v, dt.time),
    "date and time": lambda v: isinstance(v, dt.datetime),
    "days and time duration": lambda v: isinstance(v, dt.timedelta),
    "years and months duration": lambda v: isinstance(v, YearsMonths),
    "list": lambda v: isinstance(v, list),
    "context": lambda v: isinstance(v, dict),
    "range": lambda v: isinstance(v, Range),
    "function": lambda v: isinstance(v, Function),
}
# Names XML Schema and older DMN files use for the same types.
ALIASES = {
    "dateTime": "date and time",
    "duration": "days and time duration",
    "dayTimeDuration": "days and time duration",
    "yearMonthDuration": "years and months duration",
    "decimal": "number",
    "integer": "number",
    "int": "number",
    "long": "number",
    "double": "number",
    "float": "number",
}


@dataclass(frozen=True)
class Simple(FeelType):
    name: str

    def accepts(self, value: Any) -> bool:
        return _CHECKS[self.name](value)

    def conforms_to(self, other: FeelType) -> bool:
        if isinstance(other, Simple):
            return other.name in ("Any", self.name)
        return False


@dataclass(frozen=True)
class ListOf(FeelType):
    item: FeelType
    name: str = "list"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, list) and all(v is None or self.item.accepts(v) for v in value)

    def conforms_to(self, other: FeelType) -> bool:
        if isinstance(other, ListOf):
            return self.item.conforms_to(other.item)
        return super().conforms_to(other)


@dataclass(frozen=True)
class RangeOf(FeelType):
    item: FeelType
    name: str = "range"

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, Range):
            return False
        return all(v is None or self.item.accepts(v) for v in (value.start, value.end))


@dataclass(frozen=True)
class ContextOf(FeelType):
    fields: tuple[tuple[str, FeelType], ...]
    name: str = "context"

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        for key, kind in self.fields:
            if key not in value:
                return False
            if value[key] is not None and not kind.accepts(value[key]):
                return False
        return True

    def conforms_to(self, other: FeelType) -> bool:
        if isinstance(other, ContextOf):
            mine = dict(self.fields)
            return all(k in mine and mine[k].conforms_to(t) for k, t in other.fields)
        return super().conforms_to(other)


@dataclass(frozen=True)
class FunctionOf(FeelType):
    params: tuple[FeelType, ...]
    result: FeelType
    name: str = "function"

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, Function):
            return False
        if value.variadic:
            return True
        if len(value.params) != len(self.params):
            return False
        declared = value.param_types or (ANY,) * len(value.params)
        # Parameters are contravariant: the function must take every value we may pass.
        for mine, theirs in zip(self.params, declared, strict=False):
            if not mine.conforms_to(theirs):
                return False
        # A function whose result type is neither declared nor known from a literal body
        # may return what the type asks; it is checked when called, where it is used.
        if value.result_type is None:
            return True
        return bool(value.result_type.conforms_to(self.result))


@dataclass(frozen=True)
class Custom(FeelType):
    """A DMN item definition: a base type narrowed by allowed values or a structure."""

    name: str
    check: Callable[[Any], bool] = field(compare=False)
    base: FeelType | None = field(default=None, compare=False)
    shape: Callable[[Any], bool] | None = field(default=None, compare=False)

    def accepts(self, value: Any) -> bool:
        return value is not None and self.check(value)

    def instance(self, value: Any) -> bool:
        if self.shape is None:
            return self.accepts(value)
        return value is not None and self.shape(value)

    def conforms_to(self, other: FeelType) -> bool:
        if other == self or (isinstance(other, Simple) and other.name == "Any"):
            return True
        return self.base is not None and self.base.conforms_to(other)


ANY = Simple("Any")


def builtin(name: str) -> FeelType | None:
    """A builtin type by name (``number``, ``date and time``, ``dateTime``...); else None."""
    name = ALIASES.get(name, name)
    if name in _CHECKS:
        return Simple(name)
    return None


def of_value(value: Any) -> FeelType:
    """The most specific simple type of a value (function result typing)."""
    for name, check in _CHECKS.items():
        if name not in ("Any", "Null") and check(value):
            if name == "context" and isinstance(value, dict):
                return ContextOf(tuple((k, of_value(v)) for k, v in value.items()))
            return Simple(name)
    return ANY
