"""Camunda 7's MessageEventSubprocessTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL: open tasks, message subscriptions,
activity instance trees, ended instances. ``messageEventReceived(name, executionId)`` of
the one waiting execution is a correlation to its instance. Camunda's execution counts and
execution trees (``createExecutionQuery().count()``, ``ExecutionTree``) describe its
execution entities, which this engine does not have (tokens and scopes): those lines alone
are not ported.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/message/MessageEventSubprocessTest.java
(left out: see LEFT_OUT.md).
"""

from __future__ import annotations

import pytest

from bpm.testing import BpmTest
from tests.conformance.scopes_kit import (
    complete_task,
    deploy,
    ended,
    leaf,
    message_subscription_ids,
    open_tasks,
    scope,
    shape,
    task_nodes,
    tree,
)

PREFIX = "MessageEventSubprocessTest"


def complete_at(kit: BpmTest, node_id: str) -> None:
    (task,) = [t for t in open_tasks(kit) if t.node_id == node_id]
    complete_task(kit, task)


@pytest.mark.parametrize(
    ("method", "subscriptions"),
    [
        ("testInterruptingUnderProcessDefinition", 1),
        ("testTwoInterruptingUnderProcessDefinition", 2),
    ],
)
def test_interrupting_under_process_definition(
    kit: BpmTest, method: str, subscriptions: int
) -> None:
    # MessageEventSubprocessTest.testInterruptingUnderProcessDefinition,
    # testTwoInterruptingUnderProcessDefinition
    deploy(kit, f"{PREFIX}.{method}.bpmn20.xml")
    pi = kit.start("process")
    assert len(message_subscription_ids(kit)) == subscriptions
    assert task_nodes(kit) == ["task"]
    complete_at(kit, "task")
    assert ended(kit, pi.id)
    assert message_subscription_ids(kit) == []
    pi = kit.start("process")
    kit.correlate("newMessage", instance=pi)
    assert task_nodes(kit) == ["eventSubProcessTask"]
    complete_at(kit, "eventSubProcessTask")
    assert ended(kit, pi.id)
    assert message_subscription_ids(kit) == []


@pytest.mark.parametrize(
    ("method", "by_instance"),
    [
        ("testNonInterruptingUnderProcessDefinition", True),
        ("testNonInterruptingUnderProcessDefinitionScope", False),
        ("testNonInterruptingInEmbeddedSubprocess", False),
    ],
)
def test_non_interrupting(kit: BpmTest, method: str, by_instance: bool) -> None:
    # MessageEventSubprocessTest.{method}: the event sub-process runs beside the task, in
    # either order of completion
    deploy(kit, f"{PREFIX}.{method}.bpmn20.xml")
    pi = kit.start("process")
    assert len(message_subscription_ids(kit)) == 1
    assert task_nodes(kit) == ["task"]
    complete_at(kit, "task")
    assert ended(kit, pi.id)
    assert message_subscription_ids(kit) == []
    for first, second in (("task", "eventSubProcessTask"), ("eventSubProcessTask", "task")):
        pi = kit.start("process")
        kit.correlate("newMessage", instance=pi if by_instance else None)
        assert task_nodes(kit) == ["eventSubProcessTask", "task"]
        if not by_instance:
            assert len(message_subscription_ids(kit)) == 1  # it keeps listening
        complete_at(kit, first)
        complete_at(kit, second)
        assert ended(kit, pi.id)


def test_multiple_non_interrupting_in_embedded_subprocess(kit: BpmTest) -> None:
    # MessageEventSubprocessTest.testMultipleNonInterruptingInEmbeddedSubprocess
    deploy(kit, f"{PREFIX}.testMultipleNonInterruptingInEmbeddedSubprocess.bpmn20.xml")
    pi = kit.start("process")
    assert len(message_subscription_ids(kit)) == 1
    assert [t.node_id for t in open_tasks(kit)] == ["subProcessTask"]
    for i in (1, 2):
        kit.correlate("newMessage", instance=pi)
        assert task_nodes(kit).count("eventSubProcessTask") == i
    complete_at(kit, "subProcessTask")
    assert open_tasks(kit) == []
    assert kit.engine.instances(state="active") == []


def test_non_interrupting_in_multi_sequential_embedded_subprocess(kit: BpmTest) -> None:
    # MessageEventSubprocessTest.testNonInterruptingInMultiSequentialEmbeddedSubprocess
    deploy(kit, f"{PREFIX}.testNonInterruptingInMultiSequentialEmbeddedSubprocess.bpmn20.xml")
    pi = kit.start("process")
    kit.correlate("message", instance=pi)
    assert len(message_subscription_ids(kit)) == 1

    def complete_named_first(name: str) -> None:
        task = next(t for t in open_tasks(kit) if t.name == name)
        complete_task(kit, task)

    complete_named_first("Message User Task")
    complete_named_first("Sub User Task")
    assert len(message_subscription_ids(kit)) == 1
    complete_named_first("Sub User Task")
    assert message_subscription_ids(kit) == []
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


@pytest.mark.parametrize(
    "method",
    [
        "testNonInterruptingWithReceiveTask",
        "testNonInterruptingWithReceiveTaskInsideEmbeddedSubProcess",
        "testNonInterruptingOutsideEmbeddedSubProcessWithReceiveTaskInsideEmbeddedSubProcess",
    ],
)
def test_non_interrupting_with_receive_task(kit: BpmTest, method: str) -> None:
    # MessageEventSubprocessTest.{method}
    deploy(kit, f"{PREFIX}.{method}.bpmn20.xml")
    pi = kit.start("process")
    kit.correlate("firstMessage")
    assert task_nodes(kit) == ["eventSubProcessTask"]
    kit.correlate("secondMessage")
    assert task_nodes(kit) == ["eventSubProcessTask", "userTask"]
    assert len(message_subscription_ids(kit)) == 1
    complete_at(kit, "eventSubProcessTask")
    complete_at(kit, "userTask")
    assert ended(kit, pi.id)


def test_non_interrupting_with_user_task_and_boundary_event_inside_embedded_sub_process(
    kit: BpmTest,
) -> None:
    # MessageEventSubprocessTest.testNonInterruptingWithUserTaskAndBoundaryEvent
    # InsideEmbeddedSubProcess
    deploy(
        kit,
        f"{PREFIX}.testNonInterruptingWithUserTaskAndBoundaryEventInsideEmbeddedSubProcess.bpmn20.xml",
    )
    pi = kit.start("process")
    kit.correlate("newMessage")
    assert task_nodes(kit) == ["eventSubProcessTask", "task"]
    assert len(message_subscription_ids(kit)) == 1
    complete_at(kit, "eventSubProcessTask")
    complete_at(kit, "task")
    assert ended(kit, pi.id)


def test_interrupting_activity_instance_tree(kit: BpmTest) -> None:
    # MessageEventSubprocessTest.testInterruptingActivityInstanceTree
    deploy(kit, f"{PREFIX}.testInterruptingActivityInstanceTree.bpmn20.xml")
    pi = kit.start("process")
    kit.correlate("newMessage")
    assert tree(kit, pi.id) == shape(
        scope("subProcess", scope("eventSubProcess", leaf("eventSubProcessTask")))
    )


def test_non_interrupting_activity_instance_tree(kit: BpmTest) -> None:
    # MessageEventSubprocessTest.testNonInterruptingActivityInstanceTree
    deploy(kit, f"{PREFIX}.testNonInterruptingActivityInstanceTree.bpmn20.xml")
    pi = kit.start("process")
    kit.correlate("newMessage")
    assert tree(kit, pi.id) == shape(
        scope(
            "subProcess",
            leaf("innerTask"),
            scope("eventSubProcess", leaf("eventSubProcessTask")),
        )
    )


def test_non_interrupting_with_terminating_end_event(kit: BpmTest) -> None:
    # MessageEventSubprocessTest.testNonInterruptingWithTerminatingEndEvent: the event
    # sub-process's terminate end ends only itself
    deploy(kit, f"{PREFIX}.testNonInterruptingWithTerminatingEndEvent.bpmn20.xml")
    pi = kit.start("process")
    assert [t.name for t in open_tasks(kit)] == ["Inner User Task"]
    kit.correlate("message")
    (task,) = [t for t in open_tasks(kit) if t.name == "Event User Task"]
    complete_task(kit, task)
    assert tree(kit, pi.id) == shape(scope("SubProcess_1", leaf("UserTask_1")))
