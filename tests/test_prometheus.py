"""Prometheus metrics in one process: the counters equal the history's counts, and the
database gauges equal what the database holds (bpm/contrib/prometheus.py)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from bpm import Engine, TaskContext
from bpm.builder import Process
from bpm.contrib.prometheus import DatabaseGauges, PrometheusObserver, exposition
from bpm.engine.core import utcnow
from bpm.observe import MessageIgnored, Observers, RequestServed, TimerFired
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.engine_helpers import drain, make_engine, order_process, order_registry


def observed_by_prometheus(engine: Engine) -> CollectorRegistry:
    registry = CollectorRegistry()
    engine.core.observers = Observers()
    engine.core.observers.subscribe(PrometheusObserver(registry))
    return registry


def flaky_registry() -> Any:
    """``charge-payment`` fails while the attempt is <= the variable ``fail_charge``."""
    reg = order_registry()

    def charge(ctx: TaskContext) -> dict[str, Any]:
        if ctx.attempt <= int(ctx.variables.get("fail_charge", 0)):
            raise RuntimeError("card declined")
        return {"charged": True}

    reg.register("charge-payment", charge)
    return reg


def history_by_node(engine: Engine, instance_ids: list[str]) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for iid in instance_ids:
        for e in engine.history(iid):
            out[(e.type, e.node_id or "")] += 1
    return out


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_step_counters_equal_the_history_counts(pg_database_url: str) -> None:
    engine, q = make_engine(pg_database_url, flaky_registry())
    registry = observed_by_prometheus(engine)
    engine.deploy(order_process())
    fails = [0, 1, 2, 0, 1, 2, 9]  # 9: more than the 3 attempts of the default policy
    ids = [engine.start("order", {"amount": 120, "fail_charge": f}).id for f in fails]
    drain(engine, q)

    history = history_by_node(engine, ids)
    for node in ("validate", "reserve", "charge", "ship"):
        step = {"definition": "order", "node": node}
        failed_attempts = history[("attempt_failed", node)]
        exhausted = history[("step_failed", node)]
        assert (
            value(registry, "bpm_steps_started_total", **step) == history[("token_executing", node)]
        )
        assert (
            value(registry, "bpm_steps_completed_total", **step)
            == history[("token_completed", node)]
        )
        assert value(registry, "bpm_steps_retried_total", **step) == failed_attempts - exhausted
        assert value(registry, "bpm_steps_failed_total", **step) == exhausted
        assert (
            value(registry, "bpm_step_duration_seconds_count", **step)
            == history[("token_executing", node)]
        )
        assert (
            value(registry, "bpm_handler_duration_seconds_count", **step, outcome="error")
            == failed_attempts
        )
    # The flaky step failed and retried as told, and one instance used up its attempts.
    retries = sum(min(f, 2) for f in fails)
    assert value(registry, "bpm_steps_retried_total", definition="order", node="charge") == retries
    assert value(registry, "bpm_steps_failed_total", definition="order", node="charge") == 1
    nodes = ("validate", "reserve", "charge", "ship")
    started = sum(history[("token_executing", x)] for x in nodes)
    assert value(registry, "bpm_claim_to_run_seconds_count") == started


def test_other_events_reach_their_metrics() -> None:
    registry = CollectorRegistry()
    prom = PrometheusObserver(registry)
    prom.observe(MessageIgnored("t1", "finished_here"))
    prom.observe(MessageIgnored("t2", "not_ready"))
    prom.observe(MessageIgnored("t3", "not_ready"))
    prom.observe(TimerFired("p", "wait", "i", "delay", 0.02))
    prom.observe(TimerFired("p", "wait", "i", "delay", 7.0))
    prom.observe(RequestServed("GET", "/engine-rest/version", 200, 0.003))

    assert value(registry, "bpm_messages_ignored_total", reason="not_ready") == 2
    assert value(registry, "bpm_messages_ignored_total", reason="finished_here") == 1
    assert value(registry, "bpm_timer_lateness_seconds_count", kind="delay") == 2
    assert value(registry, "bpm_timer_lateness_seconds_bucket", kind="delay", le="0.025") == 1
    assert value(registry, "bpm_timer_lateness_seconds_sum", kind="delay") == pytest.approx(7.02)
    labels = {"method": "GET", "route": "/engine-rest/version", "status": "200"}
    assert value(registry, "bpm_api_request_duration_seconds_count", **labels) == 1


def mail_process() -> Any:
    return (
        Process("mail")
        .start("start")
        .service_task("send", topic="mail")
        .end("end")
        .sequence("start", "send", "end")
        .build()
    )


def gauges_of(engine: Engine) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in DatabaseGauges(engine).collect():
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_database_gauges_equal_what_the_database_holds(pg_database_url: str) -> None:
    engine, q = make_engine(pg_database_url, order_registry())
    engine.deploy(order_process())
    engine.deploy(order_process("refund"))
    engine.deploy(mail_process())
    for _ in range(3):
        engine.start("order", {"amount": 120})
    for _ in range(2):
        engine.start("refund", {"amount": 10})
    for _ in range(5):
        engine.start("mail")
    # Mail: 2 locked for a minute, 1 locked an hour ago for a second (expired), one of the
    # locked ones failed without retries (an incident): 2 ready, 1 locked, 1 expired.
    locked = engine.fetch_and_lock(FetchRequest("w1", 2, (TopicRequest("mail", 60_000),)))
    long_ago = utcnow() - timedelta(hours=1)
    engine.fetch_and_lock(FetchRequest("w2", 1, (TopicRequest("mail", 1_000),)), now=long_ago)
    engine.fail_external_task(locked[0].id, "w1", "smtp down", retries=0)

    g = gauges_of(engine)

    assert g[("bpm_metrics_database_up", ())] == 1
    ready = {k: v for k, v in g.items() if k[0] == "bpm_ready_tokens"}
    assert ready == {
        ("bpm_ready_tokens", (("definition", "order"), ("node", "validate"))): 3,
        ("bpm_ready_tokens", (("definition", "refund"), ("node", "validate"))): 2,
    }
    assert len(q.queue) == 5  # the same steps, published and not run
    ages = [v for k, v in g.items() if k[0] == "bpm_ready_token_age_seconds"]
    assert len(ages) == 2 and all(0 <= a < 60 for a in ages)
    tasks = {dict(k[1])["state"]: v for k, v in g.items() if k[0] == "bpm_external_tasks"}
    assert tasks == {"ready": 2, "locked": 1, "expired": 1}
    incidents = {k: v for k, v in g.items() if k[0] == "bpm_open_incidents"}
    assert incidents == {("bpm_open_incidents", (("definition", "mail"), ("node", "send"))): 1}
    assert len(engine.incidents()) == 1

    # Run the inline steps: the backlog is gone from the gauges.
    drain(engine, q)
    assert not [k for k in gauges_of(engine) if k[0] == "bpm_ready_tokens"]


def test_a_database_that_does_not_answer_makes_up_zero_not_a_failed_scrape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = Engine("postgresql+psycopg://root@127.0.0.1:1/nowhere")
    try:
        body, content_type = exposition(engine)
    finally:
        engine.close()
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    [up] = families["bpm_metrics_database_up"].samples
    assert up.value == 0
    assert "bpm_ready_tokens" not in families
    assert content_type.startswith("text/plain")
    assert "cannot read the database gauges" in caplog.text
