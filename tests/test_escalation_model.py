"""Escalation, link and error catch events in the model: every spelling parsed, the
builder, and bad models refused at deploy with the element named (issue 11)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bpm import DeploymentError, Engine
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.engine_helpers import table_dump
from tests.test_scopes_model import chain, xml

ESCALATIONS = (
    '<bpmn:escalation id="Esc_late" name="late" escalationCode="LATE" />\n'
    '<bpmn:escalation id="Esc_blank" name="blank" />\n'
)


def _doc(body: str, key: str = "p") -> str:
    # The definitions' escalations go before the process, as modelers write them.
    return xml(body, key).replace("<bpmn:process", ESCALATIONS + "<bpmn:process", 1)


CAMUNDA = _doc(
    '<bpmn:startEvent id="s" />\n'
    '<bpmn:subProcess id="sp">\n'
    '  <bpmn:startEvent id="ss" />\n'
    '  <bpmn:intermediateThrowEvent id="late">'
    '<bpmn:escalationEventDefinition escalationRef="Esc_late" /></bpmn:intermediateThrowEvent>\n'
    '  <bpmn:intermediateThrowEvent id="jump">'
    '<bpmn:linkEventDefinition name="L" /></bpmn:intermediateThrowEvent>\n'
    '  <bpmn:intermediateCatchEvent id="land">'
    '<bpmn:linkEventDefinition name="L" /></bpmn:intermediateCatchEvent>\n'
    '  <bpmn:endEvent id="up"><bpmn:escalationEventDefinition escalationRef="Esc_late" />'
    "</bpmn:endEvent>\n"
    f"  {chain('ss', 'late', 'jump')}\n  {chain('land', 'up')}\n"
    "</bpmn:subProcess>\n"
    '<bpmn:boundaryEvent id="on_late" attachedToRef="sp" cancelActivity="false">'
    '<bpmn:escalationEventDefinition escalationRef="Esc_late" '
    'camunda:escalationCodeVariable="why" /></bpmn:boundaryEvent>\n'
    '<bpmn:boundaryEvent id="on_boom" attachedToRef="sp">'
    '<bpmn:errorEventDefinition errorRef="Boom" camunda:errorCodeVariable="code" '
    'camunda:errorMessageVariable="msg" /></bpmn:boundaryEvent>\n'
    '<bpmn:subProcess id="esp" triggeredByEvent="true">\n'
    '  <bpmn:startEvent id="any" isInterrupting="false">'
    "<bpmn:escalationEventDefinition /></bpmn:startEvent>\n"
    '  <bpmn:endEvent id="esp_end" />\n'
    f"  {chain('any', 'esp_end')}\n"
    "</bpmn:subProcess>\n"
    '<bpmn:endEvent id="e" /><bpmn:endEvent id="e2" /><bpmn:endEvent id="e3" />\n'
    + chain("s", "sp", "e")
    + chain("on_late", "e2")
    + chain("on_boom", "e3")
)


def test_camunda_escalation_link_and_error_variables_are_read() -> None:
    model = parse_bpmn(CAMUNDA)
    assert model.nodes["late"] == n.EscalationThrowEvent(
        "late", container="sp", escalation_code="LATE"
    )
    assert model.nodes["up"] == n.EndEvent(
        "up", container="sp", kind=n.EndKind.ESCALATION, escalation_code="LATE"
    )
    assert model.nodes["jump"] == n.LinkThrowEvent("jump", container="sp", link="L")
    assert model.link_targets == {"jump": "land"}
    on_late = model.nodes["on_late"]
    assert isinstance(on_late, n.BoundaryEvent)
    assert (on_late.escalation, on_late.escalation_code, on_late.cancel_activity) == (
        True,
        "LATE",
        False,
    )
    assert on_late.code_variable == "why" and not on_late.is_error
    on_boom = model.nodes["on_boom"]
    assert isinstance(on_boom, n.BoundaryEvent) and on_boom.is_error
    assert (on_boom.code_variable, on_boom.message_variable) == ("code", "msg")
    start = model.nodes["any"]
    assert isinstance(start, n.StartEvent)
    assert (start.escalation_start, start.escalation_code, start.interrupting) == (
        True,
        None,
        False,
    )
    assert model.starts_in("sp") == (model.nodes["ss"],)


def test_the_model_round_trips_through_json_and_old_checksums_stay() -> None:
    model = parse_bpmn(CAMUNDA)
    restored = ProcessModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert restored == model and restored.link_targets == {"jump": "land"}
    plain = Process("plain").start("s").boundary_error("b", "t").task("t").end("e")
    data = plain.sequence("s", "t", "e").build().to_dict()
    # fields a model does not use are left out: the checksums of existing models hold
    boundary = next(x for x in data["nodes"] if x["id"] == "b")
    assert "escalation" not in boundary and "code_variable" not in boundary


def test_zeebe_spells_escalations_the_same_way() -> None:
    text = _doc(
        '<bpmn:startEvent id="s" />'
        '<bpmn:intermediateThrowEvent id="late">'
        '<bpmn:escalationEventDefinition escalationRef="Esc_z" /></bpmn:intermediateThrowEvent>'
        '<bpmn:endEvent id="e"><bpmn:extensionElements><zeebe:properties />'
        "</bpmn:extensionElements></bpmn:endEvent>" + chain("s", "late", "e")
    ).replace(
        ESCALATIONS,
        ESCALATIONS + '<bpmn:escalation id="Esc_z" escalationCode="=&quot;Z&quot;" />\n',
    )
    assert parse_bpmn(text).nodes["late"] == n.EscalationThrowEvent("late", escalation_code="Z")


def test_the_builder_makes_the_same_nodes() -> None:
    model = (
        Process("built")
        .start("s")
        .service_task("t", topic="x")
        .boundary_error(
            "b", "t", error_code="BOOM", error_code_variable="c", error_message_variable="m"
        )
        .throw_escalation("esc", "LATE")
        .link_throw("jump", "L")
        .link_catch("land", "L")
        .end("e", escalation_code="DONE")
        .end("be")
        .sequence("s", "t", "esc", "jump")
        .sequence("land", "e")
        .flow("b", "be")
        .build()
    )
    boundary = model.nodes["b"]
    assert isinstance(boundary, n.BoundaryEvent)
    assert (boundary.code_variable, boundary.message_variable) == ("c", "m")
    assert model.nodes["e"] == n.EndEvent("e", kind=n.EndKind.ESCALATION, escalation_code="DONE")
    assert model.link_targets == {"jump": "land"}


# -- refused ----------------------------------------------------------------------------------

BAD = {
    "unknown-escalation": (
        '<bpmn:startEvent id="s" /><bpmn:subProcess id="sp" />'
        '<bpmn:boundaryEvent id="bad" attachedToRef="sp">'
        '<bpmn:escalationEventDefinition escalationRef="Nope" /></bpmn:boundaryEvent>'
        '<bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />'
        + chain("s", "sp", "e")
        + chain("bad", "e2"),
        "escalationRef 'Nope' names no bpmn:escalation",
    ),
    "throw-without-code": (
        '<bpmn:startEvent id="s" /><bpmn:intermediateThrowEvent id="bad">'
        '<bpmn:escalationEventDefinition escalationRef="Esc_blank" />'
        '</bpmn:intermediateThrowEvent><bpmn:endEvent id="e" />' + chain("s", "bad", "e"),
        "bpmn:escalation 'Esc_blank' has no escalationCode",
    ),
    "throw-without-ref": (
        '<bpmn:startEvent id="s" /><bpmn:endEvent id="bad">'
        "<bpmn:escalationEventDefinition /></bpmn:endEvent>" + chain("s", "bad"),
        "needs escalationRef",
    ),
    "link-without-catch": (
        '<bpmn:startEvent id="s" /><bpmn:intermediateThrowEvent id="bad">'
        '<bpmn:linkEventDefinition name="NOWHERE" /></bpmn:intermediateThrowEvent>'
        + chain("s", "bad"),
        "goes to link 'NOWHERE', which no link catch event in the process catches",
    ),
    "link-across-a-border": (
        '<bpmn:startEvent id="s" /><bpmn:intermediateThrowEvent id="bad">'
        '<bpmn:linkEventDefinition name="IN" /></bpmn:intermediateThrowEvent>'
        '<bpmn:subProcess id="sp"><bpmn:intermediateCatchEvent id="in">'
        '<bpmn:linkEventDefinition name="IN" /></bpmn:intermediateCatchEvent>'
        '<bpmn:endEvent id="se" />' + chain("in", "se") + "</bpmn:subProcess>"
        '<bpmn:endEvent id="e" />' + chain("s", "bad") + chain("sp", "e"),
        "a link cannot cross a sub-process border",
    ),
    "link-caught-twice": (
        '<bpmn:startEvent id="s" /><bpmn:intermediateThrowEvent id="go">'
        '<bpmn:linkEventDefinition name="X" /></bpmn:intermediateThrowEvent>'
        '<bpmn:intermediateCatchEvent id="one"><bpmn:linkEventDefinition name="X" />'
        '</bpmn:intermediateCatchEvent><bpmn:intermediateCatchEvent id="bad">'
        '<bpmn:linkEventDefinition name="X" /></bpmn:intermediateCatchEvent>'
        '<bpmn:endEvent id="e" />' + chain("s", "go") + chain("one", "e") + chain("bad", "e"),
        "may be caught once per (sub-)process",
    ),
    "link-without-name": (
        '<bpmn:startEvent id="s" /><bpmn:intermediateThrowEvent id="bad">'
        "<bpmn:linkEventDefinition /></bpmn:intermediateThrowEvent>" + chain("s", "bad"),
        "has no link name",
    ),
    "flow-into-a-link-catch": (
        '<bpmn:startEvent id="s" /><bpmn:intermediateThrowEvent id="go">'
        '<bpmn:linkEventDefinition name="X" /></bpmn:intermediateThrowEvent>'
        '<bpmn:intermediateCatchEvent id="bad"><bpmn:linkEventDefinition name="X" />'
        '</bpmn:intermediateCatchEvent><bpmn:endEvent id="e" />'
        + chain("s", "go")
        + chain("s", "bad", "e"),
        "has incoming flows",
    ),
    "escalation-start-outside-an-event-sub-process": (
        '<bpmn:startEvent id="s" /><bpmn:subProcess id="sp"><bpmn:startEvent id="bad">'
        '<bpmn:escalationEventDefinition escalationRef="Esc_late" /></bpmn:startEvent>'
        '</bpmn:subProcess><bpmn:endEvent id="e" />' + chain("s", "sp", "e"),
        "is not in an event sub-process",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_escalations_and_links_are_refused_with_the_element_named(case: str) -> None:
    body, fragment = BAD[case]
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(_doc(body))
    found = [(p.element_id, p.message) for p in info.value.problems]
    assert any(element == "bad" and fragment in message for element, message in found), found


def test_an_unknown_escalation_is_one_problem_blaming_nobody_downstream() -> None:
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(_doc(BAD["unknown-escalation"][0]))
    assert [(p.element_id, p.element_type) for p in info.value.problems] == [
        ("bad", "bpmn:boundaryEvent")
    ]


def test_an_escalation_boundary_on_a_plain_task_deploys_with_a_warning() -> None:
    model = (
        Process("warned")
        .start("s")
        .user_task("t")
        .boundary_escalation("never", "t")
        .end("e")
        .end("e2")
        .sequence("s", "t", "e")
        .flow("never", "e2")
        .build()
    )
    assert any("'never'" in w and "it never fires" in w for w in model.warnings), model.warnings


def test_the_builder_refuses_a_link_throw_without_its_catch() -> None:
    with pytest.raises(DeploymentError, match="no link catch event in the process"):
        Process("b").start("s").link_throw("go", "L").flow("s", "go").build()


@pytest.fixture
def sqlite_engine(sqlite_database_url: str) -> Iterator[Engine]:
    engine = Engine(sqlite_database_url)
    engine.upgrade()
    yield engine
    engine.close()


def test_a_refused_deploy_stores_nothing(sqlite_engine: Engine) -> None:
    before = table_dump(sqlite_engine)
    for case in ("unknown-escalation", "link-without-catch"):
        with pytest.raises(DeploymentError, match="'bad'"):
            sqlite_engine.deploy(_doc(BAD[case][0], key=f"refused_{case}"))
    assert table_dump(sqlite_engine) == before
