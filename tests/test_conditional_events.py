"""Conditional events (issue 20, item 3; ``bpm.kinds.conditional``), on both backends.

An intermediate catch, a boundary (interrupting or not) and an event sub-process start
(interrupting or not) fire when their condition holds: when the wait opens, or on a
variable change their scope sees (API, task completion, message correlation), filtered by
``camunda:variableName`` / ``camunda:variableEvents``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bpm import Engine, InstanceState
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.kinds import activity_type, model_to_bpmn
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.test_kinds import test_json_then_drawing_then_parse_gives_the_same_kinds as round_trip

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def open_tasks(engine: Engine, instance_id: str) -> list[str]:
    return sorted(t.node_id for t in engine.user_tasks(instance_id))


def complete(engine: Engine, instance_id: str, node_id: str, **variables: object) -> None:
    (task,) = engine.user_tasks(instance_id, node_id=node_id)
    engine.complete_user_task(task.id, dict(variables), now=T0)


def satisfied(engine: Engine, instance_id: str, node_id: str) -> int:
    return sum(
        1
        for e in engine.history(instance_id)
        if e.type == "condition_satisfied" and e.node_id == node_id
    )


def catch_model(condition: str = "x > 5", **options: str) -> Process:
    """start -> before (user task) -> wait (conditional catch) -> after (user task) -> end."""
    p = Process("catch").start("s").user_task("before")
    p = p.wait_condition("wait", condition, **options).user_task("after").end("e")
    return p.sequence("s", "before", "wait", "after", "e")


def boundary_model(*, interrupting: bool = True, condition: str = "x > 5") -> Process:
    """start -> work (user task, conditional boundary 'b' -> fixed) -> end."""
    p = Process("boundary").start("s").user_task("work").end("e")
    p = p.boundary_condition("b", "work", condition, interrupting=interrupting)
    p = p.user_task("fixed").end("e2")
    return p.sequence("s", "work", "e").sequence("b", "fixed", "e2")


def esp_model(*, interrupting: bool = True, condition: str = "x > 5") -> Process:
    """start -> work (user task) -> end; event sub-process 'esp' (conditional start)."""
    p = Process("esp").start("s").user_task("work").end("e").sequence("s", "work", "e")

    def body(sub: Process) -> object:
        sub = sub.condition_start("cs", condition, interrupting=interrupting)
        return sub.user_task("handle").end("he").sequence("cs", "handle", "he")

    return p.event_sub_process("esp", body)


# -- intermediate catch -------------------------------------------------------------------


def test_catch_waits_until_a_change_makes_it_true(engine: Engine) -> None:
    engine.deploy(catch_model().build())
    inst = engine.start("catch", {"x": 1}, now=T0)
    complete(engine, inst.id, "before")
    assert open_tasks(engine, inst.id) == []
    engine.set_variables(inst.id, {"x": 3}, now=T0)  # still false
    assert open_tasks(engine, inst.id) == [] and satisfied(engine, inst.id, "wait") == 0
    engine.set_variables(inst.id, {"x": 6}, now=T0)
    assert open_tasks(engine, inst.id) == ["after"]
    assert satisfied(engine, inst.id, "wait") == 1
    engine.set_variables(inst.id, {"x": 7}, now=T0)  # the catch is passed: nothing more
    assert open_tasks(engine, inst.id) == ["after"]
    assert satisfied(engine, inst.id, "wait") == 1


def test_catch_already_true_passes_through(engine: Engine) -> None:
    engine.deploy(catch_model().build())
    inst = engine.start("catch", {"x": 10}, now=T0)
    complete(engine, inst.id, "before")
    assert open_tasks(engine, inst.id) == ["after"]


def test_task_completion_variables_trigger_the_catch(engine: Engine) -> None:
    engine.deploy(catch_model().build())
    inst = engine.start("catch", {"x": 1}, now=T0)
    complete(engine, inst.id, "before", x=9)  # written, then the wait opens: true at once
    assert open_tasks(engine, inst.id) == ["after"]


def test_variable_name_filters_changes(engine: Engine) -> None:
    engine.deploy(catch_model("x > 5 || y > 5", variable_name="x").build())
    inst = engine.start("catch", {"x": 1, "y": 1}, now=T0)
    complete(engine, inst.id, "before")
    engine.set_variables(inst.id, {"y": 9}, now=T0)  # y is not the variable it watches
    assert open_tasks(engine, inst.id) == []
    engine.set_variables(inst.id, {"x": 1}, now=T0)  # x changed: true (y > 5)
    assert open_tasks(engine, inst.id) == ["after"]


def test_variable_events_filter_create_update_delete(engine: Engine) -> None:
    engine.deploy(catch_model("true", variable_events="delete").build())
    inst = engine.start("catch", {"x": 1}, now=T0)
    # the condition is true as the wait opens: an opened wait ignores the filters
    complete(engine, inst.id, "before")
    assert open_tasks(engine, inst.id) == ["after"]

    engine.deploy(catch_model("x == 2", variable_events="delete").build())
    inst = engine.start("catch", {"x": 1, "gone": 1, "also": 1}, now=T0)
    complete(engine, inst.id, "before")
    assert open_tasks(engine, inst.id) == []
    engine.set_variables(inst.id, {"x": 2}, now=T0)  # an update: filtered out
    engine.set_variables(inst.id, {"other": 1}, now=T0)  # a create: filtered out
    assert open_tasks(engine, inst.id) == [] and satisfied(engine, inst.id, "wait") == 0
    engine.modify_variables(inst.id, None, ["gone"], now=T0)  # the delete
    assert open_tasks(engine, inst.id) == ["after"]


def test_create_is_not_update(engine: Engine) -> None:
    engine.deploy(catch_model("y >= 1", variable_events="update").build())
    inst = engine.start("catch", {"x": 1}, now=T0)
    complete(engine, inst.id, "before")
    engine.set_variables(inst.id, {"y": 1}, now=T0)  # created: not counted
    assert open_tasks(engine, inst.id) == []
    engine.set_variables(inst.id, {"y": 2}, now=T0)  # updated
    assert open_tasks(engine, inst.id) == ["after"]


def test_message_correlation_variables_trigger(engine: Engine) -> None:
    p = Process("msg").start("s").parallel("fork")
    p = p.receive_message("m", "go").end("e1")
    p = p.wait_condition("wait", "ok == true").user_task("after").end("e2")
    p = p.sequence("s", "fork").sequence("fork", "m", "e1").sequence("fork", "wait", "after", "e2")
    engine.deploy(p.build())
    inst = engine.start("msg", {"ok": False}, now=T0)
    assert open_tasks(engine, inst.id) == []
    engine.correlate("go", {"ok": True}, instance_id=inst.id, now=T0)
    assert open_tasks(engine, inst.id) == ["after"]


# -- boundary -----------------------------------------------------------------------------


def test_interrupting_boundary_cancels_the_task(engine: Engine) -> None:
    engine.deploy(boundary_model().build())
    inst = engine.start("boundary", {"x": 1}, now=T0)
    assert open_tasks(engine, inst.id) == ["work"]
    engine.set_variables(inst.id, {"x": 6}, now=T0)
    assert open_tasks(engine, inst.id) == ["fixed"]
    cancelled = engine.user_tasks(inst.id, state="cancelled")
    assert [t.node_id for t in cancelled] == ["work"]
    complete(engine, inst.id, "fixed")
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_interrupting_boundary_true_on_entry_fires_at_once(engine: Engine) -> None:
    engine.deploy(boundary_model().build())
    inst = engine.start("boundary", {"x": 10}, now=T0)
    assert open_tasks(engine, inst.id) == ["fixed"]


def test_non_interrupting_boundary_fires_once_per_satisfying_change(engine: Engine) -> None:
    engine.deploy(boundary_model(interrupting=False).build())
    inst = engine.start("boundary", {"x": 1}, now=T0)
    engine.set_variables(inst.id, {"x": 6}, now=T0)
    assert open_tasks(engine, inst.id) == ["fixed", "work"]
    engine.set_variables(inst.id, {"x": 2}, now=T0)  # false: nothing
    engine.set_variables(inst.id, {"x": 7}, now=T0)
    engine.set_variables(inst.id, {"x": 8}, now=T0)  # still true: a new change, fires again
    assert open_tasks(engine, inst.id) == ["fixed", "fixed", "fixed", "work"]
    assert satisfied(engine, inst.id, "b") == 3
    complete(engine, inst.id, "work")  # leaving the activity closes the wait
    engine.set_variables(inst.id, {"x": 9}, now=T0)
    assert satisfied(engine, inst.id, "b") == 3


def test_non_interrupting_boundary_true_on_entry(engine: Engine) -> None:
    engine.deploy(boundary_model(interrupting=False).build())
    inst = engine.start("boundary", {"x": 10}, now=T0)
    assert open_tasks(engine, inst.id) == ["fixed", "work"]
    assert satisfied(engine, inst.id, "b") == 1


# -- event sub-process start --------------------------------------------------------------


def test_interrupting_event_sub_process(engine: Engine) -> None:
    engine.deploy(esp_model().build())
    inst = engine.start("esp", {"x": 1}, now=T0)
    assert open_tasks(engine, inst.id) == ["work"]
    engine.set_variables(inst.id, {"x": 6}, now=T0)
    assert open_tasks(engine, inst.id) == ["handle"]
    complete(engine, inst.id, "handle")
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_interrupting_event_sub_process_true_at_start(engine: Engine) -> None:
    engine.deploy(esp_model().build())
    inst = engine.start("esp", {"x": 6}, now=T0)
    assert open_tasks(engine, inst.id) == ["handle"]


def test_non_interrupting_event_sub_process(engine: Engine) -> None:
    engine.deploy(esp_model(interrupting=False).build())
    inst = engine.start("esp", {"x": 1}, now=T0)
    engine.set_variables(inst.id, {"x": 6}, now=T0)
    engine.set_variables(inst.id, {"x": 7}, now=T0)
    assert open_tasks(engine, inst.id) == ["handle", "handle", "work"]
    complete(engine, inst.id, "work")
    complete_all = [t for t in engine.user_tasks(inst.id) if t.node_id == "handle"]
    for task in complete_all:
        engine.complete_user_task(task.id, now=T0)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


# -- deploy: bad models -------------------------------------------------------------------

_BAD = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="bad" isExecutable="true">
    <startEvent id="s"/>
    <intermediateCatchEvent id="cond_wait">
      <conditionalEventDefinition {attrs}>{condition}</conditionalEventDefinition>
    </intermediateCatchEvent>
    <endEvent id="e"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="cond_wait"/>
    <sequenceFlow id="f2" sourceRef="cond_wait" targetRef="e"/>
  </process>
</definitions>
"""


@pytest.mark.parametrize(
    ("condition", "attrs", "says"),
    [
        ("", "", "has no condition"),
        ('<condition xsi:type="tFormalExpression">  </condition>', "", "has no condition"),
        ('<condition xsi:type="tFormalExpression">${x &gt;}</condition>', "", "condition of"),
        (
            '<condition xsi:type="tFormalExpression">${x}</condition>',
            'camunda:variableEvents="create, changed"',
            "changed",
        ),
    ],
)
def test_bad_conditional_events_are_refused_naming_the_element(
    engine: Engine, condition: str, attrs: str, says: str
) -> None:
    before = engine.definitions()
    with pytest.raises(DeploymentError) as caught:
        engine.deploy(_BAD.format(condition=condition, attrs=attrs))
    text = str(caught.value)
    assert "cond_wait" in text and says in text
    assert engine.definitions() == before  # nothing deployed


def test_a_conditional_start_of_the_process_starts_instances_when_evaluated(
    engine: Engine,
) -> None:
    p = Process("top").condition_start("cs", "x > 5").user_task("t").end("e")
    engine.deploy(p.sequence("cs", "t", "e"))
    assert engine.evaluate_conditions({"x": 1}, now=T0) == []
    (inst,) = engine.evaluate_conditions({"x": 9}, business_key="k", now=T0)
    assert inst.business_key == "k" and engine.get_instance(inst.id).variables == {"x": 9}
    assert open_tasks(engine, inst.id) == ["t"]


def test_builder_refuses_an_empty_condition() -> None:
    with pytest.raises(DeploymentError, match="'wait' has no condition"):
        catch_model("  ").build()


# -- model: JSON and diagram --------------------------------------------------------------


def _all_positions() -> ProcessModel:
    p = (
        Process("all")
        .start("s")
        .user_task("work")
        .wait_condition("wait", "${x > 5}", variable_name="x", variable_events="create,update")
    )
    p = p.boundary_condition("b", "work", "y == 1", interrupting=False).end("e").end("e2")
    p = p.sequence("s", "work", "wait", "e").sequence("b", "e2")

    def body(sub: Process) -> object:
        return sub.condition_start("cs", "z", interrupting=False).end("he").sequence("cs", "he")

    return p.event_sub_process("esp", body).build()


def test_round_trip_builder_json_diagram_parse() -> None:
    model = _all_positions()
    round_trip(model)  # the registry's own round trip (tests/test_kinds.py)
    parsed = parse_bpmn(model_to_bpmn(ProcessModel.from_dict(model.to_dict())))
    wait, b, cs = parsed.nodes["wait"], parsed.nodes["b"], parsed.nodes["cs"]
    assert isinstance(wait, n.CatchEvent) and isinstance(b, n.BoundaryEvent)
    assert isinstance(cs, n.StartEvent) and not cs.interrupting and not b.cancel_activity
    assert wait.event == n.EventRef(
        n.EventKind.CONDITIONAL, "x", condition="x > 5", variable_events=("create", "update")
    )
    assert [activity_type(parsed.nodes[x]) for x in ("wait", "b", "cs")] == [
        "intermediateConditional",
        "boundaryConditional",
        "conditionalStartEvent",
    ]


def test_models_without_conditional_events_keep_their_json() -> None:
    p = Process("plain").start("s").receive_message("m", "go").end("e").sequence("s", "m", "e")
    event = p.build().to_dict()["nodes"]
    found = next(x for x in event if x["id"] == "m")["event"]
    assert set(found) == {"kind", "name", "correlation_key"}
