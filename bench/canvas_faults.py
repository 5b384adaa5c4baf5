"""Chords under faults: Celery's own chord against the durable chord, in one run.

    python -m bench.canvas_faults                          # 200 chords x 20 members
    python -m bench.canvas_faults --chords 20 --members 10 --deadline 120   # a short run

The same app (``bench/canvas_app.py``), tasks and worker processes run both sides, one after
the other: ``--workers`` prefork workers (``-c 2`` each) and one beat, on a private
``redis-server`` (another port: broker and Celery's result backend; it is restarted, so the
shared Redis is never touched) and a bench database on PostgreSQL. For each side
``--chords`` chords of ``--members`` members are sent, and meanwhile a worker child is
killed with ``kill -9`` every ``--kill-every`` seconds and the Redis server is restarted once
(``kill -9`` and start, empty: what a crash without persistence does), ``--restart-after``
seconds in. Then the side gets until ``--deadline`` seconds after its start to finish.

Printed per side: chords finished and hung, members whose effect was applied (each
member's effect is applied once per request id: Celery's task id, or the durable step's
idempotency key) and member runs. Celery's side runs at Celery's default settings (early
acks): a killed child loses its member, a restarted Redis loses the chord counters. The
durable side must finish every chord with every member's effect applied exactly once.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import redis

from bench.order import _pg
from bench.private_services import PrivateRedis
from bench.support import beat_command, processes

APP = "bench.canvas_app"


def worker_cmd(name: str, children: int) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", APP, "worker", "--pool", "prefork",
        "-c", str(children), "-n", f"{name}@%h", "-l", "warning",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip


def wait_ready(names: list[str], queue: str, children: int, deadline: float) -> None:
    """Until every worker answers a ping and its pool has ``children`` processes: a kill
    before then hits a worker still starting (under load a start takes seconds; a pool
    child killed during it can take its worker down), which is not the fault measured."""
    from bench import canvas_app

    while True:
        answered: set[str] = set()
        for reply in canvas_app.app.control.ping(destination=names, timeout=1.0) or []:
            answered.update(reply)
        if answered >= set(names):
            mains = worker_mains(queue)
            if len(mains) == len(names) and all(len(children_of([m])) >= children for m in mains):
                return
        if time.monotonic() > deadline:
            raise SystemExit(f"workers not ready in time: {sorted(set(names) - answered)}")
        time.sleep(0.5)


def worker_mains(queue: str) -> list[int]:
    """The main processes of the workers of ``queue`` (not their pool children)."""
    found = [
        int(line.split()[0])
        for line in subprocess.run(
            ["pgrep", "-f", f"w[0-9]+-{queue}@"], capture_output=True, text=True
        ).stdout.split()
        if line.strip()
    ]
    return [p for p in found if p not in children_of(found)]


def children_of(pids: list[int]) -> list[int]:
    out: list[int] = []
    for pid in pids:
        found = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True
        ).stdout
        out += [int(x) for x in found.split()]
    return out


class Chaos:
    """Kills a worker child every ``every`` seconds; restarts Redis once."""

    def __init__(self, mains: list[int], rds: PrivateRedis, every: float, restart_after: float):
        self.mains, self.rds, self.every, self.restart_after = mains, rds, every, restart_after
        self.kills = 0
        self.restarts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Chaos:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        started = time.monotonic()
        rng = random.Random(13)
        while not self._stop.wait(self.every):
            kids = children_of(self.mains)
            if kids:
                try:
                    os.kill(rng.choice(kids), 9)
                    self.kills += 1
                except ProcessLookupError:
                    pass
            if not self.restarts and time.monotonic() - started >= self.restart_after:
                self.rds.crash()
                self.rds.start()
                self.restarts += 1


def side(
    name: str,
    chords: int,
    members: int,
    *,
    mains: list[int],
    rds: PrivateRedis,
    effects_url: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    from bench import canvas_app

    run = f"{name}-{uuid.uuid4().hex[:8]}"
    make = canvas_app.durable_chord if name == "durable" else canvas_app.celery_chord
    eff = redis.Redis.from_url(effects_url)
    results: list[Any] = []  # kept: a durable result could be asked, Celery's may be lost
    started = time.monotonic()
    with Chaos(mains, rds, args.kill_every, args.restart_after) as chaos:
        for _ in range(chords):
            for attempt in range(50):  # the broker may be restarting under us
                try:
                    results.append(make(members, run).apply_async())
                    break
                except Exception:
                    if attempt == 49:
                        raise
                    time.sleep(0.2)
        deadline = started + args.deadline
        while time.monotonic() < deadline:
            if eff.scard(f"bench-canvas:{run}:chords") >= chords:
                break
            time.sleep(0.5)
    # A chord finished when its body ran with every member's result (recorded by the body
    # itself: Celery's result backend was restarted, its results may be gone with it).
    finished = min(int(eff.scard(f"bench-canvas:{run}:chords")), chords)
    applied = eff.hlen(f"bench-canvas:{run}:applied")
    runs = sum(int(v) for v in eff.hvals(f"bench-canvas:{run}:runs"))
    why = ""
    if name == "durable" and finished < chords:
        # what the unfinished durable chords wait for: still running, or an incident
        from bpm import Engine

        engine = Engine(os.environ["BPM_DATABASE_URL"])
        try:
            incidents = engine.incidents(limit=10_000)
            active = len(engine.instances("active", limit=100_000))
        finally:
            engine.dispose()
        lost = sum(1 for i in incidents if "worker lost" in (i.message or ""))
        why = (
            f" (active instances {active}, incidents {len(incidents)}, {lost} of them worker lost)"
        )
    return {
        "why": why,
        "side": name,
        "chords": chords,
        "finished": finished,
        "hung": chords - finished,
        "applied": applied,
        "expected": chords * members,
        "runs": runs,
        "seconds": time.monotonic() - started,
        "kills": chaos.kills,
        "redis_restarts": chaos.restarts,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.canvas_faults",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--chords", type=int, default=200)
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--children", type=int, default=2)
    parser.add_argument("--kill-every", type=float, default=1.5)
    parser.add_argument("--restart-after", type=float, default=10.0)
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds per side")
    parser.add_argument("--lease", type=float, default=5.0, help="BPM_DEFAULT_LEASE_SECONDS")
    parser.add_argument("--only", choices=("celery", "durable"))
    parser.add_argument(
        "--pg",
        default=os.environ.get("BPM_BENCH_PG_DSN", "postgresql://root@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--effects", default="redis://127.0.0.1:6379/9")
    args = parser.parse_args(argv)

    from bpm import Engine
    from bpm.store.db import normalize_url

    dbname = f"bpm_bench_{uuid.uuid4().hex[:12]}"
    _pg(args.pg, f'CREATE DATABASE "{dbname}"')
    url = normalize_url(args.pg.rsplit("/", 1)[0] + "/" + dbname)
    rds = PrivateRedis()
    rds.start()
    queue = f"bpm-bench-{uuid.uuid4().hex[:8]}"
    env = {
        "BPM_DATABASE_URL": url,
        "BPM_BROKER_URL": rds.url(0),
        "BENCH_RESULT_BACKEND": rds.url(1),
        "BENCH_EFFECTS_REDIS": args.effects,
        "BPM_QUEUE": queue,
        "BENCH_CELERY_QUEUE": f"{queue}-celery",
        "BPM_DEFAULT_LEASE_SECONDS": str(args.lease),
        "BPM_REDISPATCH_AFTER_SECONDS": "2",
        "BPM_BEAT_REDISPATCH_SECONDS": "2",
        "BPM_BEAT_RECLAIM_SECONDS": "2",
    }
    os.environ.update(env)
    Engine(url).upgrade()
    reports = []
    try:
        with (
            processes(
                [worker_cmd(f"w{i}-{queue}", args.children) for i in range(args.workers)],
                env,
                prefix="bpm-bench-faults-",
            ) as logs,
            processes([beat_command(APP, logs)], env, prefix="bpm-bench-beat-"),
        ):
            names = [f"w{i}-{queue}@{socket.gethostname()}" for i in range(args.workers)]
            wait_ready(names, queue, args.children, deadline=time.monotonic() + 120)
            mains = worker_mains(queue)
            for name in ("celery", "durable"):
                if args.only in (None, name):
                    reports.append(
                        side(name, args.chords, args.members, mains=mains, rds=rds,
                             effects_url=args.effects, args=args)
                    )  # fmt: skip
    finally:
        rds.close()
        _pg(args.pg, f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
    load = os.getloadavg()[0]
    print(
        f"{args.chords} chords x {args.members} members, {args.workers} workers x "
        f"{args.children} children, kill -9 of a child every {args.kill_every}s, one Redis "
        f"restart after {args.restart_after}s; load average {load:.1f}"
    )
    for r in reports:
        print(
            f"{r['side']:>8}: {r['finished']}/{r['chords']} chords finished, {r['hung']} hung; "
            f"effects applied {r['applied']}/{r['expected']}, member runs {r['runs']}; "
            f"{r['kills']} kills, {r['redis_restarts']} Redis restart(s), {r['seconds']:.0f}s"
            f"{r['why']}"
        )
    durable = [r for r in reports if r["side"] == "durable"]
    ok = all(r["finished"] == r["chords"] and r["applied"] == r["expected"] for r in durable)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
