"""Signals and the event-based gateway on both backends. Time moves by ``now=``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.errors import DeploymentError, MessageCorrelationError
from bpm.runtime.states import BlockKind
from tests.support import visits

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)
M = timedelta(minutes=1)


def race(key: str = "race") -> Any:
    return (
        Process(key)
        .start("start")
        .event_gateway("gw")
        .receive_message("paid", "payment", correlation_key="orderId")
        .receive_signal("halt", "halt-all")
        .timer("late", duration="PT10M")
        .end("ok")
        .end("halted")
        .end("expired")
        .sequence("start", "gw")
        .flow("gw", "paid")
        .flow("gw", "halt")
        .flow("gw", "late")
        .flow("paid", "ok")
        .flow("halt", "halted")
        .flow("late", "expired")
        .build()
    )


def pending_timers(engine: Engine, instance_id: str) -> list[Any]:
    return engine.timers(instance_id)


def test_the_message_wins_and_cancels_the_timer_and_the_signal(engine: Engine) -> None:
    engine.deploy(race())
    inst = engine.start("race", {"orderId": "o-1"}, now=T0)
    (tok,) = engine.get_instance(inst.id).tokens
    assert tok.node_id == "gw" and tok.blocked_kind is BlockKind.EVENT_GATEWAY
    (timer,) = pending_timers(engine, inst.id)
    (scheduled,) = [e for e in engine.history(inst.id) if e.type == "timer_scheduled"]
    assert (scheduled.token_id, scheduled.node_id) == (tok.id, "late")
    assert scheduled.payload == {
        "timer": timer.id,
        "kind": "event_gateway",
        "due": (T0 + 10 * M).isoformat(),
    }

    engine.correlate("payment", {"x": 1}, correlation_key="o-1", now=T0 + S)

    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    trail = visits(engine, inst.id)
    assert "ok" in trail and "expired" not in trail and "halted" not in trail
    assert pending_timers(engine, inst.id) == []
    assert engine.fire_due_timers(now=T0 + 20 * M) == 0
    assert engine.signal("halt-all", now=T0 + 20 * M).caught == ()


def test_the_timer_wins_and_cancels_the_waits(engine: Engine) -> None:
    engine.deploy(race())
    inst = engine.start("race", {"orderId": "o-1"}, now=T0)
    assert engine.fire_due_timers(now=T0 + 10 * M) == 1
    assert "expired" in visits(engine, inst.id)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    with pytest.raises(MessageCorrelationError):
        engine.correlate("payment", correlation_key="o-1", now=T0 + 11 * M)


def test_the_signal_wins(engine: Engine) -> None:
    engine.deploy(race())
    a = engine.start("race", {"orderId": "a"}, now=T0)
    b = engine.start("race", {"orderId": "b"}, now=T0)
    result = engine.signal("halt-all", {"reason": "shutdown"}, now=T0 + S)
    assert sorted(result.caught) == sorted([a.id, b.id])
    for inst in (a, b):
        assert "halted" in visits(engine, inst.id)
        assert engine.get_instance(inst.id).variables["reason"] == "shutdown"
    assert engine.fire_due_timers(now=T0 + 20 * M) == 0


def test_a_gateway_must_lead_to_events() -> None:
    with pytest.raises(DeploymentError, match="not a message, signal or timer catch event"):
        (
            Process("bad")
            .start("s")
            .event_gateway("gw")
            .user_task("u")
            .timer("t", duration="PT1M")
            .end("e")
            .sequence("s", "gw")
            .flow("gw", "u")
            .flow("gw", "t")
            .flow("u", "e")
            .flow("t", "e")
            .build()
        )


def test_signal_boundary_start_and_throw(engine: Engine) -> None:
    engine.deploy(
        Process("watched")
        .start("s")
        .user_task("work")
        .boundary_signal("alarm", "work", "fire", interrupting=True)
        .end("done")
        .end("evacuated")
        .sequence("s", "work", "done")
        .flow("alarm", "evacuated")
        .build()
    )
    engine.deploy(
        Process("responder")
        .signal_start("s", "fire")
        .user_task("respond")
        .sequence("s", "respond")
        .build()
    )
    engine.deploy(
        Process("alarm")
        .start("s")
        .throw_signal("raise", "fire")
        .end("e")
        .sequence("s", "raise", "e")
        .build()
    )
    watched = engine.start("watched", now=T0)
    # the throw is broadcast after the throwing instance committed
    engine.start("alarm", now=T0 + S)
    assert engine.get_instance(watched.id).state is InstanceState.COMPLETED
    assert "evacuated" in visits(engine, watched.id)
    started = engine.instances(state="active")
    assert [i.definition_key for i in started] == ["responder"]


def test_a_non_interrupting_signal_event_sub_process(engine: Engine) -> None:
    engine.deploy(
        Process("esp")
        .start("s")
        .user_task("work")
        .end("e")
        .sequence("s", "work", "e")
        .event_sub_process(
            "notify",
            lambda p: (
                p.signal_start("ss", "ping", interrupting=False)
                .user_task("note")
                .sequence("ss", "note")
            ),
        )
        .build()
    )
    inst = engine.start("esp", now=T0)
    engine.signal("ping", now=T0 + S)
    engine.signal("ping", now=T0 + 2 * S)
    names = sorted(t.node_id for t in engine.user_tasks(instance_id=inst.id))
    assert names == ["note", "note", "work"]


def test_terminating_an_instance_at_the_gateway_cancels_every_wait(engine: Engine) -> None:
    engine.deploy(race())
    inst = engine.start("race", {"orderId": "o-1"}, now=T0)
    engine.terminate(inst.id, now=T0 + S)
    assert pending_timers(engine, inst.id) == []
    with pytest.raises(MessageCorrelationError):
        engine.correlate("payment", correlation_key="o-1", now=T0 + 2 * S)
    assert engine.signal("halt-all", now=T0 + 2 * S).caught == ()
    from sqlalchemy import select

    from bpm.store.tables import event_subscription as es

    with engine.db.connect() as conn:
        states = sorted(r.state for r in conn.execute(select(es.c.state)))
    assert states == ["cancelled", "cancelled"]
