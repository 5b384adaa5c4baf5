"""Parsing message and signal events, receive tasks and event-based gateways: Camunda 7
and Zeebe attribute forms, and the problems a wrong file gets (no crash, one root cause)."""

from __future__ import annotations

import pytest

from bpm.bpmn.parser import parse_bpmn, parse_bpmn_file
from bpm.engine import Engine
from bpm.errors import DeploymentError
from bpm.model import nodes as n

CAMUNDA = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="x">
  <bpmn:message id="Message_1" name="paid" />
  <bpmn:message id="Message_2" name="cancel" />
  <bpmn:signal id="Signal_1" name="alarm" />
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:messageEventDefinition messageRef="Message_2" />
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="gw" />
    <bpmn:eventBasedGateway id="gw" />
    <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="paid" />
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="alarm" />
    <bpmn:intermediateCatchEvent id="paid">
      <bpmn:messageEventDefinition messageRef="Message_1" /></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="alarm">
      <bpmn:signalEventDefinition signalRef="Signal_1" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f4" sourceRef="paid" targetRef="receive" />
    <bpmn:receiveTask id="receive" messageRef="Message_1" />
    <bpmn:boundaryEvent id="b" attachedToRef="receive" cancelActivity="false">
      <bpmn:signalEventDefinition signalRef="Signal_1" /></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f5" sourceRef="receive" targetRef="notify" />
    <bpmn:intermediateThrowEvent id="notify">
      <bpmn:messageEventDefinition camunda:delegateExpression="${notifier}" />
    </bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="f6" sourceRef="notify" targetRef="shout" />
    <bpmn:endEvent id="shout"><bpmn:signalEventDefinition signalRef="Signal_1" />
    </bpmn:endEvent>
    <bpmn:sequenceFlow id="f7" sourceRef="alarm" targetRef="done" />
    <bpmn:sequenceFlow id="f8" sourceRef="b" targetRef="done" />
    <bpmn:endEvent id="done"><bpmn:messageEventDefinition /></bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>
"""

ZEEBE = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="x">
  <bpmn:message id="Message_1" name="payment">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=order.id" />
    </bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="z" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait">
      <bpmn:messageEventDefinition messageRef="Message_1" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="send" />
    <bpmn:sendTask id="send"><bpmn:extensionElements>
      <zeebe:taskDefinition type="send-mail" /></bpmn:extensionElements></bpmn:sendTask>
    <bpmn:sequenceFlow id="f3" sourceRef="send" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_camunda_forms() -> None:
    m = parse_bpmn(CAMUNDA)
    start = m.nodes["start"]
    assert isinstance(start, n.StartEvent)
    assert start.event == n.EventRef(n.EventKind.MESSAGE, "cancel")
    assert isinstance(m.nodes["gw"], n.EventBasedGateway)
    assert m.nodes["paid"] == n.CatchEvent(
        "paid", event=n.EventRef(n.EventKind.MESSAGE, "paid"), line=m.nodes["paid"].line
    )
    alarm = m.nodes["alarm"]
    assert isinstance(alarm, n.CatchEvent) and alarm.event.kind is n.EventKind.SIGNAL
    receive = m.nodes["receive"]
    assert isinstance(receive, n.ReceiveTask) and receive.event.name == "paid"
    boundary = m.nodes["b"]
    assert isinstance(boundary, n.BoundaryEvent) and not boundary.is_error
    assert boundary.event == n.EventRef(n.EventKind.SIGNAL, "alarm")
    notify = m.nodes["notify"]
    assert isinstance(notify, n.ServiceTask) and notify.handler == "notifier"
    shout = m.nodes["shout"]
    assert isinstance(shout, n.SignalThrow) and shout.signal == "alarm"
    done = m.nodes["done"]  # a message end event without a binding: the handler "done"
    assert isinstance(done, n.ServiceTask) and done.handler == "done"
    assert m.event_starts == (start,)


def test_zeebe_correlation_key_and_send_task() -> None:
    m = parse_bpmn(ZEEBE)
    wait = m.nodes["wait"]
    assert isinstance(wait, n.CatchEvent)
    assert wait.event == n.EventRef(n.EventKind.MESSAGE, "payment", "=order.id")  # FEEL
    send = m.nodes["send"]
    assert isinstance(send, n.ServiceTask) and send.topic == "send-mail"


@pytest.mark.parametrize(
    ("fragment", "old", "new"),
    [
        (
            "names no bpmn:message",
            'messageRef="Message_1" /></bpmn:intermediate',
            'messageRef="Nope" /></bpmn:intermediate',
        ),
        (
            "has no name",
            '<bpmn:message id="Message_1" name="paid" />',
            '<bpmn:message id="Message_1" />',
        ),
        (
            "names no bpmn:signal",
            'signalRef="Signal_1" /></bpmn:intermediate',
            'signalRef="S9" /></bpmn:intermediate',
        ),
        (
            "not a message, signal or timer",
            '<bpmn:intermediateCatchEvent id="alarm">\n      '
            '<bpmn:signalEventDefinition signalRef="Signal_1" /></bpmn:intermediateCatchEvent>',
            '<bpmn:task id="alarm" />',
        ),
    ],
)
def test_wrong_references_are_reported(fragment: str, old: str, new: str) -> None:
    assert old in CAMUNDA
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(CAMUNDA.replace(old, new))
    assert any(fragment in p.message for p in info.value.problems), info.value.problems


def test_the_cockpit_draws_the_new_elements() -> None:
    from bpm.kinds import model_to_bpmn

    xml = model_to_bpmn(parse_bpmn(CAMUNDA))
    for tag in (
        "eventBasedGateway",
        "receiveTask",
        "messageEventDefinition",
        "signalEventDefinition",
    ):
        assert f"bpmn:{tag}" in xml or f":{tag}" in xml, tag


def test_a_receive_task_without_message_waits_for_a_message_named_after_it(
    engine: Engine,
) -> None:
    """Camunda 7 models often carry a bare ``<receiveTask>`` that code triggers: it deploys
    with a warning and is triggered by correlating a message named after the task."""
    xml = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"
    targetNamespace="x">
  <bpmn:process id="bare" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait" />
    <bpmn:receiveTask id="wait" />
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
</bpmn:definitions>"""
    parsed = parse_bpmn_file(xml)
    assert any("has no messageRef" in w for w in parsed.all_warnings), parsed.all_warnings
    node = parsed.models[0].nodes["wait"]
    assert isinstance(node, n.ReceiveTask)
    assert node.event == n.EventRef(n.EventKind.MESSAGE, "wait")
    engine.deploy(parsed.models[0])
    inst = engine.start("bare")
    assert engine.get_instance(inst.id).state == "active"
    engine.correlate("wait", instance_id=inst.id)
    assert engine.get_instance(inst.id).state == "completed"
