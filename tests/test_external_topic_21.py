"""``camunda:topic="${name}"`` (issue 21; the port is
tests/conformance/test_camunda_external_task.py): the topic is read from the variable when
the task is reached; a variable that holds no topic is a ``failedJobType`` incident with no
external task created, on both backends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bpm.testing import BpmTest

MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="p" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <serviceTask id="work" camunda:type="external" camunda:topic="${topicName}"/>
    <sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
    <endEvent id="e"/>
  </process>
</definitions>"""


@pytest.fixture
def kit(database_url: str) -> Iterator[BpmTest]:
    k = BpmTest.create(database_url)
    undo = k.activate()
    try:
        yield k
    finally:
        undo()
        k.close()


def test_the_topic_comes_from_the_variable(kit: BpmTest) -> None:
    kit.deploy(MODEL)
    inst = kit.start("p", {"topicName": "billing"})
    (task,) = kit.engine.external_tasks(instance_id=inst.id)
    assert task.topic == "billing"


@pytest.mark.parametrize("variables", [{}, {"topicName": ""}, {"topicName": 7}])
def test_a_variable_that_holds_no_topic_is_an_incident(
    kit: BpmTest, variables: dict[str, object]
) -> None:
    kit.deploy(MODEL)
    inst = kit.start("p", variables)
    (incident,) = kit.engine.incidents(inst.id)
    assert incident.node_id == "work"
    assert incident.type == "failedJobType"
    assert "topicName" in incident.message
    assert kit.engine.external_tasks(instance_id=inst.id) == []
