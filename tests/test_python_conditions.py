"""Conditions written in Python (``conditionExpression language="python"``): compiled at
deploy with the script sandbox's rules, evaluated in the sandbox process (bounded), on both
backends; escapes are refused at deploy or stopped at run time with nothing changed."""

from __future__ import annotations

import re

import pytest

from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError, ExpressionError
from bpm.expressions import compile_condition
from bpm.kinds import model_to_bpmn
from bpm.runtime.states import InstanceState
from bpm.scripts import conditions
from bpm.scripts.conditions import PYTHON_CONDITION, PythonCondition
from tests.engine_helpers import drain, make_engine, table_dump

BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d" targetNamespace="t">
  <bpmn:process id="route" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="review"/>
    <bpmn:exclusiveGateway id="g" default="small"/>
    <bpmn:endEvent id="big_end"/>
    <bpmn:endEvent id="small_end"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="review"/>
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="g"/>
    <bpmn:sequenceFlow id="big" sourceRef="g" targetRef="big_end">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression" language="python"
        >CONDITION</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="small" sourceRef="g" targetRef="small_end"/>
  </bpmn:process>
</bpmn:definitions>
"""


def routed(condition: str) -> str:
    return BPMN.replace("CONDITION", condition.replace("&", "&amp;").replace("<", "&lt;"))


def gateway_process(condition: str, key: str = "p") -> Process:
    return (
        Process(key)
        .start("s")
        .exclusive("g")
        .end("yes")
        .end("no")
        .flow("s", "g")
        .flow("g", "yes", condition, language="python", id="to_yes")
        .flow("g", "no", default=True)
    )


def test_parser_and_builder_store_the_same_condition() -> None:
    model = parse_bpmn(routed("amount > 100 and vip"))
    built = gateway_process("amount > 100 and vip").build()
    parsed = next(f for f in model.flows if f.id == "big").condition
    assert parsed == next(f for f in built.flows if f.id == "to_yes").condition
    assert parsed == PYTHON_CONDITION + "amount > 100 and vip"
    compiled = compile_condition(parsed)
    assert isinstance(compiled, PythonCondition)
    assert compiled.variables == ["amount", "vip"]


@pytest.mark.parametrize(("amount", "end"), [(150, "big_end"), (50, "small_end")])
def test_a_gateway_after_a_completed_user_task_decides_in_the_sandbox(
    database_url: str, amount: int, end: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The completion runs in this (the API's) process: the condition goes to the sandbox
    process, never to this interpreter."""
    asked: list[str] = []
    real = conditions.run_in_sandbox

    def spy(source: str, variables: object, limits: object, *, mode: str = "exec") -> object:
        asked.append(mode)
        return real(source, variables, limits, mode=mode)  # type: ignore[arg-type]

    monkeypatch.setattr(conditions, "run_in_sandbox", spy)
    engine, _ = make_engine(database_url)
    engine.deploy(routed("amount > 100 and len(items) < 3"))
    inst = engine.start("route", {"amount": amount, "items": [1]})
    (task,) = engine.user_tasks(instance_id=inst.id)
    done = engine.complete_user_task(task.id)
    assert done.state is InstanceState.COMPLETED
    assert asked == ["eval"]
    passed = {e.node_id for e in engine.history(inst.id)}
    assert end in passed and ({"big_end", "small_end"} - {end}).isdisjoint(passed)


def test_a_gateway_on_a_worker(database_url: str) -> None:
    engine, q = make_engine(database_url)
    engine.deploy(gateway_process("sum(x['n'] for x in rows) >= 3 if rows else False"))
    yes = engine.start("p", {"rows": [{"n": 1}, {"n": 2}]})
    no = engine.start("p", {"rows": []})
    drain(engine, q)
    assert engine.get_instance(yes.id).state is InstanceState.COMPLETED
    names = {i: {e.node_id for e in engine.history(i)} for i in (yes.id, no.id)}
    assert "yes" in names[yes.id] and "no" not in names[yes.id]
    assert "no" in names[no.id] and "yes" not in names[no.id]


# -- escapes --------------------------------------------------------------------------------

REFUSED_AT_DEPLOY = {
    "class chain": "().__class__.__bases__[0].__subclasses__() != []",
    "mro chain": "[].__class__.__mro__[1] is None",
    "__import__": "__import__('os') is None",
    "__builtins__": "__builtins__ is None",
    "globals": "__globals__ is None",
    "gi_frame": "(i for i in [1]).gi_frame.f_back is None",
    "exec": "exec('1') is None",
    "eval": "eval('1') == 1",
    "dunder in f-string": "f'{amount.__class__}' == ''",
    "underscore name": "_secret == 1",
    "a statement": "import os",
    "an assignment": "amount = 1",
    "syntax error": "amount >",
}


@pytest.mark.parametrize("source", REFUSED_AT_DEPLOY.values(), ids=REFUSED_AT_DEPLOY.keys())
def test_refused_at_deploy(source: str) -> None:
    with pytest.raises(ExpressionError, match=r"\(Python\) is refused"):
        compile_condition(PYTHON_CONDITION + source)


def test_an_escape_is_refused_at_deploy_with_nothing_stored(database_url: str) -> None:
    engine, _ = make_engine(database_url)
    before = table_dump(engine)
    with pytest.raises(DeploymentError, match="__class__") as err:
        engine.deploy(routed("().__class__.__bases__[0] is None"))
    assert err.value.problems[0].element_id == "big"
    with pytest.raises(DeploymentError, match="__import__"):
        engine.deploy(gateway_process("__import__('os') is None"))
    assert table_dump(engine) == before


STOPPED_AT_RUN = {
    "format attribute": ("'{0.__class__}'.format(1) == ''", "'format' may not be read"),
    "getattr computed": ("getattr((), '__cl' + 'ass__') is None", "may not be read"),
    "infinite loop": ("all(x == x for x in iter(int, 1))", "CPU time"),
    "huge string": ("len('a' * 10**10) > 0", "out of memory"),
    "huge integer in C": ("10**10**8 > 0", "CPU time|ran longer"),
    "deep recursion": ("(lambda f: f(f))(lambda f: f(f))", "RecursionError"),
    "unset variable": ("missing > 1", "NameError"),
    "not a boolean": ("amount", "gave 150, not True or False"),
}


@pytest.mark.parametrize(("source", "says"), STOPPED_AT_RUN.values(), ids=STOPPED_AT_RUN.keys())
def test_stopped_at_run_time_with_nothing_changed(
    database_url: str, source: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evaluated while the API completes a user task: an incident on the gateway, the
    variables as they were, and the next condition still decides (the process lives on)."""
    monkeypatch.setenv("BPM_SCRIPT_CPU_SECONDS", "0.3")
    monkeypatch.setenv("BPM_SCRIPT_MEMORY_MB", "64")
    engine, _ = make_engine(database_url)
    engine.deploy(routed(source))
    inst = engine.start("route", {"amount": 150})
    (task,) = engine.user_tasks(instance_id=inst.id)
    after = engine.complete_user_task(task.id)
    assert after.state is InstanceState.ACTIVE
    assert engine.get_instance(inst.id).variables == {"amount": 150}
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "g"
    assert "(Python) failed" in (incident.message or "") or "(Python) gave" in (
        incident.message or ""
    )

    assert re.search(says, incident.message or ""), incident.message
    assert compile_condition(PYTHON_CONDITION + "amount > 1").evaluate({"amount": 2}) is True


def test_a_drawn_model_keeps_the_language() -> None:
    """The cockpit's diagram of a built model writes the condition back as Python."""
    model = gateway_process("amount > 100").build()
    again = parse_bpmn(model_to_bpmn(model))
    assert next(f for f in again.flows if f.id == "to_yes").condition == (
        PYTHON_CONDITION + "amount > 100"
    )


def test_the_definitions_expression_language_says_python() -> None:
    """A model whose ``definitions`` say ``expressionLanguage="python"`` writes its
    conditions in Python without a language on each."""
    xml = routed("amount > 100").replace(' language="python"', "")
    xml = xml.replace('targetNamespace="t">', 'targetNamespace="t" expressionLanguage="python">')
    flow = next(f for f in parse_bpmn(xml).flows if f.id == "big")
    assert flow.condition == PYTHON_CONDITION + "amount > 100"
    cel = routed("amount > 100").replace(' language="python"', "")
    assert next(f for f in parse_bpmn(cel).flows if f.id == "big").condition == "amount > 100"
