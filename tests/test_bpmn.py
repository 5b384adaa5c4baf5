"""BPMN XML -> ProcessModel: the reference example, Camunda files, and every rejection."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bpm.bpmn import parse_bpmn
from bpm.errors import DeploymentError, Problem
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.retry import BackoffKind, RetryPolicy

ROOT = Path(__file__).resolve().parent.parent
ORDER = ROOT / "examples" / "order.bpmn"
CAMUNDA = Path(__file__).resolve().parent / "data" / "camunda_full.bpmn"

TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
    xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    id="defs" targetNamespace="http://example.com">
  <bpmn:error id="Err" errorCode="E42" />
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f_start" sourceRef="start" targetRef="work" />
    <bpmn:serviceTask id="work" bpm:handler="h" />
    <bpmn:sequenceFlow id="f_work" sourceRef="work" targetRef="end" />
    <bpmn:endEvent id="end" />
{body}
  </bpmn:process>
</bpmn:definitions>
"""


def doc(body: str) -> str:
    return TEMPLATE.format(body=body)


def between(element: str, element_id: str) -> str:
    """``element`` wired as start -> work -> element -> end (so it is reachable)."""
    return (
        f'<bpmn:sequenceFlow id="in_{element_id}" sourceRef="work" targetRef="{element_id}" />\n'
        f"{element}\n"
        f'<bpmn:sequenceFlow id="out_{element_id}" sourceRef="{element_id}" targetRef="end" />'
    )


def line_of(text: str, needle: str) -> int:
    lines = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(lines) == 1, f"needle {needle!r} found on lines {lines}"
    return lines[0]


def rejected(text: str | bytes, resource: str | None = "t.bpmn") -> list[Problem]:
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(text, resource)
    assert info.value.resource == resource
    return info.value.problems


# -- accepted files --------------------------------------------------------------------


def test_order_example() -> None:
    model = parse_bpmn(ORDER.read_bytes(), "order.bpmn")
    assert (model.key, model.name) == ("order", "Order")
    assert [s.id for s in model.start_events] == ["start"]
    handlers = {x.id: x.handler for x in model.nodes.values() if isinstance(x, n.ServiceTask)}
    assert handlers == {
        "validate": "validate-order",
        "reserve": "reserve-stock",
        "charge": "charge-payment",
        "ship": "ship-order",
    }
    gateway = model.node("amount_check")
    assert isinstance(gateway, n.ExclusiveGateway) and gateway.default_flow == "small"
    flows = {f.id: f for f in model.flows}
    assert flows["big"].condition == "amount > 100"  # ${...} unwrapped, &gt; decoded
    assert (flows["big"].target, flows["small"].target) == ("fork", "ship")
    assert isinstance(model.node("fork"), n.ParallelGateway)
    assert {f.target for f in model.outgoing["fork"]} == {"reserve", "charge"}
    assert len(model.incoming["join"]) == 2
    assert [f.target for f in model.outgoing["ship"]] == ["end"]
    assert model.node("validate").line == line_of(ORDER.read_text(), 'id="validate"')
    assert model.warnings == ()


def test_str_and_bytes_give_the_same_model() -> None:
    assert parse_bpmn(ORDER.read_text()) == parse_bpmn(ORDER.read_bytes())


def test_camunda_file() -> None:
    model = parse_bpmn(CAMUNDA.read_bytes(), CAMUNDA.name)
    assert (model.key, model.name, model.version_tag) == ("claim", "Insurance claim", "2.1")
    score = model.node("score")
    assert isinstance(score, n.ServiceTask) and score.is_external
    assert (score.topic, score.priority, score.handler) == ("claim-scoring", 7, None)
    assert dict(score.properties) == {"model": "v3", "region": "eu"}
    assert score.retry == RetryPolicy.fixed(4, timedelta(seconds=5))
    pay = model.node("pay")
    assert isinstance(pay, n.ServiceTask)
    assert (pay.handler, pay.lease_seconds) == ("payOut", 120.0)
    assert pay.retry == RetryPolicy.exponential(8, 1.0, 30.0)
    remind = model.node("remind")
    assert isinstance(remind, n.ServiceTask) and remind.retry == RetryPolicy.none()
    assert remind.retry.kind is BackoffKind.NONE
    review = model.node("review")
    assert isinstance(review, n.UserTask)
    assert (review.assignee, review.candidate_groups) == ("demo", ("claims", "managers"))
    assert model.node("score_failed") == n.BoundaryEvent(
        "score_failed", "Rejected", attached_to="score", error_code="REJECTED"
    )
    catch_all = model.node("pay_any_error")
    assert isinstance(catch_all, n.BoundaryEvent) and catch_all.is_error
    assert catch_all.error_code is None
    reminder = model.node("review_reminder")
    assert isinstance(reminder, n.BoundaryEvent) and not reminder.cancel_activity
    assert reminder.timer == n.TimerSpec(n.TimerKind.CYCLE, "R3/PT1H")
    timeout = model.node("review_timeout")
    assert isinstance(timeout, n.BoundaryEvent) and timeout.cancel_activity
    assert timeout.timer == n.TimerSpec(n.TimerKind.DURATION, "P2D")
    assert {b.id for b in model.boundaries["review"]} == {"review_reminder", "review_timeout"}
    cool_off = model.node("cool_off")
    assert isinstance(cool_off, n.TimerCatchEvent)
    assert cool_off.timer == n.TimerSpec(n.TimerKind.DATE, "${reopen_at}")
    assert model.node("denied") == n.EndEvent(
        "denied", "Denied", kind=n.EndKind.ERROR, error_code="REJECTED"
    )
    assert model.node("aborted") == n.EndEvent("aborted", "Aborted", kind=n.EndKind.TERMINATE)
    flows = {f.id: f for f in model.flows}
    assert flows["f_auto"].condition == "score < 0.2 && amount <= 1000"
    assert flows["f_approved"].condition == "approved == true"
    # ignored but allowed: lanes, data objects, annotations, associations, diagram
    assert "TextAnnotation_1" not in model.nodes and "Lane_1" not in model.nodes
    # an execution listener of an inline task runs (issue 25): read, not warned about
    assert model.node("pay").listeners == (n.Listener("start", handler="com.example.Audit"),)
    assert not any("executionListener" in w for w in model.warnings)


@pytest.mark.parametrize("path", [ORDER, CAMUNDA], ids=["order", "camunda"])
def test_dict_round_trip(path: Path) -> None:
    model = parse_bpmn(path.read_bytes())
    again = ProcessModel.from_dict(model.to_dict())
    assert again == model
    assert again.checksum() == model.checksum()
    assert [f.line for f in again.flows] == [f.line for f in model.flows]


def test_first_executable_process_is_used() -> None:
    text = doc("").replace(
        '<bpmn:process id="p" isExecutable="true">',
        '<bpmn:process id="other" isExecutable="false" />\n'
        '  <bpmn:process id="p" isExecutable="true">',
    )
    assert parse_bpmn(text).key == "p"


def test_exclusive_without_default_is_a_warning() -> None:
    body = between(
        '<bpmn:exclusiveGateway id="gw" />\n'
        '<bpmn:sequenceFlow id="f_a" sourceRef="gw" targetRef="end">'
        "<bpmn:conditionExpression>${x == 1}</bpmn:conditionExpression></bpmn:sequenceFlow>",
        "gw",
    ).replace('<bpmn:sequenceFlow id="out_gw" sourceRef="gw" targetRef="end" />', "")
    body += (
        '\n<bpmn:sequenceFlow id="f_b" sourceRef="gw" targetRef="end">'
        "<bpmn:conditionExpression>x == 2</bpmn:conditionExpression></bpmn:sequenceFlow>"
    )
    model = parse_bpmn(doc(body))
    assert any("'gw' has no default flow" in w for w in model.warnings)


# -- rejected files --------------------------------------------------------------------


def test_not_xml() -> None:
    (problem,) = rejected("this is not XML\n")
    assert problem.line == 1 and problem.column is not None
    assert "not well-formed XML" in problem.message
    (problem,) = rejected(doc("<bpmn:startEvent id='s2'>"))
    assert problem.line is not None and problem.line > 10


def test_not_bpmn() -> None:
    (problem,) = rejected("<html><body/></html>")
    assert "not a BPMN 2.0 file" in problem.message


def test_no_process() -> None:
    text = doc("").split("<bpmn:process")[0] + "</bpmn:definitions>"
    (problem,) = rejected(text)
    assert "process is missing" in problem.message


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">
  <bpmn:process id="p" name="&lol4;" isExecutable="true" />
</bpmn:definitions>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE definitions [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">
  <bpmn:process id="p" name="&xxe;" isExecutable="true" />
</bpmn:definitions>
"""


@pytest.mark.parametrize("text", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["laughs", "xxe"])
def test_entities_are_refused(text: str) -> None:
    (problem,) = rejected(text)
    assert problem.line == 2
    assert "DOCTYPE" in problem.message
    (problem,) = rejected(text.encode())  # bytes take the same path
    assert problem.line == 2


BAD_CASES: list[tuple[str, str, str, str, str]] = [
    # (case id, body, element id reported, needle for the line, message fragment)
    (
        "unknown-element",
        '<bpmn:fancyThing id="x1" />',
        "x1",
        'id="x1"',
        "unknown element <bpmn:fancyThing>",
    ),
    (
        "event-subprocess-in-a-flow",
        between('<bpmn:subProcess id="sub" triggeredByEvent="true" />', "sub"),
        "sub",
        'id="sub"',
        "has incoming or outgoing sequence flows",
    ),
    (
        "ad-hoc-sub-process",
        between(
            '<bpmn:adHocSubProcess id="ah"><bpmn:startEvent id="ah_s" /></bpmn:adHocSubProcess>',
            "ah",
        ),
        "ah",
        'id="ah"',
        "holds start event 'ah_s'",
    ),
    (
        "script-cel-empty",
        between('<bpmn:scriptTask id="scr" scriptFormat="cel" />', "scr"),
        "scr",
        'id="scr"',
        "has no script",
    ),
    (
        "call-activity-without-called-element",
        between('<bpmn:callActivity id="call" />', "call"),
        "call",
        'id="call"',
        "has no calledElement",
    ),
    (
        "event-based",
        between('<bpmn:eventBasedGateway id="ebg" />', "ebg"),
        "ebg",
        'id="ebg"',
        "event-based",
    ),
    (
        "message-catch",
        between(
            '<bpmn:intermediateCatchEvent id="msg">\n'
            '<bpmn:messageEventDefinition id="md" />\n</bpmn:intermediateCatchEvent>',
            "msg",
        ),
        "msg",
        'id="md"',
        "has no messageRef",
    ),
    (
        "timer-start",
        '<bpmn:startEvent id="s2"><bpmn:timerEventDefinition id="td"/></bpmn:startEvent>\n'
        '<bpmn:sequenceFlow id="f_s2" sourceRef="s2" targetRef="work" />',
        "s2",
        'id="td"',
        "needs exactly one of timeDuration",
    ),
    (
        "multi-instance-without-count",
        between(
            '<bpmn:serviceTask id="mi" bpm:handler="h">\n'
            "<bpmn:multiInstanceLoopCharacteristics />\n</bpmn:serviceTask>",
            "mi",
        ),
        "mi",
        'id="mi"',
        "neither a loopCardinality nor a collection",
    ),
    (
        "standard-loop",
        between(
            '<bpmn:serviceTask id="sl" bpm:handler="h">\n'
            "<bpmn:standardLoopCharacteristics />\n</bpmn:serviceTask>",
            "sl",
        ),
        "sl",
        "standardLoop",
        "loop marker",
    ),
    (
        "missing-target",
        '<bpmn:sequenceFlow id="f_bad" sourceRef="work" targetRef="nowhere" />',
        "f_bad",
        'id="f_bad"',
        "'nowhere', which is not a node",
    ),
    (
        "duplicate-id",
        '<bpmn:endEvent id="work" />',
        "work",
        '<bpmn:endEvent id="work"',
        "used twice",
    ),
    (
        "dead-end-gateway",
        between('<bpmn:eventBasedGateway id="stuck" />', "stuck").replace(
            '<bpmn:sequenceFlow id="out_stuck" sourceRef="stuck" targetRef="end" />', ""
        ),
        "stuck",
        'id="stuck"',
        "no outgoing sequence flow",
    ),
    (
        "condition-syntax",
        between('<bpmn:exclusiveGateway id="gw" default="out_gw" />', "gw")
        + '\n<bpmn:sequenceFlow id="f_c" sourceRef="gw" targetRef="end">\n'
        "<bpmn:conditionExpression>${amount &gt;}</bpmn:conditionExpression>\n"
        "</bpmn:sequenceFlow>",
        "f_c",
        'id="f_c"',
        "does not compile",
    ),
    (
        "condition-python",
        between('<bpmn:exclusiveGateway id="gw" default="out_gw" />', "gw")
        + '\n<bpmn:sequenceFlow id="f_py" sourceRef="gw" targetRef="end">\n'
        "<bpmn:conditionExpression>${__import__('os').system('ls')}"
        "</bpmn:conditionExpression>\n</bpmn:sequenceFlow>",
        "f_py",
        'id="f_py"',
        "only standard CEL",
    ),
    (
        "condition-script-language",
        between('<bpmn:exclusiveGateway id="gw" default="out_gw" />', "gw")
        + '\n<bpmn:sequenceFlow id="f_js" sourceRef="gw" targetRef="end">\n'
        '<bpmn:conditionExpression language="javascript">x</bpmn:conditionExpression>\n'
        "</bpmn:sequenceFlow>",
        "f_js",
        'language="javascript"',
        "language 'javascript' is not supported",
    ),
    (
        "condition-after-parallel",
        between('<bpmn:parallelGateway id="par" />', "par")
        + '\n<bpmn:sequenceFlow id="f_pc" sourceRef="par" targetRef="end">\n'
        "<bpmn:conditionExpression>x &gt; 1</bpmn:conditionExpression>\n</bpmn:sequenceFlow>",
        "f_pc",
        'id="f_pc"',
        "parallel gateway takes every path",
    ),
    (
        "default-not-outgoing",
        between('<bpmn:exclusiveGateway id="gw" default="f_start" />', "gw"),
        "gw",
        'id="gw"',
        "default flow 'f_start'",
    ),
    (
        "bad-duration",
        between(
            '<bpmn:intermediateCatchEvent id="t1"><bpmn:timerEventDefinition>'
            "<bpmn:timeDuration>PT5X</bpmn:timeDuration>"
            "</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>",
            "t1",
        ),
        "t1",
        'id="t1"',
        "not an ISO 8601 duration",
    ),
    (
        "negative-duration",
        between(
            '<bpmn:intermediateCatchEvent id="t2"><bpmn:timerEventDefinition>'
            "<bpmn:timeDuration>-PT5S</bpmn:timeDuration>"
            "</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>",
            "t2",
        ),
        "t2",
        'id="t2"',
        "negative",
    ),
    (
        "bad-date",
        between(
            '<bpmn:intermediateCatchEvent id="t3"><bpmn:timerEventDefinition>'
            "<bpmn:timeDate>next tuesday</bpmn:timeDate>"
            "</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>",
            "t3",
        ),
        "t3",
        'id="t3"',
        "not an ISO 8601 date",
    ),
    (
        "bad-cycle",
        '<bpmn:boundaryEvent id="b1" attachedToRef="work" cancelActivity="false">'
        "<bpmn:timerEventDefinition><bpmn:timeCycle>R0/PT1S</bpmn:timeCycle>"
        "</bpmn:timerEventDefinition></bpmn:boundaryEvent>\n"
        '<bpmn:sequenceFlow id="f_b1" sourceRef="b1" targetRef="end" />',
        "b1",
        'id="b1"',
        "use R1 or more",
    ),
    (
        "empty-timer",
        between(
            '<bpmn:intermediateCatchEvent id="t4"><bpmn:timerEventDefinition id="t4d" />'
            "</bpmn:intermediateCatchEvent>",
            "t4",
        ),
        "t4",
        'id="t4d"',
        "exactly one of timeDuration",
    ),
    (
        "bad-retry",
        between('<bpmn:serviceTask id="r1" bpm:handler="h" bpm:retry="sometimes(3)" />', "r1"),
        "r1",
        'id="r1"',
        "unknown policy 'sometimes'",
    ),
    (
        "bad-retry-arity",
        between('<bpmn:serviceTask id="r2" bpm:handler="h" bpm:retry="fixed(3)" />', "r2"),
        "r2",
        'id="r2"',
        "takes 2 argument(s)",
    ),
    (
        "bad-retry-cycle",
        between(
            '<bpmn:serviceTask id="r3" bpm:handler="h">\n<bpmn:extensionElements>'
            "<camunda:failedJobRetryTimeCycle>R/PT5S</camunda:failedJobRetryTimeCycle>"
            "</bpmn:extensionElements>\n</bpmn:serviceTask>",
            "r3",
        ),
        "r3",
        'id="r3"',
        "retries forever",
    ),
    (
        "bad-lease",
        between('<bpmn:serviceTask id="l1" bpm:handler="h" bpm:lease="soon" />', "l1"),
        "l1",
        'id="l1"',
        "bpm:lease",
    ),
    (
        "handler-and-topic",
        between(
            '<bpmn:serviceTask id="ht" bpm:handler="h" camunda:type="external" '
            'camunda:topic="t" />',
            "ht",
        ),
        "ht",
        'id="ht"',
        "is bound twice (bpm:handler 'h' and camunda:type 'topic t')",
    ),
    (
        "bad-delegate",
        between('<bpmn:serviceTask id="de" camunda:delegateExpression="${a + b}" />', "de"),
        "de",
        'id="de"',
        "cannot name a handler",
    ),
    (
        "external-without-topic",
        between('<bpmn:serviceTask id="ext" camunda:type="external" />', "ext"),
        "ext",
        'id="ext"',
        "needs camunda:topic",
    ),
    (
        "bad-priority",
        between(
            '<bpmn:serviceTask id="pr" camunda:type="external" camunda:topic="t" '
            'camunda:taskPriority="high" />',
            "pr",
        ),
        "pr",
        'id="pr"',
        "taskPriority 'high'",
    ),
    (
        "boundary-on-gateway",
        between('<bpmn:exclusiveGateway id="gw" />', "gw")
        + '\n<bpmn:boundaryEvent id="bg" attachedToRef="gw"><bpmn:errorEventDefinition />'
        '</bpmn:boundaryEvent>\n<bpmn:sequenceFlow id="f_bg" sourceRef="bg" targetRef="end" />',
        "bg",
        'id="bg"',
        "which is not an activity",
    ),
    (
        "boundary-on-missing",
        '<bpmn:boundaryEvent id="bm" attachedToRef="ghost"><bpmn:errorEventDefinition />'
        '</bpmn:boundaryEvent>\n<bpmn:sequenceFlow id="f_bm" sourceRef="bm" targetRef="end" />',
        "bm",
        'id="bm"',
        "'ghost', which does not",
    ),
    (
        "boundary-without-definition",
        '<bpmn:boundaryEvent id="bx" attachedToRef="work" />',
        "bx",
        'id="bx"',
        "has no event definition",
    ),
    (
        "end-with-outgoing",
        '<bpmn:sequenceFlow id="f_loop" sourceRef="end" targetRef="work" />',
        "end",
        '<bpmn:endEvent id="end"',
        "end event 'end' has outgoing flows",
    ),
]


@pytest.mark.parametrize(
    ("body", "element_id", "needle", "fragment"),
    [case[1:] for case in BAD_CASES],
    ids=[case[0] for case in BAD_CASES],
)
def test_rejected(body: str, element_id: str, needle: str, fragment: str) -> None:
    text = doc(body)
    problems = rejected(text)
    matching = [p for p in problems if fragment in p.message]
    assert matching, f"no problem mentions {fragment!r}: {problems}"
    assert matching[0].element_id == element_id
    assert matching[0].line == line_of(text, needle)
    assert element_id in str(matching[0]) and f"line {matching[0].line}" in str(matching[0])


def test_unreachable_node_is_deployed_with_a_warning() -> None:
    # Camunda 7 deploys a node no start event reaches (its own test models hold some);
    # it never runs and harms nothing, so it is a warning, not a refusal (issue 21).
    body = (
        '<bpmn:serviceTask id="orphan" bpm:handler="h" />\n'
        '<bpmn:sequenceFlow id="f_o" sourceRef="orphan" targetRef="end" />'
    )
    parsed = parse_bpmn(doc(body))
    assert "orphan" in parsed.nodes
    (warning,) = [w for w in parsed.warnings if "cannot be reached" in w]
    assert "'orphan'" in warning and "never runs" in warning


def test_every_problem_is_reported_at_once() -> None:
    body = (
        '<bpmn:fancyThing id="x1" />\n'
        '<bpmn:sequenceFlow id="f_bad" sourceRef="work" targetRef="nowhere" />\n'
        '<bpmn:serviceTask id="orphan" bpm:handler="h" bpm:retry="often()" />\n'
        '<bpmn:sequenceFlow id="f_o" sourceRef="orphan" targetRef="end" />'
    )
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(doc(body), "many.bpmn")
    ids = {p.element_id for p in info.value.problems}
    assert {"x1", "f_bad", "orphan"} <= ids
    assert str(info.value).startswith("cannot deploy many.bpmn: ")
    lines = [p.line or 0 for p in info.value.problems]
    assert lines == sorted(lines)


def test_no_start_event() -> None:
    text = doc("").replace('<bpmn:startEvent id="start" />', "")
    text = text.replace('<bpmn:sequenceFlow id="f_start" sourceRef="start" targetRef="work" />', "")
    problems = rejected(text)
    assert any("has no start event" in p.message for p in problems)


def test_unsupported_element_does_not_cause_dangling_flow_noise() -> None:
    problems = rejected(doc(between('<bpmn:callChoreography id="tx" />', "tx")))
    assert [p.element_id for p in problems] == ["tx"]


def test_unknown_element_is_reported_once() -> None:
    problems = rejected(doc('<bpmn:fancyThing id="x1" />'))
    assert [p.element_id for p in problems] == ["x1"]


def test_delegate_expression_problem_is_reported_once() -> None:
    body = between('<bpmn:serviceTask id="de" camunda:delegateExpression="${a ? b : c}" />', "de")
    problems = rejected(doc(body))
    assert len(problems) == 1 and "camunda:delegateExpression" in problems[0].message
