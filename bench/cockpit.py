"""Is the cockpit responsive on a big database? Fill one, time every page and endpoint.

    python -m bench.cockpit                       # 100,000 instances, 1,000,000 events
    python -m bench.cockpit --instances 20000 --events 200000 --no-browser

1. A fresh PostgreSQL database (``--admin-dsn``) is migrated, three processes are deployed
   and a few instances run through the engine; then the filler below adds ``--instances``
   instances (60 % completed, 25 % active, 5 % each suspended, terminated, failed) with
   their tokens, 2.5 % with an open incident, pending timers (some due within the minute),
   external tasks (ready and locked), open user tasks and ``--events`` history events.
   The filler writes rows with ``generate_series`` straight into the tables: it is the
   only SQL outside ``bpm/store``, and it lives here on purpose (it will follow the store's
   format when that changes).
2. Each cockpit read is timed in this process through ``engine.cockpit`` with every SQL
   statement captured; the slowest statement is shown with ``EXPLAIN (ANALYZE, BUFFERS)``.
3. A real ``bpm api`` serves the cockpit; every ``/api`` endpoint is timed over HTTP
   (median and max of ``--repeat`` calls after a warm-up), and with Chromium (unless
   ``--no-browser``) every page is timed from navigation until its content is drawn.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy import event

from bpm import Engine
from bpm.builder import Process
from bpm.engine.cockpit import InstanceFilter
from bpm.runtime.states import InstanceState

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ADMIN_DSN = os.environ.get("BPM_BENCH_PG_DSN", "postgresql://root@127.0.0.1:5432/postgres")
CHROMIUM = os.environ.get("BPM_CHROMIUM", "/usr/bin/chromium")
SECRET = "bench-operator-secret"

FILL_SQL = """
INSERT INTO process_instance (id, definition_id, definition_key, business_key, state,
    variables, idempotency_key, created_at, updated_at, ended_at)
SELECT 'bench-' || i, d.ids[1 + i % cardinality(d.ids)], d.keys[1 + i % cardinality(d.ids)],
       'bk-' || i,
       CASE WHEN i % 20 < 12 THEN 'completed' WHEN i % 20 < 17 THEN 'active'
            WHEN i % 20 = 17 THEN 'suspended' WHEN i % 20 = 18 THEN 'terminated'
            ELSE 'failed' END,
       jsonb_build_object('amount', i % 1000, 'customer', 'c-' || (i % 5000)),
       NULL,
       now() - make_interval(secs => (%(n)s - i) * 30),
       now() - make_interval(secs => (%(n)s - i) * 30 - 5),
       CASE WHEN i % 20 < 12 OR i % 20 >= 18
            THEN now() - make_interval(secs => (%(n)s - i) * 30 - 5) END
FROM generate_series(1, %(n)s) AS i,
     (SELECT array_agg(id ORDER BY id) AS ids, array_agg(key ORDER BY id) AS keys
      FROM process_definition) AS d;

-- one token per instance: completed instances' tokens ended, live ones wait somewhere
INSERT INTO token (id, instance_id, node_id, state, blocked_kind, blocked_id, attempt,
    created_at, updated_at, error)
SELECT 'tok-' || substr(p.id, 7), p.id,
       CASE WHEN p.state = 'active' AND (substr(p.id, 7)::int % 40) = 13 THEN 'charge'
            WHEN p.state IN ('active', 'suspended') THEN 'approve' ELSE 'end' END,
       CASE WHEN p.state = 'active' AND (substr(p.id, 7)::int % 40) = 13 THEN 'failed'
            WHEN p.state IN ('active', 'suspended') THEN 'waiting'
            WHEN p.state = 'completed' THEN 'completed' ELSE 'terminated' END,
       CASE WHEN p.state IN ('active', 'suspended')
                 AND (substr(p.id, 7)::int % 40) <> 13 THEN 'user_task' END,
       NULL, 1, p.created_at, p.updated_at,
       CASE WHEN p.state = 'active' AND (substr(p.id, 7)::int % 40) = 13
            THEN 'RuntimeError: card declined' END
FROM process_instance p WHERE p.id LIKE 'bench-%%';

INSERT INTO incident (id, instance_id, token_id, node_id, type, state, message,
    created_at)
SELECT 'inc-' || substr(t.instance_id, 7), t.instance_id, t.id, 'charge', 'failedJob', 'open',
       'RuntimeError: card declined', t.updated_at
FROM token t WHERE t.state = 'failed' AND t.id LIKE 'tok-%%';

INSERT INTO user_task (id, instance_id, token_id, node_id, name, state, candidate_groups,
    created_at)
SELECT 'ut-' || substr(t.instance_id, 7), t.instance_id, t.id, 'approve', 'Approve', 'open',
       '[]'::jsonb, t.updated_at
FROM token t WHERE t.blocked_kind = 'user_task' AND t.id LIKE 'tok-%%';

-- a boundary timeout on every tenth waiting user task; 1 in 100 due within the minute
INSERT INTO timer (id, instance_id, token_id, node_id, kind, state, fire_at, created_at)
SELECT 'tm-' || substr(t.instance_id, 7), t.instance_id, t.id, 'approve_timeout', 'timeout',
       'pending',
       CASE WHEN substr(t.instance_id, 7)::int % 1000 = 7 THEN now() + interval '30 seconds'
            ELSE now() + make_interval(hours => 1 + substr(t.instance_id, 7)::int % 48) END,
       t.updated_at
FROM token t WHERE t.blocked_kind = 'user_task' AND substr(t.instance_id, 7)::int % 10 = 3;

INSERT INTO external_task (id, instance_id, token_id, definition_id, definition_key,
    business_key, node_id, topic, state, priority, lock_owner, lock_expires_at, retries,
    attempt, properties, created_at, updated_at)
SELECT 'et-' || substr(p.id, 7), p.id, 'tok-' || substr(p.id, 7), p.definition_id,
       p.definition_key, p.business_key, 'ship', 'shipping-' || (substr(p.id, 7)::int % 5),
       CASE WHEN substr(p.id, 7)::int % 3 = 0 THEN 'locked' ELSE 'ready' END, 0,
       CASE WHEN substr(p.id, 7)::int % 3 = 0 THEN 'ext-worker-' || (substr(p.id, 7)::int % 7) END,
       CASE WHEN substr(p.id, 7)::int % 3 = 0
            THEN now() + make_interval(secs => (substr(p.id, 7)::int % 600) - 60) END,
       3, 1, '{}'::jsonb, p.created_at, p.updated_at
FROM process_instance p
WHERE p.id LIKE 'bench-%%' AND p.state = 'active' AND substr(p.id, 7)::int % 5 = 1;

INSERT INTO history (instance_id, at, events)  -- one row per transaction: four events each
SELECT 'bench-' || (1 + (r - 1) %% %(n)s), now() - make_interval(secs => r %% 100000),
       jsonb_build_array(
           jsonb_build_object('type', 'token_created', 'token', 'tok-' || (1 + (r - 1) %% %(n)s),
                              'node', 'approve', 'to', 'ready'),
           jsonb_build_object('type', 'token_ready', 'token', 'tok-' || (1 + (r - 1) %% %(n)s),
                              'node', 'approve', 'from', 'ready', 'to', 'executing'),
           jsonb_build_object('type', 'token_executing', 'token', 'tok-' || (1 + (r - 1) %% %(n)s),
                              'node', 'approve', 'data', jsonb_build_object('attempt', 1)),
           jsonb_build_object('type', 'variables_updated', 'node', 'approve'))
FROM generate_series(1, GREATEST(1, %(events)s / 4)) AS r;
"""


def _pg(admin_dsn: str, sql: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.encode())


@contextmanager
def database(admin_dsn: str) -> Iterator[str]:
    name = f"bpm_bench_cockpit_{uuid.uuid4().hex[:8]}"
    _pg(admin_dsn, f'CREATE DATABASE "{name}"')
    base = admin_dsn.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        _pg(admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fill(dsn: str, instances: int, events: int) -> float:
    engine = Engine(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
    engine.upgrade()
    for key in ("order", "payment", "shipping"):
        engine.deploy(
            Process(key, name=key.title())
            .start("start")
            .service_task("charge", handler="charge")
            .user_task("approve")
            .service_task("ship", topic="shipping")
            .end("end")
            .sequence("start", "charge", "approve", "ship", "end")
            .build()
        )
    engine.close()
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Integers only are put into the text; several statements cannot take parameters.
        sql = FILL_SQL.replace("%(n)s", str(int(instances))).replace("%(events)s", str(int(events)))
        conn.execute(sql.replace("%%", "%").encode())
        conn.execute(b"VACUUM ANALYZE")
    return time.perf_counter() - started


class Statements:
    """Every SQL statement an engine runs, with its parameters and duration."""

    def __init__(self, engine: Engine) -> None:
        self.seen: list[tuple[float, str, Any]] = []
        self._t0: float = 0.0

        @event.listens_for(engine.db, "before_cursor_execute")
        def before(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
            self._t0 = time.perf_counter()

        @event.listens_for(engine.db, "after_cursor_execute")
        def after(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
            self.seen.append((time.perf_counter() - self._t0, statement, params))


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    fn()  # warm-up (plans, caches)
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs) * 1000, max(runs) * 1000


def in_process(dsn: str, repeat: int) -> None:
    engine = Engine(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
    stmts = Statements(engine)
    cockpit = engine.cockpit
    some = cockpit.instances(InstanceFilter(has_incident=True), limit=1).instances[0].id
    deep = cockpit.instances(InstanceFilter(), limit=50)
    for _ in range(20):
        assert deep.next_cursor is not None
        deep = cockpit.instances(InstanceFilter(), limit=50, cursor=deep.next_cursor)
    cursor = deep.next_cursor
    active = (InstanceState.ACTIVE,)
    reads: dict[str, Callable[[], Any]] = {
        "definitions": cockpit.definitions,
        "instances (all)": lambda: cockpit.instances(InstanceFilter()),
        "instances page 21": lambda: cockpit.instances(InstanceFilter(), cursor=cursor),
        "instances by key": lambda: cockpit.instances(InstanceFilter(definition_key="payment")),
        "instances active": lambda: cockpit.instances(InstanceFilter(states=active)),
        "instances with incident": lambda: cockpit.instances(InstanceFilter(has_incident=True)),
        "instances by business key": lambda: cockpit.instances(
            InstanceFilter(business_key="bk-4242")
        ),
        "instance": lambda: cockpit.instance(some),
        "trail": lambda: cockpit.trail(some),
        "incident groups": cockpit.incident_groups,
        "work": cockpit.work,
    }
    print(f"\nin-process reads (median / max of {repeat}, ms):")
    for name, fn in reads.items():
        med, worst = timed(fn, repeat)
        print(f"  {name:28s} {med:8.1f} {worst:8.1f}")
    # The slowest statement by its median over every run (one stalled run says nothing).
    by_sql: dict[str, list[tuple[float, Any]]] = {}
    for seconds, sql, params in stmts.seen:
        by_sql.setdefault(sql, []).append((seconds, params))
    sql, runs = max(by_sql.items(), key=lambda kv: statistics.median(x[0] for x in kv[1]))
    median = statistics.median(x[0] for x in runs) * 1000
    slowest = (median, sql, runs[-1][1])
    print(f"\nslowest statement (median of {len(runs)} runs): {median:.1f} ms\n{sql}")
    print(f"params: {slowest[2]}")
    with engine.db.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        cur = raw.cursor()
        cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + slowest[1], slowest[2])
        print("\n".join(row[0] for row in cur.fetchall()))
    engine.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def api_server(dsn: str) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "BPM_DATABASE_URL": dsn,
        "BPM_API_KEYS": f"bench:{SECRET}",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpm", "api", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{base}/health/live", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def over_http(base: str, repeat: int) -> dict[str, str]:
    h = {"Authorization": f"Bearer {SECRET}"}
    http = httpx.Client(base_url=base, headers=h, timeout=60)
    defs = http.get("/api/definitions").json()["items"]
    some = http.get("/api/instances", params={"has_incident": "true", "limit": 1}).json()
    iid = some["items"][0]["id"]
    cursor = http.get("/api/instances").json()["next"]
    endpoints = {
        "/api/definitions": ("/api/definitions", {}),
        "/api/definitions/{id}": (f"/api/definitions/{defs[0]['id']}", {}),
        "/api/definitions/{id}/xml": (f"/api/definitions/{defs[0]['id']}/xml", {}),
        "/api/instances": ("/api/instances", {}),
        "/api/instances page 2": ("/api/instances", {"cursor": cursor}),
        "/api/instances?definition_key": ("/api/instances", {"definition_key": "payment"}),
        "/api/instances?state=active": ("/api/instances", {"state": "active"}),
        "/api/instances?has_incident": ("/api/instances", {"has_incident": "true"}),
        "/api/instances?started_between": (
            "/api/instances",
            {"started_after": "2000-01-01T00:00:00Z", "started_before": "2100-01-01T00:00:00Z"},
        ),
        "/api/instances/{id}": (f"/api/instances/{iid}", {}),
        "/api/instances/{id}/trail": (f"/api/instances/{iid}/trail", {}),
        "/api/incidents": ("/api/incidents", {}),
        "/api/work": ("/api/work", {}),
    }
    print(f"\nHTTP endpoints (median / max of {repeat}, ms):")
    for name, (path, params) in endpoints.items():

        def call(path: str = path, params: dict[str, str] = params) -> None:
            r = http.get(path, params=params)
            r.raise_for_status()

        med, worst = timed(call, repeat)
        print(f"  {name:36s} {med:8.1f} {worst:8.1f}")
    return {"instance": iid, "definition": defs[0]["id"]}


def in_browser(base: str, ids: dict[str, str], repeat: int) -> None:
    from playwright.sync_api import sync_playwright

    pages = {
        "definitions": ("#/definitions", "[data-testid=definitions]"),
        "definition": (f"#/definitions/{ids['definition']}", "[data-loaded=true]"),
        "instances": ("#/instances", "[data-testid=instances]"),
        "instance": (f"#/instances/{ids['instance']}", "[data-testid^=overlay-]"),
        "incidents": ("#/incidents", "[data-testid=incidents]"),
        "work": ("#/work", "[data-testid=ready-total]"),
    }
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync"]  # fmt: skip
    print(f"\npage loads in Chromium, navigation to content drawn (median / max of {repeat}, ms):")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=flags, headless=True)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(f"{base}/cockpit")
        page.fill("[data-testid=secret]", SECRET)
        page.click("button[type=submit]")
        page.wait_for_selector("[data-testid=definitions]")
        for name, (frag, selector) in pages.items():

            def load(frag: str = frag, selector: str = selector) -> None:
                page.goto("about:blank")
                page.goto(f"{base}/cockpit{frag}")
                page.wait_for_selector(selector, timeout=30_000)

            med, worst = timed(load, repeat)
            print(f"  {name:28s} {med:8.1f} {worst:8.1f}")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--admin-dsn", default=DEFAULT_ADMIN_DSN)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    with database(args.admin_dsn) as dsn:
        seconds = fill(dsn, args.instances, args.events)
        with psycopg.connect(dsn) as conn:
            counts = {
                table: conn.execute(f"SELECT count(*) FROM {table}".encode()).fetchone()[0]  # type: ignore[index]
                for table in ("process_instance", "token", "incident", "timer", "external_task",
                              "user_task", "history")
            }  # fmt: skip
            counts["history events"] = conn.execute(
                b"SELECT coalesce(sum(jsonb_array_length(events)), 0) FROM history"
            ).fetchone()[0]  # type: ignore[index]
        print(f"filled in {seconds:.1f} s: {counts}")
        in_process(dsn, args.repeat)
        with api_server(dsn) as base:
            ids = over_http(base, args.repeat)
            if not args.no_browser:
                in_browser(base, ids, args.repeat)


if __name__ == "__main__":
    main()
