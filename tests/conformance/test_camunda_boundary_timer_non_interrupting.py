"""Camunda 7's BoundaryTimerNonInterruptingEventTest, ported (issue 21, item 2): each test
deploys the original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE)
and asserts what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/timer/BoundaryTimerNonInterruptingEventTest.java. Camunda's timer jobs are this
engine's pending timers; ``executeJob`` is ``fire_timer_now`` and a run (``execute_job``);
moving ``ClockUtil`` and executing the due jobs is ``kit.advance``. The left-out methods are
in LEFT_OUT.md.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from bpm.builder import Process
from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import (
    MODELS,
    complete_all,
    complete_one,
    execute_job,
    only_timer,
    task_names,
)


def deploy(kit: BpmTest, method: str) -> None:
    kit.deploy(MODELS / f"BoundaryTimerNonInterruptingEventTest.{method}.bpmn20.xml")


def complete_named(kit: BpmTest, name: str) -> None:
    (task,) = [t for t in kit.engine.user_tasks() if t.name == name]
    kit.engine.complete_user_task(task.id, {})
    kit.run()


def test_multiple_timers_on_user_task(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testMultipleTimersOnUserTask
    deploy(kit, "testMultipleTimersOnUserTask")
    inst = kit.start("nonInterruptingTimersOnUserTask")
    assert task_names(kit) == ["First Task"]
    assert len(kit.engine.timers(inst.id)) == 2
    kit.advance("PT1H5S")
    assert len(kit.engine.timers(inst.id)) == 1
    assert task_names(kit) == ["Escalation Task 1", "First Task"]
    complete_named(kit, "Escalation Task 1")
    assert task_names(kit) == ["First Task"]
    kit.advance("PT1H")  # 2 h 5 s after the start
    assert kit.engine.timers(inst.id) == []
    assert task_names(kit) == ["Escalation Task 2", "First Task"]
    complete_named(kit, "First Task")
    assert task_names(kit) == ["Escalation Task 2"]
    complete_named(kit, "Escalation Task 2")
    assert_that(inst).is_completed()


def test_timer_on_mi_user_task(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerOnMiUserTask: one timer on the
    # multi-instance body of five tasks
    deploy(kit, "testTimerOnMiUserTask")
    inst = kit.start("nonInterruptingTimersOnUserTask")
    assert task_names(kit) == ["First Task"] * 5
    execute_job(kit, only_timer(kit, inst.id))
    assert task_names(kit) == ["Escalation Task 1"] + ["First Task"] * 5
    complete_named(kit, "Escalation Task 1")
    complete_all(kit)
    assert_that(inst).is_completed()


def test_join(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testJoin: the timer's branch and the task's
    # meet in a parallel join
    deploy(kit, "testJoin")
    inst = kit.start("testJoin")
    assert task_names(kit) == ["Main Task"]
    execute_job(kit, only_timer(kit, inst.id))
    assert len(kit.engine.user_tasks()) == 2
    complete_named(kit, "Main Task")
    assert task_names(kit) == ["Escalation Task"]
    complete_named(kit, "Escalation Task")
    assert_that(inst).is_completed()


def test_timer_on_concurrent_mi_tasks(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerOnConcurrentMiTasks
    deploy(kit, "testTimerOnConcurrentMiTasks")
    inst = kit.start("timerOnConcurrentMiTasks")
    assert task_names(kit) == ["First Task"] * 5 + ["Second Task"]
    execute_job(kit, only_timer(kit, inst.id))
    names = task_names(kit)
    assert len(names) == 7
    assert names[0] == "Escalation Task 1"
    complete_named(kit, "Escalation Task 1")
    complete_all(kit)
    assert_that(inst).is_completed()


def test_timer_on_concurrent_tasks(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerOnConcurrentTasks
    deploy(kit, "testTimerOnConcurrentTasks")
    inst = kit.start("nonInterruptingOnConcurrentTasks")
    assert len(kit.engine.user_tasks()) == 2
    execute_job(kit, only_timer(kit))
    assert len(kit.engine.user_tasks()) == 3
    complete_one(kit, "timerFiredTask")
    assert len(kit.engine.user_tasks()) == 2
    complete_all(kit)
    assert_that(inst).is_completed()


def test_timer_on_concurrent_tasks2(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerOnConcurrentTasks2: the join first
    deploy(kit, "testTimerOnConcurrentTasks")
    inst = kit.start("nonInterruptingOnConcurrentTasks")
    assert len(kit.engine.user_tasks()) == 2
    execute_job(kit, only_timer(kit))
    assert len(kit.engine.user_tasks()) == 3
    complete_one(kit, "firstTask")
    complete_one(kit, "secondTask")
    assert len(kit.engine.user_tasks()) == 1
    complete_one(kit, "timerFiredTask")
    assert_that(inst).is_completed()


def test_timer_with_cycle(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerWithCycle: R/PT1H fires every hour
    # while the task is open, and not after
    deploy(kit, "testTimerWithCycle")
    kit.start("nonInterruptingCycle")

    def fired() -> int:
        return len(kit.engine.user_tasks(node_id="timerFiredTask"))

    assert fired() == 0
    kit.advance("PT1H5S")
    assert fired() == 1
    kit.advance("PT1H5S")
    assert fired() == 2
    complete_one(kit, "task")
    kit.advance("PT1H5S")
    assert fired() == 2


def test_timer_on_embedded_subprocess(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerOnEmbeddedSubprocess (ACT-1173)
    deploy(kit, "testTimerOnEmbeddedSubprocess")
    inst = kit.start("nonInterruptingTimerOnEmbeddedSubprocess")
    assert len(kit.engine.user_tasks(assignee="kermit")) == 1
    execute_job(kit, only_timer(kit))
    tasks = kit.engine.user_tasks(assignee="kermit")
    assert len(tasks) == 2
    for task in tasks:
        kit.engine.complete_user_task(task.id, {})
        kit.run()
    assert_that(inst).is_completed()


def test_receive_task_with_boundary_timer(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testReceiveTaskWithBoundaryTimer (ACT-1106): a
    # cycle ${timeCycle} on a receive task; the one execution is at 'task'; signalling it
    # (here: the message it waits for, named after it) ends the instance
    deploy(kit, "testReceiveTaskWithBoundaryTimer")
    inst = kit.start("nonInterruptingCycle", {"timeCycle": "R/PT1H"})
    assert len(kit.engine.timers(inst.id)) == 1
    assert kit.waiting_at(inst) == ["task"]
    kit.correlate("task", instance=inst)
    assert_that(inst).is_completed()


def test_timer_on_concurrent_subprocess(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerOnConcurrentSubprocess
    deploy(kit, "testTimerOnConcurrentSubprocess")
    inst = kit.start("testTimerOnConcurrentSubprocess")
    assert len(kit.engine.user_tasks()) == 4
    execute_job(kit, only_timer(kit))
    assert len(kit.engine.user_tasks()) == 5
    for node in ("sub1task1", "sub1task2", "sub2task1", "sub2task2"):
        complete_one(kit, node)
    assert len(kit.engine.user_tasks()) == 1
    complete_one(kit, "timerFiredTask")
    assert_that(inst).is_completed()


def test_timer_on_concurrent_subprocess2(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimerOnConcurrentSubprocess2
    deploy(kit, "testTimerOnConcurrentSubprocess")
    inst = kit.start("testTimerOnConcurrentSubprocess")
    assert len(kit.engine.user_tasks()) == 4
    execute_job(kit, only_timer(kit))
    assert len(kit.engine.user_tasks()) == 5
    for node in ("sub1task1", "sub1task2", "timerFiredTask", "sub2task1", "sub2task2"):
        complete_one(kit, node)
    assert kit.engine.user_tasks() == []
    assert_that(inst).is_completed()


def test_multiple_outgoing_sequence_flows(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testMultipleOutgoingSequenceFlows
    deploy(kit, "testMultipleOutgoingSequenceFlows")
    inst = kit.start("nonInterruptingTimer")
    execute_job(kit, only_timer(kit))
    assert len(kit.engine.user_tasks()) == 3
    complete_all(kit)
    assert_that(inst).is_completed()


@pytest.mark.parametrize(
    "order",
    [
        ("innerTask1", "innerTask2", "timerFiredTask1", "timerFiredTask2"),
        ("timerFiredTask1", "timerFiredTask2", "innerTask1", "innerTask2"),
    ],
)
def test_multiple_outgoing_sequence_flows_on_subprocess(
    kit: BpmTest, order: tuple[str, ...]
) -> None:
    # BoundaryTimerNonInterruptingEventTest.testMultipleOutgoingSequenceFlowsOnSubprocess
    # (case 1: inner tasks first; case 2: the timer's tasks first)
    deploy(kit, "testMultipleOutgoingSequenceFlowsOnSubprocess")
    inst = kit.start("nonInterruptingTimer")
    execute_job(kit, only_timer(kit))
    for node in order:
        complete_one(kit, node)
    assert_that(inst).is_completed()


def test_multiple_outgoing_sequence_flows_on_subprocess_mi(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testMultipleOutgoingSequenceFlowsOnSubprocessMi
    deploy(kit, "testMultipleOutgoingSequenceFlowsOnSubprocessMi")
    inst = kit.start("nonInterruptingTimer")
    execute_job(kit, only_timer(kit))
    assert len(kit.engine.user_tasks()) == 10
    complete_all(kit)
    assert_that(inst).is_completed()


def test_time_cycle(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.testTimeCycle: executing the cycle's job makes
    # another job
    deploy(kit, "testTimerWithCycle")
    kit.start("nonInterruptingCycle")
    first = only_timer(kit)
    execute_job(kit, first)
    assert only_timer(kit).id != first.id


def test_should_execute_timer_job_on_or_after_due_date(kit: BpmTest) -> None:
    # BoundaryTimerNonInterruptingEventTest.shouldExecuteTimerJobOnOrAfterDueDate (the
    # fluent model built with this engine's builder; asyncBefore on the start is moot
    # here; Camunda's clock stands still while its job executor runs, as the kit's does): a
    # R/PT3S non-interrupting timer is not executed before it is due, 3 s after the start
    kit.deploy(
        Process("timerProcess")
        .start("start")
        .user_task("user-task-with-timer")
        .boundary_timer(
            "non-interuption-timer", "user-task-with-timer", cycle="R/PT3S", interrupting=False
        )
        .end("timer_end")
        .end("end")
        .sequence("start", "user-task-with-timer", "end")
        .sequence("non-interuption-timer", "timer_end")
    )
    start = kit.clock.now
    kit.start("timerProcess")
    kit.run()
    (timer,) = [t for t in kit.engine.timers() if t.node_id == "non-interuption-timer"]
    assert len(kit.engine.user_tasks()) == 1
    assert timer.fire_at == start + timedelta(seconds=3)
