"""The settings of a user task as stored when a token reaches it.

The model keeps each setting as text; ``${name}`` reads instance variable ``name`` here,
and Zeebe's ``=FEEL`` is evaluated here (``=assignees[1]``, ``=now() + duration("P2D")``).
A variable that is not set leaves the setting empty (the task is still created: a person
can always be assigned later); a due date that is a duration counts from the task's
creation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bpm.errors import ExpressionError
from bpm.expressions import compile_expression, is_feel, to_cel
from bpm.model import nodes as n
from bpm.timeexpr import TimerError, parse_date, parse_duration, variable_name

__all__ = ["expand_text", "user_task_fields"]


_PART = re.compile(r"[$#]\{(?P<body>[^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _value(body: str, variables: Mapping[str, Any]) -> Any:
    """The value of the expression inside ``${...}`` (JUEL as CEL); None when it cannot be
    read (an unset variable), as an unset ``${name}`` is."""
    try:
        return compile_expression(to_cel("${" + body + "}")).evaluate(variables)
    except ExpressionError:
        return None


def _read(text: str | None, variables: Mapping[str, Any]) -> Any:
    """A setting's value: Zeebe's ``=FEEL``; ``${name}`` or any ``${expression}`` (its
    value, of any type); text with expressions inside (``Task ${loopCounter}``: each
    replaced by its value as text, an unreadable one by nothing); else the text."""
    if text is None:
        return None
    if is_feel(text):  # Zeebe's FEEL; one that fails leaves the setting empty, like ${unset}
        try:
            return compile_expression(text).evaluate(variables)
        except ExpressionError:
            return None
    name = variable_name(text)
    if name is not None:
        return variables.get(name)
    whole = _PART.fullmatch(text.strip())
    if whole is not None:
        return _value(whole.group("body"), variables)
    if _PART.search(text) is None:
        return text

    def part(match: re.Match[str]) -> str:
        value = _value(match.group("body"), variables)
        return "" if value is None else _plain(value)

    return _PART.sub(part, text)


def expand_text(text: str, variables: Mapping[str, Any]) -> str:
    """Text with JUEL expressions inside (``alert-${var}``, as Camunda evaluates message
    and signal names): each replaced by its value as text. Unlike a user task's settings,
    an expression that cannot be read raises :class:`ExpressionError` (a wait under a
    name nobody meant must not open); text without one is returned as it is."""
    if "${" not in text and "#{" not in text:
        return text

    def part(match: re.Match[str]) -> str:
        body = match.group("body").strip()
        if _NAME.fullmatch(body):  # a variable read as it is (``var`` is a CEL keyword)
            if body not in variables:
                raise ExpressionError(f"variable '{body}' is not set (in `{text}`)")
            return _plain(variables[body])
        return _plain(compile_expression(to_cel("${" + body + "}")).evaluate(variables))

    return _PART.sub(part, text)


def _plain(value: Any) -> str:
    """A value as Java EL writes it into text (true, not True)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _text(value: Any, limit: int = 255) -> str | None:
    """Text for a column of ``limit`` characters (a long name is cut, not refused)."""
    if value is None or value == "":
        return None
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _names(items: tuple[str, ...], variables: Mapping[str, Any]) -> tuple[str, ...]:
    out: list[str] = []
    for item in items:
        value = _read(item, variables)
        if isinstance(value, list | tuple):
            out += [str(v) for v in value if v not in (None, "")]
        elif isinstance(value, str):
            out += [v.strip() for v in value.split(",") if v.strip()]
        elif value is not None:
            out.append(str(value))
    return tuple(dict.fromkeys(out))


def _when(text: str | None, variables: Mapping[str, Any], now: datetime) -> datetime | None:
    value = _read(text, variables)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return parse_date(value)
    except TimerError:
        try:
            return now + parse_duration(value, relative_to=now)
        except TimerError:
            return None


def _priority(text: str | None, variables: Mapping[str, Any]) -> int:
    value = _read(text, variables)
    if isinstance(value, bool):
        return 50
    if not isinstance(value, int):
        try:
            value = int(str(value).strip())
        except ValueError:
            return 50  # Camunda's default priority
    return max(-(2**31), min(value, 2**31 - 1))  # the column is 32-bit


def user_task_fields(
    node: n.UserTask, variables: Mapping[str, Any], now: datetime
) -> dict[str, Any]:
    """The ``user_task`` columns that come from the model (assignee, candidates, dates,
    priority, form), with ``${name}`` read from ``variables``."""
    return {
        "name": _text(_read(node.name, variables)),
        "assignee": _text(_read(node.assignee, variables)),
        "candidate_groups": _names(node.candidate_groups, variables),
        "candidate_users": _names(node.candidate_users, variables),
        "due_at": _when(node.due_date, variables, now),
        "follow_up_at": _when(node.follow_up_date, variables, now),
        "priority": _priority(node.priority, variables) if node.priority is not None else 50,
        "form_key": _text(_read(node.form_key, variables), 1000),
        "form_ref": dict(node.form_ref) or None,
    }
