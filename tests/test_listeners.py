"""Execution listeners of inline tasks (issue 25, item 1), on both backends: they run on
the worker in the step's attempt (start before the handler, end after it), a failure takes
the step's retry policy and then an incident naming the listener, with nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.handlers import HandlerRegistry, TaskContext, execution_listener
from bpm.runtime.states import InstanceState
from bpm.testing import BpmTest
from tests.engine_helpers import drain, make_engine, table_dump

BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="audited" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="charge" camunda:delegateExpression="${charge}" RETRY>
      <bpmn:extensionElements>
        <camunda:executionListener event="start" delegateExpression="${audit}"/>
        <camunda:executionListener event="end" class="com.acme.Notify"/>
        <camunda:executionListener event="end">
          <camunda:script scriptFormat="python">receipt = "sent " + str(charged)</camunda:script>
        </camunda:executionListener>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>
"""


def registry(calls: list[str], fail: str | None = None) -> HandlerRegistry:
    reg = HandlerRegistry()

    def handler(name: str, result: dict[str, Any]) -> None:
        def fn(ctx: TaskContext) -> dict[str, Any]:
            calls.append(f"{name}:{ctx.properties.get('bpm:listenerEvent', '-')}")
            if name == fail:
                raise RuntimeError(f"{name} is down")
            return result

        reg.register(name, fn)

    handler("audit", {"audited": True})
    handler("charge", {"charged": 10})
    handler("com.acme.Notify", {"notified": True})
    return reg


def test_listeners_run_around_the_handler_in_order(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls))
    deployment = engine.create_deployment(BPMN.replace("RETRY", ""))
    assert not [w for w in deployment.warnings if "istener" in w]
    inst = engine.start("audited")
    assert drain(engine, q) == 1  # one step: the listeners are part of it
    assert calls == ["audit:start", "charge:-", "com.acme.Notify:end"]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {
        "audited": True,
        "charged": 10,
        "notified": True,
        "receipt": "sent 10",
    }
    (ran,) = [e for e in engine.history(inst.id) if e.type == "listeners_ran"]
    assert ran.node_id == "charge"
    assert ran.payload["listeners"] == [
        "start listener 'audit'",
        "end listener 'com.acme.Notify'",
        "end listener (Python script)",
    ]


def test_a_failing_listener_takes_the_retry_policy_then_an_incident(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls, fail="com.acme.Notify"))
    engine.deploy(BPMN.replace("RETRY", 'bpm:retry="fixed(2, PT0S)"'))
    inst = engine.start("audited", {"n": 1})
    drain(engine, q)
    # two attempts, each the whole step: start listener, handler, the failing end listener
    assert calls == ["audit:start", "charge:-", "com.acme.Notify:end"] * 2
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "charge"
    assert "end listener 'com.acme.Notify' of 'charge' failed" in (incident.message or "")
    assert "RuntimeError: com.acme.Notify is down" in (incident.message or "")
    assert engine.get_instance(inst.id).variables == {"n": 1}  # nothing of it written
    assert not [e for e in engine.history(inst.id) if e.type == "listeners_ran"]


def test_a_failing_python_listener_is_an_incident_at_once(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls))
    engine.deploy(BPMN.replace("RETRY", "").replace("str(charged)", "str(1 / 0)"))
    inst = engine.start("audited")
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    assert "ZeroDivisionError" in (incident.message or "") and incident.node_id == "charge"
    assert calls.count("charge:-") == 1  # a script fails the same way again: no retry
    assert engine.get_instance(inst.id).variables == {}


def test_a_listener_script_that_escapes_is_refused_at_deploy(database_url: str) -> None:
    engine, _ = make_engine(database_url, registry([]))
    before = table_dump(engine)
    with pytest.raises(DeploymentError, match=r"end listener \(Python script\) of 'charge'"):
        engine.deploy(BPMN.replace("RETRY", "").replace('receipt = "sent "', "import os\nx = "))
    assert table_dump(engine) == before


def test_what_is_not_run_still_deploys_with_a_warning(database_url: str) -> None:
    engine, _ = make_engine(database_url)
    xml = (
        BPMN.replace("RETRY", "")
        .replace(
            'camunda:delegateExpression="${charge}"', 'camunda:type="external" camunda:topic="t"'
        )
        .replace(
            '<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>',
            '<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"><bpmn:extensionElements>'
            '<camunda:executionListener event="take" class="x"/></bpmn:extensionElements>'
            "</bpmn:sequenceFlow>",
        )
    )
    warnings = engine.create_deployment(xml).warnings
    assert any("execution listeners of 'charge' are ignored" in w for w in warnings)
    assert any("camunda:executionListener is ignored" in w for w in warnings)  # on the flow


def test_a_groovy_listener_is_not_run_and_says_so(database_url: str) -> None:
    engine, _ = make_engine(database_url, registry([]))
    xml = BPMN.replace("RETRY", "").replace('scriptFormat="python"', 'scriptFormat="groovy"')
    warnings = engine.create_deployment(xml).warnings
    assert any("groovy camunda:executionListener is not run" in w for w in warnings)


def test_builder_listeners_and_the_decorator() -> None:
    reg = HandlerRegistry()
    seen: list[str] = []

    @execution_listener("stamp", registry=reg)
    def stamp(ctx: TaskContext) -> dict[str, Any]:
        seen.append(ctx.properties["bpm:listenerEvent"])
        return {f"stamped_{ctx.properties['bpm:listenerEvent']}": True}

    kit = BpmTest.create(registry=reg)
    try:
        kit.deploy(
            Process("b")
            .start("s")
            .script_task(
                "calc",
                "y = x * 2",
                language="python",
                listeners=[("start", "stamp"), ("end", "stamp")],
            )
            .user_task("look")
            .end("e")
            .sequence("s", "calc", "look", "e")
        )
        inst = kit.start("b", {"x": 2})
        assert seen == ["start", "end"]
        assert kit.engine.get_instance(inst.id).variables == {
            "x": 2,
            "y": 4,
            "stamped_start": True,
            "stamped_end": True,
        }
    finally:
        kit.close()
    with pytest.raises(DeploymentError, match="'start' or 'end'"):
        Process("c").start("s").service_task("t", handler="h", listeners=[("take", "x")]).end(
            "e"
        ).sequence("s", "t", "e").build()
    with pytest.raises(DeploymentError, match="inline tasks only"):
        Process("c").start("s").service_task("t", topic="x", listeners=[("start", "x")]).end(
            "e"
        ).sequence("s", "t", "e").build()


def test_the_trail_shows_the_listeners(database_url: str) -> None:
    from bpm.trail import _details

    engine, q = make_engine(database_url, registry([]))
    engine.deploy(BPMN.replace("RETRY", ""))
    inst = engine.start("audited")
    drain(engine, q)
    (ran,) = [e for e in engine.history(inst.id) if e.type == "listeners_ran"]
    assert _details(ran).startswith("ran start listener 'audit', end listener")
