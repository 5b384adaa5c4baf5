"""Camunda 7's CallActivityTest, ported (issue 21, item 2): each test deploys the original's
BPMN files unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts what the
original asserts, on SQLite and PostgreSQL. ``runtimeService.getVariable(s)`` is the
instance's variables; ``createProcessInstanceQuery().list()`` the running instances.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/callactivity/CallActivityTest.java
(left out: see LEFT_OUT.md).
"""

from __future__ import annotations

import pytest

from bpm import BpmnError
from bpm.errors import DeploymentError
from bpm.handlers import TaskContext
from bpm.testing import BpmTest
from tests.conformance.conftest import MODELS
from tests.conformance.scopes_kit import (
    complete_task,
    deploy,
    ended,
    open_tasks,
    subscriptions,
    task_names,
    task_nodes,
)

SIMPLE = "simpleSubProcess.bpmn20.xml"


def running(kit: BpmTest) -> list[str]:
    """``createProcessInstanceQuery().list()``: the ids of the running instances."""
    return [i.id for i in kit.engine.instances(state="active")]


def only_task(kit: BpmTest, name: str | None = None) -> str:
    """``taskQuery.singleResult()`` (and its name): the one open task's id."""
    (task,) = open_tasks(kit)
    if name is not None:
        assert task.name == name
    return task.id


def complete(kit: BpmTest, task_id: str, variables: dict[str, object] | None = None) -> None:
    kit.engine.complete_user_task(task_id, dict(variables or {}))
    kit.run()


def called(kit: BpmTest, parent: str) -> str:
    """``createProcessInstanceQuery().superProcessInstanceId(parent).singleResult()``."""
    (child,) = [c for c in kit.instance(parent).children if not kit.instance(c).ended]
    return child


def test_call_simple_sub_process(kit: BpmTest) -> None:
    # CallActivityTest.testCallSimpleSubProcess
    deploy(kit, "CallActivity.testCallSimpleSubProcess.bpmn20.xml", SIMPLE)
    pi = kit.start("callSimpleSubProcess")
    complete(kit, only_task(kit, "Task before subprocess"))
    complete(kit, only_task(kit, "Task in subprocess"))
    complete(kit, only_task(kit, "Task after subprocess"))
    assert ended(kit, pi.id)


@pytest.mark.parametrize(
    ("method", "child"),
    [
        ("testAccessSuperInstanceVariables", "simpleSubProcessParentVariableAccess.bpmn20.xml"),
        (
            "testAccessSuperInstanceVariablesFromConcurrentExecution",
            "concurrentSubProcessParentVariableAccess.bpmn20.xml",
        ),
    ],
)
def test_access_super_instance_variables(kit: BpmTest, method: str, child: str) -> None:
    # CallActivityTest.testAccessSuperInstanceVariables{,FromConcurrentExecution}: the
    # delegate sets "greeting" on the calling instance (getSuperExecution().setVariable)
    def parent_access(ctx: TaskContext) -> None:
        parent = kit.instance(ctx.instance_id).parent_id
        assert parent is not None
        kit.engine.set_variables(parent, {"greeting": "hello"})

    kit.handler(
        "org.camunda.bpm.engine.test.bpmn.callactivity.ServiceTaskParentProcessVariableAccess",
        parent_access,
    )
    deploy(kit, "CallActivity.testCallSimpleSubProcess.bpmn20.xml", child)
    pi = kit.start("callSimpleSubProcess")
    task = only_task(kit, "Task before subprocess")
    assert kit.variables(pi).get("greeting") is None
    complete(kit, task)
    assert kit.variables(pi)["greeting"] == "hello"


@pytest.mark.parametrize(
    "model",
    [
        "CallActivity.testCallSimpleSubProcessWithExpressions.bpmn20.xml",
        "CallActivity.testCallSimpleSubProcessWithHashExpressions.bpmn20.xml",
    ],
)
def test_call_simple_sub_process_with_expressions(kit: BpmTest, model: str) -> None:
    # CallActivityTest.testCallSimpleSubProcessWithExpressions,
    # testCallSimpleSubProcessWithHashExpressions (calledElement="#{...}")
    deploy(kit, model, SIMPLE)
    pi = kit.start("callSimpleSubProcess")
    task = only_task(kit, "Task before subprocess")
    complete(kit, task, {"simpleSubProcessExpression": "simpleSubProcess"})
    complete(kit, only_task(kit, "Task in subprocess"))
    complete(kit, only_task(kit, "Task after subprocess"))
    assert ended(kit, pi.id)


def test_sub_process_ends_super_process(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessEndsSuperProcess
    deploy(kit, "CallActivity.testSubProcessEndsSuperProcess.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessEndsSuperProcess")
    complete(kit, only_task(kit, "Task in subprocess"))
    assert ended(kit, pi.id)
    assert running(kit) == []


def test_call_parallel_sub_process(kit: BpmTest) -> None:
    # CallActivityTest.testCallParallelSubProcess
    deploy(
        kit,
        "CallActivity.testCallParallelSubProcess.bpmn20.xml",
        "simpleParallelSubProcess.bpmn20.xml",
    )
    kit.start("callParallelSubProcess")
    tasks = open_tasks(kit)
    assert [t.name for t in tasks] == ["Task A", "Task B"]
    complete_task(kit, tasks[0])
    assert len(open_tasks(kit)) == 1
    complete_task(kit, tasks[1])
    assert running(kit) == []


def test_call_sequential_sub_process_with_expressions(kit: BpmTest) -> None:
    # CallActivityTest.testCallSequentialSubProcessWithExpressions
    deploy(
        kit,
        "CallActivity.testCallSequentialSubProcess.bpmn20.xml",
        "CallActivity.testCallSimpleSubProcessWithExpressions.bpmn20.xml",
        SIMPLE,
        "simpleSubProcess2.bpmn20.xml",
    )
    pi = kit.start("callSequentialSubProcess")
    task = only_task(kit, "Task before subprocess")
    complete(kit, task, {"simpleSubProcessExpression": "simpleSubProcess"})
    complete(kit, only_task(kit, "Task in subprocess"))
    complete(kit, only_task(kit, "Task after subprocess"))
    task = only_task(kit, "Task before subprocess")
    complete(kit, task, {"simpleSubProcessExpression": "simpleSubProcess2"})
    complete(kit, only_task(kit, "Task in subprocess 2"))
    complete(kit, only_task(kit, "Task after subprocess"))
    assert ended(kit, pi.id)


def test_timer_on_call_activity(kit: BpmTest) -> None:
    # CallActivityTest.testTimerOnCallActivity
    deploy(kit, "CallActivity.testTimerOnCallActivity.bpmn20.xml", SIMPLE)
    kit.start("timerOnCallActivity")
    only_task(kit, "Task in subprocess")
    (timer,) = kit.engine.timers()
    kit.engine.fire_timer_now(timer.id)
    kit.run()
    complete(kit, only_task(kit, "Escalated Task"))
    assert running(kit) == []


def test_sub_process_with_data_input_output(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessWithDataInputOutput
    deploy(kit, "CallActivity.testSubProcessDataInputOutput.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessDataInputOutput", {"superVariable": "Hello from the super process."})
    (task,) = open_tasks(kit)
    assert task.name == "Task in subprocess"
    assert kit.variables(task.instance_id)["subVariable"] == "Hello from the super process."
    kit.engine.set_variables(task.instance_id, {"subVariable": "Hello from sub process."})
    assert kit.variables(pi)["superVariable"] == "Hello from the super process."
    complete_task(kit, task)
    task_id = only_task(kit, "Task in super process")
    assert kit.variables(pi)["superVariable"] == "Hello from sub process."
    complete(kit, task_id, {"x": 5})
    (task,) = open_tasks(kit)
    assert task.name == "Task in subprocess"
    assert kit.variables(task.instance_id)["y"] == 10
    complete_task(kit, task)
    task_id = only_task(kit, "Task in super process")
    assert kit.variables(pi)["z"] == 15
    complete(kit, task_id)
    assert ended(kit, pi.id)
    assert running(kit) == []


def test_sub_process_with_limited_data_input_output_typed_api(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessWithLimitedDataInputOutputTypedApi: a null string
    deploy(kit, "CallActivity.testSubProcessLimitedDataInputOutputTypedApi.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessDataInputOutput", {"superVariable": None})
    (task,) = open_tasks(kit)
    assert task.name == "Task in subprocess"
    sub = kit.variables(task.instance_id)
    assert "subVariable" in sub and sub["subVariable"] is None
    kit.engine.set_variables(task.instance_id, {"subVariable": None})
    assert kit.variables(pi)["superVariable"] is None
    complete_task(kit, task)
    task_id = only_task(kit, "Task in super process")
    assert "superVariable" in kit.variables(pi) and kit.variables(pi)["superVariable"] is None
    complete(kit, task_id)
    assert ended(kit, pi.id)
    assert running(kit) == []


def test_sub_process_with_all_data_input_output_typed_api(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessWithAllDataInputOutputTypedApi
    deploy(kit, "CallActivity.testSubProcessAllDataInputOutputTypedApi.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessDataInputOutput", {"superVariable": None})
    (task,) = open_tasks(kit)
    assert task.name == "Task in subprocess"
    sub = kit.variables(task.instance_id)
    assert "superVariable" in sub and sub["superVariable"] is None
    kit.engine.set_variables(task.instance_id, {"subVariable": None})
    complete_task(kit, task)
    task_id = only_task(kit, "Task in super process")
    variables = kit.variables(pi)
    assert "subVariable" in variables and variables["subVariable"] is None
    assert "superVariable" in variables and variables["superVariable"] is None
    complete(kit, task_id)
    assert ended(kit, pi.id)
    assert running(kit) == []


def test_two_sub_processes(kit: BpmTest) -> None:
    # CallActivityTest.testTwoSubProcesses: deleting the caller deletes both called
    deploy(kit, "CallActivity.testTwoSubProcesses.bpmn20.xml", SIMPLE)
    pi = kit.start("callTwoSubProcesses")
    assert len(running(kit)) == 3
    assert len(open_tasks(kit)) == 2
    kit.engine.terminate(pi.id)
    assert running(kit) == []
    assert open_tasks(kit) == []


@pytest.mark.parametrize(
    "model",
    [
        "CallActivity.testSubProcessAllDataInputOutput.bpmn20.xml",
        "CallActivity.testSubProcessAllDataInputOutputWithAdditionalInputMapping.bpmn20.xml",
    ],
)
def test_sub_process_all_data_input_output(kit: BpmTest, model: str) -> None:
    # CallActivityTest.testSubProcessAllDataInputOutput,
    # testSubProcessAllDataInputOutputWithAdditionalInputMapping
    deploy(kit, model, SIMPLE)
    given = {"superVariable": "Hello from the super process.", "testVariable": "Only a test."}
    pi = kit.start("subProcessAllDataInputOutput", given)
    (task,) = open_tasks(kit)
    assert task.name == "Task before subprocess"
    assert kit.variables(pi) == given
    complete_task(kit, task)
    (task,) = open_tasks(kit)
    assert task.name == "Task in subprocess"
    sub = kit.variables(task.instance_id)
    assert sub["superVariable"] == "Hello from the super process."
    assert sub["testVariable"] == "Only a test."
    if "Additional" in model:
        assert sub["subVariable"] == "Hello from the super process."
    kit.engine.set_variables(
        task.instance_id,
        {
            "superVariable": "Hello from sub process.",
            "testVariable": "Variable changed in sub process.",
        },
    )
    complete_task(kit, task)
    task_id = only_task(kit, "Task after subprocess")
    assert kit.variables(pi)["superVariable"] == "Hello from sub process."
    assert kit.variables(pi)["testVariable"] == "Variable changed in sub process."
    complete(kit, task_id)
    assert ended(kit, pi.id)
    assert running(kit) == []


def test_sub_process_all_data_output(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessAllDataOutput
    deploy(kit, "CallActivity.testSubProcessAllDataInputOutput.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessAllDataInputOutput")
    complete(kit, only_task(kit, "Task before subprocess"))
    (task,) = open_tasks(kit)
    assert task.name == "Task in subprocess"
    kit.engine.set_variables(
        task.instance_id,
        {
            "superVariable": "Hello from sub process.",
            "testVariable": "Variable changed in sub process.",
        },
    )
    complete_task(kit, task)
    task_id = only_task(kit, "Task after subprocess")
    assert kit.variables(pi)["superVariable"] == "Hello from sub process."
    assert kit.variables(pi)["testVariable"] == "Variable changed in sub process."
    complete(kit, task_id)
    assert ended(kit, pi.id)
    assert running(kit) == []


def test_sub_process_local_input_all_variables(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessLocalInputAllVariables
    deploy(kit, "CallActivity.testSubProcessLocalInputAllVariables.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessLocalInputAllVariables")
    task = only_task(kit)
    kit.engine.set_variables(pi.id, {"callingProcessVar1": "val1"})
    complete(kit, task)
    child = called(kit, pi.id)
    assert kit.variables(child) == {"inputParameter": "val2"}
    kit.engine.set_variables(child, {"calledProcessVar1": 42})
    complete(kit, only_task(kit))
    assert kit.variables(pi) == {
        "callingProcessVar1": "val1",
        "calledProcessVar1": 42,
        "outputParameter": 43,
    }


def test_sub_process_local_input_single_variable(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessLocalInputSingleVariable
    deploy(kit, "CallActivity.testSubProcessLocalInputSingleVariable.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessLocalInputSingleVariable")
    task = only_task(kit)
    kit.engine.set_variables(pi.id, {"callingProcessVar1": "val1"})
    complete(kit, task)
    child = called(kit, pi.id)
    assert kit.variables(child) == {"mappedInputParameter": "val2"}
    kit.engine.set_variables(child, {"calledProcessVar1": 42})
    complete(kit, only_task(kit))
    assert kit.variables(pi) == {
        "callingProcessVar1": "val1",
        "mappedInputParameter": "val2",
        "calledProcessVar1": 42,
        "outputParameter": 43,
    }


@pytest.mark.parametrize(
    ("method", "model", "key"),
    [
        (
            "testSubProcessLocalOutputAllVariables",
            "CallActivity.testSubProcessLocalOutputAllVariables.bpmn20.xml",
            "subProcessLocalOutputAllVariables",
        ),
        (
            "testSubProcessLocalOutputSingleVariable",
            "CallActivity.testSubProcessLocalOutputSingleVariable.bpmn20.xml",
            "subProcessLocalOutputSingleVariable",
        ),
    ],
)
def test_sub_process_local_output(kit: BpmTest, method: str, model: str, key: str) -> None:
    # CallActivityTest.testSubProcessLocalOutputAllVariables,
    # testSubProcessLocalOutputSingleVariable: the called instance's variables are written
    # local to the call activity, where only its output mapping reads them
    deploy(kit, model, SIMPLE)
    pi = kit.start(key)
    task = only_task(kit)
    kit.engine.set_variables(pi.id, {"callingProcessVar1": "val1"})
    complete(kit, task)
    child = called(kit, pi.id)
    assert kit.variables(child) == {"callingProcessVar1": "val1", "inputParameter": "val2"}
    kit.engine.set_variables(child, {"calledProcessVar1": 42})
    complete(kit, only_task(kit))
    assert kit.variables(pi) == {"callingProcessVar1": "val1", "outputParameter": 43}


def test_sub_process_business_key_input(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessBusinessKeyInput
    deploy(kit, "CallActivity.testSubProcessBusinessKeyInput.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessBusinessKeyInput", business_key="myBusinessKey")
    assert pi.business_key == "myBusinessKey"
    complete(kit, only_task(kit, "Task before subprocess"))
    (task,) = open_tasks(kit)
    assert task.name == "Task in subprocess"
    assert kit.instance(task.instance_id).business_key == "myBusinessKey"
    keyed = kit.engine.instances(business_key="myBusinessKey", state=None)
    assert len(keyed) == 2
    complete_task(kit, task)
    complete(kit, only_task(kit, "Task after subprocess"))
    assert ended(kit, pi.id)
    assert running(kit) == []
    keyed = kit.engine.instances(business_key="myBusinessKey", state=None)
    assert len(keyed) == 2 and all(i.ended for i in keyed)


@pytest.mark.parametrize(
    ("method", "trigger", "after"),
    [
        (
            "testInterruptingMessageEventSubProcessEventSubscriptionsInsideCallActivity",
            "message",
            "taskAfterMessageStartEvent",
        ),
        (
            "testInterruptingSignalEventSubProcessEventSubscriptionsInsideCallActivity",
            "signal",
            "taskAfterSignalStartEvent",
        ),
    ],
)
def test_interrupting_event_sub_process_event_subscriptions_inside_call_activity(
    kit: BpmTest, method: str, trigger: str, after: str
) -> None:
    # CallActivityTest.testInterrupting{Message,Signal}EventSubProcessEventSubscriptions\
    # InsideCallActivity
    deploy(
        kit,
        "CallActivity.testInterruptingEventSubProcessEventSubscriptions.bpmn20.xml",
        "interruptingEventSubProcessEventSubscriptions.bpmn20.xml",
    )
    pi = kit.start("callInterruptingEventSubProcess")
    (task,) = open_tasks(kit)
    assert task.node_id == "taskBeforeInterruptingEventSubprocess"
    assert subscriptions(kit, pi.id) == []
    child = task.instance_id
    assert len(subscriptions(kit, child)) == 2
    if trigger == "message":
        kit.correlate("newMessage")
    else:
        kit.signal("newSignal")
    assert task_nodes(kit, child) == [after]
    assert subscriptions(kit, child) == []
    complete_task(kit, open_tasks(kit, child)[0])
    assert ended(kit, child)
    assert ended(kit, pi.id)


def test_input_parameter_literal_source_expression(kit: BpmTest) -> None:
    # CallActivityTest.testInputParameterLiteralSourceExpression
    deploy(kit, "CallActivity.testLiteralSourceExpression.bpmn20.xml", SIMPLE)
    kit.start("process")
    (sub,) = kit.engine.instances(definition_key="simpleSubProcess", state="active")
    assert kit.variables(sub)["inLiteralVariable"] == "inLiteralValue"


def test_output_parameter_literal_source_expression(kit: BpmTest) -> None:
    # CallActivityTest.testOutputParameterLiteralSourceExpression
    deploy(kit, "CallActivity.testLiteralSourceExpression.bpmn20.xml", SIMPLE)
    pi = kit.start("process")
    complete(kit, only_task(kit))
    assert kit.variables(pi)["outLiteralVariable"] == "outLiteralValue"


@pytest.mark.parametrize(
    ("method", "models"),
    [
        (
            "testSubProcessDataOutputOnError",
            ("CallActivity.testSubProcessDataOutputOnError.bpmn", "subProcessWithError.bpmn"),
        ),
        (
            "testSubProcessDataOutputOnThrownError",
            (
                "CallActivity.testSubProcessDataOutputOnThrownError.bpmn",
                "subProcessWithThrownError.bpmn",
            ),
        ),
        (
            "testTwoSubProcessesDataOutputOnError",
            (
                "CallActivity.testTwoSubProcessesDataOutputOnError.bpmn",
                "subProcessCallErrorSubProcess.bpmn",
                "subProcessWithError.bpmn",
            ),
        ),
    ],
)
def test_sub_process_data_output_on_error(
    kit: BpmTest, method: str, models: tuple[str, ...]
) -> None:
    # CallActivityTest.testSubProcessDataOutputOnError, testSubProcessDataOutputOnThrownError,
    # testTwoSubProcessesDataOutputOnError: the out mappings apply when an error ends the call
    def throw_bpmn_error(ctx: TaskContext) -> None:
        raise BpmnError("errorCode", "ouch!")  # ServiceTaskThrowBpmnError

    kit.handler(
        "org.camunda.bpm.engine.test.bpmn.callactivity.ServiceTaskThrowBpmnError", throw_bpmn_error
    )
    deploy(kit, *models)
    kit.start("Process_1")
    (task,) = open_tasks(kit)
    assert task.name == "SubTask"
    kit.engine.set_variables(task.instance_id, {"subVariable": "Hello from Subprocess"})
    complete_task(kit, task)
    (task,) = open_tasks(kit)
    assert task.name == "Task after error"
    assert kit.variables(task.instance_id)["subVariable"] == "Hello from Subprocess"


def test_two_sub_processes_limited_data_output_on_error(kit: BpmTest) -> None:
    # CallActivityTest.testTwoSubProcessesLimitedDataOutputOnError
    deploy(
        kit,
        "CallActivity.testTwoSubProcessesLimitedDataOutputOnError.bpmn",
        "subProcessCallErrorSubProcessWithLimitedOutMapping.bpmn",
        "subProcessWithError.bpmn",
    )
    kit.start("Process_1")
    (task,) = open_tasks(kit)
    assert task.name == "Task"
    kit.engine.set_variables(task.instance_id, {"subVariable": "Hello from Subprocess"})
    complete_task(kit, task)
    (task,) = open_tasks(kit)
    assert task.name == "SubTask"
    kit.engine.set_variables(
        task.instance_id,
        {"subSubVariable1": "foo", "subSubVariable2": "Hello from Subsubprocess"},
    )
    complete_task(kit, task)
    (task,) = open_tasks(kit)
    assert task.name == "Task after error"
    variables = kit.variables(task.instance_id)
    assert variables["subSubVariable2"] == "Hello from Subsubprocess"
    assert variables["subVariable"] == "Hello from Subprocess"
    assert variables.get("subSubVariable1") is None


def test_order_process_with_call_activity(kit: BpmTest) -> None:
    # CallActivityTest.testOrderProcessWithCallActivity
    deploy(kit, "orderProcess.bpmn20.xml", "checkCreditProcess.bpmn20.xml")
    pi = kit.start("orderProcess")
    task = only_task(kit, "Verify credit history")
    child = called(kit, pi.id)
    assert kit.instance(child).parent_id == pi.id
    complete(kit, task, {"creditApproved": True})
    assert task_names(kit) == ["Prepare and Ship"]


def test_sub_process_local_input_single_variable_expression(kit: BpmTest) -> None:
    # CallActivityTest.testSubProcessLocalInputSingleVariableExpression: a local source
    # expression sees the call activity's own variables only; Camunda's complete throws
    # "Cannot resolve identifier 'globalVariable'", here the call activity gets an incident
    deploy(kit, "CallActivity.testSubProcessLocalInputSingleVariableExpression.bpmn20.xml", SIMPLE)
    pi = kit.start("subProcessLocalInputSingleVariableExpression")
    complete(kit, only_task(kit))
    child = called(kit, pi.id)
    assert kit.variables(child) == {"mappedInputParameter": 43}
    complete(kit, only_task(kit))
    task = only_task(kit)
    kit.engine.set_variables(pi.id, {"globalVariable": "42"})
    complete(kit, task)
    (incident,) = kit.engine.incidents(pi.id)
    assert incident.node_id == "callSubProcess2"
    assert "globalVariable" in incident.message
    assert [c for c in kit.instance(pi.id).children if not kit.instance(c).ended] == []


def version_tag_caller(tag: str) -> str:
    """getModelWithCallActivityVersionTagBinding(tag): Camunda's fluent model as XML."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="process" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="callActivity"/>
    <callActivity id="callActivity" calledElement="subProcess"
        camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="{tag}"/>
    <sequenceFlow id="f2" sourceRef="callActivity" targetRef="e"/>
    <endEvent id="e"/>
  </process>
</definitions>"""


@pytest.mark.parametrize(
    ("method", "tag", "variables"),
    [
        ("testCallProcessByVersionTag", "ver_tag_1", {}),
        (
            "testCallProcessByVersionTagAsExpression",
            "${versionTagExpr}",
            {"versionTagExpr": "ver_tag_1"},
        ),
    ],
)
def test_call_process_by_version_tag(
    kit: BpmTest, method: str, tag: str, variables: dict[str, object]
) -> None:
    # CallActivityTest.testCallProcessByVersionTag, testCallProcessByVersionTagAsExpression
    deploy(kit, "subProcessWithVersionTag.bpmn20.xml")
    kit.deploy(version_tag_caller(tag))
    pi = kit.start("process", variables)
    child = called(kit, pi.id)
    assert kit.instance(child).definition_key == "subProcess"


def test_call_process_without_version_tag(kit: BpmTest) -> None:
    # CallActivityTest.testCallProcessWithoutVersionTag: refused at deploy
    source = version_tag_caller("").replace(' camunda:calledElementVersionTag=""', "")
    before = kit.engine.definitions()
    with pytest.raises(DeploymentError, match="callActivity"):
        kit.deploy(source)
    assert kit.engine.definitions() == before


def test_call_process_by_version_tag_none_subprocess(kit: BpmTest) -> None:
    # CallActivityTest.testCallProcessByVersionTagNoneSubprocess: Camunda's start throws
    # "no processes deployed with key = 'subProcess', versionTag = 'ver_tag_1'"; here the
    # call activity gets an incident that says so
    kit.deploy(version_tag_caller("ver_tag_1"))
    pi = kit.start("process")
    (incident,) = kit.engine.incidents(pi.id)
    assert incident.node_id == "callActivity"
    assert "subProcess" in incident.message and "ver_tag_1" in incident.message
    assert kit.instance(pi.id).children == ()


def test_call_process_by_version_tag_two_subprocesses(kit: BpmTest) -> None:
    # CallActivityTest.testCallProcessByVersionTagTwoSubprocesses: two versions with one
    # tag are ambiguous (Camunda: "There are '2' results for a process definition with key
    # 'subProcess', versionTag 'ver_tag_1'")
    deploy(kit, "subProcessWithVersionTag.bpmn20.xml")
    kit.deploy(version_tag_caller("ver_tag_1"))
    source = (MODELS / "subProcessWithVersionTag.bpmn20.xml").read_text(encoding="utf-8")
    kit.deploy(source.replace("User task ver 1", "User task ver 2"))  # a second version
    pi = kit.start("process")
    (incident,) = kit.engine.incidents(pi.id)
    assert incident.node_id == "callActivity"
    assert kit.instance(pi.id).children == ()


def test_call_case_by_version_as_expression(kit: BpmTest) -> None:
    # CallActivityTest.testCallCaseByVersionAsExpression: calledElementVersion="${myVersion}".
    # Camunda's second and third deployments of the same file are versions 2 and 3; here a
    # redeploy of unchanged content keeps its version, so they differ in a name
    deploy(
        kit,
        "CallActivityAdvancedTest.testCallProcessByVersionAsExpression.bpmn20.xml",
        "oneTaskProcess.bpmn20.xml",
    )
    source = (MODELS / "oneTaskProcess.bpmn20.xml").read_text(encoding="utf-8")
    second = kit.deploy(source.replace('name="my task"', 'name="my task 2"'))
    kit.deploy(source.replace('name="my task"', 'name="my task 3"'))
    pi = kit.start("process", {"myVersion": 2})
    child = called(kit, pi.id)
    (in_second,) = kit.engine.deployment_definitions(second.id)
    assert kit.instance(child).definition_id == in_second.id
