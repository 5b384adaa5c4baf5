"""Helpers shared by tests: polling with a deadline, throwaway PostgreSQL databases, and
what keeps parallel test processes (pytest-xdist workers) apart: ports and Redis numbers."""

from __future__ import annotations

import os
import random
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

DEFAULT_PG_ADMIN_DSN = "postgresql://root@127.0.0.1:5432/test"


def pg_admin_dsn() -> str:
    """Where tests create their databases (read late: testcontainers may set it)."""
    return os.environ.get("BPM_TEST_PG_DSN", DEFAULT_PG_ADMIN_DSN)


R = TypeVar("R")


def xdist_worker() -> int:
    """This pytest-xdist worker's number (``gw3`` is 3); 0 without xdist."""
    return int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)


def redis_url() -> str:
    """This worker's database on the shared Redis (``BPM_TEST_REDIS_URL`` overrides it).

    Tests also name their keys uniquely (a queue or a tag per test); a database per worker
    keeps one worker's scans and Celery's shared keys (``unacked``, bindings) apart from
    another's. 0 is left to developers; 1-15, one per worker (they wrap past 15)."""
    own = f"redis://127.0.0.1:6379/{1 + xdist_worker() % 15}"
    return os.environ.get("BPM_TEST_REDIS_URL") or own


# Ports below the kernel's ephemeral range (32768-60999 here): a port the kernel hands out
# for an outgoing connection could be one a stopped server must bind again, so tests pick
# theirs from 10000-32767, in a block of this worker's own (other worktrees' tests pick
# at random within the same blocks: a port that does not bind is skipped).
PORT_BLOCK = 2000
PORT_BASE = 10_000
PORT_BLOCKS = (32_768 - PORT_BASE) // PORT_BLOCK


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on, from this xdist worker's own block."""
    start = PORT_BASE + (xdist_worker() % PORT_BLOCKS) * PORT_BLOCK
    for _ in range(200):
        port = start + random.randrange(PORT_BLOCK)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {start}-{start + PORT_BLOCK - 1}")


def eventually(
    check: Callable[[], R],
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    what: str = "condition",
) -> R:
    """Poll ``check`` until it returns a truthy value or raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: R | None = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last={last!r}")
        time.sleep(interval)


def pg_url(dbname: str) -> str:
    base = pg_admin_dsn().rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{dbname}"


def admin_execute(sql: str) -> None:
    with psycopg.connect(pg_admin_dsn(), autocommit=True) as conn:
        conn.execute(sql)


def create_database(template: str | None = None) -> str:
    name = f"bpm_t_{uuid.uuid4().hex[:16]}"
    admin_execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    return name


def drop_database(name: str) -> None:
    admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_drops: list[threading.Thread] = []


def drop_database_later(name: str) -> None:
    """Drop ``name`` in a background thread: PostgreSQL's DROP DATABASE waits for a
    checkpoint (a quarter to half a second here, one checkpointer for every test process),
    which the next test need not wait for. :func:`finish_drops` waits for them all."""

    def drop() -> None:
        try:
            drop_database(name)
        except psycopg.Error as exc:  # the server went away: say so, fail nothing
            print(f"could not drop test database {name}: {exc}", file=sys.stderr)

    thread = threading.Thread(target=drop, name=f"drop-{name}", daemon=True)
    thread.start()
    _drops.append(thread)


def finish_drops() -> None:
    """Wait for every :func:`drop_database_later` of this process."""
    while _drops:
        _drops.pop().join()


def events_per_instance(engine: Any, type_: str) -> Counter[str]:
    """How many history events of ``type_`` each instance has (read from the store)."""
    from sqlalchemy import select

    from bpm.store import history
    from bpm.store.tables import history as h

    counts: Counter[str] = Counter()
    with engine.db.connect() as conn:
        for r in conn.execute(select(h.c.instance_id, h.c.at, h.c.events)):
            for e in history.decode(r.instance_id, r.at, r.events):
                if e.type == type_:
                    counts[r.instance_id] += 1
    return counts


def visits(engine: Any, instance_id: str) -> dict[str, list[Any]]:
    """Node -> the last state of each token that visited it, from the history (tokens that
    passed through a node within one transaction have no row, only their trail)."""
    from bpm.runtime.states import TokenState

    last: dict[str, tuple[str, TokenState]] = {}
    for e in engine.history(instance_id):
        if e.token_id and e.type.startswith("token_") and e.node_id:
            last[e.token_id] = (e.node_id, TokenState(e.type.removeprefix("token_")))
    out: dict[str, list[Any]] = {}
    for node_id, state in last.values():
        out.setdefault(node_id, []).append(state)
    return out
