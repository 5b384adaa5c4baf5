"""Call activities: child instances linked both ways, bindings, mappings, errors, the
depth limit, termination (issue 10)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bpm import Engine, EngineConfig
from bpm.builder import Process
from bpm.errors import InvalidOperation
from bpm.handlers import HandlerRegistry
from bpm.runtime.states import InstanceState, TokenState
from tests.engine_helpers import QueueDispatcher, make_engine, table_dump
from tests.scopes_helpers import EMPTY, nothing_live, open_tasks, task_of, types


@pytest.fixture
def local(sqlite_database_url: str) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = make_engine(sqlite_database_url, HandlerRegistry(), EngineConfig(max_call_depth=4))
    eng.upgrade()
    yield eng, q
    eng.close()


@pytest.fixture
def both(database_url: str) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = make_engine(database_url, HandlerRegistry())
    yield eng, q
    eng.close()


def child(key: str = "child", marker: str = "v1") -> Process:
    """Waits in a user task, then doubles ``n`` (CEL-free: the task's completion sets it)."""
    return (
        Process(key, version_tag=marker)
        .start("cs")
        .user_task("work", name=marker)
        .end("ce")
        .sequence("cs", "work", "ce")
    )


def parent(**call: object) -> Process:
    return (
        Process("parent")
        .start("s")
        .call_activity("call", "child", **call)  # type: ignore[arg-type]
        .user_task("after")
        .end("e")
        .sequence("s", "call", "after", "e")
    )


def only_child(engine: Engine, instance_id: str) -> str:
    (found,) = engine.get_instance(instance_id).children
    return found


def test_a_call_activity_runs_the_child_and_maps_variables(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(child())
    engine.deploy(
        parent(inputs={"n": "amount"}, outputs={"result": "n * 2"}, inherit_business_key=True)
    )
    inst = engine.start("parent", {"amount": 21, "secret": "x"}, business_key="order-7")
    kid_id = only_child(engine, inst.id)
    kid = engine.get_instance(kid_id)
    assert (kid.parent_id, kid.root_id, kid.call_depth) == (inst.id, inst.id, 1)
    assert kid.variables == {"n": 21} and kid.business_key == "order-7"
    call = next(t for t in engine.get_instance(inst.id).tokens if t.node_id == "call")
    assert (call.state, call.blocked_id, kid.parent_token_id) == (
        TokenState.WAITING,
        kid_id,
        call.id,
    )
    engine.complete_user_task(task_of(engine, kid_id, "work"), {"extra": True})
    assert engine.get_instance(kid_id).state is InstanceState.COMPLETED
    done = engine.get_instance(inst.id)
    assert done.variables == {"amount": 21, "secret": "x", "result": 42}
    assert open_tasks(engine, inst.id) == ["after"]
    trail = types(engine, inst.id)
    assert ("call_started", "call") in trail and ("call_completed", "call") in trail


def test_all_variables_go_in_and_come_back_by_default(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(child())
    engine.deploy(parent())
    inst = engine.start("parent", {"amount": 1})
    kid_id = only_child(engine, inst.id)
    assert engine.get_instance(kid_id).variables == {"amount": 1}
    engine.complete_user_task(task_of(engine, kid_id, "work"), {"amount": 2, "new": "yes"})
    assert engine.get_instance(inst.id).variables == {"amount": 2, "new": "yes"}


def test_bindings_choose_the_version(local: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = local
    first = engine.create_deployment(
        parent(binding="deployment").build(), child(marker="v1").build()
    )
    engine.deploy(child(marker="v2"))
    engine.deploy(
        Process("by_version")
        .start("s")
        .call_activity("call", "child", binding="version", version=1)
        .end("e")
        .sequence("s", "call", "e")
    )
    engine.deploy(
        Process("by_tag")
        .start("s")
        .call_activity("call", "child", binding="versionTag", version="v2")
        .end("e")
        .sequence("s", "call", "e")
    )
    assert first.definitions[0].key == "parent"

    def called(key: str) -> str | None:
        inst = engine.start(key)
        kid = only_child(engine, inst.id)
        return engine.user_tasks(kid)[0].name

    assert called("parent") == "v1"  # deployed together with the caller
    assert called("by_version") == "v1"
    assert called("by_tag") == "v2"
    engine.deploy(parent())  # latest binding now
    assert called("parent") == "v2"


def test_a_missing_child_gets_an_incident_that_a_retry_resolves(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(parent())
    inst = engine.start("parent")
    (incident,) = engine.incidents(inst.id)
    assert incident.type == "failedCallActivity"
    assert "no process 'child' is deployed" in (incident.message or "")
    assert engine.get_instance(inst.id).children == ()
    engine.deploy(child())
    engine.retry_incident(incident.id)
    assert len(engine.get_instance(inst.id).children) == 1


def test_the_call_depth_limit_names_itself(local: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = local
    engine.deploy(
        Process("forever")
        .start("s")
        .call_activity("again", "forever")
        .end("e")
        .sequence("s", "again", "e")
    )
    inst = engine.start("forever")
    depth, current = 0, inst.id
    while engine.get_instance(current).children:
        current = engine.get_instance(current).children[0]
        depth += 1
    assert depth == 4  # EngineConfig(max_call_depth=4)
    (incident,) = engine.incidents(inst.id)  # visible from the root
    assert incident.instance_id == current
    assert "call depth limit (4)" in (incident.message or "")


def test_an_error_ending_the_child_is_thrown_at_the_call_activity(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("child")
        .start("cs")
        .parallel("fork")
        .user_task("waits")
        .end("boom", error_code="BOOM")
        .sequence("cs", "fork", "waits")
        .flow("fork", "boom")
    )
    engine.deploy(
        Process("parent")
        .start("s")
        .call_activity("call", "child")
        .boundary_error("failed", "call", error_code="BOOM")
        .user_task("after")
        .user_task("handle")
        .end("e")
        .end("e2")
        .sequence("s", "call", "after", "e")
        .sequence("failed", "handle", "e2")
    )
    inst = engine.start("parent")
    kid_id = only_child(engine, inst.id)
    assert engine.get_instance(kid_id).state is InstanceState.TERMINATED
    assert nothing_live(engine, kid_id) == EMPTY
    assert open_tasks(engine, inst.id) == ["handle"]
    assert engine.get_instance(inst.id).variables["error_code"] == "BOOM"


def test_a_childs_incident_is_visible_from_the_parent(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("child")
        .start("cs")
        .exclusive("pick")
        .end("ce")
        .sequence("cs", "pick")
        .flow("pick", "ce", condition="missing > 1")
    )
    engine.deploy(parent())
    inst = engine.start("parent")
    kid_id = only_child(engine, inst.id)
    (incident,) = engine.incidents(inst.id)
    assert incident.instance_id == kid_id and incident.node_id == "pick"
    assert engine.incidents(kid_id) == [incident]


def test_terminating_a_child_gives_its_caller_an_incident(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(child())
    engine.deploy(parent())
    inst = engine.start("parent")
    kid_id = only_child(engine, inst.id)
    engine.terminate(kid_id, reason="stuck")
    assert engine.get_instance(kid_id).state is InstanceState.TERMINATED
    (incident,) = [i for i in engine.incidents(inst.id) if i.instance_id == inst.id]
    assert incident.node_id == "call" and "was terminated (stuck)" in (incident.message or "")
    engine.retry_incident(incident.id)  # calls a fresh child
    assert len(engine.get_instance(inst.id).children) == 2


def test_a_multi_instance_call_activity_waits_for_every_child(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(child())
    engine.deploy(
        parent(
            for_each="orders",
            as_="order",
            inputs={"order": "order"},
            outputs={"done": "order"},
            collect="shipped",
            output="done",
        )
    )
    inst = engine.start("parent", {"orders": ["o1", "o2", "o3"]})
    kids = engine.get_instance(inst.id).children
    assert sorted(engine.get_instance(k).variables["order"] for k in kids) == ["o1", "o2", "o3"]
    for kid in reversed(kids):
        engine.complete_user_task(task_of(engine, kid, "work"))
    done = engine.get_instance(inst.id)
    assert done.variables["shipped"] == ["o1", "o2", "o3"]
    assert open_tasks(engine, inst.id) == ["after"]


def test_a_rejected_call_changes_nothing(local: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = local
    engine.deploy(child())
    engine.deploy(parent())
    inst = engine.start("parent")
    kid_id = only_child(engine, inst.id)
    engine.terminate(inst.id)
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="already terminated"):
        engine.terminate(kid_id)
    assert table_dump(engine) == before
