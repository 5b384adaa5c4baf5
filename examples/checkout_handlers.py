"""Handlers of the shop examples' checkout process (examples/checkout.bpmn).

They stand in for calls to a warehouse and a payment provider. ``charge`` declines a card
whose number ends in 0000; its retry policy (one attempt, then fail the instance) ends the
whole instance as failed, so the shops' ``process_failed`` receivers run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm import RetryPolicy, TaskContext, service_task


class CardDeclined(Exception):
    """The payment provider refused the card."""


@service_task("shop.reserve")
def reserve(ctx: TaskContext) -> Mapping[str, Any]:
    return {"reservation": f"R-{ctx.instance_id[:8]}"}


@service_task("shop.charge", retry=RetryPolicy.none().fail_instance())
def charge(ctx: TaskContext) -> Mapping[str, Any]:
    if str(ctx.variables.get("card", "")).endswith("0000"):
        raise CardDeclined("the card was declined")
    # The same key on every attempt: a payment provider deduplicates on it.
    return {"payment": f"P-{ctx.idempotency_key[-12:]}"}


@service_task("shop.ship")
def ship(ctx: TaskContext) -> Mapping[str, Any]:
    return {"tracking": f"T-{ctx.instance_id[:8]}"}
