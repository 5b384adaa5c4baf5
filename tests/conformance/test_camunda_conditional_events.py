"""Camunda 7's conditional event tests, ported (issue 20, item 3): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Originals: camunda/camunda-bpm-platform @ 3dd653fe66d3,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/conditional/
(IntermediateConditionalEventTest, BoundaryConditionalEventTest,
EventSubProcessStartConditionalEventTest). Camunda's ``conditionEventSubscriptionQuery``
counts open subscriptions of kind ``conditional``: :func:`open_subscriptions`.
"""

from __future__ import annotations

from bpm import InstanceState
from bpm.testing import BpmTest
from tests.conformance.conftest import MODELS, open_subscriptions

KEY = "conditionalEventProcess"


def conditional(kit: BpmTest) -> list[tuple[str, str, str]]:
    return open_subscriptions(kit, "conditional")


def names(kit: BpmTest, instance_id: str) -> list[str]:
    return sorted(t.name or "" for t in kit.engine.user_tasks(instance_id))


def test_intermediate_variable_value(kit: BpmTest) -> None:
    # IntermediateConditionalEventTest.testVariableValue
    kit.deploy(MODELS / "IntermediateConditionalEventTest.testVariableValue.bpmn20.xml")
    inst = kit.start(KEY, {"variable": 0})
    assert [x[2] for x in conditional(kit)] == ["conditionalEvent"]  # waits: false
    kit.engine.set_variables(inst.id, {"variable": 1})
    assert kit.engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert conditional(kit) == []


def test_intermediate_parallel_variable_value(kit: BpmTest) -> None:
    # IntermediateConditionalEventTest.testParallelVariableValue (and
    # testParallelVariableSetValueOnParent: the variable is the instance's either way)
    kit.deploy(MODELS / "IntermediateConditionalEventTest.testParallelVariableValue.bpmn20.xml")
    inst = kit.start(KEY, {"variable": 0})
    assert len(conditional(kit)) == 2
    kit.engine.set_variables(inst.id, {"variable": 1})
    assert [x[2] for x in conditional(kit)] == ["conditionalEvent2"]  # the first passed
    kit.engine.set_variables(inst.id, {"variable": 2})
    assert kit.engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert conditional(kit) == []


def test_boundary_non_interrupting_variable_condition(kit: BpmTest) -> None:
    # BoundaryConditionalEventTest.testNonInterruptingVariableCondition
    kit.deploy(
        MODELS / "BoundaryConditionalEventTest.testNonInterruptingVariableCondition.bpmn20.xml"
    )
    inst = kit.start(KEY)
    assert names(kit, inst.id) == ["Task with condition"]
    kit.engine.set_variables(inst.id, {"variable": 1})  # taskService.setVariable
    assert names(kit, inst.id) == ["After Condition", "Task with condition"]
    # checkIfProcessCanBeFinished: the tasks complete, no subscription is left
    for task in kit.engine.user_tasks(inst.id):
        kit.engine.complete_user_task(task.id, {})
    assert conditional(kit) == []
    assert kit.engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_event_sub_process_true_condition(kit: BpmTest) -> None:
    # EventSubProcessStartConditionalEventTest.testTrueCondition: the interrupting event
    # sub-process starts with the instance (its condition is ${true})
    kit.deploy(MODELS / "EventSubProcessStartConditionalEventTest.testTrueCondition.bpmn20.xml")
    inst = kit.start(KEY)
    assert names(kit, inst.id) == ["After Condition"]
    assert conditional(kit) == []
    (task,) = kit.engine.user_tasks(inst.id)
    kit.engine.complete_user_task(task.id, {})
    assert kit.engine.get_instance(inst.id).state is InstanceState.COMPLETED
