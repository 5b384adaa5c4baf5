"""Execution listeners of every element kind, of flows (``take``) and of the process (issue
25, item 1), on both backends: each runs on a worker in a listener step of its own (never
in the transaction that reached the element, so never in the API process), once per event,
before the token moves on; a failure takes the retry policy, then an incident on the
element with nothing written."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bpm.errors import DeploymentError
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import InstanceState, TokenState
from tests.engine_helpers import claim_one, drain, finish_one, make_engine, table_dump

HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="t">
"""


def listener(event: str, name: str) -> str:
    return f'<camunda:executionListener event="{event}" delegateExpression="${{{name}}}"/>'


def ext(*items: str) -> str:
    return "<bpmn:extensionElements>" + "".join(items) + "</bpmn:extensionElements>"


# start -> f1 (take) -> gw (start, end; exclusive) -> approve (user task) -> gw2 (start) ->
# sub (embedded sub-process: start, end; inside a start event with an end listener and an
# end event with an end listener) -> ext task (start, end) -> end (end listener); the process
# itself has start and end listeners.
FULL = (
    HEAD
    + """
  <bpmn:process id="all" isExecutable="true">
    """
    + ext(listener("start", "proc"), listener("end", "proc"))
    + """
    <bpmn:startEvent id="s">"""
    + ext(listener("end", "rec"))
    + """</bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gw">"""
    + ext(listener("take", "rec"))
    + """</bpmn:sequenceFlow>
    <bpmn:exclusiveGateway id="gw" default="f3">"""
    + ext(listener("start", "rec"), listener("end", "flip"))
    + """</bpmn:exclusiveGateway>
    <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="e">
      <bpmn:conditionExpression>${skip == true}</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="approve"/>
    <bpmn:userTask id="approve"/>
    <bpmn:sequenceFlow id="f4" sourceRef="approve" targetRef="gw2"/>
    <bpmn:parallelGateway id="gw2">"""
    + ext(listener("start", "rec"))
    + """</bpmn:parallelGateway>
    <bpmn:sequenceFlow id="f5" sourceRef="gw2" targetRef="sub"/>
    <bpmn:subProcess id="sub">"""
    + ext(listener("start", "rec"), listener("end", "rec"))
    + """
      <bpmn:startEvent id="ss">"""
    + ext(listener("start", "rec"))
    + """</bpmn:startEvent>
      <bpmn:endEvent id="se">"""
    + ext(listener("end", "rec"))
    + """</bpmn:endEvent>
      <bpmn:sequenceFlow id="sf" sourceRef="ss" targetRef="se"/>
    </bpmn:subProcess>
    <bpmn:sequenceFlow id="f6" sourceRef="sub" targetRef="work"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="work">"""
    + ext(listener("start", "rec"), listener("end", "rec"))
    + """</bpmn:serviceTask>
    <bpmn:sequenceFlow id="f7" sourceRef="work" targetRef="e"/>
    <bpmn:endEvent id="e">"""
    + ext(listener("end", "rec"))
    + """</bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>
"""
)


def registry(calls: list[str], fail: str | None = None) -> HandlerRegistry:
    reg = HandlerRegistry()

    def rec(ctx: TaskContext) -> dict[str, Any]:
        event = ctx.properties["bpm:listenerEvent"]
        calls.append(f"{ctx.node_id}:{event}")
        if f"{ctx.node_id}:{event}" == fail:
            raise RuntimeError("audit is down")
        return {f"seen_{ctx.node_id}_{event}": True}

    def proc(ctx: TaskContext) -> dict[str, Any]:
        calls.append(f"process:{ctx.properties['bpm:listenerEvent']}")
        return {f"process_{ctx.properties['bpm:listenerEvent']}": True}

    def flip(ctx: TaskContext) -> dict[str, Any]:
        # an end listener's change does not re-decide the gateway: its flow was chosen
        calls.append(f"{ctx.node_id}:end")
        return {"skip": True}

    reg.register("rec", rec)
    reg.register("proc", proc)
    reg.register("flip", flip)
    return reg


def fetch(engine: Any, topic: str = "work") -> list[Any]:
    return engine.fetch_and_lock(FetchRequest("w1", 10, (TopicRequest(topic, 60_000),)))


def test_listeners_run_on_every_element_in_order(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls))
    deployment = engine.create_deployment(FULL)
    assert not [w for w in deployment.warnings if "istener" in w]
    inst = engine.start("all", {"skip": False})
    assert calls == []  # nothing ran in the starting transaction: a worker runs them
    drain(engine, q)
    assert calls == ["process:start", "s:end", "gw:take", "gw:start", "gw:end"]
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, {})
    # the completing transaction (the API's) ran no listener: gw2 waits for a worker
    assert calls[-1] == "gw:end"
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.state is TokenState.READY]
    assert tok.node_id == "gw2"
    drain(engine, q)
    assert calls[5:] == ["gw2:start", "sub:start", "ss:start", "se:end", "sub:end", "work:start"]
    (job,) = fetch(engine)
    engine.complete_external_task(job.id, "w1", {"done": True})
    assert calls[-1] == "work:start"
    drain(engine, q)
    assert calls[11:] == ["work:end", "e:end", "process:end"]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables["skip"] is True and done.variables["process_end"] is True
    assert done.variables["seen_gw_take"] is True  # the take listener's own variable
    ran = [e for e in engine.history(inst.id) if e.type == "listeners_ran"]
    assert [e.node_id for e in ran] == [
        "s", "s", "gw", "gw", "gw2", "sub", "ss", "se", "sub", "work", "work", "e", "e"
    ]  # fmt: skip
    assert ran[2].payload["listeners"] == ["take listener 'rec'", "start listener 'rec'"]


def test_a_failing_gateway_listener_is_an_incident_on_the_gateway(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls, fail="gw:start"))
    engine.deploy(FULL)
    inst = engine.start("all", {"n": 1, "skip": False})
    drain(engine, q)
    assert calls.count("gw:start") == 3  # the default policy: three attempts
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "gw"
    assert "start listener 'rec' of 'gw' failed: RuntimeError: audit is down" in (
        incident.message or ""
    )
    # what the earlier steps set is kept; the failing step's writes are not
    variables = engine.get_instance(inst.id).variables
    assert "seen_gw_take" not in variables and variables["seen_s_end"] is True
    assert engine.user_tasks(instance_id=inst.id) == []
    # fixed: retrying the incident runs the step again and the token goes on
    engine.core.registry.register("rec", registry(calls).get("rec").fn)
    engine.retry_incident(incident.id)
    drain(engine, q)
    assert calls[-2:] == ["gw:start", "gw:end"]
    assert len(engine.user_tasks(instance_id=inst.id)) == 1


def test_an_end_listener_that_fails_leaves_the_token_at_its_element(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls, fail="sub:end"))
    engine.deploy(FULL)
    inst = engine.start("all", {"skip": False})
    drain(engine, q)
    engine.complete_user_task(engine.user_tasks(instance_id=inst.id)[0].id, {})
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "sub" and "end listener 'rec' of 'sub'" in (incident.message or "")
    assert fetch(engine) == []  # the token never left the sub-process
    engine.core.registry.register("rec", registry(calls).get("rec").fn)
    engine.retry_incident(incident.id)
    drain(engine, q)
    assert calls[-2:] == ["sub:end", "work:start"]  # the end listeners again, then on
    assert len(fetch(engine)) == 1


def test_a_lost_worker_and_a_redelivered_message_run_a_listener_once_per_attempt(
    database_url: str,
) -> None:
    """kill -9 mid-listener: the lease runs out, the next attempt runs the listener again;
    the dead worker's late finish is dropped; the redelivered message runs nothing."""
    from bpm.engine.execution import run_handler

    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls))
    engine.deploy(FULL)
    inst = engine.start("all", {"skip": False})
    (token_id,) = list(q.queue)  # the first token: the process's start listeners
    q.queue.clear()
    now = engine.core.now()
    first = claim_one(engine.core, token_id, "worker-a", now)
    assert first is not None
    lost = run_handler(engine.core, first, "worker-a")  # ran; then the worker was killed
    assert calls == ["process:start"]
    later = now + engine.core.config.default_lease + timedelta(seconds=1)
    assert engine.reclaim_expired_leases(now=later) == 1
    second = claim_one(engine.core, token_id, "worker-b", later)
    assert second is not None and second.token.attempt == 2
    nxt = finish_one(
        engine.core, second, run_handler(engine.core, second, "worker-b"), "worker-b", later
    )
    assert calls == ["process:start", "process:start"]
    assert finish_one(engine.core, first, lost, "worker-a", later) == []  # dropped
    assert engine.run_token(token_id) == 0  # a redelivered message: nothing runs again
    assert calls == ["process:start", "process:start"]
    assert engine.get_instance(inst.id).variables == {"skip": False, "process_start": True}
    (step,) = nxt  # the start event's end listeners: the next step, kept by this worker
    assert step.token.id == token_id and step.token.attempt == 1  # counted afresh
    steps = [step]
    while steps:  # the steps that follow, each kept by the worker that finished the last
        step = steps.pop(0)
        out = run_handler(engine.core, step, "worker-b")
        steps += finish_one(engine.core, step, out, "worker-b", later)
    drain(engine, q)
    assert calls[2:5] == ["s:end", "gw:take", "gw:start"]


def test_zeebe_listeners_and_a_script_listener_on_a_gateway(database_url: str) -> None:
    calls: list[str] = []
    xml = (
        HEAD
        + """
  <bpmn:process id="z" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gw"/>
    <bpmn:exclusiveGateway id="gw">
      <bpmn:extensionElements>
        <zeebe:executionListeners>
          <zeebe:executionListener eventType="start" type="rec"/>
        </zeebe:executionListeners>
        <camunda:executionListener event="end">
          <camunda:script scriptFormat="python">doubled = n * 2</camunda:script>
        </camunda:executionListener>
      </bpmn:extensionElements>
    </bpmn:exclusiveGateway>
    <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>
"""
    )
    engine, q = make_engine(database_url, registry(calls))
    engine.deploy(xml)
    inst = engine.start("z", {"n": 21})
    drain(engine, q)
    assert calls == ["gw:start"]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"n": 21, "seen_gw_start": True, "doubled": 42}


def test_take_listeners_on_a_flow_into_an_inline_task_run_in_its_step(database_url: str) -> None:
    calls: list[str] = []
    reg = registry(calls)
    reg.register("charge", lambda ctx: calls.append("charge") or {"charged": 1})
    xml = (
        HEAD
        + """
  <bpmn:process id="t" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge">"""
        + ext(listener("take", "rec"))
        + """</bpmn:sequenceFlow>
    <bpmn:serviceTask id="charge" camunda:delegateExpression="${charge}"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>
"""
    )
    engine, q = make_engine(database_url, reg)
    engine.deploy(xml)
    inst = engine.start("t")
    assert drain(engine, q) == 1  # one step: the take listener is part of the task's
    assert calls == ["charge:take", "charge"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_bad_listeners_are_refused_at_deploy_with_nothing_changed(database_url: str) -> None:
    engine, _ = make_engine(database_url, registry([]))
    before = table_dump(engine)
    bad_expression = FULL.replace(
        listener("start", "proc"),
        '<camunda:executionListener event="start" expression="#{1 + 2}"/>',
    )
    with pytest.raises(DeploymentError, match="cannot name a handler"):
        engine.deploy(bad_expression)
    nothing = FULL.replace(listener("take", "rec"), '<camunda:executionListener event="take"/>')
    with pytest.raises(DeploymentError, match="names nothing to run"):
        engine.deploy(nothing)
    escape = FULL.replace(
        listener("start", "rec"),
        '<camunda:executionListener event="start"><camunda:script scriptFormat="python">'
        "import os</camunda:script></camunda:executionListener>",
        1,
    )
    with pytest.raises(DeploymentError, match=r"start listener \(Python script\) of 'gw'"):
        engine.deploy(escape)
    assert table_dump(engine) == before


def test_a_listener_naming_no_handler_is_an_incident_with_nothing_written(
    database_url: str,
) -> None:
    engine, q = make_engine(database_url, registry([]))
    engine.deploy(FULL.replace("${flip}", "${missing}"))
    inst = engine.start("all", {"n": 1, "skip": False})
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "gw" and "missing" in (incident.message or "")
    # nothing of the failed step is written; the earlier steps' variables are kept
    assert engine.get_instance(inst.id).variables["skip"] is False
    assert engine.user_tasks(instance_id=inst.id) == []


def test_what_is_not_run_deploys_with_a_warning(database_url: str) -> None:
    engine, _ = make_engine(database_url, registry([]))
    xml = FULL.replace(listener("take", "rec"), listener("start", "rec")).replace(
        '<bpmn:parallelGateway id="gw2">',
        '<bpmn:parallelGateway id="gw2"><bpmn:extensionElements>'
        '<camunda:executionListener event="end"><camunda:script scriptFormat="groovy">x'
        "</camunda:script></camunda:executionListener></bpmn:extensionElements>",
    )
    warnings = engine.create_deployment(xml).warnings
    assert any("event 'start' is ignored" in w and "'f1'" in w for w in warnings)
    assert any("groovy camunda:executionListener is not run" in w for w in warnings)


KINDS = (
    HEAD
    + """
  <bpmn:process id="child" isExecutable="true">
    <bpmn:startEvent id="cs"/>
    <bpmn:sequenceFlow id="cf" sourceRef="cs" targetRef="ce"/>
    <bpmn:endEvent id="ce">"""
    + ext(listener("end", "rec"))
    + """</bpmn:endEvent>
  </bpmn:process>
  <bpmn:process id="kinds" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="call"/>
    <bpmn:callActivity id="call" calledElement="child">"""
    + ext(listener("start", "rec"), listener("end", "rec"))
    + """</bpmn:callActivity>
    <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="wait"/>
    <bpmn:intermediateCatchEvent id="wait">"""
    + ext(listener("start", "rec"), listener("end", "rec"))
    + """<bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="wait" targetRef="review"/>
    <bpmn:userTask id="review">"""
    + ext(listener("start", "rec"))
    + """<bpmn:multiInstanceLoopCharacteristics isSequential="false">
        <bpmn:loopCardinality>2</bpmn:loopCardinality>
      </bpmn:multiInstanceLoopCharacteristics>
    </bpmn:userTask>
    <bpmn:boundaryEvent id="late" attachedToRef="review">"""
    + ext(listener("start", "rec"), listener("end", "rec"))
    + """<bpmn:timerEventDefinition><bpmn:timeDuration>PT2H</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f4" sourceRef="review" targetRef="e"/>
    <bpmn:sequenceFlow id="f5" sourceRef="late" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>
"""
)


def test_call_activity_timer_events_multi_instance_and_boundary_listeners(
    database_url: str,
) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, registry(calls))
    assert not [w for w in engine.create_deployment(KINDS).warnings if "istener" in w]
    t0 = engine.core.now()
    inst = engine.start("kinds", now=t0)
    drain(engine, q)
    # the call's start listener, the child's end event, the call's end, the timer's start
    assert calls == ["call:start", "ce:end", "call:end", "wait:start"]
    assert engine.fire_due_timers(now=t0 + timedelta(minutes=59)) == 0
    # (the timer was set when the step that ran its start listener finished: a moment later)
    assert engine.fire_due_timers(now=t0 + timedelta(hours=1, minutes=5)) == 1
    drain(engine, q)
    # the timer's end listener, then the start listener once per inner instance (not the body)
    assert calls[4:] == ["wait:end", "review:start", "review:start"]
    assert len(engine.user_tasks(instance_id=inst.id)) == 2
    assert engine.fire_due_timers(now=t0 + timedelta(hours=4)) == 1  # the boundary: late
    drain(engine, q)
    assert calls[7:] == ["late:start", "late:end"]
    assert engine.user_tasks(instance_id=inst.id) == []
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_zeebe_retries_and_an_event_gateway_warning(database_url: str) -> None:
    calls: list[str] = []
    xml = FULL.replace(
        listener("start", "rec") + listener("end", "flip"),
        '<zeebe:executionListeners><zeebe:executionListener eventType="start" type="rec" '
        'retries="2"/></zeebe:executionListeners>',
    )
    engine, q = make_engine(database_url, registry(calls, fail="gw:start"))
    engine.deploy(xml)
    inst = engine.start("all", {"skip": False})
    drain(engine, q)
    assert calls.count("gw:start") == 2  # Zeebe's retries: the step's attempts
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "gw"
    bad = xml.replace('retries="2"', 'retries="none"')
    with pytest.raises(DeploymentError, match="retries 'none' must be a count"):
        engine.deploy(bad)
    gateway = (
        HEAD
        + """
  <bpmn:process id="eg" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
    <bpmn:eventBasedGateway id="g">"""
        + ext(listener("start", "rec"), listener("end", "rec"))
        + """</bpmn:eventBasedGateway>
    <bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="w"/>
    <bpmn:intermediateCatchEvent id="w">"""
        + ext(listener("start", "rec"), listener("end", "rec"))
        + """<bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="w" targetRef="e"/>
    <bpmn:sequenceFlow id="f4" sourceRef="g" targetRef="w2"/>
    <bpmn:intermediateCatchEvent id="w2">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT3H</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f5" sourceRef="w2" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>
"""
    )
    warnings = engine.create_deployment(gateway).warnings
    assert any("event 'end' is ignored" in w and "'g'" in w for w in warnings)
    assert any("start listeners of 'w' are ignored" in w for w in warnings)
    calls.clear()
    t0 = engine.core.now()
    other = engine.start("eg", now=t0)
    drain(engine, q)
    assert calls == ["g:start"]
    engine.fire_due_timers(now=t0 + timedelta(hours=1, minutes=5))
    drain(engine, q)
    assert calls == ["g:start", "w:end"]
    assert engine.get_instance(other.id).state is InstanceState.COMPLETED


def test_the_builder_attaches_listeners_to_elements_flows_and_the_process() -> None:
    from bpm.builder import Process
    from bpm.testing import BpmTest

    calls: list[str] = []
    kit = BpmTest.create(registry=registry(calls))
    try:
        kit.deploy(
            Process("b")
            .start("s")
            .exclusive("gw")
            .end("e")
            .flow("s", "gw", id="in")
            .flow("gw", "e", id="out")
            .listen("gw", "start", "rec")
            .listen("gw", "end", "rec")
            .listen("out", "take", "rec")
            .listen("b", "end", "proc")
        )
        inst = kit.start("b")
        assert calls == ["gw:start", "gw:end", "e:take", "process:end"]
        assert kit.engine.get_instance(inst.id).state is InstanceState.COMPLETED
    finally:
        kit.close()
    with pytest.raises(DeploymentError, match="of a flow is not run"):
        Process("c").start("s").end("e").flow("s", "e", id="f").listen("f", "end", "x").build()
    with pytest.raises(DeploymentError, match="names no element or flow"):
        Process("c").start("s").end("e").sequence("s", "e").listen("nope", "start", "x").build()
