"""The values a claimed step is run with and gives back: :class:`Claimed` (the lease this
worker holds) and :class:`Outcome` (what its handler did).

Their own module, below :mod:`bpm.engine.execution` and the modules it reports through
(:mod:`bpm.engine.observed`, :mod:`bpm.engine.traced`), so those can name them without an
import circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bpm import tracing
from bpm.errors import BpmnError, StepFailed
from bpm.model import nodes as n
from bpm.runtime.records import Token, UserTask

__all__ = ["Claimed", "Outcome"]


@dataclass(frozen=True)
class Claimed:
    """A step this worker holds the lease on."""

    token: Token
    variables: dict[str, Any]
    definition_id: str
    node: n.ServiceTask
    business_key: str | None = None
    definition_key: str = ""  # the process key, for observers
    claimed_at: float = 0.0  # time.perf_counter() when the lease was taken
    trace: tracing.TraceContext | None = None  # with a tracer: the parent of its span
    task: UserTask | None = None  # a task listener step: the open task, as claimed
    task_node: n.Node | None = None  # ... and its user task (whose listeners run)


@dataclass(frozen=True)
class Outcome:
    """The result of running a handler: variables to merge, or an error."""

    variables: Any = None
    error: str | None = None
    details: str | None = None
    finished_at: datetime | None = None
    error_code: str | None = None  # from an ``error_code`` attribute of the exception
    seconds: float | None = None  # how long the handler ran
    locals: dict[str, Any] | None = None  # ctx.set_local(...)
    thrown: BpmnError | None = None  # the handler raised a BPMN error (not retried)
    asked: StepFailed | None = None  # the handler said what comes next (StepFailed)
    listeners: tuple[str, ...] = ()  # the execution listeners that ran, in order
    task: Any = None  # a task listener step: what it did (task_listeners.TaskListened)
