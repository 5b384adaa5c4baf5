"""Standard loops (issue 20, item 3; ``standardLoopCharacteristics``: ``loopCondition``,
``testBefore``, ``loopMaximum``) on tasks and sub-processes, on both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from bpm import Engine, InstanceState
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.kinds import model_to_bpmn
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.engine_helpers import drain, make_engine

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


class Counting:
    """An inline handler ``work`` that records the ``loopCounter`` it sees and counts."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.registry = HandlerRegistry()
        self.registry.register("work", self.work)

    def work(self, ctx: TaskContext) -> dict[str, Any]:
        self.seen.append(ctx.variables.get("loopCounter"))
        return {"count": int(ctx.variables.get("count") or 0) + 1}


def looping(**loop: Any) -> ProcessModel:
    return (
        Process("looping")
        .start("s")
        .service_task("w", handler="work", **loop)
        .user_task("after")
        .end("e")
        .sequence("s", "w", "after", "e")
        .build()
    )


def run(url: str, model: ProcessModel, **variables: Any) -> tuple[Engine, Counting, str]:
    counting = Counting()
    engine, q = make_engine(url, counting.registry)
    engine.deploy(model)
    inst = engine.start(model.key, variables, now=T0)
    drain(engine, q)
    return engine, counting, inst.id


def open_tasks(engine: Engine, instance_id: str) -> list[str]:
    return sorted(t.node_id for t in engine.user_tasks(instance_id))


def test_loops_while_the_condition_holds_tested_after(database_url: str) -> None:
    engine, counting, iid = run(database_url, looping(loop_while="count < 3"))
    assert counting.seen == [0, 1, 2]  # loopCounter: 0-based, local to each iteration
    assert engine.get_instance(iid).variables["count"] == 3
    assert "loopCounter" not in engine.get_instance(iid).variables
    assert open_tasks(engine, iid) == ["after"]
    ended = [e.payload for e in engine.history(iid) if e.type == "loop_ended"]
    assert ended == [{"iterations": 3, "by": "condition"}]


def test_tested_after_runs_once_even_when_false(database_url: str) -> None:
    _, counting, _ = run(database_url, looping(loop_while="count < 0"), count=5)
    assert counting.seen == [0]


def test_tested_before_may_run_none(database_url: str) -> None:
    engine, counting, iid = run(
        database_url, looping(loop_while="count < 0", test_before=True), count=5
    )
    assert counting.seen == []
    assert open_tasks(engine, iid) == ["after"]


def test_the_maximum_bounds_the_iterations(database_url: str) -> None:
    _, counting, _ = run(database_url, looping(loop_while="true", loop_maximum=2))
    assert counting.seen == [0, 1]
    _, counting, _ = run(database_url, looping(loop_maximum=4))
    assert counting.seen == [0, 1, 2, 3]
    _, counting, _ = run(database_url, looping(loop_maximum=0))
    assert counting.seen == []


def test_a_looping_sub_process_waits_in_each_iteration(engine: Engine) -> None:
    model = (
        Process("review")
        .start("s")
        .sub_process(
            "round",
            lambda b: b.start("rs").user_task("check").end("re").sequence("rs", "check", "re"),
            loop_while="!approved",
        )
        .end("e")
        .sequence("s", "round", "e")
        .build()
    )
    engine.deploy(model)
    inst = engine.start("review", {"approved": False}, now=T0)
    for approved in (False, False, True):
        (task,) = engine.user_tasks(inst.id, node_id="check")  # one iteration at a time
        engine.complete_user_task(task.id, {"approved": approved}, now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    iterations = [
        e.payload.get("loop_counter")
        for e in engine.history(inst.id)
        if e.type == "scope_entered" and e.payload.get("kind") == "inner_instance"
    ]
    assert iterations == [0, 1, 2]


def test_a_condition_that_fails_is_an_incident_on_the_activity(database_url: str) -> None:
    engine, counting, iid = run(database_url, looping(loop_while="count > missing"))
    assert counting.seen == [0]  # ran once (tested after), then the condition failed
    (incident,) = engine.incidents(iid)
    assert incident.node_id == "w" and "loop condition" in incident.message
    assert open_tasks(engine, iid) == []


@pytest.mark.parametrize(
    ("marker", "words"),
    [
        ("<bpmn:standardLoopCharacteristics />", "neither a loopCondition nor a loopMaximum"),
        ('<bpmn:standardLoopCharacteristics loopMaximum="-1" />', "not a whole number"),
        ('<bpmn:standardLoopCharacteristics loopMaximum="many" />', "not a whole number"),
        (
            "<bpmn:standardLoopCharacteristics><bpmn:loopCondition>count &lt;</bpmn:loopCondition>"
            "</bpmn:standardLoopCharacteristics>",
            "loop condition",
        ),
    ],
)
def test_bad_loops_are_refused_naming_the_activity(engine: Engine, marker: str, words: str) -> None:
    xml = model_to_bpmn(looping(loop_maximum=1)).replace(
        '<bpmn:standardLoopCharacteristics loopMaximum="1" />', marker
    )
    assert marker in xml
    before = len(engine.definitions())
    with pytest.raises(DeploymentError) as caught:
        engine.deploy(xml)
    assert "'w'" in str(caught.value) and words in str(caught.value), str(caught.value)
    assert len(engine.definitions()) == before


def test_the_builder_refuses_a_loop_that_never_ends_and_loop_with_multi_instance() -> None:
    with pytest.raises(DeploymentError, match=r"'w'.*neither a loopCondition"):
        looping(test_before=True)
    with pytest.raises(DeploymentError, match="standard loop and multi-instance"):
        looping(loop_maximum=2, times=2)


def test_round_trip_builder_json_drawing_parse() -> None:
    model = looping(loop_while="count < 3", test_before=True, loop_maximum=5)
    stored = ProcessModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert stored == model
    loop = stored.nodes["w"].loop  # type: ignore[attr-defined]
    assert loop == n.StandardLoop(condition="count < 3", test_before=True, maximum=5)
    again = parse_bpmn(model_to_bpmn(stored))
    assert again.nodes["w"].loop == loop  # type: ignore[attr-defined]
    plain = looping()
    assert ProcessModel.from_dict(plain.to_dict()).checksum() == plain.checksum()
