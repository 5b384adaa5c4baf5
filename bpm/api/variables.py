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
from typing import Any

from bpm.api.errors import bad_request
from bpm.errors import VariableError
from bpm.runtime import typed_values
from bpm.runtime.variable_types import Typed

INT16, INT32, INT64 = typed_values.INT16, typed_values.INT32, typed_values.INT64
JSON_FORMAT = typed_values.JSON_FORMAT
format_date = typed_values.format_date


def _one(name: str, entry: Any) -> Any:
    try:
        return typed_values.from_typed(name, entry)
    except VariableError as exc:
        raise bad_request(str(exc)) from None


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
