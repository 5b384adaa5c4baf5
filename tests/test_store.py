"""One store: the migrations build exactly the tables the code defines, and PostgreSQL and
SQLite end up with the same rows after the same operations."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select

from bpm import Engine, EngineConfig
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.retry import RetryPolicy
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.store import db as bpm_db
from bpm.store import migrate
from bpm.store.partitions import include_name
from bpm.store.tables import metadata
from tests.engine_helpers import QueueDispatcher, drain

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_the_migrations_build_exactly_the_tables_the_code_defines(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if backend == "postgresql":
        url = str(request.getfixturevalue("pg_database_url"))
    else:
        url = f"sqlite:///{tmp_path / 'schema.db'}"
        eng = bpm_db.connect(url)
        migrate.upgrade(eng)
        eng.dispose()
    eng = bpm_db.connect(url)
    try:
        with eng.connect() as conn:
            # history's monthly partitions are made at run time (bpm.store.partitions)
            opts = {"compare_type": True, "include_name": include_name}
            ctx = MigrationContext.configure(conn, opts=opts)
            diff = compare_metadata(ctx, metadata)
    finally:
        eng.dispose()
    assert diff == [], diff


class Clock:
    """A clock the test moves by hand (the same readings on both backends)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def tick(self, seconds: float = 1.0) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def counted_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """uuid4 made deterministic: the same operations make the same ids on both runs."""
    counter = itertools.count(1)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(counter)))

    def reset() -> None:
        nonlocal counter
        counter = itertools.count(1)
        monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(counter)))

    yield reset


def scenario(url: str) -> dict[str, list[dict[str, Any]]]:
    """Deploy, start, run inline steps, a join, an external task, a user task, a timer, a
    failure with an incident and its retry; return every row of every table."""
    clock = Clock()
    q = QueueDispatcher()
    reg = HandlerRegistry()
    flaky = {"fail": True}

    def step(ctx: TaskContext) -> dict[str, Any]:
        return {ctx.node_id: True}

    def sometimes(ctx: TaskContext) -> dict[str, Any]:
        if flaky["fail"]:
            raise RuntimeError("card declined")
        return {"charged": True}

    for name in ("a", "b"):
        reg.register(name, step)
    reg.register("charge", sometimes, retry=RetryPolicy.none())
    engine = Engine(url, dispatcher=q, registry=reg, config=EngineConfig(batch_size=1), clock=clock)
    try:
        engine.upgrade()
        engine.deploy(
            Process("same")
            .start("s")
            .parallel("fork")
            .service_task("a", handler="a")
            .service_task("b", handler="b")
            .parallel("join")
            .service_task("ext", topic="pay")
            .user_task("approve", assignee="ann")
            .timer("nap", duration="PT1M")
            .service_task("charge", handler="charge")
            .end("e")
            .sequence("s", "fork")
            .flow("fork", "a")
            .flow("fork", "b")
            .flow("a", "join")
            .flow("b", "join")
            .sequence("join", "ext", "approve", "nap", "charge", "e")
            .build()
        )
        clock.tick()
        inst = engine.start("same", {"amount": 120}, business_key="k-1")
        clock.tick()
        drain(engine, q)
        clock.tick()
        (task,) = engine.fetch_and_lock(
            FetchRequest(worker_id="w1", max_tasks=5, topics=(TopicRequest("pay", 60_000),))
        )
        clock.tick()
        engine.complete_external_task(task.id, "w1", {"paid": 5})
        clock.tick()
        (todo,) = engine.user_tasks(inst.id)
        engine.complete_user_task(todo.id, {"ok": True})
        clock.tick(61)
        assert engine.fire_due_timers() == 1
        drain(engine, q)  # charge fails: no retry left, an incident opens
        (incident,) = engine.incidents(inst.id)
        flaky["fail"] = False
        clock.tick()
        engine.retry_incident(incident.id)
        drain(engine, q)
        assert engine.get_instance(inst.id).state.value == "completed"
        out: dict[str, list[dict[str, Any]]] = {}
        with engine.db.connect() as conn:
            for table in metadata.sorted_tables:
                rows = [dict(r._mapping) for r in conn.execute(select(table))]
                out[table.name] = sorted(rows, key=lambda r: repr(sorted(r.items())))
        return out
    finally:
        engine.close()


def test_postgresql_and_sqlite_write_the_same_rows(
    pg_database_url: str, tmp_path: Path, counted_ids: Callable[[], None]
) -> None:
    on_pg = scenario(pg_database_url)
    counted_ids()
    on_sqlite = scenario(f"sqlite:///{tmp_path / 'same.db'}")
    assert set(on_pg) == set(on_sqlite)
    for table in on_pg:
        assert on_pg[table] == on_sqlite[table], table
    # and the scenario really wrote something everywhere it should
    for table in ("process_instance", "token", "history", "timer", "external_task", "incident"):
        assert on_pg[table], table
