"""Camunda 7's TransactionSubProcessTest, ported (issue 20, item 3): each test deploys the
original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and asserts
what the original asserts of the instance, on SQLite and PostgreSQL.

Original: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/subprocess/transaction/TransactionSubProcessTest.java

The originals' handlers are Java: ``camunda:expression="${true}"`` runs here as the inline
handler ``true``; ``WaitStateUndoService`` (counts its calls in the variable its
``counterName`` field names, then waits to be signalled) and ``UndoService`` (counts, does
not wait) run as a handler that counts in the variable named by its task id (each model's
counterName is its task id; ``camunda:field`` is not read) and does not wait: the
originals' "signal the compensation handlers" steps have nothing to do here. Event
subscription counts and activity instance trees are Camunda internals, not ported
(LEFT_OUT.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from bpm.errors import DeploymentError
from bpm.handlers import TaskContext
from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS

HELPERS = "org.camunda.bpm.engine.test.bpmn.event.compensate.helper."
UNDO = HELPERS + "WaitStateUndoService"


def model(method: str) -> str:
    return str(MODELS / f"TransactionSubProcessTest.{method}.bpmn20.xml")


def count_calls(ctx: TaskContext) -> dict[str, Any]:
    """WaitStateUndoService: one more call in the variable named after the task."""
    return {ctx.node_id: int(ctx.variables.get(ctx.node_id) or 0) + 1}


@pytest.fixture
def tx(kit: BpmTest) -> BpmTest:
    kit.handler("true", lambda ctx: None)
    kit.handler(UNDO, count_calls)
    kit.handler(HELPERS + "UndoService", count_calls)  # counts, never waits
    return kit


def test_simple_case_tx_successful(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testSimpleCaseTxSuccessful
    tx.deploy(model("testSimpleCase"))
    inst = tx.start("transactionProcess")
    assert_that(inst).is_waiting_only_at("askCustomer", "tx")
    tx.complete(inst, "askCustomer", {"confirmed": True})
    # left the transaction by its normal flow; no compensation handler was invoked
    assert_that(inst).is_waiting_only_at("afterSuccess")
    assert_that(inst).has_no_variables("undoBookHotel", "undoBookFlight", "undoChargeCard")
    tx.correlate("afterSuccess", instance=inst)  # runtimeService.signal
    assert_that(inst).is_completed()


def test_simple_case_tx_cancelled(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testSimpleCaseTxCancelled
    tx.deploy(model("testSimpleCase"))
    inst = tx.start("transactionProcess")
    tx.complete(inst, "askCustomer", {"confirmed": False})
    # the handlers were invoked: each of the 5 hotel bookings, the flight, the card
    assert_that(inst).has_variables(undoBookHotel=5, undoBookFlight=1, undoChargeCard=1)
    # and the instance left the transaction by the cancel boundary event
    assert_that(inst).is_waiting_only_at("afterCancellation").has_passed("catchCancelTx")
    assert_that(inst).has_not_passed("afterSuccess")
    tx.correlate("afterCancellation", instance=inst)
    assert_that(inst).is_completed()


def test_cancel_end_concurrent(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testCancelEndConcurrent: the other branch ('receive')
    # still waits when the cancel end event is reached
    tx.deploy(model("testCancelEndConcurrent"))
    inst = tx.start("transactionProcess")
    assert_that(inst).is_waiting_only_at("receive", "askCustomer", "tx")
    tx.complete(inst, "askCustomer", {"confirmed": False})
    assert_that(inst).has_variables(undoBookHotel=5, undoBookFlight=1)
    assert_that(inst).is_waiting_only_at("afterCancellation")
    tx.correlate("afterCancellation", instance=inst)
    assert_that(inst).is_completed()


def test_nested_cancel_inner(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testNestedCancelInner
    tx.deploy(model("testNestedCancelInner"))
    inst = tx.start("transactionProcess")
    assert_that(inst).has_user_task("innerTxaskCustomer").has_user_task("bookFlight")
    tx.complete(inst, "innerTxaskCustomer", {"confirmed": False})
    # the inner transaction was compensated; the outer one's handler was not invoked
    assert_that(inst).has_variables(innerTxundoBookHotel=5, innerTxundoBookFlight=1)
    assert_that(inst).has_no_variables("undoBookFlight")
    assert_that(inst).is_waiting_only_at("afterInnerCancellation", "bookFlight", "tx")
    tx.complete(inst, "bookFlight")
    tx.correlate("afterInnerCancellation", instance=inst)
    assert_that(inst).is_completed()


def test_nested_cancel_outer(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testNestedCancelOuter
    tx.deploy(model("testNestedCancelOuter"))
    inst = tx.start("transactionProcess")
    assert_that(inst).has_user_task("innerTxaskCustomer").has_user_task("bookFlight")
    tx.complete(inst, "bookFlight")  # leads to the outer transaction's cancel end event
    assert_that(inst).is_waiting_only_at("afterOuterCancellation")
    # the inner transaction was cancelled, not compensated (it never completed)
    assert_that(inst).has_no_variables("innerTxundoBookHotel", "innerTxundoBookFlight")
    assert_that(inst).has_variables(undoBookFlight=1)
    tx.correlate("afterOuterCancellation", instance=inst)
    assert_that(inst).is_completed()


def test_compensate_subprocess(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testCompensateSubprocess: a completed sub-process inside
    # the transaction is compensated through its own handlers
    tx.deploy(model("testCompensateSubprocess"))
    inst = tx.start("txProcess")
    tx.complete(inst, "innerTask")
    tx.complete(inst, "beforeCancel", {"cancelTx": True, "compensate": False})
    # the cancel boundary's token waits for the handler (Camunda: the cancel end event's)
    assert_that(inst).is_waiting_only_at("undoInnerTask", "catchCancelTx")
    tx.complete(inst, "undoInnerTask")
    assert_that(inst).is_waiting_only_at("afterCancel")
    tx.complete(inst, "afterCancel")
    assert_that(inst).is_completed()


def test_compensate_subprocess_not_triggered(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testCompensateSubprocessNotTriggered
    tx.deploy(model("testCompensateSubprocess"))
    inst = tx.start("txProcess")
    tx.complete(inst, "innerTask")
    tx.complete(inst, "beforeCancel", {"cancelTx": False, "compensate": False})
    assert_that(inst).is_waiting_only_at("afterTx")
    tx.complete(inst, "afterTx")
    assert_that(inst).is_completed().has_not_passed("undoInnerTask")


def test_compensate_subprocess_after_tx_completion(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testCompensateSubprocessAfterTxCompletion: a transaction
    # that completed is compensated as a sub-process is, by a later throw
    tx.deploy(model("testCompensateSubprocess"))
    inst = tx.start("txProcess")
    tx.complete(inst, "innerTask")
    tx.complete(inst, "beforeCancel", {"cancelTx": False, "compensate": True})
    tx.complete(inst, "afterTx")
    assert_that(inst).is_waiting_only_at("undoInnerTask", "throwCompensate")
    tx.complete(inst, "undoInnerTask")
    assert_that(inst).is_completed()


def test_parse_with_di(tx: BpmTest) -> None:
    # TransactionSubProcessTest.testParseWithDI: the failing case, then the success case
    tx.deploy(model("testParseWithDI"))
    for confirmed in (False, True):
        inst = tx.start("TransactionSubProcessTest")
        tx.complete(inst, "UserTask_1", {"confirmed": confirmed})
        assert_that(inst).is_completed()


@pytest.mark.parametrize(
    ("method", "element", "words"),
    [
        # Camunda: "multiple boundary events with cancelEventDefinition not supported on
        # same transaction", main element catchCancelTx2
        ("testMultipleCancelBoundaryFails", "catchCancelTx2", "at most one"),
        # "boundary event with cancelEventDefinition only supported on transaction
        # subprocesses", catchCancelTx
        ("testCancelBoundaryNoTransactionFails", "catchCancelTx", "not a transaction"),
        # "end event with cancelEventDefinition only supported inside transaction
        # subprocess", failure
        ("testCancelEndNoTransactionFails", "failure", "not inside a transaction"),
    ],
)
def test_refused_at_deploy(kit: BpmTest, method: str, element: str, words: str) -> None:
    # TransactionSubProcessTest.{method}
    before = len(kit.engine.definitions())
    with pytest.raises(DeploymentError) as caught:
        kit.deploy(model(method))
    (problem,) = [p for p in caught.value.problems if words in p.message]
    assert problem.element_id == element
    assert len(kit.engine.definitions()) == before
