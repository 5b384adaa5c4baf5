"""Message correlation throughput and latency, against user-task completion as baseline.

    python -m bench.messages --instances 2000 --runs 3
    python -m bench.messages --quick

Each run uses a fresh PostgreSQL database (``BENCH_PG_ADMIN_DSN``) and prints:

1. Python API: N instances of ``start -> receive message (correlation key) -> end`` wait
   (started first, not timed); one thread correlates one message to each
   (``engine.correlate("go", correlation_key=i)``). Baseline, same run: N instances of
   ``start -> user task -> end``, one thread completes each task
   (``engine.complete_user_task``). Both are one transaction per call that ends an instance.
   Third side, same run: ``engine.correlate_many`` of each block of 50 messages (one
   transaction per block: group commit).
2. REST: the same with ``--rest-threads`` client threads (4) against a real ``bpm api``
   server process: ``POST /message`` (messages arriving together are committed together)
   vs ``POST /task/{id}/complete``.
3. Latency: ``start -> receive message -> inline step -> end``; the time from calling
   ``engine.correlate`` to the inline handler starting, one message at a time (the Ready
   step is handed to an in-process worker thread that calls ``engine.run_token``: no
   broker in the path). p50 and p99 over ``--latency-samples``.

The two sides of each comparison run in alternating blocks of 50 calls. Figures are
ratios within one run; the machine may be shared, so compare the ratios.
"""

from __future__ import annotations

import argparse
import queue
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench.external import _dsn, api_server, database
from bpm import Engine, TaskContext
from bpm.builder import Process
from bpm.engine import Message
from bpm.handlers import HandlerRegistry

REST_THREADS = 4


def _url(name: str) -> str:
    return _dsn(name).replace("postgresql://", "postgresql+psycopg://", 1)


def _deploy(engine: Engine) -> None:
    engine.deploy(
        Process("msg")
        .start("s")
        .receive_message("wait", "go", correlation_key="key")
        .end("e")
        .sequence("s", "wait", "e")
        .build()
    )
    engine.deploy(
        Process("task").start("s").user_task("u").end("e").sequence("s", "u", "e").build()
    )


def _start(engine: Engine, key: str, offset: int, count: int) -> list[str]:
    with ThreadPoolExecutor(4) as pool:
        return list(
            pool.map(
                lambda i: engine.start(key, {"key": f"k{i}"}).id, range(offset, offset + count)
            )
        )


def _tasks(engine: Engine, ids: list[str]) -> list[str]:
    return [engine.user_tasks(instance_id=i)[0].id for i in ids]


BLOCK = 50
"""Both sides run in alternating blocks of this many calls, so that a machine whose load
changes during the run (a shared one) slows both alike."""


def _alternate(count: int, *sides: Any) -> tuple[float, ...]:
    """Run each ``side(range)`` block by block, in turn; calls/s of each."""
    spent = [0.0] * len(sides)
    for first in range(0, count, BLOCK):
        block = range(first, min(first + BLOCK, count))
        for side, fn in enumerate(sides):
            t0 = time.perf_counter()
            fn(block)
            spent[side] += time.perf_counter() - t0
    return tuple(count / s for s in spent)


def python_api(engine: Engine, count: int) -> tuple[float, float, float]:
    """(correlations/s, correlations/s by correlate_many, user-task completions/s), one
    thread each."""
    _start(engine, "msg", 0, count)
    _start(engine, "msg", 2 * count, count)
    tasks = _tasks(engine, _start(engine, "task", 0, count))

    def correlate(block: range) -> None:
        for i in block:
            engine.correlate("go", correlation_key=f"k{i}")

    def correlate_many(block: range) -> None:
        out = engine.correlate_many(
            [Message("go", correlation_key=f"k{2 * count + i}") for i in block]
        )
        assert all(isinstance(r, list) and r for r in out), out

    def complete(block: range) -> None:
        for i in block:
            engine.complete_user_task(tasks[i])

    corr, many, comp = _alternate(count, correlate, correlate_many, complete)
    return corr, many, comp


def rest(engine: Engine, url: str, count: int, threads: int) -> tuple[float, ...]:
    """(correlations/s, completions/s) over HTTP from ``threads`` client threads."""
    base_key = 1_000_000
    _start(engine, "msg", base_key, count)
    tasks = _tasks(engine, _start(engine, "task", base_key, count))
    with api_server(url, 1) as (base, _pid), httpx.Client(base_url=base, timeout=30) as http:

        def message(i: int) -> None:
            body = {"messageName": "go", "correlationKey": f"k{base_key + i}"}
            r = http.post("/message", json=body)
            assert r.status_code == 204, r.text

        def complete(task_id: str) -> None:
            r = http.post(f"/task/{task_id}/complete", json={})
            assert r.status_code == 204, r.text

        with ThreadPoolExecutor(threads) as pool:
            return _alternate(
                count,
                lambda block: list(pool.map(message, block)),
                lambda block: list(pool.map(complete, [tasks[i] for i in block])),
            )


class _Inline:
    """An in-process worker: Ready steps go to a thread that runs them."""

    def __init__(self) -> None:
        self.q: queue.Queue[str | None] = queue.Queue()
        self.engine: Engine | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def dispatch(self, token_ids: Sequence[str]) -> None:
        for t in token_ids:
            self.q.put(t)

    def _loop(self) -> None:
        while (token_id := self.q.get()) is not None:
            assert self.engine is not None
            self.engine.run_token(token_id)


def latency(url: str, samples: int) -> list[float]:
    """Seconds from ``correlate`` to the next inline handler starting, one at a time."""
    started: dict[str, float] = {}
    seen = threading.Condition()

    def handler(ctx: TaskContext) -> None:
        with seen:
            started[str(ctx.variables["key"])] = time.perf_counter()
            seen.notify_all()

    registry = HandlerRegistry()
    registry.register("after", handler)
    inline = _Inline()
    engine = Engine(url, dispatcher=inline, registry=registry)
    inline.engine = engine
    inline.thread.start()
    try:
        engine.deploy(
            Process("lat")
            .start("s")
            .receive_message("wait", "go-lat", correlation_key="key")
            .service_task("after", handler="after")
            .end("e")
            .sequence("s", "wait", "after", "e")
            .build()
        )
        _start(engine, "lat", 0, samples)
        out = []
        for i in range(samples):
            key = f"k{i}"
            t0 = time.perf_counter()
            engine.correlate("go-lat", correlation_key=key)
            with seen:
                if not seen.wait_for(lambda k=key: k in started, timeout=10):  # type: ignore[misc]
                    raise RuntimeError(f"the handler of {key} did not start")
            out.append(started[key] - t0)
        return out
    finally:
        inline.q.put(None)
        inline.thread.join(timeout=30)
        engine.close()


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.messages",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--latency-samples", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 instances, 100 samples, 1 run")
    parser.add_argument("--skip-rest", action="store_true")
    parser.add_argument("--rest-threads", type=int, default=REST_THREADS)
    args = parser.parse_args(argv)
    count = 200 if args.quick else args.instances
    samples = 100 if args.quick else args.latency_samples
    runs = 1 if args.quick else args.runs
    print(f"{count} instances per side, {samples} latency samples, {runs} run(s)")
    for run in range(1, runs + 1):
        with database() as name:
            url = _url(name)
            engine = Engine(url, dispatcher=_Inline())
            engine.upgrade()
            _deploy(engine)
            line: list[str] = [f"run {run}:"]
            corr, many, comp = python_api(engine, count)
            line.append(
                f"python correlate {corr:7.1f}/s vs complete {comp:7.1f}/s "
                f"(ratio {corr / comp:.2f})"
            )
            line.append(
                f"python correlate_many({BLOCK}) {many:7.1f}/s "
                f"({many / corr:.2f}x correlate, {many / comp:.2f}x complete)"
            )
            if not args.skip_rest:
                threads = args.rest_threads
                rc, rd = rest(engine, url, count, threads)
                line.append(
                    f"REST x{threads} /message {rc:7.1f}/s vs /task/complete {rd:7.1f}/s "
                    f"(ratio {rc / rd:.2f})"
                )
            engine.close()
            lat = latency(url, samples)
            line.append(
                f"correlate->handler p50 {statistics.median(lat) * 1000:.1f} ms "
                f"p99 {_p(lat, 0.99) * 1000:.1f} ms"
            )
            print("  ".join(line[:1]) + " " + "\n       ".join(line[1:]))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
