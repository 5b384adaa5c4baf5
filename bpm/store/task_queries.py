"""Queries of user tasks as Camunda's ``/task`` and ``/history/task`` filter them.

One statement per page: ``user_task`` joined to its instance (a primary-key lookup per
task), every filter in SQL, ordered by an indexed column when the sort allows it
(``created``: ``ix_user_task_open`` for open tasks, ``ix_user_task_created`` for all,
``ix_user_task_assignee`` for one assignee) and cut with LIMIT/OFFSET.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, and_, false, func, or_, select

from bpm.runtime.records import UserTask
from bpm.runtime.states import InstanceState, UserTaskState
from bpm.store import dialect
from bpm.store import tables as t
from bpm.store.rows import record_of

ut = t.user_task
pi = t.process_instance

#: Camunda sort keys -> columns.
TASK_SORTS: dict[str, Any] = {
    "created": ut.c.created_at,
    "startTime": ut.c.created_at,
    "id": ut.c.id,
    "taskId": ut.c.id,
    "name": ut.c.name,
    "taskName": ut.c.name,
    "nameCaseInsensitive": func.lower(ut.c.name),
    "description": ut.c.description,
    "taskDescription": ut.c.description,
    "priority": ut.c.priority,
    "assignee": ut.c.assignee,
    "owner": ut.c.owner,
    "dueDate": ut.c.due_at,
    "followUpDate": ut.c.follow_up_at,
    "instanceId": ut.c.instance_id,
    "processInstanceId": ut.c.instance_id,
    "executionId": ut.c.token_id,
    "taskDefinitionKey": ut.c.node_id,
    "endTime": ut.c.completed_at,
}


@dataclass(frozen=True)
class Viewer:
    """A user and their groups: the tasks they may see are theirs (assignee, owner), or
    name them or one of their groups as a candidate."""

    user_id: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskQuery:
    """Which user tasks to list; every field given must match (AND). ``states``: the task
    states (open only for ``/task``); tuples are "one of"."""

    states: tuple[UserTaskState, ...] = (UserTaskState.OPEN,)
    task_ids: tuple[str, ...] | None = None
    instance_ids: tuple[str, ...] | None = None
    business_keys: tuple[str, ...] | None = None
    business_key_like: str | None = None
    definition_id: str | None = None
    definition_keys: tuple[str, ...] | None = None
    execution_id: str | None = None
    node_ids: tuple[str, ...] | None = None
    node_like: str | None = None
    assignees: tuple[str, ...] | None = None
    assignee_like: str | None = None
    assigned: bool | None = None
    owner: str | None = None
    owner_like: str | None = None
    candidate_groups: tuple[str, ...] | None = None
    candidate_user: str | None = None
    # the groups of candidate_user (Camunda: its groups' tasks are its candidate tasks)
    candidate_user_groups: tuple[str, ...] = ()
    involved_user: str | None = None
    # only the tasks this user may see (assignee, owner, candidate, or a group's candidate)
    visible_to: Viewer | None = None
    include_assigned: bool = False
    with_candidate_groups: bool | None = None
    with_candidate_users: bool | None = None
    name: str | None = None
    name_like: str | None = None
    description: str | None = None
    description_like: str | None = None
    priority: int | None = None
    min_priority: int | None = None
    max_priority: int | None = None
    due_before: datetime | None = None
    due_after: datetime | None = None
    due_on: datetime | None = None
    without_due_date: bool = False
    follow_up_before: datetime | None = None
    follow_up_after: datetime | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    created_on: datetime | None = None
    finished_before: datetime | None = None
    finished_after: datetime | None = None
    suspended: bool | None = None
    instance_finished: bool | None = None
    # the tenants of the task's process definition (Camunda: the task's tenant);
    # ``without_tenant``: also (or, without ``tenant_ids``, only) definitions of none
    tenant_ids: tuple[str, ...] | None = None
    without_tenant: bool = False
    # (Camunda sort key, ascending); the key must be in TASK_SORTS
    sorting: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class TaskRow:
    """A task with what Camunda shows of its instance."""

    task: UserTask
    definition_id: str
    definition_key: str
    business_key: str | None
    instance_state: InstanceState
    tenant_id: str | None = None  # the process definition's (its deployment's)


def _in(column: Any, values: tuple[str, ...] | None) -> list[ColumnElement[bool]]:
    if values is None:
        return []
    return [column.in_(values) if values else false()]


def _conditions(conn: Connection, q: TaskQuery) -> list[ColumnElement[bool]]:
    cond: list[ColumnElement[bool]] = []
    if q.states:
        cond.append(ut.c.state.in_([s.value for s in q.states]))
    cond += _in(ut.c.id, q.task_ids)
    cond += _in(ut.c.instance_id, q.instance_ids)
    cond += _in(pi.c.business_key, q.business_keys)
    cond += _in(pi.c.definition_key, q.definition_keys)
    cond += _in(ut.c.node_id, q.node_ids)
    cond += _in(ut.c.assignee, q.assignees)
    simple: list[tuple[Any, Any]] = [
        (pi.c.definition_id, q.definition_id),
        (ut.c.token_id, q.execution_id),
        (ut.c.owner, q.owner),
        (ut.c.name, q.name),
        (ut.c.description, q.description),
        (ut.c.priority, q.priority),
    ]
    cond += [column == value for column, value in simple if value is not None]
    likes: list[tuple[Any, str | None]] = [
        (pi.c.business_key, q.business_key_like),
        (ut.c.node_id, q.node_like),
        (ut.c.assignee, q.assignee_like),
        (ut.c.owner, q.owner_like),
        (ut.c.name, q.name_like),
        (ut.c.description, q.description_like),
    ]
    cond += [column.like(value) for column, value in likes if value is not None]
    ranges: list[tuple[Any, Any, bool]] = [
        (ut.c.priority, q.min_priority, True),
        (ut.c.priority, q.max_priority, False),
        (ut.c.due_at, q.due_after, True),
        (ut.c.due_at, q.due_before, False),
        (ut.c.follow_up_at, q.follow_up_after, True),
        (ut.c.follow_up_at, q.follow_up_before, False),
        (ut.c.created_at, q.created_after, True),
        (ut.c.created_at, q.created_before, False),
        (ut.c.completed_at, q.finished_after, True),
        (ut.c.completed_at, q.finished_before, False),
    ]
    for column, bound, lower in ranges:
        if bound is not None:
            cond.append(column > bound if lower else column < bound)
    for column, when in ((ut.c.due_at, q.due_on), (ut.c.created_at, q.created_on)):
        if when is not None:  # Camunda compares these to the millisecond
            cond.append(and_(column >= when, column < when.replace(microsecond=999999)))
    if q.without_due_date:
        cond.append(ut.c.due_at.is_(None))
    if q.assigned is not None:
        cond.append(ut.c.assignee.is_not(None) if q.assigned else ut.c.assignee.is_(None))
    candidates: list[ColumnElement[bool]] = []
    for group in q.candidate_groups or ():
        candidates.append(dialect.json_array_contains(conn, ut.c.candidate_groups, group))
    if q.candidate_user is not None:
        candidates.append(dialect.json_array_contains(conn, ut.c.candidate_users, q.candidate_user))
        for group in q.candidate_user_groups:
            candidates.append(dialect.json_array_contains(conn, ut.c.candidate_groups, group))
    if q.candidate_groups is not None or q.candidate_user is not None:
        # Camunda: a candidate query finds only unassigned tasks unless told otherwise
        cond.append(or_(*candidates) if candidates else false())
        if not q.include_assigned:
            cond.append(ut.c.assignee.is_(None))
    for column, wanted in (
        (ut.c.candidate_groups, q.with_candidate_groups),
        (ut.c.candidate_users, q.with_candidate_users),
    ):
        if wanted is not None:
            length = dialect.json_array_length(conn, column)
            cond.append(length > 0 if wanted else length == 0)
    if q.involved_user is not None:
        u = q.involved_user
        cond.append(
            or_(
                ut.c.assignee == u,
                ut.c.owner == u,
                dialect.json_array_contains(conn, ut.c.candidate_users, u),
            )
        )
    if q.visible_to is not None:
        v = q.visible_to
        cond.append(
            or_(
                ut.c.assignee == v.user_id,
                ut.c.owner == v.user_id,
                dialect.json_array_contains(conn, ut.c.candidate_users, v.user_id),
                *(dialect.json_array_contains(conn, ut.c.candidate_groups, g) for g in v.groups),
            )
        )
    if q.suspended is not None:
        suspended = pi.c.state == InstanceState.SUSPENDED.value
        cond.append(suspended if q.suspended else ~suspended)
    if q.instance_finished is not None:
        ended = pi.c.ended_at.is_not(None)
        cond.append(ended if q.instance_finished else ~ended)
    tenants = tenant_condition(pi.c.definition_id, q.tenant_ids, q.without_tenant)
    if tenants is not None:
        cond.append(tenants)
    return cond


def tenant_condition(
    definition_id: Any, tenant_ids: tuple[str, ...] | None, without_tenant: bool
) -> ColumnElement[bool] | None:
    """Rows whose process definition belongs to one of ``tenant_ids`` or, with
    ``without_tenant``, to none (instances and tasks keep their definition's tenant)."""
    if tenant_ids is None and not without_tenant:
        return None
    pd = t.process_definition
    parts: list[ColumnElement[bool]] = []
    if tenant_ids is not None:
        parts.append(
            definition_id.in_(select(pd.c.id).where(pd.c.tenant_id.in_(tenant_ids)))
            if tenant_ids
            else false()
        )
    if without_tenant:
        parts.append(definition_id.in_(select(pd.c.id).where(pd.c.tenant_id.is_(None))))
    return or_(*parts)


def _select(conn: Connection, q: TaskQuery) -> Select[Any]:
    return (
        select(
            ut,
            pi.c.definition_id,
            pi.c.definition_key,
            pi.c.business_key,
            pi.c.state.label("instance_state"),
            # one primary-key lookup per row of the page
            select(t.process_definition.c.tenant_id)
            .where(t.process_definition.c.id == pi.c.definition_id)
            .scalar_subquery()
            .label("tenant_id"),
        )
        .join(pi, pi.c.id == ut.c.instance_id)
        .where(*_conditions(conn, q))
    )


def list_tasks(conn: Connection, q: TaskQuery, *, offset: int, limit: int) -> list[TaskRow]:
    """A page of tasks in ``q.sorting`` order (default: oldest first), ties oldest first."""
    order: list[Any] = []
    for key, ascending in q.sorting or (("created", True),):
        column = TASK_SORTS[key]
        order.append(column.asc() if ascending else column.desc())
    if q.sorting:
        order.append(ut.c.created_at)  # ties: oldest first
    order.append(ut.c.id)
    stmt = _select(conn, q).order_by(*order).offset(offset).limit(limit)
    return [
        TaskRow(
            task=record_of(UserTask, r._mapping),
            definition_id=r.definition_id,
            definition_key=r.definition_key,
            business_key=r.business_key,
            instance_state=InstanceState(r.instance_state),
            tenant_id=r.tenant_id,
        )
        for r in conn.execute(stmt)
    ]


def _needs_instance(q: TaskQuery) -> bool:
    """Whether a filter reads the task's instance (else a count reads ``user_task`` alone)."""
    return q.without_tenant or any(
        value is not None
        for value in (
            q.business_keys,
            q.business_key_like,
            q.definition_id,
            q.definition_keys,
            q.suspended,
            q.instance_finished,
            q.tenant_ids,
        )
    )


def count_tasks(conn: Connection, q: TaskQuery) -> int:
    """How many tasks match (an index-only count of ``user_task`` unless a filter reads
    the instance)."""
    source = ut.join(pi, pi.c.id == ut.c.instance_id) if _needs_instance(q) else ut
    stmt = select(func.count()).select_from(source).where(*_conditions(conn, q))
    return int(conn.execute(stmt).scalar_one())
