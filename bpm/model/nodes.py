"""Node and flow values of a process definition. Pure data: no I/O, no behaviour."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from bpm.retry import RetryPolicy


@dataclass(frozen=True)
class Node:
    """Common fields of every flow node. ``line`` points into the BPMN source, if any."""

    id: str
    name: str | None = None
    line: int | None = field(default=None, compare=False)  # where, not what: not compared

    @property
    def waits(self) -> bool:
        """True when a token arriving here stops until something outside happens."""
        return False


@dataclass(frozen=True)
class StartEvent(Node):
    """Where an instance starts. A ``timer`` start event also starts instances on a
    schedule (beat); without one it is a none start event."""

    timer: TimerSpec | None = None


class EndKind(StrEnum):
    NONE = "none"
    TERMINATE = "terminate"
    ERROR = "error"


@dataclass(frozen=True)
class EndEvent(Node):
    kind: EndKind = EndKind.NONE
    error_code: str | None = None


@dataclass(frozen=True)
class ServiceTask(Node):
    """Inline (``handler``) or external (``topic``) work. Exactly one of the two is set."""

    handler: str | None = None
    topic: str | None = None
    retry: RetryPolicy | None = None
    priority: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    lease_seconds: float | None = None

    @property
    def is_external(self) -> bool:
        return self.topic is not None

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class ScriptTask(ServiceTask):
    """A script task. ``cel`` scripts are evaluated by the engine (``result_variable``
    receives the value); any other language runs as the inline handler ``handler`` (the
    task id), which finds the script text on ``ctx.script``. Nothing is evaluated as Python.
    """

    script: str | None = None
    script_format: str | None = None
    result_variable: str | None = None

    @property
    def is_cel(self) -> bool:
        return (self.script_format or "").strip().lower() == "cel"

    @property
    def waits(self) -> bool:
        return not self.is_cel


@dataclass(frozen=True)
class UserTask(Node):
    """A task for a person. Every setting is text as written in the model; ``${name}``
    reads a variable when the task is created (see :mod:`bpm.runtime.usertasks`)."""

    assignee: str | None = None
    candidate_groups: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    candidate_users: tuple[str, ...] = ()
    due_date: str | None = None
    follow_up_date: str | None = None
    priority: str | None = None
    form_key: str | None = None
    form_ref: Mapping[str, str] = field(default_factory=dict)  # key, binding, version

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class ExclusiveGateway(Node):
    default_flow: str | None = None


@dataclass(frozen=True)
class ParallelGateway(Node):
    pass


@dataclass(frozen=True)
class PassThrough(Node):
    """``task``, ``manualTask`` and a none ``intermediateThrowEvent``: the token moves on
    at once (BPMN gives them no behaviour an engine performs). ``element`` is the BPMN
    local name, for messages and the trail."""

    element: str = "task"


class TimerKind(StrEnum):
    DURATION = "duration"
    DATE = "date"
    CYCLE = "cycle"


@dataclass(frozen=True)
class TimerSpec:
    """An ISO 8601 duration, date or cycle; ``expression`` may be ``${var}``."""

    kind: TimerKind
    expression: str


@dataclass(frozen=True)
class TimerCatchEvent(Node):
    timer: TimerSpec | None = None

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class BoundaryEvent(Node):
    """A timer or error event attached to an activity."""

    attached_to: str = ""
    cancel_activity: bool = True
    timer: TimerSpec | None = None
    error_code: str | None = None  # None on an error boundary catches every error

    @property
    def is_error(self) -> bool:
        return self.timer is None


@dataclass(frozen=True)
class Flow:
    """A sequence flow. ``condition`` is CEL source, already unwrapped from ``${...}``."""

    id: str
    source: str
    target: str
    condition: str | None = None
    name: str | None = None
    line: int | None = field(default=None, compare=False)
