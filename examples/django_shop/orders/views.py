"""The checkout API: place an order (which starts its process) and approve big orders.

Both views change the shop's rows and the engine's in ONE transaction: if the view fails,
neither the order nor the instance exists, and no step was published.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import IntegrityError, transaction
from django.http import HttpRequest, JsonResponse

from bpm.contrib.django import complete_user_task, get_engine, start_process
from orders.models import Order, Product


class OutOfStock(Exception):
    pass


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _order_json(order: Order) -> dict[str, Any]:
    return {
        "id": order.id,
        "status": order.status,
        "amount": str(order.amount),
        "instance_id": order.instance_id,
    }


def _post_only(request: HttpRequest) -> JsonResponse | None:
    if request.method != "POST":
        return JsonResponse({"error": "use POST"}, status=405)
    return None


def checkout(request: HttpRequest) -> JsonResponse:
    """``{"sku", "quantity", "amount", "card"}``; header ``Idempotency-Key`` for retries."""
    if refused := _post_only(request):
        return refused
    data = _body(request)
    request_id = request.headers.get("Idempotency-Key") or None
    try:
        quantity = int(data.get("quantity", 1))
        amount = Decimal(str(data["amount"]))
        sku = str(data["sku"])
    except (KeyError, ValueError, InvalidOperation):
        return JsonResponse({"error": "give sku, quantity and amount"}, status=400)
    if quantity <= 0 or amount <= 0:
        return JsonResponse({"error": "quantity and amount must be positive"}, status=400)
    if request_id and (done := Order.objects.filter(request_id=request_id).first()):
        return JsonResponse(_order_json(done), status=200)  # a retried request
    try:
        with transaction.atomic():
            product = Product.objects.select_for_update().get(sku=sku)
            order = Order.objects.create(
                product=product, quantity=quantity, amount=amount, request_id=request_id
            )
            inst = start_process(
                "checkout",
                {"order_id": order.id, "amount": float(amount), "card": data.get("card", "")},
                business_key=f"order-{order.id}",
                idempotency_key=f"checkout-{request_id}" if request_id else None,
            )
            order.instance_id = inst.id
            order.save(update_fields=["instance_id"])
            if product.stock < quantity:  # found out late: everything above rolls back
                raise OutOfStock(sku)
            product.stock -= quantity
            product.save(update_fields=["stock"])
    except Product.DoesNotExist:
        return JsonResponse({"error": f"no product {sku!r}"}, status=404)
    except OutOfStock:
        return JsonResponse({"error": f"{sku} is out of stock"}, status=409)
    except IntegrityError:  # the same request, concurrently: it created the order
        order = Order.objects.get(request_id=request_id)
        return JsonResponse(_order_json(order), status=200)
    return JsonResponse(_order_json(order), status=201)


def order_detail(request: HttpRequest, order_id: int) -> JsonResponse:
    order = Order.objects.filter(pk=order_id).first()
    if order is None:
        return JsonResponse({"error": f"no order {order_id}"}, status=404)
    engine = get_engine()
    tasks = [t.node_id for t in engine.user_tasks(order.instance_id)]
    state = engine.get_instance(order.instance_id).state.value
    return JsonResponse({**_order_json(order), "instance_state": state, "open_tasks": tasks})


def approve(request: HttpRequest, order_id: int) -> JsonResponse:
    """``{"approved": true|false}``: a manager decides on a big order."""
    if refused := _post_only(request):
        return refused
    approved = _body(request).get("approved")
    if not isinstance(approved, bool):
        return JsonResponse({"error": 'give {"approved": true} or false'}, status=400)
    with transaction.atomic():
        order = Order.objects.select_for_update().filter(pk=order_id).first()
        if order is None:
            return JsonResponse({"error": f"no order {order_id}"}, status=404)
        tasks = get_engine().user_tasks(order.instance_id, node_id="approve")
        if not tasks:
            return JsonResponse({"error": "this order waits for no approval"}, status=409)
        complete_user_task(tasks[0].id, {"approved": approved})
        order.status = Order.APPROVED if approved else Order.REJECTED
        order.save(update_fields=["status"])
    return JsonResponse(_order_json(order))
