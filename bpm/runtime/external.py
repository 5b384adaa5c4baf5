"""External tasks: what a worker asks for when it fetches, and how it reported last.

An external task is the execution mode of a service task with a ``topic``: the token waits
(``Waiting(external_task)``) while a worker outside the engine holds a lock on the task row.
States: ``ready -> locked -> completed``; ``locked -> ready`` (failure with retries left, lock
expired, unlock); ``locked -> failed`` (no retries left: an incident); ``cancelled`` when the
token is stopped (boundary event, termination).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class FinishKind(StrEnum):
    """What the worker named in ``finished_by`` last reported (for idempotent repeats)."""

    COMPLETE = "complete"
    FAILURE = "failure"
    BPMN_ERROR = "bpmn_error"


NOTIFY_CHANNEL = "bpm_external_task"


@dataclass(frozen=True)
class TopicRequest:
    """One topic of a fetch-and-lock: filters inside it are AND'ed, topics are OR'ed."""

    topic: str
    lock_duration_ms: int
    variables: tuple[str, ...] | None = None  # None: all variables
    business_key: str | None = None
    process_definition_key: str | None = None
    process_definition_id: str | None = None
    # name -> value: a task matches when ANY entry equals its instance variable
    process_variables: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FetchRequest:
    """A worker's fetch-and-lock: up to ``max_tasks`` free tasks of its topics."""

    worker_id: str
    max_tasks: int
    topics: tuple[TopicRequest, ...]
    use_priority: bool = False
    # (field, ascending); only "createTime" is a sortable field, as in Camunda
    sorting: tuple[tuple[str, bool], ...] = ()
