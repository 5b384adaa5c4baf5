"""Camunda typed variables <-> the engine's plain JSON values (CAMUNDA_REST.md).

Inbound ``{"value": v, "type": T, "valueInfo": {...}}``: ``T`` matches case-insensitively and
may be missing (then the JSON value is kept as is). Outbound every value carries a
capitalised ``type`` and a ``valueInfo``. Internally all variables are plain JSON; a type
that JSON does not tell (``Date``, ``Long``, ``Json``...) comes in wrapped in
:class:`~bpm.runtime.variables.Typed` and is kept by the instance, so it goes out again as
it came in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from bpm.api.errors import ApiError, bad_request
from bpm.runtime.variable_types import Typed

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


def _cannot(name: str, value: Any, type_name: str) -> ApiError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return bad_request(f"Cannot convert value {shown} of variable '{name}' to type {type_name}")


def _json_text(name: str, value: Any, type_name: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"variable '{name}' of type {type_name} is not valid JSON") from None
    return value


def _one(name: str, entry: Any) -> Any:
    if not isinstance(entry, Mapping):
        raise bad_request(
            f'variable \'{name}\' must be an object like {{"value": ..., "type": ...}}'
        )
    value = entry.get("value")
    type_ = entry.get("type")
    if type_ is None:
        return value
    if not isinstance(type_, str):
        raise bad_request(f"the type of variable '{name}' must be a string")
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
            raise bad_request(
                f"variable '{name}': serialization format {fmt!r} is not supported; "
                "send Object values as application/json"
            )
        return Typed(_json_text(name, value, type_), "Object")
    raise bad_request(f"variable '{name}': unsupported value type '{type_}'")


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


def _has_nul(value: Any) -> bool:
    if isinstance(value, Typed):
        return _has_nul(value.value)
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def from_camunda(variables: Any, where: str = "variables") -> dict[str, Any] | None:
    """Plain JSON values of a Camunda variables map (None stays None)."""
    if variables is None:
        return None
    if not isinstance(variables, Mapping):
        raise bad_request(f"{where} must be a JSON object of name -> typed value")
    out = {str(k): _one(str(k), v) for k, v in variables.items()}
    if _has_nul(out):
        raise bad_request(f"{where} contain a NUL character (\\u0000), which cannot be stored")
    return out


def typed(value: Any, deserialize: bool = True, type_name: str | None = None) -> dict[str, Any]:
    """One plain value as a Camunda typed value.

    ``type_name``: the type the value was written with (the instance's ``variable_types``),
    when JSON does not tell it: ``Date``, ``Long``, ``Short``, ``Json``, ``Object``,
    ``Bytes``, ``Xml``. Untyped objects and arrays are ``Object`` with the native value when
    the caller asked for deserialized values, else ``Json`` with the value as a JSON string.
    """
    kept = _as_written(value, deserialize, type_name) if type_name else None
    if kept is not None:
        return kept
    if value is None:
        return {"type": "Null", "value": None, "valueInfo": {}}
    if isinstance(value, bool):
        return {"type": "Boolean", "value": value, "valueInfo": {}}
    if isinstance(value, int):
        kind = "Integer" if INT32[0] <= value <= INT32[1] else "Long"
        return {"type": kind, "value": value, "valueInfo": {}}
    if isinstance(value, float):
        return {"type": "Double", "value": value, "valueInfo": {}}
    if isinstance(value, str):
        return {"type": "String", "value": value, "valueInfo": {}}
    if not deserialize:  # a JSON string, typed Json: the JS client parses those itself
        return {"type": "Json", "value": json.dumps(value, separators=(",", ":")), "valueInfo": {}}
    java = "java.util.ArrayList" if isinstance(value, list) else "java.util.LinkedHashMap"
    return {
        "type": "Object",
        "value": value,
        "valueInfo": {"objectTypeName": java, "serializationDataFormat": JSON_FORMAT},
    }


def _as_written(value: Any, deserialize: bool, type_name: str) -> dict[str, Any] | None:
    """The typed value in the type it was written with, if the value still fits it."""
    if value is None:
        return None
    if type_name in ("Date", "Bytes", "Xml") and isinstance(value, str):
        return {"type": type_name, "value": value, "valueInfo": {}}
    if type_name in ("Long", "Short") and isinstance(value, int) and not isinstance(value, bool):
        return {"type": type_name, "value": value, "valueInfo": {}}
    if type_name == "Json":
        text = json.dumps(value, separators=(",", ":"))
        return {"type": "Json", "value": text, "valueInfo": {}}
    if type_name == "Object" and isinstance(value, (dict, list)):
        java = "java.util.ArrayList" if isinstance(value, list) else "java.util.LinkedHashMap"
        shown = value if deserialize else json.dumps(value, separators=(",", ":"))
        info = {"objectTypeName": java, "serializationDataFormat": JSON_FORMAT}
        return {"type": "Object", "value": shown, "valueInfo": info}
    return None


def to_camunda(
    values: Mapping[str, Any] | None,
    deserialize: bool = True,
    types: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Plain variables as a Camunda variables map (``types``: the instance's
    ``variable_types``)."""
    kinds = types or {}
    return {k: typed(v, deserialize, kinds.get(k)) for k, v in (values or {}).items()}


def one_from_camunda(name: str, entry: Any) -> Any:
    """One typed value (``PUT .../variables/{name}``) as the engine stores it."""
    out = from_camunda({name: entry})
    assert out is not None
    return out[name]
