"""Zeebe's ``=`` expressions run natively as FEEL: conditions, input and output mappings,
multi-instance collections, output elements and completion conditions, timers, correlation
keys and scripts, with what CEL has no translation for (lists counted from 1, filters,
contexts, ``between``, ``in``, functions, decimals, Camunda 8's ``is defined``...).
Models in Camunda Modeler 8's format, run on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bpm import Engine
from bpm.bpmn import parse_bpmn
from bpm.errors import DeploymentError
from bpm.expressions import compile_condition, compile_expression
from bpm.model import nodes as n
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.engine_helpers import table_dump

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)


def c8(body: str, key: str = "c8") -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xmlns:modeler="http://camunda.org/schema/modeler/1.0" id="d" targetNamespace="t"
    exporter="Camunda Modeler" exporterVersion="5.31.0"
    modeler:executionPlatform="Camunda Cloud" modeler:executionPlatformVersion="8.6.0">
  <bpmn:process id="{key}" isExecutable="true">{body}</bpmn:process>
</bpmn:definitions>""".encode()


def flow(source: str, target: str, condition: str | None = None, fid: str | None = None) -> str:
    fid = fid or f"{source}_{target}"
    if condition is None:
        return f'<bpmn:sequenceFlow id="{fid}" sourceRef="{source}" targetRef="{target}"/>'
    text = condition.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        f'<bpmn:sequenceFlow id="{fid}" sourceRef="{source}" targetRef="{target}">'
        f'<bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">{text}'
        "</bpmn:conditionExpression></bpmn:sequenceFlow>"
    )


def job(task_id: str, kind: str, io: str = "", extra: str = "") -> str:
    return (
        f'<bpmn:serviceTask id="{task_id}"><bpmn:extensionElements>'
        f'<zeebe:taskDefinition type="{kind}"/>{io}</bpmn:extensionElements>{extra}'
        "</bpmn:serviceTask>"
    )


def work(engine: Engine, topic: str, variables: dict[str, object] | None = None) -> list[dict]:
    """Complete every task of ``topic``; the variables each one was fetched with."""
    tasks = engine.fetch_and_lock(FetchRequest("w", 20, (TopicRequest(topic, 60_000),)), now=T0)
    for task in tasks:
        engine.complete_external_task(task.id, "w", variables or {}, now=T0)
    return [dict(t.variables or {}) for t in tasks]


# --- the expressions themselves ------------------------------------------------------------


def test_feel_text_is_kept_and_evaluated_as_feel_with_json_values() -> None:
    assert compile_expression("= items[1]").evaluate({"items": [5, 6]}) == 5  # from 1
    assert compile_expression("=items[price > 10].sku").evaluate(
        {"items": [{"sku": "a", "price": 5}, {"sku": "b", "price": 12.5}]}
    ) == ["b"]
    assert compile_expression("=1 / 3 * 3").evaluate({}) == 1  # decimals, not floats
    assert compile_expression('={total: sum(for i in items return i), "n": count(items)}').evaluate(
        {"items": [1, 2, 3]}
    ) == {"total": 6, "n": 3}
    assert compile_expression('=date("2026-03-02") + duration("P1D")').evaluate({}) == "2026-03-03"
    assert compile_condition("=x between 1 and 5").evaluate({"x": 3})
    assert compile_condition('=status in ("open", "new")').evaluate({"status": "new"})
    assert compile_condition("=not(is defined(missing))").evaluate({})
    assert compile_expression("=get or else(missing, 7)").evaluate({}) == 7
    # CEL is still CEL, JUEL still JUEL: only a leading '=' (not '==') is FEEL
    assert compile_condition("x == 1").evaluate({"x": 1})


def test_a_condition_that_is_not_true_or_false_and_a_runaway_expression_are_errors() -> None:
    from bpm.errors import ExpressionError

    with pytest.raises(ExpressionError, match=r"`=x > 1` gave null, not true or false"):
        compile_condition("=x > 1").evaluate({})
    with pytest.raises(ExpressionError, match="gave 'a', not true or false"):
        compile_condition('="a"').evaluate({})
    with pytest.raises(ExpressionError, match=r"failed: .*(steps|items)"):
        compile_expression("=count(for i in 1..10000000 return i)").evaluate({})
    with pytest.raises(ExpressionError, match="assert failed: too small"):
        compile_expression('=assert(x, x > 3, "too small")').evaluate({"x": 1})


# --- in processes ----------------------------------------------------------------------------


ORDER = c8(
    '<bpmn:startEvent id="s"/>'
    + job(
        "price",
        "price",
        io='<zeebe:ioMapping><zeebe:input source="=items[1].sku" target="first"/>'
        '<zeebe:input source="={count: count(items), skus: items.sku}" target="summary"/>'
        '<zeebe:output source="=round half up(total * 1.19, 2)" target="gross"/>'
        "</zeebe:ioMapping>",
    )
    + '<bpmn:exclusiveGateway id="big" default="small"/>'
    + "<bpmn:endEvent id='e_big'/><bpmn:endEvent id='e_small'/>"
    + flow("s", "price")
    + flow("price", "big")
    + flow("big", "e_big", "=gross > 100 and (some i in items satisfies i.rush)", "rush")
    + flow("big", "e_small", fid="small")
)


def test_mappings_and_conditions_run_as_feel(engine: Engine) -> None:
    engine.deploy(ORDER)
    items = [{"sku": "a", "rush": False}, {"sku": "b", "rush": True}]
    inst = engine.start("c8", {"items": items}, now=T0)
    (seen,) = work(engine, "price", {"total": 100})
    assert (seen["first"], seen["summary"]) == ("a", {"count": 2, "skus": ["a", "b"]})
    done = engine.get_instance(inst.id)
    assert done.state.value == "completed"
    assert done.variables["gross"] == 119
    ended = [e.node_id for e in engine.history(inst.id) if e.type == "token_completed"]
    assert "e_big" in ended and "e_small" not in ended


def test_a_condition_reading_an_unset_variable_is_an_incident(engine: Engine) -> None:
    engine.deploy(ORDER)
    inst = engine.start("c8", {"items": [{"sku": "a", "rush": True}]}, now=T0)
    work(engine, "price", {})  # no total: gross is null, so is `null > 100 and true`
    (incident,) = engine.incidents(inst.id)
    assert "gave null, not true or false" in (incident.message or "")


MULTI = c8(
    '<bpmn:startEvent id="s"/>'
    + job(
        "quote",
        "quote",
        extra="<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements>"
        '<zeebe:loopCharacteristics inputCollection="=suppliers[active]" '
        'inputElement="supplier" outputCollection="quotes" '
        'outputElement="={supplier: supplier.name, price: price}"/>'
        "</bpmn:extensionElements><bpmn:completionCondition>"
        "=numberOfCompletedInstances &gt;= 2</bpmn:completionCondition>"
        "</bpmn:multiInstanceLoopCharacteristics>",
    )
    + '<bpmn:scriptTask id="best"><bpmn:extensionElements>'
    '<zeebe:script expression="=min(for q in quotes[item != null] return q.price)" '
    'resultVariable="best"/></bpmn:extensionElements></bpmn:scriptTask>'
    + '<bpmn:endEvent id="e"/>'
    + flow("s", "quote")
    + flow("quote", "best")
    + flow("best", "e"),
    key="quotes",
)


def test_multi_instance_collection_output_completion_and_script(engine: Engine) -> None:
    model = parse_bpmn(MULTI)
    quote = model.node("quote")
    assert isinstance(quote, n.ServiceTask) and quote.loop is not None
    assert quote.loop.collection == "=suppliers[active]"
    suppliers = [
        {"name": "acme", "active": True},
        {"name": "old", "active": False},
        {"name": "bolt", "active": True},
        {"name": "core", "active": True},
    ]
    engine.deploy(MULTI)
    inst = engine.start("quotes", {"suppliers": suppliers}, now=T0)
    tasks = engine.fetch_and_lock(FetchRequest("w", 20, (TopicRequest("quote", 60_000),)), now=T0)
    assert sorted(t.variables["supplier"]["name"] for t in tasks if t.variables) == [
        "acme", "bolt", "core",
    ]  # fmt: skip
    by_name = {t.variables["supplier"]["name"]: t for t in tasks if t.variables}
    engine.complete_external_task(by_name["bolt"].id, "w", {"price": 7.5}, now=T0)
    engine.complete_external_task(by_name["acme"].id, "w", {"price": 9}, now=T0)
    done = engine.get_instance(inst.id)  # two of three: the completion condition ended it
    assert done.state.value == "completed"
    assert done.variables["quotes"] == [
        {"supplier": "acme", "price": 9}, {"supplier": "bolt", "price": 7.5}, None,
    ]  # fmt: skip
    assert done.variables["best"] == 7.5


TIMERS = c8(
    '<bpmn:startEvent id="s"/>'
    '<bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition>'
    '<bpmn:timeDuration xsi:type="bpmn:tFormalExpression">=duration("PT" + string(minutes) + "M")'
    "</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"
    '<bpmn:intermediateCatchEvent id="until"><bpmn:timerEventDefinition>'
    '<bpmn:timeDate xsi:type="bpmn:tFormalExpression">=date and time(due) + duration("PT1H")'
    "</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"
    '<bpmn:endEvent id="e"/>' + flow("s", "wait") + flow("wait", "until") + flow("until", "e"),
    key="timers",
)


def test_timer_expressions_run_as_feel(engine: Engine) -> None:
    engine.deploy(TIMERS)
    inst = engine.start("timers", {"minutes": 5, "due": "2026-03-02T09:00:00Z"}, now=T0)
    assert engine.fire_due_timers(now=T0 + timedelta(minutes=4)) == 0
    assert engine.fire_due_timers(now=T0 + timedelta(minutes=5)) == 1
    assert engine.get_instance(inst.id).state.value == "active"
    assert engine.fire_due_timers(now=datetime(2026, 3, 2, 9, 59, tzinfo=UTC)) == 0
    assert engine.fire_due_timers(now=datetime(2026, 3, 2, 10, 0, tzinfo=UTC)) == 1
    assert engine.get_instance(inst.id).state.value == "completed"
    bad = engine.start("timers", {"minutes": "soon"}, now=T0)  # duration("PTsoonM") is null
    (incident,) = engine.incidents(bad.id)
    assert incident.type == "failedTimer" and "gave None" in (incident.message or "")


MESSAGE = c8(
    '<bpmn:startEvent id="s"/>'
    '<bpmn:intermediateCatchEvent id="paid"><bpmn:messageEventDefinition messageRef="m"/>'
    '</bpmn:intermediateCatchEvent><bpmn:endEvent id="e"/>' + flow("s", "paid") + flow("paid", "e"),
    key="pay",
).replace(
    b"</bpmn:process>",
    b'</bpmn:process><bpmn:message id="m" name="payment"><bpmn:extensionElements>'
    b'<zeebe:subscription correlationKey="=upper case(order.id) + &quot;-&quot; + '
    b'string(order.n)"/></bpmn:extensionElements></bpmn:message>',
)


def test_a_feel_correlation_key(engine: Engine) -> None:
    engine.deploy(MESSAGE)
    inst = engine.start("pay", {"order": {"id": "ab", "n": 3}}, now=T0)
    engine.correlate("payment", {"ok": True}, correlation_key="AB-3")
    assert engine.get_instance(inst.id).state.value == "completed"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (flow("s", "e", "=x >"), "flow 's_e': FEEL expression `=x >` does not compile"),
        (flow("s", "e", "="), "empty expression"),
        (
            job("t", "t", io='<zeebe:ioMapping><zeebe:input source="=[1, 2" target="x"/>'
                "</zeebe:ioMapping>")
            + flow("s", "t") + flow("t", "e"),
            "zeebe:input 'x' of 't'",
        ),
        (
            '<bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>'
            "=duration(</bpmn:timeDuration></bpmn:timerEventDefinition>"
            "</bpmn:intermediateCatchEvent>" + flow("s", "w") + flow("w", "e"),
            r"timer of .w.: timer expression: FEEL expression `=duration\(` does not compile",
        ),
    ],
)  # fmt: skip
def test_feel_that_does_not_compile_is_refused_at_deploy(
    engine: Engine, body: str, message: str
) -> None:
    xml = c8('<bpmn:startEvent id="s"/><bpmn:endEvent id="e"/>' + body)
    before = table_dump(engine)
    with pytest.raises(DeploymentError, match=message):
        engine.deploy(xml)
    assert table_dump(engine) == before


USER_TASK = c8(
    '<bpmn:startEvent id="s"/><bpmn:userTask id="approve"><bpmn:extensionElements>'
    '<zeebe:assignmentDefinition assignee="=reviewers[1]" '
    'candidateGroups="=for t in teams return t + &quot;-leads&quot;"/>'
    '<zeebe:taskSchedule dueDate="=date and time(opened) + duration(&quot;P2D&quot;)"/>'
    '<zeebe:priorityDefinition priority="=if urgent then 90 else 40"/>'
    '</bpmn:extensionElements></bpmn:userTask><bpmn:endEvent id="e"/>'
    + flow("s", "approve")
    + flow("approve", "e"),
    key="review",
)


def test_user_task_assignments_dates_and_priority_run_as_feel(engine: Engine) -> None:
    engine.deploy(USER_TASK)
    variables = {
        "reviewers": ["ann", "bob"],
        "teams": ["sales", "legal"],
        "opened": "2026-03-02T07:00:00Z",
        "urgent": True,
    }
    inst = engine.start("review", variables, now=T0)
    (task,) = engine.user_tasks(inst.id)
    assert (task.assignee, task.candidate_groups, task.priority) == (
        "ann", ("sales-leads", "legal-leads"), 90,
    )  # fmt: skip
    assert task.due_at == datetime(2026, 3, 4, 7, 0, tzinfo=UTC)
    bare = engine.start("review", {}, now=T0)  # unset: the settings stay empty
    (task,) = engine.user_tasks(bare.id)
    assert (task.assignee, task.candidate_groups, task.due_at) == (None, (), None)


def test_feel_called_element_and_called_decision_ids(engine: Engine) -> None:
    from tests.test_business_rules import PRICING

    child = c8('<bpmn:startEvent id="cs"/><bpmn:endEvent id="ce"/>' + flow("cs", "ce"), "child_eu")
    parent = c8(
        '<bpmn:startEvent id="s"/><bpmn:callActivity id="call"><bpmn:extensionElements>'
        '<zeebe:calledElement processId="=&quot;child_&quot; + lower case(region)"/>'
        "</bpmn:extensionElements></bpmn:callActivity>"
        '<bpmn:businessRuleTask id="rate"><bpmn:extensionElements>'
        '<zeebe:calledDecision decisionId="=&quot;d_&quot; + kind" resultVariable="rate"/>'
        '</bpmn:extensionElements></bpmn:businessRuleTask><bpmn:endEvent id="e"/>'
        + flow("s", "call")
        + flow("call", "rate")
        + flow("rate", "e"),
        "parent",
    )
    engine.create_deployment(("child.bpmn", child), ("parent.bpmn", parent), ("p.dmn", PRICING))
    variables = {"region": "EU", "kind": "Discount", "Amount": 500, "Customer": "gold"}
    inst = engine.start("parent", variables, now=T0)
    done = engine.get_instance(inst.id)
    assert (done.state.value, done.variables["rate"]) == ("completed", 0.2)
    wrong = engine.start("parent", {**variables, "region": 1}, now=T0)
    (incident,) = engine.incidents(wrong.id)
    assert "gave None, not the id of a process to call" in (incident.message or "")


def test_feel_now_reads_the_operation_clock(engine: Engine) -> None:
    soon = c8(
        '<bpmn:startEvent id="s"/><bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition>'
        '<bpmn:timeDate>=now() + duration("PT1M")</bpmn:timeDate></bpmn:timerEventDefinition>'
        '</bpmn:intermediateCatchEvent><bpmn:scriptTask id="stamp"><bpmn:extensionElements>'
        '<zeebe:script expression="=string(today())" resultVariable="day"/>'
        '</bpmn:extensionElements></bpmn:scriptTask><bpmn:endEvent id="e"/>'
        + flow("s", "w")
        + flow("w", "stamp")
        + flow("stamp", "e"),
        "soon",
    )
    engine.deploy(soon)
    inst = engine.start("soon", {}, now=T0)
    assert engine.fire_due_timers(now=T0 + timedelta(seconds=59)) == 0
    assert engine.fire_due_timers(now=T0 + timedelta(minutes=1)) == 1
    assert engine.get_instance(inst.id).variables["day"] == "2026-03-02"


def test_a_feel_job_type_is_the_topic_of_each_task(engine: Engine) -> None:
    dynamic = c8(
        '<bpmn:startEvent id="s"/>'
        + job("send", "=&quot;send-&quot; + channel")
        + '<bpmn:endEvent id="e"/>'
        + flow("s", "send")
        + flow("send", "e"),
        "notify",
    )
    engine.deploy(dynamic)
    mail = engine.start("notify", {"channel": "mail"}, now=T0)
    assert [t.topic for t in engine.external_tasks(instance_id=mail.id)] == ["send-mail"]
    assert work(engine, "send-mail") and engine.get_instance(mail.id).state.value == "completed"
    bad = engine.start("notify", {}, now=T0)  # "send-" + null is null: no topic
    (incident,) = engine.incidents(bad.id)
    assert incident.type == "failedJobType"
    assert engine.external_tasks(instance_id=bad.id) == []
