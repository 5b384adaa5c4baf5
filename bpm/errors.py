"""The engine's exception tree.

Every error a user can cause derives from :class:`BpmError`; its message says what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any


class BpmError(Exception):
    """Base class of every error raised by the engine on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a process definition, located in its source."""

    message: str
    element_id: str | None = None
    line: int | None = None
    column: int | None = None
    element_type: str | None = None
    """The element's kind as written in the file, e.g. ``bpmn:serviceTask``."""
    origin: str | None = None
    """The builder call that made the element (``.flow('g', 'nowhere')``): a model built in
    Python is named by its calls, not by the XML it never was."""

    def __str__(self) -> str:
        where = []
        if self.origin:
            where.append(self.origin)
        elif self.element_id:
            where.append(f"{self.element_type or 'element'} '{self.element_id}'")
        if self.line is not None:
            where.append(f"line {self.line}")
        return f"{self.message} ({', '.join(where)})" if where else self.message


class DeploymentError(BpmError):
    """A process definition was rejected; nothing was stored."""

    def __init__(self, problems: list[Problem] | Problem | str, resource: str | None = None):
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = problems
        self.resource = resource
        head = f"cannot deploy {resource}: " if resource else "cannot deploy: "
        super().__init__(head + "; ".join(str(p) for p in problems))


class ExpressionError(BpmError):
    """A condition that does not compile, or cannot be evaluated on these variables."""


class NotFound(BpmError):
    """The thing asked for does not exist (or no longer exists)."""


class IllegalTransition(BpmError):
    """A token or instance state change that the transition table forbids."""


class VariableError(BpmError):
    """Variables that are not JSON, or exceed the configured size limit."""


class InvalidOperation(BpmError):
    """The operation does not apply to the object in its current state."""


class LeaseLost(BpmError):
    """A worker's lease on a token or task is no longer valid; its result is dropped."""


class HandlerNotFound(BpmError):
    """No handler is registered under the name a service task refers to."""


class ConfigurationError(BpmError):
    """The engine or a command was given settings it cannot work with."""


class MessageCorrelationError(BpmError):
    """A message matched nothing (and was not published with a time to live), or matched
    several waiting instances while only one was asked for."""


class Forbidden(BpmError):
    """The caller's credential may not touch this object (e.g. a task of another topic)."""


class BpmnError(Exception):
    """Raise in a handler (inline or external) to throw a BPMN error: a business outcome,
    not a failure. It is not retried: the nearest error boundary event or error event
    sub-process that catches ``code`` takes over (across sub-processes and call
    activities), with ``variables`` written first and ``message`` in ``error_message``.
    Nothing catches it: the task's retry policy's failure action (an incident by default).

    Not a :class:`BpmError`: the engine never raises it, user code does.
    """

    def __init__(
        self, code: str, message: str | None = None, variables: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message or code)
        self.code = code
        self.message = message
        self.variables = dict(variables or {})

    @property
    def error_code(self) -> str:
        """The code, under the name the engine reads from any exception."""
        return self.code


class CompletionDenied(Exception):
    """Raise in a ``complete`` task listener (Zeebe's ``completing`` listener) to deny the
    completion: the task stays open, nothing of the completion is written, no incident
    (:meth:`bpm.handlers.TaskContext.deny`). Not a failure: user code raises it."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class StepFailed(Exception):
    """Raise in an inline handler to fail this attempt and say what comes next, instead of
    leaving it to the retry policy: ``retry=False`` gives up now (no further attempt, the
    policy's failure action follows); ``delay`` runs the next attempt after it instead of
    the policy's backoff; ``max_attempts`` replaces the policy's number of attempts (when
    deciding whether this failure is the last). The attempt is recorded with ``message``
    (raise it ``from`` the cause to keep the cause's traceback).

    Celery tasks run as handlers raise it for ``self.retry(countdown=...)`` and for
    exceptions outside their ``autoretry_for``. Not a :class:`BpmError`: user code raises it.
    """

    def __init__(
        self,
        message: str,
        *,
        retry: bool = True,
        delay: timedelta | float | None = None,
        max_attempts: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retry = retry
        self.delay = timedelta(seconds=delay) if isinstance(delay, int | float) else delay
        self.max_attempts = max_attempts
