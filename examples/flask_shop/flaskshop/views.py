"""The checkout API of the Flask shop: the same views as the Django shop's.

The order rows and the engine's rows share ``db.session``'s transaction: the instance
exists once ``db.session.commit()`` succeeds, and its first steps are published then.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from flask import Blueprint, request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from bpm.contrib.flask import complete_user_task, current_engine, start_process
from flaskshop.models import Order, Product, db

shop = Blueprint("shop", __name__)
Response = tuple[dict[str, Any], int]


def _order_json(order: Order) -> dict[str, Any]:
    return {
        "id": order.id,
        "status": order.status,
        "amount": str(order.amount),
        "instance_id": order.instance_id,
    }


def _by_request_id(request_id: str) -> Order | None:
    return db.session.scalars(select(Order).where(Order.request_id == request_id)).first()


@shop.post("/checkout")
def checkout() -> Response:
    """``{"sku", "quantity", "amount", "card"}``; header ``Idempotency-Key`` for retries."""
    data = request.get_json(silent=True) or {}
    request_id = request.headers.get("Idempotency-Key") or None
    try:
        quantity = int(data.get("quantity", 1))
        amount = Decimal(str(data["amount"]))
        sku = str(data["sku"])
    except (KeyError, ValueError, InvalidOperation):
        return {"error": "give sku, quantity and amount"}, 400
    if quantity <= 0 or amount <= 0:
        return {"error": "quantity and amount must be positive"}, 400
    if request_id and (done := _by_request_id(request_id)):
        return _order_json(done), 200  # a retried request
    product = db.session.scalars(
        select(Product).where(Product.sku == sku).with_for_update()
    ).first()
    if product is None:
        return {"error": f"no product {sku!r}"}, 404
    order = Order(product_id=product.id, quantity=quantity, amount=amount, request_id=request_id)
    db.session.add(order)
    try:
        db.session.flush()
    except IntegrityError:  # the same request, concurrently: it created the order
        db.session.rollback()
        found = _by_request_id(request_id or "")
        return (_order_json(found), 200) if found else ({"error": "try again"}, 409)
    inst = start_process(
        "checkout",
        {"order_id": order.id, "amount": float(amount), "card": data.get("card", "")},
        business_key=f"order-{order.id}",
        idempotency_key=f"checkout-{request_id}" if request_id else None,
    )
    order.instance_id = inst.id
    if product.stock < quantity:  # found out late: the order and the instance go
        db.session.rollback()
        return {"error": f"{sku} is out of stock"}, 409
    product.stock -= quantity
    db.session.commit()
    return _order_json(order), 201


@shop.get("/orders/<int:order_id>")
def order_detail(order_id: int) -> Response:
    order = db.session.get(Order, order_id)
    if order is None:
        return {"error": f"no order {order_id}"}, 404
    engine = current_engine()
    tasks = [t.node_id for t in engine.user_tasks(order.instance_id)]
    state = engine.get_instance(order.instance_id).state.value
    return {**_order_json(order), "instance_state": state, "open_tasks": tasks}, 200


@shop.post("/orders/<int:order_id>/approve")
def approve(order_id: int) -> Response:
    """``{"approved": true|false}``: a manager decides on a big order."""
    approved = (request.get_json(silent=True) or {}).get("approved")
    if not isinstance(approved, bool):
        return {"error": 'give {"approved": true} or false'}, 400
    order = db.session.get(Order, order_id, with_for_update=True)
    if order is None:
        return {"error": f"no order {order_id}"}, 404
    tasks = current_engine().user_tasks(order.instance_id, node_id="approve")
    if not tasks:
        db.session.rollback()
        return {"error": "this order waits for no approval"}, 409
    complete_user_task(tasks[0].id, {"approved": approved})
    order.status = "approved" if approved else "rejected"
    db.session.commit()
    return _order_json(order), 200
