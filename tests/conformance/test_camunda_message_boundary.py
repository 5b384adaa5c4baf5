"""Camunda 7's MessageBoundaryEventTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/message/MessageBoundaryEventTest.java. ``messageEventReceived(name,
executionId)`` is ``correlate(name, instance_id=...)`` (the instance's one wait of that
name); Camunda's event subscriptions are the open waits (``open_subscriptions``), and its
execution counts (the execution tree, no equivalent) are not asserted. Left-out methods:
LEFT_OUT.md.
"""

from __future__ import annotations

import pytest

from bpm.errors import DeploymentError, MessageCorrelationError
from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, complete_one, open_subscriptions


def deploy(kit: BpmTest, method: str, ext: str = "bpmn20.xml") -> None:
    kit.deploy(MODELS / f"MessageBoundaryEventTest.{method}.{ext}")


def waits(kit: BpmTest, name: str) -> int:
    """How many open waits for message ``name`` (Camunda: executions subscribed to it)."""
    return len([s for s in open_subscriptions(kit, "message") if s[1] == name])


def only_task(kit: BpmTest) -> str:
    (task,) = kit.engine.user_tasks()
    return task.node_id


def no_instance_left(kit: BpmTest) -> bool:
    return kit.engine.instances("active") == []


@pytest.mark.parametrize(
    "method", ["testSingleBoundaryMessageEvent", "testBoundaryMessageEventInsideSubprocess"]
)
def test_single_boundary_message_event(kit: BpmTest, method: str) -> None:
    # MessageBoundaryEventTest.{method}: the message interrupts the task; or the task
    # completes and the wait is gone
    deploy(kit, method)
    inst = kit.start("process")
    only_task(kit)
    assert waits(kit, "messageName") == 1
    kit.correlate("messageName", instance=inst)
    assert only_task(kit) == "taskAfterMessage"
    complete_one(kit, "taskAfterMessage")
    assert no_instance_left(kit)

    kit.start("process")
    complete_one(kit, only_task(kit))
    assert waits(kit, "messageName") == 0
    assert only_task(kit) == "taskAfterTask"
    complete_one(kit, "taskAfterTask")
    assert no_instance_left(kit)


def test_double_boundary_message_event_same_message_id(kit: BpmTest) -> None:
    # MessageBoundaryEventTest.testDoubleBoundaryMessageEventSameMessageId: two boundary
    # events of one message on one task are refused, one problem naming the second; nothing
    # deploys
    before = kit.engine.deployments(), kit.engine.definitions()
    with pytest.raises(DeploymentError, match="message 'messageName'") as caught:
        deploy(kit, "testDoubleBoundaryMessageEventSameMessageId")
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].element_id == "messageBoundary_2"
    assert "on 'task'" in caught.value.problems[0].message
    assert (kit.engine.deployments(), kit.engine.definitions()) == before


def test_double_boundary_message_event(kit: BpmTest) -> None:
    # MessageBoundaryEventTest.testDoubleBoundaryMessageEvent: two messages on one task; the
    # first interrupts it, the second then has no wait ("does not have a subscription")
    deploy(kit, "testDoubleBoundaryMessageEvent")
    inst = kit.start("process")
    only_task(kit)
    assert waits(kit, "messageName_1") == 1
    assert waits(kit, "messageName_2") == 1
    kit.correlate("messageName_1", instance=inst)
    with pytest.raises(MessageCorrelationError):
        kit.correlate("messageName_2", instance=inst)
    assert only_task(kit) == "taskAfterMessage_1"
    complete_one(kit, "taskAfterMessage_1")
    assert no_instance_left(kit)

    kit.start("process")
    complete_one(kit, only_task(kit))
    assert waits(kit, "messageName_1") == 0
    assert waits(kit, "messageName_2") == 0
    assert only_task(kit) == "taskAfterTask"
    complete_one(kit, "taskAfterTask")
    assert no_instance_left(kit)


def test_double_boundary_message_event_multi_instance(kit: BpmTest) -> None:
    # MessageBoundaryEventTest.testDoubleBoundaryMessageEventMultiInstance: the boundary
    # events are on the multi-instance body: one wait each for its five tasks
    deploy(kit, "testDoubleBoundaryMessageEventMultiInstance")
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 5
    assert waits(kit, "messageName_1") == 1
    assert waits(kit, "messageName_2") == 1
    kit.correlate("messageName_1", instance=inst)
    with pytest.raises(MessageCorrelationError):
        kit.correlate("messageName_2", instance=inst)
    assert only_task(kit) == "taskAfterMessage_1"
    complete_one(kit, "taskAfterMessage_1")
    assert_that(inst).is_completed()

    inst = kit.start("process")
    tasks = kit.engine.user_tasks()
    assert len(tasks) == 5
    for task in tasks[:-1]:
        kit.engine.complete_user_task(task.id, {})
        kit.run()
        assert waits(kit, "messageName_1") == 1
        assert waits(kit, "messageName_2") == 1
    kit.engine.complete_user_task(tasks[-1].id, {})
    kit.run()
    assert waits(kit, "messageName_1") == 0
    assert waits(kit, "messageName_2") == 0
    assert only_task(kit) == "taskAfterTask"
    complete_one(kit, "taskAfterTask")
    assert_that(inst).is_completed()


def test_boundary_message_event_on_subprocess_and_inside_subprocess(kit: BpmTest) -> None:
    # MessageBoundaryEventTest.testBoundaryMessageEventOnSubprocessAndInsideSubprocess
    deploy(kit, "testBoundaryMessageEventOnSubprocessAndInsideSubprocess")
    # 1: the inner task completes, then the task after it
    kit.start("process")
    assert waits(kit, "messageName") == 1
    assert waits(kit, "messageName2") == 1
    complete_one(kit, only_task(kit))
    assert only_task(kit) == "taskAfterTask"
    assert waits(kit, "messageName") == 0
    assert waits(kit, "messageName2") == 1
    complete_one(kit, "taskAfterTask")
    assert waits(kit, "messageName2") == 0
    assert only_task(kit) == "taskAfterSubprocess"
    complete_one(kit, "taskAfterSubprocess")
    # 2: the inner boundary's message
    inst = kit.start("process")
    kit.correlate("messageName", instance=inst)
    assert only_task(kit) == "taskAfterMessage"
    assert waits(kit, "messageName") == 0
    assert waits(kit, "messageName2") == 1
    complete_one(kit, "taskAfterMessage")
    assert waits(kit, "messageName2") == 0
    assert only_task(kit) == "taskAfterSubprocess"
    complete_one(kit, "taskAfterSubprocess")
    # 3: the sub-process's boundary message
    inst = kit.start("process")
    kit.correlate("messageName2", instance=inst)
    assert only_task(kit) == "taskAfterOuterMessageBoundary"
    assert waits(kit, "messageName") == 0
    assert waits(kit, "messageName2") == 0
    complete_one(kit, "taskAfterOuterMessageBoundary")
    assert no_instance_left(kit)


def test_boundary_message_event_on_subprocess(kit: BpmTest) -> None:
    # MessageBoundaryEventTest.testBoundaryMessageEventOnSubprocess
    deploy(kit, "testBoundaryMessageEventOnSubprocess")
    for message in ("messageName_one", "messageName_two"):
        inst = kit.start("process")
        only_task(kit)
        assert waits(kit, message) == 1
        kit.correlate(message, instance=inst)
        after = f"taskAfterMessage_{message.split('_')[1]}"
        assert only_task(kit) == after
        complete_one(kit, after)
        assert no_instance_left(kit)
    kit.start("process")
    complete_one(kit, only_task(kit))
    assert waits(kit, "messageName_one") == 0
    assert waits(kit, "messageName_two") == 0
    assert only_task(kit) == "taskAfterSubProcess"
    complete_one(kit, "taskAfterSubProcess")
    assert no_instance_left(kit)


def test_boundary_message_event_on_subprocess_with_intermediate_message_catch(
    kit: BpmTest,
) -> None:
    # MessageBoundaryEventTest.testBoundaryMessageEventOnSubprocessWithIntermediateMessageCatch:
    # the boundary message ends the instance; every historic activity instance has ended
    deploy(kit, "testBoundaryMessageEventOnSubprocessWithIntermediateMessageCatch", "bpmn")
    inst = kit.start("testProcess")
    kit.correlate("cancelMessage")
    assert_that(inst).is_completed()
    from_history = kit.engine.activity_instances(inst.id)
    assert from_history.child_activity_instances == ()


def test_boundary_message_event_on_subprocess_and_inside_subprocess_multi_instance(
    kit: BpmTest,
) -> None:
    # MessageBoundaryEventTest.testBoundaryMessageEventOnSubprocessAndInsideSubprocessMultiInstance
    deploy(kit, "testBoundaryMessageEventOnSubprocessAndInsideSubprocessMultiInstance")
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 5
    assert waits(kit, "messageName") == 5
    assert waits(kit, "messageName2") == 1
    kit.correlate("messageName2", instance=inst)
    assert waits(kit, "messageName") == 0
    assert only_task(kit) == "taskAfterOuterMessageBoundary"
    complete_one(kit, "taskAfterOuterMessageBoundary")


def test_boundary_message_event_concurrent(kit: BpmTest) -> None:
    # MessageBoundaryEventTest.testBoundaryMessageEventConcurrent: triggering one boundary
    # event keeps the concurrent task's
    deploy(kit, "testBoundaryMessageEventConcurrent")
    kit.start("boundaryEvent")
    nodes = [s[2] for s in open_subscriptions(kit)]
    assert sorted(nodes) == ["messageBoundary1", "messageBoundary2"]
    kit.correlate("task1Message")
    assert [s[2] for s in open_subscriptions(kit)] == ["messageBoundary2"]


def test_expression_in_boundary_message_event_name(kit: BpmTest) -> None:
    # MessageBoundaryEventTest.testExpressionInBoundaryMessageEventName: messageName-${foo}
    deploy(kit, "testExpressionInBoundaryMessageEventName")
    inst = kit.start("process", {"foo": "bar"})
    assert waits(kit, "messageName-bar") == 1
    kit.correlate("messageName-bar", instance=inst)
    assert only_task(kit) == "taskAfterMessage"
    complete_one(kit, "taskAfterMessage")
    assert no_instance_left(kit)
