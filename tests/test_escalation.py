"""Escalation and link events at run time (issue 11, items 5 and 6).

Escalations are thrown like errors (nearest catcher first, across sub-processes and call
activities, a catcher with the code before a catch-all) but they may not interrupt, and
one nobody catches changes nothing. Link events jump within their (sub-)process. Every
test runs on PostgreSQL and SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.model.process import ProcessModel
from tests.engine_helpers import QueueDispatcher
from tests.scopes_helpers import EMPTY, engine_on, nothing_live, open_tasks, task_of, types


@pytest.fixture
def both(database_url: str) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(database_url)
    yield eng, q
    eng.close()


def _escalating_sub_process(
    key: str, *, interrupting: bool, code: str | None = "LATE", throw: str = "LATE"
) -> ProcessModel:
    """A sub-process that escalates ``throw`` on its way to the task ``finish``; a
    boundary event for ``code`` (None: every code) on it leads to ``tell``."""
    return (
        Process(key)
        .start("s")
        .sub_process(
            "work",
            lambda b: (
                b.start("ws")
                .throw_escalation("late", throw)
                .user_task("finish")
                .end("we")
                .sequence("ws", "late", "finish", "we")
            ),
        )
        .boundary_escalation(
            "on_late", "work", escalation_code=code, interrupting=interrupting, code_variable="why"
        )
        .user_task("tell")
        .end("told")
        .sequence("on_late", "tell", "told")
        .user_task("after")
        .end("e")
        .sequence("s", "work", "after", "e")
        .build()
    )


def _thrown(engine: Engine, instance_id: str) -> list[dict[str, object]]:
    return [e.payload for e in engine.history(instance_id) if e.type == "escalation_thrown"]


def test_a_non_interrupting_escalation_boundary_keeps_the_sub_process_running(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_escalating_sub_process("nonint", interrupting=False))
    inst = engine.start("nonint")
    # the throw event moved on to "finish"; the boundary path runs beside it
    assert open_tasks(engine, inst.id) == ["finish", "tell"]
    assert engine.get_instance(inst.id).variables == {"why": "LATE"}
    assert _thrown(engine, inst.id) == [
        {"escalation_code": "LATE", "caught_by": "on_late", "interrupting": False}
    ]
    engine.complete_user_task(task_of(engine, inst.id, "finish"))
    assert open_tasks(engine, inst.id) == ["after", "tell"]
    engine.complete_user_task(task_of(engine, inst.id, "tell"))
    engine.complete_user_task(task_of(engine, inst.id, "after"))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert nothing_live(engine, inst.id) == EMPTY


def test_an_interrupting_escalation_boundary_ends_the_sub_process(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_escalating_sub_process("inter", interrupting=True))
    inst = engine.start("inter")
    assert open_tasks(engine, inst.id) == ["tell"]  # the thrower never reached "finish"
    assert ("scope_terminated", "work") in types(engine, inst.id)
    engine.complete_user_task(task_of(engine, inst.id, "tell"))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert "after" not in {e.node_id for e in engine.history(inst.id)}


def test_an_escalation_end_event_ends_everything_in_its_sub_process(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("ending")
        .start("s")
        .sub_process(
            "work",
            lambda b: (
                b.start("ws")
                .parallel("fork")
                .user_task("waits")
                .end("give_up", escalation_code="GIVE_UP")
                .sequence("ws", "fork", "waits")
                .flow("fork", "give_up")
            ),
        )
        .boundary_escalation("on_give_up", "work", escalation_code="GIVE_UP")
        .user_task("handle")
        .end("handled")
        .sequence("on_give_up", "handle", "handled")
        .end("e")
        .sequence("s", "work", "e")
    )
    inst = engine.start("ending")
    assert open_tasks(engine, inst.id) == ["handle"]
    assert [t.node_id for t in engine.user_tasks(inst.id, state="cancelled")] == ["waits"]
    live = nothing_live(engine, inst.id)
    assert live["tokens"] == ["handle"] and live["scopes"] == []


def test_a_catch_all_boundary_catches_any_code_and_a_coded_one_only_its_own(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_escalating_sub_process("any", interrupting=True, code=None, throw="WHATEVER"))
    engine.deploy(_escalating_sub_process("other", interrupting=True, code="LATE", throw="ODD"))
    caught = engine.start("any")
    assert open_tasks(engine, caught.id) == ["tell"]
    assert engine.get_instance(caught.id).variables == {"why": "WHATEVER"}
    missed = engine.start("other")
    # nobody catches ODD: it is recorded and the thrower goes on; nothing fails
    assert open_tasks(engine, missed.id) == ["finish"]
    assert _thrown(engine, missed.id) == [
        {"escalation_code": "ODD", "caught_by": None, "interrupting": None}
    ]
    assert engine.incidents(missed.id) == []
    assert engine.get_instance(missed.id).state is InstanceState.ACTIVE


def test_the_nearest_catcher_wins_an_event_sub_process_inside_before_the_boundary(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("nearest")
        .start("s")
        .sub_process(
            "work",
            lambda b: (
                b.start("ws")
                .throw_escalation("late", "LATE")
                .user_task("finish")
                .end("we")
                .sequence("ws", "late", "finish", "we")
                .event_sub_process(
                    "inner",
                    lambda e: (
                        e.start("on", escalation="LATE", interrupting=False)
                        .user_task("inner_note")
                        .end("noted")
                        .sequence("on", "inner_note", "noted")
                    ),
                )
            ),
        )
        .boundary_escalation("outer", "work", escalation_code="LATE")
        .end("outer_end")
        .flow("outer", "outer_end")
        .end("e")
        .sequence("s", "work", "e")
    )
    inst = engine.start("nearest")
    assert open_tasks(engine, inst.id) == ["finish", "inner_note"]
    assert [p["caught_by"] for p in _thrown(engine, inst.id)] == ["on"]


def test_a_process_level_interrupting_event_sub_process_catches_from_deep_inside(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("deep")
        .start("s")
        .sub_process(
            "outer",
            lambda b: (
                b.start("os")
                .sub_process(
                    "inner",
                    lambda c: (
                        c.start("is")
                        .parallel("fork")
                        .user_task("waits")
                        .throw_escalation("up", "UP")
                        .user_task("never")
                        .sequence("is", "fork", "waits")
                        .flow("fork", "up")
                        .flow("up", "never")
                    ),
                )
                .end("oe")
                .sequence("os", "inner", "oe")
            ),
        )
        .end("e")
        .sequence("s", "outer", "e")
        .event_sub_process(
            "on_up",
            lambda e: (
                e.start("catch", escalation=True, code_variable="code")
                .user_task("cleanup")
                .end("cleaned")
                .sequence("catch", "cleanup", "cleaned")
            ),
        )
    )
    inst = engine.start("deep")
    assert open_tasks(engine, inst.id) == ["cleanup"]
    assert engine.get_instance(inst.id).variables == {"code": "UP"}
    engine.complete_user_task(task_of(engine, inst.id, "cleanup"))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert nothing_live(engine, inst.id) == EMPTY


def _child(key: str = "child") -> ProcessModel:
    return (
        Process(key)
        .start("cs")
        .throw_escalation("ask", "NEED_HELP")
        .user_task("work")
        .end("ce")
        .sequence("cs", "ask", "work", "ce")
        .build()
    )


def _caller(*, interrupting: bool) -> ProcessModel:
    return (
        Process("caller")
        .start("s")
        .call_activity("call", "child")
        .boundary_escalation("help", "call", escalation_code="NEED_HELP", interrupting=interrupting)
        .user_task("helping")
        .end("helped")
        .sequence("help", "helping", "helped")
        .user_task("after")
        .end("e")
        .sequence("s", "call", "after", "e")
        .build()
    )


def test_an_escalation_from_a_called_child_reaches_the_call_activity_without_stopping_it(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_child())
    engine.deploy(_caller(interrupting=False))
    inst = engine.start("caller")
    (kid,) = engine.get_instance(inst.id).children
    assert open_tasks(engine, inst.id) == ["helping"]
    assert open_tasks(engine, kid) == ["work"]  # the child goes on
    engine.complete_user_task(task_of(engine, kid, "work"))
    assert engine.get_instance(kid).state is InstanceState.COMPLETED
    assert open_tasks(engine, inst.id) == ["after", "helping"]


def test_an_interrupting_escalation_from_a_called_child_terminates_it(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_child())
    engine.deploy(_caller(interrupting=True))
    inst = engine.start("caller")
    (kid,) = engine.get_instance(inst.id).children
    assert engine.get_instance(kid).state is InstanceState.TERMINATED
    assert nothing_live(engine, kid) == EMPTY
    assert open_tasks(engine, inst.id) == ["helping"]


# -- links ------------------------------------------------------------------------------------


def test_a_link_throw_jumps_to_its_catch_and_may_loop(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("links")
        .start("s")
        .link_catch("again", "RETRY")
        .user_task("try")
        .exclusive("ok")
        .link_throw("go_again", "RETRY")
        .link_throw("go_on", "DONE")
        .link_catch("done", "DONE")
        .end("e")
        .sequence("s", "try", "ok")
        .flow("again", "try")
        .flow("ok", "go_on", condition="passed")
        .flow("ok", "go_again", default=True)
        .flow("done", "e")
    )
    inst = engine.start("links")
    engine.complete_user_task(task_of(engine, inst.id, "try"), {"passed": False})
    assert open_tasks(engine, inst.id) == ["try"]  # back through the RETRY link
    engine.complete_user_task(task_of(engine, inst.id, "try"), {"passed": True})
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    trail = [node for kind, node in types(engine, inst.id) if kind == "token_completed"]
    assert trail.count("go_again") == 1 and trail.count("again") == 1
    assert "done" in trail and "e" in trail


def test_a_link_inside_a_sub_process_stays_in_its_scope(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("inner_link")
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .link_throw("jump", "L")
                .link_catch("land", "L")
                .user_task("inside")
                .end("se")
                .flow("ss", "jump")
                .sequence("land", "inside", "se")
            ),
        )
        .user_task("after")
        .end("e")
        .sequence("s", "sp", "after", "e")
    )
    inst = engine.start("inner_link")
    assert open_tasks(engine, inst.id) == ["inside"]
    (scope,) = [s for s in engine.get_instance(inst.id).scopes if s.node_id == "sp"]
    (task,) = engine.user_tasks(inst.id)
    token = next(t for t in engine.get_instance(inst.id).tokens if t.id == task.token_id)
    assert token.scope_id == scope.id
    engine.complete_user_task(task.id)
    assert open_tasks(engine, inst.id) == ["after"]
