"""The publisher every process uses: real Redis and RabbitMQ, a broker that is down and
comes back (a private redis-server), the engine's default from the environment."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import kombu
import pytest
import redis

from bpm import Engine, EngineConfig
from bpm.contrib.celery import RUN_TOKEN, CeleryPublisher
from bpm.dispatch import NoBrokerDispatcher
from tests.support import eventually, free_port, redis_url

REDIS = redis_url()
RABBIT = "amqp://guest:guest@127.0.0.1:5672//"


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"bpm-pub-{uuid.uuid4().hex[:12]}"
    yield name
    client = redis.Redis.from_url(REDIS)
    keys = list(client.scan_iter(f"*{name}*"))
    if keys:
        client.delete(*keys)


def test_publishes_one_celery_message_per_ready_step(queue: str) -> None:
    pub = CeleryPublisher(REDIS, queue=queue)
    pub.dispatch(["t1", "t2"])
    pub.dispatch([])
    raw = redis.Redis.from_url(REDIS).lrange(queue, 0, -1)
    messages = [json.loads(m) for m in raw]
    assert sorted(m["headers"]["task"] for m in messages) == [RUN_TOKEN, RUN_TOKEN]
    bodies = [json.loads(__import__("base64").b64decode(m["body"])) for m in messages]
    assert sorted(b[0][0] for b in bodies) == ["t1", "t2"]  # args: (token_id,)
    assert pub.stats.published == 2 and pub.stats.failed == 0
    pub.close()


def test_rabbitmq_publishes_with_confirms() -> None:
    name = f"bpm-pub-{uuid.uuid4().hex[:12]}"
    pub = CeleryPublisher(RABBIT, queue=name)
    assert pub.app.conf.broker_transport_options["confirm_publish"] is True
    pub.dispatch(["token-1"])
    assert pub.stats.published == 1
    got: list[Any] = []
    with kombu.Connection(RABBIT, connect_timeout=5) as conn:
        try:
            channel = conn.channel()
            message = channel.basic_get(name, no_ack=True)
            assert message is not None
            got.append(message.headers["task"])
            got.append(json.loads(message.body)[0])
        finally:
            conn.channel().queue_delete(name)
            conn.channel().exchange_delete(name)
    assert got == [RUN_TOKEN, ["token-1"]]
    pub.close()


def test_a_broker_that_is_down_costs_milliseconds_and_is_tried_again_later(
    queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server to run a private broker")
    port = free_port()
    clock = {"now": 100.0}
    pub = CeleryPublisher(
        f"redis://127.0.0.1:{port}/0", queue=queue, retry_after=5, clock=lambda: clock["now"]
    )
    import time

    with caplog.at_level(logging.WARNING, logger="bpm.publish"):
        started = time.monotonic()
        pub.dispatch(["a", "b"])  # nothing listens on the port: refused at once
        assert time.monotonic() - started < 0.5
        pub.dispatch(["c"])  # within retry_after: not even tried
        assert (pub.stats.failed, pub.stats.skipped, pub.stats.outages) == (2, 1, 1)
        assert pub.broker_down
        assert caplog.text.count("cannot publish to the broker") == 1

        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
        )
        try:
            client = redis.Redis(port=port)
            eventually(lambda: _pings(client), what="the private redis to answer")
            clock["now"] += 6  # past retry_after: the broker is tried again, and is back
            pub.dispatch(["d"])
            assert pub.stats.published == 1 and not pub.broker_down
            assert "works again" in caplog.text
            assert client.llen(queue) == 1
        finally:
            server.terminate()
            server.wait(10)
    pub.close()


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def test_the_engine_publishes_to_bpm_broker_url_by_default(
    pg_database_url: str, monkeypatch: pytest.MonkeyPatch, queue: str
) -> None:
    monkeypatch.setenv("BPM_BROKER_URL", REDIS)
    monkeypatch.setenv("BPM_QUEUE", queue)
    engine = Engine(pg_database_url)
    assert isinstance(engine.dispatcher, CeleryPublisher)
    assert (engine.dispatcher.broker_url, engine.dispatcher.queue) == (REDIS, queue)
    assert engine.dispatcher is Engine(pg_database_url).dispatcher  # one pool per process
    explicit = Engine(pg_database_url, config=EngineConfig(broker_url=REDIS, queue="other"))
    assert isinstance(explicit.dispatcher, CeleryPublisher)
    assert explicit.dispatcher.queue == "other"
    monkeypatch.delenv("BPM_BROKER_URL")
    assert isinstance(Engine(pg_database_url).dispatcher, NoBrokerDispatcher)
    engine.close()
    explicit.close()


def test_without_a_broker_it_says_once_that_nothing_publishes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    NoBrokerDispatcher._said = False
    quiet = NoBrokerDispatcher()
    with caplog.at_level(logging.WARNING, logger="bpm.dispatch"):
        quiet.dispatch([])
        assert "no broker configured" not in caplog.text  # nothing to publish: no noise
        quiet.dispatch(["a"])
        NoBrokerDispatcher().dispatch(["b"])
    assert caplog.text.count("no broker configured (set BPM_BROKER_URL)") == 1
