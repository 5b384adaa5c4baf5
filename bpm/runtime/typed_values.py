"""Camunda typed values (``{"value": 3, "type": "Integer"}``) as the engine stores them.

Shared by the REST API (:mod:`bpm.api.variables`) and the CLI (``bpm vars set ID
n:Integer=3``), so both type a value the same way. ``T`` matches case-insensitively; a
type JSON does not tell (``Date``, ``Long``, ``Json``...) comes back wrapped in
:class:`~bpm.runtime.variable_types.Typed`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from bpm.errors import VariableError
from bpm.runtime.variable_types import Typed

# The types from_typed knows, as the REST API spells them.
TYPE_NAMES = (
    "String", "Integer", "Short", "Long", "Double", "Boolean", "Date", "Json", "Object",
    "Bytes", "Xml", "Null",
)  # fmt: skip

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
INT16 = (-(2**15), 2**15 - 1)
JSON_FORMAT = "application/json"


def format_date(value: datetime | None) -> str | None:
    """Camunda's ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``, e.g. ``2026-11-29T10:00:00.000+0000``."""
    if value is None:
        return None
    v = value.astimezone(UTC)
    return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}+0000"


def _integer(name: str, value: Any, type_name: str, bounds: tuple[int, int]) -> int:
    if isinstance(value, bool):
        raise _cannot(name, value, type_name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise _cannot(name, value, type_name) from None
    if not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise _cannot(name, value, type_name)
    return value


def _cannot(name: str, value: Any, type_name: str) -> VariableError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return VariableError(f"Cannot convert value {shown} of variable '{name}' to type {type_name}")


def _json_text(name: str, value: Any, type_name: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise VariableError(
                f"variable '{name}' of type {type_name} is not valid JSON"
            ) from None
    return value


def from_typed(name: str, entry: Any) -> Any:
    """One Camunda typed value ``{"value": v, "type": T}`` as the engine stores it (a
    :class:`~bpm.runtime.variable_types.Typed` when JSON does not tell the type).
    :class:`~bpm.errors.VariableError` when the value does not fit the type."""
    if not isinstance(entry, Mapping):
        raise VariableError(
            f'variable \'{name}\' must be an object like {{"value": ..., "type": ...}}'
        )
    value = entry.get("value")
    type_ = entry.get("type")
    if type_ is None:
        return value
    if not isinstance(type_, str):
        raise VariableError(f"the type of variable '{name}' must be a string")
    kind = type_.lower()
    if value is None or kind == "null":
        return None
    if kind == "string":
        if not isinstance(value, str):
            raise _cannot(name, value, type_)
        return value
    if kind == "date":
        return Typed(_date(name, value), "Date")
    if kind in ("bytes", "xml"):
        if not isinstance(value, str):
            raise _cannot(name, value, type_)
        return Typed(value, "Bytes" if kind == "bytes" else "Xml")
    if kind == "integer":
        return _integer(name, value, "Integer", INT32)
    if kind == "short":
        return Typed(_integer(name, value, "Short", INT16), "Short")
    if kind == "long":
        return Typed(_integer(name, value, "Long", INT64), "Long")
    if kind == "double":
        if isinstance(value, bool):
            raise _cannot(name, value, type_)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise _cannot(name, value, type_) from None
        if (
            not isinstance(value, (int, float))
            or value != value
            or value in (float("inf"), float("-inf"))
        ):
            raise _cannot(name, value, type_)
        return float(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise _cannot(name, value, type_)
    if kind == "json":
        return Typed(_json_text(name, value, type_), "Json")
    if kind == "object":
        info = entry.get("valueInfo") or {}
        fmt = info.get("serializationDataFormat") if isinstance(info, Mapping) else None
        if fmt not in (None, JSON_FORMAT, "json"):
            raise VariableError(
                f"variable '{name}': serialization format {fmt!r} is not supported; "
                "send Object values as application/json"
            )
        return Typed(_json_text(name, value, type_), "Object")
    raise VariableError(f"variable '{name}': unsupported value type '{type_}'")


def _date(name: str, value: Any) -> str:
    """A Camunda date, normalised to ``yyyy-MM-dd'T'HH:mm:ss.SSS+0000``."""
    if not isinstance(value, str):
        raise _cannot(name, value, "Date")
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise _cannot(name, value, "Date") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    out = format_date(when)
    assert out is not None
    return out
