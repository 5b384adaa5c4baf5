"""Throughput of the reference order process: the engine against the plain Celery canvas.

    python -m bench.order --instances 1000 --workers 2
    python -m bench.order --quick

Both runs use the same Redis broker and the same number of prefork worker processes
(``-c 1`` each). The engine run creates and drops its own PostgreSQL database and starts
and stops its own workers; its four inline handlers do nothing. Imported as a handler
module (``BPM_HANDLERS=bench.order``) this file registers those handlers.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from bench.reference import STEPS, order_model
from bench.support import clean_queue, processes, wait_for, worker_command
from bpm import TaskContext, service_task
from bpm.model.process import ProcessModel

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench_order"
WARMUP = 10


def _nothing(ctx: TaskContext) -> None:
    return None


for _step in STEPS:
    service_task(_step)(_nothing)


def reference_model() -> ProcessModel:
    """The reference order process (:mod:`bench.reference`)."""
    return order_model(KEY)


# -- processes ------------------------------------------------------------------------------


@contextmanager
def celery_workers(
    app: str, count: int, queue: str, env: Mapping[str, str], pool: str
) -> Iterator[Path]:
    """``count`` worker processes (``-c 1`` each) on ``queue``; stopped on exit, whatever."""
    commands = [worker_command(app, queue, f"bench{i}-{queue}", pool) for i in range(count)]
    with processes(commands, {**env, "BPM_QUEUE": queue}, prefix="bpm-bench-") as logs:
        yield logs


# -- the engine run -------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    name: str
    instances: int
    seconds: float
    steps: int
    commits: int | None = None
    rows: int | None = None  # rows inserted (every table), as PostgreSQL counts them

    @property
    def per_second(self) -> float:
        return self.instances / self.seconds

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds


def _pg(admin_dsn: str, sql: str, *params: Any) -> Any:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        row = cur.fetchone() if cur.description else None
        return row[0] if row else None


def _stable(read: Any) -> int:
    """A statistics counter once every backend has reported to it."""
    last, stable_since = -1, time.monotonic()
    while True:  # backends flush their counters at most every second (and at exit)
        now = int(read() or 0)
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since > 1.5:
            return now
        time.sleep(0.25)


def _commits(admin_dsn: str, dbname: str) -> int:
    """Committed transactions of ``dbname``."""
    sql = "SELECT xact_commit FROM pg_stat_database WHERE datname = %s"
    return _stable(lambda: _pg(admin_dsn, sql, dbname))


def _inserted(db_dsn: str) -> int:
    """Rows inserted into the tables of the database ``db_dsn``."""
    return _stable(lambda: _pg(db_dsn, "SELECT sum(n_tup_ins) FROM pg_stat_user_tables"))


def in_parallel(threads: int, count: int, submit: Any) -> list[Any]:
    """``submit(i)`` for i in range(count) from ``threads`` client threads (both sides get
    the same clients: one client thread alone measures its own latency, not the system)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(submit, range(count)))


def run_engine(
    instances: int,
    workers: int,
    *,
    admin_dsn: str,
    broker_url: str,
    pool: str,
    starters: int = 1,
) -> Result:
    """Start ``instances`` orders through the engine; time until the last one completed."""
    from sqlalchemy import text

    from bpm import Engine
    from bpm.store.db import normalize_url

    dbname = f"bpm_bench_{uuid.uuid4().hex[:12]}"
    queue = f"bpm-bench-{uuid.uuid4().hex[:12]}"
    _pg(admin_dsn, f'CREATE DATABASE "{dbname}"')
    url = normalize_url(admin_dsn.rsplit("/", 1)[0] + "/" + dbname)
    env = {"BPM_DATABASE_URL": url, "BPM_HANDLERS": "bench.order", "BPM_BROKER_URL": broker_url}
    os.environ.update({**env, "BPM_QUEUE": queue})
    from bpm.contrib.celery import CeleryPublisher

    engine = Engine(url, dispatcher=CeleryPublisher(broker_url, queue=queue))
    try:
        engine.upgrade()
        engine.deploy(reference_model())

        def completed() -> int:
            with engine.db.connect() as conn:
                return int(
                    conn.execute(
                        text("SELECT count(*) FROM process_instance WHERE state = 'completed'")
                    ).scalar_one()
                )

        with celery_workers("workers.app", workers, queue, env, pool):
            # Warm up (worker start, connection pools, model caches), then measure.
            for _ in range(WARMUP):
                engine.start(KEY, {"amount": 120})
            wait_for(lambda: completed() == WARMUP, 120, "the warm-up instances")
            engine.dispose()
            db_dsn = admin_dsn.rsplit("/", 1)[0] + "/" + dbname
            before, rows_before = _commits(admin_dsn, dbname), _inserted(db_dsn)
            started = time.perf_counter()
            in_parallel(
                starters, instances, lambda i: engine.start(KEY, {"amount": 120, "order": i})
            )
            wait_for(lambda: completed() == WARMUP + instances, 600, "the engine instances")
            elapsed = time.perf_counter() - started
            failed = int(
                _pg(
                    admin_dsn.rsplit("/", 1)[0] + "/" + dbname,
                    "SELECT count(*) FROM process_instance WHERE state <> 'completed'",
                )
            )
            if failed:
                raise RuntimeError(f"{failed} engine instances did not complete")
        engine.dispose()
        commits = _commits(admin_dsn, dbname) - before
        rows = _inserted(db_dsn) - rows_before
    finally:
        engine.close()
        _pg(admin_dsn, f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        clean_queue(broker_url, queue)
    return Result("engine", instances, elapsed, instances * len(STEPS), commits, rows)


def run_canvas(
    instances: int,
    workers: int,
    *,
    broker_url: str,
    backend_url: str,
    pool: str,
    starters: int = 1,
) -> Result:
    """The same orders as a Celery canvas; time until every ``ship`` result is in."""
    queue = f"bpm-bench-canvas-{uuid.uuid4().hex[:12]}"
    env = {"BPM_BROKER_URL": broker_url, "BENCH_RESULT_BACKEND": backend_url}
    os.environ.update({**env, "BPM_QUEUE": queue})
    from bench import canvas

    canvas.app.conf.task_default_queue = queue
    try:
        with celery_workers("bench.canvas", workers, queue, env, pool):
            warm = [
                canvas.order_canvas({"amount": 120}).apply_async(queue=queue) for _ in range(WARMUP)
            ]
            for r in warm:
                r.get(timeout=120)
            started = time.perf_counter()
            results = in_parallel(
                starters,
                instances,
                lambda i: canvas.order_canvas({"amount": 120, "order": i}).apply_async(queue=queue),
            )
            for r in results:
                r.get(timeout=600)
            elapsed = time.perf_counter() - started
            # Release the results (and their pub/sub subscriptions) now, not at interpreter
            # shutdown, when the Redis client can no longer unsubscribe cleanly.
    finally:
        clean_queue(broker_url, queue)
    return Result("canvas", instances, elapsed, instances * len(STEPS))


# -- command line ---------------------------------------------------------------------------


def _compare(args: argparse.Namespace, count: int, workers: int) -> None:
    results: dict[str, Result] = {}
    if args.only in (None, "engine"):
        results["engine"] = run_engine(
            count,
            workers,
            admin_dsn=args.pg,
            broker_url=args.broker,
            pool=args.pool,
            starters=args.starters,
        )
    if args.only in (None, "canvas"):
        # The canvas gets its best client count: one thread or as many as the engine's.
        tried = [
            run_canvas(
                count,
                workers,
                broker_url=args.broker,
                backend_url=args.result_backend,
                pool=args.pool,
                starters=n,
            )
            for n in sorted({1, args.starters})
        ]
        for n, r in zip(sorted({1, args.starters}), tried, strict=True):
            print(f"  canvas with {n} client thread(s): {r.per_second:.1f} instances/s")
        results["canvas"] = max(tried, key=lambda r: r.per_second)
    print(
        f"{count} instances of the reference order process, {workers} worker "
        f"processes ({args.pool}, -c 1 each), {args.starters} client threads starting "
        f"them, broker {args.broker}"
    )
    for r in results.values():
        line = (
            f"{r.name:>6}: {r.per_second:8.1f} instances/s  {r.steps_per_second:8.1f} "
            f"steps/s  ({r.seconds:.2f} s)"
        )
        if r.commits is not None:
            line += f"  {r.commits / r.instances:.2f} commits/instance"
        if r.rows is not None:
            line += f"  {r.rows / r.instances:.2f} rows/instance"
        print(line, flush=True)
    if len(results) == 2:
        ratio = results["engine"].per_second / results["canvas"].per_second
        print(f"ratio engine/canvas: {ratio:.2f}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run both benchmarks and print instances/s, the ratio, steps/s and commits/instance."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.order",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument(
        "--workers",
        default="2",
        help="worker processes per side; a list (1,2,4) runs each count in turn",
    )
    parser.add_argument(
        "--starters",
        type=int,
        default=4,
        help="client threads that start the instances (the same number on both sides)",
    )
    parser.add_argument("--quick", action="store_true", help="a small smoke run (100 instances)")
    parser.add_argument("--pool", default="prefork", help="celery worker pool (both runs)")
    parser.add_argument("--only", choices=("engine", "canvas"), help="run just one side")
    parser.add_argument(
        "--pg",
        default=os.environ.get("BPM_BENCH_PG_DSN", "postgresql://root@127.0.0.1:5432/postgres"),
        help="an admin DSN; the bench database is created and dropped beside it",
    )
    parser.add_argument(
        "--broker", default=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--result-backend", default="redis://127.0.0.1:6379/1")
    args = parser.parse_args(argv)
    count = 100 if args.quick else args.instances

    for workers in [int(w) for w in str(args.workers).split(",") if w.strip()]:
        _compare(args, count, workers)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Skip interpreter teardown: Celery's AsyncResult.__del__ would try to unsubscribe
    # from Redis after the modules it needs are gone and print a spurious traceback.
    os._exit(code)
