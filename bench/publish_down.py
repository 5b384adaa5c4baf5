"""What a broker that is down costs a start: the shared (background) publisher against the
synchronous one and against no broker at all, in one run.

    python -m bench.publish_down --starts 50

Each mode starts ``--starts`` instances of a one-step process (one commit and one publish
each) in a fresh process-wide engine on its own PostgreSQL database; the broker URL points
at a port nobody listens on (refused at once; ``--blackhole HOST:PORT`` for a host that
drops packets instead, where each connect waits for the connect timeout). Printed: the
mean and the slowest start in ms per mode, and each mode's mean as a ratio of the
no-broker baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time
import uuid
from typing import Any

import psycopg

from bpm import Engine, EngineConfig
from bpm.builder import Process
from bpm.contrib.celery import CeleryPublisher
from bpm.dispatch import Dispatcher, NullDispatcher

DEFAULT_PG = os.environ.get("BPM_BENCH_PG_DSN", "postgresql://root@127.0.0.1:5432/postgres")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(url: str, dispatcher: Dispatcher, starts: int) -> list[float]:
    engine = Engine(url, dispatcher=dispatcher, config=EngineConfig())
    key = f"pub_{uuid.uuid4().hex[:8]}"
    engine.deploy(
        Process(key)
        .start("s")
        .service_task("t", handler="bench-nothing")
        .end("e")
        .sequence("s", "t", "e")
        .build()
    )
    for _ in range(3):  # warm-up: imports, first connections
        engine.start(key)
    took = []
    for _ in range(starts):
        began = time.perf_counter()
        engine.start(key)
        took.append((time.perf_counter() - began) * 1000)
        # Past the publisher's pause after a failure: every start meets the outage anew.
        time.sleep(0.01)
    engine.close()
    return took


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--pg", default=DEFAULT_PG, help="an admin DSN to create databases")
    parser.add_argument("--blackhole", help="HOST:PORT of a broker that drops packets")
    parser.add_argument("--refused", action="store_true", help="a port nobody listens on")
    args = parser.parse_args(argv)
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(0)  # never accepted, never answered
    if args.blackhole:
        where = args.blackhole
    elif args.refused:
        where = f"127.0.0.1:{_closed_port()}"
    else:
        where = f"127.0.0.1:{hung.getsockname()[1]}"
    broker = f"redis://{where}/0"
    base = args.pg.rsplit("/", 1)[0]
    results: dict[str, list[float]] = {}
    modes: dict[str, Any] = {
        "no broker": lambda: NullDispatcher(),
        # retry_after=0: every publish tries the broker again, the worst case for a caller
        "synchronous": lambda: CeleryPublisher(broker, queue="q", retry_after=0),
        "background": lambda: CeleryPublisher(broker, queue="q", retry_after=0, background=True),
    }
    for name, make in modes.items():
        dbname = f"bpm_bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(args.pg, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{dbname}"')
        try:
            url = f"{base}/{dbname}"
            Engine(url, dispatcher=NullDispatcher()).upgrade()
            dispatcher = make()
            results[name] = _run(url, dispatcher, args.starts)
            if isinstance(dispatcher, CeleryPublisher):
                dispatcher.close()
        finally:
            with psycopg.connect(args.pg, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
    baseline = statistics.mean(results["no broker"])
    print(f"broker {broker}, {args.starts} starts per mode")
    for name, took in results.items():
        mean = statistics.mean(took)
        print(
            f"{name:12s} mean {mean:7.2f} ms  median {statistics.median(took):7.2f} ms  "
            f"slowest {max(took):8.2f} ms  ratio to no broker {mean / baseline:5.2f}"
        )
    hung.close()


if __name__ == "__main__":
    main()
