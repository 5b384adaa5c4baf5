"""ISO 8601 timer expressions: durations (``PT5M``), dates and cycles (``R3/PT10S``).

Timers in BPMN hold one of three kinds of text (see :class:`bpm.model.nodes.TimerSpec`);
any of them may instead be ``${name}``, which reads the instance variable ``name`` when the
timer starts, or Zeebe's ``=FEEL`` (``= now() + duration("PT" + string(delay) + "S")``),
evaluated then: its value is a date and time, a duration, or their ISO 8601 text. Deploy
checks the literal forms (and compiles the FEEL) with :func:`check`; the runtime turns a
spec into its first fire time with :func:`resolve`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import isodate

from bpm.cron import Cron, CronError, looks_like_cron, parse_cron
from bpm.errors import BpmError, ExpressionError
from bpm.expressions import compile_expression
from bpm.model.nodes import TimerKind, TimerSpec

__all__ = [
    "TimerError",
    "check",
    "feel_timer_value",
    "is_feel",
    "parse_cycle",
    "parse_date",
    "parse_duration",
    "resolve",
    "variable_name",
]

_VARIABLE = re.compile(r"^\s*\$\{\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*\}\s*$")
_CYCLE = re.compile(r"^R(?P<repeat>\d*)/(?P<interval>[^/]+)$")
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


class TimerError(BpmError):
    """A timer expression that is not valid ISO 8601, or a ``${var}`` that cannot be used."""


def variable_name(text: str) -> str | None:
    """``${deadline}`` -> ``deadline``; ``None`` when ``text`` is not a variable reference."""
    match = _VARIABLE.match(text)
    return match.group("name") if match else None


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def parse_duration(text: str, *, relative_to: datetime | None = None) -> timedelta:
    """``PT5M`` -> 5 minutes. Negative durations are refused.

    Calendar durations (``P1M``, ``P1Y``) have no fixed length; they are measured from
    ``relative_to`` (default: 2000-01-01 UTC, enough to check the sign and syntax).
    """
    source = text.strip()
    try:
        parsed = isodate.parse_duration(source)
    except (isodate.ISO8601Error, ValueError, TypeError) as exc:
        raise TimerError(
            f"'{text}' is not an ISO 8601 duration: write it like PT30S, PT5M, PT1H30M or P2D"
        ) from exc
    if isinstance(parsed, timedelta):
        delta = parsed
    else:  # isodate.Duration: years and months depend on the start date
        start = _as_utc(relative_to) if relative_to is not None else _EPOCH
        delta = parsed.totimedelta(start=start)
    if delta < timedelta(0):
        raise TimerError(f"duration '{text}' is negative: timers and delays must be >= 0")
    return delta


def parse_date(text: str) -> datetime:
    """``2026-12-01T09:00:00Z`` -> an aware UTC datetime; a time without zone is UTC."""
    source = text.strip()
    try:
        value: datetime = isodate.parse_datetime(source)
    except (isodate.ISO8601Error, ValueError, TypeError):
        try:
            value = datetime.fromisoformat(source)
        except ValueError as exc:
            raise TimerError(
                f"'{text}' is not an ISO 8601 date and time: write it like "
                "2026-12-01T09:00:00Z (or with an offset such as +02:00)"
            ) from exc
    return _as_utc(value)


def parse_cycle(text: str) -> tuple[int | None, timedelta]:
    """``R3/PT10S`` -> ``(3, 10 s)``; ``R/PT1H`` repeats forever -> ``(None, 1 h)``."""
    source = text.strip()
    match = _CYCLE.match(source)
    if match is None:
        raise TimerError(
            f"'{text}' is not a supported cycle: write R<n>/<duration> such as R3/PT10S, "
            "or R/PT1H to repeat forever (start dates and cron are not supported)"
        )
    repeat = int(match.group("repeat")) if match.group("repeat") else None
    if repeat is not None and repeat < 1:
        raise TimerError(f"cycle '{text}' repeats {repeat} times: use R1 or more")
    interval = parse_duration(match.group("interval"))
    if interval <= timedelta(0):
        raise TimerError(f"cycle '{text}' has a zero interval: use a positive duration")
    return repeat, interval


def is_feel(text: str) -> bool:
    """Whether a timer text is Zeebe's ``=FEEL``."""
    stripped = text.strip()
    return stripped.startswith("=") and not stripped.startswith("==")


def feel_timer_value(spec: TimerSpec, variables: Mapping[str, Any]) -> str:
    """The ISO 8601 text a ``=FEEL`` timer gives with ``variables`` (TimerError if none)."""
    try:
        value = compile_expression(spec.expression).evaluate(variables)
    except ExpressionError as exc:
        raise TimerError(f"timer expression: {exc}") from None
    if not isinstance(value, str) or not value:
        raise TimerError(
            f"timer expression `{spec.expression.strip()}` gave {value!r}: a {spec.kind.value} "
            "timer needs a date and time, a duration, or their ISO 8601 text"
        )
    return value


def check(spec: TimerSpec) -> None:
    """Raise :class:`TimerError` when a literal spec does not parse; ``${var}`` passes,
    ``=FEEL`` must compile."""
    if variable_name(spec.expression) is not None:
        return
    if is_feel(spec.expression):
        try:
            compile_expression(spec.expression)
        except ExpressionError as exc:
            raise TimerError(f"timer expression: {exc}") from None
        return
    if "${" in spec.expression or "#{" in spec.expression:
        raise TimerError(
            f"timer expression '{spec.expression}' is not supported: use a literal ISO 8601 "
            "value or a plain variable reference such as ${deadline}"
        )
    if spec.kind is TimerKind.DURATION:
        parse_duration(spec.expression)
    elif spec.kind is TimerKind.DATE:
        parse_date(spec.expression)
    elif cron_of(spec.expression) is None:
        parse_cycle(spec.expression)


def cron_of(text: str) -> Cron | None:
    """The cron of a ``timeCycle`` written as one (``0 0 9 * * ?``; Camunda accepts them on
    every timer), None for an ISO cycle; :class:`TimerError` for a cron that does not
    parse."""
    if not looks_like_cron(text):
        return None
    try:
        return parse_cron(text)
    except CronError as exc:
        raise TimerError(str(exc)) from exc


def next_cron(cron: Cron, after: datetime) -> datetime:
    """The cron's next match after ``after``; :class:`TimerError` when it has none."""
    due = cron.next_after(after)
    if due is None:
        raise TimerError(f"cron '{cron.source}' never matches after {after.isoformat()}")
    return due


def _text_of(spec: TimerSpec, variables: Mapping[str, Any]) -> str | datetime | timedelta:
    if is_feel(spec.expression):
        return feel_timer_value(spec, variables)
    name = variable_name(spec.expression)
    if name is None:
        return spec.expression
    if name not in variables:
        raise TimerError(
            f"timer reads variable '{name}', which is not set: set it before the timer "
            "is reached (an ISO 8601 string)"
        )
    value = variables[name]
    if isinstance(value, datetime | timedelta):
        return value
    if spec.kind is TimerKind.DURATION and isinstance(value, int | float):
        if isinstance(value, bool) or value < 0:
            raise TimerError(f"variable '{name}' holds {value!r}, not a duration >= 0")
        return timedelta(seconds=value)
    if not isinstance(value, str):
        raise TimerError(
            f"variable '{name}' holds {value!r}; a {spec.kind.value} timer needs an ISO 8601 string"
        )
    return value


def resolve(spec: TimerSpec, variables: Mapping[str, Any], now: datetime) -> datetime:
    """The first time the timer fires (aware UTC), given instance variables and ``now``."""
    now = _as_utc(now)
    value = _text_of(spec, variables)
    name = variable_name(spec.expression)
    try:
        if isinstance(value, datetime):
            if spec.kind is not TimerKind.DATE:
                raise TimerError(f"a {spec.kind.value} timer cannot use a date: {value}")
            return _as_utc(value)
        if isinstance(value, timedelta):
            if spec.kind is TimerKind.DATE:
                raise TimerError(f"a date timer cannot use a duration: {value}")
            if value < timedelta(0):
                raise TimerError(f"duration {value} is negative: timers must be >= 0")
            return now + value
        if spec.kind is TimerKind.DURATION:
            return now + parse_duration(value, relative_to=now)
        if spec.kind is TimerKind.DATE:
            return parse_date(value)
        cron = cron_of(value)
        if cron is not None:
            return next_cron(cron, now)
        return now + parse_cycle(value)[1]
    except TimerError as exc:
        if name is None:
            raise
        raise TimerError(f"variable '{name}': {exc}") from exc
