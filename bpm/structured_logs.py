"""Structured logs: ``BPM_LOG_FORMAT=json`` makes every log line one JSON object, and adds
one line per step outcome (instance, node, token, attempt, duration, outcome).

The step lines come from :class:`StepLog`, an observer of :mod:`bpm.observe` (the same
hook as the metrics), on the logger ``bpm.steps``: ``completed`` at INFO, ``retried`` and
``dropped`` at WARNING, ``failed`` at ERROR; a lease the reclaimer found expired at
WARNING. Who sets up logging decides where the lines go: ``bpm`` commands and the API
server call :func:`configure_from_env`; Celery workers and beat format Celery's own
handlers (see :mod:`bpm.contrib.celery.metrics`). ``BPM_LOG_FORMAT=text`` (the default) changes
nothing and subscribes nothing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from bpm.errors import ConfigurationError
from bpm.observe import Event, LeaseExpired, Observers, StepFinished, StepOutcome, observers

ENV_VAR = "BPM_LOG_FORMAT"
TEXT = "text"
JSON = "json"
FORMATS = (TEXT, JSON)
# The attribute of a LogRecord that carries structured fields (``extra={"bpm": {...}}``).
FIELDS = "bpm"

STEP_LOGGER = "bpm.steps"
_LEVELS = {
    StepOutcome.COMPLETED: logging.INFO,
    StepOutcome.RETRIED: logging.WARNING,
    StepOutcome.DROPPED: logging.WARNING,
    StepOutcome.FAILED: logging.ERROR,
}


def log_format(env: Mapping[str, str] | None = None) -> str:
    """``BPM_LOG_FORMAT`` (``text`` or ``json``; default ``text``)."""
    env = os.environ if env is None else env
    raw = env.get(ENV_VAR, "").strip().lower() or TEXT
    if raw not in FORMATS:
        raise ConfigurationError(
            f"{ENV_VAR}={env.get(ENV_VAR)!r} is not a log format; use 'text' or 'json'"
        )
    return raw


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the record's structured
    fields (``extra={"bpm": {...}}``) and the exception, if any."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, Mapping):
            out.update(fields)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False, separators=(",", ":"))


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


class StepLog:
    """Logs each step outcome (and each lease found expired) with its fields.

    The message says it in words too, for a text log: the node, the instance, the attempt
    and the reason (``step charge of instance 5b1c... failed (attempt 1), it runs again:
    RuntimeError: card declined``), and for an incident its id and how to retry it.
    ``completed``: the level of completed steps (a Celery worker logging text logs them at
    DEBUG: Celery logs each task's success already)."""

    def __init__(
        self, logger: logging.Logger | None = None, *, completed: int = logging.INFO
    ) -> None:
        self.log = logger or logging.getLogger(STEP_LOGGER)
        self.levels = {**_LEVELS, StepOutcome.COMPLETED: completed}

    def observe(self, event: Event) -> None:
        match event:
            case StepFinished():
                level = self.levels[event.outcome]
                if not self.log.isEnabledFor(level):
                    return
                fields = {
                    "event": "step_finished",
                    "outcome": event.outcome.value,
                    "definition": event.definition,
                    "node": event.node_id,
                    "instance": event.instance_id,
                    "token": event.token_id,
                    "attempt": event.attempt,
                    "duration_ms": _ms(event.seconds),
                    "handler_ms": _ms(event.handler_seconds),
                    "worker": event.worker,
                    "error": event.error,
                    "incident": event.incident,
                }
                self.log.log(level, step_message(event), extra={FIELDS: fields})
            case LeaseExpired():
                if not self.log.isEnabledFor(logging.WARNING):
                    return
                fields = {
                    "event": "lease_expired",
                    "definition": event.definition,
                    "node": event.node_id,
                    "instance": event.instance_id,
                    "token": event.token_id,
                    "attempt": event.attempt,
                    "owner": event.owner,
                }
                self.log.warning(
                    "lease of %s on step %s of instance %s expired (worker lost, attempt %d)",
                    event.owner,
                    event.node_id,
                    event.instance_id,
                    event.attempt,
                    extra={FIELDS: fields},
                )


def step_message(event: StepFinished) -> str:
    """The words of a step's log line: what happened to which node of which instance,
    and why (a message without ``%`` arguments: the error may contain any character)."""
    step = f"step {event.node_id} of instance {event.instance_id}"
    attempt = f"attempt {event.attempt}"
    match event.outcome:
        case StepOutcome.COMPLETED:
            return f"{step} completed ({attempt})"
        case StepOutcome.RETRIED:
            return f"{step} failed ({attempt}), it runs again: {event.error}"
        case StepOutcome.DROPPED:
            return (
                f"{step}: the result of {attempt} was dropped (its lease was no longer "
                f"{event.worker}'s; another attempt decides)"
            )
    if event.incident is not None:
        return (
            f"incident {event.incident}: {step} failed ({attempt}, the last): {event.error}; "
            f"fix the cause, then retry it (bpm retry {event.incident}, or the cockpit)"
        )
    return f"{step} failed for good ({attempt}): {event.error}"


_subscribed: dict[int, StepLog] = {}
_lock = threading.Lock()


def log_steps(to: Observers | None = None, *, completed: int = logging.INFO) -> StepLog:
    """Subscribe the step log to ``to`` (the process's observers) once; returns it (the
    first one subscribed: ``completed`` is its level of completed steps)."""
    target = observers if to is None else to
    with _lock:
        found = _subscribed.get(id(target))
        if found is None:
            found = _subscribed[id(target)] = StepLog(completed=completed)
            target.subscribe(found)
        return found


def use_json(logger: logging.Logger) -> None:
    """Give every handler of ``logger`` the JSON formatter (for loggers set up by someone
    else, e.g. Celery's)."""
    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())


def configure(
    fmt: str,
    *,
    level: int = logging.INFO,
    stream: TextIO | None = None,
    to: Observers | None = None,
) -> logging.Handler | None:
    """For a process whose logging this package sets up (``bpm`` commands, the API
    server): with ``json``, one root handler writing JSON lines to ``stream`` (stderr by
    default), the ``bpm`` loggers at ``level`` (unless set already), and the step log
    subscribed (to ``to``, the process's observers by default). Returns the handler (None
    for ``text``). Calling it again replaces the handler it added before."""
    if fmt not in FORMATS:
        raise ConfigurationError(f"{fmt!r} is not a log format; use 'text' or 'json'")
    if fmt == TEXT:
        return None
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_bpm_json", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._bpm_json = True  # type: ignore[attr-defined]  # ours, found again on reconfigure
    root.addHandler(handler)
    # The engine's own lines from ``level`` on; other libraries keep their levels.
    ours = logging.getLogger("bpm")
    if ours.level == logging.NOTSET:
        ours.setLevel(level)
    log_steps(to)
    return handler


def configure_from_env(env: Mapping[str, str] | None = None) -> logging.Handler | None:
    """:func:`configure` with ``BPM_LOG_FORMAT``; a bad value raises ConfigurationError."""
    return configure(log_format(env))
