"""Camunda 7's MessageIntermediateEventTest, ported (issue 21, item 2): each test deploys
the original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and
asserts what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/message/MessageIntermediateEventTest.java. ``messageEventReceived(name,
executionId)`` is ``correlate(name, instance_id=...)``. Left-out methods: LEFT_OUT.md.
"""

from __future__ import annotations

import pytest

from bpm.errors import DeploymentError
from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, complete_one, open_subscriptions

SINGLE = MODELS / "MessageIntermediateEventTest.testSingleIntermediateMessageEvent.bpmn20.xml"


@pytest.mark.parametrize(
    ("method", "variables", "message"),
    [
        ("testSingleIntermediateMessageEvent", {}, "newInvoiceMessage"),
        ("testExpressionInSingleIntermediateMessageEvent", {"foo": "bar"}, "newInvoiceMessage-bar"),
    ],
)
def test_single_intermediate_message_event(
    kit: BpmTest, method: str, variables: dict[str, str], message: str
) -> None:
    # MessageIntermediateEventTest.{method}: the one active activity is messageCatch,
    # subscribed to the message (named newInvoiceMessage-${foo} in the second)
    kit.deploy(MODELS / f"MessageIntermediateEventTest.{method}.bpmn20.xml")
    inst = kit.start("process", variables)
    assert kit.waiting_at(inst) == ["messageCatch"]
    assert open_subscriptions(kit) == [("message", message, "messageCatch")]
    kit.correlate(message, instance=inst)
    (task,) = kit.engine.user_tasks()
    complete_one(kit, task.node_id)
    assert_that(inst).is_completed()


def test_intermediate_message_event_redeployment(kit: BpmTest) -> None:
    # MessageIntermediateEventTest.testIntermediateMessageEventRedeployment: deploying the
    # file again leaves the waiting instance where it is. (Camunda counts a second
    # definition; the same content deployed again is the same version here, docs/bpmn.md
    # "Deploying", so there is one.)
    kit.deploy(SINGLE)
    assert len(kit.engine.definitions()) == 1
    inst = kit.start("process")
    assert kit.waiting_at(inst) == ["messageCatch"]
    kit.deploy(SINGLE)
    assert len(kit.engine.definitions()) == 1
    assert kit.waiting_at(inst) == ["messageCatch"]
    assert open_subscriptions(kit) == [("message", "newInvoiceMessage", "messageCatch")]


def test_empty_message_name_fails(kit: BpmTest) -> None:
    # MessageIntermediateEventTest.testEmptyMessageNameFails: "Cannot have a message event
    # subscription with an empty or missing name", on messageCatch; nothing deploys
    with pytest.raises(DeploymentError) as refused:
        kit.deploy(MODELS / "MessageIntermediateEventTest.testEmptyMessageNameFails.bpmn20.xml")
    (problem,) = refused.value.problems
    assert problem.element_id == "messageCatch"
    assert "has no name" in problem.message
    assert kit.engine.definitions() == []
