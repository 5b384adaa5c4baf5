"""Sub-processes, event sub-processes, error propagation and variables in scopes (issue 10).

Most tests run on the embedded default (SQLite); those marked ``both`` on PostgreSQL too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bpm import Engine, TaskContext, VariableError
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import NotFound
from bpm.handlers import HandlerRegistry
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import InstanceState, ScopeKind, ScopeState
from tests.engine_helpers import QueueDispatcher, drain, table_dump
from tests.scopes_helpers import (
    EMPTY,
    at,
    engine_on,
    live_nodes,
    nothing_live,
    open_tasks,
    task_of,
    types,
)
from tests.test_scopes_model import chain, xml


@pytest.fixture
def seen() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def registry(seen: list[dict[str, Any]]) -> HandlerRegistry:
    reg = HandlerRegistry()

    def look(ctx: TaskContext) -> dict[str, Any]:
        seen.append({"node": ctx.node_id, **ctx.variables})
        if "keep" in ctx.variables:
            ctx.set_local("kept", ctx.variables["keep"])
        return {f"{ctx.node_id}_ran": True}

    reg.register("look", look)
    reg.register("inc", lambda ctx: {"n": ctx.variables["n"] + 1})
    reg.register("fail", lambda ctx: (_ for _ in ()).throw(RuntimeError("nope")))
    return reg


@pytest.fixture
def local(
    sqlite_database_url: str, registry: HandlerRegistry
) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(sqlite_database_url, registry)
    eng.upgrade()
    yield eng, q
    eng.close()


@pytest.fixture
def both(database_url: str, registry: HandlerRegistry) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(database_url, registry)
    yield eng, q
    eng.close()


# -- embedded sub-processes -------------------------------------------------------------------


def test_a_sub_process_runs_in_its_own_scope_and_maps_variables(
    both: tuple[Engine, QueueDispatcher], seen: list[dict[str, Any]]
) -> None:
    engine, q = both
    engine.deploy(
        Process("sp")
        .start("s")
        .sub_process(
            "review",
            lambda b: (
                b.start("rs")
                .service_task("check", handler="look")
                .end("re")
                .sequence("rs", "check", "re")
            ),
            inputs={"limit": "amount * 2"},
            outputs={"checked": "kept"},
        )
        .user_task("after")
        .end("e")
        .sequence("s", "review", "after", "e")
    )
    inst = engine.start("sp", {"amount": 21, "keep": "yes"})
    drain(engine, q)
    # The handler saw the sub-process's local variable beside the instance's ...
    assert seen == [{"node": "check", "amount": 21, "keep": "yes", "limit": 42}]
    done = engine.get_instance(inst.id)
    # ... its set_local stayed in the sub-process, the output mapping brought it out,
    # and what it returned went to the instance (no scope had the name).
    assert done.variables == {"amount": 21, "keep": "yes", "check_ran": True, "checked": "yes"}
    (scope,) = done.scopes
    assert (scope.kind, scope.node_id, scope.state) == (
        ScopeKind.SUBPROCESS,
        "review",
        ScopeState.COMPLETED,
    )
    assert scope.variables == {"limit": 42, "kept": "yes"}
    assert open_tasks(engine, inst.id) == ["after"]
    trail = types(engine, inst.id)
    assert trail.index(("scope_entered", "review")) < trail.index(("token_executing", "check"))
    assert trail.index(("scope_completed", "review")) < trail.index(("token_created", "after"))


def test_nested_sub_processes_with_a_fork_and_a_loop_inside(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = local

    def counting(c: Process) -> Any:
        return (
            c.start("cs")
            .service_task("count", handler="inc")
            .exclusive("more", default="f_done")
            .end("ce")
            .sequence("cs", "count", "more")
            .flow("more", "count", condition="n < 3")
            .flow("more", "ce", id="f_done", default=True)
        )

    def outer(b: Process) -> Any:
        return (
            b.start("os")
            .sub_process("counting", counting)
            .parallel("fork")
            .service_task("a", handler="look")
            .parallel("join")
            .end("oe")
            .sequence("os", "fork", "a", "join", "oe")
            .flow("fork", "counting")
            .flow("counting", "join")
        )

    engine.deploy(
        Process("nested")
        .start("s")
        .sub_process("outer", outer)
        .end("e")
        .sequence("s", "outer", "e")
    )
    inst = engine.start("nested", {"n": 0})
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED, types(engine, inst.id)
    assert done.variables["n"] == 3 and done.variables["a_ran"] is True
    assert {s.node_id for s in done.scopes} == {"outer", "counting"}
    assert sum(1 for t, _ in types(engine, inst.id) if t == "join_fired") == 1


def test_sub_processes_without_a_start_event_start_where_no_flow_leads(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    """BPMN's implicit start: the nodes nothing flows into; an empty one just completes."""
    engine, _ = local
    engine.deploy(
        parse_bpmn(
            xml(
                '<bpmn:startEvent id="s" /><bpmn:subProcess id="empty" />'
                '<bpmn:subProcess id="implicit"><bpmn:userTask id="first" />'
                '<bpmn:userTask id="second" />'
                + chain("first", "second")
                + '</bpmn:subProcess><bpmn:endEvent id="e" />'
                + chain("s", "empty", "implicit", "e"),
                key="implicit",
            )
        )
    )
    inst = engine.start("implicit")
    assert open_tasks(engine, inst.id) == ["first"]
    assert ("scope_completed", "empty") in types(engine, inst.id)
    engine.complete_user_task(task_of(engine, inst.id, "first"))
    engine.complete_user_task(task_of(engine, inst.id, "second"))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_terminate_end_event_ends_only_its_sub_process(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("term")
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .parallel("fork")
                .user_task("waits")
                .end("stop", terminate=True)
                .sequence("ss", "fork", "waits")
                .flow("fork", "stop")
            ),
        )
        .user_task("after")
        .end("e")
        .sequence("s", "sp", "after", "e")
    )
    inst = engine.start("term")
    assert open_tasks(engine, inst.id) == ["after"]
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
    cancelled = engine.user_tasks(inst.id, state="cancelled")
    assert [t.node_id for t in cancelled] == ["waits"]
    assert ("scope_completed", "sp") in types(engine, inst.id)


def _with_boundary(code: str | None) -> Process:
    return (
        Process("caught")
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .parallel("fork")
                .user_task("waits")
                .end("boom", error_code="BOOM")
                .sequence("ss", "fork", "waits")
                .flow("fork", "boom")
            ),
        )
        .boundary_error("on_error", "sp", error_code=code)
        .user_task("handled")
        .end("e")
        .end("e2")
        .sequence("s", "sp", "e")
        .sequence("on_error", "handled", "e2")
    )


def test_an_error_end_event_is_caught_by_the_sub_process_boundary(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_with_boundary("BOOM"))
    inst = engine.start("caught")
    assert open_tasks(engine, inst.id) == ["handled"]
    live = nothing_live(engine, inst.id)
    assert live["tokens"] == ["handled"] and live["scopes"] == []
    assert engine.get_instance(inst.id).variables["error_code"] == "BOOM"
    assert [t.node_id for t in engine.user_tasks(inst.id, state="cancelled")] == ["waits"]


def test_an_uncaught_error_end_event_ends_its_path_like_a_none_end_event(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(_with_boundary("OTHER"))
    inst = engine.start("caught")
    assert open_tasks(engine, inst.id) == ["waits"]
    assert ("error_end", "boom") in types(engine, inst.id)


def test_an_error_event_sub_process_catches_inside_its_sub_process(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("esp")
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .parallel("fork")
                .user_task("waits")
                .end("boom", error_code="BOOM")
                .sequence("ss", "fork", "waits")
                .flow("fork", "boom")
                .event_sub_process(
                    "on_boom",
                    lambda e: (
                        e.start("catch", error="BOOM")
                        .user_task("fix")
                        .end("fixed")
                        .sequence("catch", "fix", "fixed")
                    ),
                )
            ),
        )
        .user_task("after")
        .end("e")
        .sequence("s", "sp", "after", "e")
    )
    inst = engine.start("esp")
    assert open_tasks(engine, inst.id) == ["fix"]
    engine.complete_user_task(task_of(engine, inst.id, "fix"))
    assert open_tasks(engine, inst.id) == ["after"]
    kinds = {(s.kind, s.state) for s in engine.get_instance(inst.id).scopes}
    assert kinds == {
        (ScopeKind.SUBPROCESS, ScopeState.COMPLETED),
        (ScopeKind.EVENT_SUBPROCESS, ScopeState.COMPLETED),
    }


def test_a_bpmn_error_of_an_external_worker_reaches_the_process_event_sub_process(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("ext")
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .service_task("remote", topic="remote")
                .end("se")
                .sequence("ss", "remote", "se")
            ),
            inputs={"region": '"eu"'},
        )
        .end("e")
        .sequence("s", "sp", "e")
        .event_sub_process(
            "on_fail",
            lambda e: (
                e.start("catch", error=True)
                .user_task("apologise")
                .end("sorry")
                .sequence("catch", "apologise", "sorry")
            ),
        )
    )
    inst = engine.start("ext", {"customer": "c1"})
    (task,) = engine.fetch_and_lock(
        FetchRequest("w", 1, (TopicRequest("remote", 600_000),)), now=at(0)
    )
    assert task.variables == {"customer": "c1", "region": "eu"}  # the scope's view
    engine.external_task_bpmn_error(task.id, "w", "DECLINED", "card declined", now=at(1))
    assert open_tasks(engine, inst.id) == ["apologise"]
    assert engine.get_instance(inst.id).variables["error_code"] == "DECLINED"
    with pytest.raises(NotFound):  # the task ended with its scope
        engine.complete_external_task(task.id, "w", now=at(2))


# -- event sub-processes with timers ------------------------------------------------------------


def test_an_interrupting_timer_event_sub_process(local: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = local
    engine.deploy(
        Process("late")
        .start("s")
        .user_task("work")
        .end("e")
        .sequence("s", "work", "e")
        .event_sub_process(
            "too_late",
            lambda b: (
                b.start("deadline", duration="PT1H")
                .user_task("escalate")
                .end("ee")
                .sequence("deadline", "escalate", "ee")
            ),
            inputs={"reason": '"late"'},
            outputs={"escalated_for": "reason"},
        )
    )
    inst = engine.start("late", now=at(0))
    assert [t.node_id for t in engine.timers(inst.id)] == ["deadline"]
    assert engine.fire_due_timers(now=at(30)) == 0
    assert engine.fire_due_timers(now=at(61)) == 1
    assert open_tasks(engine, inst.id) == ["escalate"]
    assert [t.node_id for t in engine.user_tasks(inst.id, state="cancelled")] == ["work"]
    engine.complete_user_task(task_of(engine, inst.id, "escalate"), now=at(62))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert engine.get_instance(inst.id).variables == {"escalated_for": "late"}
    assert nothing_live(engine, inst.id) == EMPTY


def test_a_non_interrupting_timer_event_sub_process_runs_as_often_as_it_fires(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    built = (
        Process("remind")
        .start("s")
        .user_task("work")
        .end("e")
        .sequence("s", "work", "e")
        .event_sub_process(
            "reminder",
            lambda b: (
                b.start("every", cycle="R2/PT10M", interrupting=False)
                .task("nudge")
                .end("ne")
                .sequence("every", "nudge", "ne")
            ),
        )
        .build()
    )
    engine.deploy(built)
    inst = engine.start("remind", now=at(0))
    assert engine.fire_due_timers(now=at(10)) == 1
    assert engine.fire_due_timers(now=at(20)) == 1
    assert engine.fire_due_timers(now=at(40)) == 0  # R2: twice, no more
    nudged = [x for x in types(engine, inst.id) if x == ("token_completed", "nudge")]
    assert len(nudged) == 2
    assert open_tasks(engine, inst.id) == ["work"]
    engine.complete_user_task(task_of(engine, inst.id, "work"), now=at(41))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert nothing_live(engine, inst.id) == EMPTY


def test_a_listener_ends_with_its_scope(local: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = local
    engine.deploy(
        Process("quick")
        .start("s")
        .task("t")
        .end("e")
        .sequence("s", "t", "e")
        .event_sub_process(
            "never",
            lambda b: b.start("later", duration="PT1H").end("le").sequence("later", "le"),
        )
    )
    inst = engine.start("quick", now=at(0))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert engine.timers(inst.id) == []


def test_a_non_interrupting_boundary_timer_on_a_sub_process(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("bt")
        .start("s")
        .sub_process(
            "sp",
            lambda b: b.start("ss").user_task("work").end("se").sequence("ss", "work", "se"),
        )
        .boundary_timer("nag", "sp", duration="PT5M", interrupting=False)
        .user_task("nagged")
        .end("e")
        .end("ne")
        .sequence("s", "sp", "e")
        .sequence("nag", "nagged", "ne")
    )
    inst = engine.start("bt", now=at(0))
    assert engine.fire_due_timers(now=at(6)) == 1
    assert open_tasks(engine, inst.id) == ["nagged", "work"]
    engine.complete_user_task(task_of(engine, inst.id, "work"), now=at(7))
    assert open_tasks(engine, inst.id) == ["nagged"]


# -- variables ----------------------------------------------------------------------------------


def test_mappings_on_a_task_keep_its_results_local(
    local: tuple[Engine, QueueDispatcher], seen: list[dict[str, Any]]
) -> None:
    engine, q = local
    engine.deploy(
        Process("io")
        .start("s")
        .service_task(
            "look", handler="look", inputs={"doubled": "x * 2"}, outputs={"out": "look_ran"}
        )
        .end("e")
        .sequence("s", "look", "e")
    )
    inst = engine.start("io", {"x": 4})
    drain(engine, q)
    assert seen == [{"node": "look", "x": 4, "doubled": 8}]
    # With output mappings, what the handler returned stays in the task's own scope.
    assert engine.get_instance(inst.id).variables == {"x": 4, "out": True}


def test_set_local_at_the_top_level_sets_instance_variables(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = local
    engine.deploy(
        Process("top")
        .start("s")
        .service_task("look", handler="look")
        .end("e")
        .sequence("s", "look", "e")
    )
    inst = engine.start("top", {"keep": 7})
    drain(engine, q)
    assert engine.get_instance(inst.id).variables == {"keep": 7, "kept": 7, "look_ran": True}


def test_a_failing_output_mapping_gets_an_incident_and_changes_nothing_else(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = local
    engine.deploy(
        Process("badout")
        .start("s")
        .service_task("look", handler="look", outputs={"out": "missing + 1"})
        .end("e")
        .sequence("s", "look", "e")
    )
    inst = engine.start("badout")
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    assert incident.type == "failedMapping" and "output mapping of 'look'" in (
        incident.message or ""
    )
    assert "out" not in engine.get_instance(inst.id).variables
    assert live_nodes(engine, inst.id) == ["look"]


def test_a_complete_with_bad_local_variables_changes_nothing(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("extlocal")
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .service_task("remote", topic="t")
                .end("se")
                .sequence("ss", "remote", "se")
            ),
            inputs={"scoped": "1"},
        )
        .end("e")
        .sequence("s", "sp", "e")
    )
    inst = engine.start("extlocal")
    (task,) = engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest("t", 10_000),)))
    before = table_dump(engine)
    with pytest.raises(VariableError):
        engine.complete_external_task(task.id, "w", {"ok": 1}, {"bad": {1, 2}})
    assert table_dump(engine) == before
    engine.complete_external_task(task.id, "w", {"ok": 1}, {"scoped": 2, "mine": 3})
    done = engine.get_instance(inst.id)
    assert done.variables == {"ok": 1}
    assert done.scopes[0].variables == {"scoped": 2, "mine": 3}
