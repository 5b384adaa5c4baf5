"""Camunda 7's IntermediateTimerEventTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/timer/IntermediateTimerEventTest.java. Camunda's timer jobs are this engine's
pending timers; ``executeJob`` is ``fire_timer_now`` and a run (``execute_job``). The
left-out methods (``recalculateJobDuedate`` has no equivalent) are in LEFT_OUT.md.
"""

from __future__ import annotations

from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, execute_job, only_timer


def deploy(kit: BpmTest, method: str) -> None:
    kit.deploy(MODELS / f"IntermediateTimerEventTest.{method}.bpmn20.xml")


def test_catching_timer_event(kit: BpmTest) -> None:
    # IntermediateTimerEventTest.testCatchingTimerEvent: a PT5M wait, fired by 50 min 5 s
    deploy(kit, "testCatchingTimerEvent")
    inst = kit.start("intermediateTimerEventExample")
    assert len(kit.engine.timers(inst.id)) == 1
    kit.advance("PT50M5S")
    assert kit.engine.timers(inst.id) == []
    assert_that(inst).is_completed()


def test_expression(kit: BpmTest) -> None:
    # IntermediateTimerEventTest.testExpression: timeDate #{dueDate} from a Date (here an
    # ISO 8601 text with its zone: variables are JSON) and from "yyyy-MM-dd'T'HH:mm:ss",
    # both now. The original counts one job per instance, then executes them; a timer due
    # now fires in the step that creates it here (docs/bpmn.md), so both have ended at once.
    deploy(kit, "testExpression")
    now = kit.clock.now
    first = kit.start("intermediateTimerEventExample", {"dueDate": now.isoformat()})
    second = kit.start(
        "intermediateTimerEventExample", {"dueDate": now.strftime("%Y-%m-%dT%H:%M:%S")}
    )
    for inst in (first, second):
        assert kit.engine.timers(inst.id) == []
        assert_that(inst).is_completed().has_passed("timer")


def test_time_cycle(kit: BpmTest) -> None:
    # IntermediateTimerEventTest.testTimeCycle: a cron cycle (0 0/5 * * * ?) on a catch event
    deploy(kit, "testTimeCycle")
    inst = kit.start("process")
    execute_job(kit, only_timer(kit))
    assert kit.engine.timers() == []
    kit.complete(inst, "task")
    assert_that(inst).is_completed()
