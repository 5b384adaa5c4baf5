"""Scopes in the model: parsing every spelling, the builder, validation (issue 10).

Bad models are refused at deploy with the element named, and a refused deploy stores
nothing.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from bpm import DeploymentError, Engine
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.engine_helpers import order_process, table_dump

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    f'<bpmn:definitions xmlns:bpmn="{BPMN}" '
    'xmlns:camunda="http://camunda.org/schema/1.0/bpmn" '
    'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" '
    'xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn" id="d" targetNamespace="t">\n'
    '<bpmn:error id="Boom" errorCode="BOOM" />\n'
)


def xml(body: str, key: str = "p") -> str:
    process = f'<bpmn:process id="{key}" isExecutable="true">\n{body}\n</bpmn:process>'
    return f"{HEAD}{process}\n</bpmn:definitions>\n"


def chain(*ids: str) -> str:
    return "\n".join(
        f'<bpmn:sequenceFlow id="Flow_{a}_{b}" sourceRef="{a}" targetRef="{b}" />'
        for a, b in pairwise(ids)
    )


def refused(text: str) -> list[tuple[str | None, str]]:
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(text)
    return [(p.element_id, p.message) for p in info.value.problems]


SUB = xml(
    '<bpmn:startEvent id="s" />\n'
    '<bpmn:subProcess id="sp">\n'
    "  <bpmn:extensionElements><camunda:inputOutput>\n"
    '    <camunda:inputParameter name="limit">${amount * 2}</camunda:inputParameter>\n'
    '    <camunda:inputParameter name="greeting">Dear ${name}!</camunda:inputParameter>\n'
    '    <camunda:inputParameter name="tags"><camunda:list><camunda:value>a</camunda:value>'
    "<camunda:value>${name}</camunda:value></camunda:list></camunda:inputParameter>\n"
    '    <camunda:outputParameter name="checked">${limit}</camunda:outputParameter>\n'
    "  </camunda:inputOutput></bpmn:extensionElements>\n"
    '  <bpmn:startEvent id="s2" />\n'
    '  <bpmn:serviceTask id="work" camunda:delegateExpression="${work}" />\n'
    '  <bpmn:endEvent id="e2" />\n'
    f"  {chain('s2', 'work', 'e2')}\n"
    '  <bpmn:subProcess id="esp" triggeredByEvent="true">\n'
    '    <bpmn:startEvent id="on_boom"><bpmn:errorEventDefinition errorRef="Boom" />'
    "</bpmn:startEvent>\n"
    '    <bpmn:endEvent id="esp_end" />\n'
    f"    {chain('on_boom', 'esp_end')}\n"
    "  </bpmn:subProcess>\n"
    "</bpmn:subProcess>\n"
    '<bpmn:endEvent id="e" />\n' + chain("s", "sp", "e")
)


def test_a_sub_process_is_parsed_with_its_nodes_in_it() -> None:
    model = parse_bpmn(SUB)
    assert model.nodes["sp"] == n.SubProcess(
        "sp",
        inputs=(
            n.VariableMapping("limit", "amount * 2"),
            n.VariableMapping("greeting", '"Dear " + string(name) + "!"'),
            n.VariableMapping("tags", '["a", name]'),
        ),
        outputs=(n.VariableMapping("checked", "limit"),),
    )
    assert {x.id for x in model.members["sp"]} == {"s2", "work", "e2", "esp"}
    assert isinstance(model.nodes["esp"], n.EventSubProcess)
    trigger = model.trigger_of("esp")
    assert trigger is not None and trigger.error_start and trigger.error_code == "BOOM"
    assert [x.id for x in model.start_events] == ["s"]  # the process's own only
    assert [x.id for x in model.starts_in("sp")] == ["s2"]
    assert model.depth("work") == 1 and model.depth("on_boom") == 2
    assert model.scoped and model.sees_scopes("work") and not model.sees_scopes("e")


def test_models_with_scopes_survive_their_json_form() -> None:
    model = parse_bpmn(SUB)
    again = ProcessModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again == model and again.checksum() == model.checksum()


def test_a_model_without_scopes_keeps_its_json_form() -> None:
    """New fields are left out when unused: existing definitions keep their checksums."""
    for node in order_process().to_dict()["nodes"]:
        assert not {"container", "loop", "inputs", "outputs", "error_start"} & set(node)


def test_multi_instance_in_every_spelling() -> None:
    def task(marker: str) -> str:
        return xml(
            '<bpmn:startEvent id="s" />\n'
            f'<bpmn:serviceTask id="t" bpm:handler="h">{marker}</bpmn:serviceTask>\n'
            '<bpmn:endEvent id="e" />\n' + chain("s", "t", "e")
        )

    camunda = parse_bpmn(
        task(
            '<bpmn:multiInstanceLoopCharacteristics isSequential="true" '
            'camunda:collection="${orders}" camunda:elementVariable="order">'
            "<bpmn:completionCondition>${nrOfCompletedInstances &gt;= 2}"
            "</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics>"
        )
    ).nodes["t"]
    assert isinstance(camunda, n.ServiceTask)
    assert camunda.loop == n.MultiInstance(
        parallel=False,
        collection="orders",
        element="order",
        completion="nrOfCompletedInstances >= 2",
    )
    zeebe = parse_bpmn(
        task(
            "<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements>"
            '<zeebe:loopCharacteristics inputCollection="= orders" inputElement="order" '
            'outputCollection="results" outputElement="= result" />'
            "</bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>"
        )
    ).nodes["t"]
    assert isinstance(zeebe, n.ServiceTask)
    assert zeebe.loop == n.MultiInstance(
        collection="=orders", element="order", output_collection="results",
        output_element="=result",
    )  # fmt: skip
    counted = parse_bpmn(
        task(
            "<bpmn:multiInstanceLoopCharacteristics><bpmn:loopCardinality>3"
            "</bpmn:loopCardinality></bpmn:multiInstanceLoopCharacteristics>"
        )
    ).nodes["t"]
    assert isinstance(counted, n.ServiceTask) and counted.loop == n.MultiInstance(cardinality="3")
    standard = parse_bpmn(
        task(
            "<bpmn:multiInstanceLoopCharacteristics>"
            "<bpmn:loopDataInputRef>orders</bpmn:loopDataInputRef>"
            '<bpmn:inputDataItem name="order" /></bpmn:multiInstanceLoopCharacteristics>'
        )
    ).nodes["t"]
    assert isinstance(standard, n.ServiceTask)
    assert standard.loop == n.MultiInstance(collection="orders", element="order")


def test_call_activities_in_every_spelling() -> None:
    camunda = parse_bpmn(
        xml(
            '<bpmn:startEvent id="s" />\n'
            '<bpmn:callActivity id="c" calledElement="child" '
            'camunda:calledElementBinding="version" camunda:calledElementVersion="2">\n'
            "<bpmn:extensionElements>\n"
            '<camunda:in businessKey="#{execution.processBusinessKey}" />\n'
            '<camunda:in source="amount" target="total" />\n'
            '<camunda:in sourceExpression="${amount + 1}" target="more" />\n'
            '<camunda:out variables="all" />\n'
            "</bpmn:extensionElements></bpmn:callActivity>\n"
            '<bpmn:endEvent id="e" />\n' + chain("s", "c", "e")
        )
    ).nodes["c"]
    assert camunda == n.CallActivity(
        "c",
        called_element="child",
        binding=n.CallBinding.VERSION,
        version="2",
        call_inputs=(n.VariableMapping("total", "amount"), n.VariableMapping("more", "amount + 1")),
        all_out=True,
        inherit_key=True,
    )
    zeebe = parse_bpmn(
        xml(
            '<bpmn:startEvent id="s" />\n'
            '<bpmn:callActivity id="c"><bpmn:extensionElements>'
            '<zeebe:calledElement processId="=&quot;child&quot;" '
            'propagateAllChildVariables="false" />'
            '<zeebe:ioMapping><zeebe:output source="=total" target="sum" /></zeebe:ioMapping>'
            "</bpmn:extensionElements></bpmn:callActivity>\n"
            '<bpmn:endEvent id="e" />\n' + chain("s", "c", "e")
        )
    ).nodes["c"]
    assert isinstance(zeebe, n.CallActivity)
    assert (zeebe.called_element, zeebe.all_in, zeebe.all_out) == ("child", True, False)
    assert zeebe.outputs == (n.VariableMapping("sum", "=total"),)


def test_builder_expresses_every_scope_and_matches_the_parser() -> None:
    built = (
        Process("p")
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("s2")
                .service_task("work", handler="work")
                .end("e2")
                .sequence("s2", "work", "e2")
                .event_sub_process(
                    "esp",
                    lambda e: (
                        e.start("on_boom", error="BOOM")
                        .end("esp_end")
                        .sequence("on_boom", "esp_end")
                    ),
                )
            ),
            inputs={
                "limit": "${amount * 2}",
            },
            outputs={"checked": "limit"},
        )
        .end("e")
        .sequence("s", "sp", "e")
        .build()
    )
    parsed = parse_bpmn(
        SUB.replace(
            '    <camunda:inputParameter name="greeting">Dear ${name}!</camunda:inputParameter>\n',
            "",
        ).replace(
            '    <camunda:inputParameter name="tags"><camunda:list><camunda:value>a'
            "</camunda:value><camunda:value>${name}</camunda:value></camunda:list>"
            "</camunda:inputParameter>\n",
            "",
        )
    )
    assert built.nodes == parsed.nodes
    assert set(built.flows) == set(parsed.flows)


def test_builder_multi_instance_call_activity_and_inclusive_gateway() -> None:
    model = (
        Process("b")
        .start("s")
        .service_task(
            "charge",
            handler="charge",
            for_each="orders",
            as_="order",
            parallel=True,
            collect="receipts",
            until="nrOfCompletedInstances >= 2",
        )
        .call_activity("ship", "shipping", inputs={"order": "orders[0]"}, times=2)
        .inclusive("split", default="f_plain")
        .task("plain")
        .task("fancy")
        .inclusive("merge")
        .end("e")
        .sequence("s", "charge", "ship", "split")
        .flow("split", "plain", id="f_plain", default=True)
        .flow("split", "fancy", condition="${fancy}")
        .sequence("plain", "merge", "e")
        .flow("fancy", "merge")
        .build()
    )
    charge = model.nodes["charge"]
    assert isinstance(charge, n.ServiceTask) and charge.loop == n.MultiInstance(
        collection="orders",
        element="order",
        output_collection="receipts",
        completion="nrOfCompletedInstances >= 2",
    )
    ship = model.nodes["ship"]
    assert isinstance(ship, n.CallActivity)
    assert ship.loop == n.MultiInstance(cardinality="2")
    assert (ship.all_in, ship.all_out) == (False, True)
    assert model.nodes["split"] == n.InclusiveGateway("split", default_flow="f_plain")
    assert model.upstream["merge"] == frozenset({"plain", "fancy", "split", "ship", "charge", "s"})


# -- refused at deploy, with the element named ---------------------------------------------


def _bad(case: str) -> str:
    cases = {
        "call-without-called-element": (
            '<bpmn:startEvent id="s" /><bpmn:callActivity id="bad" />'
            '<bpmn:endEvent id="e" />' + chain("s", "bad", "e")
        ),
        "collection-does-not-compile": (
            '<bpmn:startEvent id="s" /><bpmn:serviceTask id="bad" bpm:handler="h">'
            '<bpmn:multiInstanceLoopCharacteristics camunda:collection="${items[}" />'
            '</bpmn:serviceTask><bpmn:endEvent id="e" />' + chain("s", "bad", "e")
        ),
        "inclusive-join-that-never-fires": (
            '<bpmn:startEvent id="s" /><bpmn:parallelGateway id="fork" />'
            '<bpmn:task id="a" /><bpmn:task id="b" /><bpmn:inclusiveGateway id="bad" />'
            '<bpmn:parallelGateway id="pjoin" /><bpmn:exclusiveGateway id="again" '
            'default="f_out" /><bpmn:endEvent id="e" />'
            + chain("s", "fork", "a", "bad", "pjoin", "again")
            + chain("fork", "b", "pjoin")
            + '<bpmn:sequenceFlow id="f_back" sourceRef="again" targetRef="bad">'
            "<bpmn:conditionExpression>${more}</bpmn:conditionExpression></bpmn:sequenceFlow>"
            '<bpmn:sequenceFlow id="f_out" sourceRef="again" targetRef="e" />'
        ),
        "event-sub-process-with-incoming-flow": (
            '<bpmn:startEvent id="s" /><bpmn:subProcess id="bad" triggeredByEvent="true">'
            '<bpmn:startEvent id="es"><bpmn:errorEventDefinition /></bpmn:startEvent>'
            '<bpmn:endEvent id="ee" />'
            + chain("es", "ee")
            + "</bpmn:subProcess>"
            + chain("s", "bad")
        ),
        "flow-across-a-sub-process-border": (
            '<bpmn:startEvent id="s" /><bpmn:subProcess id="sp"><bpmn:startEvent id="s2" />'
            '<bpmn:endEvent id="e2" />' + chain("s2", "e2") + "</bpmn:subProcess>"
            '<bpmn:endEvent id="e" />'
            + chain("s", "sp", "e")
            + '<bpmn:sequenceFlow id="bad" sourceRef="s" targetRef="e2" />'
        ),
        "error-start-outside-an-event-sub-process": (
            '<bpmn:startEvent id="bad"><bpmn:errorEventDefinition /></bpmn:startEvent>'
            '<bpmn:endEvent id="e" />' + chain("bad", "e")
        ),
        "event-sub-process-without-trigger": (
            '<bpmn:startEvent id="s" /><bpmn:endEvent id="e" />'
            + chain("s", "e")
            + '<bpmn:subProcess id="esp" triggeredByEvent="true"><bpmn:startEvent id="bad" />'
            '<bpmn:endEvent id="ee" />' + chain("bad", "ee") + "</bpmn:subProcess>"
        ),
        "mapping-does-not-compile": (
            '<bpmn:startEvent id="s" /><bpmn:serviceTask id="bad" bpm:handler="h">'
            "<bpmn:extensionElements><camunda:inputOutput>"
            '<camunda:inputParameter name="x">${a +}</camunda:inputParameter>'
            "</camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>"
            '<bpmn:endEvent id="e" />' + chain("s", "bad", "e")
        ),
    }
    return xml(cases[case])


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("call-without-called-element", "has no calledElement"),
        ("collection-does-not-compile", "collection of 'bad'"),
        ("inclusive-join-that-never-fires", "could never fire"),
        ("event-sub-process-with-incoming-flow", "has incoming or outgoing sequence flows"),
        ("flow-across-a-sub-process-border", "may not cross a sub-process border"),
        ("error-start-outside-an-event-sub-process", "is not in an event sub-process"),
        ("event-sub-process-without-trigger", "has no trigger"),
        ("mapping-does-not-compile", "'bad'"),
    ],
)
def test_bad_scopes_are_refused_with_the_element_named(case: str, fragment: str) -> None:
    problems = refused(_bad(case))
    assert any(element == "bad" and fragment in message for element, message in problems), problems


def test_a_refused_deploy_stores_nothing(tmp_path: Path) -> None:
    engine = Engine(f"sqlite:///{tmp_path / 'bpm.db'}")
    engine.upgrade()
    before = table_dump(engine)
    for case in ("call-without-called-element", "inclusive-join-that-never-fires"):
        with pytest.raises(DeploymentError, match="'bad'"):
            engine.deploy(_bad(case))
    assert table_dump(engine) == before
    engine.close()


def test_two_inclusive_gateways_on_a_loop_deploy() -> None:
    """A merge and a join on one loop are fine: neither waits for the other."""
    model = parse_bpmn(
        xml(
            '<bpmn:startEvent id="s" /><bpmn:inclusiveGateway id="merge" />'
            '<bpmn:inclusiveGateway id="split" /><bpmn:task id="a" /><bpmn:task id="b" />'
            '<bpmn:inclusiveGateway id="join" /><bpmn:exclusiveGateway id="again" '
            'default="f_out" /><bpmn:endEvent id="e" />'
            + chain("s", "merge", "split", "a", "join", "again")
            + chain("split", "b", "join")
            + '<bpmn:sequenceFlow id="f_back" sourceRef="again" targetRef="merge">'
            "<bpmn:conditionExpression>${more}</bpmn:conditionExpression></bpmn:sequenceFlow>"
            '<bpmn:sequenceFlow id="f_out" sourceRef="again" targetRef="e" />'
        )
    )
    assert set(model.upstream) == {"merge", "join"}
