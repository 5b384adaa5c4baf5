"""Property: whatever is done to a valid model, deploying it ends in a model or in a
:class:`DeploymentError`, never in another exception (issue 9, item 1).

Valid models (the test data and the examples) are mutated the way files go wrong: elements
removed, renamed, duplicated, moved or added, attributes dropped or set to odd values, text
replaced, bytes truncated or flipped. Models that still deploy must also survive the JSON
round trip the store uses.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from xml.etree import ElementTree as ET

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpm import Engine
from bpm.bpmn import parse_bpmn_file
from bpm.bpmn.namespaces import BPM_NS, BPMN_NS, CAMUNDA_NS, ZEEBE_NS
from bpm.errors import DeploymentError
from bpm.model.process import ProcessModel
from bpm.model.validate import check_model

ROOT = Path(__file__).resolve().parent
SOURCES = [
    *sorted((ROOT / "data" / "modeler").glob("*.bpmn")),
    ROOT / "data" / "camunda_full.bpmn",
    ROOT.parent / "examples" / "order.bpmn",
]
for prefix, uri in (("bpmn", BPMN_NS), ("camunda", CAMUNDA_NS), ("zeebe", ZEEBE_NS)):
    ET.register_namespace(prefix, uri)
ET.register_namespace("bpm", BPM_NS)

B, C, Z = f"{{{BPMN_NS}}}", f"{{{CAMUNDA_NS}}}", f"{{{ZEEBE_NS}}}"
TAGS = [
    B + name
    for name in (
        "task", "serviceTask", "scriptTask", "userTask", "manualTask", "sendTask",
        "businessRuleTask", "receiveTask", "subProcess", "callActivity", "startEvent",
        "endEvent", "intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent",
        "exclusiveGateway", "parallelGateway", "inclusiveGateway", "eventBasedGateway",
        "sequenceFlow", "conditionExpression", "timerEventDefinition", "timeDuration",
        "timeDate", "timeCycle", "errorEventDefinition", "messageEventDefinition",
        "signalEventDefinition", "escalationEventDefinition", "compensateEventDefinition",
        "cancelEventDefinition", "conditionalEventDefinition", "terminateEventDefinition",
        "linkEventDefinition", "multiInstanceLoopCharacteristics", "extensionElements",
        "script", "process", "error", "potentialOwner", "humanPerformer",
        "resourceAssignmentExpression", "formalExpression", "documentation", "laneSet",
    )
] + [
    C + "properties", C + "property", C + "executionListener", C + "inputOutput",
    C + "failedJobRetryTimeCycle", C + "connector", C + "connectorId",
    Z + "taskDefinition", Z + "taskHeaders", Z + "header", Z + "script", Z + "ioMapping",
    Z + "assignmentDefinition", Z + "taskSchedule", Z + "formDefinition",
    Z + "priorityDefinition", Z + "calledDecision", "{http://example.com/x}thing",
]  # fmt: skip
ATTRIBUTES = [
    "id", "name", "sourceRef", "targetRef", "default", "attachedToRef", "cancelActivity",
    "isExecutable", "errorRef", "errorCode", "scriptFormat", "language", "isForCompensation",
    "type", "retries", "key", "value", "expression", "resultVariable", "assignee",
    "candidateGroups", "candidateUsers", "dueDate", "priority", "formId", "decisionId",
    C + "class", C + "expression", C + "delegateExpression", C + "type", C + "topic",
    C + "asyncBefore", C + "assignee", C + "candidateUsers", C + "dueDate", C + "priority",
    C + "formKey", C + "formRef", C + "resultVariable", C + "taskPriority", C + "resource",
    C + "failedJobRetryTimeCycle", f"{{{BPM_NS}}}handler", f"{{{BPM_NS}}}retry",
    f"{{{BPM_NS}}}lease", Z + "modelerTemplate",
]  # fmt: skip
VALUES = [
    "", " ", "x", "start", "end", "work", "true", "false", "${", "${x}", "#{x}", "${a.b(c)}",
    "=x", '="x"', "= a and", "R/P", "R3/PT1S", "R0/PT0S", "PT5M", "-PT1S", "P", "2030-01-01",
    "0 0 * * * ?", "0 0 9 ? * MON#2", "cel", "CEL", "groovy", "javascript", "external",
    "fixed(3, PT1S)", "exponential(1,", "user(x), group(y)", "[", "a" * 300, "é\u2603",
    "amount > 100", "amount gt 100 and not empty x", "True", "x == None", "1e999",
]  # fmt: skip

settings.register_profile(
    "mutations",
    max_examples=int(os.environ.get("BPM_FUZZ_EXAMPLES", "300")),  # more for a long hunt
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _elements(root: ET.Element) -> list[ET.Element]:
    return list(root.iter())


def _parents(root: ET.Element) -> dict[ET.Element, ET.Element]:
    return {child: parent for parent in root.iter() for child in parent}


def mutate(root: ET.Element, data: st.DataObject) -> None:
    """Apply one random mutation to the tree in place."""
    elements = _elements(root)
    el = data.draw(st.sampled_from(elements), label="element")
    parents = _parents(root)
    kind = data.draw(
        st.sampled_from(
            ["delete", "rename", "duplicate", "move", "add", "drop_attr", "set_attr", "text"]
        ),
        label="mutation",
    )
    if kind == "delete" and el in parents:
        parents[el].remove(el)
    elif kind == "rename":
        el.tag = data.draw(st.sampled_from(TAGS), label="tag")
    elif kind == "duplicate" and el in parents:
        parents[el].append(copy.deepcopy(el))
    elif kind == "move" and el in parents:
        target = data.draw(st.sampled_from(elements), label="new parent")
        if target is not el and el not in target.iter() and el in parents[el]:
            parents[el].remove(el)
            target.append(el)
    elif kind == "add":
        child = ET.SubElement(el, data.draw(st.sampled_from(TAGS), label="new tag"))
        for _ in range(data.draw(st.integers(0, 3), label="attributes")):
            child.set(data.draw(st.sampled_from(ATTRIBUTES)), data.draw(st.sampled_from(VALUES)))
        if data.draw(st.booleans(), label="with text"):
            child.text = data.draw(st.sampled_from(VALUES))
    elif kind == "drop_attr" and el.attrib:
        del el.attrib[data.draw(st.sampled_from(sorted(el.attrib)), label="attribute")]
    elif kind == "set_attr":
        name = data.draw(st.sampled_from(ATTRIBUTES + sorted(el.attrib)), label="attribute")
        el.set(name, data.draw(st.sampled_from(VALUES) | st.text(max_size=20), label="value"))
    elif kind == "text":
        el.text = data.draw(st.sampled_from(VALUES) | st.text(max_size=30), label="text")


def deploys_or_refuses(source: str | bytes) -> None:
    """The property: a model (which round-trips) or a DeploymentError, nothing else."""
    try:
        parsed = parse_bpmn_file(source, "mutated.bpmn")
    except DeploymentError as exc:
        assert exc.problems, "a DeploymentError lists its problems"
        return
    for model in parsed.models:
        again = ProcessModel.from_dict(model.to_dict())
        assert again == model and again.checksum() == model.checksum()
        assert check_model(again)[0] == []


@settings(settings.get_profile("mutations"))
@given(source=st.sampled_from(SOURCES), steps=st.integers(min_value=1, max_value=4), data=st.data())
def test_mutated_models_deploy_or_are_refused(
    source: Path, steps: int, data: st.DataObject
) -> None:
    root = ET.fromstring(source.read_bytes())
    for _ in range(steps):
        mutate(root, data)
    deploys_or_refuses(ET.tostring(root, encoding="unicode"))


@settings(settings.get_profile("mutations"))
@given(source=st.sampled_from(SOURCES), data=st.data())
def test_damaged_bytes_deploy_or_are_refused(source: Path, data: st.DataObject) -> None:
    raw = bytearray(source.read_bytes())
    for _ in range(data.draw(st.integers(1, 3), label="damages")):
        at = data.draw(st.integers(0, len(raw) - 1), label="offset")
        if data.draw(st.booleans(), label="truncate"):
            raw = raw[:at]
            if not raw:
                break
        else:
            raw[at] = data.draw(st.integers(0, 255), label="byte")
    deploys_or_refuses(bytes(raw))


@settings(
    settings.get_profile("mutations"),
    max_examples=int(os.environ.get("BPM_FUZZ_DEPLOYS", "60")),
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # one database for all examples is the point
    ],
)
@given(source=st.sampled_from(SOURCES), data=st.data())
def test_mutated_models_deploy_on_postgresql_or_are_refused(
    pg_engine: Engine, source: Path, data: st.DataObject
) -> None:
    root = ET.fromstring(source.read_bytes())
    for _ in range(data.draw(st.integers(1, 3), label="steps")):
        mutate(root, data)
    text = ET.tostring(root, encoding="unicode")
    try:
        deployment = pg_engine.create_deployment(("mutated.bpmn", text))
    except DeploymentError as exc:
        assert exc.problems
        return
    for definition in deployment.definitions:  # stored, and read back equal
        assert pg_engine.model(definition.id).checksum() == definition.checksum
