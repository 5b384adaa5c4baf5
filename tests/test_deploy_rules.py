"""Deploy-time rules aligned with Camunda 7's BpmnParse (issue 21, item 3; the table in
docs/bpmn.md, "Deploy-time rules compared with Camunda 7's BpmnParse")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bpm import DeploymentError, Engine
from bpm.bpmn import parse_bpmn
from tests.engine_helpers import table_dump
from tests.test_scopes_model import chain, xml

MESSAGES = (
    '<bpmn:message id="Msg_a" name="a" />\n<bpmn:message id="Msg_b" name="b" />\n'
    '<bpmn:signal id="Sig" name="sig" />\n'
)


def _doc(body: str, key: str = "p") -> str:
    return xml(body, key).replace("<bpmn:process", MESSAGES + "<bpmn:process", 1)


def _boundaries(second: str, key: str = "p") -> str:
    return _doc(
        '<bpmn:startEvent id="s" />\n<bpmn:userTask id="work" />\n<bpmn:endEvent id="e" />\n'
        + chain("s", "work", "e")
        + '\n<bpmn:boundaryEvent id="first" attachedToRef="work">'
        '<bpmn:messageEventDefinition messageRef="Msg_a" /></bpmn:boundaryEvent>\n'
        f'<bpmn:boundaryEvent id="second" attachedToRef="work">'
        f'<bpmn:messageEventDefinition messageRef="{second}" /></bpmn:boundaryEvent>\n'
        '<bpmn:endEvent id="e1" />\n<bpmn:endEvent id="e2" />\n'
        + chain("first", "e1")
        + "\n"
        + chain("second", "e2"),
        key,
    )


@pytest.fixture
def sqlite_engine(sqlite_database_url: str) -> Iterator[Engine]:
    engine = Engine(sqlite_database_url)
    engine.upgrade()
    yield engine
    engine.close()


def test_two_message_boundaries_of_one_name_on_one_activity_are_refused(
    sqlite_engine: Engine,
) -> None:
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(_boundaries("Msg_a"))
    found = [(p.element_id, p.message) for p in info.value.problems]
    assert len(found) == 1, found
    element, message = found[0]
    assert element == "second"
    assert "'first' and 'second' on 'work'" in message and "message 'a'" in message
    before = table_dump(sqlite_engine)
    with pytest.raises(DeploymentError, match="'second'"):
        sqlite_engine.deploy(_boundaries("Msg_a", key="twins"))
    assert table_dump(sqlite_engine) == before


def test_message_boundaries_of_two_names_on_one_activity_deploy() -> None:
    model = parse_bpmn(_boundaries("Msg_b"))
    assert {b.id for b in model.boundaries["work"]} == {"first", "second"}


def test_a_node_no_start_event_reaches_deploys_with_a_warning_and_runs(
    sqlite_engine: Engine,
) -> None:
    # Camunda's own models hold such nodes (an end event left without its incoming flow).
    text = _doc(
        '<bpmn:startEvent id="s" />\n<bpmn:userTask id="work" />\n<bpmn:endEvent id="e" />\n'
        '<bpmn:endEvent id="orphan" />\n' + chain("s", "work", "e")
    )
    warnings = parse_bpmn(text).warnings
    assert any("'orphan' cannot be reached" in w for w in warnings), warnings
    sqlite_engine.deploy(text)
    instance = sqlite_engine.start("p")
    (task,) = sqlite_engine.user_tasks(instance_id=instance.id)
    assert task.node_id == "work"


@pytest.mark.parametrize(
    "definition",
    [
        '<bpmn:messageEventDefinition messageRef="Msg_a" />',
        '<bpmn:signalEventDefinition signalRef="Sig" />',
        "<bpmn:conditionalEventDefinition><bpmn:condition>x &gt; 1</bpmn:condition>"
        "</bpmn:conditionalEventDefinition>",
    ],
    ids=["message", "signal", "conditional"],
)
def test_an_event_start_in_a_sub_process_is_refused(sqlite_engine: Engine, definition: str) -> None:
    # Entering a sub-process never waits for it: it could never run (it deployed with
    # only a warning once unreachable nodes became warnings; Camunda 7 refuses it too).
    text = _doc(
        '<bpmn:startEvent id="s" />\n<bpmn:subProcess id="sub">'
        '<bpmn:startEvent id="in" /><bpmn:startEvent id="bad">'
        + definition
        + '</bpmn:startEvent><bpmn:endEvent id="x" />'
        + chain("in", "x")
        + chain("bad", "x")
        + '</bpmn:subProcess>\n<bpmn:endEvent id="e" />\n'
        + chain("s", "sub", "e"),
        key="typed_start",
    )
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(text)
    found = [(p.element_id, p.message) for p in info.value.problems]
    assert len(found) == 1, found
    assert found[0][0] == "bad" and "sub-process 'sub'" in found[0][1]
    before = table_dump(sqlite_engine)
    with pytest.raises(DeploymentError, match="'bad'"):
        sqlite_engine.deploy(text)
    assert table_dump(sqlite_engine) == before
