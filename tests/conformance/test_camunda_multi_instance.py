"""Camunda 7's MultiInstanceTest, ported (issue 21, item 2): each test deploys the original's
BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts what the
original asserts, on SQLite and PostgreSQL. The Groovy script tasks run as the inline
handler named by the task id (docs/bpmn.md, script tasks), doing what the script does; the
Java delegates are inline handlers doing what the delegate does.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/multiinstance/MultiInstanceTest.java
(testParallelUserTasksCompletionCondition and testParallelUserTasksBasedOnCollection are in
tests/test_semantics_21.py; left out: see LEFT_OUT.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from bpm.handlers import TaskContext
from bpm.testing import BpmTest, assert_that
from tests.conformance.scopes_kit import (
    complete_all,
    complete_task,
    deploy,
    ended,
    leaf,
    open_tasks,
    scope,
    shape,
    subscriptions,
    task_nodes,
    tree,
)

BODY = "#multiInstanceBody"


def fire_the_timer(kit: BpmTest) -> None:
    """``managementService.executeJob`` of the one timer job."""
    (job,) = kit.engine.timers()
    kit.engine.fire_timer_now(job.id)
    kit.run()


def count_sum(kit: BpmTest, node: str, *, by_loop_counter: bool) -> None:
    """The Groovy script ``processInstance.setVariable("sum", sum + loopCounter)`` (or
    ``sum + 1``), with ``sum`` null read as 0."""

    def script(ctx: TaskContext) -> Mapping[str, Any]:
        total = ctx.variables.get("sum") or 0
        return {"sum": total + (ctx.variables["loopCounter"] if by_loop_counter else 1)}

    kit.handler(node, script)


def body_count(kit: BpmTest, instance_id: str, activity_id: str) -> int:
    """``getActivityInstances(activity_id).length``: activity instances of that activity."""
    root = kit.engine.activity_instances(instance_id)
    return sum(1 for x in root.walk() if x.activity_id == activity_id)


# -- user tasks ------------------------------------------------------------------------------


def test_sequential_user_tasks(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialUserTasks
    deploy(kit, "MultiInstanceTest.sequentialUserTasks.bpmn20.xml")
    pi = kit.start("miSequentialUserTasks", {"nrOfLoops": 3})
    expected = shape(scope("miTasks" + BODY, leaf("miTasks")))
    for i in range(3):
        assert tree(kit, pi.id) == expected
        (task,) = open_tasks(kit)
        assert task.name == "My Task"
        assert task.assignee == f"kermit_{i}"
        complete_task(kit, task)
    assert open_tasks(kit) == []
    assert ended(kit, pi.id)


def test_sequential_user_tasks_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialUserTasksWithTimer
    deploy(kit, "MultiInstanceTest.sequentialUserTasks.bpmn20.xml")
    pi = kit.start("miSequentialUserTasks", {"nrOfLoops": 3})
    complete_task(kit, open_tasks(kit)[0])
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_sequential_user_tasks_completion_condition(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialUserTasksCompletionCondition: 10 to create, the
    # completion condition stops them at 5
    deploy(kit, "MultiInstanceTest.sequentialUserTasks.bpmn20.xml")
    pi = kit.start("miSequentialUserTasks", {"nrOfLoops": 10})
    for _ in range(5):
        (task,) = open_tasks(kit)
        complete_task(kit, task)
    assert open_tasks(kit) == []
    assert ended(kit, pi.id)


def test_nested_sequential_user_tasks(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedSequentialUserTasks
    deploy(kit, "MultiInstanceTest.testNestedSequentialUserTasks.bpmn20.xml")
    pi = kit.start("miNestedSequentialUserTasks")
    for _ in range(3):
        (task,) = kit.engine.user_tasks(assignee="kermit")
        assert task.name == "My Task"
        assert body_count(kit, pi.id, "miTasks") == 1
        complete_task(kit, task)
    assert ended(kit, pi.id)


def test_parallel_user_tasks(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelUserTasks
    deploy(kit, "MultiInstanceTest.testParallelUserTasks.bpmn20.xml")
    pi = kit.start("miParallelUserTasks")
    tasks = open_tasks(kit)
    assert [t.name for t in tasks] == ["My Task 0", "My Task 1", "My Task 2"]
    assert body_count(kit, pi.id, "miTasks") == 3
    complete_task(kit, tasks[0])
    assert body_count(kit, pi.id, "miTasks") == 2
    complete_task(kit, tasks[1])
    assert body_count(kit, pi.id, "miTasks") == 1
    complete_task(kit, tasks[2])
    assert ended(kit, pi.id)


def test_parallel_receive_tasks(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelReceiveTasks: Camunda triggers each execution by id;
    # here the one message goes to each of the instance's three waits (all=True)
    deploy(kit, "MultiInstanceTest.testParallelReceiveTasks.bpmn20.xml")
    pi = kit.start("miParallelReceiveTasks")
    assert len(subscriptions(kit)) == 3
    assert len(kit.correlate("message", instance=pi, all=True)) == 3
    assert ended(kit, pi.id)


def test_parallel_user_tasks_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelUserTasksWithTimer
    deploy(kit, "MultiInstanceTest.testParallelUserTasksWithTimer.bpmn20.xml")
    pi = kit.start("miParallelUserTasksWithTimer")
    complete_task(kit, open_tasks(kit)[0])
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_empty_collection_in_mi(kit: BpmTest) -> None:
    # MultiInstanceTest.testEmptyCollectionInMI: no task, the process ends; the history has
    # the start, the (empty) body and the end
    deploy(kit, "MultiInstanceTest.testParallelUserTasksBasedOnCollection.bpmn20.xml")
    pi = kit.start("miParallelUserTasksBasedOnCollection", {"assigneeList": []})
    assert open_tasks(kit) == []
    assert ended(kit, pi.id)
    assert_that(pi).has_passed("theStart", "miTasks", "theEnd")
    assert kit.engine.user_tasks(pi.id, state=None) == []


def test_parallel_user_tasks_custom_extensions(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelUserTasksCustomExtensions
    deploy(kit, "MultiInstanceTest.testParallelUserTasksCustomExtensions.bpmn20.xml")
    assignees = ["kermit", "gonzo", "fozzie"]
    kit.start("miSequentialUserTasks", {"assigneeList": assignees})
    for assignee in assignees:
        (task,) = open_tasks(kit)
        assert task.assignee == assignee
        complete_task(kit, task)


def test_nested_parallel_user_tasks(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedParallelUserTasks
    deploy(kit, "MultiInstanceTest.testNestedParallelUserTasks.bpmn20.xml")
    pi = kit.start("miNestedParallelUserTasks")
    tasks = kit.engine.user_tasks(assignee="kermit")
    assert len(tasks) == 4
    for task in tasks:
        assert task.name == "My Task"
        complete_task(kit, task)
    assert ended(kit, pi.id)


# -- script tasks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "loops", "total"),
    [
        ("testSequentialScriptTasks", 5, 10),
        ("testSequentialScriptTasksNoStackOverflow", 200, 19900),
    ],
)
def test_sequential_script_tasks(kit: BpmTest, method: str, loops: int, total: int) -> None:
    # MultiInstanceTest.testSequentialScriptTasks, testSequentialScriptTasksNoStackOverflow
    count_sum(kit, "miScriptTask", by_loop_counter=True)
    deploy(kit, "MultiInstanceTest.testSequentialScriptTasks.bpmn20.xml")
    pi = kit.start("miSequentialScriptTask", {"sum": 0, "nrOfLoops": loops})
    assert kit.waiting_at(pi) == ["waitState"]
    assert kit.variables(pi)["sum"] == total


def test_sequential_script_tasks_completion_condition(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialScriptTasksCompletionCondition: 5 of 10 is >= 0.5
    count_sum(kit, "miScriptTask", by_loop_counter=False)
    deploy(kit, "MultiInstanceTest.testSequentialScriptTasksCompletionCondition.bpmn20.xml")
    pi = kit.start("miSequentialScriptTaskCompletionCondition")
    assert kit.waiting_at(pi) == ["waitState"]
    assert kit.variables(pi)["sum"] == 5


def test_parallel_script_tasks_completion_condition(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelScriptTasksCompletionCondition
    count_sum(kit, "miScriptTask", by_loop_counter=False)
    deploy(kit, "MultiInstanceTest.testParallelScriptTasksCompletionCondition.bpmn20.xml")
    pi = kit.start("miParallelScriptTaskCompletionCondition")
    assert kit.waiting_at(pi) == ["waitState"]
    assert kit.variables(pi)["sum"] == 2


# -- embedded sub-processes ------------------------------------------------------------------


def active_leaves(kit: BpmTest, instance_id: str) -> list[str]:
    """``runtimeService.getActiveActivityIds``: the activities at the leaves of the tree."""
    root = kit.engine.activity_instances(instance_id)
    found = [x.activity_id for x in root.walk() if x is not root and not x.child_activity_instances]
    return sorted(found + [t.activity_id for t in root.transitions()])


def test_sequential_sub_process(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialSubProcess
    deploy(kit, "MultiInstanceTest.testSequentialSubProcess.bpmn20.xml")
    pi = kit.start("miSequentialSubprocess")
    for i in range(4):
        tasks = open_tasks(kit)
        assert [t.name for t in tasks] == ["task one", "task two"]
        complete_task(kit, tasks[0])
        complete_task(kit, tasks[1])
        if i != 3:
            assert len(active_leaves(kit, pi.id)) == 2
    assert ended(kit, pi.id)


def test_sequential_sub_process_end_event(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialSubProcessEndEvent (ACT-1185)
    deploy(kit, "MultiInstanceTest.testSequentialSubProcessEndEvent.bpmn20.xml")
    pi = kit.start("miSequentialSubprocess")
    for i in range(4):
        tasks = open_tasks(kit)
        assert [t.name for t in tasks] == ["task one"]
        complete_task(kit, tasks[0])
        if i != 3:
            assert len(active_leaves(kit, pi.id)) == 1
    assert ended(kit, pi.id)


def test_sequential_sub_process_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialSubProcessWithTimer
    deploy(kit, "MultiInstanceTest.testSequentialSubProcessWithTimer.bpmn20.xml")
    pi = kit.start("miSequentialSubprocessWithTimer")
    tasks = open_tasks(kit)
    assert len(tasks) == 2
    complete_task(kit, tasks[0])
    complete_task(kit, tasks[1])
    assert len(open_tasks(kit)) == 2
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_sequential_sub_process_completion_condition(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialSubProcessCompletionCondition
    deploy(kit, "MultiInstanceTest.testSequentialSubProcessCompletionCondition.bpmn20.xml")
    pi = kit.start("miSequentialSubprocessCompletionCondition")
    for _ in range(3):
        tasks = open_tasks(kit)
        assert [t.name for t in tasks] == ["task one", "task two"]
        complete_task(kit, tasks[0])
        complete_task(kit, tasks[1])
    assert ended(kit, pi.id)


def test_nested_sequential_sub_process(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedSequentialSubProcess
    deploy(kit, "MultiInstanceTest.testNestedSequentialSubProcess.bpmn20.xml")
    pi = kit.start("miNestedSequentialSubProcess")
    for _ in range(3):
        tasks = kit.engine.user_tasks(assignee="kermit")
        complete_task(kit, tasks[0])
        complete_task(kit, tasks[1])
    assert ended(kit, pi.id)


def test_nested_sequential_sub_process_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedSequentialSubProcessWithTimer
    deploy(kit, "MultiInstanceTest.testNestedSequentialSubProcessWithTimer.bpmn20.xml")
    pi = kit.start("miNestedSequentialSubProcessWithTimer")
    for _ in range(2):
        tasks = kit.engine.user_tasks(assignee="kermit")
        complete_task(kit, tasks[0])
        complete_task(kit, tasks[1])
    complete_task(kit, kit.engine.user_tasks(assignee="kermit")[0])
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_parallel_sub_process(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelSubProcess
    deploy(kit, "MultiInstanceTest.testParallelSubProcess.bpmn20.xml")
    pi = kit.start("miParallelSubprocess")
    tasks = open_tasks(kit)
    assert len(tasks) == 4
    for task in tasks:
        complete_task(kit, task)
    assert ended(kit, pi.id)


def test_parallel_sub_process_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelSubProcessWithTimer
    deploy(kit, "MultiInstanceTest.testParallelSubProcessWithTimer.bpmn20.xml")
    pi = kit.start("miParallelSubprocessWithTimer")
    tasks = open_tasks(kit)
    assert len(tasks) == 6
    complete_task(kit, tasks[0])
    complete_task(kit, tasks[1])
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_parallel_sub_process_completion_condition(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelSubProcessCompletionCondition: completing the tasks of
    # one inner sub-process completes the body
    deploy(kit, "MultiInstanceTest.testParallelSubProcessCompletionCondition.bpmn20.xml")
    pi = kit.start("miParallelSubprocessCompletionCondition")
    assert len(open_tasks(kit)) == 4
    root = kit.engine.activity_instances(pi.id)
    first = next(x for x in root.walk() if x.activity_id == "miSubProcess")
    tokens = {c.token_id for c in first.child_activity_instances}
    assert len(tokens) == 2
    for task in [t for t in open_tasks(kit) if t.token_id in tokens]:
        complete_task(kit, task)
    assert ended(kit, pi.id)


def test_nested_parallel_sub_process(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedParallelSubProcess
    deploy(kit, "MultiInstanceTest.testNestedParallelSubProcess.bpmn20.xml")
    pi = kit.start("miNestedParallelSubProcess")
    tasks = open_tasks(kit)
    assert len(tasks) == 8
    for task in tasks:
        complete_task(kit, task)
    assert ended(kit, pi.id)


def test_nested_parallel_sub_process_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedParallelSubProcessWithTimer
    deploy(kit, "MultiInstanceTest.testNestedParallelSubProcessWithTimer.bpmn20.xml")
    pi = kit.start("miNestedParallelSubProcess")
    tasks = open_tasks(kit)
    assert len(tasks) == 12
    for task in tasks[:3]:
        complete_task(kit, task)
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


# -- call activities -------------------------------------------------------------------------

EXTERNAL = "MultiInstanceTest.externalSubProcess.bpmn20.xml"


@pytest.mark.parametrize(
    ("method", "key", "rounds"),
    [
        ("testSequentialCallActivity", "miSequentialCallActivity", 3),
        ("testNestedSequentialCallActivity", "miNestedSequentialCallActivity", 4),
    ],
)
def test_sequential_call_activity(kit: BpmTest, method: str, key: str, rounds: int) -> None:
    # MultiInstanceTest.testSequentialCallActivity, testNestedSequentialCallActivity
    deploy(kit, f"MultiInstanceTest.{method}.bpmn20.xml", EXTERNAL)
    pi = kit.start(key)
    for _ in range(rounds):
        tasks = open_tasks(kit)
        assert [t.name for t in tasks] == ["task one", "task two"]
        complete_task(kit, tasks[0])
        complete_task(kit, tasks[1])
    assert ended(kit, pi.id)


def test_sequential_call_activity_with_list(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialCallActivityWithList
    deploy(kit, "MultiInstanceTest.testSequentialCallActivityWithList.bpmn20.xml")
    pi = kit.start("parentProcess", {"list": ["one", "two"]})
    by_element = {kit.variables(t.instance_id).get("element"): t for t in open_tasks(kit)}
    assert set(by_element) == {"one", "two"}
    complete_task(kit, by_element["one"], {"x": "y"})
    complete_task(kit, by_element["two"], {"x": "y"})
    (task3,) = open_tasks(kit)
    assert kit.instance(task3.instance_id).definition_key == "midProcess"
    complete_task(kit, task3)
    (task4,) = open_tasks(kit)
    assert task4.instance_id == pi.id
    complete_task(kit, task4)
    assert ended(kit, pi.id)


def test_sequential_call_activity_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testSequentialCallActivityWithTimer
    deploy(kit, "MultiInstanceTest.testSequentialCallActivityWithTimer.bpmn20.xml", EXTERNAL)
    pi = kit.start("miSequentialCallActivityWithTimer")
    tasks = open_tasks(kit)
    assert [t.name for t in tasks] == ["task one", "task two"]
    complete_task(kit, tasks[0])
    complete_task(kit, tasks[1])
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


@pytest.mark.parametrize(
    ("method", "key", "count"),
    [
        ("testParallelCallActivity", "miParallelCallActivity", 12),
        ("testNestedParallelCallActivity", "miNestedParallelCallActivity", 14),
    ],
)
def test_parallel_call_activity(kit: BpmTest, method: str, key: str, count: int) -> None:
    # MultiInstanceTest.testParallelCallActivity, testNestedParallelCallActivity
    deploy(kit, f"MultiInstanceTest.{method}.bpmn20.xml", EXTERNAL)
    pi = kit.start(key)
    tasks = open_tasks(kit)
    assert len(tasks) == count
    for task in tasks:
        complete_task(kit, task)
    assert ended(kit, pi.id)


@pytest.mark.parametrize(
    ("method", "key", "count", "done"),
    [
        ("testParallelCallActivityWithTimer", "miParallelCallActivity", 6, 2),
        ("testNestedParallelCallActivityWithTimer", "miNestedParallelCallActivityWithTimer", 4, 3),
    ],
)
def test_parallel_call_activity_with_timer(
    kit: BpmTest, method: str, key: str, count: int, done: int
) -> None:
    # MultiInstanceTest.testParallelCallActivityWithTimer,
    # testNestedParallelCallActivityWithTimer
    deploy(kit, f"MultiInstanceTest.{method}.bpmn20.xml", EXTERNAL)
    pi = kit.start(key)
    tasks = open_tasks(kit)
    assert len(tasks) == count
    for task in tasks[:done]:
        complete_task(kit, task)
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_nested_sequential_call_activity_with_timer(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedSequentialCallActivityWithTimer
    deploy(kit, "MultiInstanceTest.testNestedSequentialCallActivityWithTimer.bpmn20.xml", EXTERNAL)
    pi = kit.start("miNestedSequentialCallActivityWithTimer")
    tasks = open_tasks(kit)
    assert [t.name for t in tasks] == ["task one", "task two"]
    complete_task(kit, tasks[0])
    complete_task(kit, tasks[1])
    tasks = open_tasks(kit)
    assert len(tasks) == 2
    complete_task(kit, tasks[0])
    fire_the_timer(kit)
    assert task_nodes(kit) == ["taskAfterTimer"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_nested_parallel_call_activity_completion_condition(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedParallelCallActivityCompletionCondition
    deploy(
        kit,
        "MultiInstanceTest.testNestedParallelCallActivityCompletionCondition.bpmn20.xml",
        EXTERNAL,
    )
    pi = kit.start("miNestedParallelCallActivityCompletionCondition")
    assert len(open_tasks(kit)) == 8
    for _ in range(2):
        child = kit.engine.instances(definition_key="externalSubProcess", state="active")[0]
        tasks = open_tasks(kit, child.id)
        assert len(tasks) == 2
        for task in tasks:
            complete_task(kit, task)
    assert ended(kit, pi.id)


# -- service tasks, timers in bodies, errors from called processes, nesting ------------------


def multi_instance_delegate(ctx: TaskContext) -> Mapping[str, Any]:
    """MultiInstanceDelegate: result * item, or result * 2 without an item."""
    item = ctx.variables.get("item")
    result = ctx.variables["result"]
    return {"result": result * item if item is not None else result * 2}


@pytest.mark.parametrize(
    ("method", "variables", "result"),
    [
        ("testSequentialServiceTaskWithClass", {"result": 5}, 160),
        (
            "testSequentialServiceTaskWithClassAndCollection",
            {"result": 1, "items": [1, 2, 3, 4, 5, 6]},
            720,
        ),
    ],
)
def test_sequential_service_task_with_class(
    kit: BpmTest, method: str, variables: dict[str, Any], result: int
) -> None:
    # MultiInstanceTest.testSequentialServiceTaskWithClass (ACT-764),
    # testSequentialServiceTaskWithClassAndCollection
    kit.handler(
        "org.camunda.bpm.engine.test.bpmn.multiinstance.MultiInstanceDelegate",
        multi_instance_delegate,
    )
    deploy(kit, f"MultiInstanceTest.{method}.bpmn20.xml")
    pi = kit.start("multiInstanceServiceTask", variables)
    assert kit.variables(pi)["result"] == result
    kit.correlate("wait", instance=pi)  # runtimeService.signal(processInstanceId)
    assert ended(kit, pi.id)


@pytest.mark.parametrize(
    ("model", "first"),
    [
        ("MultiInstanceTest.callActivityWithBoundaryErrorEvent.bpmn20.xml", 2),
        ("MultiInstanceTest.callActivityWithBoundaryErrorEventSequential.bpmn20.xml", 1),
    ],
)
def test_multi_instance_call_activity_with_error_boundary_event(
    kit: BpmTest, model: str, first: int
) -> None:
    # MultiInstanceTest.testMultiInstanceCallActivityWithErrorBoundaryEvent,
    # testSequentialMultiInstanceCallActivityWithErrorBoundaryEvent
    deploy(kit, model, "MultiInstanceTest.throwingErrorEventSubProcess.bpmn20.xml")
    pi = kit.start("process", {"assignees": ["kermit", "gonzo"]})
    tasks = open_tasks(kit)
    assert len(tasks) == first
    complete_task(kit, tasks[0], {"done": False})  # the called process ends in an error
    tasks = open_tasks(kit)
    assert len(tasks) == 1
    complete_task(kit, tasks[0])
    assert kit.engine.instances(definition_key="process", state="active") == []
    assert ended(kit, pi.id)


def test_nested_multi_instance_tasks(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedMultiInstanceTasks
    deploy(kit, "MultiInstanceTest.testNestedMultiInstanceTasks.bpmn20.xml")
    processes, assignees = ["process A", "process B"], ["kermit", "gonzo"]
    pi = kit.start(
        "miNestedMultiInstanceTasks", {"subProcesses": processes, "assignees": assignees}
    )
    tasks = open_tasks(kit)
    assert len(tasks) == len(processes) * len(assignees)
    complete_all(kit)
    assert ended(kit, pi.id)


def test_nested_multi_instance_tasks_activity_instance(kit: BpmTest) -> None:
    # MultiInstanceTest.testNestedMultiInstanceTasksActivityInstance
    deploy(kit, "MultiInstanceTest.testNestedMultiInstanceTasks.bpmn20.xml")
    pi = kit.start(
        "miNestedMultiInstanceTasks",
        {"subProcesses": ["process A", "process B"], "assignees": ["kermit", "gonzo"]},
    )
    inner = scope("subprocess1", scope("miTasks" + BODY, leaf("miTasks"), leaf("miTasks")))
    assert tree(kit, pi.id) == shape(scope("subprocess1" + BODY, inner, inner))


def test_act901(kit: BpmTest) -> None:
    # MultiInstanceTest.testAct901: five parallel sub-process instances, each a task with a
    # one-minute boundary timer; firing the five timers cancels every task. The model's
    # subprocess1usertask2 has no incoming flow; it deploys (a node no start event reaches
    # is a warning, issue 21 item 3), as in Camunda
    deploy(kit, "MultiInstanceTest.testAct901.bpmn20.xml")
    pi = kit.start("multiInstanceSubProcess")
    assert len(kit.engine.user_tasks(pi.id)) == 5
    timers = kit.engine.timers()
    assert len(timers) == 5
    for timer in timers:
        kit.engine.fire_timer_now(timer.id)
        kit.run()
    assert kit.engine.user_tasks(pi.id) == []
