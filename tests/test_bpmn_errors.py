"""BPMN errors from handlers and workers, across scopes (issue 11, item 4).

An inline handler raising :class:`bpm.BpmnError` and an external worker's ``bpmnError``
take the same path as an error end event: variables first, then the nearest catcher
(error boundary or error event sub-process, across sub-processes and call activities),
with ``errorCodeVariable`` / ``errorMessageVariable`` set; nothing catches it: the retry
policy's failure action (an incident by default). Both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bpm import BpmnError, Engine, InstanceState, RetryPolicy, TaskContext, TokenState
from bpm.builder import Process
from bpm.errors import InvalidOperation
from bpm.handlers import HandlerRegistry
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.worker import BpmnError as WorkerBpmnError
from tests.engine_helpers import QueueDispatcher, drain, table_dump
from tests.scopes_helpers import at, engine_on, open_tasks, types
from tests.test_escalation_model import _doc
from tests.test_scopes_model import chain


@pytest.fixture
def calls() -> list[str]:
    return []


@pytest.fixture
def registry(calls: list[str]) -> HandlerRegistry:
    reg = HandlerRegistry()

    def charge(ctx: TaskContext) -> dict[str, Any]:
        calls.append(ctx.node_id)
        if ctx.variables.get("amount", 0) > 100:
            raise BpmnError(
                "DECLINED", "card declined", {"declined_amount": ctx.variables["amount"]}
            )
        return {"charged": True}

    reg.register("charge", charge)

    def huge(ctx: TaskContext) -> None:
        raise BpmnError("X", None, {"big": "x" * 300})

    reg.register("huge", huge)
    return reg


@pytest.fixture
def both(database_url: str, registry: HandlerRegistry) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(database_url, registry, max_variable_bytes=200)
    yield eng, q
    eng.close()


def test_the_worker_sdk_raises_the_same_bpmn_error_class() -> None:
    assert WorkerBpmnError is BpmnError


def test_an_inline_bpmn_error_is_caught_by_its_boundary_with_variables_and_no_retry(
    both: tuple[Engine, QueueDispatcher], calls: list[str]
) -> None:
    engine, q = both
    engine.deploy(
        Process("inline")
        .start("s")
        .service_task("pay", handler="charge", retry=RetryPolicy.fixed(3, 0))
        .boundary_error(
            "declined", "pay", error_code="DECLINED", error_code_variable="why",
            error_message_variable="what",
        )
        .user_task("call_customer")
        .end("e2")
        .sequence("declined", "call_customer", "e2")
        .end("e")
        .sequence("s", "pay", "e")
    )  # fmt: skip
    inst = engine.start("inline", {"amount": 500})
    drain(engine, q)
    assert calls == ["pay"]  # a business error is not retried
    assert open_tasks(engine, inst.id) == ["call_customer"]
    assert engine.get_instance(inst.id).variables == {
        "amount": 500,
        "declined_amount": 500,
        "error_code": "DECLINED",
        "error_message": "card declined",
        "error_node": "pay",
        "why": "DECLINED",
        "what": "card declined",
    }
    bpmn_error = [e.payload for e in engine.history(inst.id) if e.type == "bpmn_error"]
    assert bpmn_error == [
        {"error_code": "DECLINED", "message": "card declined", "caught_by": "declined"}
    ]


def _in_sub_process(key: str) -> Process:
    """``pay`` inside a sub-process whose boundary catches every error, in ``outcome``."""
    return (
        Process(key)
        .start("s")
        .sub_process(
            "sp",
            lambda b: (
                b.start("ss")
                .parallel("fork")
                .user_task("side")
                .service_task("pay", handler="charge")
                .end("se")
                .sequence("ss", "fork", "pay", "se")
                .flow("fork", "side")
            ),
        )
        .boundary_error("failed", "sp", error_code_variable="outcome")
        .user_task("repair")
        .end("e2")
        .sequence("failed", "repair", "e2")
        .end("e")
        .sequence("s", "sp", "e")
    )


def test_an_inline_bpmn_error_reaches_the_catch_all_around_its_sub_process(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(_in_sub_process("nested"))
    inst = engine.start("nested", {"amount": 101})
    drain(engine, q)
    assert open_tasks(engine, inst.id) == ["repair"]
    assert [t.node_id for t in engine.user_tasks(inst.id, state="cancelled")] == ["side"]
    assert engine.get_instance(inst.id).variables["outcome"] == "DECLINED"


def test_an_inline_bpmn_error_in_a_called_child_is_caught_at_the_call_activity(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(
        Process("payer").start("cs").service_task("pay", handler="charge").end("ce")
        .sequence("cs", "pay", "ce")
    )  # fmt: skip
    engine.deploy(
        Process("caller")
        .start("s")
        .call_activity("call", "payer")
        .boundary_error("declined", "call", error_code="DECLINED", error_message_variable="m")
        .user_task("handle")
        .end("e2")
        .sequence("declined", "handle", "e2")
        .end("e")
        .sequence("s", "call", "e")
    )
    inst = engine.start("caller", {"amount": 700})
    drain(engine, q)
    (kid,) = engine.get_instance(inst.id).children
    assert engine.get_instance(kid).state is InstanceState.TERMINATED
    assert open_tasks(engine, inst.id) == ["handle"]
    assert engine.get_instance(inst.id).variables["m"] == "card declined"


def test_an_uncaught_inline_bpmn_error_opens_an_incident_that_a_retry_resolves(
    both: tuple[Engine, QueueDispatcher], calls: list[str]
) -> None:
    engine, q = both
    engine.deploy(
        Process("uncaught").start("s").service_task("pay", handler="charge").end("e")
        .sequence("s", "pay", "e")
    )  # fmt: skip
    inst = engine.start("uncaught", {"amount": 999})
    drain(engine, q)
    assert calls == ["pay"]  # not retried: the default policy's three attempts are not used
    (incident,) = engine.incidents(inst.id)
    assert (incident.type, incident.node_id, incident.message) == (
        "failedJob",
        "pay",
        "card declined",
    )
    (pay,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "pay"]
    assert pay.state is TokenState.FAILED
    assert ("step_failed", "pay") in types(engine, inst.id)
    # the operator fixes the data and retries: the step runs again and completes
    engine.set_variables(inst.id, {"amount": 5})
    engine.retry_incident(incident.id)
    drain(engine, q)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert calls == ["pay", "pay"]


def test_an_uncaught_inline_bpmn_error_takes_the_policys_failure_action(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(
        Process("fails")
        .start("s")
        .service_task("pay", handler="charge", retry=RetryPolicy.none().fail_instance())
        .end("e")
        .sequence("s", "pay", "e")
    )
    inst = engine.start("fails", {"amount": 999})
    drain(engine, q)
    assert engine.get_instance(inst.id).state is InstanceState.FAILED


def test_bpmn_error_variables_too_large_are_a_failed_attempt_and_are_not_written(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = both
    engine.deploy(
        Process("huge")
        .start("s")
        .service_task("h", handler="huge", retry=RetryPolicy.none())
        .boundary_error("caught", "h", error_code="X")
        .end("e2")
        .flow("caught", "e2")
        .end("e")
        .sequence("s", "h", "e")
    )
    inst = engine.start("huge")
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    assert "BpmnError X: variable 'big' is 302 bytes" in (incident.message or "")
    assert "big" not in engine.get_instance(inst.id).variables
    assert "bpmn_error" not in {kind for kind, _ in types(engine, inst.id)}


# -- external workers -------------------------------------------------------------------------


def _external(key: str, *, extra: str = "") -> str:
    return _doc(
        '<bpmn:startEvent id="s" />\n'
        '<bpmn:subProcess id="sp">\n'
        '  <bpmn:startEvent id="ss" />\n'
        '  <bpmn:serviceTask id="remote" camunda:type="external" camunda:topic="remote" />\n'
        '  <bpmn:endEvent id="se" />\n'
        f"  {chain('ss', 'remote', 'se')}\n"
        "</bpmn:subProcess>\n"
        f"{extra}"
        '<bpmn:endEvent id="e" />\n' + chain("s", "sp", "e"),
        key,
    )


ESP = (
    '<bpmn:subProcess id="on_boom" triggeredByEvent="true">\n'
    '  <bpmn:startEvent id="catch"><bpmn:errorEventDefinition errorRef="Boom" '
    'camunda:errorCodeVariable="code" camunda:errorMessageVariable="msg" /></bpmn:startEvent>\n'
    '  <bpmn:userTask id="apologise" /><bpmn:endEvent id="sorry" />\n'
    f"  {chain('catch', 'apologise', 'sorry')}\n"
    "</bpmn:subProcess>\n"
)


def _lock(engine: Engine) -> str:
    (task,) = engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest("remote", 10_000),)))
    return task.id


def test_an_external_bpmn_error_reaches_a_process_event_sub_process_with_its_variables(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_external("ext_esp", extra=ESP))
    inst = engine.start("ext_esp")
    engine.external_task_bpmn_error(_lock(engine), "w", "BOOM", "it broke", {"part": "p1"})
    assert open_tasks(engine, inst.id) == ["apologise"]
    values = engine.get_instance(inst.id).variables
    assert (values["code"], values["msg"], values["part"]) == ("BOOM", "it broke", "p1")


def test_an_uncaught_external_bpmn_error_opens_an_incident_and_a_retry_refetches(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_external("ext_none"))
    inst = engine.start("ext_none")
    task_id = _lock(engine)
    engine.external_task_bpmn_error(task_id, "w", "BOOM", "it broke", now=at(1))
    (incident,) = engine.incidents(inst.id)
    assert (incident.type, incident.message) == ("failedExternalTask", "it broke")
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
    assert engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest("remote", 10_000),))) == []
    engine.retry_incident(incident.id)
    assert _lock(engine) == task_id  # the same task, given to a worker again
    engine.complete_external_task(task_id, "w")
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_bpmn_error_without_a_code_changes_nothing(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_external("ext_bad", extra=ESP))
    engine.start("ext_bad")
    task_id = _lock(engine)
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="errorCode is required"):
        engine.external_task_bpmn_error(task_id, "w", "", "no code")
    assert table_dump(engine) == before
