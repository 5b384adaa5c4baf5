"""Retry policies written as text: ``bpm:retry`` and ``camunda:failedJobRetryTimeCycle``."""

from __future__ import annotations

import re
from datetime import timedelta

from bpm.errors import BpmError
from bpm.retry import RetryPolicy
from bpm.timeexpr import TimerError, parse_cycle, parse_duration

__all__ = ["RetrySpecError", "parse_retry", "parse_retry_cycle"]

_CALL = re.compile(r"^\s*(?P<name>[a-z_]+)\s*\((?P<args>[^()]*)\)\s*$")
_USAGE = "write exponential(8, PT1S, PT30S), fixed(3, PT2S) or none()"


class RetrySpecError(BpmError):
    """A retry specification that cannot be read; the message shows the accepted forms."""


def _delay(text: str, spec: str) -> timedelta:
    try:
        return timedelta(seconds=float(text))
    except ValueError:
        pass
    try:
        return parse_duration(text)
    except TimerError as exc:
        raise RetrySpecError(f"retry '{spec}': {exc}") from exc


def _count(text: str, spec: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise RetrySpecError(
            f"retry '{spec}': the number of attempts must be a whole number >= 1, not '{text}'"
        )
    return int(text)


def parse_retry(spec: str) -> RetryPolicy:
    """``exponential(8, PT1S, PT30S)``, ``fixed(3, PT2S)``, ``none()`` or ``default()``.

    Counts are attempts in all (the first one included); delays are ISO 8601 durations
    or plain seconds.
    """
    match = _CALL.match(spec)
    if match is None:
        raise RetrySpecError(f"retry '{spec}' is not understood: {_USAGE}")
    name = match.group("name")
    args = [a.strip() for a in match.group("args").split(",")] if match["args"].strip() else []
    arity = {"exponential": 3, "fixed": 2, "none": 0, "default": 0}
    if name not in arity:
        raise RetrySpecError(f"retry '{spec}': unknown policy '{name}'; {_USAGE}")
    if len(args) != arity[name]:
        raise RetrySpecError(
            f"retry '{spec}': {name}() takes {arity[name]} argument(s), got {len(args)}; " + _USAGE
        )
    if name == "none":
        return RetryPolicy.none()
    if name == "default":
        return RetryPolicy.default()
    if name == "fixed":
        return RetryPolicy.fixed(_count(args[0], spec), _delay(args[1], spec))
    initial, maximum = _delay(args[1], spec), _delay(args[2], spec)
    if maximum < initial:
        raise RetrySpecError(
            f"retry '{spec}': the maximum delay {args[2]} is shorter than the first {args[1]}"
        )
    return RetryPolicy.exponential(_count(args[0], spec), initial, maximum)


def parse_retry_cycle(spec: str) -> RetryPolicy:
    """Camunda's ``R4/PT5S`` -> ``RetryPolicy.fixed(4, 5 s)``."""
    zero = re.fullmatch(r"\s*R(?P<n>[1-9]\d*)/(?P<d>\S+)\s*", spec)
    if zero is not None:
        try:
            if parse_duration(zero["d"]) == timedelta(0):
                return RetryPolicy.fixed(int(zero["n"]), timedelta(0))  # R1/PT0S: at once
        except TimerError:
            pass  # parse_cycle says what is wrong
    try:
        repeat, interval = parse_cycle(spec)
    except TimerError as exc:
        raise RetrySpecError(f"failedJobRetryTimeCycle: {exc}") from exc
    if repeat is None:
        raise RetrySpecError(
            f"failedJobRetryTimeCycle '{spec}' retries forever: give a count such as R3/PT10S"
        )
    return RetryPolicy.fixed(repeat, interval)
