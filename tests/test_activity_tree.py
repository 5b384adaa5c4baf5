"""The activity instance tree (issue 22, item 1): Camunda's shape over tokens and scopes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.engine import ActivityInstance
from bpm.errors import NotFound
from bpm.handlers import HandlerRegistry
from tests.engine_helpers import QueueDispatcher, drain
from tests.scopes_helpers import engine_on


@pytest.fixture
def registry() -> HandlerRegistry:
    reg = HandlerRegistry()
    reg.register("ok", lambda ctx: {})
    reg.register("fail", lambda ctx: (_ for _ in ()).throw(RuntimeError("nope")))
    return reg


@pytest.fixture
def both(database_url: str, registry: HandlerRegistry) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(database_url, registry)
    eng.upgrade()
    yield eng, q
    eng.close()


def shape(ai: ActivityInstance) -> Any:
    """(activityId, type, children, transitions) of a tree, ids left out."""
    return (
        ai.activity_id if ai.parent_activity_instance_id else "<root>",
        ai.activity_type,
        sorted(shape(c) for c in ai.child_activity_instances),
        sorted((t.activity_id, t.activity_type) for t in ai.child_transition_instances),
    )


def nested(engine: Engine) -> None:
    engine.deploy(
        Process("tree", name="Tree")
        .start("s")
        .parallel("fork")
        .user_task("approve", name="Approve")
        .sub_process(
            "inner",
            lambda b: b.start("is").user_task("look").end("ie").sequence("is", "look", "ie"),
        )
        .user_task("each", for_each="items", as_="item")
        .service_task("step", handler="ok")
        .parallel("join")
        .end("e")
        .sequence("s", "fork")
        .sequence("fork", "approve", "join")
        .sequence("fork", "inner", "join")
        .sequence("fork", "each", "join")
        .sequence("fork", "step", "join")
        .sequence("join", "e")
    )


def test_the_tree_nests_scopes_bodies_and_transitions(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    nested(engine)
    inst = engine.start("tree", {"items": [1, 2]})
    tree = engine.activity_instances(inst.id)
    assert tree.id == inst.id and tree.activity_id == inst.definition_id
    assert tree.activity_name == "Tree" and tree.execution_ids == (inst.id,)
    assert shape(tree) == (
        "<root>",
        "processDefinition",
        [
            ("approve", "userTask", [], []),
            (
                "each#multiInstanceBody",
                "multiInstanceBody",
                [("each", "userTask", [], []), ("each", "userTask", [], [])],
                [],
            ),
            ("inner", "subProcess", [("look", "userTask", [], [])], []),
        ],
        [("step", "serviceTask")],
    )
    (approve,) = [c for c in tree.child_activity_instances if c.activity_id == "approve"]
    assert approve.activity_name == "Approve" and approve.parent_activity_instance_id == inst.id
    assert approve.id == f"approve:{approve.execution_ids[0]}"
    (body,) = [c for c in tree.child_activity_instances if c.activity_type == "multiInstanceBody"]
    assert {c.parent_activity_instance_id for c in body.child_activity_instances} == {body.id}
    # stable: the same ids on the next call
    assert engine.activity_instances(inst.id) == tree


def test_an_incident_shows_on_its_transition_instance(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(
        Process("bad")
        .start("s")
        .service_task("boom", handler="fail", retry="none()")
        .end("e")
        .sequence("s", "boom", "e")
    )
    inst = engine.start("bad")
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    (tr,) = engine.activity_instances(inst.id).child_transition_instances
    assert tr.incident_ids == (incident.id,)
    assert tr.incidents[0].parent_activity_instance_id == tr.id


def test_an_ended_instance_has_only_its_root_and_an_unknown_one_none(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(
        Process("short").start("s").service_task("a", handler="ok").end("e").sequence("s", "a", "e")
    )
    inst = engine.start("short")
    drain(engine, q)
    tree = engine.activity_instances(inst.id)
    assert tree.child_activity_instances == () and tree.child_transition_instances == ()
    with pytest.raises(NotFound):
        engine.activity_instances("nope")
