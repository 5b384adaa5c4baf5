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

from bpm.builder import Process
from bpm.engine.modification import Cancel
from bpm.engine.queries import ActivityQuery
from bpm.store.history_queries import InstanceQuery
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


def test_nested_fork_join_activity_instances(kit: BpmTest) -> None:
    # ParallelGatewayTest.testNestedForkJoin: the activity instance counts along the way
    # (1, 2, 2 with a token waiting in a join, 3, then 1)
    kit.deploy(MODELS / "ParallelGatewayTest.testNestedForkJoin.bpmn20.xml")
    inst = kit.start("nestedForkJoin")

    def children() -> int:
        return len(kit.engine.activity_instances(inst.id).child_activity_instances)

    assert children() == 1
    complete_named(kit, inst.id, "Task 0")
    assert children() == 2
    complete_named(kit, inst.id, "Task A")
    assert children() == 2
    complete_named(kit, inst.id, "Task B")
    assert children() == 3
    complete_named(kit, inst.id, "Task B1")
    complete_named(kit, inst.id, "Task B2")
    assert names(kit, inst.id) == ["Task C"]
    assert children() == 1


def test_recycling_execution_with_call_activity(kit: BpmTest) -> None:
    # ParallelGatewayTest.testReceyclingExecutionWithCallActivity (ACT-1222)
    kit.deploy(MODELS / "ParallelGatewayTest.testReceyclingExecutionWithCallActivity.bpmn20.xml")
    kit.start("parent-process")

    def all_names() -> list[str]:
        return sorted(t.name or "" for t in kit.engine.user_tasks())

    assert all_names() == ["Another task", "Some Task"]
    (some,) = [t for t in kit.engine.user_tasks() if t.name == "Some Task"]
    kit.engine.complete_user_task(some.id, {})
    kit.run()
    assert all_names() == ["Another task"]
    (another,) = kit.engine.user_tasks()
    kit.engine.complete_user_task(another.id, {})
    kit.run()
    assert kit.engine.user_tasks() == []
    assert kit.engine.instances("active") == []


@pytest.mark.parametrize("method", ["testCompletingJoin", "testCompletingJoinInSubProcess"])
def test_completing_join(kit: BpmTest, method: str) -> None:
    # ParallelGatewayTest.{method}: a join with no outgoing flow ends the instance
    kit.deploy(MODELS / f"ParallelGatewayTest.{method}.bpmn")
    inst = kit.start("process")
    assert_that(inst).is_completed()


def test_async_parallel_gateway_after_scope_task(kit: BpmTest) -> None:
    # ParallelGatewayTest.testAsyncParallelGatewayAfterScopeTask: asyncBefore on the join is
    # ignored here (the two jobs the original executes are steps the kit runs)
    kit.deploy(MODELS / "ParallelGatewayTest.testAsyncParallelGatewayAfterScopeTask.bpmn20.xml")
    inst = kit.start("process")
    assert_that(inst).is_active()
    (task,) = kit.engine.user_tasks()
    kit.engine.complete_user_task(task.id, {})
    kit.run()
    assert kit.engine.instances("active") == []
    assert_that(inst).is_completed()


def test_parallel_gateway_before_and_in_sub_process(kit: BpmTest) -> None:
    # ParallelGatewayTest.testParallelGatewayBeforeAndInSubProcess
    kit.deploy(MODELS / "ParallelGatewayTest.testParallelGatewayBeforeAndInSubProcess.bpmn")
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 3
    tree = kit.engine.activity_instances(inst.id)
    assert tree.activity_name == "Process1"
    seen = []
    for child in tree.child_activity_instances:
        if child.activity_id == "SubProcess_1":
            inner = [c.activity_name for c in child.child_activity_instances]
            assert sorted(n or "" for n in inner) == ["Inner User Task 1", "Inner User Task 2"]
        else:
            assert child.activity_name == "Outer User Task"
        seen.append(child.activity_id)
    assert sorted(seen) == ["SubProcess_1", "UserTask_1"]


@pytest.mark.parametrize(
    "method",
    [
        "testImplicitParallelGatewayAfterSignalBehavior",
        "testExplicitParallelGatewayAfterSignalBehavior",
    ],
)
def test_parallel_gateway_after_signal_behavior(kit: BpmTest, method: str) -> None:
    # ParallelGatewayTest.{method}: the service task (Camunda's SignalableBehavior, a wait
    # state that leaves when signalled) leaves along every outgoing flow, without an error:
    # three tasks. The behaviour's leave() is its inline handler returning here; the
    # flows' take listeners (SequenceFlowListener: a no-op) are handlers doing nothing.
    kit.handler("org.camunda.bpm.engine.test.bpmn.gateway.SignalableBehavior", lambda ctx: None)
    kit.handler("org.camunda.bpm.engine.test.bpmn.gateway.SequenceFlowListener", lambda ctx: None)
    kit.deploy(MODELS / f"ParallelGatewayTest.{method}.bpmn20.xml")
    inst = kit.start("process")
    assert_that(inst).has_no_incidents()
    assert len(kit.engine.user_tasks()) == 3


def test_parallel_gateway_cancellation_history_event(kit: BpmTest) -> None:
    # ParallelGatewayTest.testParallelGatewayCancellationHistoryEvent (the fluent model is
    # built with this engine's builder): cancelling the message wait, then the token
    # waiting in the merging gateway, ends the instance; both historic activity instances
    # have their end time (the modification's time)
    kit.deploy(
        Process("parallelProcess")
        .start("start")
        .parallel("Gateway_in")
        .receive_message("Event_Wait", "Message_1")
        .parallel("Gateway_out")
        .end("end")
        .sequence("start", "Gateway_in", "Event_Wait", "Gateway_out", "end")
        .flow("Gateway_in", "Gateway_out")
    )
    inst = kit.start("parallelProcess")
    kit.engine.modify(
        inst.id, [Cancel(activity_id="Event_Wait"), Cancel(activity_id="Gateway_out")]
    )
    kit.run()
    assert kit.engine.instances("active") == []
    assert kit.engine.queries.historic_instances(InstanceQuery(instance_ids=(inst.id,)))
    for node in ("Event_Wait", "Gateway_out"):
        (view,) = kit.engine.queries.activity_instances(
            ActivityQuery(instance_ids=(inst.id,), node_ids=(node,))
        )
        assert view.activity.ended_at == kit.clock.now
