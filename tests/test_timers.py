"""Timers on both backends: catch events, boundary timeouts and reminders, the poller.

Time moves by passing ``now=``; nothing here sleeps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import DeploymentError, Engine, InstanceState, InvalidOperation, NotFound, TokenState
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.states import BlockKind
from tests.engine_helpers import QueueDispatcher, drain, make_engine, table_dump
from tests.support import visits

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)
M = timedelta(minutes=1)

BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
    xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn"
    id="defs" targetNamespace="http://example.com">
  <bpmn:process id="{key}" isExecutable="true">
{body}
  </bpmn:process>
</bpmn:definitions>
"""


def bpmn(key: str, body: str) -> str:
    return BPMN.format(key=key, body=body)


def tokens_at(engine: Engine, instance_id: str, node_id: str) -> list[Any]:
    return [t for t in engine.get_instance(instance_id).tokens if t.node_id == node_id]


def events(engine: Engine, instance_id: str, type_: str) -> list[Any]:
    return [e for e in engine.history(instance_id) if e.type == type_]


# -- intermediate timer catch events -------------------------------------------------------


def delay_process(key: str = "delay", duration: str = "PT5M") -> Any:
    return (
        Process(key)
        .start("start")
        .timer("wait", duration=duration)
        .end("end")
        .sequence("start", "wait", "end")
        .build()
    )


def test_duration_timer_waits_then_fires_once(engine: Engine) -> None:
    engine.deploy(delay_process())
    inst = engine.start("delay", now=T0)
    (tok,) = tokens_at(engine, inst.id, "wait")
    assert tok.state is TokenState.WAITING and tok.blocked_kind is BlockKind.TIMER
    (timer,) = engine.timers(inst.id)
    assert tok.blocked_id == timer.id
    assert (timer.kind, timer.state, timer.fire_at) == ("delay", "pending", T0 + 5 * M)
    assert engine.next_wakeup() == T0 + 5 * M

    assert engine.fire_due_timers(now=T0 + 5 * M - S) == 0
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
    assert engine.fire_due_timers(now=T0 + 5 * M) == 1
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert engine.fire_due_timers(now=T0 + 10 * M) == 0
    (fired,) = engine.timers(inst.id, state="fired")
    assert fired.fired_at == T0 + 5 * M
    assert engine.next_wakeup() is None
    trail = [(e.type, e.to_state) for e in engine.history(inst.id) if e.node_id == "wait"]
    assert trail == [
        ("token_created", "created"),
        ("token_ready", "ready"),
        ("timer_scheduled", None),
        ("token_waiting", "waiting"),
        ("timer_fired", None),
        ("token_ready", "ready"),
        ("token_completed", "completed"),
    ]
    (scheduled,) = events(engine, inst.id, "timer_scheduled")
    assert scheduled.token_id == tok.id
    assert scheduled.payload == {
        "timer": timer.id,
        "kind": "delay",
        "due": (T0 + 5 * M).isoformat(),
    }
    # compact: the due time is said once, by the timer's event, not again by the wait
    (waiting,) = [e for e in events(engine, inst.id, "token_waiting") if e.node_id == "wait"]
    assert "due" not in waiting.payload


def test_wait_until_reads_the_deadline_variable(engine: Engine) -> None:
    engine.deploy(
        Process("pay")
        .start("s")
        .wait_until("payment-window", "payment_deadline")
        .end("e")
        .sequence("s", "payment-window", "e")
        .build()
    )
    deadline = T0 + timedelta(hours=24)
    inst = engine.start("pay", {"payment_deadline": deadline.isoformat()}, now=T0)
    (timer,) = engine.timers(inst.id)
    assert (timer.kind, timer.fire_at, timer.node_id) == ("date", deadline, "payment-window")
    assert engine.fire_due_timers(now=deadline - S) == 0
    assert engine.fire_due_timers(now=deadline) == 1
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_date_in_the_past_fires_at_once(engine: Engine) -> None:
    engine.deploy(
        Process("late").start("s").wait_until("w", "at").end("e").sequence("s", "w", "e").build()
    )
    inst = engine.start("late", {"at": "2020-01-01T00:00:00Z"}, now=T0)
    assert inst.state is InstanceState.COMPLETED
    (timer,) = engine.timers(inst.id, state="fired")
    assert timer.fire_at == datetime(2020, 1, 1, tzinfo=UTC) and timer.fired_at == T0
    assert events(engine, inst.id, "timer_fired")[0].payload["at_once"] is True
    assert events(engine, inst.id, "timer_scheduled") == []  # fired as it was made


def test_bpmn_time_duration_and_time_date(engine: Engine) -> None:
    body = """
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="d" />
    <bpmn:intermediateCatchEvent id="d"><bpmn:timerEventDefinition>
      <bpmn:timeDuration xsi:type="bpmn:tFormalExpression"
        xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">PT10S</bpmn:timeDuration>
    </bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="d" targetRef="at" />
    <bpmn:intermediateCatchEvent id="at"><bpmn:timerEventDefinition>
      <bpmn:timeDate>2030-01-01T10:00:00+01:00</bpmn:timeDate>
    </bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="at" targetRef="e" />
    <bpmn:endEvent id="e" />"""
    engine.deploy(bpmn("xmltimers", body))
    inst = engine.start("xmltimers", now=T0)
    assert [t.fire_at for t in engine.timers(inst.id)] == [T0 + 10 * S]
    assert engine.fire_due_timers(now=T0 + 10 * S) == 1
    # 10:00+01:00 is 09:00 UTC = T0, already past when the token arrives: fires at once.
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


@pytest.mark.parametrize(
    ("element", "fragment"),
    [
        ("<bpmn:timeDuration>PT5X</bpmn:timeDuration>", "not an ISO 8601 duration"),
        ("<bpmn:timeDuration>-PT5M</bpmn:timeDuration>", "'bad'"),
        ("<bpmn:timeDate>next tuesday</bpmn:timeDate>", "not an ISO 8601 date"),
        ("<bpmn:timeCycle>R3/PT0S</bpmn:timeCycle>", "'bad'"),
    ],
)
def test_invalid_or_negative_timer_is_a_deploy_error_naming_the_element(
    engine: Engine, element: str, fragment: str
) -> None:
    body = f"""
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="bad" />
    <bpmn:intermediateCatchEvent id="bad"><bpmn:timerEventDefinition>{element}
    </bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="bad" targetRef="e" />
    <bpmn:endEvent id="e" />"""
    before = table_dump(engine)
    with pytest.raises(DeploymentError) as info:
        engine.deploy(bpmn("badtimer", body))
    assert "'bad'" in str(info.value) and fragment in str(info.value)
    assert table_dump(engine) == before


def test_builder_rejects_a_negative_duration(engine: Engine) -> None:
    with pytest.raises(DeploymentError) as info:
        Process("neg").start("s").timer("w", duration="-PT1M").end("e").sequence(
            "s", "w", "e"
        ).build()
    assert "'w'" in str(info.value)


def test_a_missing_deadline_variable_opens_an_incident(engine: Engine) -> None:
    engine.deploy(
        Process("dl")
        .start("s")
        .wait_until("w", "deadline")
        .end("e")
        .sequence("s", "w", "e")
        .build()
    )
    inst = engine.start("dl", now=T0)
    (tok,) = tokens_at(engine, inst.id, "w")
    assert tok.state is TokenState.FAILED
    (inc,) = engine.incidents(inst.id)
    assert inc.type == "failedTimer" and "deadline" in (inc.message or "")
    assert engine.timers(inst.id, state=None) == []
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE


def test_a_negative_duration_variable_opens_an_incident(engine: Engine) -> None:
    engine.deploy(delay_process("negvar", "${wait_for}"))
    inst = engine.start("negvar", {"wait_for": "-PT5M"}, now=T0)
    (inc,) = engine.incidents(inst.id)
    assert "negative" in (inc.message or "")


# -- boundary timers -----------------------------------------------------------------------


def approval(
    key: str, *, interrupting: bool = True, terminate: bool = False, cycle: str | None = None
) -> Any:
    p = (
        Process(key)
        .start("start")
        .user_task("approve")
        .end("done")
        .sequence("start", "approve", "done")
    )
    if cycle:
        p = p.boundary_timer("remind", "approve", cycle=cycle, interrupting=False)
        p = p.service_task("send_reminder", handler="remind").end("reminded")
        p = p.sequence("remind", "send_reminder", "reminded")
    else:
        p = p.boundary_timer("timeout", "approve", duration="P2D", interrupting=interrupting)
        p = p.end("timed_out", terminate=terminate) if terminate else p.end("timed_out")
        p = p.sequence("timeout", "timed_out")
    return p.build()


def test_interrupting_timeout_cancels_the_user_task_and_takes_the_boundary(
    engine: Engine,
) -> None:
    engine.deploy(approval("appr"))
    inst = engine.start("appr", now=T0)
    (task,) = engine.user_tasks(inst.id)
    (timer,) = engine.timers(inst.id)
    assert (timer.kind, timer.node_id) == ("timeout", "timeout")
    assert timer.fire_at == T0 + timedelta(days=2)
    assert engine.fire_due_timers(now=T0 + timedelta(days=2)) == 1
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    trail = visits(engine, inst.id)
    assert trail["approve"] == [TokenState.TERMINATED]
    assert trail["timeout"] == trail["timed_out"] == [TokenState.COMPLETED]
    assert engine.user_tasks(inst.id, state="cancelled")[0].id == task.id
    before = table_dump(engine)
    with pytest.raises(NotFound):  # a late complete: the REST API answers 404
        engine.complete_user_task(task.id, {"ok": True})
    assert table_dump(engine) == before


def test_completing_in_time_cancels_the_timeout(engine: Engine) -> None:
    engine.deploy(approval("appr2"))
    inst = engine.start("appr2", now=T0)
    (task,) = engine.user_tasks(inst.id)
    engine.complete_user_task(task.id, now=T0 + M)
    assert [t.kind for t in engine.timers(inst.id, state="cancelled")] == ["timeout"]
    assert engine.fire_due_timers(now=T0 + timedelta(days=3)) == 0
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert engine.timers(inst.id) == []


def test_timeout_to_a_terminate_end_event_ends_the_whole_instance(engine: Engine) -> None:
    model = (
        Process("term")
        .start("s")
        .parallel("fork")
        .user_task("approve")
        .user_task("other")
        .end("done")
        .end("done2")
        .end("killed", terminate=True)
        .boundary_timer("timeout", "approve", duration="PT1H")
        .sequence("s", "fork")
        .flow("fork", "approve")
        .flow("fork", "other")
        .sequence("approve", "done")
        .sequence("other", "done2")
        .sequence("timeout", "killed")
        .build()
    )
    engine.deploy(model)
    inst = engine.start("term", now=T0)
    assert len(engine.user_tasks(inst.id)) == 2
    assert engine.fire_due_timers(now=T0 + timedelta(hours=1)) == 1
    assert engine.get_instance(inst.id).state is InstanceState.TERMINATED
    assert engine.user_tasks(inst.id) == []
    assert engine.timers(inst.id) == []


def test_non_interrupting_timeout_adds_a_token_and_keeps_the_task(engine: Engine) -> None:
    engine.deploy(approval("soft", interrupting=False))
    inst = engine.start("soft", now=T0)
    assert engine.fire_due_timers(now=T0 + timedelta(days=2)) == 1
    assert [t.state for t in tokens_at(engine, inst.id, "approve")] == [TokenState.WAITING]
    assert visits(engine, inst.id)["timed_out"] == [TokenState.COMPLETED]
    (task,) = engine.user_tasks(inst.id)
    engine.complete_user_task(task.id, now=T0 + timedelta(days=3))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_cycle_reminders_fire_three_times_then_stop(database_url: str) -> None:
    reg = HandlerRegistry()
    sent: list[int] = []
    reg.register("remind", lambda ctx: sent.append(ctx.attempt) or None)
    engine, q = make_engine(database_url, reg)
    engine.deploy(approval("remind", cycle="R3/PT10M"))
    inst = engine.start("remind", now=T0)
    for i in range(1, 4):
        assert engine.fire_due_timers(now=T0 + 10 * M * i - S) == 0
        assert engine.fire_due_timers(now=T0 + 10 * M * i) == 1
        drain(engine, q)
    assert len(sent) == 3
    assert engine.timers(inst.id) == []
    assert engine.fire_due_timers(now=T0 + timedelta(days=1)) == 0
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
    (task,) = engine.user_tasks(inst.id)
    engine.complete_user_task(task.id, now=T0 + timedelta(days=1))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_cycle_is_cancelled_when_the_task_completes(engine: Engine) -> None:
    reg = HandlerRegistry()
    reg.register("remind", lambda ctx: None)
    engine.core.registry = reg
    engine.deploy(approval("remind2", cycle="R/PT1H"))
    inst = engine.start("remind2", now=T0)
    assert engine.fire_due_timers(now=T0 + timedelta(hours=1)) == 1
    (nxt,) = engine.timers(inst.id)
    assert nxt.fire_at == T0 + timedelta(hours=2) and nxt.repeat_left is None
    (task,) = engine.user_tasks(inst.id)
    engine.complete_user_task(task.id, now=T0 + timedelta(hours=1, minutes=5))
    assert engine.timers(inst.id) == []
    assert engine.fire_due_timers(now=T0 + timedelta(days=1)) == 0


def test_timeout_drops_the_late_finish_of_an_inline_attempt_in_flight(
    database_url: str,
) -> None:
    reg = HandlerRegistry()
    box: dict[str, Any] = {}

    def slow(ctx: TaskContext) -> dict[str, Any]:
        # While this attempt "runs", the poller fires the timeout.
        box["fired"] = box["engine"].fire_due_timers(now=T0 + 31 * S)
        return {"charged": True}

    reg.register("charge", slow)
    engine, q = make_engine(database_url, reg)
    box["engine"] = engine
    engine.deploy(
        Process("pay")
        .start("s")
        .service_task("charge", handler="charge")
        .end("ok")
        .boundary_timer("too_slow", "charge", duration="PT30S")
        .end("gave_up")
        .sequence("s", "charge", "ok")
        .sequence("too_slow", "gave_up")
        .build()
    )
    inst = engine.start("pay", now=T0)
    token_id = q.queue.popleft()
    engine.run_token(token_id, now=T0 + S)
    assert box["fired"] == 1
    assert engine.stats.finishes_dropped == 1
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert "charged" not in done.variables
    nodes = visits(engine, inst.id)
    assert nodes["charge"] == [TokenState.TERMINATED]
    assert nodes["gave_up"] == [TokenState.COMPLETED]
    assert "ok" not in nodes


def test_timeout_of_a_ready_inline_step_stops_it_being_claimed(database_url: str) -> None:
    reg = HandlerRegistry()
    ran: list[str] = []
    reg.register("charge", lambda ctx: ran.append("x") or None)
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("pay2")
        .start("s")
        .service_task("charge", handler="charge")
        .end("ok")
        .boundary_timer("too_slow", "charge", duration="PT30S")
        .end("gave_up")
        .sequence("s", "charge", "ok")
        .sequence("too_slow", "gave_up")
        .build()
    )
    inst = engine.start("pay2", now=T0)
    assert engine.fire_due_timers(now=T0 + 30 * S) == 1
    drain(engine, q)
    assert ran == []
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_timeout_cancels_an_external_task(engine: Engine) -> None:
    from sqlalchemy import select

    from bpm.store.tables import external_task

    engine.deploy(
        Process("ext")
        .start("s")
        .service_task("ship", topic="shipping")
        .end("ok")
        .boundary_timer("late", "ship", duration="PT1H")
        .end("late_end")
        .sequence("s", "ship", "ok")
        .sequence("late", "late_end")
        .build()
    )
    inst = engine.start("ext", now=T0)
    assert engine.fire_due_timers(now=T0 + timedelta(hours=1)) == 1
    with engine.db.connect() as conn:
        (row,) = conn.execute(
            select(external_task).where(external_task.c.instance_id == inst.id)
        ).all()
    assert row.state == "cancelled"
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_boundary_timer_with_a_missing_variable_fails_the_task_before_it_starts(
    engine: Engine,
) -> None:
    engine.deploy(
        Process("bv")
        .start("s")
        .user_task("approve")
        .end("e")
        .boundary_timer("to", "approve", date="${sla}")
        .end("late")
        .sequence("s", "approve", "e")
        .sequence("to", "late")
        .build()
    )
    inst = engine.start("bv", now=T0)
    assert engine.user_tasks(inst.id) == []
    assert engine.timers(inst.id, state=None) == []
    (inc,) = engine.incidents(inst.id)
    assert inc.type == "failedTimer" and inc.node_id == "approve"


def test_bpmn_boundary_timers_interrupting_and_cycle(engine: Engine) -> None:
    body = """
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="review" />
    <bpmn:userTask id="review" />
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="e" />
    <bpmn:endEvent id="e" />
    <bpmn:boundaryEvent id="nag" attachedToRef="review" cancelActivity="false">
      <bpmn:timerEventDefinition><bpmn:timeCycle>R2/PT1H</bpmn:timeCycle>
      </bpmn:timerEventDefinition></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="nag" targetRef="nagged" />
    <bpmn:endEvent id="nagged" />
    <bpmn:boundaryEvent id="expire" attachedToRef="review">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT3H</bpmn:timeDuration>
      </bpmn:timerEventDefinition></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f4" sourceRef="expire" targetRef="killed" />
    <bpmn:endEvent id="killed"><bpmn:terminateEventDefinition /></bpmn:endEvent>"""
    engine.deploy(bpmn("xmlboundary", body))
    inst = engine.start("xmlboundary", now=T0)
    assert sorted(t.fire_at for t in engine.timers(inst.id)) == [T0 + 60 * M, T0 + 180 * M]
    # Catch up three hours at once: both reminders and then the timeout, in due order.
    assert engine.fire_due_timers(now=T0 + 180 * M) == 3
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.TERMINATED
    assert visits(engine, inst.id)["nagged"] == [TokenState.COMPLETED] * 2
    assert engine.timers(inst.id) == []


# -- the poller ----------------------------------------------------------------------------


def test_limit_bounds_one_poll_and_bad_limits_are_refused(engine: Engine) -> None:
    engine.deploy(delay_process("many", "PT1M"))
    ids = [engine.start("many", now=T0 + i * S).id for i in range(5)]
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="limit"):
        engine.fire_due_timers(now=T0 + M * 2, limit=0)
    assert table_dump(engine) == before
    assert engine.fire_due_timers(now=T0 + M * 2, limit=2) == 2
    assert engine.next_wakeup() == T0 + M + 2 * S
    assert engine.fire_due_timers(now=T0 + M * 2) == 3
    assert {engine.get_instance(i).state for i in ids} == {InstanceState.COMPLETED}


def test_suspended_instances_keep_their_timers_until_resumed(engine: Engine) -> None:
    engine.deploy(delay_process("susp"))
    inst = engine.start("susp", now=T0)
    engine.suspend(inst.id, now=T0 + M)
    assert engine.next_wakeup() is None
    assert engine.fire_due_timers(now=T0 + timedelta(hours=1)) == 0
    assert [t.state for t in engine.timers(inst.id)] == ["pending"]
    engine.resume(inst.id, now=T0 + timedelta(hours=2))
    assert engine.next_wakeup() == T0 + 5 * M
    assert engine.fire_due_timers(now=T0 + timedelta(hours=2)) == 1
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_terminating_cancels_pending_timers(engine: Engine) -> None:
    engine.deploy(approval("termx"))
    inst = engine.start("termx", now=T0)
    engine.terminate(inst.id, now=T0 + M)
    assert engine.timers(inst.id) == []
    assert [t.state for t in engine.timers(inst.id, state="cancelled")] == ["cancelled"]
    assert engine.fire_due_timers(now=T0 + timedelta(days=5)) == 0


def test_unknown_timer_state_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidOperation, match="pending, fired or cancelled"):
        engine.timers(state="late")


def test_now_must_be_timezone_aware(engine: Engine) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        engine.fire_due_timers(now=datetime(2030, 1, 1))


def test_cli_sleep_is_bounded() -> None:
    from bpm.cli.timers import sleep_for

    assert sleep_for(None, T0, longest=1.0) == 1.0
    assert sleep_for(T0 + 300 * M, T0, longest=1.0) == 1.0
    assert sleep_for(T0 + timedelta(milliseconds=200), T0, longest=1.0) == pytest.approx(0.2)
    assert sleep_for(T0 - M, T0, longest=1.0) == 0.05


def test_dispatches_are_published_only_after_commit(database_url: str) -> None:
    """A fired retry timer publishes its token; the published id is Ready in the DB."""
    reg = HandlerRegistry()
    seen: list[Any] = []
    engine, q = make_engine(database_url, reg)

    class Probe(QueueDispatcher):
        def dispatch(self, token_ids: Any) -> None:
            for tid in token_ids:
                with engine.db.connect() as conn:
                    from sqlalchemy import select

                    from bpm.store.tables import token

                    seen.append(
                        conn.execute(select(token.c.state).where(token.c.id == tid)).scalar_one()
                    )
            super().dispatch(token_ids)

    from bpm import RetryPolicy

    def flaky(ctx: TaskContext) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("first time fails")

    reg.register("flaky", flaky, retry=RetryPolicy.fixed(2, 10))
    engine.deploy(
        Process("fl")
        .start("s")
        .service_task("w", handler="flaky")
        .end("e")
        .sequence("s", "w", "e")
        .build()
    )
    inst = engine.start("fl", now=T0)
    engine.run_token(q.queue.popleft(), now=T0)
    probe = Probe()
    engine.dispatcher = probe
    assert engine.fire_due_timers(now=T0 + 10 * S) == 1
    assert seen == ["ready"] and len(probe.published) == 1
    engine.run_token(probe.queue.popleft(), now=T0 + 11 * S)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_the_trail_shows_when_a_timer_was_scheduled_for(engine: Engine) -> None:
    from bpm.trail import trail_table

    engine.deploy(delay_process())
    inst = engine.start("delay", now=T0)
    table = trail_table(engine.history(inst.id))
    details = list(table.columns[-1]._cells)
    events_ = list(table.columns[4]._cells)
    (row,) = [i for i, e in enumerate(events_) if e == "timer_scheduled"]
    assert details[row] == f"delay timer due {(T0 + 5 * M).isoformat()}"
