"""Decisions in the engine: ``.dmn`` files deployed with the BPMN, versioned like processes,
evaluated in one transaction with their history (both backends)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from bpm import Engine
from bpm.errors import DeploymentError, NotFound
from bpm.store.decisions import DefinitionQuery, InstanceQuery
from tests.engine_helpers import table_dump

DATA = Path(__file__).resolve().parent / "data"
PRICING = (DATA / "dmn" / "pricing.dmn").read_bytes()
BPMN = (DATA / "forms" / "approval.bpmn").read_bytes()


def test_a_dmn_file_deploys_its_decisions_and_requirements_graph(engine: Engine) -> None:
    d = engine.create_deployment(("approval.bpmn", BPMN), ("pricing.dmn", PRICING))
    assert sorted((x.key, x.version, x.name) for x in d.decisions) == [
        ("d_Discount", 1, "Discount"),
        ("d_Price", 1, "Price"),
    ]
    (drd,) = engine.decisions.requirements()
    assert (drd.key, drd.version, drd.name, drd.resource) == (
        "pricing",
        1,
        "pricing",
        "pricing.dmn",
    )
    assert {x.drd_id for x in d.decisions} == {drd.id}
    assert engine.decisions.xml(drd.deployment_id, drd.resource).startswith("<?xml")


def test_an_unchanged_file_keeps_its_version_an_edited_one_makes_the_next(
    engine: Engine,
) -> None:
    engine.create_deployment(("pricing.dmn", PRICING), name="rules")
    same = engine.create_deployment(("pricing.dmn", PRICING), name="rules")
    assert not same.new
    assert [x.version for x in same.decisions] == [1, 1]
    edited = PRICING.replace(b"<text>0.2</text>", b"<text>0.25</text>")
    again = engine.create_deployment(("pricing.dmn", edited), name="rules")
    assert again.new and sorted(x.version for x in again.decisions) == [2, 2]
    assert engine.decisions.count(DefinitionQuery(key="d_Discount")) == 2
    assert [x.version for x in engine.decisions.definitions(DefinitionQuery(latest=True))] == [2, 2]
    # the latest version decides; an older one can still be asked for by version
    new = engine.decisions.evaluate(key="d_Discount", variables={"Amount": 500, "Customer": "gold"})
    old = engine.decisions.evaluate(
        key="d_Discount", version=1, variables={"Amount": 500, "Customer": "gold"}
    )
    assert (new.value, old.value) == (Decimal("0.25"), Decimal("0.2"))


def test_evaluation_writes_the_history_of_every_decision_in_one_transaction(
    engine: Engine,
) -> None:
    engine.create_deployment(("pricing.dmn", PRICING))
    result = engine.decisions.evaluate(key="d_Price", variables={"Amount": 200, "Customer": "gold"})
    assert result.value == Decimal(160)
    assert result.rules == [{"Price": Decimal(160)}]
    rows = engine.decisions.history(InstanceQuery(definition_key="d_Price"))
    assert [r.id for r in rows] == [result.instance_id]
    (child,) = engine.decisions.history(InstanceQuery(root_id=result.instance_id))
    assert child.definition_key == "d_Discount"
    assert child.inputs == (
        {"id": "in0", "name": "Amount", "value": 200},
        {"id": "in1", "name": "Customer", "value": "gold"},
    )
    assert child.outputs == (
        {"id": "out0", "name": "rate", "rule_id": "r2", "rule_order": 2, "variable": "rate",
         "value": 0.2},
    )  # fmt: skip
    assert engine.decisions.count_history(InstanceQuery(roots_only=True)) == 1


def test_an_invalid_dmn_file_refuses_the_whole_deployment(engine: Engine) -> None:
    before = table_dump(engine)
    broken = PRICING.replace(b"Amount * (1 - Discount)", b"Amount * (1 -")
    with pytest.raises(DeploymentError, match=r"pricing\.dmn.*FEEL syntax error") as err:
        engine.create_deployment(("approval.bpmn", BPMN), ("pricing.dmn", broken))
    assert err.value.problems[0].element_type == "literalExpression"
    doctype = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]>' + PRICING.split(b"?>", 1)[1]
    with pytest.raises(DeploymentError, match="DOCTYPE"):
        engine.create_deployment(("pricing.dmn", doctype))
    assert table_dump(engine) == before


def test_unknown_decisions_and_deleting_the_deployment(engine: Engine) -> None:
    d = engine.create_deployment(("pricing.dmn", PRICING))
    with pytest.raises(NotFound, match="no decision definition with key 'nope'"):
        engine.decisions.evaluate(key="nope")
    engine.delete_deployment(d.id or "")
    assert engine.decisions.count() == 0
    assert engine.decisions.requirements() == []


def test_a_business_rule_task_call_binds_maps_and_records_its_caller(engine: Engine) -> None:
    from bpm.dmn.results import DecisionResultError
    from bpm.engine.decisions import Caller, DecisionCall, call_decision

    first = engine.create_deployment(("pricing.dmn", PRICING))
    engine.create_deployment(
        ("pricing.dmn", PRICING.replace(b"<text>0.2</text>", b"<text>0.3</text>"))
    )
    inputs = {"Amount": 500, "Customer": "gold"}
    caller = Caller(process_instance_id="pi-1", activity_id="price", process_definition_key="p")
    with engine.core.tx() as conn:
        now = engine.core.now()
        latest = call_decision(
            conn, DecisionCall("d_Discount", result_variable="r"), inputs, now, caller
        )
        pinned = DecisionCall(
            "d_Discount", binding="deployment", result_variable="r", map_result="singleEntry"
        )
        by_deployment = call_decision(conn, pinned, inputs, now, caller, first.id)
        by_version = call_decision(
            conn, DecisionCall("d_Discount", "version", 1, result_variable="r", map_result="value"),
            inputs, now, caller,
        )  # fmt: skip
        nothing = call_decision(conn, DecisionCall("d_Price"), inputs, now, caller)
    assert latest == {"r": [{"rate": 0.3}]}
    assert by_deployment == {"r": 0.2} and by_version == {"r": 0.2}
    assert nothing == {}
    rows = engine.decisions.history(InstanceQuery(process_instance_id="pi-1", roots_only=True))
    assert [(r.activity_id, r.process_definition_key) for r in rows] == [("price", "p")] * 4
    bad = DecisionCall("d_Discount", result_variable="x", map_result="everything")
    with pytest.raises(DecisionResultError), engine.core.tx() as conn:
        call_decision(conn, bad, inputs, engine.core.now(), caller)


def test_purging_an_ended_instance_purges_the_decisions_it_evaluated(engine: Engine) -> None:
    from datetime import timedelta

    from bpm.builder import Process
    from bpm.engine.decisions import Caller, DecisionCall, call_decision

    engine.create_deployment(("pricing.dmn", PRICING))
    engine.deploy(Process("quick").start("s").end("e").sequence("s", "e").build())
    inst = engine.start("quick")
    assert engine.get_instance(inst.id).state.value == "completed"
    with engine.core.tx() as conn:
        call = DecisionCall("d_Discount", result_variable="r")
        inputs = {"Amount": 5, "Customer": "x"}
        call_decision(conn, call, inputs, engine.core.now(), Caller(process_instance_id=inst.id))
    engine.decisions.evaluate(key="d_Discount", variables={"Amount": 5, "Customer": "x"})
    assert engine.decisions.count_history() == 2
    later = engine.core.now() + timedelta(days=2)
    assert engine.purge_history(timedelta(days=1), now=later) == 1
    assert engine.decisions.history(InstanceQuery(process_instance_id=inst.id)) == []
    assert engine.decisions.count_history() == 1  # the REST evaluation has no instance
