"""Camunda 7's StartTimerEventTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/timer/StartTimerEventTest.java.
Camunda's jobs are this engine's pending timers plus the active schedules of timer start
events (``jobs``); ``executeJob`` of an event sub-process timer is ``fire_timer_now`` and a
run (``execute_job``); moving ``ClockUtil`` and executing the due jobs is ``kit.advance``.
The originals also count executions (Camunda's execution tree, no equivalent here): the
tasks, jobs and instances they count are asserted. ``DummyServiceTask`` (it records that it
ran) is a handler double. The left-out methods are in LEFT_OUT.md.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bpm.builder import Process
from bpm.testing import BpmTest, HandlerDouble, assert_that
from tests.conformance.conftest import MODELS, complete_all, execute_job

DUMMY = "org.camunda.bpm.engine.test.bpmn.event.timer.DummyServiceTask"


def deploy(kit: BpmTest, *methods: str) -> None:
    kit.deploy(
        *(
            MODELS / (m if m.endswith(".xml") else f"StartTimerEventTest.{m}.bpmn20.xml")
            for m in methods
        )
    )


def jobs(kit: BpmTest) -> int:
    """Camunda's job count: pending timers and due timer start events."""
    due = [s for s in kit.engine.schedules() if s.state == "active" and s.next_due is not None]
    return len(kit.engine.timers()) + len(due)


def instances(kit: BpmTest, key: str) -> int:
    return len(kit.engine.instances("active", definition_key=key))


def dummy(kit: BpmTest) -> HandlerDouble:
    return kit.mock(DUMMY)


def running(kit: BpmTest, instance_id: str) -> bool:
    return kit.instance(instance_id).state.value == "active"


def test_duration_start_timer_event(kit: BpmTest) -> None:
    # StartTimerEventTest.testDurationStartTimerEvent: PT5M after deployment
    deploy(kit, "testDurationStartTimerEvent")
    assert jobs(kit) == 1
    kit.advance("PT50M5S")
    (inst,) = kit.engine.instances("active", definition_key="startTimerEventExample")
    assert inst.definition_key == "startTimerEventExample"
    assert jobs(kit) == 0


@pytest.mark.parametrize(
    "method", ["testFixedDateStartTimerEvent", "testExpressionStartTimerEvent"]
)
def test_fixed_date_start_timer_event(kit: BpmTest, method: str) -> None:
    # StartTimerEventTest.{method}: timeDate 2036-11-14T11:12:22 (ACT-1415: as the
    # expression ${'2036-11-14T11:12:22'}); the clock set to 15/11/2036 11:12:30
    deploy(kit, method)
    assert jobs(kit) == 1
    kit.advance_to(datetime(2036, 11, 15, 11, 12, 30, tzinfo=UTC))
    assert instances(kit, "startTimerEventExample") == 1
    assert jobs(kit) == 0


def test_cycle_with_limit_start_timer_event(kit: BpmTest) -> None:
    # StartTimerEventTest.testCycleWithLimitStartTimerEvent: R2/PT5M, the job knows its
    # deployment (here the schedule its definition)
    deploy(kit, "testCycleWithLimitStartTimerEvent")
    key = "startTimerEventExampleCycle"
    assert jobs(kit) == 1
    (schedule,) = kit.engine.schedules(key)
    assert schedule.definition_id
    assert instances(kit, key) == 0
    kit.advance("PT5M5S")
    assert instances(kit, key) == 1
    assert jobs(kit) == 1
    (schedule,) = kit.engine.schedules(key)
    assert schedule.definition_id
    kit.advance("PT5M5S")
    assert instances(kit, key) == 2
    assert jobs(kit) == 0


def test_version_upgrade_should_cancel_jobs(kit: BpmTest) -> None:
    # StartTimerEventTest.testVersionUpgradeShouldCancelJobs: a new version (the original's
    # text with beforeChange replaced by changed) replaces the old version's job
    deploy(kit, "testVersionUpgradeShouldCancelJobs")
    assert jobs(kit) == 1
    path = MODELS / "StartTimerEventTest.testVersionUpgradeShouldCancelJobs.bpmn20.xml"
    changed = path.read_text(encoding="utf-8").replace("beforeChange", "changed")
    kit.engine.create_deployment((path.name, changed))
    assert jobs(kit) == 1
    kit.advance("PT5M5S")
    (inst,) = kit.engine.instances("active", definition_key="startTimerEventExample")
    assert kit.waiting_at(inst) == ["changed"]
    assert jobs(kit) == 1


def test_timer_should_not_be_recreated_on_deployment_cache_reboot(kit: BpmTest) -> None:
    # StartTimerEventTest.testTimerShouldNotBeRecreatedOnDeploymentCacheReboot: starting an
    # instance (after Camunda drops its deployment cache: there is none here) makes no job
    deploy(kit, "testTimerShouldNotBeRecreatedOnDeploymentCacheReboot")
    assert jobs(kit) == 1
    kit.start("startTimer", start_event="theStart")
    assert jobs(kit) == 1


def test_timer_should_not_be_removed_when_undeploying_old_version(kit: BpmTest) -> None:
    # StartTimerEventTest.testTimerShouldNotBeRemovedWhenUndeployingOldVersion (ACT-1533)
    path = (
        MODELS
        / "StartTimerEventTest.testTimerShouldNotBeRemovedWhenUndeployingOldVersion.bpmn20.xml"
    )
    text = path.read_text(encoding="utf-8")
    first = kit.engine.create_deployment((path.name, text))
    assert jobs(kit) == 1
    kit.engine.create_deployment((path.name, text.replace("beforeChange", "changed")))
    assert jobs(kit) == 1
    kit.engine.delete_deployment(first.id, cascade=True)
    assert jobs(kit) == 1


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("testStartTimerEventInEventSubProcess", "startTimerEventInEventSubProcess"),
        ("testStartTimerEventSubProcessInSubProcess", "startTimerEventSubProcessInSubProcess"),
    ],
)
def test_interrupting_start_timer_event_in_event_sub_process(
    kit: BpmTest, method: str, key: str
) -> None:
    # StartTimerEventTest.{method}: the interrupting timer ends the instance
    double = dummy(kit)
    deploy(kit, method)
    inst = kit.start(key)
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert jobs(kit) == 1
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert double.called
    assert kit.engine.user_tasks(inst.id) == []
    assert not running(kit, inst.id)


@pytest.mark.parametrize(
    ("method", "key"),
    [
        (
            "testNonInterruptingStartTimerEventInEventSubProcess",
            "nonInterruptingStartTimerEventInEventSubProcess",
        ),
        (
            "testNonInterruptingStartTimerEventSubProcessInSubProcess",
            "nonInterruptingStartTimerEventSubProcessInSubProcess",
        ),
    ],
)
def test_non_interrupting_start_timer_event_in_event_sub_process(
    kit: BpmTest, method: str, key: str
) -> None:
    # StartTimerEventTest.{method}: the task stays, the instance goes on
    double = dummy(kit)
    deploy(kit, method)
    inst = kit.start(key)
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert jobs(kit) == 1
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert double.called
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert running(kit, inst.id)


def test_start_timer_event_with_two_event_sub_processes(kit: BpmTest) -> None:
    # StartTimerEventTest.testStartTimerEventWithTwoEventSubProcesses: the earlier
    # interrupting timer ends the instance and the other timer with it
    double = dummy(kit)
    deploy(kit, "testStartTimerEventWithTwoEventSubProcesses")
    inst = kit.start("startTimerEventWithTwoEventSubProcesses")
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert double.call_count == 1
    assert kit.engine.user_tasks(inst.id) == []
    assert not running(kit, inst.id)


def test_non_interrupting_start_timer_event_with_two_event_sub_processes(kit: BpmTest) -> None:
    # StartTimerEventTest.testNonInterruptingStartTimerEventWithTwoEventSubProcesses
    double = dummy(kit)
    deploy(kit, "testNonInterruptingStartTimerEventWithTwoEventSubProcesses")
    inst = kit.start("nonInterruptingStartTimerEventWithTwoEventSubProcesses")
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert jobs(kit) == 2
    first, second = kit.engine.timers()
    execute_job(kit, first)
    assert jobs(kit) == 1
    assert double.call_count == 1
    assert len(kit.engine.user_tasks(inst.id)) == 1
    execute_job(kit, second)
    assert jobs(kit) == 0
    assert double.call_count == 2
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert running(kit, inst.id)


def test_start_timer_event_sub_process_with_user_task(kit: BpmTest) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessWithUserTask: the PT1M interrupting
    # event sub-process runs its user task; the PT1H one's timer is gone
    deploy(kit, "testStartTimerEventSubProcessWithUserTask")
    inst = kit.start("startTimerEventSubProcessWithUserTask")
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    (task,) = kit.engine.user_tasks(inst.id)
    assert task.node_id == "subprocessUserTask"
    assert running(kit, inst.id)


def test_start_timer_event_sub_process_called_from_call_activity(kit: BpmTest) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessCalledFromCallActivity: the called
    # process's interrupting timer ends it, and the caller with it
    dummy(kit)
    deploy(
        kit,
        "simpleProcessWithCallActivity.bpmn20.xml",
        "testStartTimerEventWithTwoEventSubProcesses",
    )
    inst = kit.start(
        "simpleCallActivityProcess", {"calledProcess": "startTimerEventWithTwoEventSubProcesses"}
    )
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert kit.engine.user_tasks() == []
    assert not running(kit, inst.id)


def test_non_interrupting_start_timer_event_sub_processes_called_from_call_activity(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testNonInterruptingStartTimerEventSubProcessesCalledFromCallActivity
    # (the original starts the called process itself, as here)
    double = dummy(kit)
    deploy(
        kit,
        "simpleProcessWithCallActivity.bpmn20.xml",
        "testNonInterruptingStartTimerEventWithTwoEventSubProcesses",
    )
    inst = kit.start("nonInterruptingStartTimerEventWithTwoEventSubProcesses")
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert jobs(kit) == 2
    first, second = kit.engine.timers()
    execute_job(kit, first)
    assert jobs(kit) == 1
    assert double.call_count == 1
    assert len(kit.engine.user_tasks(inst.id)) == 1
    execute_job(kit, second)
    assert jobs(kit) == 0
    assert double.call_count == 2
    assert len(kit.engine.user_tasks(inst.id)) == 1
    assert running(kit, inst.id)


def test_start_timer_event_sub_process_in_multi_instance_sub_process(kit: BpmTest) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessInMultiInstanceSubProcess: each of
    # the two sequential inner instances has its own timer, which interrupts it
    double = dummy(kit)
    deploy(kit, "testStartTimerEventSubProcessInMultiInstanceSubProcess")
    inst = kit.start("startTimerEventSubProcessInMultiInstanceSubProcess")
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 1
    first = kit.engine.timers()[0]
    execute_job(kit, first)
    assert double.call_count == 1
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 1
    second = kit.engine.timers()[0]
    assert second.id != first.id
    execute_job(kit, second)
    assert double.call_count == 2
    assert jobs(kit) == 0
    assert kit.engine.user_tasks() == []
    assert_that(inst).is_completed()


def test_non_interrupting_start_timer_event_in_multi_instance_event_sub_process(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testNonInterruptingStartTimerEventInMultiInstanceEventSubProcess
    double = dummy(kit)
    deploy(kit, "testNonInterruptingStartTimerEventInMultiInstanceEventSubProcess")
    inst = kit.start("nonInterruptingStartTimerEventInMultiInstanceEventSubProcess")
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 1
    first = kit.engine.timers()[0]
    execute_job(kit, first)
    assert double.call_count == 1
    assert len(kit.engine.user_tasks()) == 1
    complete_all(kit)  # the first inner instance ends, the second starts
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 1
    second = kit.engine.timers()[0]
    assert second.id != first.id
    execute_job(kit, second)
    assert double.call_count == 2
    assert jobs(kit) == 0
    assert len(kit.engine.user_tasks()) == 1
    assert running(kit, inst.id)


def test_start_timer_event_sub_process_in_parallel_multi_instance_sub_process(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessInParallelMultiInstanceSubProcess
    double = dummy(kit)
    deploy(kit, "testStartTimerEventSubProcessInParallelMultiInstanceSubProcess")
    inst = kit.start("startTimerEventSubProcessInParallelMultiInstanceSubProcess")
    assert len(kit.engine.user_tasks()) == 2
    assert jobs(kit) == 2
    for timer in kit.engine.timers():
        calls = double.call_count
        execute_job(kit, timer)
        assert double.call_count == calls + 1
    assert kit.engine.user_tasks() == []
    assert not running(kit, inst.id)


def test_non_interrupting_start_timer_event_sub_process_with_parallel_multi_instance(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testNonInterruptingStartTimerEventSubProcessWithParallelMultiInstance
    double = dummy(kit)
    deploy(kit, "testNonInterruptingStartTimerEventSubProcessWithParallelMultiInstance")
    inst = kit.start("nonInterruptingParallelMultiInstance")
    assert len(kit.engine.user_tasks()) == 2
    assert jobs(kit) == 2
    for timer in kit.engine.timers():
        calls = double.call_count
        execute_job(kit, timer)
        assert double.call_count == calls + 1
    assert jobs(kit) == 0
    assert len(kit.engine.user_tasks()) == 2
    assert running(kit, inst.id)


def test_start_timer_event_sub_process_in_mi_sub_process_with_non_interrupting_boundary(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessInMultiInstanceSubProcessWithNonInterruptingBoundaryTimerEvent  # noqa: E501
    # the sequential body's PT10S boundary timer and the
    # first inner instance's PT1M start timer; the later one (the start timer) first
    double = dummy(kit)
    deploy(
        kit,
        "testStartTimerEventSubProcessInMultiInstanceSubProcessWithNonInterruptingBoundaryTimerEvent",
    )
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[1])
    assert double.called
    assert len(kit.engine.user_tasks()) == 1  # the second inner instance
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[0])  # the boundary timer
    assert jobs(kit) == 1
    assert len(kit.engine.user_tasks()) == 1
    assert running(kit, inst.id)


def test_start_timer_event_sub_process_in_mi_sub_process_with_interrupting_boundary(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessInMultiInstanceSubProcessWithInterruptingBoundaryTimerEvent  # noqa: E501
    double = dummy(kit)
    deploy(
        kit,
        "testStartTimerEventSubProcessInMultiInstanceSubProcessWithInterruptingBoundaryTimerEvent",
    )
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[1])
    assert double.called
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert kit.engine.user_tasks() == []
    assert_that(inst).is_completed()


def test_non_interrupting_start_timer_in_mi_sub_process_with_interrupting_boundary(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testNonInterruptingStartTimerEventSubProcessInMultiInstanceSubProcessWithInterruptingBoundaryTimerEvent  # noqa: E501
    double = dummy(kit)
    deploy(
        kit,
        "testNonInterruptingStartTimerEventSubProcessInMultiInstanceSubProcessWithInterruptingBoundaryTimerEvent",
    )
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[1])
    assert double.called
    assert len(kit.engine.user_tasks()) == 1
    complete_all(kit)  # ends the first inner instance
    assert len(kit.engine.user_tasks()) == 1
    assert jobs(kit) == 2
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert kit.engine.user_tasks() == []
    assert not running(kit, inst.id)


def test_start_timer_event_sub_process_in_parallel_mi_with_non_interrupting_boundary(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessInParallelMultiInstanceSubProcessWithNonInterruptingBoundaryTimerEvent  # noqa: E501
    # 3 jobs (the boundary timer, a start timer per
    # inner instance); one start timer interrupts its inner instance, then the boundary
    # timer fires beside the other
    double = dummy(kit)
    deploy(
        kit,
        "testStartTimerEventSubProcessInParallelMultiInstanceSubProcessWithNonInterruptingBoundaryTimerEvent",
    )
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 2
    assert jobs(kit) == 3
    execute_job(kit, kit.engine.timers()[1])
    assert double.called
    assert jobs(kit) == 2
    assert len(kit.engine.user_tasks()) == 1
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 1
    assert len(kit.engine.user_tasks()) == 1
    assert running(kit, inst.id)


def test_start_timer_event_sub_process_in_parallel_mi_with_interrupting_boundary(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testStartTimerEventSubProcessInParallelMultiInstanceSubProcessWithInterruptingBoundaryTimerEvent  # noqa: E501
    dummy(kit)
    deploy(
        kit,
        "testStartTimerEventSubProcessInParallelMultiInstanceSubProcessWithInterruptingBoundaryTimerEvent",
    )
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 2
    assert jobs(kit) == 3
    execute_job(kit, kit.engine.timers()[1])
    assert jobs(kit) == 2
    assert len(kit.engine.user_tasks()) == 1
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert kit.engine.user_tasks() == []
    assert_that(inst).is_completed()


def test_non_interrupting_start_timer_in_parallel_mi_with_interrupting_boundary(
    kit: BpmTest,
) -> None:
    # StartTimerEventTest.testNonInterruptingStartTimerEventSubProcessInParallelMiSubProcessWithInterruptingBoundaryTimerEvent  # noqa: E501
    # , then again: completing every task
    # removes the boundary and start timers
    double = dummy(kit)
    deploy(
        kit,
        "testNonInterruptingStartTimerEventSubProcessInParallelMiSubProcessWithInterruptingBoundaryTimerEvent",
    )
    inst = kit.start("process")
    assert len(kit.engine.user_tasks()) == 2
    assert jobs(kit) == 3
    execute_job(kit, kit.engine.timers()[1])
    assert double.called
    assert jobs(kit) == 2
    assert len(kit.engine.user_tasks()) == 2
    execute_job(kit, kit.engine.timers()[0])
    assert jobs(kit) == 0
    assert kit.engine.user_tasks() == []
    assert_that(inst).is_completed()

    again = kit.start("process")
    assert jobs(kit) == 3
    assert len(kit.engine.user_tasks()) == 2
    complete_all(kit)
    assert jobs(kit) == 0
    assert kit.engine.user_tasks() == []
    assert_that(again).is_completed()


def test_time_cycle(kit: BpmTest) -> None:
    # StartTimerEventTest.testTimeCycle: a cron timer start; executing its job makes the
    # next one (here: the schedule moves to its next due time)
    deploy(kit, "testTimeCycle")
    assert jobs(kit) == 1
    (schedule,) = kit.engine.schedules("process")
    assert schedule.next_due is not None
    kit.advance_to(schedule.next_due)
    assert jobs(kit) == 1
    (after,) = kit.engine.schedules("process")
    assert after.next_due is not None and after.next_due > schedule.next_due
    assert instances(kit, "process") == 1


def test_non_interrupting_time_cycle_in_event_sub_process(kit: BpmTest) -> None:
    # StartTimerEventTest.testNonInterruptingTimeCycleInEventSubProcess: the cycle's job,
    # executed, makes another
    deploy(kit, "testNonInterruptingTimeCycleInEventSubProcess")
    kit.start("process")
    assert jobs(kit) == 1
    first = kit.engine.timers()[0]
    execute_job(kit, first)
    assert jobs(kit) == 1
    assert kit.engine.timers()[0].id != first.id


def test_should_evaluate_expression_start_timer_event_in_event_subprocess(kit: BpmTest) -> None:
    # StartTimerEventTest.shouldEvaluateExpressionStartTimerEventInEventSubprocess: started
    # before processUserTask (here: at the start event, which leads there) with duration
    # PT5M, the instance starts and its event sub-process timer reads the variable
    deploy(kit, "shouldEvaluateExpressionStartTimerEventInEventSubprocess")
    inst = kit.start(
        "shouldEvaluateExpressionStartTimerEventInEventSubprocess", {"duration": "PT5M"}
    )
    (started,) = kit.engine.instances("active")
    assert started.id == inst.id
    assert [t.node_id for t in kit.engine.user_tasks(inst.id)] == ["processUserTask"]
    (timer,) = kit.engine.timers(inst.id)
    assert timer.fire_at == kit.clock.now + timedelta(minutes=5)


@pytest.mark.parametrize("interrupting", [True, False])
def test_with_duration_expression_in_event_subprocess(kit: BpmTest, interrupting: bool) -> None:
    # StartTimerEventTest.test{Interrupting,NonInterrupting}WithDurationExpressionInEventSubprocess
    # (the fluent model built with this engine's builder): ${duration} = PT60S
    kit.deploy(
        Process("process")
        .start("start")
        .user_task("task")
        .end("end")
        .sequence("start", "task", "end")
        .event_sub_process(
            "esp",
            lambda p: (
                p.start("esp_start", duration="${duration}", interrupting=interrupting)
                .user_task("taskInSubprocess", name="taskInSubprocess")
                .end("esp_end")
                .sequence("esp_start", "taskInSubprocess", "esp_end")
            ),
        )
    )
    kit.start("process", {"duration": "PT60S"})
    execute_job(kit, kit.engine.timers()[0])
    assert len(kit.engine.user_tasks(node_id="taskInSubprocess")) == 1
