"""Messages on both backends: catch events, receive tasks, boundaries, event sub-processes,
message starts, correlation keys, the TTL buffer, and bad input.

Time moves by passing ``now=``; nothing here sleeps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.errors import InvalidOperation, MessageCorrelationError, VariableError
from bpm.runtime.states import BlockKind
from tests.engine_helpers import table_dump
from tests.scopes_helpers import open_subscriptions
from tests.support import visits

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def waiting_for_message(key: str = "pay", correlation_key: str | None = None) -> Any:
    return (
        Process(key)
        .start("start")
        .receive_message("paid", "payment", correlation_key=correlation_key)
        .end("end")
        .sequence("start", "paid", "end")
        .build()
    )


def live_nodes(engine: Engine, instance_id: str) -> list[str]:
    return sorted(
        t.node_id
        for t in engine.get_instance(instance_id).tokens
        if t.state.value in ("ready", "waiting", "executing")
    )


def test_a_catch_event_waits_and_a_message_moves_it_on(engine: Engine) -> None:
    engine.deploy(waiting_for_message())
    inst = engine.start("pay", {"amount": 3}, business_key="o-1", now=T0)
    (tok,) = engine.get_instance(inst.id).tokens
    assert tok.node_id == "paid" and tok.blocked_kind is BlockKind.MESSAGE

    done = engine.correlate("payment", {"paidAt": "today"}, business_key="o-1", now=T0 + S)

    assert [(c.kind, c.instance_id, c.node_id) for c in done] == [("execution", inst.id, "paid")]
    after = engine.get_instance(inst.id)
    assert after.state is InstanceState.COMPLETED
    assert after.variables == {"amount": 3, "paidAt": "today"}
    assert "paid" in visits(engine, inst.id)


def test_a_correlation_key_picks_the_instance(engine: Engine) -> None:
    engine.deploy(waiting_for_message(correlation_key="orderId"))
    a = engine.start("pay", {"orderId": "A"}, now=T0)
    b = engine.start("pay", {"orderId": 7}, now=T0)

    engine.correlate("payment", correlation_key=7, now=T0 + S)

    assert engine.get_instance(b.id).state is InstanceState.COMPLETED
    assert engine.get_instance(a.id).state is InstanceState.ACTIVE
    with pytest.raises(MessageCorrelationError, match="no process instance waits"):
        engine.correlate("payment", correlation_key="B", now=T0 + S)
    engine.correlate("payment", correlation_key="A", now=T0 + S)
    assert engine.get_instance(a.id).state is InstanceState.COMPLETED


def test_process_variables_as_correlation_keys_and_instance_id(engine: Engine) -> None:
    engine.deploy(waiting_for_message())
    a = engine.start("pay", {"customer": "x"}, now=T0)
    b = engine.start("pay", {"customer": "y"}, now=T0)
    engine.correlate("payment", correlation_keys={"customer": "y"}, now=T0 + S)
    assert engine.get_instance(b.id).state is InstanceState.COMPLETED
    engine.correlate("payment", instance_id=a.id, now=T0 + S)
    assert engine.get_instance(a.id).state is InstanceState.COMPLETED


def test_all_delivers_to_every_match(engine: Engine) -> None:
    engine.deploy(waiting_for_message())
    ids = [engine.start("pay", now=T0).id for _ in range(3)]
    done = engine.correlate("payment", all=True, now=T0 + S)
    assert sorted(c.instance_id for c in done if c.instance_id) == sorted(ids)
    assert all(engine.get_instance(i).state is InstanceState.COMPLETED for i in ids)


# -- bad input: a clear error, nothing changed ------------------------------------------------


def test_an_unknown_message_is_an_error_and_changes_nothing(engine: Engine) -> None:
    engine.deploy(waiting_for_message())
    engine.start("pay", now=T0)
    before = table_dump(engine)
    with pytest.raises(
        MessageCorrelationError, match="no process instance waits for message 'nope'"
    ):
        engine.correlate("nope", {"x": 1}, now=T0 + S)
    assert table_dump(engine) == before


def test_several_matches_without_all_are_an_error_and_change_nothing(engine: Engine) -> None:
    engine.deploy(waiting_for_message())
    engine.start("pay", now=T0)
    engine.start("pay", now=T0)
    before = table_dump(engine)
    with pytest.raises(MessageCorrelationError, match="matches 2 waiting process instances"):
        engine.correlate("payment", now=T0 + S)
    assert table_dump(engine) == before


def test_variables_that_are_not_json_are_an_error_and_change_nothing(engine: Engine) -> None:
    engine.deploy(waiting_for_message())
    engine.start("pay", now=T0)
    before = table_dump(engine)
    with pytest.raises(VariableError, match="not JSON"):
        engine.correlate("payment", {"when": object()}, now=T0 + S)
    with pytest.raises(InvalidOperation, match="needs a name"):
        engine.correlate("", now=T0 + S)
    with pytest.raises(InvalidOperation, match="time to live must be positive"):
        engine.correlate("payment", ttl=-1, now=T0 + S)
    assert table_dump(engine) == before


# -- the buffer: a message published with a time to live -------------------------------------


def late_wait(key: str = "late") -> Any:
    return (
        Process(key)
        .start("start")
        .user_task("prepare")
        .receive_message("paid", "payment", correlation_key="orderId")
        .end("end")
        .sequence("start", "prepare", "paid", "end")
        .build()
    )


def test_a_message_with_a_ttl_is_delivered_when_the_wait_opens(engine: Engine) -> None:
    engine.deploy(late_wait())
    inst = engine.start("late", {"orderId": "o-9"}, now=T0)

    (buffered,) = engine.correlate(
        "payment", {"amount": 10}, correlation_key="o-9", ttl=60, now=T0 + S
    )
    assert buffered.kind == "buffered"
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE

    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, now=T0 + 30 * S)

    after = engine.get_instance(inst.id)
    assert after.state is InstanceState.COMPLETED
    assert after.variables["amount"] == 10
    # consumed once: a second instance opening the same wait does not get it again
    other = engine.start("late", {"orderId": "o-9"}, now=T0 + 31 * S)
    (task,) = engine.user_tasks(instance_id=other.id)
    engine.complete_user_task(task.id, now=T0 + 32 * S)
    assert live_nodes(engine, other.id) == ["paid"]


def test_a_buffered_message_expires_after_its_ttl(engine: Engine) -> None:
    engine.deploy(late_wait())
    inst = engine.start("late", {"orderId": "o-1"}, now=T0)
    engine.correlate("payment", correlation_key="o-1", ttl=timedelta(seconds=10), now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, now=T0 + 11 * S)
    assert live_nodes(engine, inst.id) == ["paid"]
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE


def test_a_buffered_message_keeps_to_its_key(engine: Engine) -> None:
    engine.deploy(late_wait())
    inst = engine.start("late", {"orderId": "o-1"}, now=T0)
    engine.correlate("payment", correlation_key="o-2", ttl=60, now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, now=T0 + S)
    assert live_nodes(engine, inst.id) == ["paid"]


# -- boundaries, receive tasks, event sub-processes, message starts ---------------------------


def boundary_process(interrupting: bool) -> Any:
    return (
        Process("b")
        .start("start")
        .user_task("work")
        .boundary_message("cancel", "work", "cancel-order", interrupting=interrupting)
        .end("done")
        .end("cancelled")
        .sequence("start", "work", "done")
        .flow("cancel", "cancelled")
        .build()
    )


def test_an_interrupting_message_boundary_cancels_the_task(engine: Engine) -> None:
    engine.deploy(boundary_process(True))
    inst = engine.start("b", business_key="k", now=T0)
    engine.correlate("cancel-order", business_key="k", now=T0 + S)
    after = engine.get_instance(inst.id)
    assert after.state is InstanceState.COMPLETED
    assert "cancelled" in visits(engine, inst.id)
    assert engine.user_tasks(instance_id=inst.id) == []


def test_a_non_interrupting_message_boundary_runs_beside_and_listens_on(engine: Engine) -> None:
    engine.deploy(boundary_process(False))
    inst = engine.start("b", now=T0)
    engine.correlate("cancel-order", now=T0 + S)
    engine.correlate("cancel-order", now=T0 + 2 * S)
    assert len(visits(engine, inst.id)["cancelled"]) == 2
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, now=T0 + 3 * S)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    # the boundary's wait ended with its task
    with pytest.raises(MessageCorrelationError):
        engine.correlate("cancel-order", now=T0 + 4 * S)


def test_a_receive_task_waits_for_its_message(engine: Engine) -> None:
    model = (
        Process("rt")
        .start("s")
        .receive_task("receive", "go")
        .end("e")
        .sequence("s", "receive", "e")
        .build()
    )
    engine.deploy(model)
    inst = engine.start("rt", now=T0)
    engine.correlate("go", {"v": 1}, now=T0 + S)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_message_start_event_starts_an_instance(engine: Engine) -> None:
    model = (
        Process("ms")
        .message_start("s", "order-placed")
        .user_task("handle")
        .end("e")
        .sequence("s", "handle", "e")
        .build()
    )
    engine.deploy(model)
    (started,) = engine.correlate("order-placed", {"n": 1}, business_key="b-1", now=T0)
    assert started.kind == "start" and started.node_id == "s"
    inst = engine.get_instance(started.instance_id or "")
    assert inst.business_key == "b-1" and inst.variables == {"n": 1}
    assert live_nodes(engine, inst.id) == ["handle"]


def test_a_message_event_sub_process_interrupts_its_scope(engine: Engine) -> None:
    model = (
        Process("esp")
        .start("s")
        .user_task("work")
        .end("e")
        .sequence("s", "work", "e")
        .event_sub_process(
            "on_cancel",
            lambda p: p.message_start("ms", "cancel").end("ce").sequence("ms", "ce"),
        )
        .build()
    )
    engine.deploy(model)
    inst = engine.start("esp", now=T0)
    engine.correlate("cancel", instance_id=inst.id, now=T0 + S)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert "ce" in visits(engine, inst.id)
    assert engine.user_tasks(instance_id=inst.id) == []


def test_terminating_an_instance_cancels_its_waits(engine: Engine) -> None:
    engine.deploy(waiting_for_message())
    inst = engine.start("pay", now=T0)
    engine.terminate(inst.id, now=T0 + S)
    with pytest.raises(MessageCorrelationError):
        engine.correlate("payment", now=T0 + 2 * S)


def test_a_message_boundary_on_a_sub_process_ends_everything_inside(engine: Engine) -> None:
    model = (
        Process("sp")
        .start("s")
        .sub_process(
            "inner",
            lambda p: (
                p.start("is")
                .parallel("fork")
                .user_task("a")
                .receive_message("wait", "inner-go")
                .parallel("join")
                .end("ie")
                .sequence("is", "fork")
                .flow("fork", "a")
                .flow("fork", "wait")
                .flow("a", "join")
                .flow("wait", "join")
                .sequence("join", "ie")
            ),
        )
        .boundary_message("abort", "inner", "abort")
        .end("e")
        .end("aborted")
        .sequence("s", "inner", "e")
        .flow("abort", "aborted")
        .build()
    )
    engine.deploy(model)
    inst = engine.start("sp", now=T0)
    assert live_nodes(engine, inst.id) == ["a", "inner", "wait"]
    engine.correlate("abort", now=T0 + S)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert "aborted" in visits(engine, inst.id)
    assert engine.user_tasks(instance_id=inst.id) == []
    with pytest.raises(MessageCorrelationError):  # the inner wait went with its scope
        engine.correlate("inner-go", now=T0 + 2 * S)


def test_a_catch_event_inside_a_sub_process(engine: Engine) -> None:
    model = (
        Process("sp2")
        .start("s")
        .sub_process(
            "inner",
            lambda p: (
                p.start("is")
                .receive_message("wait", "go", correlation_key="ref")
                .end("ie")
                .sequence("is", "wait", "ie")
            ),
        )
        .end("e")
        .sequence("s", "inner", "e")
        .build()
    )
    engine.deploy(model)
    inst = engine.start("sp2", {"ref": "r-1"}, now=T0)
    engine.correlate("go", {"answer": 42}, correlation_key="r-1", now=T0 + S)
    after = engine.get_instance(inst.id)
    assert after.state is InstanceState.COMPLETED
    assert after.variables["answer"] == 42


def test_a_non_interrupting_message_event_sub_process_runs_each_time(engine: Engine) -> None:
    model = (
        Process("esp2")
        .start("s")
        .user_task("work")
        .end("e")
        .sequence("s", "work", "e")
        .event_sub_process(
            "on_note",
            lambda p: (
                p.message_start("ms", "note", interrupting=False)
                .user_task("read")
                .sequence("ms", "read")
            ),
        )
        .build()
    )
    engine.deploy(model)
    inst = engine.start("esp2", now=T0)
    engine.correlate("note", {"n": 1}, instance_id=inst.id, now=T0 + S)
    engine.correlate("note", {"n": 2}, instance_id=inst.id, now=T0 + 2 * S)
    names = sorted(t.node_id for t in engine.user_tasks(instance_id=inst.id))
    assert names == ["read", "read", "work"]
    for task in engine.user_tasks(instance_id=inst.id):
        engine.complete_user_task(task.id, now=T0 + 3 * S)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    with pytest.raises(MessageCorrelationError):  # the listener ended with its scope
        engine.correlate("note", instance_id=inst.id, now=T0 + 4 * S)


def test_a_message_end_event_is_an_inline_step(database_url: str) -> None:
    from bpm.bpmn.parser import parse_bpmn
    from bpm.handlers import HandlerRegistry
    from tests.engine_helpers import drain, make_engine

    sent: list[Any] = []
    registry = HandlerRegistry()
    registry.register("send-receipt", lambda ctx: sent.append(ctx.variables["order"]))
    engine, q = make_engine(database_url, registry)
    try:
        engine.deploy(
            parse_bpmn(
                """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn" id="d" targetNamespace="x">
  <bpmn:message id="M" name="receipt" />
  <bpmn:process id="send" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e" />
    <bpmn:endEvent id="e" bpm:handler="send-receipt">
      <bpmn:messageEventDefinition messageRef="M" /></bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>"""
            )
        )
        inst = engine.start("send", {"order": "o-5"}, now=T0)
        assert drain(engine, q) == 1
        assert sent == ["o-5"]
        assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    finally:
        engine.close()


def two_waits_for_one_message() -> Any:
    """Two parallel branches, each waiting for message ``go`` (a catch event, a receive
    task), then a join."""
    return (
        Process("twice")
        .start("start")
        .parallel("fork")
        .receive_message("left", "go")
        .receive_task("right", "go")
        .parallel("join")
        .end("end")
        .sequence("start", "fork")
        .sequence("fork", "left", "join")
        .sequence("fork", "right", "join")
        .sequence("join", "end")
        .build()
    )


def test_one_message_for_two_waits_of_an_instance_is_ambiguous(engine: Engine) -> None:
    """Camunda's correlate reaches one execution: two waits of one instance for the same
    message refuse it (MismatchingMessageCorrelationException; issue 21) and nothing
    changes; all=True moves both."""
    engine.deploy(two_waits_for_one_message())
    inst = engine.start("twice", business_key="b-1", now=T0)
    assert live_nodes(engine, inst.id) == ["left", "right"]
    assert open_subscriptions(engine, inst.id) == ["left", "right"]
    before = engine.history(inst.id)

    with pytest.raises(MessageCorrelationError, match="matches 2 waits of process instance"):
        engine.correlate("go", {"n": 1}, business_key="b-1", now=T0 + S)

    assert live_nodes(engine, inst.id) == ["left", "right"]
    assert open_subscriptions(engine, inst.id) == ["left", "right"]
    assert engine.history(inst.id) == before
    assert engine.get_instance(inst.id).variables == {}

    moved = engine.correlate("go", {"n": 2}, business_key="b-1", all=True, now=T0 + 2 * S)

    assert sorted(m.node_id or "" for m in moved) == ["left", "right"]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED and done.variables == {"n": 2}
    assert open_subscriptions(engine, inst.id) == []
    assert sum(1 for e in engine.history(inst.id) if e.type == "join_fired") == 1


def test_a_message_correlated_with_all_moves_every_wait_of_the_instance(engine: Engine) -> None:
    engine.deploy(two_waits_for_one_message())
    inst = engine.start("twice", now=T0)
    done = engine.correlate("go", instance_id=inst.id, all=True, now=T0 + S)
    assert sorted(c.node_id or "" for c in done) == ["left", "right"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert open_subscriptions(engine, inst.id) == []


# -- interrupted waits --------------------------------------------------------------------


def receive_with_deadline() -> Any:
    """A receive task for ``payment`` with an interrupting one-hour timer boundary."""
    return (
        Process("deadline")
        .start("start")
        .receive_task("paid", "payment")
        .end("end")
        .boundary_timer("late", "paid", duration="PT1H")
        .end("gave_up")
        .sequence("start", "paid", "end")
        .sequence("late", "gave_up")
        .build()
    )


def test_a_wait_interrupted_by_a_timer_boundary_closes_its_subscription(engine: Engine) -> None:
    """The timer ends the receive task: its wait is cancelled with it, so a message for a
    live instance is not refused as matching two instances, and a message for the
    interrupted one finds nothing."""
    engine.deploy(receive_with_deadline())
    late = engine.start("deadline", business_key="late", now=T0)
    assert engine.fire_due_timers(now=T0 + timedelta(hours=2)) == 1
    assert engine.get_instance(late.id).state is InstanceState.COMPLETED
    assert open_subscriptions(engine, late.id) == []
    cancelled = [e for e in engine.history(late.id) if e.type == "subscription_cancelled"]
    assert len(cancelled) == 1

    waiting = engine.start("deadline", business_key="on-time", now=T0 + timedelta(hours=2))
    (done,) = engine.correlate("payment", now=T0 + timedelta(hours=2, seconds=1))
    assert done.instance_id == waiting.id
    with pytest.raises(MessageCorrelationError, match="no process instance waits"):
        engine.correlate("payment", business_key="late", now=T0 + timedelta(hours=3))


def test_terminating_an_instance_closes_its_message_and_signal_waits(engine: Engine) -> None:
    engine.deploy(
        Process("waits")
        .start("start")
        .parallel("fork")
        .receive_message("m", "payment")
        .receive_signal("g", "halt")
        .parallel("join")
        .end("end")
        .sequence("start", "fork")
        .sequence("fork", "m", "join")
        .sequence("fork", "g", "join")
        .sequence("join", "end")
        .build()
    )
    inst = engine.start("waits", now=T0)
    assert open_subscriptions(engine, inst.id) == ["g", "m"]
    engine.terminate(inst.id, now=T0 + S)
    assert open_subscriptions(engine, inst.id) == []
    assert engine.signal("halt", now=T0 + 2 * S).caught == ()
    with pytest.raises(MessageCorrelationError):
        engine.correlate("payment", now=T0 + 2 * S)


def test_a_wait_inside_an_interrupted_sub_process_closes_its_subscription(
    engine: Engine,
) -> None:
    """A message boundary on a sub-process interrupts it while a catch event inside it
    waits for another message: that inner wait goes too."""
    engine.deploy(
        Process("inner")
        .start("start")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .receive_message("inside", "payment")
                .end("se")
                .sequence("ss", "inside", "se")
            ),
        )
        .end("end")
        .boundary_message("cancelled", "sp", "cancel")
        .end("stopped")
        .sequence("start", "sp", "end")
        .sequence("cancelled", "stopped")
        .build()
    )
    inst = engine.start("inner", business_key="o-9", now=T0)
    assert open_subscriptions(engine, inst.id) == ["cancelled", "inside"]
    engine.correlate("cancel", business_key="o-9", now=T0 + S)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert open_subscriptions(engine, inst.id) == []
    with pytest.raises(MessageCorrelationError):
        engine.correlate("payment", business_key="o-9", now=T0 + 2 * S)
