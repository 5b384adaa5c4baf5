"""``Engine.close()`` releases what the engine holds: the lease-keeper thread (which holds
the engine, its pool, model cache and registry) and the pooled connections (issue 18).

A test suite, a notebook or a web app's reloader creates and closes many engines in one
process: each closed engine must leave nothing behind.
"""

from __future__ import annotations

import gc
import os
import threading
import weakref
from datetime import timedelta

import psycopg
import pytest
from sqlalchemy.engine import make_url

from bpm import Engine
from bpm.builder import Process
from bpm.handlers import HandlerRegistry
from tests.engine_helpers import QueueDispatcher, forget, make_engine
from tests.support import pg_admin_dsn

ENGINES = 60


def keepers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "bpm-lease-keeper"]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def sessions(url: str) -> int:
    """Connections to the test's PostgreSQL database, other than this one."""
    dbname = make_url(url).database
    with psycopg.connect(pg_admin_dsn(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (dbname,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def one_step(registry: HandlerRegistry) -> Process:
    registry.register("h", lambda ctx: {"ran": ctx.attempt})
    return Process("one").start("s").service_task("t", handler="h").end("e").sequence("s", "t", "e")


def run_one_step(url: str) -> tuple[Engine, QueueDispatcher]:
    registry = HandlerRegistry()
    eng, q = make_engine(url, registry)
    eng.deploy(one_step(registry))  # the same content each time: the existing version
    inst = eng.start("one")
    assert eng.run_token(q.queue.popleft()) == 1
    assert eng.get_instance(inst.id).variables == {"ran": 1}
    return eng, q


def test_closed_engines_leave_no_thread_connection_or_engine_behind(database_url: str) -> None:
    before_threads = len(keepers())
    before_sessions = sessions(database_url) if database_url.startswith("postgresql") else 0
    first, _ = run_one_step(database_url)  # warm up imports, caches and the file
    first.close()
    forget(first)
    del first
    gc.collect()
    before_fds = open_fds()

    cores: list[weakref.ref[object]] = []
    for i in range(ENGINES):
        eng, q = run_one_step(database_url)
        if i == 0:  # an inline step ran: its keeper thread beats for it
            assert len(keepers()) == before_threads + 1
        cores.append(weakref.ref(eng.core))
        eng.close()
        forget(eng)
        del eng, q
    gc.collect()

    assert len(keepers()) == before_threads
    alive = sum(1 for ref in cores if ref() is not None)
    assert alive == 0, f"{alive} of {ENGINES} closed engines are still referenced"
    # A few descriptors may come and go (the pytest capture, a log file); one per
    # engine would be 60.
    assert open_fds() <= before_fds + 5
    if database_url.startswith("postgresql"):
        assert sessions(database_url) == before_sessions


def test_close_stops_a_keeper_that_beats_for_a_held_step(sqlite_database_url: str) -> None:
    eng, _ = make_engine(sqlite_database_url)
    eng.upgrade()
    before = len(keepers())
    eng.core.leases.hold([("t-1", "w", 1, timedelta(seconds=30))], since=0.0)
    thread = eng.core.leases._thread
    assert thread is not None and thread.is_alive() and len(keepers()) == before + 1
    eng.close()
    assert not thread.is_alive() and len(keepers()) == before
    eng.close()  # idempotent
    # A closed engine starts no keeper again.
    eng.core.leases.hold([("t-2", "w", 1, timedelta(seconds=30))], since=0.0)
    assert eng.core.leases._thread is None and len(keepers()) == before


@pytest.mark.parametrize("times", [1, 3])
def test_closing_an_engine_that_never_ran_a_step_is_quick_and_safe(
    sqlite_database_url: str, times: int
) -> None:
    eng, _ = make_engine(sqlite_database_url)
    eng.upgrade()
    for _ in range(times):
        eng.close()
    assert eng.core.leases._thread is None
