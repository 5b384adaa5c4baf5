"""One Celery app for both sides of the canvas benchmarks: the same tasks and the same
worker processes run Celery's own chords (Redis result backend, Celery's default settings:
early acks, prefetch 4) and the durable ones of :mod:`bpm.canvas` (the engine installed with
``install(app)``). ``celery -A bench.canvas_app worker`` consumes both queues.

``bench.member(i, run)`` applies its effect once per request id (``HSETNX`` in the
effects Redis: the step's idempotency key for a durable member, Celery's task id for
Celery's) and counts every run; ``bench.summarize(values, run, members)`` records the
chord's end when it got every member (a set of root ids: a body run twice counts once).
"""

from __future__ import annotations

import os
from typing import Any

import redis
from celery import Celery, Task

from bpm.contrib.celery import install

BROKER = os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0")
EFFECTS = os.environ.get("BENCH_EFFECTS_REDIS", "redis://127.0.0.1:6379/9")

app = Celery(
    "bench_canvas_app",
    broker=BROKER,
    backend=os.environ.get("BENCH_RESULT_BACKEND", "redis://127.0.0.1:6379/1"),
)
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    task_default_queue=os.environ.get("BENCH_CELERY_QUEUE", "bench-celery"),
    broker_connection_retry_on_startup=True,
    result_expires=3600,
)
_effects: redis.Redis | None = None


def effects() -> redis.Redis:
    global _effects
    if _effects is None:
        _effects = redis.Redis.from_url(EFFECTS)
    return _effects


# A lost worker is a failed attempt of a durable step (so a task that kills its worker
# ends in an incident, never a loop); under a kill every 1.5 s a member may be lost several
# times, so members and bodies allow 20 attempts, 1 s apart (Celery's default is 4, 180 s
# apart). Celery's side never retries them.
@app.task(name="bench.member", bind=True, max_retries=20, default_retry_delay=1)
def member(self: Task, i: int, run: str = "") -> int:  # type: ignore[type-arg]
    if run:
        r = effects()
        r.hsetnx(f"bench-canvas:{run}:applied", str(self.request.id), i)
        r.hincrby(f"bench-canvas:{run}:runs", str(self.request.id), 1)
    return i


@app.task(name="bench.summarize", bind=True, max_retries=20, default_retry_delay=1)
def summarize(self: Task, values: list[int], run: str = "", members: int = 0) -> int:  # type: ignore[type-arg]
    """The chord's body: records the chord (its root id) as finished with every member."""
    if run and len(values) == members:
        effects().sadd(f"bench-canvas:{run}:chords", str(self.request.root_id))
    return len(values)


def celery_chord(members: int, run: str = "") -> Any:
    from celery import chord, group

    return chord(group(member.s(i, run) for i in range(members)), summarize.s(run, members))


def durable_chord(members: int, run: str = "") -> Any:
    from bpm.canvas import chord, group

    return chord(group(member.s(i, run) for i in range(members)), summarize.s(run, members))


installation = install(app)
