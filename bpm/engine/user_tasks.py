"""Changing an open user task's fields (Camunda's ``PUT /task/{id}`` and
``POST /task/{id}/assignee``): each change is one transaction under the instance lock,
recorded as a history event. Claiming, unclaiming and completing are in
:mod:`bpm.engine.instances`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bpm.engine.core import EngineCore
from bpm.engine.unit import unit_of_work
from bpm.errors import InvalidOperation, NotFound
from bpm.runtime import task_events
from bpm.runtime.records import UserTask
from bpm.runtime.states import UserTaskState

MAX_TEXT = 255
MAX_DESCRIPTION = 4000
PRIORITY_RANGE = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class TaskChanges:
    """New values of a task's fields (Camunda's update replaces each of them; ``priority``
    None keeps the current priority)."""

    name: str | None = None
    description: str | None = None
    assignee: str | None = None
    owner: str | None = None
    due_at: datetime | None = None
    follow_up_at: datetime | None = None
    priority: int | None = None

    def check(self) -> None:
        """:class:`InvalidOperation` naming the first field that cannot be stored."""
        for field_name in ("name", "assignee", "owner"):
            value = getattr(self, field_name)
            if value is not None and len(value) > MAX_TEXT:
                raise InvalidOperation(f"{field_name} is longer than {MAX_TEXT} characters")
        if self.description is not None and len(self.description) > MAX_DESCRIPTION:
            raise InvalidOperation(f"description is longer than {MAX_DESCRIPTION} characters")
        if self.priority is not None and not (
            PRIORITY_RANGE[0] <= self.priority <= PRIORITY_RANGE[1]
        ):
            raise InvalidOperation("priority must be a 32-bit integer")
        for field_name in ("due_at", "follow_up_at"):
            value = getattr(self, field_name)
            if value is not None and value.tzinfo is None:
                raise InvalidOperation(f"{field_name} needs a time zone offset")


def _open_task(task: UserTask | None, task_id: str) -> UserTask:
    if task is None or task.state is not UserTaskState.OPEN:
        raise NotFound(f"user task {task_id} does not exist or is not open")
    return task


def update_user_task(
    core: EngineCore,
    task_id: str,
    changes: TaskChanges,
    *,
    by: str | None = None,
    now: datetime | None = None,
) -> UserTask:
    """Replace the fields of an open user task; records ``user_task_updated`` with the
    names of the fields that changed (nothing is written when none did)."""
    changes.check()
    with unit_of_work(core, now) as unit:
        work = unit.work_of(UserTask, task_id)
        task = _open_task(work.item(UserTask, task_id) if work else None, task_id)
        assert work is not None
        new: dict[str, Any] = {
            "name": changes.name,
            "description": changes.description,
            "assignee": changes.assignee,
            "owner": changes.owner,
            "due_at": changes.due_at,
            "follow_up_at": changes.follow_up_at,
        }
        if changes.priority is not None:
            new["priority"] = changes.priority
        changed = {k: v for k, v in new.items() if getattr(task, k) != v}
        if not changed:
            return task
        task_events.check_open_for_change(task)
        was = task.assignee
        task = work.change(
            task,
            event="user_task_updated",
            payload={"fields": sorted(changed), "by": by or "operator"},
            **changed,
        )
        task = task_events.updated(unit.walker(work), task, list(changed), was)
    return task


def set_assignee(
    core: EngineCore,
    task_id: str,
    user_id: str | None,
    *,
    now: datetime | None = None,
) -> UserTask:
    """Make ``user_id`` the assignee of an open task whoever had it (None: nobody);
    recorded as ``user_task_assigned``."""
    if user_id is not None and len(user_id) > MAX_TEXT:
        raise InvalidOperation(f"userId is longer than {MAX_TEXT} characters")
    with unit_of_work(core, now) as unit:
        work = unit.work_of(UserTask, task_id)
        task = _open_task(work.item(UserTask, task_id) if work else None, task_id)
        assert work is not None
        if task.assignee != user_id:
            task_events.check_open_for_change(task)
            was = task.assignee
            task = work.change(
                task,
                event="user_task_assigned",
                payload={"user": user_id, "was": task.assignee},
                assignee=user_id,
            )
            task = task_events.assigned(unit.walker(work), task, was)
    return task
