"""Soak: the order process at a steady rate while workers, the broker and the database die.

    python -m bench.soak --minutes 10
    python -m bench.soak --minutes 2 --rate 5 --workers 2

Starts a PostgreSQL cluster and a Redis broker of its own (:mod:`bench.private_services`),
``--workers`` Celery worker processes and beat, then starts ``--rate`` order instances per
second for ``--minutes``. Meanwhile: every 15-40 s (random, ``--seed``) one worker is
killed with ``kill -9`` (and a new one started), the broker is killed and restarted empty
at one third of the run and PostgreSQL is crashed (``pg_ctl stop -m immediate``) and
started again at two thirds. Then it waits (at most ``--drain`` seconds) for the
instances to end and prints: instances started, completed, stuck (not ended by then),
doubled (a step or the instance completed more than once in the trail), and the longest
recovery: from a service being back (or a worker replaced) to the next completed
instance, and the longest stall: the longest time without any completion while instances
were open. CI does not run it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func, select

from bench.order import KEY, reference_model
from bench.private_services import PrivatePostgres, PrivateRedis
from bench.reference import STEPS
from bench.support import beat_command, stop, wait_for, worker_command
from bpm import Engine
from bpm.contrib.celery import CeleryPublisher
from bpm.store import db as bpm_db
from bpm.store import history as history_store
from bpm.store import migrate
from bpm.store.tables import history, process_instance

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {
    "BPM_HANDLERS": "bench.order",
    "BPM_DEFAULT_LEASE_SECONDS": "5",
    "BPM_REDISPATCH_AFTER_SECONDS": "2",
    "BPM_BEAT_REDISPATCH_SECONDS": "1",
    "BPM_BEAT_RECLAIM_SECONDS": "1",
    "BPM_POOL_SIZE": "2",
}


@dataclass
class Report:
    started: int = 0
    start_errors: int = 0
    completed: int = 0
    stuck: int = 0
    doubled: int = 0
    recoveries: dict[str, float] = field(default_factory=dict)
    longest_stall: float = 0.0  # longest time without a completion while work was open

    def lines(self) -> list[str]:
        longest = max(self.recoveries.items(), key=lambda kv: kv[1], default=("-", 0.0))
        return [
            f"instances started   {self.started} ({self.start_errors} start calls failed "
            "and were retried with their idempotency key)",
            f"completed           {self.completed}",
            f"stuck               {self.stuck}",
            f"doubled             {self.doubled}",
            f"longest recovery    {longest[1]:.1f} s ({longest[0]})",
            f"longest stall       {self.longest_stall:.1f} s without a completion while "
            "instances were open",
            *(f"  recovery {what:<28} {secs:.1f} s" for what, secs in self.recoveries.items()),
        ]


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.pg = PrivatePostgres()
        self.broker = PrivateRedis()
        self.queue = f"bpm-soak-{uuid.uuid4().hex[:8]}"
        self.logs = self.pg.root / "logs"
        self.workers: list[subprocess.Popen[bytes]] = []
        self.beat: subprocess.Popen[bytes] | None = None
        self.report = Report()
        self.stop_starting = threading.Event()
        self.done = threading.Event()

    # -- processes --------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            **SETTINGS,
            "BPM_DATABASE_URL": self.pg.url(),
            "BPM_BROKER_URL": self.broker.url(),
            "BPM_QUEUE": self.queue,
            "PYTHONPATH": str(ROOT),
        }

    def spawn(self, command: list[str], name: str) -> subprocess.Popen[bytes]:
        with open(self.logs / f"{name}.log", "ab") as log:
            return subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def add_worker(self) -> None:
        name = f"soak{len(self.workers)}-{self.queue}"
        self.workers.append(self.spawn(worker_command("workers.app", self.queue, name), name))

    # -- the run ----------------------------------------------------------------------------
    def completed(self, engine: Engine) -> int:
        try:
            with engine.db.connect() as conn:
                return int(
                    conn.execute(
                        select(func.count()).where(process_instance.c.state == "completed")
                    ).scalar_one()
                )
        except Exception:
            return -1

    def recovery(self, engine: Engine, what: str) -> None:
        """Time from now (the service is back) to the next completed instance."""
        began = time.monotonic()
        before = -1
        while before < 0:
            before = self.completed(engine)
            time.sleep(0.1)
        wait_for(lambda: self.completed(engine) > before, 120, f"progress after {what}")
        self.report.recoveries[what] = time.monotonic() - began
        print(f"  {what}: progress again after {self.report.recoveries[what]:.1f} s", flush=True)

    def sampler(self, engine: Engine) -> None:
        """Every 0.2 s: the longest time no instance completed while some were open."""
        last_count, last_change = 0, time.monotonic()
        while not self.done.is_set():
            count = self.completed(engine)
            now = time.monotonic()
            if count > last_count or count >= self.report.started:
                last_count, last_change = max(count, last_count), now
            self.report.longest_stall = max(self.report.longest_stall, now - last_change)
            time.sleep(0.2)

    def starter(self, engine: Engine) -> None:
        interval = 1.0 / self.args.rate
        next_at = time.monotonic()
        while not self.stop_starting.is_set():
            key = uuid.uuid4().hex
            while not self.stop_starting.is_set():
                try:
                    engine.start(KEY, {"amount": 120}, idempotency_key=key)
                    self.report.started += 1
                    break
                except Exception:  # the database is down: a client would retry
                    self.report.start_errors += 1
                    time.sleep(0.5)
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))

    def run(self) -> Report:
        args = self.args
        self.logs.mkdir()
        self.pg.start()
        self.broker.start()
        self.pg.execute("CREATE DATABASE bpm")
        eng = bpm_db.connect(self.pg.url())
        migrate.upgrade(eng)
        eng.dispose()
        publisher = CeleryPublisher(self.broker.url(), queue=self.queue)
        engine = Engine(self.pg.url(), dispatcher=publisher)
        engine.deploy(reference_model())
        for _ in range(args.workers):
            self.add_worker()
        self.beat = self.spawn(beat_command("workers.app", self.logs), "beat")
        total = args.minutes * 60
        began = time.monotonic()
        starter = threading.Thread(target=self.starter, args=(engine,), daemon=True)
        starter.start()
        threading.Thread(target=self.sampler, args=(engine,), daemon=True).start()
        faults = [(total / 3, "broker restart"), (2 * total / 3, "database restart")]
        next_kill = began + self.rng.uniform(15, 40)
        kills = 0
        try:
            while (now := time.monotonic()) - began < total:
                if faults and now - began >= faults[0][0]:
                    _, what = faults.pop(0)
                    print(f"{now - began:6.1f} s  {what}", flush=True)
                    if what == "broker restart":
                        self.broker.crash()
                        self.broker.start()
                    else:
                        self.pg.crash()
                        time.sleep(2)  # the database stays away a little while
                        self.pg.start()
                    self.recovery(engine, what)
                elif now >= next_kill:
                    victim = self.rng.randrange(len(self.workers))
                    print(f"{now - began:6.1f} s  kill -9 worker {victim}", flush=True)
                    os.killpg(self.workers[victim].pid, signal.SIGKILL)
                    self.workers[victim].wait()
                    self.workers.pop(victim)
                    self.add_worker()
                    kills += 1
                    self.recovery(engine, f"worker kill {kills}")
                    next_kill = time.monotonic() + self.rng.uniform(15, 40)
                else:
                    time.sleep(0.2)
            self.stop_starting.set()
            starter.join(timeout=30)
            print(f"{time.monotonic() - began:6.1f} s  stopped starting; draining", flush=True)
            started = self.report.started
            with contextlib.suppress(TimeoutError):
                wait_for(lambda: self.completed(engine) >= started, args.drain, "the drain")
            self.done.set()
            self.audit(engine)
        finally:
            self.done.set()
            for proc in [*self.workers, *([self.beat] if self.beat else [])]:
                stop(proc)
            engine.close()
            publisher.close()
            self.broker.close()
            self.pg.close()
        return self.report

    def audit(self, engine: Engine) -> None:
        """Stuck: not ended. Doubled: a step or the instance completed twice in the trail."""
        with engine.db.connect() as conn:
            states = Counter(str(s) for (s,) in conn.execute(select(process_instance.c.state)))
            done: Counter[tuple[str, str]] = Counter()
            for r in conn.execute(select(history.c.instance_id, history.c.at, history.c.events)):
                for e in history_store.decode(r.instance_id, r.at, r.events):
                    if e.type == "token_completed" and e.node_id in STEPS:
                        done[(e.instance_id, e.node_id)] += 1
                    elif e.type == "instance_completed":
                        done[(e.instance_id, "instance")] += 1
        self.report.completed = states["completed"]
        self.report.stuck = sum(n for s, n in states.items() if s == "active")
        self.report.doubled = len({iid for (iid, _), n in done.items() if n > 1})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=5.0, help="instances started per second")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--drain", type=float, default=120.0, help="seconds to wait at the end")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    print(f"soak: {args.minutes:g} min, {args.rate:g} instances/s, {args.workers} workers")
    report = Soak(args).run()
    print("\n".join(report.lines()))
    return 0 if report.stuck == 0 and report.doubled == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
