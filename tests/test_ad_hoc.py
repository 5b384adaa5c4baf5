"""Ad-hoc sub-processes (issue 20, item 3): which inner activities start (all without
incoming flows, as SpiffWorkflow readies them; or Camunda 8's activeElementsCollection),
ordering Parallel/Sequential, completionCondition, cancelRemainingInstances; on both
backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bpm import Engine, InstanceState
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.kinds import model_to_bpmn
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.test_kinds import test_json_then_drawing_then_parse_gives_the_same_kinds as same_kinds

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def body(b: Process) -> Process:
    """a, b, c without incoming flows (c leads on to d); undo_a: a compensation handler."""
    return (
        b.user_task("a")
        .user_task("b")
        .user_task("c")
        .user_task("d")
        .sequence("c", "d")
        .boundary_compensation("a_undo", "a", handler="undo_a")
        .user_task("undo_a", for_compensation=True)
    )


def checklist(key: str = "checklist", **options: Any) -> ProcessModel:
    return (
        Process(key)
        .start("s")
        .ad_hoc("adhoc", body, **options)
        .user_task("after")
        .end("e")
        .sequence("s", "adhoc", "after", "e")
        .build()
    )


def open_tasks(engine: Engine, instance_id: str) -> list[str]:
    return sorted(t.node_id for t in engine.user_tasks(instance_id))


def complete(engine: Engine, instance_id: str, node_id: str, **variables: object) -> None:
    (task,) = engine.user_tasks(instance_id, node_id=node_id)
    engine.complete_user_task(task.id, dict(variables), now=T0)


def test_parallel_starts_every_activity_without_incoming_flows(engine: Engine) -> None:
    engine.deploy(checklist())
    inst = engine.start("checklist", now=T0)
    assert open_tasks(engine, inst.id) == ["a", "b", "c"]  # not d, not the handler
    complete(engine, inst.id, "c")
    assert open_tasks(engine, inst.id) == ["a", "b", "d"]
    for node_id in ("a", "b", "d"):
        complete(engine, inst.id, node_id)
    assert open_tasks(engine, inst.id) == ["after"]


def test_sequential_runs_one_path_at_a_time_in_document_order(engine: Engine) -> None:
    engine.deploy(checklist(sequential=True))
    inst = engine.start("checklist", now=T0)
    seen = []
    while (tasks := open_tasks(engine, inst.id)) != ["after"]:
        assert len(tasks) == 1
        seen.append(tasks[0])
        complete(engine, inst.id, tasks[0])
    assert seen == ["a", "b", "c", "d"]  # c's path (c, then d) ends before nothing is left


def test_the_completion_condition_cancels_the_rest(engine: Engine) -> None:
    engine.deploy(checklist(completion="enough"))
    inst = engine.start("checklist", {"enough": False}, now=T0)
    complete(engine, inst.id, "a")
    assert open_tasks(engine, inst.id) == ["b", "c"]
    complete(engine, inst.id, "b", enough=True)
    assert open_tasks(engine, inst.id) == ["after"]  # c was cancelled, d never started
    (done,) = [e for e in engine.history(inst.id) if e.type == "ad_hoc_completed"]
    assert done.payload["cancelled"] == ["c"]


def test_without_cancel_remaining_the_running_ones_finish(engine: Engine) -> None:
    engine.deploy(checklist(completion="enough", cancel_remaining=False, sequential=True))
    inst = engine.start("checklist", {"enough": False}, now=T0)
    complete(engine, inst.id, "a", enough=True)
    assert open_tasks(engine, inst.id) == ["after"]  # sequential: b, c were never started

    engine.deploy(checklist("parallel_keep", completion="enough", cancel_remaining=False))
    inst = engine.start("parallel_keep", {"enough": False}, now=T0)
    complete(engine, inst.id, "a", enough=True)
    assert open_tasks(engine, inst.id) == ["b", "c"]  # left running
    complete(engine, inst.id, "b")
    complete(engine, inst.id, "c")
    assert open_tasks(engine, inst.id) == ["d"]  # what c leads to still runs
    complete(engine, inst.id, "d")
    assert open_tasks(engine, inst.id) == ["after"]


def test_active_elements_collection_picks_what_starts(engine: Engine) -> None:
    engine.deploy(checklist(active_elements="picked"))
    inst = engine.start("checklist", {"picked": ["c", "b"]}, now=T0)
    assert open_tasks(engine, inst.id) == ["b", "c"]
    inst2 = engine.start("checklist", {"picked": []}, now=T0)
    assert open_tasks(engine, inst2.id) == ["after"]  # nothing activated: done at once


def test_an_unknown_active_element_is_an_incident_and_nothing_started(engine: Engine) -> None:
    engine.deploy(checklist(active_elements="picked"))
    inst = engine.start("checklist", {"picked": ["d"]}, now=T0)  # d has an incoming flow
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "adhoc" and "'d'" in incident.message
    assert open_tasks(engine, inst.id) == []
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE


def test_an_ad_hoc_sub_process_with_a_start_event_is_refused(engine: Engine) -> None:
    xml = model_to_bpmn(checklist()).replace(
        '<bpmn:userTask id="a"', '<bpmn:startEvent id="inner_start" /><bpmn:userTask id="a"', 1
    )
    assert "inner_start" in xml
    before = len(engine.definitions())
    with pytest.raises(DeploymentError) as caught:
        engine.deploy(xml)
    problems = [p for p in caught.value.problems if "start event 'inner_start'" in p.message]
    assert [p.element_id for p in problems] == ["adhoc"]
    assert len(engine.definitions()) == before


def test_a_completion_condition_that_does_not_compile_is_refused(engine: Engine) -> None:
    xml = model_to_bpmn(checklist(completion="enough")).replace(">enough<", ">enough &lt;<")
    before = len(engine.definitions())
    with pytest.raises(DeploymentError) as caught:
        engine.deploy(xml)
    assert "'adhoc'" in str(caught.value) and "completion condition" in str(caught.value)
    assert len(engine.definitions()) == before


def test_round_trip_builder_json_drawing_parse() -> None:
    model = checklist(
        completion="enough", sequential=True, cancel_remaining=False, active_elements="picked"
    )
    again = parse_bpmn(model_to_bpmn(model))
    node = again.nodes["adhoc"]
    assert isinstance(node, n.AdHocSubProcess) and again.nodes["a"].container == "adhoc"
    assert (node.completion_condition, node.sequential, node.cancel_remaining) == (
        "enough",
        True,
        False,
    )
    assert node.active_elements == "picked"
    same_kinds(model)
