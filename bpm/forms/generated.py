"""Camunda's generated forms (``camunda:formData``): the values a form starts from, and the
checks a submitted form must pass (types, ``required``, ``readonly``, ``min``/``max``,
``minlength``/``maxlength``, enum values), as Camunda's form field validators do."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from bpm.errors import InvalidOperation
from bpm.model.nodes import FormFieldSpec

_VARIABLE = re.compile(r"^\$\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}$")


class FormInvalid(InvalidOperation):
    """A submitted form that fails a check; ``field`` names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"form field '{field}' {message}")
        self.field = field


def _default(spec: FormFieldSpec, variables: Mapping[str, Any]) -> Any:
    text = spec.default
    if text is None:
        return None
    found = _VARIABLE.match(text)
    if found:
        return variables.get(found.group(1))
    try:
        return _typed(spec, text)
    except FormInvalid:
        return text


def generated_values(
    fields: Sequence[FormFieldSpec], variables: Mapping[str, Any]
) -> dict[str, Any]:
    """The value each field shows: its variable's, else its default (``${var}`` read)."""
    return {f.id: variables[f.id] if f.id in variables else _default(f, variables) for f in fields}


def _typed(spec: FormFieldSpec, value: Any) -> Any:
    kind = spec.type.lower()
    if kind in ("long", "integer", "short"):
        if isinstance(value, bool):
            raise FormInvalid(spec.id, "must be a whole number")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,19}", value.strip()):
            return int(value)
        raise FormInvalid(spec.id, "must be a whole number")
    if kind == "double":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        raise FormInvalid(spec.id, "must be a number")
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise FormInvalid(spec.id, "must be true or false")
    if kind == "enum":
        allowed = [v for v, _ in spec.values]
        if value not in allowed:
            raise FormInvalid(spec.id, f"must be one of {', '.join(allowed)}")
        return value
    if not isinstance(value, str):
        raise FormInvalid(spec.id, "must be text")
    return value


def _number(spec: FormFieldSpec, name: str, config: str | None) -> float:
    try:
        return float(config or "")
    except ValueError:
        raise FormInvalid(spec.id, f"has a {name} constraint that is not a number") from None


def _check(spec: FormFieldSpec, value: Any) -> None:
    for name, config in spec.constraints:
        low = name.lower()
        if low in ("min", "max") and isinstance(value, (int, float)):
            bound = _number(spec, low, config)
            if (low == "min" and value < bound) or (low == "max" and value > bound):
                side = "at least" if low == "min" else "at most"
                raise FormInvalid(spec.id, f"must be {side} {config}")
        if low in ("min", "max") and isinstance(value, str):
            bound = _number(spec, low, config)  # Camunda: a text's length for min and max
            if (low == "min" and len(value) < bound) or (low == "max" and len(value) > bound):
                side = "at least" if low == "min" else "at most"
                raise FormInvalid(spec.id, f"must have {side} {config} characters")
        if low in ("minlength", "maxlength"):
            bound = _number(spec, low, config)
            size = len(str(value))
            if (low == "minlength" and size < bound) or (low == "maxlength" and size > bound):
                side = "at least" if low == "minlength" else "at most"
                raise FormInvalid(spec.id, f"must have {side} {config} characters")


def check_generated(
    fields: Sequence[FormFieldSpec], submitted: Mapping[str, Any]
) -> dict[str, Any]:
    """The submitted variables with each form field converted to its type; raises
    :class:`FormInvalid` for the first field that fails (variables that are not form
    fields pass as they are)."""
    out = dict(submitted)
    for spec in fields:
        rules = {name.lower() for name, _ in spec.constraints}
        present = spec.id in submitted and submitted[spec.id] not in (None, "")
        if "readonly" in rules and spec.id in submitted:
            raise FormInvalid(spec.id, "is read-only: leave it out")
        if not present:
            if "required" in rules:
                raise FormInvalid(spec.id, "is required")
            continue
        value = _typed(spec, submitted[spec.id])
        _check(spec, value)
        out[spec.id] = value
    return out
