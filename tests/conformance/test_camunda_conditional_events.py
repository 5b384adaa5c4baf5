"""Camunda 7's conditional event tests, ported (issue 20, item 3): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Originals: camunda/camunda-bpm-platform @ 3dd653fe66d3,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/conditional/
(IntermediateConditionalEventTest, BoundaryConditionalEventTest,
EventSubProcessStartConditionalEventTest, ConditionalStartEventTest). Camunda's
``conditionEventSubscriptionQuery`` counts open subscriptions of kind ``conditional``
(:func:`open_subscriptions`).
"""

from __future__ import annotations

import pytest

from bpm import InstanceState
from bpm.errors import InvalidOperation, NotFound
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


# -- ConditionalStartEventTest: createConditionEvaluation().evaluateStartConditions() ------

SINGLE = MODELS / "ConditionalStartEventTest.testSingleConditionalStartEvent.bpmn20.xml"
MULTIPLE = MODELS / "ConditionalStartEventTest.testMultipleCondition.bpmn20.xml"
TRUE_START = (
    MODELS / "ConditionalStartEventTest.testStartInstanceWithTrueConditionalStartEvent.bpmn20.xml"
)
NAMED = MODELS / "ConditionalStartEventTest.testStartInstanceWithVariableName.bpmn20.xml"


def test_deployment_creates_subscriptions(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testDeploymentCreatesSubscriptions: one conditional
    # subscription of the definition, of no instance (its name: no variable name)
    kit.deploy(SINGLE)
    assert conditional(kit) == [("conditional", "", "StartEvent_1")]


def test_start_instance_with_true_conditional_start_event(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceWithTrueConditionalStartEvent
    kit.deploy(TRUE_START)
    started = kit.engine.evaluate_conditions()
    assert len(started) == 1
    running = kit.engine.instances(definition_key="trueConditionProcess")
    assert [i.id for i in running] == [started[0].id]


def test_start_instance_with_variable_condition(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceWithVariableCondition
    kit.deploy(SINGLE)
    (inst,) = kit.engine.evaluate_conditions({"foo": 1})
    assert kit.engine.get_instance(inst.id).variables == {"foo": 1}


def test_start_instance_without_result(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceWithoutResult
    kit.deploy(SINGLE)
    assert kit.engine.evaluate_conditions({"foo": 0}) == []
    assert kit.engine.instances(definition_key="conditionalEventProcess") == []


def test_start_instance_with_multiple_conditions(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceWithMultipleConditions
    kit.deploy(MULTIPLE)
    assert [x[0] for x in conditional(kit)] == ["conditional"] * 3
    started = kit.engine.evaluate_conditions({"foo": 1, "bar": True})
    assert len(started) == 2
    assert len(kit.engine.instances(definition_key="multipleConditions")) == 2


def test_start_instance_with_multiple_subscriptions(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceWithMultipleSubscriptions and
    # ...WithoutProvidingAllVariables (a variable a condition reads is missing: false)
    kit.deploy(SINGLE, MULTIPLE, TRUE_START)
    assert len(conditional(kit)) == 5
    assert len(kit.engine.evaluate_conditions({"foo": 1, "bar": True})) == 4
    assert len(kit.engine.evaluate_conditions({"foo": 1})) == 3


def test_start_instance_with_business_key(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceWithBusinessKey
    kit.deploy(SINGLE, MULTIPLE)
    started = kit.engine.evaluate_conditions({"foo": 1}, business_key="humuhumunukunukuapua")
    assert len(started) == 2
    assert len(kit.engine.instances(business_key="humuhumunukunukuapua")) == 2


def test_start_instance_by_process_definition_id(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceByProcessDefinitionId,
    # testStartInstanceByNonExistingProcessDefinitionId
    kit.deploy(SINGLE, TRUE_START)
    (definition,) = [d for d in kit.engine.definitions() if d.key == "trueConditionProcess"]
    (inst,) = kit.engine.evaluate_conditions({"foo": 1}, definition_id=definition.id)
    assert inst.definition_id == definition.id
    with pytest.raises(NotFound, match="no deployed process definition found with id"):
        kit.engine.evaluate_conditions({"foo": 1}, definition_id="nonExistingId")


def test_start_instance_with_variable_name(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testStartInstanceWithVariableName and
    # testStartInstanceWithVariableNameNotFullfilled: ${true} counts only with foo given
    kit.deploy(NAMED)
    assert kit.engine.evaluate_conditions() == []
    assert len(kit.engine.evaluate_conditions({"foo": True})) == 1


def test_no_subscriptions(kit: BpmTest) -> None:
    # ConditionalStartEventTest.testVersionWithoutConditionAfterDeleteLatestProcessVersion-
    # WithCondition's error: nothing to evaluate
    with pytest.raises(InvalidOperation, match="no subscriptions were found"):
        kit.engine.evaluate_conditions({"foo": 1})


# -- EventSubProcessStartConditionalEventTest, more; BoundaryConditionalEventTest, parallel --

ESP_VARIABLE = MODELS / "EventSubProcessStartConditionalEventTest.testVariableCondition.bpmn20.xml"
ESP_NON_INTERRUPTING = (
    MODELS
    / "EventSubProcessStartConditionalEventTest.testNonInterruptingVariableCondition.bpmn20.xml"
)
ESP_FALSE = MODELS / "EventSubProcessStartConditionalEventTest.testFalseCondition.bpmn20.xml"
PARALLEL = MODELS / "BoundaryConditionalEventTest.testParallelVariableCondition.bpmn20.xml"


def test_event_sub_process_false_condition(kit: BpmTest) -> None:
    # EventSubProcessStartConditionalEventTest.testFalseCondition (${false})
    kit.deploy(ESP_FALSE)
    inst = kit.start(KEY)
    kit.engine.set_variables(inst.id, {"variable": 1})
    assert names(kit, inst.id) == ["Before Condition"]


def test_event_sub_process_variable_condition(kit: BpmTest) -> None:
    # EventSubProcessStartConditionalEventTest.testVariableCondition
    kit.deploy(ESP_VARIABLE)
    inst = kit.start(KEY)
    assert names(kit, inst.id) == ["Before Condition"]
    kit.engine.set_variables(inst.id, {"variable": 1})
    assert names(kit, inst.id) == ["After Condition"]


def test_event_sub_process_variable_condition_and_starting_with_var(kit: BpmTest) -> None:
    # EventSubProcessStartConditionalEventTest.testVariableConditionAndStartingWithVar
    kit.deploy(ESP_VARIABLE)
    inst = kit.start(KEY, {"variable": 1})
    assert names(kit, inst.id) == ["After Condition"]


def test_event_sub_process_non_interrupting_variable_condition(kit: BpmTest) -> None:
    # EventSubProcessStartConditionalEventTest.testNonInterruptingVariableCondition
    kit.deploy(ESP_NON_INTERRUPTING)
    inst = kit.start(KEY)
    assert names(kit, inst.id) == ["Before Condition"] and len(conditional(kit)) == 1
    kit.engine.set_variables(inst.id, {"variable": 1})
    assert len(kit.engine.user_tasks(inst.id)) == 2 and len(conditional(kit)) == 1


def test_boundary_parallel_set_variable_on_execution(kit: BpmTest) -> None:
    # BoundaryConditionalEventTest.testParallelSetVariableOnExecutionCondition: a variable
    # of the instance triggers both boundaries; the instance ends
    kit.deploy(PARALLEL)
    inst = kit.start(KEY)
    assert len(kit.engine.user_tasks(inst.id)) == 2 and len(conditional(kit)) == 2
    kit.engine.set_variables(inst.id, {"variable": 1})
    assert kit.engine.user_tasks(inst.id) == []
    assert kit.engine.get_instance(inst.id).state is InstanceState.COMPLETED
