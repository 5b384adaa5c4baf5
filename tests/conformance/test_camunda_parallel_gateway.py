"""Camunda 7's ParallelGatewayTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/gateway/ParallelGatewayTest.java
(the unstructured and unbalanced cases are in tests/test_semantics_21.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bpm.testing import BpmTest, assert_that

MODELS = Path(__file__).parent / "models" / "camunda"


@pytest.fixture
def kit(database_url: str) -> Iterator[BpmTest]:
    k = BpmTest.create(database_url)
    undo = k.activate()
    try:
        yield k
    finally:
        undo()
        k.close()


def names(kit: BpmTest, instance_id: str) -> list[str]:
    """The open tasks' names, ordered by name (the original's orderByTaskName)."""
    return sorted(t.name or "" for t in kit.engine.user_tasks(instance_id))


def complete_named(kit: BpmTest, instance_id: str, name: str) -> None:
    (task,) = [t for t in kit.engine.user_tasks(instance_id) if t.name == name]
    kit.engine.complete_user_task(task.id, {})
    kit.run()


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("testSplitMergeNoWaitstates", "forkJoinNoWaitStates"),
        ("testForkFollowedByOnlyEndEvents", "forkFollowedByEndEvents"),
        ("testNestedForksFollowedByEndEvents", "nestedForksFollowedByEndEvents"),
    ],
)
def test_ends_at_once(kit: BpmTest, method: str, key: str) -> None:
    # ParallelGatewayTest.{method}: assertTrue(processInstance.isEnded())
    kit.deploy(MODELS / f"ParallelGatewayTest.{method}.bpmn20.xml")
    inst = kit.start(key)
    assert_that(inst).is_completed()


def test_fork_join(kit: BpmTest) -> None:
    # ParallelGatewayTest.testForkJoin
    kit.deploy(MODELS / "ParallelGatewayTest.testForkJoin.bpmn20.xml")
    inst = kit.start("forkJoin")
    assert names(kit, inst.id) == ["Receive Payment", "Ship Order"]
    complete_named(kit, inst.id, "Receive Payment")
    complete_named(kit, inst.id, "Ship Order")
    assert names(kit, inst.id) == ["Archive Order"]


def test_nested_fork_join(kit: BpmTest) -> None:
    # ParallelGatewayTest.testNestedForkJoin (ACT-482)
    kit.deploy(MODELS / "ParallelGatewayTest.testNestedForkJoin.bpmn20.xml")
    inst = kit.start("nestedForkJoin")
    assert names(kit, inst.id) == ["Task 0"]
    complete_named(kit, inst.id, "Task 0")
    assert names(kit, inst.id) == ["Task A", "Task B"]
    complete_named(kit, inst.id, "Task A")
    assert names(kit, inst.id) == ["Task B"]
    complete_named(kit, inst.id, "Task B")
    assert names(kit, inst.id) == ["Task B1", "Task B2"]
    complete_named(kit, inst.id, "Task B1")
    complete_named(kit, inst.id, "Task B2")
    assert names(kit, inst.id) == ["Task C"]
