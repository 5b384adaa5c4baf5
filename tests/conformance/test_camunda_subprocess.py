"""Camunda 7's SubProcessTest, ported (issue 21, item 2): each test deploys the original's
BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts what the
original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/subprocess/SubProcessTest.java
(left out: see LEFT_OUT.md).
"""

from __future__ import annotations

from bpm.handlers import TaskContext
from bpm.testing import BpmTest
from tests.conformance.scopes_kit import (
    complete_named,
    deploy,
    ended,
    leaf,
    scope,
    shape,
    task_names,
    tree,
)


def test_simple_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testSimpleSubProcess
    deploy(kit, "SubProcessTest.testSimpleSubProcess.bpmn20.xml")
    pi = kit.start("simpleSubProcess")
    assert task_names(kit, pi.id) == ["Task in subprocess"]
    assert tree(kit, pi.id) == shape(scope("subProcess", leaf("subProcessTask")))
    complete_named(kit, "Task in subprocess")
    assert ended(kit, pi.id)


def test_simple_automatic_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testSimpleAutomaticSubProcess
    deploy(kit, "SubProcessTest.testSimpleAutomaticSubProcess.bpmn20.xml")
    pi = kit.start("simpleSubProcessAutomatic")
    assert ended(kit, pi.id)


def test_simple_sub_process_with_timer(kit: BpmTest) -> None:
    # SubProcessTest.testSimpleSubProcessWithTimer
    deploy(kit, "SubProcessTest.testSimpleSubProcessWithTimer.bpmn20.xml")
    pi = kit.start("simpleSubProcess")
    assert task_names(kit, pi.id) == ["Task in subprocess"]
    assert tree(kit, pi.id) == shape(scope("subProcess", leaf("subProcessTask")))
    kit.advance("PT2H1S")
    assert task_names(kit, pi.id) == ["Fix escalated problem"]


def _nested_simple_sub_process(kit: BpmTest) -> None:
    # start and delete one before it ends
    first = kit.start("nestedSimpleSubProcess", {"someVar": "abc"})
    kit.engine.terminate(first.id)
    pi = kit.start("nestedSimpleSubProcess")
    assert task_names(kit, pi.id) == ["Task in subprocess"]
    assert tree(kit, pi.id) == shape(
        scope("outerSubProcess", scope("innerSubProcess", leaf("innerSubProcessTask")))
    )
    complete_named(kit, "Task in subprocess")
    assert task_names(kit, pi.id) == ["Task after subprocesses"]
    complete_named(kit, "Task after subprocesses")
    assert ended(kit, pi.id)


def test_nested_simple_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testNestedSimpleSubProcess
    deploy(kit, "SubProcessTest.testNestedSimpleSubProcess.bpmn20.xml")
    _nested_simple_sub_process(kit)


def test_nested_simple_sub_process_without_end_event(kit: BpmTest) -> None:
    # SubProcessTest.testNestedSimpleSubProcessWithoutEndEvent (ACT-1072)
    deploy(kit, "SubProcessTest.testNestedSimpleSubProcessWithoutEndEvent.bpmn20.xml")
    _nested_simple_sub_process(kit)


def test_nested_simple_subprocess_with_timer_on_inner_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testNestedSimpleSubprocessWithTimerOnInnerSubProcess
    deploy(kit, "SubProcessTest.testNestedSimpleSubprocessWithTimerOnInnerSubProcess.bpmn20.xml")
    pi = kit.start("nestedSubProcessWithTimer")
    assert task_names(kit, pi.id) == ["Task in subprocess"]
    assert tree(kit, pi.id) == shape(
        scope("outerSubProcess", scope("innerSubProcess", leaf("innerSubProcessTask")))
    )
    kit.advance("PT1H1S")
    assert task_names(kit, pi.id) == ["Escalated task"]
    assert tree(kit, pi.id) == shape(scope("outerSubProcess", leaf("escalationTask")))
    complete_named(kit, "Escalated task")
    assert task_names(kit, pi.id) == ["Task after subprocesses"]


def test_double_nested_simple_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testDoubleNestedSimpleSubProcess
    deploy(kit, "SubProcessTest.testDoubleNestedSimpleSubProcess.bpmn20.xml")
    pi = kit.start("nestedSimpleSubProcess")
    assert task_names(kit, pi.id) == ["Task in subprocess"]
    complete_named(kit, "Task in subprocess")
    assert task_names(kit, pi.id) == ["Task after subprocesses"]


def test_simple_parallel_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testSimpleParallelSubProcess
    deploy(kit, "SubProcessTest.testSimpleParallelSubProcess.bpmn20.xml")
    pi = kit.start("simpleParallelSubProcess")
    assert task_names(kit, pi.id) == ["Task A", "Task B"]
    (sub,) = tree(kit, pi.id)
    assert sub[0] == "subProcess"
    assert len(sub[1]) == 2
    complete_named(kit, "Task A")
    (sub,) = tree(kit, pi.id)
    # 1 task + 1 join
    assert sub[0] == "subProcess"
    assert len(sub[1]) == 2
    complete_named(kit, "Task B")
    assert task_names(kit, pi.id) == ["Task after sub process"]


def test_simple_parallel_sub_process_with_timer(kit: BpmTest) -> None:
    # SubProcessTest.testSimpleParallelSubProcessWithTimer
    deploy(kit, "SubProcessTest.testSimpleParallelSubProcessWithTimer.bpmn20.xml")
    pi = kit.start("simpleParallelSubProcessWithTimer")
    assert task_names(kit, pi.id) == ["Task A", "Task B"]
    (job,) = kit.engine.timers(pi.id)
    kit.engine.fire_timer_now(job.id)
    kit.run()
    assert task_names(kit, pi.id) == ["Task after timer"]
    complete_named(kit, "Task after timer")
    assert ended(kit, pi.id)


def test_two_sub_process_in_parallel(kit: BpmTest) -> None:
    # SubProcessTest.testTwoSubProcessInParallel
    deploy(kit, "SubProcessTest.testTwoSubProcessInParallel.bpmn20.xml")
    pi = kit.start("twoSubProcessInParallel")
    assert task_names(kit, pi.id) == ["Task in subprocess A", "Task in subprocess B"]
    assert tree(kit, pi.id) == shape(
        scope("subProcessA", leaf("subProcessATask")),
        scope("subProcessB", leaf("subProcessBTask")),
    )
    complete_named(kit, "Task in subprocess A")
    assert task_names(kit, pi.id) == ["Task after subprocess A", "Task in subprocess B"]
    complete_named(kit, "Task in subprocess B")
    assert task_names(kit, pi.id) == ["Task after subprocess A", "Task after subprocess B"]
    complete_named(kit, "Task after subprocess A")
    complete_named(kit, "Task after subprocess B")
    assert ended(kit, pi.id)


def test_two_sub_process_in_parallel_within_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testTwoSubProcessInParallelWithinSubProcess
    deploy(kit, "SubProcessTest.testTwoSubProcessInParallelWithinSubProcess.bpmn20.xml")
    pi = kit.start("twoSubProcessInParallelWithinSubProcess")
    assert task_names(kit, pi.id) == ["Task in subprocess A", "Task in subprocess B"]
    assert tree(kit, pi.id) == shape(
        scope(
            "outerSubProcess",
            scope("subProcessA", leaf("subProcessATask")),
            scope("subProcessB", leaf("subProcessBTask")),
        )
    )
    complete_named(kit, "Task in subprocess A")
    complete_named(kit, "Task in subprocess B")
    assert task_names(kit, pi.id) == ["Task after subprocess"]
    complete_named(kit, "Task after subprocess")
    assert ended(kit, pi.id)


def test_two_nested_sub_processes_in_parallel_with_timer(kit: BpmTest) -> None:
    # SubProcessTest.testTwoNestedSubProcessesInParallelWithTimer
    deploy(kit, "SubProcessTest.testTwoNestedSubProcessesInParallelWithTimer.bpmn20.xml")
    pi = kit.start("nestedParallelSubProcessesWithTimer")
    assert task_names(kit, pi.id) == ["Task in subprocess A", "Task in subprocess B"]
    (job,) = kit.engine.timers()
    kit.engine.fire_timer_now(job.id)
    kit.run()
    assert task_names(kit, pi.id) == ["Task after timer"]
    complete_named(kit, "Task after timer")
    assert ended(kit, pi.id)


def test_simple_sub_process_without_end_event(kit: BpmTest) -> None:
    # SubProcessTest.testSimpleSubProcessWithoutEndEvent (ACT-1072); the Groovy script
    # task runs as the inline handler named by its id (docs/bpmn.md, script tasks)
    kit.handler("subprocessScriptTask", lambda ctx: None)
    deploy(kit, "SubProcessTest.testSimpleSubProcessWithoutEndEvent.bpmn20.xml")
    pi = kit.start("testSimpleSubProcessWithoutEndEvent")
    assert ended(kit, pi.id)


def test_nested_sub_processes_without_end_events(kit: BpmTest) -> None:
    # SubProcessTest.testNestedSubProcessesWithoutEndEvents (ACT-1072)
    kit.handler("innerSubProcessTask", lambda ctx: None)  # println "Hello from Script Task"
    deploy(kit, "SubProcessTest.testNestedSubProcessesWithoutEndEvents.bpmn20.xml")
    pi = kit.start("testNestedSubProcessesWithoutEndEvents")
    assert ended(kit, pi.id)


def _capture_tree(kit: BpmTest, seen: list[object]) -> None:
    """GetActInstanceDelegate: reads the activity instance tree of its own instance."""

    def delegate(ctx: TaskContext) -> None:
        seen.append(tree(kit, ctx.instance_id))

    kit.handler("org.camunda.bpm.engine.test.bpmn.subprocess.util.GetActInstanceDelegate", delegate)


def test_activity_instance_tree_nested_cmd(kit: BpmTest) -> None:
    # SubProcessTest.testActivityInstanceTreeNestedCmd (CAM-2169)
    seen: list[object] = []
    _capture_tree(kit, seen)
    deploy(kit, "SubProcessTest.testActivityInstanceTreeNestedCmd.bpmn")
    kit.start("process")
    (got,) = seen
    assert got == shape(scope("SubProcess_1", leaf("ServiceTask_1")))


def test_activity_instance_tree_nested_cmd_after_tx(kit: BpmTest) -> None:
    # SubProcessTest.testActivityInstanceTreeNestedCmdAfterTx (CAM-2169)
    seen: list[object] = []
    _capture_tree(kit, seen)
    deploy(kit, "SubProcessTest.testActivityInstanceTreeNestedCmdAfterTx.bpmn")
    kit.start("process")
    kit.correlate("message")
    (got,) = seen
    assert got == shape(scope("SubProcess_1", leaf("ServiceTask_1")))


def test_concurrency_in_sub_process(kit: BpmTest) -> None:
    # SubProcessTest.testConcurrencyInSubProcess
    deploy(kit, "SubProcessTest.fixSystemFailureProcess.bpmn20.xml")
    pi = kit.start("fixSystemFailure")
    assert task_names(kit, pi.id) == ["Investigate hardware", "Investigate software"]
    complete_named(kit, "Investigate hardware")
    complete_named(kit, "Investigate software")
    assert task_names(kit, pi.id) == ["Write report"]
