"""Process instance migration: how fast instances move, and what a dry run costs.

    python -m bench.migrate --instances 2000 --chunk 500

``--instances`` instances of version 1 wait, each on a user task, a timer (intermediate
catch, one hour) and an external task with a boundary timer, between a parallel fork and
join (four tokens, three timers, a user and an external task per instance). Version 2
changes the timer, renames nothing and adds a boundary message event to the external task
(armed by the migration). The plan is generated with ``updateEventTriggers`` (every timer
planned again). Then, in this process, on PostgreSQL:

1. the dry run of ``--sample`` instances (each in its own transaction, rolled back):
   milliseconds per instance;
2. the synchronous migration of every instance, ``--chunk`` instances per call (one
   transaction each): instances/s.

Printed with each: wall time, and CPU milliseconds per instance of this process and of the
PostgreSQL backends (``bench/cpu.py``), and the load average: on a shared machine the CPU
figures move far less than the wall-clock ones. Every instance is checked to be on version
2 with its timers re-planned and the new boundary message armed.

The run creates and drops its own PostgreSQL database (``--admin-dsn``).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy import func, select

from bench.cpu import CpuMeter, backends_of
from bpm import Engine
from bpm.builder import Process
from bpm.store import tables as t

DEFAULT_ADMIN_DSN = os.environ.get(
    "BPM_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
)
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def model(*, version: int) -> Any:
    p = (
        Process("bench_migrate")
        .start("s")
        .parallel("fork")
        .user_task("review")
        .timer("wait", duration="PT1H" if version == 1 else "PT2H")
        .service_task("charge", topic="bench-pay")
        .boundary_timer("late", "charge", duration="PT4H")
        .end("too_late")
        .parallel("join")
        .end("e")
        .sequence("s", "fork")
        .sequence("fork", "review", "join")
        .sequence("fork", "wait", "join")
        .sequence("fork", "charge", "join")
        .sequence("late", "too_late")
        .sequence("join", "e")
    )
    if version == 2:
        p = p.boundary_message("nudge", "charge", "nudge").end("nudged").sequence("nudge", "nudged")
    return p


def _measure(admin_dsn: str, database: str) -> CpuMeter:
    me = os.getpid()
    meter = CpuMeter({"bench": lambda: [me], "postgres": backends_of(admin_dsn, database)})
    meter.start()
    return meter


def run(instances: int, chunk: int, sample: int, admin_dsn: str) -> None:
    name = f"bench_migrate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    base = admin_dsn.rsplit("/", 1)[0]
    url = f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"
    engine = Engine(url)
    try:
        engine.upgrade()
        v1 = engine.deploy(model(version=1))
        started = time.perf_counter()
        ids = [engine.start("bench_migrate", now=T0).id for _ in range(instances)]
        print(f"{instances} instances started in {time.perf_counter() - started:.1f} s")
        v2 = engine.deploy(model(version=2))
        plan = engine.migration.generate(v1.id, v2.id, update_event_triggers=True)
        at = T0 + timedelta(minutes=5)

        meter = _measure(admin_dsn, name)
        began = time.perf_counter()
        report, tried = engine.migration.dry_run(plan, ids[:sample], now=at)
        wall = time.perf_counter() - began
        use = meter.stop()
        assert report.ok and all(r.can_migrate for r in tried), tried[:1]
        print(
            f"dry run: {sample} instances in {wall:.2f} s = {wall * 1000 / sample:.1f} ms per "
            f"instance; {use.describe(sample, 'instance')}; load {os.getloadavg()[0]:.1f}"
        )

        meter = _measure(admin_dsn, name)
        began = time.perf_counter()
        for i in range(0, instances, chunk):
            engine.migration.execute(plan, ids[i : i + chunk], by="bench", now=at)
        wall = time.perf_counter() - began
        use = meter.stop()
        print(
            f"migration: {instances} instances, {chunk} per call, in {wall:.2f} s = "
            f"{instances / wall:.0f} instances/s; {use.describe(instances, 'instance')}; "
            f"load {os.getloadavg()[0]:.1f}"
        )
        _check(engine, v2.id, instances, at)
    finally:
        engine.close()
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def _check(engine: Engine, target: str, instances: int, at: datetime) -> None:
    pi, tm, es = t.process_instance, t.timer, t.event_subscription
    with engine.db.connect() as conn:
        moved = conn.execute(
            select(func.count()).select_from(pi).where(pi.c.definition_id == target)
        ).scalar_one()
        waits = conn.execute(
            select(func.count())
            .select_from(tm)
            .where(tm.c.state == "pending", tm.c.node_id == "wait")
            .where(tm.c.fire_at == at + timedelta(hours=2))
        ).scalar_one()
        nudges = conn.execute(
            select(func.count())
            .select_from(es)
            .where(es.c.state == "open", es.c.node_id == "nudge")
        ).scalar_one()
    assert (moved, waits, nudges) == (instances, instances, instances), (moved, waits, nudges)
    print(f"checked: {moved} on version 2, {waits} timers re-planned, {nudges} new waits armed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=500, help="instances per execute call")
    parser.add_argument("--sample", type=int, default=200, help="instances of the dry run")
    parser.add_argument("--admin-dsn", default=DEFAULT_ADMIN_DSN)
    args = parser.parse_args()
    run(args.instances, min(args.chunk, 1000), min(args.sample, args.instances), args.admin_dsn)


if __name__ == "__main__":
    main()
