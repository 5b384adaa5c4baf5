"""Does the store slow down as it grows? One step, one start and one cockpit list on a
database holding a large history, against the same on an empty database, in one run.

    python -m bench.growth                # 10,000,000 history rows, 1,000,000 instances
    python -m bench.growth --quick        # 1,000,000 and 100,000
    python -m bench.growth --history-rows 3000000 --instances 300000

Two fresh PostgreSQL databases (``BENCH_PG_ADMIN_DSN``), both migrated (the history
partitioned by month, bpm/store/partitions.py). The large one is filled in SQL
(``generate_series``): completed instances spread over the last 12 months, each with its
share of the history rows at times after its start, in the partition of their month.
Then, alternating between the two databases in blocks of ``--block`` operations:

* **start**: ``engine.start`` of ``start -> inline service task -> end`` (one transaction);
* **step**: ``engine.run_token`` of that start's Ready step (claim, handler, finish: the
  instance ends);
* **list**: the cockpit's first page of instances (``engine.cockpit.instances``, 50 rows,
  newest first, with their open incident counts).

Printed: the median milliseconds of each on each database and the ratio large/empty (the
goal: at most 1.2). The machine may be shared: compare the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from bench.external import _dsn, database
from bpm import Engine, TaskContext
from bpm.builder import Process
from bpm.handlers import HandlerRegistry
from bpm.store import partitions as parts
from bpm.store.cockpit import InstanceFilter

MONTHS = 12


class _Keep:
    """A dispatcher that keeps the Ready steps (the bench runs them itself)."""

    def __init__(self) -> None:
        self.ready: list[str] = []

    def dispatch(self, token_ids: Sequence[str]) -> None:
        self.ready.extend(token_ids)


def _engine(name: str) -> tuple[Engine, _Keep]:
    registry = HandlerRegistry()

    def noop(ctx: TaskContext) -> None:
        return None

    registry.register("noop", noop)
    keep = _Keep()
    url = _dsn(name).replace("postgresql://", "postgresql+psycopg://", 1)
    engine = Engine(url, dispatcher=keep, registry=registry)
    engine.upgrade()
    engine.deploy(
        Process("grow")
        .start("s")
        .service_task("t", handler="noop")
        .end("e")
        .sequence("s", "t", "e")
        .build()
    )
    return engine, keep


def fill(engine: Engine, instances: int, history_rows: int, now: datetime) -> float:
    """Completed instances and their history, written in SQL; returns the seconds taken."""
    t0 = time.perf_counter()
    first = parts.month_start(now)
    for _ in range(MONTHS):
        first = parts.month_start(first - timedelta(days=1))
    with engine.core.tx() as conn:
        parts.ensure(conn, first, now)
        definition = conn.execute(text("SELECT id FROM process_definition LIMIT 1")).scalar()
    span = (now - first).total_seconds() - 3600
    per = max(1, history_rows // max(1, instances))
    with engine.core.tx() as conn:
        conn.execute(
            text(
                "INSERT INTO process_instance (id, definition_id, definition_key, state,"
                " variables, created_at, updated_at, ended_at, call_depth)"
                " SELECT 'old-' || i, :d, 'grow', 'completed', '{\"n\": 1}'::jsonb,"
                " :first + make_interval(secs => i * :step),"
                " :first + make_interval(secs => i * :step + 60),"
                " :first + make_interval(secs => i * :step + 60), 0"
                " FROM generate_series(0, :n - 1) AS i"
            ),
            {"d": definition, "first": first, "step": span / instances, "n": instances},
        )
    # history in chunks: one transaction of a few million rows would hold a lot of WAL
    chunk = 1_000_000
    for lo in range(0, history_rows, chunk):
        hi = min(history_rows, lo + chunk)
        with engine.core.tx() as conn:
            conn.execute(
                text(
                    "INSERT INTO history (instance_id, at, events)"
                    " SELECT 'old-' || (j / :per), :first + make_interval(secs =>"
                    " (j / :per) * :step + (j % :per)),"
                    ' \'[{"type": "token_moved", "token": "t", "node": "n"}]\'::jsonb'
                    " FROM generate_series(:lo, :hi - 1) AS j"
                ),
                {"per": per, "first": first, "step": span / instances, "lo": lo, "hi": hi},
            )
    with engine.core.tx() as conn:
        conn.execute(text("ANALYZE"))
    return time.perf_counter() - t0


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def measure(
    sides: Sequence[tuple[Engine, _Keep]], rounds: int, block: int
) -> list[dict[str, list[float]]]:
    """Per side, the milliseconds of each start, step and list."""
    out: list[dict[str, list[float]]] = [{"start": [], "step": [], "list": []} for _ in sides]
    for _ in range(rounds):
        for side, (engine, keep) in enumerate(sides):
            got = out[side]
            for _ in range(block):
                keep.ready.clear()
                got["start"].append(_timed(lambda e=engine: e.start("grow")))  # type: ignore[misc]
                (token,) = keep.ready
                got["step"].append(_timed(lambda e=engine, t=token: e.run_token(t)))  # type: ignore[misc]
                got["list"].append(
                    _timed(lambda e=engine: e.cockpit.instances(InstanceFilter(), limit=50))  # type: ignore[misc]
                )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.growth",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--history-rows", type=int, default=10_000_000)
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="1,000,000 rows, 100,000 instances")
    args = parser.parse_args(argv)
    rows = 1_000_000 if args.quick else args.history_rows
    instances = 100_000 if args.quick else args.instances
    if rows < 0 or instances < 1 or args.rounds < 1 or args.block < 1:
        parser.error("--history-rows >= 0, --instances, --rounds and --block >= 1")
    with database() as empty_name, database() as big_name:
        empty, big = _engine(empty_name), _engine(big_name)
        try:
            now = datetime.now(UTC)
            took = fill(big[0], instances, rows, now)
            print(
                f"filled {rows:,} history rows and {instances:,} completed instances "
                f"in {took:.0f} s"
            )
            sys.stdout.flush()
            measure([empty, big], 1, 5)  # warm both: caches, prepared statements
            got = measure([empty, big], args.rounds, args.block)
            for op in ("start", "step", "list"):
                e, b = statistics.median(got[0][op]), statistics.median(got[1][op])
                print(f"{op:5s}  empty {e:7.2f} ms   large {b:7.2f} ms   ratio {b / e:.2f}")
        finally:
            empty[0].close()
            big[0].close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
