"""Failing inline handlers: backoff timers, the same token again, and what exhaustion does."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine, InstanceState, RetryPolicy, TokenState, service_task
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.states import BlockKind
from tests.engine_helpers import QueueDispatcher, drain, make_engine
from tests.test_retry_vectors import reference_delay_ms

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)


class Boom(Exception):
    def __init__(self, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code


def failing(
    times: int, attempts: list[int] | None = None, code: str | None = None
) -> Callable[[TaskContext], dict[str, Any]]:
    """A handler that fails its first ``times`` attempts."""

    def handler(ctx: TaskContext) -> dict[str, Any]:
        if attempts is not None:
            attempts.append(ctx.attempt)
        if ctx.attempt <= times:
            raise Boom(f"attempt {ctx.attempt} failed", code)
        return {"done_at_attempt": ctx.attempt}

    return handler


def one_task(
    key: str, retry: RetryPolicy | str | None = None, *, error_boundary: bool = False
) -> Any:
    p = (
        Process(key)
        .start("s")
        .service_task("work", handler="h", retry=retry)
        .end("e")
        .sequence("s", "work", "e")
    )
    if error_boundary:
        p = p.boundary_error("caught", "work").service_task("recover", handler="recover")
        p = p.end("recovered").sequence("caught", "recover", "recovered")
    return p.build()


def run_one(engine: Engine, q: QueueDispatcher, now: datetime) -> None:
    engine.run_token(q.queue.popleft(), now=now)


def token_at(engine: Engine, instance_id: str, node_id: str) -> Any:
    (tok,) = [t for t in engine.get_instance(instance_id).tokens if t.node_id == node_id]
    return tok


def test_default_policy_three_attempts_no_delay_then_incident(database_url: str) -> None:
    attempts: list[int] = []
    reg = HandlerRegistry()
    reg.register("h", failing(99, attempts))
    engine, q = make_engine(database_url, reg)
    engine.deploy(one_task("d"))
    inst = engine.start("d", now=T0)
    first = q.queue[0]
    drain(engine, q)
    assert attempts == [1, 2, 3]
    tok = token_at(engine, inst.id, "work")
    assert tok.id == first and tok.state is TokenState.FAILED and tok.attempt == 3
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
    (inc,) = engine.incidents(inst.id)
    assert inc.type == "failedJob" and inc.token_id == first
    assert inc.message == "Boom: attempt 3 failed"
    assert engine.step_failed(inst.id, "work") == "Boom: attempt 3 failed"
    assert engine.timers(inst.id, state=None) == []
    assert [e for e in engine.history(inst.id) if e.type == "timer_scheduled"] == []


def test_fixed_policy_waits_on_a_retry_backoff_timer(database_url: str) -> None:
    attempts: list[int] = []
    reg = HandlerRegistry()
    reg.register("h", failing(1, attempts), retry=RetryPolicy.fixed(4, timedelta(seconds=5)))
    engine, q = make_engine(database_url, reg)
    engine.deploy(one_task("fx"))
    inst = engine.start("fx", now=T0)
    run_one(engine, q, T0)
    tok = token_at(engine, inst.id, "work")
    assert tok.state is TokenState.WAITING and tok.blocked_kind is BlockKind.RETRY_BACKOFF
    (timer,) = engine.timers(inst.id)
    assert timer.kind == "retry_backoff" and tok.blocked_id == timer.id
    # Scheduled from the failure: never before now + 5 s.
    assert timer.fire_at >= T0 + 5 * S
    # The trail says when the retry is due, once: on the timer's event, not the wait's.
    history = engine.history(inst.id)
    (scheduled,) = [e for e in history if e.type == "timer_scheduled"]
    assert scheduled.token_id == tok.id and scheduled.node_id == "work"
    assert scheduled.payload == {
        "timer": timer.id,
        "kind": "retry_backoff",
        "due": timer.fire_at.isoformat(),
    }
    (backoff,) = [e for e in history if e.type == "token_waiting"]
    assert set(backoff.payload) == {"blocked_by", "error"}
    assert engine.step_failed(inst.id, "work") is None  # not final: it will be retried
    assert engine.fire_due_timers(now=timer.fire_at - timedelta(milliseconds=1)) == 0
    assert not q.queue
    assert engine.fire_due_timers(now=timer.fire_at) == 1
    assert list(q.queue) == [tok.id]  # the same token, published after commit
    run_one(engine, q, timer.fire_at)
    assert attempts == [1, 2]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED and done.variables["done_at_attempt"] == 2


def test_handler_failing_after_a_long_run_is_scheduled_from_its_failure(
    database_url: str,
) -> None:
    clock = {"now": T0}
    reg = HandlerRegistry()

    def long_then_fail(ctx: TaskContext) -> None:
        clock["now"] += timedelta(minutes=10)  # the handler ran ten minutes
        raise RuntimeError("gave up after a long run")

    reg.register("h", long_then_fail, retry=RetryPolicy.fixed(2, timedelta(seconds=30)))
    q = QueueDispatcher()
    engine = Engine(database_url, dispatcher=q, registry=reg, clock=lambda: clock["now"])
    engine.deploy(one_task("long"))
    inst = engine.start("long")
    engine.run_token(q.queue.popleft(), now=T0)  # claimed and finished "at" T0
    (timer,) = engine.timers(inst.id)
    assert timer.fire_at == T0 + timedelta(minutes=10, seconds=30)
    engine.close()


def test_exponential_policy_from_bpmn_uses_the_deterministic_jitter(engine: Engine) -> None:
    reg = HandlerRegistry()
    reg.register("h", failing(99))
    engine.core.registry = reg
    q = QueueDispatcher()
    engine.dispatcher = q
    xml = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn" id="d" targetNamespace="x">
  <bpmn:process id="expo" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work" />
    <bpmn:serviceTask id="work" bpm:handler="h" bpm:retry="exponential(8, PT1S, PT30S)" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
</bpmn:definitions>"""
    engine.deploy(xml)
    inst = engine.start("expo", now=T0)
    now = T0
    for attempt in range(1, 8):
        run_one(engine, q, now)
        (timer,) = engine.timers(inst.id)
        # The jitter of the instance (run) and the node (step), not of the token; the
        # reference is DESIGN's rule written out again, not the engine's code.
        expected = reference_delay_ms(1000, 30_000, inst.id, "work", attempt)
        assert timer.fire_at == now + timedelta(milliseconds=expected), attempt
        now = timer.fire_at
        assert engine.fire_due_timers(now=now) == 1
    run_one(engine, q, now)
    assert token_at(engine, inst.id, "work").attempt == 8
    assert len(engine.incidents(inst.id)) == 1


def test_camunda_failed_job_retry_time_cycle(engine: Engine) -> None:
    attempts: list[int] = []
    reg = HandlerRegistry()
    reg.register("h", failing(99, attempts))
    engine.core.registry = reg
    q = QueueDispatcher()
    engine.dispatcher = q
    xml = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="x">
  <bpmn:process id="cam" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work" />
    <bpmn:serviceTask id="work" camunda:delegateExpression="${h}">
      <bpmn:extensionElements>
        <camunda:failedJobRetryTimeCycle>R4/PT5S</camunda:failedJobRetryTimeCycle>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
</bpmn:definitions>"""
    engine.deploy(xml)
    inst = engine.start("cam", now=T0)
    now = T0
    for _ in range(3):
        run_one(engine, q, now)
        (timer,) = engine.timers(inst.id)
        assert timer.fire_at == now + 5 * S
        now = timer.fire_at
        assert engine.fire_due_timers(now=now) == 1
    run_one(engine, q, now)
    assert attempts == [1, 2, 3, 4]
    assert len(engine.incidents(inst.id)) == 1


def test_decorator_policy_applies(database_url: str) -> None:
    reg = HandlerRegistry()
    attempts: list[int] = []
    service_task("h", retry=RetryPolicy.none(), registry=reg)(failing(99, attempts))
    engine, q = make_engine(database_url, reg)
    engine.deploy(one_task("once"))
    inst = engine.start("once", now=T0)
    drain(engine, q)
    assert attempts == [1]
    assert len(engine.incidents(inst.id)) == 1


def test_retried_branch_in_a_fork_keeps_its_token_and_the_join_fires_once(
    database_url: str,
) -> None:
    reg = HandlerRegistry()
    reg.register("left", failing(2), retry=RetryPolicy.fixed(3, timedelta(seconds=10)))
    reg.register("right", lambda ctx: {"right": True})
    reg.register("after", lambda ctx: {"after": True})
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("forked")
        .start("s")
        .parallel("fork")
        .service_task("l", handler="left")
        .service_task("r", handler="right")
        .parallel("join")
        .service_task("after", handler="after")
        .end("e")
        .sequence("s", "fork")
        .flow("fork", "l")
        .flow("fork", "r")
        .flow("l", "join")
        .flow("r", "join")
        .sequence("join", "after", "e")
        .build()
    )
    inst = engine.start("forked", now=T0)
    left_token = token_at(engine, inst.id, "l").id
    now = T0
    drain(engine, q)
    for _ in range(2):
        (timer,) = engine.timers(inst.id)
        assert timer.token_id == left_token
        now = timer.fire_at
        assert engine.fire_due_timers(now=now) == 1
        drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert token_at(engine, inst.id, "l").id == left_token
    assert token_at(engine, inst.id, "l").attempt == 3
    assert len([t for t in done.tokens if t.node_id == "after"]) == 1
    assert [e.type for e in engine.history(inst.id)].count("join_fired") == 1


def test_error_boundary_catches_the_last_failure_with_message_and_code(
    database_url: str,
) -> None:
    reg = HandlerRegistry()
    reg.register(
        "h", failing(99, code="PAYMENT_DOWN"), retry=RetryPolicy.fixed(2, 0).continue_on_failure()
    )
    reg.register("recover", lambda ctx: {"seen": ctx.variables["error_code"]})
    engine, q = make_engine(database_url, reg)
    engine.deploy(one_task("caught", error_boundary=True))
    inst = engine.start("caught", now=T0)
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables["error_message"] == "Boom: attempt 2 failed"
    assert done.variables["error_code"] == "PAYMENT_DOWN"
    assert done.variables["seen"] == "PAYMENT_DOWN"
    assert token_at(engine, inst.id, "work").state is TokenState.TERMINATED
    assert engine.incidents(inst.id) == []
    assert engine.step_failed(inst.id, "work") == "Boom: attempt 2 failed"


def test_continue_on_failure_without_boundary_continues_with_the_error(
    database_url: str,
) -> None:
    reg = HandlerRegistry()
    reg.register("h", failing(99), retry=RetryPolicy.none().continue_on_failure())
    engine, q = make_engine(database_url, reg)
    engine.deploy(one_task("cont"))
    inst = engine.start("cont", now=T0)
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables["error_message"] == "Boom: attempt 1 failed"
    assert engine.step_failed(inst.id, "work") == "Boom: attempt 1 failed"


def test_fail_instance_policy_ends_the_instance_failed(database_url: str) -> None:
    reg = HandlerRegistry()
    reg.register("h", failing(99), retry=RetryPolicy.fixed(2, 0).fail_instance())
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("failing")
        .start("s")
        .parallel("fork")
        .service_task("work", handler="h")
        .user_task("other")
        .end("e")
        .end("e2")
        .boundary_timer("late", "work", duration="PT1H")
        .end("late_end")
        .sequence("s", "fork")
        .flow("fork", "work")
        .flow("fork", "other")
        .sequence("work", "e")
        .sequence("other", "e2")
        .sequence("late", "late_end")
        .build()
    )
    inst = engine.start("failing", now=T0)
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.FAILED
    assert engine.user_tasks(inst.id) == []
    assert engine.incidents(inst.id) == []
    assert engine.timers(inst.id) == []  # its timeout is cancelled, not left pending
    assert engine.step_failed(inst.id, "work") == "Boom: attempt 2 failed"


def test_a_retry_backoff_is_cancelled_by_a_timeout(database_url: str) -> None:
    reg = HandlerRegistry()
    reg.register("h", failing(99), retry=RetryPolicy.fixed(5, timedelta(minutes=10)))
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("race")
        .start("s")
        .service_task("work", handler="h")
        .end("e")
        .boundary_timer("late", "work", duration="PT15M")
        .end("late_end")
        .sequence("s", "work", "e")
        .sequence("late", "late_end")
        .build()
    )
    inst = engine.start("race", now=T0)
    drain(engine, q)
    assert sorted(t.kind for t in engine.timers(inst.id)) == ["retry_backoff", "timeout"]
    # At T0+15m the backoff (T0+10m) and then the timeout fire, in due order.
    assert engine.fire_due_timers(now=T0 + timedelta(minutes=15)) == 2
    assert not q.queue  # the backoff made it Ready, the timeout stopped it: nothing to run
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert token_at(engine, inst.id, "work").state is TokenState.TERMINATED


@pytest.mark.parametrize("policy", [RetryPolicy.default(), RetryPolicy.fixed(3, 1)])
def test_policy_round_trips_through_the_model(engine: Engine, policy: RetryPolicy) -> None:
    d = engine.deploy(one_task(f"rt{policy.kind.value}", policy))
    node = engine.model(d.id).node("work")
    assert getattr(node, "retry", None) == policy
