"""Camunda 7's SignalEventExpressionNameTest, ported (issue 21, item 2): each test deploys
the original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and
asserts what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/signal/SignalEventExpressionNameTest.java: signal names with expressions
(``alert-${var}``), evaluated when a wait opens or a signal is thrown, and at deploy for
a start event (``alert-${'foo'}``). ``signalEventReceived`` is ``engine.signal``; Camunda's
event subscriptions are the open waits (``open_subscriptions``). Left out: LEFT_OUT.md.
"""

from __future__ import annotations

from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, open_subscriptions

DUMMY = "org.camunda.bpm.engine.test.bpmn.event.signal.DummyServiceTask"


def deploy(kit: BpmTest, *methods: str) -> None:
    kit.deploy(*(MODELS / f"SignalEventExpressionNameTest.{m}.bpmn20.xml" for m in methods))


def signal_waits(kit: BpmTest, name: str) -> int:
    return len([s for s in open_subscriptions(kit, "signal") if s[1] == name])


def test_signal_catch_intermediate(kit: BpmTest) -> None:
    # SignalEventExpressionNameTest.testSignalCatchIntermediate
    deploy(kit, "testSignalCatchIntermediate")
    kit.start("catchSignal", {"var": "TestVar"})
    assert signal_waits(kit, "alert-TestVar") == 1


def test_signal_catch_intermediate_acts_on_event_receive(kit: BpmTest) -> None:
    # SignalEventExpressionNameTest.testSignalCatchIntermediateActsOnEventReceive
    deploy(kit, "testSignalCatchIntermediate")
    kit.start("catchSignal", {"var": "TestVar"})
    kit.signal("alert-TestVar")
    assert signal_waits(kit, "alert-TestVar") == 0


def test_signal_throw_catch_intermediate(kit: BpmTest) -> None:
    # SignalEventExpressionNameTest.testSignalThrowCatchIntermediate (and
    # testSignalThrowEndCatchIntermediate: thrown by an end event)
    for thrower, key in (
        ("testSignalThrowIntermediate", "throwSignal"),
        ("testSignalThrowEnd", "throwEndSignal"),
    ):
        deploy(kit, "testSignalCatchIntermediate", thrower)
        kit.start("catchSignal", {"var": "TestVar"})
        assert signal_waits(kit, "alert-TestVar") == 1
        kit.start(key, {"var": "TestVar"})
        assert signal_waits(kit, "alert-${var}") == 0
        assert signal_waits(kit, "alert-TestVar") == 0
        assert kit.engine.instances("active") == []


def test_signal_catch_boundary(kit: BpmTest) -> None:
    # SignalEventExpressionNameTest.testSignalCatchBoundary
    deploy(kit, "testSignalCatchBoundary", "testSignalThrowIntermediate")
    kit.start("catchSignal", {"var": "TestVar"})
    assert signal_waits(kit, "alert-TestVar") == 1
    assert len(kit.engine.instances("active")) == 1
    kit.start("throwSignal", {"var": "TestVar"})
    assert signal_waits(kit, "alert-TestVar") == 0
    assert kit.engine.instances("active") == []


def test_signal_start_event(kit: BpmTest) -> None:
    # SignalEventExpressionNameTest.testSignalStartEvent: alert-${'foo'} is alert-foo
    deploy(kit, "testSignalStartEvent")
    assert kit.engine.user_tasks() == []
    result = kit.signal("alert-foo")
    assert len(result.started) == 1
    assert len(kit.engine.user_tasks()) == 1


def test_signal_start_event_in_event_sub_process(kit: BpmTest) -> None:
    # SignalEventExpressionNameTest.testSignalStartEventInEventSubProcess: the interrupting
    # event sub-process (its service task runs) ends the task and the instance
    dummy = kit.mock(DUMMY)
    deploy(kit, "testSignalStartEventInEventSubProcess")
    inst = kit.start("signalStartEventInEventSubProcess")
    assert len(kit.engine.user_tasks(inst.id)) == 1
    kit.signal("alert-foo")
    assert dummy.called
    assert kit.engine.user_tasks(inst.id) == []
    assert_that(inst).is_completed()


def test_signal_expression_error_handling(kit: BpmTest) -> None:
    # SignalEventExpressionNameTest.testSignalExpressionErrorHandling: alert-${var} with
    # no var fails ("Unknown property used in expression"); no signal wait opens. Camunda
    # throws out of the start; here the catch event has an incident naming the variable.
    deploy(kit, "testSignalCatchIntermediate")
    inst = kit.start("catchSignal", {})
    assert open_subscriptions(kit, "signal") == []
    (incident,) = kit.engine.incidents(inst.id)
    assert "var" in (incident.message or "")
