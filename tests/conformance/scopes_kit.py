"""What the scope-and-task ports (``test_camunda_<area>.py`` of sub-processes, event
sub-processes, multi-instance, call activities, compensation, escalation and tasks) share:
Camunda's task queries, activity instance trees, subscriptions and history in our terms (the
``kit`` fixture is conftest.py's).

A Camunda test's ``taskService.createTaskQuery()...list()`` is :func:`task_names` or
:func:`task_nodes`; ``runtimeService.getActivityInstance`` with
``describeActivityInstanceTree(...).beginScope(...).activity(...)`` is :func:`tree`, a nested
tuple of ``(activity id, children)`` sorted by activity id (the order of siblings in a Camunda
tree is not part of what its tests assert).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bpm.engine.activity_tree import ActivityInstance
from bpm.engine.queries import ActivityQuery, ActivityView
from bpm.runtime.records import UserTask
from bpm.store import tables as t
from bpm.testing import BpmTest
from tests.conformance.conftest import MODELS

Tree = tuple[tuple[str, "Tree"], ...]


def deploy(kit: BpmTest, *files: str) -> None:
    """Deploy Camunda's model files (names in :data:`MODELS`) in one deployment."""
    kit.deploy(*(MODELS / f for f in files))


def open_tasks(kit: BpmTest, instance_id: str | None = None) -> list[UserTask]:
    """The open user tasks (of one instance, or of all: Camunda's query without
    ``processInstanceId``), ordered by name then node."""
    tasks = kit.engine.user_tasks(instance_id)
    return sorted(tasks, key=lambda t: (t.name or "", t.node_id, t.created_at, t.id))


def task_names(kit: BpmTest, instance_id: str | None = None) -> list[str]:
    """The open tasks' names, sorted (``orderByTaskName().asc()``)."""
    return [t.name or "" for t in open_tasks(kit, instance_id)]


def task_nodes(kit: BpmTest, instance_id: str | None = None) -> list[str]:
    """The open tasks' activity ids (``taskDefinitionKey``), sorted."""
    return sorted(t.node_id for t in open_tasks(kit, instance_id))


def complete_named(
    kit: BpmTest, name: str, variables: dict[str, Any] | None = None, instance_id: str | None = None
) -> None:
    """Complete the one open task called ``name`` and run what follows."""
    found = [t for t in open_tasks(kit, instance_id) if t.name == name]
    assert len(found) == 1, f"{len(found)} open tasks named {name!r}: {task_names(kit)}"
    kit.engine.complete_user_task(found[0].id, dict(variables or {}))
    kit.run()


def complete_task(kit: BpmTest, task: UserTask, variables: dict[str, Any] | None = None) -> None:
    """Complete ``task`` and run what follows."""
    kit.engine.complete_user_task(task.id, dict(variables or {}))
    kit.run()


def complete_all(kit: BpmTest, node_id: str | None = None) -> None:
    """Complete every open task (at ``node_id``), one after the other."""
    for task in open_tasks(kit):
        if node_id is None or task.node_id == node_id:
            complete_task(kit, task)


def _shape(node: ActivityInstance) -> Tree:
    children = [(c.activity_id, _shape(c)) for c in node.child_activity_instances]
    children += [(t.activity_id, ()) for t in node.child_transition_instances]
    return tuple(sorted(children))


def tree(kit: BpmTest, instance_id: str) -> Tree:
    """The activity instance tree below the process instance, as nested sorted tuples."""
    return _shape(kit.engine.activity_instances(instance_id))


def leaf(activity_id: str) -> tuple[str, Tree]:
    """An activity instance with nothing below it."""
    return (activity_id, ())


def scope(activity_id: str, *children: tuple[str, Tree]) -> tuple[str, Tree]:
    """An activity instance (a sub-process, a body) with ``children`` below it."""
    return (activity_id, tuple(sorted(children)))


def shape(*children: tuple[str, Tree]) -> Tree:
    """The expected tree below the process instance."""
    return tuple(sorted(children))


def ended(kit: BpmTest, instance_id: str) -> bool:
    """Camunda's ``assertProcessEnded``: the instance is no longer running."""
    return kit.instance(instance_id).ended


def subscriptions(kit: BpmTest, instance_id: str | None = None) -> list[tuple[str, str]]:
    """Camunda's ``createEventSubscriptionQuery()``: (kind, activity id) of the open message
    and signal waits, and of the completed activities compensation may still undo
    (Camunda's ``compensate`` subscriptions), sorted."""
    es, comp = t.event_subscription, t.compensable
    with kit.engine.db.connect() as conn:
        waits = select(es.c.kind, es.c.node_id).where(
            es.c.state == "open", es.c.instance_id.is_not(None)
        )
        undo = select(comp.c.node_id).where(comp.c.state == "recorded")
        if instance_id is not None:
            waits = waits.where(es.c.instance_id == instance_id)
            undo = undo.where(comp.c.instance_id == instance_id)
        found = [(str(k), str(node)) for k, node in conn.execute(waits)]
        found += [("compensate", str(node)) for (node,) in conn.execute(undo)]
    return sorted(found)


def history(
    kit: BpmTest,
    *,
    activity_type: str | None = None,
    activity_id: str | None = None,
    instance_id: str | None = None,
) -> list[ActivityView]:
    """Camunda's ``createHistoricActivityInstanceQuery()`` (``activityType``,
    ``activityId``, ``processInstanceId``), in history order."""
    q = ActivityQuery(
        instance_ids=None if instance_id is None else (instance_id,),
        node_ids=None if activity_id is None else (activity_id,),
        activity_types=None if activity_type is None else (activity_type,),
    )
    return kit.engine.history_queries.activity_instances(q, limit=10_000)


def message_subscription_ids(kit: BpmTest, node_id: str | None = None) -> list[str]:
    """The ids of the open message waits (``eventType(MESSAGE)``, ``activityId``), sorted."""
    es = t.event_subscription
    q = select(es.c.id).where(
        es.c.state == "open", es.c.kind == "message", es.c.instance_id.is_not(None)
    )
    if node_id is not None:
        q = q.where(es.c.node_id == node_id)
    with kit.engine.db.connect() as conn:
        return sorted(str(x) for (x,) in conn.execute(q))
