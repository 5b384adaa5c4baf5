"""Camunda Forms (the ``.form`` JSON of Camunda Modeler, rendered by bpmn.io's form-js):
what a submitted form must satisfy, checked on the server as form-js checks it in the page:
``validate.required``, ``min``/``max`` (numbers), ``minLength``/``maxLength`` and
``pattern`` (texts), and the listed ``values`` of selects, radios and checklists. Patterns
run with a time limit (the ``regex`` package), so a model cannot make the server spin."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import regex

from bpm.forms.generated import FormInvalid

PATTERN_SECONDS = 0.05
#: Components that hold no value of their own.
_DISPLAY = frozenset({"text", "html", "image", "button", "spacer", "separator", "iframe"})


def form_id(data: bytes) -> str | None:
    """The ``id`` of a ``.form`` document (None: not one)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    found = doc.get("id") if isinstance(doc, dict) else None
    return found if isinstance(found, str) else None


def _fields(components: Any) -> Iterator[Mapping[str, Any]]:
    for c in components if isinstance(components, list) else ():
        if not isinstance(c, dict):
            continue
        if c.get("type") in ("group", "dynamiclist") or "components" in c:
            yield from _fields(c.get("components"))
        if isinstance(c.get("key"), str) and c.get("type") not in _DISPLAY:
            yield c


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _check(c: Mapping[str, Any], value: Any) -> None:
    key = str(c["key"])
    rules = c.get("validate") if isinstance(c.get("validate"), dict) else {}
    assert isinstance(rules, dict)
    kind = c.get("type")
    if kind == "number":
        n = _number(value)
        if n is None:
            raise FormInvalid(key, "must be a number")
        if _number(rules.get("min")) is not None and n < float(rules["min"]):
            raise FormInvalid(key, f"must be at least {rules['min']}")
        if _number(rules.get("max")) is not None and n > float(rules["max"]):
            raise FormInvalid(key, f"must be at most {rules['max']}")
    if isinstance(value, str):
        if isinstance(rules.get("minLength"), int) and len(value) < rules["minLength"]:
            raise FormInvalid(key, f"must have at least {rules['minLength']} characters")
        if isinstance(rules.get("maxLength"), int) and len(value) > rules["maxLength"]:
            raise FormInvalid(key, f"must have at most {rules['maxLength']} characters")
        pattern = rules.get("pattern")
        if isinstance(pattern, str) and pattern:
            try:
                ok = regex.fullmatch(pattern, value, timeout=PATTERN_SECONDS) is not None
            except (regex.error, TimeoutError):
                ok = False
            if not ok:
                raise FormInvalid(key, f"must match the pattern {pattern}")
    if kind == "checkbox" and not isinstance(value, bool):
        raise FormInvalid(key, "must be true or false")
    values = c.get("values")
    if kind in ("select", "radio", "checklist", "taglist") and isinstance(values, list):
        allowed = [v.get("value") for v in values if isinstance(v, dict)]
        chosen = value if isinstance(value, list) else [value]
        for item in chosen:
            if item not in allowed:
                raise FormInvalid(key, f"must be one of the listed values, not {item!r}")


def check_camunda_form(document: Mapping[str, Any], submitted: Mapping[str, Any]) -> None:
    """Raise :class:`FormInvalid` for the first field of the form that fails its checks."""
    for c in _fields(document.get("components")):
        key = str(c["key"])
        rules = c.get("validate") if isinstance(c.get("validate"), dict) else {}
        assert isinstance(rules, dict)
        value = submitted.get(key)
        if value in (None, "", []):
            if rules.get("required") is True:
                raise FormInvalid(key, "is required")
            continue
        if c.get("readonly") is True or c.get("disabled") is True:
            continue
        _check(c, value)
