"""Handlers of the sample order process (examples/order.bpmn)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm import TaskContext, service_task


@service_task("validate-order")
def validate_order(ctx: TaskContext) -> Mapping[str, Any]:
    amount = ctx.variables.get("amount")
    if not isinstance(amount, int | float) or amount <= 0:
        raise ValueError(f"amount must be a positive number, got {amount!r}")
    return {"valid": True}


@service_task("reserve-stock")
def reserve_stock(ctx: TaskContext) -> Mapping[str, Any]:
    return {"reservation": f"R-{ctx.instance_id[:8]}"}


@service_task("charge-payment")
def charge_payment(ctx: TaskContext) -> Mapping[str, Any]:
    # The idempotency key is the same for every attempt: a payment API dedupes on it.
    return {"payment": f"P-{ctx.idempotency_key[-8:]}", "charged": ctx.variables["amount"]}


@service_task("ship-order")
def ship_order(ctx: TaskContext) -> Mapping[str, Any]:
    return {"shipped": True}
