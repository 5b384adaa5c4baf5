"""The test kit (bpm.testing) used as a process author would: no PostgreSQL, no broker."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bpm import BpmnError
from bpm.builder import Process
from bpm.testing import BpmTest, assert_that


def approval() -> Process:
    return (
        Process("approval")
        .start("start")
        .service_task("validate", handler="kit.validate")
        .user_task("approve")
        .boundary_timer("late", attached_to="approve", duration="P3D", interrupting=False)
        .service_task("remind", handler="kit.remind")
        .end("reminded")
        .exclusive("decision")
        .service_task("charge", handler="kit.charge")
        .boundary_error("declined", attached_to="charge", error_code="card-declined")
        .end("done")
        .end("rejected")
        .end("declined_end")
        .sequence("start", "validate", "approve", "decision")
        .flow("decision", "charge", condition="approved", id="yes")
        .flow("decision", "rejected", id="no", default=True)
        .sequence("charge", "done")
        .sequence("late", "remind", "reminded")
        .sequence("declined", "declined_end")
    )


def test_a_user_task_waits_and_completing_it_moves_on(bpm: BpmTest) -> None:
    bpm.deploy(approval())
    validate = bpm.mock("kit.validate", returns={"valid": True})
    charge = bpm.mock("kit.charge", returns={"charged": True})
    order = bpm.start("approval", {"amount": 120})
    assert_that(order).is_waiting_at("approve").has_passed("validate").has_not_passed("charge")
    assert validate.call_count == 1 and validate.last.variables["amount"] == 120
    bpm.complete(order, "approve", {"approved": True})
    assert_that(order).is_completed().has_passed("charge", "done").has_variables(charged=True)
    assert charge.last.variables["approved"] is True


def test_advance_fires_the_timer_at_its_due_time_and_no_sooner(bpm: BpmTest) -> None:
    bpm.deploy(approval())
    bpm.mock("kit.validate")
    remind = bpm.mock("kit.remind", returns={"reminded_at": "x"})
    order = bpm.start("approval")
    start = bpm.clock.now
    bpm.advance("P2DT23H59M")
    assert not remind.called
    bpm.advance("PT1M")
    assert remind.call_count == 1
    fired = [e.at - start for e in bpm.engine.history(order.id) if e.type == "timer_fired"]
    assert fired == [timedelta(days=3)] and bpm.clock.now - start == timedelta(days=3)
    assert_that(order).is_waiting_at("approve").has_passed("remind", "reminded")


def test_a_bpmn_error_double_takes_the_error_path(bpm: BpmTest) -> None:
    bpm.deploy(approval())
    bpm.mock("kit.validate")
    bpm.mock("kit.charge", raises=BpmnError("card-declined"))
    order = bpm.start("approval")
    bpm.complete(order, "approve", {"approved": True})
    assert_that(order).is_completed().has_passed("declined", "declined_end").has_not_passed("done")


def test_a_failing_double_ends_in_an_incident_after_its_attempts(bpm: BpmTest) -> None:
    bpm.deploy(approval())
    bpm.mock("kit.validate", raises=RuntimeError("service down"))
    order = bpm.start("approval")
    assert_that(order).is_waiting_at("validate").has_incident_at("validate", "service down")
    assert bpm.doubles["kit.validate"].call_count == 3  # the default policy: 3 attempts


def test_answers_are_given_in_order(bpm: BpmTest) -> None:
    bpm.deploy(approval())
    double = bpm.mock("kit.validate", answers=[RuntimeError("flaky"), {"valid": True}])
    order = bpm.start("approval")
    assert [c.attempt for c in double.calls] == [1, 2]
    assert_that(order).is_waiting_at("approve").has_variables(valid=True).has_no_incidents()


def test_a_failed_assertion_prints_where_the_instance_is_and_its_trail(bpm: BpmTest) -> None:
    bpm.deploy(approval())
    bpm.mock("kit.validate")
    order = bpm.start("approval")
    with pytest.raises(AssertionError) as caught:
        assert_that(order).is_waiting_at("charge")
    text = str(caught.value)
    assert "expected the instance to wait at charge; it is at approve" in text
    assert "at approve: waiting user_task" in text
    assert "token_executing" in text or "ready -> executing" in text  # the trail
    with pytest.raises(AssertionError, match="has no node 'aprove'"):
        assert_that(order).is_waiting_at("aprove")
    with pytest.raises(AssertionError, match=r"amount='<not set>' \(expected 5\)"):
        assert_that(order).has_variables(amount=5)


def test_an_external_task_is_completed_in_process(bpm: BpmTest) -> None:
    bpm.deploy(
        Process("ext")
        .start("s")
        .service_task("pick", topic="picking")
        .end("e")
        .sequence("s", "pick", "e")
    )
    inst = bpm.start("ext")
    assert_that(inst).is_waiting_at("pick")
    bpm.complete(inst, "pick", {"picked": 3})
    assert_that(inst).is_completed().has_variables(picked=3)


def test_a_message_is_correlated_in_process(bpm: BpmTest) -> None:
    bpm.deploy(
        Process("msg")
        .start("s")
        .receive_message("paid", "payment-received", correlation_key="order_id")
        .end("e")
        .sequence("s", "paid", "e")
    )
    inst = bpm.start("msg", {"order_id": "o-1"})
    assert_that(inst).is_waiting_at("paid")
    bpm.correlate("payment-received", {"amount": 5}, correlation_key="o-1")
    assert_that(inst).is_completed().has_variables(amount=5)


def test_a_loop_that_never_waits_stops_the_test(bpm: BpmTest) -> None:
    bpm.deploy(
        Process("spin")
        .start("s")
        .service_task("again", handler="kit.again")
        .exclusive("more")
        .end("e")
        .sequence("s", "again", "more")
        .flow("more", "again", condition="true")
        .flow("more", "e", default=True)
    )
    bpm.mock("kit.again")
    bpm.max_steps = 50
    with pytest.raises(AssertionError, match="more than 50 steps"):
        bpm.start("spin")


def test_time_never_moves_back(bpm: BpmTest) -> None:
    with pytest.raises(ValueError, match="negative"):
        bpm.advance("-P1D")
    with pytest.raises(ValueError, match="ISO 8601"):
        bpm.advance("three days")
    with pytest.raises(ValueError, match="in the past"):
        bpm.advance_to(bpm.clock.now.replace(year=2000))


def test_no_lease_keeper_thread_shares_the_in_memory_connection(bpm: BpmTest) -> None:
    bpm.deploy(approval())
    bpm.mock("kit.validate")
    bpm.start("approval")
    assert bpm.engine.core.leases._thread is None


def test_a_compensation_boundary_counts_as_taken_when_its_handler_ran(bpm: BpmTest) -> None:
    from bpm.testing.coverage import taken

    model = (
        Process("saga")
        .start("s")
        .service_task("reserve", handler="kit.reserve", compensate_with="kit.release")
        .compensate_end("undo")
        .sequence("s", "reserve", "undo")
        .build()
    )
    bpm.deploy(model)
    bpm.mock("kit.reserve")
    release = bpm.mock("kit.release")
    inst = bpm.start("saga")
    assert_that(inst).is_compensated()
    assert release.called
    nodes, flows = taken(model, bpm.engine.history(inst.id), bpm.instance(inst).tokens)
    assert nodes == set(model.nodes) and flows == {f.id for f in model.flows}


def test_advance_fires_a_cycle_and_a_timer_start_in_order(bpm: BpmTest) -> None:
    bpm.deploy(
        Process("nightly").start("tick", cycle="R2/PT12H").end("done").sequence("tick", "done")
    )
    bpm.deploy(
        Process("nag")
        .start("s")
        .user_task("sign")
        .boundary_timer("remind", "sign", cycle="R3/PT1H", interrupting=False)
        .service_task("mail", handler="kit.mail")
        .end("mailed")
        .end("e")
        .sequence("s", "sign", "e")
        .sequence("remind", "mail", "mailed")
    )
    mail = bpm.mock("kit.mail")
    inst = bpm.start("nag")
    start = bpm.clock.now
    bpm.advance("P1D")
    fired = [e.at - start for e in bpm.engine.history(inst.id) if e.type == "timer_fired"]
    hour = timedelta(hours=1)
    assert fired == [hour, 2 * hour, 3 * hour] and mail.call_count == 3
    nightly = bpm.engine.instances(definition_key="nightly")
    assert sorted(i.created_at - start for i in nightly) == [12 * hour, 24 * hour]
    assert all(i.state.value == "completed" for i in nightly)


def test_bad_requests_say_what_is_wrong_and_change_nothing(bpm: BpmTest, tmp_path: Path) -> None:
    bpm.deploy(approval())
    bpm.mock("kit.validate")
    order = bpm.start("approval")
    before = bpm.engine.history(order.id)
    with pytest.raises(AssertionError, match="no open external task at 'charge'"):
        bpm.complete(order, "charge", {"x": 1})
    with pytest.raises(AssertionError, match="no open user task at 'charge'"):
        bpm.user_task(order, "charge")
    with pytest.raises(FileNotFoundError, match="no such file to deploy"):
        bpm.deploy(tmp_path / "missing.bpmn")
    with pytest.raises(ValueError, match="non-empty name"):
        bpm.mock("")
    assert bpm.engine.history(order.id) == before
    assert len(bpm.engine.definitions()) == 1


def test_task_assertions_check_the_open_tasks(bpm: BpmTest) -> None:
    bpm.deploy(
        Process("tasks")
        .start("s")
        .user_task("approve", candidate_groups=["managers"])
        .service_task("pick", topic="picking")
        .end("e")
        .sequence("s", "approve", "pick", "e")
    )
    inst = bpm.start("tasks")
    assert_that(inst).has_user_task("approve", candidate_group="managers")
    with pytest.raises(AssertionError, match="offered to 'clerks'"):
        assert_that(inst).has_user_task("approve", candidate_group="clerks")
    with pytest.raises(AssertionError, match="assigned to 'ann'; it is None"):
        assert_that(inst).has_user_task("approve", assignee="ann")
    with pytest.raises(AssertionError, match="expected an open external task at pick"):
        assert_that(inst).has_external_task("pick")
    bpm.complete(inst, "approve")
    assert_that(inst).has_external_task("pick", topic="picking")
    with pytest.raises(AssertionError, match="on topic 'packing'; it is picking"):
        assert_that(inst).has_external_task("pick", topic="packing")


def test_a_bpmn_and_its_decisions_deploy_from_files(bpm: BpmTest) -> None:
    data = Path(__file__).resolve().parents[1] / "data" / "camunda_invoice"
    bpm.deploy(data / "invoice_rules.bpmn", data / "invoiceBusinessDecisions.dmn")
    invoice = bpm.start("invoice_rules", {"amount": 900, "invoiceCategory": "Misc"})
    assert_that(invoice).has_user_task("approveInvoice", candidate_group="management")
    assert_that(invoice).has_passed("classifyInvoice", "assignApprover").has_variables(
        classification="budget"
    )
    bpm.complete(invoice, "approveInvoice", {"approved": True})
    assert_that(invoice).is_completed()
