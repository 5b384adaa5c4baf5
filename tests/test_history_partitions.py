"""History partitioned by month on PostgreSQL (migration 0013, bpm/store/partitions.py):
the migration keeps existing rows, rows land in their month, retention drops a whole
partition only when nothing it keeps has rows there, and SQLite stays one table."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import text

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.errors import NotFound
from bpm.store import migrate
from bpm.store import partitions as parts
from tests.support import create_database, drop_database_later, pg_url


def Y(month: int, day: int) -> datetime:
    return datetime(2030, month, day, 9, tzinfo=UTC)


def task_process() -> Any:
    return Process("h").start("s").user_task("u").end("e").sequence("s", "u", "e").build()


def _where(engine: Engine) -> dict[str, int]:
    """How many history rows each partition holds."""
    with engine.db.connect() as conn:
        rows = conn.execute(
            text("SELECT tableoid::regclass::text AS p, count(*) FROM history GROUP BY 1")
        ).all()
    return {r[0]: int(r[1]) for r in rows}


def _names(engine: Engine) -> list[str]:
    with engine.db.connect() as conn:
        return [p.name for p in parts.partitions(conn)]


def _run(engine: Engine, started: datetime, ended: datetime | None) -> str:
    inst = engine.start("h", now=started)
    if ended is not None:
        (task,) = engine.user_tasks(instance_id=inst.id)
        engine.complete_user_task(task.id, now=ended)
    return inst.id


@pytest.fixture
def pg_engine(pg_database_url: str) -> Iterator[Engine]:
    engine = Engine(pg_database_url)
    engine.deploy(task_process())
    yield engine
    engine.close()


def test_a_new_database_has_this_month_and_the_next_two(pg_engine: Engine) -> None:
    with pg_engine.db.connect() as conn:
        now = conn.execute(text("SELECT now()")).scalar()
        assert parts.partitioned(conn)
    assert isinstance(now, datetime)
    first = parts.month_start(now)
    second = parts.next_month(first)
    third = parts.next_month(second)
    assert _names(pg_engine) == [
        parts.month_name(first),
        parts.month_name(second),
        parts.month_name(third),
        parts.DEFAULT,
    ]
    inst = pg_engine.start("h")  # the database's clock: this month
    assert _where(pg_engine) == {parts.month_name(first): 1}
    assert len(pg_engine.history(inst.id)) >= 1


def test_retention_drops_a_whole_month_and_keeps_one_a_live_instance_is_in(
    pg_engine: Engine,
) -> None:
    with pg_engine.core.tx() as conn:
        made = parts.ensure(conn, Y(1, 1), Y(3, 1))
    assert made == ["history_p2030_01", "history_p2030_02", "history_p2030_03"]
    january = [_run(pg_engine, Y(1, 5), Y(1, 6)), _run(pg_engine, Y(1, 5), Y(1, 6))]
    across = _run(pg_engine, Y(1, 7), Y(2, 20))  # rows in January and February
    february = _run(pg_engine, Y(2, 3), Y(2, 4))
    live = _run(pg_engine, Y(2, 10), None)  # still waiting: February is kept for it
    live_trail = pg_engine.history(live)
    assert _where(pg_engine) == {"history_p2030_01": 5, "history_p2030_02": 4}

    purged = pg_engine.purge_history(timedelta(days=20), now=Y(3, 25))  # cutoff: March 5

    assert purged == 4
    names = _names(pg_engine)
    assert "history_p2030_01" not in names
    assert {"history_p2030_02", "history_p2030_03"} <= set(names)
    # February's ended instances went row by row; the live one kept everything
    assert _where(pg_engine) == {"history_p2030_02": 1}
    assert pg_engine.history(live) == live_trail
    assert pg_engine.get_instance(live).state is InstanceState.ACTIVE
    for gone in (*january, across, february):
        with pytest.raises(NotFound):
            pg_engine.get_instance(gone)
    # the months ahead of the purge's clock were made
    assert {"history_p2030_04", "history_p2030_05"} <= set(_names(pg_engine))


def test_rows_of_a_month_without_partition_stay_in_the_default_one(pg_engine: Engine) -> None:
    inst = _run(pg_engine, Y(6, 1), None)
    assert _where(pg_engine) == {parts.DEFAULT: 1}
    with pg_engine.core.tx() as conn:
        made = parts.ensure(conn, Y(5, 1), Y(7, 1))
    assert made == ["history_p2030_05", "history_p2030_07"]  # June's rows are in default
    assert _where(pg_engine) == {parts.DEFAULT: 1}
    # retention never drops the default partition: its rows go instance by instance
    (task,) = pg_engine.user_tasks(instance_id=inst)
    pg_engine.complete_user_task(task.id, now=Y(6, 2))
    assert pg_engine.purge_history(timedelta(days=1), now=Y(9, 1)) == 1
    assert parts.DEFAULT in _names(pg_engine)
    assert _where(pg_engine) == {}


def test_bad_partition_requests_are_refused_and_change_nothing(pg_engine: Engine) -> None:
    before = _names(pg_engine)
    with pg_engine.core.tx() as conn, pytest.raises(ValueError, match="is before the first"):
        parts.ensure(conn, Y(3, 1), Y(1, 1))
    for name in ("history", parts.DEFAULT, "process_instance", 'history_p2030_01"; --'):
        with pg_engine.core.tx() as conn, pytest.raises(ValueError, match="may be dropped"):
            parts.drop(conn, name)
    assert _names(pg_engine) == before
    with pytest.raises(ValueError, match="positive"):
        pg_engine.purge_history(timedelta(0))
    assert _names(pg_engine) == before


def test_the_migration_keeps_the_rows_a_database_had_and_goes_back() -> None:
    name = create_database()
    engine = Engine(pg_url(name))
    cfg = migrate._config()
    try:
        # The rows are written by today's engine (it needs today's columns), then the
        # database goes back to 0012, before partitioning, with them in its plain table.
        migrate.upgrade(engine.db)
        engine.deploy(task_process())
        old = _run(engine, Y(1, 5), Y(1, 6))
        trail = engine.history(old)
        with engine.db.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0012")
        with engine.db.connect() as conn:
            assert not parts.partitioned(conn)

        migrate.upgrade(engine.db)

        assert engine.history(old) == trail
        assert _where(engine) == {"history_before_2030_02": 2}
        assert _names(engine)[0] == "history_before_2030_02"
        new = _run(engine, Y(3, 2), None)
        new_trail = engine.history(new)
        assert new_trail[0].seq == 1
        with engine.db.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0012")
        with engine.db.connect() as conn:
            assert not parts.partitioned(conn)
        migrate.upgrade(engine.db)  # today's engine reads today's columns
        assert engine.history(old) == trail and engine.history(new) == new_trail
    finally:
        engine.close()
        drop_database_later(name)


def test_sqlite_keeps_one_history_table(sqlite_database_url: str) -> None:
    engine = Engine(sqlite_database_url)
    try:
        engine.upgrade()
        engine.deploy(task_process())
        done = _run(engine, Y(1, 5), Y(1, 6))
        with engine.db.connect() as conn:
            assert not parts.partitioned(conn)
            assert parts.partitions(conn) == []
        with engine.core.tx() as conn:
            assert parts.ensure(conn, Y(1, 1), Y(3, 1)) == []
        assert engine.purge_history(timedelta(days=1), now=Y(3, 1)) == 1
        with pytest.raises(NotFound):
            engine.get_instance(done)
    finally:
        engine.close()
