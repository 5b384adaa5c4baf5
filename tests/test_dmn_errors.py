"""Invalid DMN is refused at load with the element named; hostile files are refused."""

from __future__ import annotations

import pytest

from bpm import dmn
from bpm.errors import DeploymentError
from tests.dmn_models import decision, definitions, input_data, literal, table


def refused(xml: str) -> DeploymentError:
    with pytest.raises(DeploymentError) as err:
        dmn.load(xml)
    return err.value


def test_a_doctype_is_refused_before_any_entity_is_expanded() -> None:
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>\n'
        + definitions(decision("D", literal('"&lol2;"'))).split("\n", 1)[1]
    )
    error = refused(bomb)
    assert "DOCTYPE" in str(error)
    assert error.problems[0].line == 2


def test_an_external_entity_is_refused() -> None:
    xxe = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><d>&x;</d>'
    assert "DOCTYPE" in str(refused(xxe))


def test_a_feel_syntax_error_names_the_decision_element_and_line() -> None:
    error = refused(definitions(input_data("A") + decision("Bad", literal("A +"), "i_A")))
    problem = error.problems[0]
    assert "FEEL syntax error in `A +`" in str(error)
    assert problem.element_type == "literalExpression"
    assert problem.line == 3


def test_dangling_references_and_cycles() -> None:
    error = refused(definitions(decision("D", literal("1"), "d_Missing")))
    assert "href '#d_Missing' names no element" in str(error)
    cycle = decision("A", literal("B"), "d_B") + decision("B", literal("A"), "d_A")
    assert "requirement cycle: A -> B -> A" in str(refused(definitions(cycle)))


def test_unknown_types_hit_policies_and_shapes() -> None:
    typed = definitions(decision("D", literal("1"), type_ref="tNowhere"))
    assert "typeRef 'tNowhere' names no item definition" in str(refused(typed))
    bad_policy = table(["1"], [""], [(["-"], ["1"])], hit_policy="SOMETIMES")
    assert "hitPolicy 'SOMETIMES'" in str(refused(definitions(decision("D", bad_policy))))
    short_rule = table(["1", "2"], [""], [(["-"], ["1"])])
    error = refused(definitions(decision("D", short_rule)))
    assert "rule has 1 input and 1 output entries; the table has 2 inputs" in str(error)
    assert error.problems[0].element_id == "r1"
    aggregate = table(["1"], [""], [(["-"], ["1"])], hit_policy="FIRST", aggregation="SUM")
    assert "needs hitPolicy COLLECT" in str(refused(definitions(decision("D", aggregate))))


def test_duplicate_names_missing_imports_and_other_documents() -> None:
    twice = definitions(input_data("X") + input_data("X").replace('id="i_X"', 'id="i_X2"'))
    assert "two DRG elements are named 'X'" in str(refused(twice))
    missing = definitions('<import namespace="urn:elsewhere" name="e" importType="dmn"/>')
    assert "the import of namespace 'urn:elsewhere' was not given" in str(refused(missing))
    assert "not a DMN file" in str(refused('<definitions xmlns="urn:bpmn"/>'))
    assert "not well-formed XML" in str(refused("<definitions"))


def test_non_strict_loading_keeps_the_valid_decisions() -> None:
    xml = definitions(decision("Good", literal("1 + 1")) + decision("Bad", literal("1 +")))
    model = dmn.load(xml, strict=False)
    assert model.evaluate("Good") == 2
    assert model.evaluate("Bad") is None
    assert ["FEEL syntax error" in str(p) for p in model.problems] == [True]
