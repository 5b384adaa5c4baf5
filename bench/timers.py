"""Timer lateness with Celery beat as the driver, and the cost of the due-timer poll.

    python -m bench.timers --timers 5000

1. Lateness: ``--timers`` instances each wait on a date timer; the due times are spread
   evenly over ``--spread`` seconds. A real ``celery beat`` (``BPM_BEAT_TIMER_SECONDS`` =
   ``--beat-seconds``) and ``--workers`` real workers fire them. Lateness is ``fired_at -
   fire_at`` of every timer row (``fired_at`` is the clock reading of the poll transaction
   that fired it), reported as p50 / p99 / max. Every timer must fire exactly once.
2. Poll cost: the poller's due query (``SELECT ... FOR UPDATE SKIP LOCKED LIMIT 500``, 100
   rows due) timed on the same database, first with no other pending timer, then with
   ``--pending`` (1,000,000) more pending timers due next year, each of its own active
   instance. The partial index on
   ``fire_at`` keeps the second within a small factor of the first.

The run creates and drops its own PostgreSQL database (``--admin-dsn``) and Redis queue.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from bench.support import beat_command, clean_queue, processes, wait_for, worker_command

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench_timers"
DEFAULT_ADMIN_DSN = os.environ.get("BPM_BENCH_PG_DSN", "postgresql://root@127.0.0.1:5432/postgres")
DEFAULT_BROKER = os.environ.get("BPM_BENCH_BROKER_URL", "redis://127.0.0.1:6379/12")


def _pg(admin_dsn: str, sql: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.encode())


@contextmanager
def celery(env: Mapping[str, str], workers: int, queue: str) -> Iterator[Path]:
    """``workers`` prefork workers (``-c 1``) and one beat; all stopped on exit."""
    logs = Path(tempfile.mkdtemp(prefix="bpm-bench-timers-"))
    commands = [worker_command("workers.app", queue, f"timers{i}-{queue}") for i in range(workers)]
    commands.append(beat_command("workers.app", logs))
    with processes(commands, {**env, "BPM_QUEUE": queue}, prefix="bpm-bench-timers-"):
        yield logs


@dataclass(frozen=True)
class Lateness:
    count: int
    fired_once: bool
    p50_ms: float
    p99_ms: float
    max_ms: float


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def measure_lateness(
    url: str,
    *,
    timers: int,
    spread: float,
    lead: float,
    workers: int,
    beat_seconds: float,
    broker_url: str,
) -> Lateness:
    from sqlalchemy import text

    from bpm import Engine
    from bpm.builder import Process

    queue = f"bpm-bench-timers-{uuid.uuid4().hex[:10]}"
    engine = Engine(url)
    engine.deploy(
        Process(KEY)
        .start("s")
        .wait_until("due", "due_at")
        .end("e")
        .sequence("s", "due", "e")
        .build()
    )
    env = {
        "BPM_DATABASE_URL": url,
        "BPM_BROKER_URL": broker_url,
        "BPM_BEAT_TIMER_SECONDS": str(beat_seconds),
        "BPM_POOL_SIZE": "2",
    }
    try:
        with celery(env, workers, queue):
            base = datetime.now(UTC) + timedelta(seconds=lead)
            step = spread / max(timers - 1, 1)
            started = time.monotonic()
            for i in range(timers):
                engine.start(KEY, {"due_at": (base + timedelta(seconds=i * step)).isoformat()})
            if datetime.now(UTC) > base:
                raise SystemExit(
                    f"creating {timers} instances took {time.monotonic() - started:.1f}s, "
                    f"longer than the lead of {lead}s: pass a larger --lead"
                )
            print(
                f"scheduled {timers} timers due over {spread:g}s, starting in "
                f"{(base - datetime.now(UTC)).total_seconds():.1f}s",
                flush=True,
            )

            def done() -> bool:
                with engine.db.connect() as conn:
                    n = conn.execute(
                        text("SELECT count(*) FROM timer WHERE state = 'fired'")
                    ).scalar_one()
                return int(n) >= timers

            wait_for(done, lead + spread + 120, "every timer to fire")
        with engine.db.connect() as conn:
            rows = (
                conn.execute(
                    text(
                        "SELECT EXTRACT(EPOCH FROM (fired_at - fire_at)) * 1000 FROM timer "
                        "WHERE state = 'fired'"
                    )
                )
                .scalars()
                .all()
            )
            events = conn.execute(
                text(
                    "SELECT count(*) FROM history, jsonb_array_elements(events) e"
                    " WHERE e->>'type' = 'timer_fired'"
                )
            ).scalar_one()
        late = [float(x) for x in rows]
        return Lateness(
            count=len(late),
            fired_once=int(events) == timers == len(late),
            p50_ms=_percentile(late, 0.50),
            p99_ms=_percentile(late, 0.99),
            max_ms=max(late),
        )
    finally:
        engine.close()
        clean_queue(broker_url, queue)


@dataclass(frozen=True)
class PollCost:
    empty_ms: float
    loaded_ms: float
    pending: int
    plan: str

    @property
    def ratio(self) -> float:
        return self.loaded_ms / self.empty_ms


def _time_poll(url: str, rounds: int) -> float:
    """Median milliseconds of the due query (its locks are rolled back every round)."""
    from bpm.store import db as bpm_db
    from bpm.store import timers as timer_store

    eng = bpm_db.connect(url)
    now = datetime.now(UTC)
    samples = []
    try:
        with eng.connect() as conn:
            for i in range(rounds + 20):
                tx = conn.begin()
                t0 = time.perf_counter()
                got = timer_store.claim_due(conn, now, 500)
                elapsed = (time.perf_counter() - t0) * 1000
                tx.rollback()
                assert len(got) == 100, len(got)
                if i >= 20:  # warm-up rounds
                    samples.append(elapsed)
    finally:
        eng.dispose()
    return statistics.median(samples)


def measure_poll(url: str, *, pending: int, rounds: int) -> PollCost:
    from sqlalchemy import text

    from bpm import Engine

    engine = Engine(url)
    try:
        past = datetime.now(UTC) - timedelta(minutes=1)
        for _ in range(100):  # 100 due timers, the work every poll finds
            engine.start(KEY, {"due_at": "2100-01-01T00:00:00Z"})
        with engine.db.begin() as conn:
            conn.execute(text("UPDATE timer SET fire_at = :p WHERE state = 'pending'"), {"p": past})
            conn.execute(text("ANALYZE timer"))
        empty = _time_poll(url, rounds)
        with engine.db.begin() as conn:
            # One waiting instance per further timer, as in real life (all of them active).
            definition_id = conn.execute(
                text("SELECT id FROM process_definition WHERE key = :k"), {"k": KEY}
            ).scalar_one()
            conn.execute(
                text(
                    "INSERT INTO process_instance (id, definition_id, definition_key, state, "
                    "variables, created_at, updated_at) SELECT 'bulk-' || g, :d, :k, "
                    "'active', '{}'::jsonb, now(), now() FROM generate_series(1, :n) AS g"
                ),
                {"d": definition_id, "k": KEY, "n": pending},
            )
            conn.execute(
                text(
                    "INSERT INTO timer (id, instance_id, token_id, node_id, kind, state, "
                    "fire_at, created_at) SELECT 'bulk-' || g, 'bulk-' || g, "
                    "'bulk-token-' || g, 'due', 'date', 'pending', "
                    "now() + interval '365 days' + g * interval '1 second', now() "
                    "FROM generate_series(1, :n) AS g"
                ),
                {"n": pending},
            )
        with engine.db.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE timer"))
            conn.execute(text("VACUUM ANALYZE process_instance"))
        loaded = _time_poll(url, rounds)
        with engine.db.begin() as conn:
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    text(
                        "EXPLAIN SELECT timer.id FROM timer JOIN process_instance ON "
                        "process_instance.id = timer.instance_id WHERE timer.state = 'pending' AND "
                        "timer.fire_at <= now() AND process_instance.state = 'active' "
                        "ORDER BY timer.fire_at LIMIT 500 FOR UPDATE OF timer SKIP LOCKED"
                    )
                )
            )
        return PollCost(empty_ms=empty, loaded_ms=loaded, pending=pending, plan=plan)
    finally:
        engine.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.timers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--timers", type=int, default=5000)
    parser.add_argument("--spread", type=float, default=60.0, help="seconds")
    parser.add_argument(
        "--lead",
        type=float,
        default=40.0,
        help="seconds from now to the first due time (covers creation)",
    )
    parser.add_argument(
        "--beat-seconds",
        type=float,
        default=1.0,
        help="BPM_BEAT_TIMER_SECONDS for the beat under test (the default setting: 1)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--admin-dsn", default=DEFAULT_ADMIN_DSN)
    parser.add_argument("--broker", default=DEFAULT_BROKER)
    parser.add_argument("--skip-lateness", action="store_true")
    args = parser.parse_args(argv)

    from bpm.store import db as bpm_db
    from bpm.store import migrate

    dbname = f"bpm_bench_timers_{uuid.uuid4().hex[:10]}"
    _pg(args.admin_dsn, f'CREATE DATABASE "{dbname}"')
    url = bpm_db.normalize_url(args.admin_dsn.rsplit("/", 1)[0] + "/" + dbname)
    try:
        eng = bpm_db.connect(url)
        migrate.upgrade(eng)
        eng.dispose()
        if not args.skip_lateness:
            late = measure_lateness(
                url,
                timers=args.timers,
                spread=args.spread,
                lead=args.lead,
                workers=args.workers,
                beat_seconds=args.beat_seconds,
                broker_url=args.broker,
            )
            verdict = "ok" if late.p99_ms <= 25 else "MISSED (target <= 25 ms)"
            print(
                f"lateness of {late.count} timers (beat every {args.beat_seconds:g}s, "
                f"{args.workers} workers): p50 {late.p50_ms:.0f} ms, p99 "
                f"{late.p99_ms:.0f} ms, max {late.max_ms:.0f} ms -> {verdict}; "
                f"each fired once: {late.fired_once}"
            )
        else:
            from bpm import Engine
            from bpm.builder import Process

            e = Engine(url)
            e.deploy(
                Process(KEY)
                .start("s")
                .wait_until("due", "due_at")
                .end("e")
                .sequence("s", "due", "e")
                .build()
            )
            e.close()
        poll = measure_poll(url, pending=args.pending, rounds=args.rounds)
        verdict = "ok" if poll.ratio <= 1.5 else "MISSED (target <= 1.5x)"
        print(
            f"due-timer poll (100 due, LIMIT 500): {poll.empty_ms:.2f} ms with no other "
            f"pending timer, {poll.loaded_ms:.2f} ms with {poll.pending:,} pending next "
            f"year -> {poll.ratio:.2f}x {verdict}"
        )
        print("plan:\n  " + poll.plan.replace("\n", "\n  "))
    finally:
        _pg(args.admin_dsn, f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


if __name__ == "__main__":
    main()
