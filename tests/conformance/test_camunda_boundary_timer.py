"""Camunda 7's BoundaryTimerEventTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/event/timer/BoundaryTimerEventTest.java.
Camunda's timer jobs are this engine's pending timers; ``executeJob`` is
``fire_timer_now`` and a run (``execute_job``); moving ``ClockUtil`` is ``kit.advance``.
The left-out methods (``recalculateJobDuedate`` has no equivalent) are in LEFT_OUT.md.
"""

from __future__ import annotations

import pytest

from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, complete_all, execute_job, only_timer, task_names


def deploy(kit: BpmTest, method: str) -> None:
    kit.deploy(MODELS / f"BoundaryTimerEventTest.{method}.bpmn20.xml")


def test_multiple_timers_on_user_task(kit: BpmTest) -> None:
    # BoundaryTimerEventTest.testMultipleTimersOnUserTask: timers of 2 h, 1 h, 3 h; after
    # 1 h 5 s the 1 h one has fired and cancelled the others
    deploy(kit, "testMultipleTimersOnUserTask")
    inst = kit.start("multipleTimersOnUserTask")
    assert len(kit.engine.timers(inst.id)) == 3
    kit.advance("PT1H5S")
    assert kit.engine.timers(inst.id) == []
    assert task_names(kit) == ["Third Task"]


def test_timer_on_nesting_of_subprocesses(kit: BpmTest) -> None:
    # BoundaryTimerEventTest.testTimerOnNestingOfSubprocesses
    deploy(kit, "testTimerOnNestingOfSubprocesses")
    kit.start("timerOnNestedSubprocesses")
    assert task_names(kit) == ["Inner subprocess task 1", "Inner subprocess task 2"]
    execute_job(kit, only_timer(kit))
    assert task_names(kit) == ["task outside subprocess"]


def test_expression_on_timer(kit: BpmTest) -> None:
    # BoundaryTimerEventTest.testExpressionOnTimer: timeDuration ${duration} = PT1H
    deploy(kit, "testExpressionOnTimer")
    inst = kit.start("testExpressionOnTimer", {"duration": "PT1H"})
    assert len(kit.engine.timers(inst.id)) == 1
    kit.advance("PT1H5S")
    assert kit.engine.timers(inst.id) == []
    assert_that(inst).is_completed().has_passed("boundaryTimer")


def test_timer_in_single_transaction_process(kit: BpmTest) -> None:
    # BoundaryTimerEventTest.testTimerInSingleTransactionProcess (ACT-1133): an instance
    # that completes at once leaves no timer behind
    deploy(kit, "testTimerInSingleTransactionProcess")
    inst = kit.start("timerOnSubprocesses")
    assert_that(inst).is_completed()
    assert kit.engine.timers() == []


def test_repeating_timer_with_cancel_activity(kit: BpmTest) -> None:
    # BoundaryTimerEventTest.testRepeatingTimerWithCancelActivity (ACT-1427): an
    # interrupting cron timer whose flow goes back into the task: firing it cancels the
    # task, enters it again, and makes one new timer
    deploy(kit, "testRepeatingTimerWithCancelActivity")
    kit.start("repeatingTimerAndCallActivity")
    assert len(kit.engine.timers()) == 1
    assert len(kit.engine.user_tasks()) == 1
    first = only_timer(kit)
    execute_job(kit, first)
    assert len(kit.engine.timers()) == 1
    assert only_timer(kit).id != first.id
    assert len(kit.engine.user_tasks()) == 1


@pytest.mark.parametrize(
    "method",
    [
        "testMultipleOutgoingSequenceFlows",
        "testMultipleOutgoingSequenceFlowsOnSubprocess",
        "testMultipleOutgoingSequenceFlowsOnSubprocessMi",
    ],
)
def test_multiple_outgoing_sequence_flows(kit: BpmTest, method: str) -> None:
    # BoundaryTimerEventTest.{method}: the timer leaves along both its flows
    deploy(kit, method)
    inst = kit.start("interruptingTimer")
    execute_job(kit, only_timer(kit))
    assert len(kit.engine.user_tasks()) == 2
    complete_all(kit)
    assert_that(inst).is_completed()


def test_interrupting_timer_duration(kit: BpmTest) -> None:
    # BoundaryTimerEventTest.testInterruptingTimerDuration
    deploy(kit, "testInterruptingTimerDuration")
    inst = kit.start("escalationExample")
    assert task_names(kit, inst.id) == ["First line support"]
    execute_job(kit, only_timer(kit))
    assert task_names(kit, inst.id) == ["Handle escalated issue"]
