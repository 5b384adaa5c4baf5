"""Reads behind the Camunda REST surface: tasks, variables and history (``engine.queries``).

Every list is a page (``offset``, ``limit``) cut in SQL (see the store modules named in
each method); nothing here writes. History comes from the engine's own tables and history
rows: instances from ``process_instance``, incidents from ``incident``, user tasks from
``user_task``, activity instances from the token events (:mod:`bpm.runtime.activities`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from bpm.engine.core import EngineCore
from bpm.errors import NotFound
from bpm.kinds import activity_type
from bpm.model.process import ProcessModel
from bpm.runtime import activities as act
from bpm.runtime.records import Instance, UserTask
from bpm.runtime.states import InstanceState, UserTaskState
from bpm.store import history as history_codec
from bpm.store import history_queries as hq
from bpm.store import instances as instance_store
from bpm.store import task_queries as tq
from bpm.store import variable_queries as vq
from bpm.store.history_queries import IncidentQuery, IncidentRow, InstanceQuery
from bpm.store.task_queries import TaskQuery, TaskRow, Viewer
from bpm.store.variable_queries import VariableQuery, VariableRow

__all__ = [
    "ActivityQuery",
    "ActivityView",
    "HistoricInstance",
    "IncidentQuery",
    "IncidentRow",
    "InstanceQuery",
    "Queries",
    "TaskQuery",
    "TaskRow",
    "TaskVariables",
    "VariableQuery",
    "VariableRow",
    "Viewer",
]

# History rows read per statement while looking for activity instances.
ACTIVITY_CHUNK = 500


@dataclass(frozen=True)
class HistoricInstance:
    """An instance as ``/history/process-instance`` shows it; ``state`` is Camunda's.

    ``instance.variables`` is empty: lists do not read variables (``get_instance`` does)."""

    instance: Instance
    definition_name: str | None
    definition_version: int
    state: str
    delete_reason: str | None = None
    tenant_id: str | None = None  # the process definition's (its deployment's)


@dataclass(frozen=True)
class ActivityQuery:
    """Which activity instances to list (every field given: AND); newest first with
    ``descending``."""

    instance_ids: tuple[str, ...] | None = None
    node_ids: tuple[str, ...] | None = None
    activity_types: tuple[str, ...] | None = None
    finished: bool | None = None
    canceled: bool | None = None
    descending: bool = False
    execution_id: str | None = None


@dataclass(frozen=True)
class ActivityView:
    activity: act.ActivityInstance
    definition_id: str
    definition_key: str
    activity_name: str | None
    activity_type: str
    task_id: str | None = None
    assignee: str | None = None


@dataclass(frozen=True)
class TaskVariables:
    """The variables visible from a task: today its instance's (with their Camunda types);
    task-local variables will join them here."""

    task: UserTask
    values: dict[str, Any]
    types: dict[str, str]


def camunda_state(
    inst: Instance, last_events: list[dict[str, Any]] | None
) -> tuple[str, str | None]:
    """(Camunda's state of a historic instance, its delete reason).

    Terminated by an operator is ``EXTERNALLY_TERMINATED``; a terminate end event ends the
    instance ``COMPLETED`` (as in Camunda); failed (retries used up with the fail action)
    is ``INTERNALLY_TERMINATED``, and so is compensated (the saga undid its steps);
    compensating is ``ACTIVE``."""
    if inst.state in (InstanceState.ACTIVE, InstanceState.COMPENSATING):
        return "ACTIVE", None
    if inst.state is InstanceState.COMPENSATED:
        return "INTERNALLY_TERMINATED", "compensated"
    if inst.state is InstanceState.SUSPENDED:
        return "SUSPENDED", None
    if inst.state is InstanceState.COMPLETED:
        return "COMPLETED", None
    if inst.state is InstanceState.FAILED:
        return "INTERNALLY_TERMINATED", "failed"
    for event in reversed(last_events or []):
        if event.get("type") == "instance_terminated":
            data = event.get("data") or {}
            if "by" in data and "reason" not in data:
                return "COMPLETED", None
            return "EXTERNALLY_TERMINATED", str(data.get("reason") or "terminated")
    return "EXTERNALLY_TERMINATED", "terminated"


class Queries:
    """The reads of the Camunda REST surface on one engine (``engine.queries``).

    History (instances, activity instances) is read on the read replica when one is
    configured (:meth:`bpm.engine.core.EngineCore.read`); tasks, variables and incidents
    only with ``replica=True`` (``engine.history_queries``, what ``/history/*`` serves):
    the runtime lists stay on the primary, where a client reads what it acts on next."""

    def __init__(self, core: EngineCore, *, replica: bool = False) -> None:
        self.core = core
        self.replica = replica

    def _runtime(self) -> AbstractContextManager[Connection]:
        """Where a read of runtime rows goes: the primary, unless ``replica``."""
        return self.core.read() if self.replica else self.core.db.connect()

    # -- tasks ----------------------------------------------------------------------------
    def tasks(self, q: TaskQuery, *, offset: int = 0, limit: int = 100) -> list[TaskRow]:
        with self._runtime() as conn:
            return tq.list_tasks(conn, q, offset=offset, limit=limit)

    def count_tasks(self, q: TaskQuery) -> int:
        with self._runtime() as conn:
            return tq.count_tasks(conn, q)

    def task(self, task_id: str, *, open_only: bool = True) -> TaskRow:
        """One task (open only, unless ``open_only`` is False); :class:`NotFound` if none."""
        states = (UserTaskState.OPEN,) if open_only else ()
        found = self.tasks(TaskQuery(states=states, task_ids=(task_id,)), limit=1)
        if not found:
            raise NotFound(f"No matching task with id {task_id}")
        return found[0]

    def task_variables(self, task_id: str) -> TaskVariables:
        """The variables visible from an open task (the one read of them, so that
        task-local variables can slot in)."""
        row = self.task(task_id)
        with self._runtime() as conn:
            inst = instance_store.get(conn, row.task.instance_id, with_tokens=False)
        if inst is None:
            raise NotFound(f"No matching task with id {task_id}")
        return TaskVariables(row.task, dict(inst.variables), dict(inst.variable_types))

    # -- variables ------------------------------------------------------------------------
    def variables(
        self, q: VariableQuery, *, offset: int = 0, limit: int = 100
    ) -> list[VariableRow]:
        with self._runtime() as conn:
            return vq.list_variables(conn, q, offset=offset, limit=limit)

    def count_variables(self, q: VariableQuery) -> int:
        with self._runtime() as conn:
            return vq.count_variables(conn, q)

    # -- history: instances ---------------------------------------------------------------
    def historic_instances(
        self, q: InstanceQuery, *, offset: int = 0, limit: int = 100
    ) -> list[HistoricInstance]:
        with self.core.read() as conn:
            rows = hq.list_instances(conn, q, offset=offset, limit=limit)
            terminated = [
                r.instance.id for r in rows if r.instance.state is InstanceState.TERMINATED
            ]
            last = hq.last_events(conn, terminated)
        out = []
        for r in rows:
            state, reason = camunda_state(r.instance, last.get(r.instance.id))
            out.append(
                HistoricInstance(
                    r.instance,
                    r.definition_name,
                    r.definition_version,
                    state,
                    reason,
                    r.tenant_id,
                )
            )
        return out

    def count_historic_instances(self, q: InstanceQuery) -> int:
        with self.core.read() as conn:
            return hq.count_instances(conn, q)

    def historic_instance(self, instance_id: str) -> HistoricInstance:
        found = self.historic_instances(InstanceQuery(instance_ids=(instance_id,)), limit=1)
        if not found:
            raise NotFound(f"Historic process instance with id {instance_id} does not exist")
        return found[0]

    # -- history: incidents ---------------------------------------------------------------
    def incidents(
        self, q: IncidentQuery, *, offset: int = 0, limit: int = 100
    ) -> list[IncidentRow]:
        with self._runtime() as conn:
            return hq.list_incidents(conn, q, offset=offset, limit=limit)

    def count_incidents(self, q: IncidentQuery) -> int:
        with self._runtime() as conn:
            return hq.count_incidents(conn, q)

    # -- history: activity instances ------------------------------------------------------
    def activity_instances(
        self, q: ActivityQuery, *, offset: int = 0, limit: int = 100
    ) -> list[ActivityView]:
        """A page of activity instances in history order (newest first with
        ``q.descending``): history rows are read ``ACTIVITY_CHUNK`` at a time in seq order
        until the page is full, then the ends of the page's activities are read from the
        rows of their instances."""
        found = self._scan(q, need=offset + limit)[offset : offset + limit]
        with self.core.read() as conn:
            ids = sorted({a.instance_id for a in found})
            instances = hq.instances_by_id(conn, ids)
            if q.finished is None and q.canceled is None:  # not paired while scanning
                found = self._with_ends(conn, found)
            tasks = self._user_tasks(conn, ids)
            nodes = {
                (a.instance_id, a.node_id): self._node(
                    conn, instances[a.instance_id].definition_id, a.node_id
                )
                for a in found
                if a.instance_id in instances
            }
        out = []
        for a in found:
            inst = instances.get(a.instance_id)
            if inst is None:
                continue
            node = nodes[(a.instance_id, a.node_id)]
            task = tasks.get(a.token_id)
            out.append(
                ActivityView(
                    activity=a,
                    definition_id=inst.definition_id,
                    definition_key=inst.definition_key,
                    activity_name=node.name if node else None,
                    activity_type=activity_type(node),
                    task_id=task.id if task else None,
                    assignee=task.assignee if task else None,
                )
            )
        return out

    def count_activity_instances(self, q: ActivityQuery) -> int:
        """How many activity instances match: the same scan as a page, to the end (without
        an instance filter that reads the whole history)."""
        return len(self._scan(q, need=None))

    def _scan(self, q: ActivityQuery, *, need: int | None) -> list[act.ActivityInstance]:
        out: list[act.ActivityInstance] = []
        after: int | None = None
        with self.core.read() as conn:
            while need is None or len(out) < need:
                rows = hq.history_rows(
                    conn,
                    instance_ids=q.instance_ids,
                    after=after,
                    descending=q.descending,
                    # a row starts one activity or more: read about as many as needed
                    limit=ACTIVITY_CHUNK
                    if need is None
                    else min(ACTIVITY_CHUNK, need - len(out) + 1),
                )
                if not rows:
                    break
                after = rows[-1].seq
                decoded = [
                    (r.seq, history_codec.decode(r.instance_id, r.at, r.events)) for r in rows
                ]
                started = act.starts(decoded)
                started.sort(key=lambda a: (a.seq, a.position), reverse=q.descending)
                if q.node_ids is not None:
                    started = [a for a in started if a.node_id in q.node_ids]
                if q.execution_id is not None:
                    started = [a for a in started if a.token_id == q.execution_id]
                if q.activity_types is not None and started:
                    defs = hq.instances_by_id(conn, sorted({a.instance_id for a in started}))
                    started = [a for a in started if self._typed(conn, q, defs, a)]
                if q.finished is not None or q.canceled is not None:
                    started = [a for a in self._with_ends(conn, started) if _ends_match(q, a)]
                out.extend(started)
        return out

    def _typed(
        self, conn: Any, q: ActivityQuery, instances: dict[str, Instance], a: act.ActivityInstance
    ) -> bool:
        inst = instances.get(a.instance_id)
        node = self._node(conn, inst.definition_id, a.node_id) if inst else None
        return q.activity_types is not None and activity_type(node) in q.activity_types

    def _with_ends(
        self, conn: Any, found: list[act.ActivityInstance]
    ) -> list[act.ActivityInstance]:
        if not found:
            return found
        rows = hq.rows_from(conn, sorted({a.instance_id for a in found}), min(a.seq for a in found))
        events = [e for r in rows for e in history_codec.decode(r.instance_id, r.at, r.events)]
        ended = act.ends(events)
        return [act.ended(a, ended) for a in found]

    def _user_tasks(self, conn: Any, instance_ids: list[str]) -> dict[str, UserTask]:
        """The user task of each token of the instances (by token id)."""
        return {task.token_id: task for task in hq.user_tasks_of(conn, instance_ids)}

    def _node(self, conn: Any, definition_id: str, node_id: str) -> Any:
        try:
            model: ProcessModel = self.core.model(conn, definition_id)  # cached
        except NotFound:
            return None
        return model.nodes.get(node_id)


def _ends_match(q: ActivityQuery, a: act.ActivityInstance) -> bool:
    if q.finished is not None and (a.ended_at is not None) != q.finished:
        return False
    return q.canceled is None or a.canceled == q.canceled
