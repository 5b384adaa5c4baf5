"""Compensation and the saga (issue 11 items 7-8): handlers of completed steps, newest
first, each once; throw events; sub-processes; incidents; the failure action compensate."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bpm import Engine, InstanceState, NotFound, RetryPolicy
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import CompensableState, TaskState
from bpm.store import tables as t
from tests.engine_helpers import QueueDispatcher, drain, live, make_engine

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


class Recorder:
    """Handlers that record each call (name, idempotency key); ``fail`` names handlers
    that raise on their first ``n`` calls."""

    def __init__(self, *names: str, fail: dict[str, int] | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.registry = HandlerRegistry()
        self.fail = dict(fail or {})
        for name in names:
            self.registry.register(name, self._handler(name))

    def _handler(self, name: str) -> Callable[[TaskContext], dict[str, Any]]:
        def handler(ctx: TaskContext) -> dict[str, Any]:
            self.calls.append((name, ctx.idempotency_key))
            if self.names.count(name) <= self.fail.get(name, 0):
                raise RuntimeError(f"{name} failed (attempt {ctx.attempt})")
            return {f"{name}_done": True}

        return handler

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def saga(retry: RetryPolicy) -> Any:
    """reserve -> charge -> ship; ship fails; reserve and charge can be undone."""
    return (
        Process("saga")
        .start("s")
        .service_task("reserve", handler="reserve", compensate_with="release")
        .service_task("charge", handler="charge", compensate_with="refund")
        .service_task("ship", handler="ship", retry=retry)
        .end("e")
        .sequence("s", "reserve", "charge", "ship", "e")
        .build()
    )


def setup(url: str, model: Any, rec: Recorder) -> tuple[Engine, QueueDispatcher]:
    engine, q = make_engine(url, rec.registry)
    engine.deploy(model)
    return engine, q


def compensables(engine: Engine, instance_id: str) -> list[tuple[str, int, str]]:
    c = t.compensable
    with engine.db.connect() as conn:
        rows = conn.execute(
            select(c.c.node_id, c.c.seq, c.c.state)
            .where(c.c.instance_id == instance_id)
            .order_by(c.c.seq)
        ).all()
    return [(r.node_id, r.seq, r.state) for r in rows]


def types(engine: Engine, instance_id: str) -> list[str]:
    return [e.type for e in engine.history(instance_id)]


# -- the saga ---------------------------------------------------------------------------------


def test_seed_scenario_8_retries_run_out_and_the_saga_undoes_completed_steps_newest_first(
    database_url: str,
) -> None:
    rec = Recorder("reserve", "charge", "ship", "release", "refund", fail={"ship": 99})
    engine, q = setup(database_url, saga(RetryPolicy.fixed(3, 0).compensate_on_failure()), rec)
    inst = engine.start("saga", now=T0)
    drain(engine, q)
    assert rec.names == ["reserve", "charge", "ship", "ship", "ship", "refund", "release"]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPENSATED and done.ended_at is not None
    assert done.variables["refund_done"] and done.variables["release_done"]
    assert compensables(engine, inst.id) == [
        ("reserve", 1, CompensableState.COMPENSATED.value),
        ("charge", 2, CompensableState.COMPENSATED.value),
    ]
    trail = types(engine, inst.id)
    # the failed step ends first, then the instance compensates, then it is compensated
    order = ["step_failed", "instance_compensating", "compensation_thrown", "instance_compensated"]
    assert [x for x in trail if x in order] == order
    assert trail.count("compensation_compensated") == 2
    assert live(engine, inst.id) == []
    assert engine.incidents(inst.id) == []


def test_a_saga_with_nothing_completed_is_compensated_at_once(database_url: str) -> None:
    rec = Recorder("reserve", "charge", "ship", "release", "refund", fail={"reserve": 99})
    model = (
        Process("first")
        .start("s")
        .service_task(
            "reserve",
            handler="reserve",
            compensate_with="release",
            retry=RetryPolicy.none().compensate_on_failure(),
        )
        .end("e")
        .sequence("s", "reserve", "e")
        .build()
    )
    engine, q = setup(database_url, model, rec)
    inst = engine.start("first", now=T0)
    drain(engine, q)
    assert rec.names == ["reserve"]  # it failed, so it is not undone
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED
    assert compensables(engine, inst.id) == []


def test_a_fork_cancels_the_running_branch_first_and_compensates_only_the_completed_one(
    database_url: str,
) -> None:
    """a completed; b runs (an external task locked by a worker); c never started (its
    timer is pending); boom fails: b is cancelled, only a is undone."""
    rec = Recorder("a", "boom", "undo-a", "c", "undo-c", fail={"boom": 99})
    model = (
        Process("fork3")
        .start("s")
        .parallel("fork")
        .service_task("a", handler="a", compensate_with="undo-a")
        .service_task("boom", handler="boom", retry=RetryPolicy.none().compensate_on_failure())
        .service_task("b", topic="b-work", compensate_topic="undo-b")
        .timer("wait", duration="PT1H")
        .service_task("c", handler="c", compensate_with="undo-c")
        .parallel("join")
        .end("e")
        .sequence("s", "fork")
        .sequence("fork", "a", "boom", "join")
        .sequence("fork", "b", "join")
        .sequence("fork", "wait", "c", "join")
        .sequence("join", "e")
        .build()
    )
    engine, q = setup(database_url, model, rec)
    inst = engine.start("fork3", now=T0)
    (task,) = engine.fetch_and_lock(
        FetchRequest("w1", 1, (TopicRequest("b-work", 60_000),)), now=T0
    )
    drain(engine, q)
    assert rec.names == ["a", "boom", "undo-a"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED
    with engine.db.connect() as conn:
        state = conn.execute(
            select(t.external_task.c.state).where(t.external_task.c.id == task.id)
        ).scalar()
    assert state == TaskState.CANCELLED.value
    assert compensables(engine, inst.id) == [("a", 1, CompensableState.COMPENSATED.value)]
    events = engine.history(inst.id)
    b_ended = next(
        i for i, e in enumerate(events) if e.node_id == "b" and e.type.endswith("terminated")
    )
    thrown = next(i for i, e in enumerate(events) if e.type == "compensation_thrown")
    assert b_ended < thrown  # the running branch is cancelled before anything is undone
    assert all(e.node_id != "b.compensate" for e in events)  # b never completed
    assert [x.kind for x in engine.timers(inst.id) if x.state.value == "pending"] == []
    # the worker's late complete of b changes nothing
    with pytest.raises(NotFound):
        engine.complete_external_task(task.id, "w1", now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


def test_external_steps_compensate_through_external_handlers(database_url: str) -> None:
    rec = Recorder()
    model = (
        Process("ext")
        .start("s")
        .service_task("book", topic="book", compensate_topic="cancel-booking")
        .service_task("pay", topic="pay", retry=RetryPolicy.fixed(2, 0).compensate_on_failure())
        .end("e")
        .sequence("s", "book", "pay", "e")
        .build()
    )
    engine, _ = setup(database_url, model, rec)
    inst = engine.start("ext", now=T0)

    def fetch(topic: str) -> Any:
        return engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest(topic, 60_000),)), now=T0)

    (book,) = fetch("book")
    engine.complete_external_task(book.id, "w", now=T0)
    for _ in range(2):
        (pay,) = fetch("pay")
        engine.fail_external_task(pay.id, "w", "card declined", now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATING
    (undo,) = fetch("cancel-booking")
    assert undo.node_id == "book.compensate"
    assert fetch("pay") == []
    engine.complete_external_task(undo.id, "w", now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


def test_a_handler_out_of_retries_opens_an_incident_and_compensation_waits_for_the_retry(
    database_url: str,
) -> None:
    rec = Recorder("reserve", "charge", "ship", "release", "refund", fail={"ship": 99, "refund": 3})
    engine, q = setup(database_url, saga(RetryPolicy.none().compensate_on_failure()), rec)
    inst = engine.start("saga", now=T0)
    drain(engine, q)
    assert rec.names == ["reserve", "charge", "ship", "refund", "refund", "refund"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATING
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "charge.compensate"
    engine.retry_incident(incident.id, now=T0)
    drain(engine, q)
    assert rec.names[-2:] == ["refund", "release"]
    # the retried handler is the same token: one idempotency key for all four attempts
    assert len({key for name, key in rec.calls if name == "refund"}) == 1
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


# -- throw events -----------------------------------------------------------------------------


def two_steps_then(throw: Callable[[Process], Process], after: str = "e") -> Any:
    p = (
        Process("throws")
        .start("s")
        .service_task("a", handler="a", compensate_with="undo-a")
        .service_task("b", handler="b", compensate_with="undo-b")
    )
    p = throw(p).end("e")
    return p.sequence("s", "a", "b", "throw", after).build()


def test_an_intermediate_throw_compensates_the_scope_newest_first_then_moves_on(
    database_url: str,
) -> None:
    rec = Recorder("a", "b", "undo-a", "undo-b")
    model = two_steps_then(lambda p: p.compensate("throw"))
    engine, q = setup(database_url, model, rec)
    inst = engine.start("throws", now=T0)
    drain(engine, q)
    assert rec.names == ["a", "b", "undo-b", "undo-a"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_throw_with_activity_ref_compensates_that_activity_only(database_url: str) -> None:
    rec = Recorder("a", "b", "undo-a", "undo-b")
    model = two_steps_then(lambda p: p.compensate("throw", activity="a"))
    engine, q = setup(database_url, model, rec)
    inst = engine.start("throws", now=T0)
    drain(engine, q)
    assert rec.names == ["a", "b", "undo-a"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    states = {node: state for node, _, state in compensables(engine, inst.id)}
    assert states == {"a": "compensated", "b": "recorded"}


def test_a_compensation_end_event_of_the_process_ends_the_instance_compensated(
    database_url: str,
) -> None:
    rec = Recorder("a", "b", "undo-a", "undo-b")
    model = (
        Process("throws")
        .start("s")
        .service_task("a", handler="a", compensate_with="undo-a")
        .service_task("b", handler="b", compensate_with="undo-b")
        .compensate_end("throw")
        .sequence("s", "a", "b", "throw")
        .build()
    )
    engine, q = setup(database_url, model, rec)
    inst = engine.start("throws", now=T0)
    drain(engine, q)
    assert rec.names == ["a", "b", "undo-b", "undo-a"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


def test_an_interrupting_timeout_path_to_a_compensation_end_event_compensates_the_instance(
    database_url: str,
) -> None:
    rec = Recorder("a", "undo-a")
    model = (
        Process("timeout")
        .start("s")
        .service_task("a", handler="a", compensate_with="undo-a")
        .user_task("approve")
        .boundary_timer("too_late", "approve", duration="PT1H")
        .compensate_end("undo_all")
        .end("e")
        .sequence("s", "a", "approve", "e")
        .flow("too_late", "undo_all")
        .build()
    )
    engine, q = setup(database_url, model, rec)
    inst = engine.start("timeout", now=T0)
    drain(engine, q)
    assert engine.fire_due_timers(now=T0 + timedelta(hours=2)) == 1
    drain(engine, q)
    assert rec.names == ["a", "undo-a"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED
    assert engine.user_tasks(inst.id) == []  # the interrupted task is cancelled


def test_each_completion_is_compensated_once_a_loop_twice_and_a_second_throw_finds_nothing(
    database_url: str,
) -> None:
    calls: list[str] = []
    reg = HandlerRegistry()
    reg.register("a", lambda ctx: calls.append("a") or {"n": int(ctx.variables.get("n", 0)) + 1})
    reg.register("undo-a", lambda ctx: calls.append("undo-a") or None)
    model = (
        Process("loop")
        .start("s")
        .service_task("a", handler="a", compensate_with="undo-a")
        .exclusive("again", default="out")
        .compensate("throw1")
        .compensate("throw2")
        .end("e")
        .sequence("s", "a", "again")
        .flow("again", "a", condition="n < 2", id="back")
        .flow("again", "throw1", id="out")
        .sequence("throw1", "throw2", "e")
        .build()
    )
    engine, q = make_engine(database_url, reg)
    engine.deploy(model)
    inst = engine.start("loop", now=T0)
    drain(engine, q)
    assert calls == ["a", "a", "undo-a", "undo-a"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    trail = [e for e in engine.history(inst.id) if e.type == "compensation_thrown"]
    assert [e.payload["activities"] for e in trail] == [["a", "a"], []]
    assert [s for _, _, s in compensables(engine, inst.id)] == ["compensated", "compensated"]


def test_a_loop_compensates_every_completion_newest_first(database_url: str) -> None:
    seen: list[int] = []
    reg = HandlerRegistry()
    reg.register("a", lambda ctx: {"n": int(ctx.variables.get("n", 0)) + 1})
    reg.register("undo-a", lambda ctx: seen.append(int(ctx.variables["item"])) or None)
    model = (
        Process("items")
        .start("s")
        .service_task(
            "a",
            handler="a",
            compensate_with="undo-a",
            for_each="items",
            as_="item",
            parallel=False,
        )
        .compensate("throw")
        .end("e")
        .sequence("s", "a", "throw", "e")
        .build()
    )
    engine, q = make_engine(database_url, reg)
    engine.deploy(model)
    inst = engine.start("items", {"items": [10, 20, 30]}, now=T0)
    drain(engine, q)
    assert seen == [30, 20, 10]  # each inner instance's own element, newest first
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


# -- sub-processes ------------------------------------------------------------------------------


def with_sub(esp: bool) -> Any:
    p = Process("sub").start("s")

    def body(s: Process) -> Process:
        s = (
            s.start("ss")
            .service_task("x", handler="x", compensate_with="undo-x")
            .service_task("y", handler="y", compensate_with="undo-y")
            .end("se")
            .sequence("ss", "x", "y", "se")
        )
        if esp:
            s = s.event_sub_process(
                "on_comp",
                lambda e: (
                    e.compensation_start("cs")
                    .service_task("notify", handler="notify")
                    .compensate("inner")
                    .end("ce")
                    .sequence("cs", "notify", "inner", "ce")
                ),
            )
        return s

    p = p.sub_process("sub", body)
    p = p.service_task("after", handler="after", compensate_with="undo-after")
    return p.compensate_end("undo").sequence("s", "sub", "after", "undo").build()


def test_a_completed_sub_process_compensates_its_inner_activities_newest_first(
    database_url: str,
) -> None:
    rec = Recorder("x", "y", "after", "undo-x", "undo-y", "undo-after")
    engine, q = setup(database_url, with_sub(esp=False), rec)
    inst = engine.start("sub", now=T0)
    drain(engine, q)
    assert rec.names == ["x", "y", "after", "undo-after", "undo-y", "undo-x"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED
    assert {s for _, _, s in compensables(engine, inst.id)} == {"compensated"}


def test_a_compensation_event_sub_process_runs_instead_and_may_throw_inside(
    database_url: str,
) -> None:
    rec = Recorder("x", "y", "after", "undo-x", "undo-y", "undo-after", "notify")
    engine, q = setup(database_url, with_sub(esp=True), rec)
    inst = engine.start("sub", now=T0)
    drain(engine, q)
    assert rec.names == ["x", "y", "after", "undo-after", "notify", "undo-y", "undo-x"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


# -- the trail ------------------------------------------------------------------------------------


def test_bpm_show_prints_the_compensation_trail(database_url: str) -> None:
    from tests.test_cli import bpm

    rec = Recorder("reserve", "charge", "ship", "release", "refund", fail={"ship": 99})
    engine, q = setup(database_url, saga(RetryPolicy.none().compensate_on_failure()), rec)
    inst = engine.start("saga")
    drain(engine, q)
    shown = bpm("show", inst.id, "--db", database_url)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "failed -> terminated" in text and "step ship failed: compensating" in text
    assert "active -> compensating" in text and "compensates charge, reserve" in text
    assert "undo charge (charge.compensate)" in text
    assert text.index("undo charge") < text.index("undo reserve")
    assert text.index("undone reserve") < text.index("compensating -> compensated")


def test_a_saga_failing_inside_a_sub_process_undoes_its_completed_inner_steps_too(
    database_url: str,
) -> None:
    """The sub-process never completed (so has no record of its own): the steps it
    completed inside are compensated with the rest, newest first."""
    rec = Recorder("a", "x", "boom", "undo-a", "undo-x", fail={"boom": 99})
    model = (
        Process("inner")
        .start("s")
        .service_task("a", handler="a", compensate_with="undo-a")
        .sub_process(
            "sub",
            lambda b: (
                b.start("ss")
                .service_task("x", handler="x", compensate_with="undo-x")
                .service_task(
                    "boom", handler="boom", retry=RetryPolicy.none().compensate_on_failure()
                )
                .end("se")
                .sequence("ss", "x", "boom", "se")
            ),
        )
        .end("e")
        .sequence("s", "a", "sub", "e")
        .build()
    )
    engine, q = setup(database_url, model, rec)
    inst = engine.start("inner", now=T0)
    drain(engine, q)
    assert rec.names == ["a", "x", "boom", "undo-x", "undo-a"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


def test_a_run_cut_short_by_the_saga_is_taken_over_and_nothing_is_undone_twice(
    database_url: str,
) -> None:
    """An intermediate throw's run is underway (undo-b done, a's handler a user task
    still open) when a parallel step fails with the compensate action: the run ends with
    its tokens, the saga takes over what it had not finished, undo-b does not run again."""
    calls: list[str] = []
    reg = HandlerRegistry()
    for name in ("a", "b", "undo-b"):
        reg.register(name, lambda ctx, name=name: calls.append(name) or None)

    def boom(ctx: TaskContext) -> None:
        calls.append("boom")
        raise RuntimeError("boom")

    reg.register("boom", boom)
    p = (
        Process("cut")
        .start("s")
        .service_task("a", handler="a")
        .service_task("b", handler="b", compensate_with="undo-b")
        .compensate("throw")
        .parallel("fork")
        .user_task("wait")
        .service_task("boom", handler="boom", retry=RetryPolicy.none().compensate_on_failure())
        .end("e1")
        .end("e2")
        .sequence("s", "a", "b", "fork")
        .sequence("fork", "throw", "e1")
        .sequence("fork", "wait", "boom", "e2")
    )
    # a's handler is a user task: the run waits there while the saga begins
    p.user_task("undo-a-task", for_compensation=True)
    p.boundary_compensation("a_comp", "a", handler="undo-a-task")
    engine, q = make_engine(database_url, reg)
    engine.deploy(p.build())
    inst = engine.start("cut", now=T0)
    drain(engine, q)
    assert calls == ["a", "b", "undo-b"]  # the throw's run: undo-b done, undo-a waiting
    (wait,) = [u for u in engine.user_tasks(inst.id) if u.node_id == "wait"]
    engine.complete_user_task(wait.id, now=T0)
    drain(engine, q)
    assert calls == ["a", "b", "undo-b", "boom"]  # the saga: undo-b is not run again
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATING
    (undo_a,) = engine.user_tasks(inst.id)
    assert undo_a.node_id == "undo-a-task"
    engine.complete_user_task(undo_a.id, now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED
    states = {node: state for node, _, state in compensables(engine, inst.id)}
    assert states == {"a": "compensated", "b": "compensated"}
