"""Camunda 7's EventBasedGatewayTest, ported (issue 21, item 2): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/gateway/EventBasedGatewayTest.java.
Camunda's jobs are this engine's pending timers (``engine.timers()``), its event
subscriptions the open message and signal waits. The left-out methods (their ``PT0S``
timer fires at once here, docs/bpmn.md) are in LEFT_OUT.md.
"""

from __future__ import annotations

import pytest

from bpm.errors import DeploymentError
from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, open_subscriptions


def model(name: str) -> str:
    return str(MODELS / f"EventBasedGatewayTest.{name}.bpmn20.xml")


def test_catch_timer_cancels_signal(kit: BpmTest) -> None:
    # EventBasedGatewayTest.testCatchTimerCancelsSignal, its end state: the timer (PT0S)
    # wins, the signal wait is gone, no job is left, afterTimer is open. (Before the
    # timer fires Camunda counts 1 subscription and 1 job; here the timer due now fires in
    # the step that reaches the gateway, so there is no such moment.)
    kit.deploy(model("testCatchAlertAndTimer"))
    inst = kit.start("catchSignal")
    kit.advance("PT10S")
    assert open_subscriptions(kit) == []
    assert len(kit.engine.instances("active")) == 1
    assert kit.engine.timers() == []
    (task,) = [t for t in kit.engine.user_tasks() if t.name == "afterTimer"]
    kit.engine.complete_user_task(task.id, {})
    kit.run()
    assert_that(inst).is_completed().has_passed("timerEvent").has_not_passed("signalEvent")


def test_connected_to_activity(kit: BpmTest) -> None:
    # EventBasedGatewayTest.testConnectedToActitity: "Event based gateway can only be
    # connected to elements of type intermediateCatchEvent", on gw1
    with pytest.raises(DeploymentError) as refused:
        kit.deploy(model("testConnectedToActivity"))
    assert "event-based gateway 'gw1'" in str(refused.value)
    assert "serviceTask" in str(refused.value)
    assert kit.engine.definitions() == []


def test_invalid_sequence_flow(kit: BpmTest) -> None:
    # EventBasedGatewayTest.testInvalidSequenceFlow: "Invalid incoming sequenceflow for
    # intermediateCatchEvent" (Camunda names the flow invalidFlow; this engine the catch
    # event it enters, with its other incoming flow)
    with pytest.raises(DeploymentError) as refused:
        kit.deploy(model("testEventInvalidSequenceFlow"))
    assert "'signalEvent' follows event-based gateway 'gw1' and has other incoming" in str(
        refused.value
    )
    assert kit.engine.definitions() == []


def test_time_cycle(kit: BpmTest) -> None:
    # EventBasedGatewayTest.testTimeCycle: a cron cycle (0 0/5 * * * ?) after the gateway;
    # one job, executed, none left; its task completes the instance
    kit.deploy(model("testTimeCycle"))
    inst = kit.start("process")
    (timer,) = kit.engine.timers()
    kit.advance_to(timer.fire_at)
    assert kit.engine.timers() == []
    (task,) = kit.engine.user_tasks()
    assert task.name == "afterTimer"
    kit.engine.complete_user_task(task.id, {})
    kit.run()
    assert_that(inst).is_completed()
