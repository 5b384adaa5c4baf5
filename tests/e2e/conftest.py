"""Fixtures of the e2e tests: a unique queue and Redis tag per test, real workers, beat."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from bpm import Engine
from bpm.contrib.celery import CeleryPublisher
from bpm.dispatch import NullDispatcher
from tests.e2e.procs import CeleryProcess, start_beat, start_worker, stop_all
from tests.support import redis_url

# The test process never sets BPM_BROKER_URL for itself (an engine built from the
# environment would then publish to the default queue): the workers get it in their env.
# Broker and the handlers' ledger share this worker's Redis database (keys are per test).
BROKER_URL = os.environ.get("BPM_TEST_BROKER_URL") or redis_url()
os.environ.setdefault("BPM_TEST_REDIS_URL", redis_url())

StartWorkers = Callable[..., list[CeleryProcess]]


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue no other test (or engineer) consumes; its Redis keys are removed after."""
    name = f"bpm-e2e-{uuid.uuid4().hex[:12]}"
    yield name
    broker = redis.Redis.from_url(BROKER_URL)
    keys = list(broker.scan_iter(f"*{name}*"))
    if keys:
        broker.delete(*keys)


@pytest.fixture
def tag() -> Iterator[str]:
    """The instance variable under which the handlers count their runs in Redis."""
    value = uuid.uuid4().hex
    yield value
    r = redis.Redis.from_url(os.environ["BPM_TEST_REDIS_URL"])
    keys = list(r.scan_iter(f"bpm-e2e:{value}:*"))
    if keys:
        r.delete(*keys)


@pytest.fixture
def rds() -> redis.Redis:
    return redis.Redis.from_url(os.environ["BPM_TEST_REDIS_URL"], decode_responses=True)


@pytest.fixture
def worker_env(pg_database_url: str, queue: str) -> dict[str, str]:
    return {
        "BPM_DATABASE_URL": pg_database_url,
        "BPM_QUEUE": queue,
        "BPM_HANDLERS": "tests.e2e.handlers",
        "BPM_BROKER_URL": BROKER_URL,
        "BPM_TEST_REDIS_URL": os.environ["BPM_TEST_REDIS_URL"],
        "BPM_POOL_SIZE": "2",
    }


@pytest.fixture
def start_workers(worker_env: dict[str, str], queue: str, tmp_path: Path) -> Iterator[StartWorkers]:
    """``start_workers(n, **env)`` starts n worker processes; all are killed at teardown."""
    started: list[CeleryProcess] = []

    def start(n: int = 1, **env: str) -> list[CeleryProcess]:
        new = [start_worker({**worker_env, **env}, queue, tmp_path) for _ in range(n)]
        started.extend(new)
        return new

    yield start
    stop_all(started)


@pytest.fixture
def start_beat_process(
    worker_env: dict[str, str], tmp_path: Path
) -> Iterator[Callable[..., CeleryProcess]]:
    started: list[CeleryProcess] = []

    def start(*, level: str = "info", **env: str) -> CeleryProcess:
        proc = start_beat({**worker_env, **env}, tmp_path, level=level)
        started.append(proc)
        return proc

    yield start
    stop_all(started)


@pytest.fixture
def publisher(queue: str) -> Iterator[CeleryPublisher]:
    """The publisher every process uses, aimed at the test's queue."""
    pub = CeleryPublisher(BROKER_URL, queue=queue)
    yield pub
    pub.close()


@pytest.fixture
def celery_engine(pg_database_url: str, publisher: CeleryPublisher) -> Iterator[Engine]:
    """An engine in the test process that publishes to the test's queue."""
    eng = Engine(pg_database_url, dispatcher=publisher)
    yield eng
    eng.close()


@pytest.fixture
def silent_engine(pg_database_url: str) -> Iterator[Engine]:
    """An engine that publishes nothing (a lost publish, every time)."""
    eng = Engine(pg_database_url, dispatcher=NullDispatcher())
    yield eng
    eng.close()
