"""Camunda 7's SignalEndEventTest and MessageEndEventTest, ported in part (issue 21, item
2): each test deploys the original's BPMN file unchanged (``models/camunda``, Apache-2.0,
see PROVENANCE) and asserts what the original asserts, on SQLite and PostgreSQL.

Originals: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/end/SignalEndEventTest.java and .../MessageEndEventTest.java. Left out:
LEFT_OUT.md.
"""

from __future__ import annotations

from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, complete_one, open_subscriptions


def named(kit: BpmTest, name: str) -> str:
    """The node of the single open task called ``name``."""
    (task,) = [t for t in kit.engine.user_tasks() if t.name == name]
    return task.node_id


# -- SignalEndEventTest ---------------------------------------------------------------------


def test_catch_signal_end_event_in_embedded_subprocess(kit: BpmTest) -> None:
    # SignalEndEventTest.testCatchSignalEndEventInEmbeddedSubprocess
    kit.deploy(MODELS / "SignalEndEventTest.testCatchSignalEndEventInEmbeddedSubprocess.bpmn20.xml")
    inst = kit.start("catchSignalEndEventInEmbeddedSubprocess")
    complete_one(kit, named(kit, "subprocessTask"))
    complete_one(kit, named(kit, "task after catching the signal"))
    assert_that(inst).is_completed()


def test_catch_signal_end_event_in_call_activity(kit: BpmTest) -> None:
    # SignalEndEventTest.testCatchSignalEndEventInCallActivity
    kit.deploy(
        MODELS / "SignalEndEventTest.catchSignalEndEvent.bpmn20.xml",
        MODELS / "SignalEndEventTest.processWithSignalEndEvent.bpmn20.xml",
    )
    catching = kit.start("catchSignalEndEvent")
    assert [s[1] for s in open_subscriptions(kit)] == ["alert"]
    throwing = kit.start("processWithSignalEndEvent")
    assert_that(throwing).is_completed()
    (task,) = kit.engine.user_tasks()
    assert task.node_id == "taskAfterSignalCatch"
    complete_one(kit, "taskAfterSignalCatch")
    assert_that(catching).is_completed()


# -- MessageEndEventTest --------------------------------------------------------------------


def test_message_end_event(kit: BpmTest) -> None:
    # MessageEndEventTest.testMessageEndEvent: a message end event with no implementation.
    # Camunda does nothing there; here it is an inline step bound by its id (docs/bpmn.md),
    # so a handler doing nothing stands in for the nothing
    kit.handler("theEnd", lambda ctx: None)
    kit.deploy(MODELS / "MessageEndEventTest.testMessageEndEvent.bpmn20.xml")
    inst = kit.start("process")
    assert_that(inst).is_completed()
