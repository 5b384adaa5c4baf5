"""A Celery shop's own app, with its own tasks, routes, queues and beat, and the engine
installed into it (``install(app, ...)``): ``celery -A tests.e2e.shop_app worker``.

Queue names and Redis keys come from the environment (unique per test): ``SHOP_QUEUE`` is
the shop's default queue, ``SHOP_MAIL_QUEUE`` the queue its ``shop.mail`` task is routed
to, ``SHOP_TAG`` the Redis prefix its tasks record into; the engine's queue is
``BPM_QUEUE``.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import redis
from celery import Celery, Task
from kombu import Queue

from bpm import TaskContext, service_task
from bpm.contrib.celery import install

SHOP_QUEUE = os.environ.get("SHOP_QUEUE", "shop")
MAIL_QUEUE = os.environ.get("SHOP_MAIL_QUEUE", "shop-mail")
TAG = os.environ.get("SHOP_TAG", "shop")
REDIS_URL = os.environ.get("BPM_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")

app = Celery("shop", broker=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/10"))
app.conf.update(
    task_default_queue=SHOP_QUEUE,
    task_queues=[Queue(SHOP_QUEUE), Queue(MAIL_QUEUE)],
    task_routes={"shop.mail": {"queue": MAIL_QUEUE}},
    beat_schedule={"shop-heartbeat": {"task": "shop.heartbeat", "schedule": 1.0}},
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
)


def record(what: str, value: Any) -> None:
    redis.Redis.from_url(REDIS_URL).rpush(f"{TAG}:{what}", str(value))


def report(task: Task, name: str) -> None:  # type: ignore[type-arg]
    """What the worker really runs this task with: its acks and the queue it came from."""
    info = task.request.delivery_info or {}
    record(name, f"{task.acks_late}|{task.reject_on_worker_lost}|{info.get('routing_key')}")


# shared=False: the suite imports this module in-process more than once (fixture ``shop``);
# a shared task is added to every app finalized afterwards, and Celery 5.7 warns when two
# callables share a name (the suite's other apps define their own ``shop.*`` tasks).
@app.task(name="shop.add", shared=False, bind=True)
def add(self: Task, x: int, y: int) -> int:  # type: ignore[type-arg]
    report(self, "add")
    return x + y


@app.task(name="shop.mail", shared=False, bind=True)
def mail(self: Task, to: str) -> None:  # type: ignore[type-arg]
    report(self, "mail")


@app.task(name="shop.heartbeat", shared=False)
def heartbeat() -> None:
    record("heartbeat", 1)


@app.task(name="shop.charge", shared=False, bind=True)
def charge(self: Task, amount: int, die_once: bool = False) -> dict[str, Any]:  # type: ignore[type-arg]
    """The shop's own task, run by the engine as a step: records the request id it sees;
    ``die_once`` kills its worker process on the first attempt (``kill -9``): a lost
    worker is a failed attempt, run again at once (not after Celery's default
    ``default_retry_delay`` of 180 s, which this task keeps)."""
    record("charge", f"{self.request.id}|{self.request.retries}")
    if die_once and self.request.retries == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"charged": amount}


# No retry delay: a chord step whose worker child was killed runs again as soon as it is
# taken back (Celery's default_retry_delay, 180 s, is the step's backoff otherwise, longer
# than the chord test waits).
@app.task(name="shop.item", shared=False, bind=True, default_retry_delay=0)
def item(self: Task, n: int, slow: float = 0.0) -> int:  # type: ignore[type-arg]
    """A chord member: its effect is keyed by the request id (the step's idempotency key),
    so a repeat after a crash is recognised (``effects`` counts each key's runs)."""
    redis.Redis.from_url(REDIS_URL).hincrby(f"{TAG}:effects", str(self.request.id), 1)
    if slow:
        time.sleep(slow)
    return n * n


@app.task(name="shop.collect", shared=False, default_retry_delay=0)  # as shop.item
def collect(values: list[int]) -> int:
    return sum(values)


@service_task("shop-step")
def step(ctx: TaskContext) -> dict[str, Any]:
    record(f"step:{ctx.instance_id}", ctx.attempt)
    return {"stepped": True}


installation = install(app)
