"""Do the Camunda REST lists stay one indexed query and a LIMIT on a big database?

    python -m bench.rest_lists                      # 100,000 instances
    python -m bench.rest_lists --instances 20000 --plans

1. A fresh PostgreSQL database (``--admin-dsn``) is migrated, the review process deployed,
   and the filler below adds ``--instances`` instances (60 % completed, 25 % active, 5 %
   each suspended, terminated, failed) with typed variables, one user task each (open,
   completed or cancelled; candidate groups, an assignee on every third), 2.5 % with an
   incident (half resolved), and two history rows per instance holding the token events of
   start -> approve (-> split -> end for the completed ones): about 7 events an instance.
   Like ``bench/cockpit.py`` the filler writes rows with ``generate_series`` straight into
   the tables; it is the only SQL outside ``bpm/store`` and follows the store's format.
2. Every list and count behind ``/task``, ``/variable-instance`` and ``/history/*`` is
   timed through ``engine.queries`` (the code the routes call) with each SQL statement
   captured; printed: median / max ms and statements per call. The slowest statement by its
   median is shown with ``EXPLAIN (ANALYZE, BUFFERS)`` (``--plans``: every read's slowest).
3. A real ``bpm api`` answers the same lists over HTTP (median / max ms).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg

from bench.cockpit import DEFAULT_ADMIN_DSN, SECRET, Statements, api_server, database, timed
from bpm import Engine
from bpm.engine.queries import (
    ActivityQuery,
    IncidentQuery,
    InstanceQuery,
    TaskQuery,
    VariableQuery,
)
from bpm.runtime.states import IncidentState, InstanceState, UserTaskState

REVIEW = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="http://x">
<bpmn:process id="review" name="Order review" isExecutable="true">
  <bpmn:startEvent id="start"/>
  <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve"/>
  <bpmn:userTask id="approve" name="Approve order" camunda:candidateGroups="sales"/>
  <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="split"/>
  <bpmn:exclusiveGateway id="split"/>
  <bpmn:sequenceFlow id="f3" sourceRef="split" targetRef="end"/>
  <bpmn:endEvent id="end"/>
</bpmn:process></bpmn:definitions>"""

FILL_SQL = """
INSERT INTO process_instance (id, definition_id, definition_key, business_key, state,
    variables, variable_types, created_at, updated_at, ended_at)
SELECT 'bench-' || i, d.id, 'review', 'bk-' || i,
       CASE WHEN i % 20 < 12 THEN 'completed' WHEN i % 20 < 17 THEN 'active'
            WHEN i % 20 = 17 THEN 'suspended' WHEN i % 20 = 18 THEN 'terminated'
            ELSE 'failed' END,
       jsonb_build_object('amount', i % 1000, 'customer', 'c-' || (i % 5000),
                          'placed', '2026-11-29T10:00:00.000+0000'),
       '{"placed": "Date"}'::jsonb,
       now() - make_interval(secs => (:n - i) * 30),
       now() - make_interval(secs => (:n - i) * 30 - 5),
       CASE WHEN i % 20 < 12 OR i % 20 >= 18
            THEN now() - make_interval(secs => (:n - i) * 30 - 5) END
FROM generate_series(1, :n) AS i, (SELECT id FROM process_definition LIMIT 1) AS d;

INSERT INTO token (id, instance_id, node_id, state, blocked_kind, attempt, created_at,
    updated_at)
SELECT 'tok-' || substr(p.id, 7), p.id, 'approve', 'waiting', 'user_task', 0,
       p.created_at, p.updated_at
FROM process_instance p WHERE p.state IN ('active', 'suspended');

INSERT INTO user_task (id, instance_id, token_id, node_id, name, state, assignee,
    candidate_groups, candidate_users, priority, created_at, completed_at)
SELECT 'ut-' || substr(p.id, 7), p.id, 'tok-' || substr(p.id, 7), 'approve', 'Approve order',
       CASE WHEN p.state IN ('active', 'suspended') THEN 'open'
            WHEN p.state = 'completed' THEN 'completed' ELSE 'cancelled' END,
       CASE WHEN substr(p.id, 7)::int % 3 = 0 THEN 'u-' || (substr(p.id, 7)::int % 50) END,
       CASE WHEN substr(p.id, 7)::int % 2 = 0 THEN '["sales"]'::jsonb
            ELSE '["sales", "finance"]'::jsonb END,
       '[]'::jsonb, substr(p.id, 7)::int % 100, p.created_at, p.ended_at
FROM process_instance p;

INSERT INTO incident (id, instance_id, token_id, node_id, type, state, message, created_at,
    resolved_at)
SELECT 'inc-' || substr(p.id, 7), p.id, 'tok-' || substr(p.id, 7), 'approve', 'failedJob',
       CASE WHEN substr(p.id, 7)::int % 80 = 3 THEN 'open' ELSE 'resolved' END,
       'RuntimeError: card declined', p.created_at,
       CASE WHEN substr(p.id, 7)::int % 80 <> 3 THEN p.updated_at END
FROM process_instance p WHERE substr(p.id, 7)::int % 40 = 3;

INSERT INTO history (instance_id, at, events)
SELECT p.id, p.created_at, jsonb_build_array(
    jsonb_build_object('type', 'instance_started'),
    jsonb_build_object('type', 'token_created', 'token', 's-' || p.id, 'node', 'start'),
    jsonb_build_object('type', 'token_completed', 'token', 's-' || p.id, 'node', 'start'),
    jsonb_build_object('type', 'token_created', 'token', 'tok-' || substr(p.id, 7),
                       'node', 'approve'),
    jsonb_build_object('type', 'token_waiting', 'token', 'tok-' || substr(p.id, 7),
                       'node', 'approve'))
FROM process_instance p ORDER BY p.created_at;

INSERT INTO history (instance_id, at, events)
SELECT p.id, p.ended_at, jsonb_build_array(
    jsonb_build_object('type', 'token_completed', 'token', 'tok-' || substr(p.id, 7),
                       'node', 'approve'),
    jsonb_build_object('type', 'token_created', 'token', 'x-' || p.id, 'node', 'split'),
    jsonb_build_object('type', 'token_completed', 'token', 'x-' || p.id, 'node', 'split'),
    jsonb_build_object('type', 'token_created', 'token', 'e-' || p.id, 'node', 'end'),
    jsonb_build_object('type', 'token_completed', 'token', 'e-' || p.id, 'node', 'end'),
    jsonb_build_object('type', 'instance_completed'))
FROM process_instance p WHERE p.state = 'completed' ORDER BY p.ended_at;
"""


def fill(dsn: str, instances: int) -> float:
    engine = Engine(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
    engine.upgrade()
    engine.deploy(REVIEW)
    engine.close()
    started = datetime.now(UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(FILL_SQL.replace(":n", str(int(instances))).encode())
        conn.execute(b"VACUUM ANALYZE")
    return (datetime.now(UTC) - started).total_seconds()


def reads(engine: Engine) -> dict[str, Callable[[], Any]]:
    q = engine.queries
    page = {"offset": 0, "limit": 50}
    deep = {"offset": 5000, "limit": 50}
    one = "bench-4242"
    finished = (InstanceState.COMPLETED, InstanceState.TERMINATED, InstanceState.FAILED)
    return {
        "/task": lambda: q.tasks(TaskQuery(), **page),
        "/task?firstResult=5000": lambda: q.tasks(TaskQuery(), **deep),
        "/task?candidateGroup=finance": lambda: q.tasks(
            TaskQuery(candidate_groups=("finance",)), **page
        ),
        "/task?assignee=u-7": lambda: q.tasks(TaskQuery(assignees=("u-7",)), **page),
        "/task?processDefinitionKey": lambda: q.tasks(
            TaskQuery(definition_keys=("review",)), **page
        ),
        "/task?processInstanceBusinessKey": lambda: q.tasks(
            TaskQuery(business_keys=("bk-4243",)), **page
        ),
        "/task?sortBy=priority": lambda: q.tasks(TaskQuery(sorting=(("priority", False),)), **page),
        "/task/count": lambda: q.count_tasks(TaskQuery()),
        "/variable-instance": lambda: q.variables(VariableQuery(), **page),
        "/variable-instance?variableName": lambda: q.variables(
            VariableQuery(names=("amount",)), **page
        ),
        "/variable-instance?variableValues": lambda: q.variables(
            VariableQuery(values=(("amount", "gt", 990),)), **page
        ),
        "/variable-instance?processInstanceIdIn": lambda: q.variables(
            VariableQuery(instance_ids=(one,)), **page
        ),
        "/variable-instance/count": lambda: q.count_variables(VariableQuery()),
        "/history/process-instance": lambda: q.historic_instances(InstanceQuery(), **page),
        "/history/process-instance?firstResult=5000": lambda: q.historic_instances(
            InstanceQuery(), **deep
        ),
        "/history/process-instance?finished&endTime desc": lambda: q.historic_instances(
            InstanceQuery(states=finished, sorting=(("endTime", False),)), **page
        ),
        "/history/process-instance?processDefinitionKey": lambda: q.historic_instances(
            InstanceQuery(definition_keys=("review",), sorting=(("startTime", False),)), **page
        ),
        "/history/process-instance?businessKey": lambda: q.historic_instances(
            InstanceQuery(business_key="bk-4242"), **page
        ),
        "/history/process-instance?withIncidents": lambda: q.historic_instances(
            InstanceQuery(with_incidents=True), **page
        ),
        "/history/process-instance/count": lambda: q.count_historic_instances(InstanceQuery()),
        "/history/activity-instance": lambda: q.activity_instances(ActivityQuery(), **page),
        "/history/activity-instance?desc": lambda: q.activity_instances(
            ActivityQuery(descending=True), **page
        ),
        "/history/activity-instance?processInstanceId": lambda: q.activity_instances(
            ActivityQuery(instance_ids=(one,)), **page
        ),
        "/history/activity-instance?unfinished&pi": lambda: q.activity_instances(
            ActivityQuery(instance_ids=(one,), finished=False), **page
        ),
        "/history/incident": lambda: q.incidents(IncidentQuery(), **page),
        "/history/incident?open": lambda: q.incidents(
            IncidentQuery(states=(IncidentState.OPEN,)), **page
        ),
        "/history/incident/count": lambda: q.count_incidents(IncidentQuery()),
        "/history/task": lambda: q.tasks(TaskQuery(states=()), **page),
        "/history/task?finished": lambda: q.tasks(
            TaskQuery(states=(UserTaskState.COMPLETED, UserTaskState.CANCELLED)), **page
        ),
        "/history/task?taskAssignee": lambda: q.tasks(
            TaskQuery(states=(), assignees=("u-7",)), **page
        ),
        "/history/variable-instance": lambda: q.variables(
            VariableQuery(running_only=False), **page
        ),
        "/history/variable-instance?variableName": lambda: q.variables(
            VariableQuery(running_only=False, names=("customer",)), **page
        ),
    }


def explain(engine: Engine, sql: str, params: Any) -> str:
    with engine.db.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        cur = raw.cursor()
        cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        return "\n".join(row[0] for row in cur.fetchall())


def in_process(dsn: str, repeat: int, plans: bool) -> None:
    engine = Engine(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
    stmts = Statements(engine)
    print(f"\nengine.queries (median / max of {repeat} ms, statements per call):")
    slowest_per_read: dict[str, tuple[float, str, Any]] = {}
    for name, fn in reads(engine).items():
        before = len(stmts.seen)
        med, worst = timed(fn, repeat)
        seen = stmts.seen[before:]
        per_call = len(seen) / (repeat + 1)
        print(f"  {name:52s} {med:8.1f} {worst:8.1f} {per_call:5.1f}")
        by_sql: dict[str, list[tuple[float, Any]]] = {}
        for seconds, sql, params in seen:
            by_sql.setdefault(sql, []).append((seconds, params))
        sql, runs = max(by_sql.items(), key=lambda kv: statistics.median(x[0] for x in kv[1]))
        slowest_per_read[name] = (statistics.median(x[0] for x in runs) * 1000, sql, runs[-1][1])
    name, (ms, sql, params) = max(slowest_per_read.items(), key=lambda kv: kv[1][0])
    print(f"\nslowest statement ({name}, median {ms:.1f} ms):\n{sql}\nparams: {params}")
    print(explain(engine, sql, params))
    if plans:
        for name, (ms, sql, params) in slowest_per_read.items():
            print(f"\n== {name} ({ms:.1f} ms)\n{explain(engine, sql, params)}")
    engine.close()


def over_http(base: str, repeat: int) -> None:
    http = httpx.Client(
        base_url=base + "/engine-rest", headers={"Authorization": f"Bearer {SECRET}"}, timeout=60
    )
    paged = {"maxResults": 50}
    endpoints: dict[str, tuple[str, dict[str, Any]]] = {
        "GET /task": ("/task", paged),
        "GET /task?candidateGroup": ("/task", {**paged, "candidateGroup": "finance"}),
        "GET /task/count": ("/task/count", {}),
        "GET /variable-instance": ("/variable-instance", paged),
        "GET /history/process-instance": ("/history/process-instance", paged),
        "GET /history/process-instance?finished": (
            "/history/process-instance",
            {**paged, "finished": "true", "sortBy": "endTime", "sortOrder": "desc"},
        ),
        "GET /history/activity-instance": ("/history/activity-instance", paged),
        "GET /history/incident": ("/history/incident", paged),
        "GET /history/task": ("/history/task", paged),
        "GET /history/variable-instance": ("/history/variable-instance", paged),
    }
    print(f"\nover HTTP (median / max of {repeat}, ms):")
    for name, (path, params) in endpoints.items():

        def call(path: str = path, params: dict[str, Any] = params) -> None:
            r = http.get(path, params=params)
            r.raise_for_status()

        med, worst = timed(call, repeat)
        print(f"  {name:44s} {med:8.1f} {worst:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--admin-dsn", default=DEFAULT_ADMIN_DSN)
    parser.add_argument("--plans", action="store_true", help="EXPLAIN every read's slowest")
    parser.add_argument("--no-http", action="store_true")
    args = parser.parse_args()
    with database(args.admin_dsn) as dsn:
        seconds = fill(dsn, args.instances)
        with psycopg.connect(dsn) as conn:
            counts = {
                table: conn.execute(f"SELECT count(*) FROM {table}".encode()).fetchone()[0]  # type: ignore[index]
                for table in ("process_instance", "user_task", "incident", "history")
            }
            events = conn.execute(
                b"SELECT sum(jsonb_array_length(events)) FROM history"
            ).fetchone()[0]  # type: ignore[index]
        print(f"filled in {seconds:.1f} s: {counts}, {events} history events")
        in_process(dsn, args.repeat, args.plans)
        if not args.no_http:
            with api_server(dsn) as base:
                over_http(base, args.repeat)


if __name__ == "__main__":
    main()
