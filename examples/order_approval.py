"""The order process of docs/testing.md, built in Python: orders over 100 wait for a
manager's approval, which is escalated when nobody decided within 3 days; a declined card
releases the stock the order had reserved (compensation), and the order ends compensated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm import BpmnError, TaskContext, service_task
from bpm.builder import Process

order_approval = (
    Process("order_approval", name="Order with approval")
    .start("received", name="Order received")
    .exclusive("big_order", name="Over 100?")
    .user_task("approve", name="Approve order", candidate_groups=["managers"])
    .boundary_timer("approval_late", "approve", duration="P3D", interrupting=False)
    .service_task("escalate", name="Escalate approval", handler="escalate-approval")
    .end("escalated", name="Escalated")
    .exclusive("approved_check", name="Approved?")
    .end("rejected", name="Order rejected")
    .service_task(
        "reserve", name="Reserve stock", handler="reserve-stock", compensate_with="release-stock"
    )
    .service_task("charge", name="Charge card", handler="charge-card")
    .boundary_error("declined", "charge", error_code="card-declined", name="Card declined")
    .compensate_end("cancelled", name="Order cancelled")
    .service_task("ship", name="Ship order", handler="ship-order")
    .end("shipped", name="Order shipped")
    .sequence("received", "big_order")
    .flow("big_order", "approve", condition="amount > 100", id="big")
    .flow("big_order", "reserve", id="small", default=True)
    .sequence("approve", "approved_check")
    .flow("approved_check", "reserve", condition="approved", id="yes")
    .flow("approved_check", "rejected", id="no", default=True)
    .sequence("approval_late", "escalate", "escalated")
    .sequence("reserve", "charge", "ship", "shipped")
    .sequence("declined", "cancelled")
)


@service_task("escalate-approval")
def escalate_approval(ctx: TaskContext) -> Mapping[str, Any]:
    # A real one would page the manager's manager.
    return {"escalated": True}


@service_task("reserve-stock")
def reserve_stock(ctx: TaskContext) -> Mapping[str, Any]:
    # Named by the order (the business key): the same order reserves under the same name.
    return {"reservation": f"R-{ctx.business_key or ctx.instance_id[:8]}"}


@service_task("release-stock")
def release_stock(ctx: TaskContext) -> Mapping[str, Any]:
    return {"released": ctx.variables["reservation"]}


@service_task("charge-card")
def charge_card(ctx: TaskContext) -> Mapping[str, Any]:
    if str(ctx.variables.get("card", "")).endswith("0000"):
        raise BpmnError("card-declined", "the card was declined")
    # The same key on every attempt: the payment provider deduplicates on it.
    return {"charge_id": f"C-{ctx.idempotency_key[-8:]}"}


@service_task("ship-order")
def ship_order(ctx: TaskContext) -> Mapping[str, Any]:
    return {"tracking": f"T-{ctx.instance_id[:8]}"}
