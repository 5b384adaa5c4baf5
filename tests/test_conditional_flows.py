"""Conditional sequence flows leaving activities (issue 20, item 3; BPMN 2.0 10.3.1).

When an activity completes, every outgoing flow without a condition and every flow whose
condition is true gets a token; the activity's default flow only when no other is taken;
none taken is an incident on the activity, as at an exclusive gateway. Run on the test
kit's SQLite engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.kinds import model_to_bpmn
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.testing import BpmTest, assert_that

MODELER = Path(__file__).parent / "data" / "modeler" / "conditional_flows.bpmn"


def branching(*, default: bool = True, always: bool = False) -> Process:
    """A task with two conditional flows joined by a parallel gateway, a default flow
    and (``always``) a flow without a condition."""
    p = (
        Process("branching")
        .start("s")
        .service_task("t", handler="cf.work")
        .task("a")
        .task("b")
        .parallel("join")
        .end("joined")
        .sequence("s", "t")
        .flow("t", "a", condition="x > 1", id="to_a")
        .flow("t", "b", condition="y > 1", id="to_b")
        .sequence("a", "join")
        .sequence("b", "join", "joined")
    )
    if default:
        p = p.end("fallback").flow("t", "fallback", id="to_fallback", default=True)
    if always:
        p = p.end("logged").flow("t", "logged", id="to_logged")
    return p


def test_two_true_conditions_give_two_tokens(bpm: BpmTest) -> None:
    bpm.deploy(branching())
    bpm.mock("cf.work", returns={"x": 2, "y": 3})
    inst = bpm.start("branching")
    assert_that(inst).is_completed().has_passed("a", "b", "join", "joined")
    assert_that(inst).has_not_passed("fallback").has_no_incidents()


def test_one_true_condition_gives_one_token(bpm: BpmTest) -> None:
    bpm.deploy(branching())
    bpm.mock("cf.work", returns={"x": 2, "y": 0})
    inst = bpm.start("branching")
    # the join waits for b, which no token will reach: the instance stays at the join
    assert_that(inst).has_passed("a").has_not_passed("b", "fallback", "joined")
    assert bpm.waiting_at(inst) == ["join"]


def test_no_true_condition_takes_the_default(bpm: BpmTest) -> None:
    bpm.deploy(branching())
    bpm.mock("cf.work", returns={"x": 0, "y": 0})
    inst = bpm.start("branching")
    assert_that(inst).is_completed().has_passed("fallback").has_not_passed("a", "b", "joined")


def test_no_true_condition_without_default_is_the_exclusive_gateways_incident(
    bpm: BpmTest,
) -> None:
    bpm.deploy(branching(default=False))
    bpm.deploy(
        Process("gateway")
        .start("s")
        .exclusive("g")
        .end("e")
        .sequence("s", "g")
        .flow("g", "e", condition="x > 1")
    )
    bpm.mock("cf.work", returns={"x": 0, "y": 0})
    inst = bpm.start("branching")
    assert_that(inst).has_incident_at("t", "no condition matched and there is no default flow")
    assert_that(inst).has_not_passed("a", "b")
    assert bpm.variables(inst) == {"x": 0, "y": 0}
    gateway = bpm.start("gateway", {"x": 0})
    (ours,) = bpm.engine.incidents(inst.id)
    (theirs,) = bpm.engine.incidents(gateway.id)
    assert ours.type == theirs.type == "failedGateway"
    assert ours.message == "activity t: no condition matched and there is no default flow"
    assert theirs.message == "gateway g: no condition matched and there is no default flow"


def test_a_flow_without_condition_is_always_taken_and_the_default_never_then(
    bpm: BpmTest,
) -> None:
    bpm.deploy(branching(always=True))
    bpm.mock("cf.work", returns={"x": 0, "y": 0})
    inst = bpm.start("branching")
    assert_that(inst).is_completed().has_passed("logged").has_not_passed("a", "b", "fallback")


def test_a_camunda_modeler_file_runs_from_a_user_task(bpm: BpmTest) -> None:
    model = parse_bpmn(MODELER.read_text())
    review = model.nodes["Activity_review"]
    assert isinstance(review, n.UserTask) and review.default_flow == "Flow_archive"
    assert model.branching == frozenset({"Activity_review"})
    bpm.deploy(MODELER)
    both = bpm.start("review")
    bpm.complete(both, "Activity_review", {"legal": True, "amount": 5000})
    assert_that(both).is_completed().has_passed("Event_legal", "Event_finance")
    assert_that(both).has_not_passed("Event_archived")
    neither = bpm.start("review")
    bpm.complete(neither, "Activity_review", {"legal": False, "amount": 10})
    assert_that(neither).is_completed().has_passed("Event_archived")
    assert_that(neither).has_not_passed("Event_legal", "Event_finance")


def test_builder_json_drawing_and_parse_keep_conditions_and_default() -> None:
    model = branching(always=True).build()
    t = model.nodes["t"]
    assert isinstance(t, n.ServiceTask) and t.default_flow == "to_fallback"
    again = ProcessModel.from_dict(model.to_dict())
    assert again == model and again.branching == frozenset({"t"})
    drawn = model_to_bpmn(model)
    assert 'default="to_fallback"' in drawn
    parsed = parse_bpmn(drawn)
    # the conditions, drawn (as labels too) and read back
    assert {(f.id, f.condition) for f in parsed.flows} == {(f.id, f.condition) for f in model.flows}
    drawn_t = parsed.nodes["t"]
    assert isinstance(drawn_t, n.ServiceTask) and drawn_t.default_flow == "to_fallback"
    plain = Process("plain").start("s").service_task("t", handler="h").end("e")
    assert plain.sequence("s", "t", "e").build().branching == frozenset()


def test_a_default_flow_with_a_condition_is_refused() -> None:
    p = (
        branching(default=False)
        .end("fallback2")
        .flow("t", "fallback2", condition="z", id="d", default=True)
    )
    with pytest.raises(DeploymentError) as info:
        p.build()
    assert [(x.element_id, x.message) for x in info.value.problems] == [
        (
            "d",
            "flow 'd' is the default of activity 't' and has a condition: a default flow "
            "is taken when no condition is true, remove its condition",
        )
    ]


def test_a_default_naming_another_elements_flow_is_refused_naming_both(bpm: BpmTest) -> None:
    text = MODELER.read_text().replace('default="Flow_archive"', 'default="Flow_start"')
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(text)
    (problem,) = info.value.problems
    assert problem.element_id == "Activity_review"
    assert "'Flow_start' of activity 'Activity_review' leaves 'StartEvent_1'" in problem.message
    with pytest.raises(DeploymentError):
        bpm.deploy(text)
    assert bpm.engine.definitions() == []


def test_a_condition_on_a_flow_leaving_an_intermediate_event_is_still_refused() -> None:
    # (leaving a start event it is taken as leaving an activity: issue 21, item 10)
    p = (
        Process("ev")
        .start("s")
        .throw_signal("t", "x")
        .end("e")
        .sequence("s", "t")
        .flow("t", "e", condition="x > 1", id="c")
    )
    with pytest.raises(DeploymentError) as info:
        p.build()
    assert any(
        x.element_id == "c" and "which is not a gateway or an activity" in x.message
        for x in info.value.problems
    )
