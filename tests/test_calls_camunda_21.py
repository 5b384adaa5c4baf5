"""Call activities as Camunda 7's own tests define them (issue 21; the ports are in
tests/conformance/test_camunda_call_activity.py): the bad-input paths of what those ports
made the engine do, on both backends. A version or version tag read from a variable that
holds no such thing, and a tag that two versions carry, are incidents on the call activity
with nothing started; an out mapping that fails while an error leaves the call passes
nothing, and the error is still caught."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bpm import BpmnError
from bpm.errors import DeploymentError
from bpm.handlers import TaskContext
from bpm.testing import BpmTest

CHILD = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="child" isExecutable="true" camunda:versionTag="{tag}">
    <startEvent id="cs"/>
    <sequenceFlow id="c1" sourceRef="cs" targetRef="work"/>
    <userTask id="work" name="{name}"/>
    <sequenceFlow id="c2" sourceRef="work" targetRef="ce"/>
    <endEvent id="ce"/>
  </process>
</definitions>"""

CALLER = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="caller" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="call"/>
    <callActivity id="call" calledElement="child" {binding}/>
    <sequenceFlow id="f2" sourceRef="call" targetRef="e"/>
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


def child(tag: str = "t1", name: str = "one") -> str:
    return CHILD.replace("{tag}", tag).replace("{name}", name)


def caller(binding: str) -> str:
    return CALLER.replace("{binding}", binding)


def stuck_at_call(kit: BpmTest, instance_id: str, *words: str) -> None:
    """The call activity has an incident naming ``words``, and no child was started."""
    (incident,) = kit.engine.incidents(instance_id)
    assert incident.node_id == "call"
    for word in words:
        assert word in incident.message
    assert kit.instance(instance_id).children == ()
    assert kit.engine.instances(definition_key="child", state=None) == []
    assert kit.waiting_at(instance_id) == ["call"]


def test_a_version_from_a_variable_picks_that_version(kit: BpmTest) -> None:
    kit.deploy(child(name="one"))
    kit.deploy(child(name="two"))
    kit.deploy(caller('camunda:calledElementBinding="version" camunda:calledElementVersion="${v}"'))
    inst = kit.start("caller", {"v": 1})
    (kid,) = kit.instance(inst.id).children
    assert [t.name for t in kit.engine.user_tasks(kid)] == ["one"]


@pytest.mark.parametrize("value", ["two", True, None, 1.5])
def test_a_version_variable_that_holds_no_version_number_is_an_incident(
    kit: BpmTest, value: object
) -> None:
    kit.deploy(child())
    kit.deploy(caller('camunda:calledElementBinding="version" camunda:calledElementVersion="${v}"'))
    inst = kit.start("caller", {"v": value})
    stuck_at_call(kit, inst.id, "'v'", "not a version number")


@pytest.mark.parametrize("variables", [{}, {"tag": ""}, {"tag": 3}])
def test_a_version_tag_variable_that_holds_no_tag_is_an_incident(
    kit: BpmTest, variables: dict[str, object]
) -> None:
    kit.deploy(child())
    kit.deploy(
        caller('camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="${tag}"')
    )
    inst = kit.start("caller", variables)
    stuck_at_call(kit, inst.id, "'tag'", "not a version tag")


def test_a_version_tag_two_versions_carry_is_an_incident_naming_both(kit: BpmTest) -> None:
    kit.deploy(child(tag="t1", name="one"))
    kit.deploy(child(tag="t1", name="two"))
    kit.deploy(child(tag="t2", name="three"))
    kit.deploy(
        caller('camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="t1"')
    )
    inst = kit.start("caller")
    stuck_at_call(kit, inst.id, "versions 1 and 2", "'t1'")


def test_a_version_that_is_neither_a_number_nor_a_variable_is_refused_at_deploy(
    kit: BpmTest,
) -> None:
    before = kit.engine.definitions()
    with pytest.raises(DeploymentError, match="not a version number"):
        kit.deploy(
            caller('camunda:calledElementBinding="version" camunda:calledElementVersion="${a+1}"')
        )
    assert kit.engine.definitions() == before


THROWING_CHILD = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="child" isExecutable="true">
    <startEvent id="cs"/>
    <sequenceFlow id="c1" sourceRef="cs" targetRef="boom"/>
    <serviceTask id="boom" camunda:class="Boom"/>
    <sequenceFlow id="c2" sourceRef="boom" targetRef="ce"/>
    <endEvent id="ce"/>
  </process>
</definitions>"""

CATCHING = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="caller" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="call"/>
    <callActivity id="call" calledElement="child">
      <extensionElements>
        <camunda:out source="done" target="done"/>
        <camunda:out sourceExpression="${{{out}}}" target="derived"/>
      </extensionElements>
    </callActivity>
    <boundaryEvent id="caught" attachedToRef="call">
      <errorEventDefinition/>
    </boundaryEvent>
    <sequenceFlow id="f2" sourceRef="caught" targetRef="after"/>
    <userTask id="after"/>
    <sequenceFlow id="f3" sourceRef="after" targetRef="e"/>
    <endEvent id="e"/>
    <sequenceFlow id="f4" sourceRef="call" targetRef="e2"/>
    <endEvent id="e2"/>
  </process>
</definitions>"""


def boom(ctx: TaskContext) -> None:
    raise BpmnError("E1", "failed on purpose", {"done": "half"})


@pytest.mark.parametrize(
    ("out", "expected"),
    [("done + '!'", {"done": "half", "derived": "half!"}), ("missing + 1", {})],
)
def test_an_error_leaving_a_call_passes_the_outputs_or_nothing(
    kit: BpmTest, out: str, expected: dict[str, object]
) -> None:
    kit.handler("Boom", boom)
    kit.deploy(THROWING_CHILD)
    kit.deploy(CATCHING.replace("{{{out}}}", "{" + out + "}"))
    inst = kit.start("caller")
    assert kit.waiting_at(inst) == ["after"]
    seen = kit.variables(inst)
    assert {k: seen[k] for k in ("done", "derived") if k in seen} == expected
