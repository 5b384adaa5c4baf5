"""The Django shop example end to end: Django's test client, a real Celery worker process
with Django set up, PostgreSQL and Redis. No beat runs: only the views' publishes (on
commit) can hand the steps to the worker."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import redis

from bpm import Engine, InstanceState
from bpm.contrib.celery import CeleryPublisher
from tests.e2e.checks import wait_ended
from tests.e2e.conftest import BROKER_URL
from tests.e2e.procs import CeleryProcess
from tests.support import eventually

pytestmark = pytest.mark.slow


def product(stock: int) -> str:
    from orders.models import Product

    sku = f"sku-{uuid.uuid4().hex[:10]}"
    Product.objects.create(sku=sku, stock=stock)
    return sku


def post(path: str, body: dict[str, Any], **headers: str) -> Any:
    from django.test import Client

    return Client().post(path, json.dumps(body), content_type="application/json", **headers)


def order_status(order_id: int) -> str:
    from orders.models import Order

    status: str = Order.objects.get(pk=order_id).status
    return status


def wait_status(order_id: int, status: str) -> str:
    return eventually(
        lambda: order_status(order_id) == status and status, what=f"order {order_id} {status}"
    )


def test_checkout_runs_to_the_end_in_a_worker_right_after_the_commit(
    shop_engine: Engine,
    publishing: CeleryPublisher,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    shop_worker()
    res = post("/checkout", {"sku": product(5), "quantity": 2, "amount": 40, "card": "4242"})
    assert res.status_code == 201, res.content
    order = res.json()

    done = wait_ended(shop_engine, order["instance_id"], timeout=10)
    # The whole instance took a small fraction of the sweeper's interval: it was published.
    assert done.ended_at is not None
    assert (done.ended_at - done.created_at).total_seconds() < 3.0
    assert done.variables["payment"].startswith("P-") and "tracking" in done.variables
    # process_completed ran in the worker and moved the order on.
    wait_status(order["id"], "shipped")
    assert publishing.stats.published == 1 and publishing.stats.failed == 0


def test_a_big_order_waits_for_the_approval_view(
    shop_engine: Engine,
    publishing: CeleryPublisher,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    from django.test import Client

    shop_worker()
    order = post("/checkout", {"sku": product(5), "quantity": 1, "amount": 150}).json()
    detail = eventually(
        lambda: (d := Client().get(f"/orders/{order['id']}").json())["open_tasks"] and d,
        what="the approval task",
    )
    assert detail["open_tasks"] == ["approve"] and detail["instance_state"] == "active"

    res = post(f"/orders/{order['id']}/approve", {"approved": True})
    assert res.status_code == 200 and res.json()["status"] == "approved"
    done = wait_ended(shop_engine, order["instance_id"], timeout=10)
    assert done.variables["approved"] is True and "tracking" in done.variables
    wait_status(order["id"], "shipped")
    # A second decision finds no task and changes nothing.
    again = post(f"/orders/{order['id']}/approve", {"approved": False})
    assert again.status_code == 409
    assert order_status(order["id"]) == "shipped"


def test_a_declined_card_fails_the_instance_and_process_failed_runs_in_the_worker(
    shop_engine: Engine,
    publishing: CeleryPublisher,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    shop_worker()
    order = post("/checkout", {"sku": product(1), "amount": 30, "card": "4000000000000000"}).json()
    inst = eventually(
        lambda: (i := shop_engine.get_instance(order["instance_id"])).ended and i,
        what="the instance to end",
    )
    assert inst.state is InstanceState.FAILED
    wait_status(order["id"], "payment_failed")


def test_a_view_that_rolls_back_starts_nothing_and_publishes_nothing(
    shop_engine: Engine,
    publishing: CeleryPublisher,
    queue: str,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    from orders.models import Order

    worker = shop_worker()
    sku = product(0)  # the view finds out after starting the process: it rolls back
    before = len(shop_engine.instances(definition_key="checkout"))

    res = post("/checkout", {"sku": sku, "quantity": 1, "amount": 20}, HTTP_IDEMPOTENCY_KEY="rb")

    assert res.status_code == 409, res.content
    assert not Order.objects.filter(product__sku=sku).exists()
    assert len(shop_engine.instances(definition_key="checkout")) == before
    assert publishing.stats == type(publishing.stats)()  # not one message
    assert redis.Redis.from_url(BROKER_URL).llen(queue) == 0
    assert "received" not in worker.log()
    # The key was never used: the same request succeeds once stock is back.
    from orders.models import Product

    Product.objects.filter(sku=sku).update(stock=1)
    ok = post("/checkout", {"sku": sku, "quantity": 1, "amount": 20}, HTTP_IDEMPOTENCY_KEY="rb")
    assert ok.status_code == 201
    wait_ended(shop_engine, ok.json()["instance_id"], timeout=10)


def test_a_retried_request_with_the_same_key_makes_one_order_and_one_instance(
    shop_engine: Engine, publishing: CeleryPublisher, shop_worker: Callable[..., CeleryProcess]
) -> None:
    from orders.models import Order

    shop_worker()
    sku = product(5)
    key = f"req-{uuid.uuid4().hex}"
    first = post("/checkout", {"sku": sku, "amount": 20}, HTTP_IDEMPOTENCY_KEY=key)
    retry = post("/checkout", {"sku": sku, "amount": 20}, HTTP_IDEMPOTENCY_KEY=key)
    assert (first.status_code, retry.status_code) == (201, 200)
    assert first.json()["id"] == retry.json()["id"]
    assert Order.objects.filter(product__sku=sku).count() == 1
    business_key = f"order-{first.json()['id']}"
    assert len(shop_engine.instances(business_key=business_key)) == 1
    wait_ended(shop_engine, first.json()["instance_id"], timeout=10)


def test_broker_down_the_view_commits_and_the_sweeper_delivers_once_it_is_back(
    shop_engine: Engine, queue: str, shop_worker: Callable[..., CeleryProcess]
) -> None:
    down = CeleryPublisher("redis://127.0.0.1:1/0", queue=queue)  # nothing listens there
    shop_engine.dispatcher = down
    started = time.monotonic()
    res = post("/checkout", {"sku": product(3), "amount": 25})
    elapsed = time.monotonic() - started
    assert res.status_code == 201, res.content
    assert down.stats.failed == 1 and down.stats.published == 0
    assert elapsed < 2.0
    inst = shop_engine.get_instance(res.json()["instance_id"])
    assert inst.state is InstanceState.ACTIVE  # committed, waiting for a worker

    # The broker is back: the sweeper (beat's task, here called directly) publishes it.
    shop_worker()
    live = CeleryPublisher(BROKER_URL, queue=queue)
    sweeper = Engine(shop_engine.url, dispatcher=live)
    try:
        from datetime import timedelta

        from bpm.engine.core import utcnow

        assert sweeper.redispatch_stale_ready(now=utcnow() + timedelta(seconds=30)) >= 1
        done = wait_ended(shop_engine, inst.id, timeout=10)
        history = shop_engine.history(done.id)
        ran = [e.node_id for e in history if e.type == "token_executing"]
        assert sorted(ran) == ["charge", "reserve", "ship"]  # each step exactly once
    finally:
        sweeper.close()
        live.close()
