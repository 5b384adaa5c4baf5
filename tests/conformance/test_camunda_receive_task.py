"""Camunda 7's ReceiveTaskTest, ported (issue 21, item 2): each test deploys the original's
BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts what the
original asserts, on SQLite and PostgreSQL. ``runtimeService.signal(executionId)`` and
``messageEventReceived(name, executionId)`` of the one waiting execution are a correlation
to that instance (``kit.correlate(name, instance=...)``); a receive task without
``messageRef`` waits for the message named by its id (docs/events.md).

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/receivetask/ReceiveTaskTest.java
(left out: see LEFT_OUT.md).
"""

from __future__ import annotations

import pytest

from bpm.errors import MessageCorrelationError
from bpm.testing import BpmTest
from tests.conformance.scopes_kit import (
    complete_task,
    deploy,
    ended,
    message_subscription_ids,
    open_tasks,
)

INVOICE = "newInvoiceMessage"


@pytest.mark.parametrize(
    "method",
    [
        "testSupportsLegacySignalingOnSingleReceiveTask",
        "testSupportsMessageEventReceivedOnSingleReceiveTask",
        "testSupportsCorrelateMessageOnSingleReceiveTask",
    ],
)
def test_single_receive_task(kit: BpmTest, method: str) -> None:
    # ReceiveTaskTest.{method}: signal / messageEventReceived / correlateMessage
    deploy(kit, "ReceiveTaskTest.singleReceiveTask.bpmn20.xml")
    pi = kit.start("testProcess")
    assert len(message_subscription_ids(kit)) == 1
    if method == "testSupportsCorrelateMessageOnSingleReceiveTask":
        kit.correlate(INVOICE)
    else:
        kit.correlate(INVOICE, instance=pi)
    assert message_subscription_ids(kit) == []
    assert ended(kit, pi.id)


def test_supports_correlate_message_by_business_key_on_single_receive_task(kit: BpmTest) -> None:
    # ReceiveTaskTest.testSupportsCorrelateMessageByBusinessKeyOnSingleReceiveTask
    deploy(kit, "ReceiveTaskTest.singleReceiveTask.bpmn20.xml")
    pi23 = kit.start("testProcess", business_key="23")
    pi42 = kit.start("testProcess", business_key="42")
    assert len(message_subscription_ids(kit)) == 2
    kit.correlate(INVOICE, business_key="23")
    assert len(message_subscription_ids(kit)) == 1
    assert ended(kit, pi23.id)
    assert not ended(kit, pi42.id)
    kit.correlate(INVOICE, business_key="42")
    assert message_subscription_ids(kit) == []
    assert ended(kit, pi42.id)


@pytest.mark.parametrize(
    "method",
    [
        "testSupportsLegacySignalingOnSequentialMultiReceiveTask",
        "testSupportsMessageEventReceivedOnSequentialMultiReceiveTask",
        "testSupportsCorrelateMessageOnSequentialMultiReceiveTask",
    ],
)
def test_sequential_multi_receive_task(kit: BpmTest, method: str) -> None:
    # ReceiveTaskTest.{method}: each inner instance opens a wait of its own
    deploy(kit, "ReceiveTaskTest.multiSequentialReceiveTask.bpmn20.xml")
    pi = kit.start("testProcess")
    (first,) = message_subscription_ids(kit)
    kit.correlate(INVOICE, instance=None if "Correlate" in method else pi)
    (second,) = message_subscription_ids(kit)
    assert second != first
    kit.correlate(INVOICE, instance=None if "Correlate" in method else pi)
    assert message_subscription_ids(kit) == []
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_not_supports_correlate_message_on_parallel_multi_receive_task(kit: BpmTest) -> None:
    # ReceiveTaskTest.testNotSupportsCorrelateMessageOnParallelMultiReceiveTask: two waits
    # of one instance make the message ambiguous (MismatchingMessageCorrelationException),
    # and nothing changes
    deploy(kit, "ReceiveTaskTest.multiParallelReceiveTask.bpmn20.xml")
    kit.start("testProcess")
    before = message_subscription_ids(kit)
    assert len(before) == 2
    with pytest.raises(MessageCorrelationError):
        kit.correlate(INVOICE)
    assert message_subscription_ids(kit) == before


def test_supports_message_event_received_on_parallel_multi_instance_with_boundary_event_received(
    kit: BpmTest,
) -> None:
    # ReceiveTaskTest.testSupportsMessageEventReceivedOnParallelMultiInstanceWithBoundary
    # EventReceived:
    # the boundary's message cancels both inner instances and their waits
    deploy(kit, "ReceiveTaskTest.multiParallelReceiveTaskBoundary.bpmn20.xml")
    pi = kit.start("testProcess")
    assert len(message_subscription_ids(kit)) == 3
    assert len(message_subscription_ids(kit, "cancel")) == 1
    kit.correlate("cancelInvoiceMessage", instance=pi)
    assert message_subscription_ids(kit) == []
    assert ended(kit, pi.id)


def test_supports_message_event_received_on_sub_process_receive_task(kit: BpmTest) -> None:
    # ReceiveTaskTest.testSupportsMessageEventReceivedOnSubProcessReceiveTask
    deploy(kit, "ReceiveTaskTest.subProcessReceiveTask.bpmn20.xml")
    pi = kit.start("testProcess")
    assert len(message_subscription_ids(kit)) == 1
    kit.correlate(INVOICE, instance=pi)
    assert message_subscription_ids(kit) == []
    assert ended(kit, pi.id)


@pytest.mark.parametrize(
    "method",
    [
        "testSupportsMessageEventReceivedOnReceiveTaskBehindParallelGateway",
        "testSupportsCorrelateMessageOnReceiveTaskBehindParallelGateway",
    ],
)
def test_receive_task_behind_parallel_gateway(kit: BpmTest, method: str) -> None:
    # ReceiveTaskTest.{method}
    deploy(kit, "ReceiveTaskTest.parallelGatewayReceiveTask.bpmn20.xml")
    pi = kit.start("testProcess")
    assert len(message_subscription_ids(kit)) == 2
    target = None if "Correlate" in method else pi
    kit.correlate("Message 1", instance=target)
    kit.correlate("Message 2", instance=target)
    assert message_subscription_ids(kit) == []
    assert ended(kit, pi.id)


def test_wait_state_behavior(kit: BpmTest) -> None:
    # ReceiveTaskTest.testWaitStateBehavior: runtimeService.signal on the receive task
    deploy(kit, "ReceiveTaskTest.testWaitStateBehavior.bpmn20.xml")
    pi = kit.start("receiveTask")
    assert kit.waiting_at(pi) == ["waitState"]
    kit.correlate("waitState", instance=pi)
    assert ended(kit, pi.id)
