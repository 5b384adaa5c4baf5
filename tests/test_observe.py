"""The observer hook (bpm/observe.py): what the engine tells, when, and what it costs.

Each test gives its engine a private :class:`Observers` (the process-wide one stays empty)
and checks the events against the history the same steps wrote.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine, EngineConfig, RetryPolicy, TaskContext
from bpm.builder import Process
from bpm.dispatch import NullDispatcher
from bpm.engine import observed
from bpm.engine import timers as engine_timers
from bpm.handlers import HandlerRegistry
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.observe import (
    Event,
    HandlerFinished,
    HandlerStarted,
    LeaseExpired,
    MessageIgnored,
    Observers,
    StepFinished,
    StepOutcome,
    TimerFired,
)
from tests.engine_helpers import (
    claim_one,
    drain,
    finish_one,
    make_engine,
    order_process,
    order_registry,
    table_dump,
)

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def observe(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def watched(engine: Engine) -> Recorder:
    """A recorder on a private Observers of ``engine``."""
    engine.core.observers = Observers()
    rec = Recorder()
    engine.core.observers.subscribe(rec)
    return rec


def history_counts(engine: Engine, instance_ids: list[str]) -> Counter[tuple[str, str]]:
    """(event type, node) -> how many, over the instances' history."""
    out: Counter[tuple[str, str]] = Counter()
    for iid in instance_ids:
        for e in engine.history(iid):
            out[(e.type, e.node_id or "")] += 1
    return out


def failing(times: int) -> HandlerRegistry:
    """``charge-payment`` fails its first ``times`` attempts; the others succeed."""
    reg = order_registry()

    def charge(ctx: TaskContext) -> dict[str, Any]:
        if ctx.attempt <= times:
            raise RuntimeError(f"card declined (attempt {ctx.attempt})")
        return {"charged": True}

    reg.register("charge-payment", charge)
    return reg


def test_each_step_tells_handler_started_finished_and_its_committed_outcome(
    pg_database_url: str,
) -> None:
    engine, q = make_engine(pg_database_url, order_registry())
    rec = watched(engine)
    engine.deploy(order_process())
    ids = [engine.start("order", {"amount": 120}).id for _ in range(3)]
    drain(engine, q)

    started, handled, finished = (
        rec.of(HandlerStarted),
        rec.of(HandlerFinished),
        rec.of(StepFinished),
    )
    history = history_counts(engine, ids)
    for node in ("validate", "reserve", "charge", "ship"):
        assert history[("token_executing", node)] == 3
        assert sum(e.node_id == node for e in started) == 3
        assert sum(e.node_id == node for e in handled) == 3
        assert sum(e.node_id == node and e.outcome is StepOutcome.COMPLETED for e in finished) == 3
    assert len(started) == len(handled) == len(finished) == 12
    # One token's life, in order, with the same identity in every event.
    for tok in {e.token_id for e in finished}:
        life = [
            e
            for e in rec.events
            if getattr(e, "token_id", None) == tok and not isinstance(e, MessageIgnored)
        ]
        assert [type(e) for e in life] == [HandlerStarted, HandlerFinished, StepFinished]
        s, h, f = life
        assert isinstance(s, HandlerStarted) and isinstance(h, HandlerFinished)
        assert isinstance(f, StepFinished)
        assert (s.definition, s.instance_id, s.attempt) == ("order", f.instance_id, 1)
        assert s.worker == h.worker == f.worker
        assert f.instance_id in ids and h.ok and f.error is None
        assert s.waited >= 0 and h.seconds >= 0
        assert f.handler_seconds == h.seconds
        assert f.seconds >= h.seconds  # claim -> commit holds the handler's run
    # A step published and then taken by this worker's own batch: its message comes later.
    assert {e.reason for e in rec.of(MessageIgnored)} <= {"finished_here"}
    assert {e.token_id for e in rec.of(MessageIgnored)} <= {e.token_id for e in finished}
    assert rec.of(LeaseExpired) == []


def test_a_failing_step_is_retried_then_failed_as_the_history_says(pg_database_url: str) -> None:
    engine, q = make_engine(pg_database_url, failing(times=99))
    rec = watched(engine)
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 120})
    drain(engine, q)

    charge = [e for e in rec.of(StepFinished) if e.node_id == "charge"]
    assert [(e.attempt, e.outcome) for e in charge] == [
        (1, StepOutcome.RETRIED),
        (2, StepOutcome.RETRIED),
        (3, StepOutcome.FAILED),  # the default policy: 3 attempts, then an incident
    ]
    assert all(e.error and "card declined" in e.error for e in charge)
    handled = [e for e in rec.of(HandlerFinished) if e.node_id == "charge"]
    assert [e.ok for e in handled] == [False, False, False]
    history = history_counts(engine, [inst.id])
    assert history[("attempt_failed", "charge")] == 3
    assert history[("step_failed", "charge")] == 1
    assert len(engine.incidents(inst.id)) == 1


def test_a_late_finish_is_dropped_and_the_reclaimer_tells_the_lease_expired(
    pg_database_url: str,
) -> None:
    engine, _ = make_engine(pg_database_url, order_registry())
    rec = watched(engine)
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 120}, now=T0)
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "validate"]
    step = claim_one(engine.core, tok.id, "worker-a", T0)
    assert step is not None
    lease = engine.config.default_lease
    late = T0 + lease + timedelta(seconds=7)

    assert engine.reclaim_expired_leases(now=late) == 1
    [lost] = rec.of(LeaseExpired)
    assert (lost.definition, lost.node_id, lost.token_id, lost.attempt, lost.owner) == (
        "order",
        "validate",
        tok.id,
        1,
        "worker-a",
    )
    [retried] = rec.of(StepFinished)
    assert retried.outcome is StepOutcome.RETRIED
    assert retried.seconds == (lease + timedelta(seconds=7)).total_seconds()
    assert retried.handler_seconds is None and "worker lost" in (retried.error or "")

    from bpm.engine.execution import Outcome

    finish_one(engine.core, step, Outcome(variables={"late": True}), "worker-a", late)
    dropped = rec.of(StepFinished)[-1]
    assert (dropped.outcome, dropped.token_id, dropped.attempt) == (
        StepOutcome.DROPPED,
        tok.id,
        1,
    )
    assert "late" not in engine.get_instance(inst.id).variables


def test_messages_for_steps_that_need_nothing_are_ignored_and_told(pg_database_url: str) -> None:
    engine, q = make_engine(pg_database_url, order_registry())
    rec = watched(engine)
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 50})
    first = q.queue[0]
    drain(engine, q)
    before = table_dump(engine)

    assert engine.run_token(first) == 0  # a duplicate of a message this process finished
    other, _ = make_engine(pg_database_url, order_registry())
    try:
        rec_other = watched(other)
        assert other.run_token(first) == 0  # another process: the claim finds it done
    finally:
        other.close()

    assert rec.of(MessageIgnored) == [MessageIgnored(first, "finished_here")]
    assert rec_other.events == [MessageIgnored(first, "not_ready")]
    assert table_dump(engine) == before  # nothing changed
    assert engine.get_instance(inst.id).ended


def wait_model() -> ProcessModel:
    return (
        Process("waits")
        .start("start")
        .timer("pause", duration="PT10S")
        .end("end")
        .sequence("start", "pause", "end")
        .build()
    )


def test_a_timer_tells_how_late_it_fired(database_url: str) -> None:
    engine = Engine(database_url, dispatcher=NullDispatcher(), config=EngineConfig())
    rec = watched(engine)
    engine.deploy(wait_model())
    inst = engine.start("waits", now=T0)

    assert engine.fire_due_timers(now=T0 + timedelta(seconds=12.5)) == 1

    assert rec.events == [TimerFired("waits", "pause", inst.id, "delay", 2.5)]
    assert engine.get_instance(inst.id).ended


def test_a_timer_start_event_tells_how_late_it_started(database_url: str) -> None:
    engine = Engine(database_url, dispatcher=NullDispatcher(), clock=lambda: T0)
    rec = watched(engine)
    base = Process("ticks").start("manual").end("end").sequence("manual", "end").build()
    tick = n.StartEvent("tick", timer=n.TimerSpec(n.TimerKind.CYCLE, "R/PT1H"))
    engine.deploy(
        ProcessModel(
            key="ticks",
            nodes={**base.nodes, "tick": tick},
            flows=(*base.flows, n.Flow("f_tick", "tick", "end")),
        )
    )
    assert engine.fire_due_schedules(now=T0 + timedelta(hours=1, seconds=3)) == 1
    [inst] = engine.instances(definition_key="ticks")
    assert rec.events == [TimerFired("ticks", "tick", inst.id, "start", 3.0)]


def test_a_retry_backoff_timer_is_told_with_its_kind(pg_database_url: str) -> None:
    reg = failing(times=1)
    model = (
        Process("backoff")
        .start("start")
        .service_task("charge", handler="charge-payment", retry=RetryPolicy.fixed(3, 5.0))
        .end("end")
        .sequence("start", "charge", "end")
        .build()
    )
    engine, q = make_engine(pg_database_url, reg)
    rec = watched(engine)
    engine.deploy(model)
    inst = engine.start("backoff", now=T0)
    engine.run_token(q.queue.popleft(), now=T0)
    assert engine.fire_due_timers(now=T0 + timedelta(seconds=6)) == 1
    drain(engine, q)

    [timer] = rec.of(TimerFired)
    assert (timer.kind, timer.node_id, timer.instance_id) == ("retry_backoff", "charge", inst.id)
    assert timer.lateness == pytest.approx(1.0)
    outcomes = [e.outcome for e in rec.of(StepFinished)]
    assert outcomes == [StepOutcome.RETRIED, StepOutcome.COMPLETED]


def test_an_observer_that_raises_is_logged_and_the_step_still_completes(
    pg_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def observe(self, event: Event) -> None:
            raise ValueError("observer bug")

    engine, q = make_engine(pg_database_url, order_registry())
    rec = watched(engine)
    engine.core.observers.subscribe(Broken())
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 50})
    with caplog.at_level(logging.ERROR, logger="bpm.observe"):
        drain(engine, q)

    assert engine.get_instance(inst.id).ended
    assert len(rec.of(StepFinished)) == 2  # validate, ship: the others were still told
    assert "observer" in caplog.text and "observer bug" in caplog.text


def test_without_observers_no_event_is_built(
    pg_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an event was built with no observer subscribed")

    for name in ("HandlerStarted", "HandlerFinished", "StepFinished", "MessageIgnored"):
        monkeypatch.setattr(observed, name, refuse)
    monkeypatch.setattr(engine_timers, "TimerFired", refuse)
    engine, q = make_engine(pg_database_url, failing(times=1))
    engine.core.observers = Observers()
    engine.deploy(order_process())
    engine.deploy(wait_model())
    inst = engine.start("order", {"amount": 120})
    first = q.queue[0]
    drain(engine, q)
    engine.run_token(first)  # ignored, untold
    waiting = engine.start("waits", now=T0)
    engine.fire_due_timers(now=T0 + timedelta(seconds=11))

    assert engine.get_instance(inst.id).ended and engine.get_instance(waiting.id).ended


def test_observers_subscribe_once_and_unsubscribe() -> None:
    obs = Observers()
    rec = Recorder()
    assert not obs
    stop = obs.subscribe(rec)
    obs.subscribe(rec)
    assert len(obs) == 1
    obs.emit(MessageIgnored("t", "not_ready"))
    stop()
    assert not obs
    obs.emit(MessageIgnored("t", "not_ready"))
    assert rec.events == [MessageIgnored("t", "not_ready")]


def test_the_engine_tells_the_process_wide_observers_by_default(sqlite_database_url: str) -> None:
    from bpm.observe import observers

    engine = Engine(sqlite_database_url, registry=HandlerRegistry())
    try:
        assert engine.core.observers is observers
    finally:
        engine.close()
