"""Throughput of chords: the durable chord (``bpm.canvas``) against Celery's own.

    python -m bench.canvas                                  # 100 chords x 100 members
    python -m bench.canvas --chords 10 --members 50         # a short run

Both sides use one app (``bench/canvas_app.py``): the same no-op tasks
(``chord(group(member.s(i) for i in range(members)), summarize.s())``), the same broker and
the same ``--workers`` prefork worker processes (``-c 1`` each), one side after the other.
Celery's chords run at Celery's default settings (early acks, prefetch 4) with a Redis
result backend; the durable ones through the engine installed into the same app. Each side
is warmed up with 2 chords, then timed from the first ``apply_async`` to the last result.
Printed: chords/s and members/s per side and the ratio durable/Celery (the goal: >= 1.0).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

from bench.order import _pg
from bench.support import beat_command, clean_queue, processes

APP = "bench.canvas_app"
WARMUP = 2


def worker_cmd(name: str) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", APP, "worker", "--pool", "prefork", "-c", "1",
        "-n", f"{name}@%h", "-l", "warning",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip


def timed(make: Any, chords: int, members: int, durable: bool) -> float:
    def wait(results: list[Any]) -> None:
        for r in results:
            if r.get(timeout=1800) != members:
                raise RuntimeError("a chord's body did not get every member's result")

    wait([make(members).apply_async() for _ in range(WARMUP)])
    started = time.perf_counter()
    wait([make(members).apply_async() for _ in range(chords)])
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.canvas",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--chords", type=int, default=100)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("celery", "durable"))
    parser.add_argument(
        "--pg",
        default=os.environ.get("BPM_BENCH_PG_DSN", "postgresql://root@127.0.0.1:5432/postgres"),
    )
    parser.add_argument(
        "--broker", default=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--result-backend", default="redis://127.0.0.1:6379/1")
    args = parser.parse_args(argv)

    from bpm import Engine
    from bpm.store.db import normalize_url

    dbname = f"bpm_bench_{uuid.uuid4().hex[:12]}"
    _pg(args.pg, f'CREATE DATABASE "{dbname}"')
    url = normalize_url(args.pg.rsplit("/", 1)[0] + "/" + dbname)
    queue = f"bpm-bench-{uuid.uuid4().hex[:8]}"
    env = {
        "BPM_DATABASE_URL": url,
        "BPM_BROKER_URL": args.broker,
        "BENCH_RESULT_BACKEND": args.result_backend,
        "BENCH_EFFECTS_REDIS": "",
        "BPM_QUEUE": queue,
        "BENCH_CELERY_QUEUE": f"{queue}-celery",
    }
    os.environ.update(env)
    Engine(url).upgrade()
    seconds: dict[str, float] = {}
    try:
        with (
            processes(
                [worker_cmd(f"w{i}-{queue}") for i in range(args.workers)], env, prefix="bpm-bench-"
            ) as logs,
            processes([beat_command(APP, logs)], env, prefix="bpm-bench-beat-"),
        ):
            from bench import canvas_app

            for name, make in (
                ("celery", canvas_app.celery_chord),
                ("durable", canvas_app.durable_chord),
            ):
                if args.only in (None, name):
                    seconds[name] = timed(make, args.chords, args.members, name == "durable")
    finally:
        _pg(args.pg, f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        clean_queue(args.broker, queue)
    print(
        f"{args.chords} chords x {args.members} members, {args.workers} worker processes "
        f"(prefork, -c 1 each); load average {os.getloadavg()[0]:.1f}"
    )
    for name, s in seconds.items():
        print(
            f"{name:>8}: {args.chords / s:7.2f} chords/s  {args.chords * args.members / s:8.1f} "
            f"members/s  ({s:.1f} s)"
        )
    if len(seconds) == 2:
        print(f"ratio durable/celery: {seconds['celery'] / seconds['durable']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
