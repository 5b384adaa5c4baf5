"""Throughput of a parallel multi-instance activity: the engine against a Celery chord.

    python -m bench.scopes --instances 20 --items 100 --workers 2
    python -m bench.scopes --quick

One instance runs an inline no-op handler once per item, all items in parallel
(``for_each="items", parallel=True, collect="results"``), and completes when the last
one is done: its outputs collected in input order. The baseline is the same items as a
Celery ``chord(group(item.s(i) for i in items), collected.s())`` (``bench/canvas.py``)
with Celery's default settings and a Redis result backend. Both sides use the same
broker and the same number of prefork worker processes (``-c 1`` each). Printed:
instances/s and inner steps/s for both, the ratio engine/canvas, and the engine's
commits per instance. Imported as a handler module (``BPM_HANDLERS=bench.scopes``) this
file registers the handler.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Sequence

from bench.order import Result, _commits, _pg, celery_workers
from bench.support import clean_queue, wait_for
from bpm import TaskContext, service_task
from bpm.builder import Process
from bpm.model.process import ProcessModel

KEY = "bench_scopes"
HANDLER = "bench-item"
WARMUP = 3


@service_task(HANDLER)
def _nothing(ctx: TaskContext) -> None:
    return None


def batch_model() -> ProcessModel:
    """start -> each (the handler once per item, in parallel, outputs collected) -> end."""
    return (
        Process(KEY)
        .start("start")
        .service_task("each", handler=HANDLER, for_each="items", as_="item", collect="results")
        .end("end")
        .sequence("start", "each", "end")
        .build()
    )


def run_engine(
    instances: int, items: int, workers: int, *, admin_dsn: str, broker_url: str, pool: str
) -> Result:
    """Start ``instances`` batches through the engine; time until the last one completed."""
    from sqlalchemy import text

    from bpm import Engine
    from bpm.contrib.celery import CeleryPublisher
    from bpm.store.db import normalize_url

    dbname = f"bpm_bench_{uuid.uuid4().hex[:12]}"
    queue = f"bpm-bench-{uuid.uuid4().hex[:12]}"
    _pg(admin_dsn, f'CREATE DATABASE "{dbname}"')
    url = normalize_url(admin_dsn.rsplit("/", 1)[0] + "/" + dbname)
    env = {"BPM_DATABASE_URL": url, "BPM_HANDLERS": "bench.scopes", "BPM_BROKER_URL": broker_url}
    os.environ.update({**env, "BPM_QUEUE": queue})
    engine = Engine(url, dispatcher=CeleryPublisher(broker_url, queue=queue))
    values = list(range(items))
    try:
        engine.upgrade()
        engine.deploy(batch_model())

        def completed() -> int:
            with engine.db.connect() as conn:
                return int(
                    conn.execute(
                        text("SELECT count(*) FROM process_instance WHERE state = 'completed'")
                    ).scalar_one()
                )

        with celery_workers("workers.app", workers, queue, env, pool):
            for _ in range(WARMUP):
                engine.start(KEY, {"items": values})
            wait_for(lambda: completed() == WARMUP, 300, "the warm-up instances")
            engine.dispose()
            before = _commits(admin_dsn, dbname)
            started = time.perf_counter()
            for _ in range(instances):
                engine.start(KEY, {"items": values})
            wait_for(lambda: completed() == WARMUP + instances, 900, "the engine instances")
            elapsed = time.perf_counter() - started
            with engine.db.connect() as conn:
                wrong = conn.execute(
                    text(
                        "SELECT count(*) FROM process_instance WHERE state <> 'completed' "
                        "OR jsonb_array_length(variables->'results') <> :n"
                    ),
                    {"n": items},
                ).scalar_one()
            if wrong:
                raise RuntimeError(
                    f"{wrong} engine instances did not complete with {items} results"
                )
        engine.dispose()
        commits = _commits(admin_dsn, dbname) - before
    finally:
        engine.close()
        _pg(admin_dsn, f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        clean_queue(broker_url, queue)
    return Result("engine", instances, elapsed, instances * items, commits)


def run_canvas(
    instances: int, items: int, workers: int, *, broker_url: str, backend_url: str, pool: str
) -> Result:
    """The same items as Celery chords; time until every callback's result is in."""
    queue = f"bpm-bench-canvas-{uuid.uuid4().hex[:12]}"
    env = {"BPM_BROKER_URL": broker_url, "BENCH_RESULT_BACKEND": backend_url}
    os.environ.update({**env, "BPM_QUEUE": queue})
    from bench import canvas

    canvas.app.conf.task_default_queue = queue
    values = list(range(items))
    try:
        with celery_workers("bench.canvas", workers, queue, env, pool):
            warm = [canvas.batch_canvas(values).apply_async(queue=queue) for _ in range(WARMUP)]
            for r in warm:
                r.get(timeout=300)
            started = time.perf_counter()
            results = [
                canvas.batch_canvas(values).apply_async(queue=queue) for _ in range(instances)
            ]
            for r in results:
                if r.get(timeout=900) != items:
                    raise RuntimeError("a chord callback did not get every result")
            elapsed = time.perf_counter() - started
    finally:
        clean_queue(broker_url, queue)
    return Result("canvas", instances, elapsed, instances * items)


def main(argv: Sequence[str] | None = None) -> int:
    """Run both sides and print instances/s, inner steps/s, the ratio, commits/instance."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.scopes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a small smoke run (5 instances)")
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
    count = 5 if args.quick else args.instances

    results: dict[str, Result] = {}
    if args.only in (None, "engine"):
        results["engine"] = run_engine(
            count, args.items, args.workers, admin_dsn=args.pg, broker_url=args.broker,
            pool=args.pool,
        )  # fmt: skip
    if args.only in (None, "canvas"):
        results["canvas"] = run_canvas(
            count,
            args.items,
            args.workers,
            broker_url=args.broker,
            backend_url=args.result_backend,
            pool=args.pool,
        )
    print(
        f"{count} instances x {args.items} items (parallel multi-instance), {args.workers} "
        f"worker processes ({args.pool}, -c 1 each), broker {args.broker}"
    )
    for r in results.values():
        line = (
            f"{r.name:>6}: {r.per_second:8.2f} instances/s  {r.steps_per_second:8.1f} "
            f"inner steps/s  ({r.seconds:.2f} s)"
        )
        if r.commits is not None:
            line += f"  {r.commits / r.instances:.1f} commits/instance"
        print(line)
    if len(results) == 2:
        ratio = results["engine"].per_second / results["canvas"].per_second
        print(f"ratio engine/canvas: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip Celery's AsyncResult teardown noise (see bench.order)
