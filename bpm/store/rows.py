"""Records to rows and back, for every record type, from the table definitions.

A record's field names are its table's column names (:mod:`bpm.runtime.records`), so one
mapping serves every table: enums are stored as their values, tuples as JSON lists.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from enum import StrEnum
from functools import cache
from typing import Any, TypeVar

from sqlalchemy import Table

from bpm.runtime.records import ProcessDefinition
from bpm.store import tables as t

R = TypeVar("R")

TABLES: dict[str, Table] = {table.name: table for table in t.metadata.sorted_tables}


def table_of(cls: type[Any]) -> Table:
    """The table a record type is stored in."""
    return TABLES[cls.TABLE]


def _converter(hint: Any) -> Callable[[Any], Any] | None:
    """How a column value becomes the field's value (None: as it is)."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        conv = _converter(inner[0]) if len(inner) == 1 else None
        return None if conv is None else (lambda v: None if v is None else conv(v))
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return hint
    if origin is tuple:
        return lambda v: tuple(v or ())
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        return lambda v: dict(v or {})
    return None


@cache
def _readers(cls: Any) -> tuple[tuple[str, Callable[[Any], Any] | None], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls))


@cache
def _columns(cls: Any) -> tuple[str, ...]:
    return tuple(c.name for c in table_of(cls).columns)


def record_of(cls: type[R], row: Mapping[Any, Any], **extra: Any) -> R:
    """A record of ``cls`` from a row (a mapping by column name); ``extra`` sets fields
    that are not columns."""
    values: dict[str, Any] = {}
    for name, convert in _readers(cls):  # type: ignore[arg-type]
        if name in row:
            value = row[name]
            values[name] = convert(value) if convert is not None else value
    values.update(extra)
    return cls(**values)


def values_of(record: Any) -> dict[str, Any]:
    """The column values of a record, ready for an INSERT or UPDATE of its table."""
    out: dict[str, Any] = {}
    for name in _columns(type(record)):  # type: ignore[arg-type]
        value = getattr(record, name)
        if isinstance(value, StrEnum):
            value = value.value
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


def definition_from_row(r: Any) -> ProcessDefinition:
    """A :class:`ProcessDefinition` from a row of ``process_definition``."""
    return record_of(ProcessDefinition, r._mapping)
