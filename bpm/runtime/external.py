"""External tasks as values: the stored task, and what a worker asks for when it fetches.

An external task is the execution mode of a service task with a ``topic``: the token waits
(``Waiting(external_task)``) while a worker outside the engine holds a lock on the task row.
States: ``ready -> locked -> completed``; ``locked -> ready`` (failure with retries left, lock
expired, unlock); ``locked -> failed`` (no retries left: an incident); ``cancelled`` when the
token is stopped (boundary event, termination).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class TaskState(StrEnum):
    READY = "ready"
    LOCKED = "locked"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class FinishKind(StrEnum):
    """What the worker named in ``finished_by`` last reported (for idempotent repeats)."""

    COMPLETE = "complete"
    FAILURE = "failure"
    BPMN_ERROR = "bpmn_error"


OPEN_STATES = (TaskState.READY.value, TaskState.LOCKED.value, TaskState.FAILED.value)
NOTIFY_CHANNEL = "bpm_external_task"


@dataclass(frozen=True)
class ExternalTask:
    """One row of ``external_task``; ``variables`` is set on fetched tasks only."""

    id: str
    instance_id: str
    token_id: str
    definition_id: str
    definition_key: str
    node_id: str
    topic: str
    state: TaskState
    created_at: datetime
    updated_at: datetime
    business_key: str | None = None
    priority: int = 0
    lock_owner: str | None = None
    lock_expires_at: datetime | None = None
    retries: int | None = None
    retry_at: datetime | None = None
    attempt: int = 0
    error_message: str | None = None
    error_details: str | None = None
    finished_by: str | None = None
    finish_kind: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)
    variables: dict[str, Any] | None = None
    suspended: bool = False

    def is_locked(self, now: datetime) -> bool:
        """Locked and the lock has not expired yet."""
        return (
            self.state is TaskState.LOCKED
            and self.lock_expires_at is not None
            and self.lock_expires_at >= now
        )


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
