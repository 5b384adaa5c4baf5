"""What a new task costs while many long polls wait for its topic (issue 13 item 6).

    python -m bench.longpoll --polls 500 --starts 40
    python -m bench.longpoll --server-root /path/to/other/checkout   # the same, another code

A fresh database and a real ``bpm api`` (one process, with an API key). For each number of
waiting polls (0, then ``--polls``), that many clients hold a ``fetchAndLock`` long poll on
the topic of the process (``maxTasks`` 1, and poll again once answered); then ``--starts``
instances are started one after the other, each creating one task of that topic. Printed:
the start request's latency (p50, p99) and how many polls answered with a task. The ratio
of the p50s is the figure: before, each new task woke every waiting poll (4 ms with none,
1.2 s with 500); now it wakes one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.cockpit import DEFAULT_ADMIN_DSN, SECRET, database
from bench.support import wait_for
from bpm import Engine
from bpm.builder import Process

ROOT = Path(__file__).resolve().parents[1]
HEADERS = {"Authorization": f"Bearer {SECRET}"}


@contextmanager
def api_server(dsn: str, root: Path) -> Iterator[str]:
    """``bpm api`` (one process, key ``bench``) running the code under ``root``."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    env = {
        **os.environ,
        "BPM_DATABASE_URL": dsn,
        "BPM_API_KEYS": f"bench:{SECRET}",
        "PYTHONPATH": str(root),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpm", "api", "--port", str(port)],
        env=env,
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{base}/health/live", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, 30, "the API server")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def poller(
    client: httpx.AsyncClient, topic: str, i: int, got: list[int], stop: asyncio.Event
) -> None:
    body = {
        "workerId": f"p{i}",
        "maxTasks": 1,
        "asyncResponseTimeout": 60_000,
        "topics": [{"topicName": topic, "lockDuration": 600_000}],
    }
    while not stop.is_set():
        r = await client.post("/engine-rest/external-task/fetchAndLock", json=body)
        if r.status_code == 200:
            got.append(len(r.json()))
        else:
            await asyncio.sleep(0.5)


async def measure(base: str, polls: int, starts: int, settle: float) -> tuple[list[float], int]:
    """Start latencies of ``starts`` instances of process ``lp{polls}`` while ``polls``
    long polls wait for its topic; and how many tasks the polls received."""
    key = f"lp{polls}"
    limits = httpx.Limits(max_connections=polls + 20, max_keepalive_connections=polls + 20)
    async with httpx.AsyncClient(
        base_url=base, headers=HEADERS, timeout=120, limits=limits
    ) as client:
        got: list[int] = []
        stop = asyncio.Event()
        tasks = [asyncio.create_task(poller(client, key, i, got, stop)) for i in range(polls)]
        await asyncio.sleep(settle if polls else 0.1)  # every poll reaches the server
        latencies = []
        for _ in range(starts):
            t0 = time.perf_counter()
            r = await client.post(f"/engine-rest/process-definition/key/{key}/start", json={})
            latencies.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return latencies, sum(got)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--polls", type=int, default=500)
    ap.add_argument("--starts", type=int, default=40)
    ap.add_argument("--settle", type=float, default=10.0, help="seconds for polls to arrive")
    ap.add_argument("--admin-dsn", default=DEFAULT_ADMIN_DSN)
    ap.add_argument("--server-root", type=Path, default=ROOT, help="code the API server runs")
    args = ap.parse_args()
    with database(args.admin_dsn) as dsn:
        engine = Engine(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
        engine.upgrade()
        for polls in (0, args.polls):
            key = f"lp{polls}"
            engine.deploy(
                Process(key)
                .start("s")
                .service_task("t", topic=key)
                .end("e")
                .sequence("s", "t", "e")
                .build()
            )
        engine.close()
        with api_server(dsn, args.server_root) as base:
            p50s = {}
            for polls in (0, args.polls):
                lat, delivered = asyncio.run(measure(base, polls, args.starts, args.settle))
                ordered = sorted(lat)
                p50s[polls] = statistics.median(ordered)
                p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
                print(
                    f"polls={polls:4}  start p50={p50s[polls] * 1000:7.1f} ms  "
                    f"p99={p99 * 1000:7.1f} ms  tasks delivered to polls: {delivered}"
                )
            print(f"ratio p50 ({args.polls} polls / none): {p50s[args.polls] / p50s[0]:.2f}")


if __name__ == "__main__":
    main()
