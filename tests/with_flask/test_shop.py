"""The Flask shop example end to end: Flask's test client, a real Celery worker process
that created the app, PostgreSQL and Redis. No beat runs: only the views' publishes
(after the session commits) can hand the steps to the worker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
import redis
from flask import Flask

from bpm import Engine, InstanceState
from bpm.contrib.celery import CeleryPublisher
from bpm.engine.core import utcnow
from tests.e2e.checks import wait_ended
from tests.e2e.conftest import BROKER_URL
from tests.e2e.procs import CeleryProcess
from tests.support import eventually

pytestmark = pytest.mark.slow


def product(app: Flask, stock: int) -> str:
    from flaskshop.models import Product, db

    sku = f"sku-{uuid.uuid4().hex[:10]}"
    with app.app_context():
        db.session.add(Product(sku=sku, stock=stock))
        db.session.commit()
    return sku


def order_status(app: Flask, order_id: int) -> str:
    from flaskshop.models import Order, db

    with app.app_context():
        order = db.session.get(Order, order_id)
        assert order is not None
        return order.status


def wait_status(app: Flask, order_id: int, status: str) -> None:
    eventually(lambda: order_status(app, order_id) == status, what=f"order {order_id} {status}")


def test_checkout_runs_to_the_end_in_a_worker_right_after_the_commit(
    shop_app: Flask,
    shop_engine: Engine,
    publishing: CeleryPublisher,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    shop_worker()
    client = shop_app.test_client()
    res = client.post("/checkout", json={"sku": product(shop_app, 5), "amount": 40})
    assert res.status_code == 201, res.get_data(as_text=True)
    order = res.get_json()

    done = wait_ended(shop_engine, order["instance_id"], timeout=10)
    assert done.ended_at is not None
    assert (done.ended_at - done.created_at).total_seconds() < 3.0
    assert "tracking" in done.variables
    wait_status(shop_app, order["id"], "shipped")  # process_completed ran in the worker
    assert publishing.stats.published == 1


def test_a_big_order_waits_for_the_approval_view(
    shop_app: Flask,
    shop_engine: Engine,
    publishing: CeleryPublisher,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    shop_worker()
    client = shop_app.test_client()
    order = client.post("/checkout", json={"sku": product(shop_app, 5), "amount": 150}).get_json()
    detail = eventually(
        lambda: (d := client.get(f"/orders/{order['id']}").get_json())["open_tasks"] and d,
        what="the approval task",
    )
    assert detail["open_tasks"] == ["approve"]
    res = client.post(f"/orders/{order['id']}/approve", json={"approved": True})
    assert res.status_code == 200 and res.get_json()["status"] == "approved"
    done = wait_ended(shop_engine, order["instance_id"], timeout=10)
    assert done.variables["approved"] is True
    wait_status(shop_app, order["id"], "shipped")
    assert (
        client.post(f"/orders/{order['id']}/approve", json={"approved": False}).status_code == 409
    )


def test_a_rejection_ends_the_instance_in_the_web_process(
    shop_app: Flask,
    shop_engine: Engine,
    publishing: CeleryPublisher,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    shop_worker()
    client = shop_app.test_client()
    order = client.post("/checkout", json={"sku": product(shop_app, 5), "amount": 999}).get_json()
    eventually(lambda: client.get(f"/orders/{order['id']}").get_json()["open_tasks"])
    published = publishing.stats.published
    res = client.post(f"/orders/{order['id']}/approve", json={"approved": False})
    assert res.status_code == 200
    inst = shop_engine.get_instance(order["instance_id"])
    assert inst.state is InstanceState.COMPLETED  # ended by the request itself
    assert publishing.stats.published == published  # nothing left for a worker
    assert order_status(shop_app, order["id"]) == "rejected"


def test_a_declined_card_fails_the_instance(
    shop_app: Flask,
    shop_engine: Engine,
    publishing: CeleryPublisher,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    shop_worker()
    client = shop_app.test_client()
    body = {"sku": product(shop_app, 1), "amount": 30, "card": "4000000000000000"}
    order = client.post("/checkout", json=body).get_json()
    inst = eventually(
        lambda: (i := shop_engine.get_instance(order["instance_id"])).ended and i,
        what="the instance to end",
    )
    assert inst.state is InstanceState.FAILED
    wait_status(shop_app, order["id"], "payment_failed")


def test_a_view_that_rolls_back_starts_nothing_and_publishes_nothing(
    shop_app: Flask,
    shop_engine: Engine,
    publishing: CeleryPublisher,
    queue: str,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    from flaskshop.models import Order, db

    worker = shop_worker()
    sku = product(shop_app, 0)
    client = shop_app.test_client()
    res = client.post(
        "/checkout", json={"sku": sku, "amount": 20}, headers={"Idempotency-Key": "rb"}
    )
    assert res.status_code == 409
    with shop_app.app_context():
        assert db.session.query(Order).count() == 0
    assert shop_engine.instances(definition_key="checkout") == []
    assert publishing.stats == type(publishing.stats)()
    assert redis.Redis.from_url(BROKER_URL).llen(queue) == 0
    assert "received" not in worker.log()


def test_a_request_that_never_commits_leaves_nothing(
    shop_app: Flask, shop_engine: Engine, publishing: CeleryPublisher
) -> None:
    from bpm.contrib.flask import start_process

    with shop_app.app_context():
        start_process("checkout", {"amount": 1, "order_id": 0}, business_key="forgotten")
    # The app context ended without db.session.commit(): rolled back, nothing published.
    assert shop_engine.instances(business_key="forgotten") == []
    assert publishing.stats.published == 0


def test_a_retried_request_with_the_same_key_makes_one_order_and_one_instance(
    shop_app: Flask, shop_engine: Engine, publishing: CeleryPublisher
) -> None:
    client = shop_app.test_client()
    sku = product(shop_app, 5)
    headers = {"Idempotency-Key": f"req-{uuid.uuid4().hex}"}
    first = client.post("/checkout", json={"sku": sku, "amount": 20}, headers=headers)
    retry = client.post("/checkout", json={"sku": sku, "amount": 20}, headers=headers)
    assert (first.status_code, retry.status_code) == (201, 200)
    assert first.get_json()["id"] == retry.get_json()["id"]
    assert len(shop_engine.instances(definition_key="checkout")) == 1
    assert publishing.stats.published == 1


def test_broker_down_the_view_commits_and_the_sweeper_delivers_once_it_is_back(
    shop_app: Flask,
    shop_engine: Engine,
    queue: str,
    shop_worker: Callable[..., CeleryProcess],
) -> None:
    down = CeleryPublisher("redis://127.0.0.1:1/0", queue=queue)
    shop_engine.dispatcher = down
    client = shop_app.test_client()
    started = time.monotonic()
    res = client.post("/checkout", json={"sku": product(shop_app, 3), "amount": 25})
    assert res.status_code == 201 and time.monotonic() - started < 2.0
    assert down.stats.failed == 1
    inst_id = res.get_json()["instance_id"]
    assert shop_engine.get_instance(inst_id).state is InstanceState.ACTIVE

    shop_worker()
    live = CeleryPublisher(BROKER_URL, queue=queue)
    sweeper = Engine(shop_engine.url, dispatcher=live)
    try:
        assert sweeper.redispatch_stale_ready(now=utcnow() + timedelta(seconds=30)) >= 1
        done = wait_ended(shop_engine, inst_id, timeout=10)
        ran = [e.node_id for e in shop_engine.history(done.id) if e.type == "token_executing"]
        assert sorted(ran) == ["charge", "reserve", "ship"]
    finally:
        sweeper.close()
        live.close()
