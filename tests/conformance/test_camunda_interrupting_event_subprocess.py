"""Camunda 7's InterruptingEventSubProcessTest, ported (issue 21, item 2): each test deploys
the original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and
asserts what the original asserts, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/subprocess/InterruptingEventSubProcessTest.java
"""

from __future__ import annotations

import pytest

from bpm.errors import MessageCorrelationError
from bpm.testing import BpmTest
from tests.conformance.scopes_kit import (
    complete_task,
    deploy,
    ended,
    open_tasks,
    subscriptions,
    task_nodes,
)

CANCEL = "InterruptingEventSubProcessTest.testCancelEventSubscriptions.bpmn"


def test_cancel_event_subscriptions_when_receiving_a_message(kit: BpmTest) -> None:
    # InterruptingEventSubProcessTest.testCancelEventSubscriptionsWhenReceivingAMessage
    deploy(kit, CANCEL)
    pi = kit.start("process")
    assert task_nodes(kit) == ["taskBeforeInterruptingEventSuprocess"]
    assert len(subscriptions(kit)) == 2
    kit.correlate("newMessage", instance=pi)
    assert task_nodes(kit) == ["taskAfterMessageStartEvent"]
    assert subscriptions(kit) == []
    # Camunda refuses a signal to an execution that does not wait for it; a broadcast here
    # reaches nobody
    assert kit.signal("newSignal").caught == ()
    assert task_nodes(kit) == ["taskAfterMessageStartEvent"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_cancel_event_subscriptions_when_receiving_a_signal(kit: BpmTest) -> None:
    # InterruptingEventSubProcessTest.testCancelEventSubscriptionsWhenReceivingASignal
    deploy(kit, CANCEL)
    pi = kit.start("process")
    assert task_nodes(kit) == ["taskBeforeInterruptingEventSuprocess"]
    assert len(subscriptions(kit)) == 2
    kit.signal("newSignal")
    assert task_nodes(kit) == ["tastAfterSignalStartEvent"]
    assert subscriptions(kit) == []
    with pytest.raises(MessageCorrelationError):
        kit.correlate("newMessage", instance=pi)
    assert task_nodes(kit) == ["tastAfterSignalStartEvent"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_cancel_timer(kit: BpmTest) -> None:
    # InterruptingEventSubProcessTest.testCancelTimer
    deploy(kit, "InterruptingEventSubProcessTest.testCancelTimer.bpmn")
    pi = kit.start("process")
    assert task_nodes(kit) == ["taskBeforeInterruptingEventSuprocess"]
    assert len(kit.engine.timers()) == 1
    kit.correlate("newMessage", instance=pi)
    assert task_nodes(kit) == ["taskAfterMessageStartEvent"]
    assert kit.engine.timers() == []
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_keep_compensation(kit: BpmTest) -> None:
    # InterruptingEventSubProcessTest.testKeepCompensation; camunda:expression="true" runs
    # as the inline handler "true" (docs/bpmn.md)
    kit.handler("true", lambda ctx: None)
    deploy(kit, "InterruptingEventSubProcessTest.testKeepCompensation.bpmn")
    pi = kit.start("process")
    assert task_nodes(kit) == ["taskBeforeInterruptingEventSuprocess"]
    assert len(subscriptions(kit)) == 2
    kit.correlate("newMessage", instance=pi)
    assert task_nodes(kit) == ["taskAfterMessageStartEvent"]
    assert len(subscriptions(kit)) == 1
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)


def test_time_cycle(kit: BpmTest) -> None:
    # InterruptingEventSubProcessTest.testTimeCycle
    deploy(kit, "InterruptingEventSubProcessTest.testTimeCycle.bpmn20.xml")
    pi = kit.start("process")
    assert subscriptions(kit) == []
    assert task_nodes(kit) == ["task"]
    (job,) = kit.engine.timers()
    kit.engine.fire_timer_now(job.id)
    kit.run()
    assert kit.engine.timers() == []
    assert task_nodes(kit) == ["eventSubProcessTask"]
    complete_task(kit, open_tasks(kit)[0])
    assert ended(kit, pi.id)
