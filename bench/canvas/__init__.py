"""The baselines: plain Celery canvases, with a Redis result backend.

``chain(validate.s(order), chord([reserve.s(), charge.s()], ship.s()))`` is the order
process (``bench.order``); ``chord(group(item.s(i) for i in items), collected.s())`` is a
parallel multi-instance over the items (``bench.scopes``). The app keeps
Celery's default settings (early acks, prefetch 4): the fastest ordinary setup, so the
comparison never flatters the engine. Worker: ``celery -A bench.canvas worker``.
``python -m bench.canvas`` (``__main__.py``) is the durable chord against this one.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, chain, chord, group
from celery.canvas import Signature

app = Celery(
    "bench_canvas",
    broker=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0"),
    backend=os.environ.get("BENCH_RESULT_BACKEND", "redis://127.0.0.1:6379/1"),
)
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    task_default_queue=os.environ.get("BPM_QUEUE", "bench-canvas"),
    broker_connection_retry_on_startup=True,
    result_expires=3600,
)

Order = dict[str, Any]


@app.task(name="bench.validate")
def validate(order: Order) -> Order:
    return order


@app.task(name="bench.reserve")
def reserve(order: Order) -> Order:
    return order


@app.task(name="bench.charge")
def charge(order: Order) -> Order:
    return order


@app.task(name="bench.ship")
def ship(results: list[Order]) -> Order:
    return results[0]


def order_canvas(order: Order) -> Signature[Any]:
    """The reference process without an engine: validate, then both branches, then ship."""
    return chain(validate.s(order), chord([reserve.s(), charge.s()], ship.s()))


@app.task(name="bench.item")
def item(value: Any) -> Any:
    return value


@app.task(name="bench.collected")
def collected(results: list[Any]) -> int:
    return len(results)


def batch_canvas(items: list[Any]) -> Signature[Any]:
    """A parallel multi-instance without an engine: one task per item, then the callback
    with every result, in order."""
    return chord(group(item.s(x) for x in items), collected.s())
