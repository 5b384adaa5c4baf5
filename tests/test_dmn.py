"""DMN decisions: tables with every hit policy, boxed expressions, DRGs, BKMs, services,
item definitions and imports (no database: the DMN package stands alone)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bpm import dmn
from tests.dmn_models import bkm, decision, definitions, input_data, literal, table

RULES = [
    (["< 18", "-"], ['"minor"', "0"]),
    (["[18..65]", '"gold"'], ['"gold"', "20"]),
    (["[18..65]", "-"], ['"adult"', "10"]),
    ([">= 60", "-"], ['"senior"', "15"]),
]


def model_with(logic: str, *extra: str) -> dmn.DecisionModel:
    body = input_data("Age", "number") + input_data("Tier", "string")
    body += decision("Result", logic, "i_Age", "i_Tier") + "".join(extra)
    return dmn.load(definitions(body))


def evaluate(logic: str, age: int, tier: str = "silver") -> Any:
    return model_with(logic).evaluate("Result", {"Age": age, "Tier": tier})


def test_unique_gives_one_rule_and_null_when_rules_overlap() -> None:
    logic = table(["Age", "Tier"], ["label", "discount"], RULES)
    assert evaluate(logic, 10) == {"label": "minor", "discount": Decimal(0)}
    assert evaluate(logic, 30) == {"label": "adult", "discount": Decimal(10)}
    assert evaluate(logic, 30, "gold") is None  # two rules match: not unique
    assert evaluate(logic, 62) is None


def test_first_priority_and_any() -> None:
    first = table(["Age", "Tier"], ["label", "discount"], RULES, "FIRST")
    assert evaluate(first, 62)["label"] == "adult"
    labels = '"senior","gold","adult","minor"'
    priority = table(
        ["Age", "Tier"], ["label", "discount"], RULES, "PRIORITY", output_values=[labels, ""]
    )
    assert evaluate(priority, 62)["label"] == "senior"
    assert evaluate(priority, 30, "gold")["label"] == "gold"
    same = [(["> 10"], ['"x"']), (["> 20"], ['"x"'])]
    differ = [(["> 10"], ['"x"']), (["> 20"], ['"y"'])]
    assert evaluate(table(["Age"], [""], same, "ANY"), 30) == "x"
    assert evaluate(table(["Age"], [""], differ, "ANY"), 30) is None


def test_collect_and_its_aggregations() -> None:
    rules = [(["> 10"], ["1"]), (["> 20"], ["5"]), (["> 30"], ["10"])]
    collect = table(["Age"], [""], rules, "COLLECT")
    assert evaluate(collect, 25) == [Decimal(1), Decimal(5)]
    assert evaluate(collect, 5) == []
    for how, expected in (("SUM", 16), ("COUNT", 3), ("MIN", 1), ("MAX", 10)):
        assert evaluate(table(["Age"], [""], rules, "COLLECT", how), 40) == Decimal(expected)
    assert evaluate(table(["Age"], [""], rules, "COLLECT", "COUNT"), 5) == Decimal(0)
    assert evaluate(table(["Age"], [""], rules, "COLLECT", "SUM"), 5) is None


def test_rule_order_and_output_order() -> None:
    rules = [(["> 10"], ['"low"']), (["> 20"], ['"high"'])]
    assert evaluate(table(["Age"], [""], rules, "RULE ORDER"), 30) == ["low", "high"]
    ordered = table(["Age"], [""], rules, "OUTPUT ORDER", output_values=['"high","low"'])
    assert evaluate(ordered, 30) == ["high", "low"]


def test_default_output_input_values_and_output_values() -> None:
    rules = [(["> 100"], ['"big"'])]
    assert evaluate(table(["Age"], [""], rules, defaults=['"small"']), 5) == "small"
    guarded = table(["Age"], [""], rules, input_values=["[0..150]"])
    assert evaluate(guarded, 500) is None  # the input is outside its allowed values
    bad_output = table(["Age"], [""], [(["-"], ['"other"'])], output_values=['"big","small"'])
    assert evaluate(bad_output, 5) is None


def test_decision_tables_record_matched_rules_when_traced() -> None:
    model = model_with(table(["Age", "Tier"], ["label", "discount"], RULES, "COLLECT"))
    run = model.evaluate_detailed("Result", {"Age": 62, "Tier": "x"}, trace=True)
    (hit,) = run.hits
    assert hit.matched == ("r3", "r4")
    assert hit.inputs == (("Age", Decimal(62)), ("Tier", "x"))
    assert [row["label"] for row in hit.outputs] == ["adult", "senior"]


def test_a_drg_evaluates_required_decisions_first_and_once() -> None:
    body = input_data("Income", "number") + input_data("Debt", "number")
    body += decision("Ratio", literal("Debt / Income"), "i_Income", "i_Debt")
    body += decision("Risk", literal('if Ratio > 0.4 then "high" else "low"'), "d_Ratio")
    body += decision("Offer", literal("{risk: Risk, ratio: Ratio}"), "d_Risk", "d_Ratio")
    model = dmn.load(definitions(body))
    assert model.evaluate("Offer", {"Income": 1000, "Debt": 500}) == {
        "risk": "high",
        "ratio": Decimal("0.5"),
    }
    detailed = model.evaluate_detailed("Offer", {"Income": 1000, "Debt": 100})
    assert detailed.decisions == {"Ratio": Decimal("0.1"), "Risk": "low", "Offer": detailed.value}
    # A decision sees only what it requires: Risk does not require Income.
    body2 = body.replace("Debt / Income", "Debt / Income + Risk")
    assert dmn.load(definitions(body2)).evaluate("Ratio", {"Income": 10, "Debt": 5}) is None


def test_bkm_invocation_and_invoke() -> None:
    fee = bkm("Fee", [("amount", "number"), ("rate", "number")], literal("amount * rate"))
    body = input_data("Amount", "number")
    invocation = (
        "<invocation><text>Fee</text>"
        '<binding><parameter name="amount"/>' + literal("Amount") + "</binding>"
        '<binding><parameter name="rate"/>' + literal("0.1") + "</binding></invocation>"
    )
    body += decision("By binding", invocation, "i_Amount", "b_Fee")
    body += decision("By call", literal("Fee(Amount, 0.2)"), "i_Amount", "b_Fee") + fee
    model = dmn.load(definitions(body))
    assert model.evaluate("By binding", {"Amount": 50}) == Decimal(5)
    assert model.evaluate("By call", {"Amount": 50}) == Decimal(10)
    assert model.invoke("Fee", {"amount": 10, "rate": 0.5}) == Decimal(5)
    assert model.invoke("Fee", [10, 2]) == Decimal(20)
    assert model.invoke("Fee", {"amount": "ten", "rate": 1}) is None  # a typed parameter


def test_decision_services() -> None:
    body = input_data("A", "number") + input_data("B", "number")
    body += decision("Sum", literal("A + B"), "i_A", "i_B")
    body += decision("Double", literal("Sum * 2"), "d_Sum")
    body += (
        '<decisionService id="s_Calc" name="Calc"><variable name="Calc"/>'
        '<outputDecision href="#d_Double"/><encapsulatedDecision href="#d_Sum"/>'
        '<inputData href="#i_A"/><inputData href="#i_B"/></decisionService>'
    )
    body += decision("Use", literal("Calc(1, 2) + Calc(B: 10, A: 0)"), "s_Calc")
    model = dmn.load(definitions(body))
    assert model.invoke("Calc", {"A": 2, "B": 3}) == Decimal(10)
    assert model.evaluate("Use") == Decimal(26)


def test_boxed_contexts_relations_lists_and_functions() -> None:
    context = (
        "<context>"
        '<contextEntry><variable name="rate"/>' + literal("0.5") + "</contextEntry>"
        '<contextEntry><variable name="rows"/><relation>'
        '<column name="n"/><column name="sq"/>'
        "<row>" + literal("2") + literal("4") + "</row>"
        "<row>" + literal("3") + literal("9") + "</row>"
        "</relation></contextEntry>"
        '<contextEntry><variable name="f"/><functionDefinition>'
        '<formalParameter name="x"/>' + literal("x * rate") + "</functionDefinition></contextEntry>"
        "<contextEntry>" + literal("sum(for r in rows return f(r.sq))") + "</contextEntry>"
        "</context>"
    )
    model = dmn.load(definitions(decision("Total", context)))
    assert model.evaluate("Total") == Decimal("6.5")


def test_item_definitions_check_types() -> None:
    types = (
        '<itemDefinition name="tScore"><typeRef>number</typeRef>'
        "<allowedValues><text>[0..100]</text></allowedValues></itemDefinition>"
        '<itemDefinition name="tPerson"><itemComponent name="name"><typeRef>string</typeRef>'
        '</itemComponent><itemComponent name="score"><typeRef>tScore</typeRef></itemComponent>'
        "</itemDefinition>"
        '<itemDefinition name="tPeople" isCollection="true"><typeRef>tPerson</typeRef>'
        "</itemDefinition>"
    )
    body = types + input_data("People", "tPeople")
    body += decision("Best", literal("max(People.score)"), "i_People", type_ref="tScore")
    model = dmn.load(definitions(body))
    people = [{"name": "a", "score": 40}, {"name": "b", "score": 90}]
    assert model.evaluate("Best", {"People": people}) == Decimal(90)
    assert model.evaluate("Best", {"People": [{"name": "a", "score": 400}]}) is None
    assert model.evaluate("Best", {"People": [{"name": "a"}]}) is None  # missing component
    # A single value where a collection is declared becomes its singleton list.
    assert model.evaluate("Best", {"People": {"name": "c", "score": 7}}) == Decimal(7)


def test_imports_are_seen_under_their_name(tmp_path: Path) -> None:
    library = definitions(
        bkm("Greet", [("who", "string")], literal('"Hello " + who'))
        + '<itemDefinition name="tName"><typeRef>string</typeRef></itemDefinition>',
        name="lib",
        namespace="urn:lib",
    )
    main = definitions(
        '<import namespace="urn:lib" name="lib" locationURI="lib.dmn" '
        'importType="https://www.omg.org/spec/DMN/20230324/MODEL/"/>'
        + input_data("Name", "lib.tName")
        + '<decision id="d_Hi" name="Hi"><variable name="Hi"/>'
        '<informationRequirement><requiredInput href="#i_Name"/></informationRequirement>'
        '<knowledgeRequirement><requiredKnowledge href="urn:lib#b_Greet"/></knowledgeRequirement>'
        + literal("lib.Greet(Name)")
        + "</decision>"
    )
    (tmp_path / "lib.dmn").write_text(library)
    (tmp_path / "main.dmn").write_text(main)
    assert dmn.load(tmp_path / "main.dmn").evaluate("Hi", {"Name": "Ann"}) == "Hello Ann"
    assert dmn.load(main, imports=[library]).evaluate("Hi", {"Name": "Bo"}) == "Hello Bo"


def test_unknown_decision_is_not_found() -> None:
    from bpm.errors import NotFound

    with pytest.raises(NotFound, match="has no decision 'Nope'"):
        model_with(literal("1")).evaluate("Nope")


def test_rule_results_and_camunda_result_mappings() -> None:
    from bpm.dmn.results import DecisionResultError, map_result

    rules = [(["> 10"], ['"low"', "1"]), (["> 20"], ['"high"', "2"])]
    collect = model_with(table(["Age"], ["level", "points"], rules, "COLLECT"))
    found = collect.evaluate_rules("Result", {"Age": 30})
    assert found == [
        {"level": "low", "points": Decimal(1)},
        {"level": "high", "points": Decimal(2)},
    ]
    assert map_result(found, "resultList") == found
    assert collect.evaluate_rules("Result", {"Age": 5}) == []
    with pytest.raises(DecisionResultError, match="at most one matched rule, 2 matched"):
        map_result(found, "singleResult")
    with pytest.raises(DecisionResultError, match="one output per rule"):
        map_result(found, "collectEntries")

    single = model_with(table(["Age"], ["level"], [(["> 10"], ['"low"'])], "FIRST"))
    one = single.evaluate_rules("Result", {"Age": 30})
    assert map_result(one, "singleEntry") == "low"
    assert map_result(one, "singleResult") == {"level": "low"}
    assert map_result(one, "collectEntries") == ["low"]
    assert map_result([], "singleEntry") is None

    summed = model_with(table(["Age"], ["points"], [(["> 10"], ["1"])] * 3, "COLLECT", "SUM"))
    assert summed.evaluate_rules("Result", {"Age": 30}) == [{"points": Decimal(3)}]
    literal_model = model_with(literal("Age * 2"))
    assert literal_model.evaluate_rules("Result", {"Age": 4}) == [{"Result": Decimal(8)}]
    with pytest.raises(DecisionResultError, match="not one of"):
        map_result(one, "everything")


def test_default_output_of_an_aggregating_table_and_dotted_parameter_names() -> None:
    rules = [(["> 100"], ["5"])]
    aggregated = table(["Age"], [""], rules, "COLLECT", "MAX", defaults=["0"])
    assert evaluate(aggregated, 5) == Decimal(0)
    describe = bkm("Describe", [("Person.Name", "string")], literal('"I am " + Person.Name'))
    body = input_data("Person") + describe
    body += decision("Text", literal("Describe(Person.Name)"), "i_Person", "b_Describe")
    model = dmn.load(definitions(body))
    assert model.evaluate("Text", {"Person": {"Name": "Ann"}}) == "I am Ann"
