"""The shared publisher publishes from a thread of its own (issue 13 item 4).

A broker that is down costs a start nothing on the caller's path: the start commits and
returns, the publishing thread finds the broker down (logged, counted), and beat's sweeper
delivers the step later. Real Redis and PostgreSQL; the speed is measured in
``bench/publish_down.py``, not asserted here.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from bpm import Engine, EngineConfig, TokenState
from bpm.builder import Process
from bpm.contrib.celery import CeleryPublisher
from tests.support import redis_url

REDIS = redis_url()
ROOT = Path(__file__).resolve().parents[1]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"bpm-bg-{uuid.uuid4().hex[:12]}"
    yield name
    client = redis.Redis.from_url(REDIS)
    keys = list(client.scan_iter(f"*{name}*"))
    if keys:
        client.delete(*keys)


def one_step(key: str) -> Process:
    return (
        Process(key)
        .start("start")
        .service_task("step", handler="bg-step")
        .end("end")
        .sequence("start", "step", "end")
    )


def test_a_start_with_the_broker_down_commits_and_the_sweeper_delivers_later(
    pg_database_url: str, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    down = CeleryPublisher(f"redis://127.0.0.1:{closed_port()}/0", queue=queue, background=True)
    engine = Engine(pg_database_url, dispatcher=down, config=EngineConfig())
    engine.deploy(one_step("bg").build())
    with caplog.at_level(logging.WARNING, logger="bpm.publish"):
        first = engine.start("bg")
        assert down.flush(10)
        second = engine.start("bg")  # the broker is known to be down: not even tried
        assert down.flush(10)
    for inst in (first, second):
        (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "step"]
        assert tok.state is TokenState.READY
    assert (down.stats.published, down.stats.failed, down.stats.skipped) == (0, 1, 1)
    assert down.stats.outages == 1
    assert caplog.text.count("cannot publish to the broker") == 1

    live = CeleryPublisher(REDIS, queue=queue)
    sweeper = Engine(pg_database_url, dispatcher=live, config=EngineConfig())
    later = sweeper.core.now() + timedelta(seconds=10)
    assert sweeper.redispatch_stale_ready(now=later) == 2
    assert live.stats.published == 2
    assert redis.Redis.from_url(REDIS).llen(queue) == 2
    for eng in (engine, sweeper):
        eng.close()
    down.close()
    live.close()


def test_a_short_lived_process_publishes_what_it_queued_before_it_exits(queue: str) -> None:
    """The background thread is a daemon; the exit hook still hands the queued ids over."""
    code = (
        "from bpm.contrib.celery import CeleryPublisher\n"
        f"pub = CeleryPublisher.shared({REDIS!r}, queue={queue!r})\n"
        "assert pub.background\n"
        "pub.dispatch(['t1', 't2'])\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
    assert redis.Redis.from_url(REDIS).llen(queue) == 2


def test_flush_reports_what_is_still_queued(queue: str) -> None:
    pub = CeleryPublisher(REDIS, queue=queue, background=True)
    assert pub.flush(0.1)  # nothing queued
    pub.dispatch(["a"])
    assert pub.flush(10)
    assert pub.stats.published == 1
    pub.close()
