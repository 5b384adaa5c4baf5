"""Camunda 7's ErrorEventSubProcessTest, ported (issue 21, item 2): each test deploys the
original's BPMN files unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL. Groovy scripts that
``throw new BpmnError("123")`` and the Java delegates run as inline handlers raising
:class:`bpm.BpmnError` with the same code and message.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/error/ErrorEventSubProcessTest.java
(left out: see LEFT_OUT.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from bpm import BpmnError
from bpm.handlers import TaskContext
from bpm.testing import BpmTest
from tests.conformance.scopes_kit import complete_task, deploy, ended, open_tasks, task_names

PREFIX = "ErrorEventSubProcessTest"


def raises(code: str, message: str | None = None) -> Any:
    def handler(ctx: TaskContext) -> None:
        raise BpmnError(code, message or code)

    return handler


def error_has_been_caught(kit: BpmTest, instance_id: str) -> None:
    """assertThatErrorHasBeenCaught: one task, 'Escalated Task'; completing it ends."""
    (task,) = open_tasks(kit)
    assert task.name == "Escalated Task"
    complete_task(kit, task)
    assert ended(kit, instance_id)


@pytest.mark.parametrize(
    ("method", "key", "script"),
    [
        ("testEventSubprocessTakesPrecedence", "CatchErrorInEmbeddedSubProcess", None),
        ("testCatchErrorInEmbeddedSubProcess", "CatchErrorInEmbeddedSubProcess", None),
        (
            "testCatchErrorThrownByScriptTaskInEmbeddedSubProcess",
            "CatchErrorThrownByScriptTaskInEmbeddedSubProcess",
            "subprocessScriptTask",
        ),
        (
            "testCatchErrorThrownByScriptTaskInEmbeddedSubProcessWithErrorCode",
            "CatchErrorThrownByScriptTaskInEmbeddedSubProcessWithErrorCode",
            "subprocessScriptTask",
        ),
        (
            "testCatchErrorThrownByScriptTaskInTopLevelProcess",
            "CatchErrorThrownByScriptTaskInTopLevelProcess",
            "scriptTask",
        ),
        (
            "testCatchErrorThrownByScriptTaskInsideSubProcessInTopLevelProcess",
            "CatchErrorThrownByScriptTaskInsideSubProcessInTopLevelProcess",
            "subprocessScriptTask",
        ),
    ],
)
def test_error_is_caught(kit: BpmTest, method: str, key: str, script: str | None) -> None:
    # ErrorEventSubProcessTest.{method}
    if script is not None:
        kit.handler(script, raises("123"))  # throw new BpmnError("123")
    deploy(kit, f"{PREFIX}.{method}.bpmn20.xml")
    pi = kit.start(key)
    error_has_been_caught(kit, pi.id)


def test_error_code_takes_precedence(kit: BpmTest) -> None:
    # ErrorEventSubProcessTest.testErrorCodeTakesPrecedence
    deploy(kit, f"{PREFIX}.testErrorCodeTakesPrecedence.bpmn20.xml")
    pi = kit.start("CatchErrorInEmbeddedSubProcess")
    (task,) = open_tasks(kit)
    assert task.node_id == "taskAfterErrorCatch2"
    assert task.name == "Escalated Task"
    complete_task(kit, task)
    assert ended(kit, pi.id)


def test_throw_error_in_script_task_inside_call_activiti_catch_in_top_level_process(
    kit: BpmTest,
) -> None:
    # ErrorEventSubProcessTest.testThrowErrorInScriptTaskInsideCallActivitiCatchInTopLevelProcess:
    # ThrowBpmnErrorDelegate throws BpmnError("23") when no executionsBeforeError is set
    kit.handler(
        "org.camunda.bpm.engine.test.bpmn.event.error.ThrowBpmnErrorDelegate",
        raises("23", "This is a business fault, which can be caught by a BPMN Error Event."),
    )
    deploy(
        kit,
        f"{PREFIX}.testThrowErrorInScriptTaskInsideCallActivitiCatchInTopLevelProcess.bpmn20.xml",
        "BoundaryErrorEventTest.testCatchErrorThrownByJavaDelegateOnCallActivity-child.bpmn20.xml",
    )
    pi = kit.start("testThrowErrorInScriptTaskInsideCallActivitiCatchInTopLevelProcess")
    error_has_been_caught(kit, pi.id)


def error_variables(kit: BpmTest) -> dict[str, Any]:
    """``createVariableInstanceQuery().variableName(...)``: every variable of the instances
    and their scopes, by name (each asserted name is set once)."""
    found: dict[str, Any] = {}
    for inst in kit.engine.instances(state=None):
        full = kit.instance(inst.id)
        found.update(full.variables)
        for scope in full.scopes:
            found.update(scope.variables)
    return found


@pytest.mark.parametrize(
    ("method", "models"),
    [
        (
            "testCatchErrorEventSubprocessSetErrorVariables",
            (f"{PREFIX}.testCatchErrorEventSubprocessSetErrorVariables.bpmn",),
        ),
        (
            "testCatchErrorFromCallActivitySetsErrorVariable",
            (
                "ThrowErrorProcess.bpmn",
                f"{PREFIX}.testCatchErrorFromCallActivitySetsErrorVariables.bpmn",
            ),
        ),
    ],
)
def test_catch_error_sets_error_variables(
    kit: BpmTest, method: str, models: tuple[str, ...]
) -> None:
    # ErrorEventSubProcessTest.{method}: camunda:errorCodeVariable gets the code
    deploy(kit, *models)
    kit.start("Process_1")
    assert error_variables(kit)["errorCode"] == "error"


def test_catch_bpmn_error_from_java_delegate_inside_call_activity_sets_error_variable(
    kit: BpmTest,
) -> None:
    # ErrorEventSubProcessTest.testCatchBpmnErrorFromJavaDelegateInsideCallActivitySetsErrorVariable
    kit.handler(
        "org.camunda.bpm.engine.test.bpmn.callactivity.ServiceTaskThrowBpmnError",
        raises("errorCode", "ouch!"),
    )
    deploy(
        kit,
        f"{PREFIX}.testCatchBpmnErrorFromJavaDelegateInsideCallActivitySetsErrorVariable.bpmn",
        "subProcessWithThrownError.bpmn",
    )
    kit.start("Process_1")
    complete_task(kit, open_tasks(kit)[0])
    found = error_variables(kit)
    assert found["errorCode"] == "errorCode"
    assert found["errorMessageVariable"] == "ouch!"


@pytest.mark.parametrize(
    ("method", "model", "key", "first", "then"),
    [
        (
            "testShouldNotThrowErrorInLoop",
            f"{PREFIX}.testThrowErrorInLoop.bpmn20.xml",
            "looping-error",
            "WaitState",
            "ErrorHandlingUserTask",
        ),
        (
            "testShouldNotThrowErrorInLoopForMultipleSubProcess",
            f"{PREFIX}.testThrowErrorInLoopWithMultipleSubProcess.bpmn20.xml",
            "looping-error",
            "LoggerTask",
            "ErrorHandlingTask",
        ),
    ],
)
def test_should_not_throw_error_in_loop(
    kit: BpmTest, method: str, model: str, key: str, first: str, then: str
) -> None:
    # ErrorEventSubProcessTest.{method}: ThrowErrorInLoopDelegate throws BpmnError("E1")
    kit.handler(
        "org.camunda.bpm.engine.test.bpmn.event.error.ThrowErrorInLoopDelegate", raises("E1")
    )
    deploy(kit, model)
    kit.start(key)
    assert task_names(kit) == [first]
    complete_task(kit, open_tasks(kit)[0])
    assert task_names(kit) == [then]


def test_should_not_throw_error_in_loop_with_call_activity(kit: BpmTest) -> None:
    # ErrorEventSubProcessTest.testShouldNotThrowErrorInLoopWithCallActivity
    deploy(
        kit,
        f"{PREFIX}.testThrowErrorInLoopWithCallActivity.bpmn20.xml",
        "ThrowErrorToCallActivity.bpmn20.xml",
    )
    kit.start("CallActivityErrorInLoop")
    assert task_names(kit) == ["ErrorLog"]
    complete_task(kit, open_tasks(kit)[0])
    assert task_names(kit) == ["ErrorHandlingUserTask"]


@pytest.mark.parametrize(
    "method",
    [
        "testThrownAnErrorInEventSubprocessInSubprocessDifferentTransaction",
        "testThrownAnErrorInEventSubprocessInSubprocess",
    ],
)
def test_thrown_an_error_in_event_subprocess_in_subprocess(kit: BpmTest, method: str) -> None:
    # ErrorEventSubProcessTest.{method}: the timer starts the event sub-process whose error
    # end event is caught by the boundary around the sub-process; no timer is left
    deploy(kit, f"{PREFIX}.{method}.bpmn20.xml")
    kit.start("eventSubProcess")
    assert task_names(kit) == ["inside subprocess"]
    (job,) = kit.engine.timers()
    kit.engine.fire_timer_now(job.id)
    kit.run()
    if method.endswith("DifferentTransaction"):
        (during,) = [t for t in open_tasks(kit) if t.name == "inside event sub"]
        complete_task(kit, during)
    assert task_names(kit) == ["after catch"]
    assert kit.engine.timers() == []
