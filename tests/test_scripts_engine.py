"""Python script tasks in the engine (both backends): sandboxed on the worker that claims
the step, updates written when it finishes, a failure an incident with nothing changed."""

from __future__ import annotations

import pytest

from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.states import InstanceState
from bpm.scripts import PYTHON_SCRIPT
from bpm.testing import BpmTest, assert_that
from tests.engine_helpers import drain, make_engine, table_dump

BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="calc" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:scriptTask id="price" scriptFormat="python" camunda:resultVariable="with_tax">
      <bpmn:script>import math
total = sum(i["price"] * i["qty"] for i in items)
items.append({"price": 0, "qty": 0})
math.ceil(total * 1.2)</bpmn:script>
    </bpmn:scriptTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="price"/>
    <bpmn:sequenceFlow id="f2" sourceRef="price" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>
"""


def script_process(script: str, key: str = "p") -> Process:
    return (
        Process(key)
        .start("s")
        .script_task("calc", script, language="python", result="out")
        .end("e")
        .sequence("s", "calc", "e")
    )


def test_a_python_script_task_sets_its_variables(database_url: str) -> None:
    engine, q = make_engine(database_url)
    engine.deploy(BPMN)
    inst = engine.start("calc", {"items": [{"price": 10, "qty": 2}, {"price": 5, "qty": 1}]})
    assert drain(engine, q) == 1  # one inline step, run by this "worker"
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {
        "items": [{"price": 10, "qty": 2}, {"price": 5, "qty": 1}, {"price": 0, "qty": 0}],
        "total": 25,
        "with_tax": 30,
    }


def test_builder_and_parser_agree() -> None:
    node = script_process("x = 1").build().node("calc")
    assert node.handler == PYTHON_SCRIPT and node.result_variable == "out"


def test_a_script_that_loops_is_an_incident_with_nothing_changed(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_SCRIPT_CPU_SECONDS", "0.3")
    engine, q = make_engine(database_url)
    engine.deploy(script_process("x = 1\nwhile True:\n    x += 1"))
    inst = engine.start("p", {"x": 0})
    drain(engine, q)
    after = engine.get_instance(inst.id)
    assert after.variables == {"x": 0}
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "calc"
    assert "CPU time" in (incident.message or "")
    tokens = [t for t in after.tokens if t.node_id == "calc"]
    assert [t.attempt for t in tokens] == [1]  # a script fails the same way again: no retry


def test_a_script_that_allocates_too_much_is_an_incident(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_SCRIPT_MEMORY_MB", "64")
    engine, q = make_engine(database_url)
    engine.deploy(script_process("y = 2\nx = 'a' * 10**10"))
    inst = engine.start("p", {"y": 1})
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "calc" and "memory" in (incident.message or "")
    assert engine.get_instance(inst.id).variables == {"y": 1}
    # the worker goes on: the next instance's script runs
    engine.deploy(script_process("y = y + 1", key="q"))
    ok = engine.start("q", {"y": 1})
    drain(engine, q)
    assert engine.get_instance(ok.id).variables == {"y": 2, "out": None}


def test_an_escape_is_refused_at_deploy_with_nothing_stored(database_url: str) -> None:
    engine, _ = make_engine(database_url)
    before = table_dump(engine)
    with pytest.raises(DeploymentError) as err:
        engine.deploy(BPMN.replace("import math", "import os"))
    assert "import of 'os' is not allowed" in str(err.value)
    assert err.value.problems[0].element_id == "price"
    with pytest.raises(DeploymentError, match="__class__"):
        engine.deploy(script_process("x = ().__class__.__bases__"))
    assert table_dump(engine) == before


def test_a_handler_named_in_the_model_still_runs_a_python_script(database_url: str) -> None:
    seen: list[str | None] = []
    reg = HandlerRegistry()

    def mine(ctx: TaskContext) -> dict[str, int]:
        seen.append(ctx.script)
        return {"ran": 1}

    reg.register("mine", mine)
    engine, q = make_engine(database_url, reg)
    xml = BPMN.replace(
        'scriptFormat="python"',
        'scriptFormat="python" xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn" '
        'bpm:handler="mine"',
    )
    engine.deploy(xml)
    inst = engine.start("calc", {"items": []})
    drain(engine, q)
    assert engine.get_instance(inst.id).variables == {"items": [], "ran": 1}
    assert seen and "import math" in (seen[0] or "")


def test_groovy_deploys_with_a_warning_that_says_how(database_url: str) -> None:
    engine, _ = make_engine(database_url)
    xml = BPMN.replace(
        'scriptFormat="python" camunda:resultVariable="with_tax"', 'scriptFormat="groovy"'
    )
    deployment = engine.create_deployment(xml)
    (warning,) = [w for w in deployment.warnings if "groovy" in w]
    assert "@service_task('price')" in warning and 'scriptFormat="python"' in warning


def test_the_name_of_the_builtin_handler_is_reserved() -> None:
    with pytest.raises(ValueError, match="engine's own"):
        HandlerRegistry().register(PYTHON_SCRIPT, lambda ctx: None)


def test_in_the_test_kit(bpm: BpmTest) -> None:
    """The kit runs Python scripts as a worker would: no mock needed."""
    bpm.deploy(
        Process("kit_script")
        .start("s")
        .script_task("grade", "grade = 'A' if score > 90 else 'B'", language="python")
        .user_task("review")
        .end("e")
        .sequence("s", "grade", "review", "e")
    )
    inst = bpm.start("kit_script", {"score": 95})
    assert_that(inst).is_waiting_at("review").has_passed("grade").has_variables(grade="A")
