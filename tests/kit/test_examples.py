"""The examples' processes tested with the kit, on their own handlers (no PostgreSQL,
broker or web framework: the shops' adapter tests in tests/with_django and
tests/with_flask cover those)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpm.testing import BpmTest, assert_that

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def handlers(bpm: BpmTest) -> None:
    import examples.checkout_handlers  # noqa: F401  (registers its handlers)
    from examples import order_handlers as order

    # The order handlers' names are common ones that other modules of this suite register
    # in the default registry too (the last import wins): this test's own come first.
    for name, fn in {
        "validate-order": order.validate_order,
        "reserve-stock": order.reserve_stock,
        "charge-payment": order.charge_payment,
        "ship-order": order.ship_order,
    }.items():
        bpm.handler(name, fn)


def test_a_big_order_reserves_and_charges_in_parallel_then_ships(bpm: BpmTest) -> None:
    bpm.deploy(EXAMPLES / "order.bpmn")
    order = bpm.start("order", {"amount": 250})
    assert_that(order).is_completed().has_passed(
        "validate", "fork", "reserve", "charge", "join", "ship"
    ).has_variables("reservation", "payment", valid=True, charged=250, shipped=True)


def test_a_small_order_ships_straight_away(bpm: BpmTest) -> None:
    bpm.deploy(EXAMPLES / "order.bpmn")
    order = bpm.start("order", {"amount": 20})
    assert_that(order).is_completed().has_passed("ship").has_not_passed("reserve", "charge")


def test_an_order_without_an_amount_ends_in_an_incident_at_validate(bpm: BpmTest) -> None:
    bpm.deploy(EXAMPLES / "order.bpmn")
    order = bpm.start("order", {})
    assert_that(order).is_waiting_at("validate").has_incident_at(
        "validate", "amount must be a positive number"
    )


def test_a_big_checkout_waits_for_a_manager(bpm: BpmTest) -> None:
    bpm.deploy(EXAMPLES / "checkout.bpmn")
    order = bpm.start("checkout", {"amount": 500, "card": "4242"})
    assert_that(order).is_waiting_at("approve").has_passed("reserve")
    assert bpm.user_task(order, "approve").candidate_groups == ("managers",)
    bpm.complete(order, "approve", {"approved": True})
    assert_that(order).is_completed().has_passed("charge", "ship").has_variables("tracking")


def test_a_rejected_checkout_is_not_charged(bpm: BpmTest) -> None:
    bpm.deploy(EXAMPLES / "checkout.bpmn")
    charge = bpm.mock("shop.charge")
    order = bpm.start("checkout", {"amount": 500, "card": "4242"})
    bpm.complete(order, "approve", {"approved": False})
    assert_that(order).is_completed().has_passed("rejected").has_not_passed("charge")
    assert not charge.called


def test_a_declined_card_fails_the_checkout_at_once(bpm: BpmTest) -> None:
    bpm.deploy(EXAMPLES / "checkout.bpmn")
    order = bpm.start("checkout", {"amount": 50, "card": "4000000000000000"})
    assert_that(order).has_state("failed").has_not_passed("ship")
