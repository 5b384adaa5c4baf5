"""Camunda 7's EscalationEventTest, ported (issue 21, item 2): each test deploys the
original's BPMN files unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL: which tasks are open (counted by name,
``taskQuery().taskName(...).count()``) and the variables the catch sets.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/escalation/EscalationEventTest.java
(left out: see LEFT_OUT.md).
"""

from __future__ import annotations

from collections import Counter

import pytest

from bpm.testing import BpmTest
from tests.conformance.scopes_kit import deploy, open_tasks, task_names

THROW = "EscalationEventTest.throwEscalationEvent.bpmn20.xml"
AFTER = "task after catched escalation"
IN_SUB = "task in subprocess"


def counts(kit: BpmTest) -> Counter[str]:
    return Counter(task_names(kit))


@pytest.mark.parametrize(
    ("method", "key", "expected"),
    [
        (
            "testThrowEscalationEventFromEmbeddedSubprocess",
            "escalationProcess",
            {AFTER: 1, IN_SUB: 1},
        ),
        (
            "testThrowEscalationEventHierarchical",
            "escalationProcess",
            {"task after catched escalation inside subprocess": 1, IN_SUB: 1},
        ),
        ("testBoundaryEventWithEscalationCode", "escalationProcess", {AFTER + " 1": 1, IN_SUB: 1}),
        ("testBoundaryEventWithoutEscalationCode", "escalationProcess", {AFTER: 1, IN_SUB: 1}),
        ("testBoundaryEventWithEmptyEscalationCode", "escalationProcess", {AFTER: 1, IN_SUB: 1}),
        ("testBoundaryEventWithoutEscalationRef", "escalationProcess", {AFTER: 1, IN_SUB: 1}),
        (
            "testInterruptingEscalationBoundaryEventOnMultiInstanceSubprocess",
            "escalationProcess",
            {AFTER: 1},
        ),
        (
            "testNonInterruptingEscalationBoundaryEventOnMultiInstanceSubprocess",
            "escalationProcess",
            {AFTER: 5, IN_SUB: 5},
        ),
        ("testInterruptingEscalationBoundaryEvent", "escalationProcess", {AFTER: 1}),
        ("testParallelEscalationEndEvent", "escalationProcess", {AFTER: 1, IN_SUB: 1}),
        ("testEscalationEndEvent", "escalationProcess", {AFTER: 1}),
    ],
)
def test_escalation_is_caught(
    kit: BpmTest, method: str, key: str, expected: dict[str, int]
) -> None:
    # EscalationEventTest.{method}: the open tasks, counted by name
    deploy(kit, f"EscalationEventTest.{method}.bpmn20.xml")
    kit.start(key)
    assert counts(kit) == Counter(expected)


@pytest.mark.parametrize(
    ("method", "catcher", "expected"),
    [
        (
            "testThrowEscalationEventFromCallActivity",
            "EscalationEventTest.nonInterruptingEscalationBoundaryEventOnCallActivity.bpmn20.xml",
            {AFTER: 1, "task after thrown escalation": 1},
        ),
        (
            "testInterruptingEscalationBoundaryEventOnCallActivity",
            "EscalationEventTest.interruptingEscalationBoundaryEventOnCallActivity.bpmn20.xml",
            {AFTER: 1},
        ),
    ],
)
def test_escalation_from_a_call_activity(
    kit: BpmTest, method: str, catcher: str, expected: dict[str, int]
) -> None:
    # EscalationEventTest.testThrowEscalationEventFromCallActivity,
    # testInterruptingEscalationBoundaryEventOnCallActivity
    deploy(kit, THROW, catcher)
    kit.start("catchEscalationProcess")
    assert counts(kit) == Counter(expected)


def test_throw_escalation_event_not_caught(kit: BpmTest) -> None:
    # EscalationEventTest.testThrowEscalationEventNotCaught
    deploy(kit, THROW)
    kit.start("throwEscalationProcess")
    assert counts(kit) == Counter({"task after thrown escalation": 1})


@pytest.mark.parametrize(
    "method",
    [
        "testPropagateOutputVariablesWhileCatchEscalationOnCallActivity",
        "testPropagateOutputVariablesWhileCatchInterruptingEscalationOnCallActivity",
    ],
)
def test_propagate_output_variables_while_catch_escalation_on_call_activity(
    kit: BpmTest, method: str
) -> None:
    # EscalationEventTest.testPropagateOutputVariablesWhileCatchEscalationOnCallActivity,
    # testPropagateOutputVariablesWhileCatchInterruptingEscalationOnCallActivity
    deploy(kit, THROW, f"EscalationEventTest.{method}.bpmn20.xml")
    pi = kit.start("catchEscalationProcess", {"input": 42})
    assert counts(kit)[AFTER] == 1
    assert kit.variables(pi)["output"] == 42


def test_propagate_output_variables_two_times(kit: BpmTest) -> None:
    # EscalationEventTest.testPropagateOutputVariablesTwoTimes: once when the escalation is
    # caught (non-interrupting), once when the called instance completes
    deploy(
        kit,
        THROW,
        "EscalationEventTest.testPropagateOutputVariablesWhileCatchEscalationOnCallActivity.bpmn20.xml",
    )
    pi = kit.start("catchEscalationProcess", {"input": 42})
    assert [t.node_id for t in open_tasks(kit) if t.node_id == "taskAfterCatchedEscalation"]
    assert kit.variables(pi)["output"] == 42
    (sub,) = [t for t in open_tasks(kit) if t.node_id == "task"]
    kit.engine.set_variables(sub.instance_id, {"input": 999})
    kit.engine.complete_user_task(sub.id, {})
    kit.run()
    assert kit.variables(pi)["output"] == 999


def test_propagate_output_variables_without_catch_escalation(kit: BpmTest) -> None:
    # EscalationEventTest.testPropagateOutputVariablesWithoutCatchEscalation
    deploy(
        kit,
        THROW,
        "EscalationEventTest.testPropagateOutputVariablesWithoutCatchEscalation.bpmn20.xml",
    )
    pi = kit.start("catchEscalationProcess", {"input": 42})
    assert kit.variables(pi)["output"] == 42


@pytest.mark.parametrize(
    "method",
    [
        "testRetrieveEscalationCodeVariableOnBoundaryEvent",
        "testRetrieveEscalationCodeVariableOnBoundaryEventWithoutEscalationCode",
    ],
)
def test_retrieve_escalation_code_variable_on_boundary_event(kit: BpmTest, method: str) -> None:
    # EscalationEventTest.testRetrieveEscalationCodeVariableOnBoundaryEvent{,WithoutEscalationCode}
    deploy(kit, f"EscalationEventTest.{method}.bpmn20.xml")
    pi = kit.start("escalationProcess")
    assert counts(kit)[AFTER] == 1
    assert kit.variables(pi)["escalationCodeVar"] == "escalationCode"


@pytest.mark.parametrize(
    "method",
    [
        "testInterruptingRetrieveEscalationCodeInSuperProcess",
        "testInterruptingRetrieveEscalationCodeInSuperProcessWithoutEscalationCode",
        "testNonInterruptingRetrieveEscalationCodeInSuperProcess",
        "testNonInterruptingRetrieveEscalationCodeInSuperProcessWithoutEscalationCode",
    ],
)
def test_retrieve_escalation_code_in_super_process(kit: BpmTest, method: str) -> None:
    # EscalationEventTest.{method}
    deploy(kit, THROW, f"EscalationEventTest.{method}.bpmn20.xml")
    pi = kit.start("catchEscalationProcess")
    assert [t.node_id for t in open_tasks(kit, pi.id)] == ["taskAfterCatchedEscalation"]
    assert kit.variables(pi)["escalationCodeVar"] == "escalationCode"
