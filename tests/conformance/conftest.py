"""Fixtures and helpers shared by the ported Camunda 7 tests (issue 21, item 2)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from bpm.runtime.records import Timer
from bpm.store import tables
from bpm.testing import BpmTest

MODELS = Path(__file__).parent / "models" / "camunda"
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def kit(database_url: str) -> Iterator[BpmTest]:
    """The test kit on each backend (a fresh database per test), its clock at T0."""
    k = BpmTest.create(database_url, start=T0)
    undo = k.activate()
    try:
        yield k
    finally:
        undo()
        k.close()


def open_subscriptions(kit: BpmTest, kind: str | None = None) -> list[tuple[str, str, str]]:
    """(kind, name, node id) of every open message and signal wait, sorted: what Camunda's
    ``createEventSubscriptionQuery()`` counts. The engine has no query for them, so this
    reads the store's table (a test's read, nothing more)."""
    t = tables.event_subscription
    query = select(t.c.kind, t.c.name, t.c.node_id).where(t.c.state == "open")
    if kind is not None:
        query = query.where(t.c.kind == kind)
    with kit.engine.db.connect() as conn:
        return sorted((r.kind, r.name, r.node_id) for r in conn.execute(query))


def execute_job(kit: BpmTest, timer: Timer) -> None:
    """Camunda's ``managementService.executeJob`` for a timer job: the timer fires now,
    whatever its due time, and what it leads to runs."""
    kit.engine.fire_timer_now(timer.id)
    kit.run()


def only_timer(kit: BpmTest, instance_id: str | None = None) -> Timer:
    """The one pending timer (Camunda: ``createJobQuery().singleResult()``)."""
    (timer,) = kit.engine.timers(instance_id)
    return timer


def task_names(kit: BpmTest, instance_id: str | None = None) -> list[str]:
    """The open user tasks' names (every instance's when no id is given), sorted."""
    return sorted(t.name or "" for t in kit.engine.user_tasks(instance_id))


def complete_all(kit: BpmTest, node_id: str | None = None) -> None:
    """Complete every open user task (at ``node_id``), one at a time, running what follows."""
    for task in kit.engine.user_tasks(node_id=node_id):
        kit.engine.complete_user_task(task.id, {})
        kit.run()


def complete_one(kit: BpmTest, node_id: str) -> None:
    """Complete the single open user task at ``node_id`` (Camunda's
    ``taskDefinitionKey(node).singleResult()``; more than one fails)."""
    (task,) = kit.engine.user_tasks(node_id=node_id)
    kit.engine.complete_user_task(task.id, {})
    kit.run()
