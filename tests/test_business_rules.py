"""Business rule tasks that evaluate a deployed DMN decision in the step's own transaction:
Camunda 7's ``camunda:decisionRef`` (binding, version, ``mapDecisionResult``) and Zeebe's
``zeebe:calledDecision``, parsed at deploy, run on both backends, recorded in the history."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpm import Engine
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.kinds import activity_type, model_to_bpmn
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.store.decisions import InstanceQuery
from tests.engine_helpers import table_dump

DATA = Path(__file__).resolve().parent / "data"
PRICING = (DATA / "dmn" / "pricing.dmn").read_bytes()
INVOICE_DIR = DATA / "camunda_invoice"
INVOICE_BPMN = (INVOICE_DIR / "invoice_rules.bpmn").read_bytes()
INVOICE_DMN = (INVOICE_DIR / "invoiceBusinessDecisions.dmn").read_bytes()

C7 = 'xmlns:camunda="http://camunda.org/schema/1.0/bpmn"'
ZB = 'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"'


def bpmn(task: str, *, key: str = "rules", after: str = "") -> bytes:
    """A start -> task -> (after) -> end process around one businessRuleTask ``rules``."""
    tail = after or (
        '<bpmn:endEvent id="end"/><bpmn:sequenceFlow id="f2" sourceRef="rules" targetRef="end"/>'
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" {C7} {ZB}
    id="d" targetNamespace="t">
  <bpmn:process id="{key}" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="rules"/>
    {task}
    {tail}
  </bpmn:process>
</bpmn:definitions>""".encode()


def brt(attrs: str, body: str = "") -> str:
    return f'<bpmn:businessRuleTask id="rules" name="Rate" {attrs}>{body}</bpmn:businessRuleTask>'


def zeebe(attrs: str) -> str:
    return brt(
        "", f"<bpmn:extensionElements><zeebe:calledDecision {attrs}/></bpmn:extensionElements>"
    )


# --- parse -------------------------------------------------------------------------------


def test_camunda_and_zeebe_decision_references_parse_into_decision_tasks() -> None:
    model = parse_bpmn(
        bpmn(
            brt(
                'camunda:decisionRef="d_Discount" camunda:decisionRefBinding="version" '
                'camunda:decisionRefVersion="2" camunda:resultVariable="rate" '
                'camunda:mapDecisionResult="singleEntry"'
            )
        )
    )
    task = model.node("rules")
    assert task == n.DecisionTask(
        "rules", "Rate", decision="d_Discount", binding=n.CallBinding.VERSION, version="2",
        result_variable="rate", map_result="singleEntry",
    )  # fmt: skip
    assert activity_type(task) == "businessRuleTask"
    assert ProcessModel.from_dict(model.to_dict()) == model
    tagged = parse_bpmn(
        bpmn(
            zeebe(
                'decisionId="d_Discount" resultVariable="rate" bindingType="versionTag" '
                'versionTag="v1"'
            )
        )
    ).node("rules")
    assert tagged == n.DecisionTask(
        "rules", "Rate", decision="d_Discount", binding=n.CallBinding.VERSION_TAG, version="v1",
        result_variable="rate", map_result="value",
    )  # fmt: skip
    by_variable = parse_bpmn(bpmn(zeebe('decisionId="=which" resultVariable="r"'))).node("rules")
    assert isinstance(by_variable, n.DecisionTask) and by_variable.decision == "${which}"
    plain = parse_bpmn(bpmn(brt('camunda:decisionRef="d_Discount"'))).node("rules")
    assert isinstance(plain, n.DecisionTask)
    assert (plain.binding, plain.map_result, plain.result_variable) == (
        n.CallBinding.LATEST, "resultList", None,
    )  # fmt: skip


def test_a_business_rule_task_without_a_decision_keeps_its_handler_or_topic() -> None:
    handler = parse_bpmn(bpmn(brt('camunda:class="com.acme.Score"'))).node("rules")
    assert isinstance(handler, n.ServiceTask) and handler.handler == "com.acme.Score"
    external = parse_bpmn(bpmn(brt('camunda:type="external" camunda:topic="score"'))).node("rules")
    assert isinstance(external, n.ServiceTask) and external.topic == "score"
    bare = parse_bpmn(bpmn(brt(""))).node("rules")
    assert isinstance(bare, n.ServiceTask) and bare.handler == "rules"


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (brt('camunda:decisionRef="d" camunda:mapDecisionResult="everything"'),
         r"camunda:mapDecisionResult 'everything' of 'rules' is not a decision result mapping"),
        (brt('camunda:decisionRef=""'), "'rules' names no decision"),
        (brt('camunda:decisionRef="d" camunda:decisionRefBinding="newest"'),
         "camunda:decisionRefBinding 'newest' of 'rules' is not one of latest"),
        (brt('camunda:decisionRef="d" camunda:decisionRefBinding="version"'),
         "the version binding needs camunda:decisionRefVersion"),
        (brt('camunda:decisionRef="d" camunda:decisionRefBinding="version" '
             'camunda:decisionRefVersion="two"'), "binds version two"),
        (brt('camunda:decisionRef="d" camunda:decisionRefBinding="versionTag"'),
         "binds by version tag but names none"),
        (brt('camunda:decisionRef="${rules.pick(x)}"'), "is an expression"),
        (brt('camunda:decisionRef="d" camunda:class="com.acme.X"'),
         r"evaluates a decision and is also bound to work \(camunda:class\)"),
        (zeebe('resultVariable="r"'), "'rules' names no decision"),
        (zeebe('decisionId="d"'), "zeebe:calledDecision of 'rules' has no resultVariable"),
        (zeebe('decisionId="=pick(" resultVariable="r"'), "decisionId of 'rules': FEEL"),
        (zeebe('decisionId="d" resultVariable="r" bindingType="version"'),
         "bindingType 'version' of 'rules' is not one of latest, deployment, versionTag"),
    ],
)  # fmt: skip
def test_bad_decision_references_are_refused_naming_the_element(
    engine: Engine, task: str, message: str
) -> None:
    with pytest.raises(DeploymentError, match=message) as err:
        parse_bpmn(bpmn(task))
    assert err.value.problems[0].element_id == "rules"
    before = table_dump(engine)
    with pytest.raises(DeploymentError, match=message):
        engine.create_deployment(("rules.bpmn", bpmn(task)), ("pricing.dmn", PRICING))
    assert table_dump(engine) == before


def test_the_builder_verb_and_the_diagram_writer() -> None:
    model = (
        Process("built")
        .start("s")
        .business_rule_task(
            "price",
            decision="d_Discount",
            result_variable="rate",
            map_result="singleEntry",
            binding="version",
            version=1,
            name="Price it",
        )
        .end("e")
        .sequence("s", "price", "e")
        .build()
    )
    node = model.node("price")
    assert node == n.DecisionTask(
        "price", "Price it", decision="d_Discount", binding=n.CallBinding.VERSION, version="1",
        result_variable="rate", map_result="singleEntry",
    )  # fmt: skip
    xml = model_to_bpmn(model)
    assert '<bpmn:businessRuleTask id="price" name="Price it"' in xml
    with pytest.raises(DeploymentError) as err:
        (
            Process("bad")
            .start("s")
            .business_rule_task("a", decision="", map_result="all", binding="newest")
            .business_rule_task("b", decision="d", version=3)
            .end("e")
            .sequence("s", "a", "b", "e")
            .build()
        )
    text = str(err.value)
    assert "binding 'newest' of 'a'" in text and "'a' names no decision" in text
    assert "maps its result with 'all'" in text
    assert "version= on 'b' needs binding='version' or 'versionTag'" in text


# --- run ---------------------------------------------------------------------------------


def test_a_decision_task_evaluates_in_the_step_and_records_its_history(engine: Engine) -> None:
    task = brt(
        'camunda:decisionRef="d_Discount" camunda:resultVariable="rate" '
        'camunda:mapDecisionResult="singleEntry"'
    )
    engine.create_deployment(("rules.bpmn", bpmn(task)), ("pricing.dmn", PRICING))
    inst = engine.start("rules", variables={"Amount": 500, "Customer": "gold"})
    done = engine.get_instance(inst.id)
    assert done.state.value == "completed"  # no worker ran: evaluated in the start's step
    assert done.variables["rate"] == 0.2
    (row,) = engine.decisions.history(InstanceQuery(process_instance_id=inst.id))
    assert (row.definition_key, row.activity_id, row.process_definition_key) == (
        "d_Discount", "rules", "rules",
    )  # fmt: skip
    assert row.inputs == (
        {"id": "in0", "name": "Amount", "value": 500},
        {"id": "in1", "name": "Customer", "value": "gold"},
    )
    assert [(o["rule_id"], o["value"]) for o in row.outputs] == [("r2", 0.2)]
    (event,) = [e for e in engine.history(inst.id) if e.type == "decision_evaluated"]
    assert event.node_id == "rules"
    assert event.payload["decision_instance"] == row.id
    assert (event.payload["decision"], event.payload["version"]) == ("d_Discount", 1)


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ("singleEntry", "accounting-or-sales"),
        ("singleResult", "accounting-or-sales"),
        ("collectEntries", ["accounting", "sales"]),
        ("resultList", [{"result": "accounting"}, {"result": "sales"}]),
    ],
)
def test_camunda_result_mappings_and_their_errors(
    engine: Engine, mapping: str, expected: object
) -> None:
    """The COLLECT table gives two rules for a small Misc invoice: singleEntry and
    singleResult are errors (Camunda's), an incident; nothing of the evaluation is kept."""
    task = brt(
        f'camunda:decisionRef="invoice-assign-approver" camunda:resultVariable="groups" '
        f'camunda:mapDecisionResult="{mapping}"'
    )
    engine.create_deployment(("rules.bpmn", bpmn(task)), ("invoice.dmn", INVOICE_DMN))
    inst = engine.start("rules", variables={"amount": 30, "invoiceCategory": "Misc"})
    after = engine.get_instance(inst.id)
    history = engine.decisions.history(InstanceQuery(process_instance_id=inst.id))
    if expected == "accounting-or-sales":
        assert after.state.value == "active" and "groups" not in after.variables
        (incident,) = engine.incidents(inst.id)
        assert incident.type == "failedDecision"
        assert f"{mapping} needs at most one matched rule, 2 matched" in (incident.message or "")
        assert history == []
        # one rule matches for a large invoice: the same mapping works
        big = engine.start("rules", variables={"amount": 5000, "invoiceCategory": "Misc"})
        value = engine.get_instance(big.id).variables["groups"]
        assert value == ("management" if mapping == "singleEntry" else {"result": "management"})
        return
    assert after.state.value == "completed"
    assert after.variables["groups"] == expected
    # the required decision is recorded too, pointing to the one asked for
    root = next(r for r in history if r.root_id is None)
    (child,) = [r for r in history if r.root_id == root.id]
    assert (root.definition_key, child.definition_key) == (
        "invoice-assign-approver", "invoiceClassification",
    )  # fmt: skip


def test_zeebe_called_decision_writes_the_decision_value(engine: Engine) -> None:
    task = zeebe('decisionId="d_Price" resultVariable="price"')
    engine.create_deployment(("rules.bpmn", bpmn(task)), ("pricing.dmn", PRICING))
    inst = engine.start("rules", variables={"Amount": 200, "Customer": "gold"})
    assert engine.get_instance(inst.id).variables["price"] == 160
    rows = engine.decisions.history(InstanceQuery(process_instance_id=inst.id, roots_only=True))
    assert [r.definition_key for r in rows] == ["d_Price"]


def test_bindings_pick_the_version_and_a_missing_decision_is_an_incident_to_retry(
    engine: Engine,
) -> None:
    latest = zeebe('decisionId="d_Discount" resultVariable="rate"')
    pinned = brt(
        'camunda:decisionRef="d_Discount" camunda:decisionRefBinding="deployment" '
        'camunda:resultVariable="rate" camunda:mapDecisionResult="singleEntry"'
    )
    engine.create_deployment(("latest.bpmn", bpmn(latest, key="latest")))  # no DMN yet
    inst = engine.start("latest", variables={"Amount": 500, "Customer": "gold"})
    (incident,) = engine.incidents(inst.id)
    assert incident.type == "failedDecision"
    assert "no decision definition with key 'd_Discount'" in (incident.message or "")
    engine.create_deployment(("pinned.bpmn", bpmn(pinned, key="pinned")), ("p.dmn", PRICING))
    edited = PRICING.replace(b"<text>0.2</text>", b"<text>0.3</text>")
    engine.create_deployment(("p.dmn", edited))
    engine.retry_incident(incident.id)
    assert engine.get_instance(inst.id).variables["rate"] == 0.3  # the latest version
    old = engine.start("pinned", variables={"Amount": 500, "Customer": "gold"})
    assert engine.get_instance(old.id).variables["rate"] == 0.2  # its own deployment's
    by_variable = brt(
        'camunda:decisionRef="${which}" camunda:resultVariable="r" '
        'camunda:decisionRefBinding="version" camunda:decisionRefVersion="1" '
        'camunda:mapDecisionResult="singleEntry"'
    )
    engine.create_deployment(("var.bpmn", bpmn(by_variable, key="var")))
    chosen = engine.start("var", variables={"which": "d_Discount", "Amount": 5, "Customer": "x"})
    assert engine.get_instance(chosen.id).variables["r"] == 0
    wrong = engine.start("var", variables={"which": 7, "Amount": 5, "Customer": "x"})
    (bad,) = engine.incidents(wrong.id)
    assert "variable 'which' holds 7, not the id of a decision" in (bad.message or "")


def test_a_camunda_modeler_invoice_deployment_runs_end_to_end(engine: Engine) -> None:
    """A Camunda Modeler BPMN and Camunda's own invoice decisions (no input data: the
    decisions read process variables, the required one's output by its output name)."""
    d = engine.create_deployment(
        ("invoice_rules.bpmn", INVOICE_BPMN), ("invoiceBusinessDecisions.dmn", INVOICE_DMN)
    )
    keys = sorted(x.key for x in d.decisions)
    assert keys == ["invoice-assign-approver", "invoiceClassification"]
    inst = engine.start("invoice_rules", variables={"amount": 900, "invoiceCategory": "Misc"})
    seen = engine.get_instance(inst.id).variables
    assert (seen["classification"], seen["approverGroups"]) == ("budget", ["management"])
    (task,) = engine.user_tasks(inst.id)
    assert task.candidate_groups == ("management",)
    engine.complete_user_task(task.id, {"approved": True})
    assert engine.get_instance(inst.id).state.value == "completed"
    rows = engine.decisions.history(InstanceQuery(process_instance_id=inst.id, roots_only=True))
    assert sorted(r.activity_id or "" for r in rows) == ["assignApprover", "classifyInvoice"]
    small = engine.start(
        "invoice_rules", variables={"amount": 100, "invoiceCategory": "Travel Expenses"}
    )
    (task,) = engine.user_tasks(small.id)
    assert sorted(task.candidate_groups) == ["accounting", "sales"]
