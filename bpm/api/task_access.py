"""Who may see and work on which user task (Camunda's task authorizations, in short).

An administrator (an operator key, no auth at all, a member of ``camunda-admin``) sees and
does everything. A user sees the tasks that are theirs (assignee, owner), that name them as
a candidate user, or that name one of their groups as a candidate group; they may claim
such a task for themselves, unclaim and complete a task assigned to them (or complete an
unassigned one they are a candidate of), comment on and read what they see. A task a user
may not see answers 404, as if it did not exist; an action on a task they see but may not
do answers 403. ``BPM_TASK_AUTHORIZATION=off`` lets every user see and claim every task
(Camunda with authorization off).
"""

from __future__ import annotations

import os

from fastapi import Request

from bpm.api.auth import Principal, forbidden
from bpm.engine.queries import TaskRow, Viewer
from bpm.errors import ConfigurationError
from bpm.runtime.records import UserTask

ENV_VAR = "BPM_TASK_AUTHORIZATION"


def authorization_from_env() -> bool:
    raw = os.environ.get(ENV_VAR, "").strip().lower()
    if raw in ("", "on", "1", "true"):
        return True
    if raw in ("off", "0", "false"):
        return False
    raise ConfigurationError(f"{ENV_VAR}={raw!r}: use on or off")


def _enforced(request: Request) -> bool:
    return bool(getattr(request.app.state, "task_authorization", True))


def viewer(request: Request, who: Principal) -> Viewer | None:
    """The user whose tasks alone ``who`` may list; None: every task."""
    check_task_caller(who)
    if who.person is None or who.admin or not _enforced(request):
        return None
    return Viewer(who.person.id, tuple(sorted(who.person.groups)))


def check_task_caller(who: Principal) -> None:
    """Worker keys (limited to topics) have no business with user tasks."""
    if who.key is not None and who.key.topics is not None:
        raise forbidden(f"API key '{who.key.id}' is limited to topics and may not use user tasks")


def is_candidate(task: UserTask, user_id: str, groups: frozenset[str]) -> bool:
    return user_id in task.candidate_users or bool(groups & set(task.candidate_groups))


def sees(request: Request, who: Principal, task: UserTask) -> bool:
    v = viewer(request, who)
    if v is None:
        return True
    return v.user_id in (task.assignee, task.owner) or is_candidate(
        task, v.user_id, frozenset(v.groups)
    )


def may_claim(request: Request, who: Principal, row: TaskRow, user_id: str) -> None:
    """403 unless ``who`` may give the task to ``user_id``: an admin may give any task to
    anyone; a user may claim a task they are a candidate of, for themselves."""
    check_task_caller(who)
    person = who.person
    if person is None or who.admin:
        return
    if user_id != person.id:
        raise forbidden(f"user '{person.id}' may claim tasks only for themselves, not '{user_id}'")
    if _enforced(request) and not is_candidate(row.task, person.id, person.groups):
        raise forbidden(
            f"user '{person.id}' is not a candidate of task {row.task.id}: neither they nor "
            "one of their groups is named by it"
        )


def may_work(who: Principal, task: UserTask, what: str) -> None:
    """403 unless ``who`` may complete (or unclaim) the task: an admin, its assignee, or
    for an unassigned task one of its candidates."""
    person = who.person
    if person is None or who.admin:
        return
    if task.assignee == person.id:
        return
    if task.assignee is None and is_candidate(task, person.id, person.groups):
        return
    holder = f"it is assigned to '{task.assignee}'" if task.assignee else "claim it first"
    raise forbidden(f"user '{person.id}' may not {what} task {task.id}: {holder}")


def check_admin_task(who: Principal, what: str) -> None:
    """Changing a task's fields or giving it to someone else: administrators only."""
    check_task_caller(who)
    who.check_unrestricted(what)
