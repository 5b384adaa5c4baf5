"""BPMN models of the Camunda REST tests: an order review with two user tasks and a
gateway, and a one-step external task."""

from __future__ import annotations


def bpmn(key: str, body: str, name: str | None = None) -> str:
    named = f' name="{name}"' if name else ""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"\n'
        '    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"\n'
        f'    id="defs_{key}" targetNamespace="http://example.com/bpmn">\n'
        f'<bpmn:process id="{key}"{named} isExecutable="true">\n{body}\n</bpmn:process>\n'
        "</bpmn:definitions>\n"
    )


REVIEW = bpmn(
    "review",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve"/>
    <bpmn:userTask id="approve" name="Approve order" camunda:candidateGroups="sales,finance"
        camunda:candidateUsers="${reviewers}" camunda:priority="70"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="split"/>
    <bpmn:exclusiveGateway id="split" default="f4"/>
    <bpmn:sequenceFlow id="f3" sourceRef="split" targetRef="ship">
      <bpmn:conditionExpression>${approved == true}</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f4" sourceRef="split" targetRef="rejected"/>
    <bpmn:userTask id="ship" name="Ship order" camunda:candidateGroups="warehouse"/>
    <bpmn:sequenceFlow id="f5" sourceRef="ship" targetRef="end"/>
    <bpmn:endEvent id="end"/>
    <bpmn:endEvent id="rejected"/>""",
    name="Order review",
)

CHARGE = bpmn(
    "charge",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end"/>
    <bpmn:endEvent id="end"/>""",
)

STOP = bpmn(
    "stop",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="halt"/>
    <bpmn:endEvent id="halt"><bpmn:terminateEventDefinition/></bpmn:endEvent>""",
)
