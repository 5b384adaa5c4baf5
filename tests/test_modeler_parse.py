"""Models from other modelers, parsed (no database): one test per feature of issue 9.

The files are in ``tests/data/modeler``; small variations are built from ``doc()``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bpm.bpmn import parse_bpmn, parse_bpmn_file
from bpm.errors import DeploymentError, Problem
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.retry import RetryPolicy

DATA = Path(__file__).resolve().parent / "data" / "modeler"

HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"
    id="defs" targetNamespace="http://example.com">
  <bpmn:signal id="Sig" name="alarm" />
  <bpmn:message id="Msg" name="paid" />
  <bpmn:escalation id="Esc" escalationCode="late" />
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f_start" sourceRef="start" targetRef="work" />
    <bpmn:serviceTask id="work" camunda:class="Work" />
    <bpmn:sequenceFlow id="f_work" sourceRef="work" targetRef="end" />
    <bpmn:endEvent id="end" />
{body}
  </bpmn:process>
</bpmn:definitions>
"""


def doc(body: str = "") -> str:
    return HEAD.format(body=body)


def load(name: str) -> ProcessModel:
    return parse_bpmn((DATA / name).read_bytes(), name)


def refused(text: str | bytes) -> list[Problem]:
    with pytest.raises(DeploymentError) as info:
        parse_bpmn_file(text, "t.bpmn")
    return info.value.problems


def flow(model: ProcessModel, flow_id: str) -> n.Flow:
    return next(f for f in model.flows if f.id == flow_id)


# -- 1. no crash: one problem per root cause ------------------------------------------------

UNSUPPORTED_BOUNDARIES = {
    "terminate": "<bpmn:terminateEventDefinition />",
}  # cancel and conditional boundaries run since issue 20 (test_transaction, test_conditional_*)


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED_BOUNDARIES))
def test_boundary_with_an_unsupported_definition_is_one_problem_not_a_crash(kind: str) -> None:
    body = (
        f'<bpmn:boundaryEvent id="b" attachedToRef="work">{UNSUPPORTED_BOUNDARIES[kind]}'
        '</bpmn:boundaryEvent>\n<bpmn:sequenceFlow id="f_b" sourceRef="b" targetRef="after" />\n'
        '<bpmn:task id="after" />\n<bpmn:sequenceFlow id="f_a" sourceRef="after" targetRef="end" />'
    )
    problems = refused(doc(body))
    assert [p.element_id for p in problems] == ["b"], problems  # nothing blamed downstream
    assert f"bpmn:{kind}EventDefinition on bpmn:boundaryEvent 'b'" in problems[0].message
    assert problems[0].line == 10 + 5  # the definition's line, inside the boundary event
    assert problems[0].element_type == "bpmn:boundaryEvent"
    assert "(bpmn:boundaryEvent 'b', line 15)" in str(problems[0])


def test_flow_without_id_gets_a_stable_id_and_blames_nobody() -> None:
    model = load("flows_without_ids.bpmn")
    ids = [f.id for f in model.flows]
    assert ids[:3] == ["Flow_start_route", "Flow_route_big", "Flow_route_medium"]
    assert "to_small" in ids
    assert load("flows_without_ids.bpmn").flows == model.flows  # stable across parses
    clash = doc(  # the generated id of work -> t would be the id of a task: suffixed
        '<bpmn:task id="Flow_work_t" /><bpmn:task id="t" />'
        '<bpmn:sequenceFlow sourceRef="work" targetRef="Flow_work_t" />'
        '<bpmn:sequenceFlow sourceRef="work" targetRef="t" />'
    )
    taken = {f.id for f in parse_bpmn(clash).flows}
    assert {"Flow_work_Flow_work_t", "Flow_work_t_2"} <= taken


def test_compensation_handler_on_a_path_is_refused_once() -> None:
    body = '<bpmn:userTask id="undo" isForCompensation="true" />'
    body += '<bpmn:sequenceFlow id="f_u" sourceRef="work" targetRef="undo" />'
    problems = refused(doc(body))
    assert [p.element_id for p in problems] == ["undo"]
    assert "compensation handler 'undo' has sequence flows" in problems[0].message


# -- 2. BPMN semantics ----------------------------------------------------------------------


def test_task_manual_task_and_none_throw_event_pass_through() -> None:
    model = load("pass_through.bpmn")
    kinds = {x.id: (type(x), getattr(x, "element", None)) for x in model.nodes.values()}
    assert kinds["think"] == (n.PassThrough, "task")
    assert kinds["sign"] == (n.PassThrough, "manualTask")
    assert kinds["milestone"] == (n.PassThrough, "intermediateThrowEvent")
    assert ProcessModel.from_dict(model.to_dict()) == model


def test_nodes_without_outgoing_flows_deploy_but_event_gateways_do_not() -> None:
    # an exclusive, parallel or inclusive gateway without one is an implicit end (issue 21)
    model = load("dead_ends.bpmn")
    assert model.outgoing["notify"] == () and model.outgoing["archive"] == ()
    problems = refused(doc('<bpmn:eventBasedGateway id="gw" /><bpmn:sequenceFlow id="x" '
                           'sourceRef="work" targetRef="gw" />'))  # fmt: skip
    assert {p.element_id for p in problems} == {"gw"}
    assert any("no outgoing sequence flow" in p.message for p in problems)


def test_unconditioned_non_default_flow_of_exclusive_gateway_deploys_with_a_warning() -> None:
    model = load("flows_without_ids.bpmn")
    assert flow(model, "Flow_route_medium").condition is None
    assert any("'Flow_route_medium'" in w and "taken whenever" in w for w in model.warnings)


def test_several_start_events_and_the_default_one() -> None:
    parsed = parse_bpmn_file((DATA / "two_processes.bpmn").read_bytes())
    orders = parsed.models[0]
    assert [s.id for s in orders.start_events] == ["web_order", "phone_order"]
    assert orders.initial_start().id == "web_order"
    assert orders.initial_start("phone_order").id == "phone_order"
    timers = load("timer_start.bpmn")
    assert timers.initial_start().id == "by_hand"  # the none start event, not the timer


def test_every_executable_process_of_a_file_is_read_in_document_order() -> None:
    parsed = parse_bpmn_file((DATA / "two_processes.bpmn").read_bytes(), "two.bpmn")
    assert [m.key for m in parsed.models] == ["orders", "billing"]
    assert parse_bpmn((DATA / "two_processes.bpmn").read_bytes()).key == "orders"
    assert any("'customer' is not executable" in w for w in parsed.warnings)
    twice = (DATA / "two_processes.bpmn").read_text().replace('id="billing"', 'id="orders"')
    problems = refused(twice)
    assert any("process id 'orders' is used twice" in p.message for p in problems)


def test_one_broken_process_refuses_the_whole_file_with_every_problem() -> None:
    text = (DATA / "two_processes.bpmn").read_text()
    text = text.replace('<bpmn:endEvent id="b_end" />', '<bpmn:fancyEnd id="b_end" />')
    # (a transaction was refused before issue 20; a call activity without calledElement is)
    text = text.replace('<bpmn:task id="take" />', '<bpmn:callActivity id="take" />')
    ids = {p.element_id for p in refused(text)}
    assert ids == {"b_end", "take"}


# -- 3. bindings ----------------------------------------------------------------------------


def test_java_engine_bindings_name_inline_handlers() -> None:
    model = load("bindings.bpmn")
    handlers = {
        x.id: (x.handler, x.topic) for x in model.nodes.values() if isinstance(x, n.ServiceTask)
    }
    assert handlers == {
        "by_class": ("com.acme.ChargeCard", None),
        "by_expression": ("billing.invoice", None),
        "by_delegate": ("mailer", None),
        "by_activiti": ("org.acme.SendReceipt", None),
        "by_flowable": ("rules.score", None),
        "unbound": ("unbound", None),  # no binding: the task id
        "external": (None, "ship"),
    }
    assert model.handler_names() == {
        "com.acme.ChargeCard": ["by_class"],
        "billing.invoice": ["by_expression"],
        "mailer": ["by_delegate"],
        "org.acme.SendReceipt": ["by_activiti"],
        "rules.score": ["by_flowable"],
        "unbound": ["unbound"],
    }


def test_zeebe_task_definition_is_an_external_topic_with_headers_and_retries() -> None:
    assert load("zeebe.bpmn").version_tag == "2.0"
    collect = load("zeebe.bpmn").node("collect")
    assert isinstance(collect, n.ServiceTask) and collect.is_external
    assert collect.topic == "collect-money"
    assert dict(collect.properties) == {"currency": "EUR", "method": "card"}
    assert collect.retry == RetryPolicy(max_attempts=5)


@pytest.mark.parametrize(
    ("attrs", "fragment"),
    [
        ('camunda:class="A" bpm:handler="b"', "is bound twice (bpm:handler 'b' and camunda:class"),
        ('camunda:class="A" camunda:type="external" camunda:topic="t"', "is bound twice"),
        ('camunda:expression="${a ? b : c}"', "cannot name a handler"),
    ],
)
def test_ambiguous_or_unusable_bindings_are_refused(attrs: str, fragment: str) -> None:
    body = f'<bpmn:serviceTask id="t2" {attrs} />'
    body += '<bpmn:sequenceFlow id="f_t2" sourceRef="work" targetRef="t2" />'
    text = doc(body).replace(
        "xmlns:camunda=", 'xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn" xmlns:camunda='
    )
    problems = refused(text)
    assert [p.element_id for p in problems] == ["t2"], problems
    assert fragment in problems[0].message


def test_zeebe_type_expression_is_kept_as_feel_unless_it_is_a_string() -> None:
    task = (
        "<bpmn:serviceTask id='z'><bpmn:extensionElements><zeebe:taskDefinition type='{t}' />"
        '</bpmn:extensionElements></bpmn:serviceTask><bpmn:sequenceFlow id="f_z" '
        'sourceRef="work" targetRef="z" />'
    )
    node = parse_bpmn(doc(task.format(t='="pay"'))).node("z")
    assert isinstance(node, n.ServiceTask) and node.topic == "pay"
    dynamic = parse_bpmn(doc(task.format(t="=kind"))).node("z")
    assert isinstance(dynamic, n.ServiceTask) and dynamic.topic == "=kind"  # FEEL, at run time
    problems = refused(doc(task.format(t="=kind +")))
    assert "does not compile" in problems[0].message and problems[0].element_id == "z"


# -- 4. script tasks ------------------------------------------------------------------------


def test_script_tasks_cel_evaluated_others_run_as_handlers() -> None:
    model = load("scripts.bpmn")
    cel = model.node("discount")
    assert isinstance(cel, n.ScriptTask) and cel.is_cel and not cel.waits
    assert (cel.script, cel.result_variable, cel.handler) == (
        "amount > 100 ? amount - 10 : amount",
        "price",
        None,
    )
    groovy = model.node("legacy")
    assert isinstance(groovy, n.ScriptTask) and not groovy.is_cel and groovy.waits
    assert groovy.handler == "legacy" and groovy.script is not None
    assert "execution.setVariable" in groovy.script
    assert model.handler_names() == {"legacy": ["legacy"]}
    feel = load("zeebe.bpmn").node("total_with_tax")
    assert isinstance(feel, n.ScriptTask)
    assert (feel.script, feel.result_variable) == ("=total * 2 + fee", "gross")  # FEEL, as is
    assert feel.is_cel and not feel.waits


def test_a_cel_script_that_does_not_compile_is_refused() -> None:
    body = (
        '<bpmn:scriptTask id="s" scriptFormat="CEL"><bpmn:script>amount &gt;</bpmn:script>'
        '</bpmn:scriptTask><bpmn:sequenceFlow id="f_s" sourceRef="work" targetRef="s" />'
    )
    problems = refused(doc(body))
    assert problems[0].element_id == "s" and "does not compile" in problems[0].message


# -- 5. timer start events ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "text", "first", "second"),
    [
        ("timeDate", "2030-05-01T08:00:00Z", "2030-05-01T08:00:00+00:00", None),
        ("timeDuration", "PT90M", "2030-01-01T01:30:00+00:00", None),
        ("timeCycle", "R/PT1H", "2030-01-01T01:00:00+00:00", "2030-01-01T02:00:00+00:00"),
        (
            "timeCycle",
            "R5/2030-02-01T09:00:00Z/P1D",
            "2030-02-01T09:00:00+00:00",
            "2030-02-02T09:00:00+00:00",
        ),
        (
            "timeCycle",
            "0 30 8 ? * MON-FRI",
            "2030-01-01T08:30:00+00:00",
            "2030-01-02T08:30:00+00:00",
        ),
    ],
)
def test_timer_start_events_parse_and_schedule(
    kind: str, text: str, first: str, second: str | None
) -> None:
    from bpm.recurrence import recurrence

    body = (
        f'<bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:{kind}>{text}'
        f"</bpmn:{kind}></bpmn:timerEventDefinition></bpmn:startEvent>"
        '<bpmn:sequenceFlow id="f_tick" sourceRef="tick" targetRef="work" />'
    )
    model = parse_bpmn(doc(body))
    assert [s.id for s in model.timer_starts] == ["tick"]
    timer = model.timer_starts[0].timer
    assert timer is not None
    deployed = datetime(2030, 1, 1, tzinfo=UTC)  # a Tuesday
    rec = recurrence(timer)
    due = rec.first_due(deployed)
    assert due is not None and due.isoformat() == first
    following = rec.next_due(due, 1, due)
    assert (following.isoformat() if following else None) == second


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("${when}", "no instance (and no variable) exists"),
        ("${'R/PT1H' + when}", "no instance (and no variable) exists"),
        ("0 0 9 15 * MON", "restricts both the day of month and the day of week"),
        ("0 0 9 ? * MON#2", "is not supported"),
        ("0 0 25 * * ?", "out of range"),
        ("R2/PT1H/2030-01-01T00:00:00Z", "not a supported cycle"),
    ],
)
def test_timer_start_events_that_cannot_run_are_refused(text: str, fragment: str) -> None:
    body = (
        '<bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeCycle>'
        f"{text}</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>"
        '<bpmn:sequenceFlow id="f_tick" sourceRef="tick" targetRef="work" />'
    )
    problems = refused(doc(body))
    assert problems[0].element_id == "tick" and fragment in problems[0].message


@pytest.mark.parametrize("text", ["${'R2/PT1H'}", '#{ "R2/PT1H" }'])
def test_a_timer_start_reading_one_string_literal_is_that_literal(text: str) -> None:
    # Camunda's StartTimerEventTest.testExpressionStartTimerEvent: ${'2036-11-14T11:12:22'}
    from bpm.recurrence import recurrence

    body = (
        '<bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeCycle>'
        f"{text}</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>"
        '<bpmn:sequenceFlow id="f_tick" sourceRef="tick" targetRef="work" />'
    )
    timer = parse_bpmn(doc(body)).timer_starts[0].timer
    assert timer is not None
    rec = recurrence(timer)
    assert rec.repeat == 2 and rec.interval == timedelta(hours=1)


def test_zeebe_cron_weekdays_count_from_sunday_zero() -> None:
    body = (
        '<bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeCycle>'
        "0 0 12 * * 1-5</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>"
        '<bpmn:sequenceFlow id="f_tick" sourceRef="tick" targetRef="work" />'
        "<bpmn:extensionElements><zeebe:properties /></bpmn:extensionElements>"
    )
    timer = parse_bpmn(doc(body)).timer_starts[0].timer
    assert timer is not None and timer.expression == "0 0 12 * * MON-FRI"


# -- 6. user-task settings ------------------------------------------------------------------


def test_user_task_settings_in_every_spelling() -> None:
    model = load("user_tasks.bpmn")
    camunda = model.node("camunda_task")
    assert isinstance(camunda, n.UserTask)
    assert (camunda.assignee, camunda.candidate_users, camunda.candidate_groups) == (
        "${approver}",
        ("kermit", "piggy"),
        ("management",),
    )
    assert (camunda.due_date, camunda.follow_up_date, camunda.priority) == (
        "2030-06-01T10:00:00Z",
        "P1D",
        "70",
    )
    assert dict(camunda.form_ref) == {"key": "approve-form", "binding": "version", "version": "3"}
    flowable = model.node("flowable_task")
    assert isinstance(flowable, n.UserTask)
    assert (flowable.assignee, flowable.candidate_groups, flowable.form_key) == (
        "gonzo",
        ("sales",),
        "forms/flowable.html",
    )
    assert flowable.priority == "${urgency}"
    bpmn = model.node("bpmn_task")
    assert isinstance(bpmn, n.UserTask)
    assert (bpmn.assignee, bpmn.candidate_users, bpmn.candidate_groups) == (
        "fozzie",
        ("rowlf",),
        ("band", "muppets"),
    )
    zeebe = load("zeebe.bpmn").node("review")
    assert isinstance(zeebe, n.UserTask)
    assert (zeebe.assignee, zeebe.candidate_users, zeebe.candidate_groups) == (
        "${reviewer}",
        ("ann", "bob"),
        ("finance", "audit"),
    )
    assert (zeebe.due_date, zeebe.priority, dict(zeebe.form_ref)) == (
        "2030-01-31T12:00:00Z",
        "80",
        {"key": "review-form", "binding": "latest"},
    )
    assert ProcessModel.from_dict(model.to_dict()) == model


@pytest.mark.parametrize(
    ("attrs", "fragment"),
    [
        ('camunda:priority="high"', "priority 'high' must be a whole number"),
        ('camunda:dueDate="next week"', "dueDate 'next week' is neither"),
    ],
)
def test_user_task_settings_that_cannot_be_read_are_refused(attrs: str, fragment: str) -> None:
    body = f'<bpmn:userTask id="u" {attrs} />'
    body += '<bpmn:sequenceFlow id="f_u" sourceRef="work" targetRef="u" />'
    problems = refused(doc(body))
    assert problems[0].element_id == "u" and fragment in problems[0].message


# -- 7. conditions --------------------------------------------------------------------------


def test_juel_conditions_are_stored_as_cel_and_feel_as_feel() -> None:
    model = load("conditions.bpmn")
    assert flow(model, "big").condition == "total >= 1000 || rush"
    vip = flow(model, "vip").condition
    assert vip is not None and vip.startswith("tier == 'gold' && ! (orders == null")
    assert flow(load("zeebe.bpmn"), "f4").condition == '=gross > 1000 and status = "new"'


@pytest.mark.parametrize(
    ("condition", "fragment"),
    [
        ("${skipParallel == False}", "CEL writes false"),
        ("skipParallel == False", "CEL writes false"),
        ("x == None", "CEL writes null"),
        ("a and b", "CEL writes &&"),
        ("${a * b div c gt 2}", "double(a) / double(b)"),
        ("${execution.getVariable('x') == 1}", "there is no `execution`"),
        ("${name.equals('x')}", "a == b"),
        ("= x between 1 and", "FEEL expression `=x between 1 and` does not compile"),
        ("= items[1 = 2", "does not compile: FEEL syntax error"),
        ("=", "empty expression: write a FEEL expression after"),
        ("amount gt 5", "wrap the whole condition in ${...}"),
    ],
)
def test_conditions_without_an_exact_cel_meaning_are_refused_with_the_fix(
    condition: str, fragment: str
) -> None:
    body = (
        '<bpmn:exclusiveGateway id="gw" default="f_d" />'
        '<bpmn:sequenceFlow id="f_g" sourceRef="work" targetRef="gw" />'
        '<bpmn:sequenceFlow id="f_d" sourceRef="gw" targetRef="end" />'
        '<bpmn:sequenceFlow id="f_c" sourceRef="gw" targetRef="end"><bpmn:conditionExpression>'
        f"{condition.replace('&', '&amp;').replace('<', '&lt;')}"
        "</bpmn:conditionExpression></bpmn:sequenceFlow>"
    )
    problems = refused(doc(body))
    assert [p.element_id for p in problems] == ["f_c"], problems
    assert fragment in problems[0].message


# -- 8. encodings ---------------------------------------------------------------------------


def test_files_are_decoded_as_their_xml_declaration_says() -> None:
    from bpm.bpmn.xmlread import decode_xml

    models = [load(f"encoding_{e}.bpmn") for e in ("utf8", "latin1", "utf16")]
    assert models[0] == models[1] == models[2]
    assert models[0].name == "Café crème à emporter"
    assert models[0].checksum() == models[1].checksum() == models[2].checksum()
    for e in ("latin1", "utf16"):
        text = decode_xml((DATA / f"encoding_{e}.bpmn").read_bytes())
        assert "Größe prüfen" in text


# -- 9. warnings ----------------------------------------------------------------------------


def test_settings_understood_but_not_honoured_deploy_with_a_warning_naming_each() -> None:
    model = load("warnings.bpmn")
    expected = [
        ("camunda:asyncBefore", "'start'"),
        ("camunda:asyncAfter", "'work'"),
        ("camunda:executionListener", "'end'"),  # a take listener belongs on a flow
    ]
    for setting, element in expected:
        assert any(setting in w and element in w for w in model.warnings), (setting, model)
    assert not any("historyTimeToLive" in w for w in model.warnings)  # honoured: retention
    # Variable mappings are honoured now (issue 10): read, not warned about.
    assert not any("inputOutput" in w or "ioMapping" in w for w in model.warnings)
    work = model.nodes["work"]
    assert isinstance(work, n.ServiceTask)
    assert work.inputs == (n.VariableMapping("x", '"1"'),)
    # an execution listener of an inline task runs (issue 25): read, not warned about
    assert work.listeners == (n.Listener("start", handler="com.acme.Audit"),)
    assert not any("executionListener" in w and "'work'" in w for w in model.warnings)
    zeebe = load("zeebe.bpmn")
    assert not any("zeebe:ioMapping" in w for w in zeebe.warnings)
    collect = zeebe.nodes["collect"]
    assert isinstance(collect, n.ServiceTask)
    assert collect.inputs == (n.VariableMapping("amount", "=total"),)


# -- the cron reader ------------------------------------------------------------------------


def test_cron_next_fire_times() -> None:
    from bpm.cron import parse_cron

    friday = datetime(2026, 1, 30, 10, 0, tzinfo=UTC)
    cases = {
        "0 0/15 9-17 ? * MON-FRI": "2026-01-30T10:15:00+00:00",
        "0 0 0 L * ?": "2026-01-31T00:00:00+00:00",
        "@hourly": "2026-01-30T11:00:00+00:00",
        "0 0 12 ? * 1": "2026-02-01T12:00:00+00:00",  # Quartz: 1 = Sunday
        "0 30 8 29 2 ? *": "2028-02-29T08:30:00+00:00",
    }
    for text, expected in cases.items():
        found = parse_cron(text).next_after(friday)
        assert found is not None and found.isoformat() == expected, text
    assert parse_cron("0 0 12 * * 0", sunday_zero=True).next_after(friday) == datetime(
        2026, 2, 1, 12, tzinfo=UTC
    )
    assert parse_cron("0 0 0 1 1 ? 2025").next_after(friday) is None
    every_second = parse_cron("* * * * * ?")
    assert every_second.next_after(friday) == friday + timedelta(seconds=1)
