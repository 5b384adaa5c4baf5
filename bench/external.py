"""External tasks over HTTP against a PostgreSQL job queue (procrastinate), same workers.

    python -m bench.external --tasks 10000 --workers 4 --max-tasks 20

1. External: N instances of ``start -> external task -> end`` are created first (not timed).
   A real ``bpm api`` server process serves them; ``--workers`` worker processes loop
   fetch-and-lock (``maxTasks = --max-tasks``) and complete each task over HTTP. Timed from
   the first fetch to the last complete: every complete moves the token on and ends the
   instance in the engine, in one transaction.
2. Long-poll wake-up latency: a worker waits in a long poll; an instance is started; the
   time from the start call to the worker's response, ``--latency-samples`` times.
3. Baseline: procrastinate defers N no-op jobs (not timed), then ``--workers`` worker
   processes drain them (timed).

Each run creates and drops its own databases (``BENCH_PG_ADMIN_DSN``, default
``postgresql://root@127.0.0.1:5432/postgres``).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg

from bench.cpu import CpuMeter, CpuUse, backends_of, process_tree

ADMIN_DSN = os.environ.get("BENCH_PG_ADMIN_DSN", "postgresql://root@127.0.0.1:5432/postgres")
TOPIC = "bench"


def _admin(sql: str) -> None:
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(sql)


def _dsn(name: str) -> str:
    return ADMIN_DSN.rsplit("/", 1)[0] + "/" + name


@contextmanager
def database() -> Iterator[str]:
    name = f"bpm_bench_{uuid.uuid4().hex[:12]}"
    _admin(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- external tasks ----------------------------------------------------------------------


def _external_worker(
    base: str, worker_id: str, max_tasks: int, target: int, done: Any, go: Any, finished: Any
) -> None:
    go.wait()
    with httpx.Client(base_url=base, timeout=30) as http:
        while done.value < target:
            r = http.post(
                "/external-task/fetchAndLock",
                json={
                    "workerId": worker_id,
                    "maxTasks": max_tasks,
                    "asyncResponseTimeout": 500,
                    "topics": [{"topicName": TOPIC, "lockDuration": 60_000}],
                },
            )
            r.raise_for_status()
            for task in r.json():
                c = http.post(
                    f"/external-task/{task['id']}/complete",
                    json={"workerId": worker_id, "variables": {"ok": {"value": True}}},
                )
                if c.status_code != 204:
                    raise RuntimeError(f"complete answered {c.status_code}: {c.text}")
                with done.get_lock():
                    done.value += 1
                    if done.value >= target:
                        finished.value = time.perf_counter()


def _start_instances(url: str, key: str, count: int, threads: int = 4) -> None:
    from bpm import Engine

    engine = Engine(url)
    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda i: engine.start(key, {"n": i}), range(count)))
    finally:
        engine.close()


@contextmanager
def api_server(url: str, server_workers: int) -> Iterator[tuple[str, int]]:
    """A ``bpm api`` process group; yields its base URL and the supervisor's pid."""
    port = _free_port()
    env = {**os.environ, "BPM_DATABASE_URL": url, "BPM_POOL_SIZE": "10"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from bpm.cli import main; main()",
            "api",
            "--port",
            str(port),
            "--insecure-no-auth",
            "--workers",
            str(server_workers),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(os.environ.get("BENCH_API_LOG", os.devnull), "ab"),  # noqa: SIM115
        start_new_session=True,  # its own process group: the supervisor and its workers
    )
    base = f"http://127.0.0.1:{port}/engine-rest"
    try:
        deadline = time.monotonic() + 90  # a loaded machine imports slowly
        while True:
            try:
                if httpx.get(f"{base}/version", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the API server did not start")
            time.sleep(0.1)
        yield base, proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):  # the supervisor and its workers
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@contextmanager
def profiled(pid: int, path: str | None) -> Iterator[None]:
    """``py-spy record`` of ``pid`` and its server processes while the block runs (raw
    collapsed stacks in ``path``; nothing without a path). ``--gil``: only the samples of
    a thread holding the GIL, i.e. the Python CPU, not the waits."""
    if not path:
        yield
        return
    spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    args = ["record", "--pid", str(pid), "--subprocesses", "--rate", "200", "--gil"]
    proc = subprocess.Popen(
        [spy, *args, "--format", "raw", "--output", path],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # py-spy attaches
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)  # py-spy writes the file on SIGINT
        proc.wait(30)


def bench_external(
    tasks: int,
    workers: int,
    max_tasks: int,
    server_workers: int,
    latency_samples: int,
    profile: str | None = None,
) -> tuple[float, list[float], CpuUse]:
    from bpm import Engine
    from bpm.builder import Process

    with database() as name:
        url = _dsn(name).replace("postgresql://", "postgresql+psycopg://", 1)
        engine = Engine(url)
        engine.upgrade()
        engine.deploy(
            Process("bench")
            .start("s")
            .service_task("t", topic=TOPIC)
            .end("e")
            .sequence("s", "t", "e")
        )
        engine.deploy(
            Process("latency")
            .start("s")
            .service_task("t", topic="latency")
            .end("e")
            .sequence("s", "t", "e")
        )
        print(f"  creating {tasks} external tasks ...", flush=True)
        _start_instances(url, "bench", tasks)
        with api_server(url, server_workers) as (base, api_pid):
            ctx = mp.get_context("spawn")
            done = ctx.Value("i", 0)
            finished = ctx.Value("d", 0.0)
            go = ctx.Event()
            procs = [
                ctx.Process(
                    target=_external_worker,
                    args=(base, f"bench-{i}", max_tasks, tasks, done, go, finished),
                )
                for i in range(workers)
            ]
            for p in procs:
                p.start()
            time.sleep(1.0)  # let the processes import before the clock starts
            spying = profiled(api_pid, profile)
            spying.__enter__()
            meter = CpuMeter(
                {
                    "api": lambda: process_tree(api_pid),
                    "workers": lambda: [p.pid for p in procs if p.pid is not None],
                    "postgres": backends_of(ADMIN_DSN, name),
                }
            )
            meter.start()
            t0 = time.perf_counter()
            go.set()
            for p in procs:
                p.join()
            cpu = meter.stop()
            spying.__exit__(None, None, None)
            elapsed = finished.value - t0
            left = engine.count_external_tasks(topic=TOPIC)
            if done.value != tasks or left:
                raise RuntimeError(f"completed {done.value} of {tasks}; {left} left open")
            latencies = _latency(engine, base, latency_samples)
        engine.close()
    return tasks / elapsed, latencies, cpu


def _latency(engine: Any, base: str, samples: int) -> list[float]:
    out: list[float] = []
    with httpx.Client(base_url=base, timeout=30) as http:
        for i in range(samples):
            result: dict[str, float] = {}
            ready = threading.Event()

            def poll(result: dict[str, float] = result, ready: threading.Event = ready) -> None:
                ready.set()
                r = http.post(
                    "/external-task/fetchAndLock",
                    json={
                        "workerId": "latency",
                        "maxTasks": 1,
                        "asyncResponseTimeout": 10_000,
                        "topics": [{"topicName": "latency", "lockDuration": 60_000}],
                    },
                )
                result["at"] = time.perf_counter()
                for task in r.json():
                    http.post(f"/external-task/{task['id']}/complete", json={"workerId": "latency"})

            th = threading.Thread(target=poll)
            th.start()
            ready.wait()
            time.sleep(0.05)  # the poll is registered and waiting
            t0 = time.perf_counter()
            engine.start("latency", {"i": i})
            th.join()
            out.append((result["at"] - t0) * 1000)
    return out


# -- procrastinate baseline -----------------------------------------------------------------


def _procrastinate_app(dsn: str, *, asynchronous: bool = False) -> Any:
    import procrastinate

    connector: Any = (
        procrastinate.PsycopgConnector(conninfo=dsn)
        if asynchronous
        else procrastinate.SyncPsycopgConnector(conninfo=dsn)
    )
    app = procrastinate.App(connector=connector)

    @app.task(name="noop", queue="bench")
    def noop(i: int) -> None:
        return None

    return app


def _procrastinate_worker(dsn: str, go: Any) -> None:
    import asyncio

    app = _procrastinate_app(dsn, asynchronous=True)
    go.wait()

    async def run() -> None:
        async with app.open_async():
            await app.run_worker_async(
                queues=["bench"],
                wait=False,
                concurrency=1,
                install_signal_handlers=False,
                delete_jobs="never",
            )

    asyncio.run(run())


def bench_procrastinate(tasks: int, workers: int) -> tuple[float, CpuUse]:
    with database() as name:
        dsn = _dsn(name)
        app = _procrastinate_app(dsn)
        with app.open():
            app.schema_manager.apply_schema()
            task = app.tasks["noop"]
            batch = 1000
            for start in range(0, tasks, batch):
                task.batch_defer(*({"i": i} for i in range(start, min(start + batch, tasks))))
        ctx = mp.get_context("spawn")
        go = ctx.Event()
        procs = [ctx.Process(target=_procrastinate_worker, args=(dsn, go)) for _ in range(workers)]
        for p in procs:
            p.start()
        time.sleep(1.5)
        meter = CpuMeter(
            {
                "workers": lambda: [p.pid for p in procs if p.pid is not None],
                "postgres": backends_of(ADMIN_DSN, name),
            }
        )
        meter.start()
        t0 = time.perf_counter()
        go.set()
        for p in procs:
            p.join()
        elapsed = time.perf_counter() - t0
        cpu = meter.stop()
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
            ).fetchone()
        succeeded = int(row[0]) if row else 0
        if succeeded != tasks:
            raise RuntimeError(f"procrastinate ran {succeeded} of {tasks} jobs")
    return tasks / elapsed, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--max-tasks", type=int, default=20)
    parser.add_argument(
        "--server-workers",
        type=int,
        default=2,
        help="uvicorn processes of the API server (default 2)",
    )
    parser.add_argument("--latency-samples", type=int, default=100)
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help="py-spy record the API server processes during the timed run (raw stacks)",
    )
    args = parser.parse_args(argv)
    print(
        f"external tasks: {args.tasks} tasks, {args.workers} workers, "
        f"maxTasks {args.max_tasks}, {args.server_workers} API processes",
        flush=True,
    )
    rate, lat, cpu = bench_external(
        args.tasks,
        args.workers,
        args.max_tasks,
        args.server_workers,
        args.latency_samples,
        args.profile,
    )
    lat.sort()
    p50 = statistics.median(lat)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(f"external: {rate:.0f} tasks/s (fetch-and-lock + complete over HTTP)")
    print(f"  {cpu.describe(args.tasks)}")
    print(
        f"long-poll wake-up latency: p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
        f"max {lat[-1]:.1f} ms ({len(lat)} samples)"
    )
    if args.skip_baseline:
        return 0
    print(f"baseline: procrastinate, {args.tasks} no-op jobs, {args.workers} workers", flush=True)
    base, base_cpu = bench_procrastinate(args.tasks, args.workers)
    print(f"baseline: {base:.0f} jobs/s")
    print(f"  {base_cpu.describe(args.tasks, 'job')}")
    print(f"ratio external/baseline: {rate / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
