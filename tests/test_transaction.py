"""Transaction sub-processes, cancel end and cancel boundary events (issue 20, item 3), on
both backends: a transaction that completes is a sub-process; a cancel end event cancels
what else runs inside (an external task first), compensates what the transaction
completed (newest first) and then takes the cancel boundary's flow."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from bpm import Engine, InstanceState
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import BpmError, DeploymentError
from bpm.kinds import model_to_bpmn
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import TaskState
from bpm.store import tables as t
from tests.test_kinds import test_json_then_drawing_then_parse_gives_the_same_kinds as same_kinds

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def booking(key: str = "booking") -> Process:
    """s -> tx [ fork -> (hotel -> flight -> confirm? -> ok | cancel) and (audit: external)
    ] -> after; the cancel boundary -> after_cancel. hotel and flight have user task
    handlers (their order shows the compensation order)."""

    def body(t: Process) -> Process:
        return (
            t.start("ts")
            .parallel("fork")
            .user_task("hotel")
            .boundary_compensation("hotel_undo", "hotel", handler="unbook_hotel")
            .user_task("unbook_hotel", for_compensation=True)
            .user_task("flight")
            .boundary_compensation("flight_undo", "flight", handler="unbook_flight")
            .user_task("unbook_flight", for_compensation=True)
            .exclusive("confirmed", default="to_ok")
            .end("ok")
            .cancel_end("cancel")
            .service_task("audit", topic="audit")
            .end("audited")
            .sequence("ts", "fork", "hotel", "flight", "confirmed")
            .flow("confirmed", "cancel", condition="!confirmed", id="to_cancel")
            .flow("confirmed", "ok", id="to_ok")
            .sequence("fork", "audit", "audited")
        )

    return (
        Process(key)
        .start("s")
        .transaction("tx", body)
        .boundary_cancel("tx_cancelled", "tx")
        .user_task("after")
        .user_task("after_cancel")
        .end("e")
        .end("e_cancel")
        .sequence("s", "tx", "after", "e")
        .sequence("tx_cancelled", "after_cancel", "e_cancel")
    )


def complete(engine: Engine, instance_id: str, node_id: str, **variables: object) -> None:
    (task,) = engine.user_tasks(instance_id, node_id=node_id)
    engine.complete_user_task(task.id, dict(variables), now=T0)


def open_tasks(engine: Engine, instance_id: str) -> list[str]:
    return sorted(t.node_id for t in engine.user_tasks(instance_id))


def task_state(engine: Engine, task_id: str) -> str:
    ext = t.external_task
    with engine.db.connect() as conn:
        return str(conn.execute(select(ext.c.state).where(ext.c.id == task_id)).scalar_one())


def lock_audit(engine: Engine) -> str:
    (task,) = engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest("audit", 60_000),)), now=T0)
    return task.id


def test_a_transaction_that_completes_is_a_sub_process(engine: Engine) -> None:
    engine.deploy(booking().build())
    inst = engine.start("booking", now=T0)
    engine.complete_external_task(lock_audit(engine), "w", now=T0)
    complete(engine, inst.id, "hotel")
    complete(engine, inst.id, "flight", confirmed=True)
    assert open_tasks(engine, inst.id) == ["after"]  # the normal flow; no handler ran
    assert not [e for e in engine.history(inst.id) if e.type == "transaction_cancelled"]
    complete(engine, inst.id, "after")
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_cancel_compensates_newest_first_then_takes_the_boundary(engine: Engine) -> None:
    engine.deploy(booking().build())
    inst = engine.start("booking", now=T0)
    audit = lock_audit(engine)  # a worker holds the other branch's external task
    complete(engine, inst.id, "hotel")
    complete(engine, inst.id, "flight", confirmed=False)
    # the running branch was cancelled first: its task, and a worker's late complete
    assert task_state(engine, audit) == TaskState.CANCELLED.value
    assert engine.external_tasks(instance_id=inst.id) == []
    with pytest.raises(BpmError):
        engine.complete_external_task(audit, "w", now=T0)
    # then the handlers, newest first: flight completed last, so it is undone first
    assert open_tasks(engine, inst.id) == ["unbook_flight"]
    complete(engine, inst.id, "unbook_flight")
    assert open_tasks(engine, inst.id) == ["unbook_hotel"]
    complete(engine, inst.id, "unbook_hotel")
    # then the cancel boundary's flow, never the transaction's normal one
    assert open_tasks(engine, inst.id) == ["after_cancel"]
    types = [e.type for e in engine.history(inst.id)]
    assert types.count("transaction_cancelled") == 1
    complete(engine, inst.id, "after_cancel")
    got = engine.get_instance(inst.id)
    assert got.state is InstanceState.COMPLETED
    assert "after" not in {e.node_id for e in engine.history(inst.id)}


def test_cancel_with_nothing_completed_goes_straight_to_the_boundary(engine: Engine) -> None:
    def body(t: Process) -> Process:
        t = t.start("ts").parallel("fork").user_task("wait").cancel_end("cancel")
        return t.sequence("ts", "fork", "wait").sequence("fork", "cancel")

    model = (
        Process("quick")
        .start("s")
        .transaction("tx", body)
        .boundary_cancel("bc", "tx")
        .user_task("after_cancel")
        .end("e")
        .sequence("s", "tx", "e")
        .sequence("bc", "after_cancel")
        .build()
    )
    engine.deploy(model)
    inst = engine.start("quick", now=T0)
    # the user task of the other branch went with the transaction
    assert open_tasks(engine, inst.id) == ["after_cancel"]
    assert "wait" in {e.node_id for e in engine.history(inst.id)}


def _deploy_refused(engine: Engine, model: Process | str, element: str, words: str) -> None:
    before = len(engine.definitions())
    with pytest.raises(DeploymentError) as caught:
        engine.deploy(model if isinstance(model, str) else model.build())
    text = str(caught.value)
    assert f"'{element}'" in text and words in text, text
    assert len(engine.definitions()) == before  # nothing deployed


def test_a_cancel_end_event_outside_a_transaction_is_refused(engine: Engine) -> None:
    def body(t: Process) -> Process:
        return t.start("ss").cancel_end("failure").sequence("ss", "failure")

    bad = Process("bad").start("s").sub_process("sub", body).end("e").sequence("s", "sub", "e")
    with pytest.raises(DeploymentError):
        bad.build()  # the builder validates too
    xml = model_to_bpmn(_unchecked(bad))
    _deploy_refused(engine, xml, "failure", "is not inside a transaction")


def test_a_cancel_boundary_not_on_a_transaction_is_refused(engine: Engine) -> None:
    bad = (
        Process("bad")
        .start("s")
        .user_task("work")
        .boundary_cancel("catchCancelTx", "work")
        .end("e")
        .end("e2")
        .sequence("s", "work", "e")
        .sequence("catchCancelTx", "e2")
    )
    _deploy_refused(engine, model_to_bpmn(_unchecked(bad)), "catchCancelTx", "not a transaction")


def test_two_cancel_boundaries_and_a_missing_one_are_refused(engine: Engine) -> None:
    two = booking("two").boundary_cancel("tx_cancelled2", "tx").sequence("tx_cancelled2", "e")
    _deploy_refused(engine, model_to_bpmn(_unchecked(two)), "tx_cancelled2", "the second")

    def body(t: Process) -> Process:
        return t.start("ts").cancel_end("cancel").sequence("ts", "cancel")

    none = Process("none").start("s").transaction("tx", body).end("e").sequence("s", "tx", "e")
    _deploy_refused(engine, model_to_bpmn(_unchecked(none)), "cancel", "no cancel boundary")


def test_a_multi_instance_transaction_is_refused(engine: Engine) -> None:
    xml = model_to_bpmn(booking("mi").build()).replace(
        'id="tx">',
        'id="tx"><bpmn:multiInstanceLoopCharacteristics>'
        "<bpmn:loopCardinality>2</bpmn:loopCardinality>"
        "</bpmn:multiInstanceLoopCharacteristics>",
        1,
    )
    assert "multiInstanceLoopCharacteristics" in xml
    _deploy_refused(engine, xml, "tx", "multi-instance marker")


def _unchecked(builder: Process) -> ProcessModel:
    """The builder's model without its validation (to draw a bad model as XML)."""
    return ProcessModel(builder.key, dict(builder._nodes), tuple(builder._flows))


def test_round_trip_builder_json_drawing_parse() -> None:
    model = booking().build()
    again = parse_bpmn(model_to_bpmn(model))
    assert isinstance(again.nodes["tx"], n.Transaction)
    assert isinstance(again.nodes["cancel"], n.CancelEndEvent)
    assert isinstance(again.nodes["tx_cancelled"], n.CancelBoundaryEvent)
    assert again.nodes["hotel"].container == "tx"
    same_kinds(model)  # builder -> JSON -> model -> diagram XML -> parse: the same kinds
