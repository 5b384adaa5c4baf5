"""Execution listeners of inline tasks (issue 25, item 1), on both backends: they run on
the worker in the step's attempt (start before the handler, end after it), a failure takes
the step's retry policy and then an incident naming the listener, with nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.handlers import HandlerRegistry, TaskContext, execution_listener
from bpm.model import nodes as n
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


def test_external_task_and_flow_listeners_now_run_without_a_warning(database_url: str) -> None:
    """(They deployed with a warning before; tests/test_listeners_elements.py runs them.)"""
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
    assert not [w for w in warnings if "istener" in w]
    model = engine.model(engine.definitions()[0].id)
    assert [x.event for x in model.node("charge").listeners] == ["start", "end", "end"]
    assert model.flow("f1") is not None and model.flow("f1").listeners[0].handler == "x"


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
    external = (
        Process("c")
        .start("s")
        .service_task("t", topic="x", listeners=[("start", "x")])
        .end("e")
        .sequence("s", "t", "e")
        .build()
    )
    assert external.node("t").listeners == (n.Listener("start", handler="x"),)


def test_the_trail_shows_the_listeners(database_url: str) -> None:
    from bpm.trail import _details

    engine, q = make_engine(database_url, registry([]))
    engine.deploy(BPMN.replace("RETRY", ""))
    inst = engine.start("audited")
    drain(engine, q)
    (ran,) = [e for e in engine.history(inst.id) if e.type == "listeners_ran"]
    assert _details(ran).startswith("ran start listener 'audit', end listener")


def test_a_lost_worker_and_a_redelivered_message_count_as_for_any_handler(
    database_url: str,
) -> None:
    """kill -9 mid-step: the lease runs out, the next attempt runs the listeners again (one
    run per attempt); the lost worker's late finish is dropped; a duplicate message for the
    finished step runs nothing."""
    from datetime import timedelta

    from bpm.engine.execution import run_handler
    from tests.engine_helpers import claim_one, finish_one

    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls))
    engine.deploy(BPMN.replace("RETRY", 'bpm:lease="PT30S"'))
    inst = engine.start("audited")
    (token_id,) = list(q.queue)
    now = engine.core.now()
    first = claim_one(engine.core, token_id, "worker-a", now)
    assert first is not None
    lost = run_handler(engine.core, first, "worker-a")  # ran; then the worker was killed
    assert calls == ["audit:start", "charge:-", "com.acme.Notify:end"]
    later = now + timedelta(seconds=31)
    assert engine.reclaim_expired_leases(now=later) == 1
    second = claim_one(engine.core, token_id, "worker-b", later)
    assert second is not None and second.token.attempt == 2
    finish_one(engine.core, second, run_handler(engine.core, second, "worker-b"), "worker-b", later)
    assert calls == ["audit:start", "charge:-", "com.acme.Notify:end"] * 2
    assert finish_one(engine.core, first, lost, "worker-a", later) == []  # dropped
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert engine.run_token(token_id) == 0  # a redelivered message: nothing runs again
    assert len(calls) == 6
    assert len([e for e in engine.history(inst.id) if e.type == "listeners_ran"]) == 1


def test_zeebe_listeners_and_lint_names_their_handlers() -> None:
    from bpm.bpmn.parser import parse_bpmn

    xml = BPMN.replace("RETRY", "").replace(
        "<bpmn:extensionElements>",
        '<bpmn:extensionElements xmlns:zeebe="http://camunda.org/schema/zeebe/1.0">'
        '<zeebe:executionListeners><zeebe:executionListener eventType="start" type="z-audit"/>'
        '<zeebe:executionListener eventType="start" type="=dynamic"/>'
        "</zeebe:executionListeners>",
    )
    model = parse_bpmn(xml)
    node = model.node("charge")
    assert isinstance(node, n.ServiceTask)
    assert [(x.event, x.handler) for x in node.listeners][-1] == ("start", "z-audit")
    assert any("type '=dynamic' is ignored" in w for w in model.warnings)
    names = model.handler_names()
    assert names["audit"] == ["charge"] and names["z-audit"] == ["charge"]
    assert names["com.acme.Notify"] == ["charge"]


USER_TASK = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="review" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="approve" camunda:assignee="${who}">
      <bpmn:extensionElements>
        <camunda:executionListener event="start" delegateExpression="${audit}"/>
        <camunda:taskListener event="create" class="com.acme.Assign"/>
        <camunda:taskListener event="complete" class="com.acme.Done"/>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>
"""


def user_task_registry(calls: list[str], fail: bool = False) -> HandlerRegistry:
    reg = registry(calls)

    def assign(ctx: TaskContext) -> dict[str, Any]:
        calls.append(f"assign:{ctx.properties['bpm:listenerEvent']}")
        if fail:
            raise RuntimeError("no reviewer free")
        return {"who": "ann"}

    reg.register("com.acme.Assign", assign)
    reg.register(
        "com.acme.Done",
        lambda ctx: calls.append(f"com.acme.Done:{ctx.properties['bpm:listenerEvent']}"),
    )
    return reg


def test_a_user_task_runs_its_start_and_create_listeners_on_a_worker_first(
    database_url: str,
) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, user_task_registry(calls))
    deployment = engine.create_deployment(USER_TASK)
    assert not [w for w in deployment.warnings if "istener" in w]  # all of them run
    inst = engine.start("review")
    assert calls == [] and engine.user_tasks(instance_id=inst.id) == []  # not yet: a worker
    assert drain(engine, q) == 1
    assert calls == ["audit:start", "assign:create"]
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert task.node_id == "approve" and task.assignee == "ann"  # the listener's variable
    assert engine.get_instance(inst.id).variables == {"audited": True, "who": "ann"}
    (ran,) = [e for e in engine.history(inst.id) if e.type == "listeners_ran"]
    assert ran.payload["listeners"] == [
        "start listener 'audit'",
        "create listener 'com.acme.Assign'",
    ]
    engine.complete_user_task(task.id, {"ok": True})
    drain(engine, q)  # its complete listener runs on a worker, which completes it
    assert calls[-1] == "com.acme.Done:complete"
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_failing_create_listener_is_an_incident_on_the_user_task(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, user_task_registry(calls, fail=True))
    engine.deploy(USER_TASK)
    inst = engine.start("review", {"n": 1})
    drain(engine, q)
    assert calls == ["audit:start", "assign:create"] * 3  # the default policy: 3 attempts
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "approve"
    assert "create listener 'com.acme.Assign' of 'approve' failed" in (incident.message or "")
    assert engine.user_tasks(instance_id=inst.id) == []  # no task was created
    assert engine.get_instance(inst.id).variables == {"n": 1}
