"""The Python builder makes the same model as BPMN, and reports mistakes like a deploy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError, Problem
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.retry import RetryPolicy

DATA = Path(__file__).resolve().parent / "data"
ORDER = Path(__file__).resolve().parent.parent / "examples" / "order.bpmn"


def order() -> Process:
    return (
        Process("order", name="Order")
        .start("start", name="Order received")
        .service_task("validate", handler="validate-order", name="Validate order")
        .exclusive("amount_check", default="small", name="Amount over 100?")
        .parallel("fork")
        .service_task("reserve", handler="reserve-stock", name="Reserve stock")
        .service_task("charge", handler="charge-payment", name="Charge payment")
        .parallel("join")
        .service_task("ship", handler="ship-order", name="Ship order")
        .end("end", name="Order shipped")
        .sequence("start", "validate", "amount_check")
        .flow("amount_check", "fork", "${amount > 100}", id="big", name="yes")
        .flow("amount_check", "ship", id="small", name="no")
        .flow("fork", "reserve")
        .flow("fork", "charge")
        .flow("reserve", "join")
        .flow("charge", "join")
        .sequence("join", "ship", "end")
    )


def test_order_builder_equals_the_bpmn_file() -> None:
    built = order().build()
    parsed = parse_bpmn(ORDER.read_bytes())
    assert built == parsed
    assert built.flows == parsed.flows  # same ids and order, lines aside
    assert built.checksum() != "" and built.to_dict()["nodes"][0]["line"] is None


def test_claim_builder_equals_the_camunda_file() -> None:
    built = (
        Process("claim", name="Insurance claim", version_tag="2.1")
        .start("received", name="Claim received")
        .service_task(
            "score",
            topic="claim-scoring",
            priority=7,
            properties={"model": "v3", "region": "eu"},
            retry=RetryPolicy.fixed(4, 5),
            name="Score claim",
        )
        .boundary_error("score_failed", "score", error_code="REJECTED", name="Rejected")
        .exclusive("route", default="f_review", name="Score?")
        .service_task(
            "pay",
            handler="payOut",
            retry="exponential(8, PT1S, PT30S)",
            lease="PT2M",
            name="Pay out",
            listeners=[("start", "com.example.Audit")],
        )
        .boundary_error("pay_any_error", "pay")
        .user_task(
            "review", assignee="demo", candidate_groups=["claims", "managers"], name="Review claim"
        )
        .boundary_timer(
            "review_reminder", "review", cycle="R3/PT1H", interrupting=False, name="Remind"
        )
        .boundary_timer("review_timeout", "review", duration="P2D", name="Too slow")
        .service_task(
            "remind", handler="send-reminder", retry=RetryPolicy.none(), name="Send reminder"
        )
        .end("reminded")
        .exclusive("decision", default="f_again")
        .wait_until("cool_off", "reopen_at", name="Cool off")
        .end("paid", name="Paid")
        .end("denied", error_code="REJECTED", name="Denied")
        .end("aborted", terminate=True, name="Aborted")
        .flow("received", "score", id="f1")
        .flow("score", "route", id="f2")
        .flow("route", "pay", "score < 0.2 && amount <= 1000", id="f_auto", name="low risk")
        .flow("route", "review", id="f_review")
        .flow("review", "decision", id="f_decided")
        .flow("decision", "pay", "${approved == true}", id="f_approved")
        .flow("decision", "cool_off", "${approved == false}", id="f_denied")
        .flow("decision", "score", id="f_again")
        .flow("pay", "paid", id="f_paid")
        .flow("cool_off", "denied", id="f_cooled")
        .flow("score_failed", "aborted", id="f_rejected")
        .flow("pay_any_error", "aborted", id="f_pay_error")
        .flow("review_timeout", "aborted", id="f_timeout")
        .flow("review_reminder", "remind", id="f_remind")
        .flow("remind", "reminded", id="f_reminded")
        .to_model()
    )
    parsed = parse_bpmn((DATA / "camunda_full.bpmn").read_bytes())
    assert built == parsed
    assert ProcessModel.from_dict(built.to_dict()) == built


def test_auto_flow_ids_and_default_flag() -> None:
    model = (
        Process("loop")
        .start("s")
        .user_task("work")
        .exclusive("again")
        .timer("pause", duration=timedelta(minutes=5))
        .end("e")
        .sequence("s", "work", "again")
        .flow("again", "pause", "retry == true")
        .flow("again", "e", default=True)
        .sequence("pause", "work")
        .build()
    )
    assert [f.id for f in model.flows] == [
        "Flow_s_work",
        "Flow_work_again",
        "Flow_again_pause",
        "Flow_again_e",
        "Flow_pause_work",
    ]
    gateway = model.node("again")
    assert isinstance(gateway, n.ExclusiveGateway) and gateway.default_flow == "Flow_again_e"
    pause = model.node("pause")
    assert isinstance(pause, n.TimerCatchEvent)
    assert pause.timer == n.TimerSpec(n.TimerKind.DURATION, "PT5M")
    assert model.warnings == ()


def test_parallel_edges_get_distinct_ids() -> None:
    p = Process("p").start("s").parallel("f").parallel("j").end("e")
    model = p.sequence("s", "f").flow("f", "j").flow("f", "j").sequence("j", "e").build()
    assert [f.id for f in model.outgoing["f"]] == ["Flow_f_j", "Flow_f_j_2"]


def test_timer_forms() -> None:
    deadline = datetime(2026, 12, 1, 9, tzinfo=UTC)
    model = (
        Process("t")
        .start("s")
        .timer("a", duration=90)
        .timer("b", date=deadline)
        .end("e")
        .sequence("s", "a", "b", "e")
        .build()
    )
    assert model.node("a") == n.TimerCatchEvent(
        "a", timer=n.TimerSpec(n.TimerKind.DURATION, "PT1M30S")
    )
    b = model.node("b")
    assert isinstance(b, n.TimerCatchEvent) and b.timer is not None
    assert b.timer.expression == "2026-12-01T09:00:00+00:00"


def test_builder_collects_every_mistake() -> None:
    p = (
        Process("bad")
        .start("s")
        .service_task("t")  # neither handler nor topic
        .service_task("t", handler="h")  # duplicate id
        .service_task("r", handler="h", retry="fixed(3)", lease="soon")
        .timer("w")  # no spec
        .boundary_timer("b", "t", duration="PT1M", date="2026-01-01T00:00:00Z")
        .exclusive("g")
        .end("e")
        .sequence("s", "t", "g", "e")
        .flow("g", "nowhere", "amount >")
        .flow("t", "e", default=True)  # an activity's default flow: accepted (issue 20)
        .flow("w", "e", default=True)
    )
    with pytest.raises(DeploymentError) as info:
        p.build()
    text = str(info.value)
    for fragment in (
        "cannot deploy process 'bad'",
        "id 't' is used twice",
        "takes 2 argument(s)",
        "lease:",
        "timer 'w' needs exactly one of",
        "timer 'b' needs exactly one of",
        "neither a handler nor a topic",
        "target 'nowhere'",
        "does not compile",
        "flow 'Flow_w_e' is marked default but 'w' is not an exclusive or inclusive "
        "gateway or an activity",
    ):
        assert fragment in text, fragment
    # a node no start event reaches is a warning since issue 21 (Camunda deploys it)
    assert "'r' cannot be reached" not in text
    assert "'Flow_t_e' is marked default" not in text


def test_python_in_condition_is_refused() -> None:
    p = Process("p").start("s").exclusive("g", default="d").end("e")
    p.flow("s", "g").flow("g", "e", id="d").flow("g", "e", "${__import__('os').system('ls')}")
    with pytest.raises(DeploymentError, match="only standard CEL"):
        p.build()


def test_conditions_in_other_spellings_are_translated_or_refused_once() -> None:
    def gateway(condition: str) -> Process:
        return (
            Process("p")
            .start("s")
            .exclusive("g", default="d")
            .end("e")
            .flow("s", "g")
            .flow("g", "e", id="d")
            .flow("g", "e", condition, id="c")
        )

    model = gateway("${x gt 1 and not done}").build()
    assert [f.condition for f in model.flows if f.id == "c"] == ["x > 1 && ! done"]
    assert [f.condition for f in gateway('= x = "a"').build().flows if f.id == "c"] == ['=x = "a"']
    with pytest.raises(DeploymentError) as info:
        gateway("skipParallel == False").build()
    assert [p.element_id for p in info.value.problems] == ["c"]
    assert "CEL writes false" in info.value.problems[0].message
    with pytest.raises(DeploymentError) as info:
        Process("p").start("s").service_task("t").end("e").sequence("s", "t", "e").build()
    assert [(p.element_type, p.element_id) for p in info.value.problems] == [
        ("bpmn:serviceTask", "t")
    ]


def test_builder_errors_name_the_builder_call_and_its_arguments_not_xml() -> None:
    with pytest.raises(DeploymentError) as info:
        (
            Process("p")
            .start("s")
            .service_task("g")
            .boundary_timer("t", "nope", duration="PT1M")
            .end("e")
            .sequence("s", "g", "e")
            .flow("g", "nowhere")
            .build()
        )
    text = str(info.value)
    assert "bpmn:" not in text and "Ref" not in text and "camunda:" not in text
    assert [(p.origin, p.element_id) for p in info.value.problems] == [
        (".flow('g', 'nowhere')", "Flow_g_nowhere"),
        (".boundary_timer('t')", "t"),
        (".service_task('g')", "g"),
    ]
    assert [p.message for p in info.value.problems] == [
        "sequence flow 'Flow_g_nowhere' has target 'nowhere', which is not a node of the "
        "process: fix the flow's target or add that node (e.g. .service_task(id, handler=...))",
        "boundary event 't' is attached to 'nope', which does not exist: pass attached_to= "
        "the id of a task, sub-process or call activity",
        "service task 'g' has neither a handler nor a topic: pass handler=\"name\" (run "
        'inline) or topic="topic" (an external worker)',
    ]
    assert text.endswith("or topic=\"topic\" (an external worker) (.service_task('g'))")
    # A flow made by sequence() says so; the element types stay for tools that read them.
    with pytest.raises(DeploymentError) as info:
        Process("p").start("s").end("e").sequence("s", "x", "e").build()
    assert [(p.origin, p.element_type) for p in info.value.problems][:2] == [
        (".flow('s', 'x') of .sequence(...)", "bpmn:sequenceFlow"),
        (".flow('x', 'e') of .sequence(...)", "bpmn:sequenceFlow"),
    ]
    assert str(Problem("m", "a", element_type="bpmn:task")) == "m (bpmn:task 'a')"  # XML


def test_docs_show_every_builder_verb_with_an_example_that_runs() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "bpmn.md").read_text()
    table = text.split("<!-- builder-verbs -->")[1].split("<!-- /builder-verbs -->")[0]
    rows = [line.split(" | ") for line in table.strip().splitlines()[2:]]
    documented = {row[0].strip("| `").split("`")[0] for row in rows}
    public = {m for m in dir(Process) if not m.startswith("_") and m not in ("build", "to_model")}
    assert documented == public
    for row in rows:
        verb, example = row[0].strip("| `").split("`")[0], row[1].strip("`")
        assert example.startswith(f".{verb}("), row
        builder = Process("docs")
        assert eval("builder" + example, {"builder": builder}) is builder


def test_more_validator_advice_is_said_in_builder_terms() -> None:
    with pytest.raises(DeploymentError) as info:
        (
            Process("p")
            .start("s")
            .business_rule_task("d", decision=" ")
            .compensate("c", activity="zz")
            .link_throw("lt", "L")
            .receive_signal("r", " ")
            .end("e")
            .sequence("s", "d", "c", "r", "lt")
            .link_catch("lc", "other")
            .flow("lc", "e")
            .build()
        )
    text = str(info.value)
    for xml in ("bpmn:", "camunda:", "zeebe:", "Ref", "<"):
        assert xml not in text, (xml, text)
    messages = " | ".join(p.message for p in info.value.problems)
    for advice in (
        "names no decision: pass decision= the id of a deployed DMN decision",
        "has activity='zz', which names no activity of the process",
        "or leave activity= out to compensate them all",
        'add .link_catch(id, "L") there',
        "has no signal name: give the signal a name",
    ):
        assert advice in messages, advice
