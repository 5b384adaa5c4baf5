"""``BPM_DATABASE_READ_URL``: history, cockpit lists and counts read on a real streaming
replica (a primary and a replica cluster started by this module: tests/replica_cluster.py),
transitions on the primary, and the lag handled: a page says how old it is, and a replica
further behind than the bound (or away) sends the reads to the primary."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import httpx
import psycopg
import pytest

from bpm import Engine, InstanceState
from bpm.api.app import create_app
from bpm.api.data_age import HEADER
from bpm.builder import Process
from bpm.engine import EngineConfig
from bpm.engine.replica import ReadReplica
from bpm.errors import ConfigurationError
from bpm.store.cockpit import InstanceFilter
from bpm.store.history_queries import InstanceQuery
from tests.replica_cluster import Pair, pg_bin, streaming_pair

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(pg_bin() is None, reason="no PostgreSQL binaries to start a replica"),
]
DB = "bpm"


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    with streaming_pair() as started:
        with psycopg.connect(started.primary.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB}")
        setup = Engine(started.primary.url(DB))
        setup.upgrade()
        setup.close()
        yield started


def _engine(pair: Pair, max_lag: float = 30.0, read_url: str | None = None) -> Engine:
    config = EngineConfig(
        read_url=read_url or pair.replica.url(DB), read_max_lag=timedelta(seconds=max_lag)
    )
    return Engine(pair.primary.url(DB), config=config)


def task_process() -> Any:
    return Process("rep").start("s").user_task("u").end("e").sequence("s", "u", "e").build()


def _history_ids(engine: Engine) -> set[str]:
    found = engine.history_queries.historic_instances(InstanceQuery(), limit=1000)
    return {h.instance.id for h in found}


def _get(engine: Engine, path: str) -> httpx.Response:
    app = create_app(engine, open_access=True, api_keys=[])

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(f"/engine-rest{path}")

    return asyncio.run(run())


def test_history_reads_the_replica_and_transitions_the_primary(pair: Pair) -> None:
    engine = _engine(pair)
    strict = _engine(pair, max_lag=0.0)  # any lag at all: read on the primary
    try:
        engine.deploy(task_process())
        seen = engine.start("rep")
        pair.caught_up()
        assert seen.id in _history_ids(engine)
        reads = engine.core.replica.stats.replica_reads  # type: ignore[union-attr]
        assert reads >= 1

        pair.pause_replay()
        try:
            fresh = engine.start("rep")
            # a transition reads under the instance lock on the primary: the replica,
            # which has not replayed the start, is never asked
            (task,) = engine.user_tasks(instance_id=fresh.id)
            engine.complete_user_task(task.id)
            assert engine.get_instance(fresh.id).state is InstanceState.COMPLETED
            pair.received()

            # the replica's pages do not have it yet, and say how old they are
            assert fresh.id not in _history_ids(engine)
            page = engine.cockpit.instances(InstanceFilter(), limit=100)
            assert fresh.id not in {i.id for i in page.instances}
            age = engine.read_age()
            assert age is not None and age > 0
            answer = _get(engine, "/history/process-instance")
            assert answer.status_code == 200, answer.text
            assert fresh.id not in {h["id"] for h in answer.json()}
            assert float(answer.headers[HEADER]) > 0
            # the runtime list is the primary's
            runtime = _get(engine, f"/process-instance?processInstanceIds={seen.id}")
            assert HEADER not in runtime.headers

            # further behind than the bound: read on the primary, data current
            fallbacks = strict.core.replica.stats.primary_fallbacks  # type: ignore[union-attr]
            assert fresh.id in _history_ids(strict)
            assert strict.core.replica.stats.primary_fallbacks == fallbacks + 1  # type: ignore[union-attr]
            assert strict.read_age() is None
            assert _get(strict, "/history/process-instance").headers[HEADER] == "0"
        finally:
            pair.resume_replay()
        pair.caught_up()
        assert fresh.id in _history_ids(engine)
        assert engine.read_age() == 0.0
    finally:
        engine.close()
        strict.close()


def test_a_replica_that_cannot_be_reached_sends_reads_to_the_primary(pair: Pair) -> None:
    with socket_closed() as port:
        away = f"postgresql+psycopg://postgres@127.0.0.1:{port}/{DB}?connect_timeout=2"
        engine = _engine(pair, read_url=away)
        try:
            engine.deploy(task_process())
            inst = engine.start("rep")
            assert inst.id in _history_ids(engine)
            assert engine.core.replica.stats.primary_fallbacks >= 1  # type: ignore[union-attr]
            assert engine.read_age() is None
            assert _get(engine, "/history/process-instance").headers[HEADER] == "0"
        finally:
            engine.close()


def test_without_a_replica_no_page_says_an_age(pair: Pair) -> None:
    engine = Engine(pair.primary.url(DB))
    try:
        assert engine.read_age() is None
        assert HEADER not in _get(engine, "/history/process-instance").headers
    finally:
        engine.close()


def test_bad_replica_settings_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPM_DATABASE_READ_MAX_LAG", "-1")
    with pytest.raises(ConfigurationError, match="BPM_DATABASE_READ_MAX_LAG=-1 cannot be"):
        EngineConfig.from_env()
    monkeypatch.setenv("BPM_DATABASE_READ_MAX_LAG", "soon")
    with pytest.raises(ConfigurationError, match="is not a number"):
        EngineConfig.from_env()
    monkeypatch.setenv("BPM_DATABASE_READ_MAX_LAG", "2.5")
    monkeypatch.setenv("BPM_DATABASE_READ_URL", " postgresql+psycopg://h/db ")
    cfg = EngineConfig.from_env()
    assert cfg.read_url == "postgresql+psycopg://h/db"
    assert cfg.read_max_lag == timedelta(seconds=2.5)
    with pytest.raises(ConfigurationError, match="not a database URL"):
        Engine("sqlite://", config=EngineConfig(read_url="::not a url::"))
    with pytest.raises(ValueError, match="maximum lag cannot be negative"):
        ReadReplica(None, timedelta(seconds=-1))  # type: ignore[arg-type]


@contextmanager
def socket_closed() -> Iterator[int]:
    """A port nothing listens on (bound, never listening, while the test runs)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])
