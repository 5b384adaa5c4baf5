"""Compensation in BPMN files: what Camunda Modeler draws deploys and runs; mistakes are
clear deploy errors and deploy nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bpm import InstanceState
from bpm.bpmn import parse_bpmn
from bpm.errors import DeploymentError
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.model import nodes as n
from bpm.retry import FailureAction
from tests.engine_helpers import drain, make_engine, table_dump

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)

HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
    xmlns:bpm="http://bpm-celery.dev/schema/1.0/bpmn"
    id="defs" targetNamespace="http://example.com">
  <bpmn:process id="trip" isExecutable="true">
{body}
  </bpmn:process>
</bpmn:definitions>
"""

# Book a hotel and a flight; pay; if payment runs out of attempts, the saga undoes both.
SAGA = """
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="hotel" />
    <bpmn:serviceTask id="hotel" bpm:handler="book-hotel" />
    <bpmn:boundaryEvent id="hotel_comp" attachedToRef="hotel">
      <bpmn:compensateEventDefinition />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="cancel_hotel" isForCompensation="true" bpm:handler="cancel-hotel" />
    <bpmn:association id="a1" associationDirection="One" sourceRef="hotel_comp"
        targetRef="{hotel_handler}" />
    <bpmn:sequenceFlow id="f2" sourceRef="hotel" targetRef="flight" />
    <bpmn:serviceTask id="flight" bpm:handler="book-flight" />
    <bpmn:boundaryEvent id="flight_comp" attachedToRef="flight">
      <bpmn:compensateEventDefinition />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="cancel_flight" isForCompensation="true" camunda:type="external"
        camunda:topic="cancel-flight" />
    <bpmn:association id="a2" associationDirection="One" sourceRef="flight_comp"
        targetRef="cancel_flight" />
    <bpmn:sequenceFlow id="f3" sourceRef="flight" targetRef="pay" />
    <bpmn:serviceTask id="pay" bpm:handler="pay" bpm:retry="fixed(2, PT0S)"
        bpm:onFailure="compensate" />
    <bpmn:sequenceFlow id="f4" sourceRef="pay" targetRef="end" />
    <bpmn:endEvent id="end" />
    <bpmn:task id="cancel_hotel_twin" />
"""


def saga_xml(hotel_handler: str = "cancel_hotel") -> str:
    return HEAD.format(body=SAGA.format(hotel_handler=hotel_handler))


def test_a_modeler_saga_parses_into_handlers_boundaries_and_a_compensate_action() -> None:
    model = parse_bpmn(saga_xml().replace('<bpmn:task id="cancel_hotel_twin" />', ""))
    assert model.compensation_handlers == {"hotel": "cancel_hotel", "flight": "cancel_flight"}
    handler = model.nodes["cancel_flight"]
    assert isinstance(handler, n.ServiceTask) and handler.for_compensation
    assert handler.topic == "cancel-flight"
    pay = model.nodes["pay"]
    assert isinstance(pay, n.ServiceTask) and pay.retry is not None
    assert pay.retry.on_exhausted is FailureAction.COMPENSATE and pay.retry.max_attempts == 2


def test_the_modeler_saga_runs_inline_and_external_handlers_newest_first(
    database_url: str,
) -> None:
    calls: list[str] = []
    reg = HandlerRegistry()

    def handler(name: str, fail: bool = False) -> None:
        def run(ctx: TaskContext) -> None:
            calls.append(name)
            if fail:
                raise RuntimeError("declined")

        reg.register(name, run)

    for name in ("book-hotel", "book-flight", "cancel-hotel"):
        handler(name)
    handler("pay", fail=True)
    engine, q = make_engine(database_url, reg)
    engine.deploy(saga_xml().replace('<bpmn:task id="cancel_hotel_twin" />', ""))
    inst = engine.start("trip", now=T0)
    drain(engine, q)
    assert calls == ["book-hotel", "book-flight", "pay", "pay"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATING
    from bpm.runtime.external import FetchRequest, TopicRequest

    (task,) = engine.fetch_and_lock(
        FetchRequest("w", 5, (TopicRequest("cancel-flight", 60_000),)), now=T0
    )
    assert q.queue == type(q.queue)()  # the hotel waits for the flight: newest first
    engine.complete_external_task(task.id, "w", now=T0)
    drain(engine, q)
    assert calls[-1] == "cancel-hotel"
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


def refused(xml: str) -> list[str]:
    with pytest.raises(DeploymentError) as info:
        parse_bpmn(xml)
    return [f"{p.element_id}: {p.message}" for p in info.value.problems]


def test_an_association_to_a_task_that_is_not_for_compensation_is_refused(
    database_url: str,
) -> None:
    xml = saga_xml(hotel_handler="cancel_hotel_twin")
    (problem,) = refused(xml)
    assert problem.startswith("hotel_comp: ")
    assert "'cancel_hotel_twin', which is not a compensation handler" in problem
    assert 'isForCompensation="true"' in problem
    engine, _ = make_engine(database_url)
    before = table_dump(engine)
    with pytest.raises(DeploymentError):
        engine.deploy(xml)
    assert table_dump(engine) == before  # nothing deployed


def test_a_compensation_boundary_without_association_is_refused() -> None:
    xml = saga_xml().replace(
        '<bpmn:association id="a1" associationDirection="One" sourceRef="hotel_comp"\n'
        '        targetRef="cancel_hotel" />',
        "",
    )
    problems = refused(xml)
    assert any(p.startswith("hotel_comp: ") and "no association" in p for p in problems)


THROW = """
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="sub" />
    <bpmn:subProcess id="sub">
      <bpmn:startEvent id="ss" />
      <bpmn:sequenceFlow id="fs" sourceRef="ss" targetRef="inner" />
      <bpmn:serviceTask id="inner" bpm:handler="inner" />
      <bpmn:boundaryEvent id="inner_comp" attachedToRef="inner">
        <bpmn:compensateEventDefinition />
      </bpmn:boundaryEvent>
      <bpmn:serviceTask id="undo_inner" isForCompensation="true" bpm:handler="undo-inner" />
      <bpmn:association id="a1" sourceRef="inner_comp" targetRef="undo_inner" />
      <bpmn:sequenceFlow id="fe" sourceRef="inner" targetRef="se" />
      <bpmn:endEvent id="se" />
    </bpmn:subProcess>
    <bpmn:sequenceFlow id="f2" sourceRef="sub" targetRef="throw" />
    <bpmn:intermediateThrowEvent id="throw">
      <bpmn:compensateEventDefinition activityRef="{ref}" />
    </bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="throw" targetRef="end" />
    <bpmn:endEvent id="end">
      <bpmn:compensateEventDefinition />
    </bpmn:endEvent>
"""


def test_an_activity_ref_naming_no_activity_of_the_scope_is_refused(database_url: str) -> None:
    for ref in ("nowhere", "inner"):  # unknown; an activity of another scope
        (problem,) = refused(HEAD.format(body=THROW.format(ref=ref)))
        assert problem.startswith("throw: ")
        assert f"activityRef '{ref}', which names no activity of the process" in problem
        assert "name one of sub" in problem
    engine, _ = make_engine(database_url)
    before = table_dump(engine)
    with pytest.raises(DeploymentError):
        engine.deploy(HEAD.format(body=THROW.format(ref="inner")))
    assert table_dump(engine) == before


def test_a_throw_naming_a_completed_sub_process_compensates_inside_it(database_url: str) -> None:
    calls: list[str] = []
    reg = HandlerRegistry()
    for name in ("inner", "undo-inner"):
        reg.register(name, lambda ctx, name=name: calls.append(name) or None)
    engine, q = make_engine(database_url, reg)
    engine.deploy(HEAD.format(body=THROW.format(ref="sub")))
    inst = engine.start("trip", now=T0)
    drain(engine, q)
    assert calls == ["inner", "undo-inner"]  # once: the end event finds nothing left
    assert engine.get_instance(inst.id).state is InstanceState.COMPENSATED


def test_an_unknown_on_failure_action_is_refused(database_url: str) -> None:
    xml = saga_xml().replace('bpm:onFailure="compensate"', 'bpm:onFailure="undo"')
    problems = refused(xml)
    assert any(
        p.startswith("pay: ")
        and "bpm:onFailure 'undo' is not understood" in p
        and "compensate" in p
        for p in problems
    )
    engine, _ = make_engine(database_url)
    before = table_dump(engine)
    with pytest.raises(DeploymentError):
        engine.deploy(xml)
    assert table_dump(engine) == before


def test_builder_mistakes_are_deploy_errors() -> None:
    from bpm.builder import Process

    with pytest.raises(DeploymentError) as info:
        (
            Process("p")
            .start("s")
            .service_task("a", handler="a", compensate_with="x", compensate_topic="y")
            .task("plain")
            .boundary_compensation("b_comp", "a", handler="plain")
            .compensate("throw", activity="ghost")
            .end("e")
            .sequence("s", "a", "throw", "e")
            .build()
        )
    messages = " | ".join(p.message for p in info.value.problems)
    assert "has both compensate_with and compensate_topic" in messages
    assert "'plain', which is not a compensation handler" in messages
    assert "activity='ghost', which names no activity of the process" in messages  # builder terms


def test_instance_and_record_states_only_move_along_their_tables() -> None:
    from bpm.errors import IllegalTransition
    from bpm.runtime.states import CompensableState, check_transition

    check_transition("instance", InstanceState.ACTIVE, InstanceState.COMPENSATING)
    check_transition("instance", InstanceState.COMPENSATING, InstanceState.COMPENSATED)
    with pytest.raises(IllegalTransition):
        check_transition("instance", InstanceState.COMPENSATED, InstanceState.ACTIVE)
    with pytest.raises(IllegalTransition):
        check_transition("instance", InstanceState.COMPLETED, InstanceState.COMPENSATING)
    with pytest.raises(IllegalTransition):  # compensated once, never again
        check_transition("record", CompensableState.COMPENSATED, CompensableState.QUEUED)


def test_a_builder_saga_drawn_as_bpmn_parses_back_to_the_same_compensation() -> None:
    from bpm.builder import Process
    from bpm.kinds import model_to_bpmn

    model = (
        Process("saga")
        .start("s")
        .service_task("reserve", handler="reserve", compensate_with="release")
        .service_task("charge", handler="charge", compensate_topic="refund")
        .compensate("undo_reserve", activity="reserve")
        .compensate_end("e")
        .sequence("s", "reserve", "charge", "undo_reserve", "e")
        .build()
    )
    again = parse_bpmn(model_to_bpmn(model))
    assert again.compensation_handlers == model.compensation_handlers
    throw = again.nodes["undo_reserve"]
    assert isinstance(throw, n.CompensationThrowEvent) and throw.activity_ref == "reserve"
    end = again.nodes["e"]
    assert isinstance(end, n.EndEvent) and end.kind is n.EndKind.COMPENSATE
