"""Interrupting a scope ends everything inside it in one transaction; terminating a
call tree leaves nothing live anywhere below it (issue 10, on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from bpm import Engine
from bpm.builder import Process
from bpm.errors import NotFound
from bpm.handlers import HandlerRegistry
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import InstanceState, ScopeState
from bpm.store import tables as t
from tests.engine_helpers import QueueDispatcher, make_engine, table_dump
from tests.scopes_helpers import EMPTY, at, nothing_live, open_tasks, types


@pytest.fixture
def pg(pg_database_url: str) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = make_engine(pg_database_url, HandlerRegistry())
    yield eng, q
    eng.close()


def history_rows(engine: Engine, instance_id: str) -> int:
    """History rows of an instance: one per transaction that changed it."""
    with engine.db.connect() as conn:
        q = (
            select(func.count())
            .select_from(t.history)
            .where(t.history.c.instance_id == instance_id)
        )
        return int(conn.execute(q).scalar_one())


def busy_sub_process() -> Process:
    """A sub-process holding a parallel fork into: a waiting external task, a user task, a
    nested sub-process that waits on a timer and another user task, and a gateway whose
    condition failed (an incident)."""

    def nested(b: Process) -> Process:
        return (
            b.start("ns")
            .parallel("nfork")
            .timer("nap", duration="PT10H")
            .user_task("inner_review")
            .end("ne")
            .end("ne2")
            .sequence("ns", "nfork", "nap", "ne")
            .sequence("nfork", "inner_review", "ne2")
        )

    def busy(b: Process) -> Process:
        return (
            b.start("bs")
            .parallel("fork")
            .service_task("remote", topic="remote")
            .user_task("review")
            .sub_process("nested", nested)
            .parallel("join")
            .end("be")
            .sequence("bs", "fork", "remote", "join", "be")
            .sequence("fork", "review", "join")
            .sequence("fork", "nested", "join")
            .exclusive("broken")  # its condition fails: an incident inside
            .end("never")
            .flow("fork", "broken")
            .flow("broken", "never", condition="missing > 1")
        )

    return (
        Process("busy")
        .start("s")
        .sub_process("work", busy)
        .boundary_timer("too_slow", "work", duration="PT1H")
        .user_task("escalate")
        .end("done")
        .end("late")
        .sequence("s", "work", "done")
        .sequence("too_slow", "escalate", "late")
    )


def test_an_interrupting_boundary_timer_ends_everything_in_the_sub_process(
    pg: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = pg
    engine.deploy(busy_sub_process())
    inst = engine.start("busy", now=at(0))
    (task,) = engine.fetch_and_lock(
        FetchRequest("w1", 1, (TopicRequest("remote", 3_600_000),)), now=at(1)
    )
    assert open_tasks(engine, inst.id) == ["inner_review", "review"]
    assert sorted(x.node_id for x in engine.timers(inst.id)) == ["nap", "too_slow"]
    assert [x.node_id for x in engine.incidents(inst.id)] == ["broken"]
    rows = history_rows(engine, inst.id)

    assert engine.fire_due_timers(now=at(61)) == 1

    assert history_rows(engine, inst.id) == rows + 1  # one transaction did all of it
    live = nothing_live(engine, inst.id)
    assert live == {**EMPTY, "tokens": ["escalate"], "user_tasks": ["escalate"]}
    scopes = {s.node_id: s.state for s in engine.get_instance(inst.id).scopes}
    assert scopes == {"work": ScopeState.TERMINATED, "nested": ScopeState.TERMINATED}
    assert sorted(x.node_id for x in engine.user_tasks(inst.id, state="cancelled")) == [
        "inner_review",
        "review",
    ]
    assert [x.node_id for x in engine.timers(inst.id, state="cancelled")] == ["nap"]
    assert [x.node_id for x in engine.incidents(inst.id, state="deleted")] == ["broken"]
    # the boundary path ran once
    assert types(engine, inst.id).count(("token_created", "too_slow")) == 1
    # The worker still holding the external task finds it gone (the REST API's 404),
    # and its late complete changes nothing.
    before = table_dump(engine)
    with pytest.raises(NotFound, match=f"External task with id {task.id} does not exist"):
        engine.complete_external_task(task.id, "w1", {"late": True}, now=at(62))
    assert table_dump(engine) == before


def _three_levels(engine: Engine) -> None:
    engine.deploy(
        Process("level3")
        .start("s3")
        .parallel("f3")
        .user_task("u3")
        .timer("t3", duration="PT5H")
        .end("e3")
        .end("e3b")
        .sequence("s3", "f3", "u3", "e3")
        .sequence("f3", "t3", "e3b")
    )
    engine.deploy(
        Process("level2")
        .start("s2")
        .parallel("f2")
        .service_task("x2", topic="level2")
        .call_activity("c2", "level3")
        .end("e2")
        .end("e2b")
        .sequence("s2", "f2", "x2", "e2")
        .sequence("f2", "c2", "e2b")
    )
    engine.deploy(
        Process("level1")
        .start("s1")
        .sub_process(
            "sp1",
            lambda b: (
                b.start("ss1")
                .call_activity("c1", "level2", times=2)
                .end("se1")
                .sequence("ss1", "c1", "se1")
            ),
        )
        .end("e1")
        .sequence("s1", "sp1", "e1")
    )
    engine.deploy(
        Process("root")
        .start("s0")
        .parallel("f0")
        .user_task("u0")
        .call_activity("c0", "level1")
        .boundary_timer("t0", "c0", duration="PT2H")
        .end("e0")
        .end("e0b")
        .end("e0c")
        .sequence("s0", "f0", "u0", "e0")
        .sequence("f0", "c0", "e0b")
        .sequence("t0", "e0c")
    )


def _tree(engine: Engine, instance_id: str) -> list[str]:
    out, todo = [], [instance_id]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(engine.get_instance(current).children)
    return out


def _assert_dead_below(engine: Engine, root_id: str, *, root_state: InstanceState) -> None:
    tree = _tree(engine, root_id)
    assert len(tree) == 1 + 1 + 2 + 2  # root, level1, 2 x level2, 2 x level3
    assert engine.get_instance(root_id).state is root_state
    for member in tree[1:]:
        assert engine.get_instance(member).state is InstanceState.TERMINATED, member
        assert nothing_live(engine, member) == EMPTY, member


def test_terminating_three_levels_of_call_activities_leaves_nothing_live(
    pg: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = pg
    _three_levels(engine)
    root = engine.start("root", now=at(0))
    assert len(_tree(engine, root.id)) == 6
    assert len(engine.external_tasks(topic="level2")) == 2
    engine.terminate(root.id, now=at(1))
    _assert_dead_below(engine, root.id, root_state=InstanceState.TERMINATED)
    assert nothing_live(engine, root.id) == EMPTY
    assert engine.external_tasks(topic="level2") == []
    assert engine.timers() == []


def test_an_interrupting_timer_on_a_call_activity_cancels_the_tree_below_it(
    pg: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = pg
    _three_levels(engine)
    root = engine.start("root", now=at(0))
    assert engine.fire_due_timers(now=at(121)) == 1
    _assert_dead_below(engine, root.id, root_state=InstanceState.ACTIVE)
    assert open_tasks(engine, root.id) == ["u0"]
    assert ("token_completed", "e0c") in types(engine, root.id)
