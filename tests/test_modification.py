"""Process instance modification (issue 22, item 2): start and cancel activities of a
running instance in one transaction, as Camunda 7's modification."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.engine.modification import (
    Cancel,
    ModificationError,
    StartAfter,
    StartBefore,
    StartTransition,
)
from bpm.errors import NotFound
from bpm.handlers import HandlerRegistry
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import InstanceState, ScopeKind, ScopeState
from tests.engine_helpers import QueueDispatcher, drain, table_dump
from tests.scopes_helpers import T0, engine_on, live_nodes, open_tasks, task_of


@pytest.fixture
def registry() -> HandlerRegistry:
    reg = HandlerRegistry()
    reg.register("ok", lambda ctx: {"ok": True})
    return reg


@pytest.fixture
def both(database_url: str, registry: HandlerRegistry) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(database_url, registry)
    eng.upgrade()
    yield eng, q
    eng.close()


def line(engine: Engine) -> None:
    """s -> a (user) -> sub[ is -> look (user) -> ie ] -> b (user) -> e"""
    engine.deploy(
        Process("line")
        .start("s")
        .user_task("a")
        .sub_process(
            "sub",
            lambda b: b.start("is").user_task("look").end("ie").sequence("is", "look", "ie"),
        )
        .user_task("b")
        .end("e")
        .sequence("s", "a", "sub", "b", "e")
    )


def test_a_token_moves_and_the_trail_names_who_did_it(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    line(engine)
    inst = engine.start("line")
    a_task = task_of(engine, inst.id, "a")
    engine.modify(
        inst.id,
        [StartBefore("b", variables={"moved": True}), Cancel(activity_id="a")],
        annotation="skip the review",
        by="ops-key",
    )
    assert open_tasks(engine, inst.id) == ["b"]
    assert engine.get_instance(inst.id).variables == {"moved": True}
    gone = engine.user_tasks(inst.id, state=None)
    assert [t.state.value for t in gone if t.id == a_task] == ["cancelled"]
    (event,) = [e for e in engine.history(inst.id) if e.type == "instance_modified"]
    assert event.payload["by"] == "ops-key"
    assert event.payload["annotation"] == "skip the review"
    assert [i["type"] for i in event.payload["instructions"]] == ["startBeforeActivity", "cancel"]
    engine.complete_user_task(task_of(engine, inst.id, "b"))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_starting_inside_a_sub_process_creates_it(both: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = both
    line(engine)
    inst = engine.start("line")
    engine.modify(inst.id, [StartBefore("look"), Cancel(activity_id="a")])
    tree = engine.activity_instances(inst.id)
    (sub,) = tree.child_activity_instances
    assert (sub.activity_id, [c.activity_id for c in sub.child_activity_instances]) == (
        "sub",
        ["look"],
    )
    # the created sub-process completes normally and the flow after it is taken
    engine.complete_user_task(task_of(engine, inst.id, "look"))
    assert open_tasks(engine, inst.id) == ["b"]


def test_a_second_start_in_the_same_sub_process_is_ambiguous_without_an_ancestor(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    line(engine)
    inst = engine.start("line")
    engine.modify(inst.id, [StartBefore("sub"), StartBefore("sub")])
    before = table_dump(engine)
    with pytest.raises(ModificationError, match="2 active instances"):
        engine.modify(inst.id, [StartBefore("look")])
    assert table_dump(engine) == before
    tree = engine.activity_instances(inst.id)
    first = next(c for c in tree.child_activity_instances if c.activity_id == "sub")
    engine.modify(inst.id, [StartBefore("look", ancestor=first.id)])
    again = engine.activity_instances(inst.id).find(first.id)
    assert again is not None and len(again.child_activity_instances) == 2


def test_cancelling_the_last_token_in_a_sub_process_cancels_it_and_takes_no_flow(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    line(engine)
    inst = engine.start("line")
    engine.modify(inst.id, [StartBefore("look")])  # now a and sub/look
    engine.modify(inst.id, [Cancel(activity_id="look")])
    assert live_nodes(engine, inst.id) == ["a"]
    (scope,) = [s for s in engine.get_instance(inst.id).scopes if s.kind is ScopeKind.SUBPROCESS]
    assert scope.state is ScopeState.TERMINATED
    assert open_tasks(engine, inst.id) == ["a"]  # b was not started
    # the last one: the instance ends, terminated
    engine.modify(inst.id, [Cancel(activity_id="a")])
    assert engine.get_instance(inst.id).state is InstanceState.TERMINATED


def test_cancel_then_start_keeps_the_instance(both: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = both
    line(engine)
    inst = engine.start("line")
    engine.modify(inst.id, [Cancel(activity_id="a"), StartAfter("a")])
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
    assert open_tasks(engine, inst.id) == ["look"]


def test_a_bad_instruction_changes_nothing(both: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = both
    line(engine)
    inst = engine.start("line")
    before = table_dump(engine)
    bad = [
        [StartBefore("b"), StartBefore("nowhere")],
        [Cancel(activity_id="a"), Cancel(activity_id="b")],  # no token at b
        [StartBefore("b"), Cancel(activity_instance_id="a:missing")],
        [StartTransition("no-flow")],
        [StartBefore("b", variables={"x": "y" * 300_000})],
        [Cancel()],
        [],
    ]
    for instructions in bad:
        with pytest.raises(ModificationError):
            engine.modify(inst.id, instructions)
        assert table_dump(engine) == before, instructions


def test_a_cancelled_activity_takes_its_timers_and_external_task_along(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("ext")
        .start("s")
        .service_task("work", topic="t")
        .boundary_timer("late", "work", duration=timedelta(hours=1))
        .end("e")
        .end("late_end")
        .sequence("s", "work", "e")
        .sequence("late", "late_end")
    )
    inst = engine.start("ext", now=T0)
    (task,) = engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest("t", 60_000),)), now=T0)
    tree = engine.activity_instances(inst.id)
    (work,) = tree.child_activity_instances
    engine.modify(inst.id, [Cancel(activity_instance_id=work.id)], now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.TERMINATED
    assert [t.state.value for t in engine.timers(inst.id, state=None)] == ["cancelled"]
    with pytest.raises(NotFound):
        engine.complete_external_task(task.id, "w", now=T0)


def test_a_cancelled_inner_instance_lets_the_others_complete_the_body(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("mi")
        .start("s")
        .user_task("each", for_each="items", as_="item")
        .user_task("after")
        .end("e")
        .sequence("s", "each", "after", "e")
    )
    inst = engine.start("mi", {"items": [1, 2, 3]})
    tree = engine.activity_instances(inst.id)
    (body,) = tree.child_activity_instances
    first = body.child_activity_instances[0]
    engine.modify(inst.id, [Cancel(activity_instance_id=first.id)])
    assert open_tasks(engine, inst.id) == ["each", "each"]
    for task in engine.user_tasks(inst.id):
        engine.complete_user_task(task.id)
    assert open_tasks(engine, inst.id) == ["after"]


def test_start_adds_an_inner_instance_and_a_body_starts_whole(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("mi2")
        .start("s")
        .user_task("each", for_each="items", as_="item")
        .end("e")
        .sequence("s", "each", "e")
    )
    inst = engine.start("mi2", {"items": [1, 2]})
    engine.modify(inst.id, [StartBefore("each")])
    assert open_tasks(engine, inst.id) == ["each"] * 3
    engine.modify(inst.id, [StartBefore("each#multiInstanceBody")])
    bodies = engine.activity_instances(inst.id).child_activity_instances
    assert sorted(len(b.child_activity_instances) for b in bodies) == [2, 3]


def test_a_step_waiting_for_a_worker_is_cancelled_as_a_transition_instance(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(
        Process("inline")
        .start("s")
        .service_task("step", handler="ok")
        .user_task("after")
        .end("e")
        .sequence("s", "step", "after", "e")
    )
    inst = engine.start("inline")
    (tr,) = engine.activity_instances(inst.id).child_transition_instances
    engine.modify(inst.id, [Cancel(transition_instance_id=tr.id), StartBefore("after")])
    drain(engine, q)  # the published step finds its token gone: nothing runs
    assert engine.get_instance(inst.id).variables == {}
    assert open_tasks(engine, inst.id) == ["after"]


def with_event_sub_processes(engine: Engine) -> None:
    engine.deploy(
        Process("esp")
        .start("s")
        .user_task("a")
        .end("e")
        .sequence("s", "a", "e")
        .event_sub_process(
            "on_fail",
            lambda x: (
                x.start("catch", error=True)
                .user_task("fix")
                .end("fixed")
                .sequence("catch", "fix", "fixed")
            ),
        )
        .event_sub_process(
            "reminder",
            lambda x: (
                x.start("tick", duration=timedelta(hours=1), interrupting=False)
                .user_task("remind")
                .end("reminded")
                .sequence("tick", "remind", "reminded")
            ),
        )
    )


def test_starting_inside_an_event_sub_process_and_cancelling_it_again(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    with_event_sub_processes(engine)
    inst = engine.start("esp", now=T0)
    tree = engine.activity_instances(inst.id)
    # the timer start's listener is no activity instance
    assert [c.activity_id for c in tree.child_activity_instances] == ["a"]
    engine.modify(inst.id, [StartBefore("fix")], now=T0)
    tree = engine.activity_instances(inst.id)
    esp = next(c for c in tree.child_activity_instances if c.activity_id == "on_fail")
    assert esp.activity_type == "eventSubProcess"
    assert [c.activity_id for c in esp.child_activity_instances] == ["fix"]
    engine.modify(inst.id, [Cancel(activity_instance_id=esp.id)], now=T0)
    assert open_tasks(engine, inst.id) == ["a"]
    assert [c.activity_id for c in engine.activity_instances(inst.id).child_activity_instances] == [
        "a"
    ]
    # the last real token: the listener goes with the instance
    engine.modify(inst.id, [Cancel(activity_id="a")], now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.TERMINATED
    assert {t.state.value for t in engine.timers(inst.id, state=None)} == {"cancelled"}


def test_skip_io_mappings_leaves_the_inputs_out(both: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = both
    engine.deploy(
        Process("io")
        .start("s")
        .user_task("a")
        .sub_process(
            "sub",
            lambda b: b.start("is").user_task("look").end("ie").sequence("is", "look", "ie"),
            inputs={"limit": "base * 2"},
        )
        .end("e")
        .sequence("s", "a", "sub", "e")
    )
    inst = engine.start("io", {"base": 2})
    engine.modify(inst.id, [StartBefore("look")])
    scopes = [s for s in engine.get_instance(inst.id).scopes if s.kind is ScopeKind.SUBPROCESS]
    assert [s.variables for s in scopes] == [{"limit": 4}]
    other = engine.start("io", {"base": 2})
    engine.modify(other.id, [StartBefore("look")], skip_io_mappings=True)
    scopes = [s for s in engine.get_instance(other.id).scopes if s.kind is ScopeKind.SUBPROCESS]
    assert [s.variables for s in scopes] == [{}]


def test_a_suspended_instance_can_be_modified_an_ended_one_not(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    line(engine)
    inst = engine.start("line")
    engine.suspend(inst.id)
    engine.modify(inst.id, [StartAfter("a"), Cancel(activity_id="a")])
    assert open_tasks(engine, inst.id) == ["look"]
    assert engine.get_instance(inst.id).state is InstanceState.SUSPENDED
    engine.terminate(inst.id)
    before = table_dump(engine)
    with pytest.raises(ModificationError, match="terminated"):
        engine.modify(inst.id, [StartBefore("a")])
    assert table_dump(engine) == before


def test_leaving_a_parallel_join_unreachable_is_refused(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("pj")
        .start("s")
        .parallel("fork")
        .user_task("a")
        .sub_process(
            "sub",
            lambda x: x.start("bs").user_task("b").end("be").sequence("bs", "b", "be"),
        )
        .parallel("join")
        .user_task("after")
        .end("e")
        .sequence("s", "fork")
        .sequence("fork", "a", "join")
        .sequence("fork", "sub", "join")
        .sequence("join", "after", "e")
    )
    inst = engine.start("pj")
    engine.complete_user_task(task_of(engine, inst.id, "a"))  # one token waits at the join
    before = table_dump(engine)
    with pytest.raises(ModificationError, match="parallel join 'join' waiting for ever"):
        engine.modify(inst.id, [Cancel(activity_id="b")])
    assert table_dump(engine) == before
    # moving the token inside the sub-process is fine: it can still reach the join
    engine.modify(inst.id, [StartBefore("be"), Cancel(activity_id="b")])
    assert open_tasks(engine, inst.id) == ["after"]


def test_a_started_step_runs_and_a_cancelled_call_activity_ends_its_child(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(
        Process("child").start("cs").user_task("inside").end("ce").sequence("cs", "inside", "ce")
    )
    engine.deploy(
        Process("parent")
        .start("s")
        .call_activity("call", "child")
        .service_task("step", handler="ok")
        .user_task("after")
        .end("e")
        .sequence("s", "call", "step", "after", "e")
    )
    inst = engine.start("parent")
    (child_id,) = engine.get_instance(inst.id).children
    (call,) = engine.activity_instances(inst.id).child_activity_instances
    assert call.activity_type == "callActivity"
    engine.modify(inst.id, [StartBefore("step"), Cancel(activity_instance_id=call.id)])
    assert engine.get_instance(child_id).state is InstanceState.TERMINATED
    drain(engine, q)  # the started step was published and runs
    assert engine.get_instance(inst.id).variables == {"ok": True}
    assert open_tasks(engine, inst.id) == ["after"]


def test_starting_inside_an_inner_instance_of_a_multi_instance_sub_process(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("misub")
        .start("s")
        .sub_process(
            "per",
            lambda b: (
                b.start("ps")
                .user_task("first")
                .user_task("second")
                .end("pe")
                .sequence("ps", "first", "second", "pe")
            ),
            for_each="items",
            as_="item",
        )
        .end("e")
        .sequence("s", "per", "e")
    )
    inst = engine.start("misub", {"items": [1, 2]})
    before = table_dump(engine)
    with pytest.raises(ModificationError, match="2 active instances"):
        engine.modify(inst.id, [StartBefore("second")])
    assert table_dump(engine) == before
    (body,) = engine.activity_instances(inst.id).child_activity_instances
    assert body.activity_id == "per#multiInstanceBody"
    inner = body.child_activity_instances[1]
    engine.modify(
        inst.id,
        [StartBefore("second", ancestor=inner.id), Cancel(activity_id="first", current_only=True)],
    )
    assert open_tasks(engine, inst.id) == ["second"]  # the other inner instance was cancelled
    engine.complete_user_task(task_of(engine, inst.id, "second"))
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
